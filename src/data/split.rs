//! A dev split carved from the training pairs (never from a test set): a fixed number
//! of pairs per language, chosen by a seeded shuffle. Training pairs that share a
//! sentence with the dev split are dropped, so dev retrieval measures generalisation.
//! N-way rows (pairs that translate each other) go to the dev split whole: every language
//! ranks its rows by the same seeded hash of (source, row), so all languages take the
//! same rows and the English side they share removes few training pairs. Those rows also
//! give non-pivot dev pairs (a chain through each row's languages; see
//! [`non_pivot_dev_pairs`]), so non-English retrieval has a dev measure too.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use super::corpus::{ParallelCorpus, TranslationPair};
use crate::rng::{SplitMix64, mix_seed};

/// How the dev split is drawn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevSplitConfig {
    /// Dev pairs per language (fewer when a language has under 10x this many).
    #[serde(default = "DevSplitConfig::default_per_language")]
    pub pairs_per_language: usize,
    /// Languages with fewer training pairs give none to the dev split.
    #[serde(default = "DevSplitConfig::default_min_pairs")]
    pub min_language_pairs: usize,
    #[serde(default = "DevSplitConfig::default_seed")]
    pub seed: u64,
}

impl DevSplitConfig {
    fn default_per_language() -> usize {
        100
    }
    fn default_min_pairs() -> usize {
        1000
    }
    fn default_seed() -> u64 {
        17
    }
}

impl Default for DevSplitConfig {
    fn default() -> Self {
        Self {
            pairs_per_language: Self::default_per_language(),
            min_language_pairs: Self::default_min_pairs(),
            seed: Self::default_seed(),
        }
    }
}

/// Splits `corpus` into (train, dev). Both keep the same language table.
pub fn split_dev(
    corpus: ParallelCorpus,
    config: &DevSplitConfig,
) -> (ParallelCorpus, ParallelCorpus) {
    let mut by_language = corpus.pairs_by_language();
    // Non-pivot pairs do not choose dev rows, so a recipe that adds them keeps the same
    // split; those of a dev row share its sentences and leave training below.
    for rows in &mut by_language {
        rows.retain(|&i| !corpus.pairs[i as usize].is_non_pivot());
    }
    let mut rng = SplitMix64::new(config.seed);
    let mut dev_rows = HashSet::new();
    for rows in &mut by_language {
        if rows.len() < config.min_language_pairs.max(1) {
            continue;
        }
        if rows.iter().any(|&i| corpus.pairs[i as usize].row.is_some()) {
            let key = |i: u32| {
                let p = &corpus.pairs[i as usize];
                match p.row {
                    Some(r) => mix_seed(&[config.seed, p.source as u64, r as u64]),
                    None => mix_seed(&[config.seed, u64::MAX, i as u64]),
                }
            };
            rows.sort_by_key(|&i| (key(i), i));
        } else {
            rng.shuffle(rows);
        }
        let take = config.pairs_per_language.min(rows.len() / 10);
        dev_rows.extend(rows[..take].iter().map(|&i| i as usize));
    }
    let dev_sentences: HashSet<&str> = dev_rows
        .iter()
        .flat_map(|&i| [corpus.pairs[i].src.as_str(), corpus.pairs[i].tgt.as_str()])
        .collect();
    let mut train = ParallelCorpus {
        languages: corpus.languages.clone(),
        pairs: Vec::new(),
        skipped_empty: corpus.skipped_empty,
        ..Default::default()
    };
    let mut dev = ParallelCorpus {
        languages: corpus.languages.clone(),
        ..Default::default()
    };
    let mut dev_order: Vec<usize> = dev_rows.iter().copied().collect();
    dev_order.sort_unstable();
    let dev_set: HashSet<usize> = dev_rows;
    let mut overlapping = 0usize;
    for (i, p) in corpus.pairs.iter().enumerate() {
        if dev_set.contains(&i) {
            continue;
        }
        if dev_sentences.contains(p.src.as_str()) || dev_sentences.contains(p.tgt.as_str()) {
            overlapping += 1;
            continue;
        }
        train.pairs.push(p.clone());
    }
    dev.pairs = dev_order.iter().map(|&i| corpus.pairs[i].clone()).collect();
    let pivot_pairs = dev.pairs.len();
    let non_pivot = non_pivot_dev_pairs(&dev);
    dev.pairs.extend(non_pivot);
    tracing::info!(
        "dev split: {pivot_pairs} pairs with the pivot and {} between other languages of the same N-way rows; {overlapping} training pairs dropped for sharing a sentence with it",
        dev.pairs.len() - pivot_pairs,
    );
    (train, dev)
}

/// Non-pivot dev pairs from the dev split's N-way rows: in each row, its languages
/// sorted by code and each paired with the next (a chain, so every language is a source
/// once and a target once), the row's pivot segment kept. They come after the pivot
/// pairs, so a dev limit that fits within those (training's `dev_max_pairs`) leaves them out.
fn non_pivot_dev_pairs(dev: &ParallelCorpus) -> Vec<TranslationPair> {
    let mut rows: BTreeMap<(u16, u32), Vec<&TranslationPair>> = BTreeMap::new();
    for p in &dev.pairs {
        if let (Some(row), false) = (p.row, p.is_non_pivot()) {
            rows.entry((p.source, row)).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    for segments in rows.values_mut() {
        segments.sort_by(|a, b| {
            dev.languages[a.src_lang as usize].cmp(&dev.languages[b.src_lang as usize])
        });
        for w in segments.windows(2) {
            let (a, b) = (w[0], w[1]);
            if a.src_lang == b.src_lang || a.tgt != b.tgt {
                continue;
            }
            out.push(TranslationPair {
                src: a.src.clone(),
                tgt: b.src.clone(),
                src_lang: a.src_lang,
                tgt_lang: b.src_lang,
                source: a.source,
                row: a.row,
                pivot: Some(a.tgt.clone()),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_and_train_share_no_sentence() {
        let mut c = ParallelCorpus::default();
        let de = c.language_id("deu");
        let en = c.language_id("eng");
        for i in 0..2000 {
            // English sentences repeat every 500 pairs, as in Tatoeba.
            c.pairs.push(TranslationPair {
                src: format!("satz {i}"),
                tgt: format!("sentence {}", i % 500),
                src_lang: de,
                tgt_lang: en,
                source: 0,
                row: None,
                pivot: None,
            });
        }
        let config = DevSplitConfig {
            pairs_per_language: 50,
            ..Default::default()
        };
        let (train, dev) = split_dev(c, &config);
        assert_eq!(dev.pairs.len(), 50);
        let dev_sentences: HashSet<&str> = dev
            .pairs
            .iter()
            .flat_map(|p| [p.src.as_str(), p.tgt.as_str()])
            .collect();
        assert!(train.pairs.len() > 1500);
        for p in &train.pairs {
            assert!(!dev_sentences.contains(p.src.as_str()));
            assert!(!dev_sentences.contains(p.tgt.as_str()));
        }
    }

    #[test]
    fn n_way_rows_go_to_dev_whole() {
        // 3 languages x 3000 rows sharing the English side, as an N-way folder gives.
        let mut c = ParallelCorpus::default();
        let en = c.language_id("eng");
        for lang in ["deu", "fra", "rus"] {
            let l = c.language_id(lang);
            for r in 0..3000u32 {
                c.push(
                    format!("{lang} {r}"),
                    format!("english {r}"),
                    l,
                    en,
                    Some(r),
                );
            }
        }
        let config = DevSplitConfig {
            pairs_per_language: 50,
            ..Default::default()
        };
        let (train, dev) = split_dev(c.clone(), &config);
        // 150 pairs with English, then a chain deu -> fra -> rus in each of the 50 rows.
        assert_eq!(dev.pairs.len(), 150 + 100);
        let dev_rows: HashSet<u32> = dev.pairs.iter().map(|p| p.row.unwrap()).collect();
        // The same 50 rows in every language, so only those rows leave training.
        assert_eq!(dev_rows.len(), 50);
        assert_eq!(train.pairs.len(), 9000 - 150);
        assert!(
            train
                .pairs
                .iter()
                .all(|p| !dev_rows.contains(&p.row.unwrap()))
        );
        assert!(dev.pairs[..150].iter().all(|p| !p.is_non_pivot()));
        for p in &dev.pairs[150..] {
            let (a, b) = (
                &dev.languages[p.src_lang as usize],
                &dev.languages[p.tgt_lang as usize],
            );
            assert!(
                matches!((a.as_str(), b.as_str()), ("deu", "fra") | ("fra", "rus")),
                "{a} {b}"
            );
            let r = p.row.unwrap();
            assert_eq!(p.src, format!("{a} {r}"));
            assert_eq!(p.tgt, format!("{b} {r}"));
            assert_eq!(p.pivot_text(), format!("english {r}"));
        }

        // Non-pivot pairs in the corpus leave the split as it was; those of dev rows
        // share a dev sentence and leave training.
        let (de, fr) = (c.language_id("deu"), c.language_id("fra"));
        for r in 0..3000u32 {
            c.push_non_pivot(
                (format!("deu {r}"), de),
                (format!("fra {r}"), fr),
                format!("english {r}"),
                r,
            );
        }
        let (train2, dev2) = split_dev(c, &config);
        assert_eq!(dev2.pairs, dev.pairs);
        assert_eq!(train2.pairs.len(), 9000 - 150 + 3000 - 50);
        assert!(
            train2
                .pairs
                .iter()
                .all(|p| !dev_rows.contains(&p.row.unwrap()))
        );
    }
}

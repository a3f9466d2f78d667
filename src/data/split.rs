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
    // Non-pivot pairs do not choose dev rows (nor shift the other pairs' keys below), so a
    // recipe that adds them keeps the same split; those of a dev row leave training below.
    for rows in &mut by_language {
        rows.retain(|&i| !corpus.pairs[i as usize].is_non_pivot());
    }
    let mut pivot_index = vec![0u64; corpus.pairs.len()];
    let mut n = 0u64;
    for (slot, p) in pivot_index.iter_mut().zip(&corpus.pairs) {
        *slot = n;
        n += u64::from(!p.is_non_pivot());
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
                    None => mix_seed(&[config.seed, u64::MAX, pivot_index[i as usize]]),
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
    // A non-pivot pair of a dev row may join two languages that did not take that row
    // (languages hold different rows), so its texts alone do not show it: its row does.
    let dev_row_keys: HashSet<(u16, u32)> = dev_rows
        .iter()
        .filter_map(|&i| corpus.pairs[i].row.map(|r| (corpus.pairs[i].source, r)))
        .collect();
    // Which pairs train: decided while the texts are borrowed, then every pair is moved
    // (not cloned) into its side, so the corpus is never held twice.
    let mut overlapping = 0usize;
    let trains: Vec<bool> = corpus
        .pairs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if dev_rows.contains(&i) {
                return false;
            }
            let of_dev_row =
                p.is_non_pivot() && p.row.is_some_and(|r| dev_row_keys.contains(&(p.source, r)));
            let overlaps = of_dev_row
                || dev_sentences.contains(p.src.as_str())
                || dev_sentences.contains(p.tgt.as_str())
                || p.pivot
                    .as_deref()
                    .is_some_and(|t| dev_sentences.contains(t));
            overlapping += usize::from(overlaps);
            !overlaps
        })
        .collect();
    drop(dev_sentences);
    let kept = trains.iter().filter(|&&t| t).count();
    let mut train = ParallelCorpus {
        languages: corpus.languages.clone(),
        pairs: Vec::with_capacity(kept),
        skipped_empty: corpus.skipped_empty,
        ..Default::default()
    };
    let mut dev = ParallelCorpus {
        languages: corpus.languages,
        pairs: Vec::with_capacity(dev_rows.len()),
        ..Default::default()
    };
    // Dev pairs in the corpus's order, as before (the index order of its rows).
    for (i, (p, to_train)) in corpus.pairs.into_iter().zip(trains).enumerate() {
        if to_train {
            train.pairs.push(p);
        } else if dev_rows.contains(&i) {
            dev.pairs.push(p);
        }
    }
    let pivot_pairs = dev.pairs.len();
    let non_pivot = non_pivot_dev_pairs(&dev, config.seed);
    dev.pairs.extend(non_pivot);
    tracing::info!(
        "dev split: {pivot_pairs} pairs with the pivot and {} between other languages of the same N-way rows; {overlapping} training pairs dropped for sharing a sentence with it",
        dev.pairs.len() - pivot_pairs,
    );
    (train, dev)
}

/// Non-pivot dev pairs from the dev split's N-way rows: in each row, the languages that
/// took it into the split sorted by code and each paired with the next (a chain: each is a
/// source and a target once, but the first only a source and the last only a target), the
/// row's pivot segment kept. Rows come in the order of a seeded hash of (source, row), so
/// a limit on their number (training's `run.dev_max_pairs`, which [`crate::train::dev_set`]
/// applies to pivot and non-pivot pairs apart) takes rows from every source.
fn non_pivot_dev_pairs(dev: &ParallelCorpus, seed: u64) -> Vec<TranslationPair> {
    let mut rows: BTreeMap<(u64, u16, u32), Vec<&TranslationPair>> = BTreeMap::new();
    for p in &dev.pairs {
        if let (Some(row), false) = (p.row, p.is_non_pivot()) {
            let order = mix_seed(&[seed, 0x6e70, p.source as u64, row as u64]);
            rows.entry((order, p.source, row)).or_default().push(p);
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

    /// An N-way source (source 0): each language's rows 0..n, "<lang> <row>", paired with
    /// "english <row>".
    fn n_way(languages: &[(&str, u32)]) -> ParallelCorpus {
        let mut c = ParallelCorpus::default();
        let en = c.language_id("eng");
        for &(lang, rows) in languages {
            let l = c.language_id(lang);
            for r in 0..rows {
                c.push(
                    format!("{lang} {r}"),
                    format!("english {r}"),
                    l,
                    en,
                    Some(r),
                );
            }
        }
        c
    }

    /// A deu-fra non-pivot pair for each of rows 0..n of [`n_way`]'s corpus.
    fn deu_fra_pairs(c: &mut ParallelCorpus, rows: u32) {
        let (de, fr) = (c.language_id("deu"), c.language_id("fra"));
        for r in 0..rows {
            c.push_non_pivot(
                (format!("deu {r}"), de),
                (format!("fra {r}"), fr),
                format!("english {r}"),
                r,
            );
        }
    }

    #[test]
    fn n_way_rows_go_to_dev_whole() {
        // 3 languages x 3000 rows sharing the English side, as an N-way folder gives.
        let mut c = n_way(&[("deu", 3000), ("fra", 3000), ("rus", 3000)]);
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
        deu_fra_pairs(&mut c, 3000);
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

    /// A small language (isl) takes dev rows the large ones (deu, fra) do not: their
    /// non-pivot pairs of those rows still leave training. Non-pivot pairs read before
    /// a source without rows (a TSV in deu) do not change which of its pairs go to dev.
    #[test]
    fn non_pivot_pairs_of_any_dev_row_leave_training_and_move_nothing() {
        let build = |non_pivot: bool| {
            let mut c = n_way(&[("deu", 3000), ("fra", 3000), ("isl", 600)]);
            if non_pivot {
                deu_fra_pairs(&mut c, 3000);
            }
            c.current_source = 1;
            let (de, en) = (c.language_id("deu"), c.language_id("eng"));
            for i in 0..2000 {
                c.push(
                    format!("deu tsv {i}"),
                    format!("english tsv {i}"),
                    de,
                    en,
                    None,
                );
            }
            c
        };
        let config = DevSplitConfig {
            pairs_per_language: 50,
            min_language_pairs: 500,
            ..Default::default()
        };
        let (_, plain_dev) = split_dev(build(false), &config);
        let (train, dev) = split_dev(build(true), &config);
        assert_eq!(dev.pairs, plain_dev.pairs);
        let isl = dev.languages.iter().position(|l| l == "isl").unwrap() as u16;
        let isl_rows: HashSet<u32> = dev
            .pairs
            .iter()
            .filter(|p| p.src_lang == isl)
            .map(|p| p.row.unwrap())
            .collect();
        let deu = dev.languages.iter().position(|l| l == "deu").unwrap() as u16;
        let deu_rows: HashSet<u32> = dev
            .pairs
            .iter()
            .filter(|p| p.src_lang == deu && p.row.is_some() && !p.is_non_pivot())
            .map(|p| p.row.unwrap())
            .collect();
        // The case under test exists: rows isl took and deu did not.
        assert!(isl_rows.difference(&deu_rows).count() > 10);
        // deu also gives dev pairs from its TSV, so fra takes rows deu does not: all of them.
        let dev_rows: HashSet<u32> = dev
            .pairs
            .iter()
            .filter(|p| p.source == 0 && !p.is_non_pivot())
            .map(|p| p.row.unwrap())
            .collect();
        assert!(dev_rows.len() > isl_rows.union(&deu_rows).count());
        assert!(
            train
                .pairs
                .iter()
                .filter_map(|p| p.row.filter(|_| p.source == 0))
                .all(|r| !dev_rows.contains(&r))
        );
        // Non-pivot pairs of the other rows stay.
        assert_eq!(
            train.pairs.iter().filter(|p| p.is_non_pivot()).count(),
            3000 - dev_rows.len()
        );
    }
}

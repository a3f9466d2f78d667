//! A dev split carved from the training pairs (never from a test set): a fixed number
//! of pairs per language, chosen by a seeded shuffle. Training pairs that share a
//! sentence with the dev split are dropped, so dev retrieval measures generalisation.
//! N-way rows (pairs that translate each other) go to the dev split whole: every language
//! ranks its rows by the same seeded hash of (source, row), so all languages take the
//! same rows and the English side they share removes few training pairs.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::corpus::ParallelCorpus;
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
    tracing::info!(
        "dev split: {} pairs; {} training pairs dropped for sharing a sentence with it",
        dev.pairs.len(),
        overlapping
    );
    (train, dev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::corpus::TranslationPair;

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
        let (train, dev) = split_dev(c, &config);
        assert_eq!(dev.pairs.len(), 150);
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
    }
}

//! What a recipe trains on: its sources read (less the pairs that share a sentence with a
//! test set), the dev split carved out, the optional sample, and the batch sampler over
//! them, and both sides of the pairs tokenized.

use std::path::Path;

use super::config::DataConfig;
use crate::data::{BatchSampler, ParallelCorpus, split_dev};
use crate::error::Result;
use crate::eval::leakage::BenchmarkSentences;
use crate::model::SentenceEncoder;
use crate::rng::mix_seed;
use crate::tokenizer::TokenStore;

/// The recipe's batch sampler: languages pooled by temperature, or, when any source has a
/// weight, a source drawn by weight (per slot, or per batch with `sampling.batches =
/// "one-source"`) and then one of its languages by temperature.
pub fn batch_sampler(
    data: &DataConfig,
    train_set: &ParallelCorpus,
    keys: Vec<crate::data::sampler::PairKeys>,
) -> Result<BatchSampler> {
    if data.sources.iter().all(|s| s.weight().is_none()) {
        return BatchSampler::new(train_set.pairs_by_language(), keys, &data.sampling);
    }
    let weights: Vec<f64> = data
        .sources
        .iter()
        .map(|s| s.weight().unwrap_or(1.0))
        .collect();
    let sampler = BatchSampler::weighted_sources(
        train_set.pairs_by_source_and_language(),
        &weights,
        keys,
        &data.sampling,
    )?;
    tracing::info!(
        "sources drawn by weight {weights:?}, languages by temperature alpha {}, {}",
        data.sampling.alpha,
        match data.sampling.batches {
            crate::data::BatchComposition::Mixed => "each batch mixing sources",
            crate::data::BatchComposition::OneSource => "each batch from one source",
        }
    );
    Ok(sampler)
}

/// A recipe's training pairs: its sources, less the pairs that share a sentence with a
/// test set under `exclude_test_sets`; also how many were dropped (None: no exclusion).
/// `already_read`: benchmark sentences the caller has read from a folder, used instead of
/// reading that folder again when it is the exclusion folder.
pub fn read_training_pairs(
    data: &DataConfig,
    already_read: Option<(&Path, &BenchmarkSentences)>,
) -> Result<(ParallelCorpus, Option<usize>)> {
    let mut corpus = ParallelCorpus::read(&data.sources)?;
    let Some(dir) = data.exclusion() else {
        return Ok((corpus, None));
    };
    let same_folder = |read_from: &Path| match (dir.canonicalize(), read_from.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let read_here;
    let benchmarks = match already_read {
        Some((folder, b)) if same_folder(folder) => b,
        _ => {
            read_here = BenchmarkSentences::read(dir)?;
            &read_here
        }
    };
    let dropped = crate::eval::leakage::drop_leaks(&mut corpus, benchmarks);
    tracing::info!(
        "dropped {dropped} training pairs sharing a sentence with the {} test sentences under {}",
        benchmarks.len(),
        dir.display()
    );
    Ok((corpus, Some(dropped)))
}

/// The pairs a recipe trains on and its dev pairs, as `lase train` splits them: the
/// sources minus test-set leaks, the dev split carved out, then `max_train_pairs`' sample.
pub fn training_and_dev_sets(
    data: &DataConfig,
    seed: u64,
) -> Result<(ParallelCorpus, ParallelCorpus)> {
    let (corpus, _) = read_training_pairs(data, None)?;
    let (mut train_set, dev_set) = split_dev(corpus, &data.dev);
    if let Some(n) = data.max_train_pairs {
        keep_sample(&mut train_set, n, seed);
    }
    // What the sources, the leaks, the dev overlap and the unsampled pairs held goes back
    // to the system here, not at the end of the run.
    crate::runtime::release_freed_memory();
    Ok((train_set, dev_set))
}

/// Keeps a seeded random sample of `n` pairs (in their original order), copied into
/// fresh memory before the rest is freed: kept in place, a sample of a few percent would
/// pin most of the corpus's heap pages (a kept pair on nearly every page), and the freed
/// pairs' memory would stay with the process for the whole run.
fn keep_sample(corpus: &mut ParallelCorpus, n: usize, seed: u64) {
    if corpus.pairs.len() <= n {
        return;
    }
    let mut order: Vec<usize> = (0..corpus.pairs.len()).collect();
    crate::rng::SplitMix64::new(mix_seed(&[seed, 0x5a3b1e])).shuffle(&mut order);
    let mut keep = vec![false; corpus.pairs.len()];
    for &i in &order[..n] {
        keep[i] = true;
    }
    drop(order);
    let sample: Vec<_> = corpus
        .pairs
        .iter()
        .zip(&keep)
        .filter(|&(_, &k)| k)
        .map(|(p, _)| p.clone())
        .collect();
    corpus.pairs = sample;
}

/// Both sides of every training pair tokenized, in chunks into flat stores: millions of
/// pairs fit in a few GB (issue 14: the whole-corpus batch encode took 18 GB for 2.8M
/// pairs and was killed). Training sentences may be cut shorter than the model's own
/// limit (`train_max_tokens`), which the saved model keeps for inference.
pub(super) fn tokenize_pairs(
    encoder: &mut SentenceEncoder,
    train_set: &ParallelCorpus,
    train_max_tokens: Option<usize>,
) -> Result<(TokenStore, TokenStore)> {
    const TOKENIZE_CHUNK: usize = 16_384;
    let model_max = encoder.tokenizer().max_length();
    if let Some(n) = train_max_tokens {
        encoder.set_max_seq_length(n.min(model_max))?;
    }
    let tokenizer = encoder.tokenizer();
    let src_tokens = tokenizer.encode_to_store(
        train_set.pairs.iter().map(|p| p.src.as_str()),
        TOKENIZE_CHUNK,
    )?;
    let tgt_tokens = tokenizer.encode_to_store(
        train_set.pairs.iter().map(|p| p.tgt.as_str()),
        TOKENIZE_CHUNK,
    )?;
    encoder.set_max_seq_length(model_max)?;
    Ok((src_tokens, tgt_tokens))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(n: usize) -> ParallelCorpus {
        let mut c = ParallelCorpus::default();
        let (deu, eng) = (c.language_id("deu"), c.language_id("eng"));
        for i in 0..n {
            c.push(format!("satz {i}"), format!("sentence {i}"), deu, eng, None);
        }
        c
    }

    fn numbers(c: &ParallelCorpus) -> Vec<usize> {
        c.pairs
            .iter()
            .map(|p| p.tgt["sentence ".len()..].parse().unwrap())
            .collect()
    }

    #[test]
    fn the_sample_is_seeded_in_corpus_order_and_whole() {
        let mut a = corpus(1000);
        keep_sample(&mut a, 100, 7);
        let kept = numbers(&a);
        assert_eq!(kept.len(), 100);
        assert!(kept.windows(2).all(|w| w[0] < w[1]), "corpus order kept");
        // Each pair moves whole: its two sides and its language ids stay together.
        for (p, i) in a.pairs.iter().zip(&kept) {
            assert_eq!(p.src, format!("satz {i}"));
            assert_eq!((p.src_lang, p.tgt_lang), (0, 1));
        }
        let mut again = corpus(1000);
        keep_sample(&mut again, 100, 7);
        assert_eq!(numbers(&again), kept, "the same seed keeps the same pairs");
        let mut other = corpus(1000);
        keep_sample(&mut other, 100, 8);
        assert_ne!(numbers(&other), kept, "another seed keeps others");
        // Not the first or last 100: a sample drawn from the whole corpus.
        assert!(kept[0] < 100 && *kept.last().unwrap() >= 900);
        let mut small = corpus(50);
        keep_sample(&mut small, 100, 7);
        assert_eq!(numbers(&small), (0..50).collect::<Vec<_>>());
    }
}

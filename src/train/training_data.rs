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
    Ok((train_set, dev_set))
}

/// Keeps a seeded random sample of `n` pairs (in their original order).
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
    let mut i = 0;
    corpus.pairs.retain(|_| {
        i += 1;
        keep[i - 1]
    });
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

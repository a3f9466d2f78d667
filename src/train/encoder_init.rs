//! The encoder a fresh run starts from: a pretrained folder (optionally with an extended
//! vocabulary and a new output layer), or random weights of the recipe's shape with a
//! tokenizer from the recipe or trained on the training text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tch::{Device, Kind, Tensor};

use super::config::{ModelConfig, TokenizerConfig, TrainConfig};
use crate::data::ParallelCorpus;
use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;
use crate::model::dense::{DenseConfig, IDENTITY};
use crate::model::{EncoderConfig, HeadSpec, PoolingConfig, PoolingMode, SentenceEncoder};
use crate::tokenizer::training::{TokenizerTrainingOptions, balanced_sample, train_unigram};

/// The encoder a fresh run starts from: `init_from`, or random weights with a
/// tokenizer from the recipe (or trained on the training text).
pub fn initial_encoder(
    config: &TrainConfig,
    out: &Path,
    train_set: &ParallelCorpus,
    device: Device,
) -> Result<SentenceEncoder> {
    if let Some(dir) = &config.model.init_from {
        let dir = match &config.model.extend_vocabulary {
            Some(x) => extended_init(dir, x, out, train_set, config.run.seed)?,
            None => dir.clone(),
        };
        let encoder = SentenceEncoder::load(&dir, device)?;
        return match config.model.output_dim {
            Some(k) if k != encoder.dim() => with_new_output_layer(&encoder, k),
            _ => Ok(encoder),
        };
    }
    let tokenizer_path = out.join("tokenizer.json");
    let tokenizer_json = if let Some(path) = &config.tokenizer.path {
        crate::io::text::read_text(path)?
    } else if tokenizer_path.exists() {
        crate::io::text::read_text(&tokenizer_path)?
    } else {
        let json = train_tokenizer(train_set, &config.tokenizer, config.run.seed, false)?;
        write_atomic(&tokenizer_path, json.as_bytes())?;
        json
    };
    new_encoder(&config.model, tokenizer_json, device)
}

/// `init_from` with the recipe's vocabulary extension, written once to `out/init/` and
/// reused by a resumed run. The sample is seeded, but the tokenizers crate's WordPiece
/// trainer breaks ties between equally frequent merges in an order that changes from
/// process to process, so building it again can differ by a few pieces (three runs of one
/// recipe: 45,912, 45,913 and 45,918 pieces; docs/results.md). Public for
/// `lase tokenizer extend`, which builds the folder a run would start from without
/// starting the run.
pub fn extended_init(
    dir: &Path,
    x: &super::config::VocabularyExtension,
    out: &Path,
    train_set: &ParallelCorpus,
    seed: u64,
) -> Result<PathBuf> {
    let target = out.join("init");
    // What the folder was built from: a folder built from other settings is rebuilt.
    let mut settings = serde_json::json!({
        "init_from": dir,
        "pieces": x.pieces,
        "sample_sentences": x.sample_sentences,
        "alpha": x.alpha,
        "seed": seed,
    });
    // Recorded only when not the default, so folders built before the setting existed
    // still match their recipes.
    if x.pieces_from != crate::tokenizer::extend::PieceSelection::Any {
        settings["pieces_from"] = serde_json::json!(x.pieces_from);
    }
    let built_from = std::fs::read_to_string(target.join("EXTENDED"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map(|v| v["settings"].clone());
    if target.join("model.safetensors").exists() && built_from.as_ref() == Some(&settings) {
        return Ok(target);
    }
    // The transformer folder of a sentence-transformers model is its root here.
    let mut by_language: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for p in &train_set.pairs {
        by_language
            .entry(train_set.languages[p.src_lang as usize].clone())
            .or_default()
            .push(p.src.as_str());
    }
    for v in by_language.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    let sample = crate::tokenizer::training::balanced_sample(
        &by_language,
        x.sample_sentences,
        x.alpha,
        seed,
    );
    let partial = out.join("init.partial");
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| LaseError::io(&partial, e))?;
    }
    let report = crate::tokenizer::extend::extend_vocabulary(
        dir,
        &sample,
        x.pieces,
        x.pieces_from,
        &partial,
    )?;
    tracing::info!(
        "vocabulary {} -> {} pieces; tokens per sampled sentence {:.1} -> {:.1}; first new pieces {:?}",
        report.old_vocab_size,
        report.new_vocab_size,
        report.tokens_per_sentence_before,
        report.tokens_per_sentence_after,
        report.examples
    );
    let record = serde_json::json!({ "settings": settings, "report": report });
    let text = serde_json::to_string_pretty(&record).expect("report serialises");
    write_atomic(partial.join("EXTENDED"), text.as_bytes())?;
    crate::io::atomic::replace_dir(&partial, &target)?;
    Ok(target)
}

/// The word-embedding rows before and after the extension that built `out/init/` (its
/// EXTENDED record, written by [`extended_init`]).
pub fn rows_of_extension(out: &Path) -> Result<(usize, usize)> {
    let path = out.join("init").join("EXTENDED");
    let text = crate::io::text::read_text(&path)?;
    let record: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| LaseError::bad_file(&path, format!("not JSON: {e}")))?;
    let rows = |key: &str| {
        record["report"][key]
            .as_u64()
            .map(|v| v as usize)
            .ok_or_else(|| LaseError::bad_file(&path, format!("no report.{key}")))
    };
    Ok((rows("old_vocab_size")?, rows("new_vocab_size")?))
}

/// `encoder` with a new dense layer d -> k (PyTorch's nn.Linear initialisation: weight
/// uniform in ±1/√d, bias 0), e.g. the 384-d output MSE distillation from a 384-d
/// teacher needs on top of a 256-d pretrained student.
fn with_new_output_layer(encoder: &SentenceEncoder, k: usize) -> Result<SentenceEncoder> {
    let d = encoder.dim() as i64;
    let bound = 1.0 / (d as f64).sqrt();
    let weight = (Tensor::rand([k as i64, d], (Kind::Float, Device::Cpu)) * 2.0 - 1.0) * bound;
    let bias = Tensor::zeros([k as i64], (Kind::Float, Device::Cpu));
    encoder.with_linear_projection(&weight, &bias)
}

/// Trains the recipe's Unigram tokenizer on a language-balanced sample of `corpus`;
/// returns the tokenizer.json text.
pub fn train_tokenizer(
    corpus: &ParallelCorpus,
    t: &TokenizerConfig,
    seed: u64,
    progress: bool,
) -> Result<String> {
    let mut by_language: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (text, lang) in corpus.sentences() {
        by_language.entry(lang.to_owned()).or_default().push(text);
    }
    let sample = balanced_sample(&by_language, t.sample_sentences, t.alpha, seed);
    tracing::info!(
        "training a {}-piece unigram tokenizer on {} sampled sentences",
        t.vocab_size,
        sample.len()
    );
    train_unigram(
        &sample,
        &corpus.languages,
        &TokenizerTrainingOptions {
            vocab_size: t.vocab_size,
            show_progress: progress,
        },
    )
}

/// The encoder config a from-scratch recipe builds, for a vocabulary of `vocab` pieces
/// whose padding piece is `pad` (also what recipe validation checks, with one row).
pub(crate) fn scratch_encoder_config(model: &ModelConfig, vocab: usize, pad: i64) -> EncoderConfig {
    let mut c = EncoderConfig::bert(vocab, model.hidden, model.layers, model.heads, model.ffn);
    c.max_position_embeddings = model.max_tokens;
    c.hidden_dropout_prob = model.dropout;
    c.attention_probs_dropout_prob = model.dropout;
    c.embedding_size = model.embedding_size;
    c.recurrent_unit_layers = model.recurrent_unit_layers;
    c.pad_token_id = pad;
    c
}

/// The recipe's `model.pooling`, parsed.
pub(crate) fn scratch_pooling(model: &ModelConfig) -> Result<PoolingMode> {
    model
        .pooling
        .parse()
        .map_err(|e| LaseError::InvalidArgument(format!("model.pooling: {e}")))
}

/// A randomly initialised encoder of the recipe's shape.
pub fn new_encoder(
    model: &ModelConfig,
    tokenizer_json: String,
    device: Device,
) -> Result<SentenceEncoder> {
    let inner = tokenizers::Tokenizer::from_bytes(tokenizer_json.as_bytes())
        .map_err(|e| LaseError::Tokenizer(format!("invalid tokenizer.json: {e}")))?;
    let vocab = inner.get_vocab_size(true);
    let pad = inner
        .token_to_id("<pad>")
        .or_else(|| inner.token_to_id("[PAD]"))
        .unwrap_or(0) as i64;
    let c = scratch_encoder_config(model, vocab, pad);
    let mode = scratch_pooling(model)?;
    let head = HeadSpec {
        pooling: PoolingConfig::single(model.hidden, mode),
        dense: model
            .output_dim
            .map(|k| DenseConfig {
                in_features: model.hidden,
                out_features: k,
                bias: true,
                activation_function: IDENTITY.into(),
            })
            .into_iter()
            .collect(),
        normalize: false,
    };
    SentenceEncoder::new(c, tokenizer_json, model.max_tokens, head, device)
}

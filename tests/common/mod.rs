//! Helpers shared by the integration tests: tiny models made on the fly, and the
//! location of the real teacher that scripts/setup.sh fetches.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use lase::model::dense::{DenseConfig, TANH};
use lase::model::{EncoderConfig, HeadSpec, PoolingConfig, PoolingMode, SentenceEncoder};
use tch::Device;
use tokenizers::models::wordlevel::WordLevel;
use tokenizers::normalizers::utils::Lowercase;
use tokenizers::pre_tokenizers::whitespace::Whitespace;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, Tokenizer};

pub const TINY_WORDS: &[&str] = &[
    "the", "cat", "dog", "sat", "on", "mat", "a", "house", "is", "red", "blue", "green", "big",
    "small", "runs", "fast", "slow", "der", "die", "das", "hund", "katze", "haus", "ist", "rot",
    "blau", "grün", "groß", "klein", "läuft", "schnell", "langsam", "und", "and", "with", "mit",
];

/// A word-level tokenizer over [`TINY_WORDS`] with BERT's special tokens
/// ([PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3).
pub fn tiny_tokenizer_json() -> String {
    let mut vocab: Vec<(String, u32)> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
        .iter()
        .chain(TINY_WORDS)
        .enumerate()
        .map(|(i, w)| (w.to_string(), i as u32))
        .collect();
    vocab.sort_by_key(|(_, i)| *i);
    let model = WordLevel::builder()
        .vocab(vocab.into_iter().collect())
        .unk_token("[UNK]".into())
        .build()
        .unwrap();
    let mut tok = Tokenizer::new(model);
    tok.with_normalizer(Some(Lowercase)).unwrap();
    tok.with_pre_tokenizer(Some(Whitespace {}));
    tok.with_post_processor(Some(
        TemplateProcessing::builder()
            .try_single("[CLS] $A [SEP]")
            .unwrap()
            .special_tokens(vec![("[CLS]", 2), ("[SEP]", 3)])
            .build()
            .unwrap(),
    ));
    let _added = tok.add_special_tokens([
        AddedToken::from("[PAD]", true),
        AddedToken::from("[UNK]", true),
        AddedToken::from("[CLS]", true),
        AddedToken::from("[SEP]", true),
    ]);
    tok.to_string(false).unwrap()
}

pub fn tiny_config() -> EncoderConfig {
    let mut c = EncoderConfig::bert(4 + TINY_WORDS.len(), 16, 2, 2, 32);
    c.max_position_embeddings = 40;
    c
}

pub fn mean_head(dim: usize, normalize: bool) -> HeadSpec {
    HeadSpec {
        pooling: PoolingConfig::single(dim, PoolingMode::Mean),
        dense: vec![],
        normalize,
    }
}

pub fn dense_head(dim: usize, out: usize, mode: PoolingMode) -> HeadSpec {
    HeadSpec {
        pooling: PoolingConfig::single(dim, mode),
        dense: vec![DenseConfig {
            in_features: dim,
            out_features: out,
            bias: true,
            activation_function: TANH.into(),
        }],
        normalize: true,
    }
}

/// libtorch's random generator is global to the process: a test that seeds it and then
/// draws from it holds this lock, so a test running beside it cannot reseed it between.
/// Re-entrant on one thread: a test holding it may call helpers that take it too
/// (`tiny_encoder`); only the outermost guard releases it.
pub fn torch_rng() -> TorchRngGuard {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    thread_local! {
        static HELD_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if HELD_HERE.get() {
        return TorchRngGuard { outer: None };
    }
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    HELD_HERE.set(true);
    TorchRngGuard {
        outer: Some((guard, &HELD_HERE)),
    }
}

/// Held while a test owns libtorch's random generator (see [`torch_rng`]).
pub struct TorchRngGuard {
    #[allow(clippy::type_complexity)]
    outer: Option<(
        std::sync::MutexGuard<'static, ()>,
        &'static std::thread::LocalKey<std::cell::Cell<bool>>,
    )>,
}

impl Drop for TorchRngGuard {
    fn drop(&mut self) {
        if let Some((_guard, held_here)) = self.outer.take() {
            held_here.set(false);
        }
    }
}

pub fn tiny_encoder(config: EncoderConfig, head: HeadSpec, seed: i64) -> SentenceEncoder {
    let _rng = torch_rng();
    tch::manual_seed(seed);
    SentenceEncoder::new(config, tiny_tokenizer_json(), 32, head, Device::Cpu).unwrap()
}

/// Saves a tiny encoder (mean pooling, normalised, weights drawn from `seed`) as the folder
/// `dir`/model and returns its path.
pub fn save_tiny_model(dir: &Path, seed: i64) -> PathBuf {
    let model = dir.join("model");
    tiny_encoder(tiny_config(), mean_head(16, true), seed)
        .save(&model)
        .unwrap();
    model
}

pub fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The real teacher, or None with a message saying why the test is skipped. With
/// LASE_REQUIRE_TEACHER=1 (set by scripts/test.sh) a missing teacher fails instead.
pub fn teacher_dir() -> Option<PathBuf> {
    let dir = repo_path("models/all-MiniLM-L6-v2");
    if dir.join("model.safetensors").exists() {
        return Some(dir);
    }
    if std::env::var("LASE_REQUIRE_TEACHER").is_ok_and(|v| v == "1") {
        panic!(
            "{} is missing and LASE_REQUIRE_TEACHER=1: run scripts/setup.sh",
            dir.display()
        );
    }
    eprintln!(
        "SKIPPED: {} not found; run scripts/setup.sh to fetch all-MiniLM-L6-v2 for parity tests",
        dir.display()
    );
    None
}

pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb).max(1e-30)
}

pub fn rows(t: &tch::Tensor) -> Vec<Vec<f32>> {
    let (n, d) = t.size2().unwrap();
    let flat = Vec::<f32>::try_from(t.to_kind(tch::Kind::Float).flatten(0, -1)).unwrap();
    (0..n as usize)
        .map(|i| flat[i * d as usize..(i + 1) * d as usize].to_vec())
        .collect()
}

//! The sentence-transformers folder layout on disk: `modules.json` naming the modules
//! (Transformer at the root, `1_Pooling/`, `2_Dense/`, ..., Normalize), the transformer's
//! `config.json` / `model.safetensors` / tokenizer files and `sentence_bert_config.json`.
//! [`SentenceEncoder`](super::SentenceEncoder) reads and writes its folders through these.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::EncoderConfig;
use super::pooling::PoolingConfig;
use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;
use crate::tokenizer::SentenceTokenizer;

pub(super) const TRANSFORMER_TYPE: &str = "sentence_transformers.models.Transformer";
pub(super) const POOLING_TYPE: &str = "sentence_transformers.models.Pooling";
pub(super) const DENSE_TYPE: &str = "sentence_transformers.models.Dense";
pub(super) const NORMALIZE_TYPE: &str = "sentence_transformers.models.Normalize";
/// Tokenizer side files carried over verbatim when a model folder is saved again.
const TOKENIZER_SIDE_FILES: &[&str] = &[
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "sentencepiece.bpe.model",
    "added_tokens.json",
    "config_sentence_transformers.json",
];

/// `sentence_bert_config.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct SentenceBertConfig {
    max_seq_length: usize,
    #[serde(default)]
    do_lower_case: bool,
}

/// One entry of `modules.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ModuleEntry {
    idx: usize,
    name: String,
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

/// Reads a JSON file; an error names the file and line.
pub(super) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = crate::io::text::read_text(path)?;
    parse_json(path, &text)
}

/// [`read_json`] of text already read from `path` (errors name `path` and the line).
pub(super) fn parse_json<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| LaseError::BadLine {
        path: path.to_path_buf(),
        line: e.line(),
        message: match e.classify() {
            serde_json::error::Category::Data => {
                format!("valid JSON, but not what this file must hold: {e}")
            }
            _ => format!("invalid JSON: {e}"),
        },
    })
}

/// Writes pretty JSON atomically, with a final newline.
pub(super) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).expect("config values serialise");
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// What `modules.json` says a folder holds. A folder without one is read as a plain
/// Hugging Face model (transformer at the root, mean pooling).
pub(super) struct FolderModules {
    pub transformer_dir: PathBuf,
    pub pooling: Option<PoolingConfig>,
    pub dense_dirs: Vec<PathBuf>,
    pub normalize: bool,
}

impl FolderModules {
    pub fn read(dir: &Path) -> Result<Self> {
        let modules_path = dir.join("modules.json");
        let modules: Vec<ModuleEntry> = if modules_path.exists() {
            read_json(&modules_path)?
        } else {
            tracing::warn!(
                "{}: no modules.json; treating it as a plain Hugging Face model with mean pooling",
                dir.display()
            );
            Vec::new()
        };
        let mut found = Self {
            transformer_dir: dir.to_path_buf(),
            pooling: None,
            dense_dirs: Vec::new(),
            normalize: false,
        };
        for m in &modules {
            let module_dir = dir.join(&m.path);
            match m.kind.as_str() {
                TRANSFORMER_TYPE => found.transformer_dir = module_dir,
                POOLING_TYPE => found.pooling = Some(read_json(&module_dir.join("config.json"))?),
                DENSE_TYPE => found.dense_dirs.push(module_dir),
                NORMALIZE_TYPE => found.normalize = true,
                other => {
                    return Err(LaseError::bad_file(
                        &modules_path,
                        format!("module type {other:?} is not supported"),
                    ));
                }
            }
        }
        Ok(found)
    }
}

/// The error for a module folder without its `model.safetensors`.
pub(super) fn missing_weights(path: &Path) -> LaseError {
    LaseError::bad_file(
        path,
        "not found (lase reads safetensors weights only; convert pytorch_model.bin first)",
    )
}

/// Refuses a `config.json` describing more parameters than the weights file beside it
/// can hold (at least 2 bytes a parameter), before any tensor is allocated.
pub(super) fn check_weights_size(config: &EncoderConfig, transformer_dir: &Path) -> Result<()> {
    let weights_path = transformer_dir.join("model.safetensors");
    let bytes = std::fs::metadata(&weights_path)
        .map_err(|_| missing_weights(&weights_path))?
        .len() as u128;
    match config.minimum_parameters() {
        Some(n) if n.saturating_mul(2) <= bytes => Ok(()),
        described => Err(LaseError::bad_file(
            transformer_dir.join("config.json"),
            format!(
                "describes {} parameters, more than {} ({} bytes) can hold",
                described.map_or("too many".to_string(), |n| format!("at least {n}")),
                weights_path.display(),
                bytes
            ),
        )),
    }
}

/// The tokenizer of a model folder: `tokenizer.json` (kept verbatim for saving), the
/// length and casing of `sentence_bert_config.json`, and the side files carried over.
pub(super) struct TokenizerFiles {
    pub tokenizer: SentenceTokenizer,
    pub tokenizer_json: String,
    pub side_files: BTreeMap<String, Vec<u8>>,
    pub do_lower_case: bool,
}

impl TokenizerFiles {
    pub fn read(dir: &Path, transformer_dir: &Path, config: &EncoderConfig) -> Result<Self> {
        let sbert_path = transformer_dir.join("sentence_bert_config.json");
        let (max_seq_length, do_lower_case) = if sbert_path.exists() {
            let s: SentenceBertConfig = read_json(&sbert_path)?;
            (s.max_seq_length.min(config.max_tokens()), s.do_lower_case)
        } else {
            (config.max_tokens(), false)
        };
        // Which file and key the maximum comes from, for an error about it.
        let (max_from, max_key) = if sbert_path.exists() && max_seq_length < config.max_tokens() {
            (sbert_path.clone(), "max_seq_length")
        } else {
            (
                transformer_dir.join("config.json"),
                "max_position_embeddings",
            )
        };
        let tokenizer_path = transformer_dir.join("tokenizer.json");
        let tokenizer_json = crate::io::text::read_text(&tokenizer_path)?;
        let tokenizer = SentenceTokenizer::from_file(
            &tokenizer_path,
            max_seq_length,
            config.pad_token_id,
            do_lower_case,
        )
        .map_err(|e| match e {
            LaseError::InvalidArgument(message) => {
                LaseError::bad_file(&max_from, format!("{max_key}: {message}"))
            }
            e => e,
        })?;
        // An id past the embedding table would panic inside libtorch's forward.
        if let Some(max_id) = tokenizer.max_token_id()
            && max_id as usize >= config.vocab_size
        {
            return Err(LaseError::bad_file(
                &tokenizer_path,
                format!(
                    "token id {max_id} is outside the model's vocabulary (config.json vocab_size = {})",
                    config.vocab_size
                ),
            ));
        }
        // Likewise a token type id past the type table (a template such as `$A:1` over a
        // model with one type): the type ids of a sentence are the template's.
        if config.type_vocab_size > 0
            && let Some(max_type) = tokenizer
                .encode(&["a"])?
                .iter()
                .flat_map(|t| t.type_ids.iter().copied())
                .max()
            && max_type as usize >= config.type_vocab_size
        {
            return Err(LaseError::bad_file(
                &tokenizer_path,
                format!(
                    "its template gives token type id {max_type}, outside the model's type table (config.json type_vocab_size = {})",
                    config.type_vocab_size
                ),
            ));
        }
        let mut side_files = BTreeMap::new();
        for name in TOKENIZER_SIDE_FILES {
            let from = if *name == "config_sentence_transformers.json" {
                dir
            } else {
                transformer_dir
            };
            if let Ok(bytes) = std::fs::read(from.join(name)) {
                side_files.insert((*name).to_owned(), bytes);
            }
        }
        Ok(Self {
            tokenizer,
            tokenizer_json,
            side_files,
            do_lower_case,
        })
    }
}

/// Writes `sentence_bert_config.json` into `dir`.
pub(super) fn write_sentence_bert_config(
    dir: &Path,
    max_seq_length: usize,
    do_lower_case: bool,
) -> Result<()> {
    write_json(
        &dir.join("sentence_bert_config.json"),
        &SentenceBertConfig {
            max_seq_length,
            do_lower_case,
        },
    )
}

/// Builds `modules.json` while a folder is written: the transformer at the root, then
/// each module added gets the next `<idx>_<Name>/` folder.
pub(super) struct ModulesWriter<'a> {
    dir: &'a Path,
    modules: Vec<ModuleEntry>,
}

impl<'a> ModulesWriter<'a> {
    pub fn new(dir: &'a Path) -> Self {
        Self {
            dir,
            modules: vec![ModuleEntry {
                idx: 0,
                name: "0".into(),
                path: String::new(),
                kind: TRANSFORMER_TYPE.into(),
            }],
        }
    }

    /// Registers the next module and creates its folder, which it returns.
    pub fn add(&mut self, kind: &str, suffix: &str) -> Result<PathBuf> {
        let idx = self.modules.len();
        let path = format!("{idx}_{suffix}");
        let module_dir = self.dir.join(&path);
        std::fs::create_dir_all(&module_dir).map_err(|e| LaseError::io(&module_dir, e))?;
        self.modules.push(ModuleEntry {
            idx,
            name: idx.to_string(),
            path,
            kind: kind.into(),
        });
        Ok(module_dir)
    }

    /// Writes `modules.json`.
    pub fn finish(self) -> Result<()> {
        write_json(&self.dir.join("modules.json"), &self.modules)
    }
}

//! The encoder's shape and where its weights and tokenizer come from.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Encoder shape (ems.txt §IV-A: 6 layers, 1024 hidden, 16 heads, FFN 4096, max 120
/// tokens, dropout 0.1, mean pooling).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub ffn: usize,
    pub max_tokens: usize,
    pub dropout: f64,
    /// Pooling mode: mean (EMS), cls (LaBSE/LEALLA), max, ...
    pub pooling: String,
    /// Factorised token embedding width B (V x B then B x H); none = V x H.
    pub embedding_size: Option<usize>,
    /// Layers in a recurring unit (parameter sharing); none = all distinct.
    pub recurrent_unit_layers: Option<usize>,
    /// Dense head d -> k after pooling (dimension reduction); none = no head.
    pub output_dim: Option<usize>,
    /// Train only the dense head after pooling (e.g. the new `output_dim` layer) and keep
    /// the transformer frozen: lealla.txt 3.2's dimension-reduction head on a frozen
    /// encoder.
    #[serde(default)]
    pub freeze_encoder: bool,
    /// Start from this lase/HF model folder instead of random weights (its tokenizer
    /// is used and the shape fields above are ignored, except `output_dim`: a width
    /// other than the model's appends a new, randomly initialised dense layer).
    pub init_from: Option<PathBuf>,
    /// Append new WordPiece pieces to `init_from`'s vocabulary before training, learnt
    /// from the training text ([`crate::tokenizer::extend`]): the new languages' words
    /// stop being strings of single characters. Off when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extend_vocabulary: Option<VocabularyExtension>,
    /// Cut training sentences to this many tokens (none = the model's own limit, which
    /// the saved model keeps for inference): bounds the cost of long training text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train_max_tokens: Option<usize>,
}

/// How many pieces [`ModelConfig::extend_vocabulary`] adds and from what sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VocabularyExtension {
    pub pieces: usize,
    /// Source-side (non-pivot) training sentences sampled, language-balanced.
    #[serde(default = "VocabularyExtension::default_sample")]
    pub sample_sentences: usize,
    /// Temperature exponent of the sample (XLM-R's 0.3).
    #[serde(default = "VocabularyExtension::default_alpha")]
    pub alpha: f64,
    /// Which learnt pieces are added: `any` (default); `unreadable`, only pieces the
    /// old vocabulary spells with [UNK], so text it could read tokenises as before; or
    /// `non-latin`, only pieces holding a non-Latin letter, so Latin-script text tokenises
    /// as before and scripts read letter by letter get word pieces.
    #[serde(default)]
    pub pieces_from: crate::tokenizer::extend::PieceSelection,
    /// Train only the added rows of the word-embedding matrix and keep every other weight
    /// of `init_from` (the transformer, the old rows, the head) as it is: Artetxe, Ruder &
    /// Yogatama (ACL 2020, "On the Cross-lingual Transferability of Monolingual
    /// Representations") learn a new language's token embeddings under a frozen body.
    /// With `pieces_from = "unreadable"` the text the old vocabulary could read keeps the
    /// old model's vectors exactly, so only the languages it read as [UNK] can change.
    #[serde(default)]
    pub train_only_added_rows: bool,
}

impl VocabularyExtension {
    fn default_sample() -> usize {
        300_000
    }
    fn default_alpha() -> f64 {
        0.3
    }
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            layers: 6,
            hidden: 1024,
            heads: 16,
            ffn: 4096,
            max_tokens: 120,
            dropout: 0.1,
            pooling: "mean".into(),
            embedding_size: None,
            recurrent_unit_layers: None,
            output_dim: None,
            freeze_encoder: false,
            init_from: None,
            extend_vocabulary: None,
            train_max_tokens: None,
        }
    }
}

/// Tokenizer: an existing tokenizer.json, or one trained on the training text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenizerConfig {
    pub path: Option<PathBuf>,
    /// Unigram vocabulary size (ems.txt: 60k pieces).
    pub vocab_size: usize,
    /// Sentences sampled for training it (language-balanced).
    pub sample_sentences: usize,
    /// Temperature exponent of the language-balanced sample.
    pub alpha: f64,
}

impl Default for TokenizerConfig {
    fn default() -> Self {
        Self {
            path: None,
            vocab_size: 60_000,
            sample_sentences: 1_000_000,
            alpha: 0.3,
        }
    }
}

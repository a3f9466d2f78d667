//! Request and response bodies: text-embeddings-inference's `/embed` and `/similarity`,
//! OpenAI's `/v1/embeddings`, and lase's `/mine`. Unknown fields are rejected (422).

use serde::{Deserialize, Serialize};

/// One string or a list of strings.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Inputs {
    One(String),
    Many(Vec<String>),
}

impl Inputs {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(s) => vec![s],
            Self::Many(v) => v,
        }
    }
}

fn yes() -> bool {
    true
}

/// `POST /embed` (TEI).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedRequest {
    pub inputs: Inputs,
    #[serde(default = "yes")]
    pub normalize: bool,
    /// Truncate inputs longer than the model's maximum instead of rejecting them.
    #[serde(default)]
    pub truncate: bool,
    /// Keep the first `dimensions` components (Matryoshka-style), renormalised.
    #[serde(default)]
    pub dimensions: Option<usize>,
}

/// `POST /v1/embeddings` (OpenAI).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiEmbeddingRequest {
    pub input: Inputs,
    #[serde(default)]
    pub model: Option<String>,
    /// float (default), base64 (little-endian float32), int8, binary (packed sign bits).
    #[serde(default)]
    pub encoding_format: Option<String>,
    #[serde(default)]
    pub dimensions: Option<usize>,
    #[serde(default)]
    pub user: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum EmbeddingValue {
    Float(Vec<f32>),
    Int(Vec<i32>),
    Base64(String),
}

#[derive(Debug, Serialize)]
pub struct OpenAiEmbedding {
    pub object: &'static str,
    pub index: usize,
    pub embedding: EmbeddingValue,
}

#[derive(Debug, Serialize)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub total_tokens: usize,
}

#[derive(Debug, Serialize)]
pub struct OpenAiEmbeddingResponse {
    pub object: &'static str,
    pub data: Vec<OpenAiEmbedding>,
    pub model: String,
    pub usage: Usage,
}

/// `POST /similarity` (TEI): cosine of `source_sentence` with each of `sentences`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimilarityRequest {
    pub inputs: SimilarityInputs,
    #[serde(default)]
    pub truncate: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimilarityInputs {
    pub source_sentence: String,
    pub sentences: Vec<String>,
}

/// `POST /mine`: margin-scored pairs between two lists (the mining module's options).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MineRequest {
    pub src: Vec<String>,
    pub tgt: Vec<String>,
    #[serde(default)]
    pub k: Option<usize>,
    /// absolute, distance, ratio (default).
    #[serde(default)]
    pub margin: Option<String>,
    /// fwd, bwd, max (default), intersect.
    #[serde(default)]
    pub retrieval: Option<String>,
    #[serde(default)]
    pub threshold: Option<f32>,
    #[serde(default)]
    pub truncate: bool,
}

#[derive(Debug, Serialize)]
pub struct MinedPair {
    pub score: f32,
    pub src_index: usize,
    pub tgt_index: usize,
    pub src: String,
    pub tgt: String,
}

#[derive(Debug, Serialize)]
pub struct MineResponse {
    pub pairs: Vec<MinedPair>,
}

/// `GET /info`.
#[derive(Debug, Clone, Serialize)]
pub struct Info {
    pub model_id: String,
    pub model_dtype: String,
    pub dimensions: usize,
    pub max_input_length: usize,
    pub max_batch_tokens: usize,
    pub max_client_batch_size: usize,
    pub max_concurrent_requests: usize,
    pub version: &'static str,
}

/// Error body, TEI-style.
#[derive(Debug, Serialize)]
pub struct ErrorBody {
    pub error: String,
    pub error_type: &'static str,
}

//! The encoder: a BERT-family transformer (embeddings -> layers) with sentence-level
//! pooling and heads, loaded from and saved to the HF / sentence-transformers layout.

pub mod auto_precision;
pub mod bert;
pub mod config;
pub mod dense;
pub mod dropout;
pub mod int8;
pub mod linear;
pub mod packed_linear;
pub mod param_init;
pub mod pooling;
pub mod sentence_encoder;
mod st_folder;
pub mod token_layout;

pub use config::{Activation, EncoderConfig};
pub use pooling::{PoolingConfig, PoolingMode};
pub use sentence_encoder::{HeadSpec, Precision, SentenceEncoder, l2_normalize};

//! lase: language-agnostic sentence embeddings on libtorch.
//!
//! Data flows one way: text -> [`tokenizer`] -> [`model`] (transformer, pooling,
//! heads) -> sentence vectors -> [`embed`] (files of vectors).

pub mod embed;
pub mod error;
pub mod io;
pub mod model;
pub mod runtime;
pub mod tokenizer;

pub use error::{LaseError, Result};

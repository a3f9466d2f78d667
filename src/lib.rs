//! lase: language-agnostic sentence embeddings on libtorch.
//!
//! Data flows one way: text -> [`tokenizer`] -> [`model`] (transformer, pooling,
//! heads) -> [`inference`] (batching, workers) -> sentence vectors -> [`embed`] (files of
//! vectors).

pub mod data;
pub mod deadline;
pub mod embed;
pub mod error;
pub mod eval;
pub mod inference;
pub mod interpolate;
pub mod io;
pub mod lang;
pub mod losses;
pub mod mine;
pub mod model;
pub mod reduce_dim;
pub mod rng;
pub mod runtime;
pub mod serve;
pub mod shard;
pub mod shrink;
pub mod tokenizer;
pub mod train;

pub use error::{LaseError, Result};

//! Evaluation on the field's benchmarks. Metrics take embeddings (so each can be checked
//! without an encoder); suites read the test data as it is shipped and embed it.

pub mod bitext_retrieval;
pub mod bucc;
pub mod flores;
pub mod pool;
pub mod sib;
pub mod spearman;
pub mod sts;
pub mod tatoeba;

pub use bitext_retrieval::{RetrievalScores, bitext_retrieval};

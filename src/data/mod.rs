//! Training data: parallel corpora ([`corpus`]) read from disk ([`readers`], N-way
//! folders in [`nway`]), a dev split carved from the training pairs ([`split`]), and the language-balanced batch sampler that feeds the
//! trainer ([`sampler`]).

pub mod corpus;
pub(crate) mod files;
pub mod nway;
pub mod readers;
pub mod sampler;
pub mod split;

pub use corpus::{CorpusSource, ParallelCorpus, TranslationPair};
pub use sampler::{BatchComposition, BatchSampler, SamplerState, SamplingConfig};
pub use split::{DevSplitConfig, split_dev};

//! Training data: parallel corpora read from disk ([`corpus`], N-way folders in [`nway`]), a dev split carved from
//! the training pairs ([`split`]), and the language-balanced batch sampler that feeds the
//! trainer ([`sampler`]).

pub mod corpus;
pub mod nway;
pub mod sampler;
pub mod split;

pub use corpus::{CorpusSource, ParallelCorpus, TranslationPair, macro_language};
pub use sampler::{BatchSampler, SamplerState, SamplingConfig};
pub use split::{DevSplitConfig, split_dev};

//! File formats and safe output: text corpora, `.npy` matrices, atomic writes.

pub mod atomic;
pub mod npy;
pub mod text;

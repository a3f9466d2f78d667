//! File formats and safe output: text corpora, `.npy` matrices, safetensors weights,
//! atomic writes.

pub mod atomic;
pub mod npy;
pub mod safetensors;
pub mod text;

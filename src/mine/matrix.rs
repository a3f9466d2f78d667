//! The two types every search in `mine` shares: a borrowed row-major matrix and the k
//! best neighbours of each of its rows. They live here, below the searches (exact tensor
//! blocks in `knn`, cache tiles in `topk_cpu`, `ann`, `quantized`), so no search module
//! imports another for its types.

use tch::{Device, Kind, Tensor};

use crate::error::{LaseError, Result};

/// A row-major float32 matrix borrowed from memory (owned or memory-mapped).
#[derive(Clone, Copy, Debug)]
pub struct MatrixView<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
}

impl<'a> MatrixView<'a> {
    pub fn new(data: &'a [f32], rows: usize, cols: usize) -> Result<Self> {
        if data.len() != rows * cols {
            return Err(LaseError::InvalidArgument(format!(
                "{} values for a {rows} x {cols} matrix",
                data.len()
            )));
        }
        Ok(Self { data, rows, cols })
    }

    pub fn row(&self, i: usize) -> &'a [f32] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// Rows `start..end` as a tensor sharing this memory (valid while `self` is).
    pub(crate) fn block(&self, start: usize, end: usize, device: Device) -> Tensor {
        let slice = &self.data[start * self.cols..end * self.cols];
        // SAFETY: the tensor views `slice`, which outlives every use below (blocks are
        // dropped inside the search); libtorch only reads it (no in-place ops on blocks).
        let t = unsafe {
            Tensor::from_blob(
                slice.as_ptr() as *const u8,
                &[(end - start) as i64, self.cols as i64],
                &[self.cols as i64, 1],
                Kind::Float,
                Device::Cpu,
            )
        };
        if device == Device::Cpu {
            t
        } else {
            t.to_device(device)
        }
    }
}

/// The k best neighbours of each query: `scores[i*k..]` descending, `indices` into the
/// searched matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Neighbours {
    pub k: usize,
    pub scores: Vec<f32>,
    pub indices: Vec<i64>,
}

impl Neighbours {
    pub fn len(&self) -> usize {
        self.scores.len() / self.k.max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub fn scores_of(&self, i: usize) -> &[f32] {
        &self.scores[i * self.k..(i + 1) * self.k]
    }

    pub fn indices_of(&self, i: usize) -> &[i64] {
        &self.indices[i * self.k..(i + 1) * self.k]
    }

    /// Mean of each query's k neighbour scores.
    pub fn mean_scores(&self) -> Vec<f32> {
        self.scores
            .chunks_exact(self.k.max(1))
            .map(|c| c.iter().sum::<f32>() / self.k as f32)
            .collect()
    }
}

/// Checks what a search needs: same width, non-empty, finite values.
pub fn validate_pair(x: &MatrixView, y: &MatrixView) -> Result<()> {
    for (name, m) in [("source", x), ("target", y)] {
        if m.rows == 0 {
            return Err(LaseError::InvalidArgument(format!(
                "the {name} corpus is empty"
            )));
        }
        if m.cols == 0 {
            return Err(LaseError::InvalidArgument(format!(
                "the {name} embeddings are 0-d ({} rows of no values)",
                m.rows
            )));
        }
    }
    if x.cols != y.cols {
        return Err(LaseError::InvalidArgument(format!(
            "embedding dimensions differ: source is {}-d, target is {}-d",
            x.cols, y.cols
        )));
    }
    for (name, m) in [("source", x), ("target", y)] {
        if let Some(pos) = m.data.iter().position(|v| !v.is_finite()) {
            return Err(LaseError::InvalidArgument(format!(
                "the {name} embeddings hold a non-finite value (NaN or inf) in row {} (0-based)",
                pos / m.cols
            )));
        }
    }
    Ok(())
}

/// Inner product in eight independent lanes, so the compiler can vectorise it (a single
/// running float sum cannot be reordered).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for l in 0..8 {
            lanes[l] += x[l] * y[l];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

//! Exact k-nearest-neighbour search by inner product, both directions in one pass.
//!
//! The similarity matrix X Yᵀ is computed block by block (libtorch matmul); each block
//! updates the running top-k of its X rows (row-wise) and of its Y rows (column-wise). A
//! forward and a backward search therefore cost one matrix product, not two, and memory
//! beyond the two inputs is one block (`query_block` x `key_block` floats) plus the
//! top-k lists. The inputs are borrowed, so memory-mapped `.npy` files work as they are.

use tch::{Device, Kind, Tensor};

pub use super::matrix::validate_pair;
use super::matrix::{MatrixView, Neighbours};
use crate::deadline::Deadline;
use crate::error::{LaseError, Result};

/// How the exact search runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SearchKernel {
    /// Cache-sized tiles with a fused top-k scan on CPU; tensor blocks on GPU.
    #[default]
    Auto,
    /// Cache-sized tiles, one single-threaded product per tile, top-k scanned in Rust
    /// ([`super::topk_cpu`]); CPU only.
    CpuTiles,
    /// Large blocks with libtorch matmul and top-k (any device).
    TensorBlocks,
}

/// Kernel, block sizes (of the tensor path) and device of the exact search.
#[derive(Clone, Debug)]
pub struct KnnOptions {
    pub k: usize,
    pub kernel: SearchKernel,
    /// Rows of X per block.
    pub query_block: usize,
    /// Rows of Y per block.
    pub key_block: usize,
    pub device: Device,
    /// Stop with [`LaseError::DeadlineExceeded`] at the first block that starts past
    /// this instant (a server's per-request time bound); `None` = no bound.
    pub deadline: Option<Deadline>,
}

impl KnnOptions {
    pub fn new(k: usize) -> Self {
        Self {
            k,
            kernel: SearchKernel::Auto,
            query_block: 2048,
            key_block: 4096,
            device: Device::Cpu,
            deadline: None,
        }
    }
}

/// Running top-k lists for `n` rows, held as tensors [n, k].
struct TopK {
    scores: Tensor,
    indices: Tensor,
}

impl TopK {
    fn new(n: usize, k: usize, device: Device) -> Self {
        Self {
            scores: Tensor::full(
                [n as i64, k as i64],
                f64::NEG_INFINITY,
                (Kind::Float, device),
            ),
            indices: Tensor::full([n as i64, k as i64], -1, (Kind::Int64, device)),
        }
    }

    /// Merges candidates [rows, c] (scores, global indices) into rows `start..start+rows`.
    fn merge(&mut self, start: usize, scores: &Tensor, indices: &Tensor, k: i64) {
        let rows = scores.size()[0];
        let mut cur_s = self.scores.narrow(0, start as i64, rows);
        let mut cur_i = self.indices.narrow(0, start as i64, rows);
        let all_s = Tensor::cat(&[&cur_s, scores], 1);
        let all_i = Tensor::cat(&[&cur_i, indices], 1);
        let (best_s, pos) = all_s.topk(k, 1, true, true);
        cur_s.copy_(&best_s);
        cur_i.copy_(&all_i.gather(1, &pos, false));
    }

    fn into_neighbours(self, k: usize) -> Neighbours {
        let scores = self.scores.to_device(Device::Cpu).contiguous();
        let indices = self.indices.to_device(Device::Cpu).contiguous();
        Neighbours {
            k,
            scores: Vec::<f32>::try_from(scores.flatten(0, -1)).expect("float scores"),
            indices: Vec::<i64>::try_from(indices.flatten(0, -1)).expect("int64 indices"),
        }
    }
}

/// The k nearest neighbours of every row of `x` in `y` and of every row of `y` in `x`
/// by inner product (cosine for unit vectors). k is capped at the searched corpus size.
pub fn knn_both_ways(
    x: &MatrixView,
    y: &MatrixView,
    options: &KnnOptions,
) -> Result<(Neighbours, Neighbours)> {
    knn_both_ways_with_progress(x, y, options, &mut |_, _| {})
}

/// [`knn_both_ways`], calling `progress(blocks done, blocks in all)` after each block.
pub fn knn_both_ways_with_progress(
    x: &MatrixView,
    y: &MatrixView,
    options: &KnnOptions,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<(Neighbours, Neighbours)> {
    validate_pair(x, y)?;
    let kx = options.k.clamp(1, y.rows);
    let ky = options.k.clamp(1, x.rows);
    let device = options.device;
    let tiles = match options.kernel {
        SearchKernel::Auto => device == Device::Cpu,
        SearchKernel::CpuTiles => true,
        SearchKernel::TensorBlocks => false,
    };
    if tiles {
        if device != Device::Cpu {
            return Err(LaseError::InvalidArgument(
                "the cpu-tiles search kernel runs on the CPU only".into(),
            ));
        }
        let workers = tch::get_num_threads().max(1) as usize;
        return super::topk_cpu::knn_both_ways_cpu(
            x,
            y,
            kx,
            ky,
            workers,
            options.deadline,
            progress,
        );
    }
    let mut x_best = TopK::new(x.rows, kx, device);
    let mut y_best = TopK::new(y.rows, ky, device);
    let _no_grad = tch::no_grad_guard();
    let qb = options.query_block.max(1);
    let kb = options.key_block.max(1);
    let total = x.rows.div_ceil(qb) * y.rows.div_ceil(kb);
    let mut done = 0;
    for xs in (0..x.rows).step_by(qb) {
        let xe = (xs + qb).min(x.rows);
        let xq = x.block(xs, xe, device);
        for ys in (0..y.rows).step_by(kb) {
            if let Some(d) = &options.deadline {
                d.check()?;
            }
            done += 1;
            let ye = (ys + kb).min(y.rows);
            let yk = y.block(ys, ye, device);
            let sims = xq.mm(&yk.tr()); // [bx, by]
            let (s, i) = sims.topk(kx.min(ye - ys) as i64, 1, true, false);
            x_best.merge(xs, &s, &(i + ys as i64), kx as i64);
            let (s, i) = sims.topk(ky.min(xe - xs) as i64, 0, true, false);
            y_best.merge(ys, &s.tr(), &(i.tr() + xs as i64), ky as i64);
            progress(done, total);
        }
    }
    Ok((x_best.into_neighbours(kx), y_best.into_neighbours(ky)))
}

/// One direction only: the k nearest rows of `y` for every row of `x`.
pub fn knn(x: &MatrixView, y: &MatrixView, options: &KnnOptions) -> Result<Neighbours> {
    validate_pair(x, y)?;
    let k = options.k.clamp(1, y.rows);
    let device = options.device;
    let mut best = TopK::new(x.rows, k, device);
    let _no_grad = tch::no_grad_guard();
    let qb = options.query_block.max(1);
    let kb = options.key_block.max(1);
    for xs in (0..x.rows).step_by(qb) {
        let xe = (xs + qb).min(x.rows);
        let xq = x.block(xs, xe, device);
        for ys in (0..y.rows).step_by(kb) {
            let ye = (ys + kb).min(y.rows);
            let sims = xq.mm(&y.block(ys, ye, device).tr());
            let (s, i) = sims.topk(k.min(ye - ys) as i64, 1, true, false);
            best.merge(xs, &s, &(i + ys as i64), k as i64);
        }
    }
    Ok(best.into_neighbours(k))
}

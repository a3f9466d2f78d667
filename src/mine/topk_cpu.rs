//! The CPU search kernel: tiles of X·Yᵀ small enough to stay in cache are computed by a
//! single-threaded libtorch matrix product into a buffer the worker owns, then scanned
//! once, updating the running top-k of the tile's rows and of its columns. Workers take
//! query tiles from a shared counter; each keeps its own column lists, merged at the end.
//! Scanning while the tile is hot replaces two libtorch top-k passes over a large block,
//! which measured as slow as the product itself (docs/benchmarks.md).
//!
//! Ties keep the lower index first, as a stable sort would.
//!
//! Memory beyond the inputs: per worker one tile (2 MiB) and column lists for all of Y
//! (12 k bytes per row of Y: 4.8 MB for 100k rows at k = 4). With many workers and
//! very large Y, those lists dominate; sharding Y across workers would remove the copies.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tch::{Device, Kind, Tensor};

use super::matrix::{MatrixView, Neighbours};
use crate::error::Result;

/// Rows of X per tile.
pub const QUERY_TILE: usize = 256;
/// Rows of Y per tile.
pub const KEY_TILE: usize = 2048;

/// k best (score, index) per list, scores descending, stored flat.
struct TopKLists {
    k: usize,
    scores: Vec<f32>,
    indices: Vec<i64>,
}

impl TopKLists {
    fn new(n: usize, k: usize) -> Self {
        Self {
            k,
            scores: vec![f32::NEG_INFINITY; n * k],
            indices: vec![-1; n * k],
        }
    }

    /// The score a candidate must beat to enter list `i`.
    #[inline(always)]
    fn threshold(&self, i: usize) -> f32 {
        self.scores[i * self.k + self.k - 1]
    }

    /// Inserts (s, j) into list `i` if it beats the last entry; equal scores keep the
    /// earlier entry first.
    #[inline(always)]
    fn insert(&mut self, i: usize, s: f32, j: i64) {
        let base = i * self.k;
        let list = &mut self.scores[base..base + self.k];
        let mut p = self.k - 1;
        while p > 0 && s > list[p - 1] {
            p -= 1;
        }
        list.copy_within(p..self.k - 1, p + 1);
        list[p] = s;
        let idx = &mut self.indices[base..base + self.k];
        idx.copy_within(p..self.k - 1, p + 1);
        idx[p] = j;
    }

    /// Merges `other` into `self` list by list (ties: lower index first).
    fn merge(&mut self, other: &TopKLists) {
        let k = self.k;
        let mut cand: Vec<(f32, i64)> = Vec::with_capacity(2 * k);
        for i in 0..self.scores.len() / k {
            cand.clear();
            for (lists, at) in [(&*self, i * k), (other, i * k)] {
                for t in 0..k {
                    if lists.indices[at + t] >= 0 {
                        cand.push((lists.scores[at + t], lists.indices[at + t]));
                    }
                }
            }
            cand.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            for t in 0..k {
                let (s, j) = cand.get(t).copied().unwrap_or((f32::NEG_INFINITY, -1));
                self.scores[i * k + t] = s;
                self.indices[i * k + t] = j;
            }
        }
    }
}

/// A tensor over `data` (read-only use).
fn tensor_view(data: &[f32], rows: usize, cols: usize) -> Tensor {
    // SAFETY: the tensor views `data`, which outlives it (both live within one tile
    // step), and libtorch only reads it.
    unsafe { view(data.as_ptr(), rows, cols) }
}

/// A tensor over `data` that libtorch writes into (as an `out=` argument).
fn tensor_view_mut(data: &mut [f32], rows: usize, cols: usize) -> Tensor {
    // SAFETY: as above; the mutable borrow guarantees no other access while it is written.
    unsafe { view(data.as_mut_ptr(), rows, cols) }
}

/// # Safety
/// `ptr` must point to `rows * cols` floats that outlive the returned tensor.
unsafe fn view(ptr: *const f32, rows: usize, cols: usize) -> Tensor {
    unsafe {
        Tensor::from_blob(
            ptr as *const u8,
            &[rows as i64, cols as i64],
            &[cols as i64, 1],
            Kind::Float,
            Device::Cpu,
        )
    }
}

/// Both directions' k-NN on CPU with `workers` threads. `kx`, `ky` are already capped at
/// the corpus sizes.
pub fn knn_both_ways_cpu(
    x: &MatrixView,
    y: &MatrixView,
    kx: usize,
    ky: usize,
    workers: usize,
    deadline: Option<super::knn::Deadline>,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<(Neighbours, Neighbours)> {
    let query_tiles = x.rows.div_ceil(QUERY_TILE);
    let key_tiles = y.rows.div_ceil(KEY_TILE);
    let total = query_tiles * key_tiles;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let rows_out = Mutex::new(TopKLists::new(x.rows, kx));
    let progress = Mutex::new(progress);
    let workers = workers.clamp(1, query_tiles.max(1));
    let outer_threads = tch::get_num_threads();

    let stopped = std::sync::atomic::AtomicBool::new(false);
    let work = || -> TopKLists {
        tch::set_num_threads(1);
        let _no_grad = tch::no_grad_guard();
        let mut cols = TopKLists::new(y.rows, ky);
        let mut tile = vec![0f32; QUERY_TILE * KEY_TILE];
        loop {
            if deadline.is_some_and(|d| d.passed()) {
                stopped.store(true, Ordering::Relaxed);
                break;
            }
            let q = next.fetch_add(1, Ordering::Relaxed);
            if q >= query_tiles {
                break;
            }
            let xs = q * QUERY_TILE;
            let xe = (xs + QUERY_TILE).min(x.rows);
            let nq = xe - xs;
            let xq = tensor_view(&x.data[xs * x.cols..xe * x.cols], nq, x.cols);
            let mut rows = TopKLists::new(nq, kx);
            for t in 0..key_tiles {
                let ys = t * KEY_TILE;
                let ye = (ys + KEY_TILE).min(y.rows);
                let nk = ye - ys;
                let yk = tensor_view(&y.data[ys * y.cols..ye * y.cols], nk, y.cols);
                let out = tensor_view_mut(&mut tile[..nq * nk], nq, nk);
                let _ = xq.mm_out(&out, &yk.tr());
                drop(out);
                for r in 0..nq {
                    let row = &tile[r * nk..(r + 1) * nk];
                    let mut row_threshold = rows.threshold(r);
                    for (c, &s) in row.iter().enumerate() {
                        if s > row_threshold {
                            rows.insert(r, s, (ys + c) as i64);
                            row_threshold = rows.threshold(r);
                        }
                        if s > cols.threshold(ys + c) {
                            cols.insert(ys + c, s, (xs + r) as i64);
                        }
                    }
                }
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Ok(mut p) = progress.try_lock() {
                    p(d, total);
                }
            }
            let mut out = rows_out.lock().expect("no worker panicked");
            out.scores[xs * kx..xe * kx].copy_from_slice(&rows.scores);
            out.indices[xs * kx..xe * kx].copy_from_slice(&rows.indices);
        }
        cols
    };

    let mut column_lists: Vec<TopKLists> = if workers == 1 {
        vec![work()]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no worker panicked"))
                .collect()
        })
    };
    // set_num_threads also sets MKL's process-wide count: restore it.
    tch::set_num_threads(outer_threads);
    let mut cols = column_lists.pop().expect("at least one worker");
    for other in &column_lists {
        cols.merge(other);
    }
    if stopped.into_inner() {
        let bound = deadline.map(|d| d.bound).unwrap_or_default();
        return Err(crate::error::LaseError::DeadlineExceeded(bound));
    }
    let rows = rows_out.into_inner().expect("no worker panicked");
    Ok((
        Neighbours {
            k: kx,
            scores: rows.scores,
            indices: rows.indices,
        },
        Neighbours {
            k: ky,
            scores: cols.scores,
            indices: cols.indices,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insertion_keeps_best_k_descending_and_ties_stable() {
        let mut l = TopKLists::new(1, 3);
        for (s, j) in [(0.5, 0), (0.9, 1), (0.5, 2), (0.7, 3), (0.1, 4), (0.9, 5)] {
            if s > l.threshold(0) {
                l.insert(0, s, j);
            }
        }
        assert_eq!(l.scores, vec![0.9, 0.9, 0.7]);
        assert_eq!(l.indices, vec![1, 5, 3]);
    }

    #[test]
    fn merge_takes_the_best_of_both() {
        let mut a = TopKLists::new(1, 2);
        a.insert(0, 0.8, 3);
        let mut b = TopKLists::new(1, 2);
        b.insert(0, 0.9, 7);
        b.insert(0, 0.8, 1);
        a.merge(&b);
        assert_eq!(a.scores, vec![0.9, 0.8]);
        assert_eq!(a.indices, vec![7, 1]);
    }
}

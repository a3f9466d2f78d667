//! The CPU search kernel: tiles of X·Yᵀ small enough to stay in cache are computed by a
//! single-threaded matrix product into a buffer the worker owns, then scanned once,
//! updating the running top-k of the tile's rows and of its columns. The product is
//! libtorch's (query-major tiles) or, on AVX-512 CPUs where MKL runs a generic path,
//! lase's own ([`super::tile_gemm`], key-major tiles). Workers take query tiles from a
//! shared counter; each keeps its own column lists, merged at the end.
//! Scanning while the tile is hot replaces two libtorch top-k passes over a large block,
//! which measured as slow as the product itself (docs/benchmarks.md).
//!
//! Ties keep the lower index first, as a stable sort would.
//!
//! Every score is the same float whatever the tile it falls in: libtorch's matrix
//! product gives bit-identical elements for tiles of ordinary size, but rounds
//! differently for very small operands (a 1-row product is a matrix-vector product), so
//! small tiles are padded ([`tile_product`]). That is what lets a corpus split into shards
//! ([`RunningTopK`], `lase shard`) find exactly the neighbours one search finds.
//!
//! Memory beyond the inputs: per worker one tile (2 MiB) and column lists for all of Y
//! (12 k bytes per row of Y: 4.8 MB for 100k rows at k = 4). With many workers and
//! very large Y, those lists dominate; sharding Y across workers would remove the copies.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tch::{Device, Kind, Tensor};

use super::matrix::{MatrixView, Neighbours};
use super::tile_gemm::{self, PackedQueries, TileGemm};
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

/// Tiles narrower than this many rows or columns are padded to it before the product.
/// libtorch's CPU matrix product rounds differently for small operands (here, measured
/// on an AVX2 EPYC with libtorch 2.11: fewer than 4 rows or fewer than 12 columns), and
/// the same elements from any larger tile agree to the bit.
const MIN_TILE: usize = 64;

/// Query tiles handed out one at a time to the search's worker threads, until all are
/// taken or `deadline` passes (then [`QueryTiles::finished`] is `DeadlineExceeded`).
struct QueryTiles {
    next: AtomicUsize,
    rows: usize,
    deadline: Option<crate::deadline::Deadline>,
    stopped: std::sync::atomic::AtomicBool,
}

impl QueryTiles {
    fn new(rows: usize, deadline: Option<crate::deadline::Deadline>) -> Self {
        Self {
            next: AtomicUsize::new(0),
            rows,
            deadline,
            stopped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The next untaken tile's query rows `(start, end)`; `None` when all are taken or
    /// the deadline has passed.
    fn claim(&self) -> Option<(usize, usize)> {
        if self.deadline.is_some_and(|d| d.passed()) {
            self.stopped.store(true, Ordering::Relaxed);
            return None;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) * QUERY_TILE;
        (start < self.rows).then(|| (start, (start + QUERY_TILE).min(self.rows)))
    }

    /// `Err(DeadlineExceeded)` if a worker stopped at the deadline.
    fn finished(self) -> Result<()> {
        if self.stopped.into_inner() {
            let bound = self.deadline.map(|d| d.bound).unwrap_or_default();
            return Err(crate::error::LaseError::DeadlineExceeded(bound));
        }
        Ok(())
    }
}

/// `tile[..nq * nk]` = `xq` [nq, d] · `yk` [nk, d]ᵀ, small operands padded (with copies
/// of their first row) to [`MIN_TILE`] so that every element comes from the same kernel.
fn tile_product(tile: &mut [f32], xq: &[f32], nq: usize, yk: &[f32], nk: usize, d: usize) {
    if nq >= MIN_TILE && nk >= MIN_TILE {
        let out = tensor_view_mut(&mut tile[..nq * nk], nq, nk);
        let _ = tensor_view(xq, nq, d).mm_out(&out, &tensor_view(yk, nk, d).tr());
        return;
    }
    let pad = |m: &[f32], n: usize| -> Vec<f32> {
        let mut v = m.to_vec();
        for _ in n..MIN_TILE {
            v.extend_from_slice(&m[..d]);
        }
        v
    };
    let (px, pq) = (pad(xq, nq), nq.max(MIN_TILE));
    let (py, pk) = (pad(yk, nk), nk.max(MIN_TILE));
    let mut padded = vec![0f32; pq * pk];
    {
        let out = tensor_view_mut(&mut padded, pq, pk);
        let _ = tensor_view(&px, pq, d).mm_out(&out, &tensor_view(&py, pk, d).tr());
    }
    for r in 0..nq {
        tile[r * nk..(r + 1) * nk].copy_from_slice(&padded[r * pk..r * pk + nk]);
    }
}

/// A worker's tile buffer and, when this CPU's tiles come from lase's AVX-512 kernel
/// ([`TileGemm::for_this_cpu`]), its packing of the current query tile.
struct TileWorker {
    tile: Vec<f32>,
    packed: Option<PackedQueries>,
}

impl TileWorker {
    fn new(dim: usize) -> Self {
        Self {
            tile: vec![0f32; QUERY_TILE * KEY_TILE],
            packed: (TileGemm::for_this_cpu() == TileGemm::Avx512)
                .then(|| PackedQueries::new(QUERY_TILE, dim)),
        }
    }

    /// Prepares the query tile `xq` (`nq` rows) for the products that follow.
    fn start_queries(&mut self, xq: &[f32], nq: usize) {
        if let Some(packed) = self.packed.as_mut() {
            packed.pack(xq, nq);
        }
    }

    /// The scores of the query tile given to [`Self::start_queries`] against `yk` (`nk`
    /// rows of `dim` floats).
    fn product(&mut self, xq: &[f32], nq: usize, yk: &[f32], nk: usize, dim: usize) -> Tile<'_> {
        match self.packed.as_ref() {
            Some(packed) => {
                tile_gemm::key_major_tile(packed, yk, nk, &mut self.tile);
                Tile::KeyMajor {
                    scores: &self.tile,
                    stride: packed.stride(),
                    queries: nq,
                    keys: nk,
                }
            }
            None => {
                tile_product(&mut self.tile, xq, nq, yk, nk, dim);
                Tile::QueryMajor {
                    scores: &self.tile[..nq * nk],
                    keys: nk,
                }
            }
        }
    }
}

/// One tile of scores, in the layout its product wrote. Either scan offers each query's
/// list the keys in ascending order and each key's list the queries in ascending order,
/// so ties resolve the same way in both layouts.
enum Tile<'a> {
    /// libtorch's product: `scores[r * keys + j]` = ⟨x_r, y_j⟩.
    QueryMajor { scores: &'a [f32], keys: usize },
    /// [`tile_gemm::key_major_tile`]: `scores[j * stride + r]` = ⟨y_j, x_r⟩.
    KeyMajor {
        scores: &'a [f32],
        stride: usize,
        queries: usize,
        keys: usize,
    },
}

impl Tile<'_> {
    /// Offers every score to the queries' lists (`rows`, local indices); key `j` of the
    /// tile is numbered `first_key + j`.
    fn offer_to_queries(&self, first_key: usize, rows: &mut TopKLists) {
        self.scan::<false>((0, first_key), rows, &mut TopKLists::new(0, 0));
    }

    /// Offers every score to the tile's query lists (`rows`, local indices) and to the
    /// keys' lists (`cols`, global indices); the tile's first query and key rows are at
    /// `origin`.
    fn offer_both_ways(&self, origin: (usize, usize), rows: &mut TopKLists, cols: &mut TopKLists) {
        self.scan::<true>(origin, rows, cols);
    }

    /// The one scan of a tile in either layout: every score to its query's list (`rows`,
    /// local indices; key `j` numbered `ys + j`) and, when `KEYS`, to its key's list
    /// (`cols`, global indices; query `r` numbered `xs + r`). `KEYS` is a constant, so
    /// the query-only scan compiles without the key side's tests.
    fn scan<const KEYS: bool>(
        &self,
        (xs, ys): (usize, usize),
        rows: &mut TopKLists,
        cols: &mut TopKLists,
    ) {
        match *self {
            Tile::QueryMajor { scores, keys } => {
                for (r, row) in scores.chunks_exact(keys).enumerate() {
                    let mut row_threshold = rows.threshold(r);
                    for (c, &s) in row.iter().enumerate() {
                        if s > row_threshold {
                            rows.insert(r, s, (ys + c) as i64);
                            row_threshold = rows.threshold(r);
                        }
                        if KEYS && s > cols.threshold(ys + c) {
                            cols.insert(ys + c, s, (xs + r) as i64);
                        }
                    }
                }
            }
            Tile::KeyMajor {
                scores,
                stride,
                queries,
                keys,
            } => {
                let mut thresholds: Vec<f32> = (0..queries).map(|r| rows.threshold(r)).collect();
                for j in 0..keys {
                    let row = &scores[j * stride..j * stride + queries];
                    let key = ys + j;
                    // Without the key side no score can beat this threshold.
                    let mut key_threshold = if KEYS {
                        cols.threshold(key)
                    } else {
                        f32::INFINITY
                    };
                    let for_the_key = KEYS
                        && row.iter().copied().fold(f32::NEG_INFINITY, f32::max) > key_threshold;
                    if !for_the_key && !any_above(row, &thresholds) {
                        continue;
                    }
                    for (r, &s) in row.iter().enumerate() {
                        if s > thresholds[r] {
                            rows.insert(r, s, key as i64);
                            thresholds[r] = rows.threshold(r);
                        }
                        if KEYS && s > key_threshold {
                            cols.insert(key, s, (xs + r) as i64);
                            key_threshold = cols.threshold(key);
                        }
                    }
                }
            }
        }
    }
}

/// Whether any `scores[i] > thresholds[i]` (written branch-free so it vectorises).
fn any_above(scores: &[f32], thresholds: &[f32]) -> bool {
    let mut hits = 0u32;
    for (s, t) in scores.iter().zip(thresholds) {
        hits |= u32::from(s > t);
    }
    hits != 0
}

/// The top-k of every row of a query matrix over key matrices given one after another
/// (shards of one corpus, in order): the same lists, to the bit, as one search over the
/// keys concatenated.
pub struct RunningTopK {
    lists: TopKLists,
    keys_seen: usize,
}

impl RunningTopK {
    pub fn new(rows: usize, k: usize) -> Self {
        Self {
            lists: TopKLists::new(rows, k.max(1)),
            keys_seen: 0,
        }
    }

    /// Scans `y`, whose rows are numbered from the number of key rows seen so far, with
    /// `workers` threads over query tiles; stops at `deadline` with `DeadlineExceeded`.
    pub fn update(
        &mut self,
        x: &MatrixView,
        y: &MatrixView,
        workers: usize,
        deadline: Option<crate::deadline::Deadline>,
    ) -> Result<()> {
        super::matrix::validate_pair(x, y)?;
        let offset = self.keys_seen;
        let k = self.lists.k;
        let query_tiles = x.rows.div_ceil(QUERY_TILE);
        let key_tiles = y.rows.div_ceil(KEY_TILE);
        let queue = QueryTiles::new(x.rows, deadline);
        let shared = Mutex::new(&mut self.lists);
        let workers = workers.clamp(1, query_tiles.max(1));
        let outer_threads = tch::get_num_threads();
        let work = || {
            tch::set_num_threads(1);
            let _no_grad = tch::no_grad_guard();
            let mut worker = TileWorker::new(x.cols);
            while let Some((xs, xe)) = queue.claim() {
                let nq = xe - xs;
                let mut rows = TopKLists::new(nq, k);
                {
                    let lists = shared.lock().expect("no worker panicked");
                    rows.scores.copy_from_slice(&lists.scores[xs * k..xe * k]);
                    rows.indices.copy_from_slice(&lists.indices[xs * k..xe * k]);
                }
                let xq = &x.data[xs * x.cols..xe * x.cols];
                worker.start_queries(xq, nq);
                for t in 0..key_tiles {
                    let ys = t * KEY_TILE;
                    let ye = (ys + KEY_TILE).min(y.rows);
                    let yk = &y.data[ys * y.cols..ye * y.cols];
                    worker
                        .product(xq, nq, yk, ye - ys, x.cols)
                        .offer_to_queries(offset + ys, &mut rows);
                }
                let mut lists = shared.lock().expect("no worker panicked");
                lists.scores[xs * k..xe * k].copy_from_slice(&rows.scores);
                lists.indices[xs * k..xe * k].copy_from_slice(&rows.indices);
            }
        };
        if workers == 1 {
            work();
        } else {
            std::thread::scope(|s| {
                for _ in 0..workers {
                    s.spawn(work);
                }
            });
        }
        tch::set_num_threads(outer_threads);
        queue.finished()?;
        self.keys_seen += y.rows;
        Ok(())
    }

    /// The lists, k capped at the number of key rows seen (as one search caps it).
    pub fn into_neighbours(self) -> Neighbours {
        let k = self.lists.k;
        let kept = k.min(self.keys_seen).max(1);
        let rows = self.lists.scores.len() / k;
        let mut scores = Vec::with_capacity(rows * kept);
        let mut indices = Vec::with_capacity(rows * kept);
        for i in 0..rows {
            scores.extend_from_slice(&self.lists.scores[i * k..i * k + kept]);
            indices.extend_from_slice(&self.lists.indices[i * k..i * k + kept]);
        }
        Neighbours {
            k: kept,
            scores,
            indices,
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
    deadline: Option<crate::deadline::Deadline>,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<(Neighbours, Neighbours)> {
    let query_tiles = x.rows.div_ceil(QUERY_TILE);
    let key_tiles = y.rows.div_ceil(KEY_TILE);
    let total = query_tiles * key_tiles;
    let queue = QueryTiles::new(x.rows, deadline);
    let done = AtomicUsize::new(0);
    let rows_out = Mutex::new(TopKLists::new(x.rows, kx));
    let progress = Mutex::new(progress);
    let workers = workers.clamp(1, query_tiles.max(1));
    let outer_threads = tch::get_num_threads();

    let work = || -> TopKLists {
        tch::set_num_threads(1);
        let _no_grad = tch::no_grad_guard();
        let mut cols = TopKLists::new(y.rows, ky);
        let mut worker = TileWorker::new(x.cols);
        while let Some((xs, xe)) = queue.claim() {
            let nq = xe - xs;
            let mut rows = TopKLists::new(nq, kx);
            let xq = &x.data[xs * x.cols..xe * x.cols];
            worker.start_queries(xq, nq);
            for t in 0..key_tiles {
                let ys = t * KEY_TILE;
                let ye = (ys + KEY_TILE).min(y.rows);
                let yk = &y.data[ys * y.cols..ye * y.cols];
                worker.product(xq, nq, yk, ye - ys, x.cols).offer_both_ways(
                    (xs, ys),
                    &mut rows,
                    &mut cols,
                );
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
    queue.finished()?;
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

    /// The key-major scan (tiles of lase's AVX-512 kernel) keeps exactly the lists the
    /// query-major scan keeps from the same scores, ties included, in both directions and
    /// for the queries-only scan of [`RunningTopK`]; padding columns are ignored.
    #[test]
    fn key_major_scan_keeps_the_lists_of_the_query_major_scan() {
        let (nq, nk, stride, k) = (37, 50, 64, 3);
        let mut rng = crate::rng::SplitMix64::new(9);
        // Few distinct values, so ties are everywhere.
        let scores: Vec<f32> = (0..nq * nk).map(|_| rng.below(7) as f32 / 4.0).collect();
        let mut key_major = vec![f32::INFINITY; nk * stride];
        for r in 0..nq {
            for j in 0..nk {
                key_major[j * stride + r] = scores[r * nk + j];
            }
        }
        let query_major = Tile::QueryMajor {
            scores: &scores,
            keys: nk,
        };
        let key_major = Tile::KeyMajor {
            scores: &key_major,
            stride,
            queries: nq,
            keys: nk,
        };
        let origin = (100, 1000);
        let (mut rows_a, mut cols_a) = (TopKLists::new(nq, k), TopKLists::new(1000 + nk, k));
        query_major.offer_both_ways(origin, &mut rows_a, &mut cols_a);
        let (mut rows_b, mut cols_b) = (TopKLists::new(nq, k), TopKLists::new(1000 + nk, k));
        key_major.offer_both_ways(origin, &mut rows_b, &mut cols_b);
        assert_eq!(rows_a.indices, rows_b.indices);
        assert_eq!(rows_a.scores, rows_b.scores);
        assert_eq!(cols_a.indices, cols_b.indices);
        assert_eq!(cols_a.scores, cols_b.scores);
        assert!(
            rows_b
                .indices
                .iter()
                .all(|&j| (1000..1000 + nk as i64).contains(&j))
        );

        for tile in [&query_major, &key_major] {
            let mut rows_c = TopKLists::new(nq, k);
            tile.offer_to_queries(1000, &mut rows_c);
            assert_eq!(rows_c.indices, rows_a.indices);
            assert_eq!(rows_c.scores, rows_a.scores);
        }
    }

    /// Queries and keys cut into pieces of 1, 2 and odd sizes (tiles of one row or one
    /// column included) give the lists of one search over the whole, to the bit.
    #[test]
    fn shards_of_any_size_find_exactly_what_one_search_finds() {
        let (nx, ny, d) = (300, 4100, 24);
        let mut rng = crate::rng::SplitMix64::new(3);
        let mut values = |n: usize| -> Vec<f32> {
            (0..n * d)
                .map(|_| rng.below(20_001) as f32 / 10_000.0 - 1.0)
                .collect()
        };
        let (xv, yv) = (values(nx), values(ny));
        let xm = MatrixView::new(&xv, nx, d).unwrap();
        let ym = MatrixView::new(&yv, ny, d).unwrap();
        let (fwd, bwd) = knn_both_ways_cpu(&xm, &ym, 4, 4, 2, None, &mut |_, _| {}).unwrap();
        let pieces = |n: usize, cuts: &[usize]| -> Vec<(usize, usize)> {
            let mut at = 0;
            let mut out = Vec::new();
            for &c in cuts.iter().chain(std::iter::once(&n)) {
                out.push((at, c));
                at = c;
            }
            out
        };
        let search = |q: &[f32], nq: usize, k_data: &[f32], key_cuts: &[(usize, usize)]| {
            let qm = MatrixView::new(q, nq, d).unwrap();
            let mut lists = RunningTopK::new(nq, 4);
            for &(s, e) in key_cuts {
                let km = MatrixView::new(&k_data[s * d..e * d], e - s, d).unwrap();
                lists.update(&qm, &km, 2, None).unwrap();
            }
            lists.into_neighbours()
        };
        let key_cuts = pieces(ny, &[1, 3, 2051, 2052, 4099]);
        for &(s, e) in &pieces(nx, &[1, 2, 257, 299]) {
            let got = search(&xv[s * d..e * d], e - s, &yv, &key_cuts);
            assert_eq!(got.indices, fwd.indices[s * 4..e * 4], "rows {s}..{e}");
            assert_eq!(got.scores, fwd.scores[s * 4..e * 4], "rows {s}..{e}");
        }
        let query_cuts = pieces(nx, &[1, 130, 131]);
        for &(s, e) in &pieces(ny, &[1, 2049, 4098]) {
            let got = search(&yv[s * d..e * d], e - s, &xv, &query_cuts);
            assert_eq!(got.indices, bwd.indices[s * 4..e * 4], "rows {s}..{e}");
            assert_eq!(got.scores, bwd.scores[s * 4..e * 4], "rows {s}..{e}");
        }
    }
}

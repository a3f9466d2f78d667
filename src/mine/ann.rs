//! Approximate nearest-neighbour search for corpora where exact search is too slow: an
//! HNSW graph (Malkov & Yashunin 2018) from the usearch crate, chosen over hnsw_rs by
//! measurement on real sentence embeddings (docs/benchmarks.md, "Choosing the ANN
//! crate"). One graph is built over each side and queried with the other side's rows;
//! the k neighbours found are then scored by exact float inner products, so margins are
//! computed exactly as [`super::knn`]'s on whatever neighbours the graph returns.
//! [`super::mine`] reports recall@k against exact search on a sample of queries.

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::locality::{self, LocalityOptions};
use super::matrix::{MatrixView, Neighbours, dot};
use crate::error::{LaseError, Result};

/// Candidates per wanted neighbour that [`HnswIndex::search`] rescores in f32.
pub const RESCORED_PER_K: usize = 4;

/// HNSW graph parameters, with usearch's (and the HNSW paper's usual) defaults; the
/// graph stores bf16 vectors by default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HnswOptions {
    /// Edges per node (M).
    pub connectivity: usize,
    /// Candidate list size while inserting (ef_construction).
    pub expansion_add: usize,
    /// Candidate list size while searching (ef): higher is slower and more exact.
    pub expansion_search: usize,
    /// How the graph stores its vectors and computes distances while building and
    /// searching; the neighbours found are rescored in f32 either way.
    pub storage: GraphStorage,
    /// Rows inserted and queries searched grouped by region ([`locality`]) when both sides
    /// together have at least `min_locality_rows` rows; `None` keeps corpus order.
    pub locality: Option<LocalityOptions>,
    /// Fewer rows than this (both sides) keep corpus order: their graphs fit in cache.
    pub min_locality_rows: usize,
}

/// The number format of the vectors inside an HNSW graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphStorage {
    /// 32-bit floats: the input as it is (4 bytes per dimension).
    F32,
    /// bfloat16 (2 bytes per dimension): f32's range, 8 bits of mantissa.
    Bf16,
    /// IEEE half precision (2 bytes per dimension).
    F16,
    /// 8-bit integers (1 byte per dimension), usearch's scaling of unit vectors.
    I8,
}

impl GraphStorage {
    /// Every storage with its name on the command line and its usearch scalar kind.
    const ALL: [(Self, &'static str, ScalarKind); 4] = [
        (Self::F32, "f32", ScalarKind::F32),
        (Self::Bf16, "bf16", ScalarKind::BF16),
        (Self::F16, "f16", ScalarKind::F16),
        (Self::I8, "i8", ScalarKind::I8),
    ];

    fn entry(self) -> &'static (Self, &'static str, ScalarKind) {
        Self::ALL
            .iter()
            .find(|(storage, ..)| *storage == self)
            .expect("every storage is listed in ALL")
    }

    fn scalar_kind(self) -> ScalarKind {
        self.entry().2
    }
}

impl std::str::FromStr for GraphStorage {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .iter()
            .find(|(_, name, _)| *name == s)
            .map(|(storage, ..)| *storage)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|(_, name, _)| *name).collect();
                format!("unknown graph storage {s:?} ({})", names.join(", "))
            })
    }
}

impl std::fmt::Display for GraphStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.entry().1)
    }
}

impl Default for HnswOptions {
    fn default() -> Self {
        Self {
            connectivity: 16,
            expansion_add: 128,
            expansion_search: 64,
            // bf16: at 100k and 250k real-model vectors per side, 2.3x faster than f32
            // at recall@4 within 0.8 points (docs/benchmarks.md, "HNSW graph storage").
            storage: GraphStorage::Bf16,
            locality: Some(LocalityOptions::default()),
            min_locality_rows: 100_000,
        }
    }
}

fn search_error(what: &str, e: impl std::fmt::Display) -> LaseError {
    LaseError::InvalidArgument(format!("HNSW index: {what}: {e}"))
}

/// A graph over the rows of one matrix.
pub struct HnswIndex {
    index: Index,
    rows: usize,
}

impl HnswIndex {
    /// Inserts every row of `m` (unit vectors), with `threads` threads, in `order` (row
    /// indices, each once) or else in row order. The graph's keys are row indices either way.
    pub fn build(
        m: &MatrixView,
        options: &HnswOptions,
        threads: usize,
        order: Option<&[usize]>,
    ) -> Result<Self> {
        let threads = threads.max(1);
        let index = Index::new(&IndexOptions {
            dimensions: m.cols,
            metric: MetricKind::IP,
            quantization: options.storage.scalar_kind(),
            connectivity: options.connectivity,
            expansion_add: options.expansion_add,
            expansion_search: options.expansion_search,
            multi: false,
        })
        .map_err(|e| search_error("creating", e))?;
        index
            .reserve_capacity_and_threads(m.rows, threads)
            .map_err(|e| search_error("reserving", e))?;
        if let Some(order) = order {
            assert_permutation(order, m.rows, "an insertion order");
        }
        in_parallel(m.rows, threads, |p| {
            let i = order.map_or(p, |o| o[p]);
            index
                .add(i as u64, m.row(i))
                .map_err(|e| search_error(&format!("adding row {i}"), e))
        })?;
        Ok(Self {
            index,
            rows: m.rows,
        })
    }

    /// Bytes the graph and its vectors take.
    pub fn memory_bytes(&self) -> usize {
        self.index.memory_usage()
    }

    /// The `k` (capped at the indexed rows) approximate nearest neighbours of every row
    /// of `queries`, scored by exact inner products with `indexed` (the matrix the graph
    /// was built from), best first. A query for which the graph returns fewer than k
    /// rows is answered by an exact scan. Queries are searched in `order` (row indices, each
    /// once; each thread takes a contiguous part of it) or else in row order; the result is
    /// in row order either way.
    pub fn search(
        &self,
        queries: &MatrixView,
        indexed: &MatrixView,
        k: usize,
        threads: usize,
        order: Option<&[usize]>,
    ) -> Result<Neighbours> {
        assert_eq!(
            indexed.rows, self.rows,
            "search the matrix the graph was built from"
        );
        if let Some(order) = order {
            assert_permutation(order, queries.rows, "a search order");
        }
        let k = k.min(self.rows).max(1);
        // 4k of the graph's candidates (at most its list, ef) are rescored in f32: a graph
        // storing bf16/i8 orders close candidates wrongly, and duplicates of a neighbour
        // tie with it. 4k, not all of ef: each rescored row is a random read of `indexed`
        // (docs/benchmarks.md, "HNSW graph storage").
        let candidates = (RESCORED_PER_K * k)
            .min(self.index.expansion_search())
            .max(k)
            .min(self.rows);
        let mut scores = vec![0f32; queries.rows * k];
        let mut indices = vec![0i64; queries.rows * k];
        let threads = threads.max(1);
        let per_thread = queries.rows.div_ceil(threads).max(1);
        std::thread::scope(|s| -> Result<()> {
            let handles: Vec<_> = scores
                .chunks_mut(per_thread * k)
                .zip(indices.chunks_mut(per_thread * k))
                .enumerate()
                .map(|(t, (score_chunk, index_chunk))| {
                    s.spawn(move || -> Result<()> {
                        let first = t * per_thread;
                        for (r, (sc, ix)) in score_chunk
                            .chunks_mut(k)
                            .zip(index_chunk.chunks_mut(k))
                            .enumerate()
                        {
                            let q = queries.row(order.map_or(first + r, |o| o[first + r]));
                            let found = self
                                .index
                                .search(q, candidates)
                                .map_err(|e| search_error("searching", e))?;
                            let mut hits: Vec<(f32, i64)> = found
                                .keys
                                .iter()
                                .map(|&j| (dot(q, indexed.row(j as usize)), j as i64))
                                .collect();
                            if hits.len() < k {
                                hits = exact_scan(q, indexed, k);
                            }
                            hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                            for (slot, (score, j)) in hits.into_iter().take(k).enumerate() {
                                sc[slot] = score;
                                ix[slot] = j;
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join().expect("search thread panicked")?;
            }
            Ok(())
        })?;
        // Rows were filled in search order: put each query's neighbours at its row.
        let (scores, indices) = match order {
            None => (scores, indices),
            Some(order) => {
                let mut by_row_s = vec![0f32; scores.len()];
                let mut by_row_i = vec![0i64; indices.len()];
                for (p, &row) in order.iter().enumerate() {
                    by_row_s[row * k..(row + 1) * k].copy_from_slice(&scores[p * k..(p + 1) * k]);
                    by_row_i[row * k..(row + 1) * k].copy_from_slice(&indices[p * k..(p + 1) * k]);
                }
                (by_row_s, by_row_i)
            }
        };
        Ok(Neighbours { k, scores, indices })
    }
}

/// k-NN of `x` in `y` and of `y` in `x` through one HNSW graph per side; also returns
/// the bytes both graphs took.
pub fn knn_both_ways_hnsw(
    x: &MatrixView,
    y: &MatrixView,
    k: usize,
    options: &HnswOptions,
    threads: usize,
) -> Result<(Neighbours, Neighbours, usize)> {
    let orders = locality_orders(x, y, options)?;
    let x_order = orders.as_ref().map(|(xo, _)| xo.as_slice());
    let y_order = orders.as_ref().map(|(_, yo)| yo.as_slice());
    let (forward, y_bytes) = one_direction(
        (x, x_order),
        (y, y_order),
        k,
        options,
        threads,
        "source->target",
    )?;
    let (backward, x_bytes) = one_direction(
        (y, y_order),
        (x, x_order),
        k,
        options,
        threads,
        "target->source",
    )?;
    Ok((forward, backward, y_bytes + x_bytes))
}

/// The orders of `x`'s and `y`'s rows grouped by region ([`locality`]), or `None` where
/// `options` keep corpus order (no locality options, or fewer rows than
/// `min_locality_rows` on both sides together).
pub fn locality_orders(
    x: &MatrixView,
    y: &MatrixView,
    options: &HnswOptions,
) -> Result<Option<(Vec<usize>, Vec<usize>)>> {
    let Some(l) = &options.locality else {
        return Ok(None);
    };
    if x.rows + y.rows < options.min_locality_rows {
        return Ok(None);
    }
    let start = std::time::Instant::now();
    let centres = locality::centroids(&[x, y], l)?;
    let orders = (
        locality::order_by_nearest(x, &centres)?,
        locality::order_by_nearest(y, &centres)?,
    );
    tracing::info!(
        "HNSW: rows grouped by {} regions in {:.1} s",
        centres.len() / x.cols.max(1),
        start.elapsed().as_secs_f64()
    );
    Ok(Some(orders))
}

/// Panics unless `order` names each of `0..n` once (a programming error: a row left out
/// would be neither inserted nor searched).
fn assert_permutation(order: &[usize], n: usize, what: &str) {
    assert_eq!(order.len(), n, "{what} names every row once");
    let mut seen = vec![false; n];
    for &i in order {
        assert!(i < n && !seen[i], "{what} names every row once");
        seen[i] = true;
    }
}

/// Builds a graph over `indexed`, searches it with every row of `queries`, logs how long
/// each took (graph building and searching are timed apart), and returns the neighbours
/// with the bytes the graph took. Each side comes with the order its rows are inserted or
/// searched in (`None`: row order).
fn one_direction(
    (queries, query_order): (&MatrixView, Option<&[usize]>),
    (indexed, index_order): (&MatrixView, Option<&[usize]>),
    k: usize,
    options: &HnswOptions,
    threads: usize,
    direction: &str,
) -> Result<(Neighbours, usize)> {
    let start = std::time::Instant::now();
    let graph = HnswIndex::build(indexed, options, threads, index_order)?;
    let built = start.elapsed().as_secs_f64();
    let found = graph.search(queries, indexed, k, threads, query_order)?;
    tracing::info!(
        "HNSW {direction}: graph over {} rows built in {built:.1} s, {} queries searched in {:.1} s",
        indexed.rows,
        queries.rows,
        start.elapsed().as_secs_f64() - built
    );
    Ok((found, graph.memory_bytes()))
}

fn exact_scan(q: &[f32], m: &MatrixView, k: usize) -> Vec<(f32, i64)> {
    let mut all: Vec<(f32, i64)> = (0..m.rows).map(|j| (dot(q, m.row(j)), j as i64)).collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    all.truncate(k);
    all
}

/// Runs `f(i)` for i in 0..n on `threads` threads (interleaved), stopping at the first
/// error.
fn in_parallel<F>(n: usize, threads: usize, f: F) -> Result<()>
where
    F: Fn(usize) -> Result<()> + Sync,
{
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = &f;
                s.spawn(move || (t..n).step_by(threads).try_for_each(f))
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("index thread panicked"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_rows(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        let mut v: Vec<f32> = (0..rows * cols)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        crate::mine::normalize_rows(&mut v, cols);
        v
    }

    #[test]
    fn a_small_graph_finds_the_exact_neighbours() {
        let (xd, yd) = (unit_rows(50, 16, 1), unit_rows(300, 16, 2));
        let x = MatrixView::new(&xd, 50, 16).unwrap();
        let y = MatrixView::new(&yd, 300, 16).unwrap();
        let graph = HnswIndex::build(
            &y,
            &HnswOptions {
                expansion_search: 300,
                ..Default::default()
            },
            // One thread: insertion order, and so the graph, is the same every run.
            1,
            None,
        )
        .unwrap();
        let found = graph.search(&x, &y, 4, 2, None).unwrap();
        assert_exact_neighbours(&found, &x, &y);
        assert!(graph.memory_bytes() > 300 * 16 * 4);
    }

    /// Every row of `x` found exact search's 4 neighbours in `y`, the best with its exact
    /// score.
    fn assert_exact_neighbours(found: &Neighbours, x: &MatrixView, y: &MatrixView) {
        for i in 0..x.rows {
            let exact = exact_scan(x.row(i), y, 4);
            assert_eq!(
                found.indices_of(i),
                exact.iter().map(|e| e.1).collect::<Vec<_>>().as_slice(),
                "query {i}"
            );
            assert_eq!(found.scores_of(i)[0], exact[0].0);
        }
    }

    #[test]
    fn rows_inserted_and_queries_searched_in_another_order_keep_their_row_indices() {
        let (xd, yd) = (unit_rows(60, 16, 3), unit_rows(400, 16, 4));
        let x = MatrixView::new(&xd, 60, 16).unwrap();
        let y = MatrixView::new(&yd, 400, 16).unwrap();
        let options = HnswOptions {
            expansion_search: 400,
            ..Default::default()
        };
        // Rows inserted last to first (on one thread, so that the graph is the same every
        // run: built on 2 threads it missed an exact neighbour in 1 of 10 runs on a 2-core
        // Zen 5), queries searched in a shuffled order on two threads: each query's
        // neighbours come back at its own row, as exact search's.
        let insert: Vec<usize> = (0..y.rows).rev().collect();
        let search: Vec<usize> = (0..x.rows).map(|i| (i * 37 + 11) % x.rows).collect();
        let graph = HnswIndex::build(&y, &options, 1, Some(&insert)).unwrap();
        let found = graph.search(&x, &y, 4, 2, Some(&search)).unwrap();
        let in_row_order = graph.search(&x, &y, 4, 1, None).unwrap();
        assert_eq!(found.indices, in_row_order.indices);
        assert_eq!(found.scores, in_row_order.scores);
        assert_exact_neighbours(&found, &x, &y);
    }

    #[test]
    fn grouping_by_region_changes_the_order_of_work_not_the_neighbours_found() {
        // The same neighbours either way (a wide search over small sides): only the order
        // of insertion and search changes.
        let (xd, yd) = (unit_rows(300, 16, 5), unit_rows(300, 16, 6));
        let x = MatrixView::new(&xd, 300, 16).unwrap();
        let y = MatrixView::new(&yd, 300, 16).unwrap();
        let grouped = HnswOptions {
            expansion_search: 300,
            min_locality_rows: 0,
            locality: Some(LocalityOptions {
                rows_per_region: 50,
                ..Default::default()
            }),
            ..Default::default()
        };
        let plain = HnswOptions {
            locality: None,
            ..grouped.clone()
        };
        // The grouped options do reorder (rows of several regions, so not row order); the
        // plain ones and a threshold above these 600 rows do not.
        let (xo, yo) = locality_orders(&x, &y, &grouped).unwrap().unwrap();
        assert_ne!(xo, (0..x.rows).collect::<Vec<_>>());
        assert_ne!(yo, (0..y.rows).collect::<Vec<_>>());
        assert!(locality_orders(&x, &y, &plain).unwrap().is_none());
        let above = HnswOptions {
            min_locality_rows: 601,
            ..grouped.clone()
        };
        assert!(locality_orders(&x, &y, &above).unwrap().is_none());
        // One thread: a graph built by several threads at once depends on how they
        // interleave; on 2 threads this test found different neighbours for the two graphs in
        // 4 of 6 runs on a 2-core Zen 5 (2026-11-29), on 1 thread in none of 8.
        let (fg, bg, _) = knn_both_ways_hnsw(&x, &y, 4, &grouped, 1).unwrap();
        let (fp, bp, _) = knn_both_ways_hnsw(&x, &y, 4, &plain, 1).unwrap();
        assert_eq!(fg.indices, fp.indices);
        assert_eq!(bg.indices, bp.indices);
        assert_exact_neighbours(&fg, &x, &y);
        assert_exact_neighbours(&bg, &y, &x);
    }

    #[test]
    #[should_panic(expected = "names every row once")]
    fn an_insertion_order_with_a_repeated_row_is_refused() {
        let yd = unit_rows(10, 4, 7);
        let y = MatrixView::new(&yd, 10, 4).unwrap();
        let order = [0, 1, 2, 3, 4, 5, 6, 7, 8, 8];
        let _ = HnswIndex::build(&y, &HnswOptions::default(), 1, Some(&order));
    }

    #[test]
    fn k_is_capped_at_the_indexed_rows() {
        let (xd, yd) = (unit_rows(5, 8, 3), unit_rows(3, 8, 4));
        let x = MatrixView::new(&xd, 5, 8).unwrap();
        let y = MatrixView::new(&yd, 3, 8).unwrap();
        let (f, b, _) = knn_both_ways_hnsw(&x, &y, 10, &HnswOptions::default(), 2).unwrap();
        assert_eq!((f.k, b.k), (3, 5));
        let mut row: Vec<i64> = f.indices_of(0).to_vec();
        row.sort();
        assert_eq!(row, vec![0, 1, 2]);
    }

    #[test]
    fn every_storage_finds_the_neighbours_with_exact_scores_and_smaller_ones_take_less_memory() {
        let (xd, yd) = (unit_rows(40, 64, 5), unit_rows(2000, 64, 6));
        let x = MatrixView::new(&xd, 40, 64).unwrap();
        let y = MatrixView::new(&yd, 2000, 64).unwrap();
        let mut bytes = Vec::new();
        for storage in ["f32", "bf16", "f16", "i8"] {
            let storage: GraphStorage = storage.parse().unwrap();
            assert_eq!(storage.to_string().parse::<GraphStorage>(), Ok(storage));
            let options = HnswOptions {
                expansion_search: 200,
                storage,
                ..Default::default()
            };
            let graph = HnswIndex::build(&y, &options, 1, None).unwrap();
            let found = graph.search(&x, &y, 4, 1, None).unwrap();
            let mut hits = 0;
            for i in 0..x.rows {
                let exact: Vec<i64> = exact_scan(x.row(i), &y, 4).iter().map(|e| e.1).collect();
                hits += found
                    .indices_of(i)
                    .iter()
                    .filter(|j| exact.contains(j))
                    .count();
                // Whatever the graph stores, the scores reported are f32 inner products.
                for (&j, &score) in found.indices_of(i).iter().zip(found.scores_of(i)) {
                    assert_eq!(score, dot(x.row(i), y.row(j as usize)), "{storage}");
                }
            }
            assert!(
                hits as f64 >= 0.95 * (x.rows * 4) as f64,
                "{storage}: {hits}"
            );
            // The serialised graph holds its vectors as stored (memory_usage() counts
            // usearch's arenas, which do not shrink with the format at this size).
            bytes.push(graph.index.serialized_length());
        }
        // f32 vectors take 4 bytes a dimension, bf16/f16 2, i8 1.
        let vectors = |per_dimension: usize| (2000 * 64 * per_dimension) as i64;
        let diff = |a: usize, b: usize| bytes[a] as i64 - bytes[b] as i64;
        assert_eq!(diff(0, 1), vectors(4) - vectors(2), "{bytes:?}");
        assert_eq!(diff(0, 2), vectors(4) - vectors(2), "{bytes:?}");
        assert_eq!(diff(0, 3), vectors(4) - vectors(1), "{bytes:?}");
        let err = "f64".parse::<GraphStorage>().unwrap_err();
        assert!(err.contains("f32, bf16, f16, i8"), "{err}");
    }
}

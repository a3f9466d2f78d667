//! Row orders that keep near vectors near each other in memory, for HNSW graphs larger than
//! the CPU's caches.
//!
//! An HNSW graph stores its nodes in insertion order, and a search (or an insertion) visits
//! the neighbourhood of its query. With rows inserted in corpus order, a neighbourhood lies
//! scattered over the whole graph, which at a million rows a side is far larger than any
//! cache. Inserting rows grouped by region, and searching queries in the same grouping,
//! keeps a neighbourhood's nodes in few places and lets consecutive queries reuse what the
//! previous ones brought into cache: the explanation the measured speed-up suggests (2.2x
//! at 1M x 1M, docs/benchmarks.md "rows grouped by region"; no cache counters were read).
//! Coleman et al., "Graph Reordering for Cache-Efficient Near Neighbor Search" (NeurIPS
//! 2022, arXiv 2104.03221), reorder a built graph; here the insertion order does it, which
//! the usearch crate allows.
//!
//! The regions: spherical k-means (unit centroids, inner-product assignment) on a strided
//! sample of both sides, [`LocalityOptions`]' defaults; rows are then ordered by their
//! nearest centroid, and the centroids themselves by a nearest-neighbour chain, so that
//! adjacent groups are near too. No random numbers: the same rows give the same order on the
//! same machine and build (exact search's rounding may differ between CPU kernels).

use super::knn::{KnnOptions, knn};
use super::matrix::{MatrixView, dot};
use crate::error::{LaseError, Result};

/// How the regions are found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalityOptions {
    /// Rows per region aimed at (both sides together): a side's share of a region, 2,048
    /// nodes of a 256-d bf16 graph (vector and edges, about 650 bytes each), is about 1.3
    /// MiB, well inside a server CPU's L3 cache.
    pub rows_per_region: usize,
    /// At most this many regions (the assignment costs rows x regions inner products).
    pub max_regions: usize,
    /// k-means rounds on the sample.
    pub iterations: usize,
    /// At most this many rows (strided over both sides) train the centroids.
    pub sample_rows: usize,
}

impl Default for LocalityOptions {
    fn default() -> Self {
        Self {
            rows_per_region: 4096,
            max_regions: 512,
            iterations: 8,
            sample_rows: 65_536,
        }
    }
}

/// Unit centroids of the rows of `sides` (row-major, all `cols` wide), ordered so that each
/// is followed by its nearest remaining one; none for sides without rows or columns.
pub fn centroids(sides: &[&MatrixView], options: &LocalityOptions) -> Result<Vec<f32>> {
    let cols = sides.first().map_or(0, |s| s.cols);
    if let Some(other) = sides.iter().find(|s| s.cols != cols) {
        return Err(LaseError::InvalidArgument(format!(
            "grouping rows by region: sides of {cols} and {} columns",
            other.cols
        )));
    }
    let total: usize = sides.iter().map(|s| s.rows).sum();
    if total == 0 || cols == 0 {
        return Ok(Vec::new());
    }
    let regions = (total / options.rows_per_region.max(1)).clamp(1, options.max_regions.max(1));
    // A strided sample, the same share of every side.
    let step = total.div_ceil(options.sample_rows.max(1)).max(1);
    let mut sample = Vec::new();
    for side in sides {
        for i in (0..side.rows).step_by(step) {
            sample.extend_from_slice(side.row(i));
        }
    }
    let sample_rows = sample.len() / cols.max(1);
    let regions = regions.min(sample_rows).max(1);
    let sample = MatrixView::new(&sample, sample_rows, cols)?;
    // Initial centroids: sample rows picked by a multiplicative hash (Knuth's 2654435761),
    // not an even stride, which on a corpus with a period picks one kind of row only;
    // normalised, as every later centroid is.
    let mut centres: Vec<f32> = Vec::with_capacity(regions * cols);
    for c in 0..regions {
        let row = sample.row((c as u64 * 2_654_435_761 % sample_rows as u64) as usize);
        let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt();
        let scale = if norm > 0.0 { 1.0 / norm } else { 1.0 };
        centres.extend(row.iter().map(|v| v * scale));
    }
    for _ in 0..options.iterations {
        let nearest = nearest_centroid(&sample, &centres)?;
        let mut sums = vec![0f64; regions * cols];
        let mut counts = vec![0usize; regions];
        for (i, &c) in nearest.iter().enumerate() {
            counts[c] += 1;
            for (s, &v) in sums[c * cols..(c + 1) * cols].iter_mut().zip(sample.row(i)) {
                *s += v as f64;
            }
        }
        for c in 0..regions {
            let sum = &sums[c * cols..(c + 1) * cols];
            let norm = sum.iter().map(|v| v * v).sum::<f64>().sqrt();
            // An empty region (or a sum of opposite rows) keeps its centroid.
            if counts[c] > 0 && norm > 0.0 {
                for (dst, &s) in centres[c * cols..(c + 1) * cols].iter_mut().zip(sum) {
                    *dst = (s / norm) as f32;
                }
            }
        }
    }
    Ok(chain_order(&centres, cols))
}

/// The row indices of `m` grouped by nearest centroid, in the centroids' order (within a
/// group, in row order); row order where there are no centroids.
pub fn order_by_nearest(m: &MatrixView, centres: &[f32]) -> Result<Vec<usize>> {
    if centres.is_empty() || m.rows == 0 {
        return Ok((0..m.rows).collect());
    }
    let nearest = nearest_centroid(m, centres)?;
    let regions = centres.len() / m.cols.max(1);
    // A counting sort: stable, linear.
    let mut starts = vec![0usize; regions + 1];
    for &c in &nearest {
        starts[c + 1] += 1;
    }
    for c in 0..regions {
        starts[c + 1] += starts[c];
    }
    let mut order = vec![0usize; m.rows];
    for (i, &c) in nearest.iter().enumerate() {
        order[starts[c]] = i;
        starts[c] += 1;
    }
    Ok(order)
}

/// For every row of `m`, the index of its nearest centroid by inner product (exact search,
/// [`knn`]).
fn nearest_centroid(m: &MatrixView, centres: &[f32]) -> Result<Vec<usize>> {
    let c = MatrixView::new(centres, centres.len() / m.cols.max(1), m.cols)?;
    let found = knn(m, &c, &KnnOptions::new(1))?;
    Ok(found.indices.iter().map(|&j| j as usize).collect())
}

/// The centroids reordered as a chain from the first: each followed by the nearest one not
/// yet placed (regions x regions inner products: at most a million at the defaults).
fn chain_order(centres: &[f32], cols: usize) -> Vec<f32> {
    let n = centres.len() / cols.max(1);
    let row = |i: usize| &centres[i * cols..(i + 1) * cols];
    let mut placed = vec![false; n];
    let mut out = Vec::with_capacity(centres.len());
    let mut current = 0;
    for _ in 0..n {
        placed[current] = true;
        out.extend_from_slice(row(current));
        let next = (0..n).filter(|&j| !placed[j]).max_by(|&a, &b| {
            let (da, db) = (dot(row(current), row(a)), dot(row(current), row(b)));
            da.total_cmp(&db).then(b.cmp(&a))
        });
        match next {
            Some(j) => current = j,
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit rows around `groups` well-separated directions, interleaved (row i belongs to
    /// group i % groups), so corpus order scatters every group.
    fn interleaved_groups(rows: usize, groups: usize, cols: usize) -> Vec<f32> {
        let mut state = 12345u64;
        let mut noise = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let mut data = Vec::with_capacity(rows * cols);
        for i in 0..rows {
            let g = i % groups;
            let mut v: Vec<f32> = (0..cols)
                .map(|d| if d == g { 1.0 } else { 0.0 } + 0.05 * noise())
                .collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= n);
            data.extend(v);
        }
        data
    }

    #[test]
    fn rows_of_one_region_become_contiguous_and_every_row_appears_once() {
        let (rows, groups, cols) = (2000, 8, 16);
        let data = interleaved_groups(rows, groups, cols);
        let m = MatrixView::new(&data, rows, cols).unwrap();
        let options = LocalityOptions {
            rows_per_region: rows / groups,
            ..Default::default()
        };
        let centres = centroids(&[&m], &options).unwrap();
        assert_eq!(centres.len(), groups * cols);
        let order = order_by_nearest(&m, &centres).unwrap();
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..rows).collect::<Vec<_>>());
        // In corpus order the group changes at every row; grouped, once per region.
        let changes = order
            .windows(2)
            .filter(|w| w[0] % groups != w[1] % groups)
            .count();
        assert_eq!(changes, groups - 1, "{changes} group changes");
        // Within a group, rows keep their corpus order (a stable sort).
        for w in order.windows(2) {
            if w[0] % groups == w[1] % groups {
                assert!(w[0] < w[1]);
            }
        }
    }

    #[test]
    fn centroids_are_unit_length_and_chained_nearest_first() {
        let (rows, cols) = (3000, 16);
        let data = interleaved_groups(rows, 12, cols);
        let m = MatrixView::new(&data, rows, cols).unwrap();
        let centres = centroids(
            &[&m],
            &LocalityOptions {
                rows_per_region: 250,
                ..Default::default()
            },
        )
        .unwrap();
        let n = centres.len() / cols;
        let row = |i: usize| &centres[i * cols..(i + 1) * cols];
        for i in 0..n {
            assert!((dot(row(i), row(i)) - 1.0).abs() < 1e-4);
        }
        // Each centroid's successor is its nearest among those after it.
        for i in 0..n - 1 {
            let next = dot(row(i), row(i + 1));
            for j in i + 2..n {
                assert!(next >= dot(row(i), row(j)) - 1e-6, "{i} -> {j}");
            }
        }
    }

    #[test]
    fn empty_sides_give_no_centroids_and_mismatched_widths_are_refused() {
        let none = MatrixView::new(&[], 0, 4).unwrap();
        let centres = centroids(&[&none], &LocalityOptions::default()).unwrap();
        assert!(centres.is_empty());
        assert!(order_by_nearest(&none, &centres).unwrap().is_empty());
        let data = interleaved_groups(10, 2, 4);
        let m = MatrixView::new(&data, 10, 4).unwrap();
        assert_eq!(
            order_by_nearest(&m, &[]).unwrap(),
            (0..10).collect::<Vec<_>>()
        );
        let narrow = MatrixView::new(&data[..30], 10, 3).unwrap();
        let err = centroids(&[&m, &narrow], &LocalityOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("4 and 3 columns"), "{err}");
    }

    #[test]
    fn few_rows_give_one_region_and_the_corpus_order() {
        let data = interleaved_groups(10, 2, 4);
        let m = MatrixView::new(&data, 10, 4).unwrap();
        let centres = centroids(&[&m], &LocalityOptions::default()).unwrap();
        assert_eq!(centres.len(), 4);
        assert_eq!(
            order_by_nearest(&m, &centres).unwrap(),
            (0..10).collect::<Vec<_>>()
        );
    }
}

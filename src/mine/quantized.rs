//! Quantised search with float rescoring (as sentence-transformers' binary/int8
//! quantisation with rescoring): a cheap approximate score shortlists `k x rescore`
//! candidates per query among all rows, then exact float inner products rank the
//! shortlist. Binary codes keep one bit per dimension (32x smaller than float32) and
//! compare by Hamming distance; int8 codes keep one byte per dimension (4x smaller) with
//! per-dimension ranges, compared by integer inner product.

use std::str::FromStr;

use super::matrix::{MatrixView, Neighbours};

/// Approximate representation used for the candidate shortlist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Quantization {
    /// Exact float search (no shortlist).
    #[default]
    None,
    /// Sign bits, Hamming distance.
    Binary,
    /// One byte per dimension, per-dimension min/max ranges.
    Int8,
}

impl FromStr for Quantization {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" | "float32" => Ok(Self::None),
            "binary" => Ok(Self::Binary),
            "int8" => Ok(Self::Int8),
            other => Err(format!(
                "unknown quantization {other:?} (none, binary, int8)"
            )),
        }
    }
}

/// Sign-bit codes, `words` u64 per row.
pub struct BinaryCodes {
    pub words: usize,
    pub codes: Vec<u64>,
}

impl BinaryCodes {
    pub fn encode(m: &MatrixView) -> Self {
        let words = m.cols.div_ceil(64);
        let mut codes = vec![0u64; m.rows * words];
        for i in 0..m.rows {
            for (d, &v) in m.row(i).iter().enumerate() {
                if v > 0.0 {
                    codes[i * words + d / 64] |= 1 << (d % 64);
                }
            }
        }
        Self { words, codes }
    }

    fn row(&self, i: usize) -> &[u64] {
        &self.codes[i * self.words..(i + 1) * self.words]
    }

    pub fn bytes(&self) -> usize {
        self.codes.len() * 8
    }
}

/// Byte codes with per-dimension ranges: code = round((v - min_d) / step_d) - 128.
pub struct Int8Codes {
    pub cols: usize,
    pub codes: Vec<i8>,
}

/// Per-dimension (min, step) over the rows of both matrices.
pub fn int8_ranges(a: &MatrixView, b: &MatrixView) -> Vec<(f32, f32)> {
    (0..a.cols)
        .map(|d| {
            let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
            for m in [a, b] {
                for i in 0..m.rows {
                    let v = m.data[i * m.cols + d];
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
            }
            (lo, ((hi - lo) / 255.0).max(1e-12))
        })
        .collect()
}

impl Int8Codes {
    pub fn encode(m: &MatrixView, ranges: &[(f32, f32)]) -> Self {
        let codes = m
            .data
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let (lo, step) = ranges[i % m.cols];
                (((v - lo) / step).round().clamp(0.0, 255.0) as i32 - 128) as i8
            })
            .collect();
        Self {
            cols: m.cols,
            codes,
        }
    }

    fn row(&self, i: usize) -> &[i8] {
        &self.codes[i * self.cols..(i + 1) * self.cols]
    }

    pub fn bytes(&self) -> usize {
        self.codes.len()
    }
}

#[inline]
fn hamming(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn hamming_all_popcnt(q: &[u64], db: &BinaryCodes, rows: usize, out: &mut [u32]) {
    for (j, o) in out.iter_mut().enumerate().take(rows) {
        *o = hamming(q, db.row(j));
    }
}

fn hamming_all(q: &[u64], db: &BinaryCodes, rows: usize, out: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU supports popcnt (checked above).
        unsafe { hamming_all_popcnt(q, db, rows, out) };
        return;
    }
    for (j, o) in out.iter_mut().enumerate().take(rows) {
        *o = hamming(q, db.row(j));
    }
}

#[inline]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(&x, &y)| x as i32 * y as i32).sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_all_avx2(q: &[i8], db: &Int8Codes, rows: usize, out: &mut [i32]) {
    for (j, o) in out.iter_mut().enumerate().take(rows) {
        *o = dot_i8(q, db.row(j));
    }
}

fn dot_i8_all(q: &[i8], db: &Int8Codes, rows: usize, out: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked above).
        unsafe { dot_i8_all_avx2(q, db, rows, out) };
        return;
    }
    for (j, o) in out.iter_mut().enumerate().take(rows) {
        *o = dot_i8(q, db.row(j));
    }
}

/// Indices of the `s` smallest keys (any order). Keys are small integers here, so a
/// threshold found by partial selection is enough.
fn shortlist<K: Copy + Ord>(keys: &[K], s: usize, out: &mut Vec<usize>) {
    out.clear();
    if s >= keys.len() {
        out.extend(0..keys.len());
        return;
    }
    out.extend(0..keys.len());
    out.select_nth_unstable_by_key(s - 1, |&j| keys[j]);
    out.truncate(s);
}

/// The approximate scorer of one side, as "smaller is closer" keys.
enum Codes<'a> {
    Binary(&'a BinaryCodes, &'a BinaryCodes),
    Int8(&'a Int8Codes, &'a Int8Codes),
}

/// k-NN of `x`'s rows in `y` via a quantised shortlist of `k * rescore` rows and float
/// rescoring, on `threads` threads.
fn search(
    x: &MatrixView,
    y: &MatrixView,
    codes: Codes,
    k: usize,
    rescore: usize,
    threads: usize,
) -> Neighbours {
    let k = k.clamp(1, y.rows);
    let s = k.saturating_mul(rescore.max(1)).min(y.rows);
    let mut scores = vec![f32::NEG_INFINITY; x.rows * k];
    let mut indices = vec![-1i64; x.rows * k];
    let chunk = x.rows.div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        for ((ci, sc), ic) in scores
            .chunks_mut(chunk * k)
            .enumerate()
            .zip(indices.chunks_mut(chunk * k))
        {
            let codes = &codes;
            scope.spawn(move || {
                let mut hamming_keys = vec![0u32; y.rows];
                let mut dot_keys = vec![0i32; y.rows];
                let mut list = Vec::with_capacity(y.rows);
                let mut cand: Vec<(f32, i64)> = Vec::with_capacity(s);
                for (r, (srow, irow)) in sc.chunks_mut(k).zip(ic.chunks_mut(k)).enumerate() {
                    let i = ci * chunk + r;
                    match codes {
                        Codes::Binary(qx, qy) => {
                            hamming_all(qx.row(i), qy, y.rows, &mut hamming_keys);
                            shortlist(&hamming_keys, s, &mut list);
                        }
                        Codes::Int8(qx, qy) => {
                            dot_i8_all(qx.row(i), qy, y.rows, &mut dot_keys);
                            dot_keys.iter_mut().for_each(|v| *v = -*v);
                            shortlist(&dot_keys, s, &mut list);
                        }
                    }
                    let q = x.row(i);
                    cand.clear();
                    cand.extend(list.iter().map(|&j| {
                        let dot: f32 = q.iter().zip(y.row(j)).map(|(a, b)| a * b).sum();
                        (dot, j as i64)
                    }));
                    cand.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                    for (t, &(dot, j)) in cand.iter().take(k).enumerate() {
                        srow[t] = dot;
                        irow[t] = j;
                    }
                }
            });
        }
    });
    Neighbours { k, scores, indices }
}

/// Both directions with a quantised shortlist. Returns the neighbour lists and the bytes
/// the codes of both matrices take.
pub fn knn_both_ways_quantized(
    x: &MatrixView,
    y: &MatrixView,
    k: usize,
    quantization: Quantization,
    rescore: usize,
    threads: usize,
) -> (Neighbours, Neighbours, usize) {
    match quantization {
        Quantization::Binary => {
            let (bx, by) = (BinaryCodes::encode(x), BinaryCodes::encode(y));
            let fwd = search(x, y, Codes::Binary(&bx, &by), k, rescore, threads);
            let bwd = search(y, x, Codes::Binary(&by, &bx), k, rescore, threads);
            (fwd, bwd, bx.bytes() + by.bytes())
        }
        Quantization::Int8 | Quantization::None => {
            let ranges = int8_ranges(x, y);
            let (cx, cy) = (Int8Codes::encode(x, &ranges), Int8Codes::encode(y, &ranges));
            let fwd = search(x, y, Codes::Int8(&cx, &cy), k, rescore, threads);
            let bwd = search(y, x, Codes::Int8(&cy, &cx), k, rescore, threads);
            (fwd, bwd, cx.bytes() + cy.bytes())
        }
    }
}

/// Share of the exact top-k neighbours found, over the rows listed in `sample`. Ties count
/// as found: a neighbour whose exact score reaches the k-th exact score (within
/// [`TIE_TOLERANCE`]) is as near as the row exact search happened to list, which matters
/// on real corpora, where distinct lines can embed to the same vector. `approx`'s scores
/// must be exact inner products (every approximate search here rescores in f32).
pub fn recall_at_k(approx: &Neighbours, exact: &Neighbours, sample: &[usize]) -> f64 {
    let k = exact.k;
    let mut hit = 0usize;
    for &i in sample {
        let kth = exact
            .scores_of(i)
            .iter()
            .copied()
            .fold(f32::INFINITY, f32::min);
        let found = approx
            .scores_of(i)
            .iter()
            .zip(approx.indices_of(i))
            .filter(|&(&s, &j)| j >= 0 && s >= kth - TIE_TOLERANCE)
            .count();
        hit += found.min(k);
    }
    hit as f64 / (sample.len() * k).max(1) as f64
}

/// How far below the k-th exact score a found neighbour may score and still count as a
/// tie: float sums in a different order (GEMM vs a dot product) differ by ~1e-7 on unit
/// vectors.
pub const TIE_TOLERANCE: f32 = 1e-5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_codes_pack_sign_bits() {
        let data = [0.5f32, -0.1, 0.0, 2.0];
        let m = MatrixView::new(&data, 1, 4).unwrap();
        let c = BinaryCodes::encode(&m);
        assert_eq!(c.codes, vec![0b1001]);
        assert_eq!(hamming(&[0b1001], &[0b0110]), 4);
    }

    #[test]
    fn recall_counts_a_tied_neighbour_and_not_a_farther_one() {
        // Exact top-2 of query 0: rows 3 (0.9) and 5 (0.7); row 8 is a duplicate of row 5.
        let exact = Neighbours {
            k: 2,
            scores: vec![0.9, 0.7],
            indices: vec![3, 5],
        };
        let tied = Neighbours {
            k: 2,
            scores: vec![0.9, 0.7],
            indices: vec![3, 8],
        };
        let farther = Neighbours {
            k: 2,
            scores: vec![0.9, 0.69],
            indices: vec![3, 9],
        };
        assert_eq!(recall_at_k(&tied, &exact, &[0]), 1.0);
        assert_eq!(recall_at_k(&farther, &exact, &[0]), 0.5);
    }

    #[test]
    fn int8_codes_span_the_range() {
        let data = [0.0f32, -1.0, 1.0, 1.0];
        let m = MatrixView::new(&data, 2, 2).unwrap();
        let r = int8_ranges(&m, &m);
        let c = Int8Codes::encode(&m, &r);
        assert_eq!(c.codes, vec![-128, -128, 127, 127]);
    }

    /// A shortlist multiple whose product with k passes usize (it wrapped to 0 and
    /// panicked below the shortlist before) means "every row": the exact neighbours.
    #[test]
    fn a_huge_rescore_keeps_every_row_and_finds_the_exact_neighbours() {
        let data: Vec<f32> = (0..40).map(|i| ((i * 7 % 11) as f32 - 5.0) / 5.0).collect();
        let m = MatrixView::new(&data, 10, 4).unwrap();
        for quantization in [Quantization::Binary, Quantization::Int8] {
            let (all, _, _) = knn_both_ways_quantized(&m, &m, 4, quantization, 3, 1);
            // 4 x 2^62 is 2^64: 0 when wrapped.
            for rescore in [1usize << 62, usize::MAX] {
                let (huge, _, _) = knn_both_ways_quantized(&m, &m, 4, quantization, rescore, 1);
                assert_eq!(huge.indices, all.indices, "{quantization:?} {rescore}");
                assert_eq!(huge.scores, all.scores, "{quantization:?} {rescore}");
            }
        }
    }

    #[test]
    fn shortlist_takes_the_smallest_keys() {
        let mut out = Vec::new();
        shortlist(&[5u32, 1, 9, 0, 3], 2, &mut out);
        out.sort();
        assert_eq!(out, vec![1, 3]);
    }
}

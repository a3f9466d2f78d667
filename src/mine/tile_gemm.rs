//! The matrix product of one search tile, X_q · Y_kᵀ, by a kernel of lase's own where the
//! BLAS libtorch ships does not use the CPU's widest vectors.
//!
//! libtorch's MKL takes its AVX-512 code path on Intel CPUs only: on an AMD EPYC with
//! AVX-512 it runs a generic path at about half the CPU's f32 rate (`MKL_VERBOSE=1`
//! prints "Intel(R) Architecture processors" there and "AVX-512 ... AMX" on a Xeon;
//! docs/benchmarks.md). This kernel is an AVX-512F register-blocked product:
//! - the query tile is packed once per tile into panels of 32 rows laid out dimension by
//!   dimension ([`PackedQueries`]), then reused against every key tile;
//! - key rows are read where they are (row-major, no copy), each element broadcast;
//! - a micro-kernel holds 14 keys x 32 queries of scores in 28 registers and adds one
//!   dimension per step with fused multiply-adds.
//!
//! The tile it writes is key-major: `tile[j * stride + r]` = ⟨y_j, x_r⟩. Every score is
//! one fused multiply-add chain over the dimensions in order, from zero, so it is the
//! same float whatever tile, shard or padding it falls in ([`reference_tile`] computes
//! the same chain with `f32::mul_add` and matches to the bit).

use std::sync::OnceLock;

/// Which product computes the search tiles on CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileGemm {
    /// libtorch's matrix product (MKL on x86): query-major tiles.
    Blas,
    /// lase's AVX-512F kernel: key-major tiles.
    Avx512,
}

impl TileGemm {
    /// The kernel for this CPU: [`TileGemm::Avx512`] on AVX-512 CPUs whose vendor is not
    /// Intel (where MKL runs its generic path), libtorch's product elsewhere. The
    /// environment variable `LASE_KNN_GEMM` = `blas` | `avx512` | `auto` overrides it
    /// (`avx512` falls back to `blas` on a CPU without AVX-512F).
    pub fn for_this_cpu() -> TileGemm {
        static CHOSEN: OnceLock<TileGemm> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let wanted = std::env::var("LASE_KNN_GEMM").unwrap_or_default();
            let automatic = if avx512_available() && !vendor_is_intel() {
                TileGemm::Avx512
            } else {
                TileGemm::Blas
            };
            let choice = match wanted.as_str() {
                "" | "auto" => automatic,
                "blas" => TileGemm::Blas,
                "avx512" if avx512_available() => TileGemm::Avx512,
                "avx512" => {
                    tracing::warn!("LASE_KNN_GEMM=avx512 but this CPU has no AVX-512F: blas");
                    TileGemm::Blas
                }
                other => {
                    tracing::warn!(
                        "LASE_KNN_GEMM={other:?} is not one of auto, blas, avx512: {automatic:?}"
                    );
                    automatic
                }
            };
            tracing::debug!(
                kernel = ?choice,
                avx512f = avx512_available(),
                intel = vendor_is_intel(),
                "exact k-NN tile product"
            );
            choice
        })
    }
}

/// Whether this CPU runs AVX-512F.
pub fn avx512_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether CPUID names the vendor "GenuineIntel".
fn vendor_is_intel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let id = std::arch::x86_64::__cpuid(0);
        let mut vendor = [0u8; 12];
        vendor[..4].copy_from_slice(&id.ebx.to_le_bytes());
        vendor[4..8].copy_from_slice(&id.edx.to_le_bytes());
        vendor[8..].copy_from_slice(&id.ecx.to_le_bytes());
        &vendor == b"GenuineIntel"
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Queries per panel (two 16-float registers).
pub const PANEL: usize = 32;
/// Keys per micro-kernel call.
const KEYS: usize = 14;
/// Floats per 64-byte cache line.
const LINE: usize = 16;

/// A vector of floats whose first element sits on a 64-byte boundary.
pub struct AlignedBuffer {
    storage: Vec<f32>,
    offset: usize,
    len: usize,
}

impl AlignedBuffer {
    pub fn zeros(len: usize) -> Self {
        let storage = vec![0f32; len + LINE];
        let offset = storage.as_ptr().align_offset(LINE * 4).min(LINE);
        Self {
            storage,
            offset,
            len,
        }
    }

    pub fn as_slice(&self) -> &[f32] {
        &self.storage[self.offset..self.offset + self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [f32] {
        &mut self.storage[self.offset..self.offset + self.len]
    }
}

/// A query tile in panels of [`PANEL`] rows, each panel dimension-major
/// (`panel[k * PANEL + r]` = x_r[k]); rows past the tile's end are zero.
pub struct PackedQueries {
    data: AlignedBuffer,
    rows: usize,
    dim: usize,
}

impl PackedQueries {
    /// Room for tiles of up to `max_rows` rows of `dim` floats.
    pub fn new(max_rows: usize, dim: usize) -> Self {
        Self {
            data: AlignedBuffer::zeros(max_rows.div_ceil(PANEL) * PANEL * dim),
            rows: 0,
            dim,
        }
    }

    /// Packs `rows` rows of `x` (row-major, `dim` floats a row).
    pub fn pack(&mut self, x: &[f32], rows: usize) {
        let dim = self.dim;
        assert!(x.len() >= rows * dim, "query tile shorter than its rows");
        let padded = rows.div_ceil(PANEL) * PANEL;
        assert!(
            padded * dim <= self.data.len,
            "query tile larger than its buffer"
        );
        let out = self.data.as_mut_slice();
        for p in 0..padded / PANEL {
            let panel = &mut out[p * PANEL * dim..(p + 1) * PANEL * dim];
            for r in 0..PANEL {
                let row = p * PANEL + r;
                if row < rows {
                    let src = &x[row * dim..(row + 1) * dim];
                    for (k, &v) in src.iter().enumerate() {
                        panel[k * PANEL + r] = v;
                    }
                } else {
                    for k in 0..dim {
                        panel[k * PANEL + r] = 0.0;
                    }
                }
            }
        }
        self.rows = rows;
    }

    /// Rows packed.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Row stride of the key-major tiles made from this packing (rows rounded up to a
    /// whole panel).
    pub fn stride(&self) -> usize {
        self.rows.div_ceil(PANEL) * PANEL
    }

    fn panels(&self) -> usize {
        self.stride() / PANEL
    }

    fn panel(&self, p: usize) -> &[f32] {
        &self.data.as_slice()[p * PANEL * self.dim..(p + 1) * PANEL * self.dim]
    }
}

/// `tile[j * q.stride() + r]` = ⟨y_j, x_r⟩ for the `keys` rows of `y` and the packed
/// queries (padding columns get 0). Requires AVX-512F (checked; panics without it, which
/// [`TileGemm::for_this_cpu`] never selects).
pub fn key_major_tile(q: &PackedQueries, y: &[f32], keys: usize, tile: &mut [f32]) {
    let dim = q.dim;
    let stride = q.stride();
    assert!(y.len() >= keys * dim && tile.len() >= keys * stride);
    assert!(avx512_available(), "the AVX-512 tile kernel needs AVX-512F");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX-512F is present (checked above); every pointer below stays inside `y`
    // (keys * dim floats), a packed panel (PANEL * dim) or `tile` (keys * stride), as the
    // assertions above and the loop bounds give.
    unsafe {
        let mut j = 0;
        while j < keys {
            let n = KEYS.min(keys - j);
            let a = y.as_ptr().add(j * dim);
            for p in 0..q.panels() {
                let b = q.panel(p).as_ptr();
                let c = tile.as_mut_ptr().add(j * stride + p * PANEL);
                avx512::block(n, a, dim, b, c, stride);
            }
            j += n;
        }
    }
}

/// The same tile as [`key_major_tile`], computed with `f32::mul_add` in the same order:
/// equal to it bit for bit on any CPU (the reference its tests compare against).
pub fn reference_tile(q: &PackedQueries, y: &[f32], keys: usize, tile: &mut [f32]) {
    let dim = q.dim;
    let stride = q.stride();
    for j in 0..keys {
        let key = &y[j * dim..(j + 1) * dim];
        for p in 0..q.panels() {
            let panel = q.panel(p);
            for r in 0..PANEL {
                let mut acc = 0f32;
                for (k, &v) in key.iter().enumerate() {
                    acc = v.mul_add(panel[k * PANEL + r], acc);
                }
                tile[j * stride + p * PANEL + r] = acc;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        __m512, _mm512_fmadd_ps, _mm512_load_ps, _mm512_set1_ps, _mm512_setzero_ps,
        _mm512_storeu_ps,
    };

    /// `n` (1..=14) keys at `a` against one panel at `b`, into `c` (row stride `ldc`).
    ///
    /// # Safety
    /// AVX-512F present; `a` holds `n * dim` floats, `b` a 64-byte aligned panel of
    /// `32 * dim`, `c` `n` rows of 32 floats at stride `ldc`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn block(
        n: usize,
        a: *const f32,
        dim: usize,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
    ) {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            match n {
                14 => micro::<14>(a, dim, b, c, ldc),
                13 => micro::<13>(a, dim, b, c, ldc),
                12 => micro::<12>(a, dim, b, c, ldc),
                11 => micro::<11>(a, dim, b, c, ldc),
                10 => micro::<10>(a, dim, b, c, ldc),
                9 => micro::<9>(a, dim, b, c, ldc),
                8 => micro::<8>(a, dim, b, c, ldc),
                7 => micro::<7>(a, dim, b, c, ldc),
                6 => micro::<6>(a, dim, b, c, ldc),
                5 => micro::<5>(a, dim, b, c, ldc),
                4 => micro::<4>(a, dim, b, c, ldc),
                3 => micro::<3>(a, dim, b, c, ldc),
                2 => micro::<2>(a, dim, b, c, ldc),
                1 => micro::<1>(a, dim, b, c, ldc),
                _ => unreachable!("1 to 14 keys a block"),
            }
        }
    }

    /// # Safety
    /// As [`block`], with `N` keys.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn micro<const N: usize>(
        a: *const f32,
        dim: usize,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
    ) {
        // SAFETY: the caller's contract: every offset is below n * dim (a), 32 * dim (b,
        // aligned, so are its 16-float halves) or the tile's rows (c).
        unsafe {
            let mut lo: [__m512; N] = [_mm512_setzero_ps(); N];
            let mut hi: [__m512; N] = [_mm512_setzero_ps(); N];
            for k in 0..dim {
                let b0 = _mm512_load_ps(b.add(k * 32));
                let b1 = _mm512_load_ps(b.add(k * 32 + 16));
                for r in 0..N {
                    let v = _mm512_set1_ps(*a.add(r * dim + k));
                    lo[r] = _mm512_fmadd_ps(v, b0, lo[r]);
                    hi[r] = _mm512_fmadd_ps(v, b1, hi[r]);
                }
            }
            for r in 0..N {
                _mm512_storeu_ps(c.add(r * ldc), lo[r]);
                _mm512_storeu_ps(c.add(r * ldc + 16), hi[r]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = crate::rng::SplitMix64::new(seed);
        (0..n)
            .map(|_| rng.below(20_001) as f32 / 10_000.0 - 1.0)
            .collect()
    }

    /// Packing puts row r's dimension k at panel[k * 32 + r] and zero-fills the rest.
    #[test]
    fn packing_is_dimension_major_and_zero_padded() {
        let (rows, dim) = (35, 3);
        let x = values(rows * dim, 1);
        let mut q = PackedQueries::new(64, dim);
        q.pack(&x, rows);
        assert_eq!((q.rows(), q.stride()), (35, 64));
        let second = q.panel(1);
        assert_eq!(second[2 * PANEL], x[32 * dim + 2]);
        assert_eq!(second[PANEL + 2], x[34 * dim + 1]);
        assert!((3..PANEL).all(|r| (0..dim).all(|k| second[k * PANEL + r] == 0.0)));
    }

    /// The reference tile is the inner product (checked in f64), key-major.
    #[test]
    fn reference_tile_is_the_inner_product() {
        let (nq, nk, dim) = (40, 17, 24);
        let (x, y) = (values(nq * dim, 2), values(nk * dim, 3));
        let mut q = PackedQueries::new(nq, dim);
        q.pack(&x, nq);
        let mut tile = vec![f32::NAN; nk * q.stride()];
        reference_tile(&q, &y, nk, &mut tile);
        for j in 0..nk {
            for r in 0..nq {
                let want: f64 = (0..dim)
                    .map(|k| x[r * dim + k] as f64 * y[j * dim + k] as f64)
                    .sum();
                let got = tile[j * q.stride() + r] as f64;
                assert!(
                    (got - want).abs() < 1e-5,
                    "key {j} query {r}: {got} vs {want}"
                );
            }
            assert!((nq..q.stride()).all(|r| tile[j * q.stride() + r] == 0.0));
        }
    }

    /// On a CPU with AVX-512F the kernel equals the reference to the bit for every
    /// key-block remainder (1..=14 keys) and odd dimensions; on a CPU without it, the
    /// kernel is never chosen and refuses to run.
    #[test]
    fn avx512_kernel_matches_the_reference_bit_for_bit() {
        if !avx512_available() {
            assert_eq!(TileGemm::for_this_cpu(), TileGemm::Blas);
            let q = PackedQueries::new(32, 4);
            let refused = std::panic::catch_unwind(|| {
                key_major_tile(&q, &[0.0; 4], 1, &mut [0.0; 32]);
            });
            assert!(refused.is_err(), "ran without AVX-512F");
            return;
        }
        for (nq, nk, dim) in [(256, 2048, 256), (70, 29, 7), (1, 1, 384), (33, 15, 5)] {
            let (x, y) = (values(nq * dim, 4), values(nk * dim, 5));
            let mut q = PackedQueries::new(256, dim);
            q.pack(&x, nq);
            let mut got = vec![f32::NAN; nk * q.stride()];
            let mut want = vec![f32::NAN; nk * q.stride()];
            key_major_tile(&q, &y, nk, &mut got);
            reference_tile(&q, &y, nk, &mut want);
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{nq} x {nk} x {dim}");
        }
    }
}

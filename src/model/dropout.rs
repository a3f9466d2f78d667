//! Dropout whose masks are drawn in parallel on CPU.
//!
//! libtorch draws a CPU dropout mask (`bernoulli_`) one number at a time, on one thread,
//! from its Mersenne-Twister generator (`cpu_serial_kernel` over
//! `CPUGeneratorImpl::random64` in a perf profile of lase-base's bf16 training on a 2-core
//! AMD EPYC: 9.2% of the samples, and 9.3% more in the other thread's OpenMP spin-wait
//! beside it; docs/benchmarks.md, "Dropout masks drawn in parallel"). Here each mask
//! element is a function of one seed and its index (the index / 4-th number of splitmix64
//! from the seed, [`SplitMix64::nth`], four 16-bit lanes per number), so any number of
//! threads fills disjoint parts of one buffer and the mask does not depend on the thread
//! count. The seed is one number
//! drawn from libtorch's own CPU generator, so `tch::manual_seed` still fixes every mask
//! (gradient caching relies on that: src/train/grad_cache.rs). On other devices
//! libtorch's fused dropout runs as before.

use tch::{Device, Kind, Tensor};

use crate::rng::SplitMix64;

/// Elements per thread below which one thread fills the whole mask.
const MIN_ELEMENTS_PER_THREAD: usize = 1 << 16;

/// Inverted dropout (Srivastava et al. 2014, as `torch.nn.functional.dropout`): in
/// training each element is zeroed with probability `p` and the others scaled by
/// `1 / (1 - p)`; outside training, or with `p == 0`, `x` itself.
pub fn dropout(x: &Tensor, p: f64, train: bool) -> Tensor {
    let numel = x.numel();
    if !train || p == 0.0 || numel == 0 {
        return x.shallow_clone();
    }
    // Other devices, and a rate outside [0, 1) (1: all dropped; negative or NaN: libtorch's
    // error, as before), go to libtorch.
    if x.device() != Device::Cpu || !(0.0..1.0).contains(&p) {
        return x.dropout(p, true);
    }
    dropout_with_seed(x, p, draw_seed())
}

/// [`dropout`]'s CPU mask for one given seed: `x` (a CPU tensor) times the mask that
/// [`fill_keep_scale`] draws from `seed` at rate `p` in (0, 1); an empty `x` itself. What
/// `dropout` runs in training with a seed from libtorch's generator; tests name the seed
/// here, so that no other test drawing from that shared generator can change it.
pub(crate) fn dropout_with_seed(x: &Tensor, p: f64, seed: u64) -> Tensor {
    debug_assert!(x.device() == Device::Cpu && p > 0.0 && p < 1.0);
    if x.numel() == 0 {
        return x.shallow_clone();
    }
    let threads = worker_threads(x.numel());
    let keep = 1.0 / (1.0 - p);
    // The mask is written straight into a tensor of `x`'s kind: no copy, no conversion.
    let mask = match x.kind() {
        Kind::BFloat16 => mask_tensor(
            x,
            Kind::BFloat16,
            0u16,
            bf16_bits(keep as f32),
            p,
            seed,
            threads,
        ),
        Kind::Double => mask_tensor(x, Kind::Double, 0.0, keep, p, seed, threads),
        Kind::Float => mask_tensor(x, Kind::Float, 0f32, keep as f32, p, seed, threads),
        // Other kinds (half on CPU): the mask in float32, converted.
        other => mask_tensor(x, Kind::Float, 0f32, keep as f32, p, seed, threads).to_kind(other),
    };
    x * mask
}

/// A new CPU tensor of `x`'s shape and kind `kind` (whose elements are `T`s) holding
/// [`fill_keep_scale`]'s mask.
fn mask_tensor<T: Copy + Send + Sync>(
    x: &Tensor,
    kind: Kind,
    zero: T,
    keep: T,
    p: f64,
    seed: u64,
    threads: usize,
) -> Tensor {
    let numel = x.numel();
    let mask = Tensor::empty(x.size().as_slice(), (kind, Device::Cpu));
    debug_assert_eq!(mask.kind().elt_size_in_bytes(), std::mem::size_of::<T>());
    // SAFETY: `Tensor::empty` returned a new contiguous CPU tensor of `numel` (> 0: the
    // only caller, `dropout_with_seed`, returns before an empty tensor) elements of
    // `kind`, each a `T`, which nothing else references yet.
    let out = unsafe { std::slice::from_raw_parts_mut(mask.data_ptr() as *mut T, numel) };
    fill_keep_scale(out, zero, keep, p, seed, threads);
    mask
}

/// `v` rounded to bfloat16 (to nearest, ties to even), as its 16 bits. For finite `v`
/// only (the sum overflows on some NaN patterns): here `v` is `1 / (1 - p)`, at least 1.
fn bf16_bits(v: f32) -> u16 {
    debug_assert!(v.is_finite());
    let bits = v.to_bits();
    ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) as u16
}

/// One number from libtorch's default CPU generator: what `tch::manual_seed` fixes.
fn draw_seed() -> u64 {
    Tensor::randint(i64::MAX, [1], (Kind::Int64, Device::Cpu)).int64_value(&[0]) as u64
}

fn worker_threads(numel: usize) -> usize {
    let threads = tch::get_num_threads().max(1) as usize;
    threads.min(numel.div_ceil(MIN_ELEMENTS_PER_THREAD)).max(1)
}

/// The number under which a 16-bit lane drops its element: `round(p * 65536)`.
fn drop_threshold(p: f64) -> u32 {
    (p * 65536.0).round().clamp(0.0, 65536.0) as u32
}

/// Fills `out` with `zero` (dropped, probability `p` to within 2^-16) or `keep` (kept):
/// element `i` from lane `i % 4` of the `i / 4`-th number of splitmix64 from `seed`
/// ([`SplitMix64::nth`]), whatever `threads` is.
fn fill_keep_scale<T: Copy + Send + Sync>(
    out: &mut [T],
    zero: T,
    keep: T,
    p: f64,
    seed: u64,
    threads: usize,
) {
    let threshold = drop_threshold(p);
    // Chunks start at multiples of 4, so every lane group lies in one chunk.
    let per_thread = out
        .len()
        .div_ceil(threads.max(1))
        .next_multiple_of(4)
        .max(4);
    let fill = |chunk: &mut [T], first: usize| {
        for (g, group) in chunk.chunks_mut(4).enumerate() {
            let bits = SplitMix64::nth(seed, ((first / 4) + g) as u64);
            for (lane, v) in group.iter_mut().enumerate() {
                let r = ((bits >> (16 * lane)) & 0xFFFF) as u32;
                *v = if r < threshold { zero } else { keep };
            }
        }
    };
    if threads <= 1 {
        fill(out, 0);
        return;
    }
    std::thread::scope(|s| {
        for (t, chunk) in out.chunks_mut(per_thread).enumerate() {
            s.spawn(move || fill(chunk, t * per_thread));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_does_not_depend_on_the_thread_count() {
        let mut one = vec![0f32; 100_003];
        let mut three = vec![0f32; 100_003];
        fill_keep_scale(&mut one, 0.0, 1.0, 0.1, 42, 1);
        fill_keep_scale(&mut three, 0.0, 1.0, 0.1, 42, 3);
        assert_eq!(one, three);
        let mut other_seed = vec![0f32; 100_003];
        fill_keep_scale(&mut other_seed, 0.0, 1.0, 0.1, 43, 3);
        assert_ne!(one, other_seed);
    }

    #[test]
    fn drops_the_asked_share_and_scales_the_rest() {
        for p in [0.1, 0.5] {
            let mut m = vec![0f32; 400_000];
            let keep = (1.0 / (1.0 - p)) as f32;
            fill_keep_scale(&mut m, 0.0, keep, p, 7, 2);
            let dropped = m.iter().filter(|&&v| v == 0.0).count() as f64 / m.len() as f64;
            // Binomial standard deviation at n = 400,000 is below 0.0008.
            assert!((dropped - p).abs() < 0.004, "p {p}: dropped {dropped}");
            assert!(m.iter().all(|&v| v == 0.0 || v == keep));
            // Neighbouring lanes and groups are not correlated: pairs both dropped
            // occur at about p^2.
            let both = m.windows(2).filter(|w| w[0] == 0.0 && w[1] == 0.0).count() as f64
                / (m.len() - 1) as f64;
            assert!((both - p * p).abs() < 0.004, "p {p}: both dropped {both}");
        }
    }

    /// The seed fixes the mask. That `tch::manual_seed` fixes the seed `dropout` draws is
    /// tests/training.rs's `manual_seed_fixes_every_dropout_mask`: libtorch's generator is
    /// shared by every test of this binary running beside this one, so it is not tested here.
    #[test]
    fn training_dropout_keeps_the_expectation_and_the_seed_fixes_it() {
        let x = Tensor::ones([64, 1000], (Kind::Float, Device::Cpu));
        let a = dropout_with_seed(&x, 0.1, 5);
        let mean = a.mean(Kind::Float).double_value(&[]);
        assert!((mean - 1.0).abs() < 0.02, "mean {mean}");
        let b = dropout_with_seed(&x, 0.1, 5);
        assert!(a.equal(&b), "the same seed gives the same mask");
        let c = dropout_with_seed(&x, 0.1, 6);
        assert!(!a.equal(&c), "another seed another");
        let drawn = dropout(&x, 0.1, true);
        assert!(
            !drawn.equal(&x) && drawn.ne(0.0).any().int64_value(&[]) == 1,
            "a mask drawn from libtorch's generator drops some elements and keeps others"
        );
        let empty = Tensor::ones([0, 8], (Kind::Float, Device::Cpu));
        assert_eq!(dropout_with_seed(&empty, 0.1, 5).size(), [0, 8]);
        assert!(dropout(&x, 0.1, false).equal(&x));
    }

    #[test]
    fn empty_tensors_and_rates_outside_the_range() {
        let empty = Tensor::ones([0, 384], (Kind::Float, Device::Cpu));
        assert_eq!(dropout(&empty, 0.1, true).size(), [0, 384]);
        let x = Tensor::ones([4, 8], (Kind::Float, Device::Cpu));
        assert_eq!(dropout(&x, 1.0, true).eq(0.0).all().int64_value(&[]), 1);
        // A negative or NaN rate is libtorch's error, as it was before.
        for p in [-0.1, f64::NAN] {
            assert!(x.f_dropout(p, true).is_err(), "libtorch refuses {p}");
            let caught = std::panic::catch_unwind(|| dropout(&x, p, true));
            assert!(caught.is_err(), "p {p} must not pass silently");
        }
    }

    #[test]
    fn gradients_flow_through_the_kept_elements_only() {
        let x = Tensor::ones([8, 512], (Kind::Float, Device::Cpu)).set_requires_grad(true);
        let y = dropout(&x, 0.25, true);
        y.sum(Kind::Float).backward();
        let g = x.grad();
        // The gradient is the mask itself: 0 where dropped, 1 / (1 - p) where kept.
        assert!(g.equal(&y.detach()));
        let kept = y.ne(0.0).sum(Kind::Int64).int64_value(&[]);
        assert!(kept > 0 && kept < 8 * 512);
    }

    #[test]
    fn reduced_precision_inputs_keep_their_kind_and_the_same_mask() {
        let x = Tensor::ones([4, 300], (Kind::Float, Device::Cpu));
        for kind in [Kind::BFloat16, Kind::Half, Kind::Double] {
            let wide = dropout_with_seed(&x, 0.1, 9);
            let y = dropout_with_seed(&x.to_kind(kind), 0.1, 9);
            assert_eq!(y.kind(), kind);
            assert_eq!(y.size(), x.size());
            // The same elements dropped; kept ones carry 1 / 0.9 rounded to the kind.
            assert!(y.eq(0.0).equal(&wide.eq(0.0)), "{kind:?}");
            let expected = if kind == Kind::Double {
                // Kept elements carry 1 / 0.9 in double, not float32's rounding of it.
                wide.ne(0.0).to_kind(Kind::Double) * (1.0 / 0.9)
            } else {
                wide.to_kind(kind).to_kind(Kind::Double)
            };
            assert!(y.to_kind(Kind::Double).equal(&expected), "{kind:?}");
        }
        // The rounding against libtorch's own float32 -> bfloat16 conversion.
        for p in [0.1f32, 0.05, 0.2, 0.3, 0.5, 0.7, 0.95, 0.99] {
            let keep = 1.0 / (1.0 - p);
            let libtorch = Tensor::from(keep)
                .to_kind(Kind::BFloat16)
                .view_dtype(Kind::Int16)
                .int64_value(&[]) as u16;
            assert_eq!(bf16_bits(keep), libtorch, "p {p}");
        }
    }
}

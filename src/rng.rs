//! A small deterministic random number generator (splitmix64) whose whole state is one
//! `u64`, so that training checkpoints can store it and a resumed run draws exactly the
//! numbers an uninterrupted run would have drawn.

use serde::{Deserialize, Serialize};

/// splitmix64's increment (the golden ratio's 64-bit fraction).
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output function of a state.
fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// splitmix64 (Steele, Lea & Flood 2014): passes BigCrush, state is one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitMix64 {
    pub state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        finalize(self.state)
    }

    /// The `n`-th number (from 0) that `SplitMix64::new(seed)` would draw, without drawing
    /// the ones before it: a counter-based generator, so threads can fill disjoint parts of
    /// one random buffer (src/model/dropout.rs).
    pub fn nth(seed: u64, n: u64) -> u64 {
        finalize(seed.wrapping_add(n.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA)))
    }

    /// Uniform in [0, 1) with 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in [0, n); `n` must be positive.
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        // Lemire's multiply-shift; the bias is below 2^-32 for the sizes used here.
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }

    /// Index drawn with probability proportional to `weights` (non-negative, not all 0).
    pub fn weighted_index(&mut self, cumulative: &[f64]) -> usize {
        let total = *cumulative.last().expect("non-empty weights");
        let r = self.next_f64() * total;
        cumulative
            .partition_point(|&c| c <= r)
            .min(cumulative.len() - 1)
    }
}

/// Mixes several numbers into one seed (for per-step, per-chunk dropout seeds).
pub fn mix_seed(parts: &[u64]) -> u64 {
    let mut rng = SplitMix64::new(0x5EED);
    let mut out = 0u64;
    for &p in parts {
        rng.state ^= p;
        out = rng.next_u64();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_is_the_sequence_drawn_in_order() {
        let mut rng = SplitMix64::new(0xDEAD_BEEF);
        for n in 0..100 {
            assert_eq!(SplitMix64::nth(0xDEAD_BEEF, n), rng.next_u64(), "n {n}");
        }
    }

    #[test]
    fn below_is_uniform_enough_and_in_range() {
        let mut rng = SplitMix64::new(7);
        let mut counts = [0usize; 5];
        for _ in 0..50_000 {
            counts[rng.below(5)] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn weighted_index_follows_weights() {
        let mut rng = SplitMix64::new(3);
        let cumulative = [1.0, 1.0, 4.0]; // weights 1, 0, 3
        let mut counts = [0usize; 3];
        for _ in 0..40_000 {
            counts[rng.weighted_index(&cumulative)] += 1;
        }
        assert_eq!(counts[1], 0);
        let ratio = counts[2] as f64 / counts[0] as f64;
        assert!((2.8..3.2).contains(&ratio), "{counts:?}");
    }

    #[test]
    fn same_seed_same_stream() {
        let mut a = SplitMix64::new(11);
        let mut b = SplitMix64::new(11);
        let mut v: Vec<u32> = (0..100).collect();
        let mut w = v.clone();
        a.shuffle(&mut v);
        b.shuffle(&mut w);
        assert_eq!(v, w);
        assert_ne!(v, (0..100).collect::<Vec<_>>());
        assert_ne!(mix_seed(&[1, 2]), mix_seed(&[2, 1]));
    }
}

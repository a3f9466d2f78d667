//! Language-balanced batch sampling without duplicate sentences in a batch.
//!
//! Each slot of a batch first draws a language with probability
//! `q_l = n_l^α / Σ_k n_k^α` (temperature sampling over the pair counts `n_l`, XLM-R
//! §3.1 with α = 0.3: low-resource languages are up-sampled, high-resource ones
//! down-sampled), then takes the next pair of that language's shuffled order (a new
//! shuffle per pass over the language). A pair whose source or target sentence is
//! already in the batch is passed over: in-batch duplicates would be false negatives
//! for contrastive losses. So is a pair from an N-way row already in the batch (its
//! segments translate each other: the same false negative without a shared string).
//!
//! A recipe that weights its sources ([`crate::data::CorpusSource::weight`]) draws a
//! source by weight first and a language of that source by temperature:
//! `q_{s,l} = w_s / Σ w · n_{s,l}^α / Σ_k n_{s,k}^α` ([`BatchSampler::weighted_sources`]). By
//! default each slot draws its own source, so a batch mixes them (a short Tatoeba pair
//! beside a long news sentence: easy in-batch negatives). With
//! [`BatchComposition::OneSource`] each batch draws one source by `w_s / Σ w` and fills
//! every slot from that source's languages by temperature: the same expected share of
//! each source and language, but in-batch negatives of one domain and length, as
//! sentence-transformers' proportional multi-dataset batch sampler draws them.
//!
//! The sampler's whole position is [`SamplerState`] (a few integers), which training
//! checkpoints store so that a resumed run draws the same batches.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::{LaseError, Result};
use crate::rng::{SplitMix64, mix_seed};

/// How batches are drawn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingConfig {
    /// Temperature exponent α of `q_l ∝ n_l^α` (1 = proportional, 0 = uniform over
    /// languages). XLM-R uses 0.3.
    #[serde(default = "SamplingConfig::default_alpha")]
    pub alpha: f64,
    #[serde(default = "SamplingConfig::default_seed")]
    pub seed: u64,
    /// Whether a batch mixes sources or draws all its pairs from one (module doc). Only a
    /// recipe that weights its sources has more than one to draw from.
    #[serde(default, skip_serializing_if = "BatchComposition::is_mixed")]
    pub batches: BatchComposition,
}

/// What the pairs of one batch are drawn from, in a recipe that weights its sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatchComposition {
    /// Each slot draws a source by weight: a batch mixes sources.
    #[default]
    Mixed,
    /// Each batch draws one source by weight and takes every slot from its languages.
    OneSource,
}

impl BatchComposition {
    fn is_mixed(&self) -> bool {
        *self == Self::Mixed
    }
}

impl SamplingConfig {
    fn default_alpha() -> f64 {
        0.3
    }
    fn default_seed() -> u64 {
        42
    }
}

impl Default for SamplingConfig {
    fn default() -> Self {
        Self {
            alpha: Self::default_alpha(),
            seed: Self::default_seed(),
            batches: BatchComposition::Mixed,
        }
    }
}

/// Where the sampler stands; restoring it reproduces the following batches exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplerState {
    pub rng: SplitMix64,
    /// Per language: next position in its current shuffled order.
    pub cursors: Vec<usize>,
    /// Per language: completed passes over its pairs.
    pub passes: Vec<u64>,
    pub batches: u64,
}

/// Draws batches of pair indices.
pub struct BatchSampler {
    /// Pair indices of each language (fixed order; shuffled per pass into `orders`).
    groups: Vec<Vec<u32>>,
    orders: Vec<Vec<u32>>,
    cumulative: Vec<f64>,
    /// Per pair, hashes of its two sentences and of its N-way row (0 = none), for the
    /// duplicate check.
    sentence_keys: Vec<PairKeys>,
    /// With [`BatchComposition::OneSource`]: how a batch draws its source, and each
    /// source's groups with their cumulative weights.
    one_source: Option<SourceDraw>,
    seed: u64,
    state: SamplerState,
}

/// A batch's source drawn by weight, then its slots from that source's groups.
struct SourceDraw {
    cumulative: Vec<f64>,
    /// Per source drawn: (its group indices, their cumulative weights).
    members: Vec<(Vec<usize>, Vec<f64>)>,
}

impl BatchSampler {
    /// `groups[l]` lists the pairs of group `l` (a language); `sentence_keys[i]` are
    /// hashes identifying pair `i`'s two sentences and its N-way row (0 when it has none).
    pub fn new(
        groups: Vec<Vec<u32>>,
        sentence_keys: Vec<PairKeys>,
        config: &SamplingConfig,
    ) -> Result<Self> {
        let groups: Vec<Vec<u32>> = groups.into_iter().filter(|g| !g.is_empty()).collect();
        if groups.is_empty() {
            return Err(LaseError::InvalidArgument(
                "no training pairs to sample from".into(),
            ));
        }
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        let weights = temperature_weights(&sizes, config.alpha);
        Self::with_weights(groups, weights, sentence_keys, config)
    }

    /// Sources drawn by weight: `groups` are (source, pairs of one language of it),
    /// `source_weights[s]` the weight of source `s`. A slot (or, with
    /// [`BatchComposition::OneSource`], a batch) draws a source by weight, then each slot a
    /// language of it by temperature (module doc).
    pub fn weighted_sources(
        groups: Vec<(u16, Vec<u32>)>,
        source_weights: &[f64],
        sentence_keys: Vec<PairKeys>,
        config: &SamplingConfig,
    ) -> Result<Self> {
        let groups: Vec<(u16, Vec<u32>)> =
            groups.into_iter().filter(|(_, g)| !g.is_empty()).collect();
        let present: std::collections::BTreeSet<u16> = groups.iter().map(|(s, _)| *s).collect();
        let total_weight: f64 = present.iter().map(|&s| source_weights[s as usize]).sum();
        let mut weights = vec![0.0; groups.len()];
        // Per source present (in `present`'s order), the indices of its groups.
        let members_of: Vec<Vec<usize>> = present
            .iter()
            .map(|&s| (0..groups.len()).filter(|&i| groups[i].0 == s).collect())
            .collect();
        for (&s, members) in present.iter().zip(&members_of) {
            let sizes: Vec<usize> = members.iter().map(|&i| groups[i].1.len()).collect();
            let t = temperature_weights(&sizes, config.alpha);
            let t_sum: f64 = t.iter().sum();
            for (k, &i) in members.iter().enumerate() {
                weights[i] = source_weights[s as usize] / total_weight * t[k] / t_sum;
            }
        }
        let one_source = (config.batches == BatchComposition::OneSource).then(|| {
            let mut cumulative = Vec::new();
            let mut members = Vec::new();
            let mut acc = 0.0;
            for (&s, idx) in present.iter().zip(members_of) {
                acc += source_weights[s as usize];
                cumulative.push(acc);
                let cum = cumulative_sums(idx.iter().map(|&i| weights[i]));
                members.push((idx, cum));
            }
            SourceDraw {
                cumulative,
                members,
            }
        });
        let groups = groups.into_iter().map(|(_, g)| g).collect();
        let mut sampler = Self::with_weights(groups, weights, sentence_keys, config)?;
        sampler.one_source = one_source;
        Ok(sampler)
    }

    fn with_weights(
        groups: Vec<Vec<u32>>,
        weights: Vec<f64>,
        sentence_keys: Vec<PairKeys>,
        config: &SamplingConfig,
    ) -> Result<Self> {
        if groups.is_empty() {
            return Err(LaseError::InvalidArgument(
                "no training pairs to sample from".into(),
            ));
        }
        let cumulative = cumulative_sums(weights);
        let n = groups.len();
        let mut sampler = Self {
            orders: vec![Vec::new(); n],
            groups,
            cumulative,
            sentence_keys,
            one_source: None,
            seed: config.seed,
            state: SamplerState {
                rng: SplitMix64::new(config.seed),
                cursors: vec![0; n],
                passes: vec![0; n],
                batches: 0,
            },
        };
        for l in 0..n {
            sampler.reshuffle(l);
        }
        Ok(sampler)
    }

    /// Probability of each group per batch slot.
    pub fn group_probabilities(&self) -> Vec<f64> {
        let total = *self.cumulative.last().unwrap();
        let mut prev = 0.0;
        self.cumulative
            .iter()
            .map(|&c| {
                let p = (c - prev) / total;
                prev = c;
                p
            })
            .collect()
    }

    fn reshuffle(&mut self, l: usize) {
        let mut order = self.groups[l].clone();
        let mut rng = SplitMix64::new(mix_seed(&[self.seed, l as u64, self.state.passes[l]]));
        rng.shuffle(&mut order);
        self.orders[l] = order;
    }

    pub fn state(&self) -> &SamplerState {
        &self.state
    }

    /// Restores a position saved by [`Self::state`] from a sampler built on the same data.
    pub fn restore(&mut self, state: SamplerState) -> Result<()> {
        if state.cursors.len() != self.groups.len() || state.passes.len() != self.groups.len() {
            return Err(LaseError::InvalidArgument(format!(
                "sampler state has {} language groups but the data has {}: the training data changed since the checkpoint",
                state.cursors.len(),
                self.groups.len()
            )));
        }
        self.state = state;
        for l in 0..self.groups.len() {
            self.reshuffle(l);
        }
        Ok(())
    }

    fn next_of(&mut self, l: usize) -> u32 {
        if self.state.cursors[l] >= self.orders[l].len() {
            self.state.passes[l] += 1;
            self.state.cursors[l] = 0;
            self.reshuffle(l);
        }
        let i = self.orders[l][self.state.cursors[l]];
        self.state.cursors[l] += 1;
        i
    }

    /// The next batch of up to `size` pair indices with no repeated sentence. It is
    /// shorter only when the data (with one source per batch: the drawn source) has too few
    /// distinct sentences to fill it.
    pub fn next_batch(&mut self, size: usize) -> Vec<u32> {
        let mut batch = Vec::with_capacity(size);
        let mut seen: HashSet<u64> = HashSet::with_capacity(2 * size);
        let mut attempts = 0usize;
        let max_attempts = 20 * size + 100;
        // With one source per batch: which source this batch draws from.
        let source = self
            .one_source
            .as_ref()
            .map(|d| self.state.rng.weighted_index(&d.cumulative));
        while batch.len() < size && attempts < max_attempts {
            attempts += 1;
            let l = match (source, &self.one_source) {
                (Some(s), Some(d)) => {
                    let (members, cumulative) = &d.members[s];
                    members[self.state.rng.weighted_index(cumulative)]
                }
                _ => self.state.rng.weighted_index(&self.cumulative),
            };
            let i = self.next_of(l);
            let [src, tgt, row, pivot] = self.sentence_keys[i as usize];
            // The two sentences always; the row and the pivot segment where there is one.
            let keys = || {
                [src, tgt]
                    .into_iter()
                    .chain([row, pivot].into_iter().filter(|&k| k != 0))
            };
            if keys().any(|k| seen.contains(&k)) {
                continue;
            }
            seen.extend(keys());
            batch.push(i);
        }
        self.state.batches += 1;
        batch
    }
}

/// Running sums of `weights` (what [`SplitMix64::weighted_index`] draws from).
fn cumulative_sums(weights: impl IntoIterator<Item = f64>) -> Vec<f64> {
    weights
        .into_iter()
        .scan(0.0, |acc, w| {
            *acc += w;
            Some(*acc)
        })
        .collect()
}

/// Unnormalised temperature-sampling weights `(n_l / Σ n)^α` of groups of sizes `n_l`
/// (XLM-R §3.1): shared by batch sampling and the tokenizer's training sample.
pub fn temperature_weights(sizes: &[usize], alpha: f64) -> Vec<f64> {
    let total: f64 = sizes.iter().map(|&n| n as f64).sum();
    sizes
        .iter()
        .map(|&n| (n as f64 / total).powf(alpha))
        .collect()
}

/// The duplicate-check keys of a pair: its two sentences, its N-way row and, for a
/// non-pivot pair, its row's pivot segment (which the teacher embeds as its target; 0 =
/// none for the last two). Two pairs sharing any key never share a batch.
pub type PairKeys = [u64; 4];

/// [`PairKeys`] of `pair`.
pub fn pair_keys(pair: &crate::data::TranslationPair) -> PairKeys {
    let row = pair.row.map_or(0, |r| {
        mix_seed(&[0x0072_6f77, pair.source as u64, r as u64]) | 1
    });
    let pivot = pair.pivot.as_deref().map_or(0, sentence_key);
    [sentence_key(&pair.src), sentence_key(&pair.tgt), row, pivot]
}

/// A 64-bit FNV-1a hash of a sentence (a key for duplicate checks).
pub fn sentence_key(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampler(sizes: &[usize], alpha: f64, shared_targets: bool) -> BatchSampler {
        let mut groups = Vec::new();
        let mut keys = Vec::new();
        for (l, &n) in sizes.iter().enumerate() {
            let mut g = Vec::new();
            for j in 0..n {
                g.push(keys.len() as u32);
                let tgt = if shared_targets {
                    j % 7
                } else {
                    l * 100_000 + j
                };
                keys.push([
                    sentence_key(&format!("src {l} {j}")),
                    sentence_key(&format!("tgt {tgt}")),
                    0,
                    0,
                ]);
            }
            groups.push(g);
        }
        BatchSampler::new(
            groups,
            keys,
            &SamplingConfig {
                alpha,
                seed: 1,
                ..Default::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn temperature_flattens_language_shares() {
        let s = sampler(&[10_000, 100], 0.3, false);
        let p = s.group_probabilities();
        // (0.990^0.3) / (0.990^0.3 + 0.0099^0.3) = 0.800
        assert!((p[0] - 0.800).abs() < 0.002, "{p:?}");
        let mut s = sampler(&[10_000, 100], 0.3, false);
        let mut small = 0;
        for _ in 0..200 {
            small += s.next_batch(50).iter().filter(|&&i| i >= 10_000).count();
        }
        let share = small as f64 / 10_000.0;
        assert!((0.17..0.23).contains(&share), "{share}");
    }

    #[test]
    fn batches_hold_no_duplicate_sentence() {
        let mut s = sampler(&[500], 1.0, true);
        let b = s.next_batch(20);
        // Only 7 distinct targets exist.
        assert_eq!(b.len(), 7);
        let tgts: HashSet<u32> = b.iter().map(|i| i % 7).collect();
        assert_eq!(tgts.len(), 7);
    }

    /// A sampler over one language holding pairs 0, 1 and 2 with these keys.
    fn one_language(keys: Vec<PairKeys>, seed: u64) -> BatchSampler {
        BatchSampler::new(
            vec![vec![0, 1, 2]],
            keys,
            &SamplingConfig {
                alpha: 1.0,
                seed,
                ..Default::default()
            },
        )
        .unwrap()
    }

    /// A non-pivot pair never shares a batch with a pair whose target (or pivot) is the
    /// same pivot-language text, though their rows differ (the teacher would give both
    /// the same vector): keys from real pairs through [`pair_keys`].
    #[test]
    fn pairs_sharing_a_pivot_text_never_share_a_batch() {
        let pair =
            |src: &str, tgt: &str, row: u32, pivot: Option<&str>| crate::data::TranslationPair {
                src: src.into(),
                tgt: tgt.into(),
                src_lang: 1,
                tgt_lang: 2,
                source: 0,
                row: Some(row),
                pivot: pivot.map(String::from),
            };
        let pairs = [
            pair("Hallo Welt", "Hello world", 1, None),
            pair("Hallo Welt!", "Bonjour le monde", 2, Some("Hello world")),
            pair("Guten Tag", "Good day", 3, None),
        ];
        let keys: Vec<PairKeys> = pairs.iter().map(pair_keys).collect();
        assert_eq!(keys[1][3], sentence_key("Hello world"));
        assert_eq!(keys[0][3], 0);
        let mut s = one_language(keys, 5);
        for _ in 0..20 {
            let b = s.next_batch(3);
            assert_eq!(b.len(), 2, "{b:?}");
            assert!(
                b.contains(&2) && !(b.contains(&0) && b.contains(&1)),
                "{b:?}"
            );
        }
    }

    #[test]
    fn rows_and_source_weights() {
        // Two pairs of one N-way row (different strings) never share a batch.
        let keys = vec![[1, 2, 7, 0], [3, 4, 7, 0], [5, 6, 0, 0]];
        let mut s = one_language(keys, 3);
        for _ in 0..20 {
            let b = s.next_batch(3);
            assert_eq!(b.len(), 2, "{b:?}");
            assert!(b.contains(&2));
        }
        // Source 0 has one big language, source 1 two small ones; weights 1 : 3.
        let mut keys = Vec::new();
        for i in 0..1300u64 {
            keys.push([2 * i + 1, 2 * i + 2, 0, 0]);
        }
        let groups = vec![
            (0u16, (0..1000).collect::<Vec<u32>>()),
            (1u16, (1000..1200).collect()),
            (1u16, (1200..1300).collect()),
        ];
        let m = BatchSampler::weighted_sources(
            groups,
            &[1.0, 3.0],
            keys,
            &SamplingConfig {
                alpha: 0.0,
                seed: 3,
                ..Default::default()
            },
        )
        .unwrap();
        let p = m.group_probabilities();
        // alpha 0: languages of a source equally likely.
        assert!(
            (p[0] - 0.25).abs() < 1e-12
                && (p[1] - 0.375).abs() < 1e-12
                && (p[2] - 0.375).abs() < 1e-12,
            "{p:?}"
        );
    }

    /// Two sources (0: pairs 0..1000 in one language; 1: pairs 1000..1300 in two),
    /// weights 1 : 3, drawn with `batches`.
    fn two_sources(batches: BatchComposition, seed: u64) -> BatchSampler {
        let keys = (0..1300u64).map(|i| [2 * i + 1, 2 * i + 2, 0, 0]).collect();
        let groups = vec![
            (0u16, (0..1000).collect::<Vec<u32>>()),
            (1u16, (1000..1200).collect()),
            (1u16, (1200..1300).collect()),
        ];
        let config = SamplingConfig {
            alpha: 0.0,
            seed,
            batches,
        };
        BatchSampler::weighted_sources(groups, &[1.0, 3.0], keys, &config).unwrap()
    }

    #[test]
    fn one_source_batches_hold_one_source_at_its_weight() {
        let mut s = two_sources(BatchComposition::OneSource, 5);
        let (mut from_1, mut lang_a, mut lang_b) = (0usize, 0usize, 0usize);
        let n = 2000;
        for _ in 0..n {
            let b = s.next_batch(8);
            assert_eq!(b.len(), 8);
            let second = b.iter().filter(|&&i| i >= 1000).count();
            assert!(second == 0 || second == 8, "a batch mixed sources: {b:?}");
            if second == 8 {
                from_1 += 1;
                lang_a += b.iter().filter(|&&i| i < 1200).count();
                lang_b += b.iter().filter(|&&i| i >= 1200).count();
            }
        }
        // Source 1 in 3/4 of the batches; its two languages equally (alpha 0).
        let share = from_1 as f64 / n as f64;
        assert!((0.72..0.78).contains(&share), "{share}");
        let ratio = lang_a as f64 / lang_b as f64;
        assert!((0.9..1.1).contains(&ratio), "{lang_a} {lang_b}");
        // Mixed batches (the default) do mix them.
        let mut m = two_sources(BatchComposition::Mixed, 5);
        let mixed = (0..200)
            .filter(|_| {
                let b = m.next_batch(8);
                b.iter().any(|&i| i < 1000) && b.iter().any(|&i| i >= 1000)
            })
            .count();
        assert!(mixed > 150, "{mixed}");
    }

    #[test]
    fn one_source_batches_resume_where_they_stopped() {
        let mut a = two_sources(BatchComposition::OneSource, 9);
        for _ in 0..13 {
            a.next_batch(16);
        }
        let state = a.state().clone();
        let expected: Vec<Vec<u32>> = (0..20).map(|_| a.next_batch(16)).collect();
        // Still one source per batch after many (the per-batch draw is not lost).
        for batch in &expected {
            let second = batch.iter().filter(|&&i| i >= 1000).count();
            assert!(second == 0 || second == batch.len(), "{batch:?}");
        }
        let mut b = two_sources(BatchComposition::OneSource, 9);
        b.restore(state).unwrap();
        let got: Vec<Vec<u32>> = (0..20).map(|_| b.next_batch(16)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn batches_setting_reads_from_a_recipe_and_defaults_to_mixed() {
        let c: SamplingConfig = toml::from_str("alpha = 0.3\nbatches = \"one-source\"").unwrap();
        assert_eq!(c.batches, BatchComposition::OneSource);
        let d: SamplingConfig = toml::from_str("alpha = 0.3").unwrap();
        assert_eq!(d.batches, BatchComposition::Mixed);
        assert!(toml::from_str::<SamplingConfig>("batches = \"per-language\"").is_err());
        // A recipe that says nothing writes nothing (checkpointed configs stay as they were).
        assert!(!toml::to_string(&d).unwrap().contains("batches"));
    }

    #[test]
    fn restored_state_reproduces_batches_and_passes_cover_all_pairs() {
        let mut a = sampler(&[30, 20], 0.5, false);
        for _ in 0..7 {
            a.next_batch(8);
        }
        let saved = a.state().clone();
        let next: Vec<Vec<u32>> = (0..5).map(|_| a.next_batch(8)).collect();
        let mut b = sampler(&[30, 20], 0.5, false);
        b.restore(saved).unwrap();
        let again: Vec<Vec<u32>> = (0..5).map(|_| b.next_batch(8)).collect();
        assert_eq!(next, again);
        // One pass over a group visits each of its pairs once.
        let mut c = sampler(&[30], 1.0, false);
        let mut all: Vec<u32> = (0..3).flat_map(|_| c.next_batch(10)).collect();
        all.sort();
        assert_eq!(all, (0..30).collect::<Vec<_>>());
    }
}

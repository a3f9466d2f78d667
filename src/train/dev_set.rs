//! The dev pairs a run scores itself on while training, which picks `best-model/`, and
//! that `lase dev-score` scores any model on (never a test set).
//!
//! Two scores, both means over the split's languages:
//! - `p_at_1`: P@1 both directions among the language's own dev pairs (20 per language in
//!   lase-base's recipe: an easy pool, the one training selects `best-model/` by);
//! - `pooled_p_at_1`: P@1 of each source sentence searched among every distinct target
//!   sentence of the whole split (all languages' English sides in a split of pairs with
//!   English), as FLORES xx-eng scores one direction; the pool's size depends on the split
//!   and `dev_max_pairs` and is reported (`pool_size`: 1,151 for all 4,700 dev pairs of
//!   lase-base's recipe, about FLORES's 1,012). Duplicates of the gold text count as
//!   correct.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::data::ParallelCorpus;
use crate::error::Result;
use crate::eval::bitext_retrieval::bitext_retrieval;
use crate::eval::embed_unit_vectors;
use crate::inference::EncodeOptions;
use crate::mine::{KnnOptions, MatrixView, knn};
use crate::model::SentenceEncoder;

/// One language's dev pairs.
struct DevGroup {
    language: String,
    src: Vec<String>,
    tgt: Vec<String>,
}

/// Dev pairs grouped by language, for P@1 during training.
pub struct DevSet {
    groups: Vec<DevGroup>,
}

/// One language's dev scores, in percent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DevLanguageScores {
    pub language: String,
    pub pairs: usize,
    pub p_at_1: f64,
    pub pooled_p_at_1: f64,
}

/// A model's dev scores, in percent (means over languages).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DevScores {
    /// Both directions among each language's own dev pairs (training's `dev_p_at_1`).
    pub p_at_1: f64,
    /// Source -> target among every distinct target sentence of the split.
    pub pooled_p_at_1: f64,
    /// Distinct target sentences in the pool.
    pub pool_size: usize,
    pub languages: Vec<DevLanguageScores>,
}

impl DevSet {
    /// The first `max_pairs` pairs of `dev` (0 = all), grouped by source language;
    /// languages with fewer than 2 pairs are left out.
    pub fn new(dev: &ParallelCorpus, max_pairs: usize) -> Self {
        let mut by_lang: BTreeMap<u16, (Vec<String>, Vec<String>)> = BTreeMap::new();
        let limit = if max_pairs == 0 {
            usize::MAX
        } else {
            max_pairs
        };
        for p in dev.pairs.iter().take(limit) {
            let e = by_lang.entry(p.src_lang).or_default();
            e.0.push(p.src.clone());
            e.1.push(p.tgt.clone());
        }
        let groups = by_lang
            .into_iter()
            .filter(|(_, g)| g.0.len() >= 2)
            .map(|(lang, (src, tgt))| DevGroup {
                language: dev
                    .languages
                    .get(lang as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("#{lang}")),
                src,
                tgt,
            })
            .collect();
        Self { groups }
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Pairs over all languages.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.src.len()).sum()
    }

    /// Both scores of the module doc, per language and as means.
    pub fn scores(&self, encoder: &SentenceEncoder) -> Result<DevScores> {
        let options = EncodeOptions::for_device(encoder.device());
        let mut embedded = Vec::with_capacity(self.groups.len());
        for g in &self.groups {
            let x = embed_unit_vectors(encoder, &g.src, &options, "dev", false)?;
            let y = embed_unit_vectors(encoder, &g.tgt, &options, "dev", false)?;
            embedded.push((x, y));
        }
        self.scores_of_vectors(&embedded, encoder.dim())
    }

    /// [`DevSet::scores`] from each group's unit vectors (source, target; row-major,
    /// `dim` wide), in the groups' order.
    fn scores_of_vectors(
        &self,
        embedded: &[(Vec<f32>, Vec<f32>)],
        dim: usize,
    ) -> Result<DevScores> {
        // The pool: each distinct target text once, its first vector.
        let mut pool_row: HashMap<&str, usize> = HashMap::new();
        let mut pool: Vec<f32> = Vec::new();
        for (g, (_, y)) in self.groups.iter().zip(embedded) {
            for (i, text) in g.tgt.iter().enumerate() {
                pool_row.entry(text.as_str()).or_insert_with(|| {
                    pool.extend_from_slice(&y[i * dim..(i + 1) * dim]);
                    pool.len() / dim - 1
                });
            }
        }
        let pool_size = pool_row.len();
        let pool_view = MatrixView::new(&pool, pool_size, dim)?;
        let mut languages = Vec::with_capacity(self.groups.len());
        for (g, (x, y)) in self.groups.iter().zip(embedded) {
            let n = g.src.len();
            let xv = MatrixView::new(x, n, dim)?;
            let own = bitext_retrieval(&xv, &MatrixView::new(y, n, dim)?, Some((&g.src, &g.tgt)))?;
            let nn = knn(&xv, &pool_view, &KnnOptions::new(1))?;
            let hits = (0..n)
                .filter(|&i| nn.indices_of(i)[0] as usize == pool_row[g.tgt[i].as_str()])
                .count();
            languages.push(DevLanguageScores {
                language: g.language.clone(),
                pairs: n,
                p_at_1: 100.0 * own.p_at_1(),
                pooled_p_at_1: 100.0 * hits as f64 / n as f64,
            });
        }
        let mean = |f: fn(&DevLanguageScores) -> f64| {
            languages.iter().map(f).sum::<f64>() / languages.len().max(1) as f64
        };
        Ok(DevScores {
            p_at_1: mean(|l| l.p_at_1),
            pooled_p_at_1: mean(|l| l.pooled_p_at_1),
            pool_size,
            languages,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(language: &str, src: &[&str], tgt: &[&str]) -> DevGroup {
        DevGroup {
            language: language.into(),
            src: src.iter().map(|s| s.to_string()).collect(),
            tgt: tgt.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn unit(angle_degrees: f32) -> [f32; 2] {
        let a = angle_degrees.to_radians();
        [a.cos(), a.sin()]
    }

    fn rows(vectors: &[[f32; 2]]) -> Vec<f32> {
        vectors.iter().flatten().copied().collect()
    }

    /// Each language alone retrieves perfectly, but in the pool deu's second sentence is
    /// nearest to fra's target: the pooled score sees it, the per-language one cannot.
    #[test]
    fn the_pool_holds_every_languages_targets() {
        let dev = DevSet {
            groups: vec![
                group("deu", &["d0", "d1"], &["e0", "e1"]),
                group("fra", &["f0", "f1", "f2", "f3"], &["e2", "e3", "e4", "e5"]),
            ],
        };
        let embedded = vec![
            (
                rows(&[unit(0.0), unit(58.0)]),
                rows(&[unit(0.0), unit(90.0)]),
            ),
            (
                rows(&[unit(60.0), unit(180.0), unit(230.0), unit(300.0)]),
                rows(&[unit(60.0), unit(180.0), unit(230.0), unit(300.0)]),
            ),
        ];
        let s = dev.scores_of_vectors(&embedded, 2).unwrap();
        assert_eq!(s.pool_size, 6);
        assert_eq!(s.languages[0].p_at_1, 100.0);
        assert_eq!(s.languages[0].pooled_p_at_1, 50.0);
        assert_eq!(s.languages[1].pooled_p_at_1, 100.0);
        assert_eq!(s.p_at_1, 100.0);
        // A mean over languages (over pairs it would be 5 of 6 = 83.3).
        assert_eq!(s.pooled_p_at_1, 75.0);
    }

    /// N-way rows share their English side: the pool holds each text once, and the
    /// shared text is the right answer for every language that has it.
    #[test]
    fn a_target_shared_by_languages_is_one_candidate() {
        let dev = DevSet {
            groups: vec![
                group("deu", &["d0", "d1"], &["e0", "e1"]),
                group("fra", &["f0", "f1"], &["e0", "e2"]),
            ],
        };
        let embedded = vec![
            (
                rows(&[unit(0.0), unit(90.0)]),
                rows(&[unit(0.0), unit(90.0)]),
            ),
            // fra's own vector of "e0" differs slightly: the pool keeps deu's (the first).
            (
                rows(&[unit(3.0), unit(200.0)]),
                rows(&[unit(2.0), unit(200.0)]),
            ),
        ];
        let s = dev.scores_of_vectors(&embedded, 2).unwrap();
        assert_eq!(s.pool_size, 3);
        assert_eq!(s.pooled_p_at_1, 100.0);
        // Without the shared text fra's first sentence would be wrong.
        let other = DevSet {
            groups: vec![
                group("deu", &["d0", "d1"], &["e0", "e1"]),
                group("fra", &["f0", "f1"], &["e9", "e2"]),
            ],
        };
        let embedded = vec![
            (
                rows(&[unit(0.0), unit(90.0)]),
                rows(&[unit(0.0), unit(90.0)]),
            ),
            (
                rows(&[unit(3.0), unit(200.0)]),
                rows(&[unit(10.0), unit(200.0)]),
            ),
        ];
        let s = other.scores_of_vectors(&embedded, 2).unwrap();
        assert_eq!(s.pool_size, 4);
        assert_eq!(s.languages[1].pooled_p_at_1, 50.0);
    }
}

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
//!
//! Non-pivot dev pairs (two non-English segments of one N-way dev row, as
//! [`crate::data::split_dev`] chains them) get the same two scores of their own,
//! grouped by language pair and pooled among their own targets only (`non_pivot`), so
//! they leave the pivot scores, and the checkpoint training picks, as they were. That pool
//! holds each dev row's segments in several languages (and may hold the source's own
//! text), so a pooled hit is the nearest target other than the source's own text being a
//! segment of the source's row, in any language.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::data::ParallelCorpus;
use crate::error::{LaseError, Result};
use crate::eval::bitext_retrieval::bitext_retrieval;
use crate::eval::embed_unit_vectors;
use crate::inference::EncodeOptions;
use crate::lang::LanguageCode;
use crate::mine::{KnnOptions, MatrixView, knn};
use crate::model::SentenceEncoder;

/// One language's dev pairs (or one language pair's, for non-pivot pairs).
struct DevGroup {
    language: String,
    non_pivot: bool,
    src: Vec<String>,
    tgt: Vec<String>,
    /// Each non-pivot pair's N-way (source, row); empty for pivot groups.
    rows: Vec<(u16, u32)>,
}

/// A group's unit vectors: (sources, targets), row-major.
type Vectors = (Vec<f32>, Vec<f32>);

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
    /// The same two scores over the non-pivot dev pairs (two languages of one N-way row,
    /// neither the pivot; grouped by language pair, e.g. `deu_Latn-fra_Latn`), pooled
    /// among their own targets, where a hit is any segment of the source's row but its
    /// own text; None when the dev pairs have none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub non_pivot: Option<Box<DevScores>>,
}

impl DevSet {
    /// The first `max_pairs` pairs of `dev` with the pivot and the first `max_pairs`
    /// non-pivot pairs (0 = all), grouped by source language, or by language pair for
    /// non-pivot pairs; groups with fewer than 2 pairs are left out.
    pub fn new(dev: &ParallelCorpus, max_pairs: usize) -> Self {
        // (source language, target language of a non-pivot pair) -> (sources, targets,
        // non-pivot rows)
        type Texts = (Vec<String>, Vec<String>, Vec<(u16, u32)>);
        let mut by_lang: BTreeMap<(u16, Option<u16>), Texts> = BTreeMap::new();
        let limit = if max_pairs == 0 {
            usize::MAX
        } else {
            max_pairs
        };
        let pivot = dev.pairs.iter().filter(|p| !p.is_non_pivot()).take(limit);
        let non_pivot = dev.pairs.iter().filter(|p| p.is_non_pivot()).take(limit);
        for p in pivot.chain(non_pivot) {
            let key = (p.src_lang, p.is_non_pivot().then_some(p.tgt_lang));
            let e = by_lang.entry(key).or_default();
            e.0.push(p.src.clone());
            e.1.push(p.tgt.clone());
            if let (true, Some(row)) = (p.is_non_pivot(), p.row) {
                e.2.push((p.source, row));
            }
        }
        let name = |lang: u16| {
            dev.languages
                .get(lang as usize)
                .cloned()
                .unwrap_or_else(|| format!("#{lang}"))
        };
        let groups = by_lang
            .into_iter()
            .filter(|(_, g)| g.0.len() >= 2)
            .map(|((lang, other), (src, tgt, rows))| DevGroup {
                language: match other {
                    None => name(lang),
                    Some(o) => format!("{}-{}", name(lang), name(o)),
                },
                non_pivot: other.is_some(),
                src,
                tgt,
                rows,
            })
            .collect();
        Self { groups }
    }

    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.non_pivot)
    }

    /// Pairs with the pivot, over all languages.
    pub fn len(&self) -> usize {
        self.groups
            .iter()
            .filter(|g| !g.non_pivot)
            .map(|g| g.src.len())
            .sum()
    }

    /// The target side of the pairs with the pivot (English, in lase-base's recipe), in
    /// split order, duplicates included.
    pub fn pivot_targets(&self) -> impl Iterator<Item = &str> {
        self.groups
            .iter()
            .filter(|g| !g.non_pivot)
            .flat_map(|g| g.tgt.iter().map(String::as_str))
    }

    /// Non-pivot pairs, over all language pairs.
    pub fn non_pivot_len(&self) -> usize {
        self.groups
            .iter()
            .filter(|g| g.non_pivot)
            .map(|g| g.src.len())
            .sum()
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
        let pick = |non_pivot: bool| -> Vec<(&DevGroup, &Vectors)> {
            self.groups
                .iter()
                .zip(embedded)
                .filter(|(g, _)| g.non_pivot == non_pivot)
                .collect()
        };
        let mut scores = Self::scores_of_groups(&pick(false), dim)?;
        let non_pivot = pick(true);
        if !non_pivot.is_empty() {
            scores.non_pivot = Some(Box::new(Self::scores_of_groups(&non_pivot, dim)?));
        }
        Ok(scores)
    }

    /// Both scores over `groups`, the pool being every distinct target text among them.
    /// Pivot groups: a hit is the gold text. Non-pivot groups: the pool holds the
    /// translations of a source's row in several languages (the chain), and may hold the
    /// source's own text, so a hit is the nearest target other than the source's own text
    /// being a segment of the source's row, in any language.
    fn scores_of_groups(groups: &[(&DevGroup, &Vectors)], dim: usize) -> Result<DevScores> {
        // The pool: each distinct target text once, its first vector and every row it
        // stands in (a text repeated in two rows is a right answer for both).
        let mut pool_row: HashMap<&str, usize> = HashMap::new();
        let mut pool: Vec<f32> = Vec::new();
        let mut pool_text: Vec<&str> = Vec::new();
        let mut pool_keys: Vec<Vec<(u16, u32)>> = Vec::new();
        for (g, (_, y)) in groups {
            for (i, text) in g.tgt.iter().enumerate() {
                let j = *pool_row.entry(text.as_str()).or_insert_with(|| {
                    pool.extend_from_slice(&y[i * dim..(i + 1) * dim]);
                    pool_text.push(text);
                    pool_keys.push(Vec::new());
                    pool_text.len() - 1
                });
                if let Some(&key) = g.rows.get(i) {
                    pool_keys[j].push(key);
                }
            }
        }
        let pool_size = pool_row.len();
        let pool_view = MatrixView::new(&pool, pool_size, dim)?;
        let mut languages = Vec::with_capacity(groups.len());
        for (g, (x, y)) in groups {
            let n = g.src.len();
            let xv = MatrixView::new(x, n, dim)?;
            let own = bitext_retrieval(&xv, &MatrixView::new(y, n, dim)?, Some((&g.src, &g.tgt)))?;
            let k = if g.non_pivot { 2.min(pool_size) } else { 1 };
            let nn = knn(&xv, &pool_view, &KnnOptions::new(k))?;
            let hit = |i: usize| {
                let mut found = nn.indices_of(i).iter().map(|&j| j as usize);
                if g.non_pivot {
                    found
                        .find(|&j| pool_text[j] != g.src[i])
                        .is_some_and(|j| pool_keys[j].contains(&g.rows[i]))
                } else {
                    found.next() == Some(pool_row[g.tgt[i].as_str()])
                }
            };
            let hits = (0..n).filter(|&i| hit(i)).count();
            languages.push(DevLanguageScores {
                language: g.language.clone(),
                pairs: n,
                p_at_1: 100.0 * own.p_at_1(),
                pooled_p_at_1: 100.0 * hits as f64 / n as f64,
            });
        }
        Ok(DevScores {
            p_at_1: language_mean(&languages, |l| l.p_at_1),
            pooled_p_at_1: language_mean(&languages, |l| l.pooled_p_at_1),
            pool_size,
            languages,
            non_pivot: None,
        })
    }
}

/// [`DevScores`]' two means over the languages a list of codes names.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DevSubsetScores {
    /// The split's language labels the codes named.
    pub languages: Vec<String>,
    pub p_at_1: f64,
    pub pooled_p_at_1: f64,
}

impl DevScores {
    /// The means of both scores over the languages `wanted` names (codes as `lase eval
    /// --langs` takes them: `deu` names `deu` and `deu_Latn`, `zho` names `zho_Hans`,
    /// 2-letter aliases are mapped): a sub-mean a rule can watch where the mean over
    /// every language can hide a loss (a few high-resource languages among hundreds). An
    /// invalid code, or codes that name none of the split's languages, is an error.
    pub fn subset(&self, wanted: &[String]) -> Result<DevSubsetScores> {
        let codes = wanted
            .iter()
            .map(|w| LanguageCode::parse(w).map(|(c, _)| c))
            .collect::<Result<Vec<_>>>()?;
        let chosen: Vec<&DevLanguageScores> = self
            .languages
            .iter()
            .filter(|l| {
                LanguageCode::parse(&l.language)
                    .is_ok_and(|(have, _)| codes.iter().any(|c| c.names(&have)))
            })
            .collect();
        if chosen.is_empty() {
            return Err(LaseError::InvalidArgument(format!(
                "--langs {}: none of the dev split's {} languages",
                wanted.join(","),
                self.languages.len()
            )));
        }
        Ok(DevSubsetScores {
            languages: chosen.iter().map(|l| l.language.clone()).collect(),
            p_at_1: language_mean(chosen.iter().copied(), |l| l.p_at_1),
            pooled_p_at_1: language_mean(chosen.iter().copied(), |l| l.pooled_p_at_1),
        })
    }
}

/// The mean of one score over languages, each weighing the same (0 for none).
fn language_mean<'a>(
    languages: impl IntoIterator<Item = &'a DevLanguageScores>,
    score: fn(&DevLanguageScores) -> f64,
) -> f64 {
    let (sum, n) = languages
        .into_iter()
        .fold((0.0, 0usize), |(sum, n), l| (sum + score(l), n + 1));
    sum / n.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subset_is_the_mean_over_the_languages_its_codes_name() {
        let lang = |language: &str, p: f64, pooled: f64| DevLanguageScores {
            language: language.into(),
            pairs: 20,
            p_at_1: p,
            pooled_p_at_1: pooled,
        };
        let scores = DevScores {
            p_at_1: 0.0,
            pooled_p_at_1: 0.0,
            pool_size: 0,
            languages: vec![
                lang("deu", 90.0, 60.0),
                lang("deu_Latn", 80.0, 50.0),
                lang("zho_Hans", 70.0, 40.0),
                lang("fra_Latn", 10.0, 5.0),
            ],
            non_pivot: None,
        };
        let s = scores.subset(&["de".into(), "zho".into()]).unwrap();
        assert_eq!(s.languages, ["deu", "deu_Latn", "zho_Hans"]);
        assert!((s.p_at_1 - 80.0).abs() < 1e-12, "{s:?}");
        assert!((s.pooled_p_at_1 - 50.0).abs() < 1e-12, "{s:?}");
        // A script narrows: deu_Latn names deu_Latn (and the script-less deu), not zho.
        let s = scores.subset(&["deu_Latn".into()]).unwrap();
        assert_eq!(s.languages, ["deu", "deu_Latn"]);
        let err = scores.subset(&["ita".into()]).unwrap_err().to_string();
        assert!(err.contains("none of the dev split's 4 languages"), "{err}");
        assert!(scores.subset(&["d3u".into()]).is_err());
    }

    fn group(language: &str, src: &[&str], tgt: &[&str]) -> DevGroup {
        DevGroup {
            language: language.into(),
            non_pivot: language.contains('-'),
            rows: if language.contains('-') {
                (0..src.len() as u32).map(|r| (0, r)).collect()
            } else {
                Vec::new()
            },
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

    /// Non-pivot groups are scored apart: the pivot scores stay what they are without
    /// them, and their pool holds only their own targets.
    #[test]
    fn non_pivot_pairs_are_scored_apart() {
        let pivot = || {
            vec![
                group("deu", &["d0", "d1"], &["e0", "e1"]),
                group("fra", &["f0", "f1"], &["e2", "e3"]),
            ]
        };
        let pivot_vectors = || {
            vec![
                (
                    rows(&[unit(0.0), unit(40.0)]),
                    rows(&[unit(0.0), unit(90.0)]),
                ),
                (
                    rows(&[unit(180.0), unit(270.0)]),
                    rows(&[unit(180.0), unit(270.0)]),
                ),
            ]
        };
        let alone = DevSet { groups: pivot() }
            .scores_of_vectors(&pivot_vectors(), 2)
            .unwrap();
        assert!(alone.non_pivot.is_none());
        let mut groups = pivot();
        groups.push(group("deu-fra", &["d0", "d1"], &["f0", "f1"]));
        let mut vectors = pivot_vectors();
        // d1 (at 40 degrees) is nearer e0 (0) than e1 (90) among the pivot targets, but
        // nearer f1 (70) than f0 (-5) among the non-pivot ones.
        vectors.push((
            rows(&[unit(0.0), unit(40.0)]),
            rows(&[unit(-5.0), unit(70.0)]),
        ));
        let dev = DevSet { groups };
        assert_eq!(dev.len(), 4);
        assert_eq!(dev.non_pivot_len(), 2);
        let s = dev.scores_of_vectors(&vectors, 2).unwrap();
        let np = s.non_pivot.as_deref().unwrap();
        assert_eq!(
            (s.p_at_1, s.pooled_p_at_1, s.pool_size),
            (alone.p_at_1, alone.pooled_p_at_1, 4)
        );
        assert_eq!(s.languages, alone.languages);
        assert_eq!(np.pool_size, 2);
        assert_eq!(np.languages[0].language, "deu-fra");
        assert_eq!((np.p_at_1, np.pooled_p_at_1), (100.0, 100.0));
        // In the pivot pool d1 is nearer e0 (0) than e1 (90): pooled 50 for deu.
        assert_eq!(s.languages[0].pooled_p_at_1, 50.0);
    }

    /// A chain a -> b -> c over two rows pools b's and c's segments: a hit is any segment
    /// of the source's row other than the source's own text (b0 finds itself first).
    #[test]
    fn a_non_pivot_hit_is_a_segment_of_the_sources_row() {
        let dev = DevSet {
            groups: vec![
                group("a-b", &["a0", "a1"], &["b0", "b1"]),
                group("b-c", &["b0", "b1"], &["c0", "c1"]),
            ],
        };
        let vectors = |a1: f32| {
            vec![
                (rows(&[unit(2.0), unit(a1)]), rows(&[unit(0.0), unit(90.0)])),
                (
                    rows(&[unit(0.0), unit(90.0)]),
                    rows(&[unit(5.0), unit(95.0)]),
                ),
            ]
        };
        let s = dev.scores_of_vectors(&vectors(92.0), 2).unwrap();
        let np = s.non_pivot.as_deref().unwrap();
        assert_eq!(np.pool_size, 4);
        assert_eq!(np.pooled_p_at_1, 100.0);
        // a1 moved next to row 0's c0 (5 degrees): its nearest is of another row.
        let s = dev.scores_of_vectors(&vectors(4.0), 2).unwrap();
        let np = s.non_pivot.as_deref().unwrap();
        assert_eq!(np.languages[0].pooled_p_at_1, 50.0);
        assert_eq!(np.languages[1].pooled_p_at_1, 100.0);

        // One text in two rows ("Amen." in both): one candidate, right for both rows.
        let dev = DevSet {
            groups: vec![group("a-b", &["a0", "a1"], &["amen", "amen"])],
        };
        let vectors = vec![(
            rows(&[unit(0.0), unit(90.0)]),
            rows(&[unit(0.0), unit(1.0)]),
        )];
        let s = dev.scores_of_vectors(&vectors, 2).unwrap();
        let np = s.non_pivot.as_deref().unwrap();
        assert_eq!((np.pool_size, np.pooled_p_at_1), (1, 100.0));
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

//! BUCC-style parallel sentence mining F1, built the way BUCC is (Zweigenbaum et al. 2018)
//! from an N-way parallel set: each split keeps the translation of some sentences (gold
//! pairs) and only one side of the others (sentences with no translation in the other
//! corpus), both corpora shuffled. Mining uses k-NN + ratio margin (k = 4, max retrieval);
//! the score threshold is chosen on the train split and applied to the test split (LASER's
//! protocol). The oracle F1 (threshold chosen on test) is reported separately.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::Value;

use super::plot::{BarPanel, field_bars};
use super::suite::{Suite, SuiteInput, SuiteOutcome, to_json};
use crate::error::{LaseError, Result};
use crate::mine::{MatrixView, MineOptions, mine};

/// How the task is built.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BuccConfig {
    /// Share of each split's sentences whose translation is present (gold pairs).
    pub gold_fraction: f64,
    pub seed: u64,
}

impl Default for BuccConfig {
    fn default() -> Self {
        Self {
            gold_fraction: 0.4,
            seed: 2018,
        }
    }
}

/// F1 on the test split at the train threshold, and the test oracle.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BuccScores {
    pub train_threshold: f32,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub oracle_threshold: f32,
    pub oracle_f1: f64,
    pub test_gold_pairs: usize,
    pub test_source_sentences: usize,
    pub test_target_sentences: usize,
}

/// Deterministic Fisher-Yates shuffle driven by splitmix64.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// Best F1 over thresholds: pairs scoring >= the threshold are kept. `scored` holds each
/// mined pair's score and whether it is gold. Returns (threshold, precision, recall, F1).
pub fn best_threshold(scored: &[(f32, bool)], gold: usize) -> (f32, f64, f64, f64) {
    crate::mine::bitext::best_f1_cut(scored, gold).map_or((f32::INFINITY, 0.0, 0.0, 0.0), |c| {
        (c.score, c.precision, c.recall, c.f1)
    })
}

/// Precision, recall, F1 keeping pairs scoring >= `threshold`.
pub fn prf_at(scored: &[(f32, bool)], gold: usize, threshold: f32) -> (f64, f64, f64) {
    let kept: Vec<bool> = scored
        .iter()
        .filter(|(s, _)| *s >= threshold)
        .map(|(_, ok)| *ok)
        .collect();
    let tp = kept.iter().filter(|&&ok| ok).count() as f64;
    let p = if kept.is_empty() {
        0.0
    } else {
        tp / kept.len() as f64
    };
    let r = tp / gold.max(1) as f64;
    (
        p,
        r,
        if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        },
    )
}

/// One mined split: each pair's (score, is gold), then gold pairs, source and target sizes.
type MinedSplit = (Vec<(f32, bool)>, usize, usize, usize);

/// Builds one split from `lines` (indices into the parallel set), mines it, and returns
/// each mined pair's (score, is gold) and the number of gold pairs, plus the corpus sizes.
fn mine_split(
    src: &MatrixView,
    tgt: &MatrixView,
    lines: &[usize],
    config: &BuccConfig,
    seed: u64,
) -> Result<MinedSplit> {
    let n_gold = ((lines.len() as f64) * config.gold_fraction).round() as usize;
    let (gold, rest) = lines.split_at(n_gold.min(lines.len()));
    let (src_only, tgt_only) = rest.split_at(rest.len() / 2);
    let mut src_rows: Vec<usize> = gold.iter().chain(src_only).copied().collect();
    let mut tgt_rows: Vec<usize> = gold.iter().chain(tgt_only).copied().collect();
    shuffle(&mut src_rows, seed ^ 1);
    shuffle(&mut tgt_rows, seed ^ 2);
    let gather = |m: &MatrixView, rows: &[usize]| -> Vec<f32> {
        rows.iter()
            .flat_map(|&r| m.row(r).iter().copied())
            .collect()
    };
    let (xs, ys) = (gather(src, &src_rows), gather(tgt, &tgt_rows));
    let x = MatrixView::new(&xs, src_rows.len(), src.cols)?;
    let y = MatrixView::new(&ys, tgt_rows.len(), tgt.cols)?;
    let gold_set: HashSet<usize> = gold.iter().copied().collect();
    let pairs = mine(&x, &y, &MineOptions::default())?.pairs;
    let scored = pairs
        .iter()
        .map(|p| {
            let (a, b) = (src_rows[p.src], tgt_rows[p.tgt]);
            (p.score, a == b && gold_set.contains(&a))
        })
        .collect();
    Ok((scored, gold.len(), src_rows.len(), tgt_rows.len()))
}

/// The fewest aligned rows for which both halves (threshold and test) hold a gold pair at
/// `config.gold_fraction`.
fn least_rows(config: &BuccConfig) -> Result<usize> {
    let g = config.gold_fraction;
    if !(g > 0.0 && g <= 1.0) {
        return Err(LaseError::InvalidArgument(format!(
            "gold_fraction {g}: must be in (0, 1]"
        )));
    }
    // A half of h lines holds round(h g) gold pairs: at least one from h = ceil(0.5 / g)
    // (corrected by one either way for rounding); both halves hold h when n = 2h.
    let gold = |lines: usize| (lines as f64 * g).round() as usize;
    let mut half = ((0.5 / g).ceil() as usize).max(1);
    if gold(half) < 1 {
        half = half.saturating_add(1);
    } else if half > 1 && gold(half - 1) >= 1 {
        half -= 1;
    }
    Ok(half.saturating_mul(2))
}

/// Runs the task on row-aligned embeddings of an N-way set (`src` row i translates `tgt`
/// row i), L2-normalised.
pub fn evaluate_pair(
    src: &MatrixView,
    tgt: &MatrixView,
    config: &BuccConfig,
) -> Result<BuccScores> {
    let least = least_rows(config)?;
    if src.rows != tgt.rows || src.rows < least {
        return Err(LaseError::InvalidArgument(format!(
            "BUCC-style mining needs row-aligned sides of at least {least} rows each (a gold pair in each half at gold_fraction {}), got {} and {}",
            config.gold_fraction, src.rows, tgt.rows
        )));
    }
    let mut lines: Vec<usize> = (0..src.rows).collect();
    shuffle(&mut lines, config.seed);
    let (train, test) = lines.split_at(lines.len() / 2);
    let (train_scored, train_gold, _, _) = mine_split(src, tgt, train, config, config.seed + 11)?;
    let (test_scored, test_gold, n_src, n_tgt) =
        mine_split(src, tgt, test, config, config.seed + 23)?;
    let (threshold, ..) = best_threshold(&train_scored, train_gold);
    let (precision, recall, f1) = prf_at(&test_scored, test_gold, threshold);
    let (oracle_threshold, _, _, oracle_f1) = best_threshold(&test_scored, test_gold);
    Ok(BuccScores {
        train_threshold: threshold,
        precision,
        recall,
        f1,
        oracle_threshold,
        oracle_f1,
        test_gold_pairs: test_gold,
        test_source_sentences: n_src,
        test_target_sentences: n_tgt,
    })
}

/// The BUCC 2018 languages (paired with English), as FLORES-200 codes.
pub const BUCC_LANGUAGES: &[&str] = &["deu_Latn", "fra_Latn", "rus_Cyrl", "zho_Hans"];

/// Runs the task on FLORES-200 devtest for each of `langs` (default: BUCC's languages)
/// paired with English.
pub fn evaluate_flores(
    encoder: &crate::model::SentenceEncoder,
    dir: &std::path::Path,
    langs: Option<&[String]>,
    options: &crate::inference::EncodeOptions,
    config: &BuccConfig,
    progress: bool,
) -> Result<std::collections::BTreeMap<String, BuccScores>> {
    let langs: Vec<String> = match langs {
        Some(ls) => super::select_languages(
            super::flores::languages(dir)?,
            Some(ls),
            dir,
            "FLORES devtest file",
        )?,
        None => BUCC_LANGUAGES.iter().map(|s| s.to_string()).collect(),
    };
    let dim = encoder.dim();
    let english_name = format!("{}.devtest", super::flores::ENGLISH);
    let english_lines = super::read_test_lines(dir.join(&english_name))?;
    let least = least_rows(config)?;
    // Every file is read and checked against English (line i translates line i; both
    // splits need a sentence) before anything is embedded.
    let mut others = Vec::new();
    for lang in langs.iter().filter(|l| *l != super::flores::ENGLISH) {
        let path = dir.join(format!("{lang}.devtest"));
        let lines = super::read_test_lines(&path)?;
        super::check_aligned(&path, lines.len(), &english_name, english_lines.len())?;
        if lines.len() < least {
            return Err(LaseError::bad_file(
                &path,
                format!(
                    "{} lines: the task needs at least {least}, half to choose its threshold on and half to test, each with a gold pair",
                    lines.len()
                ),
            ));
        }
        others.push((lang, lines));
    }
    let english = super::embed_unit_vectors(
        encoder,
        &english_lines,
        options,
        super::flores::ENGLISH,
        progress,
    )?;
    let y = MatrixView::new(&english, english_lines.len(), dim)?;
    let mut out = std::collections::BTreeMap::new();
    for (lang, lines) in others {
        let v = super::embed_unit_vectors(encoder, &lines, options, lang, progress)?;
        let x = MatrixView::new(&v, lines.len(), dim)?;
        out.insert(format!("{lang}-eng"), evaluate_pair(&x, &y, config)?);
    }
    Ok(out)
}

/// `lase eval --suite bucc`: BUCC-style mining on FLORES with the threshold chosen on
/// the train split.
pub struct BuccSuite;

impl Suite for BuccSuite {
    fn name(&self) -> &'static str {
        "bucc"
    }

    fn run(&self, input: &SuiteInput<'_>) -> Result<SuiteOutcome> {
        let config = BuccConfig::default();
        let r = evaluate_flores(
            input.encoder,
            &input.data.flores_devtest(),
            input.langs,
            input.options,
            &config,
            input.progress,
        )?;
        let mut markdown = String::from(
            "## BUCC-style mining on FLORES-200 (ratio margin, k=4, max retrieval)\n\nThreshold chosen on the train split, applied to test; the oracle (threshold chosen on test) is not a result.\n\n| pair | test P | test R | **test F1** | train threshold | oracle F1 |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
        );
        let mut summary = Vec::new();
        for (pair, b) in &r {
            summary.push(format!(
                "bucc {pair}: test F1 {:.1} (P {:.1}, R {:.1}) at train threshold {:.3}; oracle F1 {:.1}",
                100.0 * b.f1,
                100.0 * b.precision,
                100.0 * b.recall,
                b.train_threshold,
                100.0 * b.oracle_f1
            ));
            markdown += &format!(
                "| {pair} | {:.1} | {:.1} | **{:.1}** | {:.3} | {:.1} |\n",
                100.0 * b.precision,
                100.0 * b.recall,
                100.0 * b.f1,
                b.train_threshold,
                100.0 * b.oracle_f1
            );
        }
        markdown += "\n";
        Ok(SuiteOutcome {
            json: to_json(self, &r)?,
            markdown,
            summary,
        })
    }

    fn panel(&self, json: &Value) -> Option<BarPanel> {
        Some(BarPanel {
            title: "BUCC-style mining: test F1 (%) at the train-split threshold".into(),
            y_label: "F1 %".into(),
            bars: field_bars(json, "f1", 100.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_threshold_by_hand() {
        // Scores 0.9 (gold), 0.8 (not), 0.7 (gold), 0.6 (not); 3 gold pairs exist.
        let scored = [(0.9, true), (0.8, false), (0.7, true), (0.6, false)];
        // Cut at 0.9: P 1, R 1/3, F 0.5. At 0.7: P 2/3, R 2/3, F 0.667. At 0.6: P 0.5, R 2/3, F 0.571.
        let (t, p, r, f) = best_threshold(&scored, 3);
        assert_eq!(t, 0.7);
        assert!(
            (p - 2.0 / 3.0).abs() < 1e-12
                && (r - 2.0 / 3.0).abs() < 1e-12
                && (f - 2.0 / 3.0).abs() < 1e-12
        );
        let (p, r, f) = prf_at(&scored, 3, 0.85);
        assert!(
            (p - 1.0).abs() < 1e-12 && (r - 1.0 / 3.0).abs() < 1e-12 && (f - 0.5).abs() < 1e-12
        );
    }

    #[test]
    fn ties_are_never_split() {
        let scored = [(0.9, true), (0.9, false), (0.5, true)];
        let (t, p, ..) = best_threshold(&scored, 2);
        // Cutting inside the tie is impossible: the first cut keeps both 0.9 pairs.
        assert!(t == 0.9 && (p - 0.5).abs() < 1e-12 || t == 0.5);
    }

    #[test]
    fn sides_of_other_lengths_or_a_single_row_are_refused() {
        let v = [1.0f32, 0.0, 0.0, 1.0, 0.6, 0.8];
        let (three, two) = (
            MatrixView::new(&v, 3, 2).unwrap(),
            MatrixView::new(&v[..4], 2, 2).unwrap(),
        );
        let config = BuccConfig::default();
        let err = evaluate_pair(&three, &two, &config)
            .unwrap_err()
            .to_string();
        assert!(err.contains("got 3 and 2"), "{err}");
        // At gold_fraction 0.4 a half needs 2 lines to hold a gold pair: 4 rows at least.
        assert_eq!(least_rows(&config).unwrap(), 4);
        let err = evaluate_pair(&two, &two, &config).unwrap_err().to_string();
        assert!(err.contains("at least 4 rows"), "{err}");
        let w = [1.0f32, 0.0, 0.0, 1.0, 0.6, 0.8, 0.8, -0.6];
        let four = MatrixView::new(&w, 4, 2).unwrap();
        assert!(evaluate_pair(&four, &four, &config).is_ok());
        let all_gold = BuccConfig {
            gold_fraction: 1.0,
            ..config
        };
        assert_eq!(least_rows(&all_gold).unwrap(), 2);
        // The closed form against a search, over fractions small and large.
        for g in [0.001, 0.01, 0.1, 0.25, 0.3, 0.33, 0.4, 0.5, 0.51, 0.75, 1.0] {
            let c = BuccConfig {
                gold_fraction: g,
                seed: 1,
            };
            let gold = |lines: usize| (lines as f64 * g).round() as usize;
            let searched = (2..)
                .find(|&n: &usize| gold(n / 2) >= 1 && gold(n - n / 2) >= 1)
                .unwrap();
            assert_eq!(least_rows(&c).unwrap(), searched, "gold_fraction {g}");
        }
        let tiny = BuccConfig {
            gold_fraction: 1e-300,
            seed: 1,
        };
        assert!(least_rows(&tiny).unwrap() > 1_000_000);
        for bad in [0.0, -0.5, 1.5, f64::NAN] {
            let c = BuccConfig {
                gold_fraction: bad,
                seed: 1,
            };
            assert!(least_rows(&c).is_err(), "{bad}");
        }
    }

    #[test]
    fn shuffle_is_a_deterministic_permutation() {
        let mut a: Vec<usize> = (0..50).collect();
        let mut b = a.clone();
        shuffle(&mut a, 7);
        shuffle(&mut b, 7);
        assert_eq!(a, b);
        assert_ne!(a, (0..50).collect::<Vec<_>>());
        a.sort();
        assert_eq!(a, (0..50).collect::<Vec<_>>());
    }
}

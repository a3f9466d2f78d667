//! FLORES-200 devtest (N-way parallel, 204 languages, 1,012 sentences): P@1 and xSIM
//! error for every xx-eng pair, and for non-English pairs among chosen languages. Each
//! language is embedded once and reused for every pair it is in.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use super::bitext_retrieval::{RetrievalScores, bitext_retrieval};
use super::embed_unit_vectors;
use super::plot::{BarPanel, retrieval_bars};
use super::suite::{Suite, SuiteInput, SuiteOutcome, to_json};
use crate::error::{LaseError, Result};
use crate::inference::EncodeOptions;
use crate::mine::MatrixView;
use crate::model::SentenceEncoder;

pub const ENGLISH: &str = "eng_Latn";

/// Languages present in `dir` (`<code>.devtest`), sorted.
pub fn languages(dir: &Path) -> Result<Vec<String>> {
    let mut codes: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| LaseError::io(dir, e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_suffix(".devtest")
                .map(str::to_owned)
        })
        .collect();
    codes.sort();
    Ok(codes)
}

/// FLORES results: xx-eng per language, non-English pairs, and averages (percent).
#[derive(Clone, Debug, Serialize)]
pub struct FloresReport {
    /// Keyed by xx; x = xx, y = English.
    pub xx_eng: BTreeMap<String, RetrievalScores>,
    /// Keyed by "src-tgt" for the non-English languages asked for.
    pub non_english: BTreeMap<String, RetrievalScores>,
    pub xx_eng_mean_p_at_1: f64,
    pub xx_eng_mean_xsim_error: f64,
    pub non_english_mean_p_at_1: Option<f64>,
}

/// Evaluates xx-eng for `langs` (all languages by default) and every ordered pair among
/// the non-English languages of `langs` when 2 to 30 are given.
pub fn evaluate(
    encoder: &SentenceEncoder,
    dir: &Path,
    langs: Option<&[String]>,
    options: &EncodeOptions,
    progress: bool,
) -> Result<FloresReport> {
    let available = languages(dir)?;
    let chosen = super::select_languages(available, langs, dir, "FLORES devtest file")?;
    let dim = encoder.dim();
    let mut cache: BTreeMap<String, (Vec<String>, Vec<f32>)> = BTreeMap::new();
    let mut load = |lang: &str| -> Result<()> {
        if !cache.contains_key(lang) {
            let sentences = super::read_test_lines(dir.join(format!("{lang}.devtest")))?;
            let v = embed_unit_vectors(
                encoder,
                &sentences,
                options,
                &format!("flores {lang}"),
                progress,
            )?;
            cache.insert(lang.to_owned(), (sentences, v));
        }
        Ok(())
    };
    load(ENGLISH)?;
    for l in &chosen {
        load(l)?;
    }
    let pair = |a: &str, b: &str| -> Result<RetrievalScores> {
        let (sa, va) = &cache[a];
        let (sb, vb) = &cache[b];
        super::check_aligned(
            &dir.join(format!("{a}.devtest")),
            sa.len(),
            &format!("{b}.devtest"),
            sb.len(),
        )?;
        let x = MatrixView::new(va, sa.len(), dim)?;
        let y = MatrixView::new(vb, sb.len(), dim)?;
        bitext_retrieval(&x, &y, Some((sa, sb)))
    };
    let non_english: Vec<&String> = chosen.iter().filter(|l| *l != ENGLISH).collect();
    let mut xx_eng = BTreeMap::new();
    for l in &non_english {
        xx_eng.insert((*l).clone(), pair(l, ENGLISH)?);
    }
    let mut pairs = BTreeMap::new();
    if langs.is_some() && (2..=30).contains(&non_english.len()) {
        for a in &non_english {
            for b in &non_english {
                if a != b {
                    pairs.insert(format!("{a}-{b}"), pair(a, b)?);
                }
            }
        }
    }
    let mean = |m: &BTreeMap<String, RetrievalScores>, f: fn(&RetrievalScores) -> f64| {
        100.0 * m.values().map(f).sum::<f64>() / m.len().max(1) as f64
    };
    Ok(FloresReport {
        xx_eng_mean_p_at_1: mean(&xx_eng, RetrievalScores::p_at_1),
        xx_eng_mean_xsim_error: mean(&xx_eng, |s| s.xsim_error_xy),
        non_english_mean_p_at_1: (!pairs.is_empty()).then(|| mean(&pairs, |s| s.p_at_1_xy)),
        xx_eng,
        non_english: pairs,
    })
}

/// `lase eval --suite flores`: xx-eng P@1 both directions and xSIM error per language,
/// and the non-English pairs among 2 to 30 languages asked for.
pub struct FloresSuite;

impl Suite for FloresSuite {
    fn name(&self) -> &'static str {
        "flores"
    }

    fn run(&self, input: &SuiteInput<'_>) -> Result<SuiteOutcome> {
        let started = Instant::now();
        let r = evaluate(
            input.encoder,
            &input.data.flores_devtest(),
            input.langs,
            input.options,
            input.progress,
        )?;
        let summary = vec![format!(
            "flores: {} xx-eng pairs, mean P@1 {:.2}, xSIM error xx->en {:.2}{}; {:.0} s",
            r.xx_eng.len(),
            r.xx_eng_mean_p_at_1,
            r.xx_eng_mean_xsim_error,
            r.non_english_mean_p_at_1.map_or(String::new(), |p| format!(
                ", {} non-English pairs P@1 {p:.2}",
                r.non_english.len()
            )),
            started.elapsed().as_secs_f64()
        )];
        let mut markdown = String::from(
            "## FLORES-200 devtest, xx-eng (%)\n\n| language | P@1 xx->en | P@1 en->xx | xSIM error xx->en |\n| --- | ---: | ---: | ---: |\n",
        );
        for (l, s) in &r.xx_eng {
            markdown += &format!(
                "| {l} | {:.1} | {:.1} | {:.1} |\n",
                100.0 * s.p_at_1_xy,
                100.0 * s.p_at_1_yx,
                100.0 * s.xsim_error_xy
            );
        }
        markdown += &format!("| **mean** | | | P@1 {:.1} |\n\n", r.xx_eng_mean_p_at_1);
        Ok(SuiteOutcome {
            json: to_json(self, &r)?,
            markdown,
            summary,
        })
    }

    fn panel(&self, json: &Value) -> Option<BarPanel> {
        Some(BarPanel {
            title: "FLORES-200 devtest xx-eng: P@1 (%), mean of both directions".into(),
            y_label: "P@1 %".into(),
            bars: retrieval_bars(json.get("xx_eng")),
        })
    }
}

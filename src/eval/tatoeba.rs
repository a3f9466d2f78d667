//! Tatoeba similarity search (LASER v1 test sets, 112 languages, up to 1,000 pairs each;
//! Artetxe & Schwenk 2019): for every language xx, P@1 xx->en and en->xx, their mean, and
//! xSIM errors; averages over all languages and over named groups.

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

/// Named language groups whose averages papers report.
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        // XTREME's Tatoeba subset (Hu et al. 2020), the 36 languages LEALLA/EMS-style
        // comparisons use.
        "xtreme36",
        &[
            "afr", "ara", "bul", "ben", "deu", "ell", "spa", "est", "eus", "pes", "fin", "fra",
            "heb", "hin", "hun", "ind", "ita", "jpn", "jav", "kat", "kaz", "kor", "mal", "mar",
            "nld", "por", "rus", "swh", "tam", "tel", "tha", "tgl", "tur", "urd", "vie", "cmn",
        ],
    ),
    (
        // The non-English languages of multilingual USE (Yang et al. 2020), ems.txt Table V.
        "muse",
        &[
            "ara", "cmn", "nld", "fra", "deu", "ita", "jpn", "kor", "pol", "por", "spa", "tha",
            "tur", "rus",
        ],
    ),
];

/// One language's aligned test set.
#[derive(Clone, Debug)]
pub struct TatoebaSet {
    pub lang: String,
    pub sentences: Vec<String>,
    pub english: Vec<String>,
}

/// Reads `tatoeba.<xx>-eng.<xx>` / `.eng` pairs from `dir` (all languages, or `langs`).
pub fn load(dir: &Path, langs: Option<&[String]>) -> Result<Vec<TatoebaSet>> {
    let mut codes: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| LaseError::io(dir, e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let code = name
                .strip_prefix("tatoeba.")?
                .strip_suffix(".eng")?
                .strip_suffix("-eng")?
                .to_owned();
            Some(code)
        })
        .collect();
    codes.sort();
    let codes = super::select_languages(codes, langs, dir, "Tatoeba test set for language")?;
    if codes.is_empty() {
        return Err(LaseError::bad_file(
            dir,
            "no tatoeba.<xx>-eng.* files found",
        ));
    }
    codes
        .into_iter()
        .map(|lang| {
            let xx_path = dir.join(format!("tatoeba.{lang}-eng.{lang}"));
            let en_path = dir.join(format!("tatoeba.{lang}-eng.eng"));
            let sentences = super::read_test_lines(&xx_path)?;
            let english = super::read_test_lines(&en_path)?;
            super::check_aligned(
                &xx_path,
                sentences.len(),
                &en_path.display().to_string(),
                english.len(),
            )?;
            Ok(TatoebaSet {
                lang,
                sentences,
                english,
            })
        })
        .collect()
}

/// Averages over a set of languages (percentages, as papers report).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Averages {
    pub languages: usize,
    pub p_at_1: f64,
    pub p_at_1_xx_en: f64,
    pub p_at_1_en_xx: f64,
    pub xsim_error_xx_en: f64,
}

fn average<'a>(scores: impl Iterator<Item = &'a RetrievalScores>) -> Averages {
    let all: Vec<_> = scores.collect();
    let n = all.len().max(1) as f64;
    let mean =
        |f: &dyn Fn(&RetrievalScores) -> f64| 100.0 * all.iter().map(|s| f(s)).sum::<f64>() / n;
    Averages {
        languages: all.len(),
        p_at_1: mean(&|s| s.p_at_1()),
        p_at_1_xx_en: mean(&|s| s.p_at_1_xy),
        p_at_1_en_xx: mean(&|s| s.p_at_1_yx),
        xsim_error_xx_en: mean(&|s| s.xsim_error_xy),
    }
}

/// Tatoeba results: per language (x = xx, y = English) and averages.
#[derive(Clone, Debug, Serialize)]
pub struct TatoebaReport {
    pub languages: BTreeMap<String, RetrievalScores>,
    pub average: Averages,
    /// Averages over [`GROUPS`] (only the group members that were evaluated).
    pub groups: BTreeMap<String, Averages>,
}

/// Scores precomputed embeddings: `embeddings[lang] = (xx vectors, English vectors)`.
pub fn score(
    sets: &[TatoebaSet],
    embeddings: &BTreeMap<String, (Vec<f32>, Vec<f32>)>,
    dim: usize,
) -> Result<TatoebaReport> {
    let mut languages = BTreeMap::new();
    for set in sets {
        let (xv, ev) = &embeddings[&set.lang];
        let x = MatrixView::new(xv, set.sentences.len(), dim)?;
        let y = MatrixView::new(ev, set.english.len(), dim)?;
        let scores = bitext_retrieval(&x, &y, Some((&set.sentences, &set.english)))?;
        languages.insert(set.lang.clone(), scores);
    }
    let groups = GROUPS
        .iter()
        .filter_map(|(name, members)| {
            let present: Vec<_> = members.iter().filter_map(|m| languages.get(*m)).collect();
            (!present.is_empty()).then(|| (name.to_string(), average(present.into_iter())))
        })
        .collect();
    Ok(TatoebaReport {
        average: average(languages.values()),
        languages,
        groups,
    })
}

/// Embeds every set with `encoder` and scores it.
pub fn evaluate(
    encoder: &SentenceEncoder,
    sets: &[TatoebaSet],
    options: &EncodeOptions,
    progress: bool,
) -> Result<TatoebaReport> {
    let mut embeddings = BTreeMap::new();
    for set in sets {
        let label = format!("tatoeba {}", set.lang);
        let xv = embed_unit_vectors(encoder, &set.sentences, options, &label, progress)?;
        let ev = embed_unit_vectors(encoder, &set.english, options, &label, progress)?;
        embeddings.insert(set.lang.clone(), (xv, ev));
    }
    score(sets, &embeddings, encoder.dim())
}

/// A Markdown table: one row per language, then the averages.
pub fn markdown(report: &TatoebaReport) -> String {
    let mut s = String::from(
        "| language | pairs | P@1 xx->en | P@1 en->xx | P@1 mean | xSIM error xx->en |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (lang, r) in &report.languages {
        s += &format!(
            "| {lang} | {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            r.pairs,
            100.0 * r.p_at_1_xy,
            100.0 * r.p_at_1_yx,
            100.0 * r.p_at_1(),
            100.0 * r.xsim_error_xy
        );
    }
    let mut avg_row = |name: &str, a: &Averages| {
        s += &format!(
            "| **{name}** ({} languages) | | {:.1} | {:.1} | **{:.1}** | {:.1} |\n",
            a.languages, a.p_at_1_xx_en, a.p_at_1_en_xx, a.p_at_1, a.xsim_error_xx_en
        );
    };
    avg_row("average", &report.average);
    for (name, a) in &report.groups {
        avg_row(name, a);
    }
    s
}

/// `lase eval --suite tatoeba`: P@1 both directions and xSIM error per language, with
/// the averages of [`GROUPS`].
pub struct TatoebaSuite;

impl Suite for TatoebaSuite {
    fn name(&self) -> &'static str {
        "tatoeba"
    }

    fn run(&self, input: &SuiteInput<'_>) -> Result<SuiteOutcome> {
        let started = Instant::now();
        let sets = load(&input.data.tatoeba(), input.langs)?;
        let r = evaluate(input.encoder, &sets, input.options, input.progress)?;
        let mut summary = vec![format!(
            "tatoeba: {} languages, mean P@1 {:.2} (xx->en {:.2}, en->xx {:.2}), xSIM error xx->en {:.2}; {:.0} s",
            r.average.languages,
            r.average.p_at_1,
            r.average.p_at_1_xx_en,
            r.average.p_at_1_en_xx,
            r.average.xsim_error_xx_en,
            started.elapsed().as_secs_f64()
        )];
        for (name, g) in &r.groups {
            summary.push(format!(
                "tatoeba {name}: {} languages, mean P@1 {:.2}",
                g.languages, g.p_at_1
            ));
        }
        Ok(SuiteOutcome {
            markdown: format!("## Tatoeba (P@1 and xSIM error, %)\n\n{}\n", markdown(&r)),
            json: to_json(self, &r)?,
            summary,
        })
    }

    fn panel(&self, json: &Value) -> Option<BarPanel> {
        Some(BarPanel {
            title: "Tatoeba: P@1 (%), mean of xx->en and en->xx".into(),
            y_label: "P@1 %".into(),
            bars: retrieval_bars(json.get("languages")),
        })
    }
}

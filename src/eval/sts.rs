//! Semantic textual similarity: Spearman correlation (x100) between the cosine of two
//! sentence vectors and the gold score. Monolingual for the 11 languages of STS-B multi-MT
//! and KorSTS; cross-lingual by pairing sentence 1 in one language with sentence 2 in
//! another (rows are aligned across languages), as STS2017-extended was built.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::benchmark_data::BenchmarkData;
use super::embed_unit_vectors;
use super::plot::{BarPanel, number_bars};
use super::spearman::spearman;
use super::suite::{Suite, SuiteInput, SuiteOutcome, to_json};
use crate::error::{LaseError, Result};
use crate::inference::EncodeOptions;
use crate::model::SentenceEncoder;

/// The STS-B multi-MT languages.
pub const STSB_LANGUAGES: &[&str] = &[
    "de", "en", "es", "fr", "it", "ja", "nl", "pl", "pt", "ru", "zh",
];
/// Cross-lingual pairs reported by default.
pub const CROSS_LINGUAL: &[(&str, &str)] = &[
    ("en", "de"),
    ("en", "es"),
    ("en", "fr"),
    ("en", "it"),
    ("en", "nl"),
    ("en", "ru"),
    ("en", "zh"),
];

/// One language's STS test set.
#[derive(Clone, Debug)]
pub struct StsSet {
    pub sentence1: Vec<String>,
    pub sentence2: Vec<String>,
    pub scores: Vec<f64>,
}

/// Reads `stsb-<lang>-<split>.csv` (no header: sentence1, sentence2, score; excel CSV).
pub fn load_stsb(dir: &Path, lang: &str, split: &str) -> Result<StsSet> {
    let path = dir.join(format!("stsb-{lang}-{split}.csv"));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(&path)
        .map_err(|e| LaseError::bad_file(&path, e.to_string()))?;
    let mut set = StsSet {
        sentence1: vec![],
        sentence2: vec![],
        scores: vec![],
    };
    for (i, record) in reader.records().enumerate() {
        let line = i + 1;
        let r = record.map_err(|e| LaseError::bad_line(&path, line, e.to_string()))?;
        if r.len() != 3 {
            return Err(LaseError::bad_line(
                &path,
                line,
                format!("{} fields, expected 3", r.len()),
            ));
        }
        let score = r[2].trim().parse().map_err(|_| {
            LaseError::bad_line(&path, line, format!("score {:?} is not a number", &r[2]))
        })?;
        set.sentence1.push(r[0].to_owned());
        set.sentence2.push(r[1].to_owned());
        set.scores.push(score);
    }
    Ok(set)
}

/// Reads KorSTS `sts-<split>.tsv` (header; tab-separated; score in field 5, sentences 6-7).
pub fn load_korsts(dir: &Path, split: &str) -> Result<StsSet> {
    let path = dir.join(format!("sts-{split}.tsv"));
    let lines = crate::io::text::read_lines(&path)?;
    let mut set = StsSet {
        sentence1: vec![],
        sentence2: vec![],
        scores: vec![],
    };
    for (i, l) in lines.iter().enumerate().skip(1) {
        let f: Vec<&str> = l.split('\t').collect();
        if f.len() != 7 {
            return Err(LaseError::bad_line(
                &path,
                i + 1,
                format!("{} fields, expected 7", f.len()),
            ));
        }
        let score = f[4].parse().map_err(|_| {
            LaseError::bad_line(&path, i + 1, format!("score {:?} is not a number", f[4]))
        })?;
        set.sentence1.push(f[5].to_owned());
        set.sentence2.push(f[6].to_owned());
        set.scores.push(score);
    }
    Ok(set)
}

/// Spearman x 100 of row-wise cosines of unit vectors `a`, `b` against `gold`.
pub fn score(a: &[f32], b: &[f32], dim: usize, gold: &[f64]) -> f64 {
    let cos: Vec<f64> = a
        .chunks_exact(dim)
        .zip(b.chunks_exact(dim))
        .map(|(x, y)| {
            x.iter()
                .zip(y)
                .map(|(p, q)| (*p as f64) * (*q as f64))
                .sum()
        })
        .collect();
    100.0 * spearman(&cos, gold)
}

/// One language's embedded test set: unit vectors of both sides and the gold scores.
struct EmbeddedSts {
    sentence1: Vec<f32>,
    sentence2: Vec<f32>,
    gold: Vec<f64>,
}

/// STS results (Spearman x 100).
#[derive(Clone, Debug, Serialize)]
pub struct StsReport {
    pub monolingual: BTreeMap<String, f64>,
    pub cross_lingual: BTreeMap<String, f64>,
}

/// Embeds and scores the STS-B test sets of `langs` (all 11 by default), KorSTS, and the
/// cross-lingual pairs whose languages are both evaluated.
pub fn evaluate(
    encoder: &SentenceEncoder,
    data: BenchmarkData<'_>,
    langs: Option<&[String]>,
    options: &EncodeOptions,
    progress: bool,
) -> Result<StsReport> {
    let dim = encoder.dim();
    let chosen = match langs {
        None => None,
        Some(ls) => {
            let mut available: Vec<String> = STSB_LANGUAGES.iter().map(|l| l.to_string()).collect();
            available.push("ko".into());
            Some(crate::lang::resolve(ls, &available, None, "sts")?)
        }
    };
    let wanted = |l: &str| chosen.as_ref().is_none_or(|ls| ls.iter().any(|x| x == l));
    let embed = |sentences: &[String], label: &str| {
        embed_unit_vectors(encoder, sentences, options, label, progress)
    };
    let mut vectors: HashMap<String, EmbeddedSts> = HashMap::new();
    let mut monolingual = BTreeMap::new();
    for lang in STSB_LANGUAGES.iter().filter(|l| wanted(l)) {
        let set = load_stsb(&data.stsb(), lang, "test")?;
        let (a, b) = (embed(&set.sentence1, lang)?, embed(&set.sentence2, lang)?);
        monolingual.insert(lang.to_string(), score(&a, &b, dim, &set.scores));
        vectors.insert(
            lang.to_string(),
            EmbeddedSts {
                sentence1: a,
                sentence2: b,
                gold: set.scores,
            },
        );
    }
    if wanted("ko") {
        let set = load_korsts(&data.korsts(), "test")?;
        let (a, b) = (embed(&set.sentence1, "ko")?, embed(&set.sentence2, "ko")?);
        monolingual.insert("ko (KorSTS)".into(), score(&a, &b, dim, &set.scores));
    }
    let mut cross_lingual = BTreeMap::new();
    for (l1, l2) in CROSS_LINGUAL {
        if let (Some(x), Some(y)) = (vectors.get(*l1), vectors.get(*l2)) {
            // Rows are aligned across languages: sentence 1 in l1, sentence 2 in l2.
            if x.gold.len() != y.gold.len() {
                return Err(LaseError::bad_file(
                    data.stsb().join(format!("stsb-{l2}-test.csv")),
                    format!(
                        "{} rows but stsb-{l1}-test.csv has {}: the cross-lingual pair {l1}-{l2} needs them aligned",
                        y.gold.len(),
                        x.gold.len()
                    ),
                ));
            }
            cross_lingual.insert(
                format!("{l1}-{l2}"),
                score(&x.sentence1, &y.sentence2, dim, &x.gold),
            );
        }
    }
    Ok(StsReport {
        monolingual,
        cross_lingual,
    })
}

/// `lase eval --suite sts`: Spearman x100 per STS-B language and KorSTS, and the
/// cross-lingual pairs.
pub struct StsSuite;

impl Suite for StsSuite {
    fn name(&self) -> &'static str {
        "sts"
    }

    fn run(&self, input: &SuiteInput<'_>) -> Result<SuiteOutcome> {
        let r = evaluate(
            input.encoder,
            input.data,
            input.langs,
            input.options,
            input.progress,
        )?;
        let show = |m: &BTreeMap<String, f64>| {
            m.iter()
                .map(|(k, v)| format!("{k} {v:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut summary = vec![format!("sts (Spearman x100): {}", show(&r.monolingual))];
        if !r.cross_lingual.is_empty() {
            summary.push(format!("sts cross-lingual: {}", show(&r.cross_lingual)));
        }
        let mut markdown = String::from(
            "## STS (Spearman x100 of cosine vs gold)\n\n| set | Spearman |\n| --- | ---: |\n",
        );
        for (k, v) in r.monolingual.iter().chain(&r.cross_lingual) {
            markdown += &format!("| {k} | {v:.1} |\n");
        }
        markdown += "\n";
        Ok(SuiteOutcome {
            json: to_json(self, &r)?,
            markdown,
            summary,
        })
    }

    fn panel(&self, json: &Value) -> Option<BarPanel> {
        let mut bars = Vec::new();
        for part in ["monolingual", "cross_lingual"] {
            bars.extend(number_bars(json.get(part), 1.0));
        }
        Some(BarPanel {
            title: "STS: Spearman x100 of cosine vs gold".into(),
            y_label: "Spearman x100".into(),
            bars,
        })
    }
}

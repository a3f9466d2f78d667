//! Large-pool retrieval (as the UN task of LaBSE/LEALLA: P@1 among hundreds of thousands of
//! candidates): each FLORES-200 devtest sentence in language xx is searched among the
//! 1,012 FLORES English sentences plus at least 100k distinct English distractors from the
//! Tatoeba training data (sentences equal to a FLORES English sentence are left out).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::benchmark_data::BenchmarkData;
use super::embed_unit_vectors;
use super::plot::{BarPanel, field_bars};
use super::suite::{Suite, SuiteInput, SuiteOutcome, to_json};
use crate::error::{LaseError, Result};
use crate::inference::EncodeOptions;
use crate::io::text::read_lines;
use crate::mine::{KnnOptions, MatrixView, knn};
use crate::model::SentenceEncoder;

/// Size of the candidate pool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolConfig {
    /// English distractors added to the 1,012 gold candidates.
    pub distractors: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            distractors: 100_000,
        }
    }
}

/// P@1 of one language's queries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolScores {
    pub queries: usize,
    pub candidates: usize,
    pub p_at_1: f64,
}

/// Share of queries whose nearest candidate is their gold row (`gold[i]` for query i).
pub fn p_at_1_in_pool(
    queries: &MatrixView,
    candidates: &MatrixView,
    gold: &[usize],
) -> Result<f64> {
    if gold.len() != queries.rows {
        return Err(LaseError::InvalidArgument(format!(
            "{} queries but {} gold rows",
            queries.rows,
            gold.len()
        )));
    }
    let nn = knn(queries, candidates, &KnnOptions::new(1))?;
    let hits = (0..queries.rows)
        .filter(|&i| nn.indices_of(i)[0] as usize == gold[i])
        .count();
    Ok(hits as f64 / queries.rows.max(1) as f64)
}

/// `n` distinct English sentences from `<train_dir>/*/*.eng*.gz` (sorted, deterministic),
/// none of them in `exclude`.
pub fn english_distractors(
    train_dir: &Path,
    exclude: &HashSet<String>,
    n: usize,
) -> Result<Vec<String>> {
    let mut files: Vec<_> = std::fs::read_dir(train_dir)
        .map_err(|e| LaseError::io(train_dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .flat_map(|d| {
            std::fs::read_dir(&d)
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let name = p.file_name().unwrap_or_default().to_string_lossy();
                    name.contains(".eng") && name.ends_with(".gz") && !name.contains("labels")
                })
                .collect::<Vec<_>>()
        })
        .collect();
    files.sort();
    let mut distinct = BTreeSet::new();
    for f in files {
        for line in read_lines(&f)? {
            let s = line.trim();
            if !s.is_empty() && !exclude.contains(s) {
                distinct.insert(s.to_owned());
            }
        }
    }
    if distinct.len() < n {
        return Err(LaseError::bad_file(
            train_dir,
            format!(
                "only {} distinct English sentences, {n} distractors asked for",
                distinct.len()
            ),
        ));
    }
    // BTreeSet order is deterministic; take an even spread rather than one alphabet range.
    let all: Vec<String> = distinct.into_iter().collect();
    let step = all.len() as f64 / n as f64;
    Ok((0..n)
        .map(|i| all[(i as f64 * step) as usize].clone())
        .collect())
}

/// Runs the task for `langs` (FLORES codes; default: es, fr, ru, zh as LaBSE's UN task).
pub fn evaluate(
    encoder: &SentenceEncoder,
    data: BenchmarkData<'_>,
    langs: Option<&[String]>,
    options: &EncodeOptions,
    config: &PoolConfig,
    progress: bool,
) -> Result<BTreeMap<String, PoolScores>> {
    let flores = data.flores_devtest();
    let langs: Vec<String> = match langs {
        Some(ls) => super::select_languages(
            super::flores::languages(&flores)?,
            Some(ls),
            &flores,
            "FLORES devtest file",
        )?,
        None => ["spa_Latn", "fra_Latn", "rus_Cyrl", "zho_Hans"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let dim = encoder.dim();
    let english = super::read_test_lines(flores.join("eng_Latn.devtest"))?;
    let exclude: HashSet<String> = english.iter().map(|s| s.trim().to_owned()).collect();
    let distractors =
        english_distractors(&data.english_training_text(), &exclude, config.distractors)?;
    let mut pool = english.clone();
    pool.extend(distractors);
    let pool_vectors = embed_unit_vectors(encoder, &pool, options, "pool (English)", progress)?;
    let candidates = MatrixView::new(&pool_vectors, pool.len(), dim)?;
    let gold: Vec<usize> = (0..english.len()).collect();
    let mut out = BTreeMap::new();
    for lang in langs.iter().filter(|l| l.as_str() != "eng_Latn") {
        let path = flores.join(format!("{lang}.devtest"));
        let sentences = super::read_test_lines(&path)?;
        // Line i's gold is English line i.
        super::check_aligned(&path, sentences.len(), "eng_Latn.devtest", english.len())?;
        let v = embed_unit_vectors(encoder, &sentences, options, lang, progress)?;
        let queries = MatrixView::new(&v, sentences.len(), dim)?;
        out.insert(
            format!("{lang}->eng"),
            PoolScores {
                queries: sentences.len(),
                candidates: pool.len(),
                p_at_1: p_at_1_in_pool(&queries, &candidates, &gold)?,
            },
        );
    }
    Ok(out)
}

/// `lase eval --suite pool`: FLORES queries retrieved among the gold English sentences
/// plus English distractors.
pub struct PoolSuite;

impl Suite for PoolSuite {
    fn name(&self) -> &'static str {
        "pool"
    }

    fn run(&self, input: &SuiteInput<'_>) -> Result<SuiteOutcome> {
        let config = PoolConfig::default();
        let r = evaluate(
            input.encoder,
            input.data,
            input.langs,
            input.options,
            &config,
            input.progress,
        )?;
        let mut markdown = String::from(
            "## Large-pool retrieval (P@1 %, FLORES queries among 1,012 gold + distractor English sentences)\n\n| direction | candidates | P@1 |\n| --- | ---: | ---: |\n",
        );
        let mut summary = Vec::new();
        for (k, v) in &r {
            summary.push(format!(
                "pool {k}: P@1 {:.1} among {} candidates",
                100.0 * v.p_at_1,
                v.candidates
            ));
            markdown += &format!("| {k} | {} | {:.1} |\n", v.candidates, 100.0 * v.p_at_1);
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
            title: "Large-pool retrieval: P@1 (%)".into(),
            y_label: "P@1 %".into(),
            bars: field_bars(json, "p_at_1", 100.0),
        })
    }
}

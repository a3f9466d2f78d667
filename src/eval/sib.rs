//! Zero-shot cross-lingual topic classification on SIB-200 (Adelani et al. 2023; 7 topics,
//! 701 train / 99 dev / 204 test sentences per language, parallel across languages): a
//! logistic-regression classifier is trained on English sentence vectors and tested on
//! every other language's test split, averaged over several seeds.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tch::{Device, Kind, Tensor, nn, nn::OptimizerConfig};

use super::embed_unit_vectors;
use super::plot::{BarPanel, number_bars};
use super::suite::{Suite, SuiteInput, SuiteOutcome, to_json};
use crate::error::{LaseError, Result};
use crate::inference::EncodeOptions;
use crate::io::text::read_lines;
use crate::model::SentenceEncoder;

/// Training of the probe.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassifierConfig {
    /// Seeds averaged over.
    pub seeds: u64,
    /// Full-batch Adam steps.
    pub steps: usize,
    pub learning_rate: f64,
    pub weight_decay: f64,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        Self {
            seeds: 5,
            steps: 300,
            learning_rate: 1e-2,
            weight_decay: 1e-4,
        }
    }
}

/// One split: label indices and sentences.
#[derive(Clone, Debug)]
pub struct SibSplit {
    pub labels: Vec<i64>,
    pub texts: Vec<String>,
}

/// The label names, one per line of `labels.txt`.
pub fn label_names(dir: &Path) -> Result<Vec<String>> {
    Ok(read_lines(dir.join("labels.txt"))?
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .collect())
}

/// Reads `annotated/<lang>/<split>.tsv.gz` (header `index_id, category, text`).
pub fn load_split(dir: &Path, lang: &str, split: &str, labels: &[String]) -> Result<SibSplit> {
    let path = dir
        .join("annotated")
        .join(lang)
        .join(format!("{split}.tsv.gz"));
    let lines = read_lines(&path)?;
    let mut out = SibSplit {
        labels: vec![],
        texts: vec![],
    };
    for (i, line) in lines.iter().enumerate().skip(1) {
        let mut f = line.splitn(3, '\t');
        let (_, category, text) = (f.next(), f.next(), f.next());
        let (Some(category), Some(text)) = (category, text) else {
            return Err(LaseError::bad_line(
                &path,
                i + 1,
                "expected index_id<TAB>category<TAB>text",
            ));
        };
        let label = labels.iter().position(|l| l == category).ok_or_else(|| {
            LaseError::bad_line(&path, i + 1, format!("unknown category {category:?}"))
        })?;
        out.labels.push(label as i64);
        out.texts.push(text.to_owned());
    }
    Ok(out)
}

/// Trains a softmax classifier on `x` [n, d] / `y` [n] and returns its accuracy on each
/// test set, for one seed.
pub fn train_and_test(
    x: &Tensor,
    y: &Tensor,
    tests: &[(&Tensor, &Tensor)],
    classes: i64,
    seed: u64,
    config: &ClassifierConfig,
) -> Result<Vec<f64>> {
    tch::manual_seed(seed as i64);
    let vs = nn::VarStore::new(Device::Cpu);
    let probe = nn::linear(vs.root(), x.size()[1], classes, Default::default());
    let mut opt = nn::AdamW {
        wd: config.weight_decay,
        ..Default::default()
    }
    .build(&vs, config.learning_rate)?;
    for _ in 0..config.steps {
        let loss = x.apply(&probe).cross_entropy_for_logits(y);
        opt.backward_step(&loss);
    }
    let _guard = tch::no_grad_guard();
    Ok(tests
        .iter()
        .map(|(tx, ty)| {
            tx.apply(&probe)
                .argmax(-1, false)
                .eq_tensor(ty)
                .to_kind(Kind::Double)
                .mean(Kind::Double)
                .double_value(&[])
        })
        .collect())
}

/// SIB-200 results: mean test accuracy (percent) per language and overall.
#[derive(Clone, Debug, Serialize)]
pub struct SibReport {
    pub config: ClassifierConfig,
    pub accuracy: BTreeMap<String, f64>,
    pub mean_accuracy: f64,
    pub english_accuracy: f64,
}

/// Trains on English (`eng_Latn` train split) and tests on `langs` (all by default).
pub fn evaluate(
    encoder: &SentenceEncoder,
    dir: &Path,
    langs: Option<&[String]>,
    options: &EncodeOptions,
    config: &ClassifierConfig,
    progress: bool,
) -> Result<SibReport> {
    let labels = label_names(dir)?;
    let mut available: Vec<String> = std::fs::read_dir(dir.join("annotated"))
        .map_err(|e| LaseError::io(dir.join("annotated"), e))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    available.sort();
    let chosen = super::select_languages(available, langs, dir, "SIB-200 folder")?;
    let dim = encoder.dim() as i64;
    let embed = |split: &SibSplit, label: &str| -> Result<(Tensor, Tensor)> {
        let v = embed_unit_vectors(encoder, &split.texts, options, label, progress)?;
        let n = split.texts.len() as i64;
        Ok((
            Tensor::from_slice(&v).view([n, dim]),
            Tensor::from_slice(&split.labels),
        ))
    };
    let (train_x, train_y) = embed(
        &load_split(dir, "eng_Latn", "train", &labels)?,
        "sib eng train",
    )?;
    let mut tests = Vec::new();
    let mut names = vec!["eng_Latn".to_string()];
    tests.push(embed(
        &load_split(dir, "eng_Latn", "test", &labels)?,
        "sib eng test",
    )?);
    for lang in chosen.iter().filter(|l| *l != "eng_Latn") {
        tests.push(embed(
            &load_split(dir, lang, "test", &labels)?,
            &format!("sib {lang}"),
        )?);
        names.push(lang.clone());
    }
    let refs: Vec<(&Tensor, &Tensor)> = tests.iter().map(|(x, y)| (x, y)).collect();
    let mut sums = vec![0.0; refs.len()];
    for seed in 0..config.seeds.max(1) {
        let acc = train_and_test(&train_x, &train_y, &refs, labels.len() as i64, seed, config)?;
        for (s, a) in sums.iter_mut().zip(acc) {
            *s += a;
        }
    }
    let seeds = config.seeds.max(1) as f64;
    let accuracy: BTreeMap<String, f64> = names
        .into_iter()
        .zip(sums)
        .map(|(n, s)| (n, 100.0 * s / seeds))
        .collect();
    let others: Vec<f64> = accuracy
        .iter()
        .filter(|(k, _)| *k != "eng_Latn")
        .map(|(_, v)| *v)
        .collect();
    Ok(SibReport {
        config: config.clone(),
        english_accuracy: accuracy["eng_Latn"],
        mean_accuracy: others.iter().sum::<f64>() / others.len().max(1) as f64,
        accuracy,
    })
}

/// `lase eval --suite sib`: a probe trained on English SIB-200, tested zero-shot on
/// every other language.
pub struct SibSuite;

impl Suite for SibSuite {
    fn name(&self) -> &'static str {
        "sib"
    }

    fn run(&self, input: &SuiteInput<'_>) -> Result<SuiteOutcome> {
        let started = Instant::now();
        let config = ClassifierConfig::default();
        let r = evaluate(
            input.encoder,
            &input.data.sib200(),
            input.langs,
            input.options,
            &config,
            input.progress,
        )?;
        let summary = vec![format!(
            "sib: trained on English ({:.1}% on English test), zero-shot mean accuracy over {} languages {:.1}% ({} seeds); {:.0} s",
            r.english_accuracy,
            r.accuracy.len() - 1,
            r.mean_accuracy,
            config.seeds,
            started.elapsed().as_secs_f64()
        )];
        let mut markdown = String::from(
            "## SIB-200 zero-shot topic classification (accuracy %, trained on English)\n\n| language | accuracy |\n| --- | ---: |\n",
        );
        for (k, v) in &r.accuracy {
            markdown += &format!("| {k} | {v:.1} |\n");
        }
        markdown += &format!(
            "| **mean (non-English)** | **{:.1}** |\n\n",
            r.mean_accuracy
        );
        Ok(SuiteOutcome {
            json: to_json(self, &r)?,
            markdown,
            summary,
        })
    }

    fn panel(&self, json: &Value) -> Option<BarPanel> {
        Some(BarPanel {
            title: "SIB-200 zero-shot: accuracy (%), probe trained on English".into(),
            y_label: "accuracy %".into(),
            bars: number_bars(json.get("accuracy"), 1.0),
        })
    }
}

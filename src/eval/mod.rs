//! Evaluation on the field's benchmarks. Metrics take embeddings (so each can be checked
//! without an encoder); suites read the test data as it is shipped and embed it.

pub mod benchmark_data;
pub mod bitext;
pub mod bitext_retrieval;
pub mod bucc;
pub mod flores;
pub mod large_pool;
pub mod leakage;
pub mod plot;
pub mod registry;
pub mod sib;
pub mod spearman;
pub mod sts;
pub mod suite;
pub mod tatoeba;

pub use benchmark_data::BenchmarkData;
pub use bitext_retrieval::{RetrievalScores, bitext_retrieval};
pub use registry::{EvalReport, SUITES, run_suites};
pub use suite::{Suite, SuiteInput, SuiteOutcome};

use std::path::Path;

use crate::error::{LaseError, Result};
use crate::inference::EncodeOptions;
use crate::inference::embed_with_progress;
use crate::mine::normalize_rows;
use crate::model::SentenceEncoder;

/// The languages a suite evaluates: all of `available`, or those the user's `wanted` codes
/// name in lase's one code scheme ([`crate::lang::resolve`]: `de`, `deu` and `deu_Latn`
/// all name FLORES's `deu_Latn`); an invalid code or none available is an error naming
/// `dir`.
pub fn select_languages(
    available: Vec<String>,
    wanted: Option<&[String]>,
    dir: &Path,
    what: &str,
) -> Result<Vec<String>> {
    match wanted {
        None => Ok(available),
        Some(ls) => crate::lang::resolve(ls, &available, None, what)
            .map_err(|e| LaseError::bad_file(dir, e.to_string())),
    }
}

/// A test set's lines (one sentence each, empty lines kept: they hold a row's place), or an
/// error naming the file if it has none: a retrieval score over no sentence means nothing.
pub fn read_test_lines(path: impl AsRef<Path>) -> Result<Vec<String>> {
    let path = path.as_ref();
    let lines = crate::io::text::read_lines(path)?;
    if lines.is_empty() {
        return Err(LaseError::bad_file(
            path,
            "empty: a test set needs at least one sentence",
        ));
    }
    Ok(lines)
}

/// Two line-aligned test files (line i of one translates line i of the other) must have as
/// many lines: an error naming `path` and the other file otherwise.
pub fn check_aligned(path: &Path, lines: usize, other: &str, other_lines: usize) -> Result<()> {
    if lines != other_lines {
        return Err(LaseError::bad_file(
            path,
            format!("{lines} lines but {other} has {other_lines}"),
        ));
    }
    Ok(())
}

/// Embeds sentences (progress bar under `label`) as unit vectors, row-major.
pub fn embed_unit_vectors(
    encoder: &SentenceEncoder,
    sentences: &[String],
    options: &EncodeOptions,
    label: &str,
    progress: bool,
) -> Result<Vec<f32>> {
    let mut v = embed_with_progress(encoder, sentences, options, label, progress)?;
    if !encoder.normalizes() {
        normalize_rows(&mut v, encoder.dim());
    }
    Ok(v)
}

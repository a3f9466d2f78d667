//! What an evaluation suite is: each suite file implements [`Suite`] (run it, and say
//! what its result means as a summary, a Markdown section, JSON and a plot panel);
//! [`super::registry`] lists them.

use serde::Serialize;
use serde_json::Value;

use super::benchmark_data::BenchmarkData;
use super::plot::BarPanel;
use crate::error::{LaseError, Result};
use crate::inference::EncodeOptions;
use crate::model::SentenceEncoder;

/// What every suite is given.
#[derive(Clone, Copy)]
pub struct SuiteInput<'a> {
    pub encoder: &'a SentenceEncoder,
    pub data: BenchmarkData<'a>,
    /// The languages asked for (`--langs`), in any of lase's code forms; `None` = all.
    pub langs: Option<&'a [String]>,
    /// The user's own test-set folders (`--bitext`), for the bitext suite.
    pub bitext: &'a [std::path::PathBuf],
    pub options: &'a EncodeOptions,
    pub progress: bool,
}

/// What one suite produced.
#[derive(Clone, Debug)]
pub struct SuiteOutcome {
    /// The result as `lase eval --json` stores it under the suite's name.
    pub json: Value,
    /// The suite's section of `lase eval --report` (a heading and a table).
    pub markdown: String,
    /// Lines for the terminal, each complete.
    pub summary: Vec<String>,
}

/// One benchmark suite.
pub trait Suite: Sync {
    /// The name `--suite` takes and the key of its JSON.
    fn name(&self) -> &'static str;

    /// Embeds the suite's data with `input.encoder` and scores it.
    fn run(&self, input: &SuiteInput<'_>) -> Result<SuiteOutcome>;

    /// The suite's bar chart, from its own JSON (also one read back from a file).
    fn panel(&self, json: &Value) -> Option<BarPanel>;
}

/// A suite's result as JSON; a value JSON cannot hold is an error naming the suite.
pub fn to_json<T: Serialize>(suite: &dyn Suite, result: &T) -> Result<Value> {
    serde_json::to_value(result).map_err(|e| {
        LaseError::InvalidArgument(format!(
            "{}: the result cannot be stored as JSON: {e}",
            suite.name()
        ))
    })
}

//! The suites `lase eval --suite` knows, and running several into one report. Adding a
//! suite is one new file in `eval/` implementing [`Suite`] and one line in [`SUITES`].

use std::path::Path;

use serde_json::{Map, Value};

use super::plot::BarPanel;
use super::suite::{Suite, SuiteInput};
use crate::error::{LaseError, Result};

/// Every suite, in the order their plot panels are drawn.
pub static SUITES: &[&dyn Suite] = &[
    &super::tatoeba::TatoebaSuite,
    &super::flores::FloresSuite,
    &super::sts::StsSuite,
    &super::sib::SibSuite,
    &super::bucc::BuccSuite,
    &super::large_pool::PoolSuite,
    &super::bitext::BitextSuite,
];

/// The suite called `name`, or an error listing the available ones.
pub fn find(name: &str) -> Result<&'static dyn Suite> {
    SUITES
        .iter()
        .copied()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            let names: Vec<_> = SUITES.iter().map(|s| s.name()).collect();
            LaseError::InvalidArgument(format!(
                "unknown suite {name:?} (available: {})",
                names.join(", ")
            ))
        })
}

/// The results of several suites: JSON keyed by suite, and the Markdown report.
#[derive(Clone, Debug, Default)]
pub struct EvalReport {
    pub json: Map<String, Value>,
    pub markdown: String,
}

/// Runs the suites `names` in order (all names are checked before any runs), handing
/// each summary line to `on_summary` as soon as its suite finishes.
pub fn run_suites(
    names: &[String],
    model: &Path,
    input: &SuiteInput<'_>,
    mut on_summary: impl FnMut(&str),
) -> Result<EvalReport> {
    let suites = names.iter().map(|n| find(n)).collect::<Result<Vec<_>>>()?;
    let mut report = EvalReport {
        json: Map::new(),
        markdown: format!("# Evaluation of {}\n\n", model.display()),
    };
    for suite in suites {
        let outcome = suite.run(input)?;
        for line in &outcome.summary {
            on_summary(line);
        }
        report.markdown += &outcome.markdown;
        report.json.insert(suite.name().into(), outcome.json);
    }
    Ok(report)
}

/// The plot panels of an evaluation's JSON (the object `lase eval --json` writes), in
/// [`SUITES`] order; suites absent from the JSON or with no bars are left out.
pub fn panels(json: &Map<String, Value>) -> Vec<BarPanel> {
    SUITES
        .iter()
        .filter_map(|s| s.panel(json.get(s.name())?))
        .filter(|p| !p.bars.is_empty())
        .collect()
}

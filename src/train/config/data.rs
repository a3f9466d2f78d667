//! Where the training pairs come from and which test sets they must not overlap.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data::{CorpusSource, DevSplitConfig, SamplingConfig};

/// Training data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    pub sources: Vec<CorpusSource>,
    #[serde(default)]
    pub dev: DevSplitConfig,
    #[serde(default)]
    pub sampling: SamplingConfig,
    /// Required: a benchmark data folder (as `lase eval --data-dir`) or a sentence-list
    /// file, whose test sentences drop every training pair with a side equal to one of
    /// them before the dev split; or `false`, written out, to train without the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_test_sets: Option<TestSetExclusion>,
    /// Train on a seeded random sample of this many training pairs (after the dev split):
    /// quick experiments, and teacher caches that cover only what a short run can use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_train_pairs: Option<usize>,
}

/// `data.exclude_test_sets`: where the test sentences are, or `false`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TestSetExclusion {
    /// A benchmark folder or a file of test sentences, one per line.
    Folder(PathBuf),
    /// `false`: no exclusion (an explicit opt-out; `true` is refused).
    Off(bool),
}

impl DataConfig {
    /// The folder or file the training pairs are checked against, if any.
    pub fn exclusion(&self) -> Option<&Path> {
        match &self.exclude_test_sets {
            Some(TestSetExclusion::Folder(p)) => Some(p),
            _ => None,
        }
    }
}

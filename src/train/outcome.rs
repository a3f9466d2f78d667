//! What a run leaves behind to report: [`TrainSummary`] (returned by every run) and
//! [`BestDev`], the record of `best-model/`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::checkpoint::TrainState;
use crate::error::{LaseError, Result};

/// What a run did.
#[derive(Clone, Debug, Serialize)]
pub struct TrainSummary {
    pub steps: u64,
    pub resumed_from: Option<u64>,
    pub first_loss: Option<f64>,
    pub last_loss: Option<f64>,
    pub dev_p_at_1: Option<f64>,
    pub pairs_per_second: f64,
    pub seconds: f64,
    pub model_dir: Option<PathBuf>,
    /// The best dev P@1 of the run so far and where its model is (`best-model/`).
    pub best_dev: Option<BestDev>,
    pub best_model_dir: Option<PathBuf>,
}

/// The step and score of a run's best dev P@1 (`best-model/dev.json`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BestDev {
    pub step: u64,
    pub dev_p_at_1: f64,
}

/// The folder of the best-dev model in a run folder.
pub const BEST_MODEL: &str = "best-model";

impl BestDev {
    /// The best-dev record of the run in `out`, if a complete `best-model/` exists.
    pub fn read(out: &Path) -> Result<Option<Self>> {
        let path = out.join(BEST_MODEL).join("dev.json");
        if !path.is_file() {
            return Ok(None);
        }
        let text = crate::io::text::read_text(&path)?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| LaseError::bad_line(&path, e.line(), e.to_string()))
    }
}

pub(crate) fn summary(
    state: &TrainState,
    resumed_from: Option<u64>,
    first_loss: Option<f64>,
    last_loss: Option<f64>,
    dev_p_at_1: Option<f64>,
    started: Instant,
    model_dir: Option<PathBuf>,
) -> TrainSummary {
    let seconds = started.elapsed().as_secs_f64();
    TrainSummary {
        steps: state.step,
        resumed_from,
        first_loss,
        last_loss,
        dev_p_at_1,
        pairs_per_second: state.pairs_seen as f64 / state.elapsed_seconds.max(seconds).max(1e-9),
        seconds,
        model_dir,
        best_dev: None,
        best_model_dir: None,
    }
}

impl TrainSummary {
    /// The summary with the run's best-dev model, if dev P@1 was evaluated.
    pub(crate) fn with_best(mut self, best: Option<BestDev>, dir: &Path) -> Self {
        self.best_model_dir = best.map(|_| dir.to_path_buf());
        self.best_dev = best;
        self
    }
}

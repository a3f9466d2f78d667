//! A time bound on long work: a server's per-request limit on a search, a training run's
//! time slot (`--time-limit`).

use crate::error::{LaseError, Result};

/// An instant past which work stops, and the bound it came from (for the error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    pub at: std::time::Instant,
    pub bound: std::time::Duration,
}

impl Deadline {
    /// `bound` from now.
    pub fn after(bound: std::time::Duration) -> Self {
        Self {
            at: std::time::Instant::now() + bound,
            bound,
        }
    }

    /// `bound` from `start` (a process's start, so that its set-up counts), or None where
    /// that instant is past what the clock can hold.
    pub fn since(start: std::time::Instant, bound: std::time::Duration) -> Option<Self> {
        Some(Self {
            at: start.checked_add(bound)?,
            bound,
        })
    }

    pub fn passed(&self) -> bool {
        std::time::Instant::now() >= self.at
    }

    /// `Err(DeadlineExceeded)` once passed.
    pub fn check(&self) -> Result<()> {
        if self.passed() {
            Err(LaseError::DeadlineExceeded(self.bound))
        } else {
            Ok(())
        }
    }
}

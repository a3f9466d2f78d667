//! The library's error type: every failure names what it was working on (a file and
//! line for bad input, a file for a bad model folder), so users can act on it.

use std::path::{Path, PathBuf};

/// Errors raised by the lase library.
#[derive(Debug, thiserror::Error)]
pub enum LaseError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A line of an input file is unusable (invalid UTF-8, misaligned, malformed).
    #[error("{path}:{line}: {message}")]
    BadLine {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A file is not in the format it should be (JSON, safetensors, npy, ...).
    #[error("{path}: {message}")]
    BadFile { path: PathBuf, message: String },
    /// The model's configuration or weights are inconsistent.
    #[error("model: {0}")]
    Model(String),
    /// A caller passed arguments that cannot work together.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The tokenizer failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// Work stopped at its time limit (a server's per-request bound).
    #[error("stopped at its time limit of {0:?}")]
    DeadlineExceeded(std::time::Duration),
    /// libtorch reported an error.
    #[error("torch: {0}")]
    Torch(#[from] tch::TchError),
}

/// Result with [`LaseError`].
pub type Result<T> = std::result::Result<T, LaseError>;

impl LaseError {
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    pub fn bad_file(path: impl AsRef<Path>, message: impl Into<String>) -> Self {
        Self::BadFile {
            path: path.as_ref().to_path_buf(),
            message: message.into(),
        }
    }

    pub fn bad_line(path: impl AsRef<Path>, line: usize, message: impl Into<String>) -> Self {
        Self::BadLine {
            path: path.as_ref().to_path_buf(),
            line,
            message: message.into(),
        }
    }
}

//! File formats and safe output: text corpora, `.npy` matrices, safetensors weights,
//! atomic writes.

pub mod atomic;
pub mod checksums;
pub mod npy;
pub mod safetensors;
pub mod text;

use std::path::Path;

use crate::error::{LaseError, Result};

/// Copies the folder `from` (recursively) to `to`, creating `to`.
pub fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| LaseError::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| LaseError::io(from, e))? {
        let entry = entry.map_err(|e| LaseError::io(from, e))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| LaseError::io(&src, e))?;
        }
    }
    Ok(())
}

/// Removes the model card (`README.md`) from a folder copied from another model: it
/// describes that model, not the one derived from it.
pub fn drop_model_card(dir: &Path) -> Result<()> {
    let card = dir.join("README.md");
    match std::fs::remove_file(&card) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LaseError::io(&card, e)),
    }
}

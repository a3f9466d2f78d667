//! File formats and safe output: text corpora, `.npy` matrices, safetensors weights,
//! atomic writes.

pub mod atomic;
pub mod checksums;
pub mod npy;
pub mod safetensors;
pub mod text;

use std::path::Path;

use crate::error::{LaseError, Result};

/// Copies the model folder `from` to `to` as the start of a model derived from it,
/// leaving out the two top-level files that describe `from` itself: its model card
/// (`README.md`) and its checksum manifest (the new folder writes its own).
pub fn copy_model_folder(from: &Path, to: &Path) -> Result<()> {
    copy_dir_leaving_out(from, to, &["README.md", checksums::CHECKSUMS_FILE])
}

/// Copies the folder `from` (recursively) to `to`, creating `to`, without the top-level
/// entries named in `leave_out`.
fn copy_dir_leaving_out(from: &Path, to: &Path, leave_out: &[&str]) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| LaseError::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| LaseError::io(from, e))? {
        let entry = entry.map_err(|e| LaseError::io(from, e))?;
        if leave_out.iter().any(|name| entry.file_name() == *name) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_dir_leaving_out(&src, &dst, &[])?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| LaseError::io(&src, e))?;
        }
    }
    Ok(())
}

/// Every file under `dir` (recursively; a symbolic link to a folder is not followed), as
/// paths relative to `dir` with `/` separators, sorted. A name that is not UTF-8 is an
/// error naming it.
pub fn files_under(dir: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    list_files(dir, dir, &mut found)?;
    found.sort();
    Ok(found)
}

fn list_files(root: &Path, dir: &Path, found: &mut Vec<String>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| LaseError::io(dir, e))? {
        let entry = entry.map_err(|e| LaseError::io(dir, e))?;
        let path = entry.path();
        // The entry's own type: a symbolic link to a folder is not followed (no cycles).
        let kind = entry.file_type().map_err(|e| LaseError::io(&path, e))?;
        if kind.is_dir() {
            list_files(root, &path, found)?;
        } else {
            let rel = path.strip_prefix(root).expect("listed under root");
            let parts = rel
                .components()
                .map(|c| c.as_os_str().to_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| {
                    LaseError::bad_file(&path, "a file name that is not UTF-8 cannot be listed")
                })?;
            found.push(parts.join("/"));
        }
    }
    Ok(())
}

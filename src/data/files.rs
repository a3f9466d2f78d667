//! Small helpers the corpus readers share: folder listings in a stable order, file names,
//! and language filters matched against codes found in file names.

use std::path::{Path, PathBuf};

use crate::error::{LaseError, Result};

/// Whether the (normalised) filter code `wanted` names the data's code `code`.
pub(crate) fn names(wanted: &str, code: &crate::lang::LanguageCode) -> bool {
    crate::lang::LanguageCode::parse(wanted).is_ok_and(|(w, _)| w.names(code))
}

/// The entries of `dir`, sorted (the order a reader visits files in).
pub(crate) fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| LaseError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    Ok(entries)
}

/// The last component of `path` as text (empty when not UTF-8).
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned()
}

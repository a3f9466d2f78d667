//! SHA-256 checksums of a folder's files, in `sha256sum`'s format (`<hex>  <path>`), so a
//! model folder lase wrote can be checked by lase on load and by `sha256sum -c` anywhere.
//!
//! safetensors and JSON carry no checksum of their own: a flipped byte inside a weight
//! loads as a slightly different model. lase writes [`CHECKSUMS_FILE`] into every model
//! folder it saves and checks it on load; a folder without one (a hub download, a folder
//! from another tool) loads unchecked, as before. The model card (`README.md` at the top)
//! is left out, so editing the card does not invalidate the weights' checksums.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;

/// The manifest's file name inside the folder.
pub const CHECKSUMS_FILE: &str = "checksums.sha256";

/// Files at the top of the folder the manifest never covers.
const NOT_COVERED: &[&str] = &[CHECKSUMS_FILE, "README.md"];

/// Writes `dir/checksums.sha256` for every file under `dir` (sorted, `/`-separated paths
/// relative to `dir`), atomically. Returns how many files it covers.
pub fn write(dir: &Path) -> Result<usize> {
    let mut files = crate::io::files_under(dir)?; // sorted
    files.retain(|rel| !NOT_COVERED.contains(&rel.as_str()));
    let mut manifest = String::new();
    for rel in &files {
        let digest = sha256_of(&dir.join(rel))?;
        manifest.push_str(&format!("{digest}  {rel}\n"));
    }
    write_atomic(dir.join(CHECKSUMS_FILE), manifest.as_bytes())?;
    Ok(files.len())
}

/// Checks every file `dir/checksums.sha256` lists. `Ok(None)` when the folder has no
/// manifest; `Ok(Some(n))` when all `n` listed files match. A listed file that is missing
/// or whose SHA-256 differs, or a malformed manifest line, is an error naming the file
/// (and the manifest's line).
pub fn verify(dir: &Path) -> Result<Option<usize>> {
    let manifest_path = dir.join(CHECKSUMS_FILE);
    match std::fs::metadata(&manifest_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LaseError::io(&manifest_path, e)),
        Ok(_) => {}
    }
    let text = crate::io::text::read_text(&manifest_path)?;
    if text.trim().is_empty() {
        // An emptied manifest would turn the check off without a word.
        return Err(LaseError::bad_file(
            &manifest_path,
            "empty: it lists no file (delete it to load the folder unchecked)",
        ));
    }
    let mut checked = 0;
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (expected, rel) = parse_line(line).ok_or_else(|| {
            LaseError::bad_line(
                &manifest_path,
                line_no,
                "expected `<64 hex digits>  <path>`",
            )
        })?;
        let path = dir.join(rel);
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(LaseError::bad_file(
                    &path,
                    format!(
                        "listed in {} line {line_no} but not a file",
                        manifest_path.display()
                    ),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LaseError::bad_file(
                    &path,
                    format!(
                        "listed in {} line {line_no} but missing",
                        manifest_path.display()
                    ),
                ));
            }
            Err(e) => return Err(LaseError::io(&path, e)),
        }
        let actual = sha256_of(&path)?;
        if actual != expected {
            return Err(LaseError::bad_file(
                &path,
                format!(
                    "SHA-256 {actual} does not match {expected} in {} line {line_no}: the file \
                     was damaged or changed after the folder was written (changed on purpose: \
                     delete {CHECKSUMS_FILE}, or write it anew with sha256sum in the folder)",
                    manifest_path.display()
                ),
            ));
        }
        checked += 1;
    }
    Ok(Some(checked))
}

/// `<64 lowercase hex>  <relative path>` (sha256sum's text mode; `*` binary mode too),
/// with no `..` or absolute path.
fn parse_line(line: &str) -> Option<(String, &str)> {
    let (hex, rest) = line.split_at_checked(64)?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let rel = rest
        .strip_prefix("  ")
        .or_else(|| rest.strip_prefix(" *"))?;
    let safe = !rel.is_empty()
        && !rel.starts_with('/')
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    safe.then(|| (hex.to_ascii_lowercase(), rel))
}

fn sha256_of(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(|e| LaseError::io(path, e))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| LaseError::io(path, e))?;
    Ok(format!("{:x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), b"{\"a\": 1}").unwrap();
        std::fs::create_dir(dir.path().join("2_Dense")).unwrap();
        std::fs::write(dir.path().join("2_Dense/model.safetensors"), [7u8; 300]).unwrap();
        std::fs::write(dir.path().join("README.md"), b"# card").unwrap();
        dir
    }

    #[test]
    fn written_manifest_is_sha256sum_format_and_verifies() {
        let dir = folder();
        assert_eq!(write(dir.path()).unwrap(), 2);
        let text = std::fs::read_to_string(dir.path().join(CHECKSUMS_FILE)).unwrap();
        // As `sha256sum 2_Dense/model.safetensors` prints it (300 bytes of 7, computed by
        // Python's hashlib), sorted first ('2' < 'c').
        assert_eq!(
            text.lines().next().unwrap(),
            "d677143e1431e8bb62b612cc7bb2c06a5eabe3d673f93a47113f2621aabaf421  2_Dense/model.safetensors"
        );
        assert!(!text.contains("README.md"));
        assert_eq!(verify(dir.path()).unwrap(), Some(2));
        // The card is not covered: editing it keeps the folder valid.
        std::fs::write(dir.path().join("README.md"), b"# another card").unwrap();
        assert_eq!(verify(dir.path()).unwrap(), Some(2));
    }

    #[test]
    fn a_flipped_byte_or_a_missing_file_is_named() {
        let dir = folder();
        write(dir.path()).unwrap();
        let weights = dir.path().join("2_Dense/model.safetensors");
        let mut bytes = std::fs::read(&weights).unwrap();
        bytes[150] ^= 0x01;
        std::fs::write(&weights, &bytes).unwrap();
        let e = verify(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("2_Dense/model.safetensors") && e.contains("line 1"),
            "{e}"
        );
        std::fs::remove_file(&weights).unwrap();
        let e = verify(dir.path()).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
    }

    #[test]
    fn no_manifest_means_unchecked_and_bad_lines_are_refused() {
        let dir = folder();
        assert_eq!(verify(dir.path()).unwrap(), None);
        std::fs::write(dir.path().join(CHECKSUMS_FILE), "\n").unwrap();
        let e = verify(dir.path()).unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
        for bad in [
            "xyz  config.json",
            &format!("{}  ../outside", "0".repeat(64)),
            &format!("{}  /etc/passwd", "0".repeat(64)),
            &format!("{} config.json", "0".repeat(64)),
        ] {
            std::fs::write(dir.path().join(CHECKSUMS_FILE), format!("{bad}\n")).unwrap();
            let e = verify(dir.path()).unwrap_err().to_string();
            assert!(e.contains("checksums.sha256:1:"), "{bad}: {e}");
        }
    }
}

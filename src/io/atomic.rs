//! Atomic file output: write beside the target, flush to disk, then rename over it, so
//! a killed run leaves either the old file or the complete new one, never half of one.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{LaseError, Result};

/// A file being written; it appears at its final path only on [`AtomicFile::commit`].
/// Dropped without commit, the partial file is removed.
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    pub fn create(target: impl AsRef<Path>) -> Result<Self> {
        let target = target.as_ref().to_path_buf();
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(|e| LaseError::io(parent, e))?;
        }
        let name = target
            .file_name()
            .ok_or_else(|| {
                LaseError::InvalidArgument(format!("{} is not a file path", target.display()))
            })?
            .to_string_lossy()
            .into_owned();
        let temp = target.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        let file = File::create(&temp).map_err(|e| LaseError::io(&temp, e))?;
        Ok(Self {
            target,
            temp,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.target
    }

    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("writer present until commit")
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> Result<()> {
        let writer = self.writer.take().expect("writer present until commit");
        let file = writer
            .into_inner()
            .map_err(|e| LaseError::io(&self.temp, e.into_error()))?;
        file.sync_all().map_err(|e| LaseError::io(&self.temp, e))?;
        drop(file);
        fs::rename(&self.temp, &self.target).map_err(|e| LaseError::io(&self.target, e))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(path.as_ref())?;
    f.write_all(bytes)
        .map_err(|e| LaseError::io(path.as_ref(), e))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"hello").unwrap();
        assert!(!target.exists());
        f.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"hello");
    }

    #[test]
    fn dropped_file_leaves_old_content_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        write_atomic(&target, b"old").unwrap();
        {
            let mut f = AtomicFile::create(&target).unwrap();
            f.write_all(b"new, but never committed").unwrap();
        }
        assert_eq!(fs::read(&target).unwrap(), b"old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

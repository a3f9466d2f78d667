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
        // Errors name the file the user asked for, not its temporary sibling.
        let file = File::create(&temp).map_err(|e| LaseError::io(&target, e))?;
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
    /// A failure here (the last buffered bytes not fitting on a full disk, say) removes
    /// the temporary file too.
    pub fn commit(mut self) -> Result<()> {
        let writer = self.writer.take().expect("writer present until commit");
        let committed = writer
            .into_inner()
            .map_err(|e| LaseError::io(&self.target, e.into_error()))
            .and_then(|file| file.sync_all().map_err(|e| LaseError::io(&self.target, e)))
            .and_then(|()| {
                fs::rename(&self.temp, &self.target).map_err(|e| LaseError::io(&self.target, e))
            });
        if committed.is_err() {
            let _ = fs::remove_file(&self.temp);
        }
        committed
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

/// Builds the folder `target` atomically: `build` fills a fresh sibling folder
/// (`.NAME.tmp-PID`), which then takes `target`'s place in one step ([`replace_dir`]).
/// If `build` fails, the sibling is removed and `target`, if it existed, is untouched.
pub fn write_dir_atomic(target: &Path, build: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let name = target
        .file_name()
        .ok_or_else(|| {
            LaseError::InvalidArgument(format!("{} is not a folder path", target.display()))
        })?
        .to_string_lossy()
        .into_owned();
    let temp = target.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    if temp.exists() {
        fs::remove_dir_all(&temp).map_err(|e| LaseError::io(&temp, e))?;
    }
    fs::create_dir_all(&temp).map_err(|e| LaseError::io(target, e))?;
    let built = build(&temp).and_then(|()| replace_dir(&temp, target));
    if built.is_err() {
        let _ = fs::remove_dir_all(&temp);
    }
    built
}

/// Moves the complete folder `built` to `target`, replacing what is there. Where the
/// file system can exchange two names in one step (Linux `renameat2(RENAME_EXCHANGE)`),
/// no instant exists without a complete `target`; elsewhere the old folder is moved
/// aside first (`.NAME.old-PID`) and removed after.
pub fn replace_dir(built: &Path, target: &Path) -> Result<()> {
    if fs::symlink_metadata(target).is_err() {
        return fs::rename(built, target).map_err(|e| LaseError::io(target, e));
    }
    #[cfg(target_os = "linux")]
    if exchange(built, target).is_ok() {
        // `built` now names the old folder.
        return fs::remove_dir_all(built).map_err(|e| LaseError::io(built, e));
    }
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let aside = target.with_file_name(format!(".{name}.old-{}", std::process::id()));
    if aside.exists() {
        fs::remove_dir_all(&aside).map_err(|e| LaseError::io(&aside, e))?;
    }
    fs::rename(target, &aside).map_err(|e| LaseError::io(target, e))?;
    if let Err(e) = fs::rename(built, target) {
        let _ = fs::rename(&aside, target);
        return Err(LaseError::io(target, e));
    }
    fs::remove_dir_all(&aside).map_err(|e| LaseError::io(&aside, e))
}

#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both are valid NUL-terminated paths; renameat2 does not keep them.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_replaced_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("model");
        write_dir_atomic(&target, |d| write_atomic(d.join("a"), b"old")).unwrap();
        // A build that fails half-way leaves the old folder and no temporary one.
        let err = write_dir_atomic(&target, |d| {
            write_atomic(d.join("a"), b"new")?;
            Err(LaseError::InvalidArgument("disk full".into()))
        })
        .unwrap_err();
        assert!(err.to_string().contains("disk full"));
        assert_eq!(fs::read(target.join("a")).unwrap(), b"old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        // A build that succeeds replaces every file, and drops files the old one had.
        write_atomic(target.join("stale"), b"x").unwrap();
        write_dir_atomic(&target, |d| write_atomic(d.join("a"), b"new")).unwrap();
        assert_eq!(fs::read(target.join("a")).unwrap(), b"new");
        assert!(!target.join("stale").exists());
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("model")]);
    }

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

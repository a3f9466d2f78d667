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
        create_parent(&target)?;
        let name = target
            .file_name()
            .ok_or_else(|| {
                LaseError::InvalidArgument(format!("{} is not a file path", target.display()))
            })?
            .to_string_lossy()
            .into_owned();
        if target.is_dir() {
            return Err(LaseError::InvalidArgument(format!(
                "{} is a folder: name a file to write",
                target.display()
            )));
        }
        remove_stale_temps(&target);
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

/// Checks, before long work, that `target` can be written where it is named: its parent
/// folders are created and a temporary sibling is opened and removed at once, so a bad
/// output path fails in the first second, not after the work.
pub fn check_writable(target: impl AsRef<Path>) -> Result<()> {
    drop(AtomicFile::create(target)?);
    Ok(())
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
    let temp = fresh_sibling_dir(target)?;
    let built = build(&temp).and_then(|()| replace_dir(&temp, target));
    if built.is_err() {
        let _ = fs::remove_dir_all(&temp);
    }
    built
}

/// [`check_writable`] for a folder that [`write_dir_atomic`] will build: what is at
/// `target` may be replaced (nothing, or a folder of an earlier run), its parents are
/// created, and its temporary sibling folder is made and removed at once.
pub fn check_dir_writable(target: &Path) -> Result<()> {
    let temp = fresh_sibling_dir(target)?;
    fs::remove_dir_all(&temp).map_err(|e| LaseError::io(&temp, e))
}

/// The empty sibling folder (`.NAME.tmp-PID`) in which [`write_dir_atomic`] builds
/// `target`, after the checks that what is at `target` may be replaced.
fn fresh_sibling_dir(target: &Path) -> Result<PathBuf> {
    let name = target
        .file_name()
        .ok_or_else(|| {
            LaseError::InvalidArgument(format!("{} is not a folder path", target.display()))
        })?
        .to_string_lossy()
        .into_owned();
    // A file (or anything but a folder) at `target` is the user's, not a model folder
    // of an earlier run: never swap it away.
    if let Ok(meta) = fs::symlink_metadata(target)
        && !meta.is_dir()
    {
        let what = if meta.is_symlink() {
            "is a symbolic link (it would be replaced, not followed): name the folder itself"
        } else {
            "exists and is not a folder: name a new or existing folder to write"
        };
        return Err(LaseError::InvalidArgument(format!(
            "{} {what}",
            target.display()
        )));
    }
    create_parent(target)?;
    remove_stale_temps(target);
    let temp = target.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    if temp.exists() {
        fs::remove_dir_all(&temp).map_err(|e| LaseError::io(&temp, e))?;
    }
    fs::create_dir_all(&temp).map_err(|e| LaseError::io(target, e))?;
    Ok(temp)
}

/// Creates `target`'s parent folders; a parent that exists as a file is named as such
/// (`create_dir_all` would say only "File exists").
fn create_parent(target: &Path) -> Result<()> {
    let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    if let Some(file) = parent.ancestors().find(|a| a.is_file()) {
        return Err(LaseError::InvalidArgument(format!(
            "cannot write {}: {} is a file, not a folder",
            target.display(),
            file.display()
        )));
    }
    fs::create_dir_all(parent).map_err(|e| LaseError::io(parent, e))
}

/// Removes what runs that were killed (SIGINT, SIGKILL: no destructor runs) left beside
/// `target`: `.NAME.tmp-PID` and `.NAME.old-PID` whose process no longer exists on this
/// machine and that nothing has written for [`STALE_AFTER`] (a job on another machine
/// sharing the folder has PIDs this one cannot see). A `.NAME.old-PID` is a complete
/// earlier folder, moved aside by a [`replace_dir`] killed before its second rename: if
/// `target` is missing it is put back, not removed. Best effort: anything it cannot
/// read, rename or remove stays.
fn remove_stale_temps(target: &Path) {
    let (Some(name), Some(dir)) = (target.file_name(), target.parent()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let name = name.to_string_lossy();
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        let found = [".tmp-", ".old-"].iter().find_map(|kind| {
            file_name
                .strip_prefix(&format!(".{name}{kind}"))
                .and_then(|pid| pid.parse::<u32>().ok())
                .map(|pid| (*kind, pid))
        });
        let untouched = || {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= STALE_AFTER)
        };
        if let Some((kind, pid)) = found
            && pid != std::process::id()
            && !process_exists(pid)
            && untouched()
        {
            let path = entry.path();
            if kind == ".old-" && fs::symlink_metadata(target).is_err() {
                let _ = fs::rename(&path, target);
                continue;
            }
            let _ = if path.is_dir() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
        }
    }
}

/// How long a killed run's leftovers must have gone unwritten before they are removed.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Whether a process `pid` exists; where that cannot be told, it is assumed to (so
/// nothing of a running process is removed).
fn process_exists(pid: u32) -> bool {
    #[cfg(unix)]
    {
        // Not a PID a process can have (and kill(-1) would address every process).
        let Ok(pid) = i32::try_from(pid) else {
            return false;
        };
        if pid <= 0 {
            return false;
        }
        // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// `p` as an absolute path without symbolic links, `.` or `..`, whether or not it exists:
/// its longest existing prefix is canonicalised (links followed) and the rest, which
/// holds no link since it does not exist, is applied by text.
fn resolve(p: &Path) -> PathBuf {
    use std::path::Component;
    let absolute = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| p.to_path_buf(), |d| d.join(p))
    };
    let parts: Vec<Component> = absolute.components().collect();
    for cut in (1..=parts.len()).rev() {
        let prefix: PathBuf = parts[..cut].iter().collect();
        if let Ok(mut base) = prefix.canonicalize() {
            for part in &parts[cut..] {
                match part {
                    Component::ParentDir => {
                        base.pop();
                    }
                    Component::CurDir => {}
                    other => base.push(other.as_os_str()),
                }
            }
            return base;
        }
    }
    absolute
}

/// Refuses an output path that is one of the inputs, or holds or lies inside one: a
/// model folder rewritten in place would lose the files the writer does not produce
/// (its model card), and a folder written inside its own input would be read back.
pub fn check_output_apart(output: &Path, inputs: &[&Path]) -> Result<()> {
    let out = resolve(output);
    for input in inputs {
        let inp = resolve(input);
        if out.starts_with(&inp) || inp.starts_with(&out) {
            return Err(LaseError::InvalidArgument(format!(
                "--output {} is, holds or lies inside the input {}: write to another folder",
                output.display(),
                input.display()
            )));
        }
    }
    Ok(())
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
    fn a_file_in_the_way_of_a_folder_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("notes.txt");
        fs::write(&target, b"mine").unwrap();
        let err = write_dir_atomic(&target, |d| write_atomic(d.join("a"), b"x")).unwrap_err();
        assert!(err.to_string().contains("is not a folder"), "{err}");
        assert_eq!(fs::read(&target).unwrap(), b"mine");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_file_where_a_parent_folder_should_be_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("good.txt");
        fs::write(&file, b"x").unwrap();
        let err = write_atomic(file.join("out.npy"), b"y")
            .unwrap_err()
            .to_string();
        assert!(err.contains("good.txt is a file, not a folder"), "{err}");
        let err = write_atomic(dir.path(), b"y").unwrap_err().to_string();
        assert!(err.contains("is a folder"), "{err}");
    }

    /// Leftovers of a process that has exited and that nothing wrote for an hour are
    /// removed; those of a live process, of a fresh one, or of another output stay; a
    /// moved-aside complete folder whose target is missing is put back.
    #[test]
    fn what_a_killed_run_left_is_removed_and_a_live_ones_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.npy");
        let mut exited = std::process::Command::new("true").spawn().unwrap();
        let dead = exited.id();
        exited.wait().unwrap();
        let mut running = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let live = running.id();
        let hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        let age = |p: &Path| {
            fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(hours_ago)
                .unwrap()
        };
        let of_dead = dir.path().join(format!(".out.npy.tmp-{dead}"));
        let of_live = dir.path().join(format!(".out.npy.tmp-{live}"));
        let fresh = dir
            .path()
            .join(format!(".out.npy.tmp-{}", dead + 1_000_000));
        let other = dir.path().join(format!(".other.npy.tmp-{dead}"));
        for p in [&of_dead, &of_live, &other] {
            fs::write(p, b"").unwrap();
            age(p);
        }
        fs::write(&fresh, b"").unwrap();
        remove_stale_temps(&target);
        running.kill().unwrap();
        running.wait().unwrap();
        assert!(
            !of_dead.exists(),
            "an exited process's old leftover is removed"
        );
        assert!(of_live.exists(), "a running process's file is kept");
        assert!(fresh.exists(), "a file written within the hour is kept");
        assert!(
            other.exists(),
            "another output's leftovers are its own run's to clear"
        );
        // A folder moved aside by a replace killed between its renames: the only copy.
        let model = dir.path().join("model");
        let aside = dir.path().join(format!(".model.old-{dead}"));
        fs::create_dir(&aside).unwrap();
        fs::write(aside.join("a"), b"old").unwrap();
        fs::File::open(&aside)
            .unwrap()
            .set_modified(hours_ago)
            .unwrap();
        remove_stale_temps(&model);
        assert_eq!(fs::read(model.join("a")).unwrap(), b"old");
        assert!(!aside.exists());
        write_atomic(&target, b"z").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"z");
    }

    #[test]
    fn an_output_that_is_or_holds_or_lies_in_an_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model");
        fs::create_dir(&model).unwrap();
        for out in [
            model.clone(),
            model.join("sub"),
            dir.path().to_path_buf(),
            model.join("..").join("model"),
        ] {
            let err = check_output_apart(&out, &[&model]).unwrap_err().to_string();
            assert!(err.contains("is, holds or lies inside the input"), "{err}");
        }
        // `..` after a folder that does not exist yet still lands on the input.
        let err = check_output_apart(&dir.path().join("new/../model"), &[&model])
            .unwrap_err()
            .to_string();
        assert!(err.contains("is, holds or lies inside the input"), "{err}");
        check_output_apart(&dir.path().join("model-f16"), &[&model]).unwrap();
        check_output_apart(&dir.path().join("new/deeper"), &[&model]).unwrap();
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

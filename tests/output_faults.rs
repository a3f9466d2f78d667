//! Output into a read-only or a full directory (issue 16, fault tests): every command that
//! writes (`embed`, `mine`, `export`, `train`'s checkpoints) fails with an error naming
//! the path, leaves no partial file, and overwrites nothing that was there before.
//!
//! "Read-only": the output folder is chmod 0555 and the command runs as an unprivileged
//! user (uid/gid 65534 when the tests run as root, since root ignores permissions).
//! "Full": the command runs with RLIMIT_FSIZE of a few KiB and SIGXFSZ ignored, so a
//! write past the limit fails with EFBIG, as a write to a full disk fails with ENOSPC:
//! the same error path, with no mount needed.
//! "No space": a real full file system. The command runs in a user and mount namespace
//! (`unshare -Urm`, no privileges needed) where the output folder is a tmpfs just large
//! enough for what it held before (copied in) plus one free page, so the command's
//! output fails with ENOSPC by its second new page. What the folder holds afterwards is copied out of the namespace
//! and compared with what it held before.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

#[derive(Clone, Copy, Debug)]
enum Fault {
    ReadOnly,
    Full,
    NoSpace,
}

/// Every fault, in the order the tests put a command under them.
const FAULTS: [Fault; 3] = [Fault::ReadOnly, Fault::Full, Fault::NoSpace];

const FULL_AT_BYTES: u64 = 4096;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Mounts a tmpfs of `$3` bytes over the folder `$1` (holding a copy of what `$1` held),
/// runs the command after `$3`, and copies what the tmpfs then holds into `$2`.
const NO_SPACE_SCRIPT: &str = r#"
out=$1; seen=$2; size=$3; shift 3
stash=$(mktemp -d) || exit 97
cp -a "$out"/. "$stash"/ && mount -t tmpfs -o "size=$size" tmpfs "$out" \
  && cp -a "$stash"/. "$out"/ || { echo "no-space setup failed" >&2; exit 98; }
"$@"; rc=$?
mkdir -p "$seen" && cp -a "$out"/. "$seen"/ || { echo "no-space copy-out failed" >&2; exit 99; }
rm -rf "$stash"
exit $rc
"#;

/// Bytes a tmpfs needs for `dir`'s files (whole pages each) plus one free page.
fn tmpfs_size_for(dir: &Path) -> u64 {
    const PAGE: u64 = 4096;
    let used: u64 = snapshot(dir)
        .iter()
        .map(|(_, bytes)| (bytes.len() as u64).div_ceil(PAGE) * PAGE)
        .sum();
    used + PAGE
}

/// The folder where a NoSpace run leaves the copy of what its tmpfs held.
fn seen_dir(out_dir: &Path) -> PathBuf {
    out_dir.with_extension("seen-in-namespace")
}

/// `lase ARGS` with `out_dir` a tmpfs full but for one page, in a user and mount namespace.
fn run_with_no_space(out_dir: &Path, args: &[&std::ffi::OsStr]) -> Output {
    let probe = Command::new("unshare").args(["-Urm", "true"]).output();
    assert!(
        probe.as_ref().is_ok_and(|o| o.status.success()),
        "the no-space fault needs unprivileged user namespaces (`unshare -Urm true` failed: {probe:?})"
    );
    let seen = seen_dir(out_dir);
    let _ = std::fs::remove_dir_all(&seen);
    let mut wrapped = Command::new("unshare");
    wrapped
        .args(["-Urm", "sh", "-c", NO_SPACE_SCRIPT, "sh"])
        .arg(out_dir)
        .arg(&seen)
        .arg(tmpfs_size_for(out_dir).to_string())
        .arg(env!("CARGO_BIN_EXE_lase"))
        .args(["--device", "cpu", "--threads", "1"])
        .args(args);
    let out = wrapped.output().unwrap();
    assert!(
        !matches!(out.status.code(), Some(97..=99)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `lase ARGS` under `fault` for the folder `out_dir` (already holding what must survive).
fn run_under(fault: Fault, out_dir: &Path, args: &[&std::ffi::OsStr]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lase"));
    c.args(["--device", "cpu", "--threads", "1"]).args(args);
    match fault {
        Fault::ReadOnly => {
            std::fs::set_permissions(out_dir, std::fs::Permissions::from_mode(0o555)).unwrap();
            if is_root() {
                c.uid(65534).gid(65534);
            }
        }
        Fault::Full => {
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                c.pre_exec(|| {
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    let limit = libc::rlimit {
                        rlim_cur: FULL_AT_BYTES,
                        rlim_max: FULL_AT_BYTES,
                    };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        Fault::NoSpace => return run_with_no_space(out_dir, args),
    }
    let out = c.output().unwrap();
    std::fs::set_permissions(out_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    out
}

/// Every file and folder under `dir` (relative path -> bytes; folders end in `/` with
/// no bytes), hidden ones included.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, found: &mut Vec<(PathBuf, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                // Folders count too: an empty partial folder left behind is a leftover.
                let rel = path.strip_prefix(root).unwrap().join("");
                found.push((rel, Vec::new()));
                walk(root, &path, found);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_path_buf();
                found.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut found = Vec::new();
    walk(dir, dir, &mut found);
    found.sort();
    found
}

/// A world-readable work folder (the read-only runs use another uid).
fn work_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// The folder `out` in `dir`, holding an earlier output `name` of `bytes`; returns the
/// folder and that file.
fn earlier_output(dir: &Path, name: &str, bytes: &[u8]) -> (PathBuf, PathBuf) {
    let out_dir = dir.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let output = out_dir.join(name);
    std::fs::write(&output, bytes).unwrap();
    (out_dir, output)
}

/// 400 short lines: 400 x 16 float32 rows are 25.6 kB of .npy, past the "full" limit.
fn sentences(dir: &Path, name: &str, words: &[&str]) -> PathBuf {
    let text: String = (0..400)
        .map(|i| {
            format!(
                "{} {} {}\n",
                words[i % words.len()],
                words[(i / 3) % words.len()],
                i
            )
        })
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the command under `fault` and checks the promise: failure, the output folder
/// named in the error, and the folder exactly as it was (old files intact, nothing new).
fn assert_refused_cleanly(fault: Fault, out_dir: &Path, args: &[&std::ffi::OsStr]) -> String {
    let before = snapshot(out_dir);
    assert!(
        !before.is_empty(),
        "put an earlier output in {out_dir:?} first"
    );
    let out = run_under(fault, out_dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{fault:?}: the command succeeded; stderr: {stderr}"
    );
    assert!(
        !stderr.contains("panicked"),
        "{fault:?}: a panic instead of an error: {stderr}"
    );
    assert!(
        stderr.contains(&out_dir.display().to_string()),
        "{fault:?}: the error does not name {}: {stderr}",
        out_dir.display()
    );
    // Under NoSpace the folder outside the namespace was never written: what the command
    // left is what the tmpfs held, copied out.
    if let Fault::NoSpace = fault {
        assert!(
            stderr.contains("No space left on device"),
            "NoSpace: the error is not ENOSPC: {stderr}"
        );
    }
    let after = match fault {
        Fault::NoSpace => {
            let seen = seen_dir(out_dir);
            let after = snapshot(&seen);
            std::fs::remove_dir_all(&seen).unwrap();
            after
        }
        _ => snapshot(out_dir),
    };
    let names = |s: &[(PathBuf, Vec<u8>)]| s.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&after),
        names(&before),
        "{fault:?}: files appeared or vanished"
    );
    assert!(after == before, "{fault:?}: an earlier file was changed");
    // The message and its first cause, without the backtrace RUST_BACKTRACE may add.
    let mut lines = stderr.lines();
    let message = lines
        .find(|l| l.starts_with("Error:") || l.starts_with("error:"))
        .unwrap_or_default();
    let cause = lines
        .skip_while(|l| !l.starts_with("Caused by:"))
        .nth(1)
        .map(|l| l.trim().trim_start_matches("0: "))
        .unwrap_or_default();
    format!("{message} <- {cause}")
}

/// [`assert_refused_cleanly`] under each fault in turn, printing the error each gave for
/// the command `what`.
fn assert_refused_under_every_fault(what: &str, out_dir: &Path, args: &[&std::ffi::OsStr]) {
    for fault in FAULTS {
        let error = assert_refused_cleanly(fault, out_dir, args);
        eprintln!("{what}, {fault:?}: {error}");
    }
}

/// Runs `lase ARGS` with no fault and checks that it succeeds.
fn assert_succeeds_unfaulted(args: &[&std::ffi::OsStr]) {
    let out = run_under_nothing(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

#[test]
fn embed_into_a_read_only_or_full_folder_fails_cleanly() {
    let work = work_dir();
    let model = save_tiny_model(work.path(), 21);
    let input = sentences(work.path(), "in.txt", &["the cat", "ein hund", "blue"]);
    let (out_dir, output) = earlier_output(work.path(), "vectors.npy", b"the earlier vectors");
    let args = [
        os("embed"),
        os("--quiet"),
        os("--model"),
        model.as_os_str(),
        os("--input"),
        input.as_os_str(),
        os("--output"),
        output.as_os_str(),
    ];
    assert_refused_under_every_fault("embed", &out_dir, &args);
    // Unfaulted, the same command works (the faults, not the command, made it fail).
    assert_succeeds_unfaulted(&args);
    assert!(std::fs::metadata(&output).unwrap().len() > 25_000);
}

#[test]
fn mine_into_a_read_only_or_full_folder_fails_cleanly() {
    let work = work_dir();
    let model = save_tiny_model(work.path(), 21);
    let src = sentences(work.path(), "src.txt", &["the cat", "a dog", "blue"]);
    let tgt = sentences(work.path(), "tgt.txt", &["die katze", "ein hund", "blau"]);
    let (out_dir, output) = earlier_output(work.path(), "pairs.tsv", b"0.9\tearlier\tpairs\n");
    let args = [
        os("mine"),
        os("--quiet"),
        os("--model"),
        model.as_os_str(),
        os("--src"),
        src.as_os_str(),
        os("--tgt"),
        tgt.as_os_str(),
        os("--retrieval"),
        os("fwd"),
        os("--threshold=-100"),
        os("--output"),
        output.as_os_str(),
    ];
    assert_refused_under_every_fault("mine", &out_dir, &args);
    assert_succeeds_unfaulted(&args);
    assert!(std::fs::metadata(&output).unwrap().len() > FULL_AT_BYTES);
}

#[test]
fn export_over_an_existing_model_fails_cleanly_and_keeps_it() {
    let work = work_dir();
    let model = save_tiny_model(work.path(), 21);
    // The earlier model in the output folder: another seed and another config.json, so
    // any file overwritten shows (its small files are written before the weights).
    let out_dir = work.path().join("models");
    let earlier = out_dir.join("exported");
    let mut other = tiny_config();
    other.layer_norm_eps = 1e-6;
    tiny_encoder(other, mean_head(16, true), 5)
        .save(&earlier)
        .unwrap();
    let args = [
        os("export"),
        os("--dtype"),
        os("f32"),
        os("--model"),
        model.as_os_str(),
        os("--output"),
        earlier.as_os_str(),
    ];
    assert_refused_under_every_fault("export", &out_dir, &args);
    assert_succeeds_unfaulted(&args);
    assert_eq!(
        std::fs::read(earlier.join("model.safetensors")).unwrap(),
        std::fs::read(model.join("model.safetensors")).unwrap()
    );
}

#[test]
fn a_checkpoint_that_cannot_be_written_stops_the_run_and_keeps_the_last_one() {
    let work = work_dir();
    let tokenizer = work.path().join("tokenizer.json");
    std::fs::write(&tokenizer, tiny_tokenizer_json()).unwrap();
    let pairs: String = (0..300)
        .map(|i| {
            let w = ["cat", "dog", "house", "tree", "blue", "red"];
            let d = ["katze", "hund", "haus", "baum", "blau", "rot"];
            format!(
                "{} {} {i}\t{} {} {i}\n",
                d[i % 6],
                d[(i / 6) % 6],
                w[i % 6],
                w[(i / 6) % 6]
            )
        })
        .collect();
    let pairs_path = work.path().join("pairs.tsv");
    std::fs::write(&pairs_path, pairs).unwrap();
    let recipe = work.path().join("recipe.toml");
    std::fs::write(
        &recipe,
        format!(
            r#"
[model]
layers = 1
hidden = 16
heads = 2
ffn = 32
max_tokens = 16
[tokenizer]
path = {tokenizer:?}
[data]
sources = [{{ format = "tsv", path = {pairs_path:?}, src_lang = "deu", tgt_lang = "eng" }}]
exclude_test_sets = false
dev = {{ pairs_per_language = 20, min_language_pairs = 100 }}
[objective]
contrastive = "info-nce"
xtr = false
[schedule]
steps = 8
warmup_steps = 1
batch_pairs = 16
[run]
eval_every = 100
checkpoint_every = 2
"#
        ),
    )
    .unwrap();
    let run = work.path().join("run");
    let train = |stop_after: &str| {
        vec![
            os("train").to_owned(),
            os("--quiet").to_owned(),
            os("--config").to_owned(),
            recipe.as_os_str().to_owned(),
            os("--out").to_owned(),
            run.as_os_str().to_owned(),
            os("--stop-after").to_owned(),
            os(stop_after).to_owned(),
        ]
    };
    let first = train("4");
    assert_succeeds_unfaulted(&args(&first));
    let state = |run: &Path| -> u64 {
        let text = std::fs::read_to_string(run.join("checkpoint/state.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["step"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(state(&run), 4);
    // The run folder read-only: the next checkpoint cannot be written. The earlier
    // checkpoint is the run's whole state, so the folder must be exactly as it was.
    let more = train("2");
    for fault in FAULTS {
        let error = assert_refused_cleanly(fault, &run, &args(&more));
        eprintln!("train checkpoint, {fault:?}: {error}");
        assert_eq!(state(&run), 4);
    }
    // Afterwards the run resumes from step 4 and goes on.
    assert_succeeds_unfaulted(&args(&more));
    assert_eq!(state(&run), 6);
}

fn args(v: &[std::ffi::OsString]) -> Vec<&std::ffi::OsStr> {
    v.iter().map(|s| s.as_os_str()).collect()
}

fn run_under_nothing(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lase"))
        .args(["--device", "cpu", "--threads", "1"])
        .args(args)
        .output()
        .unwrap()
}

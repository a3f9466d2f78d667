//! `lase embed` end to end through the binary: row alignment, gzip input, named errors
//! for bad input, and memory that does not grow with the input (streaming).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Command;

use common::*;
use lase::io::npy::NpyMatrix;

fn lase() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lase"));
    c.args(["--device", "cpu", "--threads", "1"]);
    c
}

fn tiny_model_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tiny_encoder(tiny_config(), mean_head(16, true), 21)
        .save(dir.path())
        .unwrap();
    dir
}

fn run_embed(model: &Path, input: &Path, output: &Path) -> std::process::Output {
    lase()
        .args(["embed", "--quiet", "--batch-size", "8", "--model"])
        .arg(model)
        .arg("--input")
        .arg(input)
        .arg("--output")
        .arg(output)
        .output()
        .unwrap()
}

#[test]
fn one_row_per_line_including_empty_lines() {
    let model = tiny_model_dir();
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in.txt");
    std::fs::write(&input, "the cat sat\n\nder hund\r\na\n").unwrap();
    let output = work.path().join("out.npy");
    let out = run_embed(model.path(), &input, &output);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wrote 4 x 16 float32"), "{stdout}");
    let m = NpyMatrix::open(&output).unwrap();
    assert_eq!((m.rows, m.cols), (4, 16));
    // Row 2 is line 3: the same vector as embedding "der hund" alone.
    let encoder = lase::model::SentenceEncoder::load(model.path(), tch::Device::Cpu).unwrap();
    let alone = rows(&encoder.encode(&["der hund"], 1).unwrap());
    assert!(cosine(&m.row(2), &alone[0]) > 0.99999);
    assert!(
        cosine(&m.row(1), &alone[0]) < 0.9999,
        "empty line must get its own vector"
    );
}

#[test]
fn gzip_input_gives_the_same_rows() {
    let model = tiny_model_dir();
    let work = tempfile::tempdir().unwrap();
    let text = "the cat sat on the mat\nein hund\nblue house\n";
    let plain = work.path().join("in.txt");
    std::fs::write(&plain, text).unwrap();
    let gz = work.path().join("in.txt.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    assert!(
        run_embed(model.path(), &plain, &work.path().join("a.npy"))
            .status
            .success()
    );
    assert!(
        run_embed(model.path(), &gz, &work.path().join("b.npy"))
            .status
            .success()
    );
    let a = NpyMatrix::open(work.path().join("a.npy")).unwrap();
    let b = NpyMatrix::open(work.path().join("b.npy")).unwrap();
    assert_eq!(a.values(), b.values());
}

/// `--input /dev/stdin` (a pipe: `zcat x.gz | lase embed --input /dev/stdin`, or
/// `<(...)`) gives the rows a file gives, plain and gzip: the bytes read to detect gzip
/// are not lost (a pipe cannot be opened twice).
#[cfg(unix)]
#[test]
fn a_pipe_as_input_gives_the_rows_of_the_file() {
    let model = tiny_model_dir();
    let work = tempfile::tempdir().unwrap();
    let text = "a\nthe cat sat on the mat\nein hund\n";
    let plain = work.path().join("in.txt");
    std::fs::write(&plain, text).unwrap();
    assert!(
        run_embed(model.path(), &plain, &work.path().join("file.npy"))
            .status
            .success()
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    for (name, bytes) in [
        ("plain", text.as_bytes().to_vec()),
        ("gzip", gz.finish().unwrap()),
    ] {
        let output = work.path().join(format!("{name}.npy"));
        let mut child = lase()
            .args([
                "embed",
                "--quiet",
                "--batch-size",
                "8",
                "--input",
                "/dev/stdin",
                "--model",
            ])
            .arg(model.path())
            .arg("--output")
            .arg(&output)
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file = NpyMatrix::open(work.path().join("file.npy")).unwrap();
        let piped = NpyMatrix::open(&output).unwrap();
        assert_eq!(piped.values(), file.values(), "{name}");
    }
}

/// A thread count past what libtorch takes is refused by the argument parser, naming
/// the flag, rather than wrapping into a negative number inside libtorch.
#[test]
fn an_impossible_thread_count_is_refused_naming_the_flag() {
    for threads in ["3000000000", "65537"] {
        let out = Command::new(env!("CARGO_BIN_EXE_lase"))
            .args([
                "--threads",
                threads,
                "embed",
                "--model",
                "m",
                "--input",
                "i",
                "--output",
                "o",
            ])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{threads}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--threads") && !stderr.contains("panicked"),
            "{threads}: {stderr}"
        );
    }
}

#[test]
fn invalid_utf8_fails_naming_file_and_line_and_writes_nothing() {
    let model = tiny_model_dir();
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("broken.txt");
    std::fs::write(&input, b"fine\nstill fine\nnot \xc3\x28 fine\n").unwrap();
    let output = work.path().join("out.npy");
    let out = run_embed(model.path(), &input, &output);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("broken.txt:3:") && stderr.contains("invalid UTF-8"),
        "{stderr}"
    );
    assert!(
        !output.exists(),
        "a failed run must not leave a partial output"
    );
    assert_eq!(
        std::fs::read_dir(work.path()).unwrap().count(),
        1,
        "no temporary files left"
    );
}

#[test]
fn missing_model_is_a_clear_error() {
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in.txt");
    std::fs::write(&input, "x\n").unwrap();
    let out = run_embed(
        &work.path().join("no-model"),
        &input,
        &work.path().join("o.npy"),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no-model") && stderr.contains("not found"),
        "{stderr}"
    );
}

/// Peak resident memory (KiB) of a finished child, from wait4's rusage.
// The child is reaped by wait4 below, which std's `wait` cannot do while reporting rusage.
#[allow(clippy::zombie_processes)]
fn run_measuring_peak_rss(mut cmd: Command) -> (std::process::ExitStatus, i64) {
    let child = cmd.stdout(std::process::Stdio::null()).spawn().unwrap();
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting on our own child with valid out-pointers.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    use std::os::unix::process::ExitStatusExt;
    (std::process::ExitStatus::from_raw(status), usage.ru_maxrss)
}

#[test]
fn memory_does_not_grow_with_the_input() {
    let model = tiny_model_dir();
    let work = tempfile::tempdir().unwrap();
    // ~400-byte lines: 100k lines is a 40 MB file; holding it (and its tokens) in memory
    // would add well over 60 MB to the peak.
    let line: String = TINY_WORDS
        .iter()
        .cycle()
        .take(70)
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    let write_lines = |path: &Path, n: usize| {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        for i in 0..n {
            writeln!(f, "{} {}", TINY_WORDS[i % TINY_WORDS.len()], line).unwrap();
        }
    };
    let small = work.path().join("small.txt");
    let large = work.path().join("large.txt");
    write_lines(&small, 10_000);
    write_lines(&large, 100_000);
    let measure = |input: &Path, output: &str| {
        let mut cmd = lase();
        cmd.args([
            "embed",
            "--quiet",
            "--batch-size",
            "64",
            "--max-length",
            "16",
            "--model",
        ])
        .arg(model.path())
        .arg("--input")
        .arg(input)
        .arg("--output")
        .arg(work.path().join(output));
        let (status, kib) = run_measuring_peak_rss(cmd);
        assert!(status.success());
        kib
    };
    let small_kib = measure(&small, "small.npy");
    let large_kib = measure(&large, "large.npy");
    let m = NpyMatrix::open(work.path().join("large.npy")).unwrap();
    assert_eq!(m.rows, 100_000);
    eprintln!("peak RSS: 10k lines {small_kib} KiB, 100k lines {large_kib} KiB");
    assert!(
        large_kib - small_kib < 30 * 1024,
        "peak RSS grew from {small_kib} KiB to {large_kib} KiB with 10x the input"
    );
}

/// `lase ... | head` must not panic when the reader goes away: the process ends quietly
/// (SIGPIPE), as Unix tools do.
#[test]
fn a_closed_stdout_pipe_ends_the_command_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    let work = tempfile::tempdir().unwrap();
    let model = work.path().join("model");
    tiny_encoder(tiny_config(), mean_head(16, true), 21)
        .save(&model)
        .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lase"))
        .args(["export", "--model"])
        .arg(&model)
        .arg("--output")
        .arg(work.path().join("copy"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader is gone before lase prints
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
    assert!(work.path().join("copy/model.safetensors").exists());
}

#[test]
fn the_default_precision_is_auto() {
    let model = tiny_model_dir();
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in.txt");
    std::fs::write(&input, "the cat sat on the mat\nun chat\n").unwrap();
    let out = run_embed(model.path(), &input, &work.path().join("out.npy"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.lines().any(|l| l.starts_with("precision auto: ")),
        "lase embed without --precision did not choose automatically: {stderr}"
    );
}

#[test]
fn precision_auto_says_what_it_picked_and_runs_it() {
    let model = tiny_model_dir();
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in.txt");
    std::fs::write(
        &input,
        "the cat sat on the mat\nder hund schläft\nun chat\n",
    )
    .unwrap();
    let embed = |precision: &str, name: &str| {
        let output = work.path().join(name);
        let out = lase()
            .args(["embed", "--quiet", "--precision", precision, "--model"])
            .arg(model.path())
            .arg("--input")
            .arg(&input)
            .arg("--output")
            .arg(&output)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            NpyMatrix::open(&output).unwrap(),
        )
    };
    let (stdout, stderr, auto) = embed("auto", "auto.npy");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("precision auto: "))
        .unwrap_or_else(|| panic!("no pick on stderr: {stderr}"));
    let picked = line["precision auto: ".len()..].split(' ').next().unwrap();
    assert!(["f32", "bf16", "int8"].contains(&picked), "{line}");
    assert!(line.contains('('), "the pick gives its reason: {line}");
    // The summary names the precision that ran, and the vectors are that precision's.
    let shown = match picked {
        "f32" => "F32 on Cpu",
        "bf16" => "Bf16 on Cpu",
        _ => "Int8 on Cpu",
    };
    assert!(stdout.contains(shown), "{stdout} vs {line}");
    let (_, _, same) = embed(picked, "same.npy");
    for i in 0..3 {
        assert_eq!(
            auto.row(i),
            same.row(i),
            "auto's row {i} differs from --precision {picked}"
        );
    }
    // int8 runs through the binary and stays close to f32 on this model.
    let (stdout, _, int8) = embed("int8", "int8.npy");
    assert!(stdout.contains("Int8 on Cpu"), "{stdout}");
    let (_, _, float) = embed("f32", "f32.npy");
    for i in 0..3 {
        assert!(cosine(&int8.row(i), &float.row(i)) > 0.95);
    }
    let out = lase()
        .args([
            "embed",
            "--precision",
            "fp9",
            "--model",
            "m",
            "--input",
            "i",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("auto, f32, bf16, int8"),
        "{err}"
    );
}

/// `--precision`'s default per command: auto where the output serves a user on this
/// machine (embed, mine, serve), f32 where it must be the same on every CPU (eval,
/// shard embed). Read from each command's help, which prints clap's default.
#[test]
fn each_command_has_its_documented_default_precision() {
    let default_of = |command: &[&str]| {
        let out = lase().args(command).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = help
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("--precision"))
            .find(|l| l.contains("[default: "))
            .unwrap_or_else(|| panic!("{command:?}: no --precision default in {help}"))
            .to_owned();
        line.rsplit("[default: ")
            .next()
            .unwrap()
            .trim_end_matches(']')
            .to_owned()
    };
    for command in [&["embed"][..], &["mine"], &["serve"]] {
        assert_eq!(default_of(command), "auto", "{command:?}");
    }
    for command in [&["eval"][..], &["shard", "embed"]] {
        assert_eq!(default_of(command), "f32", "{command:?}");
    }
}

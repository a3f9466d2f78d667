//! scripts/score_mini.sh, the sequence that judges lase-mini candidates: what it refuses
//! before it scores anything (a run that has not reached its recipe's last step, a folder
//! that is neither a model nor a run, two candidates named alike, a tag sed cannot take, no
//! candidate), each with its exit status and a message naming the folder. Its scoring path
//! needs the shipped models and the dev data (bench/results/epyc-zen3-2026-11-28-s16/
//! score_mini_verify/ records it run on a real run).

use std::path::{Path, PathBuf};
use std::process::Output;

fn run(args: &[&Path]) -> Output {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/score_mini.sh");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(script);
    for a in args {
        cmd.arg(a);
    }
    // A binary that cannot exist: nothing here may reach `lase`.
    cmd.env("LASE", "/nonexistent/lase")
        .output()
        .expect("bash runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A distillation run's folder at `step` of a recipe of `steps`, with a best-dev model.
fn distill_run(root: &Path, name: &str, step: u64, steps: u64) -> PathBuf {
    let run = root.join(name);
    let distill = run.join("distill");
    std::fs::create_dir_all(distill.join("checkpoint")).unwrap();
    std::fs::create_dir_all(distill.join("best-model")).unwrap();
    std::fs::write(distill.join("best-model/model.safetensors"), b"x").unwrap();
    std::fs::write(
        distill.join("config.toml"),
        format!("[schedule]\nsteps = {steps}\nbatch_pairs = 64\n"),
    )
    .unwrap();
    std::fs::write(
        distill.join("checkpoint/state.json"),
        format!("{{\"step\": {step}}}"),
    )
    .unwrap();
    run
}

#[test]
fn an_unfinished_run_is_refused_before_anything_is_scored() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = distill_run(dir.path(), "half", 500, 1000);
    let o = run_script(&out, &[&run]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("half") && e.contains("step 500 of 1000"), "{e}");
    assert!(e.contains("not finished"), "{e}");
    // Nothing scored: no dev-score file in OUT_DIR.
    let scored = std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0);
    assert_eq!(scored, 0);
}

#[test]
fn a_finished_run_gets_past_the_check() {
    // The same run at its last step is accepted: the script goes on to export it, which
    // fails here only because LASE names no binary (so the check above is the step count,
    // not the folder's shape).
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = distill_run(dir.path(), "done", 1000, 1000);
    let o = run_script(&out, &[&run]);
    let e = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(!e.contains("not finished"), "{e}");
    assert_ne!(o.status.code(), Some(0), "{e}");
    assert!(e.contains("/nonexistent/lase"), "{e}");
}

#[test]
fn a_folder_that_is_neither_model_nor_run_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("odd-folder");
    std::fs::create_dir_all(&odd).unwrap();
    let o = run_script(&dir.path().join("out"), &[&odd]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("odd-folder") && e.contains("neither a model folder"),
        "{e}"
    );
}

#[test]
fn candidates_named_alike_are_refused() {
    // Their dev scores would be kept under one name, the second given the first's.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a/export"), dir.path().join("b/export"));
    for m in [&a, &b] {
        std::fs::create_dir_all(m).unwrap();
        std::fs::write(m.join("modules.json"), b"[]").unwrap();
    }
    let o = run_script(&dir.path().join("out"), &[&a, &b]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("named alike") && e.contains("export"), "{e}");
}

#[test]
fn a_tag_outside_letters_digits_and_dashes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("model");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(m.join("modules.json"), b"[]").unwrap();
    let tag = PathBuf::from("a/b");
    let out = dir.path().join("out");
    let o = run(&[&out, &tag, &m]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("TAG 'a/b'"), "{}", stderr(&o));
}

#[test]
fn no_candidate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_script(&dir.path().join("out"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no CANDIDATE"), "{}", stderr(&o));
}

/// `score_mini.sh OUT_DIR check CANDIDATE...`
fn run_script(out: &Path, candidates: &[&Path]) -> Output {
    let tag = PathBuf::from("check");
    let mut args: Vec<&Path> = vec![out, &tag];
    args.extend_from_slice(candidates);
    run(&args)
}

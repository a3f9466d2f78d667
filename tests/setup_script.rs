//! scripts/setup.sh's disk check: on a filesystem without room for libtorch, the build and
//! the tests, setup stops at once with the free and needed sizes, instead of the build dying
//! mid-way in rustc with "No space left on device" (what a CI run did).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A checkout-shaped folder holding a copy of setup.sh, with libtorch and the teacher marked
/// as present so that a setup that passes the check has nothing to fetch.
fn checkout(dir: &Path) {
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::copy(
        repo().join("scripts/setup.sh"),
        dir.join("scripts/setup.sh"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("third_party/libtorch")).unwrap();
    std::fs::write(dir.join("third_party/libtorch/build-version"), "2.11.0\n").unwrap();
    std::fs::create_dir_all(dir.join("models/all-MiniLM-L6-v2")).unwrap();
    std::fs::write(dir.join("models/all-MiniLM-L6-v2/model.safetensors"), "x").unwrap();
    std::fs::write(dir.join("models/all-MiniLM-L6-v2/tokenizer.json"), "{}").unwrap();
}

fn setup(dir: &Path, need_mb: u64) -> Output {
    Command::new("bash")
        .arg(dir.join("scripts/setup.sh"))
        .env("LASE_DISK_NEED_MB", need_mb.to_string())
        .env_remove("LASE_SKIP_DISK_CHECK")
        .output()
        .unwrap()
}

#[test]
fn setup_refuses_a_filesystem_without_room_and_says_how_much() {
    let tmp = tempfile::tempdir().unwrap();
    checkout(tmp.path());
    // More than any disk this runs on: 1 PB.
    let out = setup(tmp.path(), 1_000_000_000);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("MB free on its filesystem"), "{stderr}");
    assert!(stderr.contains("need about"), "{stderr}");
    assert!(
        stderr.contains(&tmp.path().display().to_string()),
        "the message names the folder: {stderr}"
    );
    assert!(
        !stderr.contains("already in"),
        "nothing else ran after the check failed: {stderr}"
    );
}

#[test]
fn setup_goes_on_where_there_is_room() {
    let tmp = tempfile::tempdir().unwrap();
    checkout(tmp.path());
    let out = setup(tmp.path(), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("libtorch 2.11.0 already in"), "{stderr}");
    assert!(stderr.contains("teacher already in"), "{stderr}");
}

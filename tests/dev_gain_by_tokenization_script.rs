//! scripts/dev_gain_by_tokenization.py: dev languages grouped by how much a new tokenizer
//! shortens their training text (two coverage files), each group's mean P@1 before and after,
//! and a wrong number of arguments refused.

use std::path::{Path, PathBuf};
use std::process::Command;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn score(dir: &Path, name: &str, rus: f64, deu: f64, kor: f64) -> PathBuf {
    let row = |l: &str, p: f64| {
        format!(r#"{{"language": "{l}", "p_at_1": {p}, "pooled_p_at_1": {p}, "pairs": 20}}"#)
    };
    write(
        dir,
        name,
        &format!(
            r#"{{"languages": [{}, {}, {}]}}"#,
            row("rus", rus),
            row("deu", deu),
            row("kor", kor)
        ),
    )
}

fn coverage(dir: &Path, name: &str, rus: u64, deu: u64, kor: u64) -> PathBuf {
    let row = |l: &str, tokens: u64| {
        format!(
            r#"{{"language": "{l}", "sentences": 10, "tokens": {tokens}, "unknown_tokens": 0, "characters": 1000, "over_length": 0}}"#
        )
    };
    write(
        dir,
        name,
        &format!(
            "[{}, {}, {}]",
            row("rus", rus),
            row("deu", deu),
            row("kor", kor)
        ),
    )
}

#[test]
fn languages_fall_in_groups_by_how_much_their_text_shortened() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let before = score(d, "before.json", 40.0, 90.0, 20.0);
    let after = score(d, "after.json", 50.0, 91.0, 24.0);
    // rus 950 -> 530 tokens (0.56: >= 30% shorter), deu unchanged, kor 2140 -> 1360 (0.64).
    let old = coverage(d, "old.json", 950, 400, 2140);
    let new = coverage(d, "new.json", 530, 400, 1360);
    let o = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/dev_gain_by_tokenization.py"))
        .args([&before, &after, &old, &new])
        .output()
        .expect("python3 runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("| shortened by >= 30% | 2 | 30.00 -> 37.00 | 30.00 -> 37.00 | kor rus |"),
        "{out}"
    );
    assert!(
        out.contains("| unchanged (within 1%) | 1 | 90.00 -> 91.00 | 90.00 -> 91.00 | deu |"),
        "{out}"
    );
    assert!(!out.contains("10-30%"), "{out}");
}

#[test]
fn a_wrong_number_of_arguments_prints_the_usage() {
    let o = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/dev_gain_by_tokenization.py"))
        .arg("only-one.json")
        .output()
        .expect("python3 runs");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Usage: scripts/dev_gain_by_tokenization.py")
    );
}

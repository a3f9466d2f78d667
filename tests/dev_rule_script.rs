//! scripts/dev_rule.py, the one tool the model-choice rules use: which candidate it picks
//! from `lase dev-score --json` files, each of its three conditions refusing a candidate on
//! its own, and bad input named by file (and line) with exit status 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/dev_rule.py")
}

/// A dev-score JSON: the four retrieval columns, the agreement, and two dev labels
/// (`deu_Latn` in the group, `xho_Latn` outside it) with the given own/pooled P@1.
fn score(dir: &Path, tag: &str, columns: [f64; 4], agreement: f64, deu: f64) -> PathBuf {
    let json = format!(
        r#"{{"p_at_1": {}, "pooled_p_at_1": {}, "pool_size": 10,
  "languages": [
    {{"language": "deu_Latn", "p_at_1": {deu}, "pooled_p_at_1": {deu}, "pairs": 20}},
    {{"language": "xho_Latn", "p_at_1": 10.0, "pooled_p_at_1": 10.0, "pairs": 20}}],
  "non_pivot": {{"p_at_1": {}, "pooled_p_at_1": {}, "pool_size": 10, "languages": []}},
  "similarity_agreement": {{"pairs": 45, "sentences": 10, "spearman": {agreement}}}}}"#,
        columns[0], columns[1], columns[2], columns[3]
    );
    let path = dir.join(format!("devscore-{tag}.json"));
    std::fs::write(&path, json).unwrap();
    path
}

fn rule(args: &[&Path], extra: &[&str]) -> Output {
    let mut cmd = Command::new("python3");
    cmd.arg(script()).arg("--base").arg(args[0]);
    for a in &args[1..] {
        cmd.arg(a);
    }
    cmd.args(extra).output().expect("python3 runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The rule's stderr, checking that it refused the input (exit status 2).
fn refused(args: &[&Path], extra: &[&str]) -> String {
    let o = rule(args, extra);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn picks_the_qualifying_candidate_with_the_highest_mean() {
    let dir = tempfile::tempdir().unwrap();
    let base = score(dir.path(), "base", [60.0; 4], 70.0, 80.0);
    // +0.2: below the margin of 0.3.
    let small = score(dir.path(), "small", [60.2; 4], 70.0, 80.0);
    // +0.5, qualifies.
    let good = score(dir.path(), "good", [60.5; 4], 70.0, 80.0);
    // +1.0, the highest mean, but its agreement fell by 0.6 (> 0.5).
    let drifted = score(dir.path(), "drifted", [61.0; 4], 69.4, 80.0);
    // +0.8, agreement kept, but the group's languages fell.
    let narrow = score(dir.path(), "narrow", [60.8; 4], 70.0, 79.0);
    let folder = dir.path().join("news");
    std::fs::create_dir_all(folder.join("deu-eng")).unwrap();
    let o = rule(
        &[&base, &base, &small, &good, &drifted, &narrow],
        &[
            "--max-agreement-loss",
            "0.5",
            "--group-folder",
            folder.to_str().unwrap(),
        ],
    );
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("rule: mean >= 60.300 and agreement >= 69.50 and group >= 80.000"),
        "{out}"
    );
    for (tag, verdict) in [
        ("small", "no"),
        ("good", "qualifies"),
        ("drifted", "no"),
        ("narrow", "no"),
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{tag}:")))
            .unwrap();
        assert!(line.ends_with(verdict), "{line}");
    }
    assert_eq!(out.lines().last(), Some("chosen: good"), "{out}");
    assert!(
        !out.lines().any(|l| l.starts_with("base:")),
        "the base is not its own candidate: {out}"
    );

    // Without the agreement and group conditions the highest mean wins.
    let o = rule(&[&base, &small, &good, &drifted, &narrow], &[]);
    assert_eq!(stdout(&o).lines().last(), Some("chosen: drifted"));
}

#[test]
fn with_no_qualifying_candidate_the_base_stays() {
    let dir = tempfile::tempdir().unwrap();
    let base = score(dir.path(), "lase-base", [60.0; 4], 70.0, 80.0);
    let worse = score(dir.path(), "worse", [59.0; 4], 75.0, 90.0);
    let o = rule(&[&base, &worse], &["--min-gain", "0.0"]);
    assert_eq!(
        stdout(&o).lines().last(),
        Some("chosen: none (lase-base stays)")
    );
}

#[test]
fn bad_input_is_named_by_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let base = score(dir.path(), "base", [60.0; 4], 70.0, 80.0);
    let broken = dir.path().join("devscore-broken.json");
    std::fs::write(&broken, "{\n\"p_at_1\": 1,\n oops\n}").unwrap();
    let err = refused(&[&base, &broken], &[]);
    assert!(
        err.contains("devscore-broken.json: line 3: not JSON"),
        "{err}"
    );

    let other = dir.path().join("devscore-other.json");
    std::fs::write(&other, r#"{"accuracy": 1}"#).unwrap();
    let err = refused(&[&base, &other], &[]);
    assert!(
        err.contains("devscore-other.json: no number 'p_at_1'"),
        "{err}"
    );

    let err = refused(
        &[&base, &base],
        &["--group-folder", dir.path().to_str().unwrap()],
    );
    assert!(err.contains("no xxx-eng subfolder"), "{err}");
}

/// A dev-score JSON whose columns are the means over its labels, as dev-score writes
/// them: pivot labels and non-pivot labels, each (name, own P@1, pooled P@1).
fn labelled(
    dir: &Path,
    tag: &str,
    pivot: &[(&str, f64, f64)],
    non_pivot: &[(&str, f64, f64)],
) -> PathBuf {
    let part = |labels: &[(&str, f64, f64)]| {
        let n = labels.len() as f64;
        let own = labels.iter().map(|l| l.1).sum::<f64>() / n;
        let pooled = labels.iter().map(|l| l.2).sum::<f64>() / n;
        let list: Vec<String> = labels
            .iter()
            .map(|(name, o, p)| {
                format!(
                    r#"{{"language": "{name}", "p_at_1": {o}, "pooled_p_at_1": {p}, "pairs": 20}}"#
                )
            })
            .collect();
        (own, pooled, list.join(", "))
    };
    let (own, pooled, list) = part(pivot);
    let (np_own, np_pooled, np_list) = part(non_pivot);
    let json = format!(
        r#"{{"p_at_1": {own}, "pooled_p_at_1": {pooled}, "pool_size": 10, "languages": [{list}],
  "non_pivot": {{"p_at_1": {np_own}, "pooled_p_at_1": {np_pooled}, "pool_size": 10, "languages": [{np_list}]}}}}"#
    );
    let path = dir.join(format!("devscore-{tag}.json"));
    std::fs::write(&path, json).unwrap();
    path
}

/// --bootstrap resamples the dev labels, the same draw for base and candidate: a gain the
/// same on every label has no spread; a gain on one label and an equal loss on another
/// spans zero; labels that are not the base's are refused. The choice itself is unchanged.
#[test]
fn the_bootstrap_resamples_dev_labels_in_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let pivot = [("deu_Latn", 60.0, 50.0), ("fra_Latn", 70.0, 40.0)];
    let np = [("deu_Latn-fra_Latn", 55.0, 65.0)];
    let base = labelled(dir.path(), "base", &pivot, &np);
    let plus_one = |l: &(&'static str, f64, f64)| (l.0, l.1 + 1.0, l.2 + 1.0);
    let even: Vec<_> = pivot.iter().map(plus_one).collect();
    let even_np: Vec<_> = np.iter().map(plus_one).collect();
    let even = labelled(dir.path(), "even", &even, &even_np);
    // +2 on deu, -2 on fra (own and pooled), 0 on the non-pivot pair: mean difference 0,
    // and a draw of deu twice gives +1, fra twice -1.
    let split = labelled(
        dir.path(),
        "split",
        &[("deu_Latn", 62.0, 52.0), ("fra_Latn", 68.0, 38.0)],
        &np,
    );
    let o = rule(
        &[&base, &even, &split],
        &["--bootstrap", "1000", "--seed", "3"],
    );
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("\nchosen: even\n"), "{out}");
    let line = |tag: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("bootstrap {tag}:")))
            .unwrap_or_else(|| panic!("no bootstrap line for {tag}: {out}"))
            .to_owned()
    };
    assert!(
        line("even").contains("mean - base +1.000, 95% over the dev labels [+1.000, +1.000], above 0 in 100.0% of 1000 draws"),
        "{out}"
    );
    let split_line = line("split");
    assert!(
        split_line.contains("mean - base +0.000, 95% over the dev labels [-1.000, +1.000]"),
        "{split_line}"
    );
    // deu drawn twice in about a quarter of the draws.
    let share: f64 = split_line
        .split("above 0 in ")
        .nth(1)
        .and_then(|s| s.split('%').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!((15.0..35.0).contains(&share), "{split_line}");

    let other = labelled(
        dir.path(),
        "other",
        &[("deu_Latn", 60.0, 50.0), ("spa_Latn", 70.0, 40.0)],
        &np,
    );
    let err = refused(&[&base, &other], &["--bootstrap", "10"]);
    assert!(
        err.contains("devscore-other.json: its dev labels are not"),
        "{err}"
    );
}

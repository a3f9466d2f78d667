//! scripts/lib/run_progress.sh, sourced by the scoring scripts: `recipe_steps` reads a
//! recipe's last step from its text, and from the merged recipe (`lase recipe`) when it
//! extends a base, whose `steps` it may inherit or change.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `recipe_steps CONFIG` as the scripts call it, with `LASE` this build's binary.
fn recipe_steps(config: &Path) -> String {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg("set -euo pipefail; . \"$1\"; recipe_steps \"$2\"")
        .arg("bash")
        .arg(repo().join("scripts/lib/run_progress.sh"))
        .arg(config)
        .env("LASE", env!("CARGO_BIN_EXE_lase"))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn recipe_steps_reads_the_merged_recipe_of_an_arm() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let base = write(
        "base.toml",
        "[data]\nexclude_test_sets = false\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\n\n[schedule]\nwarmup_steps = 3\nsteps = 700\n",
    );
    assert_eq!(recipe_steps(&base), "700");
    let inherits = write(
        "inherits.toml",
        "extends = \"base.toml\"\n\n[optimizer]\nlr = 1e-4\n",
    );
    assert_eq!(recipe_steps(&inherits), "700");
    let changes = write(
        "changes.toml",
        "extends = \"inherits.toml\"\nschedule.steps = 1400\n",
    );
    assert_eq!(recipe_steps(&changes), "1400");
    // A recipe without a steps line of its own and no base: empty (the scripts refuse it).
    let none = write("none.toml", "[schedule]\nwarmup_steps = 3\n");
    assert_eq!(recipe_steps(&none), "");
}

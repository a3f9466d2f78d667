//! scripts/continue_mini.sh, which continues the shipped lase-mini against the default:
//! `LASE_MINI_PREPARE_ONLY=1` builds the teacher folder (the default followed by the
//! student's own output layer) and stops before `lase distill`, so that
//! scripts/gpu_train.sh pack finds it; without it the script goes on to `lase distill`; a
//! recipe whose teacher is not LASE_MINI_DIR/teacher is refused, also when it is a base's
//! that the recipe extends.

use std::path::{Path, PathBuf};
use std::process::Output;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the script with `LASE` pointing at a binary that cannot exist: reaching
/// `lase distill` fails with bash's 127.
fn run(config: &Path, dir: &Path, prepare_only: bool) -> Output {
    run_with(config, dir, prepare_only, Path::new("/nonexistent/lase"))
}

fn run_with(config: &Path, dir: &Path, prepare_only: bool, lase: &Path) -> Output {
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(repo().join("scripts/continue_mini.sh"))
        .env("LASE", lase)
        .env("LASE_MINI_CONFIG", config)
        .env("LASE_MINI_DIR", dir);
    if prepare_only {
        cmd.env("LASE_MINI_PREPARE_ONLY", "1");
    }
    cmd.output().expect("bash runs")
}

fn recipe(root: &Path, teacher: &Path) -> PathBuf {
    let path = root.join("recipe.toml");
    std::fs::write(
        &path,
        format!(
            "[objective.distillation]\nteacher = \"{}\"\n",
            teacher.display()
        ),
    )
    .unwrap();
    path
}

#[test]
fn prepare_only_builds_the_teacher_and_stops_before_distilling() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let config = recipe(tmp.path(), &dir.join("teacher"));
    let o = run(&config, &dir, true);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let teacher = dir.join("teacher");
    // The default's encoder, the student's head and module list, no normaliser of the default's.
    assert_eq!(
        std::fs::read(teacher.join("model.safetensors")).unwrap(),
        std::fs::read(repo().join("models/lase-base/model.safetensors")).unwrap()
    );
    assert_eq!(
        std::fs::read(teacher.join("2_Dense/model.safetensors")).unwrap(),
        std::fs::read(repo().join("models/lase-mini/2_Dense/model.safetensors")).unwrap()
    );
    assert_eq!(
        std::fs::read(teacher.join("modules.json")).unwrap(),
        std::fs::read(repo().join("models/lase-mini/modules.json")).unwrap()
    );
    assert!(teacher.join("3_Normalize").is_dir());
    assert!(!teacher.join("2_Normalize").exists());
    assert!(!dir.join("distill").exists(), "no distillation was started");
}

#[test]
fn without_prepare_only_the_script_goes_on_to_distill() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let config = recipe(tmp.path(), &dir.join("teacher"));
    let o = run(&config, &dir, false);
    // The teacher is built, then `exec $LASE distill` fails: the binary does not exist.
    assert_eq!(o.status.code(), Some(127));
    assert!(dir.join("teacher/modules.json").is_file());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/lase"));
}

#[test]
fn a_recipe_whose_teacher_is_elsewhere_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let config = recipe(tmp.path(), &tmp.path().join("other-teacher"));
    let o = run(&config, &dir, true);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("its teacher must be"), "{e}");
    assert!(!dir.join("teacher").exists());
}

/// A recipe that extends a base is read as it trains (`lase recipe`): the base's teacher
/// counts, refused when elsewhere, accepted when it is LASE_MINI_DIR/teacher.
#[test]
fn the_teacher_of_a_base_the_recipe_extends_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let base = |teacher: &Path| {
        std::fs::write(
            tmp.path().join("base.toml"),
            format!(
                "[data]\nexclude_test_sets = false\nsources = [{{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }}]\n\n[objective.distillation]\nteacher = \"{}\"\n",
                teacher.display()
            ),
        )
        .unwrap();
    };
    let arm = tmp.path().join("arm.toml");
    std::fs::write(&arm, "extends = \"base.toml\"\n\n[schedule]\nsteps = 3\n").unwrap();
    let lase = Path::new(env!("CARGO_BIN_EXE_lase"));

    base(&tmp.path().join("other-teacher"));
    let o = run_with(&arm, &dir, true, lase);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("its teacher must be"), "{e}");
    assert!(!dir.join("teacher").exists());

    base(&dir.join("teacher"));
    let o = run_with(&arm, &dir, true, lase);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(dir.join("teacher/modules.json").is_file());
}

//! scripts/mini_round.sh, one round of continuing lase-mini against the default: what it
//! refuses before training (a tag sed cannot take, a missing recipe, a recipe whose teacher is
//! not RUN/teacher, a missing SHIPPED_EVAL folder), the training precision it picks from the
//! CPU's flags (LASE_TRAIN_PRECISION over them), a training that fails (stopped, naming the
//! log) and one that ends short of the recipe's last step (the rule waits). Its scoring path is
//! scripts/score_mini.sh's (tests/score_mini_script.rs) on a finished run.

use std::path::{Path, PathBuf};
use std::process::Output;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Round {
    dir: tempfile::TempDir,
}

impl Round {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let amx = "flags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n";
        std::fs::write(dir.path().join("cpuinfo-amx"), amx).unwrap();
        let avx2 = "flags\t\t: fpu avx2 fma avx512_vnni\n";
        std::fs::write(dir.path().join("cpuinfo-avx2"), avx2).unwrap();
        // A `lase` that does nothing and succeeds: `lase distill` returns at once, no step taken.
        let fake = dir.path().join("fake-lase");
        std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        Round { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A recipe of 10 steps whose teacher is `teacher`.
    fn recipe(&self, teacher: &Path) -> PathBuf {
        let path = self.path("recipe.toml");
        let text = format!(
            "[objective.distillation]\nteacher = \"{}\"\n\n[schedule]\nsteps = 10\n",
            teacher.display()
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    fn run(&self, args: &[&str], lase: &Path, cpu: &str, precision: Option<&str>) -> Output {
        std::process::Command::new("bash")
            .arg(repo().join("scripts/mini_round.sh"))
            .args(args)
            .env("LASE", lase)
            .env("LASE_CPUINFO", self.path(cpu))
            .env_remove("LASE_TRAIN_PRECISION")
            .envs(precision.map(|p| ("LASE_TRAIN_PRECISION", p)))
            .output()
            .expect("bash runs")
    }
}

fn printed(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn bad_arguments_are_refused_before_any_training() {
    let r = Round::new();
    let nowhere = Path::new("/nonexistent/lase");
    let out = r.path("out");
    let out = out.to_str().unwrap();
    let recipe = r.recipe(&r.path("run/teacher"));
    let recipe = recipe.to_str().unwrap();

    let o = r.run(&[recipe, "s 1", out], nowhere, "cpuinfo-avx2", None);
    assert_eq!(o.status.code(), Some(2), "{}", printed(&o));
    assert!(printed(&o).contains("TAG 's 1'"), "{}", printed(&o));

    let missing = r.path("no-such.toml");
    let o = r.run(
        &[missing.to_str().unwrap(), "t", out],
        nowhere,
        "cpuinfo-avx2",
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(printed(&o).contains(&format!("no recipe {}", missing.display())));

    let eval = r.path("no-eval");
    let o = r.run(
        &[recipe, "t", out, eval.to_str().unwrap()],
        nowhere,
        "cpuinfo-avx2",
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        printed(&o).contains("no SHIPPED_EVAL folder"),
        "{}",
        printed(&o)
    );

    let elsewhere = r.recipe(&r.path("run/not-the-teacher"));
    let o = r.run(
        &[elsewhere.to_str().unwrap(), "t", out],
        nowhere,
        "cpuinfo-avx2",
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        printed(&o).contains("its teacher must be"),
        "{}",
        printed(&o)
    );
    assert!(!r.path("run").exists(), "nothing was made");
}

#[test]
fn precision_follows_the_cpu_and_a_short_run_waits() {
    let r = Round::new();
    let out = r.path("out");
    let recipe = r.recipe(&r.path("run/teacher"));
    let args = [recipe.to_str().unwrap(), "t", out.to_str().unwrap()];
    let fake = r.path("fake-lase");
    let cases = [
        (
            "cpuinfo-amx",
            None,
            "training precision: bf16 (the CPU has AVX512-BF16 or AMX)",
        ),
        (
            "cpuinfo-avx2",
            None,
            "training precision: f32 (the CPU has neither",
        ),
        (
            "cpuinfo-avx2",
            Some("bf16"),
            "training precision: bf16 (LASE_TRAIN_PRECISION)",
        ),
    ];
    for (cpu, precision, line) in cases {
        let o = r.run(&args, &fake, cpu, precision);
        let e = printed(&o);
        assert!(e.contains(line), "{line}\n{e}");
        // The distillation took no step: step 0 of 10, nothing exported or scored.
        assert_eq!(o.status.code(), Some(0), "{e}");
        assert!(e.contains("at step 0 of 10"), "{e}");
        assert!(e.contains("not finished: the rule waits"), "{e}");
        assert!(!e.contains("scoring starts"), "{e}");
    }
    // continue_mini.sh built the teacher in RUN, as the recipe names it.
    assert!(r.path("run/teacher/modules.json").is_file());
    assert!(!r.path("run/export").exists());
}

#[test]
fn a_failed_training_stops_the_round_naming_its_log() {
    let r = Round::new();
    let out = r.path("out");
    let recipe = r.recipe(&r.path("run/teacher"));
    let args = [recipe.to_str().unwrap(), "t", out.to_str().unwrap()];
    let o = r.run(&args, Path::new("/nonexistent/lase"), "cpuinfo-avx2", None);
    let e = printed(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    let log = r.path("run/train.log");
    assert!(
        e.contains(&format!("training failed: {}", log.display())),
        "{e}"
    );
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("/nonexistent/lase")
    );
    assert!(!e.contains("training ended"), "{e}");
}

//! scripts/adopt_default.sh, the sequence that makes a rule's chosen candidate the default:
//! what it refuses before touching the default's folder (no outcome file, no "chosen:" line,
//! no previous evaluation, a chosen run without weights); that "chosen: none" leaves the
//! folder as it was; that a chosen run's weights are copied with the checksum file rewritten
//! to them (other lines kept) before the first evaluation, which fails here because LASE
//! names no binary; and that a folder which does not verify after the copy gets its outgoing
//! weights and checksums back. The evaluations need the shipped data; sessions 13 and 19 ran
//! the same steps by hand (after_arms_s13.sh and after_arms_s19.sh in bench/results).

use std::path::{Path, PathBuf};
use std::process::Output;

use sha2::{Digest, Sha256};

const OLD_WEIGHTS: &[u8] = b"the outgoing default's weights";
const NEW_WEIGHTS: &[u8] = b"the chosen candidate's weights";

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    /// A default folder with weights and a checksum file naming them and a tokenizer, a runs
    /// folder with the candidate `runs/cand` (weights only when `with_weights`), and a
    /// previous Tatoeba JSON.
    fn new(with_weights: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let default = dir.path().join("default");
        std::fs::create_dir_all(&default).unwrap();
        std::fs::write(default.join("model.safetensors"), OLD_WEIGHTS).unwrap();
        std::fs::write(default.join("tokenizer.json"), b"{}").unwrap();
        std::fs::write(
            default.join("checksums.sha256"),
            format!(
                "{}  model.safetensors\n{}  tokenizer.json\n",
                hex(OLD_WEIGHTS),
                hex(b"{}")
            ),
        )
        .unwrap();
        let cand = dir.path().join("runs/cand");
        std::fs::create_dir_all(&cand).unwrap();
        if with_weights {
            std::fs::write(cand.join("model.safetensors"), NEW_WEIGHTS).unwrap();
        }
        std::fs::write(dir.path().join("previous.json"), b"{}").unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs the script with an outcome file holding `outcome`.
    fn run(&self, outcome: &str) -> Output {
        let file = self.path("rule_outcome.txt");
        std::fs::write(&file, outcome).unwrap();
        self.run_with(&file)
    }

    fn run_with(&self, outcome: &Path) -> Output {
        self.run_env(outcome, None, None)
    }

    /// As `run_with`, with PRECISIONS set to `precisions` when given (unset otherwise) and the
    /// CPU's flags read from `cpuinfo` when given (this machine's /proc/cpuinfo otherwise).
    fn run_env(&self, outcome: &Path, precisions: Option<&str>, cpuinfo: Option<&Path>) -> Output {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/adopt_default.sh");
        std::process::Command::new("bash")
            .arg(script)
            .arg(outcome)
            .arg("run99")
            .arg(self.path("out"))
            .arg(self.path("previous.json"))
            // A binary that cannot exist: nothing here may reach `lase`.
            .env("LASE", "/nonexistent/lase")
            .env("LASE_DEFAULT_DIR", self.path("default"))
            .env("LASE_RUNS_DIR", self.path("runs"))
            .env_remove("PRECISIONS")
            .envs(precisions.map(|p| ("PRECISIONS", p)))
            .env_remove("LASE_CPUINFO")
            .envs(cpuinfo.map(|c| ("LASE_CPUINFO", c)))
            .output()
            .expect("bash runs")
    }

    fn default_weights(&self) -> Vec<u8> {
        std::fs::read(self.path("default/model.safetensors")).unwrap()
    }
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn chosen_none_leaves_the_default_as_it_was() {
    let f = Fixture::new(true);
    let o = f.run("dev rows...\nchosen: none (run16 stays)\n");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("stays"), "{}", text(&o));
    assert_eq!(f.default_weights(), OLD_WEIGHTS);
    assert!(
        !f.path("out").exists(),
        "nothing written for a rule that chose nothing"
    );
}

#[test]
fn a_missing_outcome_or_choice_is_refused_naming_the_file() {
    let f = Fixture::new(true);
    let o = f.run_with(&f.path("no-such-outcome.txt"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no-such-outcome.txt"), "{}", text(&o));

    let o = f.run("the rule was cut off before its last line\n");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = text(&o);
    assert!(
        e.contains("rule_outcome.txt") && e.contains("no 'chosen:' line"),
        "{e}"
    );
    assert_eq!(f.default_weights(), OLD_WEIGHTS);
}

#[test]
fn a_missing_previous_evaluation_is_refused_before_the_copy() {
    let f = Fixture::new(true);
    std::fs::remove_file(f.path("previous.json")).unwrap();
    let o = f.run("chosen: cand\n");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("previous.json"), "{}", text(&o));
    assert_eq!(f.default_weights(), OLD_WEIGHTS);
}

#[test]
fn a_folder_that_does_not_verify_gets_its_outgoing_weights_back() {
    let f = Fixture::new(true);
    // Another file of the folder no longer matches its line: the folder cannot verify.
    std::fs::write(f.path("default/tokenizer.json"), b"changed").unwrap();
    let sums_before = std::fs::read_to_string(f.path("default/checksums.sha256")).unwrap();
    let o = f.run("chosen: cand\n");
    let e = text(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("does not verify") && e.contains("outgoing ones are back"),
        "{e}"
    );
    assert_eq!(f.default_weights(), OLD_WEIGHTS);
    assert_eq!(
        std::fs::read_to_string(f.path("default/checksums.sha256")).unwrap(),
        sums_before
    );
    let left: Vec<String> = std::fs::read_dir(f.path("default"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.ends_with(".prev"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_chosen_run_without_weights_is_refused_before_the_copy() {
    let f = Fixture::new(false);
    let o = f.run("chosen: cand\n");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cand/model.safetensors"), "{}", text(&o));
    assert_eq!(f.default_weights(), OLD_WEIGHTS);
}

#[test]
fn the_chosen_weights_are_copied_and_the_checksums_rewritten_before_the_evaluations() {
    let f = Fixture::new(true);
    // The last "chosen:" line counts (a rule applied twice appends a second); the
    // bootstrap lines dev_rule.py prints after its choice are not choices.
    let o = f.run(
        "chosen: none (run16 stays)\nchosen: cand\n\
         bootstrap cand: mean - base +0.500, 95% over the dev labels [+0.1, +0.9], above 0 in 99.0% of 2000 draws\n",
    );
    let e = text(&o);
    // The first evaluation needs `lase`: the script stops there, with a failure status.
    assert_ne!(o.status.code(), Some(0), "{e}");
    assert_eq!(f.default_weights(), NEW_WEIGHTS);
    assert!(!f.path("default/model.safetensors.tmp").exists());
    let sums = std::fs::read_to_string(f.path("default/checksums.sha256")).unwrap();
    assert_eq!(
        sums,
        format!(
            "{}  model.safetensors\n{}  tokenizer.json\n",
            hex(NEW_WEIGHTS),
            hex(b"{}")
        )
    );
    for left in [
        "model.safetensors.prev",
        "checksums.sha256.prev",
        "checksums.sha256.tmp",
    ] {
        assert!(!f.path(&format!("default/{left}")).exists(), "{left}");
    }
    let verified = std::fs::read_to_string(f.path("out/copied-checksums-run99.txt")).unwrap();
    assert!(verified.contains("model.safetensors: OK"), "{verified}");
    let summary = std::fs::read_to_string(f.path("out/eval-run99-summary.txt")).unwrap();
    assert!(summary.contains("/nonexistent/lase"), "{summary}");
}

/// The precisions the test sets are read in after f32 (step 5): bf16 only on a CPU whose
/// flags include AVX512-BF16 or AMX-BF16 (elsewhere libtorch emulates it slowly), and
/// whatever PRECISIONS names when it is set.
#[test]
fn bf16_evaluations_only_where_the_cpu_has_bf16_and_precisions_overrides() {
    let f = Fixture::new(true);
    let outcome = f.path("rule_outcome.txt");
    std::fs::write(&outcome, "chosen: cand\n").unwrap();
    // Two CPUs' flag lines, as /proc/cpuinfo prints them: an AMX Xeon's and an AVX2-only EPYC's.
    let amx = f.path("cpuinfo-amx");
    std::fs::write(
        &amx,
        "flags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n",
    )
    .unwrap();
    let avx2 = f.path("cpuinfo-avx2");
    // avx512_vnni and a flag that merely contains "bf16" must not count.
    std::fs::write(&avx2, "flags\t\t: fpu avx2 fma avx512_vnni xbf16x\n").unwrap();
    let e = text(&f.run_env(&outcome, None, Some(&amx)));
    assert!(
        e.contains("test sets after f32 also in: bf16 int8 ("),
        "{e}"
    );
    let e = text(&f.run_env(&outcome, None, Some(&avx2)));
    assert!(e.contains("test sets after f32 also in: int8 ("), "{e}");
    let e = text(&f.run_env(&outcome, Some("f16 int8"), Some(&avx2)));
    assert!(e.contains("test sets after f32 also in: f16 int8 ("), "{e}");
}

//! scripts/gpu_train.sh end to end on this machine's CPU: the same packing, staging,
//! device command, return pieces and reassembly that a lent GPU machine gets, with
//! LASE_GPU_DEVICE=cpu and this checkout's libtorch. Two rounds: the second packs the
//! checkpoint the first brought back and must continue from its step. The model that
//! comes back must load and embed, and the pair the test-sentence list names must have
//! been dropped on the "device" (which has no benchmark folders).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn script(args: &[&str], env: &[(&str, &Path)]) -> String {
    let mut c = Command::new("bash");
    c.arg(repo().join("scripts/gpu_train.sh")).args(args);
    c.env("LASE_BIN", env!("CARGO_BIN_EXE_lase"));
    c.env("LASE_GPU_DEVICE", "cpu");
    c.env(
        "LASE_GPU_TORCH_LIB",
        repo().join("third_party/libtorch/lib"),
    );
    c.env("LASE_GPU_PART_MB", "8");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("bash runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "gpu_train.sh {args:?} failed:\n{text}"
    );
    text
}

fn step_of(state: &Path) -> u64 {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap();
    v["step"].as_u64().unwrap()
}

/// Runs one device round: stage every part (one "call" each, each with a fresh $OUT),
/// device-run, fetch, unpack.
fn round(name: &str, stage: &Path, outs: &Path, k: usize) {
    let parts_dir = repo().join(format!(".gpu/{name}/parts"));
    let mut parts: Vec<String> = std::fs::read_dir(&parts_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("part-"))
        .collect();
    parts.sort();
    assert!(!parts.is_empty());
    for p in &parts {
        script(&["stage", name, p], &[("LASE_GPU_STAGE", stage)]);
    }
    let run_out = outs.join(format!("run{k}"));
    let fetch_out = outs.join(format!("fetch{k}"));
    std::fs::create_dir_all(&run_out).unwrap();
    std::fs::create_dir_all(&fetch_out).unwrap();
    let log = script(
        // A time limit of 0 s stops after the first step: one step per round.
        &["device-run", name, "0"],
        &[("LASE_GPU_STAGE", stage), ("OUT", &run_out)],
    );
    assert!(log.contains("pieces"), "{log}");
    // What comes back from one call stays within the device tool's limits.
    let files: Vec<_> = std::fs::read_dir(&run_out).unwrap().collect();
    assert!(files.len() <= 8);
    for f in files {
        assert!(f.unwrap().metadata().unwrap().len() <= 16 << 20);
    }
    script(
        &["fetch", name],
        &[("LASE_GPU_STAGE", stage), ("OUT", &fetch_out)],
    );
    script(
        &[
            "unpack",
            name,
            run_out.to_str().unwrap(),
            fetch_out.to_str().unwrap(),
        ],
        &[],
    );
}

#[test]
fn a_run_packed_for_the_gpu_trains_resumes_and_comes_back() {
    let libtorch = repo().join("third_party/libtorch/lib");
    assert!(
        libtorch.is_dir(),
        "{} missing: run scripts/setup.sh",
        libtorch.display()
    );
    let name = format!("test-gpu-bundle-{}", std::process::id());
    // Inputs live inside the checkout (relative paths, as recipes use them).
    let rel = PathBuf::from(format!("target/{name}"));
    let dir = repo().join(&rel);
    std::fs::create_dir_all(&dir).unwrap();
    let mut tsv = String::new();
    for i in 0..300 {
        let w = common::TINY_WORDS;
        let (a, b) = (w[i % w.len()], w[(i * 7 + 3) % w.len()]);
        tsv.push_str(&format!("{a} {b} {i}\t{b} {a} {i}\n"));
    }
    // One pair holds a "test sentence": the device must drop it without the benchmarks.
    tsv.push_str("leaked test sentence\tanother side\n");
    std::fs::write(dir.join("pairs.tsv"), tsv).unwrap();
    std::fs::write(dir.join("tests.txt"), "leaked test sentence\n").unwrap();
    std::fs::write(dir.join("tok.json"), common::tiny_tokenizer_json()).unwrap();
    let recipe = rel.join("recipe.toml");
    std::fs::write(
        repo().join(&recipe),
        format!(
            r#"[model]
layers = 1
hidden = 32
heads = 2
ffn = 64
max_tokens = 16

[tokenizer]
path = "{r}/tok.json"

[data]
sources = [{{ format = "tsv", path = "{r}/pairs.tsv", src_lang = "de", tgt_lang = "en", weight = 1.0 }}]
exclude_test_sets = "{r}/tests.txt"
dev = {{ pairs_per_language = 20, min_language_pairs = 100 }}

[objective]
contrastive = "info-nce"
xtr = false

[schedule]
steps = 10
warmup_steps = 2
batch_pairs = 16

[run]
log_every = 1
eval_every = 100
checkpoint_every = 2
"#,
            r = rel.display()
        ),
    )
    .unwrap();
    let stage = dir.join("stage");
    let outs = dir.join("outs");

    // Round 1: one step (a --set travels with the bundle), then back here.
    let pack_args = [
        "pack",
        &name,
        recipe.to_str().unwrap(),
        "--set",
        "optimizer.lr=1e-3",
    ];
    let packed = script(&pack_args, &[]);
    assert!(packed.contains("device-run"), "{packed}");
    assert!(packed.contains("1 test sentences found"), "{packed}");
    round(&name, &stage, &outs, 1);
    let run = repo().join(format!("runs/{name}"));
    let state = run.join("checkpoint/state.json");
    assert_eq!(step_of(&state), 1);
    assert!(run.join("checkpoint/TRANSFERRED").exists());
    assert!(!run.join("checkpoint/optimizer.safetensors").exists());
    let log = std::fs::read_to_string(outs.join("run1/run.log")).unwrap();
    assert!(log.contains("dropped 1 training pairs"), "{log}");

    // The weights that came back load and embed.
    let sentences = dir.join("s.txt");
    std::fs::write(&sentences, "hello world\nthe cat\n").unwrap();
    let npy = dir.join("v.npy");
    let embed = Command::new(env!("CARGO_BIN_EXE_lase"))
        .args(["embed", "--model"])
        .arg(run.join("checkpoint/encoder"))
        .arg("--input")
        .arg(&sentences)
        .arg("--output")
        .arg(&npy)
        .output()
        .unwrap();
    assert!(
        embed.status.success(),
        "{}",
        String::from_utf8_lossy(&embed.stderr)
    );
    let m = lase::io::npy::NpyMatrix::open(&npy).unwrap();
    assert_eq!((m.rows, m.cols), (2, 32));

    // Round 2: a fresh "machine" (nothing staged); the next pack carries the checkpoint
    // that came back, and the run goes on from step 1.
    std::fs::remove_dir_all(&stage).unwrap();
    let packed = script(&pack_args, &[]);
    assert!(packed.contains("resuming"), "{packed}");
    round(&name, &stage, &outs, 2);
    let log = std::fs::read_to_string(outs.join("run2/run.log")).unwrap();
    assert!(
        log.contains("AdamW restarts its moments at step 1"),
        "{log}"
    );
    assert_eq!(step_of(&state), 2);

    std::fs::remove_dir_all(&run).unwrap();
    std::fs::remove_dir_all(repo().join(format!(".gpu/{name}"))).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

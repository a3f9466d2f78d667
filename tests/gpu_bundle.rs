//! scripts/gpu_train.sh end to end on this machine's CPU: the same packing, staging,
//! device command, return pieces and reassembly that a lent GPU machine gets, with
//! LASE_GPU_DEVICE=cpu and this checkout's libtorch. Two rounds: the second packs the
//! checkpoint the first brought back and must continue from its step. The model that
//! comes back must load and embed, and the pair the test-sentence list names must have
//! been dropped on the "device" (which has no benchmark folders). device-bench's
//! train-step part runs from the bundle too, lase's side only (no PyTorch here), on CPU in
//! bf16: the train_step example and bench/train_step.py travel and run as on the device.

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

/// The train_step example, built by the cargo and profile that built this test
/// (`cargo test --test gpu_bundle` builds no examples; an older build may be stale).
fn train_step_bin() -> PathBuf {
    let lase = PathBuf::from(env!("CARGO_BIN_EXE_lase"));
    let profile_dir = lase.parent().unwrap();
    let profile = match profile_dir.file_name().unwrap().to_str().unwrap() {
        "debug" => "dev",
        other => other,
    };
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--example",
            "train_step",
            "--profile",
            profile,
        ])
        .arg("--target-dir")
        .arg(profile_dir.parent().unwrap())
        .current_dir(repo())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo build --example train_step failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = profile_dir.join("examples/train_step");
    assert!(bin.is_file(), "{} missing", bin.display());
    bin
}

fn step_of(state: &Path) -> u64 {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap();
    v["step"].as_u64().unwrap()
}

/// Runs one device round: stage every part (one "call" each, each with a fresh $OUT),
/// device-run, fetch, unpack.
/// Returns device-run's output.
fn round(name: &str, stage: &Path, outs: &Path, k: usize) -> String {
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
    if k == 1 {
        device_bench(name, stage, &outs.join("bench1"));
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
    log
}

/// How many model.safetensors files the pieces that came back hold.
fn weight_files_returned(outs: &[PathBuf]) -> usize {
    let mut pieces: Vec<PathBuf> = outs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("piece-")
        })
        .collect();
    pieces.sort_by_key(|p| p.file_name().unwrap().to_owned());
    let joined = outs[0].with_file_name("pieces-joined.gz");
    let bytes: Vec<u8> = pieces
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    std::fs::write(&joined, bytes).unwrap();
    let listed = Command::new("tar")
        .arg("-tzf")
        .arg(&joined)
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|l| l.ends_with("model.safetensors"))
        .count()
}

/// device-bench's train-step part from the staged bundle: lase's side of
/// bench/train_step.py (the bundled example binary, pairs and tokenizer), bf16 on CPU.
fn device_bench(name: &str, stage: &Path, out: &Path) {
    std::fs::create_dir_all(out).unwrap();
    let args = Path::new("--engines lase --pairs 16 --steps 1 --warmup 0 --threads 1");
    let log = script(
        &["device-bench", name, "train-step"],
        &[
            ("LASE_GPU_STAGE", stage),
            ("OUT", out),
            ("LASE_GPU_BENCH_PRECISIONS", Path::new("bf16")),
            ("LASE_GPU_BENCH_TRAIN_ARGS", args),
            // The device's per-part time limit is no test of a loaded CI machine.
            ("LASE_GPU_BENCH_TRAIN_SECONDS", Path::new("600")),
        ],
    );
    let bench = std::fs::read_to_string(out.join("bench.txt")).unwrap();
    assert!(
        bench.contains("device cpu, precision bf16"),
        "{bench}\n{log}"
    );
    assert!(bench.contains("lase     median"), "{bench}\n{log}");
    assert!(!bench.contains("failed"), "{bench}\n{log}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("train-step-bf16.json")).unwrap())
            .unwrap();
    let lase = &json["lase"];
    assert_eq!(lase["precision"], "bf16", "{json}");
    assert_eq!(lase["device"], "cpu", "{json}");
    assert_eq!(lase["step_seconds"].as_array().unwrap().len(), 1, "{json}");
    assert!(lase["losses"][0].as_f64().unwrap().is_finite(), "{json}");
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
    // device-bench's train-step batch: 16 pairs over the tiny vocabulary.
    let mut bench_pairs = String::new();
    for i in 0..16 {
        let w = common::TINY_WORDS;
        let (a, b) = (w[i % w.len()], w[(i * 5 + 1) % w.len()]);
        bench_pairs.push_str(&format!("{a} {b} {a}\t{b} {a}\n"));
    }
    std::fs::write(dir.join("bench-pairs.tsv"), bench_pairs).unwrap();
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
eval_every = 1
checkpoint_every = 2
"#,
            r = rel.display()
        ),
    )
    .unwrap();
    // A second recipe in the same bundle (LASE_GPU_ARMS): its own run name, trained by
    // `device-run NAME SECONDS ARM`, its files in $OUT/ARM. It extends the first, and
    // travels resolved (no `extends` left for the device to follow).
    let arm = format!("{name}-arm");
    let arm_recipe = rel.join(format!("{arm}.toml"));
    std::fs::write(
        repo().join(&arm_recipe),
        "extends = \"recipe.toml\"\n\n[objective]\ncontrastive = \"ams\"\n",
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
    let (train_step, bench_pairs, bench_tok) = (
        train_step_bin(),
        dir.join("bench-pairs.tsv"),
        dir.join("tok.json"),
    );
    let pack_env = [
        ("LASE_TRAIN_STEP_BIN", train_step.as_path()),
        ("LASE_GPU_BENCH_PAIRS", bench_pairs.as_path()),
        ("LASE_GPU_BENCH_TOKENIZER", bench_tok.as_path()),
        ("LASE_GPU_ARMS", arm_recipe.as_path()),
    ];
    let packed = script(&pack_args, &pack_env);
    assert!(packed.contains("device-run"), "{packed}");
    assert!(packed.contains("1 test sentences found"), "{packed}");
    // The arms' device line runs every run at once and keeps their pieces for fetch calls.
    for want in [
        format!("LASE_GPU_RETURN_PIECES=0; bash scripts/gpu_train.sh device-run {name} 480 &"),
        format!("device-run {name} 480 {arm} &"),
        format!("fetch {name} {arm}"),
        format!("unpack {arm} FILES_AT_OF_DEVICE_RUN/{arm}"),
    ] {
        assert!(packed.contains(&want), "{want} not in {packed}");
    }
    let log = round(&name, &stage, &outs, 1);
    let staged_arm =
        std::fs::read_to_string(stage.join(&name).join("bundle/tree/repo").join(&arm_recipe))
            .unwrap();
    assert!(
        staged_arm.contains("contrastive = \"ams\"")
            && staged_arm.contains("xtr = false")
            && staged_arm.contains("batch_pairs = 16")
            && !staged_arm.contains("extends"),
        "{staged_arm}"
    );

    // The arm, on the same staged bundle: its own run, files and pieces, which stay on
    // the "device" (LASE_GPU_RETURN_PIECES=0, as in the arms' line) until fetch.
    let arm_out = outs.join("arm1");
    let arm_fetch = outs.join("arm-fetch1");
    let no_pieces = PathBuf::from("0");
    script(
        &["device-run", &name, "0", &arm],
        &[
            ("LASE_GPU_STAGE", &stage),
            ("OUT", &arm_out),
            ("LASE_GPU_RETURN_PIECES", &no_pieces),
        ],
    );
    let pieces_in = |d: &Path| {
        std::fs::read_dir(d)
            .map(|r| {
                r.filter(|e| {
                    let n = e.as_ref().unwrap().file_name();
                    n.to_string_lossy().starts_with("piece-")
                })
                .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(pieces_in(&arm_out.join(&arm)), 0);
    let arm_log = std::fs::read_to_string(arm_out.join(&arm).join("run.log")).unwrap();
    assert!(arm_log.contains("dropped 1 training pairs"), "{arm_log}");
    assert!(arm_out.join(&arm).join("pieces.sha256").is_file());
    script(
        &["fetch", &name, &arm],
        &[("LASE_GPU_STAGE", &stage), ("OUT", &arm_fetch)],
    );
    assert!(
        pieces_in(&arm_fetch.join(&arm)) >= 1,
        "fetch brought the arm's pieces"
    );
    script(
        &[
            "unpack",
            &arm,
            arm_out.join(&arm).to_str().unwrap(),
            arm_fetch.join(&arm).to_str().unwrap(),
        ],
        &[],
    );
    let arm_run = repo().join(format!("runs/{arm}"));
    let arm_config = std::fs::read_to_string(arm_run.join("config.toml")).unwrap();
    assert!(arm_config.contains("contrastive = \"ams\""), "{arm_config}");
    assert_eq!(step_of(&arm_run.join("checkpoint/state.json")), 1);
    std::fs::remove_dir_all(&arm_run).unwrap();
    // The best-dev model is the checkpoint's step here: its weights travel once, and
    // unpack makes best-model/ of them.
    assert!(
        log.contains("best-model is the checkpoint's step 1"),
        "{log}"
    );
    assert_eq!(
        weight_files_returned(&[outs.join("run1"), outs.join("fetch1")]),
        1
    );
    let run = repo().join(format!("runs/{name}"));
    let state = run.join("checkpoint/state.json");
    assert_eq!(step_of(&state), 1);
    assert!(run.join("checkpoint/TRANSFERRED").exists());
    assert!(!run.join("checkpoint/optimizer.safetensors").exists());
    // The weights travel as f16 (half the bytes of a return).
    let weights = std::fs::read(run.join("checkpoint/encoder/model.safetensors")).unwrap();
    let header_len = u64::from_le_bytes(weights[..8].try_into().unwrap()) as usize;
    let header = String::from_utf8_lossy(&weights[8..8 + header_len]).to_string();
    assert!(
        header.contains("\"F16\"") && !header.contains("\"F32\""),
        "{header}"
    );
    let log = std::fs::read_to_string(outs.join("run1/run.log")).unwrap();
    assert!(log.contains("dropped 1 training pairs"), "{log}");
    // The call's best-dev model comes back beside the checkpoint, f16 too.
    let dev: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("best-model/dev.json")).unwrap())
            .unwrap();
    assert_eq!(dev["step"], 1, "{dev}");
    let best = std::fs::read(run.join("best-model/model.safetensors")).unwrap();
    assert!(String::from_utf8_lossy(&best[..4096.min(best.len())]).contains("\"F16\""));

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
    let packed = script(&pack_args, &pack_env);
    assert!(packed.contains("resuming"), "{packed}");
    let _ = round(&name, &stage, &outs, 2);
    let log = std::fs::read_to_string(outs.join("run2/run.log")).unwrap();
    assert!(
        log.contains("AdamW restarts its moments at step 1"),
        "{log}"
    );
    assert_eq!(step_of(&state), 2);
    // The second call's best replaces the first's only where it scored higher.
    let dev2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("best-model/dev.json")).unwrap())
            .unwrap();
    assert!(
        dev2["dev_p_at_1"].as_f64().unwrap() >= dev["dev_p_at_1"].as_f64().unwrap(),
        "{dev2} after {dev}"
    );

    std::fs::remove_dir_all(&run).unwrap();
    std::fs::remove_dir_all(repo().join(format!(".gpu/{name}"))).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A part size that, beside this checkout's travelling tree, makes a call over the device's
/// 64 MiB is refused before anything is packed (the device would refuse every call), and so
/// is one that is no size at all.
#[test]
fn pack_refuses_parts_the_call_has_no_room_for() {
    let name = "lase-gpu-bundle-too-big";
    // This checkout's tree decides which refusal a 64 MiB part gets: "at most N MiB" where
    // the tree leaves some room, "no room for a part" where it alone fills a call (a
    // checkout with its committed models and no slim-tree).
    for (part_mb, expected) in [
        (
            "64",
            &["room for parts of at most", "no room for a part"][..],
        ),
        ("abc", &["a whole number of MiB"][..]),
        ("0", &["a whole number of MiB"][..]),
    ] {
        let out = Command::new("bash")
            .arg(repo().join("scripts/gpu_train.sh"))
            .args(["pack", name, "configs/lase-base-mse2-more-gpu.toml"])
            .env("LASE_BIN", env!("CARGO_BIN_EXE_lase"))
            .env("LASE_GPU_BENCH_TRAIN_STEP", "0")
            .env("LASE_GPU_PART_MB", part_mb)
            .env_remove("LASE_GPU_DEVICE") // a rehearsal on CPU skips the room check
            .current_dir(repo())
            .output()
            .expect("bash runs");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "parts of {part_mb} MiB were packed:\n{text}"
        );
        assert!(
            text.contains(&format!("LASE_GPU_PART_MB={part_mb}"))
                || text.contains("travelling tree"),
            "{text}"
        );
        assert!(
            expected.iter().any(|e| text.contains(e)),
            "{part_mb}: {text}"
        );
        assert!(
            !repo().join(".gpu").join(name).exists(),
            "pack wrote a bundle before refusing"
        );
    }
}

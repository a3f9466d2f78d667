//! Python sentence-transformers loads folders that lase writes and computes the same
//! vectors. Needs a Python with sentence-transformers (`.venv/bin/python` by default, or
//! LASE_PYTHON), which CI does not have, so it is ignored there; run it with
//!     cargo test --release --test python_interop -- --ignored

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use lase::io::npy::write_f32;
use lase::model::{PoolingMode, SentenceEncoder};

fn python() -> PathBuf {
    std::env::var_os("LASE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path(".venv/bin/python"))
}

fn check(model: &SentenceEncoder, sentences: &[&str], label: &str) {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("model");
    model.save(&folder).unwrap();
    let vectors = model.encode(sentences, 8).unwrap();
    let (n, d) = vectors.size2().unwrap();
    let values = Vec::<f32>::try_from(vectors.flatten(0, -1)).unwrap();
    write_f32(dir.path().join("v.npy"), n as usize, d as usize, &values).unwrap();
    std::fs::write(dir.path().join("s.txt"), sentences.join("\n") + "\n").unwrap();
    let out = Command::new(python())
        .arg(repo_path(
            "tests/fixtures/check_python_loads_lase_folder.py",
        ))
        .arg(&folder)
        .arg(dir.path().join("s.txt"))
        .arg(dir.path().join("v.npy"))
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .expect("python with sentence-transformers (set LASE_PYTHON)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{label}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{label}: {}", stdout.trim());
}

#[test]
#[ignore = "needs Python sentence-transformers"]
fn sentence_transformers_loads_what_lase_writes() {
    let sentences = [
        "the cat sat on the mat",
        "der hund ist groß",
        "a",
        "blue house and a red dog",
    ];
    check(
        &tiny_encoder(tiny_config(), mean_head(16, true), 31),
        &sentences,
        "bert mean normalize",
    );
    check(
        &tiny_encoder(tiny_config(), dense_head(16, 8, PoolingMode::Cls), 32),
        &sentences,
        "bert cls + dense(tanh) + normalize",
    );
    let mut xlmr = tiny_config();
    xlmr.model_type = "xlm-roberta".into();
    xlmr.max_position_embeddings = 42;
    xlmr.type_vocab_size = 1;
    check(
        &tiny_encoder(xlmr, mean_head(16, false), 33),
        &sentences,
        "xlm-roberta mean",
    );
    if let Some(dir) = teacher_dir() {
        let teacher = SentenceEncoder::load(dir, tch::Device::Cpu).unwrap();
        let text =
            lase::io::text::read_lines(repo_path("tests/fixtures/minilm/sentences.txt")).unwrap();
        let refs: Vec<&str> = text.iter().map(String::as_str).collect();
        check(&teacher, &refs, "all-MiniLM-L6-v2 re-saved by lase");
    }
}

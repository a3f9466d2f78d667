//! Numerical parity with Python sentence-transformers on the real all-MiniLM-L6-v2.
//! Reference vectors and token counts were made once by
//! tests/fixtures/minilm/make_reference.py (sentence-transformers 6.2, torch 2.11).
//! The sentences include texts longer than the tokenizer.json's 128-token truncation and
//! the model's 256-token max_seq_length, non-Latin scripts, emoji and an empty line.

mod common;

use common::*;
use lase::io::npy::NpyMatrix;
use lase::io::text::read_lines;
use lase::model::{Precision, SentenceEncoder};
use tch::Device;

fn fixture() -> (Vec<String>, NpyMatrix, Vec<usize>) {
    let dir = repo_path("tests/fixtures/minilm");
    let sentences = read_lines(dir.join("sentences.txt")).unwrap();
    let reference = NpyMatrix::open(dir.join("reference.npy")).unwrap();
    let counts = read_lines(dir.join("token_counts.txt"))
        .unwrap()
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(reference.rows, sentences.len());
    (sentences, reference, counts)
}

fn assert_parity(
    vectors: &tch::Tensor,
    reference: &NpyMatrix,
    sentences: &[String],
    bound: f64,
    what: &str,
) {
    let got = rows(vectors);
    let mut worst = 1.0f64;
    for (i, row) in got.iter().enumerate() {
        let c = cosine(row, &reference.row(i));
        worst = worst.min(c);
        assert!(
            c >= bound,
            "{what}: sentence {i} ({:?}...) cosine {c:.7} < {bound}",
            sentences[i].chars().take(40).collect::<String>()
        );
    }
    eprintln!(
        "{what}: worst cosine over {} sentences {worst:.8}",
        got.len()
    );
}

#[test]
fn tokenization_matches_sentence_transformers() {
    let Some(dir) = teacher_dir() else { return };
    let (sentences, _, counts) = fixture();
    let model = SentenceEncoder::load(&dir, Device::Cpu).unwrap();
    assert_eq!(
        model.tokenizer().max_length(),
        256,
        "max_seq_length comes from sentence_bert_config.json"
    );
    let tokens = model.tokenize(&sentences).unwrap();
    let lengths: Vec<usize> = tokens.iter().map(|t| t.len()).collect();
    assert_eq!(lengths, counts);
    assert!(
        lengths.iter().any(|&n| n > 128 && n < 256),
        "fixture must exercise the 128..256 range"
    );
}

#[test]
fn float32_vectors_match_sentence_transformers() {
    let Some(dir) = teacher_dir() else { return };
    let (sentences, reference, _) = fixture();
    let model = SentenceEncoder::load(&dir, Device::Cpu).unwrap();
    assert_eq!(model.dim(), 384);
    assert!(model.normalizes());
    for batch_size in [1, 7, 64] {
        let vectors = model.encode(&sentences, batch_size).unwrap();
        assert_parity(
            &vectors,
            &reference,
            &sentences,
            0.99999,
            &format!("f32 batch {batch_size}"),
        );
    }
}

#[test]
fn bfloat16_stays_close_to_float32() {
    let Some(dir) = teacher_dir() else { return };
    let (sentences, reference, _) = fixture();
    let mut model = SentenceEncoder::load(&dir, Device::Cpu).unwrap();
    model.set_precision(Precision::Bf16);
    let vectors = model.encode(&sentences, 16).unwrap();
    assert_parity(&vectors, &reference, &sentences, 0.999, "bf16");
}

#[test]
fn saved_teacher_reloads_to_the_same_vectors() {
    let Some(dir) = teacher_dir() else { return };
    let (sentences, _, _) = fixture();
    let model = SentenceEncoder::load(&dir, Device::Cpu).unwrap();
    let before = model.encode(&sentences, 16).unwrap();
    let out = tempfile::tempdir().unwrap();
    model.save(out.path()).unwrap();
    let reloaded = SentenceEncoder::load(out.path(), Device::Cpu).unwrap();
    let after = reloaded.encode(&sentences, 16).unwrap();
    assert!(before.equal(&after), "save/load changed the vectors");
    assert_eq!(reloaded.tokenizer().max_length(), 256);
}

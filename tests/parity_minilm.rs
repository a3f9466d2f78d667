//! Numerical parity with Python sentence-transformers on the real all-MiniLM-L6-v2.
//! Reference vectors and token counts were made once by
//! tests/fixtures/minilm/make_reference.py (sentence-transformers 6.2, torch 2.11).
//! The sentences include texts longer than the tokenizer.json's 128-token truncation and
//! the model's 256-token max_seq_length, non-Latin scripts, emoji and an empty line.

mod common;

use common::*;
use lase::io::npy::NpyMatrix;
use lase::io::text::read_lines;
use lase::model::linear::LinearKernel;
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
    model.set_precision(Precision::Bf16).unwrap();
    // On a CPU with bfloat16 instructions the layers' weights are packed for oneDNN.
    if lase::runtime::cpu_has_fast_bf16() {
        assert_eq!(model.linear_kernel(), LinearKernel::PackedBf16);
    }
    let vectors = model.encode(&sentences, 16).unwrap();
    assert_parity(&vectors, &reference, &sentences, 0.999, "bf16");
}

/// Int8 linear layers (src/model/int8.rs): close to PyTorch's float32 vectors, measurably
/// not float32 (the int8 kernels really ran), the same for a sentence alone as in a batch
/// of 16 up to int8's rounding (activations are quantised per token, not per batch), and
/// switching back restores the exact float32 forward pass. Training refuses int8.
#[test]
fn int8_stays_close_to_float32_and_switches_back_exactly() {
    let Some(dir) = teacher_dir() else { return };
    let (sentences, reference, _) = fixture();
    let mut model = SentenceEncoder::load(&dir, Device::Cpu).unwrap();
    let float = model.encode(&sentences, 16).unwrap();
    model.set_precision(Precision::Int8).unwrap();
    assert_eq!(model.precision(), Precision::Int8);
    let int8 = model.encode(&sentences, 16).unwrap();
    let (float_rows, int8_rows) = (rows(&float), rows(&int8));
    let cosines: Vec<f64> = float_rows
        .iter()
        .zip(&int8_rows)
        .map(|(a, b)| cosine(a, b))
        .collect();
    let worst = cosines.iter().cloned().fold(1.0, f64::min);
    let mean = cosines.iter().sum::<f64>() / cosines.len() as f64;
    println!(
        "int8 vs float32 on {} sentences: worst cosine {worst:.5}, mean {mean:.5}",
        cosines.len()
    );
    assert!(
        worst < 0.9999,
        "int8 vectors equal float32's: the int8 kernels did not run"
    );
    assert!(mean > 0.99, "int8 mean cosine {mean}");
    assert_parity(&int8, &reference, &sentences, 0.97, "int8");
    // Alone vs in its batch of 16. With one activation scale per token no sentence sets
    // another's scale; what remains is the float32 attention's last bits, which differ
    // with the padded length and can tip a rounding to int8 in a later layer (bf16
    // rounds the same way, at its finer step). Measured on this CPU: per token mean
    // cosine 0.9996, worst 0.994-0.995 (the emoji line); one scale per call (lase before
    // 2026-11-25, as PyTorch's and ONNX Runtime's dynamic int8) mean 0.9899, worst 0.962.
    let alone: Vec<f64> = sentences
        .iter()
        .enumerate()
        .map(|(i, sentence)| {
            let alone = rows(&model.encode(std::slice::from_ref(sentence), 1).unwrap());
            cosine(&alone[0], &int8_rows[i])
        })
        .collect();
    let alone_worst = alone.iter().cloned().fold(1.0, f64::min);
    let alone_mean = alone.iter().sum::<f64>() / alone.len() as f64;
    println!(
        "int8, each sentence alone vs in its batch: worst cosine {alone_worst:.5}, mean {alone_mean:.6}"
    );
    assert!(
        alone_mean > 0.999 && alone_worst > 0.99,
        "a sentence's int8 vector depends on its batch: mean cosine {alone_mean}, worst {alone_worst}"
    );
    model.set_precision(Precision::F32).unwrap();
    assert!(model.encode(&sentences, 16).unwrap().equal(&float));
    let err = model.set_mixed_precision(Precision::Int8).unwrap_err();
    assert!(err.to_string().contains("inference precision"), "{err}");
}

/// `auto` keeps the hardware's candidate only within its budget: an impossible budget
/// always falls back to float32 (and says why), a budget of -1 always keeps the candidate.
#[test]
fn auto_precision_keeps_its_candidate_only_within_the_budget() {
    use lase::model::auto_precision::{
        AutoPrecisionBudget, hardware_candidate, set_auto_precision,
    };
    let Some(dir) = teacher_dir() else { return };
    let (sentences, _, _) = fixture();
    let mut model = SentenceEncoder::load(&dir, Device::Cpu).unwrap();
    let float = model.encode(&sentences, 16).unwrap();
    let (candidate, _) = hardware_candidate(Device::Cpu);
    let strict = set_auto_precision(&mut model, AutoPrecisionBudget { min_cosine: 1.1 }).unwrap();
    assert_eq!(strict.precision, Precision::F32, "{}", strict.reason);
    assert_eq!(model.precision(), Precision::F32);
    assert!(model.encode(&sentences, 16).unwrap().equal(&float));
    if candidate != Precision::F32 {
        assert!(
            strict.reason.contains("< 1.1: float32"),
            "{}",
            strict.reason
        );
    }
    let loose = set_auto_precision(&mut model, AutoPrecisionBudget { min_cosine: -1.0 }).unwrap();
    assert_eq!(loose.precision, candidate, "{}", loose.reason);
    assert_eq!(model.precision(), candidate);
    println!("auto on this CPU: {:?} ({})", loose.precision, loose.reason);
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
    // Storage is lossless: every weight comes back bit for bit, under the same names.
    let (saved, loaded) = (
        model.var_store().variables(),
        reloaded.var_store().variables(),
    );
    let mut names: Vec<_> = saved.keys().collect();
    names.sort();
    assert_eq!(names.len(), loaded.len(), "a weight was dropped or added");
    for name in names {
        let back = loaded
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing after reload"));
        assert!(saved[name].equal(back), "{name} changed on save/load");
    }
    assert_eq!(reloaded.config(), model.config());
    assert_eq!(reloaded.tokenizer().max_length(), 256);
    // The vectors: the same weights in other memory may take another BLAS path (MKL's
    // results depend on alignment and thread partitioning unless CBWR is set), so they
    // agree to float32 rounding, not always bit for bit (one CI run differed).
    let worst = (&before - &after).abs().max().double_value(&[]);
    assert!(
        worst <= 1e-5,
        "save/load changed the vectors by up to {worst}"
    );
}

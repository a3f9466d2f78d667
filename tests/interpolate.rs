//! `lase interpolate` (WiSE-FT): every weight on the line between two models, and clear
//! refusals where the two do not share an architecture or a vocabulary.

mod common;

use common::*;
use lase::interpolate::interpolate;
use lase::model::SentenceEncoder;
use tch::Tensor;

fn saved(seed: i64, config: lase::model::EncoderConfig, dir: &std::path::Path) -> SentenceEncoder {
    let model = tiny_encoder(config, mean_head(16, false), seed);
    model.save(dir).unwrap();
    SentenceEncoder::load(dir, tch::Device::Cpu).unwrap()
}

/// The error `interpolate` gives; a test failure naming `case` where it interpolated.
fn refusal(from: &std::path::Path, to: &std::path::Path, alpha: f64, case: &str) -> String {
    match interpolate(from, to, alpha) {
        Ok(_) => panic!("{case}, yet it interpolated"),
        Err(e) => e.to_string(),
    }
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

#[test]
fn every_weight_lies_on_the_line_between_the_two_models() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let a = saved(3, tiny_config(), &a_dir);
    let b = saved(4, tiny_config(), &b_dir);
    let (va, vb) = (a.var_store().variables(), b.var_store().variables());
    for (alpha, tolerance) in [(0.0, 0.0), (1.0, 0.0), (0.25, 1e-6)] {
        let mixed = interpolate(&a_dir, &b_dir, alpha).unwrap();
        let vm = mixed.var_store().variables();
        assert_eq!(vm.len(), va.len());
        let mut moved = 0;
        for (name, t) in &vm {
            let expected = &va[name] * (1.0 - alpha) + &vb[name] * alpha;
            let d = max_diff(t, &expected);
            assert!(d <= tolerance, "{name} at alpha {alpha}: off by {d}");
            moved += usize::from(max_diff(t, &va[name]) > 0.0);
        }
        // Seeds 3 and 4 differ in every parameter that is drawn at random: away from 0,
        // they all move.
        assert_eq!(moved > 0, alpha > 0.0, "alpha {alpha}: {moved} moved");
    }
    // What is saved is what was computed.
    let out = dir.path().join("mid");
    interpolate(&a_dir, &b_dir, 0.25)
        .unwrap()
        .save(&out)
        .unwrap();
    let back = SentenceEncoder::load(&out, tch::Device::Cpu).unwrap();
    let s = ["the cat sat", "der hund"];
    let (x, y) = (
        back.encode(&s, 2).unwrap(),
        interpolate(&a_dir, &b_dir, 0.25)
            .unwrap()
            .encode(&s, 2)
            .unwrap(),
    );
    assert!(max_diff(&x, &y) < 1e-6);
}

#[test]
fn models_that_do_not_share_shapes_or_a_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, c_dir) = (dir.path().join("a"), dir.path().join("c"));
    saved(3, tiny_config(), &a_dir);
    let mut wider = tiny_config();
    wider.intermediate_size *= 2;
    saved(5, wider, &c_dir);
    let e = refusal(&a_dir, &c_dir, 0.5, "shapes differ");
    assert!(
        e.contains("intermediate.dense") && e.contains("shape"),
        "{e}"
    );
    let e = refusal(&a_dir, &a_dir, 1.5, "alpha out of range");
    assert!(e.contains("alpha 1.5"), "{e}");
}

/// The tiny tokenizer with `words` appended after its last id (as `lase tokenizer extend`
/// appends pieces), or, with `swap_first`, also its first two words' ids exchanged.
fn extended_tokenizer(words: &[&str], swap_first: bool) -> String {
    let mut json: serde_json::Value = serde_json::from_str(&tiny_tokenizer_json()).unwrap();
    let vocab = json["model"]["vocab"].as_object_mut().unwrap();
    let n = vocab.len();
    for (i, w) in words.iter().enumerate() {
        vocab.insert(w.to_string(), serde_json::Value::from(n + i));
    }
    if swap_first {
        let (a, b) = (TINY_WORDS[0], TINY_WORDS[1]);
        let (ia, ib) = (vocab[a].clone(), vocab[b].clone());
        vocab.insert(a.into(), ib);
        vocab.insert(b.into(), ia);
    }
    json.to_string()
}

/// A tiny model with its own tokenizer.json, saved to `dir`.
fn saved_with_tokenizer(
    seed: i64,
    config: lase::model::EncoderConfig,
    tokenizer_json: String,
    dir: &std::path::Path,
) {
    let _rng = torch_rng();
    tch::manual_seed(seed);
    SentenceEncoder::new(
        config,
        tokenizer_json,
        32,
        mean_head(16, false),
        tch::Device::Cpu,
    )
    .unwrap()
    .save(dir)
    .unwrap();
}

fn saved_extended(seed: i64, words: &[&str], swap_first: bool, dir: &std::path::Path) {
    let mut config = tiny_config();
    config.vocab_size += words.len();
    saved_with_tokenizer(seed, config, extended_tokenizer(words, swap_first), dir);
}

#[test]
fn across_a_vocabulary_extension_the_appended_rows_stay_and_the_rest_moves() {
    let dir = tempfile::tempdir().unwrap();
    let (ext_dir, base_dir) = (dir.path().join("ext"), dir.path().join("base"));
    let added = ["zebra", "quokka", "wombat"];
    saved_extended(6, &added, false, &ext_dir);
    saved(7, tiny_config(), &base_dir);
    let ext = SentenceEncoder::load(&ext_dir, tch::Device::Cpu).unwrap();
    let base = SentenceEncoder::load(&base_dir, tch::Device::Cpu).unwrap();
    let (ve, vb) = (ext.var_store().variables(), base.var_store().variables());
    let alpha = 0.3;
    let mixed = interpolate(&ext_dir, &base_dir, alpha).unwrap();
    assert_eq!(
        mixed.tokenizer_json(),
        ext.tokenizer_json(),
        "the extended tokenizer is kept"
    );
    let vm = mixed.var_store().variables();
    let n = vb
        .iter()
        .find(|(k, _)| k.ends_with("word_embeddings.weight"))
        .map(|(_, t)| t.size()[0])
        .unwrap();
    let mut embedding_seen = false;
    for (name, t) in &vm {
        if name.ends_with("word_embeddings.weight") {
            embedding_seen = true;
            assert_eq!(t.size()[0], n + added.len() as i64);
            let shared = t.narrow(0, 0, n);
            let expected = ve[name].narrow(0, 0, n) * (1.0 - alpha) + &vb[name] * alpha;
            assert!(
                max_diff(&shared, &expected) < 1e-6,
                "shared rows off the line"
            );
            let appended = t.narrow(0, n, added.len() as i64);
            assert_eq!(
                max_diff(&appended, &ve[name].narrow(0, n, added.len() as i64)),
                0.0,
                "the appended rows changed"
            );
            assert!(max_diff(&appended, &appended.zeros_like()) > 0.0);
        } else {
            let expected = &ve[name] * (1.0 - alpha) + &vb[name] * alpha;
            assert!(max_diff(t, &expected) < 1e-6, "{name} off the line");
        }
    }
    assert!(embedding_seen);
    // A sentence of an appended word embeds through its own (kept) row.
    let v = mixed.encode(&["zebra quokka"], 1).unwrap();
    assert!(v.isfinite().all().int64_value(&[]) == 1);
}

#[test]
fn an_extension_given_second_or_a_reordered_vocabulary_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (ext_dir, base_dir, moved_dir) = (
        dir.path().join("ext"),
        dir.path().join("base"),
        dir.path().join("moved"),
    );
    saved_extended(6, &["zebra"], false, &ext_dir);
    saved(7, tiny_config(), &base_dir);
    let e = refusal(&base_dir, &ext_dir, 0.5, "the extended model came second");
    assert!(e.contains("extends") && e.contains("1 - alpha"), "{e}");
    // Same pieces plus one, but two old pieces exchange ids: rows no longer mean the same.
    saved_extended(8, &["zebra"], true, &moved_dir);
    let e = refusal(&moved_dir, &base_dir, 0.5, "a reordered vocabulary");
    assert!(e.contains("different tokenizers"), "{e}");
}

#[test]
fn the_same_vocabulary_with_another_normaliser_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    saved(3, tiny_config(), &a_dir);
    let mut json: serde_json::Value = serde_json::from_str(&tiny_tokenizer_json()).unwrap();
    json["normalizer"] = serde_json::Value::Null; // cased: "Cat" is no longer "cat"
    saved_with_tokenizer(4, tiny_config(), json.to_string(), &b_dir);
    let e = refusal(&a_dir, &b_dir, 0.5, "another normaliser");
    assert!(
        e.contains("different tokenizers") && e.contains("normalizer"),
        "{e}"
    );
}

/// A table with spare rows past its vocabulary (as some models pad it to a multiple of 8),
/// extended elsewhere: only the shared pieces' rows are averaged, and the extended model's
/// other rows stay.
#[test]
fn only_the_shared_rows_are_averaged_when_a_table_has_spare_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (ext_dir, base_dir) = (dir.path().join("ext"), dir.path().join("base"));
    saved_extended(6, &["zebra", "quokka"], false, &ext_dir);
    let mut padded = tiny_config();
    padded.vocab_size += 5; // 5 spare rows no piece uses
    saved(7, padded, &base_dir);
    let ext = SentenceEncoder::load(&ext_dir, tch::Device::Cpu).unwrap();
    let base = SentenceEncoder::load(&base_dir, tch::Device::Cpu).unwrap();
    let name = ext
        .var_store()
        .variables()
        .into_keys()
        .find(|k| k.ends_with("word_embeddings.weight"))
        .unwrap();
    let (te, tb) = (
        &ext.var_store().variables()[&name],
        &base.var_store().variables()[&name],
    );
    let n = (4 + TINY_WORDS.len()) as i64;
    assert_eq!((te.size()[0], tb.size()[0]), (n + 2, n + 5));
    let mixed = interpolate(&ext_dir, &base_dir, 0.5).unwrap();
    let tm = &mixed.var_store().variables()[&name];
    assert_eq!(tm.size()[0], n + 2);
    let expected = te.narrow(0, 0, n) * 0.5 + tb.narrow(0, 0, n) * 0.5;
    assert!(max_diff(&tm.narrow(0, 0, n), &expected) < 1e-6);
    assert_eq!(max_diff(&tm.narrow(0, n, 2), &te.narrow(0, n, 2)), 0.0);
}

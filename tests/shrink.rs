//! `lase shrink`: a layer, feed-forward and vocabulary cut of a model folder that loads,
//! and that changes nothing it promises to keep.

mod common;

use common::*;
use lase::io::safetensors::{read_safetensors, write_safetensors};
use lase::model::SentenceEncoder;
use lase::shrink::{ShrinkOptions, shrink_model};
use tch::{Device, Kind, Tensor};

const SENTENCES: &[&str] = &["the cat sat on the mat", "der hund ist groß", "zebra words"];

/// A tiny encoder saved as `original/` in a fresh temporary folder.
fn saved_tiny_model(seed: i64) -> (tempfile::TempDir, std::path::PathBuf, SentenceEncoder) {
    let model = tiny_encoder(tiny_config(), mean_head(16, false), seed);
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original");
    model.save(&original).unwrap();
    (dir, original, model)
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

/// Feed-forward neurons whose output column is zero contribute nothing, so cutting a
/// model's feed-forward width to exactly its live neurons must leave every vector as it
/// was; a cut that kept a dead neuron (or mapped a kept one to the wrong column) would not.
#[test]
fn cutting_only_dead_feed_forward_neurons_keeps_every_vector() {
    let (dir, original, _) = saved_tiny_model(21);
    let weights_path = original.join("model.safetensors");
    let mut weights = read_safetensors(&weights_path).unwrap();
    // Kill 16 of the 32 neurons of each layer, a different half per layer.
    for layer in 0..2 {
        let key = format!("encoder.layer.{layer}.output.dense.weight");
        let dead: Vec<i64> = (0..32).filter(|j| (j * 7 + layer) % 2 == 0).collect();
        let mut w = weights[&key].copy();
        let _ = w.index_fill_(1, &Tensor::from_slice(&dead), 0.0);
        weights.insert(key, w);
    }
    let named: Vec<(String, Tensor)> = weights.into_iter().collect();
    write_safetensors(&weights_path, &named).unwrap();
    // A deliberate edit: the folder's checksums describe the new weights from here on.
    lase::io::checksums::write(&original).unwrap();
    let before = SentenceEncoder::load(&original, Device::Cpu)
        .unwrap()
        .encode(SENTENCES, 4)
        .unwrap();

    let cut = dir.path().join("cut");
    let options = ShrinkOptions {
        intermediate_size: Some(16),
        ..Default::default()
    };
    let report = shrink_model(&original, &options, &cut).unwrap();
    assert_eq!(report.intermediate_size, 16);
    assert!(report.parameters_after < report.parameters_before);
    let shrunk = SentenceEncoder::load(&cut, Device::Cpu).unwrap();
    assert_eq!(shrunk.config().intermediate_size, 16);
    let after = shrunk.encode(SENTENCES, 4).unwrap();
    let diff = max_diff(&before, &after);
    assert!(diff < 1e-5, "vectors moved by {diff}");
    // Nothing but the two folders: no build folder left beside the output.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["cut", "original"]);
}

/// A layer cut keeps the chosen layers' weights under their new numbers and loads as a
/// model of that depth; the same call with every layer is the identity.
#[test]
fn a_layer_cut_loads_with_the_chosen_layers_and_all_layers_is_the_identity() {
    let (dir, original, model) = saved_tiny_model(22);
    let before = model.encode(SENTENCES, 4).unwrap();

    let one = dir.path().join("one");
    let options = ShrinkOptions {
        layers: Some(vec![1]),
        ..Default::default()
    };
    shrink_model(&original, &options, &one).unwrap();
    let shrunk = SentenceEncoder::load(&one, Device::Cpu).unwrap();
    assert_eq!(shrunk.config().num_hidden_layers, 1);
    let (a, b) = (
        read_safetensors(&original.join("model.safetensors")).unwrap(),
        read_safetensors(&one.join("model.safetensors")).unwrap(),
    );
    let key = |l: usize| format!("encoder.layer.{l}.attention.self.query.weight");
    assert!(a[&key(1)].equal(&b[&key(0)]));
    assert!(!b.contains_key(&key(1)));
    let moved = max_diff(&before, &shrunk.encode(SENTENCES, 4).unwrap());
    assert!(moved > 1e-3, "dropping a layer must change the vectors");

    let all = dir.path().join("all");
    let options = ShrinkOptions {
        layers: Some(vec![0, 1]),
        ..Default::default()
    };
    shrink_model(&original, &options, &all).unwrap();
    let same = SentenceEncoder::load(&all, Device::Cpu)
        .unwrap()
        .encode(SENTENCES, 4)
        .unwrap();
    assert!(max_diff(&before, &same) < 1e-6);

    let err = shrink_model(
        &original,
        &ShrinkOptions {
            layers: Some(vec![0, 2]),
            ..Default::default()
        },
        &dir.path().join("bad"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("below 2"), "{err}");
    assert!(!dir.path().join("bad").exists());
}

/// The real teacher with its vocabulary pruned to at most 3,000 pieces chosen by a sample: the
/// sample's sentences embed exactly as before (their pieces were all kept), a sentence
/// whose words were dropped is spelled by smaller pieces without a new [UNK], and the
/// word-embedding table is the kept rows of the old one.
#[test]
fn a_pruned_vocabulary_keeps_the_sample_vectors_and_gains_no_unknowns() {
    let Some(teacher) = teacher_dir() else { return };
    let sample: Vec<String> =
        std::fs::read_to_string(repo_path("tests/fixtures/minilm/sentences.txt"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pruned");
    let options = ShrinkOptions {
        vocabulary: Some((3000, sample.clone())),
        ..Default::default()
    };
    let report = shrink_model(&teacher, &options, &out).unwrap();
    let v = report.vocabulary.expect("vocabulary report");
    // 42 sentences use fewer pieces than fit: every used one is kept, unused ones go.
    assert!(
        v.old_vocab_size == 30522 && v.new_vocab_size < 3000,
        "{v:?}"
    );
    assert_eq!(v.sample_token_coverage, 1.0, "{v:?}");
    let tight = ShrinkOptions {
        vocabulary: Some((2300, sample.clone())),
        ..Default::default()
    };
    let tight = shrink_model(&teacher, &tight, &dir.path().join("tight")).unwrap();
    let t = tight.vocabulary.unwrap();
    assert!(
        t.new_vocab_size == 2300 && t.sample_token_coverage < 1.0,
        "{t:?}"
    );

    let refs: Vec<&str> = sample.iter().map(String::as_str).collect();
    let old = SentenceEncoder::load(&teacher, Device::Cpu).unwrap();
    let new = SentenceEncoder::load(&out, Device::Cpu).unwrap();
    assert_eq!(new.config().vocab_size, v.new_vocab_size);
    let diff = max_diff(
        &old.encode(&refs, 8).unwrap(),
        &new.encode(&refs, 8).unwrap(),
    );
    assert!(diff < 1e-6, "sample vectors moved by {diff}");

    let unseen = "photosynthesis chlorophyll xylophone";
    let open = |dir: &std::path::Path| {
        let mut t = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
        t.with_padding(None);
        t
    };
    let (old_tok, new_tok) = (open(&teacher), open(&out));
    let (a, b) = (
        old_tok.encode(unseen, true).unwrap(),
        new_tok.encode(unseen, true).unwrap(),
    );
    let unk = |e: &tokenizers::Encoding| e.get_tokens().iter().filter(|t| *t == "[UNK]").count();
    assert_eq!(unk(&b), unk(&a));
    assert!(
        b.len() > a.len(),
        "dropped words are spelled by more, smaller pieces"
    );
    let old_rows = read_safetensors(&teacher.join("model.safetensors")).unwrap();
    let new_rows = read_safetensors(&out.join("model.safetensors")).unwrap();
    let table = "embeddings.word_embeddings.weight";
    let id_old = old_tok.token_to_id("the").unwrap() as i64;
    let id_new = new_tok.token_to_id("the").unwrap() as i64;
    assert!(
        old_rows[table]
            .get(id_old)
            .to_kind(Kind::Float)
            .equal(&new_rows[table].get(id_new).to_kind(Kind::Float))
    );
}

/// A folder that does not load as a model (here config.json claims a wider feed-forward
/// block than the weights hold, with no checksums to catch the edit) is refused before
/// anything is cut: no panic from indexing weights that are not there, and no output
/// folder certified with fresh checksums.
#[test]
fn a_folder_that_does_not_load_is_refused_and_nothing_is_written() {
    let (dir, original, _) = saved_tiny_model(23);
    std::fs::remove_file(original.join("checksums.sha256")).unwrap();
    let config_path = original.join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    config["intermediate_size"] = 4096.into();
    std::fs::write(&config_path, config.to_string()).unwrap();
    let cut = dir.path().join("cut");
    let options = ShrinkOptions {
        intermediate_size: Some(1000),
        ..Default::default()
    };
    let err = shrink_model(&original, &options, &cut)
        .unwrap_err()
        .to_string();
    assert!(err.contains("model.safetensors"), "{err}");
    assert!(!cut.exists());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("original")]);
}

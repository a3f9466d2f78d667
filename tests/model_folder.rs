//! The HF / sentence-transformers folder layout: round trips, key prefixes, and clear
//! errors for broken folders.

mod common;

use common::*;
use lase::io::checksums::CHECKSUMS_FILE;
use lase::io::safetensors::{read_safetensors, write_safetensors};
use lase::model::{PoolingMode, SentenceEncoder};
use tch::Device;

const SENTENCES: &[&str] = &[
    "the cat sat on the mat",
    "",
    "der hund ist groß",
    "zebra unknown words",
];

#[test]
fn save_load_round_trip_keeps_vectors_and_layout() {
    let mut config = tiny_config();
    config.embedding_size = Some(8);
    config.num_hidden_layers = 4;
    config.recurrent_unit_layers = Some(2);
    let model = tiny_encoder(config.clone(), dense_head(16, 12, PoolingMode::Cls), 11);
    let before = model.encode(SENTENCES, 3).unwrap();
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    for f in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "sentence_bert_config.json",
        "modules.json",
        "1_Pooling/config.json",
        "2_Dense/config.json",
        "2_Dense/model.safetensors",
    ] {
        assert!(dir.path().join(f).exists(), "{f} missing");
    }
    assert!(dir.path().join("3_Normalize").is_dir());
    let modules = std::fs::read_to_string(dir.path().join("modules.json")).unwrap();
    assert!(modules.contains("sentence_transformers.models.Dense"));
    let dense = read_safetensors(&dir.path().join("2_Dense/model.safetensors")).unwrap();
    assert_eq!(dense["linear.weight"].size(), vec![12, 16]);
    let reloaded = SentenceEncoder::load(dir.path(), Device::Cpu).unwrap();
    assert_eq!(reloaded.config(), model.config());
    assert_eq!(reloaded.dim(), 12);
    let after = reloaded.encode(SENTENCES, 3).unwrap();
    assert!(before.equal(&after));
}

#[test]
fn half_precision_storage_halves_the_weights_and_keeps_the_vectors() {
    use lase::io::safetensors::StorageDtype;
    let model = tiny_encoder(tiny_config(), dense_head(16, 12, PoolingMode::Mean), 12);
    let before = model.encode(SENTENCES, 3).unwrap();
    let (full, half) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    model.save(full.path()).unwrap();
    model.save_as(half.path(), StorageDtype::F16).unwrap();
    let size = |d: &std::path::Path| {
        std::fs::metadata(d.join("model.safetensors"))
            .unwrap()
            .len()
    };
    let (f32_bytes, f16_bytes) = (size(full.path()), size(half.path()));
    assert!(
        f16_bytes * 2 < f32_bytes + 4096 && f16_bytes * 2 > f32_bytes - 4096,
        "f32 {f32_bytes} bytes, f16 {f16_bytes} bytes"
    );
    let stored = read_safetensors(&half.path().join("2_Dense/model.safetensors")).unwrap();
    assert_eq!(stored["linear.weight"].kind(), tch::Kind::Half);
    let reloaded = SentenceEncoder::load(half.path(), Device::Cpu).unwrap();
    let after = reloaded.encode(SENTENCES, 3).unwrap();
    let cos = (&before * &after).sum_dim_intlist(-1, false, tch::Kind::Float)
        / (before.norm_scalaropt_dim(2, [-1], false) * after.norm_scalaropt_dim(2, [-1], false));
    let worst = cos.min().double_value(&[]);
    assert!(worst > 0.9999, "cosine to the f32 vectors {worst}");
    assert!(
        !before.equal(&after),
        "f16 rounding should change something"
    );
}

#[test]
fn loads_checkpoints_with_a_task_model_prefix() {
    let model = tiny_encoder(tiny_config(), mean_head(16, true), 12);
    let before = model.encode(SENTENCES, 4).unwrap();
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    // A folder from another tool: no checksums (lase's would refuse the rewritten weights).
    std::fs::remove_file(dir.path().join(CHECKSUMS_FILE)).unwrap();
    let weights = dir.path().join("model.safetensors");
    let prefixed: Vec<_> = read_safetensors(&weights)
        .unwrap()
        .into_iter()
        .map(|(k, v)| (format!("bert.{k}"), v))
        .chain([(
            "cls.predictions.bias".to_string(),
            tch::Tensor::zeros([5], tch::kind::FLOAT_CPU),
        )])
        .collect();
    write_safetensors(&weights, &prefixed).unwrap();
    let reloaded = SentenceEncoder::load(dir.path(), Device::Cpu).unwrap();
    assert!(before.equal(&reloaded.encode(SENTENCES, 4).unwrap()));
}

#[test]
fn broken_folders_give_errors_naming_the_file() {
    let model = tiny_encoder(tiny_config(), mean_head(16, true), 13);
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    // As a folder from another tool (no checksums), so each structural check is reached.
    std::fs::remove_file(dir.path().join(CHECKSUMS_FILE)).unwrap();
    let err = |d: &std::path::Path| {
        SentenceEncoder::load(d, Device::Cpu)
            .unwrap_err()
            .to_string()
    };

    // A weight missing.
    let weights = dir.path().join("model.safetensors");
    let original = std::fs::read(&weights).unwrap();
    let fewer: Vec<_> = read_safetensors(&weights)
        .unwrap()
        .into_iter()
        .filter(|(k, _)| !k.contains("layer.1.output.dense.weight"))
        .collect();
    write_safetensors(&weights, &fewer).unwrap();
    let e = err(dir.path());
    assert!(
        e.contains("model.safetensors") && e.contains("encoder.layer.1.output.dense.weight"),
        "{e}"
    );

    // A weight of the wrong shape.
    let mut wrong: Vec<_> = read_safetensors(&weights).unwrap().into_iter().collect();
    wrong.push((
        "encoder.layer.1.output.dense.weight".into(),
        tch::Tensor::zeros([3, 3], tch::kind::FLOAT_CPU),
    ));
    write_safetensors(&weights, &wrong).unwrap();
    let e = err(dir.path());
    assert!(e.contains("shape [3, 3]"), "{e}");
    std::fs::write(&weights, &original).unwrap();

    // Invalid JSON names the line.
    std::fs::write(
        dir.path().join("modules.json"),
        "[\n  {\"idx\": 0,\n  oops\n]",
    )
    .unwrap();
    let e = err(dir.path());
    assert!(e.contains("modules.json:3:"), "{e}");

    // Another family's config (DistilBERT names its width `dim`): the family is named,
    // not the first field it lacks.
    let fresh = tempfile::tempdir().unwrap();
    model.save(fresh.path()).unwrap();
    std::fs::remove_file(fresh.path().join(CHECKSUMS_FILE)).unwrap();
    let config_path = fresh.path().join("config.json");
    let config = std::fs::read_to_string(&config_path).unwrap();
    let mut distil: serde_json::Value = serde_json::from_str(&config).unwrap();
    distil["model_type"] = "distilbert".into();
    distil.as_object_mut().unwrap().remove("hidden_size");
    std::fs::write(&config_path, distil.to_string()).unwrap();
    let e = err(fresh.path());
    assert!(
        e.contains("config.json")
            && e.contains("\"distilbert\" is not supported")
            && e.contains("bert, roberta"),
        "{e}"
    );
    // Valid JSON of the wrong shape is not called invalid JSON.
    let mut wrong: serde_json::Value = serde_json::from_str(&config).unwrap();
    wrong["hidden_size"] = "sixteen".into();
    std::fs::write(&config_path, wrong.to_string()).unwrap();
    let e = err(fresh.path());
    assert!(
        e.contains("config.json") && e.contains("valid JSON, but not what this file must hold"),
        "{e}"
    );
    std::fs::write(&config_path, config).unwrap();
    assert!(SentenceEncoder::load(fresh.path(), Device::Cpu).is_ok());

    // Not a folder at all.
    let e = err(&dir.path().join("nope"));
    assert!(e.contains("nope") && e.contains("not found"), "{e}");
}

#[test]
fn a_changed_byte_in_a_saved_model_is_refused_naming_the_file() {
    let model = tiny_encoder(tiny_config(), dense_head(16, 12, PoolingMode::Mean), 15);
    let before = model.encode(SENTENCES, 4).unwrap();
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    // One bit of one float in the middle of the dense layer's weights: the file still
    // parses and every shape still matches, so only the checksum can tell.
    let weights = dir.path().join("2_Dense/model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let middle = bytes.len() - 200;
    bytes[middle] ^= 0x10;
    std::fs::write(&weights, &bytes).unwrap();
    let e = SentenceEncoder::load(dir.path(), Device::Cpu)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("2_Dense/model.safetensors") && e.contains("SHA-256") && e.contains("line"),
        "{e}"
    );
    // Without the manifest the same folder loads, as a different model: the check above
    // is what refused it.
    std::fs::remove_file(dir.path().join(CHECKSUMS_FILE)).unwrap();
    let damaged = SentenceEncoder::load(dir.path(), Device::Cpu).unwrap();
    assert!(!before.equal(&damaged.encode(SENTENCES, 4).unwrap()));
    // coreutils' `sha256sum -c` reads the same manifest.
    let fresh = tempfile::tempdir().unwrap();
    model.save(fresh.path()).unwrap();
    let out = std::process::Command::new("sha256sum")
        .args(["--check", "--quiet", CHECKSUMS_FILE])
        .current_dir(fresh.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn dropout_is_active_only_in_training() {
    let model = tiny_encoder(tiny_config(), mean_head(16, false), 14);
    let tokens = model.tokenize(SENTENCES).unwrap();
    let refs: Vec<_> = tokens.iter().collect();
    let batch = model.batch(&refs);
    let eval_a = model.forward_t(&batch, false);
    let eval_b = model.forward_t(&batch, false);
    assert!(eval_a.equal(&eval_b));
    let train_a = model.forward_t(&batch, true);
    let train_b = model.forward_t(&batch, true);
    let diff = (&train_a - &train_b).abs().max().double_value(&[]);
    assert!(
        diff > 1e-4,
        "two training passes should differ by their dropout masks (diff {diff})"
    );
}

#[test]
fn padding_does_not_change_a_sentence_vector() {
    let model = tiny_encoder(tiny_config(), mean_head(16, true), 15);
    let alone = model.encode(&["a cat"], 1).unwrap();
    let with_long = model
        .encode(
            &[
                "a cat",
                "the dog runs fast and the cat runs slow with a small dog",
            ],
            2,
        )
        .unwrap();
    let diff = (alone.get(0) - with_long.get(0))
        .abs()
        .max()
        .double_value(&[]);
    assert!(diff < 1e-5, "padding leaked into the vector (diff {diff})");
}

#[test]
fn xlmr_positions_skip_padding() {
    let mut config = tiny_config();
    config.model_type = "xlm-roberta".into();
    config.max_position_embeddings = 42;
    let model = tiny_encoder(config, mean_head(16, true), 16);
    let alone = model.encode(&["a cat"], 1).unwrap();
    let batched = model
        .encode(&["a cat", "the dog runs fast and the cat runs"], 2)
        .unwrap();
    let diff = (alone.get(0) - batched.get(0))
        .abs()
        .max()
        .double_value(&[]);
    assert!(diff < 1e-5, "diff {diff}");
}

#[test]
fn pca_finds_the_principal_axes_and_reduce_dim_appends_them_as_a_dense_layer() {
    use lase::reduce_dim::{pca_projection, reduce_dimension};
    use tch::{Kind, Tensor};
    // Data spread 5:2:0.1 along e2, e0, e1 (plus an offset): the 2 components are ±e2, ±e0.
    let _rng = torch_rng();
    tch::manual_seed(5);
    let z = Tensor::randn([2000, 3], (Kind::Double, Device::Cpu));
    let scale = Tensor::from_slice(&[2.0f64, 0.1, 5.0]);
    let data = (z * scale + Tensor::from_slice(&[1.0f64, -3.0, 2.0])).to_kind(Kind::Float);
    let (w, b, kept) = pca_projection(&data, 2).unwrap();
    assert_eq!(w.size(), vec![2, 3]);
    let w: Vec<f32> = Vec::try_from(w.flatten(0, 1).abs()).unwrap();
    assert!(w[2] > 0.999 && w[3] > 0.999, "{w:?}");
    assert!((kept - 29.0 / 29.01).abs() < 0.002, "variance kept {kept}");
    // The projected data is centred: b = -W mean.
    let projected = data.matmul(&pca_projection(&data, 2).unwrap().0.transpose(0, 1)) + &b;
    let mean = projected
        .mean_dim(0, false, Kind::Float)
        .abs()
        .max()
        .double_value(&[]);
    assert!(mean < 1e-3, "projected mean {mean}");
    assert!(pca_projection(&data, 4).is_err());

    let mut model = tiny_encoder(tiny_config(), mean_head(16, true), 13);
    let options = lase::inference::EncodeOptions::for_device(Device::Cpu);
    let (reduced, _) = reduce_dimension(&mut model, SENTENCES, 3, &options).unwrap();
    assert_eq!(reduced.dim(), 3);
    assert!(model.normalizes(), "the source model keeps its settings");
    let dir = tempfile::tempdir().unwrap();
    reduced.save(dir.path()).unwrap();
    let reloaded = SentenceEncoder::load(dir.path(), Device::Cpu).unwrap();
    let v = reloaded.encode(SENTENCES, 4).unwrap();
    assert_eq!(v.size(), vec![SENTENCES.len() as i64, 3]);
    let norms = v.norm_scalaropt_dim(2, [-1], false);
    assert!(
        (norms - 1.0).abs().max().double_value(&[]) < 1e-5,
        "still normalised"
    );
    assert!(v.equal(&reduced.encode(SENTENCES, 4).unwrap()));
}

#[test]
fn a_tokenizer_larger_than_the_embedding_table_is_refused_with_the_file() {
    let model = tiny_encoder(tiny_config(), dense_head(16, 12, PoolingMode::Mean), 13);
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    std::fs::remove_file(dir.path().join(CHECKSUMS_FILE)).unwrap();
    // Shrink config.json's table below the tokenizer's ids: before the check, the first
    // encode panicked inside libtorch (index out of range).
    let config_path = dir.path().join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    config["vocab_size"] = serde_json::json!(3);
    std::fs::write(&config_path, config.to_string()).unwrap();
    let Err(err) = SentenceEncoder::load(dir.path(), Device::Cpu) else {
        panic!("a tokenizer whose ids pass vocab_size must not load");
    };
    let err = err.to_string();
    assert!(
        err.contains("tokenizer.json") && err.contains("vocab_size = 3"),
        "{err}"
    );
}

/// The same for a token type id past the type table: a template that gives the sentence
/// type 2 over a model with two types panicked inside libtorch at the first encode.
#[test]
fn a_template_whose_type_id_passes_the_type_table_is_refused_with_the_file() {
    let model = tiny_encoder(tiny_config(), mean_head(16, true), 13);
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    std::fs::remove_file(dir.path().join(CHECKSUMS_FILE)).unwrap();
    let tokenizer_path = dir.path().join("tokenizer.json");
    let mut tokenizer: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokenizer_path).unwrap()).unwrap();
    let single = tokenizer["post_processor"]["single"]
        .as_array_mut()
        .expect("a template post-processor");
    let mut changed = 0;
    for piece in single {
        if let Some(sequence) = piece.get_mut("Sequence") {
            sequence["type_id"] = serde_json::json!(2);
            changed += 1;
        }
    }
    assert_eq!(changed, 1);
    std::fs::write(&tokenizer_path, tokenizer.to_string()).unwrap();
    let Err(err) = SentenceEncoder::load(dir.path(), Device::Cpu) else {
        panic!("a template whose type id passes type_vocab_size must not load");
    };
    let err = err.to_string();
    assert!(
        err.contains("tokenizer.json")
            && err.contains("type id 2")
            && err.contains("type_vocab_size = 2"),
        "{err}"
    );
    // Type 1 is inside the table: the same folder loads and embeds.
    let text = std::fs::read_to_string(&tokenizer_path).unwrap();
    std::fs::write(
        &tokenizer_path,
        text.replace("\"type_id\":2", "\"type_id\":1"),
    )
    .unwrap();
    let loaded = SentenceEncoder::load(dir.path(), Device::Cpu).unwrap();
    assert_eq!(loaded.encode(&["the cat"], 4).unwrap().size(), vec![1, 16]);
}

/// A maximum length that leaves no room for text past the special tokens is refused
/// (the tokenizers crate would wrap its unsigned subtraction and stop truncating), from
/// `--max-length` and from a folder's sentence_bert_config.json; the smallest that
/// leaves room still truncates.
#[test]
fn a_max_length_without_room_for_text_is_refused() {
    let mut model = tiny_encoder(tiny_config(), mean_head(16, true), 17);
    for too_small in [1, 2] {
        let e = model.set_max_seq_length(too_small).unwrap_err().to_string();
        assert!(e.contains("between 3 and"), "{too_small}: {e}");
    }
    model.set_max_seq_length(3).unwrap();
    let ids = model.tokenize(&["the cat sat on the mat"]).unwrap();
    assert_eq!(ids[0].ids.len(), 3, "{:?}", ids[0].ids);

    let model = tiny_encoder(tiny_config(), mean_head(16, true), 17);
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    std::fs::remove_file(dir.path().join(CHECKSUMS_FILE)).unwrap();
    let sbert = dir.path().join("sentence_bert_config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sbert).unwrap()).unwrap();
    config["max_seq_length"] = 1.into();
    std::fs::write(&sbert, config.to_string()).unwrap();
    let e = SentenceEncoder::load(dir.path(), Device::Cpu)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sentence_bert_config.json")
            && e.contains("max_seq_length")
            && e.contains("at least 3"),
        "{e}"
    );
}

/// Loading builds the weights it then overwrites as zeros, without drawing them: libtorch's
/// generator is left where it was, so a seeded run draws the same numbers whether or not a
/// model was loaded in between (and the load skips a draw per weight).
#[test]
fn loading_a_model_does_not_draw_from_libtorchs_generator() {
    let model = tiny_encoder(tiny_config(), dense_head(16, 12, PoolingMode::Mean), 5);
    let dir = tempfile::tempdir().unwrap();
    model.save(dir.path()).unwrap();
    let _rng = torch_rng();
    tch::manual_seed(42);
    let expected = tch::Tensor::randn([8], (tch::Kind::Float, Device::Cpu));
    tch::manual_seed(42);
    let reloaded = SentenceEncoder::load(dir.path(), Device::Cpu).unwrap();
    let drawn = tch::Tensor::randn([8], (tch::Kind::Float, Device::Cpu));
    assert!(expected.equal(&drawn), "loading drew from the generator");
    let before = model.encode(SENTENCES, 3).unwrap();
    assert!(before.equal(&reloaded.encode(SENTENCES, 3).unwrap()));
}

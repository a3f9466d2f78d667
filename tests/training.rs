//! The training engine end to end on tiny models and synthetic translation pairs:
//! learning happens (loss falls, dev retrieval far above chance), gradient caching gives
//! the direct pass's gradients, a run stopped and resumed ends with bit-identical
//! weights, bad runs fail clearly, and the exported folder loads for inference.

mod common;

use std::path::{Path, PathBuf};

use lase::model::{Precision, SentenceEncoder};
use lase::rng::SplitMix64;
use lase::tokenizer::TokenIds;
use lase::train::config::TrainConfig;
use lase::train::grad_cache::{PassOptions, forward_backward};
use lase::train::objective::{BatchContext, LossOutput, Objective};
use lase::train::{TrainOptions, train};
use tch::{Device, Kind};

const WORDS: &[(&str, &str)] = &[
    ("the", "der"),
    ("cat", "katze"),
    ("dog", "hund"),
    ("house", "haus"),
    ("is", "ist"),
    ("red", "rot"),
    ("blue", "blau"),
    ("green", "grün"),
    ("big", "groß"),
    ("small", "klein"),
    ("runs", "läuft"),
    ("fast", "schnell"),
    ("slow", "langsam"),
    ("and", "und"),
    ("with", "mit"),
];

/// Word-for-word "translations" of random 3-6 word sentences, as a TSV (German, English).
fn write_pairs(dir: &Path, n: usize, seed: u64) -> PathBuf {
    let mut rng = SplitMix64::new(seed);
    let mut text = String::new();
    let mut seen = std::collections::HashSet::new();
    while seen.len() < n {
        let len = 3 + rng.below(4);
        let idx: Vec<usize> = (0..len).map(|_| rng.below(WORDS.len())).collect();
        let en: Vec<&str> = idx.iter().map(|&i| WORDS[i].0).collect();
        let de: Vec<&str> = idx.iter().map(|&i| WORDS[i].1).collect();
        if seen.insert(en.join(" ")) {
            text.push_str(&format!("{}\t{}\n", de.join(" "), en.join(" ")));
        }
    }
    let path = dir.join("pairs.tsv");
    std::fs::write(&path, text).unwrap();
    path
}

/// The objective of most runs here: InfoNCE alone, no XTR.
const INFO_NCE: &str = "contrastive = \"info-nce\"\nxtr = false";

fn config(dir: &Path, tokenizer: Option<&Path>, objective: &str, steps: u64) -> TrainConfig {
    let pairs = write_pairs(dir, 600, 9);
    let tokenizer_line = match tokenizer {
        Some(p) => format!("path = {:?}", p.display().to_string()),
        None => "vocab_size = 60\nsample_sentences = 2000".into(),
    };
    let text = format!(
        r#"
[model]
layers = 2
hidden = 32
heads = 2
ffn = 64
max_tokens = 16
dropout = 0.1

[tokenizer]
{tokenizer_line}

[data]
sources = [{{ format = "tsv", path = {pairs:?}, src_lang = "deu", tgt_lang = "eng" }}]
exclude_test_sets = false
dev = {{ pairs_per_language = 50, min_language_pairs = 100 }}

[objective]
{objective}

[optimizer]
lr = 3e-3

[schedule]
steps = {steps}
warmup_steps = 5
batch_pairs = 32

[run]
log_every = 5
eval_every = 40
checkpoint_every = 4
"#,
        pairs = pairs.display().to_string()
    );
    TrainConfig::from_toml(&text).unwrap()
}

fn tiny_tokenizer_file(dir: &Path) -> PathBuf {
    let p = dir.join("tiny-tokenizer.json");
    std::fs::write(&p, common::tiny_tokenizer_json()).unwrap();
    p
}

/// A fresh temporary folder and the recipe `config` writes in it for `objective` and
/// `steps`, naming the tiny tokenizer file written beside it. The recipe's paths point into
/// the folder: keep it bound until the test ends.
fn tiny_recipe(objective: &str, steps: u64) -> (tempfile::TempDir, TrainConfig) {
    let dir = tempfile::tempdir().unwrap();
    let tok = tiny_tokenizer_file(dir.path());
    let config = config(dir.path(), Some(&tok), objective, steps);
    (dir, config)
}

/// Options that stop a run at step `steps`, checkpointed there so that it can resume.
fn stop_at(steps: u64) -> TrainOptions {
    TrainOptions {
        stop_after_steps: Some(steps),
        ..Default::default()
    }
}

#[test]
fn contrastive_training_learns_to_retrieve_translations() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let (dir, config) = tiny_recipe(INFO_NCE, 80);
    let out = dir.path().join("run");
    let summary = train(&config, &out, &TrainOptions::default()).unwrap();
    let (first, last) = (summary.first_loss.unwrap(), summary.last_loss.unwrap());
    // ln(32) x 2 directions = 6.93 at chance.
    assert!(first > 5.0, "first loss {first}");
    assert!(last < 0.5 * first, "loss {first} -> {last}");
    // 50 dev pairs: chance P@1 is 2%.
    let dev = summary.dev_p_at_1.unwrap();
    assert!(dev > 60.0, "dev P@1 {dev}");
    assert!(out.join("metrics.svg").exists());
    let lines = std::fs::read_to_string(out.join("metrics.jsonl")).unwrap();
    assert!(lines.lines().count() >= 16);
    // The exported folder is a normal model folder with unit-length outputs.
    let model = SentenceEncoder::load(out.join("model"), Device::Cpu).unwrap();
    let v = model
        .encode(&["der hund ist rot", "the dog is red"], 8)
        .unwrap();
    let norms = v.norm_scalaropt_dim(2, [1].as_slice(), false);
    assert!((norms.double_value(&[0]) - 1.0).abs() < 1e-5);
    // `lase dev-score` carves the same dev split from the recipe and scores the last
    // model as the run's last dev evaluation did (step 80 = the last step), pooled too.
    let last_eval: serde_json::Value = serde_json::from_str(
        lines
            .lines()
            .rev()
            .find(|l| l.contains("dev_p_at_1"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last_eval["step"], 80);
    let recipe = dir.path().join("recipe.toml");
    std::fs::write(&recipe, config.to_toml()).unwrap();
    let json = dir.path().join("dev.json");
    // `lase dev-score` on the run's model, with `extra` arguments, as a process.
    let run_dev_score = |extra: &[&Path]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_lase"))
            .args(["dev-score", "--model"])
            .arg(out.join("model"))
            .arg("--config")
            .arg(&recipe)
            .arg("--json")
            .arg(&json)
            .args(extra)
            .output()
            .unwrap()
    };
    // The same, succeeding: (stdout, its JSON).
    let dev_score = |extra: &[&Path]| -> (String, serde_json::Value) {
        let run = run_dev_score(extra);
        assert!(run.status.success(), "{run:?}");
        let scored = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (String::from_utf8_lossy(&run.stdout).to_string(), scored)
    };
    let (_, scored) = dev_score(&[]);
    for (logged, offline) in [
        ("dev_p_at_1", "p_at_1"),
        ("dev_pooled_p_at_1", "pooled_p_at_1"),
    ] {
        let (a, b) = (
            last_eval[logged].as_f64().unwrap(),
            scored[offline].as_f64().unwrap(),
        );
        assert!((a - b).abs() < 1e-6, "{logged} {a} vs dev-score {b}");
    }
    assert_eq!(scored["languages"][0]["pairs"], 50);

    // --langs: the sub-mean over the languages it names; here the split's one language, so
    // the same as the mean over all; a code naming none of them is an error that says so.
    let only = scored["languages"][0]["language"]
        .as_str()
        .unwrap()
        .to_owned();
    let (stdout, sub) = dev_score(&[Path::new("--langs"), Path::new(&only)]);
    assert!(
        stdout.contains("over the 1 languages --langs names"),
        "{stdout}"
    );
    assert_eq!(sub["langs"]["p_at_1"], scored["p_at_1"]);
    assert_eq!(sub["langs"]["pooled_p_at_1"], scored["pooled_p_at_1"]);
    let refused = run_dev_score(&[Path::new("--langs"), Path::new("ita")]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("none of the dev split's 1 languages"), "{err}");

    // --teacher: the similarity agreement over the dev split's distinct target sentences.
    // A model agrees with itself fully, and less with an untrained one.
    let agreement = |teacher: &Path| -> f64 {
        let (stdout, scored) = dev_score(&[Path::new("--teacher"), teacher]);
        assert!(stdout.contains("similarity agreement with"), "{stdout}");
        let a = &scored["similarity_agreement"];
        assert_eq!(a["sentences"], 50, "{a}");
        assert_eq!(a["pairs"], 50 * 49 / 2, "{a}");
        a["spearman"].as_f64().unwrap()
    };
    let itself = agreement(&out.join("model"));
    assert!((itself - 100.0).abs() < 1e-9, "{itself}");
    let untrained = dir.path().join("untrained");
    common::tiny_encoder(common::tiny_config(), common::mean_head(16, true), 7)
        .save(&untrained)
        .unwrap();
    let other = agreement(&untrained);
    assert!(other < 95.0, "{other}");
}

/// The trainer's deadline is an instant, not a duration from the first step: time spent
/// before `train` (the CLI's `--time-limit` starts at the process's start) counts. A
/// deadline that passed before the first step stops the run after that step,
/// checkpointed; the next run resumes from it.
#[test]
fn a_deadline_that_passed_before_training_stops_after_one_step() {
    let _rng = common::torch_rng();
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), None, INFO_NCE, 10);
    let out = dir.path().join("run");
    // The slot ends 20 ms from now; the "slow start" below takes 50 ms of it and more.
    let deadline = lase::deadline::Deadline::after(std::time::Duration::from_millis(20));
    std::thread::sleep(std::time::Duration::from_millis(50));
    let part = train(
        &config,
        &out,
        &TrainOptions {
            deadline: Some(deadline),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(part.steps, 1, "stopped at the first step past the deadline");
    assert!(
        part.model_dir.is_none(),
        "a stopped run leaves a checkpoint, not a model"
    );
    let rest = train(&config, &out, &TrainOptions::default()).unwrap();
    assert_eq!((rest.resumed_from, rest.steps), (Some(1), 10));
}

#[test]
fn stopped_and_resumed_run_ends_with_identical_weights() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    // EMS recipe (contrastive head + XTR), tokenizer trained from the data, dropout on.
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        None,
        "contrastive = \"ems\"\nxtr = true\nems = { projection_dim = 16 }\nxtr_head = { language_dim = 8 }",
        10,
    );
    let straight = dir.path().join("straight");
    train(&config, &straight, &TrainOptions::default()).unwrap();
    let resumed = dir.path().join("resumed");
    std::fs::create_dir_all(&resumed).unwrap();
    // Same tokenizer file (training it twice may order ties differently).
    std::fs::copy(
        straight.join("tokenizer.json"),
        resumed.join("tokenizer.json"),
    )
    .unwrap();
    let part = train(&config, &resumed, &stop_at(3)).unwrap();
    assert_eq!(part.steps, 3);
    assert!(part.model_dir.is_none());
    let part2 = train(&config, &resumed, &stop_at(4)).unwrap();
    assert_eq!((part2.resumed_from, part2.steps), (Some(3), 7));
    let rest = train(&config, &resumed, &TrainOptions::default()).unwrap();
    assert_eq!(rest.resumed_from, Some(7));
    let a = SentenceEncoder::load(straight.join("model"), Device::Cpu).unwrap();
    let b = SentenceEncoder::load(resumed.join("model"), Device::Cpu).unwrap();
    let va = a.var_store().variables();
    let vb = b.var_store().variables();
    assert!(!va.is_empty());
    for (name, t) in &va {
        let diff = (t - &vb[name]).abs().max().double_value(&[]);
        assert_eq!(diff, 0.0, "{name} differs by {diff}");
    }
    // The metrics log has one record per logged step and one at each stop (steps 3 and
    // 7), no duplicates from the restarts.
    let steps: Vec<u64> = std::fs::read_to_string(resumed.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["step"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(steps, vec![3, 5, 7, 10]);
    // A different recipe in the same folder is refused.
    let mut other = config.clone();
    other.optimizer.lr = 1e-3;
    let err = train(&other, &resumed, &TrainOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("different recipe"), "{err}");
}

#[test]
fn grad_cache_gives_the_direct_gradients() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    grad_cache_matches_the_direct_pass(
        "contrastive = \"ems\"\nxtr = true\nems = { projection_dim = 8 }\nxtr_head = { language_dim = 4 }",
    );
    // SimCSE embeds both sides twice: the cached pass re-embeds all four.
    grad_cache_matches_the_direct_pass("contrastive = \"simcse\"\nxtr = false");
}

/// The tiny sentence pairs of the pass tests: German, English.
const PASS_DE: [&str; 6] = [
    "der hund ist rot",
    "die katze",
    "das haus ist groß und blau",
    "der hund läuft schnell",
    "klein",
    "die katze ist grün",
];
const PASS_EN: [&str; 6] = [
    "the dog is red",
    "the cat",
    "the house is big and blue",
    "the dog runs fast",
    "small",
    "the cat is green",
];

/// The recipe's objective for a 16-d tiny encoder and 2 languages, no teacher.
fn tiny_objective(config: &TrainConfig, encoder: &SentenceEncoder) -> Objective {
    Objective::new(
        &config.objective,
        16,
        2,
        encoder.tokenizer().vocab_size(),
        None,
        Device::Cpu,
    )
    .unwrap()
}

/// One pass of `encoder` and `objective` over the pass tests' pairs, tokenized as `tx`
/// (German) and `ty` (English), in chunks of `chunk` (0: direct) with dropout on when
/// `train`: seed 1, the loss unscaled, the direct pass's padding.
fn pass(
    encoder: &SentenceEncoder,
    objective: &Objective,
    tx: &[TokenIds],
    ty: &[TokenIds],
    ctx: &BatchContext,
    chunk: usize,
    train: bool,
) -> LossOutput {
    let xs: Vec<_> = tx.iter().collect();
    let ys: Vec<_> = ty.iter().collect();
    let options = PassOptions {
        chunk,
        seed: 1,
        loss_scale: 1.0,
        train,
        padding_chunk: lase::train::config::DIRECT_PADDING_CHUNK,
    };
    forward_backward(encoder, objective, &xs, &ys, ctx, &options)
}

/// Gradient caching in chunks of 2 and 4 gives the loss and gradients of the direct pass
/// for the recipe objective `objective` (dropout off, so that every pass draws the same).
fn grad_cache_matches_the_direct_pass(objective: &str) {
    let (_dir, mut config) = tiny_recipe(objective, 1);
    config.model.dropout = 0.0;
    let mut c = common::tiny_config();
    c.hidden_dropout_prob = 0.0;
    c.attention_probs_dropout_prob = 0.0;
    let encoder = common::tiny_encoder(c, common::mean_head(16, false), 3);
    let objective = tiny_objective(&config, &encoder);
    let tx = encoder.tokenize(&PASS_DE).unwrap();
    let ty = encoder.tokenize(&PASS_EN).unwrap();
    let ix: Vec<&[i64]> = tx.iter().map(|t| t.ids.as_slice()).collect();
    let iy: Vec<&[i64]> = ty.iter().map(|t| t.ids.as_slice()).collect();
    let ctx = BatchContext::new(&[0; 6], &[1; 6], Device::Cpu).with_bags(
        &ix,
        &iy,
        encoder.tokenizer().vocab_size(),
        &[0, 2, 3],
    );
    let mut grads = Vec::new();
    for chunk in [0usize, 2, 4] {
        let encoder_vars = encoder.var_store().variables().into_values();
        for t in encoder_vars.chain(objective.vs.trainable_variables()) {
            let mut g = t.grad();
            if g.defined() {
                let _ = g.zero_();
            }
        }
        let out = pass(&encoder, &objective, &tx, &ty, &ctx, chunk, true);
        let mut named: Vec<(String, tch::Tensor)> = encoder
            .var_store()
            .variables()
            .into_iter()
            .chain(
                objective
                    .vs
                    .variables()
                    .into_iter()
                    .map(|(n, t)| (format!("obj.{n}"), t)),
            )
            .map(|(n, t)| (n, t.grad().copy()))
            .collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        grads.push((out.total.double_value(&[]), named));
    }
    let (loss0, g0) = &grads[0];
    for (loss, g) in &grads[1..] {
        assert!((loss - loss0).abs() < 1e-5, "{loss} vs {loss0}");
        for ((name, a), (_, b)) in g0.iter().zip(g) {
            let scale = a.abs().max().double_value(&[]).max(1e-6);
            let diff = (a - b).abs().max().double_value(&[]);
            assert!(
                diff <= 1e-4 * scale + 1e-7,
                "{name}: grad-cache differs by {diff} (scale {scale})"
            );
        }
    }
    assert!(
        g0.iter().any(|(n, g)| n.contains("word_embeddings")
            && g.abs().sum(Kind::Double).double_value(&[]) > 0.0)
    );
}

/// SimCSE's second view of each side is drawn under other dropout masks. At a small
/// temperature the loss of identical views is near 0 (each vector's cosine with itself,
/// 1, beats every other sentence's), with dropout off or with the same masks drawn twice;
/// two different masks put the positive's cosine below 1 and the loss far above it.
#[test]
fn simcse_compares_two_dropout_views_of_each_sentence() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let (_dir, config) = tiny_recipe(
        "contrastive = \"simcse\"\nxtr = false\nsimcse_temperature = 0.005",
        1,
    );
    let c = common::tiny_config();
    assert!(c.hidden_dropout_prob > 0.0);
    let encoder = common::tiny_encoder(c, common::mean_head(16, false), 3);
    let objective = tiny_objective(&config, &encoder);
    let tx = encoder.tokenize(&PASS_DE).unwrap();
    let ty = encoder.tokenize(&PASS_EN).unwrap();
    let ctx = BatchContext::new(&[0; 6], &[1; 6], Device::Cpu);
    let loss = |train: bool| {
        let out = pass(&encoder, &objective, &tx, &ty, &ctx, 0, train);
        assert_eq!(out.parts.len(), 1);
        assert_eq!(out.parts[0].0, "simcse");
        out.parts[0].1
    };
    let (same_views, dropout_views) = (loss(false), loss(true));
    assert!(
        dropout_views > 10.0 * same_views,
        "identical views {same_views}, dropout views {dropout_views}"
    );
}

#[test]
fn non_finite_loss_stops_with_a_clear_error() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let dir = tempfile::tempdir().unwrap();
    let encoder = common::tiny_encoder(common::tiny_config(), common::mean_head(16, false), 1);
    tch::no_grad(|| {
        let mut vars = encoder.var_store().variables();
        let w = vars
            .iter_mut()
            .find(|(n, _)| n.contains("word_embeddings"))
            .unwrap()
            .1;
        // Finite (a NaN stored in a weights file is refused at load), but large enough that
        // the embedding sums overflow to infinity in the first forward.
        let _ = w.fill_(3.0e38);
    });
    let init = dir.path().join("nan-model");
    encoder.save(&init).unwrap();
    let mut config = config(dir.path(), None, INFO_NCE, 5);
    config.model.init_from = Some(init);
    let err = train(&config, &dir.path().join("run"), &TrainOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("loss is NaN at step 1") || err.contains("loss is inf at step 1"),
        "{err}"
    );
}

#[test]
fn every_contrastive_kind_trains() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    for kind in ["ams", "triplet"] {
        let (dir, mut config) = tiny_recipe("", 30);
        config.objective = config
            .objective
            .with("contrastive", kind)
            .and_then(|o| o.with("xtr", false))
            .unwrap();
        config.run.eval_every = 30;
        let s = train(&config, &dir.path().join("run"), &TrainOptions::default()).unwrap();
        assert!(
            s.last_loss.unwrap() < s.first_loss.unwrap(),
            "{kind:?}: {s:?}"
        );
        assert!(s.dev_p_at_1.unwrap() > 20.0, "{kind:?}: {s:?}");
    }
}

/// A tiny encoder trained `steps` steps with InfoNCE (a structured space to distil
/// from or start at): its recipe and model folder.
fn tiny_trained_model(dir: &Path, steps: u64) -> (TrainConfig, PathBuf) {
    let tok = tiny_tokenizer_file(dir);
    let run = dir.join("trained");
    let recipe = config(dir, Some(&tok), INFO_NCE, steps);
    train(&recipe, &run, &TrainOptions::default()).unwrap();
    (recipe, run.join("model"))
}

#[test]
fn distillation_from_a_cached_teacher_pulls_the_student_onto_it() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let dir = tempfile::tempdir().unwrap();
    // Teacher: a tiny encoder trained for a few steps so that its space is structured.
    let (_, teacher_dir) = tiny_trained_model(dir.path(), 40);
    let tok = dir.path().join("tiny-tokenizer.json");
    // Student: narrower, all five distillation terms on.
    let mut student = config(
        dir.path(),
        Some(&tok),
        &format!(
            "contrastive = \"none\"\nxtr = false\ndistillation = {{ teacher = {:?}, teacher_side = \"target\", mse = 1.0, feature = 1.0, logit = 0.01, soft_contrastive = 1.0, tcm_lambda = 0.1, mcl = 1.0 }}",
            teacher_dir.display().to_string()
        ),
        60,
    );
    // MSE needs the teacher's width: a 32-d head on a 16-wide encoder.
    student.model.hidden = 16;
    student.model.ffn = 32;
    student.model.output_dim = Some(32);
    let mut mismatched = student.clone();
    mismatched.model.output_dim = Some(24);
    let err = train(
        &mismatched,
        &dir.path().join("bad"),
        &TrainOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("MSE distillation needs"), "{err}");
    let out = dir.path().join("student");
    let s = train(&student, &out, &TrainOptions::default()).unwrap();
    assert!(s.last_loss.unwrap() < 0.7 * s.first_loss.unwrap(), "{s:?}");
    assert!(s.dev_p_at_1.unwrap() > 30.0, "{s:?}");
    let cached = lase::io::npy::NpyMatrix::open(out.join("teacher-target.npy")).unwrap();
    assert_eq!(cached.cols, 32);
    assert!(!out.join("teacher-source.npy").exists());
    let log = std::fs::read_to_string(out.join("metrics.jsonl")).unwrap();
    for term in [
        "mse",
        "feature_distillation",
        "logit_distillation",
        "soft_contrastive",
        "mcl",
    ] {
        assert!(
            log.contains(&format!("\"{term}\"")),
            "{term} missing from the log"
        );
    }
    // The feature-distillation projection is not part of the exported student.
    let model = SentenceEncoder::load(out.join("model"), Device::Cpu).unwrap();
    assert_eq!(model.dim(), 32);
    assert!(
        model
            .var_store()
            .variables()
            .keys()
            .all(|k| !k.contains("up_projection"))
    );
}

#[test]
fn a_pretrained_student_gets_a_new_output_layer_of_the_recipes_width() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("pretrained");
    common::tiny_encoder(common::tiny_config(), common::mean_head(16, false), 3)
        .save(&init)
        .unwrap();
    let mut config = config(dir.path(), None, INFO_NCE, 30);
    config.model.init_from = Some(init.clone());
    config.model.output_dim = Some(24);
    config.run.eval_every = 30;
    let out = dir.path().join("run");
    let s = train(&config, &out, &TrainOptions::default()).unwrap();
    assert!(s.last_loss.unwrap() < s.first_loss.unwrap(), "{s:?}");
    let model = SentenceEncoder::load(out.join("model"), Device::Cpu).unwrap();
    assert_eq!(model.dim(), 24);
    let vars = model.var_store().variables();
    let dense: Vec<_> = vars
        .iter()
        .filter(|(n, _)| n.contains("linear.weight"))
        .collect();
    assert_eq!(dense.len(), 1, "{:?}", vars.keys().collect::<Vec<_>>());
    assert_eq!(dense[0].1.size(), [24, 16]);
    // Without output_dim the pretrained model keeps its width.
    config.model.output_dim = None;
    config.schedule.steps = 2;
    let out = dir.path().join("same-width");
    train(&config, &out, &TrainOptions::default()).unwrap();
    assert_eq!(
        SentenceEncoder::load(out.join("model"), Device::Cpu)
            .unwrap()
            .dim(),
        16
    );
}

/// Every recipe shipped in configs/ parses and validates (a typo in a field name is an
/// error, not a silently ignored line).
#[test]
fn every_shipped_recipe_parses() {
    fn recipes(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                recipes(&path, found);
            } else if path.extension().is_some_and(|e| e == "toml") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    recipes(&common::repo_path("configs"), &mut found);
    assert!(found.len() >= 10, "{found:?}");
    for path in found {
        // Multi-stage recipes have their own format.
        if path.parent().is_some_and(|p| p.ends_with("multistage")) {
            lase::train::multistage::MultistageConfig::from_file(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let config = lase::train::TrainConfig::from_file(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        config
            .validate()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// `lase distill multistage` on tiny models: four stage folders, a student with a
/// recurring unit and an embedding bottleneck aligned to the assistant's token
/// embeddings, MSE/MCL stages that learn, and clear errors for a stage run too early.
#[test]
fn multistage_distillation_builds_a_recurrent_bottlenecked_student() {
    use lase::train::multistage::{
        MultistageConfig, Stage, StageBudget, StageBudgets, StudentShape, run_multistage,
        student_from_assistant,
    };
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let dir = tempfile::tempdir().unwrap();
    let (teacher_config, teacher) = tiny_trained_model(dir.path(), 40);
    let stage = |steps| StageBudget {
        steps,
        lr: 3e-3,
        batch_pairs: 32,
        warmup_ratio: 0.1,
    };
    let mut run = teacher_config.run.clone();
    run.eval_every = 20;
    let ms = MultistageConfig {
        teacher: teacher.clone(),
        assistant_init: teacher.clone(),
        student: StudentShape {
            layers: 2,
            recurrent_unit_layers: 1,
            embedding_size: Some(8),
        },
        data: teacher_config.data.clone(),
        stages: StageBudgets {
            assistant: stage(20),
            bottleneck: stage(150),
            student: stage(40),
            contrastive: stage(40),
        },
        mcl_weight: 1.0,
        run,
    };
    let out = dir.path().join("multistage");
    let options = TrainOptions::default();
    // Stage 3 before stages 1-2 names what is missing.
    let err = run_multistage(&ms, &out, &[Stage::Student], &options)
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not exist yet"), "{err}");
    let model = run_multistage(&ms, &out, &[], &options).unwrap();
    assert_eq!(model, out.join("4-contrastive/model"));
    for s in ["1-assistant", "2-bottleneck", "3-student", "4-contrastive"] {
        assert!(out.join(s).join("model/config.json").exists(), "{s}");
    }
    let student = SentenceEncoder::load(&model, Device::Cpu).unwrap();
    let c = student.config();
    assert_eq!(
        (
            c.num_hidden_layers,
            c.recurrent_unit_layers,
            c.embedding_size
        ),
        (2, Some(1), Some(8))
    );
    assert_eq!(student.dim(), 32);
    assert!(
        student
            .var_store()
            .variables()
            .keys()
            .all(|k| !k.contains("layer.1."))
    );
    // Stage 2 aligned the bottleneck: its token embeddings are far closer to the
    // assistant's than a fresh bottleneck's.
    let assistant = SentenceEncoder::load(out.join("1-assistant/model"), Device::Cpu).unwrap();
    let aligned = SentenceEncoder::load(out.join("2-bottleneck/model"), Device::Cpu).unwrap();
    let fresh = student_from_assistant(&assistant, &ms.student).unwrap();
    let ids = tch::Tensor::arange(
        assistant.tokenizer().vocab_size() as i64,
        (Kind::Int64, Device::Cpu),
    )
    .unsqueeze(0);
    let token_mse = |m: &SentenceEncoder| {
        let a = assistant.transformer().embeddings.token_embeddings(&ids);
        let b = m.transformer().embeddings.token_embeddings(&ids);
        (a - b).square().mean(Kind::Float).double_value(&[])
    };
    let (aligned_mse, fresh_mse) = (token_mse(&aligned), token_mse(&fresh));
    assert!(
        aligned_mse < 0.5 * fresh_mse,
        "{aligned_mse} vs {fresh_mse}"
    );
    // The distillation stages learned, and the final student retrieves translations.
    let log = |s: &str| std::fs::read_to_string(out.join(s).join("metrics.jsonl")).unwrap();
    for s in ["1-assistant", "3-student", "4-contrastive"] {
        let losses: Vec<f64> = log(s)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["loss"].as_f64())
            .collect();
        assert!(losses.last() < losses.first(), "{s}: {losses:?}");
    }
    assert!(log("4-contrastive").contains("\"mcl\""));
    let dev: f64 = log("4-contrastive")
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["dev_p_at_1"].as_f64())
        .next_back()
        .unwrap();
    assert!(dev > 30.0, "dev P@1 {dev}");
    // A finished run is not redone; a chosen stage alone runs again from its folder.
    let again = run_multistage(&ms, &out, &[Stage::Contrastive], &options).unwrap();
    assert_eq!(again, model);
}

/// lealla.txt 3.2: a dimension-reduction head trained on a frozen encoder changes only
/// the head.
#[test]
fn a_frozen_encoder_trains_only_its_new_head() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let dir = tempfile::tempdir().unwrap();
    let (base_config, base_dir) = tiny_trained_model(dir.path(), 20);
    let base = SentenceEncoder::load(&base_dir, Device::Cpu).unwrap();
    let mut head_config = base_config.clone();
    head_config.model.init_from = Some(base_dir);
    head_config.model.output_dim = Some(8);
    head_config.model.freeze_encoder = true;
    head_config.schedule.steps = 30;
    head_config.run.eval_every = 30;
    let out = dir.path().join("head");
    let s = train(&head_config, &out, &TrainOptions::default()).unwrap();
    assert!(s.last_loss.unwrap() < s.first_loss.unwrap(), "{s:?}");
    let reduced = SentenceEncoder::load(out.join("model"), Device::Cpu).unwrap();
    assert_eq!(reduced.dim(), 8);
    let before = base.var_store().variables();
    let after = reduced.var_store().variables();
    let mut compared = 0;
    for (name, b) in &before {
        let a = &after[name];
        assert_eq!(
            (a - b).abs().max().double_value(&[]),
            0.0,
            "{name} changed under freeze_encoder"
        );
        compared += 1;
    }
    assert!(compared > 10);
    // Without a head there is nothing to train.
    let mut bad = head_config.clone();
    bad.model.output_dim = None;
    let err = train(&bad, &dir.path().join("bad"), &TrainOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("freeze_encoder"), "{err}");
}

/// `lase train --set KEY=VALUE`: the run trains the changed recipe (its saved config.toml
/// and its metrics show the new values, a removed key falls back to its default), and a
/// misspelt key fails naming the file before any work is done.
#[test]
fn cli_set_changes_the_recipe_of_a_run() {
    let (dir, mut recipe) = tiny_recipe(INFO_NCE, 40);
    recipe.model.output_dim = Some(24);
    let recipe_path = dir.path().join("recipe.toml");
    std::fs::write(&recipe_path, recipe.to_toml()).unwrap();
    let lase = |out: &Path, sets: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_lase"));
        c.args(["--threads", "1", "train", "--quiet", "--config"])
            .arg(&recipe_path)
            .arg("--out")
            .arg(out);
        for s in sets {
            c.args(["--set", s]);
        }
        c.output().unwrap()
    };

    let run = dir.path().join("run");
    let out = lase(
        &run,
        &["schedule.steps=6", "model.layers=1", "model.output_dim="],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = TrainConfig::from_file(&run.join("config.toml")).unwrap();
    assert_eq!(saved.schedule.steps, 6);
    assert_eq!(saved.model.layers, 1);
    assert_eq!(saved.model.output_dim, None);
    assert_eq!(saved.data, recipe.data);
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(metrics.lines().last().unwrap()).unwrap();
    assert_eq!(last["step"], 6);
    // Loading initialises parameters before reading them: a draw from the torch RNG that
    // would shift a concurrent test's dropout masks (stopped_and_resumed_... failed so).
    let model = {
        let _rng = common::torch_rng();
        SentenceEncoder::load(run.join("model"), Device::Cpu).unwrap()
    };
    assert_eq!(model.dim(), recipe.model.hidden);

    let bad = dir.path().join("bad");
    let out = lase(&bad, &["model.layerz=1"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("recipe.toml") && err.contains("layerz"),
        "{err}"
    );
    assert!(!bad.exists());
}

/// An arm that `extends` a base recipe: `lase recipe` prints the merged recipe (the base
/// with the arm's one change), the run trains it, and a resume compares the merged recipe:
/// the base with `--set` of the same change resumes the run, the base alone is refused
/// naming the key that differs.
#[test]
fn an_arm_that_extends_a_base_trains_and_resumes_as_the_merged_recipe() {
    let (dir, recipe) = tiny_recipe(INFO_NCE, 40);
    let base = dir.path().join("base.toml");
    std::fs::write(&base, recipe.to_toml()).unwrap();
    std::fs::create_dir(dir.path().join("arms")).unwrap();
    let arm = dir.path().join("arms/short.toml");
    std::fs::write(
        &arm,
        "# six steps of the base\nextends = \"../base.toml\"\n\n[schedule]\nsteps = 6\n",
    )
    .unwrap();
    let lase = |args: &[&str], config: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_lase"))
            .args(["--threads", "1"])
            .args(args)
            .arg("--config")
            .arg(config)
            .output()
            .unwrap()
    };

    let printed = lase(&["recipe"], &arm);
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let merged = TrainConfig::from_toml(&String::from_utf8(printed.stdout).unwrap()).unwrap();
    let mut expected = recipe.clone();
    expected.schedule.steps = 6;
    assert_eq!(merged, expected);

    let run = dir.path().join("run");
    let run_arg = run.to_str().unwrap();
    let out = lase(
        &["train", "--quiet", "--stop-after", "3", "--out", run_arg],
        &arm,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(checkpoint_step(&run), Some(3));
    assert_eq!(
        TrainConfig::from_file(&run.join("config.toml")).unwrap(),
        expected
    );

    // The base alone is another recipe (40 steps): refused, naming the key.
    let out = lase(&["train", "--quiet", "--out", run_arg], &base);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("schedule.steps"), "{err}");
    assert_eq!(checkpoint_step(&run), Some(3));
    // The base with the arm's change is the same recipe: it resumes and finishes.
    let out = lase(
        &[
            "train",
            "--quiet",
            "--out",
            run_arg,
            "--set",
            "schedule.steps=6",
        ],
        &base,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(metrics.lines().last().unwrap()).unwrap();
    assert_eq!(last["step"], 6);
}

#[test]
fn bf16_mixed_precision_runs_bfloat16_products_on_float32_weights() {
    // In-process libtorch work beside the bit-identity tests: one at a time.
    let _rng = common::torch_rng();
    let mut encoder = common::tiny_encoder(common::tiny_config(), common::mean_head(16, false), 5);
    let sentences = [
        "der hund ist rot",
        "the dog is red",
        "katze und haus mit hund",
    ];
    let tokens = encoder.tokenize(&sentences).unwrap();
    let refs: Vec<_> = tokens.iter().collect();
    let batch = encoder.batch(&refs);
    let forward_and_grads = |encoder: &SentenceEncoder| {
        for (_, mut t) in encoder.var_store().variables() {
            t.zero_grad();
        }
        let v = encoder.forward_t(&batch, false);
        v.square().sum(Kind::Float).backward();
        let mut grads: Vec<(String, tch::Tensor)> = encoder
            .var_store()
            .variables()
            .into_iter()
            .filter(|(_, t)| t.grad().defined())
            .map(|(n, t)| (n, t.grad().copy()))
            .collect();
        grads.sort_by(|a, b| a.0.cmp(&b.0));
        (v.detach(), grads)
    };
    let (v32, g32) = forward_and_grads(&encoder);
    encoder.set_mixed_precision(Precision::Bf16).unwrap();
    assert_eq!(encoder.mixed_precision(), Precision::Bf16);
    let (v16, g16) = forward_and_grads(&encoder);
    // The products really ran in bfloat16: the vectors are not float32's bit for bit...
    assert_eq!(v16.kind(), Kind::Float);
    let diff = (&v16 - &v32).abs().max().double_value(&[]);
    assert!(diff > 0.0, "mixed precision gave float32's exact output");
    // ...but close to them, and the gradients reach every float32 weight float32's do.
    for (a, b) in common::rows(&v16).iter().zip(common::rows(&v32).iter()) {
        let c = common::cosine(a, b);
        assert!(c > 0.999, "cosine to float32 {c}");
    }
    assert_eq!(g16.len(), g32.len());
    assert!(g32.len() > 10);
    // Parameters whose exact gradient is ~0 (a key bias: softmax ignores a per-query
    // constant) only need to stay small; the others must point the same way.
    let largest = g32
        .iter()
        .map(|(_, g)| g.norm().double_value(&[]))
        .fold(0.0, f64::max);
    for ((name, a), (name32, b)) in g16.iter().zip(g32.iter()) {
        assert_eq!(name, name32);
        assert_eq!(a.kind(), Kind::Float, "{name}'s gradient");
        let (na, nb) = (a.norm().double_value(&[]), b.norm().double_value(&[]));
        let off = (a - b).norm().double_value(&[]);
        assert!(
            off < 0.05 * largest,
            "{name}: gradient off by {off} ({largest} largest)"
        );
        if nb > 1e-3 * largest {
            let cos = (a * b).sum(Kind::Double).double_value(&[]) / (na * nb);
            assert!(cos > 0.99, "{name}: gradient cosine to float32 {cos}");
        }
    }
    for (name, t) in encoder.var_store().variables() {
        assert_eq!(t.kind(), Kind::Float, "{name} was converted");
    }
    // Off again: float32's output exactly.
    encoder.set_mixed_precision(Precision::F32).unwrap();
    let (back, _) = forward_and_grads(&encoder);
    assert_eq!((&back - &v32).abs().max().double_value(&[]), 0.0);
}

#[test]
fn a_bf16_mixed_precision_run_learns_and_saves_float32_weights() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let (dir, config) = tiny_recipe(INFO_NCE, 80);
    let out = dir.path().join("run");
    let options = TrainOptions {
        precision: Precision::Bf16,
        ..Default::default()
    };
    let summary = train(&config, &out, &options).unwrap();
    let (first, last) = (summary.first_loss.unwrap(), summary.last_loss.unwrap());
    assert!(last < 0.5 * first, "loss {first} -> {last}");
    let dev = summary.dev_p_at_1.unwrap();
    assert!(dev > 60.0, "dev P@1 {dev}");
    let record: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(out.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["mixed_precision"], serde_json::json!(true));
    let header = std::fs::read(out.join("model").join("model.safetensors")).unwrap();
    let len = u64::from_le_bytes(header[..8].try_into().unwrap()) as usize;
    let meta: serde_json::Value = serde_json::from_slice(&header[8..8 + len]).unwrap();
    for (name, t) in meta.as_object().unwrap() {
        if name != "__metadata__" {
            assert_eq!(t["dtype"], "F32", "{name}");
        }
    }
}

/// The trainer keeps the model of the best dev P@1 beside the last one (issue 15: the
/// soft-contrastive paper picks its checkpoint on the dev set): `best-model/dev.json`
/// names the first step of the highest dev P@1 in metrics.jsonl, and `best-model/`
/// holds exactly the weights a run stopped at that step ends with. A resumed run keeps
/// it; a fresh run in the same folder starts its own.
#[test]
fn the_best_dev_model_is_kept_beside_the_last() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let (dir, mut config) = tiny_recipe(INFO_NCE, 40);
    config.run.eval_every = 4;
    let out = dir.path().join("run");
    // Stopped at step 10 (best so far at 4, 8 or 10: a stopped run evaluates its last
    // step), then resumed to the end.
    let part = train(&config, &out, &stop_at(10)).unwrap();
    let early = part.best_dev.expect("three dev evaluations ran");
    assert!([4, 8, 10].contains(&early.step), "{early:?}");
    let summary = train(&config, &out, &TrainOptions::default()).unwrap();
    let best = summary.best_dev.expect("dev evaluated");
    assert_eq!(
        summary.best_model_dir.as_deref(),
        Some(out.join("best-model").as_path())
    );
    let on_disk: lase::train::trainer::BestDev =
        serde_json::from_str(&std::fs::read_to_string(out.join("best-model/dev.json")).unwrap())
            .unwrap();
    assert_eq!(on_disk, best);
    let dev: Vec<(u64, f64)> = std::fs::read_to_string(out.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Some((v["step"].as_u64()?, v["dev_p_at_1"].as_f64()?))
        })
        .collect();
    // Every 4 steps, and step 10, where the first part stopped.
    assert_eq!(dev.len(), 11, "{dev:?}");
    assert!(dev.iter().any(|d| d.0 == 10), "{dev:?}");
    eprintln!("dev P@1 by step: {dev:?}; best {best:?}");
    // This seed's dev P@1 reaches its maximum before the last step, so "the last
    // model" or "the last step of the maximum" would fail the checks below.
    assert!(best.step < 40, "{dev:?}");
    let max = dev.iter().map(|d| d.1).fold(f64::MIN, f64::max);
    let first_max = dev.iter().find(|d| d.1 == max).unwrap();
    assert_eq!((best.step, best.dev_p_at_1), *first_max, "{dev:?}");
    assert!(best.dev_p_at_1 >= early.dev_p_at_1);
    // The same recipe stopped at the best step has exactly best-model's weights.
    let straight = dir.path().join("straight");
    train(&config, &straight, &stop_at(best.step)).unwrap();
    let kept = SentenceEncoder::load(out.join("best-model"), Device::Cpu).unwrap();
    let at_step = SentenceEncoder::load(straight.join("checkpoint/encoder"), Device::Cpu).unwrap();
    let last = SentenceEncoder::load(out.join("model"), Device::Cpu).unwrap();
    // The largest difference of any weight between two encoders.
    let max_diff = |x: &SentenceEncoder, y: &SentenceEncoder| {
        let (a, b) = (x.var_store().variables(), y.var_store().variables());
        assert_eq!(a.len(), b.len());
        a.iter()
            .map(|(name, t)| (t - &b[name]).abs().max().double_value(&[]))
            .fold(0.0, f64::max)
    };
    // Identical when nothing else runs; with other tests beside it MKL may split a
    // product over fewer threads (MKL_DYNAMIC) and round differently (2e-5 seen), far
    // less than the steps between the best and the last model move the weights.
    let to_straight = max_diff(&kept, &at_step);
    let to_last = max_diff(&kept, &last);
    assert!(
        to_straight <= 1e-4 && to_straight * 10.0 < to_last,
        "best-model vs the run stopped at step {}: {to_straight}; vs the last model: {to_last}",
        best.step
    );
    // A fresh run in a folder whose checkpoint is gone does not inherit the old best.
    std::fs::remove_dir_all(out.join("checkpoint")).unwrap();
    std::fs::remove_file(out.join("metrics.jsonl")).unwrap();
    let mut one_step = config.clone();
    one_step.run.eval_every = 0;
    std::fs::remove_file(out.join("config.toml")).unwrap();
    let fresh = train(&one_step, &out, &stop_at(1)).unwrap();
    assert_eq!(fresh.best_dev, None);
    assert!(!out.join("best-model").exists());
}

/// kill -9 at 10 moments of a `lase train` process (checkpoints every step, so some kills
/// land inside a checkpoint write), each time resumed by running the same command again:
/// the final weights are bit-identical to an uninterrupted run's (issue 16, fault tests).
/// The kill moments follow the run's progress, not the clock: each launch is watched until
/// its checkpoint reaches a seeded target 1-8 steps past the last kill's, then killed after
/// a seeded delay of up to one step's time (measured on the uninterrupted run), so some
/// kills land mid-step and some mid-write, and ten launches cannot finish the 150 steps
/// between them however slow start-up is on a loaded machine.
#[test]
fn kill_9_at_ten_moments_then_resume_ends_bit_identical() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let (dir, mut config) = tiny_recipe(INFO_NCE, 150);
    config.run.checkpoint_every = 1;
    config.run.eval_every = 50;
    let recipe = dir.path().join("recipe.toml");
    std::fs::write(&recipe, config.to_toml()).unwrap();
    let lase = |out: &Path| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_lase"));
        c.args(["--threads", "1", "train", "--quiet", "--config"])
            .arg(&recipe)
            .arg("--out")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let straight = dir.path().join("straight");
    let t0 = Instant::now();
    assert!(lase(&straight).status().unwrap().success());
    let total = t0.elapsed();
    let step_time = total / 150;
    let killed = dir.path().join("killed");
    let mut rng = SplitMix64::new(16);
    let (mut in_checkpoint_write, mut steps_at_kill) = (0, Vec::new());
    let mut last = 0;
    for kill in 0..10 {
        let target = last + 1 + rng.below(8) as u64;
        let delay = step_time.mul_f64(rng.below(1000) as f64 / 1000.0);
        let mut child = lase(&killed).spawn().unwrap();
        let launched = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "launch {kill} ended ({status}) before its checkpoint reached step {target}; \
                     checkpoint steps at earlier kills {steps_at_kill:?}"
                );
            }
            if checkpoint_step(&killed).is_some_and(|s| s >= target) {
                break;
            }
            assert!(
                launched.elapsed() < Duration::from_secs(120),
                "launch {kill} made no checkpoint at step {target} in 120 s"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if killed.join("checkpoint.partial").exists() {
            in_checkpoint_write += 1;
        }
        let step = checkpoint_step(&killed).expect("a checkpoint was seen before the kill");
        assert!(step < 150, "the run finished before kill {kill}");
        steps_at_kill.push(step);
        last = step;
    }
    let status = lase(&killed).status().unwrap();
    assert!(status.success(), "the final resume failed: {status}");
    eprintln!(
        "kill -9: 10 kills; checkpoint step after each kill {steps_at_kill:?}; \
         {in_checkpoint_write} left a checkpoint.partial (killed while writing); uninterrupted run {:.1} s",
        total.as_secs_f64()
    );
    // The kills hit the run at ten different steps, each past the one before.
    assert!(
        steps_at_kill.windows(2).all(|w| w[0] < w[1]),
        "{steps_at_kill:?}"
    );
    // The torch lock for the loads' parameter initialisation (see cli_set_changes_...).
    let (a, b) = {
        let _rng = common::torch_rng();
        (
            SentenceEncoder::load(straight.join("model"), Device::Cpu).unwrap(),
            SentenceEncoder::load(killed.join("model"), Device::Cpu).unwrap(),
        )
    };
    let (va, vb) = (a.var_store().variables(), b.var_store().variables());
    assert_eq!(va.len(), vb.len());
    for (name, t) in &va {
        let diff = (t - &vb[name]).abs().max().double_value(&[]);
        assert_eq!(diff, 0.0, "{name} differs by {diff} after the kills");
    }
}

/// The step of the newest complete checkpoint under `out`, if any.
fn checkpoint_step(out: &Path) -> Option<u64> {
    ["checkpoint", "checkpoint.old"].iter().find_map(|d| {
        let text = std::fs::read_to_string(out.join(d).join("state.json")).ok()?;
        serde_json::from_str::<serde_json::Value>(&text).ok()?["step"].as_u64()
    })
}

/// A damaged checkpoint stops the resume with an error naming the damaged file (never a
/// panic, never a silent restart): a truncated weights file, a cut `state.json`, and a
/// model folder whose weights were truncated (issue 16, fault tests).
#[test]
fn a_damaged_checkpoint_or_model_is_a_clear_error() {
    let _rng = common::torch_rng(); // dropout masks and initialisation draw from it
    let (dir, config) = tiny_recipe(INFO_NCE, 6);
    let fresh = |name: &str| {
        let out = dir.path().join(name);
        train(&config, &out, &stop_at(4)).unwrap();
        out
    };
    let truncate = |path: &Path| {
        let bytes = std::fs::read(path).unwrap();
        std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
    };
    // Weights cut in half.
    let out = fresh("weights");
    let weights = out.join("checkpoint/encoder/model.safetensors");
    truncate(&weights);
    let err = train(&config, &out, &stop_at(1)).unwrap_err().to_string();
    assert!(err.contains("model.safetensors"), "{err}");
    let mut seen = vec![err];
    // state.json cut in half.
    let out = fresh("state");
    let state = out.join("checkpoint/state.json");
    truncate(&state);
    let err = train(&config, &out, &stop_at(1)).unwrap_err().to_string();
    assert!(err.contains("state.json"), "{err}");
    seen.push(err);
    // Optimizer moments cut in half.
    let out = fresh("moments");
    truncate(&out.join("checkpoint/optimizer.safetensors"));
    let err = train(&config, &out, &stop_at(1)).unwrap_err().to_string();
    assert!(err.contains("optimizer.safetensors"), "{err}");
    seen.push(err);
    // One byte of the weights changed, the size kept: only the checksum can tell.
    let out = fresh("flipped");
    let weights = out.join("checkpoint/encoder/model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&weights, &bytes).unwrap();
    let err = train(&config, &out, &stop_at(1)).unwrap_err().to_string();
    assert!(
        err.contains("model.safetensors") && err.contains("checksum mismatch"),
        "{err}"
    );
    seen.push(err);
    // A finished model folder with truncated weights.
    let out = dir.path().join("done");
    train(&config, &out, &TrainOptions::default()).unwrap();
    truncate(&out.join("model/model.safetensors"));
    let err = match SentenceEncoder::load(out.join("model"), Device::Cpu) {
        Ok(_) => panic!("a truncated model must not load"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("model.safetensors"), "{err}");
    seen.push(err);
    for e in &seen {
        eprintln!("damaged file: {e}");
    }
}

/// Gradient caching (src/train/grad_cache.rs) replays a chunk's dropout masks by reseeding
/// libtorch's generator: `tch::manual_seed` fixes every mask `dropout` draws (float32,
/// bfloat16 and float64; half shares float32's path), and the next draw is another mask.
/// Here, not beside the library's unit tests, because this binary's tests hold the
/// generator's lock while they draw.
#[test]
fn manual_seed_fixes_every_dropout_mask() {
    use lase::model::dropout::dropout;
    let _rng = common::torch_rng();
    let x = tch::Tensor::ones([64, 1000], (Kind::Float, Device::Cpu));
    for kind in [Kind::Float, Kind::BFloat16, Kind::Double] {
        let x = x.to_kind(kind);
        tch::manual_seed(5);
        let a = dropout(&x, 0.1, true);
        tch::manual_seed(5);
        let b = dropout(&x, 0.1, true);
        assert!(a.equal(&b), "{kind:?}: the same seed gives the same mask");
        let c = dropout(&x, 0.1, true);
        assert!(!a.equal(&c), "{kind:?}: the next draw another");
    }
}

/// A run folder's teacher cache belongs to one teacher: the same pairs under another
/// teacher's folder are embedded again, never read from the first teacher's cache (its
/// fingerprint named the texts only, so a recipe that never trained a step and then named
/// another teacher trained towards the first one's vectors); under the same teacher the
/// cache is read, not recomputed.
#[test]
fn a_teacher_cache_is_recomputed_for_another_teacher_and_reused_for_the_same() {
    use lase::train::config::{DistillationConfig, TeacherSide};
    use lase::train::teacher_cache::TeacherCache;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("teacher-a"), dir.path().join("teacher-b"));
    common::tiny_encoder(common::tiny_config(), common::mean_head(16, true), 1)
        .save(&a)
        .unwrap();
    common::tiny_encoder(common::tiny_config(), common::mean_head(16, true), 2)
        .save(&b)
        .unwrap();
    let mut corpus = lase::data::ParallelCorpus::default();
    let (de, en) = (corpus.language_id("deu"), corpus.language_id("eng"));
    for (src, tgt) in [("die katze", "the cat"), ("ein hund", "a dog")] {
        corpus.push(src.into(), tgt.into(), de, en, None);
    }
    let out = dir.path().join("run");
    std::fs::create_dir_all(&out).unwrap();
    let build = |teacher: &Path| -> Vec<f32> {
        let d = DistillationConfig::mse_only(teacher.to_path_buf(), TeacherSide::Target);
        let cache = TeacherCache::build(&d, &corpus, &out, Device::Cpu, false).unwrap();
        cache.target.expect("the target side").values().to_vec()
    };
    let first = build(&a);
    let cache = out.join("teacher-target.npy");
    let written = std::fs::metadata(&cache).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(build(&a), first);
    assert_eq!(
        std::fs::metadata(&cache).unwrap().modified().unwrap(),
        written,
        "the same teacher's cache was written again"
    );
    let second = build(&b);
    assert_ne!(second, first, "teacher B's run read teacher A's vectors");
    // What B's cache holds is what B embeds in a fresh folder.
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let d = DistillationConfig::mse_only(b.clone(), TeacherSide::Target);
    let again = TeacherCache::build(&d, &corpus, &fresh, Device::Cpu, false).unwrap();
    assert_eq!(again.target.unwrap().values().to_vec(), second);
}

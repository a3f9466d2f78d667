//! `lase tokenizer coverage` and `lase tokenizer extend` through the binary, on the
//! shipped models/lase-mini (its WordPiece vocabulary has no Lao characters; until the student
//! of 2026-11-27's thirteenth session, which reads Burmese, this test used Burmese) and a
//! two-language recipe written here.

use std::path::{Path, PathBuf};
use std::process::Command;

fn lase() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lase"));
    c.args(["--device", "cpu", "--threads", "1"]);
    c
}

/// Runs `command` and checks that it succeeded (its stderr otherwise).
fn succeed(command: &mut Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `command` and returns its stderr, checking that it failed.
fn fail(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `lase train --quiet --config RECIPE --out OUT`.
fn train(recipe: &Path, out: &Path) -> Command {
    let mut c = lase();
    c.args(["train", "--quiet", "--config"])
        .arg(recipe)
        .arg("--out")
        .arg(out);
    c
}

fn lase_mini() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models/lase-mini")
}

const ENGLISH: [&str; 4] = [
    "The dog runs quickly across the meadow.",
    "I have no time today.",
    "The weather is nice.",
    "We are going to the cinema tomorrow.",
];
const GERMAN: [&str; 4] = [
    "Der Hund läuft schnell über die Wiese.",
    "Ich habe heute keine Zeit.",
    "Das Wetter ist schön.",
    "Wir gehen morgen ins Kino.",
];
const LAO: [&str; 4] = [
    "ສະບາຍດີ ທ່ານ",
    "ຂ້ອຍ ເປັນ ນັກຮຽນ",
    "ມື້ນີ້ ອາກາດ ດີ",
    "ມື້ອື່ນ ພວກເຮົາ ຈະ ໄປ ເບິ່ງ ຮູບເງົາ",
];

/// deu-eng and lao-eng pairs and a recipe over them that extends lase-mini by `pieces`.
fn recipe(dir: &Path, pieces: usize) -> PathBuf {
    for (name, side) in [("deu", GERMAN), ("lao", LAO)] {
        let text: String = side
            .iter()
            .zip(ENGLISH)
            .map(|(a, b)| format!("{a}\t{b}\n"))
            .collect();
        std::fs::write(dir.join(format!("{name}.tsv")), text).unwrap();
    }
    let path = dir.join("recipe.toml");
    std::fs::write(
        &path,
        format!(
            "[model]\ninit_from = \"{}\"\nextend_vocabulary = {{ pieces = {pieces}, sample_sentences = 100 }}\n\
             [data]\nsources = [\n  {{ format = \"tsv\", path = \"{}\", src_lang = \"deu\", tgt_lang = \"eng\" }},\n  \
             {{ format = \"tsv\", path = \"{}\", src_lang = \"lao\", tgt_lang = \"eng\" }},\n]\nexclude_test_sets = false\n",
            lase_mini().display(),
            dir.join("deu.tsv").display(),
            dir.join("lao.tsv").display()
        ),
    )
    .unwrap();
    path
}

/// `lase tokenizer coverage --json`: (language -> (sentences, tokens, unknown tokens)).
fn coverage(model: &Path, recipe: &Path, json: &Path) -> Vec<(String, u64, u64, u64)> {
    succeed(
        lase()
            .args(["tokenizer", "coverage", "--model"])
            .arg(model)
            .arg("--config")
            .arg(recipe)
            .arg("--json")
            .arg(json),
    );
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["language"].as_str().unwrap().to_string(),
                r["sentences"].as_u64().unwrap(),
                r["tokens"].as_u64().unwrap(),
                r["unknown_tokens"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn row<'a>(rows: &'a [(String, u64, u64, u64)], lang: &str) -> &'a (String, u64, u64, u64) {
    rows.iter()
        .find(|r| r.0 == lang)
        .unwrap_or_else(|| panic!("no {lang} row in {rows:?}"))
}

#[test]
fn coverage_counts_unknown_tokens_per_language_and_extend_lowers_them() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = recipe(dir.path(), 30);
    let before = coverage(&lase_mini(), &recipe, &dir.path().join("before.json"));
    // English appears on the target side of both files.
    assert_eq!(row(&before, "eng").1, 8);
    assert_eq!(row(&before, "deu").1, 4);
    let (_, _, tokens, unknown) = row(&before, "lao");
    assert!(*tokens > 0 && unknown == tokens, "lao: {before:?}");
    assert_eq!(row(&before, "deu").3, 0, "{before:?}");
    assert_eq!(row(&before, "eng").3, 0, "{before:?}");

    let run = dir.path().join("run");
    succeed(
        lase()
            .args(["tokenizer", "extend", "--config"])
            .arg(&recipe)
            .arg("--out")
            .arg(&run),
    );
    let init = run.join("init");
    let lines = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count();
    let added = lines(&init.join("vocab.txt")) - lines(&lase_mini().join("vocab.txt"));
    assert!((1..=30).contains(&added), "{added} pieces added");
    assert!(init.join("EXTENDED").is_file());

    let after = coverage(&init, &recipe, &dir.path().join("after.json"));
    let (_, _, tokens_after, unknown_after) = row(&after, "lao");
    assert!(
        (*unknown_after as f64 / *tokens_after as f64) < 0.9,
        "lao after extension: {after:?}"
    );
    assert_eq!(row(&after, "deu").3, 0);

    // The extended model loads and embeds.
    let input = dir.path().join("lao.txt");
    std::fs::write(&input, LAO.join("\n") + "\n").unwrap();
    succeed(
        lase()
            .args(["embed", "--quiet", "--precision", "f32", "--model"])
            .arg(&init)
            .arg("--input")
            .arg(&input)
            .arg("--output")
            .arg(dir.path().join("lao.npy")),
    );
    let npy = lase::io::npy::NpyMatrix::open(dir.path().join("lao.npy")).unwrap();
    assert_eq!(npy.rows, LAO.len());
}

#[test]
fn extend_without_a_setting_and_coverage_of_a_bad_line_fail_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = recipe(dir.path(), 30);
    let without = dir.path().join("without.toml");
    let text = std::fs::read_to_string(&recipe).unwrap();
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("extend_vocabulary"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&without, text).unwrap();
    let stderr = fail(
        lase()
            .args(["tokenizer", "extend", "--config"])
            .arg(&without)
            .arg("--out")
            .arg(dir.path().join("run")),
    );
    assert!(stderr.contains("extend_vocabulary"), "{stderr}");

    // A line without a tab in the German file.
    let deu = dir.path().join("deu.tsv");
    let mut text = std::fs::read_to_string(&deu).unwrap();
    text.push_str("no tab on this line\n");
    std::fs::write(&deu, text).unwrap();
    let stderr = fail(
        lase()
            .args(["tokenizer", "coverage", "--model"])
            .arg(lase_mini())
            .arg("--config")
            .arg(&recipe),
    );
    assert!(
        stderr.contains("deu.tsv") && stderr.contains(":5"),
        "{stderr}"
    );
}

/// `train_only_added_rows` with `pieces_from = "unreadable"`: a few training steps change
/// the added word-embedding rows and leave every other weight of lase-mini (the old rows,
/// the transformer, the dense head) bit for bit as it was, so German (which lase-mini reads)
/// embeds exactly as before while Lao (which it read as [UNK]) does not.
#[test]
fn training_only_the_added_rows_keeps_every_other_weight() {
    use lase::model::SentenceEncoder;
    let dir = tempfile::tempdir().unwrap();
    let recipe = recipe(dir.path(), 30);
    let text = std::fs::read_to_string(&recipe).unwrap().replace(
        "sample_sentences = 100 }",
        "sample_sentences = 100, pieces_from = \"unreadable\", train_only_added_rows = true }",
    ) + "[objective]\ncontrastive = \"info-nce\"\nxtr = false\n\
         [optimizer]\nlr = 0.01\n\
         [schedule]\nsteps = 4\nwarmup_steps = 0\nbatch_pairs = 4\n\
         [run]\neval_every = 0\ncheckpoint_every = 0\n";
    std::fs::write(&recipe, text).unwrap();
    let run = dir.path().join("run");
    succeed(&mut train(&recipe, &run));
    let old_rows = lase::train::encoder_init::rows_of_extension(&run)
        .unwrap()
        .0 as i64;
    let init = SentenceEncoder::load(run.join("init"), tch::Device::Cpu).unwrap();
    let trained = SentenceEncoder::load(run.join("model"), tch::Device::Cpu).unwrap();
    let before = init.var_store().variables();
    let after = trained.var_store().variables();
    assert_eq!(before.len(), after.len());
    let mut added_rows_moved = false;
    for (name, b) in &before {
        let a = after[name].to_kind(tch::Kind::Float);
        let b = b.to_kind(tch::Kind::Float);
        if name.ends_with("word_embeddings.weight") {
            let rows = b.size()[0];
            assert!(
                rows > old_rows,
                "{name}: {rows} rows, {old_rows} before extension"
            );
            assert!(
                a.narrow(0, 0, old_rows).equal(&b.narrow(0, 0, old_rows)),
                "{name}"
            );
            added_rows_moved = !a.narrow(0, old_rows, rows - old_rows).equal(&b.narrow(
                0,
                old_rows,
                rows - old_rows,
            ));
        } else {
            assert!(a.equal(&b), "{name} changed");
        }
    }
    assert!(added_rows_moved, "training changed none of the added rows");

    // What the vectors show: German embeds as before, Lao does not.
    let embed = |model: &Path, lines: &[&str], name: &str| {
        let input = dir.path().join(format!("{name}.txt"));
        std::fs::write(&input, lines.join("\n") + "\n").unwrap();
        let output = dir.path().join(format!("{name}.npy"));
        succeed(
            lase()
                .args(["embed", "--quiet", "--precision", "f32", "--model"])
                .arg(model)
                .arg("--input")
                .arg(&input)
                .arg("--output")
                .arg(&output),
        );
        std::fs::read(&output).unwrap()
    };
    assert_eq!(
        embed(&run.join("init"), &GERMAN, "deu-init"),
        embed(&run.join("model"), &GERMAN, "deu-trained")
    );
    assert_ne!(
        embed(&run.join("init"), &LAO, "lao-init"),
        embed(&run.join("model"), &LAO, "lao-trained")
    );

    // A record that does not match the model's rows is refused, naming the file.
    let record_path = run.join("init").join("EXTENDED");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    record["report"]["new_vocab_size"] = serde_json::json!(old_rows);
    std::fs::write(&record_path, record.to_string()).unwrap();
    let stderr = fail(&mut train(&recipe, &run));
    assert!(
        stderr.contains("EXTENDED") && stderr.contains("train_only_added_rows"),
        "{stderr}"
    );
}

#[test]
fn training_only_the_added_rows_refuses_a_new_output_layer_or_a_frozen_encoder() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = recipe(dir.path(), 30);
    let text = std::fs::read_to_string(&recipe).unwrap();
    for (n, extra) in ["output_dim = 128", "freeze_encoder = true"]
        .into_iter()
        .enumerate()
    {
        let bad = text.replace(
            "sample_sentences = 100 }",
            &format!("sample_sentences = 100, train_only_added_rows = true }}\n{extra}"),
        );
        std::fs::write(&recipe, bad).unwrap();
        let stderr = fail(&mut train(&recipe, &dir.path().join(format!("run{n}"))));
        assert!(
            stderr.contains("train_only_added_rows keeps every other weight")
                && stderr.contains("unset model.freeze_encoder and model.output_dim"),
            "{extra}: {stderr}"
        );
    }
}

//! Bad input and bad output paths on the command line: each is refused with an error that
//! names the file (and line, where a line is at fault), before any work or output, and
//! never replaces or damages what the user already has.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

fn lase(args: &[&std::ffi::OsStr]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_lase"))
        .args(["--device", "cpu", "--threads", "1"])
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap()
}

/// Runs `args`, which must fail with exit code 1 (an error, not a panic's 101), and
/// returns its stderr.
fn refused(args: &[&std::ffi::OsStr]) -> String {
    let out = lase(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn os<S: AsRef<std::ffi::OsStr> + ?Sized>(s: &S) -> &std::ffi::OsStr {
    s.as_ref()
}

fn lines(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The arguments of `export --model MODEL --output OUTPUT`.
fn export_args<'a>(model: &'a Path, output: &'a Path) -> Vec<&'a std::ffi::OsStr> {
    vec![
        os("export"),
        os("--model"),
        os(model),
        os("--output"),
        os(output),
    ]
}

/// The arguments of `embed --model MODEL --input INPUT --output OUTPUT`.
fn embed_args<'a>(model: &'a Path, input: &'a Path, output: &'a Path) -> Vec<&'a std::ffi::OsStr> {
    vec![
        os("embed"),
        os("--model"),
        os(model),
        os("--input"),
        os(input),
        os("--output"),
        os(output),
    ]
}

/// The arguments of `reduce-dim --model MODEL --to TO --sample SAMPLE --output OUTPUT`.
fn reduce_dim_args<'a>(
    model: &'a Path,
    to: &'a str,
    sample: &'a Path,
    output: &'a Path,
) -> Vec<&'a std::ffi::OsStr> {
    vec![
        os("reduce-dim"),
        os("--model"),
        os(model),
        os("--to"),
        os(to),
        os("--sample"),
        os(sample),
        os("--output"),
        os(output),
    ]
}

/// The arguments of `mine --model MODEL --src SRC --tgt TGT --output OUTPUT`.
fn mine_args<'a>(
    model: &'a Path,
    src: &'a Path,
    tgt: &'a Path,
    output: &'a Path,
) -> Vec<&'a std::ffi::OsStr> {
    vec![
        os("mine"),
        os("--model"),
        os(model),
        os("--src"),
        os(src),
        os("--tgt"),
        os(tgt),
        os("--output"),
        os(output),
    ]
}

/// `export`, `interpolate`, `reduce-dim` and `shrink` write a model folder: a file at
/// --output is the user's and stays as it was; an --output that is the input (or inside
/// it) is refused instead of rewriting the input without its other files.
#[test]
fn a_model_folder_is_never_written_over_a_file_or_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let model = save_tiny_model(dir.path(), 5);
    std::fs::write(model.join("README.md"), "# the card\n").unwrap();
    let notes = lines(dir.path(), "notes.txt", "mine\n");
    let err = refused(&export_args(&model, &notes));
    assert!(
        err.contains("notes.txt exists and is not a folder"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine\n");
    let under_notes = notes.join("m");
    let err = refused(&export_args(&model, &under_notes));
    assert!(err.contains("notes.txt is a file, not a folder"), "{err}");
    let sample = lines(dir.path(), "sample.txt", "a b\nc d\n");
    let inside = model.join("sub");
    let other = dir.path().join("other");
    let cases: Vec<Vec<&std::ffi::OsStr>> = vec![
        export_args(&model, &model),
        export_args(&model, &inside),
        export_args(&model, dir.path()),
        vec![
            os("interpolate"),
            os("--model"),
            os(&other),
            os("--to"),
            os(&model),
            os("--alpha"),
            os("0.5"),
            os("--output"),
            os(&model),
        ],
        reduce_dim_args(&model, "4", &sample, &model),
        vec![
            os("shrink"),
            os("--model"),
            os(&model),
            os("--output"),
            os(&model),
        ],
    ];
    for args in cases {
        let err = refused(&args);
        assert!(err.contains("is, holds or lies inside the input"), "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(model.join("README.md")).unwrap(),
        "# the card\n"
    );
    // Beside it is fine, and loads.
    let copy = dir.path().join("copy");
    let out = lase(&export_args(&model, &copy));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lase::model::SentenceEncoder::load(&copy, tch::Device::Cpu).unwrap();
}

/// `mine`: an empty corpus is named as such (not as "0-d embeddings"), with the files;
/// a bad --gold file fails before the pairs file is written.
#[test]
fn mining_an_empty_corpus_or_with_a_bad_gold_file_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let model = save_tiny_model(dir.path(), 5);
    let src = lines(dir.path(), "src.txt", "the cat sat\nder hund\n");
    let empty = lines(dir.path(), "empty.txt", "");
    let out_path = dir.path().join("pairs.tsv");
    let err = refused(&mine_args(&model, &empty, &src, &out_path));
    assert!(
        err.contains("empty.txt") && err.contains("the source corpus is empty"),
        "{err}"
    );
    let gold = lines(
        dir.path(),
        "gold.tsv",
        "the cat sat\tder hund\nonly one column\n",
    );
    let mut args = mine_args(&model, &src, &src, &out_path);
    args.extend([os("--gold"), os(&gold)]);
    let err = refused(&args);
    assert!(err.contains("gold.tsv:2"), "{err}");
    assert!(!out_path.exists());
}

/// `eval` checks where it will write before it evaluates; a file where a folder should
/// be is named as a file.
#[test]
fn an_output_path_that_cannot_be_written_fails_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let model = save_tiny_model(dir.path(), 5);
    let file = lines(dir.path(), "plain.txt", "x\n");
    let json = dir.path().join("eval.json");
    let (no_data, report) = (dir.path().join("no-data"), file.join("report.md"));
    let err = refused(&[
        os("eval"),
        os("--model"),
        os(&model),
        os("--suite"),
        os("tatoeba"),
        os("--data-dir"),
        os(&no_data),
        os("--json"),
        os(&json),
        os("--report"),
        os(&report),
    ]);
    assert!(err.contains("plain.txt is a file, not a folder"), "{err}");
    assert!(!json.exists());
    let input = lines(dir.path(), "in.txt", "a b\n");
    let under_file = file.join("out.npy");
    let err = refused(&embed_args(&model, &input, &under_file));
    assert!(err.contains("plain.txt is a file, not a folder"), "{err}");
}

/// `eval` with a data folder that is not there (the default is relative to the working
/// directory) names the folder and the flag, and does so before loading the model: a
/// model folder that does not exist either is not what the error is about.
#[test]
fn eval_names_a_missing_data_folder_before_loading_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let no_data = dir.path().join("no-data");
    let no_model = dir.path().join("no-model");
    let err = refused(&[
        os("eval"),
        os("--model"),
        os(&no_model),
        os("--suite"),
        os("tatoeba"),
        os("--data-dir"),
        os(&no_data),
    ]);
    assert!(
        err.contains(&format!("data folder {} not found", no_data.display())),
        "{err}"
    );
    assert!(err.contains("--data-dir"), "{err}");
    assert!(!err.contains("no-model"), "{err}");
}

/// The commands that work for minutes to hours before they write (`mine`, `shard mine`,
/// `tokenizer train`, `reduce-dim`) check their output path first: with a file where a
/// folder of it should be, the error names that file, not the model, stores or data that
/// are missing too and would have failed later.
#[test]
fn long_commands_check_their_output_path_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = lines(dir.path(), "plain.txt", "x\n");
    let no_model = dir.path().join("no-model");
    let no_store = dir.path().join("no-store");
    let text = lines(dir.path(), "in.txt", "a b\nc d\n");
    let under_file = |name: &str| file.join(name);
    let says_file = |err: &str, missing: &Path| {
        assert!(err.contains("plain.txt is a file, not a folder"), "{err}");
        let missing = missing.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!err.contains(&missing), "{err}");
    };
    let pairs = under_file("pairs.tsv");
    let err = refused(&mine_args(&no_model, &text, &text, &pairs));
    says_file(&err, &no_model);
    let err = refused(&[
        os("shard"),
        os("mine"),
        os("--src"),
        os(&no_store),
        os("--tgt"),
        os(&no_store),
        os("--knn"),
        os(&no_store),
        os("--output"),
        os(&pairs),
    ]);
    says_file(&err, &no_store);
    let no_data = dir.path().join("no-data.tsv");
    let recipe = lines(
        dir.path(),
        "recipe.toml",
        &format!(
            "[data]\nexclude_test_sets = false\nsources = [{{ format = \"tsv\", path = \"{}\", src_lang = \"deu\", tgt_lang = \"eng\" }}]\n",
            no_data.display()
        ),
    );
    let err = refused(&[
        os("tokenizer"),
        os("train"),
        os("--config"),
        os(&recipe),
        os("--output"),
        os(&under_file("tokenizer.json")),
    ]);
    says_file(&err, &no_data);
    let err = refused(&reduce_dim_args(
        &no_model,
        "8",
        &text,
        &under_file("reduced"),
    ));
    says_file(&err, &no_model);
    // Without the bad output path, each fails on what is missing: the order, not the
    // inputs, made the errors above name the output.
    let fine = dir.path().join("out").join("pairs.tsv");
    assert!(refused(&mine_args(&no_model, &text, &text, &fine)).contains("no-model"));
    let err = refused(&reduce_dim_args(
        &no_model,
        "8",
        &text,
        &dir.path().join("reduced"),
    ));
    assert!(err.contains("no-model"), "{err}");
    // reduce-dim writes a folder: one an earlier run wrote is replaced, as before the check.
    let model = save_tiny_model(dir.path(), 5);
    let sample = lines(
        dir.path(),
        "sample.txt",
        "the cat\nein hund\nblue\nthe dog\n",
    );
    let reduced = dir.path().join("reduced-twice");
    for run in 1..=2 {
        let out = lase(&reduce_dim_args(&model, "8", &sample, &reduced));
        assert!(
            out.status.success(),
            "run {run}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(reduced.join("config.json").exists(), "run {run}");
    }
}

/// `eval --suite bucc` pairs line i of a FLORES file with line i of English: a file of
/// another length is named with both counts before anything is embedded.
#[test]
fn bucc_names_a_flores_file_that_does_not_line_up_with_english() {
    let dir = tempfile::tempdir().unwrap();
    let model = save_tiny_model(dir.path(), 5);
    let flores = dir.path().join("data/flores200-devtest/devtest");
    std::fs::create_dir_all(&flores).unwrap();
    lines(&flores, "eng_Latn.devtest", "one\ntwo\nthree\nfour\n");
    lines(&flores, "deu_Latn.devtest", "eins\nzwei\ndrei\n");
    let args = |langs: &str| {
        vec![
            os("eval").to_owned(),
            os("--model").to_owned(),
            model.clone().into_os_string(),
            os("--suite").to_owned(),
            os("bucc").to_owned(),
            os("--langs").to_owned(),
            os(langs).to_owned(),
            os("--data-dir").to_owned(),
            dir.path().join("data").into_os_string(),
            os("--quiet").to_owned(),
        ]
    };
    let a = args("deu_Latn,eng_Latn");
    let a: Vec<&std::ffi::OsStr> = a.iter().map(|s| s.as_os_str()).collect();
    let err = refused(&a);
    assert!(
        err.contains("deu_Latn.devtest") && err.contains("3 lines but eng_Latn.devtest has 4"),
        "{err}"
    );
    lines(&flores, "deu_Latn.devtest", "eins\nzwei\ndrei\nvier\n");
    let out = lase(&a);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whole files read at once (a model's config.json, a recipe) name the line of invalid
/// UTF-8, as the line readers do.
#[test]
fn invalid_utf8_in_a_config_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let model = save_tiny_model(dir.path(), 5);
    std::fs::remove_file(model.join("checksums.sha256")).unwrap();
    let config = model.join("config.json");
    let text = std::fs::read_to_string(&config).unwrap();
    let mut bytes = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        bytes.extend_from_slice(line.as_bytes());
        if i == 0 {
            bytes.extend_from_slice(b"  \"note\": \"\xff\",\n");
        }
    }
    std::fs::write(&config, bytes).unwrap();
    let input = lines(dir.path(), "in.txt", "a b\n");
    let output = dir.path().join("o.npy");
    let err = refused(&embed_args(&model, &input, &output));
    assert!(
        err.contains("config.json:2: invalid UTF-8 at byte 11 of the line"),
        "{err}"
    );
    let recipe = dir.path().join("recipe.toml");
    std::fs::write(&recipe, b"[model]\nhidden = 32 # \xfe\n").unwrap();
    let err = refused(&[
        os("check-leakage"),
        os("--config"),
        os(&recipe),
        os("--data-dir"),
        os(dir.path()),
    ]);
    assert!(err.contains("recipe.toml:2: invalid UTF-8"), "{err}");
}

/// Flags whose zero or NaN would do nothing useful silently (a batch of 0, a NaN
/// threshold keeping no pair, an alignment of 0 stored as 1) are usage errors.
#[test]
fn zero_counts_and_a_nan_threshold_are_usage_errors() {
    let cases: [(&[&str], &str); 5] = [
        (&["embed", "--batch-size", "0"], "must be at least 1"),
        (
            &["mine", "--threshold", "nan"],
            "NaN is not a finite number",
        ),
        (&["mine", "-k", "0"], "0 is not in [1, 65536]"),
        (
            &["serve", "--max-client-batch-size", "0"],
            "must be at least 1",
        ),
        (&["shard", "init", "--align", "0"], "must be at least 1"),
    ];
    for (args, says) in cases {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(os).collect();
        let out = lase(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// Sizes past anything a run can mean (a vocabulary of 10^12 pieces, HNSW lists of 10^8)
/// are refused naming the flag or the recipe key and its line, not left to abort in the
/// allocator; `eval` names an unknown suite before it loads the model.
#[test]
fn huge_sizes_and_unknown_suites_are_refused_by_name_before_the_work() {
    for (args, says) in [
        (
            &["mine", "--ann-connectivity", "100000000"][..],
            "--ann-connectivity",
        ),
        (
            &["mine", "--ann-ef-search", "1000000000000"],
            "--ann-ef-search",
        ),
        (
            &["mine", "--ann-ef-construction", "0"],
            "--ann-ef-construction",
        ),
        (&["mine", "--rescore", "0"], "--rescore"),
        (&["mine", "--rescore", "1025"], "--rescore"),
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(os).collect();
        let out = lase(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(says) && err.contains("is not in ["),
            "{args:?}: {err}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let recipe = lines(
        dir.path(),
        "recipe.toml",
        "[model]\ninit_from = \"m\"\nextend_vocabulary = { pieces = 1000000000000 }\n\n[data]\nexclude_test_sets = false\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\n",
    );
    let err = refused(&[os("recipe"), os("--config"), os(&recipe)]);
    assert!(
        err.contains(
            "recipe.toml:3: model.extend_vocabulary.pieces = 1000000000000: must be in [1, 4194304]"
        ),
        "{err}"
    );
    let err = refused(&[
        os("tokenizer"),
        os("extend"),
        os("--config"),
        os(&recipe),
        os("--out"),
        os(&dir.path().join("extended")),
    ]);
    assert!(err.contains("model.extend_vocabulary.pieces"), "{err}");
    assert!(!dir.path().join("extended").exists());
    let err = refused(&[
        os("tokenizer"),
        os("train"),
        os("--config"),
        os(&recipe),
        os("--output"),
        os(&dir.path().join("t.json")),
        os("--vocab-size"),
        os("1000000000000"),
    ]);
    assert!(
        err.contains("--vocab-size 1000000000000: must be in [1, 4194304]"),
        "{err}"
    );

    let no_model = dir.path().join("no-model");
    let err = refused(&[
        os("eval"),
        os("--model"),
        os(&no_model),
        os("--suite"),
        os("tatoeba,nonsense"),
        os("--data-dir"),
        os(dir.path()),
    ]);
    assert!(
        err.contains("nonsense") && !err.contains("no-model"),
        "{err}"
    );
    // `tokenizer coverage --json` at a folder: named before the model loads.
    let err = refused(&[
        os("tokenizer"),
        os("coverage"),
        os("--model"),
        os(&no_model),
        os("--config"),
        os(&recipe),
        os("--json"),
        os(dir.path()),
    ]);
    assert!(
        err.contains("is a folder") && !err.contains("no-model"),
        "{err}"
    );
}

/// `mine` on precomputed vectors names the .npy at fault: a non-finite value (its row and
/// the text line it stands for), or two files of different widths.
#[test]
fn mining_precomputed_vectors_names_the_npy_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    let src = lines(dir.path(), "src.txt", "a\nb\n");
    let tgt = lines(dir.path(), "tgt.txt", "c\nd\n");
    let npy = |name: &str, cols: usize, values: &[f32]| {
        let path = dir.path().join(name);
        let mut w = lase::io::npy::NpyWriter::create(&path, cols).unwrap();
        w.write_rows(values).unwrap();
        w.finish().unwrap();
        path
    };
    let four = npy("four.npy", 4, &[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    let three = npy("three.npy", 3, &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    let nan = npy("nan.npy", 4, &[1.0, 0.0, 0.0, 0.0, 0.0, f32::NAN, 0.0, 0.0]);
    let out = dir.path().join("pairs.tsv");
    let mine = |s: &Path, t: &Path| {
        refused(&[
            os("mine"),
            os("--src"),
            os(&src),
            os("--tgt"),
            os(&tgt),
            os("--src-embeddings"),
            os(s),
            os("--tgt-embeddings"),
            os(t),
            os("--output"),
            os(&out),
        ])
    };
    let err = mine(&four, &nan);
    assert!(
        err.contains("nan.npy")
            && err.contains("row 1 (0-based; line 2 of")
            && err.contains("tgt.txt"),
        "{err}"
    );
    let err = mine(&four, &three);
    assert!(
        err.contains("four.npy holds 4-d vectors but") && err.contains("three.npy holds 3-d"),
        "{err}"
    );
    assert!(!out.exists());
}

/// `reduce-dim` names --to beyond the model's width and a sample too small for a PCA
/// (with its file) before it embeds anything.
#[test]
fn reduce_dim_names_the_flag_or_the_sample_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    let model = save_tiny_model(dir.path(), 5);
    let sample = lines(dir.path(), "sample.txt", "the cat\nder hund\nthe dog\n");
    let one = lines(dir.path(), "one.txt", "the cat\n\n");
    let output = dir.path().join("reduced");
    let reduce = |to: &str, sample: &Path| refused(&reduce_dim_args(&model, to, sample, &output));
    let err = reduce("1000", &sample);
    assert!(
        err.contains("--to 1000") && err.contains("16 dimensions"),
        "{err}"
    );
    let err = reduce("4", &one);
    assert!(err.contains("one.txt: 1 non-empty lines"), "{err}");
    let mut args = reduce_dim_args(&model, "4", &sample, &output);
    args.extend([os("--max-sentences"), os("1")]);
    let err = refused(&args);
    assert!(err.contains("--max-sentences 1"), "{err}");
    assert!(!output.exists());
}

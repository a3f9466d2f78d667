//! Evaluation metrics equal an independent numpy reference on fixed embeddings
//! (tests/fixtures/eval/make_reference.py), and the Tatoeba reader handles the files
//! as shipped.

mod common;

use common::*;
use lase::eval::bitext_retrieval;
use lase::io::npy::NpyMatrix;
use lase::io::text::read_lines;
use lase::mine::MatrixView;

#[test]
fn p_at_1_and_xsim_match_the_reference() {
    let dir = repo_path("tests/fixtures/eval");
    let (x, y) = (
        NpyMatrix::open(dir.join("x.npy")).unwrap(),
        NpyMatrix::open(dir.join("y.npy")).unwrap(),
    );
    let (xv, yv) = (x.values(), y.values());
    let xm = MatrixView::new(&xv, x.rows, x.cols).unwrap();
    let ym = MatrixView::new(&yv, y.rows, y.cols).unwrap();
    let xt = read_lines(dir.join("x.txt")).unwrap();
    let yt = read_lines(dir.join("y.txt")).unwrap();
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let got = bitext_retrieval(&xm, &ym, Some((&xt, &yt))).unwrap();
    let close = |a: f64, b: &serde_json::Value| (a - b.as_f64().unwrap()).abs() < 1e-9;
    assert!(
        close(got.p_at_1_xy, &want["xy"]["p_at_1"]),
        "{got:?} vs {want}"
    );
    assert!(
        close(got.p_at_1_yx, &want["yx"]["p_at_1"]),
        "{got:?} vs {want}"
    );
    assert!(
        close(got.xsim_error_xy, &want["xy"]["xsim_error"]),
        "{got:?} vs {want}"
    );
    assert!(
        close(got.xsim_error_yx, &want["yx"]["xsim_error"]),
        "{got:?} vs {want}"
    );
    // Without texts, duplicates no longer count: scores can only drop.
    let strict = bitext_retrieval(&xm, &ym, None).unwrap();
    assert!(strict.p_at_1_xy <= got.p_at_1_xy && strict.xsim_error_xy >= got.xsim_error_xy);
}

#[test]
fn tatoeba_reader_checks_alignment_and_languages() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tatoeba.deu-eng.deu"), "Hallo\nWelt\n").unwrap();
    std::fs::write(dir.path().join("tatoeba.deu-eng.eng"), "Hello\nWorld\n").unwrap();
    std::fs::write(dir.path().join("tatoeba.fra-eng.fra"), "Bonjour\n").unwrap();
    std::fs::write(dir.path().join("tatoeba.fra-eng.eng"), "Hello\nextra\n").unwrap();
    let only_deu = lase::eval::tatoeba::load(dir.path(), Some(&["deu".to_string()])).unwrap();
    assert_eq!(only_deu.len(), 1);
    assert_eq!(only_deu[0].english, vec!["Hello", "World"]);
    let e = lase::eval::tatoeba::load(dir.path(), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tatoeba.fra-eng.fra") && e.contains("1 lines"),
        "{e}"
    );
    // An empty test file is named, not scored over no sentence.
    std::fs::write(dir.path().join("tatoeba.fra-eng.fra"), "").unwrap();
    std::fs::write(dir.path().join("tatoeba.fra-eng.eng"), "").unwrap();
    let e = lase::eval::tatoeba::load(dir.path(), Some(&["fra".to_string()]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tatoeba.fra-eng.fra") && e.contains("empty"),
        "{e}"
    );
    let e = lase::eval::tatoeba::load(dir.path(), Some(&["xyz".to_string()]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("xyz"), "{e}");
}

#[test]
fn cli_eval_writes_json_and_report() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data/tatoeba-laser");
    std::fs::create_dir_all(&data).unwrap();
    let de = [
        "der hund ist groß",
        "die katze ist klein",
        "das haus ist rot",
        "der hund läuft schnell",
    ];
    let en = [
        "the dog is big",
        "the cat is small",
        "the house is red",
        "the dog runs fast",
    ];
    std::fs::write(data.join("tatoeba.deu-eng.deu"), de.join("\n") + "\n").unwrap();
    std::fs::write(data.join("tatoeba.deu-eng.eng"), en.join("\n") + "\n").unwrap();
    let model = work.path().join("model");
    tiny_encoder(tiny_config(), mean_head(16, true), 51)
        .save(&model)
        .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lase"))
        .args([
            "--device", "cpu", "eval", "--quiet", "--suite", "tatoeba", "--model",
        ])
        .arg(&model)
        .arg("--data-dir")
        .arg(work.path().join("data"))
        .arg("--json")
        .arg(work.path().join("r.json"))
        .arg("--report")
        .arg(work.path().join("r.md"))
        .arg("--plot")
        .arg(work.path().join("r.svg"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.path().join("r.json")).unwrap())
            .unwrap();
    let deu = &json["tatoeba"]["languages"]["deu"];
    assert_eq!(deu["pairs"], 4);
    let p1 = deu["p_at_1_xy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&p1));
    assert_eq!(json["tatoeba"]["average"]["languages"], 1);
    let md = std::fs::read_to_string(work.path().join("r.md")).unwrap();
    assert!(md.contains("| deu | 4 |"), "{md}");
    let svg = std::fs::read_to_string(work.path().join("r.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("\ndeu\n"), "{svg}");
}

#[test]
fn spearman_with_ties_matches_scipy() {
    let path = repo_path("tests/fixtures/eval/spearman.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let list = |k: &str| -> Vec<f64> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let got = lase::eval::spearman::spearman(&list("pred"), &list("gold"));
    assert!(
        (got - v["spearman"].as_f64().unwrap()).abs() < 1e-12,
        "{got} vs {}",
        v["spearman"]
    );
}

#[test]
fn sts_readers_parse_quoted_csv_and_name_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("stsb-en-test.csv"),
        "\"A man, smiling.\",\"He said \"\"hi\"\", then left.\",4.2\r\nplain,text,0.0\r\n",
    )
    .unwrap();
    let s = lase::eval::sts::load_stsb(dir.path(), "en", "test").unwrap();
    assert_eq!(s.sentence1, vec!["A man, smiling.", "plain"]);
    assert_eq!(s.sentence2, vec!["He said \"hi\", then left.", "text"]);
    assert_eq!(s.scores, vec![4.2, 0.0]);
    std::fs::write(
        dir.path().join("stsb-de-test.csv"),
        "a,b,1.0\r\nc,d,high\r\n",
    )
    .unwrap();
    let e = lase::eval::sts::load_stsb(dir.path(), "de", "test")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("stsb-de-test.csv:2:") && e.contains("high"),
        "{e}"
    );
    std::fs::write(
        dir.path().join("sts-test.tsv"),
        "genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\nx\ty\tz\t1\t2.5\t가\t나\nbroken\tline\n",
    )
    .unwrap();
    let e = lase::eval::sts::load_korsts(dir.path(), "test")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sts-test.tsv:3:") && e.contains("2 fields"),
        "{e}"
    );
}

#[test]
fn sib_probe_learns_and_reader_names_bad_lines() {
    use lase::eval::sib::{ClassifierConfig, train_and_test};
    use tch::{Kind, Tensor};
    // Three Gaussian blobs in 8-d: a linear probe separates them; shuffled labels it cannot.
    let _rng = torch_rng(); // held to the end: every draw below follows this seed
    tch::manual_seed(3);
    let centres = Tensor::randn([3, 8], (Kind::Float, tch::Device::Cpu)) * 3.0;
    let y = Tensor::arange(300, (Kind::Int64, tch::Device::Cpu)).remainder(3);
    let x = centres.index_select(0, &y) + Tensor::randn([300, 8], (Kind::Float, tch::Device::Cpu));
    let (tx, ty) = (x.narrow(0, 200, 100), y.narrow(0, 200, 100));
    let (trx, try_) = (x.narrow(0, 0, 200), y.narrow(0, 0, 200));
    let acc = train_and_test(
        &trx,
        &try_,
        &[(&tx, &ty)],
        3,
        0,
        &ClassifierConfig::default(),
    )
    .unwrap();
    assert!(acc[0] > 0.9, "accuracy {}", acc[0]);
    let shuffled = try_.index_select(0, &Tensor::randperm(200, (Kind::Int64, tch::Device::Cpu)));
    let chance = train_and_test(
        &trx,
        &shuffled,
        &[(&tx, &ty)],
        3,
        0,
        &ClassifierConfig::default(),
    )
    .unwrap();
    assert!(
        chance[0] < 0.6,
        "shuffled labels should not be learnable: {}",
        chance[0]
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("labels.txt"), "travel\nsports\n").unwrap();
    let lang = dir.path().join("annotated/xxx_Latn");
    std::fs::create_dir_all(&lang).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(
        &mut gz,
        b"index_id\tcategory\ttext\n1\tsports\tA match.\n2\tcooking\tA cake.\n",
    )
    .unwrap();
    std::fs::write(lang.join("test.tsv.gz"), gz.finish().unwrap()).unwrap();
    let labels = lase::eval::sib::label_names(dir.path()).unwrap();
    let e = lase::eval::sib::load_split(dir.path(), "xxx_Latn", "test", &labels)
        .unwrap_err()
        .to_string();
    assert!(e.contains("test.tsv.gz:3:") && e.contains("cooking"), "{e}");
}

#[test]
fn bucc_task_finds_planted_translations_and_reports_the_oracle_apart() {
    use lase::eval::bucc::{BuccConfig, evaluate_pair};
    use tch::{Kind, Tensor};
    let _rng = torch_rng(); // held to the end: every draw below follows this seed
    tch::manual_seed(9);
    let n = 600i64;
    let unit = |t: Tensor| {
        let norm = t.norm_scalaropt_dim(2, [1].as_slice(), true);
        &t / norm
    };
    let x = unit(Tensor::randn([n, 32], (Kind::Float, tch::Device::Cpu)));
    let y = unit(&x + Tensor::randn([n, 32], (Kind::Float, tch::Device::Cpu)) * 0.2);
    let (xv, yv) = (
        Vec::<f32>::try_from(x.flatten(0, -1)).unwrap(),
        Vec::<f32>::try_from(y.flatten(0, -1)).unwrap(),
    );
    let xm = MatrixView::new(&xv, n as usize, 32).unwrap();
    let ym = MatrixView::new(&yv, n as usize, 32).unwrap();
    let r = evaluate_pair(&xm, &ym, &BuccConfig::default()).unwrap();
    // 300 test lines: 120 gold, 90 source-only, 90 target-only.
    assert_eq!(
        (
            r.test_gold_pairs,
            r.test_source_sentences,
            r.test_target_sentences
        ),
        (120, 210, 210)
    );
    assert!(r.f1 > 0.85, "{r:?}");
    assert!(r.oracle_f1 >= r.f1 - 1e-12, "{r:?}");
    // Pure noise: nothing is a translation of anything, F1 stays low.
    let z = unit(Tensor::randn([n, 32], (Kind::Float, tch::Device::Cpu)));
    let zv = Vec::<f32>::try_from(z.flatten(0, -1)).unwrap();
    let zm = MatrixView::new(&zv, n as usize, 32).unwrap();
    let noise = evaluate_pair(&xm, &zm, &BuccConfig::default()).unwrap();
    assert!(noise.f1 < 0.2, "{noise:?}");
}

#[test]
fn pool_retrieval_and_distractor_reader() {
    use lase::eval::large_pool::{english_distractors, p_at_1_in_pool};
    use tch::{Kind, Tensor};
    let _rng = torch_rng(); // held to the end: every draw below follows this seed
    tch::manual_seed(17);
    let unit = |t: Tensor| {
        let norm = t.norm_scalaropt_dim(2, [1].as_slice(), true);
        &t / norm
    };
    // 5,000 candidates; the first 100 are the gold rows of 100 noisy queries.
    let cand = unit(Tensor::randn([5000, 32], (Kind::Float, tch::Device::Cpu)));
    let queries = unit(
        cand.narrow(0, 0, 100) + Tensor::randn([100, 32], (Kind::Float, tch::Device::Cpu)) * 0.05,
    );
    let (cv, qv) = (
        Vec::<f32>::try_from(cand.flatten(0, -1)).unwrap(),
        Vec::<f32>::try_from(queries.flatten(0, -1)).unwrap(),
    );
    let c = MatrixView::new(&cv, 5000, 32).unwrap();
    let q = MatrixView::new(&qv, 100, 32).unwrap();
    let gold: Vec<usize> = (0..100).collect();
    assert!(p_at_1_in_pool(&q, &c, &gold).unwrap() > 0.95);
    let shifted: Vec<usize> = (1..101).collect();
    assert!(p_at_1_in_pool(&q, &c, &shifted).unwrap() < 0.05);
    let e = p_at_1_in_pool(&q, &c, &gold[..99]).unwrap_err().to_string();
    assert!(e.contains("100 queries but 99 gold rows"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let write_gz = |path: std::path::PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
        std::fs::write(path, gz.finish().unwrap()).unwrap();
    };
    write_gz(
        dir.path().join("deu-eng/t.eng.gz"),
        "A cat.\nA dog.\nThe test sentence.\n",
    );
    write_gz(dir.path().join("eng-fra/t.eng.gz"), "A dog.\nA bird.\n");
    write_gz(dir.path().join("eng-fra/t.fra.gz"), "Un oiseau.\n");
    write_gz(dir.path().join("eng-eng/t.eng2.labels.gz"), "eng\n");
    let exclude: std::collections::HashSet<String> = ["The test sentence.".to_string()].into();
    let mut got = english_distractors(dir.path(), &exclude, 3).unwrap();
    got.sort();
    assert_eq!(got, vec!["A bird.", "A cat.", "A dog."]);
    let e = english_distractors(dir.path(), &exclude, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("only 3 distinct"), "{e}");
}

/// The SIB probe against scikit-learn's LogisticRegression on the same fixed embeddings
/// (tests/fixtures/eval/make_classifier_reference.py): two different optimisers of the
/// same model class, so accuracies agree to within a point or two, not bit for bit.
#[test]
fn classifier_accuracy_matches_scikit_learn() {
    use lase::eval::sib::{ClassifierConfig, train_and_test};
    use tch::Tensor;
    // train_and_test seeds the generator, then initialises the probe from it.
    let _rng = torch_rng();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval");
    let load = |name: &str| -> (Tensor, Tensor) {
        let m = lase::io::npy::NpyMatrix::open(dir.join(format!("classifier_{name}.npy"))).unwrap();
        let x = Tensor::from_slice(&m.values()).view([m.rows as i64, m.cols as i64]);
        let labels: Vec<i64> = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("classifier_{name}_labels.json"))).unwrap(),
        )
        .unwrap();
        (x, Tensor::from_slice(&labels))
    };
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("classifier_expected.json")).unwrap(),
    )
    .unwrap();
    let (train_x, train_y) = load("train");
    let (en_x, en_y) = load("test_en");
    let (xx_x, xx_y) = load("test_xx");
    let config = ClassifierConfig::default();
    let mut mean = [0.0f64; 2];
    for seed in 0..config.seeds {
        let acc = train_and_test(
            &train_x,
            &train_y,
            &[(&en_x, &en_y), (&xx_x, &xx_y)],
            7,
            seed,
            &config,
        )
        .unwrap();
        mean[0] += acc[0] / config.seeds as f64;
        mean[1] += acc[1] / config.seeds as f64;
    }
    for (ours, key) in mean.iter().zip(["accuracy_test_en", "accuracy_test_xx"]) {
        let reference = expected[key].as_f64().unwrap();
        assert!(
            (ours - reference).abs() <= 0.02,
            "{key}: lase {ours:.4} vs scikit-learn {reference:.4}"
        );
    }
}

/// The pool and STS suites refuse test files that do not align line for line, naming the
/// file, instead of indexing past the end (pool) or scoring NaN (cross-lingual STS).
#[test]
fn pool_and_sts_suites_refuse_misaligned_files() {
    use lase::eval::benchmark_data::{
        BenchmarkData, FLORES_DEVTEST, STSB_MULTI_MT, TATOEBA_CHALLENGE_ENG_TRAIN,
    };
    use lase::inference::EncodeOptions;
    let root = tempfile::tempdir().unwrap();
    let flores = root.path().join(FLORES_DEVTEST);
    std::fs::create_dir_all(&flores).unwrap();
    std::fs::write(flores.join("eng_Latn.devtest"), "the dog\nthe cat\n").unwrap();
    // One line more than English (a trailing empty line counts: it holds a row's place).
    std::fs::write(flores.join("spa_Latn.devtest"), "el perro\nel gato\n\n").unwrap();
    let train = root
        .path()
        .join(TATOEBA_CHALLENGE_ENG_TRAIN)
        .join("eng-spa");
    std::fs::create_dir_all(&train).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, b"a bird\na house\n").unwrap();
    std::fs::write(train.join("t.eng.gz"), gz.finish().unwrap()).unwrap();
    let sts = root.path().join(STSB_MULTI_MT);
    std::fs::create_dir_all(&sts).unwrap();
    std::fs::write(
        sts.join("stsb-en-test.csv"),
        "a dog,a cat,1.0\nred,blue,2.0\nup,down,0.5\n",
    )
    .unwrap();
    std::fs::write(
        sts.join("stsb-de-test.csv"),
        "ein hund,eine katze,1.0\nrot,blau,2.0\n",
    )
    .unwrap();

    let encoder = tiny_encoder(tiny_config(), mean_head(16, true), 51);
    let data = BenchmarkData::new(root.path());
    let options = EncodeOptions::for_device(tch::Device::Cpu);
    let config = lase::eval::large_pool::PoolConfig { distractors: 2 };
    let spanish = ["spa_Latn".to_string()];
    let pool = || {
        lase::eval::large_pool::evaluate(&encoder, data, Some(&spanish), &options, &config, false)
    };
    let e = pool().unwrap_err().to_string();
    assert!(
        e.contains("spa_Latn.devtest") && e.contains("3 lines but eng_Latn.devtest has 2"),
        "{e}"
    );
    // Aligned, it scores.
    std::fs::write(flores.join("spa_Latn.devtest"), "el perro\nel gato\n").unwrap();
    let r = pool().unwrap();
    assert_eq!(r["spa_Latn->eng"].candidates, 4);

    let langs = ["en".to_string(), "de".to_string()];
    let e = lase::eval::sts::evaluate(&encoder, data, Some(&langs), &options, false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("stsb-de-test.csv") && e.contains("2 rows but stsb-en-test.csv has 3"),
        "{e}"
    );
}

/// `lase eval --suite bitext --bitext DIR` scores the user's own test sets without a data
/// folder. Two sets make the scores checkable without a reference: one whose sides are the
/// same sentences in the same order (every sentence's nearest neighbour is itself: P@1 1,
/// xSIM error 0), and one whose English side is the same sentences reversed (its nearest
/// neighbour is then never its gold line: P@1 0). A set that does not line up is named
/// before anything is embedded; --bitext without the suite, the suite without it, and
/// another suite beside it with no data folder are refused before the model loads.
#[test]
fn cli_eval_scores_your_own_test_sets() {
    let work = tempfile::tempdir().unwrap();
    let model = work.path().join("model");
    tiny_encoder(tiny_config(), mean_head(16, true), 51)
        .save(&model)
        .unwrap();
    let lines = [
        "the dog is big",
        "the cat is small",
        "the house is red",
        "the dog runs fast",
        "a blue cat",
        "the red house is small",
    ];
    let sets = work.path().join("my-sets");
    let pair = sets.join("deu-eng");
    std::fs::create_dir_all(&pair).unwrap();
    let text = |v: &[&str]| v.join("\n") + "\n";
    let reversed: Vec<&str> = lines.iter().rev().copied().collect();
    std::fs::write(pair.join("same.deu"), text(&lines)).unwrap();
    std::fs::write(pair.join("same.eng"), text(&lines)).unwrap();
    std::fs::write(pair.join("reversed.deu"), text(&lines)).unwrap();
    std::fs::write(pair.join("reversed.eng"), text(&reversed)).unwrap();
    let lase = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_lase"))
            .args(["--device", "cpu", "--threads", "1", "eval", "--quiet"])
            .args(args)
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap()
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    let json_path = work.path().join("r.json");
    let args = vec![
        os("--suite"),
        os("bitext"),
        os("--model"),
        model.clone().into_os_string(),
        os("--bitext"),
        sets.clone().into_os_string(),
        os("--data-dir"),
        work.path().join("no-data").into_os_string(),
        os("--json"),
        json_path.clone().into_os_string(),
    ];
    let argv: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let out = lase(&argv);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let same = &json["bitext"]["sets"]["deu-eng/same"];
    let reversed = &json["bitext"]["sets"]["deu-eng/reversed"];
    assert_eq!(same["pairs"], 6);
    assert_eq!(same["p_at_1_xy"], 1.0);
    assert_eq!(same["p_at_1_yx"], 1.0);
    assert_eq!(same["xsim_error_xy"], 0.0);
    assert_eq!(reversed["p_at_1_xy"], 0.0);
    assert_eq!(reversed["p_at_1_yx"], 0.0);
    assert_eq!(json["bitext"]["mean_p_at_1"], 50.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("bitext: 2 test sets, mean P@1 50.00"),
        "{stdout}"
    );
    // --langs keeps the sets in either language; one with none of them is an error.
    let mut with_langs = argv.clone();
    with_langs.extend([std::ffi::OsStr::new("--langs"), std::ffi::OsStr::new("jpn")]);
    let out = lase(&with_langs);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("jpn"), "{err}");
    // Beside another suite, the data folder is still needed (and checked first).
    let mut with_flores = argv.clone();
    with_flores[1] = std::ffi::OsStr::new("bitext,flores");
    let err = String::from_utf8_lossy(&lase(&with_flores).stderr).into_owned();
    assert!(err.contains("no-data not found"), "{err}");
    // A set that does not line up is named, with both counts.
    std::fs::write(pair.join("short.deu"), text(&lines[..5])).unwrap();
    std::fs::write(pair.join("short.eng"), text(&lines)).unwrap();
    let out = lase(&argv);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("short.deu") && err.contains("5 lines but short.eng has 6"),
        "{err}"
    );
    // --bitext without the suite, and the suite without --bitext.
    let err = String::from_utf8_lossy(&lase(&argv[2..]).stderr).into_owned();
    assert!(err.contains("add bitext to --suite"), "{err}");
    let err = String::from_utf8_lossy(&lase(&argv[..4]).stderr).into_owned();
    assert!(err.contains("name them with --bitext"), "{err}");
}

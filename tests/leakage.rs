//! Test sentences never leak into training: the benchmark reader and the leak finder on a
//! planted leak, and the real training data of ../shared/data against every test set.

use std::path::Path;

use lase::data::{CorpusSource, ParallelCorpus};
use lase::eval::leakage::{BenchmarkSentences, drop_leaks, find_leaks};

/// A benchmark folder (2 Tatoeba pairs, 1 FLORES sentence) and a training TSV of 3 pairs,
/// two of which share a sentence with a test set.
fn planted_leak(dir: &Path) -> std::path::PathBuf {
    let tatoeba = dir.join("tatoeba-laser");
    std::fs::create_dir_all(&tatoeba).unwrap();
    std::fs::write(
        tatoeba.join("tatoeba.deu-eng.deu"),
        "Ich habe Hunger.\r\nEs regnet.\r\n",
    )
    .unwrap();
    std::fs::write(
        tatoeba.join("tatoeba.deu-eng.eng"),
        "I am hungry.\r\nIt is raining.\r\n",
    )
    .unwrap();
    let flores = dir.join("flores200-devtest/devtest");
    std::fs::create_dir_all(&flores).unwrap();
    std::fs::write(flores.join("fra_Latn.devtest"), "Il pleut sur Paris.\n").unwrap();
    let train = dir.join("train.tsv");
    std::fs::write(
        &train,
        "Guten Morgen.\tGood morning.\n  Es regnet. \tIt rains.\nIl pleut sur Paris.\tIt rains on Paris.\n",
    )
    .unwrap();
    train
}

#[test]
fn a_planted_test_sentence_is_found_with_its_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let train = planted_leak(dir.path());
    let benchmarks = BenchmarkSentences::read(dir.path()).unwrap();
    assert_eq!(benchmarks.len(), 5);
    let corpus = ParallelCorpus::read(&[CorpusSource::Tsv {
        path: train,
        src_lang: "deu".into(),
        tgt_lang: "eng".into(),
        weight: None,
    }])
    .unwrap();
    let leaks = find_leaks(&corpus, &benchmarks);
    let found: Vec<(usize, &str, &str)> = leaks
        .iter()
        .map(|l| (l.pair, l.sentence.as_str(), l.benchmark.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            (1, "  Es regnet. ", "tatoeba-laser deu"),
            (2, "Il pleut sur Paris.", "flores200 devtest fra_Latn"),
        ]
    );
}

/// The shipped training data, read as the recipes read it (configs/ems-small.toml, with
/// `exclude_test_sets`), shares no sentence in any language with any test set lase
/// evaluates on; without the exclusion it does (a few short English sentences of the
/// STS-B test split are also Tatoeba sentences), so the check has teeth.
#[test]
fn training_pairs_share_no_sentence_with_the_test_sets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = root.join("../shared/data");
    if !data.join("tatoeba-challenge-eng-train").is_dir() {
        eprintln!(
            "SKIPPED: {} not present (the check needs the project's shared data)",
            data.display()
        );
        return;
    }
    let config = lase::train::TrainConfig::from_file(&root.join("configs/ems-small.toml")).unwrap();
    let excluded = config
        .data
        .exclude_test_sets
        .as_ref()
        .expect("the recipe excludes test sets");
    let mut corpus = ParallelCorpus::read(&config.data.sources).unwrap();
    assert!(corpus.pairs.len() > 300_000, "{} pairs", corpus.pairs.len());
    let benchmarks = BenchmarkSentences::read(excluded).unwrap();
    // Tatoeba (~158k distinct), FLORES (~206k), STS, SIB: all were read.
    assert!(
        benchmarks.len() > 400_000,
        "{} test sentences",
        benchmarks.len()
    );
    let raw_leaks = find_leaks(&corpus, &benchmarks);
    let leaky_pairs: std::collections::BTreeSet<usize> = raw_leaks.iter().map(|l| l.pair).collect();
    let dropped = drop_leaks(&mut corpus, &benchmarks);
    assert_eq!(dropped, leaky_pairs.len());
    let leaks = find_leaks(&corpus, &benchmarks);
    assert!(
        leaks.is_empty(),
        "{} training sentences are test sentences, e.g. {:?}",
        leaks.len(),
        &leaks[..leaks.len().min(5)]
    );
}

/// `lase check-leakage`: fails and names the leaks for a recipe without
/// `exclude_test_sets`; passes, saying how many pairs the exclusion drops, with it.
#[test]
fn check_leakage_command_fails_on_leaks_and_passes_with_the_exclusion() {
    let dir = tempfile::tempdir().unwrap();
    let train = planted_leak(dir.path());
    let recipe = |exclude: &str| {
        let path = dir.path().join("recipe.toml");
        std::fs::write(
            &path,
            format!(
                "[data]\nsources = [{{ format = \"tsv\", path = {:?}, src_lang = \"deu\", tgt_lang = \"eng\" }}]\n{exclude}",
                train.display().to_string()
            ),
        )
        .unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_lase"))
            .arg("check-leakage")
            .arg("--config")
            .arg(&path)
            .arg("--data-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, text) = recipe("");
    assert!(!ok, "{text}");
    assert!(text.contains("2 leaked sentences"), "{text}");
    assert!(
        text.contains("Es regnet.") && text.contains("flores200 devtest fra_Latn"),
        "{text}"
    );
    let (ok, text) = recipe(&format!(
        "exclude_test_sets = {:?}\n",
        dir.path().display().to_string()
    ));
    assert!(ok, "{text}");
    assert!(
        text.contains("drops 2 pairs") && text.contains("0 leaked sentences"),
        "{text}"
    );
}

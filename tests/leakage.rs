//! Test sentences never leak into training: the benchmark reader and the leak finder on a
//! planted leak, and the real training data of ../shared/data against every test set.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use lase::data::{CorpusSource, ParallelCorpus};
use lase::eval::leakage::{BenchmarkSentences, drop_leaks, find_leaks};
use lase::train::config::{DataConfig, TestSetExclusion};

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

/// A non-pivot pair (deu-fra) trains on its row's English segment too (the teacher's
/// target): when that segment is a test sentence the pair leaks, and is dropped.
#[test]
fn a_non_pivot_pairs_english_segment_is_checked_too() {
    let dir = tempfile::tempdir().unwrap();
    planted_leak(dir.path());
    let benchmarks = BenchmarkSentences::read(dir.path()).unwrap();
    let mut corpus = ParallelCorpus::default();
    let (de, fr) = (corpus.language_id("deu"), corpus.language_id("fra"));
    corpus.push_non_pivot(
        ("Guten Morgen.".into(), de),
        ("Bonjour.".into(), fr),
        "Good morning.".into(),
        0,
    );
    corpus.push_non_pivot(
        ("Hunger!".into(), de),
        ("J'ai faim !".into(), fr),
        "I am hungry.".into(),
        1,
    );
    let leaks = find_leaks(&corpus, &benchmarks);
    let found: Vec<(usize, &str, &str)> = leaks
        .iter()
        .map(|l| (l.pair, l.language.as_str(), l.sentence.as_str()))
        .collect();
    assert_eq!(found, vec![(1, "pivot", "I am hungry.")]);
    assert_eq!(drop_leaks(&mut corpus, &benchmarks), 1);
    assert_eq!(corpus.pairs.len(), 1);
    assert_eq!(corpus.pairs[0].src, "Guten Morgen.");
}

/// Test sentences read straight from the benchmark files with std::fs (FLORES-200
/// devtest and Tatoeba, the two largest), independently of lase's benchmark reader.
fn flores_and_tatoeba_sentences(data: &Path) -> HashSet<String> {
    let mut out = HashSet::new();
    for folder in [
        data.join("flores200-devtest/devtest"),
        data.join("tatoeba-laser"),
    ] {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.ends_with(".devtest") || name.starts_with("tatoeba.")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            out.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    out
}

/// Every shipped recipe (each configs/**/*.toml with a [data] section) says which test
/// sets it excludes, and only the documented one opts out. Each distinct data section is
/// read as `lase train` reads it, with a planted extra source holding a FLORES and a
/// Tatoeba test sentence: the exclusion must drop both, and the pairs left must share no
/// sentence with the FLORES/Tatoeba files as read here independently. The shared data
/// ships beside every checkout and CI clone: its absence fails the test.
#[test]
fn every_shipped_recipe_trains_on_no_test_sentence() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = root.join("../shared/data");
    assert!(
        data.join("tatoeba-challenge-eng-train").is_dir()
            && data.join("flores200-devtest").is_dir(),
        "{} is missing: the leakage check needs the project's shared data",
        data.display()
    );
    let mut recipes = Vec::new();
    let mut stack = vec![root.join("configs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") {
                recipes.push(path);
            }
        }
    }
    recipes.sort();
    assert!(recipes.len() >= 20, "{} recipes found", recipes.len());
    let mut opted_out = Vec::new();
    let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in &recipes {
        // The recipe as it trains: an arm that extends a base has the base's data.
        let config: DataConfig = if path.parent().is_some_and(|p| p.ends_with("multistage")) {
            lase::train::multistage::MultistageConfig::from_file(path)
                .unwrap_or_else(|e| panic!("{e}"))
                .data
        } else {
            lase::train::TrainConfig::from_file(path)
                .unwrap_or_else(|e| panic!("{e}"))
                .data
        };
        let name = path.strip_prefix(root).unwrap().display().to_string();
        match &config.exclude_test_sets {
            None => panic!("{name}: no data.exclude_test_sets"),
            Some(TestSetExclusion::Off(_)) => opted_out.push(name),
            Some(TestSetExclusion::Folder(_)) => {
                let key = toml::to_string(&DataConfig {
                    max_train_pairs: None,
                    ..config
                })
                .unwrap();
                sections.entry(key).or_default().push(name);
            }
        }
    }
    // lase-small's stage 2 continues a run trained before the exclusion existed, and the
    // LEALLA-loss and soft-contrastive ablations reuse its split and teacher cache (the
    // LEALLA rows of other readings too: FD beta 1e3 / 1.3, LD T = 10 / 1). A new opt-out
    // must be added here on purpose.
    let mut allowed: Vec<String> = [
        "ams",
        "ams-fd",
        "ams-fd-ld",
        "ams-ld",
        "fd",
        "ld",
        "ams-fd-beta-1.3",
        "ams-fd-beta-1e3",
        "ams-ld-t1",
        "ams-ld-t10",
        "fd-beta-1e3",
    ]
    .iter()
    .map(|n| format!("configs/ablation/lealla/{n}.toml"))
    .chain(
        [
            "hard-contrastive",
            "mse",
            "mse-teacher-width",
            "priority",
            "priority-tcm",
        ]
        .iter()
        .map(|n| format!("configs/ablation/soft/{n}.toml")),
    )
    .chain(["configs/lase-small.toml".to_owned()])
    .collect();
    allowed.sort();
    assert_eq!(opted_out, allowed);
    assert!(sections.len() >= 2, "{sections:?}");

    let independent = flores_and_tatoeba_sentences(&data);
    assert!(
        independent.len() > 300_000,
        "{} sentences",
        independent.len()
    );
    let flores =
        std::fs::read_to_string(data.join("flores200-devtest/devtest/deu_Latn.devtest")).unwrap();
    let tatoeba = std::fs::read_to_string(data.join("tatoeba-laser/tatoeba.fra-eng.fra")).unwrap();
    let planted_dir = tempfile::tempdir().unwrap();
    let planted = planted_dir.path().join("planted.tsv");
    std::fs::write(
        &planted,
        format!(
            "{}\tA planted FLORES sentence.\n{}\tA planted Tatoeba sentence.\nEin Satz, den es nirgends gibt.\tA sentence found nowhere.\n",
            flores.lines().nth(7).unwrap(),
            tatoeba.lines().nth(3).unwrap()
        ),
    )
    .unwrap();
    // Recipes name paths from the repository root, the working directory of cargo's tests.
    let mut benchmarks_by_dir: BTreeMap<PathBuf, BenchmarkSentences> = BTreeMap::new();
    for (key, names) in &sections {
        let mut config: DataConfig = toml::from_str(key).unwrap();
        config.sources.push(CorpusSource::Tsv {
            path: planted.clone(),
            src_lang: "deu".into(),
            tgt_lang: "eng".into(),
            weight: None,
        });
        let dir = config.exclusion().unwrap().to_path_buf();
        let benchmarks = benchmarks_by_dir
            .entry(dir.clone())
            .or_insert_with(|| BenchmarkSentences::read(&dir).unwrap());
        let raw = ParallelCorpus::read(&config.sources).unwrap();
        let (kept, dropped) =
            lase::train::training_data::read_training_pairs(&config, Some((&dir, benchmarks)))
                .unwrap();
        let dropped = dropped.unwrap();
        assert!(dropped >= 2, "{names:?}: {dropped} pairs dropped");
        assert_eq!(kept.pairs.len() + dropped, raw.pairs.len(), "{names:?}");
        assert!(
            kept.pairs
                .iter()
                .any(|p| p.src == "Ein Satz, den es nirgends gibt."),
            "{names:?}: a clean planted pair was dropped"
        );
        let leaked: Vec<&str> = kept
            .pairs
            .iter()
            .flat_map(|p| [p.src.trim(), p.tgt.trim()])
            .filter(|s| independent.contains(*s))
            .take(5)
            .collect();
        assert!(
            leaked.is_empty(),
            "{names:?} trains on test sentences: {leaked:?}"
        );
    }
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
    let (ok, text) = recipe("exclude_test_sets = false\n");
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
    // An exclusion that names a missing folder, or one without any test set, would
    // exclude nothing: refused, with the path.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (folder, says) in [
        (dir.path().join("missing"), "No such file"),
        (empty.clone(), "holds none of the test sets"),
    ] {
        let (ok, text) = recipe(&format!(
            "exclude_test_sets = {:?}\n",
            folder.display().to_string()
        ));
        assert!(!ok, "{text}");
        assert!(
            text.contains(&folder.display().to_string()) && text.contains(says),
            "{text}"
        );
        let err = BenchmarkSentences::read(&folder).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
}

/// `lase check-leakage --bitext`: the user's own held-out test sets (as `lase eval --bitext`
/// takes them) count as test sentences. A recipe that passes against the benchmarks (its
/// exclusion drops their two leaks) fails on a training sentence that is also in a user's
/// set, naming the set; without --bitext it passes.
#[test]
fn check_leakage_counts_your_own_test_sets() {
    let dir = tempfile::tempdir().unwrap();
    let train = planted_leak(dir.path());
    let sets = dir.path().join("held-out/deu-eng");
    std::fs::create_dir_all(&sets).unwrap();
    std::fs::write(sets.join("news.deu"), "Guten Morgen.\nEin anderer Satz.\n").unwrap();
    std::fs::write(sets.join("news.eng"), "Good day.\nAnother sentence.\n").unwrap();
    let recipe = dir.path().join("recipe.toml");
    std::fs::write(
        &recipe,
        format!(
            "[data]\nsources = [{{ format = \"tsv\", path = {:?}, src_lang = \"deu\", tgt_lang = \"eng\" }}]\nexclude_test_sets = {:?}\n",
            train.display().to_string(),
            dir.path().display().to_string()
        ),
    )
    .unwrap();
    let check = |bitext: Option<&Path>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_lase"));
        c.arg("check-leakage")
            .arg("--config")
            .arg(&recipe)
            .arg("--data-dir")
            .arg(dir.path());
        if let Some(b) = bitext {
            c.arg("--bitext").arg(b);
        }
        let out = c.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, text) = check(None);
    assert!(ok && text.contains("0 leaked sentences"), "{text}");
    let (ok, text) = check(Some(&dir.path().join("held-out")));
    assert!(!ok, "{text}");
    assert!(
        text.contains("in 1 test sets of --bitext: 1 leaked sentences")
            && text.contains("\"Guten Morgen.\" is in bitext deu-eng/news (deu)"),
        "{text}"
    );
}

//! Sharded mining (`lase shard init|embed|knn|mine`) gives the same pairs file as
//! single-process `lase mine --model`, byte for byte, for 1, 2 and 7 shards of uneven
//! sizes, and a shard whose output was lost is redone while finished ones are skipped.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use lase::rng::SplitMix64;

fn lase() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lase"));
    c.args(["--device", "cpu", "--threads", "1"]);
    c
}

fn run(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `n` sentences of 2-7 tiny-vocabulary words; every 5th line of `seed` 1 and 2 is
/// shared between the two corpora (translations to find), some lines are empty.
fn corpus(dir: &Path, name: &str, n: usize, seed: u64) -> PathBuf {
    let mut rng = SplitMix64::new(seed);
    let mut shared = SplitMix64::new(99);
    let mut text = String::new();
    for i in 0..n {
        let rng = if i % 5 == 0 { &mut shared } else { &mut rng };
        let len = 2 + rng.below(6);
        let words: Vec<&str> = (0..len)
            .map(|_| TINY_WORDS[rng.below(TINY_WORDS.len())])
            .collect();
        if i % 997 != 3 {
            text.push_str(&words.join(" "));
        }
        text.push('\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn shard_mine(
    work: &Path,
    tag: &str,
    model: &Path,
    (src, src_shards): (&Path, usize),
    (tgt, tgt_shards): (&Path, usize),
) -> (PathBuf, Vec<String>) {
    let root = work.join(tag);
    let (s, t, knn) = (root.join("src"), root.join("tgt"), root.join("knn"));
    let mut log = Vec::new();
    for (store, input, n) in [(&s, src, src_shards), (&t, tgt, tgt_shards)] {
        log.push(run(lase()
            .args(["shard", "init", "--shards", &n.to_string(), "--input"])
            .arg(input)
            .arg("--store")
            .arg(store)));
        let shards = lase::shard::Store::open(store).unwrap().shards();
        for i in 0..shards {
            log.push(run(lase()
                .args([
                    "shard",
                    "embed",
                    "--quiet",
                    "--shard",
                    &i.to_string(),
                    "--model",
                ])
                .arg(model)
                .arg("--store")
                .arg(store)));
        }
    }
    for (direction, store) in [("fwd", &s), ("bwd", &t)] {
        let shards = lase::shard::Store::open(store).unwrap().shards();
        for i in 0..shards {
            log.push(run(lase()
                .args([
                    "shard",
                    "knn",
                    "--direction",
                    direction,
                    "--shard",
                    &i.to_string(),
                ])
                .arg("--src")
                .arg(&s)
                .arg("--tgt")
                .arg(&t)
                .arg("--out")
                .arg(&knn)));
        }
    }
    let pairs = root.join("pairs.tsv");
    log.push(run(lase()
        .args(["shard", "mine", "--indices", "--src"])
        .arg(&s)
        .arg("--tgt")
        .arg(&t)
        .arg("--knn")
        .arg(&knn)
        .arg("--output")
        .arg(&pairs)));
    (pairs, log)
}

#[test]
fn sharded_mining_equals_lase_mine_for_1_2_and_7_shards() {
    let work = tempfile::tempdir().unwrap();
    let model = work.path().join("model");
    tiny_encoder(tiny_config(), mean_head(16, true), 7)
        .save(&model)
        .unwrap();
    // 7 x 8192 + 3,000 and 6 x 8192 + 5,000 lines: 8 and 7 aligned blocks, so 7 shards
    // are uneven (one or two blocks, the last a part block).
    let src = corpus(work.path(), "src.txt", 7 * 8192 + 3000, 1);
    let tgt = corpus(work.path(), "tgt.txt", 6 * 8192 + 5000, 2);
    let single = work.path().join("single.tsv");
    run(lase()
        .args([
            "mine",
            "--quiet",
            "--precision",
            "f32",
            "--indices",
            "--model",
        ])
        .arg(&model)
        .arg("--src")
        .arg(&src)
        .arg("--tgt")
        .arg(&tgt)
        .arg("--output")
        .arg(&single));
    let want = std::fs::read(&single).unwrap();
    let mined = want.iter().filter(|&&b| b == b'\n').count();
    assert!(
        mined > 1000,
        "only {mined} pairs: the fixture finds too little"
    );
    for (src_shards, tgt_shards) in [(1, 1), (2, 7), (7, 2)] {
        let tag = format!("{src_shards}x{tgt_shards}");
        let (pairs, log) = shard_mine(
            work.path(),
            &tag,
            &model,
            (&src, src_shards),
            (&tgt, tgt_shards),
        );
        let got = std::fs::read(&pairs).unwrap();
        assert!(
            got == want,
            "{tag}: the sharded pairs differ from lase mine's ({} vs {} bytes)\n{}",
            got.len(),
            want.len(),
            log.join("")
        );
        eprintln!(
            "{tag} shards: {mined} pairs, byte-identical to lase mine; {}",
            log[0].trim()
        );
    }
}

/// `lase shard mine` over `root`'s src/tgt stores and knn lists into `root/name`, as it
/// ends (it may fail).
fn shard_mine_into(root: &Path, name: &str) -> std::process::Output {
    lase()
        .args(["shard", "mine", "--src"])
        .arg(root.join("src"))
        .arg("--tgt")
        .arg(root.join("tgt"))
        .arg("--knn")
        .arg(root.join("knn"))
        .arg("--output")
        .arg(root.join(name))
        .output()
        .unwrap()
}

#[test]
fn a_lost_shard_is_redone_and_finished_ones_are_skipped() {
    let work = tempfile::tempdir().unwrap();
    let model = work.path().join("model");
    tiny_encoder(tiny_config(), mean_head(16, true), 8)
        .save(&model)
        .unwrap();
    let src = corpus(work.path(), "src.txt", 3 * 8192 + 100, 3);
    let tgt = corpus(work.path(), "tgt.txt", 2 * 8192 + 50, 4);
    let (pairs, _) = shard_mine(work.path(), "run", &model, (&src, 3), (&tgt, 3));
    let first = std::fs::read(&pairs).unwrap();
    let root = work.path().join("run");
    // Shard 1's embedding is cut short and its record gone (a job killed while writing
    // would leave neither, since both are written atomically: this is worse), and one
    // k-NN list of each direction is deleted.
    let npy = root.join("src/shard-00001.npy");
    let bytes = std::fs::read(&npy).unwrap();
    std::fs::write(&npy, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::remove_file(root.join("src/shard-00001.json")).unwrap();
    std::fs::remove_file(root.join("knn/fwd-00001.json")).unwrap();
    std::fs::remove_file(root.join("knn/bwd-00000.indices.npy")).unwrap();
    let (again, log) = shard_mine(work.path(), "run", &model, (&src, 3), (&tgt, 3));
    let log = log.join("");
    assert_eq!(std::fs::read(&again).unwrap(), first);
    let redone: Vec<&str> = log.lines().filter(|l| l.contains(" rows in ")).collect();
    assert_eq!(
        redone.len(),
        3,
        "exactly the embed of src shard 1 and two k-NN lists are redone:\n{log}"
    );
    let steps: Vec<&str> = redone
        .iter()
        .map(|l| l.split(" rows in ").next().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "embed shard 1: 8192",
            "knn Fwd shard 1: 8192",
            "knn Bwd shard 0: 8192"
        ],
        "{log}"
    );
    assert_eq!(
        log.matches("skipped").count(),
        3 + 3 - 1 + 3 + 3 - 2,
        "{log}"
    );
    // A mine over lists that are not all there names the missing shard.
    std::fs::remove_file(root.join("knn/bwd-00002.json")).unwrap();
    let out = shard_mine_into(&root, "partial.tsv");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("bwd shard 2"), "{err}");
    assert!(!root.join("partial.tsv").exists());
    // A list damaged on disk (a neighbour index outside the other side) is refused with
    // the file and row, not a panic; so is a negative one.
    let (pairs, _) = shard_mine(work.path(), "run", &model, (&src, 3), (&tgt, 3));
    assert_eq!(std::fs::read(&pairs).unwrap(), first);
    let indices = root.join("knn/fwd-00001.indices.npy");
    let clean = std::fs::read(&indices).unwrap();
    let header = 10 + u16::from_le_bytes([clean[8], clean[9]]) as usize;
    for (value, row) in [(999_999i64, 0usize), (-5, 3)] {
        let mut bytes = clean.clone();
        let at = header + row * 4 * 8;
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        std::fs::write(&indices, &bytes).unwrap();
        let out = shard_mine_into(&root, "damaged.tsv");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.contains("fwd-00001.indices.npy")
                && err.contains(&format!(
                    "row {row} (query line {}) lists neighbour {value}",
                    8192 + row + 1
                )),
            "{err}"
        );
        assert!(!root.join("damaged.tsv").exists());
    }
}

/// A finished shard is skipped only for the model that made it: a run naming another model
/// is refused (mixing two models' vectors in one search would mine nonsense silently), and
/// so is a store whose shards came from two models.
#[test]
fn a_store_embedded_with_one_model_refuses_another() {
    let work = tempfile::tempdir().unwrap();
    let (a, b) = (work.path().join("model-a"), work.path().join("model-b"));
    tiny_encoder(tiny_config(), mean_head(16, true), 8)
        .save(&a)
        .unwrap();
    tiny_encoder(tiny_config(), mean_head(16, true), 9)
        .save(&b)
        .unwrap();
    let src = corpus(work.path(), "src.txt", 8192 + 10, 5);
    let store = work.path().join("store");
    run(lase()
        .args(["shard", "init", "--shards", "2", "--input"])
        .arg(&src)
        .arg("--store")
        .arg(&store));
    let embed = |shard: &str, model: &Path| {
        lase()
            .args(["shard", "embed", "--quiet", "--shard", shard, "--model"])
            .arg(model)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap()
    };
    assert!(embed("0", &a).status.success());
    // The same model named by another path is the same model: skipped.
    let other_path = work.path().join(".").join("model-a");
    let again = embed("0", &other_path);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("skipped"));
    let refused = embed("0", &b);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        err.contains("shard 0 was embedded with") && err.contains("model-b"),
        "{err}"
    );
    // Shard 1 made by the other model: the store as a whole is refused by the search.
    assert!(embed("1", &b).status.success());
    let knn = lase()
        .args([
            "shard",
            "knn",
            "--direction",
            "fwd",
            "--shard",
            "0",
            "--src",
        ])
        .arg(&store)
        .arg("--tgt")
        .arg(&store)
        .arg("--out")
        .arg(work.path().join("knn"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&knn.stderr);
    assert!(!knn.status.success());
    assert!(err.contains("but shard 1 with"), "{err}");
}

/// A search across two stores of different widths is refused naming both stores and their
/// models (not "source"/"target", which a backward search swaps); a `-k` past the keys
/// keeps every key rather than sizing its lists by the number asked for, and one past
/// 65,536 is a usage error.
#[test]
fn stores_of_two_widths_are_named_and_a_k_past_the_keys_keeps_every_key() {
    let work = tempfile::tempdir().unwrap();
    let (wide, narrow) = (work.path().join("wide"), work.path().join("narrow"));
    tiny_encoder(tiny_config(), mean_head(16, true), 8)
        .save(&wide)
        .unwrap();
    tiny_encoder(
        tiny_config(),
        dense_head(16, 8, lase::model::PoolingMode::Mean),
        9,
    )
    .save(&narrow)
    .unwrap();
    let text = corpus(work.path(), "text.txt", 12, 5);
    let store = |name: &str, model: &Path| {
        let dir = work.path().join(name);
        run(lase()
            .args(["shard", "init", "--shards", "1", "--input"])
            .arg(&text)
            .arg("--store")
            .arg(&dir));
        run(lase()
            .args(["shard", "embed", "--quiet", "--shard", "0", "--model"])
            .arg(model)
            .arg("--store")
            .arg(&dir));
        dir
    };
    let (a, b, c) = (store("a", &wide), store("b", &narrow), store("c", &wide));
    let knn = |direction: &str, k: &str, tgt: &Path| {
        lase()
            .args([
                "shard",
                "knn",
                "--direction",
                direction,
                "--shard",
                "0",
                "-k",
                k,
            ])
            .arg("--src")
            .arg(&a)
            .arg("--tgt")
            .arg(tgt)
            .arg("--out")
            .arg(work.path().join(format!("knn-{direction}")))
            .output()
            .unwrap()
    };
    for direction in ["fwd", "bwd"] {
        let out = knn(direction, "4", &b);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("{} holds 16-d vectors", a.display()))
                && err.contains(&format!("{} holds 8-d vectors", b.display()))
                && err.contains("narrow"),
            "{direction}: {err}"
        );
    }
    // Past the bound: a usage error naming -k (it aborted in the allocator before).
    let out = knn("fwd", "1000000000000", &c);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("<K>'") && err.contains("1000000000000 is not in [1, 65536]"),
        "{err}"
    );
    // At the bound, over 12 keys: the lists keep the 12.
    let out = knn("fwd", "65536", &c);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let keys = lase::shard::Store::open(&c).unwrap().manifest.lines;
    let lists = std::fs::read_dir(work.path().join("knn-fwd"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a record of the search");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(lists).unwrap()).unwrap();
    assert_eq!(record["k"].as_u64(), Some(keys as u64), "{record}");
}

/// An empty corpus makes a store of one empty shard: searching with it, or in it, is
/// refused with the empty store named, in both directions (the query side's error named
/// no store before).
#[test]
fn an_empty_store_is_named_whichever_side_it_is() {
    let work = tempfile::tempdir().unwrap();
    let model = save_tiny_model(work.path(), 8);
    let store = |name: &str, input: &Path| {
        let dir = work.path().join(name);
        run(lase()
            .args(["shard", "init", "--shards", "1", "--input"])
            .arg(input)
            .arg("--store")
            .arg(&dir));
        run(lase()
            .args(["shard", "embed", "--quiet", "--shard", "0", "--model"])
            .arg(&model)
            .arg("--store")
            .arg(&dir));
        dir
    };
    let empty_text = work.path().join("empty.txt");
    std::fs::write(&empty_text, "").unwrap();
    let empty = store("empty-store", &empty_text);
    let full = store("full-store", &corpus(work.path(), "text.txt", 12, 5));
    for (direction, says) in [
        ("fwd", "shard 0 has no sentences to search with"),
        ("bwd", "the store searched has no sentences"),
    ] {
        let out = lase()
            .args(["shard", "knn", "--direction", direction, "--shard", "0"])
            .arg("--src")
            .arg(&empty)
            .arg("--tgt")
            .arg(&full)
            .arg("--out")
            .arg(work.path().join("knn"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{direction}: {err}");
        assert!(
            err.contains(&format!("{}: {says}", empty.display())),
            "{direction}: {err}"
        );
    }
}

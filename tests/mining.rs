//! Mining equals an independent numpy reference (tests/fixtures/mining/make_reference.py,
//! LASER's mine_bitexts.py logic) on fixed embeddings, for every margin and retrieval;
//! edge cases fail clearly.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use lase::io::npy::{NpyMatrix, write_f32};
use lase::io::text::read_lines;
use lase::mine::{KnnOptions, MatrixView, MineOptions, SearchKernel, knn_both_ways, mine};

fn fixture(name: &str) -> std::path::PathBuf {
    repo_path("tests/fixtures/mining").join(name)
}

fn load(name: &str) -> NpyMatrix {
    NpyMatrix::open(fixture(name)).unwrap()
}

/// The fixture's source and target embeddings (x.npy, y.npy) as float rows that tests
/// borrow matrix views of.
struct FixtureRows {
    x: Vec<f32>,
    y: Vec<f32>,
    x_rows: usize,
    y_rows: usize,
    dim: usize,
}

impl FixtureRows {
    fn load() -> Self {
        let (x, y) = (load("x.npy"), load("y.npy"));
        assert_eq!(x.cols, y.cols);
        Self {
            x: x.values().into_owned(),
            y: y.values().into_owned(),
            x_rows: x.rows,
            y_rows: y.rows,
            dim: x.cols,
        }
    }

    fn views(&self) -> (MatrixView<'_>, MatrixView<'_>) {
        (
            MatrixView::new(&self.x, self.x_rows, self.dim).unwrap(),
            MatrixView::new(&self.y, self.y_rows, self.dim).unwrap(),
        )
    }
}

fn expected_knn(name: &str) -> Vec<Vec<(i64, f32)>> {
    read_lines(fixture(name))
        .unwrap()
        .iter()
        .map(|l| {
            l.split('\t')
                .map(|c| {
                    let (j, s) = c.split_once(':').unwrap();
                    (j.parse().unwrap(), s.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

#[test]
fn knn_matches_brute_force_reference_for_any_block_size() {
    let rows = FixtureRows::load();
    let (xm, ym) = rows.views();
    let kernels = [
        (SearchKernel::CpuTiles, 0, 0),
        (SearchKernel::TensorBlocks, 2048, 4096),
        (SearchKernel::TensorBlocks, 7, 13),
        (SearchKernel::TensorBlocks, 1, 300),
        (SearchKernel::TensorBlocks, 300, 1),
    ];
    for (kernel, qb, kb) in kernels {
        let opts = KnnOptions {
            kernel,
            query_block: qb,
            key_block: kb,
            ..KnnOptions::new(4)
        };
        let (fwd, bwd) = knn_both_ways(&xm, &ym, &opts).unwrap();
        for (got, want) in [
            (&fwd, expected_knn("knn_fwd.tsv")),
            (&bwd, expected_knn("knn_bwd.tsv")),
        ] {
            assert_eq!(got.len(), want.len());
            for (i, row) in want.iter().enumerate() {
                let idx: Vec<i64> = row.iter().map(|r| r.0).collect();
                assert_eq!(
                    got.indices_of(i),
                    idx.as_slice(),
                    "blocks {qb}x{kb}, row {i}"
                );
                for (g, w) in got.scores_of(i).iter().zip(row) {
                    assert!((g - w.1).abs() < 1e-5, "row {i}: {g} vs {}", w.1);
                }
            }
        }
        let one_way = lase::mine::knn(&xm, &ym, &opts).unwrap();
        assert_eq!(one_way.indices, fwd.indices);
    }
}

#[test]
fn every_margin_and_retrieval_matches_the_reference() {
    let rows = FixtureRows::load();
    let (xm, ym) = rows.views();
    for margin in ["absolute", "distance", "ratio"] {
        for retrieval in ["fwd", "bwd", "max", "intersect"] {
            let options = MineOptions {
                margin: margin.parse().unwrap(),
                retrieval: retrieval.parse().unwrap(),
                knn: KnnOptions {
                    query_block: 64,
                    key_block: 100,
                    ..KnnOptions::new(4)
                },
                ..Default::default()
            };
            let got = mine(&xm, &ym, &options).unwrap().pairs;
            let want = read_lines(fixture(&format!("expected_{margin}_{retrieval}.tsv"))).unwrap();
            assert_eq!(got.len(), want.len(), "{margin}/{retrieval}: pair count");
            for (g, w) in got.iter().zip(&want) {
                let f: Vec<&str> = w.split('\t').collect();
                let (score, src, tgt): (f32, usize, usize) = (
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                );
                assert_eq!((g.src, g.tgt), (src, tgt), "{margin}/{retrieval}");
                assert!(
                    (g.score - score).abs() < 1e-5,
                    "{margin}/{retrieval}: {} vs {score}",
                    g.score
                );
            }
        }
    }
}

#[test]
fn planted_pairs_are_found_above_the_threshold() {
    let rows = FixtureRows::load();
    let (xm, ym) = rows.views();
    let planted: std::collections::HashSet<(usize, usize)> = read_lines(fixture("planted.tsv"))
        .unwrap()
        .iter()
        .map(|l| {
            let (a, b) = l.split_once('\t').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    // 1.06 is calibrated for 1024-d sentence embeddings, not 16-d random vectors: judge
    // the ranking instead. The best |planted| pairs should be the planted ones.
    let pairs = mine(&xm, &ym, &MineOptions::default()).unwrap().pairs;
    let top = &pairs[..planted.len()];
    let correct = top
        .iter()
        .filter(|p| planted.contains(&(p.src, p.tgt)))
        .count();
    let precision = correct as f64 / planted.len() as f64;
    eprintln!(
        "planted pairs: precision at {} = {precision:.3}",
        planted.len()
    );
    assert!(precision >= 0.95, "precision {precision}");
}

/// The error [`mine`] with the default options gives for `x` and `y`.
fn mine_error(x: &MatrixView, y: &MatrixView) -> String {
    mine(x, y, &MineOptions::default())
        .err()
        .unwrap()
        .to_string()
}

#[test]
fn edge_cases_fail_clearly_or_degrade_gracefully() {
    let a = [1.0f32, 0.0, 0.0, 1.0, 0.6, 0.8];
    let x = MatrixView::new(&a, 3, 2).unwrap();
    let one = [0.0f32, 1.0];
    let y = MatrixView::new(&one, 1, 2).unwrap();
    // k larger than the corpus: capped at the corpus size.
    let r = mine(&x, &y, &MineOptions::default()).unwrap();
    assert_eq!(r.forward.k, 1);
    assert_eq!(r.backward.k, 3);
    assert_eq!(
        r.pairs.len(),
        1,
        "max retrieval uses the single target once"
    );
    assert_eq!((r.pairs[0].src, r.pairs[0].tgt), (1, 0));
    // Empty corpus.
    let empty = MatrixView::new(&[], 0, 2).unwrap();
    let e = mine_error(&x, &empty);
    assert!(e.contains("target corpus is empty"), "{e}");
    // Mismatched dimensions.
    let wide = [1.0f32, 0.0, 0.0];
    let w = MatrixView::new(&wide, 1, 3).unwrap();
    let e = mine_error(&x, &w);
    assert!(e.contains("2-d") && e.contains("3-d"), "{e}");
    // NaN.
    let nan = [1.0f32, 0.0, f32::NAN, 1.0];
    let n = MatrixView::new(&nan, 2, 2).unwrap();
    let e = mine_error(&n, &y);
    assert!(e.contains("source") && e.contains("row 1"), "{e}");
}

#[test]
fn unify_merges_duplicate_sentences_keeping_first_lines() {
    let lines: Vec<String> = ["a", "b", "a", "c", "b"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (unique, origin) = lase::mine::unify(&lines);
    assert_eq!(unique, vec!["a", "b", "c"]);
    assert_eq!(origin, vec![0, 1, 3]);
}

fn write_text(path: &Path, n: usize, prefix: &str) {
    let text: String = (0..n).map(|i| format!("{prefix} sentence {i}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// A work folder holding src.txt and tgt.txt, a line for each row of the fixture's x.npy
/// and y.npy, returned with those two matrices.
fn cli_work() -> (tempfile::TempDir, NpyMatrix, NpyMatrix) {
    let work = tempfile::tempdir().unwrap();
    let (x, y) = (load("x.npy"), load("y.npy"));
    write_text(&work.path().join("src.txt"), x.rows, "src");
    write_text(&work.path().join("tgt.txt"), y.rows, "tgt");
    (work, x, y)
}

/// Runs `lase --device cpu mine FLAGS` on the texts [`cli_work`] wrote in `work`, with the
/// fixture's x.npy as the source embeddings and `tgt_embeddings` as the target's, writing
/// the pairs to `out`.
fn mine_cli(work: &Path, flags: &[&str], tgt_embeddings: &Path, out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lase"))
        .args(["--device", "cpu", "mine"])
        .args(flags)
        .arg("--src")
        .arg(work.join("src.txt"))
        .arg("--tgt")
        .arg(work.join("tgt.txt"))
        .arg("--src-embeddings")
        .arg(fixture("x.npy"))
        .arg("--tgt-embeddings")
        .arg(tgt_embeddings)
        .arg("--output")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn cli_mines_precomputed_embeddings_like_the_library() {
    let (work, x, y) = cli_work();
    let out = work.path().join("pairs.tsv");
    let run = |tgt_emb: &Path| {
        let flags = ["--quiet", "--indices", "--threshold", "1.06"];
        mine_cli(work.path(), &flags, tgt_emb, &out)
    };
    let r = run(&fixture("y.npy"));
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let want: Vec<String> = read_lines(fixture("expected_ratio_max.tsv"))
        .unwrap()
        .into_iter()
        .filter(|l| l.split('\t').next().unwrap().parse::<f32>().unwrap() > 1.06)
        .collect();
    let got = read_lines(&out).unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        let g: Vec<&str> = g.split('\t').collect();
        let w: Vec<&str> = w.split('\t').collect();
        assert_eq!(g[1], format!("src sentence {}", w[1]));
        assert_eq!(g[2], format!("tgt sentence {}", w[2]));
        assert_eq!((g[3], g[4]), (w[1], w[2]));
    }
    // An embedding file whose rows do not match the text fails, naming both files.
    let short = work.path().join("short.npy");
    write_f32(&short, 3, x.cols, &y.values()[..3 * x.cols]).unwrap();
    let r = run(&short);
    assert!(!r.status.success());
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(
        e.contains("short.npy") && e.contains("3 rows") && e.contains("tgt.txt"),
        "{e}"
    );
}

/// The recall an approximate search reports equals a direct comparison of its forward
/// neighbours with exact search's (every query sampled); returns it.
fn reported_recall_is_direct(
    r: &lase::mine::MiningResult,
    exact: &lase::mine::MiningResult,
) -> f64 {
    let a = r.approximation.as_ref().unwrap();
    let all: Vec<usize> = (0..r.forward.len()).collect();
    let direct = lase::mine::quantized::recall_at_k(&r.forward, &exact.forward, &all);
    assert!(
        (a.recall_forward - direct).abs() < 1e-12,
        "{a:?} vs {direct}"
    );
    direct
}

#[test]
fn quantized_search_with_a_full_shortlist_equals_exact_search() {
    use lase::mine::quantized::Quantization;
    let rows = FixtureRows::load();
    let (xm, ym) = rows.views();
    let exact = mine(&xm, &ym, &MineOptions::default()).unwrap();
    for q in [Quantization::Binary, Quantization::Int8] {
        // A shortlist as large as the corpus leaves only the exact rescoring.
        let full = MineOptions {
            quantization: q,
            rescore: 1000,
            ..Default::default()
        };
        let r = mine(&xm, &ym, &full).unwrap();
        assert_eq!(r.forward.indices, exact.forward.indices, "{q:?}");
        assert_eq!(r.backward.indices, exact.backward.indices, "{q:?}");
        let a = r.approximation.unwrap();
        assert_eq!((a.recall_forward, a.recall_backward), (1.0, 1.0));
        // A real shortlist (10 x k of 260 rows) keeps most neighbours on this data, and
        // the reported recall is what a direct comparison gives.
        let short = MineOptions {
            quantization: q,
            rescore: 10,
            recall_sample: 1000,
            ..Default::default()
        };
        let direct = reported_recall_is_direct(&mine(&xm, &ym, &short).unwrap(), &exact);
        assert!(direct > 0.6, "{q:?}: recall {direct}");
        eprintln!("{q:?}: recall@4 with a 40-row shortlist {direct:.3}");
    }
}

#[test]
fn mined_pairs_are_scored_against_gold_and_the_best_cut_keeps_what_it_says() {
    use lase::mine::bitext::{MinedBitext, read_gold_pairs, score_against_gold};
    let dir = tempfile::tempdir().unwrap();
    let gold_path = dir.path().join("gold.tsv");
    std::fs::write(&gold_path, "a\tA\nb\tB\nc\tC\nd\tD\n").unwrap();
    let gold = read_gold_pairs(&gold_path).unwrap();
    let pair = |score: f32, s: &str, t: &str| MinedBitext {
        score,
        src_line: 0,
        tgt_line: 0,
        src: s.into(),
        tgt: t.into(),
    };
    // Best first: right, right, wrong, right, wrong.
    let pairs = vec![
        pair(1.30, "a", "A"),
        pair(1.20, "b", "B"),
        pair(1.10, "x", "Y"),
        pair(1.05, "c", "C"),
        pair(1.00, "z", "B"),
    ];
    let g = score_against_gold(&pairs, &gold);
    assert_eq!((g.mined, g.gold, g.correct), (5, 4, 3));
    assert!((g.precision - 0.6).abs() < 1e-12 && (g.recall - 0.75).abs() < 1e-12);
    // Cuts: top-2 P 1 R .5 F1 .667; top-4 P .75 R .75 F1 .75 (best); all F1 .667.
    assert!((g.best_f1 - 0.75).abs() < 1e-12, "{g:?}");
    assert!(g.best_threshold < 1.05 && g.best_threshold > 1.00, "{g:?}");
    let kept: Vec<_> = pairs
        .iter()
        .filter(|p| p.score > g.best_threshold)
        .cloned()
        .collect();
    assert_eq!(kept.len(), 4);
    assert!((score_against_gold(&kept, &gold).f1 - g.best_f1).abs() < 1e-12);

    std::fs::write(&gold_path, "a\tA\nno tab here\n").unwrap();
    let e = read_gold_pairs(&gold_path).unwrap_err().to_string();
    assert!(e.contains("gold.tsv:2:"), "{e}");
}

#[test]
fn hnsw_search_finds_the_exact_neighbours_and_reports_its_recall() {
    use lase::mine::ann::HnswOptions;
    use lase::mine::quantized::Quantization;
    // `mine` builds its graphs on this thread's libtorch thread count; a graph built on
    // several threads inserts in a racy order, and on this fixture's duplicate vectors that
    // order decides how many nodes stay reachable (a 2-thread build in a fresh clone's
    // suite once found recall 0.983), so this test builds on one thread, as the CLI test
    // does (multi_thread_hnsw_builds_vary_but_keep_their_recall measures the spread).
    tch::set_num_threads(1);
    assert_eq!(tch::get_num_threads(), 1);
    let rows = FixtureRows::load();
    let (xm, ym) = rows.views();
    let exact = mine(&xm, &ym, &MineOptions::default()).unwrap();
    // A candidate list longer than the corpus: nearly exhaustive. (Not quite: the
    // fixture's duplicate vectors leave a few nodes unreachable in the graph, as HNSW
    // can.) Scores are exact inner products of the neighbours found.
    let wide = MineOptions {
        ann: Some(HnswOptions {
            expansion_search: 1024,
            ..Default::default()
        }),
        ..Default::default()
    };
    let r = mine(&xm, &ym, &wide).unwrap();
    let all: Vec<usize> = (0..rows.x_rows).collect();
    let direct = lase::mine::quantized::recall_at_k(&r.forward, &exact.forward, &all);
    assert!(direct > 0.99, "recall {direct}");
    for i in 0..rows.x_rows {
        for (j, s) in r.forward.indices_of(i).iter().zip(r.forward.scores_of(i)) {
            let dot: f32 = xm
                .row(i)
                .iter()
                .zip(ym.row(*j as usize))
                .map(|(a, b)| a * b)
                .sum();
            assert!((dot - s).abs() < 1e-5, "{dot} vs {s}");
        }
    }
    let exact_pairs: std::collections::HashSet<(usize, usize)> =
        exact.pairs.iter().map(|p| (p.src, p.tgt)).collect();
    let same = r
        .pairs
        .iter()
        .filter(|p| exact_pairs.contains(&(p.src, p.tgt)))
        .count();
    assert!(
        same as f64 > 0.95 * exact.pairs.len() as f64,
        "{same} of {}",
        exact.pairs.len()
    );
    let a = r.approximation.unwrap();
    assert_eq!(a.sampled, rows.x_rows);
    assert!(
        (a.recall_forward - direct).abs() < 1e-12,
        "{a:?} vs {direct}"
    );
    assert!(a.index_bytes > 4 * (rows.x_rows + rows.y_rows) * rows.dim);
    // A narrow search: the reported recall is what a direct comparison gives.
    let narrow = MineOptions {
        ann: Some(HnswOptions {
            connectivity: 4,
            expansion_add: 8,
            expansion_search: 4,
            ..Default::default()
        }),
        ..Default::default()
    };
    let direct = reported_recall_is_direct(&mine(&xm, &ym, &narrow).unwrap(), &exact);
    assert!(direct > 0.3, "recall {direct}");
    // One approximation at a time.
    let both = MineOptions {
        quantization: Quantization::Binary,
        ..wide.clone()
    };
    let err = mine(&xm, &ym, &both).err().unwrap().to_string();
    assert!(err.contains("choose one approximate search"), "{err}");
    // Bad input is checked before any graph is built.
    let nan = vec![f32::NAN; rows.dim];
    let bad = MatrixView::new(&nan, 1, rows.dim).unwrap();
    let err = mine(&bad, &ym, &wide).err().unwrap().to_string();
    assert!(err.contains("non-finite"), "{err}");
}

#[test]
fn cli_ann_mines_like_exact_search_and_prints_recall() {
    let (work, ..) = cli_work();
    let mine_to = |out: &Path, extra: &[&str]| {
        let flags = [&["--quiet", "--threshold", "1.06"][..], extra].concat();
        let r = mine_cli(work.path(), &flags, &fixture("y.npy"), out);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        String::from_utf8_lossy(&r.stdout).to_string()
    };
    let (exact, approx) = (work.path().join("exact.tsv"), work.path().join("ann.tsv"));
    mine_to(&exact, &[]);
    // One thread: a graph built on several inserts in a racy order, and on this fixture's
    // duplicate vectors that order decides how many nodes stay reachable (a 2-thread
    // build once kept 176 of 187 pairs), so only a one-thread build is reproducible.
    let stdout = mine_to(
        &approx,
        &["--threads", "1", "--ann", "--ann-ef-search", "1024"],
    );
    let recall = number_between(&stdout, "source->target ", ",");
    assert!(
        stdout.contains("HNSW (M 16, ef_construction 128, ef 1024): recall@4") && recall > 0.99,
        "{stdout}"
    );
    // Grouping rows by region starts at 100,000 rows: this fixture keeps corpus order, so
    // asking for it changes nothing (a one-thread build is reproducible).
    let in_row_order = work.path().join("ann-row-order.tsv");
    mine_to(
        &in_row_order,
        &[
            "--threads",
            "1",
            "--ann",
            "--ann-ef-search",
            "1024",
            "--ann-row-order",
        ],
    );
    assert_eq!(
        read_lines(&approx).unwrap(),
        read_lines(&in_row_order).unwrap()
    );
    // The search's own seconds come apart from the whole command's, and within them.
    let total = number_between(&stdout, "threshold 1.06, ", " s, ");
    let search = number_between(&stdout, "of which k-NN search ", " s)");
    assert!((0.0..=total).contains(&search), "{stdout}");
    let (a, b) = (read_lines(&exact).unwrap(), read_lines(&approx).unwrap());
    assert!(!a.is_empty());
    // A pair counts as the same when exact mining has a pair with its score (within
    // float rounding: the graph's neighbours are rescored by a dot product, exact search
    // by a GEMM, which sum in different orders) sharing its source or its target: on this
    // fixture's duplicate vectors the graph may find a duplicate of the row exact search
    // listed, which ties with it.
    let fields = |l: &str| -> (f64, String, String) {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 3, "score, source, target: {l:?}");
        (f[0].parse().unwrap(), f[1].into(), f[2].into())
    };
    let exact_pairs: Vec<_> = a.iter().map(|l| fields(l)).collect();
    let same = b
        .iter()
        .map(|l| fields(l))
        .filter(|(score, src, tgt)| {
            exact_pairs
                .iter()
                .any(|(s, x, y)| (s - score).abs() <= 1e-5 && (x == src || y == tgt))
        })
        .count();
    assert!(same as f64 > 0.95 * a.len() as f64, "{same} of {}", a.len());
}

/// The number printed in `text` between the first `before` and the next `after`.
fn number_between(text: &str, before: &str, after: &str) -> f64 {
    text.split(before)
        .nth(1)
        .and_then(|t| t.split(after).next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number after {before:?} in {text}"))
}

/// HNSW graphs built on several threads insert in a racy order, so two builds of the same
/// vectors can differ, and so can the neighbours found (why the CLI test above builds on
/// one thread). What a user may rely on: each multi-thread build's recall stays near the
/// one-thread build's, and `lase mine --ann` reports the recall of the graph it actually
/// built (checked above). This test builds the fixture's graphs 12 times on 2 threads and
/// prints the spread of recall@4 against exact search (docs/reliability.md quotes it).
#[test]
fn multi_thread_hnsw_builds_vary_but_keep_their_recall() {
    use lase::mine::ann::{HnswOptions, knn_both_ways_hnsw};
    let rows = FixtureRows::load();
    let (xm, ym) = rows.views();
    let exact = mine(&xm, &ym, &MineOptions::default()).unwrap();
    let options = HnswOptions {
        expansion_search: 1024,
        ..Default::default()
    };
    let (all_x, all_y): (Vec<usize>, Vec<usize>) =
        ((0..rows.x_rows).collect(), (0..rows.y_rows).collect());
    // The lower of the two directions' recall@4.
    let recall = |threads: usize| {
        let (forward, backward, _) = knn_both_ways_hnsw(&xm, &ym, 4, &options, threads).unwrap();
        let f = lase::mine::quantized::recall_at_k(&forward, &exact.forward, &all_x);
        let b = lase::mine::quantized::recall_at_k(&backward, &exact.backward, &all_y);
        f.min(b)
    };
    let single = recall(1);
    assert_eq!(single, recall(1), "a one-thread build must be reproducible");
    let multi: Vec<f64> = (0..12).map(|_| recall(2)).collect();
    let (lo, hi) = multi
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    eprintln!(
        "HNSW recall@4 (lower direction), fixture, ef 1024: 1 thread {single:.4}; 2 threads, 12 builds: {lo:.4}-{hi:.4} {multi:?}"
    );
    // A racy insertion order can leave a few of the fixture's duplicate vectors unreachable
    // (one fresh-clone build fell to 0.947 against 1.0), so the typical build is held to
    // the one-thread recall and the worst of twelve to a wider bound.
    let mut sorted = multi.clone();
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[5] + sorted[6]) / 2.0;
    assert!(
        median >= single - 0.01,
        "median {median}: {multi:?} vs one thread {single}"
    );
    assert!(lo > single - 0.10, "{multi:?} vs one thread {single}");
}

#[test]
fn a_search_past_its_deadline_stops_with_deadline_exceeded() {
    use lase::mine::Deadline;
    let (n, d) = (3000, 16);
    let data: Vec<f32> = (0..n * d)
        .map(|i| ((i * 7919) % 101) as f32 / 101.0)
        .collect();
    let x = MatrixView::new(&data, n, d).unwrap();
    for kernel in [SearchKernel::CpuTiles, SearchKernel::TensorBlocks] {
        let mut options = KnnOptions::new(4);
        options.kernel = kernel;
        options.deadline = Some(Deadline::after(std::time::Duration::ZERO));
        let err = lase::mine::knn_both_ways(&x, &x, &options).unwrap_err();
        assert!(
            matches!(err, lase::LaseError::DeadlineExceeded(_)),
            "{kernel:?}: {err}"
        );
        // With time to spare the same search finishes.
        options.deadline = Some(Deadline::after(std::time::Duration::from_secs(600)));
        let (f, _) = lase::mine::knn_both_ways(&x, &x, &options).unwrap();
        assert_eq!(f.indices.len(), n * 4);
    }
}

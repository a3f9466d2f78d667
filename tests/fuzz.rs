//! Property-based fuzzing (proptest) of every reader of input lase did not write: the
//! `.npy` reader, the corpus readers (TSV, Moses pair, N-way folder), the recipe parser,
//! the tokenizer wrapper and the HTTP request decoding. Each target runs a fixed number
//! of cases from a fixed seed, so CI runs the same inputs every time in a bounded time;
//! a longer or different run: `PROPTEST_CASES=20000 PROPTEST_RNG_SEED=7 cargo test --release --test fuzz`.
//! Each target prints how many inputs it ran (`-- --nocapture`).
//!
//! The properties: no input panics; a refused file is an error naming the file (and the
//! line, for text); what is accepted is consistent (an `.npy` matrix's size matches its
//! file; corpus readers give exactly the pairs an independent reading of the bytes
//! gives; an accepted recipe survives its own round trip); no HTTP body gets a 5xx.
//! Inputs that once failed are kept as plain tests at the end of this file.

mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use lase::LaseError;
use lase::data::{CorpusSource, ParallelCorpus};
use lase::io::npy::{NpyMatrix, NpyWriter, write_f32};
use lase::train::TrainConfig;
use lase::train::config::RecipeOverride;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use serde_json::Value;

/// The seed CI uses (PROPTEST_RNG_SEED overrides it).
const SEED: u64 = 0x6c61_7365;

/// `cases` inputs from the fixed seed; PROPTEST_CASES and PROPTEST_RNG_SEED override.
fn config(cases: u32) -> Config {
    let from_env = Config::default();
    Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(cases),
        rng_seed: match std::env::var("PROPTEST_RNG_SEED") {
            Ok(_) => from_env.rng_seed,
            Err(_) => RngSeed::Fixed(SEED),
        },
        failure_persistence: None,
        ..from_env
    }
}

/// What a case did (accepted, refused, the HTTP status...), tallied per target.
type Outcome = Result<String, TestCaseError>;

/// Runs `test` on `cases` inputs drawn from `strategy` (shrinking a failure to a
/// minimal input) and prints how many inputs it ran and what they did.
fn fuzz<S: Strategy>(name: &str, cases: u32, strategy: S, test: impl Fn(S::Value) -> Outcome)
where
    S::Value: Debug,
{
    let config = config(cases);
    let seed = config.rng_seed;
    let asked = config.cases;
    let mut runner = TestRunner::new(config);
    let tally = Mutex::new(BTreeMap::<String, usize>::new());
    let runs = AtomicUsize::new(0);
    let result = runner.run(&strategy, |input| {
        runs.fetch_add(1, Ordering::Relaxed);
        let outcome = test(input)?;
        *tally.lock().unwrap().entry(outcome).or_default() += 1;
        Ok(())
    });
    let tally: Vec<String> = tally
        .into_inner()
        .unwrap()
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    eprintln!(
        "fuzz {name}: {} inputs run ({asked} cases, seed {seed}): {} [{}]",
        runs.load(Ordering::Relaxed),
        if result.is_ok() { "passed" } else { "FAILED" },
        tally.join(", ")
    );
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

// ---------------------------------------------------------------------------------
// .npy

const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// Opens `bytes` as an .npy file: never a panic; an accepted matrix is consistent with
/// the file, a refusal names the file.
fn check_npy(bytes: &[u8]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.npy");
    std::fs::write(&path, bytes).unwrap();
    match NpyMatrix::open(&path) {
        Ok(m) => {
            let values = m.values();
            prop_assert_eq!(values.len(), m.rows * m.cols);
            prop_assert!(values.len() * 4 <= bytes.len());
            if m.rows > 0 {
                prop_assert_eq!(m.row(m.rows - 1).len(), m.cols);
            }
            Ok("accepted".into())
        }
        Err(e) => {
            prop_assert!(e.to_string().contains("m.npy"), "{e}");
            Ok("refused".into())
        }
    }
}

/// One entry of a header's shape: a number (small, huge, past u64) or any text.
#[derive(Clone, Debug)]
enum Dim {
    Num(u128),
    Text(String),
}

impl Dim {
    fn show(&self) -> String {
        match self {
            Self::Num(n) => n.to_string(),
            Self::Text(t) => t.clone(),
        }
    }
}

/// A valid header's dictionary, or one with any field made strange, and its shape.
fn npy_dict() -> impl Strategy<Value = (String, Vec<Dim>)> {
    let descr = prop_oneof![
        12 => Just("'<f4'".to_string()),
        1 => Just("'float32'".to_string()),
        1 => Just("'<f8'".to_string()),
        1 => Just("'>f4'".to_string()),
        1 => "'[ -~]{0,6}'",
        1 => "[ -~]{0,6}",
    ];
    let fortran = prop_oneof![
        10 => Just("False".to_string()),
        1 => Just("True".to_string()),
        1 => "[ -~]{0,6}",
    ];
    let dim = prop_oneof![
        20 => (0u128..6).prop_map(Dim::Num),
        1 => any::<u64>().prop_map(|d| Dim::Num(d.into())),
        1 => Just(Dim::Num(u64::MAX.into())),
        1 => Just(Dim::Num(1 << 62)),
        1 => Just(Dim::Num(1 << 64)),
        1 => Just(Dim::Text("-1".into())),
        1 => "[ -~]{0,4}".prop_map(Dim::Text),
    ];
    let shape = prop_oneof![
        10 => vec(dim.clone(), 2),
        1 => vec(dim, 0..4),
    ];
    let keys = prop_oneof![
        10 => Just(["descr", "fortran_order", "shape"]),
        1 => Just(["shape", "descr", "fortran_order"]),
        1 => Just(["descr", "descr", "shape"]),
    ];
    let close = prop_oneof![12 => Just(")"), 1 => Just(""), 1 => Just(",)")];
    (keys, descr, fortran, shape, close).prop_map(|(k, d, f, shape, close)| {
        let dims: Vec<String> = shape.iter().map(Dim::show).collect();
        let s = format!("({}{close}", dims.join(", "));
        let v = [d, f, s];
        let dict = format!(
            "{{'{}': {}, '{}': {}, '{}': {}, }}",
            k[0], v[0], k[1], v[1], k[2], v[2]
        );
        (dict, shape)
    })
}

/// A whole .npy file around a dictionary: version, header length (right or not),
/// padding, and data bytes, mostly as many as the shape asks for (so that what the
/// header says is what gets checked), sometimes a few more or fewer.
fn npy_file() -> impl Strategy<Value = Vec<u8>> {
    (
        npy_dict(),
        prop_oneof![12 => Just(1u8), 1 => Just(2u8), 1 => Just(3u8), 1 => any::<u8>()],
        prop_oneof![12 => Just(None), 1 => any::<u32>().prop_map(Some)],
        0usize..80,
        prop_oneof![10 => Just(0i64), 1 => -8i64..8, 1 => 0i64..200],
    )
        .prop_map(|((dict, shape), version, header_len, pad, extra)| {
            let mut out = NPY_MAGIC.to_vec();
            out.extend_from_slice(&[version, 0]);
            let mut header = dict.into_bytes();
            header.extend(std::iter::repeat_n(b' ', pad));
            header.push(b'\n');
            let len = header_len.unwrap_or(header.len() as u32);
            if version == 1 {
                out.extend_from_slice(&(len as u16).to_le_bytes());
            } else {
                out.extend_from_slice(&len.to_le_bytes());
            }
            out.extend_from_slice(&header);
            let asked = shape.iter().try_fold(4u128, |n, d| match d {
                Dim::Num(d) => n.checked_mul(*d),
                Dim::Text(_) => None,
            });
            let data = asked.filter(|n| *n <= 4096).unwrap_or(0) as i64 + extra;
            out.extend((0..data.max(0)).map(|i| i as u8));
            out
        })
}

#[test]
fn npy_arbitrary_bytes_never_panic() {
    let bytes = prop_oneof![
        vec(any::<u8>(), 0..300),
        vec(any::<u8>(), 0..300).prop_map(|tail| [NPY_MAGIC, &tail].concat()),
    ];
    fuzz("npy_arbitrary_bytes", 1000, bytes, |b| check_npy(&b));
}

#[test]
fn npy_mutated_headers_never_panic() {
    fuzz("npy_mutated_headers", 1500, npy_file(), |b| check_npy(&b));
    // A valid file with random bytes overwritten, cut or appended.
    let mutated = (
        1usize..5,
        0usize..4,
        vec((any::<usize>(), any::<u8>()), 1..8),
        prop_oneof![Just(0isize), -40isize..40],
    )
        .prop_map(|(rows, cols, edits, resize)| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("v.npy");
            let values: Vec<f32> = (0..rows * (cols + 1)).map(|i| i as f32).collect();
            write_f32(&path, rows, cols + 1, &values).unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            for (at, byte) in edits {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            let len = (bytes.len() as isize + resize).max(0) as usize;
            bytes.resize(len, 0);
            bytes
        });
    fuzz("npy_mutated_bytes", 1500, mutated, |b| check_npy(&b));
}

#[test]
fn npy_files_round_trip() {
    let matrix = (0usize..8, 0usize..9).prop_flat_map(|(rows, cols)| {
        (
            Just(rows),
            Just(cols),
            vec(any::<u32>().prop_map(f32::from_bits), rows * cols),
            1usize..4,
        )
    });
    fuzz(
        "npy_round_trip",
        500,
        matrix,
        |(rows, cols, values, chunks)| {
            let dir = tempfile::tempdir().unwrap();
            let whole = dir.path().join("whole.npy");
            if cols == 0 {
                // Refused (its row count could not be worked out from the values).
                let e = write_f32(&whole, rows, cols, &values).unwrap_err();
                prop_assert!(matches!(e, LaseError::InvalidArgument(_)), "{e}");
                prop_assert!(!whole.exists());
                return Ok("0 columns refused".into());
            }
            // Whole, and streamed in `chunks` pieces of whole rows.
            write_f32(&whole, rows, cols, &values).unwrap();
            let streamed = dir.path().join("streamed.npy");
            let mut w = NpyWriter::create(&streamed, cols).unwrap();
            let per = rows.div_ceil(chunks).max(1) * cols;
            for piece in values.chunks(per) {
                w.write_rows(piece).unwrap();
            }
            w.finish().unwrap();
            for path in [&whole, &streamed] {
                let m = NpyMatrix::open(path).unwrap();
                prop_assert_eq!((m.rows, m.cols), (rows, cols));
                let got: Vec<u32> = m.values().iter().map(|v| v.to_bits()).collect();
                let want: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
                prop_assert_eq!(got, want);
            }
            Ok("round-tripped".into())
        },
    );
}

// ---------------------------------------------------------------------------------
// Corpus readers

/// One line's bytes: mostly text (tabs, spaces, non-ASCII, NUL, a BOM, a lone CR),
/// sometimes arbitrary bytes (invalid UTF-8 included), rarely a very long line.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => "[a-zäß \t]{0,12}".prop_map(String::into_bytes),
        2 => "\\PC{0,6}(\t\\PC{0,6})?".prop_map(String::into_bytes),
        2 => vec(any::<u8>(), 0..12),
        1 => Just(b"\xef\xbb\xbfhallo\thello".to_vec()),
        1 => Just(b"a\0b\tc\0".to_vec()),
        1 => Just(b"x\ry\tz\r".to_vec()),
        1 => Just(b" \t ".to_vec()),
        1 => Just([vec![b'w'; 70_000], b"\tlong".to_vec()].concat()),
    ]
}

/// A file's bytes: lines ending in LF or CRLF, the last one with or without an end.
fn text_file() -> impl Strategy<Value = Vec<u8>> {
    (vec((line(), any::<bool>()), 0..10), any::<bool>()).prop_map(|(lines, last_ends)| {
        let n = lines.len();
        let mut out = Vec::new();
        for (i, (l, crlf)) in lines.into_iter().enumerate() {
            out.extend_from_slice(&l);
            if i + 1 < n || last_ends {
                out.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            }
        }
        out
    })
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A file as stored: plain, gzip, or gzip cut short / with bytes flipped.
#[derive(Clone, Debug)]
enum Stored {
    Plain(Vec<u8>),
    Gzip(Vec<u8>),
    BrokenGzip(Vec<u8>, usize, u8),
}

impl Stored {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Self::Plain(b) => b.clone(),
            Self::Gzip(b) => gzip(b),
            Self::BrokenGzip(b, at, flip) => {
                let mut z = gzip(b);
                let at = 2 + at % (z.len() - 2);
                if *flip == 0 {
                    z.truncate(at);
                } else {
                    z[at] ^= flip;
                }
                z
            }
        }
    }

    /// The text lase must read from it (None when the gzip stream is broken).
    fn text(&self) -> Option<&[u8]> {
        match self {
            Self::Plain(b) | Self::Gzip(b) => Some(b),
            Self::BrokenGzip(..) => None,
        }
    }
}

fn stored_file() -> impl Strategy<Value = Stored> {
    prop_oneof![
        6 => text_file().prop_map(Stored::Plain),
        2 => text_file().prop_map(Stored::Gzip),
        1 => (text_file(), any::<usize>(), any::<u8>())
            .prop_map(|(t, at, flip)| Stored::BrokenGzip(t, at, flip)),
        1 => vec(any::<u8>(), 0..64).prop_map(|b| Stored::Plain([&[0x1f, 0x8b][..], &b].concat())),
    ]
}

/// The lines of a file as lase reads them: split at LF, a CR before the LF dropped.
fn lines_of(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        match rest.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let l = &rest[..i];
                out.push(l.strip_suffix(b"\r").unwrap_or(l));
                rest = &rest[i + 1..];
            }
            None => {
                out.push(rest);
                rest = &[];
            }
        }
    }
    out
}

/// What reading a corpus must give, worked out from the bytes on their own.
#[derive(Debug, PartialEq, Eq)]
enum Expected {
    /// (pairs, pairs skipped for an empty side)
    Pairs(usize, usize),
    /// An error naming this file and line.
    BadLine(PathBuf, usize),
    /// Every pair had an empty side.
    NoPairs,
}

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// The outcome of reading, in the terms of [`Expected`]; any other error fails.
fn outcome(read: lase::Result<ParallelCorpus>) -> Result<Expected, TestCaseError> {
    match read {
        Ok(c) => Ok(Expected::Pairs(c.pairs.len(), c.skipped_empty)),
        Err(LaseError::BadLine { path, line, .. }) => Ok(Expected::BadLine(path, line)),
        Err(LaseError::InvalidArgument(m)) if m.contains("no translation pair") => {
            Ok(Expected::NoPairs)
        }
        Err(e) => Err(TestCaseError::fail(format!("unexpected error kind: {e}"))),
    }
}

fn finish(pairs: usize, skipped: usize) -> Expected {
    if pairs == 0 {
        Expected::NoPairs
    } else {
        Expected::Pairs(pairs, skipped)
    }
}

fn expected_tsv(path: &Path, bytes: &[u8]) -> Expected {
    let (mut pairs, mut skipped) = (0, 0);
    for (i, l) in lines_of(bytes).into_iter().enumerate() {
        let Ok(l) = std::str::from_utf8(l) else {
            return Expected::BadLine(path.into(), i + 1);
        };
        if l.is_empty() {
            continue;
        }
        let fields: Vec<&str> = l.split('\t').collect();
        let [src, tgt] = fields[..] else {
            return Expected::BadLine(path.into(), i + 1);
        };
        if blank(src) || blank(tgt) {
            skipped += 1;
        } else {
            pairs += 1;
        }
    }
    finish(pairs, skipped)
}

/// A case's tally entry: what reading gave, and whether it was checked against the
/// independent reading (plain and well-formed gzip files) or only for naming a file and
/// a line (a broken gzip stream).
fn label(got: &Expected, checked: bool) -> String {
    let what = match got {
        Expected::Pairs(..) => "read",
        Expected::BadLine(..) => "bad line",
        Expected::NoPairs => "no pairs",
    };
    format!("{what} ({})", if checked { "exact" } else { "named" })
}

/// For a file whose gzip stream is broken: any error must still name it and a line.
fn broken_ok(got: &Expected, path: &Path) -> bool {
    match got {
        Expected::BadLine(p, line) => p == path && *line >= 1,
        _ => true,
    }
}

#[test]
fn tsv_corpus_reader() {
    fuzz("corpus_tsv", 800, stored_file(), |file| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pairs.tsv");
        std::fs::write(&path, file.bytes()).unwrap();
        let got = outcome(ParallelCorpus::read(&[CorpusSource::Tsv {
            path: path.clone(),
            src_lang: "deu".into(),
            tgt_lang: "eng".into(),
            weight: None,
        }]))?;
        match file.text() {
            Some(text) if !text.starts_with(&[0x1f, 0x8b]) || matches!(file, Stored::Gzip(_)) => {
                prop_assert_eq!(&got, &expected_tsv(&path, text));
                Ok(label(&got, true))
            }
            _ => {
                prop_assert!(broken_ok(&got, &path), "{got:?}");
                Ok(label(&got, false))
            }
        }
    });
}

fn expected_moses(a: (&Path, &[u8]), b: (&Path, &[u8])) -> Expected {
    let (la, lb) = (lines_of(a.1), lines_of(b.1));
    let (mut pairs, mut skipped) = (0, 0);
    for i in 0..la.len().max(lb.len()) {
        match (la.get(i), lb.get(i)) {
            (Some(x), Some(y)) => {
                let Ok(x) = std::str::from_utf8(x) else {
                    return Expected::BadLine(a.0.into(), i + 1);
                };
                let Ok(y) = std::str::from_utf8(y) else {
                    return Expected::BadLine(b.0.into(), i + 1);
                };
                if blank(x) || blank(y) {
                    skipped += 1;
                } else {
                    pairs += 1;
                }
            }
            // The longer file's extra line is reported if it cannot be read, else the
            // shorter file where it ends.
            (Some(x), None) => {
                let bad = std::str::from_utf8(x).is_err();
                return Expected::BadLine(if bad { a.0 } else { b.0 }.into(), i + 1);
            }
            (None, Some(y)) => {
                let bad = std::str::from_utf8(y).is_err();
                return Expected::BadLine(if bad { b.0 } else { a.0 }.into(), i + 1);
            }
            (None, None) => unreachable!(),
        }
    }
    finish(pairs, skipped)
}

#[test]
fn moses_pair_reader() {
    // Half the time the second file has the first one's line count.
    let files = (stored_file(), stored_file(), any::<bool>()).prop_map(|(a, b, align)| {
        match (align, a.text(), b.text()) {
            (true, Some(ta), Some(tb)) if !matches!(b, Stored::BrokenGzip(..)) => {
                let n = lines_of(ta).len();
                let mut lines: Vec<Vec<u8>> = lines_of(tb).iter().map(|l| l.to_vec()).collect();
                lines.resize(n, b"filler".to_vec());
                let joined: Vec<u8> = lines
                    .iter()
                    .flat_map(|l| [&l[..], b"\n"].concat())
                    .collect();
                let b = match b {
                    Stored::Gzip(_) => Stored::Gzip(joined),
                    _ => Stored::Plain(joined),
                };
                (a, b)
            }
            _ => (a, b),
        }
    });
    fuzz("corpus_moses_pair", 800, files, |(a, b)| {
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb) = (dir.path().join("c.deu"), dir.path().join("c.eng"));
        std::fs::write(&pa, a.bytes()).unwrap();
        std::fs::write(&pb, b.bytes()).unwrap();
        let got = outcome(ParallelCorpus::read(&[CorpusSource::Moses {
            src: pa.clone(),
            tgt: pb.clone(),
            src_lang: "de".into(),
            tgt_lang: "en".into(),
            weight: None,
        }]))?;
        let plain = |s: &Stored| match s {
            Stored::Plain(t) => !t.starts_with(&[0x1f, 0x8b]),
            Stored::Gzip(_) => true,
            Stored::BrokenGzip(..) => false,
        };
        if plain(&a) && plain(&b) {
            let want = expected_moses((&pa, a.text().unwrap()), (&pb, b.text().unwrap()));
            prop_assert_eq!(&got, &want);
            Ok(label(&got, true))
        } else {
            prop_assert!(
                match &got {
                    Expected::BadLine(p, line) => (p == &pa || p == &pb) && *line >= 1,
                    _ => true,
                },
                "{got:?}"
            );
            Ok(label(&got, false))
        }
    });
}

/// N-way folder: English pivot plus other languages, every file plain text (or not:
/// arbitrary lines, different lengths), and some non-pivot pairs per row.
fn expected_n_way(dir: &Path, files: &[(&str, Vec<u8>)], non_pivot: usize) -> Expected {
    let read = |name: &str, bytes: &[u8]| -> Result<Vec<String>, Expected> {
        lines_of(bytes)
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                std::str::from_utf8(l)
                    .map(str::to_owned)
                    .map_err(|_| Expected::BadLine(dir.join(name), i + 1))
            })
            .collect()
    };
    let pivot = files.iter().find(|(n, _)| *n == "eng.txt").unwrap();
    let pivot_lines = match read(pivot.0, &pivot.1) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let (mut pairs, mut skipped) = (0, 0);
    let mut kept: Vec<Vec<String>> = Vec::new();
    for (name, bytes) in files.iter().filter(|(n, _)| *n != "eng.txt") {
        let lines = match read(name, bytes) {
            Ok(l) => l,
            Err(e) => return e,
        };
        if lines.len() != pivot_lines.len() {
            return if lines.len() < pivot_lines.len() {
                Expected::BadLine(dir.join(name), lines.len() + 1)
            } else {
                Expected::BadLine(dir.join("eng.txt"), pivot_lines.len() + 1)
            };
        }
        for (x, y) in lines.iter().zip(&pivot_lines) {
            if blank(x) || blank(y) {
                skipped += 1;
            } else {
                pairs += 1;
            }
        }
        kept.push(lines);
    }
    if non_pivot > 0 && kept.len() >= 2 {
        for (row, pivot_line) in pivot_lines.iter().enumerate() {
            // A row without its pivot segment gives no non-pivot pairs (no teacher target).
            if !blank(pivot_line) && kept.iter().filter(|l| !blank(&l[row])).count() >= 2 {
                pairs += non_pivot;
            }
        }
    }
    finish(pairs, skipped)
}

#[test]
fn n_way_folder_reader() {
    let others = ["deu.txt", "fra.txt", "rus.txt"];
    let folder = (
        text_file(),
        vec((text_file(), prop::bool::weighted(0.8)), 1..=3),
        0usize..3,
    );
    fuzz("corpus_n_way", 500, folder, |(pivot, langs, non_pivot)| {
        let dir = tempfile::tempdir().unwrap();
        let n = lines_of(&pivot).len();
        let mut files: Vec<(&str, Vec<u8>)> = vec![("eng.txt", pivot)];
        for (i, (text, align)) in langs.into_iter().enumerate() {
            // Aligned files get the pivot's line count, so the pair logic is reached.
            let text = if align {
                let mut lines: Vec<Vec<u8>> = lines_of(&text).iter().map(|l| l.to_vec()).collect();
                lines.resize(n, Vec::new());
                lines
                    .iter()
                    .flat_map(|l| [&l[..], b"\n"].concat())
                    .collect()
            } else {
                text
            };
            files.push((others[i], text));
        }
        for (name, bytes) in &files {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        let got = outcome(ParallelCorpus::read(&[CorpusSource::NWay {
            path: dir.path().into(),
            pivot: "en".into(),
            languages: vec![],
            non_pivot_pairs: non_pivot,
            weight: None,
        }]))?;
        let gz = files.iter().any(|(_, b)| b.starts_with(&[0x1f, 0x8b]));
        if !gz {
            prop_assert_eq!(&got, &expected_n_way(dir.path(), &files, non_pivot));
        }
        Ok(label(&got, !gz))
    });
}

// ---------------------------------------------------------------------------------
// Recipes

const BASE_RECIPE: &str = "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\nexclude_test_sets = false\n";

/// An accepted recipe must pass validation again and survive its own round trip (the
/// run folder keeps it as TOML, and resume reads it back).
fn check_accepted(config: &TrainConfig) -> Result<(), TestCaseError> {
    let text = config.to_toml();
    let again = TrainConfig::from_toml(&text)
        .map_err(|e| TestCaseError::fail(format!("round trip refused: {e}\n{text}")))?;
    prop_assert_eq!(again.to_toml(), text);
    Ok(())
}

fn check_recipe_text(text: &str) -> Outcome {
    Ok(match TrainConfig::from_toml(text) {
        Ok(c) => {
            check_accepted(&c)?;
            "accepted"
        }
        Err(LaseError::BadLine { path, line, .. }) => {
            prop_assert_eq!(path, PathBuf::from("<config>"));
            prop_assert!(line <= text.lines().count() + 1, "line {line}");
            "refused: TOML error at a line"
        }
        Err(LaseError::InvalidArgument(_)) => "refused: invalid setting",
        Err(e) => return Err(TestCaseError::fail(format!("unexpected error kind: {e}"))),
    }
    .into())
}

#[test]
fn recipe_parser_on_arbitrary_text() {
    // Arbitrary text, and TOML-shaped text: table headers and key = value lines with
    // the recipe's own names.
    let key = prop_oneof![
        Just("layers"),
        Just("hidden"),
        Just("heads"),
        Just("lr"),
        Just("steps"),
        Just("batch_pairs"),
        Just("sources"),
        Just("format"),
        Just("path"),
        Just("exclude_test_sets"),
        Just("temperature"),
        Just("dropout"),
        Just("seed"),
    ];
    let table = prop_oneof![
        Just("[model]"),
        Just("[data]"),
        Just("[optimizer]"),
        Just("[schedule]"),
        Just("[objective]"),
        Just("[run]"),
        Just("[[data.sources]]"),
        Just("[x]"),
    ];
    let value = prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:?}")),
        Just("nan".to_string()),
        Just("-inf".to_string()),
        "\"\\PC{0,8}\"",
        Just("[1, \"a\", {x = 1}]".to_string()),
        Just("{ format = \"tsv\" }".to_string()),
        "\\PC{0,8}",
    ];
    let toml_line = prop_oneof![
        table.prop_map(str::to_owned),
        (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        "\\PC{0,12}",
    ];
    let text = prop_oneof![
        "\\PC{0,80}",
        vec(any::<char>(), 0..40).prop_map(|c| c.into_iter().collect::<String>()),
        vec(toml_line, 0..10).prop_map(|l| l.join("\n")),
        vec(toml_line_after_base(), 0..6).prop_map(|l| format!("{BASE_RECIPE}{}", l.join("\n"))),
    ];
    fuzz("recipe_text", 1500, text, |t| check_recipe_text(&t));
}

fn toml_line_after_base() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("[model]\nlayers = 0".to_string()),
        Just("[schedule]\nbatch_pairs = 1".to_string()),
        "\\PC{0,12}",
        "[a-z_]{1,8} = [0-9.e+-]{1,8}",
    ]
}

/// Every numeric setting of a recipe set (as `--set KEY=VALUE`) to an extreme: zero,
/// huge, past the type's range, fractional, negative, NaN, infinite; sometimes the
/// wrong type or removed.
#[test]
fn recipe_numeric_ranges() {
    const INTEGERS: &[&str] = &[
        "model.layers",
        "model.hidden",
        "model.heads",
        "model.ffn",
        "model.max_tokens",
        "model.embedding_size",
        "model.recurrent_unit_layers",
        "model.output_dim",
        "model.train_max_tokens",
        "tokenizer.vocab_size",
        "tokenizer.sample_sentences",
        "data.max_train_pairs",
        "schedule.steps",
        "schedule.warmup_steps",
        "schedule.batch_pairs",
        "schedule.accumulation_steps",
        "schedule.grad_cache_chunk",
        "run.seed",
        "run.log_every",
        "run.eval_every",
        "run.checkpoint_every",
        "run.dev_max_pairs",
    ];
    const FLOATS: &[&str] = &[
        "model.dropout",
        "tokenizer.alpha",
        "objective.temperature",
        "objective.margin",
        "objective.scale",
        "objective.triplet_margin",
        "optimizer.lr",
        "optimizer.weight_decay",
        "optimizer.beta1",
        "optimizer.beta2",
        "optimizer.eps",
        "optimizer.max_grad_norm",
    ];
    let integer = prop_oneof![
        6 => (0u64..12).prop_map(|v| v.to_string()),
        1 => any::<u64>().prop_map(|v| v.to_string()),
        1 => Just(u64::MAX.to_string()),
        1 => Just(i64::MAX.to_string()),
    ];
    let float = prop_oneof![
        6 => (-2.0f64..2.0).prop_map(|v| format!("{v:?}")),
        1 => any::<f64>().prop_map(|v| format!("{v:?}")),
        1 => prop::sample::select(&["nan", "inf", "-inf", "-0.0", "0.0", "1e308", "5e-324"][..])
            .prop_map(str::to_owned),
    ];
    let wrong =
        prop::sample::select(&["-1", "0.5", "\"12\"", "true", "[1, 2]", "", "{ a = 1 }"][..])
            .prop_map(str::to_owned);
    let set = prop_oneof![
        10 => (prop::sample::select(INTEGERS), integer),
        10 => (prop::sample::select(FLOATS), float),
        1 => (prop::sample::select([INTEGERS, FLOATS].concat()), wrong),
    ];
    let sets = vec(set, 1..5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recipe.toml");
    std::fs::write(&path, BASE_RECIPE).unwrap();
    fuzz("recipe_numeric_ranges", 1500, sets, |sets| {
        let overrides: Vec<RecipeOverride> = sets
            .iter()
            .map(|(k, v)| format!("{k}={v}").parse().unwrap())
            .collect();
        Ok(match TrainConfig::from_file_with(&path, &overrides) {
            Ok(c) => {
                check_accepted(&c)?;
                "accepted"
            }
            Err(LaseError::BadFile { path: p, .. }) => {
                prop_assert_eq!(&p, &path);
                "refused: wrong type"
            }
            Err(LaseError::InvalidArgument(_)) => "refused: invalid setting",
            Err(e) => return Err(TestCaseError::fail(format!("unexpected error kind: {e}"))),
        }
        .into())
    });
}

// ---------------------------------------------------------------------------------
// HTTP request decoding

/// A server of the tiny model for the whole test binary (it ends with the process).
fn server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let encoder = common::tiny_encoder(common::tiny_config(), common::mean_head(16, false), 4);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let options = lase::inference::EncodeOptions {
                    workers: 1,
                    ..lase::inference::EncodeOptions::for_device(tch::Device::Cpu)
                };
                let config = lase::serve::ServeConfig {
                    max_body_bytes: 64 << 10,
                    ..Default::default()
                };
                lase::serve::serve(listener, encoder, options, config, std::future::pending())
                    .await
                    .unwrap();
            });
        });
        rx.recv_timeout(Duration::from_secs(60)).unwrap()
    })
}

/// POSTs `body` to `path`: (status, body).
fn post(path: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(server()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut response = Vec::new();
    s.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

const ROUTES: &[&str] = &["/", "/embed", "/v1/embeddings", "/similarity", "/mine"];

/// Any status but 5xx; an error is a JSON body with a message; a success is JSON.
fn check_reply(path: &str, status: u16, body: &str) -> Outcome {
    prop_assert!(
        (200..300).contains(&status) || (400..500).contains(&status),
        "{path}: {status} {body}"
    );
    let v: Value = serde_json::from_str(body).map_err(|e| {
        TestCaseError::fail(format!("{path}: {status}, body not JSON ({e}): {body}"))
    })?;
    if status >= 400 {
        prop_assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
    }
    Ok(status.to_string())
}

/// Any JSON value, biased towards objects with the request bodies' field names.
fn json() -> impl Strategy<Value = Value> {
    let words = prop::sample::select(common::TINY_WORDS).prop_map(str::to_owned);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-3i64..40).prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        vec(words, 1..5).prop_map(|w| Value::from(w.join(" "))),
        prop::sample::select(
            &[
                "float",
                "base64",
                "int8",
                "binary",
                "ratio",
                "max",
                "fwd",
                "intersect"
            ][..]
        )
        .prop_map(Value::from),
    ];
    let key = prop_oneof![
        3 => prop::sample::select(
            &[
                "inputs", "input", "normalize", "truncate", "dimensions", "model",
                "encoding_format", "user", "source_sentence", "sentences", "src", "tgt",
                "k", "margin", "retrieval", "threshold",
            ][..]
        )
        .prop_map(str::to_owned),
        1 => "[a-z_]{0,8}",
    ];
    leaf.prop_recursive(3, 40, 6, move |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(key.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn http_bodies_of_any_json_never_get_a_5xx() {
    let cases = (prop::sample::select(ROUTES), json());
    fuzz("http_json", 1500, cases, |(path, value)| {
        let (status, body) = post(path, value.to_string().as_bytes());
        check_reply(path, status, &body)
    });
}

/// A sentence for a request: tiny-vocabulary words, any text (control characters and
/// NUL included), empty, too long for the model, or not a string.
fn sentence() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => vec(prop::sample::select(common::TINY_WORDS), 1..6).prop_map(|w| Value::from(w.join(" "))),
        2 => "\\PC{0,16}".prop_map(Value::from),
        1 => vec(any::<char>(), 0..12).prop_map(|c| Value::from(c.into_iter().collect::<String>())),
        1 => Just(Value::from("")),
        1 => Just(Value::from("the dog ".repeat(40))),
        1 => json(),
    ]
}

/// A list of sentences: a few, none, around the 256-input limit, or not a list.
fn sentences() -> impl Strategy<Value = Value> {
    prop_oneof![
        12 => vec(sentence(), 0..6).prop_map(Value::Array),
        1 => (250usize..262).prop_map(|n| Value::from(vec!["the cat"; n])),
        1 => json(),
    ]
}

/// A request body for `route` field by field: each field absent, plausible, or any
/// JSON value.
fn shaped_body(route: &'static str) -> BoxedStrategy<Value> {
    fn field(valid: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Option<Value>> {
        prop_oneof![4 => Just(None), 5 => valid.prop_map(Some), 1 => json().prop_map(Some)].boxed()
    }
    fn required(valid: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Option<Value>> {
        prop_oneof![12 => valid.prop_map(Some), 1 => Just(None), 1 => json().prop_map(Some)].boxed()
    }
    let int = || prop_oneof![8 => (-2i64..20).prop_map(Value::from), 1 => any::<u64>().prop_map(Value::from)];
    let flag = || any::<bool>().prop_map(Value::from);
    let one_of = |v: &'static [&'static str]| prop::sample::select(v).prop_map(Value::from);
    let inputs = || prop_oneof![sentence(), sentences()];
    let fields: Vec<(&'static str, BoxedStrategy<Option<Value>>)> = match route {
        "/" | "/embed" => vec![
            ("inputs", required(inputs())),
            ("normalize", field(flag())),
            ("truncate", field(flag())),
            ("dimensions", field(int())),
        ],
        "/v1/embeddings" => vec![
            ("input", required(inputs())),
            ("model", field(sentence())),
            (
                "encoding_format",
                field(one_of(&["float", "base64", "int8", "binary", "float16"])),
            ),
            ("dimensions", field(int())),
            ("user", field(sentence())),
        ],
        "/similarity" => vec![
            (
                "inputs",
                required((field(sentence()), field(sentences())).prop_map(|(s, l)| {
                    let mut m = serde_json::Map::new();
                    s.map(|s| m.insert("source_sentence".into(), s));
                    l.map(|l| m.insert("sentences".into(), l));
                    Value::Object(m)
                })),
            ),
            ("truncate", field(flag())),
        ],
        "/mine" => vec![
            ("src", required(sentences())),
            ("tgt", required(sentences())),
            ("k", field(int())),
            (
                "margin",
                field(one_of(&["absolute", "distance", "ratio", "golden"])),
            ),
            (
                "retrieval",
                field(one_of(&["fwd", "bwd", "max", "intersect", "both"])),
            ),
            (
                "threshold",
                field(prop_oneof![
                    (-2.0f64..2.0).prop_map(Value::from),
                    Just(Value::from(1e300))
                ]),
            ),
            ("truncate", field(flag())),
        ],
        _ => unreachable!(),
    };
    let (names, values): (Vec<_>, Vec<_>) = fields.into_iter().unzip();
    values
        .prop_map(move |values| {
            let mut m = serde_json::Map::new();
            for (name, v) in names.iter().zip(values) {
                if let Some(v) = v {
                    m.insert(name.to_string(), v);
                }
            }
            Value::Object(m)
        })
        .boxed()
}

/// The rows a 200 answer must hold for `body` at `route`.
fn check_success(route: &str, request: &Value, reply: &Value) -> Result<(), TestCaseError> {
    let count = |v: &Value| match v {
        Value::String(_) => 1,
        Value::Array(a) => a.len(),
        _ => usize::MAX,
    };
    match route {
        "/" | "/embed" => {
            let rows = reply.as_array().map(Vec::len);
            prop_assert_eq!(rows, Some(count(&request["inputs"])), "{}", reply);
            let dim = request["dimensions"].as_u64().unwrap_or(16) as usize;
            for row in reply.as_array().unwrap() {
                prop_assert_eq!(row.as_array().map(Vec::len), Some(dim));
            }
        }
        "/v1/embeddings" => {
            let rows = reply["data"].as_array().map(Vec::len);
            prop_assert_eq!(rows, Some(count(&request["input"])), "{}", reply);
        }
        "/similarity" => {
            let rows = reply.as_array().map(Vec::len);
            prop_assert_eq!(
                rows,
                Some(count(&request["inputs"]["sentences"])),
                "{}",
                reply
            );
        }
        "/mine" => {
            let (n, m) = (count(&request["src"]), count(&request["tgt"]));
            for p in reply["pairs"].as_array().unwrap() {
                prop_assert!(p["src_index"].as_u64().unwrap() < n as u64, "{p}");
                prop_assert!(p["tgt_index"].as_u64().unwrap() < m as u64, "{p}");
            }
        }
        _ => unreachable!(),
    }
    Ok(())
}

#[test]
fn http_request_fields_of_any_value_never_get_a_5xx() {
    let cases =
        prop::sample::select(ROUTES).prop_flat_map(|route| (Just(route), shaped_body(route)));
    fuzz("http_fields", 1500, cases, |(path, request)| {
        let (status, body) = post(path, request.to_string().as_bytes());
        let outcome = check_reply(path, status, &body)?;
        if status == 200 {
            check_success(path, &request, &serde_json::from_str(&body).unwrap())?;
        }
        Ok(format!("{path} {outcome}"))
    });
}

#[test]
fn http_bodies_of_any_bytes_never_get_a_5xx() {
    let bytes = prop_oneof![
        vec(any::<u8>(), 0..200),
        "\\PC{0,100}".prop_map(String::into_bytes),
        // Valid JSON with a byte changed or cut.
        (json(), any::<usize>(), any::<u8>()).prop_map(|(v, at, b)| {
            let mut bytes = v.to_string().into_bytes();
            let at = at % bytes.len();
            if b % 2 == 0 {
                bytes.truncate(at);
            } else {
                bytes[at] = b;
            }
            bytes
        }),
    ];
    let cases = (prop::sample::select(ROUTES), bytes);
    fuzz("http_bytes", 1000, cases, |(path, body)| {
        let (status, reply) = post(path, &body);
        check_reply(path, status, &reply)
    });
}

// ---------------------------------------------------------------------------------
// Tokenizer wrapper

/// A BERT-style tokenizer built here (all-MiniLM-L6-v2's pipeline: BERT normaliser that
/// cleans control characters, splits CJK and lowercases; BERT pre-tokenizer; WordPiece
/// with `##` pieces; [CLS] ... [SEP]) over a small vocabulary, so that any text meets
/// every stage without a downloaded model.
fn wordpiece_tokenizer(max_length: usize) -> lase::tokenizer::SentenceTokenizer {
    use tokenizers::models::wordpiece::WordPiece;
    use tokenizers::normalizers::bert::BertNormalizer;
    use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
    use tokenizers::processors::template::TemplateProcessing;
    use tokenizers::{AddedToken, Tokenizer};
    let specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
    let letters = ('a'..='z')
        .chain('0'..='9')
        .chain("äöüßéçñ你好世界".chars());
    let mut pieces: Vec<String> = specials.iter().map(|s| s.to_string()).collect();
    for c in letters {
        pieces.push(c.to_string());
        pieces.push(format!("##{c}"));
    }
    pieces.extend(common::TINY_WORDS.iter().map(|w| w.to_string()));
    pieces.extend([".", ",", "!", "?", "'", "-"].map(String::from));
    let mut seen = std::collections::HashSet::new();
    pieces.retain(|p| seen.insert(p.clone()));
    // WordPiece reads its vocabulary from a file (one piece per line, id = line).
    let dir = tempfile::tempdir().unwrap();
    let vocab = dir.path().join("vocab.txt");
    std::fs::write(&vocab, pieces.join("\n")).unwrap();
    let model = WordPiece::from_file(vocab.to_str().unwrap())
        .unk_token("[UNK]".into())
        .build()
        .unwrap();
    let mut tok = Tokenizer::new(model);
    tok.with_normalizer(Some(BertNormalizer::new(true, true, None, true)))
        .unwrap();
    tok.with_pre_tokenizer(Some(BertPreTokenizer));
    tok.with_post_processor(Some(
        TemplateProcessing::builder()
            .try_single("[CLS] $A [SEP]")
            .unwrap()
            .special_tokens(vec![("[CLS]", 2), ("[SEP]", 3)])
            .build()
            .unwrap(),
    ));
    let _added = tok.add_special_tokens(specials.map(|s| AddedToken::from(s, true)));
    lase::tokenizer::SentenceTokenizer::new(tok, max_length, 0, false).unwrap()
}

/// Any text: arbitrary characters (control, NUL, combining, CJK, emoji), words, special
/// token names inside text, runs of whitespace, and long text.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => vec(any::<char>(), 0..40).prop_map(|c| c.into_iter().collect::<String>()),
        3 => "\\PC{0,60}",
        2 => vec(prop::sample::select(common::TINY_WORDS), 0..50).prop_map(|w| w.join(" ")),
        1 => "([a-z]{1,5}|\\[CLS\\]|\\[SEP\\]|\\[PAD\\]|[ \t\r\n\u{3000}\u{200b}]{1,3}){0,30}",
        1 => (1usize..4000).prop_map(|n| "ab ".repeat(n)),
        1 => (1usize..4000).prop_map(|n| "x".repeat(n)),
    ]
}

#[test]
fn tokenizer_wrapper_on_any_text() {
    const MAX: usize = 32;
    let tokenizer = wordpiece_tokenizer(MAX);
    let whole = wordpiece_tokenizer(1 << 20);
    let vocab = tokenizer.vocab_size() as i64;
    fuzz("tokenizer", 1500, vec(any_text(), 1..4), |texts| {
        // Batch encoding (parallel) and one at a time agree.
        let batch = tokenizer
            .encode_reporting_truncation(&texts)
            .map_err(|e| TestCaseError::fail(format!("refused: {e}")))?;
        let mut truncated = 0;
        for (text, (ids, cut)) in texts.iter().zip(&batch) {
            let alone = tokenizer.encode_reporting_truncation(&[text]).unwrap();
            prop_assert_eq!(&alone[0].0, ids);
            prop_assert!(ids.len() <= MAX && ids.len() >= 2, "{} ids", ids.len());
            prop_assert_eq!(ids.ids[0], 2);
            prop_assert_eq!(*ids.ids.last().unwrap(), 3);
            prop_assert_eq!(ids.type_ids.len(), ids.len());
            prop_assert!(
                ids.ids.iter().all(|&i| (0..vocab).contains(&i)),
                "{:?}",
                ids.ids
            );
            // Truncated exactly when the whole text needs more than MAX ids, and then
            // to its first MAX - 1 ids and [SEP].
            let full = &whole.encode(&[text]).unwrap()[0];
            prop_assert_eq!(*cut, full.len() > MAX);
            if *cut {
                truncated += 1;
                prop_assert_eq!(&ids.ids[..MAX - 1], &full.ids[..MAX - 1]);
            } else {
                prop_assert_eq!(ids, full);
            }
        }
        Ok(if truncated > 0 {
            "some truncated"
        } else {
            "none truncated"
        }
        .into())
    });
}

// ---------------------------------------------------------------------------------
// Inputs the properties above once failed on, kept as plain tests.

/// npy_round_trip: a 0 x 0 matrix divided by its zero width (a panic) in the writer.
#[test]
fn regression_npy_writer_with_zero_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.npy");
    let e = write_f32(&path, 0, 0, &[]).unwrap_err().to_string();
    assert!(
        e.contains("empty.npy") && e.contains("at least one column"),
        "{e}"
    );
    assert!(NpyWriter::create(&path, 0).is_err());
    assert!(!path.exists());
}

/// corpus_moses_pair: an empty source file beside a target that is only the gzip
/// magic was reported as misaligned at line 0 of the source; the target's broken gzip
/// stream is the error, at its line 1.
#[test]
fn regression_broken_gzip_beside_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let (src, tgt) = (dir.path().join("c.deu"), dir.path().join("c.eng"));
    std::fs::write(&src, b"").unwrap();
    std::fs::write(&tgt, [0x1f, 0x8b]).unwrap();
    let read = ParallelCorpus::read(&[CorpusSource::Moses {
        src,
        tgt: tgt.clone(),
        src_lang: "de".into(),
        tgt_lang: "en".into(),
        weight: None,
    }]);
    match read {
        Err(LaseError::BadLine { path, line, .. }) => assert_eq!((path, line), (tgt, 1)),
        other => panic!("{:?}", other.map(|c| c.pairs.len())),
    }
}

// ---------------------------------------------------------------------------------
// Model folders

/// A tiny model folder saved once (config.json, model.safetensors, tokenizer.json, the
/// sentence-transformers files), the base every case mutates. Without lase's
/// checksums.sha256, as a folder from a hub or another tool: with it every mutation would
/// stop at the checksum check, and the structural checks behind it would go unfuzzed.
fn base_model_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        common::tiny_encoder(common::tiny_config(), common::mean_head(16, true), 1)
            .save(dir.path())
            .unwrap();
        std::fs::remove_file(dir.path().join(lase::io::checksums::CHECKSUMS_FILE)).unwrap();
        dir
    })
    .path()
}

/// Every file of a folder, relative, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// One change to a model folder.
#[derive(Clone, Debug)]
enum FolderChange {
    /// A key of a JSON file (config.json, 1_Pooling/config.json, ...) set to a value or
    /// removed (None).
    JsonKey(usize, String, Option<Value>),
    /// A file deleted.
    Delete(usize),
    /// A file cut to this fraction of its bytes.
    Truncate(usize, f64),
    /// Bytes overwritten at a fraction of the file.
    Overwrite(usize, f64, Vec<u8>),
    /// tokenizer.json replaced by one with more pieces than config.json's vocab_size.
    LargerVocabulary(usize),
}

fn folder_change() -> impl Strategy<Value = FolderChange> {
    let keys = prop::sample::select(vec![
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "intermediate_size",
        "max_position_embeddings",
        "type_vocab_size",
        "layer_norm_eps",
        "hidden_act",
        "model_type",
        "pad_token_id",
        "word_embedding_dimension",
        "pooling_mode_mean_tokens",
        "pooling_mode_cls_token",
        "max_seq_length",
        "do_lower_case",
    ]);
    let value = prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        prop::sample::select(vec![
            0i64,
            1,
            2,
            3,
            15,
            16,
            17,
            31,
            33,
            1 << 20,
            -1,
            i64::MAX
        ])
        .prop_map(|n| Some(Value::from(n))),
        prop::sample::select(vec![0.5f64, -1e-12, 1e300]).prop_map(|x| Some(Value::from(x))),
        prop::sample::select(vec!["", "bert", "xlm-roberta", "gelu", "relu", "nonsense"])
            .prop_map(|s| Some(Value::from(s))),
        any::<bool>().prop_map(|b| Some(Value::from(b))),
    ];
    prop_oneof![
        4 => (any::<usize>(), keys, value).prop_map(|(f, k, v)| FolderChange::JsonKey(f, k.to_string(), v)),
        1 => any::<usize>().prop_map(FolderChange::Delete),
        1 => (any::<usize>(), 0.0..1.0f64).prop_map(|(f, x)| FolderChange::Truncate(f, x)),
        1 => (any::<usize>(), 0.0..1.0f64, vec(any::<u8>(), 1..9))
            .prop_map(|(f, x, b)| FolderChange::Overwrite(f, x, b)),
        1 => (1usize..2000).prop_map(FolderChange::LargerVocabulary),
    ]
}

fn apply(dir: &Path, change: &FolderChange) {
    let files = files_under(dir);
    if files.is_empty() {
        return;
    }
    let pick = |i: usize| dir.join(&files[i % files.len()]);
    match change {
        FolderChange::JsonKey(i, key, value) => {
            let jsons: Vec<&PathBuf> = files
                .iter()
                .filter(|f| {
                    f.extension().is_some_and(|e| e == "json") && !f.ends_with("tokenizer.json")
                })
                .collect();
            if jsons.is_empty() {
                return;
            }
            let path = dir.join(jsons[i % jsons.len()]);
            let Ok(Value::Object(mut map)) =
                serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap())
            else {
                return;
            };
            match value {
                Some(v) => {
                    map.insert(key.clone(), v.clone());
                }
                None => {
                    map.remove(key);
                }
            }
            std::fs::write(&path, Value::Object(map).to_string()).unwrap();
        }
        FolderChange::Delete(i) => std::fs::remove_file(pick(*i)).unwrap(),
        FolderChange::Truncate(i, x) => {
            let path = pick(*i);
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..(bytes.len() as f64 * x) as usize]).unwrap();
        }
        FolderChange::Overwrite(i, x, new) => {
            let path = pick(*i);
            let mut bytes = std::fs::read(&path).unwrap();
            let at = (bytes.len() as f64 * x) as usize;
            for (k, b) in new.iter().enumerate() {
                if let Some(slot) = bytes.get_mut(at + k) {
                    *slot = *b;
                }
            }
            std::fs::write(&path, bytes).unwrap();
        }
        FolderChange::LargerVocabulary(extra) => {
            let path = dir.join("tokenizer.json");
            let Ok(mut tok) =
                serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap_or_default())
            else {
                return;
            };
            if let Some(vocab) = tok
                .pointer_mut("/model/vocab")
                .and_then(Value::as_object_mut)
            {
                let n = vocab.len();
                for k in 0..*extra {
                    vocab.insert(format!("piece{k}"), Value::from(n + k));
                }
            }
            std::fs::write(&path, tok.to_string()).unwrap();
        }
    }
}

/// Loads a mutated folder and, if it loads, embeds with it: never a panic; a refusal
/// names the folder or a file in it; an accepted model gives one finite row per sentence.
fn check_model_folder(changes: &[FolderChange]) -> Outcome {
    check_edited_model_folder(|dir| {
        for c in changes {
            apply(dir, c);
        }
    })
}

/// [`check_model_folder`] with the base folder's copy edited by `edit`.
fn check_edited_model_folder(edit: impl Fn(&Path)) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    for f in files_under(base_model_dir()) {
        let to = dir.path().join(&f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(base_model_dir().join(&f), to).unwrap();
    }
    edit(dir.path());
    let shown = dir.path().display().to_string();
    let loaded = std::panic::catch_unwind(|| {
        lase::model::SentenceEncoder::load(dir.path(), tch::Device::Cpu)
    })
    .map_err(|_| TestCaseError::fail("SentenceEncoder::load panicked"))?;
    let model = match loaded {
        Err(e) => {
            let message = e.to_string();
            prop_assert!(
                message.contains(&shown),
                "the refusal does not name the folder: {message}"
            );
            return Ok("refused at load".into());
        }
        Ok(m) => m,
    };
    let words = common::TINY_WORDS.join(" ");
    let sentences = ["the dog", "", words.as_str(), "ünïcödé 漢字 \u{0}"];
    let encoded =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.encode(&sentences, 2)))
            .map_err(|_| TestCaseError::fail("encode panicked on a loaded model"))?;
    match encoded {
        Err(_) => Ok("loaded, encode refused".into()),
        Ok(v) => {
            prop_assert_eq!(v.size()[0], sentences.len() as i64);
            prop_assert_eq!(v.size()[1], model.dim() as i64);
            let finite = v.isfinite().all().int64_value(&[]) == 1;
            prop_assert!(finite, "non-finite rows from a loaded model");
            Ok("loaded and encoded".into())
        }
    }
}

#[test]
fn model_folders_never_panic() {
    fuzz("model_folder", 400, vec(folder_change(), 1..4), |changes| {
        check_model_folder(&changes)
    });
}

/// The model-folder target's first findings, each a panic or an unnamed refusal before
/// its fix: a pooling config with no mode (refused without naming the folder), sizes
/// that overflow libtorch's allocation (vocab_size or num_hidden_layers = i64::MAX, the
/// latter with the weights file gone), and a pad_token_id outside the vocabulary.
#[test]
fn regression_model_folders_the_fuzzer_broke() {
    let set = |file: &'static str, key: &'static str, value: Value| {
        move |dir: &Path| {
            let path = dir.join(file);
            let mut json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            json[key] = value.clone();
            std::fs::write(&path, json.to_string()).unwrap();
        }
    };
    let pooling = files_under(base_model_dir())
        .into_iter()
        .find(|f| f.to_string_lossy().contains("Pooling"))
        .expect("the base folder has a pooling config");
    let pooling: &'static str = Box::leak(pooling.to_string_lossy().into_owned().into_boxed_str());
    type Edit<'a> = Box<dyn Fn(&Path) + 'a>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "no pooling mode",
            Box::new(set(pooling, "pooling_mode_mean_tokens", Value::from(false))),
        ),
        (
            "vocab_size i64::MAX",
            Box::new(set("config.json", "vocab_size", Value::from(i64::MAX))),
        ),
        (
            "pad_token_id past the vocabulary",
            Box::new(set("config.json", "pad_token_id", Value::from(1 << 20))),
        ),
        (
            "num_hidden_layers i64::MAX, no weights file",
            Box::new(|dir: &Path| {
                set("config.json", "num_hidden_layers", Value::from(i64::MAX))(dir);
                std::fs::remove_file(dir.join("model.safetensors")).unwrap();
            }),
        ),
    ];
    for (name, edit) in cases {
        let outcome = check_edited_model_folder(edit).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(outcome, "refused at load", "{name}");
    }
}

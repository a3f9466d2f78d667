//! `lase eval --suite bitext --bitext PATH`: P@1 both directions and xSIM error (LASER's
//! xsim.py, ratio margin) on the user's own line-aligned test sets — a held-out news test
//! set, an in-domain sample — laid out as the Moses folders `lase train` reads
//! (`data.sources` format `moses-folder`): a folder `<a>-<b>/` of file pairs
//! `<stem>.<a>[.gz]` / `<stem>.<b>[.gz]`, or a folder of such folders. Each stem of each
//! pair folder is one test set, named `<a>-<b>/<stem>`, scored with X = `<a>`'s lines and
//! Y = `<b>`'s (line i of one translates line i of the other; a prediction whose text
//! equals the gold translation's counts as correct, as in the other retrieval suites).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use super::bitext_retrieval::{RetrievalScores, bitext_retrieval};
use super::plot::{BarPanel, retrieval_bars};
use super::suite::{Suite, SuiteInput, SuiteOutcome, to_json};
use crate::data::files::{file_name, sorted_entries};
use crate::error::{LaseError, Result};
use crate::lang::LanguageCode;
use crate::mine::MatrixView;

/// One aligned test set found under a `--bitext` folder.
#[derive(Clone, Debug, PartialEq)]
pub struct BitextSet {
    /// `<a>-<b>/<stem>`.
    pub name: String,
    /// The pair folder's two language codes as written (`deu`, `de`, `deu_Latn`).
    pub langs: (String, String),
    /// `<stem>.<a>[.gz]` and `<stem>.<b>[.gz]`.
    pub files: (PathBuf, PathBuf),
}

/// The two languages a folder named `<a>-<b>` pairs, when both parse as language codes (a
/// region, as in TICO-19's `en-pt_BR`, allowed).
fn pair_languages(folder: &Path) -> Option<(String, String)> {
    let name = file_name(folder);
    let (a, b) = name.split_once('-')?;
    (normalized(a).is_some() && normalized(b).is_some()).then(|| (a.to_owned(), b.to_owned()))
}

/// A folder's language code in lase's one scheme (`de` -> `deu`, `pt_BR` -> `por`).
fn normalized(code: &str) -> Option<String> {
    LanguageCode::parse_with_region(code)
        .ok()
        .map(|(c, _)| c.to_string())
}

/// The stem of `file` if it is `<stem>.<lang>` or `<stem>.<lang>.gz`.
fn stem_of(file: &Path, lang: &str) -> Option<String> {
    let name = file_name(file);
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    name.strip_suffix(&format!(".{lang}"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The test sets of one pair folder: every `<stem>.<a>` with its `<stem>.<b>`; a file of
/// either language without its partner is an error naming it.
fn sets_of_pair_folder(folder: &Path, (a, b): (String, String)) -> Result<Vec<BitextSet>> {
    if a == b {
        return Err(LaseError::bad_file(
            folder,
            format!(
                "both sides of this pair folder are {a}: each file would be scored against itself"
            ),
        ));
    }
    let files: Vec<PathBuf> = sorted_entries(folder)?
        .into_iter()
        .filter(|f| f.is_file())
        .collect();
    let by_stem = |lang: &str| -> Result<BTreeMap<String, PathBuf>> {
        let mut found = BTreeMap::new();
        for f in &files {
            if let Some(stem) = stem_of(f, lang)
                && let Some(other) = found.insert(stem.clone(), f.clone())
            {
                return Err(LaseError::bad_file(
                    f,
                    format!(
                        "{stem}.{lang} is here twice (also {}): keep one",
                        file_name(&other)
                    ),
                ));
            }
        }
        Ok(found)
    };
    let (of_a, of_b) = (by_stem(&a)?, by_stem(&b)?);
    for (stems, others, lang) in [(&of_a, &of_b, &b), (&of_b, &of_a, &a)] {
        if let Some((stem, lone)) = stems.iter().find(|(s, _)| !others.contains_key(*s)) {
            return Err(LaseError::bad_file(
                lone,
                format!("no {stem}.{lang}[.gz] beside this file to pair it with"),
            ));
        }
    }
    let pair = file_name(folder);
    Ok(of_a
        .into_iter()
        .map(|(stem, fa)| BitextSet {
            name: format!("{pair}/{stem}"),
            files: (fa, of_b[&stem].clone()),
            langs: (a.clone(), b.clone()),
        })
        .collect())
}

/// Every test set under `paths`, each a pair folder or a folder of pair folders, in path
/// order. A path with none, a pair folder inside one with none (`lase train` refuses it
/// too), and two sets of one name (`deu-eng/newstest` under two paths) are errors naming
/// them.
pub fn find_sets(paths: &[PathBuf]) -> Result<Vec<BitextSet>> {
    let mut sets: Vec<BitextSet> = Vec::new();
    for path in paths {
        if !path.is_dir() {
            return Err(LaseError::bad_file(
                path,
                "not a folder: --bitext names a <a>-<b> folder of <stem>.<a> / <stem>.<b> files, or a folder of such folders",
            ));
        }
        // A folder named like a pair (`deu-eng`, but also `wmt-dev`) that holds no set of
        // its own is read as a folder of pair folders.
        let own = match pair_languages(path) {
            Some(langs) => sets_of_pair_folder(path, langs)?,
            None => Vec::new(),
        };
        let found = if own.is_empty() {
            let mut found = Vec::new();
            for folder in sorted_entries(path)?.into_iter().filter(|p| p.is_dir()) {
                if let Some(langs) = pair_languages(&folder) {
                    let (a, b) = langs.clone();
                    let inner = sets_of_pair_folder(&folder, langs)?;
                    if inner.is_empty() {
                        return Err(LaseError::bad_file(
                            &folder,
                            format!("no <stem>.{a} / <stem>.{b} file pair in this pair folder"),
                        ));
                    }
                    found.extend(inner);
                }
            }
            found
        } else {
            own
        };
        if found.is_empty() {
            return Err(LaseError::bad_file(
                path,
                "no test set here: expected <a>-<b> folders (deu-eng, de-en) holding <stem>.<a> and <stem>.<b> files",
            ));
        }
        for set in found {
            if let Some(twin) = sets.iter().find(|s| s.name == set.name) {
                return Err(LaseError::bad_file(
                    &set.files.0,
                    format!(
                        "a second test set named {} (the first: {}): name the folders apart",
                        set.name,
                        twin.files.0.display()
                    ),
                ));
            }
            sets.push(set);
        }
    }
    Ok(sets)
}

/// Adds every sentence of `sets` (both sides) to `sentences`, each named by its set and
/// language: `lase check-leakage --bitext` checks a recipe against the user's own test sets.
pub fn add_test_sentences(
    sets: &[BitextSet],
    sentences: &mut super::leakage::BenchmarkSentences,
) -> Result<()> {
    for set in sets {
        for (file, lang) in [(&set.files.0, &set.langs.0), (&set.files.1, &set.langs.1)] {
            let lines = crate::io::text::read_lines(file)?;
            sentences.add(&format!("bitext {} ({lang})", set.name), &lines);
        }
    }
    Ok(())
}

/// The sets in any language `wanted` names: a code as a folder writes it (`pt_BR`, `ti_ER`),
/// or in lase's one code scheme (`de`, `deu` and `deu_Latn` all name a `deu-eng` folder's
/// `deu`; `por` names `pt_BR`); all when `wanted` is None. None chosen is an error.
pub fn select_sets(sets: Vec<BitextSet>, wanted: Option<&[String]>) -> Result<Vec<BitextSet>> {
    let Some(wanted) = wanted else {
        return Ok(sets);
    };
    let written = |s: &BitextSet| [s.langs.0.clone(), s.langs.1.clone()];
    let (exact, others): (Vec<String>, Vec<String>) = wanted
        .iter()
        .cloned()
        .partition(|w| sets.iter().any(|s| written(s).contains(w)));
    let codes = |s: &BitextSet| [normalized(&s.langs.0), normalized(&s.langs.1)];
    let mut chosen = Vec::new();
    if !others.is_empty() {
        let mut available: Vec<String> = sets.iter().flat_map(codes).flatten().collect();
        available.sort();
        available.dedup();
        match crate::lang::resolve(&others, &available, None, "bitext test sets") {
            Ok(c) => chosen = c,
            Err(e) if exact.is_empty() => return Err(e),
            Err(_) => tracing::warn!(
                "bitext test sets: no data for {}; skipped",
                others.join(", ")
            ),
        }
    }
    Ok(sets
        .into_iter()
        .filter(|s| {
            written(s).iter().any(|c| exact.contains(c))
                || codes(s).iter().flatten().any(|c| chosen.contains(c))
        })
        .collect())
}

/// Results of the bitext suite (P@1 and xSIM error as fractions per set, means in percent).
#[derive(Clone, Debug, Serialize)]
pub struct BitextReport {
    /// Keyed by `<a>-<b>/<stem>`; X = `<a>`, Y = `<b>`.
    pub sets: BTreeMap<String, RetrievalScores>,
    /// Mean over the sets of the mean P@1 of both directions.
    pub mean_p_at_1: f64,
    /// Mean over the sets of the xSIM error rate of both directions.
    pub mean_xsim_error: f64,
}

/// The lines of a test file, counted without holding them.
fn count_lines(path: &Path) -> Result<usize> {
    let mut n = 0;
    for line in crate::io::text::LineReader::open(path)? {
        line?;
        n += 1;
    }
    Ok(n)
}

/// Scores each of `sets`. Every pair of files is counted and checked to line up before
/// anything is embedded; each set's text is then read when it is scored, so one set's
/// sentences and vectors are held at a time. The search is exact (P@1 over all n lines of
/// the other side): its time grows with n squared, seconds for the usual test sets of a
/// few thousand lines.
pub fn evaluate(
    encoder: &crate::model::SentenceEncoder,
    sets: &[BitextSet],
    options: &crate::inference::EncodeOptions,
    progress: bool,
) -> Result<BitextReport> {
    for set in sets {
        let (nx, ny) = (count_lines(&set.files.0)?, count_lines(&set.files.1)?);
        if nx == 0 {
            // read_test_lines names an empty file.
            super::read_test_lines(&set.files.0)?;
        }
        super::check_aligned(&set.files.0, nx, &file_name(&set.files.1), ny)?;
    }
    let dim = encoder.dim();
    let mut scores = BTreeMap::new();
    for set in sets {
        let x = super::read_test_lines(&set.files.0)?;
        let y = super::read_test_lines(&set.files.1)?;
        let embed = |lines: &[String], lang: &str| {
            super::embed_unit_vectors(
                encoder,
                lines,
                options,
                &format!("bitext {} {lang}", set.name),
                progress,
            )
        };
        let (vx, vy) = (embed(&x, &set.langs.0)?, embed(&y, &set.langs.1)?);
        let mx = MatrixView::new(&vx, x.len(), dim)?;
        let my = MatrixView::new(&vy, y.len(), dim)?;
        scores.insert(
            set.name.clone(),
            bitext_retrieval(&mx, &my, Some((&x, &y)))?,
        );
    }
    let n = scores.len().max(1) as f64;
    Ok(BitextReport {
        mean_p_at_1: 100.0 * scores.values().map(RetrievalScores::p_at_1).sum::<f64>() / n,
        mean_xsim_error: 100.0
            * scores
                .values()
                .map(|s| (s.xsim_error_xy + s.xsim_error_yx) / 2.0)
                .sum::<f64>()
            / n,
        sets: scores,
    })
}

/// `lase eval --suite bitext --bitext PATH`: retrieval on the user's own aligned test sets.
pub struct BitextSuite;

impl Suite for BitextSuite {
    fn name(&self) -> &'static str {
        "bitext"
    }

    fn run(&self, input: &SuiteInput<'_>) -> Result<SuiteOutcome> {
        let started = Instant::now();
        if input.bitext.is_empty() {
            return Err(LaseError::InvalidArgument(
                "the bitext suite scores your own test sets: name them with --bitext PATH".into(),
            ));
        }
        let sets = select_sets(find_sets(input.bitext)?, input.langs)?;
        let r = evaluate(input.encoder, &sets, input.options, input.progress)?;
        let summary = vec![format!(
            "bitext: {} test sets, mean P@1 {:.2}, xSIM error {:.2} (both directions); {:.0} s",
            r.sets.len(),
            r.mean_p_at_1,
            r.mean_xsim_error,
            started.elapsed().as_secs_f64()
        )];
        let mut markdown = String::from(
            "## Your test sets: bitext retrieval (%, X = the pair folder's first language)\n\n| test set | pairs | P@1 X->Y | P@1 Y->X | xSIM error X->Y | xSIM error Y->X |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
        );
        for (name, s) in &r.sets {
            markdown += &format!(
                "| {name} | {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
                s.pairs,
                100.0 * s.p_at_1_xy,
                100.0 * s.p_at_1_yx,
                100.0 * s.xsim_error_xy,
                100.0 * s.xsim_error_yx
            );
        }
        markdown += &format!(
            "| **mean** | | P@1 {:.1} | | xSIM error {:.1} | |\n\n",
            r.mean_p_at_1, r.mean_xsim_error
        );
        Ok(SuiteOutcome {
            json: to_json(self, &r)?,
            markdown,
            summary,
        })
    }

    fn panel(&self, json: &Value) -> Option<BarPanel> {
        Some(BarPanel {
            title: "Your test sets: P@1 (%), mean of both directions".into(),
            y_label: "P@1 %".into(),
            bars: retrieval_bars(json.get("sets")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn sets_are_found_in_a_pair_folder_or_a_folder_of_them_and_lone_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("wmt");
        write(&root.join("deu-eng/news2019.deu"), "a\n");
        write(&root.join("deu-eng/news2019.eng"), "a\n");
        write(&root.join("deu-eng/README"), "not a set\n");
        write(&root.join("fr-en/x.fr.gz"), "");
        write(&root.join("fr-en/x.en"), "");
        write(&root.join("en-pt_BR/t.pt_BR.gz"), "");
        write(&root.join("en-pt_BR/t.en.gz"), "");
        write(&root.join("en-pt_BR/t.en.info.gz"), "");
        write(&root.join("notes/y.deu"), "");
        let sets = find_sets(std::slice::from_ref(&root)).unwrap();
        let names: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["deu-eng/news2019", "en-pt_BR/t", "fr-en/x"]);
        assert_eq!(sets[2].langs, ("fr".to_owned(), "en".to_owned()));
        assert!(sets[2].files.0.ends_with("x.fr.gz"));
        assert!(sets[1].files.0.ends_with("t.en.gz") && sets[1].files.1.ends_with("t.pt_BR.gz"));
        // The pair folder itself, named directly.
        let one = find_sets(&[root.join("deu-eng")]).unwrap();
        assert_eq!(one.len(), 1);
        // A file of one side without its partner is named.
        write(&root.join("deu-eng/news2020.deu"), "b\n");
        let err = find_sets(std::slice::from_ref(&root))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("news2020.deu") && err.contains("news2020.eng"),
            "{err}"
        );
        // A folder with no pair folder, and a file, are named.
        let err = find_sets(&[root.join("notes")]).unwrap_err().to_string();
        assert!(
            err.contains("notes") && err.contains("no test set here"),
            "{err}"
        );
        let err = find_sets(&[root.join("deu-eng/README")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("README") && err.contains("not a folder"),
            "{err}"
        );
    }

    #[test]
    fn pair_folders_are_read_whatever_the_roots_name_and_ambiguities_are_named() {
        let dir = tempfile::tempdir().unwrap();
        // A root named like a pair (`wmt-dev`) holding pair folders is a folder of them.
        let root = dir.path().join("wmt-dev");
        write(&root.join("deu-eng/t.deu"), "a\n");
        write(&root.join("deu-eng/t.eng"), "a\n");
        let sets = find_sets(std::slice::from_ref(&root)).unwrap();
        assert_eq!(sets.len(), 1);
        // The same set name under two roots.
        let other = dir.path().join("wmt20");
        write(&other.join("deu-eng/t.deu"), "b\n");
        write(&other.join("deu-eng/t.eng"), "b\n");
        let err = find_sets(&[root.clone(), other.clone()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("a second test set named deu-eng/t"), "{err}");
        // A pair folder with no pair inside a root, one language written twice, and one
        // stem in plain and gzip form are each named.
        write(&other.join("fr-en/x.fra"), "c\n");
        let err = find_sets(std::slice::from_ref(&other))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fr-en") && err.contains("no <stem>.fr / <stem>.en"),
            "{err}"
        );
        let same = dir.path().join("en-en");
        write(&same.join("t.en"), "a\n");
        let err = find_sets(std::slice::from_ref(&same))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("both sides of this pair folder are en"),
            "{err}"
        );
        let twice = dir.path().join("de-en");
        write(&twice.join("t.de"), "a\n");
        write(&twice.join("t.de.gz"), "a\n");
        write(&twice.join("t.en"), "a\n");
        let err = find_sets(std::slice::from_ref(&twice))
            .unwrap_err()
            .to_string();
        assert!(err.contains("t.de is here twice"), "{err}");
    }

    #[test]
    fn langs_keep_the_sets_in_either_language_by_any_code_form() {
        let set = |a: &str, b: &str| BitextSet {
            name: format!("{a}-{b}/t"),
            langs: (a.into(), b.into()),
            files: (PathBuf::new(), PathBuf::new()),
        };
        let sets = vec![
            set("deu", "eng"),
            set("fr", "en"),
            set("rus", "eng"),
            set("en", "pt_BR"),
        ];
        let kept = select_sets(
            sets.clone(),
            Some(&["de".into(), "fra".into(), "por".into()]),
        )
        .unwrap();
        let names: Vec<&str> = kept.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["deu-eng/t", "fr-en/t", "en-pt_BR/t"]);
        // A code as the folder writes it, region and all; with one that names nothing.
        let kept = select_sets(sets.clone(), Some(&["pt_BR".into(), "jpn".into()])).unwrap();
        let names: Vec<&str> = kept.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["en-pt_BR/t"]);
        assert_eq!(select_sets(sets.clone(), None).unwrap(), sets);
        assert!(select_sets(sets, Some(&["jpn".into()])).is_err());
    }
}

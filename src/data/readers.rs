//! Parallel corpora: translation pairs with language codes, read from
//! - a Tatoeba-Challenge style folder (`<a>-<b>/…<lang>.gz`, line-aligned, optional
//!   `<lang>.labels.gz` with a fine-grained label per line, e.g. `cmn_Hans`), as in
//!   `../shared/data/tatoeba-challenge-eng-train`;
//! - two line-aligned files (Moses layout: `corpus.de`, `corpus.en`);
//! - a TSV file with `src<TAB>tgt` per line;
//! - a folder of Moses pairs (`<a>-<b>/<stem>.<a>.gz` beside `<stem>.<b>.gz`, as an OPUS or
//!   WMT download unpacks), as in `../shared/data/parallel-news`;
//! - an N-way aligned folder (`<lang>.txt.gz` per language, line i the same segment in
//!   every file, an empty line where a language lacks it), as in
//!   `../shared/data/parallel-bible`: pairs with the pivot language (English), and
//!   optionally non-pivot pairs drawn from the same rows ([`super::nway`]).
//!
//! Language codes given in a recipe or found in file names are normalised to lase's one
//! scheme ([`crate::lang`]: ISO 639-3 with an optional script; `de` becomes `deu`).
//! Each source may carry a `weight`: batches then draw a source by weight and a language
//! within it by temperature ([`super::sampler`]).
//!
//! Files may be plain or gzip. Misaligned files (different line counts) and bad lines
//! (invalid UTF-8, a TSV line without exactly two fields) are errors naming the file and
//! line. Pairs with an empty side are skipped and counted.

use std::path::{Path, PathBuf};

use super::corpus::{CorpusSource, ParallelCorpus};
use super::files::{file_name, names, sorted_entries};
use crate::error::{LaseError, Result};
use crate::io::text::{LineReader, read_lines};

impl ParallelCorpus {
    /// Reads every source into one corpus.
    pub fn read(sources: &[CorpusSource]) -> Result<Self> {
        let mut corpus = Self::default();
        for (index, source) in sources.iter().enumerate() {
            corpus.current_source = u16::try_from(index).map_err(|_| {
                LaseError::InvalidArgument("a recipe may list at most 65,535 sources".into())
            })?;
            if let Some(w) = source.weight()
                && !(w.is_finite() && w > 0.0)
            {
                return Err(LaseError::bad_file(
                    source.path(),
                    format!("source weight {w} must be a positive number"),
                ));
            }
            let before = corpus.pairs.len();
            match source {
                CorpusSource::TatoebaChallenge {
                    path, languages, ..
                } => corpus.add_tatoeba_challenge(path, &normalize_all(languages)?)?,
                CorpusSource::Moses {
                    src,
                    tgt,
                    src_lang,
                    tgt_lang,
                    ..
                } => corpus.add_aligned_files(
                    src,
                    tgt,
                    &crate::lang::normalize(src_lang)?,
                    &crate::lang::normalize(tgt_lang)?,
                )?,
                CorpusSource::Tsv {
                    path,
                    src_lang,
                    tgt_lang,
                    ..
                } => corpus.add_tsv(
                    path,
                    &crate::lang::normalize(src_lang)?,
                    &crate::lang::normalize(tgt_lang)?,
                )?,
                CorpusSource::MosesFolder {
                    path,
                    pivot,
                    languages,
                    ..
                } => corpus.add_moses_folder(path, pivot, &normalize_all(languages)?)?,
                CorpusSource::NWay {
                    path,
                    pivot,
                    languages,
                    non_pivot_pairs,
                    ..
                } => super::nway::add_n_way(
                    &mut corpus,
                    path,
                    pivot,
                    &normalize_all(languages)?,
                    *non_pivot_pairs,
                )?,
            }
            tracing::info!(
                "{}: {} pairs",
                source.path().display(),
                corpus.pairs.len() - before
            );
        }
        if corpus.pairs.is_empty() {
            return Err(LaseError::InvalidArgument(
                "the training sources hold no translation pair".into(),
            ));
        }
        Ok(corpus)
    }

    /// A folder of `<a>-<b>` sub-folders of Moses file pairs (see
    /// [`CorpusSource::MosesFolder`]).
    pub fn add_moses_folder(&mut self, dir: &Path, pivot: &str, keep: &[String]) -> Result<()> {
        let (pivot_code, _) = crate::lang::LanguageCode::parse(pivot)?;
        let mut folders = sorted_entries(dir)?;
        folders.retain(|p| p.is_dir());
        let mut found = 0usize;
        for folder in folders {
            let name = file_name(&folder);
            let Some((a, b)) = name.split_once('-') else {
                continue;
            };
            let (Ok((ca, _)), Ok((cb, _))) = (
                crate::lang::LanguageCode::parse(a),
                crate::lang::LanguageCode::parse(b),
            ) else {
                continue;
            };
            let (other, other_code, pivot_name) = if pivot_code.names(&ca) {
                (b, cb, a)
            } else if pivot_code.names(&cb) {
                (a, ca, b)
            } else {
                return Err(LaseError::bad_file(
                    &folder,
                    format!("neither language of this pair folder is the pivot {pivot:?}"),
                ));
            };
            if !keep.is_empty() && !keep.iter().any(|k| names(k, &other_code)) {
                continue;
            }
            let files = sorted_entries(&folder)?;
            let suffix = |f: &Path, lang: &str| -> Option<String> {
                let n = file_name(f);
                let n = n.strip_suffix(".gz").unwrap_or(&n);
                n.strip_suffix(&format!(".{lang}")).map(str::to_owned)
            };
            let mut stems = 0usize;
            for f in &files {
                let Some(stem) = suffix(f, other) else {
                    continue;
                };
                let partner = files
                    .iter()
                    .find(|g| suffix(g, pivot_name).as_deref() == Some(stem.as_str()))
                    .ok_or_else(|| {
                        LaseError::bad_file(
                            f,
                            format!("no {stem}.{pivot_name}[.gz] beside this file to pair it with"),
                        )
                    })?;
                self.add_aligned_files(
                    f,
                    partner,
                    &other_code.to_string(),
                    &pivot_code.to_string(),
                )?;
                stems += 1;
            }
            if stems == 0 {
                return Err(LaseError::bad_file(
                    &folder,
                    format!("no <stem>.{other}[.gz] file in this pair folder"),
                ));
            }
            found += 1;
        }
        if found == 0 {
            return Err(LaseError::bad_file(
                dir,
                "no <a>-<b> pair folder (with a wanted language) in this Moses folder",
            ));
        }
        Ok(())
    }

    /// Two line-aligned files; an error names the shorter file and the first line the
    /// other file has and it lacks.
    pub fn add_aligned_files(
        &mut self,
        src: &Path,
        tgt: &Path,
        src_lang: &str,
        tgt_lang: &str,
    ) -> Result<()> {
        let s = self.language_id(src_lang);
        let t = self.language_id(tgt_lang);
        let mut a = LineReader::open(src)?;
        let mut b = LineReader::open(tgt)?;
        loop {
            match (a.next(), b.next()) {
                (None, None) => return Ok(()),
                (Some(x), Some(y)) => self.push(x?, y?, s, t, None),
                // A line that cannot be read (invalid UTF-8, a broken gzip stream) is
                // reported as such: its line number is where the reader stopped, and a
                // read error counts no line.
                (Some(x), None) => {
                    x?;
                    return Err(misaligned(tgt, src, a.line_number()));
                }
                (None, Some(y)) => {
                    y?;
                    return Err(misaligned(src, tgt, b.line_number()));
                }
            }
        }
    }

    /// `src<TAB>tgt` per line.
    pub fn add_tsv(&mut self, path: &Path, src_lang: &str, tgt_lang: &str) -> Result<()> {
        let s = self.language_id(src_lang);
        let t = self.language_id(tgt_lang);
        let mut reader = LineReader::open(path)?;
        while let Some(line) = reader.next() {
            let line = line?;
            if line.is_empty() {
                continue;
            }
            let mut fields = line.split('\t');
            match (fields.next(), fields.next(), fields.next()) {
                (Some(x), Some(y), None) => self.push(x.to_owned(), y.to_owned(), s, t, None),
                _ => {
                    return Err(LaseError::bad_line(
                        path,
                        reader.line_number(),
                        format!(
                            "expected 2 tab-separated fields (src, tgt), found {}",
                            line.split('\t').count()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A Tatoeba-Challenge folder: every `<a>-<b>` sub-folder with `*.<a>.gz` and
    /// `*.<b>.gz` (or `.eng1`/`.eng2` for English paraphrases). English goes on the
    /// target side. When a `.labels.gz` file exists its line count must match.
    pub fn add_tatoeba_challenge(&mut self, dir: &Path, keep: &[String]) -> Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| LaseError::io(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        entries.sort();
        if entries.is_empty() {
            return Err(LaseError::bad_file(
                dir,
                "no <a>-<b> pair folders in this Tatoeba-Challenge folder",
            ));
        }
        let mut without_english: Vec<String> = Vec::new();
        for pair_dir in entries {
            let name = pair_dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            let Some((a, b)) = name.split_once('-') else {
                continue;
            };
            if a != "eng" && b != "eng" {
                // The full Tatoeba-Challenge release also has pairs without English
                // (deu-fra): this reader reads the pairs with English; one summary line
                // below, not one per folder (there are thousands).
                without_english.push(name);
                continue;
            }
            let (other, english) = if a == "eng" { (b, a) } else { (a, b) };
            if !keep.is_empty()
                && !keep.iter().any(|k| {
                    k == other
                        || crate::lang::LanguageCode::parse(other).is_ok_and(|(o, _)| names(k, &o))
                })
            {
                continue;
            }
            let files: Vec<PathBuf> = std::fs::read_dir(&pair_dir)
                .map_err(|e| LaseError::io(&pair_dir, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            let find = |suffix: &str| {
                files
                    .iter()
                    .find(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.ends_with(suffix))
                    })
                    .cloned()
            };
            let (src, tgt, src_lang) = if other == "eng" {
                (find(".eng1.gz"), find(".eng2.gz"), "eng")
            } else {
                (find(&format!(".{other}.gz")), find(".eng.gz"), other)
            };
            let (Some(src), Some(tgt)) = (src, tgt) else {
                return Err(LaseError::bad_file(
                    &pair_dir,
                    format!("expected *.{other}.gz and *.{english}.gz in this pair folder"),
                ));
            };
            let before = self.pairs.len() + self.skipped_empty;
            self.add_aligned_files(&src, &tgt, src_lang, english)?;
            if let Some(labels) = find(&format!(".{src_lang}.labels.gz"))
                .or_else(|| find(&format!(".{other}1.labels.gz")))
            {
                let n = read_lines(&labels)?.len();
                let pairs = self.pairs.len() + self.skipped_empty - before;
                if n != pairs {
                    return Err(misaligned(&labels, &src, n.min(pairs) + 1));
                }
            }
        }
        if let Some(first) = without_english.first() {
            tracing::warn!(
                "{}: skipped {} pair folders without English (e.g. {first}): this reader reads <xx>-eng / eng-<xx> folders",
                dir.display(),
                without_english.len()
            );
        }
        Ok(())
    }
}

/// Normalises a recipe's language filter.
fn normalize_all(codes: &[String]) -> Result<Vec<String>> {
    codes.iter().map(|c| crate::lang::normalize(c)).collect()
}

fn misaligned(shorter: &Path, longer: &Path, line: usize) -> LaseError {
    LaseError::bad_line(
        shorter,
        line,
        format!(
            "file ends here but {} has a line {line}: the files are not line-aligned",
            longer.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(path: &Path, text: &str) {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        std::fs::write(path, e.finish().unwrap()).unwrap();
    }

    #[test]
    fn reads_a_tatoeba_challenge_folder_with_labels() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("deu-eng");
        std::fs::create_dir(&p).unwrap();
        gz(&p.join("t.deu.gz"), "Hallo\nWelt\n\n");
        gz(&p.join("t.eng.gz"), "Hello\nWorld\nempty\n");
        gz(&p.join("t.deu.labels.gz"), "deu\ndeu\ndeu\n");
        let z = dir.path().join("eng-zho");
        std::fs::create_dir(&z).unwrap();
        gz(&z.join("t.zho.gz"), "你好\n");
        gz(&z.join("t.eng.gz"), "Hi\n");
        // A pair without English (the full release has them) is skipped, not an error.
        let x = dir.path().join("deu-fra");
        std::fs::create_dir(&x).unwrap();
        gz(&x.join("t.deu.gz"), "Hallo\n");
        gz(&x.join("t.fra.gz"), "Bonjour\n");
        let c = ParallelCorpus::read(&[CorpusSource::TatoebaChallenge {
            path: dir.path().into(),
            languages: vec![],
            weight: None,
        }])
        .unwrap();
        assert_eq!(c.pairs.len(), 3);
        assert_eq!(c.skipped_empty, 1);
        assert_eq!(c.languages, vec!["deu", "eng", "zho"]);
        assert_eq!(c.pairs[2].src, "你好");
        assert_eq!(c.languages[c.pairs[2].tgt_lang as usize], "eng");
        let only = ParallelCorpus::read(&[CorpusSource::TatoebaChallenge {
            path: dir.path().into(),
            languages: vec!["zho".into()],
            weight: None,
        }])
        .unwrap();
        assert_eq!(only.pairs.len(), 1);
    }

    #[test]
    fn misaligned_files_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("c.de");
        let b = dir.path().join("c.en");
        std::fs::write(&a, "eins\nzwei\ndrei\n").unwrap();
        std::fs::write(&b, "one\ntwo\n").unwrap();
        let err = ParallelCorpus::read(&[CorpusSource::Moses {
            src: a,
            tgt: b,
            src_lang: "deu".into(),
            tgt_lang: "eng".into(),
            weight: None,
        }])
        .unwrap_err()
        .to_string();
        assert!(err.contains("c.en:3:"), "{err}");
        assert!(err.contains("not line-aligned"), "{err}");
    }

    #[test]
    fn bad_tsv_line_and_bad_utf8_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("p.tsv");
        std::fs::write(&t, "a\tb\nonly one field\n").unwrap();
        let err = ParallelCorpus::read(&[CorpusSource::Tsv {
            path: t.clone(),
            src_lang: "deu".into(),
            tgt_lang: "eng".into(),
            weight: None,
        }])
        .unwrap_err()
        .to_string();
        assert!(err.contains("p.tsv:2:"), "{err}");
        std::fs::write(&t, b"a\tb\nc\t\xff\n").unwrap();
        let err = ParallelCorpus::read(&[CorpusSource::Tsv {
            path: t,
            src_lang: "deu".into(),
            tgt_lang: "eng".into(),
            weight: None,
        }])
        .unwrap_err()
        .to_string();
        assert!(err.contains("p.tsv:2:") && err.contains("UTF-8"), "{err}");
    }

    #[test]
    fn a_moses_folder_pairs_every_stem_and_names_a_lone_file() {
        let dir = tempfile::tempdir().unwrap();
        let de = dir.path().join("deu-eng");
        std::fs::create_dir(&de).unwrap();
        gz(&de.join("newstest2008.deu.gz"), "Hallo\nWelt\n");
        gz(&de.join("newstest2008.eng.gz"), "Hello\nWorld\n");
        std::fs::write(de.join("newstest2010.deu"), "Haus\n").unwrap();
        std::fs::write(de.join("newstest2010.eng"), "House\n").unwrap();
        let zh = dir.path().join("eng-zho");
        std::fs::create_dir(&zh).unwrap();
        gz(&zh.join("a.zho.gz"), "你好\n");
        gz(&zh.join("a.eng.gz"), "Hi\n");
        let source = |languages: Vec<String>| CorpusSource::MosesFolder {
            path: dir.path().into(),
            pivot: "en".into(),
            languages,
            weight: Some(2.0),
        };
        let c = ParallelCorpus::read(&[source(vec![])]).unwrap();
        let got: Vec<(&str, &str, &str)> = c
            .pairs
            .iter()
            .map(|p| {
                (
                    p.src.as_str(),
                    p.tgt.as_str(),
                    c.languages[p.src_lang as usize].as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("Hallo", "Hello", "deu"),
                ("Welt", "World", "deu"),
                ("Haus", "House", "deu"),
                ("你好", "Hi", "zho")
            ]
        );
        assert!(
            c.pairs
                .iter()
                .all(|p| c.languages[p.tgt_lang as usize] == "eng")
        );
        // A 2-letter filter keeps one folder.
        let only = ParallelCorpus::read(&[source(vec!["zh".into()])]).unwrap();
        assert_eq!(only.pairs.len(), 1);
        // A file without its partner is named.
        std::fs::write(de.join("newstest2011.deu"), "Baum\n").unwrap();
        let err = ParallelCorpus::read(&[source(vec![])])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("newstest2011.deu") && err.contains("newstest2011.eng"),
            "{err}"
        );
        // A non-positive weight is refused with the source's path.
        std::fs::remove_file(de.join("newstest2011.deu")).unwrap();
        let err = ParallelCorpus::read(&[CorpusSource::MosesFolder {
            path: dir.path().into(),
            pivot: "eng".into(),
            languages: vec![],
            weight: Some(0.0),
        }])
        .unwrap_err()
        .to_string();
        assert!(err.contains("weight 0"), "{err}");
    }
}

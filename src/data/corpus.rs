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

use serde::{Deserialize, Serialize};

use crate::error::{LaseError, Result};
use crate::io::text::{LineReader, read_lines};

/// One translation pair; languages index [`ParallelCorpus::languages`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranslationPair {
    pub src: String,
    pub tgt: String,
    pub src_lang: u16,
    pub tgt_lang: u16,
    /// Index of the recipe source the pair was read from.
    pub source: u16,
    /// Row of an N-way aligned source: pairs of one row translate each other, so they
    /// never share a batch (false negatives) nor straddle the dev split.
    pub row: Option<u32>,
}

/// Where a corpus comes from, as written in a training config. Every format takes an
/// optional `weight` (see [`CorpusSource::weight`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "format", rename_all = "kebab-case", deny_unknown_fields)]
pub enum CorpusSource {
    /// A folder of `<a>-<b>` sub-folders (Tatoeba-Challenge layout). `languages` keeps
    /// only pairs whose non-English side is listed (all when empty).
    TatoebaChallenge {
        path: PathBuf,
        #[serde(default)]
        languages: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
    },
    /// Two line-aligned files.
    Moses {
        src: PathBuf,
        tgt: PathBuf,
        src_lang: String,
        tgt_lang: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
    },
    /// One file, `src<TAB>tgt` per line.
    Tsv {
        path: PathBuf,
        src_lang: String,
        tgt_lang: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
    },
    /// A folder of `<a>-<b>` sub-folders, each holding Moses file pairs
    /// `<stem>.<a>[.gz]` / `<stem>.<b>[.gz]` (several stems per folder: one per test set
    /// or corpus). The `pivot` language goes on the target side. `languages` keeps only
    /// folders whose other language is listed (all when empty).
    MosesFolder {
        path: PathBuf,
        #[serde(default = "default_pivot")]
        pivot: String,
        #[serde(default)]
        languages: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
    },
    /// An N-way aligned folder: `<lang>.txt[.gz]` per language, every file with the same
    /// number of lines, an empty line where a language lacks that row. Gives a pair
    /// (language, `pivot`) per row with both sides present, the pivot on the target side,
    /// plus `non_pivot_pairs` seeded random pairs per row between other languages present
    /// in it (0 = none).
    NWay {
        path: PathBuf,
        #[serde(default = "default_pivot")]
        pivot: String,
        #[serde(default)]
        languages: Vec<String>,
        #[serde(default)]
        non_pivot_pairs: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
    },
}

fn default_pivot() -> String {
    "eng".into()
}

impl CorpusSource {
    /// The source's sampling weight, when the recipe gives one. When any source of a
    /// recipe has a weight, a batch slot draws a source with probability proportional to
    /// its weight (1 when unset) and then a language of that source by temperature;
    /// without weights, languages of all sources are pooled (the sampler's default).
    pub fn weight(&self) -> Option<f64> {
        match self {
            Self::TatoebaChallenge { weight, .. }
            | Self::Moses { weight, .. }
            | Self::Tsv { weight, .. }
            | Self::MosesFolder { weight, .. }
            | Self::NWay { weight, .. } => *weight,
        }
    }

    /// Non-pivot pairs per row this source draws (N-way folders only).
    pub fn non_pivot_pairs(&self) -> usize {
        match self {
            Self::NWay {
                non_pivot_pairs, ..
            } => *non_pivot_pairs,
            _ => 0,
        }
    }

    /// The folder or file the source reads (for messages).
    pub fn path(&self) -> &Path {
        match self {
            Self::TatoebaChallenge { path, .. }
            | Self::Tsv { path, .. }
            | Self::MosesFolder { path, .. }
            | Self::NWay { path, .. } => path,
            Self::Moses { src, .. } => src,
        }
    }
}

/// Translation pairs and the language codes they use.
#[derive(Clone, Debug, Default)]
pub struct ParallelCorpus {
    pub languages: Vec<String>,
    pub pairs: Vec<TranslationPair>,
    /// Pairs dropped because one side was empty.
    pub skipped_empty: usize,
    /// The source index that [`Self::push`] records (set while reading each source).
    pub(crate) current_source: u16,
}

/// ISO 639-3 individual languages grouped under the macro-language code that some data
/// sets use instead (Tatoeba-Challenge `zho` holds `cmn`/`yue`/`wuu` lines, LASER's
/// Tatoeba uses `cmn`, `lvs`, `pes`, `swh`, `zsm`, ...). Unknown codes map to themselves.
pub fn macro_language(code: &str) -> &str {
    let base = code.split(['_', '-']).next().unwrap_or(code);
    match base {
        "cmn" | "yue" | "wuu" | "gan" | "hak" | "nan" | "lzh" => "zho",
        "lvs" | "ltg" => "lav",
        "pes" | "prs" => "fas",
        "swh" | "swc" => "swa",
        "zsm" | "zlm" | "max" => "msa",
        "nob" | "nno" => "nor",
        "arb" | "arz" | "arq" | "ary" | "apc" | "acm" => "ara",
        "ekk" => "est",
        "bos" | "hrv" | "srp" | "hbs" => "hbs",
        "kmr" | "ckb" => "kur",
        "uzn" => "uzb",
        "azj" => "aze",
        "khk" => "mon",
        "ydd" => "yid",
        "fil" => "tgl",
        _ => base,
    }
}

impl ParallelCorpus {
    /// Index of a language code, adding it when new. Codes are stored as given; readers
    /// normalise them first ([`crate::lang::normalize`]).
    pub fn language_id(&mut self, code: &str) -> u16 {
        if let Some(i) = self.languages.iter().position(|l| l == code) {
            return i as u16;
        }
        self.languages.push(code.to_owned());
        (self.languages.len() - 1) as u16
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

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

    /// Adds a pair of the source being read (`row`: its N-way row, if any); pairs with
    /// an empty side are counted in [`Self::skipped_empty`] instead.
    pub fn push(
        &mut self,
        src: String,
        tgt: String,
        src_lang: u16,
        tgt_lang: u16,
        row: Option<u32>,
    ) {
        if src.trim().is_empty() || tgt.trim().is_empty() {
            self.skipped_empty += 1;
            return;
        }
        self.pairs.push(TranslationPair {
            src,
            tgt,
            src_lang,
            tgt_lang,
            source: self.current_source,
            row,
        });
    }

    /// Pair indices grouped by (source, source-side language), with each group's source:
    /// the groups a weighted mix of sources samples from.
    pub fn pairs_by_source_and_language(&self) -> Vec<(u16, Vec<u32>)> {
        let mut groups: std::collections::BTreeMap<(u16, u16), Vec<u32>> = Default::default();
        for (i, p) in self.pairs.iter().enumerate() {
            groups
                .entry((p.source, p.src_lang))
                .or_default()
                .push(i as u32);
        }
        groups.into_iter().map(|((s, _), g)| (s, g)).collect()
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
        for pair_dir in entries {
            let name = pair_dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            let Some((a, b)) = name.split_once('-') else {
                continue;
            };
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
        Ok(())
    }

    /// Pair indices grouped by source-side language (the non-English side of
    /// Tatoeba-Challenge folders), indexed like [`Self::languages`].
    pub fn pairs_by_language(&self) -> Vec<Vec<u32>> {
        let mut groups = vec![Vec::new(); self.languages.len()];
        for (i, p) in self.pairs.iter().enumerate() {
            groups[p.src_lang as usize].push(i as u32);
        }
        groups
    }

    /// Every sentence of both sides with its language code.
    pub fn sentences(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().flat_map(move |p| {
            [
                (p.src.as_str(), self.languages[p.src_lang as usize].as_str()),
                (p.tgt.as_str(), self.languages[p.tgt_lang as usize].as_str()),
            ]
        })
    }
}

/// Normalises a recipe's language filter.
fn normalize_all(codes: &[String]) -> Result<Vec<String>> {
    codes.iter().map(|c| crate::lang::normalize(c)).collect()
}

/// Whether the (normalised) filter code `wanted` names the data's code `code`.
pub(crate) fn names(wanted: &str, code: &crate::lang::LanguageCode) -> bool {
    crate::lang::LanguageCode::parse(wanted).is_ok_and(|(w, _)| w.names(code))
}

pub(crate) fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| LaseError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    Ok(entries)
}

pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned()
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

    #[test]
    fn macro_languages_group_individual_codes() {
        assert_eq!(macro_language("cmn_Hans"), "zho");
        assert_eq!(macro_language("lvs"), "lav");
        assert_eq!(macro_language("deu"), "deu");
        assert_eq!(macro_language("fil"), "tgl");
    }
}

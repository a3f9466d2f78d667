//! Train/test separation. Every sentence `lase eval` scores on (Tatoeba, FLORES-200
//! devtest, STS-B and KorSTS test splits, SIB-200 test splits), read by the same readers
//! the suites use, and a check that a training corpus contains none of them. Sentences
//! are compared after trimming surrounding whitespace (the readers' own normalisation);
//! a training sentence equal to a test sentence in any language is a leak.

use std::collections::HashMap;
use std::path::Path;

use crate::data::{ParallelCorpus, TranslationPair};
use crate::error::Result;

/// Test sentences keyed by text; the value names the first benchmark file holding it.
#[derive(Debug, Default)]
pub struct BenchmarkSentences {
    by_text: HashMap<String, String>,
}

impl BenchmarkSentences {
    pub fn len(&self) -> usize {
        self.by_text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_text.is_empty()
    }

    /// Adds `sentences` from the benchmark file `origin`.
    pub fn add<S: AsRef<str>>(&mut self, origin: &str, sentences: &[S]) {
        for s in sentences {
            let text = s.as_ref().trim();
            if !text.is_empty() && !self.by_text.contains_key(text) {
                self.by_text.insert(text.to_owned(), origin.to_owned());
            }
        }
    }

    /// The benchmark file holding `sentence`, if any.
    pub fn origin(&self, sentence: &str) -> Option<&str> {
        self.by_text.get(sentence.trim()).map(String::as_str)
    }

    /// Reads every test set of `data_dir` that `lase eval` uses and is present there
    /// (tatoeba-laser/, flores200-devtest/devtest/, stsb-multi-mt/data/, korsts/, sib200/).
    /// A file instead of a folder is a list of test sentences, one per line (plain or
    /// gzip), as `lase check-leakage --write-found` writes: a machine without the
    /// benchmarks (a GPU box fed by scripts/gpu_train.sh) drops the same pairs with it.
    ///
    /// A path that does not exist, or a folder holding none of those test sets, is an
    /// error: an exclusion that silently excludes nothing would train on test sentences.
    pub fn read(data_dir: &Path) -> Result<Self> {
        let mut out = Self::default();
        if let Err(e) = std::fs::metadata(data_dir) {
            return Err(crate::error::LaseError::io(data_dir, e));
        }
        if data_dir.is_file() {
            let lines = crate::io::text::read_lines(data_dir)?;
            out.add(&format!("{}", data_dir.display()), &lines);
            return Ok(out);
        }
        let data = super::benchmark_data::BenchmarkData::new(data_dir);
        let tatoeba = data.tatoeba();
        if tatoeba.is_dir() {
            for set in super::tatoeba::load(&tatoeba, None)? {
                out.add(&format!("tatoeba-laser {}", set.lang), &set.sentences);
                out.add(&format!("tatoeba-laser {} (eng)", set.lang), &set.english);
            }
        }
        let flores = data.flores_devtest();
        if flores.is_dir() {
            for lang in super::flores::languages(&flores)? {
                let lines = crate::io::text::read_lines(flores.join(format!("{lang}.devtest")))?;
                out.add(&format!("flores200 devtest {lang}"), &lines);
            }
        }
        let stsb = data.stsb();
        if stsb.is_dir() {
            for lang in super::sts::STSB_LANGUAGES {
                let set = super::sts::load_stsb(&stsb, lang, "test")?;
                out.add(&format!("stsb-multi-mt test {lang}"), &set.sentence1);
                out.add(&format!("stsb-multi-mt test {lang}"), &set.sentence2);
            }
        }
        let korsts = data.korsts();
        if korsts.is_dir() {
            let set = super::sts::load_korsts(&korsts, "test")?;
            out.add("korsts test", &set.sentence1);
            out.add("korsts test", &set.sentence2);
        }
        let sib = data.sib200();
        if sib.join("annotated").is_dir() {
            let labels = super::sib::label_names(&sib)?;
            let mut langs: Vec<String> = std::fs::read_dir(sib.join("annotated"))
                .map_err(|e| crate::error::LaseError::io(sib.join("annotated"), e))?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            langs.sort();
            for lang in langs {
                let split = super::sib::load_split(&sib, &lang, "test", &labels)?;
                out.add(&format!("sib200 test {lang}"), &split.texts);
            }
        }
        if out.is_empty() {
            return Err(crate::error::LaseError::bad_file(
                data_dir,
                "holds none of the test sets lase evaluates on (tatoeba-laser/, flores200-devtest/devtest/, stsb-multi-mt/data/, korsts/, sib200/annotated/): name the folder that does, or a test-sentence list",
            ));
        }
        Ok(out)
    }
}

/// A training sentence that is also a test sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leak {
    /// Index of the training pair.
    pub pair: usize,
    /// The training pair's language of the leaked side.
    pub language: String,
    pub sentence: String,
    /// The benchmark file it also appears in.
    pub benchmark: String,
}

/// The texts a training pair trains on, with their language: both sides, and a non-pivot
/// pair's pivot segment (the teacher's target), whose code the pair does not record (None).
/// [`find_leaks`] and [`drop_leaks`] both read it, so they check the same texts.
fn trained_texts(p: &TranslationPair) -> impl Iterator<Item = (&String, Option<u16>)> {
    [(&p.src, Some(p.src_lang)), (&p.tgt, Some(p.tgt_lang))]
        .into_iter()
        .chain(p.pivot.as_ref().map(|t| (t, None)))
}

/// Every side of every training pair that appears in `benchmarks` (and a non-pivot
/// pair's pivot segment, reported as language "pivot").
pub fn find_leaks(corpus: &ParallelCorpus, benchmarks: &BenchmarkSentences) -> Vec<Leak> {
    let mut leaks = Vec::new();
    for (i, p) in corpus.pairs.iter().enumerate() {
        for (text, lang) in trained_texts(p) {
            if let Some(origin) = benchmarks.origin(text) {
                leaks.push(Leak {
                    pair: i,
                    language: lang.map_or_else(
                        || "pivot".to_owned(),
                        |l| corpus.languages[l as usize].clone(),
                    ),
                    sentence: text.clone(),
                    benchmark: origin.to_owned(),
                });
            }
        }
    }
    leaks
}

/// Removes every training pair with a side (or, for a non-pivot pair, its pivot segment)
/// in `benchmarks`; returns how many.
pub fn drop_leaks(corpus: &mut ParallelCorpus, benchmarks: &BenchmarkSentences) -> usize {
    let before = corpus.pairs.len();
    corpus
        .pairs
        .retain(|p| trained_texts(p).all(|(t, _)| benchmarks.origin(t).is_none()));
    before - corpus.pairs.len()
}

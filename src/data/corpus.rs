//! Parallel corpora in memory: translation pairs with language codes ([`ParallelCorpus`])
//! and the sources a recipe names ([`CorpusSource`]); reading them is [`super::readers`]
//! (and [`super::nway`] for N-way folders).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
    /// For a pair between two non-pivot languages of an N-way row: that row's pivot
    /// segment, which a pivot-language teacher embeds as both sides' target (None for a
    /// pair with the pivot on its target side).
    pub pivot: Option<String>,
}

impl TranslationPair {
    /// Whether the pair joins two non-pivot languages (see [`Self::pivot`]).
    pub fn is_non_pivot(&self) -> bool {
        self.pivot.is_some()
    }

    /// The text a pivot-language teacher embeds for this pair's target: the row's pivot
    /// segment for a non-pivot pair, else the target side.
    pub fn pivot_text(&self) -> &str {
        self.pivot.as_deref().unwrap_or(&self.tgt)
    }
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

    /// The language codes the recipe gives this source, each with its key (for
    /// checking them all before any source is read).
    pub fn language_codes(&self) -> Vec<(&'static str, &str)> {
        match self {
            Self::TatoebaChallenge { languages, .. } => languages
                .iter()
                .map(|l| ("languages", l.as_str()))
                .collect(),
            Self::Moses {
                src_lang, tgt_lang, ..
            }
            | Self::Tsv {
                src_lang, tgt_lang, ..
            } => vec![
                ("src_lang", src_lang.as_str()),
                ("tgt_lang", tgt_lang.as_str()),
            ],
            Self::MosesFolder {
                pivot, languages, ..
            }
            | Self::NWay {
                pivot, languages, ..
            } => std::iter::once(("pivot", pivot.as_str()))
                .chain(languages.iter().map(|l| ("languages", l.as_str())))
                .collect(),
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
        self.add((src, src_lang), (tgt, tgt_lang), row, None);
    }

    /// Adds a pair between two non-pivot languages of N-way row `row`, with that row's
    /// `pivot` segment ([`TranslationPair::pivot`]); empty sides are skipped as in
    /// [`Self::push`].
    pub fn push_non_pivot(
        &mut self,
        (src, src_lang): (String, u16),
        (tgt, tgt_lang): (String, u16),
        pivot: String,
        row: u32,
    ) {
        if pivot.trim().is_empty() {
            self.skipped_empty += 1;
            return;
        }
        self.add((src, src_lang), (tgt, tgt_lang), Some(row), Some(pivot));
    }

    /// [`Self::push`] and [`Self::push_non_pivot`]'s common part: a pair of the source
    /// being read, or one more in [`Self::skipped_empty`] when a side is empty.
    fn add(
        &mut self,
        (src, src_lang): (String, u16),
        (tgt, tgt_lang): (String, u16),
        row: Option<u32>,
        pivot: Option<String>,
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
            pivot,
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

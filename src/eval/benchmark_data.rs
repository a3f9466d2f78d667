//! Where each benchmark lives under the data folder (`lase eval --data-dir`, the shipped
//! `../shared/data/`), written once: the suites, the leakage check and the pool's
//! distractors all read their paths from here.

use std::path::{Path, PathBuf};

/// Tatoeba as LASER ships it: `tatoeba.{xxx}-eng.{xxx}` and `tatoeba.{xxx}-eng.eng`.
pub const TATOEBA: &str = "tatoeba-laser";
/// FLORES-200 devtest: one `{lang_Script}.devtest` file per language, line-aligned.
pub const FLORES_DEVTEST: &str = "flores200-devtest/devtest";
/// STS-B machine-translated into 10 languages plus English: `stsb-{lang}-{split}.csv`.
pub const STSB_MULTI_MT: &str = "stsb-multi-mt/data";
/// KorSTS: `sts-{split}.tsv`.
pub const KORSTS: &str = "korsts";
/// SIB-200: `labels.txt` and `annotated/{lang_Script}/{split}.tsv.gz`.
pub const SIB200: &str = "sib200";

/// English training text (Tatoeba Challenge train splits, `*/*.eng*.gz`): the large-pool
/// suite's distractors.
pub const TATOEBA_CHALLENGE_ENG_TRAIN: &str = "tatoeba-challenge-eng-train";

/// The benchmark folders below one data folder.
#[derive(Clone, Copy, Debug)]
pub struct BenchmarkData<'a> {
    root: &'a Path,
}

impl<'a> BenchmarkData<'a> {
    pub fn new(root: &'a Path) -> Self {
        Self { root }
    }

    pub fn root(&self) -> &'a Path {
        self.root
    }

    pub fn tatoeba(&self) -> PathBuf {
        self.root.join(TATOEBA)
    }

    pub fn flores_devtest(&self) -> PathBuf {
        self.root.join(FLORES_DEVTEST)
    }

    pub fn stsb(&self) -> PathBuf {
        self.root.join(STSB_MULTI_MT)
    }

    pub fn korsts(&self) -> PathBuf {
        self.root.join(KORSTS)
    }

    pub fn sib200(&self) -> PathBuf {
        self.root.join(SIB200)
    }

    pub fn english_training_text(&self) -> PathBuf {
        self.root.join(TATOEBA_CHALLENGE_ENG_TRAIN)
    }
}

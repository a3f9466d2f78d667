//! The dev pairs a run scores itself on while training (P@1 both directions, per
//! language), which picks `best-model/`.

use std::collections::BTreeMap;

use crate::data::ParallelCorpus;
use crate::error::Result;
use crate::eval::bitext_retrieval::bitext_retrieval;
use crate::eval::embed_unit_vectors;
use crate::inference::EncodeOptions;
use crate::mine::MatrixView;
use crate::model::SentenceEncoder;

/// Dev pairs grouped by language, for P@1 during training.
pub struct DevSet {
    groups: Vec<(Vec<String>, Vec<String>)>,
}

impl DevSet {
    pub fn new(dev: &ParallelCorpus, max_pairs: usize) -> Self {
        let mut by_lang: BTreeMap<u16, (Vec<String>, Vec<String>)> = BTreeMap::new();
        let limit = if max_pairs == 0 {
            usize::MAX
        } else {
            max_pairs
        };
        for p in dev.pairs.iter().take(limit) {
            let e = by_lang.entry(p.src_lang).or_default();
            e.0.push(p.src.clone());
            e.1.push(p.tgt.clone());
        }
        Self {
            groups: by_lang.into_values().filter(|g| g.0.len() >= 2).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Mean over languages of the two directions' mean P@1, in percent.
    pub fn p_at_1(&self, encoder: &SentenceEncoder) -> Result<f64> {
        let options = EncodeOptions::for_device(encoder.device());
        let dim = encoder.dim();
        let mut total = 0.0;
        for (src, tgt) in &self.groups {
            let x = embed_unit_vectors(encoder, src, &options, "dev", false)?;
            let y = embed_unit_vectors(encoder, tgt, &options, "dev", false)?;
            let scores = bitext_retrieval(
                &MatrixView::new(&x, src.len(), dim)?,
                &MatrixView::new(&y, tgt.len(), dim)?,
                Some((src, tgt)),
            )?;
            total += scores.p_at_1();
        }
        Ok(100.0 * total / self.groups.len() as f64)
    }
}

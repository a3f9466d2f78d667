//! How much of a reference model's similarity structure a model keeps on the dev split's
//! pivot sentences (never a test set): Spearman's rho between the two models' cosine
//! similarities over every pair of the split's distinct pivot-side sentences.
//!
//! The retrieval scores of [`crate::train::dev_set`] reward putting a translation nearest
//! its source; they cannot see a model lose the graded similarity an English teacher gives
//! English sentences (related > loosely related > unrelated), which contrastive training
//! can trade away. With the teacher as reference, this is that guard on dev data: 100 when
//! the model orders every pair of sentences as the teacher does. It is a proxy, not STS:
//! most pairs of dev sentences are unrelated, so the low end of the scale weighs most.

use std::collections::HashSet;

use serde::Serialize;

use crate::error::Result;
use crate::eval::embed_unit_vectors;
use crate::eval::spearman::spearman;
use crate::inference::EncodeOptions;
use crate::model::SentenceEncoder;

/// At most this many distinct sentences (the first ones): their pairs grow as its square
/// (2,000 sentences: 1,999,000 pairs).
pub const MAX_SENTENCES: usize = 2000;

/// The agreement and what it was computed over.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimilarityAgreement {
    /// Spearman's rho x100 between the two models' cosines over all sentence pairs.
    pub spearman: f64,
    pub sentences: usize,
    pub pairs: usize,
}

/// The distinct texts of `sentences` in first-seen order, at most [`MAX_SENTENCES`].
pub fn distinct_sentences<'a>(sentences: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut seen = HashSet::new();
    sentences
        .into_iter()
        .filter(|s| seen.insert(*s))
        .take(MAX_SENTENCES)
        .map(str::to_string)
        .collect()
}

/// Cosines of every pair i < j of `n` unit rows of width `dim`, row-major.
fn pair_cosines(vectors: &[f32], dim: usize) -> Vec<f64> {
    let n = vectors.len() / dim;
    let mut out = Vec::with_capacity(n * n.saturating_sub(1) / 2);
    for i in 0..n {
        let a = &vectors[i * dim..(i + 1) * dim];
        for j in i + 1..n {
            let b = &vectors[j * dim..(j + 1) * dim];
            out.push(a.iter().zip(b).map(|(x, y)| (x * y) as f64).sum());
        }
    }
    out
}

/// The agreement of two models' unit vectors for the same sentences (widths may differ).
pub fn agreement_of_vectors(
    model: &[f32],
    model_dim: usize,
    reference: &[f32],
    reference_dim: usize,
) -> SimilarityAgreement {
    let (a, b) = (
        pair_cosines(model, model_dim),
        pair_cosines(reference, reference_dim),
    );
    SimilarityAgreement {
        spearman: 100.0 * spearman(&a, &b),
        sentences: model.len() / model_dim.max(1),
        pairs: a.len(),
    }
}

/// Embeds `sentences` with both models and scores their agreement.
pub fn similarity_agreement(
    model: &SentenceEncoder,
    reference: &SentenceEncoder,
    sentences: &[String],
) -> Result<SimilarityAgreement> {
    enough_sentences(sentences.len())?;
    let embed = |encoder: &SentenceEncoder| {
        let options = EncodeOptions::for_device(encoder.device());
        embed_unit_vectors(encoder, sentences, &options, "dev similarity", false)
    };
    Ok(agreement_of_vectors(
        &embed(model)?,
        model.dim(),
        &embed(reference)?,
        reference.dim(),
    ))
}

/// A rank correlation over the pairs of fewer than 3 sentences (one pair, or two) is
/// undefined or trivially +-1: an error, not a NaN in the scores.
fn enough_sentences(n: usize) -> Result<()> {
    if n < 3 {
        return Err(crate::error::LaseError::InvalidArgument(format!(
            "similarity agreement needs at least 3 distinct pivot-side dev sentences (Spearman over their pairs); the dev split has {n}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_than_three_sentences_is_an_error_not_a_nan() {
        for n in 0..3 {
            let err = enough_sentences(n).unwrap_err().to_string();
            assert!(err.contains(&format!("the dev split has {n}")), "{err}");
        }
        enough_sentences(3).unwrap();
    }

    fn unit_rows(angles_degrees: &[f32]) -> Vec<f32> {
        angles_degrees
            .iter()
            .flat_map(|a| {
                let r = a.to_radians();
                [r.cos(), r.sin()]
            })
            .collect()
    }

    #[test]
    fn the_same_order_of_pairs_agrees_fully_whatever_the_scale() {
        // Angles doubled keep every pair's order of similarity (all within 0-90 degrees).
        let a = unit_rows(&[0.0, 10.0, 25.0, 45.0]);
        let b = unit_rows(&[0.0, 20.0, 50.0, 90.0]);
        let r = agreement_of_vectors(&a, 2, &b, 2);
        assert!((r.spearman - 100.0).abs() < 1e-9, "{r:?}");
        assert_eq!((r.sentences, r.pairs), (4, 6));
    }

    #[test]
    fn a_model_that_reorders_pairs_agrees_less() {
        let reference = unit_rows(&[0.0, 10.0, 25.0, 45.0]);
        // The second sentence moved next to the fourth: some pair orders flip.
        let moved = unit_rows(&[0.0, 44.0, 25.0, 45.0]);
        let r = agreement_of_vectors(&moved, 2, &reference, 2);
        assert!(r.spearman < 90.0, "{r:?}");
        // Widths may differ: a 3-d model holding the reference's plane agrees fully.
        let wide: Vec<f32> = reference
            .chunks(2)
            .flat_map(|v| [v[0], 0.0, v[1]])
            .collect();
        let r = agreement_of_vectors(&wide, 3, &reference, 2);
        assert!((r.spearman - 100.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn distinct_sentences_keep_first_seen_order() {
        let s = distinct_sentences(["b", "a", "b", "c", "a"]);
        assert_eq!(s, vec!["b", "a", "c"]);
    }
}

//! Dimension reduction of a trained encoder's output (`lase reduce-dim --to K`): a
//! principal-component projection fitted on sample sentences and appended to the head as
//! a dense layer, so the reduced model is a normal model folder. The encoder itself stays
//! frozen; lealla.txt 3.2 trains such a layer with the distillation losses instead, which
//! `lase distill` can do from this starting point (`init_from`).
//!
//! ```text
//! μ = mean(E),  C = (E - μ)ᵀ(E - μ) / (n - 1),  C = V Λ Vᵀ (eigenvalues descending)
//! W = V[:, :K]ᵀ,  b = -W μ,  reduced(e) = W e + b
//! ```

use tch::{Kind, Tensor};

use crate::error::{LaseError, Result};
use crate::inference::EncodeOptions;
use crate::model::SentenceEncoder;

/// The K-component PCA projection of `embeddings` [n, d]: (W [K, d], b [K]) and the
/// share of the variance the K components keep.
pub fn pca_projection(embeddings: &Tensor, k: usize) -> Result<(Tensor, Tensor, f64)> {
    let size = embeddings.size();
    let (n, d) = (size[0], size[1]);
    if k == 0 || k as i64 > d {
        return Err(LaseError::InvalidArgument(format!(
            "cannot reduce {d} dimensions to {k}"
        )));
    }
    if n < 2 {
        return Err(LaseError::InvalidArgument(format!(
            "PCA needs at least 2 sample sentences, got {n}"
        )));
    }
    let e = embeddings.to_kind(Kind::Double);
    let mean = e.mean_dim(0, false, Kind::Double);
    let centred = &e - &mean;
    let cov = centred.transpose(0, 1).matmul(&centred) / (n - 1) as f64;
    // eigh returns ascending eigenvalues: take the last K columns, largest first.
    let (values, vectors) = cov.linalg_eigh("L");
    let total = values.sum(Kind::Double).double_value(&[]);
    if !(total.is_finite() && total > 0.0) {
        return Err(LaseError::InvalidArgument(format!(
            "the {n} sample embeddings do not vary (total variance {total}; the same sentence repeated?): PCA has no direction to keep"
        )));
    }
    let top = vectors.narrow(1, d - k as i64, k as i64).flip([1]);
    let weight = top.transpose(0, 1).contiguous();
    let bias = -weight.matmul(&mean);
    let kept = values
        .narrow(0, d - k as i64, k as i64)
        .sum(Kind::Double)
        .double_value(&[])
        / total;
    Ok((weight.to_kind(Kind::Float), bias.to_kind(Kind::Float), kept))
}

/// `encoder` with a K-dimensional PCA projection fitted on `sentences`; returns the new
/// encoder and the variance share kept.
pub fn reduce_dimension<S: AsRef<str>>(
    encoder: &mut SentenceEncoder,
    sentences: &[S],
    k: usize,
    options: &EncodeOptions,
) -> Result<(SentenceEncoder, f64)> {
    let normalize = encoder.normalizes();
    encoder.set_normalize(false);
    let embedded = encoder.encode_with(sentences, options);
    encoder.set_normalize(normalize);
    let (weight, bias, kept) = pca_projection(&embedded?.to_device(tch::Device::Cpu), k)?;
    Ok((encoder.with_linear_projection(&weight, &bias)?, kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Identical sample sentences give identical embeddings: refused, not a NaN share.
    #[test]
    fn a_sample_without_variance_is_refused() {
        let same = Tensor::ones([5, 4], (Kind::Float, tch::Device::Cpu));
        let err = pca_projection(&same, 2).unwrap_err().to_string();
        assert!(err.contains("do not vary"), "{err}");
        let varied = Tensor::arange(20, (Kind::Float, tch::Device::Cpu))
            .reshape([5, 4])
            .sin();
        let (w, b, kept) = pca_projection(&varied, 2).unwrap();
        assert_eq!((w.size(), b.size()), (vec![2, 4], vec![2]));
        assert!(kept > 0.0 && kept <= 1.0 + 1e-9, "{kept}");
    }
}

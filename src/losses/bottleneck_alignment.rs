//! Embedding-bottleneck alignment, stage 2 of multistage-distillation.txt (Eq. 3): the
//! student's token embeddings (its V x B table, then the B x H projection) learn to
//! reproduce the assistant's token embeddings on both sides of each pair:
//!
//! ```text
//! L_stage2 = (1/|N|) Σ_i [ (h_Ae^{s_i} - h_Be^{s_i})² + (h_Be^{t_i} - h_Ae^{t_i})² ]
//! ```
//!
//! Here the source and target sentences of a batch are one token batch (both sides in
//! it), the squares are summed over real tokens (padding masked out) and the hidden
//! width, and divided by (real tokens x H): a mean over elements, the scale of
//! PyTorch's `MSELoss` (the paper's 1/|N| leaves the per-sentence sum unnormalised;
//! the mean only rescales the gradient, which AdamW's step size absorbs).

use tch::{Kind, Tensor};

/// `student`, `assistant`: [N, T, H] token embeddings of the same token batch;
/// `attention_mask`: [N, T], 1 on real tokens.
pub fn bottleneck_alignment(
    student: &Tensor,
    assistant: &Tensor,
    attention_mask: &Tensor,
) -> Tensor {
    let mask = attention_mask.to_kind(Kind::Float).unsqueeze(-1);
    let hidden = student.size().last().copied().unwrap_or(1) as f64;
    ((student - assistant).square() * &mask).sum(Kind::Float) / (mask.sum(Kind::Float) * hidden)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_is_ignored_and_the_mean_is_over_real_token_elements() {
        // Two sentences, 3 positions, H = 2; the second sentence has one padding token.
        let student =
            Tensor::from_slice(&[1f32, 1., 2., 2., 0., 0., 1., 1., 1., 1., 9., 9.]).view([2, 3, 2]);
        let assistant = Tensor::zeros([2, 3, 2], (Kind::Float, tch::Device::Cpu));
        let mask = Tensor::from_slice(&[1i64, 1, 1, 1, 1, 0]).view([2, 3]);
        let loss = bottleneck_alignment(&student, &assistant, &mask).double_value(&[]);
        // Real elements: 1,1,4,4,0,0,1,1,1,1 (sum 14) over 5 tokens x 2 = 10 elements.
        assert!((loss - 1.4).abs() < 1e-6, "{loss}");
        // A change at the padded position changes nothing.
        let moved = student.copy();
        let _ = moved.get(1).get(2).fill_(-50.0);
        let again = bottleneck_alignment(&moved, &assistant, &mask).double_value(&[]);
        assert_eq!(loss, again);
    }
}

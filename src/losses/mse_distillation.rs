//! Multilingual knowledge distillation by MSE (Reimers & Gurevych 2020, "Making
//! monolingual sentence embeddings multilingual"; lecture §distillation):
//!
//! ```text
//! L = (1/(N d)) Σ_i ‖x^t_i - f(x_i)‖² + (1/(N d)) Σ_i ‖x^t_i - f(y_i)‖²
//! ```
//!
//! The teacher embeds only the source (English) side x; the student f learns to map
//! both x and its translation y onto it. Both terms are means over elements, as
//! PyTorch's `MSELoss` in sentence-transformers.

use tch::Tensor;

/// `teacher`: [N, d] teacher embeddings of x; `student_x`, `student_y`: [N, d].
pub fn mse_distillation(teacher: &Tensor, student_x: &Tensor, student_y: &Tensor) -> Tensor {
    (student_x - teacher).square().mean(student_x.kind())
        + (student_y - teacher).square().mean(student_y.kind())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn equals_a_hand_computation() {
        let t = fixed_embeddings(3, 4, 21);
        let x = fixed_embeddings(3, 4, 22);
        let y = fixed_embeddings(3, 4, 23);
        let mut expected = 0.0;
        for i in 0..3 {
            for j in 0..4 {
                expected += (t[i][j] - x[i][j]).powi(2) + (t[i][j] - y[i][j]).powi(2);
            }
        }
        expected /= 12.0;
        let got = mse_distillation(&tensor(&t), &tensor(&x), &tensor(&y)).double_value(&[]);
        assert!((got - expected).abs() < 1e-12);
    }
}

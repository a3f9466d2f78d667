//! Learning-rate schedule: linear warm-up from 0 to the peak over `warmup_steps`, then
//! linear decay to 0 at `steps` (BERT, ems.txt), cosine decay, or constant.

use super::config::Decay;

/// Learning rate for optimizer step `step` (0-based).
pub fn learning_rate(
    peak: f64,
    step: u64,
    warmup_steps: u64,
    total_steps: u64,
    decay: Decay,
) -> f64 {
    let step = step as f64;
    let warmup = warmup_steps as f64;
    if step < warmup {
        return peak * (step + 1.0) / warmup;
    }
    let total = total_steps.max(warmup_steps + 1) as f64;
    let progress = ((step - warmup) / (total - warmup)).clamp(0.0, 1.0);
    match decay {
        Decay::Constant => peak,
        Decay::Linear => peak * (1.0 - progress),
        Decay::Cosine => peak * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warms_up_then_decays() {
        let lr = |s, d| learning_rate(1.0, s, 10, 110, d);
        assert!((lr(0, Decay::Linear) - 0.1).abs() < 1e-12);
        assert!((lr(9, Decay::Linear) - 1.0).abs() < 1e-12);
        assert!((lr(60, Decay::Linear) - 0.5).abs() < 1e-12);
        assert!((lr(60, Decay::Cosine) - 0.5).abs() < 1e-12);
        assert!(lr(110, Decay::Linear).abs() < 1e-12);
        assert_eq!(lr(100, Decay::Constant), 1.0);
        assert!(lr(30, Decay::Cosine) > lr(30, Decay::Linear));
    }
}

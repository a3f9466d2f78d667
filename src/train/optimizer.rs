//! AdamW (Loshchilov & Hutter 2019), written out so that its state (first and second
//! moments, step count) is plain named tensors a checkpoint can store and restore
//! exactly. Same update as `torch.optim.AdamW`:
//!
//! ```text
//! m ← β1 m + (1-β1) g,   v ← β2 v + (1-β2) g²
//! θ ← θ (1 - lr λ)                                  (decoupled weight decay)
//! θ ← θ - lr · (m / (1-β1^t)) / ( sqrt(v / (1-β2^t)) + ε )
//! ```
//!
//! Biases and LayerNorm parameters get no weight decay (BERT's convention). A parameter
//! can keep its leading rows frozen ([`AdamW::freeze_leading_rows`]): they get no update,
//! no decay and no share of the gradient norm.

use std::collections::BTreeMap;

use tch::{Kind, Tensor};

use super::config::OptimizerConfig;
use crate::error::{LaseError, Result};

struct Slot {
    name: String,
    param: Tensor,
    m: Tensor,
    v: Tensor,
    decay: bool,
    /// Leading rows (first dimension) left as they are.
    frozen_rows: i64,
}

impl Slot {
    /// The part of `t` (the parameter, its gradient or a moment) that trains.
    fn trained(&self, t: &Tensor) -> Tensor {
        if self.frozen_rows == 0 {
            t.shallow_clone()
        } else {
            let rows = t.size()[0];
            t.narrow(0, self.frozen_rows, rows - self.frozen_rows)
        }
    }
}

/// AdamW over a fixed, named list of parameters.
pub struct AdamW {
    config: OptimizerConfig,
    slots: Vec<Slot>,
    step: u64,
}

fn decays(name: &str) -> bool {
    !(name.ends_with(".bias")
        || name.ends_with("_bias")
        || name.contains("LayerNorm")
        || name.contains("layer_norm"))
}

impl AdamW {
    /// `params`: (name, tensor) pairs; names must be unique (they key the checkpoint).
    pub fn new(params: Vec<(String, Tensor)>, config: &OptimizerConfig) -> Self {
        let slots = params
            .into_iter()
            .map(|(name, param)| Slot {
                m: param.zeros_like().detach(),
                v: param.zeros_like().detach(),
                decay: decays(&name),
                frozen_rows: 0,
                name,
                param,
            })
            .collect();
        Self {
            config: config.clone(),
            slots,
            step: 0,
        }
    }

    /// Keeps the first `rows` rows of parameter `name` as they are (e.g. the old rows of an
    /// extended embedding matrix); the rows after them train.
    pub fn freeze_leading_rows(&mut self, name: &str, rows: usize) -> Result<()> {
        let slot = self
            .slots
            .iter_mut()
            .find(|s| s.name == name)
            .ok_or_else(|| LaseError::Model(format!("no trainable parameter {name}")))?;
        let size = slot.param.size();
        if size.is_empty() || rows as i64 >= size[0] {
            return Err(LaseError::Model(format!(
                "{name} has shape {size:?}: cannot freeze its first {rows} rows and train the rest"
            )));
        }
        slot.frozen_rows = rows as i64;
        Ok(())
    }

    pub fn steps_taken(&self) -> u64 {
        self.step
    }

    /// Sets every gradient to zero (keeping the buffers).
    pub fn zero_grad(&mut self) {
        for s in &mut self.slots {
            let mut g = s.param.grad();
            if g.defined() {
                let _ = g.zero_();
            }
        }
    }

    /// Global L2 norm of the gradients of what trains (frozen rows left out): each tensor's
    /// norm in its own precision (no
    /// float64 copy of the gradients), combined in float64.
    pub fn grad_norm(&self) -> f64 {
        tch::no_grad(|| {
            let norms: Vec<Tensor> = self
                .slots
                .iter()
                .filter_map(|s| {
                    let g = s.param.grad();
                    g.defined().then(|| s.trained(&g))
                })
                .map(|g| g.norm().to_kind(Kind::Double))
                .collect();
            if norms.is_empty() {
                return 0.0;
            }
            // Combined on the parameters' device: one transfer (one sync on CUDA).
            Tensor::stack(&norms, 0)
                .square()
                .sum(Kind::Double)
                .double_value(&[])
                .sqrt()
        })
    }

    /// Multiplies the gradients of what trains by `factor` (clipping, accumulation
    /// averaging).
    pub fn scale_grads(&mut self, factor: f64) {
        tch::no_grad(|| {
            for s in &mut self.slots {
                let g = s.param.grad();
                if g.defined() {
                    let _ = s.trained(&g).g_mul_scalar_(factor);
                }
            }
        });
    }

    /// One update with learning rate `lr`.
    pub fn step(&mut self, lr: f64) {
        self.step += 1;
        let c = &self.config;
        let t = self.step as i32;
        let bias1 = 1.0 - c.beta1.powi(t);
        let bias2_sqrt = (1.0 - c.beta2.powi(t)).sqrt();
        tch::no_grad(|| {
            for s in &mut self.slots {
                let g = s.param.grad();
                if !g.defined() {
                    continue;
                }
                // Views: in-place updates of the trained rows are updates of the whole.
                let (g, mut m, mut v, mut param) = (
                    s.trained(&g),
                    s.trained(&s.m),
                    s.trained(&s.v),
                    s.trained(&s.param),
                );
                // In place, two temporaries per tensor (as torch's single-tensor AdamW).
                let _ = m.lerp_(&g, 1.0 - c.beta1);
                let _ = v.g_mul_scalar_(c.beta2);
                let _ = v.addcmul_(&(&g * (1.0 - c.beta2)), &g);
                if s.decay && c.weight_decay > 0.0 {
                    let _ = param.g_mul_scalar_(1.0 - lr * c.weight_decay);
                }
                // θ += m / d with d = -(sqrt(v) / sqrt(1-β2^t) + ε) · (1-β1^t) / lr.
                if lr > 0.0 {
                    let mut denom = v.sqrt();
                    let _ = denom.g_div_scalar_(bias2_sqrt);
                    let _ = denom.g_add_scalar_(c.eps);
                    let _ = denom.g_mul_scalar_(-bias1 / lr);
                    let _ = param.addcdiv_(&m, &denom);
                }
            }
        });
    }

    /// Moments keyed `m.<name>` / `v.<name>`, and the step count.
    pub fn state(&self) -> (Vec<(String, Tensor)>, u64) {
        let mut out = Vec::with_capacity(2 * self.slots.len());
        for s in &self.slots {
            out.push((format!("m.{}", s.name), s.m.shallow_clone()));
            out.push((format!("v.{}", s.name), s.v.shallow_clone()));
        }
        (out, self.step)
    }

    /// Restores [`Self::state`]; every parameter must have its moments.
    pub fn restore(&mut self, mut stored: BTreeMap<String, Tensor>, step: u64) -> Result<()> {
        tch::no_grad(|| {
            for s in &mut self.slots {
                for (key, dst) in [
                    (format!("m.{}", s.name), &mut s.m),
                    (format!("v.{}", s.name), &mut s.v),
                ] {
                    let src = stored.remove(&key).ok_or_else(|| {
                        LaseError::Model(format!(
                            "optimizer state lacks {key}: the model changed since the checkpoint"
                        ))
                    })?;
                    if src.size() != dst.size() {
                        return Err(LaseError::Model(format!(
                            "optimizer state {key} has shape {:?}, the parameter {:?}",
                            src.size(),
                            dst.size()
                        )));
                    }
                    dst.copy_(&src);
                }
            }
            Ok(())
        })?;
        self.step = step;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// lr 0.1, weight decay 0.01, torch's betas and epsilon, no clipping.
    fn config() -> OptimizerConfig {
        OptimizerConfig {
            lr: 0.1,
            weight_decay: 0.01,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            max_grad_norm: 0.0,
        }
    }

    /// Against a hand-unrolled AdamW on a scalar: two steps.
    #[test]
    fn matches_the_adamw_equations() {
        let config = config();
        let p = Tensor::from_slice(&[1.0f64]).set_requires_grad(true);
        let mut opt = AdamW::new(vec![("w".into(), p.shallow_clone())], &config);
        let (mut theta, mut m, mut v) = (1.0f64, 0.0, 0.0);
        for t in 1..=2 {
            opt.zero_grad();
            let loss = (&p * &p * 3.0).sum(Kind::Double);
            loss.backward();
            let g = 6.0 * theta;
            opt.step(0.1);
            m = 0.9 * m + 0.1 * g;
            v = 0.999 * v + 0.001 * g * g;
            theta *= 1.0 - 0.1 * 0.01;
            let mh = m / (1.0 - 0.9f64.powi(t));
            let vh = v / (1.0 - 0.999f64.powi(t));
            theta -= 0.1 * mh / (vh.sqrt() + 1e-8);
            assert!((p.double_value(&[0]) - theta).abs() < 1e-12, "step {t}");
        }
        assert!(!decays("encoder.layer.0.output.LayerNorm.weight"));
        assert!(!decays("x.bias"));
        assert!(decays("x.weight"));
    }

    /// Frozen leading rows stay bit for bit (no update, no decay) and are left out of the
    /// gradient norm; the other rows follow the same equations as an unfrozen copy of them.
    #[test]
    fn frozen_leading_rows_keep_their_values() {
        let config = config();
        let start = Tensor::from_slice(&[1.0f64, -2.0, 3.0, 0.5, 4.0, -1.5]).view([3, 2]);
        let p = start.copy().set_requires_grad(true);
        // The same trained row (the last) as a parameter of its own.
        let alone = start.narrow(0, 2, 1).copy().set_requires_grad(true);
        let mut opt = AdamW::new(vec![("w".into(), p.shallow_clone())], &config);
        let mut reference = AdamW::new(vec![("w".into(), alone.shallow_clone())], &config);
        assert!(
            opt.freeze_leading_rows("w", 3).is_err(),
            "nothing would train"
        );
        assert!(opt.freeze_leading_rows("missing", 1).is_err());
        opt.freeze_leading_rows("w", 2).unwrap();
        for _ in 0..3 {
            opt.zero_grad();
            reference.zero_grad();
            (&p * &p * 3.0).sum(Kind::Double).backward();
            (&alone * &alone * 3.0).sum(Kind::Double).backward();
            assert!((opt.grad_norm() - reference.grad_norm()).abs() < 1e-12);
            // Clipping scales what trains in both.
            opt.scale_grads(0.5);
            reference.scale_grads(0.5);
            assert!((opt.grad_norm() - reference.grad_norm()).abs() < 1e-12);
            opt.step(0.1);
            reference.step(0.1);
        }
        assert!(p.narrow(0, 0, 2).equal(&start.narrow(0, 0, 2)));
        assert!(p.narrow(0, 2, 1).equal(&alone));
        assert!(
            !alone.equal(&start.narrow(0, 2, 1)),
            "the trained row moved"
        );
    }
}

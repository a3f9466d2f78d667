//! Cross-lingual token-level reconstruction, XTR (ems.txt §III-B, Eq. 2-7): from the
//! sentence vector u of x and the embedding of y's language, predict the bag of tokens
//! of the translation y, and vice versa.
//!
//! ```text
//! u_la = W_la h_{<2l'>},  v_la = W_la h_{<2l>}            (language embedding, d_la = 128)
//! q_x = softmax( W_emb swish( W_fc (u_la ⊕ u) + b_fc ) )   (W_emb: a SEPARATE output
//! q_y = softmax( W_emb swish( W_fc (v_la ⊕ v) + b_fc ) )    matrix, not the input embedding)
//! p_x(w) = N_w / |x|  (bag of tokens of x, special tokens excluded)
//! L_xtr = Σ_{(x,y)∈B} KL(p_y ‖ q_x) + KL(p_x ‖ q_y)
//! ```
//!
//! The joint EMS loss divides by |B| (Eq. 12), so [`Xtr::loss`] returns the batch mean.

use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor, nn, nn::Module};

/// XTR hyperparameters, ems.txt's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XtrConfig {
    /// d_la: width of the target-language embedding (128).
    #[serde(default = "XtrConfig::default_language_dim")]
    pub language_dim: usize,
}

impl XtrConfig {
    fn default_language_dim() -> usize {
        128
    }
}

impl Default for XtrConfig {
    fn default() -> Self {
        Self {
            language_dim: Self::default_language_dim(),
        }
    }
}

/// The XTR head: language embeddings, the swish layer and the output matrix.
#[derive(Debug)]
pub struct Xtr {
    language: nn::Embedding,
    fc: nn::Linear,
    output: nn::Linear,
}

impl Xtr {
    /// `languages`: number of `<2xx>` language embeddings; `input_dim`: d; `vocab_size`: V.
    pub fn new(
        path: nn::Path,
        languages: usize,
        input_dim: usize,
        vocab_size: usize,
        config: &XtrConfig,
    ) -> Self {
        let width = (config.language_dim + input_dim) as i64;
        Self {
            language: nn::embedding(
                &path / "language_embeddings",
                languages as i64,
                config.language_dim as i64,
                Default::default(),
            ),
            fc: nn::linear(&path / "fc", width, width, Default::default()),
            output: nn::linear(
                &path / "output",
                width,
                vocab_size as i64,
                nn::LinearConfig {
                    bias: false,
                    ..Default::default()
                },
            ),
        }
    }

    /// log q: [N, V] log-probabilities of the tokens of a sentence in `target_language`
    /// ([N] int64) reconstructed from sentence vectors `u` ([N, d]).
    pub fn log_predictions(&self, u: &Tensor, target_language: &Tensor) -> Tensor {
        let lang = self.language.forward(target_language).to_kind(u.kind());
        let hidden = self
            .fc
            .forward(&Tensor::cat(&[lang, u.shallow_clone()], 1))
            .silu();
        self.output.forward(&hidden).log_softmax(-1, u.kind())
    }

    /// Mean over the batch of KL(p_y ‖ q_x) + KL(p_x ‖ q_y).
    /// `lang_x`, `lang_y`: [N] language ids; `bag_x`, `bag_y`: [N, V] from [`bag_of_tokens`].
    pub fn loss(
        &self,
        u: &Tensor,
        v: &Tensor,
        lang_x: &Tensor,
        lang_y: &Tensor,
        bag_x: &Tensor,
        bag_y: &Tensor,
    ) -> Tensor {
        let n = u.size()[0] as f64;
        let log_q_x = self.log_predictions(u, lang_y);
        let log_q_y = self.log_predictions(v, lang_x);
        (kl_sum(bag_y, &log_q_x) + kl_sum(bag_x, &log_q_y)) / n
    }
}

/// Σ_rows Σ_w p(w) (log p(w) - log q(w)), with 0 log 0 = 0.
fn kl_sum(p: &Tensor, log_q: &Tensor) -> Tensor {
    let p = p.to_kind(log_q.kind());
    let entropy_term = (&p * p.clamp_min(1e-30).log()).sum(log_q.kind());
    entropy_term - (&p * log_q).sum(log_q.kind())
}

/// Bag-of-tokens distributions [N, V]: p(w) = (count of w in the sentence) / (tokens
/// counted), skipping the ids in `skip` (special tokens). A sentence with no countable
/// token gets an all-zero row (it adds nothing to the loss).
pub fn bag_of_tokens(
    sentences: &[&[i64]],
    vocab_size: usize,
    skip: &[i64],
    device: Device,
) -> Tensor {
    let mut rows = Vec::new();
    let mut cols = Vec::new();
    let mut weights = Vec::new();
    for (i, ids) in sentences.iter().enumerate() {
        let kept: Vec<i64> = ids.iter().copied().filter(|t| !skip.contains(t)).collect();
        let w = 1.0 / kept.len().max(1) as f32;
        for t in kept {
            rows.push(i as i64);
            cols.push(t);
            weights.push(w);
        }
    }
    let bag = Tensor::zeros(
        [sentences.len() as i64, vocab_size as i64],
        (Kind::Float, device),
    );
    if rows.is_empty() {
        return bag;
    }
    let rows = Tensor::from_slice(&rows).to_device(device);
    let cols = Tensor::from_slice(&cols).to_device(device);
    let weights = Tensor::from_slice(&weights).to_device(device);
    bag.index_put(&[Some(rows), Some(cols)], &weights, true)
}

/// `xtr = true` (the default, as EMS trains) with its head's settings in
/// `xtr_head = { ... }`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct XtrSettings {
    #[serde(default = "XtrSettings::on")]
    pub xtr: bool,
    #[serde(default)]
    pub xtr_head: XtrConfig,
}

impl XtrSettings {
    fn on() -> bool {
        true
    }
}

impl Settings for XtrSettings {
    const SECTION: Section = Section::Objective;
    const KEYS: &'static [&'static str] = &["xtr", "xtr_head"];
    fn check(&self, checks: &mut Checks) {
        checks.at_least(
            "objective.xtr_head.language_dim",
            self.xtr_head.language_dim,
            1,
        );
    }
}

impl Term for Xtr {
    fn loss(&self, input: &TermInput) -> Tensor {
        Xtr::loss(
            self,
            input.x,
            input.y,
            input.lang_x,
            input.lang_y,
            input.bag_x.expect("XTR needs bags of tokens"),
            input.bag_y.expect("XTR needs bags of tokens"),
        )
    }
}

pub const TERM: TermSpec =
    TermSpec::of::<XtrSettings>("xtr", Switch::Flag("xtr", true), |section, setup| {
        let settings = term::read::<XtrSettings>(section)?;
        Ok(Box::new(Xtr::new(
            setup.path,
            setup.languages.max(1),
            setup.dim,
            setup.vocab_size,
            &settings.xtr_head,
        )))
    })
    .needing_bags();

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn bag_counts_repeats_and_skips_specials() {
        let a: &[i64] = &[0, 5, 5, 7, 1];
        let b: &[i64] = &[0, 1];
        let bag = bag_of_tokens(&[a, b], 9, &[0, 1], Device::Cpu);
        assert!((bag.double_value(&[0, 5]) - 2.0 / 3.0).abs() < 1e-7);
        assert!((bag.double_value(&[0, 7]) - 1.0 / 3.0).abs() < 1e-7);
        assert_eq!(bag.double_value(&[0, 0]), 0.0);
        assert!((bag.sum(Kind::Double).double_value(&[]) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn equals_a_hand_computation() {
        let mut vs = nn::VarStore::new(Device::Cpu);
        let head = Xtr::new(vs.root(), 2, 3, 6, &XtrConfig { language_dim: 2 });
        vs.set_kind(Kind::Double);
        let u = fixed_embeddings(2, 3, 41);
        let v = fixed_embeddings(2, 3, 42);
        let lang_x = [0i64, 0];
        let lang_y = [1i64, 1];
        let toks_x: [&[i64]; 2] = [&[2, 3, 3], &[4]];
        let toks_y: [&[i64]; 2] = [&[5, 2], &[1, 4, 5]];
        let bag_x = bag_of_tokens(&toks_x, 6, &[], Device::Cpu).to_kind(Kind::Double);
        let bag_y = bag_of_tokens(&toks_y, 6, &[], Device::Cpu).to_kind(Kind::Double);
        let emb = rows(&head.language.ws);
        let fc_w = rows(&head.fc.ws);
        let fc_b: Vec<f64> = Vec::<f64>::try_from(head.fc.bs.as_ref().unwrap().copy()).unwrap();
        let out = rows(&head.output.ws);
        let q = |x: &[f64], lang: usize| -> Vec<f64> {
            let input: Vec<f64> = emb[lang].iter().chain(x).copied().collect();
            let hidden: Vec<f64> = (0..5)
                .map(|r| {
                    let z = fc_b[r] + (0..5).map(|c| fc_w[r][c] * input[c]).sum::<f64>();
                    z / (1.0 + (-z).exp())
                })
                .collect();
            let logits: Vec<f64> = (0..6)
                .map(|w| (0..5).map(|c| out[w][c] * hidden[c]).sum())
                .collect();
            let z: f64 = logits.iter().map(|l| l.exp()).sum();
            logits.iter().map(|l| l.exp() / z).collect()
        };
        let p =
            |b: &Tensor, i: i64| -> Vec<f64> { (0..6).map(|w| b.double_value(&[i, w])).collect() };
        let kl = |p: &[f64], q: &[f64]| -> f64 {
            p.iter()
                .zip(q)
                .filter(|(a, _)| **a > 0.0)
                .map(|(a, b)| a * (a / b).ln())
                .sum()
        };
        let mut expected = 0.0;
        for i in 0..2 {
            expected += kl(&p(&bag_y, i as i64), &q(&u[i], lang_y[i] as usize));
            expected += kl(&p(&bag_x, i as i64), &q(&v[i], lang_x[i] as usize));
        }
        expected /= 2.0;
        let got = head
            .loss(
                &tensor(&u),
                &tensor(&v),
                &Tensor::from_slice(&lang_x),
                &Tensor::from_slice(&lang_y),
                &bag_x,
                &bag_y,
            )
            .double_value(&[]);
        assert!((got - expected).abs() < 1e-10, "{got} vs {expected}");
    }
}

//! The training objective of a recipe: one contrastive loss and/or XTR, combined as
//! ems.txt Eq. 12, L = (L_xtr + L_cntrs) / |B| (each part here is already a batch mean).
//! Loss heads (EMS projection, XTR) have their own parameters in the objective's
//! VarStore; they are trained with the encoder and dropped from the exported model.

use tch::{Device, Kind, Tensor, nn};

use super::config::{ContrastiveKind, ObjectiveConfig};
use crate::losses::{
    EmsContrastive, Xtr, additive_margin_softmax, bag_of_tokens, bidirectional_info_nce,
    hardest_in_batch_negatives, triplet,
};

/// What a loss needs to know about a batch besides the two sides' vectors.
pub struct BatchContext {
    /// [N] language ids of x and y (objective language table).
    pub lang_x: Tensor,
    pub lang_y: Tensor,
    /// [N, V] bags of tokens, present when XTR is on.
    pub bag_x: Option<Tensor>,
    pub bag_y: Option<Tensor>,
}

impl BatchContext {
    /// The context without bags of tokens (enough unless XTR is on).
    pub fn new(lang_x: &[i64], lang_y: &[i64], device: Device) -> Self {
        Self {
            lang_x: Tensor::from_slice(lang_x).to_device(device),
            lang_y: Tensor::from_slice(lang_y).to_device(device),
            bag_x: None,
            bag_y: None,
        }
    }

    /// Adds the two sides' bags of tokens; `special` ids are left out.
    pub fn with_bags(
        mut self,
        tokens_x: &[&[i64]],
        tokens_y: &[&[i64]],
        vocab_size: usize,
        special: &[i64],
    ) -> Self {
        let device = self.lang_x.device();
        self.bag_x = Some(bag_of_tokens(tokens_x, vocab_size, special, device));
        self.bag_y = Some(bag_of_tokens(tokens_y, vocab_size, special, device));
        self
    }
}

/// Loss value and its named parts (for logs).
pub struct LossOutput {
    pub total: Tensor,
    pub parts: Vec<(&'static str, f64)>,
}

/// A recipe's objective with its heads.
pub struct Objective {
    config: ObjectiveConfig,
    pub vs: nn::VarStore,
    ems: Option<EmsContrastive>,
    xtr: Option<Xtr>,
}

impl Objective {
    /// `dim`: sentence vector width; `languages`: size of the language table;
    /// `vocab_size`: the tokenizer's vocabulary.
    pub fn new(
        config: &ObjectiveConfig,
        dim: usize,
        languages: usize,
        vocab_size: usize,
        device: Device,
    ) -> Self {
        let vs = nn::VarStore::new(device);
        let ems = (config.contrastive == ContrastiveKind::Ems)
            .then(|| EmsContrastive::new(vs.root() / "ems_contrastive", dim, &config.ems));
        let xtr = config.xtr.then(|| {
            Xtr::new(
                vs.root() / "xtr",
                languages.max(1),
                dim,
                vocab_size,
                &config.xtr_head,
            )
        });
        Self {
            config: config.clone(),
            vs,
            ems,
            xtr,
        }
    }

    pub fn needs_bags(&self) -> bool {
        self.xtr.is_some()
    }

    /// Loss on sentence vectors `x`, `y` ([N, d]).
    pub fn loss(&self, x: &Tensor, y: &Tensor, ctx: &BatchContext) -> LossOutput {
        let c = &self.config;
        let mut parts = Vec::new();
        let mut total = Tensor::zeros([], (x.kind(), x.device()));
        let contrastive = match c.contrastive {
            ContrastiveKind::Ems => {
                Some(("ems_contrastive", self.ems.as_ref().unwrap().loss(x, y)))
            }
            ContrastiveKind::InfoNce => {
                Some(("info_nce", bidirectional_info_nce(x, y, c.temperature)))
            }
            ContrastiveKind::Ams => Some(("ams", additive_margin_softmax(x, y, c.margin, c.scale))),
            ContrastiveKind::Triplet => {
                let neg = y.index_select(0, &hardest_in_batch_negatives(x, y));
                let margin = c
                    .triplet_margin
                    .unwrap_or(c.triplet_distance.default_margin());
                Some(("triplet", triplet(x, y, &neg, c.triplet_distance, margin)))
            }
            ContrastiveKind::None => None,
        };
        if let Some((name, l)) = contrastive {
            parts.push((name, l.double_value(&[])));
            total += l;
        }
        if let Some(xtr) = &self.xtr {
            let l = xtr.loss(
                x,
                y,
                &ctx.lang_x,
                &ctx.lang_y,
                ctx.bag_x.as_ref().expect("XTR needs bags of tokens"),
                ctx.bag_y.as_ref().expect("XTR needs bags of tokens"),
            );
            parts.push(("xtr", l.double_value(&[])));
            total += l;
        }
        LossOutput { total, parts }
    }

    /// Trainable head parameters, named `objective.<var>`.
    pub fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut v: Vec<(String, Tensor)> = self
            .vs
            .variables()
            .into_iter()
            .map(|(n, t)| (format!("objective.{n}"), t))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    pub fn set_double(&mut self) {
        self.vs.set_kind(Kind::Double);
    }
}

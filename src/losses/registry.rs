//! The losses a recipe can turn on, in the order the objective sums them (and logs
//! them): the contrastive losses `contrastive = "<name>"` picks from, XTR, then the
//! distillation terms. A new loss: its file (with a [`TermSpec`]) and one line here.

use super::term::{Section, Switch, TermSpec};
use super::{
    additive_margin, ems_contrastive, feature_distillation, info_nce, logit_distillation, mcl,
    mse_distillation, simcse, soft_contrastive, teacher_bank, triplet, xtr,
};

pub const TERMS: &[&TermSpec] = &[
    &ems_contrastive::TERM,
    &info_nce::TERM,
    &additive_margin::TERM,
    &triplet::TERM,
    &simcse::TERM,
    &xtr::TERM,
    &mse_distillation::TERM,
    &feature_distillation::TERM,
    &logit_distillation::TERM,
    &soft_contrastive::TERM,
    &mcl::TERM,
    &teacher_bank::TERM,
];

/// The `contrastive = "..."` values a recipe may give ("none" and each contrastive
/// loss's name).
pub fn contrastive_names() -> Vec<&'static str> {
    let mut names = vec!["none"];
    names.extend(TERMS.iter().filter_map(|t| match t.switch {
        Switch::Contrastive(name) => Some(name),
        _ => None,
    }));
    names
}

/// Every key the terms of `section` own (settings and switches).
pub fn keys_of(section: Section) -> Vec<&'static str> {
    let mut keys = Vec::new();
    for t in TERMS.iter().filter(|t| t.section == section) {
        keys.extend(t.switch.key().filter(|k| !t.keys.contains(k)));
        keys.extend(t.keys.iter().copied());
    }
    keys
}

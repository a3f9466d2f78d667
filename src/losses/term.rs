//! How a recipe reaches a loss: every loss file that a recipe can select declares a
//! [`TermSpec`] (the recipe keys it owns, what turns it on, its typed settings with the
//! paper's defaults and their range checks, and how to build it) and implements [`Term`]
//! (its weighted value on a batch). [`super::registry::TERMS`] lists the specs; the
//! trainer's objective sums the terms a recipe turns on, in that order.
//!
//! A new loss is one new file in `losses/` (the equation, the paper, the function, its
//! settings, a `TermSpec` and a `Term`) plus its `pub mod` line and one line in
//! `registry.rs`: the recipe format stays `[objective]` keys for the training losses
//! (`contrastive = "<name>"` picks one contrastive loss, a flag such as `xtr = true` adds
//! a term) and weights in `[objective.distillation]` (`mse = 1.0`, `logit = 0.01`).

use serde::Serialize;
use serde::de::DeserializeOwned;
use tch::{Tensor, nn};

/// The recipe table a term's keys live in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// `[objective]`: the training losses.
    Objective,
    /// `[objective.distillation]`: terms against a teacher's vectors.
    Distillation,
}

impl Section {
    /// The key prefix errors name (`objective.` or `objective.distillation.`).
    pub fn prefix(self) -> &'static str {
        match self {
            Section::Objective => "objective.",
            Section::Distillation => "objective.distillation.",
        }
    }
}

/// What turns a term on in its section.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Switch {
    /// `contrastive = "<name>"` in `[objective]`: one contrastive loss at a time.
    Contrastive(&'static str),
    /// A boolean key (with its default), e.g. `xtr = true`.
    Flag(&'static str, bool),
    /// A weight key (with its default); the term is on when it is above 0 and its value is
    /// multiplied by it, e.g. `mse = 1.0`.
    Weight(&'static str, f64),
}

impl Switch {
    /// The key that holds the switch in its section (none for a contrastive loss, which
    /// shares `contrastive`).
    pub fn key(self) -> Option<&'static str> {
        match self {
            Switch::Contrastive(_) => None,
            Switch::Flag(key, _) | Switch::Weight(key, _) => Some(key),
        }
    }
}

/// Sizes a term's heads are built for.
pub struct TermSetup<'a> {
    /// Where its trainable parameters live (`<objective>/<term name>`).
    pub path: nn::Path<'a>,
    /// Width of the student's sentence vectors.
    pub dim: usize,
    /// Width of the teacher's vectors, when the recipe has a teacher.
    pub teacher_dim: Option<usize>,
    /// Size of the language table (XTR).
    pub languages: usize,
    /// The tokenizer's vocabulary (XTR).
    pub vocab_size: usize,
    /// Which sides the teacher embeds (`teacher_side = "both"`).
    pub teacher_both_sides: bool,
}

/// The teacher's vectors of a batch, prepared for the distillation terms.
pub struct TeacherTargets {
    /// Targets of the student's x and y sides (the same vector when the teacher embeds
    /// one side: a side it did not embed borrows its translation's).
    pub x: Tensor,
    pub y: Tensor,
    /// The side the teacher embeds (the source side when it embeds both): the anchor of
    /// Priority labels and MCL.
    pub anchor: Tensor,
    /// Whether the teacher embedded both sides.
    pub both_sides: bool,
    /// The mean teacher vector that centred soft labels subtract, when the run computed it.
    pub center: Option<Tensor>,
    /// [M, d_t] more of the teacher's cached vectors, drawn at random for this batch,
    /// when a term [asks for them](Term::teacher_bank_rows).
    pub bank: Option<Tensor>,
}

/// What a term sees of a batch.
pub struct TermInput<'a> {
    /// [N, d] sentence vectors of the two sides.
    pub x: &'a Tensor,
    pub y: &'a Tensor,
    /// The same sentences encoded again under another dropout mask (SimCSE).
    pub again: Option<(&'a Tensor, &'a Tensor)>,
    /// [N] language ids of x and y (objective language table).
    pub lang_x: &'a Tensor,
    pub lang_y: &'a Tensor,
    /// [N, V] bags of tokens, present when a term [needs them](TermSpec::needs_bags).
    pub bag_x: Option<&'a Tensor>,
    pub bag_y: Option<&'a Tensor>,
    /// The teacher's vectors, when distilling.
    pub teacher: Option<&'a TeacherTargets>,
}

/// A loss as a recipe term: its weighted value on a batch.
pub trait Term: Send {
    fn loss(&self, input: &TermInput) -> Tensor;

    /// Whether soft labels should be computed around the teacher's mean vector (the
    /// trainer then computes it once over the cached training vectors).
    fn wants_teacher_center(&self) -> bool {
        false
    }

    /// How many of the teacher's cached vectors, drawn at random, it wants beside each
    /// batch ([`TeacherTargets::bank`]); 0 for none.
    fn teacher_bank_rows(&self) -> usize {
        0
    }
}

/// Settings as a recipe table ([`toml::Table`]) of one section.
pub type Table = toml::Table;

/// Builds a term from its resolved section; an error is a message for the recipe's user.
pub type BuildTerm = fn(section: &Table, setup: TermSetup) -> Result<Box<dyn Term>, String>;

/// A recipe's way to a loss. Every field is data or a plain function, so the registry
/// is a `const` list.
pub struct TermSpec {
    /// Its name in logs (`metrics.jsonl`) and its parameters' path.
    pub name: &'static str,
    pub section: Section,
    pub switch: Switch,
    /// The other keys of its section it owns (its settings).
    pub keys: &'static [&'static str],
    /// Whether it needs bags of tokens ([`TermInput::bag_x`]).
    pub needs_bags: bool,
    /// Whether it needs each side encoded a second time ([`TermInput::again`]).
    pub needs_second_view: bool,
    /// Its settings read from `section` (absent keys take the paper's defaults), written
    /// back with every key: the resolved form a run folder's `config.toml` records. An
    /// error names the key.
    pub resolve: fn(section: &Table) -> Result<Table, String>,
    /// Range checks of its settings in the resolved `section`, each failure naming its
    /// key (run whether or not the recipe turns the term on, as for every typed key),
    /// and keys that conflict with the rest of the section.
    pub check: fn(section: &Table, checks: &mut Checks),
    /// The term, from its resolved section (called only when it is on).
    pub build: BuildTerm,
}

impl TermSpec {
    /// The spec of a loss with settings `S` (its section and keys), turned on by
    /// `switch`, built by `build`; it needs neither bags of tokens nor a second view
    /// unless [`TermSpec::needing_bags`] / [`TermSpec::needing_second_view`] say so.
    pub const fn of<S: Settings>(name: &'static str, switch: Switch, build: BuildTerm) -> Self {
        Self {
            name,
            section: S::SECTION,
            switch,
            keys: S::KEYS,
            needs_bags: false,
            needs_second_view: false,
            resolve: resolve::<S>,
            check: check::<S>,
            build,
        }
    }

    pub const fn needing_bags(mut self) -> Self {
        self.needs_bags = true;
        self
    }

    pub const fn needing_second_view(mut self) -> Self {
        self.needs_second_view = true;
        self
    }

    /// Whether `section` (resolved; `contrastive` the `[objective]` choice) turns it on.
    pub fn is_on(&self, section: &Table, contrastive: &str) -> bool {
        match self.switch {
            Switch::Contrastive(name) => name == contrastive,
            Switch::Flag(key, default) => section
                .get(key)
                .and_then(toml::Value::as_bool)
                .unwrap_or(default),
            Switch::Weight(key, default) => weight(section, key, default) > 0.0,
        }
    }
}

fn weight(section: &Table, key: &str, default: f64) -> f64 {
    match section.get(key) {
        Some(toml::Value::Float(v)) => *v,
        Some(toml::Value::Integer(v)) => *v as f64,
        _ => default,
    }
}

/// Reads the typed settings `T` from the keys of `section` that `keys` names (serde
/// defaults fill the rest); the error names the section's key.
pub fn read_settings<T: DeserializeOwned>(
    section: &Table,
    keys: &[&str],
    prefix: &str,
) -> Result<T, String> {
    let mut own = Table::new();
    for key in keys {
        if let Some(v) = section.get(*key) {
            own.insert((*key).to_string(), v.clone());
        }
    }
    T::deserialize(toml::Value::Table(own)).map_err(|e| {
        let message = e.to_string();
        let message = message.trim();
        format!("{prefix}{}: {message}", keys.join("/"))
    })
}

/// `settings` written back as a table (the resolved keys).
pub fn write_settings<T: Serialize>(settings: &T) -> Table {
    match toml::Value::try_from(settings) {
        Ok(toml::Value::Table(t)) => t,
        _ => Table::new(),
    }
}

/// The teacher's vectors of the distillation terms of one batch, a side the teacher did
/// not embed borrowing the other side's (its translation), in the student's precision.
pub fn teacher_targets(
    teacher_x: Option<&Tensor>,
    teacher_y: Option<&Tensor>,
    kind: tch::Kind,
    center: Option<&Tensor>,
    bank: Option<&Tensor>,
) -> Option<TeacherTargets> {
    let (tx, ty) = match (teacher_x, teacher_y) {
        (Some(a), Some(b)) => (a.shallow_clone(), b.shallow_clone()),
        (Some(a), None) => (a.shallow_clone(), a.shallow_clone()),
        (None, Some(b)) => (b.shallow_clone(), b.shallow_clone()),
        (None, None) => return None,
    };
    let (tx, ty) = (tx.to_kind(kind), ty.to_kind(kind));
    let anchor = if teacher_x.is_some() {
        tx.shallow_clone()
    } else {
        ty.shallow_clone()
    };
    Some(TeacherTargets {
        x: tx,
        y: ty,
        anchor,
        both_sides: teacher_x.is_some() && teacher_y.is_some(),
        center: center.map(Tensor::shallow_clone),
        bank: bank.map(|b| b.to_kind(kind)),
    })
}

/// Range checks on settings, keeping the first failure as a message that names the key,
/// the value and the range.
#[derive(Default)]
pub struct Checks {
    pub first: Option<String>,
}

impl Checks {
    fn fail(&mut self, key: &str, value: impl std::fmt::Display, range: &str) {
        if self.first.is_none() {
            self.first = Some(format!("{key} = {value}: must be {range}"));
        }
    }
    pub fn finite(&mut self, key: &str, v: f64) {
        if !v.is_finite() {
            self.fail(key, v, "a finite number");
        }
    }
    pub fn positive(&mut self, key: &str, v: f64) {
        if !(v.is_finite() && v > 0.0) {
            self.fail(key, v, "a positive finite number");
        }
    }
    pub fn non_negative(&mut self, key: &str, v: f64) {
        if !(v.is_finite() && v >= 0.0) {
            self.fail(key, v, "a finite number >= 0");
        }
    }
    pub fn fraction(&mut self, key: &str, v: f64) {
        if !(0.0..1.0).contains(&v) {
            self.fail(key, v, "in [0, 1)");
        }
    }
    /// A failure that is not a range (keys that conflict), as its full message.
    pub fn conflict(&mut self, message: String) {
        if self.first.is_none() {
            self.first = Some(message);
        }
    }
    pub fn at_least<T: PartialOrd + std::fmt::Display>(&mut self, key: &str, v: T, min: T) {
        if v < min {
            self.fail(key, v, &format!("at least {min}"));
        }
    }
    pub fn within<T: PartialOrd + std::fmt::Display>(&mut self, key: &str, v: T, min: T, max: T) {
        if !(v >= min && v <= max) {
            self.fail(key, v, &format!("in [{min}, {max}]"));
        }
    }
}

/// A term's typed settings: the keys it owns in its section, each with the paper's
/// default (serde's `default`), and their range checks.
pub trait Settings: Serialize + DeserializeOwned {
    const SECTION: Section;
    const KEYS: &'static [&'static str];
    /// Range checks, each naming its key (`objective.…`).
    fn check(&self, _checks: &mut Checks) {}
}

/// `S` read from `section`; an error names the keys.
pub fn read<S: Settings>(section: &Table) -> Result<S, String> {
    read_settings(section, S::KEYS, S::SECTION.prefix())
}

/// [`TermSpec::resolve`] for settings `S`.
pub fn resolve<S: Settings>(section: &Table) -> Result<Table, String> {
    Ok(write_settings(&read::<S>(section)?))
}

/// [`TermSpec::build`] for settings that are their own term (no head, no set-up).
pub fn settings_term<S: Settings + Term + 'static>(
    section: &Table,
    _setup: TermSetup,
) -> Result<Box<dyn Term>, String> {
    Ok(Box::new(read::<S>(section)?))
}

/// [`TermSpec::check`] for settings `S` (a section that does not parse was refused by
/// [`resolve`] already).
pub fn check<S: Settings>(section: &Table, checks: &mut Checks) {
    if let Ok(settings) = read::<S>(section) {
        settings.check(checks);
    }
}

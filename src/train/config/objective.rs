//! The loss a recipe trains with: `[objective]` (which contrastive loss, XTR, each
//! loss's settings) and `[objective.distillation]` (the teacher and the weights of the
//! terms against it). The keys belong to the losses: each loss file in `src/losses/`
//! declares its own with its paper's default (`losses::term::TermSpec`), and
//! `losses::registry::TERMS` lists them; this file reads a section, refuses keys no
//! loss owns, and keeps every registered key resolved (given or default), which is what
//! a run folder's `config.toml` records and what a resumed run is compared against.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::losses::registry::{TERMS, contrastive_names, keys_of};
use crate::losses::term::{Checks, Section, Table, TermSpec};

/// The training objective: one contrastive loss (or none), the other `[objective]`
/// terms (XTR), and distillation terms (EMS's joint loss is Eq. 12).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Table", into = "Table")]
pub struct ObjectiveConfig {
    /// `contrastive = "<name>"`: "ems" (the default), "info-nce", "ams", "triplet",
    /// "simcse" (each a loss file's `Switch::Contrastive`), or "none".
    pub contrastive: String,
    /// Every `[objective]` key the registered losses own, resolved (given or default).
    pub settings: Table,
    /// Knowledge distillation from a teacher model (terms added to the loss above).
    pub distillation: Option<DistillationConfig>,
}

/// Which side(s) of each pair the teacher embeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TeacherSide {
    /// The target side (English in Tatoeba-Challenge folders): a monolingual English
    /// teacher (Reimers & Gurevych 2020).
    Target,
    Source,
    /// Both sides: a multilingual teacher (LEALLA's LaBSE, Average labels). MSE then
    /// takes each student side to the teacher's vector of the same side
    /// (multistage-distillation.txt Eq. 4), not both sides to one.
    Both,
}

impl TeacherSide {
    fn name(self) -> &'static str {
        match self {
            TeacherSide::Target => "target",
            TeacherSide::Source => "source",
            TeacherSide::Both => "both",
        }
    }
}

/// The teacher and the distillation terms' settings (a weight of 0 turns a term off).
/// Teacher embeddings are computed once and cached in the run folder (memory-mapped .npy).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Table", into = "Table")]
pub struct DistillationConfig {
    /// Teacher model folder (lase / HF / sentence-transformers layout).
    pub teacher: PathBuf,
    /// `teacher_side` (target).
    pub teacher_side: TeacherSide,
    /// L2-normalise the student's vectors in training, as a sentence-transformers
    /// teacher with a Normalize module does (all-MiniLM-L6-v2): MSE then compares unit
    /// vectors, and a student initialised from that teacher matches it at step 0, as in
    /// Reimers & Gurevych 2020, where the student keeps the teacher's modules. Off =
    /// unnormalised student vectors (the losses that need unit vectors normalise).
    pub normalize_student: bool,
    /// Every `[objective.distillation]` key the registered losses own, resolved.
    pub settings: Table,
}

/// The registered keys of `section` in `given`, each term's settings resolved (absent
/// keys at their defaults); a key no loss owns is an error naming it.
fn resolve_section(section: Section, given: &Table) -> Result<Table, String> {
    let owned = keys_of(section);
    if let Some(key) = given.keys().find(|k| !owned.contains(&k.as_str())) {
        let expected: Vec<String> = owned.iter().map(|k| format!("`{k}`")).collect();
        return Err(format!(
            "unknown field `{key}` in [{}], expected one of {}",
            section.prefix().trim_end_matches('.'),
            expected.join(", ")
        ));
    }
    let mut resolved = Table::new();
    for spec in TERMS.iter().filter(|t| t.section == section) {
        resolved.extend((spec.resolve)(given)?);
    }
    Ok(resolved)
}

impl TryFrom<Table> for ObjectiveConfig {
    type Error = String;

    fn try_from(mut given: Table) -> Result<Self, String> {
        let contrastive = match given.remove("contrastive") {
            None => "ems".to_string(),
            Some(toml::Value::String(name)) => name,
            Some(other) => return Err(format!("objective.contrastive: a name, not {other}")),
        };
        let names = contrastive_names();
        if !names.contains(&contrastive.as_str()) {
            return Err(format!(
                "objective.contrastive = \"{contrastive}\": expected one of {}",
                names.join(", ")
            ));
        }
        let distillation = match given.remove("distillation") {
            None => None,
            Some(toml::Value::Table(t)) => Some(DistillationConfig::try_from(t)?),
            Some(other) => {
                return Err(format!("objective.distillation: a table, not {other}"));
            }
        };
        Ok(Self {
            contrastive,
            settings: resolve_section(Section::Objective, &given)?,
            distillation,
        })
    }
}

impl From<ObjectiveConfig> for Table {
    fn from(c: ObjectiveConfig) -> Table {
        let mut t = Table::new();
        t.insert("contrastive".into(), c.contrastive.into());
        t.extend(c.settings);
        if let Some(d) = c.distillation {
            t.insert("distillation".into(), toml::Value::Table(d.into()));
        }
        t
    }
}

impl TryFrom<Table> for DistillationConfig {
    type Error = String;

    fn try_from(mut given: Table) -> Result<Self, String> {
        let teacher = match given.remove("teacher") {
            Some(toml::Value::String(path)) => PathBuf::from(path),
            Some(other) => {
                return Err(format!(
                    "objective.distillation.teacher: a path, not {other}"
                ));
            }
            None => return Err("objective.distillation: missing field `teacher`".into()),
        };
        let teacher_side = match given.remove("teacher_side") {
            None => TeacherSide::Target,
            Some(v) => TeacherSide::deserialize(v).map_err(|e| {
                format!(
                    "objective.distillation.teacher_side: {}",
                    e.to_string().trim()
                )
            })?,
        };
        let normalize_student = match given.remove("normalize_student") {
            None => false,
            Some(toml::Value::Boolean(b)) => b,
            Some(other) => {
                return Err(format!(
                    "objective.distillation.normalize_student: true or false, not {other}"
                ));
            }
        };
        Ok(Self {
            teacher,
            teacher_side,
            normalize_student,
            settings: resolve_section(Section::Distillation, &given)?,
        })
    }
}

impl From<DistillationConfig> for Table {
    fn from(d: DistillationConfig) -> Table {
        let mut t = Table::new();
        t.insert(
            "teacher".into(),
            d.teacher.to_string_lossy().into_owned().into(),
        );
        t.insert("teacher_side".into(), d.teacher_side.name().into());
        t.extend(d.settings);
        t.insert("normalize_student".into(), d.normalize_student.into());
        t
    }
}

impl DistillationConfig {
    /// MSE distillation alone (Reimers & Gurevych 2020) from `teacher` on `side`.
    pub fn mse_only(teacher: PathBuf, side: TeacherSide) -> Self {
        Self {
            teacher,
            teacher_side: side,
            normalize_student: false,
            settings: resolve_section(Section::Distillation, &Table::new())
                .expect("the default settings resolve"),
        }
    }

    /// These settings with `key` set to `value` (a key a distillation loss owns).
    pub fn with(mut self, key: &str, value: impl Into<toml::Value>) -> Result<Self, String> {
        self.settings.insert(key.to_string(), value.into());
        self.settings = resolve_section(Section::Distillation, &self.settings)?;
        Ok(self)
    }

    /// The section as the losses read it: their settings and `teacher_side`.
    pub fn section(&self) -> Table {
        let mut t = self.settings.clone();
        t.insert("teacher_side".into(), self.teacher_side.name().into());
        t
    }
}

impl ObjectiveConfig {
    /// These `[objective]` settings with `key` set to `value` (a key a loss owns).
    pub fn with(mut self, key: &str, value: impl Into<toml::Value>) -> Result<Self, String> {
        if key == "contrastive" {
            let mut table = Table::from(self);
            table.insert(key.into(), value.into());
            return Self::try_from(table);
        }
        self.settings.insert(key.to_string(), value.into());
        self.settings = resolve_section(Section::Objective, &self.settings)?;
        Ok(self)
    }

    /// The registered terms this objective turns on, in the registry's order, each with
    /// the section it reads.
    pub fn terms(&self) -> Vec<(&'static TermSpec, Table)> {
        let distillation = self.distillation.as_ref().map(DistillationConfig::section);
        TERMS
            .iter()
            .filter_map(|spec| {
                let section = match spec.section {
                    Section::Objective => self.settings.clone(),
                    Section::Distillation => distillation.clone()?,
                };
                spec.is_on(&section, &self.contrastive)
                    .then_some((*spec, section))
            })
            .collect()
    }

    /// Range checks of every registered term's settings (on or off), each naming its key.
    pub fn check(&self, checks: &mut Checks) {
        let distillation = self.distillation.as_ref().map(DistillationConfig::section);
        for spec in TERMS {
            match (spec.section, &distillation) {
                (Section::Objective, _) => (spec.check)(&self.settings, checks),
                (Section::Distillation, Some(section)) => (spec.check)(section, checks),
                (Section::Distillation, None) => {}
            }
        }
    }
}

impl Default for ObjectiveConfig {
    fn default() -> Self {
        Self::try_from(Table::new()).expect("the default objective resolves")
    }
}

//! The training objective of a recipe: the sum of the loss terms it turns on
//! (`losses::registry::TERMS`, in that order: the contrastive loss, XTR, the distillation
//! terms), as ems.txt Eq. 12 combines its two, L = (L_xtr + L_cntrs) / |B| (each term
//! here is already a batch mean). Loss heads (EMS projection, XTR, LEALLA's
//! up-projection) have their own parameters in the objective's VarStore; they are
//! trained with the encoder and dropped from the exported model.

use tch::{Device, Kind, Tensor, nn};

use super::config::{ObjectiveConfig, TeacherSide};
use crate::error::{LaseError, Result};
use crate::losses::bag_of_tokens;
use crate::losses::term::{Term, TermInput, TermSetup, TermSpec, teacher_targets};

/// What a loss needs to know about a batch besides the two sides' vectors.
pub struct BatchContext {
    /// [N] language ids of x and y (objective language table).
    pub lang_x: Tensor,
    pub lang_y: Tensor,
    /// [N, V] bags of tokens, present when XTR is on.
    pub bag_x: Option<Tensor>,
    pub bag_y: Option<Tensor>,
    /// Teacher embeddings of the batch's x and y sides, when distilling (a side the
    /// teacher does not embed is None).
    pub teacher_x: Option<Tensor>,
    pub teacher_y: Option<Tensor>,
    /// [M, d_t] teacher vectors of other training rows, drawn for this batch when a term
    /// [asks for them](Objective::teacher_bank_rows).
    pub teacher_bank: Option<Tensor>,
}

impl BatchContext {
    /// The context without bags of tokens (enough unless XTR is on).
    pub fn new(lang_x: &[i64], lang_y: &[i64], device: Device) -> Self {
        Self {
            lang_x: Tensor::from_slice(lang_x).to_device(device),
            lang_y: Tensor::from_slice(lang_y).to_device(device),
            bag_x: None,
            bag_y: None,
            teacher_x: None,
            teacher_y: None,
            teacher_bank: None,
        }
    }

    /// Adds teacher embeddings ([N, d_t]) of either or both sides.
    pub fn with_teacher(mut self, teacher_x: Option<Tensor>, teacher_y: Option<Tensor>) -> Self {
        self.teacher_x = teacher_x;
        self.teacher_y = teacher_y;
        self
    }

    /// Adds a bank of the teacher's vectors of other training rows ([M, d_t]).
    pub fn with_teacher_bank(mut self, bank: Tensor) -> Self {
        self.teacher_bank = Some(bank);
        self
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

/// A recipe's objective: its terms with their heads.
pub struct Objective {
    pub vs: nn::VarStore,
    terms: Vec<(&'static TermSpec, Box<dyn Term>)>,
    /// Subtracted from teacher vectors before soft labels; set by the trainer when a
    /// term [wants it](Objective::wants_teacher_center).
    teacher_center: Option<Tensor>,
}

impl Objective {
    /// `dim`: sentence vector width; `languages`: size of the language table;
    /// `vocab_size`: the tokenizer's vocabulary; `teacher_dim`: the teacher's width.
    pub fn new(
        config: &ObjectiveConfig,
        dim: usize,
        languages: usize,
        vocab_size: usize,
        teacher_dim: Option<usize>,
        device: Device,
    ) -> Result<Self> {
        let vs = nn::VarStore::new(device);
        let teacher_both_sides = config
            .distillation
            .as_ref()
            .is_some_and(|d| d.teacher_side == TeacherSide::Both);
        let mut terms = Vec::new();
        for (spec, section) in config.terms() {
            let setup = TermSetup {
                path: vs.root() / spec.name,
                dim,
                teacher_dim,
                languages,
                vocab_size,
                teacher_both_sides,
            };
            let term = (spec.build)(&section, setup).map_err(LaseError::InvalidArgument)?;
            terms.push((spec, term));
        }
        Ok(Self {
            vs,
            terms,
            teacher_center: None,
        })
    }

    /// Whether a term computes soft labels around the teacher's mean vector
    /// (`soft_label_centering`): the trainer then passes it to
    /// [`Objective::set_teacher_center`].
    pub fn wants_teacher_center(&self) -> bool {
        self.terms.iter().any(|(_, t)| t.wants_teacher_center())
    }

    /// The mean teacher vector ([d_t]) that soft labels are computed around.
    pub fn set_teacher_center(&mut self, mean: Tensor) {
        self.teacher_center = Some(mean);
    }

    /// How many of the teacher's cached vectors a batch needs beside its own (the most any
    /// term asks for; 0 for none): pass them with [`BatchContext::with_teacher_bank`].
    pub fn teacher_bank_rows(&self) -> usize {
        self.terms
            .iter()
            .map(|(_, t)| t.teacher_bank_rows())
            .max()
            .unwrap_or(0)
    }

    pub fn needs_bags(&self) -> bool {
        self.terms.iter().any(|(spec, _)| spec.needs_bags)
    }

    /// Whether the loss needs each side encoded a second time under another dropout
    /// mask (SimCSE): pass those vectors to [`Objective::loss_with_second_view`].
    pub fn needs_second_view(&self) -> bool {
        self.terms.iter().any(|(spec, _)| spec.needs_second_view)
    }

    /// Loss on sentence vectors `x`, `y` ([N, d]), for objectives that do not
    /// [need a second view](Objective::needs_second_view).
    pub fn loss(&self, x: &Tensor, y: &Tensor, ctx: &BatchContext) -> LossOutput {
        self.loss_with_second_view(x, y, None, ctx)
    }

    /// Loss on sentence vectors `x`, `y` ([N, d]) and, for SimCSE, the same sentences'
    /// vectors under another dropout mask, `again = (x', y')`.
    pub fn loss_with_second_view(
        &self,
        x: &Tensor,
        y: &Tensor,
        again: Option<(&Tensor, &Tensor)>,
        ctx: &BatchContext,
    ) -> LossOutput {
        let teacher = teacher_targets(
            ctx.teacher_x.as_ref(),
            ctx.teacher_y.as_ref(),
            x.kind(),
            self.teacher_center.as_ref(),
            ctx.teacher_bank.as_ref(),
        );
        let input = TermInput {
            x,
            y,
            again,
            lang_x: &ctx.lang_x,
            lang_y: &ctx.lang_y,
            bag_x: ctx.bag_x.as_ref(),
            bag_y: ctx.bag_y.as_ref(),
            teacher: teacher.as_ref(),
        };
        let mut parts = Vec::new();
        let mut total = Tensor::zeros([], (x.kind(), x.device()));
        for (spec, term) in &self.terms {
            // A distillation term without the teacher's vectors of this batch adds nothing.
            if spec.section == crate::losses::term::Section::Distillation && teacher.is_none() {
                continue;
            }
            let l = term.loss(&input);
            parts.push((spec.name, l.double_value(&[])));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::config::DistillationConfig;

    /// An objective of distillation terms only, on `d`-wide student and teacher vectors.
    fn distillation_only(distillation: DistillationConfig, d: usize) -> Result<Objective> {
        let config = ObjectiveConfig {
            distillation: Some(distillation),
            ..ObjectiveConfig::default()
                .with("contrastive", "none")
                .and_then(|o| o.with("xtr", false))
                .unwrap()
        };
        Objective::new(&config, d, 1, 10, Some(d), Device::Cpu)
    }

    /// Average soft labels with a one-sided teacher are refused at construction (the
    /// loss would otherwise have only one side's vectors to average).
    #[test]
    fn average_labels_need_a_two_sided_teacher() {
        let mut distillation = DistillationConfig::mse_only("unused".into(), TeacherSide::Target)
            .with("soft_contrastive", 1.0)
            .and_then(|d| d.with("soft_label", "average"))
            .unwrap();
        let err = distillation_only(distillation.clone(), 4)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("teacher_side = \"both\""), "{err}");
        distillation.teacher_side = TeacherSide::Both;
        assert!(distillation_only(distillation, 4).is_ok());
    }

    /// multistage-distillation.txt Eq. 6: (1/N) Σ_i [‖t_i - s(x_i)‖² + ‖t_i - s(y_i)‖²],
    /// a squared norm per sentence; the default is the mean over N·d elements.
    #[test]
    fn mse_summed_over_dimensions_is_eq_6() {
        let (n, d) = (4i64, 6i64);
        let opts = (Kind::Double, Device::Cpu);
        tch::manual_seed(5);
        let (t, x, y) = (
            Tensor::randn([n, d], opts),
            Tensor::randn([n, d], opts),
            Tensor::randn([n, d], opts),
        );
        let mse_of = |sum: bool| {
            let distillation = DistillationConfig::mse_only("unused".into(), TeacherSide::Target)
                .with("mse_sum_over_dimensions", sum)
                .unwrap();
            let objective = distillation_only(distillation, d as usize).unwrap();
            let langs = vec![0i64; n as usize];
            let ctx = BatchContext::new(&langs, &langs, Device::Cpu)
                .with_teacher(None, Some(t.shallow_clone()));
            let out = objective.loss(&x, &y, &ctx);
            out.parts.iter().find(|(k, _)| *k == "mse").unwrap().1
        };
        let mut eq6 = 0.0;
        for i in 0..n {
            for j in 0..d {
                let tv = t.double_value(&[i, j]);
                eq6 +=
                    (tv - x.double_value(&[i, j])).powi(2) + (tv - y.double_value(&[i, j])).powi(2);
            }
        }
        eq6 /= n as f64;
        assert!(
            (mse_of(true) - eq6).abs() < 1e-9,
            "{} vs {eq6}",
            mse_of(true)
        );
        assert!((mse_of(false) - eq6 / d as f64).abs() < 1e-9);
    }

    /// MSE targets by teacher side: a one-sided teacher (Reimers & Gurevych 2020) is the
    /// target of both student sides; a two-sided one (multistage-distillation.txt Eq. 4,
    /// S(s) -> A(s) and S(t) -> A(t)) gives each student side its own side's vector.
    #[test]
    fn mse_targets_follow_the_teacher_side() {
        let (n, d) = (4i64, 6i64);
        let opts = (Kind::Double, Device::Cpu);
        tch::manual_seed(11);
        let randn = || Tensor::randn([n, d], opts);
        let (tx, ty, x, y) = (randn(), randn(), randn(), randn());
        // (1/(N d)) Σ_i ‖a_i - x_i‖² + (1/(N d)) Σ_i ‖b_i - y_i‖², by hand.
        let by_hand = |a: &Tensor, b: &Tensor| {
            let mut sum = 0.0;
            for i in 0..n {
                for j in 0..d {
                    sum += (a.double_value(&[i, j]) - x.double_value(&[i, j])).powi(2)
                        + (b.double_value(&[i, j]) - y.double_value(&[i, j])).powi(2);
                }
            }
            sum / (n * d) as f64
        };
        let mse_of = |side: TeacherSide, teacher_x: Option<&Tensor>, teacher_y: Option<&Tensor>| {
            let objective = distillation_only(
                DistillationConfig::mse_only("unused".into(), side),
                d as usize,
            )
            .unwrap();
            let langs = vec![0i64; n as usize];
            let ctx = BatchContext::new(&langs, &langs, Device::Cpu).with_teacher(
                teacher_x.map(Tensor::shallow_clone),
                teacher_y.map(Tensor::shallow_clone),
            );
            let out = objective.loss(&x, &y, &ctx);
            out.parts.iter().find(|(k, _)| *k == "mse").unwrap().1
        };
        let close = |got: f64, want: f64| (got - want).abs() < 1e-9 * want.max(1.0);
        let both = mse_of(TeacherSide::Both, Some(&tx), Some(&ty));
        assert!(
            close(both, by_hand(&tx, &ty)),
            "both: {both} vs {}",
            by_hand(&tx, &ty)
        );
        let target = mse_of(TeacherSide::Target, None, Some(&ty));
        assert!(close(target, by_hand(&ty, &ty)), "target: {target}");
        let source = mse_of(TeacherSide::Source, Some(&tx), None);
        assert!(close(source, by_hand(&tx, &tx)), "source: {source}");
    }

    /// A teacher whose vectors share a large offset (cosine 0.9 between different
    /// sentences) gives near-uniform Priority labels at τ 0.1: a student that already
    /// separates the sentences is charged a high soft-contrastive loss. Centred labels
    /// (`soft_label_centering`) see the teacher's distinct directions again.
    #[test]
    fn centred_soft_labels_recover_the_signal_of_an_anisotropic_teacher() {
        let (n, d) = (8i64, 16i64);
        let opts = (Kind::Float, Device::Cpu);
        let directions = Tensor::cat(&[Tensor::eye(n, opts), Tensor::zeros([n, d - n], opts)], 1);
        let mut offset = vec![0f32; d as usize];
        offset[d as usize - 1] = 3.0;
        let teacher = &directions + Tensor::from_slice(&offset);
        let distillation = DistillationConfig::mse_only("unused".into(), TeacherSide::Target)
            .with("mse", 0.0)
            .and_then(|d| d.with("soft_contrastive", 1.0))
            .and_then(|d| d.with("soft_label_centering", true))
            .unwrap();
        let mut objective = distillation_only(distillation, d as usize).unwrap();
        let langs = vec![0i64; n as usize];
        let ctx = BatchContext::new(&langs, &langs, Device::Cpu)
            .with_teacher(None, Some(teacher.shallow_clone()));
        let soft = |o: &Objective| {
            let out = o.loss(&directions, &directions, &ctx);
            out.parts
                .iter()
                .find(|(k, _)| *k == "soft_contrastive")
                .unwrap()
                .1
        };
        let plain = soft(&objective);
        objective.set_teacher_center(teacher.mean_dim(0, false, Kind::Float));
        let centred = soft(&objective);
        assert!(plain > 5.0, "near-uniform labels: {plain}");
        assert!(centred < 0.2 * plain, "centred {centred} vs plain {plain}");
    }
}

/// Every loss in src/losses/ selected by a small TOML recipe: the objective built from
/// the parsed recipe computes that loss's term (its part's name and value), and a recipe
/// that leaves it off does not.
#[cfg(test)]
mod recipe_tests {
    use super::*;
    use crate::losses::additive_margin::{DEFAULT_SCALE, LEALLA_SCALE};
    use crate::losses::reference::{cos, fixed_embeddings, tensor};
    use crate::losses::{
        EmsContrastive, FeatureDistillation, SoftLabel, TeacherVectors, Xtr, XtrConfig,
        bidirectional_info_nce, hardest_in_batch_negatives, logit_distillation, mcl,
        mse_distillation, simcse, soft_contrastive, soft_contrastive_tcm, soft_labels,
        teacher_bank_info_nce, triplet,
    };
    use crate::train::config::{TeacherSide, TrainConfig};

    const N: usize = 6;
    const D: usize = 8;
    const VOCAB: usize = 12;

    /// The `[objective]` of a recipe whose objective table holds `objective` (TOML).
    fn recipe(objective: &str) -> Result<ObjectiveConfig> {
        TrainConfig::from_toml(&format!(
            "[data]\nsources = [{{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }}]\nexclude_test_sets = false\n[objective]\n{objective}\n"
        ))
        .map(|c| c.objective)
    }

    /// A fixed batch: the student's vectors of both sides, the same sides again under
    /// other dropout masks, the teacher's vectors of both sides, and token ids.
    struct Batch {
        x: Tensor,
        y: Tensor,
        x2: Tensor,
        y2: Tensor,
        tx: Tensor,
        ty: Tensor,
        /// More teacher vectors: the bank contrastive distillation draws.
        bank: Tensor,
        ids_x: Vec<Vec<i64>>,
        ids_y: Vec<Vec<i64>>,
    }

    fn batch() -> Batch {
        let t = |seed| tensor(&fixed_embeddings(N, D, seed));
        let ids = |offset: usize| {
            (0..N)
                .map(|i| {
                    (0..3 + i % 3)
                        .map(|k| ((i * 5 + k * 3 + offset) % VOCAB) as i64)
                        .collect()
                })
                .collect()
        };
        Batch {
            x: t(101),
            y: t(102),
            x2: t(103),
            y2: t(104),
            tx: t(105),
            ty: t(106),
            bank: tensor(&fixed_embeddings(3 * N, D, 107)),
            ids_x: ids(0),
            ids_y: ids(7),
        }
    }

    /// The objective of `objective` (TOML) and its loss parts on `b`, given the teacher's
    /// vectors of the sides the recipe's `teacher_side` names (as the trainer's cache
    /// does) and the second dropout view.
    fn run(objective: &str, b: &Batch) -> (Objective, Vec<(&'static str, f64)>) {
        let config = recipe(objective).unwrap();
        let mut o = Objective::new(&config, D, 2, VOCAB, Some(D), Device::Cpu).unwrap();
        o.set_double();
        let ix: Vec<&[i64]> = b.ids_x.iter().map(Vec::as_slice).collect();
        let iy: Vec<&[i64]> = b.ids_y.iter().map(Vec::as_slice).collect();
        let mut ctx =
            BatchContext::new(&[0; N], &[1; N], Device::Cpu).with_bags(&ix, &iy, VOCAB, &[]);
        if let Some(d) = &config.distillation {
            let (sx, sy) = match d.teacher_side {
                TeacherSide::Source => (true, false),
                TeacherSide::Target => (false, true),
                TeacherSide::Both => (true, true),
            };
            ctx = ctx.with_teacher(
                sx.then(|| b.tx.shallow_clone()),
                sy.then(|| b.ty.shallow_clone()),
            );
            // As the trainer: as many bank rows as a term asks for (here at most 3N).
            let rows = (o.teacher_bank_rows() as i64).min(b.bank.size()[0]);
            if rows > 0 {
                ctx = ctx.with_teacher_bank(b.bank.narrow(0, 0, rows));
            }
        }
        let out = o.loss_with_second_view(&b.x, &b.y, Some((&b.x2, &b.y2)), &ctx);
        (o, out.parts)
    }

    fn part(parts: &[(&'static str, f64)], name: &str) -> Option<f64> {
        parts.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    fn value(t: Tensor) -> f64 {
        t.double_value(&[])
    }

    /// `got` is `want` to rounding, and not a trivial value.
    fn assert_close(name: &str, got: Option<f64>, want: f64) {
        let got = got.unwrap_or_else(|| panic!("no {name} part"));
        assert!(want.abs() > 1e-6, "{name}: degenerate expectation {want}");
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
            "{name}: objective {got}, loss {want}"
        );
    }

    /// A distillation-only recipe: `terms` inside `[objective.distillation]`.
    fn distillation(terms: &str) -> String {
        format!(
            "contrastive = \"none\"\nxtr = false\n[objective.distillation]\nteacher = \"t\"\nteacher_side = \"target\"\n{terms}\n"
        )
    }

    const PLAIN: &str = "contrastive = \"info-nce\"\nxtr = false";

    #[test]
    fn ems_contrastive_from_a_recipe() {
        let b = batch();
        let (o, parts) = run(
            "contrastive = \"ems\"\nxtr = false\nems = { projection_dim = 4, temperature = 0.2 }",
            &b,
        );
        // The same head, with the objective's weights, on the same vectors.
        let mut vs = nn::VarStore::new(Device::Cpu);
        let config = crate::losses::EmsContrastiveConfig {
            projection_dim: 4,
            temperature: 0.2,
        };
        let head = EmsContrastive::new(vs.root() / "ems_contrastive", D, &config);
        vs.set_kind(Kind::Double);
        vs.copy(&o.vs).unwrap();
        assert_close(
            "ems_contrastive",
            part(&parts, "ems_contrastive"),
            value(head.loss(&b.x, &b.y)),
        );
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert_eq!(part(&run(PLAIN, &b).1, "ems_contrastive"), None);
    }

    #[test]
    fn info_nce_from_a_recipe() {
        let b = batch();
        let (_, parts) = run(
            "contrastive = \"info-nce\"\nxtr = false\ntemperature = 0.2",
            &b,
        );
        assert_close(
            "info_nce",
            part(&parts, "info_nce"),
            value(bidirectional_info_nce(&b.x, &b.y, 0.2)),
        );
        assert_eq!(
            part(&run("contrastive = \"ams\"\nxtr = false", &b).1, "info_nce"),
            None
        );
    }

    /// lealla.txt Eq. 2 by hand: -log(e^{s(φ_ii - m)} / (e^{s(φ_ii - m)} + Σ_{n≠i} e^{s φ_in})),
    /// both directions, mean over the batch.
    fn ams_by_hand(b: &Batch, margin: f64, scale: f64) -> f64 {
        let (x, y) = (
            crate::losses::reference::rows(&b.x),
            crate::losses::reference::rows(&b.y),
        );
        let mut sum = 0.0;
        for i in 0..N {
            for (a, c) in [(&x, &y), (&y, &x)] {
                let pos = (scale * (cos(&a[i], &c[i]) - margin)).exp();
                let neg: f64 = (0..N)
                    .filter(|&n| n != i)
                    .map(|n| (scale * cos(&a[i], &c[n])).exp())
                    .sum();
                sum -= (pos / (pos + neg)).ln();
            }
        }
        sum / N as f64
    }

    /// `objective.scale` reaches AMS: 1.0 is lealla.txt Eq. 2 as printed, and a recipe
    /// without the key keeps EMS's variant, s = 10.
    #[test]
    fn ams_and_its_scale_from_a_recipe() {
        let b = batch();
        let (_, lealla) = run(
            "contrastive = \"ams\"\nxtr = false\nmargin = 0.3\nscale = 1.0",
            &b,
        );
        assert_close("ams", part(&lealla, "ams"), ams_by_hand(&b, 0.3, 1.0));
        let (_, ems) = run("contrastive = \"ams\"\nxtr = false\nmargin = 0.3", &b);
        assert_eq!(DEFAULT_SCALE, 10.0);
        assert_close("ams", part(&ems, "ams"), ams_by_hand(&b, 0.3, 10.0));
        assert_eq!(part(&run(PLAIN, &b).1, "ams"), None);
        for bad in ["0.0", "-1.0", "nan"] {
            let err = recipe(&format!("contrastive = \"ams\"\nscale = {bad}"))
                .err()
                .unwrap_or_else(|| panic!("scale = {bad} accepted"))
                .to_string();
            assert!(err.contains("objective.scale"), "{err}");
        }
    }

    /// The shipped LEALLA recipes use lealla.txt Eq. 2's AMS, which has no scale.
    #[test]
    fn lealla_recipes_use_the_papers_ams_without_a_scale() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for size in ["small", "base", "large"] {
            let path = root.join(format!("configs/lealla/{size}.toml"));
            let c = TrainConfig::from_file(&path).unwrap().objective;
            assert_eq!(c.contrastive, "ams", "{size}");
            assert_eq!(c.settings["scale"].as_float(), Some(LEALLA_SCALE), "{size}");
        }
        assert_eq!(LEALLA_SCALE, 1.0);
    }

    #[test]
    fn triplet_from_a_recipe() {
        let b = batch();
        let (_, parts) = run(
            "contrastive = \"triplet\"\nxtr = false\ntriplet_distance = \"euclidean\"\ntriplet_margin = 0.7",
            &b,
        );
        let negatives = b.y.index_select(0, &hardest_in_batch_negatives(&b.x, &b.y));
        let want = triplet(
            &b.x,
            &b.y,
            &negatives,
            crate::losses::TripletDistance::Euclidean,
            0.7,
        );
        assert_close("triplet", part(&parts, "triplet"), value(want));
        assert_eq!(part(&run(PLAIN, &b).1, "triplet"), None);
    }

    /// SimCSE on each side: its vectors against the same sentences' second dropout view.
    #[test]
    fn simcse_from_a_recipe() {
        let b = batch();
        let (o, parts) = run(
            "contrastive = \"simcse\"\nxtr = false\nsimcse_temperature = 0.1",
            &b,
        );
        assert!(o.needs_second_view());
        let want = simcse(&b.x, &b.x2, 0.1) + simcse(&b.y, &b.y2, 0.1);
        assert_close("simcse", part(&parts, "simcse"), value(want));
        assert_eq!(parts.len(), 1, "{parts:?}");
        // The paper's temperature when the recipe does not name one.
        let (_, default) = run("contrastive = \"simcse\"\nxtr = false", &b);
        let want = simcse(&b.x, &b.x2, 0.05) + simcse(&b.y, &b.y2, 0.05);
        assert_close("simcse", part(&default, "simcse"), value(want));
        let (plain, parts) = run(PLAIN, &b);
        assert!(!plain.needs_second_view());
        assert_eq!(part(&parts, "simcse"), None);
        let err = recipe("contrastive = \"simcse\"\nsimcse_temperature = 0.0")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("simcse_temperature"), "{err}");
    }

    #[test]
    fn xtr_from_a_recipe() {
        let b = batch();
        let (o, parts) = run(
            "contrastive = \"none\"\nxtr = true\nxtr_head = { language_dim = 3 }",
            &b,
        );
        let mut vs = nn::VarStore::new(Device::Cpu);
        let head = Xtr::new(
            vs.root() / "xtr",
            2,
            D,
            VOCAB,
            &XtrConfig { language_dim: 3 },
        );
        vs.set_kind(Kind::Double);
        vs.copy(&o.vs).unwrap();
        let ix: Vec<&[i64]> = b.ids_x.iter().map(Vec::as_slice).collect();
        let iy: Vec<&[i64]> = b.ids_y.iter().map(Vec::as_slice).collect();
        let lang_x = Tensor::from_slice(&[0i64; N]);
        let lang_y = Tensor::from_slice(&[1i64; N]);
        let want = head.loss(
            &b.x,
            &b.y,
            &lang_x,
            &lang_y,
            &bag_of_tokens(&ix, VOCAB, &[], Device::Cpu),
            &bag_of_tokens(&iy, VOCAB, &[], Device::Cpu),
        );
        assert_close("xtr", part(&parts, "xtr"), value(want));
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert_eq!(part(&run(PLAIN, &b).1, "xtr"), None);
    }

    #[test]
    fn mse_distillation_from_a_recipe() {
        let b = batch();
        let (_, parts) = run(&distillation("mse = 2.0"), &b);
        let want = mse_distillation(&b.ty, &b.ty, &b.x, &b.y) * 2.0;
        assert_close("mse", part(&parts, "mse"), value(want));
        assert_eq!(
            part(&run(&distillation("mse = 0.0\nmcl = 1.0"), &b).1, "mse"),
            None
        );
    }

    #[test]
    fn feature_distillation_from_a_recipe() {
        let b = batch();
        let (o, parts) = run(&distillation("mse = 0.0\nfeature = 3.0"), &b);
        let mut vs = nn::VarStore::new(Device::Cpu);
        let head = FeatureDistillation::new(vs.root() / "feature_distillation", D, D);
        vs.set_kind(Kind::Double);
        vs.copy(&o.vs).unwrap();
        let want = head.loss(&b.ty, &b.ty, &b.x, &b.y) * 3.0;
        assert_close(
            "feature_distillation",
            part(&parts, "feature_distillation"),
            value(want),
        );
        assert_eq!(parts.len(), 1, "{parts:?}");
        let (_, off) = run(&distillation("mse = 1.0"), &b);
        assert_eq!(part(&off, "feature_distillation"), None);
    }

    #[test]
    fn logit_distillation_from_a_recipe() {
        let b = batch();
        let (_, parts) = run(
            &distillation("mse = 0.0\nlogit = 0.5\nlogit_temperature = 10.0"),
            &b,
        );
        let want = logit_distillation(&b.ty, &b.ty, &b.x, &b.y, 10.0) * 0.5;
        assert_close(
            "logit_distillation",
            part(&parts, "logit_distillation"),
            value(want),
        );
        assert_eq!(
            part(&run(&distillation("mse = 1.0"), &b).1, "logit_distillation"),
            None
        );
    }

    #[test]
    fn soft_contrastive_from_a_recipe() {
        let b = batch();
        let w = soft_labels(TeacherVectors::Priority { anchor: &b.ty }, 0.1);
        let (_, parts) = run(&distillation("mse = 0.0\nsoft_contrastive = 1.0"), &b);
        let want = soft_contrastive(&b.x, &b.y, &w, 0.1);
        assert_close(
            "soft_contrastive",
            part(&parts, "soft_contrastive"),
            value(want),
        );
        // TCM (Eq. 7) with λ from the recipe.
        let (_, tcm) = run(
            &distillation("mse = 0.0\nsoft_contrastive = 1.0\ntcm_lambda = 0.3"),
            &b,
        );
        let want = soft_contrastive_tcm(&b.x, &b.y, &w, 0.1, 0.3);
        assert_close(
            "soft_contrastive",
            part(&tcm, "soft_contrastive"),
            value(want),
        );
        // Average labels (Eq. 5) from a two-sided teacher.
        let (_, average) = run(
            "contrastive = \"none\"\nxtr = false\n[objective.distillation]\nteacher = \"t\"\nteacher_side = \"both\"\nmse = 0.0\nsoft_contrastive = 1.0\nsoft_label = \"average\"",
            &b,
        );
        let w = soft_labels(
            TeacherVectors::for_label(SoftLabel::Average, &b.tx, Some(&b.ty)).unwrap(),
            0.1,
        );
        let want = soft_contrastive(&b.x, &b.y, &w, 0.1);
        assert_close(
            "soft_contrastive",
            part(&average, "soft_contrastive"),
            value(want),
        );
        assert_eq!(
            part(&run(&distillation("mse = 1.0"), &b).1, "soft_contrastive"),
            None
        );
    }

    #[test]
    fn mcl_from_a_recipe() {
        let b = batch();
        let (_, parts) = run(&distillation("mse = 0.0\nmcl = 2.0"), &b);
        let want = mcl(&b.ty, &b.x, &b.y) * 2.0;
        assert_close("mcl", part(&parts, "mcl"), value(want));
        assert_eq!(part(&run(&distillation("mse = 1.0"), &b).1, "mcl"), None);
    }

    #[test]
    fn teacher_bank_from_a_recipe() {
        let b = batch();
        let (o, parts) = run(
            &distillation("mse = 0.0\nbank = 0.5\nbank_size = 5\nbank_temperature = 0.2"),
            &b,
        );
        assert_eq!(o.teacher_bank_rows(), 5);
        // A one-sided teacher: both student sides against the target side's vectors.
        let bank = b.bank.narrow(0, 0, 5);
        let want = (teacher_bank_info_nce(&b.x, &b.ty, &bank, 0.2)
            + teacher_bank_info_nce(&b.y, &b.ty, &bank, 0.2))
            * 0.5;
        assert_close("teacher_bank", part(&parts, "teacher_bank"), value(want));
        let (off, parts) = run(&distillation("mse = 1.0"), &b);
        assert_eq!(part(&parts, "teacher_bank"), None);
        assert_eq!(off.teacher_bank_rows(), 0);
    }

    /// Each file of src/losses/ with the recipe that selects it and the part it logs: a
    /// loss added there without a way to select it from a recipe fails here.
    #[test]
    fn every_loss_in_src_losses_is_reachable_from_a_recipe() {
        let selections = [
            (
                "additive_margin",
                "contrastive = \"ams\"\nxtr = false".to_string(),
                "ams",
            ),
            (
                "ems_contrastive",
                "contrastive = \"ems\"\nxtr = false".into(),
                "ems_contrastive",
            ),
            (
                "feature_distillation",
                distillation("mse = 0.0\nfeature = 1.0"),
                "feature_distillation",
            ),
            (
                "info_nce",
                "contrastive = \"info-nce\"\nxtr = false".into(),
                "info_nce",
            ),
            (
                "logit_distillation",
                distillation("mse = 0.0\nlogit = 1.0"),
                "logit_distillation",
            ),
            ("mcl", distillation("mse = 0.0\nmcl = 1.0"), "mcl"),
            ("mse_distillation", distillation("mse = 1.0"), "mse"),
            (
                "simcse",
                "contrastive = \"simcse\"\nxtr = false".into(),
                "simcse",
            ),
            (
                "soft_contrastive",
                distillation("mse = 0.0\nsoft_contrastive = 1.0"),
                "soft_contrastive",
            ),
            (
                "teacher_bank",
                distillation("mse = 0.0\nbank = 1.0"),
                "teacher_bank",
            ),
            (
                "triplet",
                "contrastive = \"triplet\"\nxtr = false".into(),
                "triplet",
            ),
            ("xtr", "contrastive = \"none\"\nxtr = true".into(), "xtr"),
        ];
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/losses");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            // The recipe machinery beside the losses (term.rs: TermSpec; registry.rs).
            .filter(|stem| !["mod", "term", "registry"].contains(&stem.as_str()))
            .collect();
        files.sort();
        // Reached from a multi-stage recipe instead (stage 2 of train::multistage, which
        // tests/training.rs trains through), not from an objective.
        let multistage_only = ["bottleneck_alignment"];
        let multistage = include_str!("multistage.rs");
        for f in multistage_only {
            assert!(
                multistage.contains(&format!("losses::{f}(")),
                "{f}: not called by train::multistage"
            );
        }
        files.retain(|f| !multistage_only.contains(&f.as_str()));
        let listed: Vec<&str> = selections.iter().map(|(f, _, _)| *f).collect();
        assert_eq!(
            files, listed,
            "a loss file without a recipe selection (or a stale entry)"
        );
        // Each selection's part is a registered term's name.
        let registered: Vec<&str> = crate::losses::registry::TERMS
            .iter()
            .map(|t| t.name)
            .collect();
        let mut names: Vec<&str> = selections.iter().map(|(_, _, n)| *n).collect();
        let mut sorted_registered = registered.clone();
        names.sort();
        sorted_registered.sort();
        assert_eq!(names, sorted_registered, "registry vs loss files");
        let b = batch();
        for (file, objective, name) in &selections {
            let (_, parts) = run(objective, &b);
            let v =
                part(&parts, name).unwrap_or_else(|| panic!("{file}: no {name} part in {parts:?}"));
            assert!(v.is_finite() && v > 0.0, "{file}: {name} = {v}");
            assert_eq!(parts.len(), 1, "{file}: {parts:?}");
        }
    }
}

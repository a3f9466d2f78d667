//! Contrastive distillation against a bank of the teacher's cached vectors (Tian,
//! Krishnan & Isola 2020, "Contrastive Representation Distillation", ICLR; its InfoNCE
//! form): each student vector must pick its own teacher vector out of the batch's teacher
//! vectors and M more drawn at random from the teacher's cached training vectors:
//!
//! ```text
//! L = (1/N) Σ_i Σ_{f ∈ {x, y}} -log( e^{s(f_i, t_i)/T}
//!       / ( e^{s(f_i, t_i)/T} + Σ_{j ≠ i} e^{s(f_i, t_j)/T} + Σ_{b=1..M} e^{s(f_i, t_b)/T} ) )
//! ```
//!
//! t_i is the teacher's vector of pair i (with a one-sided teacher, the vector both
//! student sides are distilled onto); a negative equal to t_i (the same text elsewhere in
//! the batch or the bank) is left out of the sum. Why: in-batch contrastive losses see
//! N - 1 negatives (31 at the CPU batch of 32), while LaBSE's cross-accelerator negatives
//! and soft-contrastive.txt App. C.2 (Table 13) show that more negatives help retrieval;
//! the teacher is frozen, so its cached vectors are exact negatives that cost no encoder
//! pass (CRD needs a momentum-updated memory because its teacher features are computed
//! on the fly; here they are on disk already).
//!
//! Defaults as published with CRD (the authors' RepDistiller code: nce_k = 16,384 negatives,
//! nce_t = 0.07). Deviations from CRD: the
//! softmax (InfoNCE) form instead of CRD's binary NCE critic, no projection heads (the
//! student already lives in the teacher's space through the MSE term), the negatives are
//! drawn afresh each step instead of kept in a memory buffer, and both student sides
//! contrast against the teacher.

use tch::{Kind, Tensor};

use super::cosine_matrix;
use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};

/// CRD's number of negatives (RepDistiller's `nce_k`).
pub const DEFAULT_BANK_SIZE: usize = 16_384;
/// CRD's temperature (RepDistiller's `nce_t`).
pub const DEFAULT_TEMPERATURE: f64 = 0.07;
/// Two teacher vectors whose float32 cosine is above this are the same text's.
const SAME_TEXT_COSINE: f64 = 1.0 - 1e-5;

/// `student`: [N, d]; `teacher`: [N, d] its targets; `bank`: [M, d] more teacher vectors.
/// The mean over the N rows of the cross-entropy with t_i as the target among the batch's
/// teacher vectors and the bank's, negatives equal to t_i left out.
pub fn teacher_bank_info_nce(
    student: &Tensor,
    teacher: &Tensor,
    bank: &Tensor,
    temperature: f64,
) -> Tensor {
    let candidates = Tensor::cat(&[teacher, &bank.to_kind(teacher.kind())], 0);
    let logits = cosine_matrix(student, &candidates.to_kind(student.kind())) / temperature;
    // Same-text negatives, decided in float32 whatever the training precision.
    let same = cosine_matrix(
        &teacher.to_kind(Kind::Float),
        &candidates.to_kind(Kind::Float),
    )
    .gt(SAME_TEXT_COSINE);
    let n = student.size()[0];
    let own = Tensor::eye_m(n, candidates.size()[0], (Kind::Bool, student.device()));
    let masked = logits.masked_fill(&same.logical_and(&own.logical_not()), f64::NEG_INFINITY);
    let targets = Tensor::arange(n, (Kind::Int64, student.device()));
    super::diagonal_cross_entropy(&masked, &targets)
}

/// `[objective.distillation] bank = w` (off by default), `bank_size` negatives at
/// `bank_temperature`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TeacherBankSettings {
    #[serde(default)]
    pub bank: f64,
    #[serde(default = "TeacherBankSettings::default_size")]
    pub bank_size: usize,
    #[serde(default = "TeacherBankSettings::default_temperature")]
    pub bank_temperature: f64,
}

impl TeacherBankSettings {
    fn default_size() -> usize {
        DEFAULT_BANK_SIZE
    }
    fn default_temperature() -> f64 {
        DEFAULT_TEMPERATURE
    }
}

impl Settings for TeacherBankSettings {
    const SECTION: Section = Section::Distillation;
    const KEYS: &'static [&'static str] = &["bank", "bank_size", "bank_temperature"];
    fn check(&self, checks: &mut Checks) {
        checks.non_negative("objective.distillation.bank", self.bank);
        checks.at_least("objective.distillation.bank_size", self.bank_size, 1);
        checks.positive(
            "objective.distillation.bank_temperature",
            self.bank_temperature,
        );
    }
}

impl Term for TeacherBankSettings {
    fn loss(&self, input: &TermInput) -> Tensor {
        let t = input
            .teacher
            .expect("contrastive distillation needs the teacher's vectors");
        let empty;
        let bank = match &t.bank {
            Some(b) => b,
            None => {
                empty = t.y.narrow(0, 0, 0);
                &empty
            }
        };
        let side = |student: &Tensor, teacher: &Tensor| {
            teacher_bank_info_nce(student, teacher, bank, self.bank_temperature)
        };
        (side(input.x, &t.x) + side(input.y, &t.y)) * self.bank
    }

    fn teacher_bank_rows(&self) -> usize {
        self.bank_size
    }
}

pub const TERM: TermSpec = TermSpec::of::<TeacherBankSettings>(
    "teacher_bank",
    Switch::Weight("bank", 0.0),
    |section, setup| {
        if let Some(teacher) = setup.teacher_dim.filter(|&t| t != setup.dim) {
            return Err(format!(
                "contrastive distillation compares the student's vectors with the teacher's: the output width ({}) must equal the teacher's ({teacher}); set model.output_dim = {teacher}",
                setup.dim
            ));
        }
        Ok(Box::new(term::read::<TeacherBankSettings>(section)?))
    },
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn equals_a_hand_computation() {
        let (n, m, d) = (3, 5, 4);
        let s = fixed_embeddings(n, d, 31);
        let t = fixed_embeddings(n, d, 32);
        let bank = fixed_embeddings(m, d, 33);
        let temp = 0.07;
        let mut expected = 0.0;
        for (i, si) in s.iter().enumerate() {
            let logits: Vec<f64> = t.iter().chain(&bank).map(|c| cos(si, c) / temp).collect();
            expected += ce(&logits, i);
        }
        expected /= n as f64;
        let got =
            teacher_bank_info_nce(&tensor(&s), &tensor(&t), &tensor(&bank), temp).double_value(&[]);
        assert!((got - expected).abs() < 1e-10, "{got} vs {expected}");
    }

    /// The same text in the bank or elsewhere in the batch is not a negative: the loss
    /// equals the one without those copies, and is lower than counting them.
    #[test]
    fn copies_of_the_positive_are_not_negatives() {
        let (n, m, d) = (3, 4, 6);
        let s = fixed_embeddings(n, d, 41);
        let mut t = fixed_embeddings(n, d, 42);
        t[2] = t[0].clone();
        let bank = fixed_embeddings(m, d, 43);
        let mut bank_with_copies = bank.clone();
        bank_with_copies.push(t[1].clone());
        bank_with_copies.push(t[0].clone());
        let temp = 0.1;
        let mut expected = 0.0;
        let mut counting_copies = 0.0;
        for i in 0..n {
            let all: Vec<(usize, &Vec<f64>)> =
                t.iter().chain(&bank_with_copies).enumerate().collect();
            let kept: Vec<f64> = all
                .iter()
                .filter(|(j, c)| *j == i || cos(c, &t[i]) < 1.0 - 1e-9)
                .map(|(_, c)| cos(&s[i], c) / temp)
                .collect();
            let target = all
                .iter()
                .filter(|(j, c)| *j == i || cos(c, &t[i]) < 1.0 - 1e-9)
                .position(|(j, _)| *j == i)
                .unwrap();
            expected += ce(&kept, target);
            let every: Vec<f64> = all.iter().map(|(_, c)| cos(&s[i], c) / temp).collect();
            counting_copies += ce(&every, i);
        }
        expected /= n as f64;
        counting_copies /= n as f64;
        let got = teacher_bank_info_nce(&tensor(&s), &tensor(&t), &tensor(&bank_with_copies), temp)
            .double_value(&[]);
        assert!((got - expected).abs() < 1e-10, "{got} vs {expected}");
        assert!(got < counting_copies - 1e-3, "{got} vs {counting_copies}");
    }

    /// A student that sits on its teacher vectors scores lower than one that does not,
    /// and the gradient reaches the student only.
    #[test]
    fn pulls_the_student_onto_its_own_teacher_vector() {
        let t = tensor(&fixed_embeddings(8, 16, 51));
        let bank = tensor(&fixed_embeddings(64, 16, 52));
        let aligned = teacher_bank_info_nce(&t, &t, &bank, 0.07).double_value(&[]);
        let shuffled = teacher_bank_info_nce(&t.flip([0]), &t, &bank, 0.07).double_value(&[]);
        assert!(aligned < shuffled, "{aligned} vs {shuffled}");
        let student = t.flip([0]).set_requires_grad(true);
        teacher_bank_info_nce(&student, &t, &bank, 0.07).backward();
        assert!(student.grad().abs().sum(Kind::Double).double_value(&[]) > 0.0);
    }
}

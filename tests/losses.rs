//! Every training loss: autograd gradients (w.r.t. its inputs and its own parameters)
//! against central finite differences in float64. Values are checked against hand
//! computations in each loss's unit tests.

mod common;

use lase::losses::{
    EmsContrastive, EmsContrastiveConfig, TripletDistance, Xtr, XtrConfig, additive_margin_softmax,
    bag_of_tokens, bidirectional_info_nce, mse_distillation, simcse, triplet,
};
use tch::{Device, Kind, Tensor, nn};

fn random(shape: &[i64], seed: i64) -> Tensor {
    let _rng = common::torch_rng(); // a test beside this one cannot reseed between
    tch::manual_seed(seed);
    Tensor::randn(shape, (Kind::Double, Device::Cpu))
}

/// Compares d loss / d t for every tensor in `wrt` (leaves, float64) with central
/// differences of step 1e-6; relative tolerance 1e-6 of the largest gradient.
fn check(label: &str, wrt: &[Tensor], loss: &dyn Fn() -> Tensor) {
    for t in wrt {
        let mut g = t.grad();
        if g.defined() {
            let _ = g.zero_();
        }
    }
    loss().backward();
    for (k, t) in wrt.iter().enumerate() {
        let analytic = t.grad().copy();
        assert!(analytic.defined(), "{label}: input {k} got no gradient");
        let flat = t.view([-1]);
        let n = flat.size()[0];
        let largest = analytic.abs().max().double_value(&[]);
        assert!(
            largest > 1e-8,
            "{label}: input {k} has an all-zero gradient"
        );
        let scale = largest.max(1e-3);
        let eps = 1e-6;
        for i in 0..n {
            let orig = flat.double_value(&[i]);
            tch::no_grad(|| {
                let _ = flat.get(i).fill_(orig + eps);
            });
            let plus = tch::no_grad(|| loss().double_value(&[]));
            tch::no_grad(|| {
                let _ = flat.get(i).fill_(orig - eps);
            });
            let minus = tch::no_grad(|| loss().double_value(&[]));
            tch::no_grad(|| {
                let _ = flat.get(i).fill_(orig);
            });
            let numeric = (plus - minus) / (2.0 * eps);
            let a = analytic.view([-1]).double_value(&[i]);
            assert!(
                (a - numeric).abs() <= 1e-6 * scale.max(1.0) + 1e-7,
                "{label}: input {k} element {i}: autograd {a} vs finite difference {numeric}"
            );
        }
    }
}

fn leaf(shape: &[i64], seed: i64) -> Tensor {
    random(shape, seed).set_requires_grad(true)
}

#[test]
fn info_nce_gradient() {
    let (x, y) = (leaf(&[5, 4], 1), leaf(&[5, 4], 2));
    check("info_nce", &[x.shallow_clone(), y.shallow_clone()], &|| {
        bidirectional_info_nce(&x, &y, 0.1)
    });
}

#[test]
fn additive_margin_softmax_gradient() {
    let (x, y) = (leaf(&[5, 4], 3), leaf(&[5, 4], 4));
    check("ams", &[x.shallow_clone(), y.shallow_clone()], &|| {
        additive_margin_softmax(&x, &y, 0.3, 10.0)
    });
}

#[test]
fn simcse_gradient() {
    let (a, b) = (leaf(&[4, 6], 5), leaf(&[4, 6], 6));
    check("simcse", &[a.shallow_clone(), b.shallow_clone()], &|| {
        simcse(&a, &b, 0.05)
    });
}

#[test]
fn triplet_gradients_both_distances() {
    let (a, p, n) = (leaf(&[6, 3], 7), leaf(&[6, 3], 8), leaf(&[6, 3], 9));
    let all = [a.shallow_clone(), p.shallow_clone(), n.shallow_clone()];
    // Margins chosen so that some but not all triplets are active (no kinks at 0).
    check("triplet euclidean", &all, &|| {
        triplet(&a, &p, &n, TripletDistance::Euclidean, 0.7)
    });
    check("triplet cosine", &all, &|| {
        triplet(&a, &p, &n, TripletDistance::Cosine, 0.3)
    });
}

#[test]
fn mse_distillation_gradient() {
    let (t, x, y) = (leaf(&[3, 5], 10), leaf(&[3, 5], 11), leaf(&[3, 5], 12));
    check(
        "mse",
        &[t.shallow_clone(), x.shallow_clone(), y.shallow_clone()],
        &|| mse_distillation(&t, &t, &x, &y),
    );
    let u = leaf(&[3, 5], 13);
    check(
        "mse two-sided",
        &[
            t.shallow_clone(),
            u.shallow_clone(),
            x.shallow_clone(),
            y.shallow_clone(),
        ],
        &|| mse_distillation(&t, &u, &x, &y),
    );
}

#[test]
fn ems_contrastive_gradient_including_its_mlp() {
    let _rng = common::torch_rng(); // its layers initialise from the generator too
    let mut vs = nn::VarStore::new(Device::Cpu);
    let head = EmsContrastive::new(
        vs.root(),
        4,
        &EmsContrastiveConfig {
            projection_dim: 3,
            temperature: 0.1,
        },
    );
    vs.set_kind(Kind::Double);
    let (u, v) = (leaf(&[5, 4], 13), leaf(&[5, 4], 14));
    let mut wrt = vec![u.shallow_clone(), v.shallow_clone()];
    wrt.extend(vs.trainable_variables());
    check("ems_contrastive", &wrt, &|| head.loss(&u, &v));
}

#[test]
fn xtr_gradient_including_language_embeddings_and_output_matrix() {
    let _rng = common::torch_rng(); // its layers initialise from the generator too
    let mut vs = nn::VarStore::new(Device::Cpu);
    let head = Xtr::new(vs.root(), 3, 4, 7, &XtrConfig { language_dim: 2 });
    vs.set_kind(Kind::Double);
    let (u, v) = (leaf(&[3, 4], 15), leaf(&[3, 4], 16));
    let lang_x = Tensor::from_slice(&[0i64, 2, 0]);
    let lang_y = Tensor::from_slice(&[1i64, 1, 2]);
    let tx: [&[i64]; 3] = [&[1, 2, 2], &[3], &[4, 5, 6]];
    let ty: [&[i64]; 3] = [&[0, 6], &[2, 2, 2, 1], &[5]];
    let bx = bag_of_tokens(&tx, 7, &[], Device::Cpu).to_kind(Kind::Double);
    let by = bag_of_tokens(&ty, 7, &[], Device::Cpu).to_kind(Kind::Double);
    let mut wrt = vec![u.shallow_clone(), v.shallow_clone()];
    wrt.extend(vs.trainable_variables());
    check("xtr", &wrt, &|| {
        head.loss(&u, &v, &lang_x, &lang_y, &bx, &by)
    });
}

#[test]
fn feature_distillation_gradient_including_the_up_projection() {
    let _rng = common::torch_rng(); // its layers initialise from the generator too
    let mut vs = nn::VarStore::new(Device::Cpu);
    let fd = lase::losses::FeatureDistillation::new(vs.root(), 3, 5);
    vs.set_kind(Kind::Double);
    let (tx, ty) = (random(&[4, 5], 20), random(&[4, 5], 21));
    let (x, y) = (leaf(&[4, 3], 22), leaf(&[4, 3], 23));
    let mut wrt = vec![x.shallow_clone(), y.shallow_clone()];
    wrt.extend(vs.trainable_variables());
    check("feature distillation", &wrt, &|| fd.loss(&tx, &ty, &x, &y));
}

#[test]
fn logit_distillation_and_mcl_gradients() {
    let (tx, ty) = (random(&[5, 6], 24), random(&[5, 6], 25));
    let (x, y) = (leaf(&[5, 3], 26), leaf(&[5, 3], 27));
    let both = [x.shallow_clone(), y.shallow_clone()];
    // T = 1 keeps the gradient well above the finite-difference noise.
    check("logit distillation", &both, &|| {
        lase::losses::logit_distillation(&tx, &ty, &x, &y, 1.0)
    });
    check("mcl", &both, &|| lase::losses::mcl(&tx, &x, &y));
}

#[test]
fn soft_contrastive_gradients_priority_average_tcm() {
    use lase::losses::{
        SoftLabel, TeacherVectors, soft_contrastive, soft_contrastive_tcm, soft_labels,
    };
    let (gs, gt) = (random(&[5, 8], 28), random(&[5, 8], 29));
    let (s, t) = (leaf(&[5, 4], 30), leaf(&[5, 4], 31));
    let both = [s.shallow_clone(), t.shallow_clone()];
    for label in [SoftLabel::Priority, SoftLabel::Average] {
        let w = soft_labels(
            TeacherVectors::for_label(label, &gs, Some(&gt)).unwrap(),
            0.1,
        );
        check("soft contrastive", &both, &|| {
            soft_contrastive(&s, &t, &w, 0.1)
        });
        check("soft contrastive + TCM", &both, &|| {
            soft_contrastive_tcm(&s, &t, &w, 0.1, 0.1)
        });
    }
}

//! Autograd against central finite differences, in float64, for every parameter tensor
//! of tiny encoders covering each architectural option (BERT and RoBERTa positions,
//! factorised embeddings, recurrence, dense head, each pooling mode). A parameter whose
//! gradient is silently dropped (candle's fused-LayerNorm failure) fails here.

mod common;

use common::*;
use lase::model::{PoolingMode, SentenceEncoder};
use tch::{Kind, Tensor};

const SENTENCES: &[&str] = &[
    "the cat sat on the mat",
    "der hund ist groß",
    "a big red house",
    "blue",
    "the dog runs fast and the cat runs slow with a small dog",
];

fn loss(model: &SentenceEncoder, probe: &Tensor) -> Tensor {
    let tokens = model.tokenize(SENTENCES).unwrap();
    let refs: Vec<_> = tokens.iter().collect();
    let batch = model.batch(&refs);
    // A fixed random functional of the sentence vectors, with a square so that second
    // moments matter too.
    let v = model.forward_t(&batch, false);
    (&v * probe).sum(Kind::Double) + (&v * &v * probe).sum(Kind::Double) * 0.5
}

fn check_gradients(mut model: SentenceEncoder, label: &str) {
    model.var_store_mut().double();
    let dim = model.dim() as i64;
    let probe = Tensor::randn(
        [SENTENCES.len() as i64, dim],
        (Kind::Double, tch::Device::Cpu),
    );
    let vars = model.var_store().variables();
    let mut names: Vec<_> = vars.keys().cloned().collect();
    names.sort();
    for v in vars.values() {
        v.shallow_clone().zero_grad();
    }
    loss(&model, &probe).backward();
    let eps = 1e-6;
    let mut checked = 0;
    for name in &names {
        let var = &vars[name];
        let grad = var.grad();
        assert!(grad.defined(), "{label}: {name} received no gradient");
        let grad_norm = grad.norm().double_value(&[]);
        assert!(grad_norm > 0.0, "{label}: {name} has an all-zero gradient");
        // Directional derivative along a random direction covers the whole tensor. A
        // direction whose ±eps step crosses a kink of ReLU (or of max pooling) disagrees
        // with autograd though the gradient is right, so a disagreement is retried with
        // fresh directions; a wrong gradient disagrees along every one of them.
        let directional = || {
            let direction = Tensor::randn_like(var);
            let analytic = (&grad * &direction).sum(Kind::Double).double_value(&[]);
            let shifted = |sign: f64| {
                tch::no_grad(|| {
                    let mut v = var.shallow_clone();
                    let _ = v.g_add_(&(&direction * (sign * eps)));
                });
                let l = tch::no_grad(|| loss(&model, &probe).double_value(&[]));
                tch::no_grad(|| {
                    let mut v = var.shallow_clone();
                    let _ = v.g_sub_(&(&direction * (sign * eps)));
                });
                l
            };
            let numeric = (shifted(1.0) - shifted(-1.0)) / (2.0 * eps);
            let tolerance = 1e-6 * (1.0 + analytic.abs().max(numeric.abs()));
            ((analytic - numeric).abs() <= tolerance, analytic, numeric)
        };
        let (mut agreed, mut analytic, mut numeric) = directional();
        let mut directions = 1;
        while !agreed && directions < 3 {
            (agreed, analytic, numeric) = directional();
            directions += 1;
        }
        assert!(
            agreed,
            "{label}: {name}: autograd {analytic:.10e} vs finite differences {numeric:.10e} \
             (disagreed along {directions} random directions)"
        );
        checked += 1;
    }
    assert_eq!(checked, names.len());
    eprintln!("{label}: {checked} parameter tensors agree with finite differences");
}

#[test]
fn bert_mean_pooling_gradients_match_finite_differences() {
    let model = tiny_encoder(tiny_config(), mean_head(16, true), 1);
    check_gradients(model, "bert/mean/normalize");
}

#[test]
fn roberta_bottleneck_recurrence_dense_gradients_match_finite_differences() {
    let mut config = tiny_config();
    config.model_type = "xlm-roberta".into();
    config.pad_token_id = 0;
    config.num_hidden_layers = 4;
    config.recurrent_unit_layers = Some(2);
    config.embedding_size = Some(6);
    config.type_vocab_size = 1;
    let model = tiny_encoder(config, dense_head(16, 8, PoolingMode::Cls), 2);
    check_gradients(model, "xlm-r/bottleneck/recurrence/cls/dense");
}

#[test]
fn other_pooling_modes_and_activations_gradients_match_finite_differences() {
    for (i, mode) in [
        PoolingMode::Max,
        PoolingMode::MeanSqrtLen,
        PoolingMode::WeightedMean,
        PoolingMode::LastToken,
    ]
    .into_iter()
    .enumerate()
    {
        let mut config = tiny_config();
        config.num_hidden_layers = 1;
        config.hidden_act = [
            lase::model::Activation::GeluTanh,
            lase::model::Activation::Relu,
            lase::model::Activation::Silu,
            lase::model::Activation::Gelu,
        ][i];
        let mut head = mean_head(16, false);
        head.pooling = lase::model::PoolingConfig::single(16, mode);
        check_gradients(
            tiny_encoder(config, head, 3 + i as i64),
            &format!("{mode:?}"),
        );
    }
}

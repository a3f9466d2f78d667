//! `lase interpolate` (WiSE-FT): every weight on the line between two models, and clear
//! refusals where the two do not share an architecture or a vocabulary.

mod common;

use common::*;
use lase::interpolate::interpolate;
use lase::model::SentenceEncoder;
use tch::Tensor;

fn saved(seed: i64, config: lase::model::EncoderConfig, dir: &std::path::Path) -> SentenceEncoder {
    let model = tiny_encoder(config, mean_head(16, false), seed);
    model.save(dir).unwrap();
    SentenceEncoder::load(dir, tch::Device::Cpu).unwrap()
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

#[test]
fn every_weight_lies_on_the_line_between_the_two_models() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let a = saved(3, tiny_config(), &a_dir);
    let b = saved(4, tiny_config(), &b_dir);
    let (va, vb) = (a.var_store().variables(), b.var_store().variables());
    for (alpha, tolerance) in [(0.0, 0.0), (1.0, 0.0), (0.25, 1e-6)] {
        let mixed = interpolate(&a_dir, &b_dir, alpha).unwrap();
        let vm = mixed.var_store().variables();
        assert_eq!(vm.len(), va.len());
        let mut moved = 0;
        for (name, t) in &vm {
            let expected = &va[name] * (1.0 - alpha) + &vb[name] * alpha;
            let d = max_diff(t, &expected);
            assert!(d <= tolerance, "{name} at alpha {alpha}: off by {d}");
            moved += usize::from(max_diff(t, &va[name]) > 0.0);
        }
        // Seeds 3 and 4 differ in every parameter that is drawn at random: away from 0,
        // they all move.
        assert_eq!(moved > 0, alpha > 0.0, "alpha {alpha}: {moved} moved");
    }
    // What is saved is what was computed.
    let out = dir.path().join("mid");
    interpolate(&a_dir, &b_dir, 0.25)
        .unwrap()
        .save(&out)
        .unwrap();
    let back = SentenceEncoder::load(&out, tch::Device::Cpu).unwrap();
    let s = ["the cat sat", "der hund"];
    let (x, y) = (
        back.encode(&s, 2).unwrap(),
        interpolate(&a_dir, &b_dir, 0.25)
            .unwrap()
            .encode(&s, 2)
            .unwrap(),
    );
    assert!(max_diff(&x, &y) < 1e-6);
}

#[test]
fn models_that_do_not_share_shapes_or_a_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, c_dir) = (dir.path().join("a"), dir.path().join("c"));
    saved(3, tiny_config(), &a_dir);
    let mut wider = tiny_config();
    wider.intermediate_size *= 2;
    saved(5, wider, &c_dir);
    let Err(e) = interpolate(&a_dir, &c_dir, 0.5) else {
        panic!("shapes differ, yet it interpolated");
    };
    let e = e.to_string();
    assert!(
        e.contains("intermediate.dense") && e.contains("shape"),
        "{e}"
    );
    let Err(e) = interpolate(&a_dir, &a_dir, 1.5) else {
        panic!("alpha out of range, yet it interpolated");
    };
    let e = e.to_string();
    assert!(e.contains("alpha 1.5"), "{e}");
}

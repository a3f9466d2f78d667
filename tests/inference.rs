//! Scheduling must not change results: any batch size, token budget or worker count gives
//! each sentence the vector it gets alone, in input order, in float32 and in int8 (whose
//! activations are quantised per token; on the real model, tests/parity_minilm.rs bounds
//! what a batch can still move).

mod common;

use common::*;
use lase::inference::EncodeOptions;

#[test]
fn workers_and_budgets_route_every_row_back_to_its_sentence() {
    use lase::model::Precision;
    let mut model = tiny_encoder(tiny_config(), mean_head(16, true), 41);
    // 60 sentences of 1..=20 words in scrambled length order.
    let sentences: Vec<String> = (0..60)
        .map(|i| {
            let len = 1 + (i * 7) % 20;
            (0..len)
                .map(|j| TINY_WORDS[(i + j * 3) % TINY_WORDS.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    for precision in [Precision::F32, Precision::Int8] {
        model.set_precision(precision).unwrap();
        let one_by_one = EncodeOptions {
            batch_size: 1,
            max_batch_tokens: 1,
            workers: 1,
        };
        let reference = rows(&model.encode_with(&sentences, &one_by_one).unwrap());
        for options in [
            EncodeOptions {
                batch_size: 7,
                max_batch_tokens: 40,
                workers: 3,
            },
            EncodeOptions {
                batch_size: 64,
                max_batch_tokens: 100_000,
                workers: 1,
            },
            EncodeOptions {
                batch_size: 5,
                max_batch_tokens: 64,
                workers: 2,
            },
        ] {
            let got = rows(&model.encode_with(&sentences, &options).unwrap());
            assert_eq!(got.len(), sentences.len());
            for (i, (g, r)) in got.iter().zip(&reference).enumerate() {
                let c = cosine(g, r);
                assert!(
                    c > 0.999_999,
                    "{precision:?} {options:?}: row {i} cosine {c}"
                );
            }
        }
    }
    // A multi-worker call leaves the caller's libtorch thread count as it found it.
    let before = tch::get_num_threads();
    let options = EncodeOptions {
        batch_size: 4,
        max_batch_tokens: 64,
        workers: 2,
    };
    let _ = model.encode_with(&sentences, &options).unwrap();
    assert_eq!(tch::get_num_threads(), before);
}

/// bf16 on the CPU packs the layers' weights for oneDNN (query/key/value as one product,
/// GELU inside the feed-forward product) where the CPU has the kernels: the vectors are
/// the plain bfloat16 products' to bfloat16's rounding. Where packing is refused the
/// encoder keeps the plain products, and switching to them changes nothing.
#[test]
fn packed_bf16_layers_give_the_plain_bf16_vectors() {
    use lase::model::Precision;
    use lase::model::linear::LinearKernel;
    let mut encoder = tiny_encoder(tiny_config(), mean_head(16, true), 11);
    let sentences = [
        "der hund ist rot",
        "the dog is red",
        "der hund",
        "red dog is the dog",
    ];
    encoder.set_precision(Precision::Bf16).unwrap();
    let kernel = encoder.linear_kernel();
    if lase::runtime::cpu_has_fast_bf16() {
        assert_eq!(kernel, LinearKernel::PackedBf16);
    }
    let packed = rows(&encoder.encode(&sentences, 8).unwrap());
    encoder.set_linear_kernel(LinearKernel::Plain).unwrap();
    assert_eq!(encoder.linear_kernel(), LinearKernel::Plain);
    let plain = rows(&encoder.encode(&sentences, 8).unwrap());
    for (a, b) in packed.iter().zip(&plain) {
        let c = cosine(a, b);
        if kernel == LinearKernel::PackedBf16 {
            assert!(c > 0.999, "packed vs plain bf16: cosine {c}");
        } else {
            assert_eq!(a, b);
        }
    }
    // Packed again, then float32 for training: the inference copy is dropped.
    encoder.set_linear_kernel(kernel).unwrap();
    assert_eq!(encoder.linear_kernel(), kernel);
    encoder.set_mixed_precision(Precision::F32).unwrap();
    assert_eq!(encoder.linear_kernel(), LinearKernel::Plain);
}

/// Unpadded passes (the layers on the real tokens only, attention on the padded layout)
/// give the padded passes' vectors in every precision: int8 and float32 to their last
/// bits' noise, bfloat16 to its rounding.
#[test]
fn unpadded_passes_give_the_padded_vectors() {
    use lase::model::Precision;
    use lase::model::token_layout::UnpadPolicy;
    let mut encoder = tiny_encoder(tiny_config(), mean_head(16, true), 23);
    // Lengths 1 to 12 words in one batch: most of the padded positions are padding.
    let sentences: Vec<String> = (1..=12)
        .map(|len| {
            (0..len)
                .map(|j| TINY_WORDS[(len * 5 + j) % TINY_WORDS.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    for (precision, bound) in [
        (Precision::F32, 0.999_999),
        (Precision::Int8, 0.999_999),
        (Precision::Bf16, 0.999),
    ] {
        encoder.set_precision(precision).unwrap();
        encoder.set_unpad(UnpadPolicy::Never);
        let padded = rows(&encoder.encode(&sentences, 16).unwrap());
        let padded_states = padded_position_states(&encoder, &sentences);
        encoder.set_unpad(UnpadPolicy::Always);
        let unpadded = rows(&encoder.encode(&sentences, 16).unwrap());
        // The unpadded pass really ran: its padded positions come out as zeros, the
        // padded pass's as whatever the layers computed there.
        let unpadded_states = padded_position_states(&encoder, &sentences);
        assert_eq!(unpadded_states.abs().max().double_value(&[]), 0.0);
        assert!(padded_states.abs().max().double_value(&[]) > 0.0);
        for (i, (a, b)) in padded.iter().zip(&unpadded).enumerate() {
            let c = cosine(a, b);
            assert!(c > bound, "{precision:?}: sentence {i} cosine {c}");
        }
    }
}

/// The last layer's token states at the padded positions of one inference pass over
/// `sentences`, as a flat tensor.
fn padded_position_states(
    encoder: &lase::model::SentenceEncoder,
    sentences: &[String],
) -> tch::Tensor {
    let _no_grad = tch::no_grad_guard();
    let tokens = encoder.tokenize(sentences).unwrap();
    let items: Vec<_> = tokens.iter().collect();
    let batch = encoder.batch(&items);
    let states = encoder.transformer().forward_t(
        &batch.input_ids,
        &batch.token_type_ids,
        &batch.attention_mask,
        false,
    );
    let padding = batch.attention_mask.eq(0).unsqueeze(-1).expand_as(&states);
    states.masked_select(&padding).to_kind(tch::Kind::Float)
}

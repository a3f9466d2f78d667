//! Scheduling must not change results: any batch size, token budget or worker count gives
//! each sentence the vector it gets alone, in input order.

mod common;

use common::*;
use lase::inference::EncodeOptions;

#[test]
fn workers_and_budgets_route_every_row_back_to_its_sentence() {
    let model = tiny_encoder(tiny_config(), mean_head(16, true), 41);
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
            assert!(c > 0.999_999, "{options:?}: row {i} cosine {c}");
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

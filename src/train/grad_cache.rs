//! One forward/backward pass over a batch of translation pairs, directly or with
//! gradient caching (GradCache, Gao et al. 2021 "Scaling deep contrastive learning batch
//! size under memory limited setup"; sentence-transformers'
//! CachedMultipleNegativesRankingLoss):
//!
//! 1. embed every chunk of sentences without building a graph;
//! 2. compute the loss on those vectors (as leaves) and back-propagate to them, giving
//!    ∂L/∂x_i for every sentence (the loss heads get their gradients here);
//! 3. embed each chunk again with a graph and back-propagate Σ_i ⟨x_i, ∂L/∂x_i⟩.
//!
//! The encoder's gradient equals the direct pass's, while memory holds one chunk's
//! activations, so a contrastive loss can see thousands of in-batch negatives on a small
//! machine. Each chunk's dropout masks are seeded so passes 1 and 3 draw the same ones.

use tch::Tensor;

use super::objective::{BatchContext, LossOutput, Objective};
use crate::model::SentenceEncoder;
use crate::rng::mix_seed;
use crate::tokenizer::TokenIds;

/// How to run the pass.
#[derive(Clone, Copy, Debug)]
pub struct PassOptions {
    /// Sentences per chunk; 0 or >= the batch means one direct pass.
    pub chunk: usize,
    /// Base seed for this micro-batch's dropout masks.
    pub seed: u64,
    /// The loss is multiplied by this before back-propagation (1 / accumulation steps).
    pub loss_scale: f64,
    /// Dropout on (training) or off.
    pub train: bool,
    /// Sentences per length-sorted forward in a direct pass (`chunk` 0): on a CPU 32
    /// ([`super::config::DIRECT_PADDING_CHUNK`]) removes most padding; on a GPU, where each forward is a
    /// fixed cost of kernel launches, larger chunks run faster.
    pub padding_chunk: usize,
}

/// Length-sorted chunks of `size` sentences (positions in the side), so padding stays small.
fn chunks(items: &[&TokenIds], size: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| items[i].len());
    order.chunks(size.max(1)).map(|c| c.to_vec()).collect()
}

fn embed_chunk(
    encoder: &SentenceEncoder,
    items: &[&TokenIds],
    rows: &[usize],
    seed: u64,
    train: bool,
) -> Tensor {
    tch::manual_seed(seed as i64);
    let refs: Vec<&TokenIds> = rows.iter().map(|&i| items[i]).collect();
    encoder.forward_t(&encoder.batch(&refs), train)
}

/// Embeds one side, chunk by chunk, rows back in input order.
fn embed_side(
    encoder: &SentenceEncoder,
    items: &[&TokenIds],
    plan: &[Vec<usize>],
    side: u64,
    options: &PassOptions,
) -> Tensor {
    let parts: Vec<Tensor> = plan
        .iter()
        .enumerate()
        .map(|(c, rows)| {
            embed_chunk(
                encoder,
                items,
                rows,
                mix_seed(&[options.seed, side, c as u64]),
                options.train,
            )
        })
        .collect();
    let sorted = Tensor::cat(&parts, 0);
    let order: Vec<i64> = plan.iter().flatten().map(|&i| i as i64).collect();
    let index = Tensor::from_slice(&order).to_device(sorted.device());
    // sorted[k] belongs to row order[k]: scatter back.
    sorted.zeros_like().index_copy(0, &index, &sorted)
}

/// One embedded side of a pass: its seed tag, sentences and chunk plan.
type Side<'a> = (u64, &'a [&'a TokenIds], &'a [Vec<usize>]);

/// Forward + backward for one (micro-)batch; gradients accumulate into the encoder's
/// and the objective's parameters. Returns the (unscaled) loss. An objective that
/// [needs a second view](Objective::needs_second_view) (SimCSE) gets both sides embedded
/// twice, the second time under other dropout masks.
pub fn forward_backward(
    encoder: &SentenceEncoder,
    objective: &Objective,
    x_items: &[&TokenIds],
    y_items: &[&TokenIds],
    ctx: &BatchContext,
    options: &PassOptions,
) -> LossOutput {
    let n = x_items.len();
    // A direct pass is still embedded in length-sorted chunks, so that each forward pads
    // only to its own longest sentence; there every chunk keeps its graph.
    let direct = options.chunk == 0 || options.chunk >= n;
    let size = if direct {
        options.padding_chunk.max(1)
    } else {
        options.chunk
    };
    let plan_x = chunks(x_items, size);
    let plan_y = chunks(y_items, size);
    // The embedded sides: x, y, then for SimCSE x and y again (other tags, so other
    // dropout masks).
    let mut sides: Vec<Side> = vec![(0, x_items, &plan_x), (1, y_items, &plan_y)];
    if objective.needs_second_view() {
        sides.extend([(2, x_items, &plan_x[..]), (3, y_items, &plan_y[..])]);
    }
    let embed_all = || -> Vec<Tensor> {
        sides
            .iter()
            .map(|&(tag, items, plan)| embed_side(encoder, items, plan, tag, options))
            .collect()
    };
    let loss = |v: &[Tensor]| {
        let again = (v.len() == 4).then(|| (&v[2], &v[3]));
        objective.loss_with_second_view(&v[0], &v[1], again, ctx)
    };
    if direct {
        let out = loss(&embed_all());
        (&out.total * options.loss_scale).backward();
        return out;
    }
    // Pass 1: vectors without a graph.
    let vectors = tch::no_grad(embed_all);
    // Pass 2: loss on leaf copies -> dL/dx, dL/dy (and the heads' gradients).
    let leaves: Vec<Tensor> = vectors
        .iter()
        .map(|v| v.detach().set_requires_grad(true))
        .collect();
    let out = loss(&leaves);
    (&out.total * options.loss_scale).backward();
    // Pass 3: re-embed chunk by chunk with a graph, back-propagate <x_i, dL/dx_i>.
    for (&(tag, items, plan), leaf) in sides.iter().zip(&leaves) {
        let grad = leaf.grad();
        for (c, rows) in plan.iter().enumerate() {
            let e = embed_chunk(
                encoder,
                items,
                rows,
                mix_seed(&[options.seed, tag, c as u64]),
                options.train,
            );
            let idx: Vec<i64> = rows.iter().map(|&i| i as i64).collect();
            let g = grad.index_select(0, &Tensor::from_slice(&idx).to_device(grad.device()));
            let kind = e.kind();
            (e * g).sum(kind).backward();
        }
    }
    out
}

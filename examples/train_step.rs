//! Times lase's training step for bench/train_step.py: the same model, batch and update
//! as the PyTorch side of that script.
//! Usage: train_step BATCH.json TOKENIZER.json THREADS
//!
//! BATCH.json: {"hidden", "layers", "heads", "ffn", "max_tokens", "warmup_steps",
//! "timed_steps", "temperature", "lr", "x": [[ids]], "y": [[ids]]}.
//! One step = embed both sides (dropout on, length-sorted chunks of 32 as `lase train`),
//! bidirectional InfoNCE, backward, gradient clipping, AdamW. Prints one JSON line:
//! per-step seconds of the timed steps, the losses of every step (the caller compares
//! them with PyTorch's as a sanity check of "same work"), and peak RSS in MiB.

use lase::tokenizer::TokenIds;
use lase::train::config::{ContrastiveKind, ModelConfig, ObjectiveConfig, OptimizerConfig};
use lase::train::grad_cache::{PassOptions, forward_backward};
use lase::train::objective::{BatchContext, Objective};
use lase::train::optimizer::AdamW;
use lase::train::trainer::{new_encoder, trainable_parameters};
use serde::Deserialize;

#[derive(Deserialize)]
struct Batch {
    hidden: usize,
    layers: usize,
    heads: usize,
    ffn: usize,
    max_tokens: usize,
    warmup_steps: usize,
    timed_steps: usize,
    temperature: f64,
    lr: f64,
    x: Vec<Vec<i64>>,
    y: Vec<Vec<i64>>,
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() -> anyhow::Result<()> {
    lase::runtime::flush_denormals();
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        args.len() == 4,
        "usage: train_step BATCH.json TOKENIZER.json THREADS"
    );
    let batch: Batch = serde_json::from_str(&std::fs::read_to_string(&args[1])?)?;
    let tokenizer_json = std::fs::read_to_string(&args[2])?;
    lase::runtime::set_threads(args[3].parse()?);
    tch::manual_seed(0);
    let device = tch::Device::Cpu;
    let model = ModelConfig {
        layers: batch.layers,
        hidden: batch.hidden,
        heads: batch.heads,
        ffn: batch.ffn,
        max_tokens: batch.max_tokens,
        dropout: 0.1,
        ..ModelConfig::default()
    };
    let encoder = new_encoder(&model, tokenizer_json, device)?;
    let objective_config = ObjectiveConfig {
        contrastive: ContrastiveKind::InfoNce,
        temperature: batch.temperature,
        xtr: false,
        ..ObjectiveConfig::default()
    };
    let objective = Objective::new(&objective_config, encoder.dim(), 1, 0, None, device)?;
    let params = trainable_parameters(&encoder, &objective);
    let optimizer_config = OptimizerConfig {
        lr: batch.lr,
        ..OptimizerConfig::default()
    };
    let mut optimizer = AdamW::new(params, &optimizer_config);

    let to_ids = |rows: &[Vec<i64>]| -> Vec<TokenIds> {
        rows.iter()
            .map(|ids| TokenIds {
                ids: ids.clone(),
                type_ids: vec![0; ids.len()],
            })
            .collect()
    };
    let (x_ids, y_ids) = (to_ids(&batch.x), to_ids(&batch.y));
    let xs: Vec<&TokenIds> = x_ids.iter().collect();
    let ys: Vec<&TokenIds> = y_ids.iter().collect();
    let languages = vec![0i64; xs.len()];
    let ctx = BatchContext::new(&languages, &languages, device);

    let mut losses = Vec::new();
    let mut step_seconds = Vec::new();
    for step in 0..batch.warmup_steps + batch.timed_steps {
        let start = std::time::Instant::now();
        let pass = PassOptions {
            chunk: 0,
            seed: step as u64,
            loss_scale: 1.0,
            train: true,
        };
        let out = forward_backward(&encoder, &objective, &xs, &ys, &ctx, &pass);
        let grad_norm = optimizer.grad_norm();
        if grad_norm > optimizer_config.max_grad_norm {
            optimizer.scale_grads(optimizer_config.max_grad_norm / (grad_norm + 1e-6));
        }
        optimizer.step(batch.lr);
        optimizer.zero_grad();
        losses.push(out.total.double_value(&[]));
        if step >= batch.warmup_steps {
            step_seconds.push(start.elapsed().as_secs_f64());
        }
    }
    println!(
        "{}",
        serde_json::json!({
            "step_seconds": step_seconds,
            "losses": losses,
            "peak_rss_mib": peak_rss_mib(),
        })
    );
    Ok(())
}

//! Times lase's training step for bench/train_step.py: the same model, batch and update
//! as the PyTorch side of that script.
//! Usage: train_step BATCH.json TOKENIZER.json THREADS [--device cpu|cuda] [--precision f32|bf16]
//!        train_step --tokenize TOKENIZER.json MAX_TOKENS TEXTS.json
//!
//! BATCH.json: {"hidden", "layers", "heads", "ffn", "max_tokens", "warmup_steps",
//! "timed_steps", "temperature", "lr", "x": [[ids]], "y": [[ids]]}.
//! One step = embed both sides (dropout on, length-sorted chunks of 32 as `lase train`),
//! bidirectional InfoNCE, backward, gradient clipping, AdamW. Prints one JSON line:
//! per-step seconds of the timed steps, the losses of every step (the caller compares
//! them with PyTorch's as a sanity check of "same work"), peak RSS in MiB, the device and
//! the precision. `--device cuda` needs a CUDA libtorch on LD_LIBRARY_PATH (a PyTorch
//! install's torch/lib); each timed step then ends with a device synchronisation.
//! `--precision bf16` is `lase train --precision bf16`: bfloat16 matrix products over
//! float32 weights, as torch.autocast.
//!
//! `--tokenize` prints {"ids": [[ids]]} for TEXTS.json (a list of strings), tokenised as
//! the encoder does (truncated to MAX_TOKENS): the script's tokeniser when Python's
//! `tokenizers` is not installed (the same library, so the same ids).

use lase::model::Precision;
use lase::runtime::{DeviceChoice, resolve_device};
use lase::tokenizer::{SentenceTokenizer, TokenIds};
use lase::train::config::{ModelConfig, ObjectiveConfig, OptimizerConfig};
use lase::train::encoder_init::new_encoder;
use lase::train::grad_cache::{PassOptions, forward_backward};
use lase::train::objective::{BatchContext, Objective};
use lase::train::optimizer::AdamW;
use lase::train::trainer::trainable_parameters;
use serde::Deserialize;

#[derive(Deserialize)]
struct Batch {
    hidden: usize,
    layers: usize,
    heads: usize,
    ffn: usize,
    max_tokens: usize,
    /// Sentences per length-sorted forward (schedule.padding_chunk in `lase train`).
    #[serde(default = "default_chunk")]
    chunk: usize,
    warmup_steps: usize,
    timed_steps: usize,
    temperature: f64,
    lr: f64,
    x: Vec<Vec<i64>>,
    y: Vec<Vec<i64>>,
}

fn default_chunk() -> usize {
    lase::train::config::DIRECT_PADDING_CHUNK
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

/// `--tokenize TOKENIZER.json MAX_TOKENS TEXTS.json`: prints the ids as one JSON line.
fn tokenize(args: &[String]) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.len() == 3,
        "usage: train_step --tokenize TOKENIZER.json MAX_TOKENS TEXTS.json"
    );
    let inner = tokenizers::Tokenizer::from_file(&args[0])
        .map_err(|e| anyhow::anyhow!("{}: {e}", args[0]))?;
    let tokenizer = SentenceTokenizer::new(inner, args[1].parse()?, 0, false)?;
    let texts: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&args[2])?)?;
    let ids: Vec<Vec<i64>> = tokenizer
        .encode(&texts)?
        .into_iter()
        .map(|t| t.ids)
        .collect();
    println!("{}", serde_json::json!({ "ids": ids }));
    Ok(())
}

fn main() -> anyhow::Result<()> {
    lase::runtime::flush_denormals();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--tokenize") {
        return tokenize(&args[1..]);
    }
    let usage = "usage: train_step BATCH.json TOKENIZER.json THREADS [--device cpu|cuda] \
                 [--precision f32|bf16]";
    let mut flag = |name: &str, default: &str| -> anyhow::Result<String> {
        match args.iter().position(|a| a == name) {
            Some(i) => {
                anyhow::ensure!(i + 1 < args.len(), "{name} needs a value; {usage}");
                let value = args.remove(i + 1);
                args.remove(i);
                Ok(value)
            }
            None => Ok(default.to_owned()),
        }
    };
    let device_choice: DeviceChoice = flag("--device", "cpu")?
        .parse()
        .map_err(anyhow::Error::msg)?;
    let precision: Precision = flag("--precision", "f32")?
        .parse()
        .map_err(anyhow::Error::msg)?;
    anyhow::ensure!(args.len() == 3, "{usage}");
    let batch: Batch = serde_json::from_str(&std::fs::read_to_string(&args[0])?)?;
    let tokenizer_json = std::fs::read_to_string(&args[1])?;
    lase::runtime::set_threads(args[2].parse()?);
    let device = resolve_device(device_choice)?;
    tch::manual_seed(0);
    let model = ModelConfig {
        layers: batch.layers,
        hidden: batch.hidden,
        heads: batch.heads,
        ffn: batch.ffn,
        max_tokens: batch.max_tokens,
        dropout: 0.1,
        ..ModelConfig::default()
    };
    let mut encoder = new_encoder(&model, tokenizer_json, device)?;
    encoder.set_mixed_precision(precision)?;
    // A step's time ends when the device has finished its work (CUDA runs asynchronously).
    let synchronize = || {
        if let tch::Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
    };
    let objective_config = ObjectiveConfig::default()
        .with("contrastive", "info-nce")
        .and_then(|o| o.with("temperature", batch.temperature))
        .and_then(|o| o.with("xtr", false))
        .map_err(anyhow::Error::msg)?;
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
            padding_chunk: batch.chunk,
        };
        let out = forward_backward(&encoder, &objective, &xs, &ys, &ctx, &pass);
        let grad_norm = optimizer.grad_norm();
        if grad_norm > optimizer_config.max_grad_norm {
            optimizer.scale_grads(optimizer_config.max_grad_norm / (grad_norm + 1e-6));
        }
        optimizer.step(batch.lr);
        optimizer.zero_grad();
        losses.push(out.total.double_value(&[]));
        synchronize();
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
            "device": match device {
                tch::Device::Cuda(i) => format!("cuda:{i}"),
                _ => "cpu".to_owned(),
            },
            "precision": format!("{precision:?}").to_lowercase(),
        })
    );
    Ok(())
}

//! `lase info`: what this machine offers lase (CPU, flags, threads, GPU) and which
//! kernels and precision it would pick; with `--model`, the model's shape and the
//! precision `auto` picks for it after its accuracy probe. For bug reports and for
//! benchmark logs, which name the CPU and its flags beside every speed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use lase::mine::tile_gemm::TileGemm;
use lase::model::auto_precision::{AutoPrecisionBudget, hardware_candidate, set_auto_precision};
use serde::Serialize;

/// The /proc/cpuinfo flags that decide lase's kernels and precision.
const FLAGS_THAT_MATTER: [&str; 10] = [
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "amx_bf16",
    "amx_int8",
];

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// A model folder (Hugging Face / sentence-transformers layout): also print its shape
    /// and the precision `--precision auto` picks for it (runs its 32-sentence probe).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Print one JSON object instead of lines of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct MachineInfo {
    lase_version: &'static str,
    cpu_model: String,
    logical_cpus: usize,
    libtorch_threads: i32,
    /// Each flag of [`FLAGS_THAT_MATTER`] and whether this CPU has it.
    cpu_flags: BTreeMap<String, bool>,
    cuda_devices: i64,
    device: String,
    /// The precision `auto` starts from on this device, before any model's probe.
    hardware_precision: String,
    hardware_precision_reason: &'static str,
    /// The product lase's exact k-NN search uses on this CPU.
    knn_tile_product: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<ModelInfo>,
}

#[derive(Serialize)]
struct ModelInfo {
    path: String,
    model_type: String,
    layers: usize,
    hidden_size: usize,
    attention_heads: usize,
    feed_forward_size: usize,
    vocabulary_size: usize,
    max_tokens: usize,
    parameters: i64,
    bytes_on_disk: u64,
    output_dimensions: usize,
    pooling: String,
    dense_layers: Vec<String>,
    normalized: bool,
    auto_precision: String,
    auto_precision_reason: String,
}

pub fn info(args: InfoArgs, device: tch::Device) -> Result<()> {
    let flags = lase::runtime::cpu_flags();
    let (candidate, reason) = hardware_candidate(device);
    let mut report = MachineInfo {
        lase_version: env!("CARGO_PKG_VERSION"),
        cpu_model: lase::runtime::cpu_model(),
        logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        libtorch_threads: tch::get_num_threads(),
        cpu_flags: FLAGS_THAT_MATTER
            .iter()
            .map(|f| (f.to_string(), flags.iter().any(|g| g == f)))
            .collect(),
        cuda_devices: if lase::runtime::cuda_available() {
            tch::Cuda::device_count()
        } else {
            0
        },
        device: format!("{device:?}").to_lowercase(),
        hardware_precision: format!("{candidate:?}").to_lowercase(),
        hardware_precision_reason: reason,
        knn_tile_product: match TileGemm::for_this_cpu() {
            TileGemm::Blas => "libtorch's matrix product (MKL on x86)".into(),
            TileGemm::Avx512 => "lase's AVX-512F kernel".into(),
        },
        model: None,
    };
    if let Some(dir) = &args.model {
        report.model = Some(model_info(dir, device)?);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_text(&report));
    }
    Ok(())
}

fn model_info(dir: &Path, device: tch::Device) -> Result<ModelInfo> {
    let mut encoder = lase::model::SentenceEncoder::load(dir, device)
        .with_context(|| format!("loading model {}", dir.display()))?;
    let config = encoder.config().clone();
    let head = encoder.head().clone();
    let parameters = encoder
        .var_store()
        .variables()
        .values()
        .map(|t| t.numel() as i64)
        .sum();
    let pick = set_auto_precision(&mut encoder, AutoPrecisionBudget::default())
        .with_context(|| format!("model {}: choosing a precision", dir.display()))?;
    Ok(ModelInfo {
        path: dir.display().to_string(),
        model_type: config.model_type.clone(),
        layers: config.num_hidden_layers,
        hidden_size: config.hidden_size,
        attention_heads: config.num_attention_heads,
        feed_forward_size: config.intermediate_size,
        vocabulary_size: encoder.tokenizer().vocab_size(),
        max_tokens: encoder.tokenizer().max_length(),
        parameters,
        bytes_on_disk: folder_bytes(dir)?,
        output_dimensions: encoder.dim(),
        pooling: head
            .pooling
            .modes()
            .iter()
            .map(|m| format!("{m:?}").to_lowercase())
            .collect::<Vec<_>>()
            .join("+"),
        dense_layers: head
            .dense
            .iter()
            .map(|d| {
                format!(
                    "{} -> {} ({})",
                    d.in_features, d.out_features, d.activation_function
                )
            })
            .collect(),
        normalized: head.normalize,
        auto_precision: format!("{:?}", pick.precision).to_lowercase(),
        auto_precision_reason: pick.reason,
    })
}

/// Bytes of the files in `dir` and its sub-folders. A link to a file counts the file it
/// points to (a Hugging Face cache snapshot is made of such links); links to folders are
/// not entered.
fn folder_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            total += folder_bytes(&path)?;
        } else {
            let target =
                std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?;
            if target.is_file() {
                total += target.len();
            }
        }
    }
    Ok(total)
}

fn render_text(r: &MachineInfo) -> String {
    let listed = |want: bool| {
        FLAGS_THAT_MATTER
            .iter()
            .filter(|f| r.cpu_flags.get(**f) == Some(&want))
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = format!(
        "lase {}\ncpu: {}, {} logical CPUs, libtorch threads {}\ncpu flags: {} (not: {})\ncuda devices: {}; device: {}\nprecision auto on this device: {} before a model's probe ({})\nexact k-NN tiles: {}\n",
        r.lase_version,
        r.cpu_model,
        r.logical_cpus,
        r.libtorch_threads,
        listed(true),
        listed(false),
        r.cuda_devices,
        r.device,
        r.hardware_precision,
        r.hardware_precision_reason,
        r.knn_tile_product,
    );
    if let Some(m) = &r.model {
        let dense = if m.dense_layers.is_empty() {
            "none".to_string()
        } else {
            m.dense_layers.join(", ")
        };
        out += &format!(
            "model: {}\n  {}: {} layers, hidden {}, {} attention heads, feed-forward {}, {} vocabulary pieces, at most {} tokens a sentence\n  {} parameters, {} bytes on disk\n  output: {}-d, {} pooling, dense layers: {}, normalized: {}\n  precision auto: {} ({})\n",
            m.path,
            m.model_type,
            m.layers,
            m.hidden_size,
            m.attention_heads,
            m.feed_forward_size,
            m.vocabulary_size,
            m.max_tokens,
            m.parameters,
            m.bytes_on_disk,
            m.output_dimensions,
            m.pooling,
            dense,
            if m.normalized { "yes" } else { "no" },
            m.auto_precision,
            m.auto_precision_reason,
        );
    }
    out
}

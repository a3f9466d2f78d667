//! The `lase` command line: a thin layer that parses arguments and calls the library.

mod cli;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use lase::embed::{EmbedFileOptions, embed_file};
use lase::model::{Precision, SentenceEncoder};
use lase::runtime::{DeviceChoice, resolve_device, set_threads};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "lase",
    version,
    about = "Language-agnostic sentence embeddings: train, evaluate, mine, embed, serve"
)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct RuntimeArgs {
    /// Device: auto, cpu, cuda, cuda:N.
    #[arg(long, global = true, default_value = "auto")]
    device: DeviceChoice,
    /// CPU threads for libtorch (0 = one per core).
    #[arg(long, global = true, default_value_t = 0)]
    threads: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Embed a text file (one sentence per line, plain or .gz) into a float32 .npy matrix.
    Embed(EmbedArgs),
    /// Mine parallel sentences from two monolingual files (margin-scored k-NN, as LASER).
    Mine(MineArgs),
    /// Sharded mining, step by step (for cluster jobs): init, embed, knn, mine. The
    /// pairs equal lase mine's on the same corpora.
    #[command(subcommand)]
    Shard(cli::shard::ShardCommand),
    /// Evaluate a model on benchmarks: tatoeba, flores, bucc, pool, sts, sib.
    Eval(EvalArgs),
    /// Train an encoder from a TOML recipe (configs/ems.toml, ...); resumes a killed run.
    Train(TrainArgs),
    /// Distill a student from a teacher: a recipe whose [objective.distillation] names the
    /// teacher and weights MSE (multilingual distillation), LEALLA feature/logit terms,
    /// soft contrastive (+TCM) and MCL. Teacher embeddings are cached in --out.
    Distill(DistillArgs),
    /// Tokenizer tools.
    #[command(subcommand)]
    Tokenizer(TokenizerCommand),
    /// Copy a model folder, storing the weights as f16 (half the size) or f32.
    Export(ExportArgs),
    /// Reduce a model's output dimension with a PCA projection fitted on sample
    /// sentences, appended as a dense layer (the encoder is unchanged).
    ReduceDim(ReduceDimArgs),
    /// Check that a recipe's training data shares no sentence with the test sets
    /// `lase eval` uses; exits with an error listing the first leaks.
    CheckLeakage(CheckLeakageArgs),
    /// Serve a model over HTTP: /embed (TEI), /v1/embeddings (OpenAI), /similarity,
    /// /mine, /health, /info, /metrics.
    Serve(ServeArgs),
}

#[derive(Args)]
struct ReduceDimArgs {
    /// Model folder to read.
    #[arg(long)]
    model: PathBuf,
    /// Output dimension.
    #[arg(long)]
    to: usize,
    /// Sentences to fit the projection on, one per line (plain or .gz).
    #[arg(long)]
    sample: PathBuf,
    /// Use at most this many sentences of --sample (its first lines).
    #[arg(long, default_value_t = 20000)]
    max_sentences: usize,
    /// Folder to write.
    #[arg(long)]
    output: PathBuf,
    /// Stored weight dtype: f16 or f32.
    #[arg(long, default_value = "f32")]
    dtype: String,
}

#[derive(Args)]
struct ExportArgs {
    /// Model folder to read.
    #[arg(long)]
    model: PathBuf,
    /// Folder to write (sentence-transformers layout).
    #[arg(long)]
    output: PathBuf,
    /// Stored weight dtype: f16 or f32.
    #[arg(long, default_value = "f16")]
    dtype: String,
}

#[derive(Args)]
struct CheckLeakageArgs {
    /// Training recipe (TOML) whose [data] sources are read.
    #[arg(long)]
    config: PathBuf,
    /// Folder holding the benchmark data (tatoeba-laser/, flores200-devtest/, ...).
    #[arg(long, default_value = "../shared/data")]
    data_dir: PathBuf,
    /// Also write the distinct test sentences that occur in the recipe's sources (before
    /// its exclusion), one per line: a file that `exclude_test_sets` accepts in place of
    /// the benchmark folder and that drops exactly the same pairs.
    #[arg(long)]
    write_found: Option<PathBuf>,
}

#[derive(Args)]
struct ServeArgs {
    /// Model folder.
    #[arg(long)]
    model: PathBuf,
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Most inputs per request.
    #[arg(long, default_value_t = 256)]
    max_client_batch_size: usize,
    /// Token budget of one coalesced inference run.
    #[arg(long, default_value_t = 16384)]
    max_batch_tokens: usize,
    /// Requests waiting for inference before new ones get 429.
    #[arg(long, default_value_t = 512)]
    max_queued_requests: usize,
    /// Most sentences per side of one /mine request (422 above).
    #[arg(long, default_value_t = 10_000)]
    max_mine_sentences: usize,
    /// Most tokens over both sides of one /mine request (413 above).
    #[arg(long, default_value_t = 131_072)]
    max_mine_tokens: usize,
    /// Seconds one /mine request may take, queueing, embedding and search together;
    /// past it the request is answered 413 and its remaining work is dropped.
    #[arg(long, default_value_t = 60.0)]
    max_mine_seconds: f64,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 2 << 20)]
    max_body_bytes: usize,
    /// Seconds in-flight requests get to finish after SIGTERM / Ctrl-C before the server
    /// stops regardless.
    #[arg(long, default_value_t = 30)]
    shutdown_timeout_seconds: u64,
    /// Seconds a client has to send a request's headers before its connection is closed
    /// (slow clients hold a connection no longer than this).
    #[arg(long, default_value_t = 10)]
    header_timeout_seconds: u64,
    /// Seconds a client has to send a request's body after its headers (then 408).
    #[arg(long, default_value_t = 30)]
    body_timeout_seconds: u64,
    /// Connections open at once; more wait in the accept backlog.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Most padded tokens per forward pass within a coalesced run (default on CPU: 256,
    /// half of `lase embed`'s, so a run of a few dozen sentences splits into enough
    /// forward passes to keep every worker busy; on GPU the device's default).
    #[arg(long)]
    forward_batch_tokens: Option<usize>,
}

/// `--set` changes to a recipe, shared by the commands that read one.
#[derive(Args, Clone)]
struct RecipeOverrideArgs {
    /// Change one recipe key for this run (repeatable): KEY=VALUE, the value read as TOML
    /// (schedule.steps=300, optimizer.lr=2e-4); KEY= removes the key (back to its default).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<lase::train::RecipeOverride>,
}

#[derive(Args)]
struct TrainArgs {
    /// The recipe (TOML).
    #[arg(long)]
    config: PathBuf,
    /// Output folder: checkpoint/, metrics.jsonl, metrics.svg, model/. Resumed when it
    /// holds a checkpoint of the same recipe.
    #[arg(long)]
    out: PathBuf,
    /// Stop after this many steps in this process (checkpointed; run again to resume).
    #[arg(long)]
    stop_after: Option<u64>,
    /// Stop at the first step past this many seconds in this process (checkpointed; run
    /// again to resume): fits a run into a scheduler's or a lent GPU's time slot.
    #[arg(long)]
    time_limit: Option<u64>,
    /// Mixed precision: f32, or bf16 (bfloat16 matrix products over float32 weights,
    /// as torch.autocast; faster on GPUs and AMX / AVX512-BF16 CPUs). A resumed run may
    /// change it.
    #[arg(long, default_value = "f32")]
    precision: Precision,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    overrides: RecipeOverrideArgs,
}

/// `lase distill --config RECIPE --out DIR`, or `lase distill multistage ...`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct DistillArgs {
    #[command(subcommand)]
    method: Option<DistillMethod>,
    /// The recipe (TOML) with an [objective.distillation] section.
    #[arg(long, required = true)]
    config: Option<PathBuf>,
    /// Output folder (as lase train); resumed when it holds a checkpoint of the recipe.
    #[arg(long, required = true)]
    out: Option<PathBuf>,
    /// Stop after this many steps in this process (checkpointed; run again to resume).
    #[arg(long)]
    stop_after: Option<u64>,
    /// Stop at the first step past this many seconds in this process (checkpointed; run
    /// again to resume): fits a run into a scheduler's or a lent GPU's time slot.
    #[arg(long)]
    time_limit: Option<u64>,
    /// Mixed precision: f32, or bf16 (bfloat16 matrix products over float32 weights,
    /// as torch.autocast; faster on GPUs and AMX / AVX512-BF16 CPUs). A resumed run may
    /// change it.
    #[arg(long, default_value = "f32")]
    precision: Precision,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    overrides: RecipeOverrideArgs,
}

#[derive(Subcommand)]
enum DistillMethod {
    /// Multi-stage distillation (multistage-distillation.txt): 1 teacher -> assistant
    /// (MSE), 2 student built from the assistant (recurring unit, embedding bottleneck
    /// aligned by MSE), 3 assistant -> student (MSE), 4 MCL + MSE. Each stage has its own
    /// folder under --out and resumes; --stage runs chosen stages only.
    Multistage(MultistageArgs),
}

#[derive(Args)]
struct MultistageArgs {
    /// The multi-stage recipe (TOML; configs/multistage/*.toml).
    #[arg(long)]
    config: PathBuf,
    /// Run folder: 1-assistant/, 2-bottleneck/, 3-student/, 4-contrastive/.
    #[arg(long)]
    out: PathBuf,
    /// Run only these stages (1-4, repeatable); default: every stage not yet finished.
    #[arg(long)]
    stage: Vec<usize>,
    /// Mixed precision of every training stage: f32, or bf16 (bfloat16 matrix products
    /// over float32 weights, as torch.autocast).
    #[arg(long, default_value = "f32")]
    precision: Precision,
    /// Do not draw progress bars.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    overrides: RecipeOverrideArgs,
}

#[derive(Subcommand)]
enum TokenizerCommand {
    /// Train a Unigram tokenizer (NFKC, <2xx> language tokens) on a language-balanced
    /// sample of the training text of a recipe's data sources.
    Train(TokenizerTrainArgs),
}

#[derive(Args)]
struct TokenizerTrainArgs {
    /// Recipe whose [data] sources give the text.
    #[arg(long)]
    config: PathBuf,
    /// Output tokenizer.json.
    #[arg(long)]
    output: PathBuf,
    /// Vocabulary size (default: the recipe's tokenizer.vocab_size).
    #[arg(long)]
    vocab_size: Option<usize>,
}

#[derive(Args)]
struct EvalArgs {
    /// Model folder.
    #[arg(long)]
    model: PathBuf,
    /// Comma-separated suites: tatoeba, flores, bucc, pool, sts, sib.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "tatoeba,flores,bucc,pool,sts,sib"
    )]
    suite: Vec<String>,
    /// Restrict to these languages: ISO 639-3 with an optional script (deu, deu_Latn,
    /// zho_Hans; 2-letter aliases such as de are mapped, and the log says so). One list
    /// serves every suite: each takes the languages it has and notes the others.
    #[arg(long, value_delimiter = ',')]
    langs: Option<Vec<String>>,
    /// Folder holding the benchmark data (tatoeba-laser/, ...).
    #[arg(long, default_value = "../shared/data")]
    data_dir: PathBuf,
    /// Write all numbers as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a Markdown report.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Draw a per-language bar chart (one panel per suite) as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Most sentences per forward pass.
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// Do not draw progress bars.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct MineArgs {
    /// Source sentences, one per line (plain or .gz).
    #[arg(long)]
    src: PathBuf,
    /// Target sentences, one per line (plain or .gz).
    #[arg(long)]
    tgt: PathBuf,
    /// Output TSV: score, source, target (sorted by score, best first).
    #[arg(long)]
    output: PathBuf,
    /// Model folder to embed both sides with.
    #[arg(long, required_unless_present_all = ["src_embeddings", "tgt_embeddings"], conflicts_with_all = ["src_embeddings", "tgt_embeddings"])]
    model: Option<PathBuf>,
    /// Precomputed source embeddings (float32 .npy, one row per line of --src).
    #[arg(long, requires = "tgt_embeddings")]
    src_embeddings: Option<PathBuf>,
    /// Precomputed target embeddings (float32 .npy, one row per line of --tgt).
    #[arg(long, requires = "src_embeddings")]
    tgt_embeddings: Option<PathBuf>,
    /// Margin: absolute (cos), distance (cos - avg) or ratio (cos / avg).
    #[arg(long, default_value = "ratio")]
    margin: lase::mine::Margin,
    /// Candidates: fwd, bwd, max (union, one-to-one) or intersect.
    #[arg(long, default_value = "max")]
    retrieval: lase::mine::Retrieval,
    /// Neighbours per sentence for the margin.
    #[arg(short, long, default_value_t = 4)]
    k: usize,
    /// Keep pairs scoring above this (e.g. 1.06 for the ratio margin).
    #[arg(long)]
    threshold: Option<f32>,
    /// Mine each distinct sentence once (identical lines merged; first line number kept).
    #[arg(long)]
    unify: bool,
    /// Use each source and target sentence at most once (max retrieval always does).
    #[arg(long)]
    one_to_one: bool,
    /// Append 0-based source and target line numbers as two more columns.
    #[arg(long)]
    indices: bool,
    /// Known translation pairs (src<TAB>tgt per line): print precision, recall and F1 of
    /// the mined pairs against them.
    #[arg(long)]
    gold: Option<PathBuf>,
    /// Approximate shortlist before exact rescoring: none (exact search), binary, int8.
    #[arg(long, default_value = "none")]
    quantize: lase::mine::quantized::Quantization,
    /// Shortlist size as a multiple of k (with --quantize).
    #[arg(long, default_value_t = 10)]
    rescore: usize,
    /// Approximate search through an HNSW graph per side (usearch) instead of exact
    /// search; prints recall@k against exact search on sampled queries.
    #[arg(long)]
    ann: bool,
    /// HNSW edges per node (with --ann).
    #[arg(long, default_value_t = lase::mine::ann::HnswOptions::default().connectivity)]
    ann_connectivity: usize,
    /// HNSW candidate list while building (ef_construction, with --ann).
    #[arg(long, default_value_t = lase::mine::ann::HnswOptions::default().expansion_add)]
    ann_ef_construction: usize,
    /// HNSW candidate list while searching (ef, with --ann): higher is slower and more exact.
    #[arg(long, default_value_t = lase::mine::ann::HnswOptions::default().expansion_search)]
    ann_ef_search: usize,
    /// Most sentences per forward pass when embedding.
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// Do not draw progress bars.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct EmbedArgs {
    /// Model folder (Hugging Face / sentence-transformers layout).
    #[arg(long)]
    model: PathBuf,
    /// Input text, one sentence per line; line i becomes row i.
    #[arg(long)]
    input: PathBuf,
    /// Output .npy file (default: the input path with .npy appended).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Most sentences per forward pass.
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// Most padded tokens per forward pass (default: 512 on CPU, 32768 on GPU).
    #[arg(long)]
    max_batch_tokens: Option<usize>,
    /// Forward passes run concurrently, libtorch threads divided among them (default: one
    /// per thread on CPU, 1 on GPU).
    #[arg(long)]
    workers: Option<usize>,
    /// Truncate sentences to this many tokens (default: the model's max_seq_length).
    #[arg(long)]
    max_length: Option<usize>,
    /// L2-normalise the vectors (models with a Normalize module always do).
    #[arg(long)]
    normalize: bool,
    /// Numeric precision: f32 (default, exact) or bf16 (faster on AMX CPUs and GPUs).
    #[arg(long, default_value = "f32")]
    precision: Precision,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
}

fn main() -> Result<()> {
    // Before libtorch creates its threads, so they inherit it.
    lase::runtime::flush_denormals();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("LASE_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_)) {
        // Like other Unix tools, stop quietly when stdout is a closed pipe (`lase ... |
        // head`) instead of panicking in println!. Not for the server, whose sockets
        // must not kill it when a client goes away.
        // SAFETY: restoring the default disposition of one signal before any thread
        // starts (libtorch's pool starts with the first tensor operation, below).
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    set_threads(cli.runtime.threads);
    let device = resolve_device(cli.runtime.device)?;
    match cli.command {
        Command::Embed(args) => embed(args, device),
        Command::Mine(args) => mine(args, device),
        Command::Shard(command) => cli::shard::run(command, device),
        Command::Eval(args) => eval(args, device),
        Command::Train(args) => train(args, device),
        Command::Distill(DistillArgs {
            method: Some(DistillMethod::Multistage(args)),
            ..
        }) => multistage(args, device),
        Command::Distill(args) => {
            let (Some(config_path), Some(out)) = (args.config, args.out) else {
                anyhow::bail!("lase distill needs --config and --out (or a method: multistage)");
            };
            let config =
                lase::train::TrainConfig::from_file_with(&config_path, &args.overrides.set)?;
            anyhow::ensure!(
                config.objective.distillation.is_some(),
                "{}: no [objective.distillation] section: nothing to distill from (use lase train)",
                config_path.display()
            );
            let args = TrainArgs {
                config: config_path,
                out,
                stop_after: args.stop_after,
                time_limit: args.time_limit,
                precision: args.precision,
                quiet: args.quiet,
                overrides: args.overrides,
            };
            train(args, device)
        }
        Command::Tokenizer(TokenizerCommand::Train(args)) => tokenizer_train(args),
        Command::Serve(args) => serve(args, device),
        Command::CheckLeakage(args) => check_leakage(args),
        Command::Export(args) => export(args),
        Command::ReduceDim(args) => reduce_dim(args, device),
    }
}

fn serve(args: ServeArgs, device: tch::Device) -> Result<()> {
    let encoder = SentenceEncoder::load(&args.model, device)
        .with_context(|| format!("loading model {}", args.model.display()))?;
    for (flag, value) in [
        (
            "--header-timeout-seconds",
            args.header_timeout_seconds as usize,
        ),
        ("--body-timeout-seconds", args.body_timeout_seconds as usize),
        ("--max-connections", args.max_connections),
    ] {
        anyhow::ensure!(value > 0, "{flag} must be at least 1");
    }
    let config = lase::serve::ServeConfig {
        model_id: args.model.display().to_string(),
        max_body_bytes: args.max_body_bytes,
        max_client_batch_size: args.max_client_batch_size,
        max_batch_tokens: args.max_batch_tokens,
        max_queued_requests: args.max_queued_requests,
        max_mine_sentences: args.max_mine_sentences,
        max_mine_tokens: args.max_mine_tokens,
        max_mine_time: std::time::Duration::try_from_secs_f64(args.max_mine_seconds)
            .ok()
            .filter(|d| !d.is_zero())
            .with_context(|| {
                format!(
                    "--max-mine-seconds {}: must be a positive number of seconds",
                    args.max_mine_seconds
                )
            })?,
        shutdown_timeout: std::time::Duration::from_secs(args.shutdown_timeout_seconds),
        connections: lase::serve::connections::ConnectionLimits {
            header_read_timeout: std::time::Duration::from_secs(args.header_timeout_seconds),
            body_read_timeout: std::time::Duration::from_secs(args.body_timeout_seconds),
            max_connections: args.max_connections,
        },
    };
    let mut options = lase::inference::EncodeOptions::for_device(device);
    match (args.forward_batch_tokens, device) {
        (Some(tokens), _) => options.max_batch_tokens = tokens,
        (None, tch::Device::Cpu) => options.max_batch_tokens = SERVE_CPU_FORWARD_TOKENS,
        (None, _) => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
            .await
            .with_context(|| format!("binding {}:{}", args.host, args.port))?;
        eprintln!("lase serve: listening on http://{}", listener.local_addr()?);
        lase::serve::serve(
            listener,
            encoder,
            options,
            config,
            lase::serve::shutdown_signal(),
        )
        .await
        .context("serving")
    })
}

fn train(args: TrainArgs, device: tch::Device) -> Result<()> {
    let config = lase::train::TrainConfig::from_file_with(&args.config, &args.overrides.set)?;
    let options = lase::train::TrainOptions {
        device,
        stop_after_steps: args.stop_after,
        time_limit: args.time_limit.map(std::time::Duration::from_secs),
        progress: !args.quiet,
        precision: args.precision,
    };
    let summary = lase::train::train(&config, &args.out, &options)
        .with_context(|| format!("training {}", args.config.display()))?;
    println!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}

fn multistage(args: MultistageArgs, device: tch::Device) -> Result<()> {
    use lase::train::multistage::{MultistageConfig, Stage, run_multistage};
    let config = MultistageConfig::from_file_with(&args.config, &args.overrides.set)?;
    let stages = args
        .stage
        .iter()
        .map(|&n| Stage::from_number(n))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let options = lase::train::TrainOptions {
        device,
        stop_after_steps: None,
        time_limit: None,
        progress: !args.quiet,
        precision: args.precision,
    };
    let model = run_multistage(&config, &args.out, &stages, &options)
        .with_context(|| format!("multi-stage distillation {}", args.config.display()))?;
    println!("model: {}", model.display());
    Ok(())
}

fn storage_dtype(name: &str) -> Result<lase::model::checkpoint::StorageDtype> {
    use lase::model::checkpoint::StorageDtype;
    Ok(match name {
        "f16" => StorageDtype::F16,
        "f32" => StorageDtype::F32,
        other => anyhow::bail!("--dtype {other}: expected f16 or f32"),
    })
}

fn reduce_dim(args: ReduceDimArgs, device: tch::Device) -> Result<()> {
    let dtype = storage_dtype(&args.dtype)?;
    let mut encoder = SentenceEncoder::load(&args.model, device)
        .with_context(|| format!("loading model {}", args.model.display()))?;
    let mut sentences = lase::io::text::read_lines(&args.sample)?;
    sentences.retain(|s| !s.trim().is_empty());
    sentences.truncate(args.max_sentences);
    let from = encoder.dim();
    let options = lase::inference::EncodeOptions::for_device(device);
    let (reduced, kept) =
        lase::model::reduce_dim::reduce_dimension(&mut encoder, &sentences, args.to, &options)?;
    reduced.save_as(&args.output, dtype)?;
    println!(
        "wrote {}: {from} -> {} dimensions, PCA fitted on {} sentences keeps {:.1}% of the variance",
        args.output.display(),
        reduced.dim(),
        sentences.len(),
        100.0 * kept
    );
    Ok(())
}

fn export(args: ExportArgs) -> Result<()> {
    let dtype = storage_dtype(&args.dtype)?;
    let encoder = SentenceEncoder::load(&args.model, tch::Device::Cpu)
        .with_context(|| format!("loading model {}", args.model.display()))?;
    encoder.save_as(&args.output, dtype)?;
    let bytes: u64 = walk_size(&args.output);
    println!(
        "wrote {} ({} weights, {}-d output, {:.1} MB on disk)",
        args.output.display(),
        args.dtype,
        encoder.dim(),
        bytes as f64 / 1e6
    );
    Ok(())
}

fn walk_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk_size(&path)
            } else {
                e.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}

/// Padded tokens per forward pass in `lase serve` on CPU (docs/benchmarks.md: 0.74x of
/// offline throughput at 512, 0.89-0.97x at 256, at 64 clients on 2 cores).
const SERVE_CPU_FORWARD_TOKENS: usize = 256;

fn check_leakage(args: CheckLeakageArgs) -> Result<()> {
    use lase::eval::leakage::{BenchmarkSentences, find_leaks};
    let config = lase::train::TrainConfig::from_file(&args.config)?;
    let benchmarks = BenchmarkSentences::read(&args.data_dir)?;
    // The pairs `lase train` reads (the exclusion folder is not read again when it is
    // the one checked here).
    let (corpus, dropped) = lase::train::trainer::read_training_pairs(
        &config.data,
        Some((&args.data_dir, &benchmarks)),
    )?;
    if let (Some(dir), Some(dropped)) = (config.data.exclusion(), dropped) {
        println!(
            "the recipe's exclude_test_sets ({}) drops {dropped} pairs",
            dir.display()
        );
    }
    if let Some(path) = &args.write_found {
        let raw = lase::data::ParallelCorpus::read(&config.data.sources)?;
        let mut found: Vec<String> = find_leaks(&raw, &benchmarks)
            .into_iter()
            .map(|l| l.sentence.trim().to_owned())
            .collect();
        found.sort();
        found.dedup();
        let mut text = found.join("\n");
        text.push('\n');
        lase::io::atomic::write_atomic(path, text.as_bytes())?;
        println!(
            "{}: {} test sentences found in the sources (an exclude_test_sets list)",
            path.display(),
            found.len()
        );
    }
    let leaks = find_leaks(&corpus, &benchmarks);
    println!(
        "{} training pairs, {} distinct test sentences under {}: {} leaked sentences",
        corpus.pairs.len(),
        benchmarks.len(),
        args.data_dir.display(),
        leaks.len()
    );
    for leak in leaks.iter().take(20) {
        println!(
            "pair {} ({}): {:?} is in {}",
            leak.pair, leak.language, leak.sentence, leak.benchmark
        );
    }
    anyhow::ensure!(
        leaks.is_empty(),
        "the training data of {} contains {} test sentences",
        args.config.display(),
        leaks.len()
    );
    Ok(())
}

fn tokenizer_train(args: TokenizerTrainArgs) -> Result<()> {
    let config = lase::train::TrainConfig::from_file(&args.config)?;
    // The text `lase train` would train its tokenizer on: leaks excluded, dev split out.
    let (corpus, _) = lase::train::trainer::training_and_dev_sets(&config.data, config.run.seed)?;
    let mut settings = config.tokenizer.clone();
    if let Some(v) = args.vocab_size {
        settings.vocab_size = v;
    }
    let json = lase::train::trainer::train_tokenizer(&corpus, &settings, config.run.seed, true)?;
    lase::io::atomic::write_atomic(&args.output, json.as_bytes())?;
    println!(
        "{}: {} pieces, {} languages",
        args.output.display(),
        settings.vocab_size,
        corpus.languages.len()
    );
    Ok(())
}

fn eval(args: EvalArgs, device: tch::Device) -> Result<()> {
    use lase::eval::tatoeba;
    let encoder = SentenceEncoder::load(&args.model, device)
        .with_context(|| format!("loading model {}", args.model.display()))?;
    let options =
        lase::inference::EncodeOptions::for_device(device).with_batch_size(args.batch_size);
    let mut json = serde_json::Map::new();
    let mut report = format!("# Evaluation of {}\n\n", args.model.display());
    for suite in &args.suite {
        let start = std::time::Instant::now();
        match suite.as_str() {
            "tatoeba" => {
                let sets =
                    tatoeba::load(&args.data_dir.join("tatoeba-laser"), args.langs.as_deref())?;
                let r = tatoeba::evaluate(&encoder, &sets, &options, !args.quiet)?;
                println!(
                    "tatoeba: {} languages, mean P@1 {:.2} (xx->en {:.2}, en->xx {:.2}), xSIM error xx->en {:.2}; {:.0} s",
                    r.average.languages,
                    r.average.p_at_1,
                    r.average.p_at_1_xx_en,
                    r.average.p_at_1_en_xx,
                    r.average.xsim_error_xx_en,
                    start.elapsed().as_secs_f64()
                );
                for (name, g) in &r.groups {
                    println!(
                        "tatoeba {name}: {} languages, mean P@1 {:.2}",
                        g.languages, g.p_at_1
                    );
                }
                report += &format!(
                    "## Tatoeba (P@1 and xSIM error, %)\n\n{}\n",
                    tatoeba::markdown(&r)
                );
                json.insert("tatoeba".into(), serde_json::to_value(&r)?);
            }
            "flores" => {
                use lase::eval::flores;
                let dir = args.data_dir.join("flores200-devtest/devtest");
                let r =
                    flores::evaluate(&encoder, &dir, args.langs.as_deref(), &options, !args.quiet)?;
                println!(
                    "flores: {} xx-eng pairs, mean P@1 {:.2}, xSIM error xx->en {:.2}{}; {:.0} s",
                    r.xx_eng.len(),
                    r.xx_eng_mean_p_at_1,
                    r.xx_eng_mean_xsim_error,
                    r.non_english_mean_p_at_1.map_or(String::new(), |p| format!(
                        ", {} non-English pairs P@1 {p:.2}",
                        r.non_english.len()
                    )),
                    start.elapsed().as_secs_f64()
                );
                report += "## FLORES-200 devtest, xx-eng (%)\n\n| language | P@1 xx->en | P@1 en->xx | xSIM error xx->en |\n| --- | ---: | ---: | ---: |\n";
                for (l, s) in &r.xx_eng {
                    report += &format!(
                        "| {l} | {:.1} | {:.1} | {:.1} |\n",
                        100.0 * s.p_at_1_xy,
                        100.0 * s.p_at_1_yx,
                        100.0 * s.xsim_error_xy
                    );
                }
                report += &format!("| **mean** | | | P@1 {:.1} |\n\n", r.xx_eng_mean_p_at_1);
                json.insert("flores".into(), serde_json::to_value(&r)?);
            }
            "sts" => {
                use lase::eval::sts;
                let r = sts::evaluate(
                    &encoder,
                    &args.data_dir,
                    args.langs.as_deref(),
                    &options,
                    !args.quiet,
                )?;
                let show = |m: &std::collections::BTreeMap<String, f64>| {
                    m.iter()
                        .map(|(k, v)| format!("{k} {v:.1}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                println!("sts (Spearman x100): {}", show(&r.monolingual));
                if !r.cross_lingual.is_empty() {
                    println!("sts cross-lingual: {}", show(&r.cross_lingual));
                }
                report += "## STS (Spearman x100 of cosine vs gold)\n\n| set | Spearman |\n| --- | ---: |\n";
                for (k, v) in r.monolingual.iter().chain(&r.cross_lingual) {
                    report += &format!("| {k} | {v:.1} |\n");
                }
                report += "\n";
                json.insert("sts".into(), serde_json::to_value(&r)?);
            }
            "sib" => {
                use lase::eval::sib;
                let config = sib::ClassifierConfig::default();
                let r = sib::evaluate(
                    &encoder,
                    &args.data_dir.join("sib200"),
                    args.langs.as_deref(),
                    &options,
                    &config,
                    !args.quiet,
                )?;
                println!(
                    "sib: trained on English ({:.1}% on English test), zero-shot mean accuracy over {} languages {:.1}% ({} seeds); {:.0} s",
                    r.english_accuracy,
                    r.accuracy.len() - 1,
                    r.mean_accuracy,
                    config.seeds,
                    start.elapsed().as_secs_f64()
                );
                report += "## SIB-200 zero-shot topic classification (accuracy %, trained on English)\n\n| language | accuracy |\n| --- | ---: |\n";
                for (k, v) in &r.accuracy {
                    report += &format!("| {k} | {v:.1} |\n");
                }
                report += &format!(
                    "| **mean (non-English)** | **{:.1}** |\n\n",
                    r.mean_accuracy
                );
                json.insert("sib".into(), serde_json::to_value(&r)?);
            }
            "bucc" => {
                use lase::eval::bucc;
                let dir = args.data_dir.join("flores200-devtest/devtest");
                let config = bucc::BuccConfig::default();
                let r = bucc::evaluate_flores(
                    &encoder,
                    &dir,
                    args.langs.as_deref(),
                    &options,
                    &config,
                    !args.quiet,
                )?;
                report += "## BUCC-style mining on FLORES-200 (ratio margin, k=4, max retrieval)\n\nThreshold chosen on the train split, applied to test; the oracle (threshold chosen on test) is not a result.\n\n| pair | test P | test R | **test F1** | train threshold | oracle F1 |\n| --- | ---: | ---: | ---: | ---: | ---: |\n";
                for (pair, b) in &r {
                    println!(
                        "bucc {pair}: test F1 {:.1} (P {:.1}, R {:.1}) at train threshold {:.3}; oracle F1 {:.1}",
                        100.0 * b.f1,
                        100.0 * b.precision,
                        100.0 * b.recall,
                        b.train_threshold,
                        100.0 * b.oracle_f1
                    );
                    report += &format!(
                        "| {pair} | {:.1} | {:.1} | **{:.1}** | {:.3} | {:.1} |\n",
                        100.0 * b.precision,
                        100.0 * b.recall,
                        100.0 * b.f1,
                        b.train_threshold,
                        100.0 * b.oracle_f1
                    );
                }
                report += "\n";
                json.insert("bucc".into(), serde_json::to_value(&r)?);
            }
            "pool" => {
                use lase::eval::pool;
                let config = pool::PoolConfig::default();
                let r = pool::evaluate(
                    &encoder,
                    &args.data_dir,
                    args.langs.as_deref(),
                    &options,
                    &config,
                    !args.quiet,
                )?;
                report += "## Large-pool retrieval (P@1 %, FLORES queries among 1,012 gold + distractor English sentences)\n\n| direction | candidates | P@1 |\n| --- | ---: | ---: |\n";
                for (k, v) in &r {
                    println!(
                        "pool {k}: P@1 {:.1} among {} candidates",
                        100.0 * v.p_at_1,
                        v.candidates
                    );
                    report += &format!("| {k} | {} | {:.1} |\n", v.candidates, 100.0 * v.p_at_1);
                }
                report += "\n";
                json.insert("pool".into(), serde_json::to_value(&r)?);
            }
            other => {
                anyhow::bail!(
                    "unknown suite {other:?} (available: tatoeba, flores, bucc, pool, sts, sib)"
                )
            }
        }
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&json)? + "\n";
        lase::io::atomic::write_atomic(path, text.as_bytes())?;
    }
    if let Some(path) = &args.report {
        lase::io::atomic::write_atomic(path, report.as_bytes())?;
    }
    if let Some(path) = &args.plot {
        let panels = lase::eval::plot::panels_from_report(&json);
        lase::eval::plot::plot_bars(&panels, path)?;
    }
    Ok(())
}

fn mine(args: MineArgs, device: tch::Device) -> Result<()> {
    use lase::mine::MineOptions;
    use lase::mine::bitext::{EmbeddingSource, mine_files, write_pairs_tsv};
    let encoder = match &args.model {
        Some(dir) => Some(
            SentenceEncoder::load(dir, device)
                .with_context(|| format!("loading model {}", dir.display()))?,
        ),
        None => None,
    };
    let source = match (&encoder, args.src_embeddings, args.tgt_embeddings) {
        (Some(encoder), _, _) => EmbeddingSource::Model(
            encoder,
            lase::inference::EncodeOptions::for_device(device).with_batch_size(args.batch_size),
        ),
        (None, Some(src), Some(tgt)) => EmbeddingSource::Precomputed { src, tgt },
        _ => anyhow::bail!("give --model, or both --src-embeddings and --tgt-embeddings"),
    };
    let mut options = MineOptions {
        margin: args.margin,
        retrieval: args.retrieval,
        threshold: args.threshold,
        one_to_one: args.one_to_one,
        ..Default::default()
    };
    options.knn.k = args.k.max(1);
    options.knn.device = device;
    let start = std::time::Instant::now();
    options.quantization = args.quantize;
    options.rescore = args.rescore.max(1);
    options.ann = args.ann.then(|| lase::mine::ann::HnswOptions {
        connectivity: args.ann_connectivity.max(2),
        expansion_add: args.ann_ef_construction.max(1),
        expansion_search: args.ann_ef_search.max(1),
    });
    let (pairs, approximation) = mine_files(
        &args.src,
        &args.tgt,
        &source,
        &options,
        args.unify,
        !args.quiet,
    )?;
    write_pairs_tsv(&args.output, &pairs, args.indices)?;
    if let Some(a) = approximation {
        let (search, structure) = match &options.ann {
            Some(h) => (
                format!(
                    "HNSW (M {}, ef_construction {}, ef {})",
                    h.connectivity, h.expansion_add, h.expansion_search
                ),
                "graphs",
            ),
            None => (
                format!(
                    "{:?} shortlist of {} x k",
                    options.quantization, options.rescore
                ),
                "codes",
            ),
        };
        println!(
            "{search}: recall@{} against exact search on {} sampled queries: source->target {:.4}, target->source {:.4}; {structure} {:.1} MiB",
            options.knn.k,
            a.sampled,
            a.recall_forward,
            a.recall_backward,
            a.index_bytes as f64 / 1048576.0
        );
    }
    println!(
        "wrote {} pairs to {} ({:?} margin, {:?} retrieval, k={}, threshold {}, {:.1} s)",
        pairs.len(),
        args.output.display(),
        options.margin,
        options.retrieval,
        options.knn.k,
        options
            .threshold
            .map_or("none".to_string(), |t| t.to_string()),
        start.elapsed().as_secs_f64()
    );
    if let Some(path) = &args.gold {
        let gold = lase::mine::bitext::read_gold_pairs(path)?;
        let g = lase::mine::bitext::score_against_gold(&pairs, &gold);
        println!(
            "against {} gold pairs ({}): precision {:.1}% ({} of {} mined pairs), recall {:.1}%, F1 {:.1}%",
            g.gold,
            path.display(),
            100.0 * g.precision,
            g.correct,
            g.mined,
            100.0 * g.recall,
            100.0 * g.f1
        );
        println!(
            "best F1 on these gold pairs (an oracle: use it to calibrate on a held-out split): --threshold {:.5} gives precision {:.1}%, recall {:.1}%, F1 {:.1}%",
            g.best_threshold,
            100.0 * g.best_precision,
            100.0 * g.best_recall,
            100.0 * g.best_f1
        );
    }
    Ok(())
}

fn embed(args: EmbedArgs, device: tch::Device) -> Result<()> {
    let mut encoder = SentenceEncoder::load(&args.model, device)
        .with_context(|| format!("loading model {}", args.model.display()))?;
    if let Some(max_length) = args.max_length {
        encoder.set_max_seq_length(max_length)?;
    }
    if args.normalize {
        encoder.set_normalize(true);
    }
    if args.precision == Precision::Bf16
        && device == tch::Device::Cpu
        && !lase::runtime::cpu_has_fast_bf16()
    {
        tracing::warn!(
            "this CPU has neither AVX512-BF16 nor AMX: bf16 runs on slow fallback kernels; f32 is faster here"
        );
    }
    encoder.set_precision(args.precision);
    let output = args.output.unwrap_or_else(|| {
        let mut name = args.input.clone().into_os_string();
        name.push(".npy");
        PathBuf::from(name)
    });
    let mut options = EmbedFileOptions::for_device(device);
    options.encode.batch_size = args.batch_size.max(1);
    if let Some(tokens) = args.max_batch_tokens {
        options.encode.max_batch_tokens = tokens.max(1);
    }
    if let Some(workers) = args.workers {
        options.encode.workers = workers.max(1);
    }
    options.progress = !args.quiet;
    let summary = embed_file(&encoder, &args.input, &output, &options)?;
    println!(
        "wrote {} x {} float32 to {} ({} sentences, {} tokens, {:.3} s, {:.0} sentences/s, {:?} on {:?})",
        summary.rows,
        summary.dim,
        summary.output.display(),
        summary.rows,
        summary.tokens,
        summary.seconds,
        summary.sentences_per_second(),
        encoder.precision(),
        device,
    );
    Ok(())
}

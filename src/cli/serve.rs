//! `lase serve`: the HTTP server.

use std::path::PathBuf;

use super::model_load::{PrecisionArgs, load_encoder};
use anyhow::{Context, Result};
use clap::Args;

#[derive(Args)]
pub struct ServeArgs {
    /// Model folder.
    #[arg(long)]
    model: PathBuf,
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Most inputs per request.
    #[arg(long, default_value_t = 256, value_parser = super::at_least_one)]
    max_client_batch_size: usize,
    /// Token budget of one coalesced inference run.
    #[arg(long, default_value_t = 16384)]
    max_batch_tokens: usize,
    /// Requests waiting for inference before new ones get 429.
    #[arg(long, default_value_t = 512)]
    max_queued_requests: usize,
    /// Requests tokenised at once, off the HTTP threads; others wait for a slot
    /// [default: the number of CPUs].
    #[arg(long)]
    max_concurrent_tokenizations: Option<usize>,
    /// Most sentences per side of one /mine request (422 above).
    #[arg(long, default_value_t = 10_000)]
    max_mine_sentences: usize,
    /// Most tokens over both sides of one /mine request (413 above).
    #[arg(long, default_value_t = 131_072)]
    max_mine_tokens: usize,
    /// Seconds one /mine request may take, tokenising, queueing, embedding and search together;
    /// past it the request is answered 413 and its remaining work is dropped.
    #[arg(long, default_value_t = 60.0)]
    max_mine_seconds: f64,
    /// Largest k (neighbours per sentence for the margin) one /mine request may ask for
    /// (422 above; LASER's margin uses 4).
    #[arg(long, default_value_t = 64)]
    max_mine_k: usize,
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
    /// Seconds an answer's write may stay blocked (a client that does not read what it
    /// asked for) before its connection is closed.
    #[arg(long, default_value_t = 30)]
    write_timeout_seconds: u64,
    /// Connections open at once; more wait in the accept backlog.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Most padded tokens per forward pass within a coalesced run (default on CPU: 256,
    /// half of `lase embed`'s, so a run of a few dozen sentences splits into enough
    /// forward passes to keep every worker busy; on GPU the device's default).
    #[arg(long)]
    forward_batch_tokens: Option<usize>,
    #[command(flatten)]
    precision: PrecisionArgs,
}

/// Padded tokens per forward pass in `lase serve` on CPU (docs/benchmarks.md: 0.74x of
/// offline throughput at 512, 0.89-0.97x at 256, at 64 clients on 2 cores).
const SERVE_CPU_FORWARD_TOKENS: usize = 256;

/// The longest timeout a serve flag accepts, in seconds (one year): hyper adds the header
/// timeout to `Instant::now()`, which panics on overflow, so absurd values are refused
/// before any connection exists.
const MAX_TIMEOUT_SECONDS: u64 = 365 * 24 * 3600;

pub fn serve(args: ServeArgs, device: tch::Device) -> Result<()> {
    // (flag, seconds, the least it may be): a shutdown timeout of 0 stops at once.
    for (flag, seconds, least) in [
        ("--header-timeout-seconds", args.header_timeout_seconds, 1),
        ("--body-timeout-seconds", args.body_timeout_seconds, 1),
        ("--write-timeout-seconds", args.write_timeout_seconds, 1),
        (
            "--shutdown-timeout-seconds",
            args.shutdown_timeout_seconds,
            0,
        ),
    ] {
        anyhow::ensure!(seconds >= least, "{flag} must be at least {least}");
        anyhow::ensure!(
            seconds <= MAX_TIMEOUT_SECONDS,
            "{flag} {seconds}: at most {MAX_TIMEOUT_SECONDS} (one year)"
        );
    }
    anyhow::ensure!(
        args.max_mine_seconds <= MAX_TIMEOUT_SECONDS as f64,
        "--max-mine-seconds {}: at most {MAX_TIMEOUT_SECONDS} (one year)",
        args.max_mine_seconds
    );
    for (flag, value) in [
        ("--max-connections", args.max_connections),
        ("--max-mine-k", args.max_mine_k),
        (
            "--max-concurrent-tokenizations",
            args.max_concurrent_tokenizations.unwrap_or(1),
        ),
    ] {
        anyhow::ensure!(value > 0, "{flag} must be at least 1");
    }
    let encoder = load_encoder(&args.model, device, args.precision.precision)?;
    let config = lase::serve::ServeConfig {
        model_id: args.model.display().to_string(),
        max_body_bytes: args.max_body_bytes,
        max_client_batch_size: args.max_client_batch_size,
        max_batch_tokens: args.max_batch_tokens,
        max_queued_requests: args.max_queued_requests,
        max_concurrent_tokenizations: args
            .max_concurrent_tokenizations
            .unwrap_or(lase::serve::ServeConfig::default().max_concurrent_tokenizations),
        max_mine_sentences: args.max_mine_sentences,
        max_mine_tokens: args.max_mine_tokens,
        max_mine_k: args.max_mine_k,
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
            write_stall_timeout: std::time::Duration::from_secs(args.write_timeout_seconds),
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

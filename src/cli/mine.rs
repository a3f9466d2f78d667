//! `lase mine`: margin-scored bitext mining of two monolingual files.

use std::path::PathBuf;

use super::model_load::{PrecisionArgs, load_encoder};
use anyhow::{Context, Result};
use clap::Args;

#[derive(Args)]
pub struct MineArgs {
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
    #[command(flatten)]
    scoring: ScoringArgs,
    #[command(flatten)]
    precision: PrecisionArgs,
    /// Mine each distinct sentence once (identical lines merged; first line number kept).
    #[arg(long)]
    unify: bool,
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
    /// Shortlist size as a multiple of k (with --quantize; 1-1024).
    #[arg(long, default_value_t = 10, value_parser = super::whole_number_in(1, 1024))]
    rescore: usize,
    /// Approximate search through an HNSW graph per side (usearch) instead of exact
    /// search; prints recall@k against exact search on sampled queries.
    #[arg(long)]
    ann: bool,
    /// HNSW edges per node (with --ann; 2-1024).
    #[arg(long, default_value_t = lase::mine::ann::HnswOptions::default().connectivity,
          value_parser = super::whole_number_in(2, 1024))]
    ann_connectivity: usize,
    /// HNSW candidate list while building (ef_construction, with --ann; 1-65536).
    #[arg(long, default_value_t = lase::mine::ann::HnswOptions::default().expansion_add,
          value_parser = super::whole_number_in(1, 65_536))]
    ann_ef_construction: usize,
    /// HNSW candidate list while searching (ef, with --ann; 1-65536): higher is slower and
    /// more exact.
    #[arg(long, default_value_t = lase::mine::ann::HnswOptions::default().expansion_search,
          value_parser = super::whole_number_in(1, 65_536))]
    ann_ef_search: usize,
    /// Number format of the vectors inside the HNSW graphs (with --ann); the neighbours
    /// found are rescored in f32.
    #[arg(long, default_value_t = lase::mine::ann::HnswOptions::default().storage)]
    ann_storage: lase::mine::ann::GraphStorage,
    /// Insert and search rows in corpus order (with --ann) instead of grouped by region
    /// (the default from 100,000 rows on both sides together: faster on large corpora).
    #[arg(long)]
    ann_row_order: bool,
    /// Most sentences per forward pass when embedding.
    #[arg(long, default_value_t = 32, value_parser = super::at_least_one)]
    batch_size: usize,
    /// Do not draw progress bars.
    #[arg(long)]
    quiet: bool,
}

/// How candidate pairs are scored and kept: shared by `lase mine` and `lase shard mine`.
#[derive(Args)]
pub struct ScoringArgs {
    /// Margin: absolute (cos), distance (cos - avg) or ratio (cos / avg).
    #[arg(long, default_value = "ratio")]
    margin: lase::mine::Margin,
    /// Candidates: fwd, bwd, max (union, one-to-one) or intersect.
    #[arg(long, default_value = "max")]
    retrieval: lase::mine::Retrieval,
    /// Neighbours per sentence for the margin (for lase shard mine: the k the lists were
    /// searched with).
    #[arg(short, long, default_value_t = 4,
          value_parser = super::whole_number_in(1, super::MAX_NEIGHBOURS))]
    k: usize,
    /// Keep pairs scoring above this (e.g. 1.06 for the ratio margin).
    #[arg(long, value_parser = super::finite_f32)]
    threshold: Option<f32>,
    /// Use each source and target sentence at most once (max retrieval always does).
    #[arg(long)]
    one_to_one: bool,
}

impl ScoringArgs {
    /// Mining options with these settings (k at least 1), the rest at their defaults.
    pub fn mine_options(&self) -> lase::mine::MineOptions {
        let mut options = lase::mine::MineOptions {
            margin: self.margin,
            retrieval: self.retrieval,
            threshold: self.threshold,
            one_to_one: self.one_to_one,
            ..Default::default()
        };
        options.knn.k = self.k.max(1);
        options
    }
}

pub fn mine(args: MineArgs, device: tch::Device) -> Result<()> {
    use lase::mine::bitext::{EmbeddingSource, mine_files, write_pairs_tsv};
    // The output path is checked before the model loads and the mining runs, not after.
    lase::io::atomic::check_writable(&args.output)?;
    let encoder = match &args.model {
        Some(dir) => Some(load_encoder(dir, device, args.precision.precision)?),
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
    let mut options = args.scoring.mine_options();
    options.knn.device = device;
    let start = std::time::Instant::now();
    options.quantization = args.quantize;
    options.rescore = args.rescore.max(1);
    options.ann = args.ann.then(|| lase::mine::ann::HnswOptions {
        connectivity: args.ann_connectivity.max(2),
        expansion_add: args.ann_ef_construction.max(1),
        expansion_search: args.ann_ef_search.max(1),
        storage: args.ann_storage,
        locality: (!args.ann_row_order).then(lase::mine::locality::LocalityOptions::default),
        ..Default::default()
    });
    // Known pairs are read before mining: a bad file fails before any output is written.
    let gold = match &args.gold {
        Some(path) => Some((path.clone(), lase::mine::bitext::read_gold_pairs(path)?)),
        None => None,
    };
    let mined = mine_files(
        &args.src,
        &args.tgt,
        &source,
        &options,
        args.unify,
        !args.quiet,
    )
    .with_context(|| {
        format!(
            "mining {} against {}",
            args.src.display(),
            args.tgt.display()
        )
    })?;
    let pairs = mined.pairs;
    write_pairs_tsv(&args.output, &pairs, args.indices)?;
    if let Some(a) = mined.approximation {
        print_approximation(&options, &a);
    }
    println!(
        "wrote {} pairs to {} ({:?} margin, {:?} retrieval, k={}, threshold {}, {:.1} s, of which k-NN search {:.1} s)",
        pairs.len(),
        args.output.display(),
        options.margin,
        options.retrieval,
        options.knn.k,
        options
            .threshold
            .map_or("none".to_string(), |t| t.to_string()),
        start.elapsed().as_secs_f64(),
        mined.search_seconds
    );
    if let Some(gold) = &gold {
        print_gold_scores(&pairs, gold);
    }
    Ok(())
}

/// The approximate search's recall against exact search on sampled queries.
fn print_approximation(options: &lase::mine::MineOptions, a: &lase::mine::ApproximationReport) {
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

/// Precision, recall and F1 of the mined pairs against known translation pairs.
fn print_gold_scores(
    pairs: &[lase::mine::bitext::MinedBitext],
    (path, gold): &(PathBuf, std::collections::HashSet<(String, String)>),
) {
    let g = lase::mine::bitext::score_against_gold(pairs, gold);
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

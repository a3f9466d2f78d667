//! `lase shard init|embed|knn|mine`: the steps of sharded mining (library: `lase::shard`).

use std::path::PathBuf;

use super::model_load::{PrecisionChoice, load_encoder};
use anyhow::Result;
use clap::{Args, Subcommand};
use lase::shard::{Direction, StepOutcome, Store};

#[derive(Subcommand)]
pub enum ShardCommand {
    /// Plan a store: count the corpus' lines and cut them into shards (manifest.json).
    Init(InitArgs),
    /// Embed one shard of a store (skipped if already done).
    Embed(EmbedArgs),
    /// k-NN of one shard's rows over every shard of the other store (skipped if done).
    Knn(KnnArgs),
    /// Margin-score the merged k-NN lists and write the pairs (as lase mine).
    Mine(MineArgs),
}

#[derive(Args)]
pub struct InitArgs {
    /// Corpus, one sentence per line (plain or .gz).
    #[arg(long)]
    input: PathBuf,
    /// Store folder to create.
    #[arg(long)]
    store: PathBuf,
    /// Number of shards (fewer if the corpus has fewer aligned blocks).
    #[arg(long)]
    shards: usize,
    /// Shard boundaries fall on multiples of this many lines: lase mine's embedding
    /// chunk, so the shards' vectors equal one process's to the bit.
    #[arg(long, default_value_t = lase::inference::EMBED_CHUNK, value_parser = super::at_least_one)]
    align: usize,
}

#[derive(Args)]
pub struct EmbedArgs {
    #[arg(long)]
    store: PathBuf,
    /// Shard number, 0-based (a Slurm array task: $SLURM_ARRAY_TASK_ID).
    #[arg(long)]
    shard: usize,
    /// Model folder.
    #[arg(long)]
    model: PathBuf,
    /// Most sentences per forward pass (as lase mine).
    #[arg(long, default_value_t = 32, value_parser = super::at_least_one)]
    batch_size: usize,
    #[arg(long)]
    quiet: bool,
    /// Numeric precision of the forward pass, as `lase embed --precision` takes it, but
    /// f32 by default: a cluster's nodes may be of different CPU kinds, and `auto` would
    /// embed their shards in different precisions (bf16 on some, f32 on others).
    #[arg(long, default_value = "f32")]
    precision: PrecisionChoice,
}

#[derive(Args)]
pub struct KnnArgs {
    /// Source store.
    #[arg(long)]
    src: PathBuf,
    /// Target store.
    #[arg(long)]
    tgt: PathBuf,
    /// fwd: source shard over the target store; bwd: target shard over the source store.
    #[arg(long)]
    direction: Direction,
    #[arg(long)]
    shard: usize,
    /// Neighbours per sentence.
    #[arg(short, long, default_value_t = 4,
          value_parser = super::whole_number_in(1, super::MAX_NEIGHBOURS))]
    k: usize,
    /// Folder of the k-NN lists.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
pub struct MineArgs {
    #[arg(long)]
    src: PathBuf,
    #[arg(long)]
    tgt: PathBuf,
    /// Folder of the k-NN lists (both directions, every shard).
    #[arg(long)]
    knn: PathBuf,
    /// Output TSV: score, source, target (best first), as lase mine.
    #[arg(long)]
    output: PathBuf,
    #[command(flatten)]
    scoring: super::mine::ScoringArgs,
    /// Append 0-based source and target line numbers.
    #[arg(long)]
    indices: bool,
}

fn report(step: &str, shard: usize, outcome: &StepOutcome) {
    match outcome {
        StepOutcome::Skipped { rows } => {
            println!("{step} shard {shard}: already complete ({rows} rows), skipped")
        }
        StepOutcome::Written { rows, seconds } => {
            println!("{step} shard {shard}: {rows} rows in {seconds:.1} s")
        }
    }
}

pub fn run(command: ShardCommand, device: tch::Device) -> Result<()> {
    match command {
        ShardCommand::Init(a) => {
            let store = Store::init(&a.store, &a.input, a.shards, a.align.max(1))?;
            let sizes: Vec<usize> = store.manifest.shards.iter().map(|r| r.len()).collect();
            println!(
                "{}: {} lines of {} in {} shards {:?}",
                a.store.display(),
                store.manifest.lines,
                a.input.display(),
                sizes.len(),
                sizes
            );
        }
        ShardCommand::Embed(a) => {
            let store = Store::open(&a.store)?;
            store.range(a.shard)?;
            let encoder = load_encoder(&a.model, device, a.precision)?;
            let options =
                lase::inference::EncodeOptions::for_device(device).with_batch_size(a.batch_size);
            let outcome =
                lase::shard::embed_shard(&store, a.shard, &encoder, &a.model, &options, !a.quiet)?;
            report("embed", a.shard, &outcome);
        }
        ShardCommand::Knn(a) => {
            let (src, tgt) = (Store::open(&a.src)?, Store::open(&a.tgt)?);
            let workers = tch::get_num_threads().max(1) as usize;
            let outcome = lase::shard::knn_shard(
                &src,
                &tgt,
                a.direction,
                a.shard,
                a.k.max(1),
                &a.out,
                workers,
            )?;
            report(&format!("knn {:?}", a.direction), a.shard, &outcome);
        }
        ShardCommand::Mine(a) => {
            lase::io::atomic::check_writable(&a.output)?;
            let (src, tgt) = (Store::open(&a.src)?, Store::open(&a.tgt)?);
            let options = a.scoring.mine_options();
            let started = std::time::Instant::now();
            let pairs = lase::shard::mine_shards(&src, &tgt, &a.knn, &options)?;
            lase::mine::bitext::write_pairs_tsv(&a.output, &pairs, a.indices)?;
            println!(
                "wrote {} pairs to {} ({:?} margin, {:?} retrieval, k={}, {} + {} shards, {:.1} s)",
                pairs.len(),
                a.output.display(),
                options.margin,
                options.retrieval,
                options.knn.k,
                src.shards(),
                tgt.shards(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

//! `lase check-leakage`: a recipe's training data against the test sets.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct CheckLeakageArgs {
    /// Training recipe (TOML) whose [data] sources are read.
    #[arg(long)]
    config: PathBuf,
    /// Folder holding the benchmark data (tatoeba-laser/, flores200-devtest/, ...).
    #[arg(long, default_value = "../shared/data")]
    data_dir: PathBuf,
    /// Also write the distinct test sentences that occur in the recipe's sources (before
    /// its exclusion), one per line: a file that `exclude_test_sets` accepts in place of
    /// the benchmark folder and that drops exactly the same pairs (with --bitext, those
    /// sets' pairs too).
    #[arg(long)]
    write_found: Option<PathBuf>,
    /// Your own test sets too, as `lase eval --bitext` takes them (a `<a>-<b>` folder of
    /// `<stem>.<a>` / `<stem>.<b>` files, or a folder of such folders; comma-separated or
    /// repeated): their sentences count as test sentences (the recipe's exclude_test_sets
    /// does not drop them; a --write-found list does).
    #[arg(long, value_delimiter = ',')]
    bitext: Vec<PathBuf>,
}

pub fn check_leakage(args: CheckLeakageArgs) -> Result<()> {
    use lase::eval::leakage::{BenchmarkSentences, find_leaks};
    let config = lase::train::TrainConfig::from_file(&args.config)?;
    let bitext_sets = lase::eval::bitext::find_sets(&args.bitext)?;
    let mut benchmarks = BenchmarkSentences::read(&args.data_dir)?;
    // The pairs `lase train` reads (the exclusion folder is not read again when it is
    // the one checked here).
    let (corpus, dropped) = lase::train::training_data::read_training_pairs(
        &config.data,
        Some((&args.data_dir, &benchmarks)),
    )?;
    if let (Some(dir), Some(dropped)) = (config.data.exclusion(), dropped) {
        println!(
            "the recipe's exclude_test_sets ({}) drops {dropped} pairs",
            dir.display()
        );
    }
    // The user's own sets join the check after the pairs are read: `lase train` would not
    // drop them, so neither may this reading of its pairs.
    lase::eval::bitext::add_test_sentences(&bitext_sets, &mut benchmarks)?;
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
        "{} training pairs, {} distinct test sentences under {}{}: {} leaked sentences",
        corpus.pairs.len(),
        benchmarks.len(),
        args.data_dir.display(),
        if bitext_sets.is_empty() {
            String::new()
        } else {
            format!(" and in {} test sets of --bitext", bitext_sets.len())
        },
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

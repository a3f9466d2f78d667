//! `lase tokenizer train`.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub enum TokenizerCommand {
    /// Train a Unigram tokenizer (NFKC, <2xx> language tokens) on a language-balanced
    /// sample of the training text of a recipe's data sources.
    Train(TokenizerTrainArgs),
}

#[derive(Args)]
pub struct TokenizerTrainArgs {
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

pub fn tokenizer_train(args: TokenizerTrainArgs) -> Result<()> {
    let config = lase::train::TrainConfig::from_file(&args.config)?;
    // The text `lase train` would train its tokenizer on: leaks excluded, dev split out.
    let (corpus, _) =
        lase::train::training_data::training_and_dev_sets(&config.data, config.run.seed)?;
    let mut settings = config.tokenizer.clone();
    if let Some(v) = args.vocab_size {
        settings.vocab_size = v;
    }
    let json =
        lase::train::encoder_init::train_tokenizer(&corpus, &settings, config.run.seed, true)?;
    lase::io::atomic::write_atomic(&args.output, json.as_bytes())?;
    println!(
        "{}: {} pieces, {} languages",
        args.output.display(),
        settings.vocab_size,
        corpus.languages.len()
    );
    Ok(())
}

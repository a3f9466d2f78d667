//! `lase tokenizer train`, `coverage` and `extend`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub enum TokenizerCommand {
    /// Train a Unigram tokenizer (NFKC, <2xx> language tokens) on a language-balanced
    /// sample of the training text of a recipe's data sources.
    Train(TokenizerTrainArgs),
    /// How well a model's tokenizer covers each language of a recipe's training text:
    /// [UNK] share, tokens per sentence and per 100 characters, sentences cut at the
    /// model's length limit. Sorted by [UNK] share.
    Coverage(TokenizerCoverageArgs),
    /// Build the starting model of a recipe with `model.extend_vocabulary`: its
    /// `init_from` model with new WordPiece pieces learnt from the training text, written
    /// to OUT/init as `lase train|distill --out OUT` would (which then reuses it).
    Extend(TokenizerExtendArgs),
}

#[derive(Args)]
pub struct TokenizerExtendArgs {
    /// Recipe with model.init_from and model.extend_vocabulary.
    #[arg(long)]
    config: PathBuf,
    /// Run folder: the model is written to OUT/init.
    #[arg(long)]
    out: PathBuf,
}

pub fn tokenizer_extend(args: TokenizerExtendArgs) -> Result<()> {
    let config = lase::train::TrainConfig::from_file(&args.config)?;
    let (Some(init), Some(extension)) = (
        config.model.init_from.as_ref(),
        config.model.extend_vocabulary.as_ref(),
    ) else {
        anyhow::bail!(
            "{}: needs model.init_from and model.extend_vocabulary",
            args.config.display()
        );
    };
    let (corpus, _) =
        lase::train::training_data::training_and_dev_sets(&config.data, config.run.seed)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let dir = lase::train::encoder_init::extended_init(
        init,
        extension,
        &args.out,
        &corpus,
        config.run.seed,
    )?;
    println!("{}", dir.display());
    Ok(())
}

#[derive(Args)]
pub struct TokenizerCoverageArgs {
    /// Model folder whose tokenizer (and length limit) is measured.
    #[arg(long)]
    model: PathBuf,
    /// Recipe whose [data] sources give the text (training split: leaks and dev excluded).
    #[arg(long)]
    config: PathBuf,
    /// Sentences per language (the first ones read).
    #[arg(long, default_value_t = 1000)]
    per_language: usize,
    /// Also write the table as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub fn tokenizer_coverage(args: TokenizerCoverageArgs) -> Result<()> {
    // The output path is checked before the work, not after the table is printed.
    if let Some(path) = &args.json {
        lase::io::atomic::check_writable(path)?;
    }
    let encoder = lase::model::SentenceEncoder::load(&args.model, tch::Device::Cpu)
        .with_context(|| format!("loading model {}", args.model.display()))?;
    let config = lase::train::TrainConfig::from_file(&args.config)?;
    let (corpus, _) =
        lase::train::training_data::training_and_dev_sets(&config.data, config.run.seed)?;
    use lase::tokenizer::coverage::{coverage, special_tokens_per_sentence, unknown_id};
    let max_tokens = encoder.tokenizer().max_length();
    let tokenizer = encoder.tokenizer().inner();
    if unknown_id(tokenizer).is_none() {
        println!(
            "this tokenizer has no unknown token: every [UNK] share below is 0 by construction"
        );
    }
    let report = coverage(
        tokenizer,
        corpus.sentences(),
        args.per_language,
        max_tokens,
        special_tokens_per_sentence(tokenizer),
    )?;
    println!(
        "{} on {} ({} languages, up to {} sentences each, cut at {max_tokens} tokens)",
        args.model.display(),
        args.config.display(),
        report.len(),
        args.per_language
    );
    println!(
        "| language | sentences | [UNK] % | tokens / sentence | tokens / 100 characters | cut % |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for c in &report {
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
            c.language,
            c.sentences,
            c.unknown_percent(),
            c.tokens_per_sentence(),
            c.tokens_per_100_characters(),
            c.over_length_percent()
        );
    }
    let over = |limit: f64| {
        report
            .iter()
            .filter(|c| c.unknown_percent() > limit)
            .count()
    };
    println!(
        "languages with more than 1% / 5% / 20% [UNK] tokens: {} / {} / {}",
        over(1.0),
        over(5.0),
        over(20.0)
    );
    if let Some(path) = &args.json {
        let mut text = serde_json::to_string_pretty(&report)?;
        text.push('\n');
        lase::io::atomic::write_atomic(path, text.as_bytes())?;
    }
    Ok(())
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
    if let Some(v) = args.vocab_size {
        let max = lase::tokenizer::training::MAX_VOCABULARY;
        anyhow::ensure!(
            (1..=max).contains(&v),
            "--vocab-size {v}: must be in [1, {max}]"
        );
    }
    let config = lase::train::TrainConfig::from_file(&args.config)?;
    lase::io::atomic::check_writable(&args.output)?;
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

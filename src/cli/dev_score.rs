//! `lase dev-score`: a model scored on a recipe's dev split (the pairs `lase train`
//! carves out of the training data and scores itself on; never a test set), so models
//! from different runs, or a shipped one, are compared on the same pairs; with
//! `--teacher`, also how much of the teacher's similarity structure it keeps
//! (`lase::train::dev_similarity`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::model_load::{PrecisionChoice, load_encoder};
use super::train::RecipeOverrideArgs;

#[derive(Args)]
pub struct DevScoreArgs {
    /// Model folder.
    #[arg(long)]
    model: PathBuf,
    /// The recipe (TOML) whose [data] sources, exclusion and dev split are read, and its
    /// run.dev_max_pairs, as `lase train` reads them.
    #[arg(long)]
    config: PathBuf,
    #[command(flatten)]
    overrides: RecipeOverrideArgs,
    /// Also write the scores, per language, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Numeric precision of the forward pass (f32 by default: as training scores an f32
    /// run; a run trained with bf16 mixed precision scores itself with bf16 products over
    /// f32 weights, which no inference precision reproduces exactly).
    #[arg(long, default_value = "f32")]
    precision: PrecisionChoice,
    /// Also score how well the model keeps this model's (its English teacher's) similarity
    /// structure: Spearman x100 between the two models' cosines over every pair of the
    /// split's distinct pivot-side sentences (at most 2,000), a dev-side guard for English
    /// similarity, which the retrieval scores cannot see.
    #[arg(long)]
    teacher: Option<PathBuf>,
    /// Also print both scores over the dev languages these codes name (as `lase eval
    /// --langs`: deu names deu and deu_Latn; 2-letter aliases are mapped): a sub-mean to
    /// watch where the mean over every language can hide a loss.
    #[arg(long, value_delimiter = ',')]
    langs: Option<Vec<String>>,
}

pub fn dev_score(args: DevScoreArgs, device: tch::Device) -> Result<()> {
    // What can fail fast does, before the dev split is read and scored.
    let config = lase::train::TrainConfig::from_file_with(&args.config, &args.overrides.set)?;
    if let Some(path) = &args.json {
        lase::io::atomic::check_writable(path)?;
    }
    let teacher = match &args.teacher {
        Some(dir) => Some(load_encoder(dir, device, args.precision)?),
        None => None,
    };
    let (_, dev_pairs) =
        lase::train::training_data::training_and_dev_sets(&config.data, config.run.seed)?;
    let dev = lase::train::dev_set::DevSet::new(&dev_pairs, config.run.dev_max_pairs);
    if dev.is_empty() {
        anyhow::bail!(
            "{}: the recipe's dev split is empty (data.dev.pairs_per_language, min_language_pairs)",
            args.config.display()
        );
    }
    let encoder = load_encoder(&args.model, device, args.precision)?;
    let scores = dev.scores(&encoder)?;
    println!(
        "{}: dev P@1 {:.2} (both directions among each language's own pairs), pooled {:.2} (among all {} distinct target sentences); {} languages, {} pairs",
        args.model.display(),
        scores.p_at_1,
        scores.pooled_p_at_1,
        scores.pool_size,
        scores.languages.len(),
        dev.len()
    );
    if let Some(np) = &scores.non_pivot {
        println!(
            "{}: non-pivot dev P@1 {:.2} (both directions among each language pair's own pairs), pooled {:.2} (among all {} distinct non-pivot targets); {} language pairs, {} pairs",
            args.model.display(),
            np.p_at_1,
            np.pooled_p_at_1,
            np.pool_size,
            np.languages.len(),
            dev.non_pivot_len()
        );
    }
    let mut json = serde_json::to_value(&scores)?;
    if let Some(wanted) = &args.langs {
        let subset = scores.subset(wanted)?;
        println!(
            "{}: dev P@1 {:.2}, pooled {:.2} over the {} languages --langs names ({})",
            args.model.display(),
            subset.p_at_1,
            subset.pooled_p_at_1,
            subset.languages.len(),
            subset.languages.join(" ")
        );
        json["langs"] = serde_json::to_value(&subset)?;
    }
    if let (Some(teacher_dir), Some(teacher)) = (&args.teacher, &teacher) {
        use lase::train::dev_similarity::{distinct_sentences, similarity_agreement};
        let sentences = distinct_sentences(dev.pivot_targets());
        let agreement = similarity_agreement(&encoder, teacher, &sentences)?;
        println!(
            "{}: similarity agreement with {} {:.2} (Spearman x100 of the cosines of all {} pairs of {} distinct pivot-side dev sentences)",
            args.model.display(),
            teacher_dir.display(),
            agreement.spearman,
            agreement.pairs,
            agreement.sentences
        );
        json["similarity_agreement"] = serde_json::to_value(&agreement)?;
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&json)? + "\n";
        lase::io::atomic::write_atomic(path, text.as_bytes())?;
    }
    Ok(())
}

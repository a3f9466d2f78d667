//! `lase eval`: the registered benchmark suites ([`lase::eval::SUITES`]).

use std::path::PathBuf;

use super::model_load::{PrecisionChoice, load_encoder};
use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct EvalArgs {
    /// Model folder.
    #[arg(long)]
    model: PathBuf,
    /// Comma-separated suites: tatoeba, flores, bucc, pool, sts, sib, and bitext (your own
    /// test sets, named with --bitext; not in the default list).
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
    /// Your own line-aligned test sets for `--suite bitext`: a folder `<a>-<b>` (deu-eng,
    /// de-en) of file pairs `<stem>.<a>[.gz]` / `<stem>.<b>[.gz]` (the layout of `lase
    /// train`'s moses-folder sources), or a folder of such folders; comma-separated or
    /// repeated. Each stem is one test set: P@1 both ways and xSIM error.
    #[arg(long, value_delimiter = ',')]
    bitext: Vec<PathBuf>,
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
    #[arg(long, default_value_t = 32, value_parser = super::at_least_one)]
    batch_size: usize,
    /// Do not draw progress bars.
    #[arg(long)]
    quiet: bool,
    /// Numeric precision of the forward pass, as `lase embed --precision` takes it, but
    /// f32 by default: an evaluation measures the model itself, the same on every CPU;
    /// `--precision auto` measures what `lase embed` runs on this machine.
    #[arg(long, default_value = "f32")]
    precision: PrecisionChoice,
}

pub fn eval(args: EvalArgs, device: tch::Device) -> Result<()> {
    use lase::eval::{BenchmarkData, SuiteInput, registry, run_suites};
    // Output paths and suite names are checked before the model loads and the suites run.
    for path in [&args.json, &args.report, &args.plot].into_iter().flatten() {
        lase::io::atomic::check_writable(path)?;
    }
    for name in &args.suite {
        registry::find(name)?;
    }
    let wants_bitext = args.suite.iter().any(|s| s == "bitext");
    if wants_bitext {
        anyhow::ensure!(
            !args.bitext.is_empty(),
            "--suite bitext scores your own test sets: name them with --bitext PATH"
        );
        // Every set is found (a lone file named) and --langs applied before the model loads.
        lase::eval::bitext::select_sets(
            lase::eval::bitext::find_sets(&args.bitext)?,
            args.langs.as_deref(),
        )?;
    } else {
        anyhow::ensure!(
            args.bitext.is_empty(),
            "--bitext names test sets for the bitext suite: add bitext to --suite"
        );
    }
    // The data folder is checked before the model loads: a wrong working directory (the
    // default is relative) is the usual cause, and it should not wait for a model. The
    // bitext suite alone reads none of it.
    if args.suite.iter().any(|s| s != "bitext") && !args.data_dir.is_dir() {
        anyhow::bail!(
            "data folder {} not found: --data-dir names the folder that holds the benchmark \
             folders ({}/, {}/, ...); its default, ../shared/data, is relative to the working \
             directory",
            args.data_dir.display(),
            lase::eval::benchmark_data::TATOEBA,
            lase::eval::benchmark_data::FLORES_DEVTEST
        );
    }
    let encoder = load_encoder(&args.model, device, args.precision)?;
    let options =
        lase::inference::EncodeOptions::for_device(device).with_batch_size(args.batch_size);
    let input = SuiteInput {
        encoder: &encoder,
        data: BenchmarkData::new(&args.data_dir),
        langs: args.langs.as_deref(),
        bitext: &args.bitext,
        options: &options,
        progress: !args.quiet,
    };
    let report = run_suites(&args.suite, &args.model, &input, |line| println!("{line}"))?;
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report.json)? + "\n";
        lase::io::atomic::write_atomic(path, text.as_bytes())?;
    }
    if let Some(path) = &args.report {
        lase::io::atomic::write_atomic(path, report.markdown.as_bytes())?;
    }
    if let Some(path) = &args.plot {
        lase::eval::plot::plot_bars(&registry::panels(&report.json), path)?;
    }
    Ok(())
}

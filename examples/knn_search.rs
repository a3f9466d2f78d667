//! Times lase's exact two-way k-NN on two `.npy` matrices (for bench/knn_speed.py).
//! Usage: knn_search X.npy Y.npy K THREADS [tiles|tensor]
//! Prints one JSON line: seconds (search only), peak RSS in MiB, and a checksum of the
//! neighbour indices so the caller can compare with another engine.

use lase::io::npy::NpyMatrix;
use lase::mine::{KnnOptions, MatrixView, knn_both_ways};

fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        args.len() >= 5,
        "usage: knn_search X.npy Y.npy K THREADS [tiles|tensor]"
    );
    let kernel = match args.get(5).map(String::as_str) {
        Some("tensor") => lase::mine::SearchKernel::TensorBlocks,
        _ => lase::mine::SearchKernel::CpuTiles,
    };
    lase::runtime::set_threads(args[4].parse()?);
    // Resident memory before the inputs are touched (libtorch and the binary).
    let _ = tch::Tensor::zeros([1], tch::kind::FLOAT_CPU);
    let baseline = status_mib("VmRSS:");
    let x = NpyMatrix::open(&args[1])?;
    let y = NpyMatrix::open(&args[2])?;
    let (xv, yv) = (x.values(), y.values());
    let xm = MatrixView::new(&xv, x.rows, x.cols)?;
    let ym = MatrixView::new(&yv, y.rows, y.cols)?;
    let start = std::time::Instant::now();
    let options = KnnOptions {
        kernel,
        ..KnnOptions::new(args[3].parse()?)
    };
    let (fwd, bwd) = knn_both_ways(&xm, &ym, &options)?;
    if let Some(dump) = std::env::var_os("LASE_KNN_DUMP") {
        let text: String = fwd
            .indices
            .iter()
            .chain(&bwd.indices)
            .map(|i| format!("{i}\n"))
            .collect();
        std::fs::write(dump, text)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let checksum: i64 = fwd
        .indices
        .iter()
        .chain(&bwd.indices)
        .enumerate()
        .map(|(i, &j)| (i as i64 % 7 + 1) * j)
        .sum();
    println!(
        "{{\"seconds\": {seconds:.3}, \"peak_rss_mib\": {:.1}, \"baseline_rss_mib\": {baseline:.1}, \"top1_fwd\": {}, \"checksum\": {checksum}}}",
        status_mib("VmHWM:"),
        fwd.indices_of(0)[0]
    );
    Ok(())
}

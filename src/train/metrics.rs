//! Training metrics: one JSON object per line in `metrics.jsonl` (step, loss and its
//! parts, learning rate, gradient norm, pairs/s, dev retrieval), and an SVG plot of loss
//! and dev P@1 against steps. A resumed run first drops lines past its checkpoint.

use std::io::Write;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;

/// Append-only JSONL log.
pub struct MetricsLog {
    path: PathBuf,
}

impl MetricsLog {
    /// Opens `path`, keeping only records with `step <= keep_through` (every record when
    /// None); a line that is not a record (a write cut by a kill) is dropped.
    pub fn open(path: &Path, keep_through: Option<u64>) -> Result<Self> {
        if path.exists() {
            let text = crate::io::text::read_text(path)?;
            let kept: String = text
                .lines()
                .filter(|l| {
                    let step = serde_json::from_str::<serde_json::Value>(l)
                        .ok()
                        .and_then(|v| v.get("step").and_then(|s| s.as_u64()));
                    step.is_some_and(|s| keep_through.is_none_or(|k| s <= k))
                })
                .map(|l| format!("{l}\n"))
                .collect();
            write_atomic(path, kept.as_bytes())?;
        }
        Ok(Self {
            path: path.to_path_buf(),
        })
    }

    pub fn append(&self, record: &serde_json::Value) -> Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| LaseError::io(&self.path, e))?;
        writeln!(f, "{record}").map_err(|e| LaseError::io(&self.path, e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Plots `loss` and `dev_p_at_1` from a metrics.jsonl as an SVG (two panels).
pub fn plot(jsonl: &Path, svg: &Path) -> Result<()> {
    let text = crate::io::text::read_text(jsonl)?;
    let mut loss = Vec::new();
    let mut dev = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(step) = v.get("step").and_then(|s| s.as_f64()) else {
            continue;
        };
        if let Some(l) = v.get("loss").and_then(|x| x.as_f64()) {
            loss.push((step, l));
        }
        if let Some(p) = v.get("dev_p_at_1").and_then(|x| x.as_f64()) {
            dev.push((step, p));
        }
    }
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let (left, right) = root.split_horizontally(450);
        draw_series(&left, "training loss", &loss, &RED)?;
        draw_series(&right, "dev P@1 (%)", &dev, &BLUE)?;
        root.present().map_err(plot_error)?;
    }
    write_atomic(svg, out.as_bytes())
}

fn plot_error<E: std::fmt::Display>(e: E) -> LaseError {
    LaseError::InvalidArgument(format!("plot: {e}"))
}

fn draw_series<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    points: &[(f64, f64)],
    color: &RGBColor,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (x0, x1) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (y0, y1) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let (x0, x1) = if points.is_empty() {
        (0.0, 1.0)
    } else {
        (x0, x1.max(x0 + 1.0))
    };
    let (y0, y1) = if points.is_empty() {
        (0.0, 1.0)
    } else {
        (y0.min(0.0), y1 * 1.05 + 1e-9)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(45)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_desc("step")
        .draw()
        .map_err(plot_error)?;
    chart
        .draw_series(LineSeries::new(points.iter().copied(), color))
        .map_err(plot_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_truncates_and_plot_writes_svg() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.jsonl");
        let log = MetricsLog::open(&p, None).unwrap();
        for s in 1..=5u64 {
            log.append(&serde_json::json!({"step": s, "loss": 5.0 / s as f64, "dev_p_at_1": s as f64 * 10.0}))
                .unwrap();
        }
        // A kill mid-write leaves a partial last line: dropped, every record kept.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"step\": 6, \"lo")
            .unwrap();
        let _ = MetricsLog::open(&p, None).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 5);
        let _ = MetricsLog::open(&p, Some(3)).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 3);
        let svg = dir.path().join("m.svg");
        plot(&p, &svg).unwrap();
        let s = std::fs::read_to_string(&svg).unwrap();
        assert!(
            s.starts_with("<svg") && s.contains("polyline"),
            "{}",
            &s[..200.min(s.len())]
        );
    }
}

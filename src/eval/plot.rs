//! Per-language bar charts of an evaluation (`lase eval --plot out.svg`): one panel per
//! suite, one bar per language (or pair, or STS set), drawn with plotters into an SVG.

use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;

use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;

/// One panel: a title, the y-axis meaning and the bars (label, value).
#[derive(Clone, Debug, PartialEq)]
pub struct BarPanel {
    pub title: String,
    pub y_label: String,
    pub bars: Vec<(String, f64)>,
}

/// Retrieval bars of a `{key: RetrievalScores}` object: P@1 as the mean of both
/// directions, in percent.
pub fn retrieval_bars(map: Option<&Value>) -> Vec<(String, f64)> {
    let number = |v: &Value, key: &str| v.get(key).and_then(Value::as_f64);
    map.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, s)| {
            Some((
                k.clone(),
                50.0 * (number(s, "p_at_1_xy")? + number(s, "p_at_1_yx")?),
            ))
        })
        .collect()
}

/// Bars of a `{key: number}` object, each value times `scale`.
pub fn number_bars(map: Option<&Value>, scale: f64) -> Vec<(String, f64)> {
    map.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), scale * v.as_f64()?)))
        .collect()
}

/// Bars of a `{key: {field: number, ..}}` object, each `field` times `scale`.
pub fn field_bars(map: &Value, field: &str, scale: f64) -> Vec<(String, f64)> {
    map.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), scale * v.get(field)?.as_f64()?)))
        .collect()
}

const PANEL_HEIGHT: u32 = 380;
const PIXELS_PER_BAR: u32 = 14;

fn plot_error<E: std::fmt::Display>(e: E) -> LaseError {
    LaseError::InvalidArgument(format!("plot: {e}"))
}

/// Draws `panels` stacked vertically into `svg` (written atomically). Bars keep their
/// given order; labels are rotated so 100+ languages stay legible.
pub fn plot_bars(panels: &[BarPanel], svg: &Path) -> Result<()> {
    if panels.is_empty() {
        return Err(LaseError::InvalidArgument(
            "plot: no per-language numbers to draw".into(),
        ));
    }
    let most = panels.iter().map(|p| p.bars.len()).max().unwrap_or(1) as u32;
    let width = (most * PIXELS_PER_BAR + 120).max(700);
    let height = PANEL_HEIGHT * panels.len() as u32;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        for (area, panel) in root
            .split_evenly((panels.len(), 1))
            .iter()
            .zip(panels.iter())
        {
            draw_panel(area, panel)?;
        }
        root.present().map_err(plot_error)?;
    }
    write_atomic(svg, out.as_bytes())
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &BarPanel,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let n = panel.bars.len();
    let top = panel
        .bars
        .iter()
        .map(|b| b.1)
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.08;
    let bottom = panel.bars.iter().map(|b| b.1).fold(0.0f64, f64::min);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(70)
        .y_label_area_size(50)
        .build_cartesian_2d((0..n).into_segmented(), bottom..top)
        .map_err(plot_error)?;
    let labels: Vec<String> = panel.bars.iter().map(|b| b.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(panel.y_label.as_str())
        .x_labels(n)
        .x_label_style(
            ("sans-serif", 10)
                .into_font()
                .transform(FontTransform::Rotate90),
        )
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()
        .map_err(plot_error)?;
    chart
        .draw_series(panel.bars.iter().enumerate().map(|(i, (_, v))| {
            let mut bar = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), *v),
                ],
                BLUE.mix(0.7).filled(),
            );
            bar.set_margin(0, 0, 1, 1);
            bar
        }))
        .map_err(plot_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_read_each_suite_and_the_svg_has_one_bar_per_language() {
        let report: serde_json::Map<String, Value> = serde_json::from_str(
            r#"{
              "tatoeba": {"languages": {"deu": {"p_at_1_xy": 0.5, "p_at_1_yx": 0.7, "pairs": 10},
                                        "rus": {"p_at_1_xy": 0.1, "p_at_1_yx": 0.3, "pairs": 10}}},
              "sts": {"monolingual": {"en": 82.0}, "cross_lingual": {"en-de": 29.0}},
              "sib": {"accuracy": {"deu_Latn": 50.0}, "mean_accuracy": 50.0}
            }"#,
        )
        .unwrap();
        let panels = crate::eval::registry::panels(&report);
        assert_eq!(panels.len(), 3);
        assert_eq!(
            panels[0].bars,
            vec![("deu".to_string(), 60.0), ("rus".to_string(), 20.0)]
        );
        assert_eq!(
            panels[1].bars,
            vec![("en".to_string(), 82.0), ("en-de".to_string(), 29.0)]
        );
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("eval.svg");
        plot_bars(&panels, &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg"), "{}", &text[..50]);
        for label in ["deu", "rus", "en-de", "deu_Latn", "Tatoeba", "SIB-200"] {
            assert!(text.contains(label), "no {label} in the SVG");
        }
        // 2 + 2 + 1 bars drawn as rectangles, plus the white background.
        let filled = text.matches("<rect").count();
        assert!(filled > 5, "{filled} rectangles");
        assert!(plot_bars(&[], &svg).is_err());
    }
}

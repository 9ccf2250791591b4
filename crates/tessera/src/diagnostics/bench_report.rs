//! `tessera bench --html report.html`: where the time goes (per-op profile, as bars) and how
//! run latency is spread (histogram), in one self-contained page (inline SVG drawn with
//! `plotters`; the `pictures` feature).
//!
//! The profile itself is [`crate::profile`] (also what browsers get).

#[cfg(feature = "pictures")]
use super::picture_drawing::{escape, html_page_start};
pub use crate::profile::{NodeTime, OpTime, Profile, profile};
#[cfg(feature = "pictures")]
use crate::{Error, Result};
#[cfg(feature = "pictures")]
use plotters::prelude::*;
#[cfg(feature = "pictures")]
use std::fmt::Write;

/// The numbers a bench page shows besides the profile.
#[derive(Debug, Clone)]
pub struct BenchSummary {
    pub model: String,
    pub backend: String,
    pub load_ms: f64,
    pub first_run_ms: f64,
    /// Every timed run's latency, in ms.
    pub latencies_ms: Vec<f64>,
}

#[cfg(feature = "pictures")]
fn chart_error(e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("drawing the chart: {e}"))
}

#[cfg(feature = "pictures")]
/// Horizontal bars: time per op type (at most `limit`, slowest first).
fn op_bars(profile: &Profile, limit: usize) -> Result<String> {
    let ops: Vec<&OpTime> = profile.per_op.iter().take(limit).collect();
    let n = ops.len().max(1);
    let max = ops
        .iter()
        .map(|o| o.ms_per_run)
        .fold(0.0, f64::max)
        .max(1e-6);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 80 + 24 * n as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("time per op type (ms per run)", ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(260)
            .build_cartesian_2d(0f64..max * 1.15, (0..n).into_segmented())
            .map_err(chart_error)?;
        let labels: Vec<String> = ops
            .iter()
            .map(|o| format!("{} ×{}", o.op, o.nodes))
            .collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&|y| match y {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    labels.get(*i).cloned().unwrap_or_default()
                }
                SegmentValue::Last => String::new(),
            })
            .x_desc("ms per run")
            .draw()
            .map_err(chart_error)?;
        chart
            .draw_series(ops.iter().enumerate().map(|(i, o)| {
                Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(i)),
                        (o.ms_per_run, SegmentValue::Exact(i + 1)),
                    ],
                    RGBColor(0x4a, 0x90, 0xd9).filled(),
                )
            }))
            .map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

#[cfg(feature = "pictures")]
/// Latency histogram of the timed runs.
fn latency_histogram(latencies: &[f64]) -> Result<String> {
    let lo = latencies.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = latencies.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = match (lo.is_finite(), hi > lo) {
        (true, true) => (lo, hi),
        // Every run took the same time: one unit-wide range holding it.
        (true, false) => (lo, lo + 1.0),
        (false, _) => (0.0, 1.0),
    };
    let bins = 20usize;
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0u32; bins];
    for &t in latencies {
        let k = (((t - lo) / width) as usize).min(bins - 1);
        counts[k] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("latency of {} timed runs", latencies.len()),
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(50)
            .build_cartesian_2d(lo..hi, 0u32..top + 1)
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .x_desc("ms")
            .y_desc("runs")
            .draw()
            .map_err(chart_error)?;
        chart
            .draw_series(counts.iter().enumerate().map(|(k, &c)| {
                let x0 = lo + width * k as f64;
                Rectangle::new(
                    [(x0, 0), (x0 + width, c)],
                    RGBColor(0x38, 0x76, 0x1d).filled(),
                )
            }))
            .map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

#[cfg(feature = "pictures")]
/// The whole page: numbers, the per-op bars, the histogram, the slowest nodes.
pub fn render_html(summary: &BenchSummary, profile: &Profile) -> Result<String> {
    let mut sorted = summary.latencies_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        sorted
            .get(((sorted.len().saturating_sub(1)) as f64 * q).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let mut out = html_page_start(
        &format!("bench {}", summary.model),
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;text-align:left}",
    );
    let _ = writeln!(
        out,
        "<h2>{} on {}</h2>\n<p id=\"numbers\">load (model + plan) {:.2} ms; first run {:.2} ms; <span id=\"runs\">{}</span> timed runs: median <span id=\"median-ms\">{:.3}</span> ms, p90 {:.3} ms, min {:.3} ms, max {:.3} ms</p>",
        escape(&summary.model),
        escape(&summary.backend),
        summary.load_ms,
        summary.first_run_ms,
        sorted.len(),
        quantile(0.5),
        quantile(0.9),
        quantile(0.0),
        quantile(1.0)
    );
    let _ = writeln!(
        out,
        "<h3>profile</h3>\n<p id=\"profile-method\">{}: <span id=\"op-types\">{}</span> op types, {} nodes, {:.3} ms per run in total.</p>",
        escape(&profile.method),
        profile.per_op.len(),
        profile.per_node.len(),
        profile.total_ms()
    );
    let _ = writeln!(out, "<div id=\"op-chart\">{}</div>", op_bars(profile, 25)?);
    let _ = writeln!(
        out,
        "<h3>latency</h3>\n<div id=\"latency-chart\">{}</div>",
        latency_histogram(&summary.latencies_ms)?
    );
    out.push_str("<h3>slowest nodes</h3>\n<table id=\"nodes\"><tr><th>node</th><th>op</th><th>ms per run</th></tr>\n");
    for n in profile.per_node.iter().take(20) {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.4}</td></tr>",
            escape(&n.node),
            escape(&n.op),
            n.ms_per_run
        );
    }
    out.push_str("</table>\n</body></html>\n");
    Ok(out)
}

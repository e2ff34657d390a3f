//! The burstiness plots of the thesis (ch. 4.1): `burst`, the distribution of bytes over the
//! instantaneous rate they were sent at (figures 4.1, 4.2; bars, class `burst bin`, ten per
//! decade, log rate axis), and `burst-cdf`, its integral, bytes sent at or below each rate
//! (figures 4.3, 4.4; class `burst cdf`, a stair). Both mark the connection's average throughput
//! with a vertical line (`avg`): bytes to the right of it were sent faster than the connection
//! went on average, i.e. in bursts.

use super::{Axis, AxisStyle, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, View, chart};
use crate::series::burst::BurstSeries;

/// Histogram bins per decade of rate.
pub const BINS_PER_DECADE: u32 = 10;

fn frame(
    series: &BurstSeries,
    view: &View,
    what: &str,
    y: Axis,
    mut marks: Vec<Mark>,
    mut legend: Vec<LegendEntry>,
) -> Figure {
    let (lo, hi) = range(series);
    if let Some(avg) = series.average_bps.filter(|a| *a > 0.0) {
        let x = avg.log10();
        let prims = vec![
            Prim { shape: Shape::Line { x1: x, y1: y.min, x2: x, y2: y.max }, color: Color::Blue },
            Prim {
                shape: Shape::Text {
                    x,
                    y: y.max * 0.6,
                    anchor: super::Anchor::Right,
                    text: format!("average {}bit/s", super::si(avg)),
                },
                color: Color::Blue,
            },
        ];
        marks.push(Mark { class: "avg", frame: None, count: 1, prims });
        legend.push(LegendEntry {
            color: Color::Blue,
            sample: Sample::Line,
            text: "average throughput of the connection".into(),
        });
    }
    let total: u64 = series.points.iter().map(|p| p.bytes as u64).sum();
    Figure {
        title: view.title.clone().unwrap_or_else(|| super::title(series.conn, series.dir, &series.info, what)),
        x: Axis::styled("instantaneous rate", AxisStyle::Log10 { unit: "bit/s" }, lo, hi, 8),
        y,
        marks,
        legend,
        remarks: vec![format!(
            "{} data packets; {total} bytes with a rate (the first packet's {} bytes: none)",
            series.points.len(),
            series.unrated_bytes
        )],
    }
}

/// The x range in log10 units: whole decades around the rates and the average.
fn range(series: &BurstSeries) -> (f64, f64) {
    let (lo, hi) = series.rate_range().unwrap_or((1e3, 1e6));
    let avg = series.average_bps.filter(|a| *a > 0.0).unwrap_or(lo);
    (lo.min(avg).log10().floor(), (hi.max(avg).log10() + 1e-9).ceil().max(lo.log10().floor() + 1.0))
}

/// The distribution (figures 4.1, 4.2).
pub fn burst(series: &BurstSeries, view: &View) -> Figure {
    let bins = series.histogram(BINS_PER_DECADE);
    let ymax = bins.iter().map(|b| b.bytes).max().unwrap_or(0) as f64;
    let marks = bins
        .iter()
        .filter(|b| b.bytes > 0)
        .map(|b| {
            let shape = Shape::Rect { x1: b.lo_bps.log10(), y1: 0.0, x2: b.hi_bps.log10(), y2: b.bytes as f64 };
            Mark {
                class: "burst bin",
                frame: None,
                count: b.bytes.min(u32::MAX as u64) as u32,
                prims: vec![Prim { shape, color: Color::Fg }],
            }
        })
        .collect();
    let legend = vec![LegendEntry {
        color: Color::Fg,
        sample: Sample::Fill,
        text: format!("bytes sent at that rate ({BINS_PER_DECADE} bins per decade)"),
    }];
    let y = Axis::styled("bytes", AxisStyle::Si { unit: "B" }, 0.0, (ymax * 1.08).max(1.0), 8);
    frame(series, view, "burstiness", y, marks, legend)
}

/// The integral (figures 4.3, 4.4).
pub fn burst_cdf(series: &BurstSeries, view: &View) -> Figure {
    let (lo, hi) = range(series);
    let cdf = series.cdf();
    let total = cdf.last().map_or(0, |p| p.1) as f64;
    let mut pts: Vec<(f64, f64)> = vec![(lo, 0.0)];
    for &(r, b) in &cdf {
        let x = r.log10();
        pts.push((x, pts.last().map_or(0.0, |p| p.1)));
        pts.push((x, b as f64));
    }
    pts.push((hi, total));
    let marks = chart::line(chart::reduce(&pts, view.columns, lo, hi), Color::Fg, "burst cdf", cdf.len() as u32)
        .into_iter()
        .collect();
    let legend =
        vec![LegendEntry { color: Color::Fg, sample: Sample::Step, text: "bytes sent at or below the rate".into() }];
    let y = Axis::styled("total bytes", AxisStyle::Si { unit: "B" }, 0.0, (total * 1.05).max(1.0), 8);
    frame(series, view, "burstiness, integrated", y, marks, legend)
}

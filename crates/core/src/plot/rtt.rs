//! The RTT plot: every sample of one direction's data over time, in milliseconds, Karn-valid
//! samples (green diamonds, class `rtt karn`) apart from timestamp-echo ones (blue boxes,
//! class `rtt ts`), at the time the acknowledging packet was captured.

use super::{Axis, Color, Figure, LegendEntry, Sample, Shape, chart};
use crate::analysis::RttKind;
use crate::series::rtt::RttSeries;

/// What part of the series to show.
#[derive(Clone, Debug, Default)]
pub struct RttView {
    /// Start, seconds since the connection's first packet (`None`: from the start).
    pub from_s: Option<f64>,
    /// End (`None`: to the last packet).
    pub to_s: Option<f64>,
    /// Title (`None`: connection, direction and endpoints).
    pub title: Option<String>,
    /// Pixel columns: more samples of a kind than this are drawn per column (min..max line).
    pub columns: Option<u32>,
}

/// Builds the figure.
pub fn rtt(series: &RttSeries, view: &RttView) -> Figure {
    let x0 = view.from_s.unwrap_or(0.0);
    let x1 = view.to_s.unwrap_or(series.last_ns as f64 / 1e9).max(x0);
    let (mut karn_pts, mut ts_pts) = (Vec::new(), Vec::new());
    let mut max_ms = 0f64;
    for p in &series.points {
        let x = p.t_ns as f64 / 1e9;
        if x < x0 || x > x1 {
            continue;
        }
        let y = p.rtt_ns as f64 / 1e6;
        max_ms = max_ms.max(y);
        match p.kind {
            RttKind::Karn => karn_pts.push((x, y, p.frame)),
            RttKind::Timestamp => ts_pts.push((x, y, p.frame)),
        }
    }
    let (karn, ts) = (karn_pts.len(), ts_pts.len());
    let diamond = |x, y| Shape::Diamond { x, y };
    let square = |x, y| Shape::Box { x, y };
    let mut marks = chart::dots(&ts_pts, Color::Blue, square, "rtt ts", "rtt ts agg", view.columns, x0, x1);
    marks.extend(chart::dots(&karn_pts, Color::Green, diamond, "rtt karn", "rtt karn agg", view.columns, x0, x1));
    let mut legend = Vec::new();
    if karn > 0 {
        legend.push(LegendEntry {
            color: Color::Green,
            sample: Sample::Letter("◇"),
            text: "Karn sample (data → ACK)".into(),
        });
    }
    if ts > 0 {
        legend.push(LegendEntry {
            color: Color::Blue,
            sample: Sample::Letter("□"),
            text: "timestamp echo sample".into(),
        });
    }
    let title = view.title.clone().unwrap_or_else(|| {
        let (from, to) = match series.dir {
            crate::analysis::Dir::AtoB => (series.info.a, series.info.b),
            crate::analysis::Dir::BtoA => (series.info.b, series.info.a),
        };
        format!("connection {} {}: {from} → {to} (round-trip time)", series.conn + 1, series.dir.name())
    });
    Figure {
        title,
        x: Axis::new("time (s since the connection's first packet)", x0, x1, 8),
        y: Axis::new("round-trip time (ms)", 0.0, (max_ms * 1.05).max(1.0), 8),
        marks,
        legend,
        remarks: vec![format!("{karn} Karn samples, {ts} timestamp samples")],
    }
}

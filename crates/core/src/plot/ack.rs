//! The ACK-delay plot: the receiver's delay of every acknowledgment of one direction's data over
//! time, in milliseconds (`ack quick` green, `ack delayed` red, `ack piggybacked` blue, `ack
//! pair` gray, `ack stretch` orange, `ack untimed` never drawn: it has no delay), and its
//! histogram along the delay axis (`ack hist`, gray bars from the right edge, longest = a
//! quarter of the width): the delayed-ACK timer is the bar that stands out (statistics.md,
//! *Acknowledgment strategy*).

use super::{Axis, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, View, chart};
use crate::event::AckKind;
use crate::series::ack::AckSeries;

/// Bars of the histogram over the delay axis.
const HIST_BINS: usize = 50;

/// Each drawn class: its name, colour and legend text.
const CLASSES: [(AckKind, &str, Color, &str); 5] = [
    (AckKind::Quick, "ack quick", Color::Green, "quick ACK (≤ 1 full segment, at once)"),
    (AckKind::Delayed, "ack delayed", Color::Red, "delayed ACK (≤ 1 full segment, held ≥ 5 ms)"),
    (AckKind::Piggybacked, "ack piggybacked", Color::Blue, "piggy-backed ACK (on data)"),
    (AckKind::Pair, "ack pair", Color::Gray, "ACK of 1–2 full segments"),
    (AckKind::Stretch, "ack stretch", Color::Orange, "stretch ACK (> 2 full segments)"),
];

/// Builds the figure.
pub fn ack(series: &AckSeries, view: &View) -> Figure {
    let (x0, x1) = chart::time_range(view, series.last_ns);
    let vis: Vec<_> = series.points.iter().filter(|p| (x0..=x1).contains(&chart::secs(p.t_ns))).collect();
    let ms = |ns: u64| ns as f64 / 1e6;
    let max = vis.iter().map(|p| ms(p.delay_ns)).fold(0.0, f64::max);
    let y1 = (max * 1.08).max(1.0);
    let mut marks = Vec::new();
    let mut legend = Vec::new();
    for (kind, class, color, text) in CLASSES {
        let pts: Vec<(f64, f64, u64)> =
            vis.iter().filter(|p| p.kind == kind).map(|p| (chart::secs(p.t_ns), ms(p.delay_ns), p.frame)).collect();
        if pts.is_empty() {
            continue;
        }
        marks.extend(chart::dots(&pts, color, chart::dot, class, class, view.columns, x0, x1));
        legend.push(LegendEntry { color, sample: Sample::Dot, text: text.into() });
    }
    // The histogram, along the delay axis.
    let mut bins = [0u32; HIST_BINS];
    for p in &vis {
        let b = ((ms(p.delay_ns) / y1 * HIST_BINS as f64) as usize).min(HIST_BINS - 1);
        bins[b] += 1;
    }
    let most = bins.iter().copied().max().unwrap_or(0);
    if most > 0 {
        let width = (x1 - x0) / 4.0;
        for (i, &n) in bins.iter().enumerate().filter(|(_, n)| **n > 0) {
            let y = (i as f64 + 0.5) * y1 / HIST_BINS as f64;
            let len = width * n as f64 / most as f64;
            marks.push(Mark {
                class: "ack hist",
                frame: None,
                count: n,
                prims: vec![Prim { shape: Shape::Line { x1: x1 - len, y1: y, x2: x1, y2: y }, color: Color::Gray }],
            });
        }
        legend.push(LegendEntry {
            color: Color::Gray,
            sample: Sample::Line,
            text: format!("histogram of the delays (longest bar: {most} ACKs)"),
        });
    }
    let delayed = vis.iter().filter(|p| p.kind == AckKind::Delayed).count();
    let half = series.loop_ns.map_or("unknown".to_string(), |l| format!("{:.3} ms", ms(l)));
    Figure {
        title: view.title.clone().unwrap_or_else(|| super::title(series.conn, series.dir, &series.info, "ACK delay")),
        x: Axis::new("time (s since the connection's first packet)", x0, x1, 8),
        y: Axis::new("receiver's ACK delay (ms)", 0.0, y1, 8),
        marks,
        legend,
        remarks: vec![format!(
            "{} ACKs with a measured delay, {delayed} delayed; half-loop taken off: {half}",
            vis.len()
        )],
    }
}

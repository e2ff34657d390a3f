//! The segment-size plot: the payload of every data packet over time (`ssize new` dots;
//! retransmissions `ssize rexmit` red, out-of-order `ssize ooo` pink, probes `ssize probe`
//! orange, never aggregated), and the MSS the receiver announced (`mss`, a gray line).

use super::{Axis, AxisStyle, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, View, chart};
use crate::series::ssize::SsizeSeries;
use crate::series::tsg::SegKind;

/// Builds the figure.
pub fn ssize(series: &SsizeSeries, view: &View) -> Figure {
    let (x0, x1) = chart::time_range(view, series.last_ns);
    let vis: Vec<_> = series.points.iter().filter(|p| (x0..=x1).contains(&chart::secs(p.t_ns))).collect();
    let new: Vec<(f64, f64, u64)> =
        vis.iter().filter(|p| p.kind == SegKind::New).map(|p| (chart::secs(p.t_ns), p.len as f64, p.frame)).collect();
    let mut marks = chart::dots(&new, Color::Fg, chart::dot, "ssize new", "ssize new agg", view.columns, x0, x1);
    let mut kinds = Vec::new();
    for p in vis.iter().filter(|p| p.kind != SegKind::New) {
        let (class, color) = match p.kind {
            SegKind::Retransmission => ("ssize rexmit", Color::Red),
            SegKind::OutOfOrder => ("ssize ooo", Color::Pink),
            _ => ("ssize probe", Color::Orange),
        };
        if !kinds.contains(&(class, color)) {
            kinds.push((class, color));
        }
        let (x, y) = (chart::secs(p.t_ns), p.len as f64);
        marks.push(Mark {
            class,
            frame: Some(p.frame),
            count: 1,
            prims: vec![Prim { shape: Shape::Diamond { x, y }, color }],
        });
    }
    let max = vis.iter().map(|p| p.len).max().unwrap_or(0).max(series.peer_mss.unwrap_or(0) as u32) as f64;
    let mut legend = vec![LegendEntry { color: Color::Fg, sample: Sample::Dot, text: "data segment".into() }];
    for (class, color) in kinds {
        let text = match class {
            "ssize rexmit" => "retransmission",
            "ssize ooo" => "out of order",
            _ => "zero-window probe",
        };
        legend.push(LegendEntry { color, sample: Sample::Letter("◇"), text: text.into() });
    }
    if let Some(mss) = series.peer_mss {
        let y = mss as f64;
        marks.push(Mark {
            class: "mss",
            frame: None,
            count: 1,
            prims: vec![Prim { shape: Shape::Line { x1: x0, y1: y, x2: x1, y2: y }, color: Color::Gray }],
        });
        legend.push(LegendEntry {
            color: Color::Gray,
            sample: Sample::Line,
            text: format!("MSS announced by the receiver ({mss})"),
        });
    }
    let (n, sum) = (vis.len(), vis.iter().map(|p| p.len as u64).sum::<u64>());
    Figure {
        title: view
            .title
            .clone()
            .unwrap_or_else(|| super::title(series.conn, series.dir, &series.info, "segment size")),
        x: Axis::new("time (s since the connection's first packet)", x0, x1, 8),
        y: Axis::styled("payload (bytes)", AxisStyle::Linear, 0.0, (max * 1.08).max(1.0), 8),
        marks,
        legend,
        remarks: vec![format!("{n} data segments, average {} bytes", if n > 0 { sum / n as u64 } else { 0 })],
    }
}

//! Duplicate ACKs and retransmissions on one time axis (seed 004, figure 9): counts per interval
//! of [`View::window_s`] seconds (default: the time shown over 100, rounded to 1, 2 or 5 ×
//! 10^k, and never narrower than a pixel column). Each interval with duplicate ACKs is a green
//! bar in its left half (`dupack bin`), each with retransmissions a red bar in its right half
//! (`rexmit bin`); `data-count` is the count, so every event is counted in exactly one bar.

use super::{Axis, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, View, chart};
use crate::series::dupack::DupackSeries;

/// The default interval: about a hundredth of `span` seconds, a round value.
pub fn default_interval(span: f64) -> f64 {
    let raw = (span / 100.0).max(1e-6);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
}

/// Builds the figure.
pub fn dupack(series: &DupackSeries, view: &View) -> Figure {
    let (x0, x1) = chart::time_range(view, series.last_ns);
    let min_iv = view.columns.map_or(0.0, |c| (x1 - x0) / c.max(1) as f64);
    let iv = view.window_s.filter(|w| *w > 0.0).unwrap_or_else(|| default_interval(x1 - x0)).max(min_iv);
    let iv_ns = (iv * 1e9).round().max(1.0) as u64;
    let mut marks = Vec::new();
    let mut ymax = 0u32;
    let (mut nd, mut nr) = (0u32, 0u32);
    for (k, &(d, r)) in series.per_interval(iv_ns).iter().enumerate() {
        let a = k as f64 * iv;
        if a + iv < x0 || a > x1 {
            continue;
        }
        let m = a + iv / 2.0;
        for (n, lo, hi, class, color) in
            [(d, a, m, "dupack bin", Color::Green), (r, m, a + iv, "rexmit bin", Color::Red)]
        {
            if n > 0 {
                let shape = Shape::Rect { x1: lo, y1: 0.0, x2: hi, y2: n as f64 };
                marks.push(Mark { class, frame: None, count: n, prims: vec![Prim { shape, color }] });
            }
        }
        ymax = ymax.max(d).max(r);
        nd += d;
        nr += r;
    }
    let legend = vec![
        LegendEntry { color: Color::Green, sample: Sample::Fill, text: "duplicate ACKs from the receiver".into() },
        LegendEntry { color: Color::Red, sample: Sample::Fill, text: "retransmissions by the sender".into() },
    ];
    Figure {
        title: view
            .title
            .clone()
            .unwrap_or_else(|| super::title(series.conn, series.dir, &series.info, "dup ACKs and retransmissions")),
        x: Axis::new("time (s since the connection's first packet)", x0, x1, 8),
        y: Axis::new(&format!("count per {} s", super::si(iv).trim_end()), 0.0, (ymax as f64 * 1.1).max(1.0), 6),
        marks,
        legend,
        remarks: vec![format!("{nd} duplicate ACKs, {nr} retransmissions in the time shown; interval {iv} s")],
    }
}

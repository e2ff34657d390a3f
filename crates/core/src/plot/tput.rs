//! The throughput plot: per data packet its instantaneous rate (dots; `tput inst`, and red
//! `tput rexmit` for packets that carried retransmitted bytes), the moving average of the
//! throughput (`tput avg`, all bytes, red line in xplot terms: here orange) and of the goodput
//! (`goodput avg`, bytes not sent before, blue), over a window of [`View::window_s`] (default
//! 1 s), in bits per second.
//!
//! Instantaneous rates of back-to-back packets are far above the averages (a gap of a few µs
//! gives Gbit/s); the y axis stops at three times the highest moving average, so the averages
//! can be read, and the dots above it sit on the top edge as up arrows (`tput inst over`), so
//! none is lost.

use super::{Axis, AxisStyle, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, View, Way, chart};
use crate::series::tput::{Bytes, TputSeries};

/// Default moving-average window, seconds.
pub const DEFAULT_WINDOW_S: f64 = 1.0;

/// Builds the figure.
pub fn tput(series: &TputSeries, view: &View) -> Figure {
    let (x0, x1) = chart::time_range(view, series.last_ns);
    let window_s = view.window_s.filter(|w| *w > 0.0).unwrap_or(DEFAULT_WINDOW_S);
    let window_ns = (window_s * 1e9).round().max(1.0) as u64;
    let vis = |t_ns: u64| (x0..=x1).contains(&chart::secs(t_ns));

    let inst = series.instantaneous(Bytes::All);
    let rexmit: std::collections::HashSet<u64> = series.points.iter().filter(|p| p.rexmit).map(|p| p.frame).collect();
    let avg_of = |which| -> Vec<(f64, f64)> {
        series
            .moving_average(which, window_ns)
            .iter()
            .filter(|p| vis(p.t_ns))
            .map(|p| (chart::secs(p.t_ns), p.bps))
            .collect()
    };
    let tput_avg = avg_of(Bytes::All);
    let good_avg = avg_of(Bytes::New);
    let max_avg = tput_avg.iter().chain(&good_avg).map(|p| p.1).fold(0.0, f64::max);
    let max_inst = inst.iter().filter(|p| vis(p.t_ns)).map(|p| p.bps).fold(0.0, f64::max);
    let y1 = if max_avg > 0.0 { (3.0 * max_avg).min(max_inst.max(max_avg)) } else { max_inst }.max(1.0) * 1.05;

    let (mut new_pts, mut rex_pts, mut over) = (Vec::new(), Vec::new(), Vec::new());
    for p in inst.iter().filter(|p| vis(p.t_ns)) {
        let x = chart::secs(p.t_ns);
        if rexmit.contains(&p.frame) {
            rex_pts.push((x, p.bps.min(y1), p.frame));
        } else if p.bps > y1 {
            over.push((x, y1, p.frame));
        } else {
            new_pts.push((x, p.bps, p.frame));
        }
    }
    let mut marks =
        chart::dots(&new_pts, Color::Yellow, chart::dot, "tput inst", "tput inst agg", view.columns, x0, x1);
    let arrow = |x, y| Shape::Arrow { x, y, way: Way::Up };
    marks.extend(chart::dots(
        &over,
        Color::Yellow,
        arrow,
        "tput inst over",
        "tput inst over agg",
        view.columns,
        x0,
        x1,
    ));
    // Retransmissions are events: one mark each, never aggregated.
    for &(x, y, f) in &rex_pts {
        marks.push(Mark {
            class: "tput rexmit",
            frame: Some(f),
            count: 1,
            prims: vec![Prim { shape: Shape::Dot { x, y }, color: Color::Red }],
        });
    }
    let n_avg = tput_avg.len() as u32;
    let good = chart::line(
        chart::steps(&chart::reduce(&good_avg, view.columns, x0, x1), x1),
        Color::Blue,
        "goodput avg",
        n_avg,
    );
    let all = chart::line(
        chart::steps(&chart::reduce(&tput_avg, view.columns, x0, x1), x1),
        Color::Orange,
        "tput avg",
        n_avg,
    );
    marks.extend(all);
    marks.extend(good);

    let mut legend =
        vec![LegendEntry { color: Color::Yellow, sample: Sample::Dot, text: "instantaneous rate of a packet".into() }];
    if !rex_pts.is_empty() {
        legend.push(LegendEntry { color: Color::Red, sample: Sample::Dot, text: "retransmission".into() });
    }
    legend.push(LegendEntry {
        color: Color::Orange,
        sample: Sample::Line,
        text: format!("throughput, {window_s} s moving average"),
    });
    legend.push(LegendEntry {
        color: Color::Blue,
        sample: Sample::Line,
        text: format!("goodput (new bytes), {window_s} s moving average"),
    });
    let mut remarks = vec![format!(
        "{} data packets; average throughput {}bit/s, goodput {}bit/s",
        series.points.len(),
        super::si(series.average_bps(Bytes::All).unwrap_or(0.0)),
        super::si(series.average_bps(Bytes::New).unwrap_or(0.0))
    )];
    if !over.is_empty() {
        remarks.push(format!(
            "{} instantaneous rates above the top of the plot are drawn as arrows on the top edge",
            over.len()
        ));
    }
    Figure {
        title: view.title.clone().unwrap_or_else(|| super::title(series.conn, series.dir, &series.info, "throughput")),
        x: Axis::new("time (s since the connection's first packet)", x0, x1, 8),
        y: Axis::styled("rate", AxisStyle::Si { unit: "bit/s" }, 0.0, y1, 8),
        marks,
        legend,
        remarks,
    }
}

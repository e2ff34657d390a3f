//! The flight plot: bytes in flight after each data packet (`flight`, red, a line through the
//! points as tcptrace's owin), the window the receiver advertised (`rwnd`, yellow stair) and
//! the congestion-window estimate, one horizontal line per round trip (`cwnd round`, blue; how
//! it is made and when it is shown: [`crate::series::flight`]).

use super::{Axis, AxisStyle, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, View, chart};
use crate::series::flight::FlightSeries;

/// Builds the figure.
pub fn flight(series: &FlightSeries, view: &View) -> Figure {
    let (x0, x1) = chart::time_range(view, series.last_ns);
    let vis = |t_ns: u64| (x0..=x1).contains(&chart::secs(t_ns));
    let flight: Vec<(f64, f64)> =
        series.flight.iter().filter(|p| vis(p.t_ns)).map(|p| (chart::secs(p.t_ns), p.bytes as f64)).collect();
    let rwnd: Vec<(f64, f64)> =
        series.rwnd.iter().filter(|p| vis(p.t_ns)).map(|p| (chart::secs(p.t_ns), p.bytes as f64)).collect();
    let rounds: Vec<_> = series.cwnd.iter().filter(|r| vis(r.end_ns) || vis(r.start_ns)).collect();
    let mut ymax = flight.iter().chain(&rwnd).map(|p| p.1).fold(0.0, f64::max);
    let mut marks = Vec::new();
    marks.extend(chart::line(
        chart::steps(&chart::reduce(&rwnd, view.columns, x0, x1), x1),
        Color::Yellow,
        "rwnd",
        rwnd.len() as u32,
    ));
    marks.extend(chart::line(chart::reduce(&flight, view.columns, x0, x1), Color::Red, "flight", flight.len() as u32));
    let cols = view.columns.unwrap_or(u32::MAX) as usize;
    if rounds.len() > cols {
        let pts: Vec<(f64, f64)> = rounds.iter().map(|r| (chart::secs(r.end_ns), r.bytes as f64)).collect();
        marks.extend(chart::line(
            chart::steps(&chart::reduce(&pts, view.columns, x0, x1), x1),
            Color::Blue,
            "cwnd agg",
            rounds.len() as u32,
        ));
    } else {
        for r in &rounds {
            let y = r.bytes as f64;
            let (a, b) = (chart::secs(r.start_ns), chart::secs(r.end_ns));
            marks.push(Mark {
                class: "cwnd round",
                frame: Some(r.frame),
                count: 1,
                prims: vec![Prim { shape: Shape::Line { x1: a, y1: y, x2: b, y2: y }, color: Color::Blue }],
            });
        }
    }
    // A receiver window far above the flight would flatten the flight to the axis: then the
    // axis stops at three times the flight and the window line runs along the top (remarked).
    let fmax = flight.iter().map(|p| p.1).chain(rounds.iter().map(|r| r.bytes as f64)).fold(0.0, f64::max);
    let rmax = rwnd.iter().map(|p| p.1).fold(0.0, f64::max);
    let mut clipped = false;
    if fmax > 0.0 && rmax > 4.0 * fmax {
        ymax = 3.0 * fmax;
        clipped = true;
    }
    let mut legend = vec![LegendEntry {
        color: Color::Red,
        sample: Sample::Line,
        text: "bytes in flight (sent, not yet acked or SACKed)".into(),
    }];
    let rw = if series.rwnd_scaled {
        "receiver's advertised window"
    } else {
        "receiver's advertised window (unscaled: scale unknown)"
    };
    legend.push(LegendEntry { color: Color::Yellow, sample: Sample::Step, text: rw.into() });
    if !rounds.is_empty() {
        legend.push(LegendEntry {
            color: Color::Blue,
            sample: Sample::Line,
            text: "estimated cwnd: largest flight of each round trip".into(),
        });
    }
    let mut remarks = vec![format!(
        "cwnd estimated for {} round trips; {} rounds limited by the receiver's window are not shown (docs/plots.md)",
        series.cwnd.len(),
        series.rwnd_limited_rounds
    )];
    if clipped {
        remarks.push(format!("the advertised window reaches {}B, above the top of the plot", super::si(rmax)));
    }
    Figure {
        title: view
            .title
            .clone()
            .unwrap_or_else(|| super::title(series.conn, series.dir, &series.info, "bytes in flight")),
        x: Axis::new("time (s since the connection's first packet)", x0, x1, 8),
        y: Axis::styled("bytes", AxisStyle::Si { unit: "B" }, 0.0, (ymax * 1.05).max(1.0), 8),
        marks,
        legend,
        remarks,
    }
}

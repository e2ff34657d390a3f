//! The throughput plot: per data packet its instantaneous rate (dots; `tput inst`, and red
//! `tput rexmit` for packets that carried retransmitted bytes), the moving average of the
//! throughput (`tput avg`, all bytes, red line in xplot terms: here orange) and of the goodput
//! (`goodput avg`, bytes not sent before, blue), over a window of [`View::window_s`] (default:
//! [`default_window_s`], from the connection's duration and RTT), in bits per second.
//!
//! Instantaneous rates of back-to-back packets are far above the averages (a gap of a few µs
//! gives Gbit/s); the y axis stops at three times the highest moving average, so the averages
//! can be read, and the dots above it sit on the top edge as up arrows (`tput inst over`), so
//! none is lost.

use super::{Axis, AxisStyle, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, View, Way, chart};
use crate::series::tput::{Bytes, TputSeries};

/// The moving-average window when neither the duration nor the RTT says better, seconds.
pub const DEFAULT_WINDOW_S: f64 = 1.0;

/// The default moving-average window for a connection that lasts `duration_s` with a lowest
/// RTT of `rtt_s`: a whole number of round trips, at least two (a sender sends about one
/// congestion window per RTT, in bursts on the ack clock: a window of whole RTTs holds the
/// same number of bursts wherever it is, where 2.5 RTTs rippled at the RTT), and at least 1/50
/// of the duration (so a long transfer is not drawn as noise); at most 1/5 of the duration (so
/// a short one keeps its shape: a fixed 1 s window turned a 1.7 s transfer into a triangle,
/// issue 17). Without an RTT sample, 1/50 of the duration rounded up to 1, 2 or 5 × 10^k s;
/// without a duration, [`DEFAULT_WINDOW_S`]. Rounded to the µs.
pub fn default_window_s(duration_s: f64, rtt_s: Option<f64>) -> f64 {
    if !(duration_s.is_finite() && duration_s > 0.0) {
        return DEFAULT_WINDOW_S;
    }
    let w = match rtt_s.filter(|r| r.is_finite() && *r > 0.0) {
        Some(r) => {
            let n = (duration_s / 50.0 / r).ceil().max(2.0);
            (n * r).min(duration_s / 5.0)
        }
        None => nice_up(duration_s / 50.0).min(duration_s / 5.0),
    };
    (w * 1e6).round().max(1.0) / 1e6
}

/// `40.2 ms`, `1.5 s`: a window's length, to four digits.
fn duration_text(s: f64) -> String {
    let (v, unit) = if s < 1.0 { (s * 1e3, "ms") } else { (s, "s") };
    let t = format!("{v:.3}");
    let t = if t.contains('.') { t.trim_end_matches('0').trim_end_matches('.') } else { &t };
    format!("{t} {unit}")
}

/// The smallest 1, 2 or 5 × 10^k at or above `v` (> 0).
fn nice_up(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    // A hair under each step, so that 0.05 stays 0.05 despite the float's log.
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|s| *s >= v * (1.0 - 1e-9)).unwrap_or(10.0 * p)
}

/// Builds the figure.
pub fn tput(series: &TputSeries, view: &View) -> Figure {
    let (x0, x1) = chart::time_range(view, series.last_ns);
    let chosen = view.window_s.filter(|w| *w > 0.0);
    let window_s = chosen.unwrap_or_else(|| {
        let duration_s = chart::secs(series.last_ns);
        default_window_s(duration_s, series.rtt_min_ns.map(chart::secs))
    });
    let window_ns = (window_s * 1e9).round().max(1.0) as u64;
    let vis = |t_ns: u64| (x0..=x1).contains(&chart::secs(t_ns));

    let inst = series.instantaneous(Bytes::All);
    let rexmit: std::collections::HashSet<u64> = series.points.iter().filter(|p| p.rexmit).map(|p| p.frame).collect();
    let avg_of = |which| -> Vec<(f64, f64)> {
        series
            .moving_average(which, window_ns)
            .iter()
            .filter(|p| vis(p.t_ns))
            // Whole bits per second: a window of whole RTTs (20.03 ms) gave rates of sixteen digits,
            // half again the size of an .xpl file.
            .map(|p| (chart::secs(p.t_ns), p.bps.round()))
            .collect()
    };
    let mut tput_avg = avg_of(Bytes::All);
    let mut good_avg = avg_of(Bytes::New);
    let max_avg = tput_avg.iter().chain(&good_avg).map(|p| p.1).fold(0.0, f64::max);
    let max_inst = inst.iter().filter(|p| vis(p.t_ns)).map(|p| p.bps).fold(0.0, f64::max);
    let mut y1 = if max_avg > 0.0 { (3.0 * max_avg).min(max_inst.max(max_avg)) } else { max_inst }.max(1.0) * 1.05;
    // A sender's packets leave in bursts, back to back at line rate: their instantaneous rates
    // can be a hundred times the average. When more than a tenth of them would sit above a
    // linear axis that shows the averages, the axis is logarithmic instead, and every rate has
    // its place (loss-snd: 639 of 737 were off a linear scale).
    let n_vis = inst.iter().filter(|p| vis(p.t_ns)).count();
    let n_over = inst.iter().filter(|p| vis(p.t_ns) && p.bps > y1).count();
    let log = n_over * 10 > n_vis;
    let mut y0 = 0.0;
    if log {
        let lowest = inst
            .iter()
            .filter(|p| vis(p.t_ns))
            .map(|p| p.bps)
            .chain(tput_avg.iter().chain(&good_avg).map(|p| p.1))
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        y0 = (lowest.log10() - 0.1).floor();
        y1 = max_inst.max(max_avg).log10() + 0.1;
        // Idle periods fall to 0: drawn on the bottom edge. To 1e-4 of a decade (0.02 %): the
        // output (xplot above all) need not carry sixteen digits.
        let to_log = |v: f64| if v > 0.0 { (v.log10().max(y0) * 1e4).round() / 1e4 } else { y0 };
        for p in tput_avg.iter_mut().chain(good_avg.iter_mut()) {
            p.1 = to_log(p.1);
        }
    }
    let to_y =
        |bps: f64| if log { if bps > 0.0 { (bps.log10().max(y0) * 1e4).round() / 1e4 } else { y0 } } else { bps };

    let (mut new_pts, mut rex_pts, mut over) = (Vec::new(), Vec::new(), Vec::new());
    for p in inst.iter().filter(|p| vis(p.t_ns)) {
        let x = chart::secs(p.t_ns);
        let y = to_y(p.bps);
        if rexmit.contains(&p.frame) {
            rex_pts.push((x, y.min(y1), p.frame));
        } else if y > y1 {
            over.push((x, y1, p.frame));
        } else {
            new_pts.push((x, y, p.frame));
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
        text: format!("throughput, {} moving average", duration_text(window_s)),
    });
    legend.push(LegendEntry {
        color: Color::Blue,
        sample: Sample::Line,
        text: format!("goodput (new bytes), {} moving average", duration_text(window_s)),
    });
    let mut remarks = vec![format!(
        "{} data packets; average throughput {}bit/s, goodput {}bit/s",
        series.points.len(),
        super::si(series.average_bps(Bytes::All).unwrap_or(0.0)),
        super::si(series.average_bps(Bytes::New).unwrap_or(0.0))
    )];
    if chosen.is_none() {
        remarks.push(format!(
            "moving averages over {}, chosen from the duration ({:.3} s) and the lowest RTT ({}); --window sets it",
            duration_text(window_s),
            chart::secs(series.last_ns),
            series.rtt_min_ns.map_or("none sampled".to_string(), |r| format!("{:.3} ms", r as f64 / 1e6))
        ));
    }
    if log {
        remarks.push(format!(
            "rate on a log scale: {n_over} of {n_vis} instantaneous rates are above 3 times the highest average"
        ));
    }
    if !over.is_empty() {
        remarks.push(format!(
            "{} instantaneous rates above the top of the plot are drawn as arrows on the top edge",
            over.len()
        ));
    }
    Figure {
        title: view.title.clone().unwrap_or_else(|| super::title(series.conn, series.dir, &series.info, "throughput")),
        x: Axis::new("time (s since the connection's first packet)", x0, x1, 8),
        y: if log {
            Axis::styled("rate", AxisStyle::Log10 { unit: "bit/s" }, y0, y1, 8)
        } else {
            Axis::styled("rate", AxisStyle::Si { unit: "bit/s" }, 0.0, y1, 8)
        },
        marks,
        legend,
        remarks,
    }
}

#[cfg(test)]
mod tests {
    use super::default_window_s;

    #[test]
    fn the_default_window_is_whole_rtts_within_the_duration() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // loss-snd: 1.7237 s at 20.1 ms: 1/50 of it is 34.5 ms, under 2 RTTs: 2 × 20.1 ms.
        assert!(close(default_window_s(1.7237, Some(0.0201)), 0.0402));
        // 100 s at 20 ms: 1/50 is 2 s = 100 RTTs exactly.
        assert!(close(default_window_s(100.0, Some(0.02)), 2.0));
        // 10 s at 30 ms: 1/50 is 0.2 s, 6.67 RTTs: 7 × 30 ms.
        assert!(close(default_window_s(10.0, Some(0.03)), 0.21));
        // 50 ms at 20 ms: two RTTs would be most of it; 1/5 of it, 10 ms.
        assert!(close(default_window_s(0.05, Some(0.02)), 0.01));
        // No RTT: 1/50 of the duration rounded up to 1, 2 or 5 × 10^k: 1 s → 20 ms, 3 s → 0.1 s.
        assert!(close(default_window_s(1.0, None), 0.02));
        assert!(close(default_window_s(3.0, None), 0.1));
        // No duration: the fixed default.
        assert!(close(default_window_s(0.0, Some(0.02)), 1.0));
    }
}

//! Plots of one connection of a recording, as `tcpscope-core` figures (rendered to SVG, PNG or
//! xplot by the same code as the capture plots; docs/monitor.md).
//!
//! - `cwnd`: CurCwnd, CurSsthresh, bytes in flight (`unacked × snd_mss`) and the peer's window
//!   (`snd_wnd`), bytes;
//! - `rtt`: SmoothedRTT, MinRTT and RTTVar, ms;
//! - `bw`: interval bandwidth (IntBW), interval goodput and the kernel's delivery rate, bit/s;
//! - `limits`: the per-interval triage stacked: network (blue), receiver (yellow), sender (red),
//!   as shares of each interval, averaged over the pixel column when intervals are narrower.

use tcpscope_core::plot::{Axis, AxisStyle, Color, Figure, LegendEntry, Mark, Prim, Sample as Legend, Shape, chart};

use crate::fields::{Sample, index};
use crate::triage;
use crate::tsm::Recording;

/// What to plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cwnd,
    Rtt,
    Bw,
    Limits,
}

/// The figure of `kind` for connection `conn`; `columns` pixel columns bound the marks.
pub fn figure(rec: &Recording, conn: u32, kind: Kind, columns: u32) -> Result<Figure, String> {
    let c = rec.conns.iter().find(|c| c.id == conn).ok_or_else(|| {
        let ids: Vec<String> = rec.conns.iter().map(|c| c.id.to_string()).collect();
        format!("{}: no connection {conn} (it has {})", rec.path.display(), ids.join(", "))
    })?;
    let samples = rec.samples_of(conn);
    let Some(first) = samples.first().copied() else {
        return Err(format!("{}: connection {conn} has no samples", rec.path.display()));
    };
    let t0 = first.t_ns;
    let x = |s: &Sample| chart::secs(s.t_ns - t0);
    let x1 = samples.last().map_or(0.0, |s| x(s)).max(1e-3);
    let what = match kind {
        Kind::Cwnd => "congestion window",
        Kind::Rtt => "RTT",
        Kind::Bw => "bandwidth",
        Kind::Limits => "what limited the sender",
    };
    let title = format!("connection {conn}: {}:{} → {}:{} ({what}, tcp_info)", c.src, c.sport, c.dst, c.dport);
    // A value of each sample (with its connection's previous and first) as a line.
    let series = |name: &str, scale: f64| -> Vec<(f64, f64)> {
        let i = index(name);
        let mut prev: Option<&Sample> = None;
        let mut out = Vec::new();
        for s in &samples {
            if let Some(v) = s.value(i, prev, first) {
                out.push((x(s), v.as_f64() * scale));
            }
            prev = Some(s);
        }
        out
    };
    let mut marks = Vec::new();
    let mut legend = Vec::new();
    let mut ymax: f64 = 0.0;
    let mut add = |pts: Vec<(f64, f64)>, color: Color, class: &'static str, text: &str| {
        if pts.is_empty() {
            return;
        }
        ymax = pts.iter().map(|p| p.1).fold(ymax, f64::max);
        let n = pts.len() as u32;
        marks.extend(chart::line(chart::reduce(&pts, Some(columns), 0.0, x1), color, class, n));
        legend.push(LegendEntry { color, sample: Legend::Line, text: text.into() });
    };
    let y = match kind {
        Kind::Cwnd => {
            add(series("CurCwnd", 1.0), Color::Blue, "cwnd", "CurCwnd: snd_cwnd × snd_mss");
            add(series("CurSsthresh", 1.0), Color::Purple, "ssthresh", "CurSsthresh (absent while unset)");
            let flight: Vec<(f64, f64)> =
                samples.iter().filter_map(|s| Some((x(s), (s.get("unacked")? * s.get("snd_mss")?) as f64))).collect();
            add(flight, Color::Red, "flight", "in flight: unacked × snd_mss");
            add(series("snd_wnd", 1.0), Color::Yellow, "rwnd", "peer's receive window (snd_wnd)");
            Axis::styled("bytes", AxisStyle::Si { unit: "B" }, 0.0, ymax * 1.05, 8)
        }
        Kind::Rtt => {
            add(series("SmoothedRTT", 1.0), Color::Blue, "srtt", "SmoothedRTT");
            add(series("MinRTT", 1.0), Color::Green, "minrtt", "MinRTT");
            add(series("RTTVar", 1.0), Color::Orange, "rttvar", "RTTVar");
            Axis::new("ms", 0.0, ymax * 1.05, 8)
        }
        Kind::Bw => {
            add(series("int_bw", 1.0), Color::Blue, "intbw", "IntBW: Δbytes_sent × 8 / Δt");
            add(series("int_goodput", 1.0), Color::Green, "goodput", "goodput: Δbytes_acked × 8 / Δt");
            add(series("delivery_rate", 8.0), Color::Orange, "delivery", "kernel's delivery rate × 8");
            Axis::styled("rate", AxisStyle::Si { unit: "bit/s" }, 0.0, ymax * 1.05, 8)
        }
        Kind::Limits => {
            let sent = |n: &str| Some(samples.last()?.get(n)? > first.get(n)?);
            if sent("busy_time") != Some(true) && sent("bytes_acked") != Some(true) {
                return Err(format!(
                    "{}: connection {conn} sent no data while monitored: plot its peer's limits",
                    rec.path.display()
                ));
            }
            limits(&samples, t0, x1, columns, &mut marks);
            for (color, text) in [
                (Color::Blue, "network/congestion-limited (SndLimTimeCwnd)"),
                (Color::Yellow, "receiver window-limited (SndLimTimeRwin)"),
                (Color::Red, "sender-limited: idle or send buffer (SndLimTimeSnd)"),
            ] {
                legend.push(LegendEntry { color, sample: Legend::Fill, text: text.into() });
            }
            Axis::new("share of the interval", 0.0, 1.0, 5)
        }
    };
    if marks.is_empty() {
        return Err(format!("{}: connection {conn} has no {what} values (kernel too old?)", rec.path.display()));
    }
    Ok(Figure {
        title,
        x: Axis::new("seconds since the connection's first sample", 0.0, x1, 10),
        y,
        marks,
        legend,
        remarks: vec![format!("{} samples; {}", samples.len(), rec.path.display())],
    })
}

/// Stacked triage bars: one per interval, or per pixel column when intervals are more than
/// columns (intervals in a column averaged by their length).
fn limits(samples: &[&Sample], t0: u64, x1: f64, columns: u32, marks: &mut Vec<Mark>) {
    // (start s, end s, [network, receiver, sender] seconds)
    let mut bars: Vec<(f64, f64, [f64; 3])> = Vec::new();
    for ((_, sh), w) in triage::intervals(samples).into_iter().zip(samples.windows(2)) {
        let Some(sh) = sh else { continue };
        let (a, b) = (chart::secs(w[0].t_ns - t0), chart::secs(w[1].t_ns - t0));
        let d = b - a;
        bars.push((a, b, [sh.network * d, sh.receiver * d, sh.sender * d]));
    }
    let cols = columns.max(1) as usize;
    if bars.len() > cols {
        let w = x1 / cols as f64;
        let mut acc: Vec<(f64, f64, [f64; 3])> =
            (0..cols).map(|k| (k as f64 * w, (k + 1) as f64 * w, [0.0; 3])).collect();
        for (a, b, v) in &bars {
            let e = &mut acc[chart::column((a + b) / 2.0, 0.0, x1, cols)].2;
            for i in 0..3 {
                e[i] += v[i];
            }
        }
        bars = acc;
    }
    for (xa, xb, v) in bars {
        let total: f64 = v.iter().sum();
        if total <= 0.0 {
            continue;
        }
        let mut y = 0.0;
        for (share, color) in v.iter().zip([Color::Blue, Color::Yellow, Color::Red]) {
            let h = share / total;
            if h > 0.0 {
                marks.push(Mark {
                    class: "limit",
                    frame: None,
                    count: 1,
                    prims: vec![Prim { shape: Shape::Rect { x1: xa, y1: y, x2: xb, y2: y + h }, color }],
                });
            }
            y += h;
        }
    }
}

//! Plots of one connection of a recording, as `tcpscope-core` figures (rendered to SVG, PNG or
//! xplot by the same code as the capture plots; docs/monitor.md).
//!
//! - `cwnd`: CurCwnd, CurSsthresh, bytes in flight (`unacked × snd_mss`) and the peer's window
//!   (`snd_wnd`), bytes;
//! - `rtt`: SmoothedRTT, MinRTT and RTTVar, ms;
//! - `bw`: interval bandwidth (IntBW), interval goodput and the kernel's delivery rate, bit/s;
//! - `timeline`: CPU, application events with lifelines, and the connection's state ([`timeline`]);
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
    /// CPU, application events with lifelines, triage, retransmissions, RTT, rate and cwnd on
    /// one time axis ([`timeline`]).
    Timeline,
}

/// The figure of `kind` for connection `conn`; `columns` pixel columns bound the marks.
pub fn figure(rec: &Recording, conn: u32, kind: Kind, columns: u32) -> Result<Figure, String> {
    let c = rec.conns.iter().find(|c| c.id == conn).ok_or_else(|| {
        let ids: Vec<String> = rec.conns.iter().map(|c| c.id.to_string()).collect();
        format!("{}: no connection {conn} (it has {})", rec.path.display(), ids.join(", "))
    })?;
    let samples = rec.samples_of(conn);
    let Some((t0, t1)) = triage::span(&samples) else {
        return Err(format!("{}: connection {conn} has no samples", rec.path.display()));
    };
    let first = samples[0];
    // A sample before the first (a clock stepped back) is drawn at 0.
    let x = |s: &Sample| chart::secs(s.t_ns.saturating_sub(t0));
    let x1 = chart::secs(t1 - t0).max(1e-3);
    let what = match kind {
        Kind::Cwnd => "congestion window",
        Kind::Rtt => "RTT",
        Kind::Bw => "bandwidth",
        Kind::Limits | Kind::Timeline => "what limited the sender",
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
        Kind::Timeline => return timeline(rec, conn, columns),
        Kind::Limits => {
            let sent = |n: &str| crate::triage::growth(&samples, n).is_some_and(|g| g > 0);
            if !sent("busy_time") && !sent("bytes_acked") {
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
        let (a, b) = (chart::secs(w[0].t_ns.saturating_sub(t0)), chart::secs(w[1].t_ns.saturating_sub(t0)));
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

/// The timeline of one connection (seed 002's figures, NetLogger's lifelines): on one time axis,
/// from the bottom, each core's CPU (user + system, a load line in its lane), the `--pid`
/// process's CPU (when recorded), one lane per
/// application event name with NetLogger lifelines joining the events of one `guid` across
/// lanes, then the connection's triage strip (network blue, receiver yellow, sender red),
/// retransmissions (a tick per sample that retransmitted), SmoothedRTT, IntBW and CurCwnd, each
/// a load line scaled to its lane (its range in the lane's label). x is seconds since the
/// connection's first sample; events and CPU outside its life are left out.
pub fn timeline(rec: &Recording, conn: u32, columns: u32) -> Result<Figure, String> {
    let c = rec
        .conns
        .iter()
        .find(|c| c.id == conn)
        .ok_or_else(|| format!("{}: no connection {conn}", rec.path.display()))?;
    let samples = rec.samples_of(conn);
    let Some((t0, t1)) = triage::span(&samples) else {
        return Err(format!("{}: connection {conn} has no samples", rec.path.display()));
    };
    let first = samples[0];
    let x1 = chart::secs(t1 - t0).max(1e-3);
    let xs = |t: u64| (t as f64 - t0 as f64) / 1e9;
    let inside = |t: u64| (t0..=t1).contains(&t);
    let mut marks: Vec<Mark> = Vec::new();
    let mut ticks: Vec<(f64, String)> = Vec::new();
    let mut lane = 0.0f64;
    // CPU per core: user + system share between successive CPU samples.
    let cpu: Vec<_> = rec.cpu.iter().filter(|s| inside(s.t_ns)).collect();
    let cores = cpu.first().map_or(0, |s| s.cores.len());
    for k in 0..cores {
        let pts: Vec<(f64, f64)> = cpu
            .windows(2)
            .filter_map(|w| {
                let sh = crate::events::cpu_shares(w[0], w[1])?;
                let c = sh.cores.get(k)?;
                Some((xs(w[1].t_ns), (c[0] + c[1]) * 100.0))
            })
            .collect();
        load(&mut marks, &mut ticks, (columns, x1), pts, &format!("cpu{k}"), "%", Color::Gray, lane);
        lane += 1.0;
    }
    // The monitored process (`--pid`), in cores ×100 %.
    let proc: Vec<(f64, f64)> = cpu
        .windows(2)
        .filter_map(|w| Some((xs(w[1].t_ns), crate::events::cpu_shares(w[0], w[1])?.proc? * 100.0)))
        .collect();
    if !proc.is_empty() {
        load(&mut marks, &mut ticks, (columns, x1), proc, "pid", "%", Color::Magenta, lane);
        lane += 1.0;
    }
    // Event lanes, in order of first appearance; lifelines by guid.
    let events: Vec<_> = rec.events.iter().filter(|e| inside(e.t_ns)).collect();
    // Stages grouped by action in the order the actions first happen (NetLogger's layout:
    // `write.start`, `write.end`, `read.start`, `read.end`), bottom to top.
    let stem = |n: &str| n.strip_suffix(".start").or_else(|| n.strip_suffix(".end")).unwrap_or(n).to_string();
    let rank = |n: &str| {
        if n.ends_with(".start") {
            0
        } else if n.ends_with(".end") {
            2
        } else {
            1
        }
    };
    let mut stems: Vec<String> = Vec::new();
    for e in &rec.events {
        let st = stem(&e.name);
        if !stems.contains(&st) {
            stems.push(st);
        }
    }
    let mut names: Vec<&str> = Vec::new();
    for e in &events {
        if !names.contains(&e.name.as_str()) {
            names.push(&e.name);
        }
    }
    names.sort_by_key(|n| (stems.iter().position(|s| *s == stem(n)), rank(n)));
    let lane_of = |name: &str, base: f64| base + names.iter().position(|n| *n == name).unwrap_or(0) as f64 + 0.4;
    let base = lane;
    let mut by_guid: Vec<(&str, Vec<(f64, f64)>)> = Vec::new();
    for e in &events {
        let p = (xs(e.t_ns), lane_of(&e.name, base));
        marks.push(Mark {
            class: "event",
            frame: None,
            count: 1,
            prims: vec![Prim { shape: Shape::Diamond { x: p.0, y: p.1 }, color: Color::Purple }],
        });
        if let Some(g) = e.fields.iter().find(|(k, _)| k == "guid").map(|(_, v)| v.as_str()) {
            match by_guid.iter_mut().find(|(id, _)| *id == g) {
                Some((_, pts)) => pts.push(p),
                None => by_guid.push((g, vec![p])),
            }
        }
    }
    for (_, mut pts) in by_guid {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = pts.len() as u32;
        marks.extend(chart::line(pts, Color::Purple, "lifeline", n));
    }
    for n in &names {
        ticks.push((lane_of(n, base), (*n).to_string()));
    }
    lane += names.len() as f64;
    // The triage strip.
    for ((_, sh), w) in triage::intervals(&samples).into_iter().zip(samples.windows(2)) {
        let Some(sh) = sh else { continue };
        let (a, b) = (xs(w[0].t_ns), xs(w[1].t_ns));
        let mut y = lane + 0.1;
        for (share, color) in [(sh.network, Color::Blue), (sh.receiver, Color::Yellow), (sh.sender, Color::Red)] {
            if share > 0.0 {
                let h = 0.8 * share;
                marks.push(Mark {
                    class: "limit",
                    frame: None,
                    count: 1,
                    prims: vec![Prim { shape: Shape::Rect { x1: a, y1: y, x2: b, y2: y + h }, color }],
                });
                y += h;
            }
        }
    }
    ticks.push((lane + 0.5, "limited by".into()));
    lane += 1.0;
    // Retransmissions: a tick where total_retrans grew.
    let ri = index("total_retrans");
    for w in samples.windows(2) {
        if w[1].delta(ri, Some(w[0])).is_some_and(|d| d > 0) {
            let x = xs(w[1].t_ns);
            marks.push(Mark {
                class: "retrans",
                frame: None,
                count: 1,
                prims: vec![Prim {
                    shape: Shape::Line { x1: x, y1: lane + 0.2, x2: x, y2: lane + 0.8 },
                    color: Color::Red,
                }],
            });
        }
    }
    ticks.push((lane + 0.5, "retransmits".into()));
    lane += 1.0;
    let series = |name: &str| -> Vec<(f64, f64)> {
        let i = index(name);
        let mut prev: Option<&Sample> = None;
        let mut out = Vec::new();
        for s in &samples {
            if let Some(v) = s.value(i, prev, first) {
                out.push((xs(s.t_ns), v.as_f64()));
            }
            prev = Some(s);
        }
        out
    };
    for (name, label, unit, color) in [
        ("SmoothedRTT", "RTT", "ms", Color::Green),
        ("int_bw", "bw", "b/s", Color::Blue),
        ("CurCwnd", "cwnd", "B", Color::Orange),
    ] {
        load(&mut marks, &mut ticks, (columns, x1), series(name), label, unit, color, lane);
        lane += 1.0;
    }
    let mut y = Axis::new("", 0.0, lane, 4);
    y.ticks = ticks;
    let legend = vec![
        LegendEntry {
            color: Color::Purple,
            sample: Legend::Line,
            text: "application events; lines join one guid".into(),
        },
        LegendEntry { color: Color::Blue, sample: Legend::Fill, text: "network-limited".into() },
        LegendEntry { color: Color::Yellow, sample: Legend::Fill, text: "receiver-limited".into() },
        LegendEntry { color: Color::Red, sample: Legend::Fill, text: "sender-limited / retransmission".into() },
    ];
    Ok(Figure {
        title: format!("connection {conn}: {}:{} → {}:{} (timeline)", c.src, c.sport, c.dst, c.dport),
        x: Axis::new("seconds since the connection's first sample", 0.0, x1, 10),
        y,
        marks,
        legend,
        remarks: vec![format!(
            "{} samples, {} events, {} CPU samples in the connection's life; {}",
            samples.len(),
            events.len(),
            cpu.len(),
            rec.path.display()
        )],
    })
}

/// A load line of `(x, value)` scaled into the lane `[lane, lane + 0.8]`, its range in the
/// lane's label (the value at the top of the lane).
#[allow(clippy::too_many_arguments)] // the figure's parts (3), the line and its look (4), the lane
fn load(
    marks: &mut Vec<Mark>,
    ticks: &mut Vec<(f64, String)>,
    (columns, x1): (u32, f64),
    pts: Vec<(f64, f64)>,
    label: &str,
    unit: &str,
    color: Color,
    lane: f64,
) {
    let max = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let scaled: Vec<(f64, f64)> =
        pts.iter().map(|&(x, y)| (x, lane + if max > 0.0 { 0.8 * y / max } else { 0.0 })).collect();
    let n = scaled.len() as u32;
    marks.extend(chart::line(chart::reduce(&scaled, Some(columns), 0.0, x1), color, "load", n));
    // Short labels: the renderer's left margin holds about a dozen characters.
    let top = if unit == "%" { format!("{max:.0}%") } else { format!("{}{unit}", tcpscope_core::plot::si(max)) };
    ticks.push((lane + 0.4, format!("{label} {}", top.replace(' ', ""))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::CpuSample;
    use crate::tsm::{ConnStart, Event};

    #[test]
    fn timeline_lanes_and_lifelines() {
        let mut rec = Recording::default();
        rec.conns.push(ConnStart { src: "a".into(), dst: "b".into(), info_len: 280, ..ConnStart::sample(1) });
        for k in 0..10u64 {
            let mut s = Sample::empty(k * 100_000_000, 1);
            for (n, v) in [
                ("bytes_sent", k * 10_000),
                ("busy_time", k * 100_000),
                ("rwnd_limited", k * 50_000),
                ("sndbuf_limited", 0),
                ("total_retrans", k / 3),
                ("rtt", 1000 + k),
                ("snd_cwnd", 10 + k),
                ("snd_mss", 1000),
            ] {
                s.raw.set(index(n), Some(v));
            }
            rec.samples.push(s);
            rec.cpu.push(CpuSample { t_ns: k * 100_000_000, cores: vec![[k * 5, k, 0, 0, k * 4]], proc: Some([k, k]) });
        }
        let ev = |t_ms: u64, name: &str, guid: &str| Event {
            t_ns: t_ms * 1_000_000,
            name: name.into(),
            fields: vec![("guid".into(), guid.into())],
        };
        // The reader's start comes before the writer's end: lanes still group by action.
        rec.events = vec![
            ev(100, "write.start", "1"),
            ev(150, "read.start", "1"),
            ev(200, "write.end", "1"),
            ev(300, "read.end", "1"),
            ev(400, "write.start", "2"),
        ];
        let f = figure(&rec, 1, Kind::Timeline, 500).unwrap();
        let labels: Vec<&str> = f.y.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels[0], "cpu0 60%");
        // 2 ticks of the process per 10 ticks of the (one) core: 0.2 cores.
        assert_eq!(labels[1], "pid 20%");
        assert_eq!(labels[2..6], ["write.start", "write.end", "read.start", "read.end"]);
        assert_eq!(labels[6..8], ["limited by", "retransmits"]);
        let count = |c: &str| f.marks.iter().filter(|m| m.class == c).count();
        assert_eq!(count("event"), 5);
        assert_eq!(count("lifeline"), 1, "guid 1 joins four events; guid 2 has one, so no line");
        assert_eq!(count("retrans"), 3);
        assert_eq!(count("limit"), 2 * 9, "network and receiver halves of each interval");
        assert!(figure(&rec, 9, Kind::Timeline, 500).is_err());
    }

    /// Samples are stamped with the wall clock, which can be stepped back while recording: a
    /// sample before the first is drawn at 0, by every kind, and the triage's duration is not
    /// negative (these subtracted in u64 and overflowed).
    #[test]
    fn a_clock_stepped_back_draws_every_kind() {
        let mut rec = Recording::default();
        rec.conns.push(ConnStart { src: "a".into(), dst: "b".into(), info_len: 280, ..ConnStart::sample(1) });
        for (k, t_ms) in [1000u64, 1100, 1200, 300, 400].into_iter().enumerate() {
            let k = k as u64;
            let mut s = Sample::empty(t_ms * 1_000_000, 1);
            for (n, v) in [
                ("bytes_sent", k * 10_000),
                ("busy_time", k * 100_000),
                ("rwnd_limited", k * 50_000),
                ("sndbuf_limited", 0),
                ("rtt", 1000),
                ("snd_cwnd", 10),
                ("snd_mss", 1000),
            ] {
                s.raw.set(index(n), Some(v));
            }
            rec.samples.push(s);
        }
        for kind in [Kind::Cwnd, Kind::Rtt, Kind::Bw, Kind::Limits, Kind::Timeline] {
            let f = figure(&rec, 1, kind, 500).unwrap();
            assert!(f.x.min >= 0.0 && f.x.max < 1.0, "{kind:?}: x from {} to {}", f.x.min, f.x.max);
        }
        let t = triage::summarize(&rec.conns[0], None, &rec.samples.iter().collect::<Vec<_>>());
        assert_eq!((t.first_ns, t.last_ns), (1_000_000_000, 1_200_000_000));
        assert!((t.duration_s - 0.2).abs() < 1e-12, "{}", t.duration_s);
    }
}

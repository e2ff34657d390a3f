//! The JSON API: what the page asks for and how each answer is built. The schema is in
//! `docs/viewer.md`; answers only ever gain fields.
//!
//! Every answer is bounded by the viewport, never by the trace: the time-sequence figure comes
//! from [`tcpscope_core::plot::tsg::tsg`] with the viewport's pixel width as its column count
//! (the same marks and the same per-column aggregation as `tcpscope plot`), and the panels'
//! series are reduced to min/max per pixel column once they have more points than columns.

use serde::Serialize;
use serde_json::{Value, json};
use tcpscope_core::analysis::{Dir, Event, RttKind};
use tcpscope_core::export::json::ConnJson;
use tcpscope_core::plot::tsg::{TsgView, tsg};
use tcpscope_core::plot::{Anchor, Figure, Sample, Shape, Way};

use crate::data::{Detail, Traces};

/// Most events listed for one connection (the rest are counted: the list is for jumping to
/// places, and a multi-million-packet connection can have millions of duplicate ACKs).
pub const MAX_EVENTS: usize = 20_000;

/// Most pixel columns a request may ask for.
pub const MAX_COLUMNS: u32 = 8192;

/// One row of the connection list: the `--json` connection plus the screening columns.
#[derive(Serialize)]
pub struct ConnRow {
    /// Index of the trace in the command line.
    pub trace: usize,
    /// The statistics, as `tcpscope stats --json` prints them.
    #[serde(flatten)]
    pub conn: ConnJson,
    /// Screening verdict (`null` until the `screen` module is wired in).
    pub verdict: Option<String>,
    /// Whether screening found nothing worth a look (`null`: not screened).
    pub boring: Option<bool>,
    /// Screening severity, higher is worse (`null`: not screened).
    pub severity: Option<f64>,
}

/// The connection list.
pub fn conns(t: &Traces) -> Value {
    let rows: Vec<ConnRow> = t
        .an
        .conns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let file = t.an.files.get(c.info.file).map(|f| f.path.display().to_string()).unwrap_or_default();
            ConnRow { trace: c.info.file, conn: ConnJson::new(c, i + 1, file), verdict: None, boring: None, severity: None }
        })
        .collect();
    let traces: Vec<Value> = t
        .an
        .files
        .iter()
        .map(|f| json!({ "name": f.path.file_name().map(|n| n.to_string_lossy().into_owned()), "packets": f.packets, "error": f.error }))
        .collect();
    json!({ "traces": traces, "conns": rows })
}

/// A viewport: time range in seconds since the connection's first packet, optional sequence
/// range, and the plot's width in pixels.
#[derive(Clone, Copy, Debug, Default)]
pub struct Viewport {
    /// Start time, s (default 0).
    pub t0: Option<f64>,
    /// End time, s (default: the last packet).
    pub t1: Option<f64>,
    /// Lowest sequence offset shown.
    pub s0: Option<i64>,
    /// Highest sequence offset shown.
    pub s1: Option<i64>,
    /// Pixel columns.
    pub w: u32,
}

fn dir_of(d: Dir) -> &'static str {
    d.name()
}

fn way(w: Way) -> &'static str {
    match w {
        Way::Up => "u",
        Way::Down => "d",
        Way::Horizontal => "h",
    }
}

fn anchor(a: Anchor) -> &'static str {
    match a {
        Anchor::Above => "a",
        Anchor::Below => "b",
        Anchor::Left => "l",
        Anchor::Right => "r",
        Anchor::Center => "c",
    }
}

/// A figure as compact JSON: each mark `{c: class, f: frame, n: count, p: [prim...]}`, each
/// primitive an array `[op, colour, numbers..., extra]` (see docs/viewer.md).
pub fn figure_json(f: &Figure) -> Value {
    let marks: Vec<Value> = f
        .marks
        .iter()
        .map(|m| {
            let prims: Vec<Value> = m
                .prims
                .iter()
                .map(|p| {
                    let c = p.color.svg();
                    match &p.shape {
                        Shape::Line { x1, y1, x2, y2 } => json!(["l", c, x1, y1, x2, y2]),
                        Shape::Arrow { x, y, way: w } => json!(["a", c, x, y, way(*w)]),
                        Shape::Tick { x, y, way: w } => json!(["t", c, x, y, way(*w)]),
                        Shape::Diamond { x, y } => json!(["d", c, x, y]),
                        Shape::Box { x, y } => json!(["b", c, x, y]),
                        Shape::Text { x, y, anchor: a, text } => json!(["x", c, x, y, anchor(*a), text]),
                    }
                })
                .collect();
            json!({ "c": m.class, "f": m.frame, "n": m.count, "p": prims })
        })
        .collect();
    let legend: Vec<Value> = f
        .legend
        .iter()
        .map(|l| {
            let sample = match l.sample {
                Sample::Segment => "segment".to_string(),
                Sample::Step => "step".to_string(),
                Sample::DownTick => "dtick".to_string(),
                Sample::UpTick => "utick".to_string(),
                Sample::Bar => "bar".to_string(),
                Sample::Letter(s) => format!("text:{s}"),
            };
            json!({ "color": l.color.svg(), "sample": sample, "text": l.text })
        })
        .collect();
    json!({
        "title": f.title,
        "x": [f.x.min, f.x.max],
        "y": [f.y.min, f.y.max],
        "marks": marks,
        "legend": legend,
        "remarks": f.remarks,
    })
}

/// The time-sequence figure of one direction for a viewport.
pub fn tsg_json(d: &Detail, dir: Dir, v: &Viewport) -> Value {
    let series = &d.tsg[dir.idx()];
    let view = TsgView {
        from_s: v.t0,
        to_s: v.t1,
        seq_from: v.s0,
        seq_to: v.s1,
        columns: Some(v.w.clamp(1, MAX_COLUMNS)),
        title: None,
    };
    let f = tsg(series, &view);
    let mut out = figure_json(&f);
    out["dir"] = json!(dir_of(dir));
    out["last"] = json!(d.last_ns() as f64 / 1e9);
    out["error"] = json!(d.error);
    out
}

/// Points `(t_ns, value)` in time order, reduced for `w` pixel columns over `[t0, t1]` s:
/// every point when there are at most 2·w of them, else per column the lowest and highest
/// value (so a spike never vanishes) at the column's centre.
///
/// Definition (the test oracle): column k of w covers `[t0 + k·(t1−t0)/w, t0 + (k+1)·(t1−t0)/w)`,
/// the last column includes `t1`; `lo[k]`/`hi[k]` are the min/max of the values in it.
pub fn reduce(points: &[(u64, f64)], t0: f64, t1: f64, w: u32) -> Value {
    let lo_i = points.partition_point(|p| (p.0 as f64 / 1e9) < t0);
    let hi_i = lo_i + points[lo_i..].partition_point(|p| (p.0 as f64 / 1e9) <= t1);
    let vis = &points[lo_i..hi_i];
    let w = w.clamp(1, MAX_COLUMNS) as usize;
    if vis.len() <= 2 * w {
        let t: Vec<f64> = vis.iter().map(|p| p.0 as f64 / 1e9).collect();
        let v: Vec<f64> = vis.iter().map(|p| p.1).collect();
        return json!({ "t": t, "lo": v, "hi": v, "agg": false });
    }
    let span = (t1 - t0).max(f64::MIN_POSITIVE);
    let mut cols: Vec<Option<(f64, f64)>> = vec![None; w];
    for p in vis {
        let k = ((((p.0 as f64 / 1e9) - t0) / span * w as f64) as usize).min(w - 1);
        let e = cols[k].get_or_insert((p.1, p.1));
        e.0 = e.0.min(p.1);
        e.1 = e.1.max(p.1);
    }
    let (mut t, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
    for (k, c) in cols.iter().enumerate() {
        if let Some((a, b)) = c {
            t.push(t0 + (k as f64 + 0.5) / w as f64 * span);
            lo.push(*a);
            hi.push(*b);
        }
    }
    json!({ "t": t, "lo": lo, "hi": hi, "agg": true })
}

/// Payload bits per second sent in `[t0, t1]`, per pixel column: the bytes of the segments
/// whose time falls in a column, divided by the column's duration (retransmissions included,
/// as on the wire). Replaced by the core throughput series once it exists.
fn throughput(d: &Detail, dir: Dir, t0: f64, t1: f64, w: u32) -> Value {
    let segs = &d.tsg[dir.idx()].segments;
    let w = w.clamp(1, MAX_COLUMNS) as usize;
    // Few columns for a readable rate: one per 4 pixels.
    let cols = (w / 4).max(1);
    let span = (t1 - t0).max(f64::MIN_POSITIVE);
    let lo_i = segs.partition_point(|s| (s.t_ns as f64 / 1e9) < t0);
    let hi_i = lo_i + segs[lo_i..].partition_point(|s| (s.t_ns as f64 / 1e9) <= t1);
    let mut bytes = vec![0u64; cols];
    for s in &segs[lo_i..hi_i] {
        let k = ((((s.t_ns as f64 / 1e9) - t0) / span * cols as f64) as usize).min(cols - 1);
        bytes[k] += s.len as u64;
    }
    let dt = span / cols as f64;
    let t: Vec<f64> = (0..cols).map(|k| t0 + (k as f64 + 0.5) * dt).collect();
    let v: Vec<f64> = bytes.iter().map(|b| *b as f64 * 8.0 / dt).collect();
    json!({ "t": t, "lo": v, "hi": v, "agg": true })
}

/// The panels under the time-sequence plot, for the same time range: throughput, RTT, bytes in
/// flight and the advertised window (of the returning direction, which limits this one).
pub fn panels_json(d: &Detail, dir: Dir, v: &Viewport) -> Value {
    let t0 = v.t0.unwrap_or(0.0);
    let t1 = v.t1.unwrap_or(d.last_ns() as f64 / 1e9).max(t0);
    let rtt_pts: Vec<(u64, f64)> = d.rtt[dir.idx()].points.iter().map(|p| (p.t_ns, p.rtt_ns as f64 / 1e6)).collect();
    let karn: Vec<(u64, f64)> = d.rtt[dir.idx()]
        .points
        .iter()
        .filter(|p| p.kind == RttKind::Karn)
        .map(|p| (p.t_ns, p.rtt_ns as f64 / 1e6))
        .collect();
    let flight: Vec<(u64, f64)> =
        d.packets.iter().filter(|p| p.dir == dir).filter_map(|p| p.in_flight.map(|f| (p.t_ns, f as f64))).collect();
    let win: Vec<(u64, f64)> = d.tsg[dir.idx()].acks.iter().map(|a| (a.t_ns, a.win_bytes as f64)).collect();
    json!({
        "t": [t0, t1],
        "tput_bps": throughput(d, dir, t0, t1, v.w),
        "rtt_ms": reduce(&rtt_pts, t0, t1, v.w),
        "rtt_karn_ms": reduce(&karn, t0, t1, v.w),
        "flight_bytes": reduce(&flight, t0, t1, v.w),
        "window_bytes": reduce(&win, t0, t1, v.w),
    })
}

/// TCP flags as a packet listing shows them (`S`, `A`, `F`, `R`, `P`, `U`, `E`, `C`).
pub fn flags_text(f: u16) -> String {
    use tcpscope_core::decode::Flags;
    [(Flags::SYN, 'S'), (Flags::FIN, 'F'), (Flags::RST, 'R'), (Flags::PSH, 'P'), (Flags::ACK, 'A'), (Flags::URG, 'U'), (Flags::ECE, 'E'), (Flags::CWR, 'C')]
        .iter()
        .filter(|(m, _)| f & m == *m)
        .map(|(_, c)| *c)
        .collect()
}

/// An event's name and its values in words.
pub fn event_text(ev: &Event) -> (&'static str, String) {
    match *ev {
        Event::Retransmission { seq_off, bytes } => ("retransmission", format!("seq {seq_off}, {bytes} bytes")),
        Event::OutOfOrder { seq_off } => ("out_of_order", format!("seq {seq_off}")),
        Event::Hole { from, to } => ("hole", format!("{from}..{to} not captured")),
        Event::AckedUnseen { bytes } => ("acked_unseen", format!("{bytes} bytes")),
        Event::AckAdvance { bytes } => ("ack_advance", format!("{bytes} bytes")),
        Event::DupAck { n, ack_off } => ("dup_ack", format!("#{n} of ack {ack_off}")),
        Event::Dsack { from, to } => ("dsack", format!("{from}..{to}")),
        Event::Sack { from, to } => ("sack", format!("{from}..{to}")),
        Event::ZeroWindow => ("zero_window", String::new()),
        Event::ZeroWindowProbe { len } => ("zero_window_probe", format!("{len} bytes")),
        Event::KeepAlive => ("keep_alive", String::new()),
        Event::WindowShrink { by } => ("window_shrink", format!("by {by} bytes")),
        Event::RttSample { rtt_ns, kind, sent_frame } => {
            let k = match kind {
                RttKind::Karn => "karn",
                RttKind::Timestamp => "timestamp",
            };
            ("rtt_sample", format!("{:.3} ms ({k}, sent in frame {sent_frame})", rtt_ns as f64 / 1e6))
        }
        Event::KarnDiscard => ("karn_discard", String::new()),
        Event::PostLossAck => ("post_loss_ack", String::new()),
        Event::AnalysisPartial { what } => ("analysis_partial", what.to_string()),
    }
}

/// Whether an event goes in the side list: the frequent bookkeeping ones (every ACK's advance,
/// every RTT sample, every SACK block) are on the plots already and only shown on hover.
fn listed(ev: &Event) -> bool {
    !matches!(ev, Event::AckAdvance { .. } | Event::RttSample { .. } | Event::Sack { .. })
}

fn event_row(d: &Detail, e: &crate::data::EventAt) -> Value {
    let (kind, text) = event_text(&e.ev);
    json!({
        "frame": e.frame,
        "t": e.ts_ns.saturating_sub(d.t0_ns()) as f64 / 1e9,
        "dir": dir_of(e.dir),
        "kind": kind,
        "text": text,
    })
}

/// The connection's notable events (at most [`MAX_EVENTS`]; `more` counts the rest).
pub fn events_json(d: &Detail) -> Value {
    let all = d.events.iter().filter(|e| listed(&e.ev));
    let rows: Vec<Value> = all.clone().take(MAX_EVENTS).map(|e| event_row(d, e)).collect();
    let more = all.count() - rows.len();
    json!({ "events": rows, "more": more })
}

/// The packet-listing row of `frame` and every event it triggered; `null` if the connection has
/// no such frame.
pub fn packet_json(d: &Detail, frame: u64) -> Value {
    let i = d.packets.partition_point(|p| p.frame < frame);
    let Some(p) = d.packets.get(i).filter(|p| p.frame == frame) else { return Value::Null };
    let j = d.events.partition_point(|e| e.frame < frame);
    let evs: Vec<Value> = d.events[j..].iter().take_while(|e| e.frame == frame).map(|e| event_row(d, e)).collect();
    json!({
        "frame": p.frame,
        "t": p.t_ns as f64 / 1e9,
        "dir": dir_of(p.dir),
        "seq": p.seq_off,
        "ack": p.ack_off,
        "win": p.win_bytes,
        "len": p.len,
        "flags": flags_text(p.flags),
        "in_flight": p.in_flight,
        "events": evs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `reduce` against its definition, computed the slow way: every point tested against every
    /// column's bounds.
    #[test]
    fn reduce_is_min_max_per_column() {
        // A deterministic pseudo-random walk (xorshift), times in ns with gaps and bursts.
        let mut x: u64 = 0x9e3779b97f4a7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut t = 0u64;
        let pts: Vec<(u64, f64)> = (0..20_000)
            .map(|_| {
                t += next() % 2_000_000;
                (t, (next() % 100_000) as f64)
            })
            .collect();
        for (t0, t1, w) in [(0.0, t as f64 / 1e9, 100u32), (3.0, 7.5, 37), (1.0, 1.001, 500), (0.0, 50.0, 9000)] {
            let r = reduce(&pts, t0, t1, w);
            let w = w.min(MAX_COLUMNS) as usize;
            let vis: Vec<&(u64, f64)> = pts.iter().filter(|p| p.0 as f64 / 1e9 >= t0 && p.0 as f64 / 1e9 <= t1).collect();
            let got_t: Vec<f64> = r["t"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            let got_lo: Vec<f64> = r["lo"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            let got_hi: Vec<f64> = r["hi"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            if vis.len() <= 2 * w {
                assert_eq!(r["agg"], false);
                assert_eq!(got_lo, vis.iter().map(|p| p.1).collect::<Vec<_>>());
                continue;
            }
            assert_eq!(r["agg"], true);
            let span = t1 - t0;
            let mut want = Vec::new();
            for k in 0..w {
                let (a, b) = (t0 + k as f64 * span / w as f64, t0 + (k + 1) as f64 * span / w as f64);
                let inside: Vec<f64> = vis
                    .iter()
                    .filter(|p| {
                        let s = p.0 as f64 / 1e9;
                        s >= a && (s < b || (k == w - 1 && s <= t1))
                    })
                    .map(|p| p.1)
                    .collect();
                if !inside.is_empty() {
                    want.push((inside.iter().cloned().fold(f64::MAX, f64::min), inside.iter().cloned().fold(f64::MIN, f64::max)));
                }
            }
            assert!(got_t.len() <= w);
            // Float rounding can put a point exactly on a boundary in either column; compare
            // the overall extremes and the column count, which rounding cannot change by more
            // than a column.
            assert!((got_t.len() as i64 - want.len() as i64).abs() <= 1, "{} vs {}", got_t.len(), want.len());
            let fold = |v: &[f64], f: fn(f64, f64) -> f64, i: f64| v.iter().cloned().fold(i, f);
            assert_eq!(fold(&got_lo, f64::min, f64::MAX), want.iter().map(|w| w.0).fold(f64::MAX, f64::min));
            assert_eq!(fold(&got_hi, f64::max, f64::MIN), want.iter().map(|w| w.1).fold(f64::MIN, f64::max));
            let same = got_lo.iter().zip(&got_hi).zip(&want).filter(|((l, h), w)| **l == w.0 && **h == w.1).count();
            assert!(same + 2 >= want.len(), "{same} of {} columns agree", want.len());
        }
    }

    #[test]
    fn flags_read_as_in_a_listing() {
        use tcpscope_core::decode::Flags;
        assert_eq!(flags_text(Flags::SYN | Flags::ACK), "SA");
        assert_eq!(flags_text(Flags::FIN | Flags::PSH | Flags::ACK), "FPA");
        assert_eq!(flags_text(0), "");
    }
}

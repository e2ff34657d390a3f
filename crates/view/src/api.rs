//! The JSON API: what the page asks for and how each answer is built. The schema is in
//! `docs/viewer.md`; answers only ever gain fields.
//!
//! Every answer is bounded by the viewport, never by the trace: the time-sequence figure comes
//! from [`tcpscope_core::plot::tsg::tsg`] with the viewport's pixel width as its column count
//! (the same marks and the same per-column aggregation as `tcpscope plot`), and the panels'
//! series are reduced to min/max per pixel column once they have more points than columns.

use serde::Serialize;
use serde_json::{Value, json};
use tcpscope_core::analysis::{Dir, Event};
use tcpscope_core::export::json::ConnJson;
use tcpscope_core::plot::tsg::{TsgView, tsg_indexed};
use tcpscope_core::plot::{Anchor, Figure, Mark, Prim, Sample, Shape, Way};
use tcpscope_core::series::mipmap::gallop;

use crate::data::{Detail, Line, Traces};

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
    /// Screening verdict, as `tcpscope screen` prints it (`null`: not screened).
    pub verdict: Option<String>,
    /// Whether the boring rules hold (`null`: not screened).
    pub boring: Option<bool>,
    /// Screening severity, 0 (fine) to 1 (very troubled) (`null`: not screened).
    pub severity: Option<f64>,
}

/// Row `i` (id − 1) of the connection list.
pub fn conn_row(t: &Traces, i: usize) -> ConnRow {
    let c = &t.an.conns[i];
    let file = t.an.files.get(c.info().file).map(|f| f.path.display().to_string()).unwrap_or_default();
    let s = t.screens.get(i);
    ConnRow {
        trace: c.info().file,
        conn: ConnJson::new(c, i + 1, file, t.an.inputs.get(c.trace()).cloned().unwrap_or_default()),
        verdict: s.map(|s| s.verdict.clone()),
        boring: s.map(|s| s.boring),
        severity: s.map(|s| s.severity),
    }
}

/// The traces: name, packets read, error.
pub fn traces_json(t: &Traces) -> Vec<Value> {
    t.an.files
        .iter()
        .map(|f| json!({ "name": f.path.file_name().map(|n| n.to_string_lossy().into_owned()), "packets": f.packets, "error": f.error }))
        .collect()
}

/// The whole connection list, in id order (`api/conns` without list parameters; the page asks
/// for pages of it, [`crate::list`]).
pub fn conns(t: &Traces) -> Value {
    let rows: Vec<ConnRow> = (0..t.an.conns.len()).map(|i| conn_row(t, i)).collect();
    json!({ "traces": traces_json(t), "conns": rows })
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

/// A number of a primitive: integral values (sequence numbers) are written as integers.
struct Num(f64);

impl Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.fract() == 0.0 && self.0.abs() < 9.0e15 {
            s.serialize_i64(self.0 as i64)
        } else {
            s.serialize_f64(self.0)
        }
    }
}

/// A primitive as an array `[op, colour, numbers..., extra]`.
struct PrimOut<'a>(&'a Prim);

impl Serialize for PrimOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let c = self.0.color.svg();
        let mut q = s.serialize_seq(None)?;
        match &self.0.shape {
            Shape::Line { x1, y1, x2, y2 } => {
                q.serialize_element("l")?;
                q.serialize_element(c)?;
                for v in [x1, y1, x2, y2] {
                    q.serialize_element(&Num(*v))?;
                }
            }
            Shape::Arrow { x, y, way: w } | Shape::Tick { x, y, way: w } => {
                q.serialize_element(if matches!(self.0.shape, Shape::Arrow { .. }) { "a" } else { "t" })?;
                q.serialize_element(c)?;
                q.serialize_element(&Num(*x))?;
                q.serialize_element(&Num(*y))?;
                q.serialize_element(way(*w))?;
            }
            Shape::Diamond { x, y } | Shape::Box { x, y } => {
                q.serialize_element(if matches!(self.0.shape, Shape::Diamond { .. }) { "d" } else { "b" })?;
                q.serialize_element(c)?;
                q.serialize_element(&Num(*x))?;
                q.serialize_element(&Num(*y))?;
            }
            Shape::Dot { x, y } => {
                q.serialize_element("o")?;
                q.serialize_element(c)?;
                q.serialize_element(&Num(*x))?;
                q.serialize_element(&Num(*y))?;
            }
            Shape::Polyline { pts } => {
                q.serialize_element("p")?;
                q.serialize_element(c)?;
                for (x, y) in pts {
                    q.serialize_element(&Num(*x))?;
                    q.serialize_element(&Num(*y))?;
                }
            }
            Shape::Rect { x1, y1, x2, y2 } => {
                q.serialize_element("r")?;
                q.serialize_element(c)?;
                for v in [x1, y1, x2, y2] {
                    q.serialize_element(&Num(*v))?;
                }
            }
            Shape::Text { x, y, anchor: a, text } => {
                q.serialize_element("x")?;
                q.serialize_element(c)?;
                q.serialize_element(&Num(*x))?;
                q.serialize_element(&Num(*y))?;
                q.serialize_element(anchor(*a))?;
                q.serialize_element(text)?;
            }
        }
        q.end()
    }
}

/// A mark as `{c: class, f: frame, n: count, p: [prim...]}`.
struct MarkOut<'a>(&'a Mark);

impl Serialize for MarkOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let m = self.0;
        let mut o = s.serialize_map(Some(4))?;
        o.serialize_entry("c", m.class)?;
        o.serialize_entry("f", &m.frame)?;
        o.serialize_entry("n", &m.count)?;
        o.serialize_entry("p", &Seq(m.prims.iter().map(PrimOut)))?;
        o.end()
    }
}

/// Serializes an iterator as a JSON array, without collecting it.
struct Seq<I>(I);

impl<I: Iterator<Item = T> + Clone, T: Serialize> Serialize for Seq<I> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.clone())
    }
}

/// A time-sequence figure as the API sends it (written straight from the [`Figure`]: a zoomed
/// out answer has thousands of marks, and building a `serde_json::Value` of them first would
/// cost more than computing them).
#[derive(Serialize)]
pub struct FigureOut<'a> {
    title: &'a str,
    x: [f64; 2],
    y: [f64; 2],
    #[serde(serialize_with = "marks_out")]
    marks: &'a [Mark],
    legend: Vec<Value>,
    remarks: &'a [String],
    dir: &'static str,
    last: f64,
    error: Option<&'a str>,
}

fn marks_out<S: serde::Serializer>(m: &&[Mark], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(m.iter().map(MarkOut))
}

fn legend_json(f: &Figure) -> Vec<Value> {
    f.legend
        .iter()
        .map(|l| {
            let sample = match l.sample {
                Sample::Segment => "segment".to_string(),
                Sample::Step => "step".to_string(),
                Sample::DownTick => "dtick".to_string(),
                Sample::UpTick => "utick".to_string(),
                Sample::Bar => "bar".to_string(),
                Sample::Letter(s) => format!("text:{s}"),
                Sample::Line => "line".to_string(),
                Sample::Dot => "dot".to_string(),
                Sample::Fill => "fill".to_string(),
            };
            json!({ "color": l.color.svg(), "sample": sample, "text": l.text })
        })
        .collect()
}

/// The time-sequence figure of one direction for a viewport (serialize it with
/// [`figure_out`]).
pub fn tsg_figure(d: &Detail, dir: Dir, v: &Viewport) -> Figure {
    let s = &d.tsg[dir.idx()];
    let (from, to) = match dir {
        Dir::AtoB => (s.info.a, s.info.b),
        Dir::BtoA => (s.info.b, s.info.a),
    };
    let view = TsgView {
        from_s: v.t0,
        to_s: v.t1,
        seq_from: v.s0,
        seq_to: v.s1,
        columns: Some(v.w.clamp(1, MAX_COLUMNS)),
        // The series knows its index within its file; the viewer numbers across files.
        title: Some(format!("connection {} {}: {from} → {to}", d.id, dir.name())),
    };
    tsg_indexed(&d.tsg[dir.idx()], Some(&d.tsg_index[dir.idx()]), &view)
}

/// The answer of `api/tsg` for a figure.
pub fn figure_out<'a>(d: &'a Detail, dir: Dir, f: &'a Figure) -> FigureOut<'a> {
    FigureOut {
        title: &f.title,
        x: [f.x.min, f.x.max],
        y: [f.y.min, f.y.max],
        marks: &f.marks,
        legend: legend_json(f),
        remarks: &f.remarks,
        dir: dir_of(dir),
        last: d.last_ns() as f64 / 1e9,
        error: d.error.as_deref(),
    }
}

/// Index of the first point at or after `t` seconds.
fn first_at<T>(pts: &[(u64, T)], t: f64) -> usize {
    pts.partition_point(|p| (p.0 as f64 / 1e9) < t)
}

/// Index after the last point at or before `t` seconds.
fn after<T>(pts: &[(u64, T)], t: f64) -> usize {
    pts.partition_point(|p| (p.0 as f64 / 1e9) <= t)
}

/// A series reduced for `w` pixel columns over `[t0, t1]` s: every point when there are at
/// most 2·w of them, else per column the lowest and highest value (so a spike never vanishes)
/// at the column's centre.
///
/// Definition (the test oracle): column k of w covers `[t0 + k·(t1−t0)/w, t0 + (k+1)·(t1−t0)/w)`,
/// the last column includes `t1`; `lo[k]`/`hi[k]` are the min/max of the values in it. Each
/// column costs two binary searches and a [`Line::min_max`], whatever the number of points.
pub fn reduce(line: &Line, t0: f64, t1: f64, w: u32) -> Reduced {
    let pts = &line.pts;
    let (i0, i1) = (first_at(pts, t0), after(pts, t1));
    let w = w.clamp(1, MAX_COLUMNS) as usize;
    if i1 <= i0 + 2 * w {
        let vis = &pts[i0..i1.max(i0)];
        let t: Vec<f64> = vis.iter().map(|p| p.0 as f64 / 1e9).collect();
        let v: Vec<f64> = vis.iter().map(|p| p.1).collect();
        return Reduced { t, lo: v.clone(), hi: v, agg: false };
    }
    let span = t1 - t0;
    let (mut t, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
    let mut i = i0;
    for k in 0..w {
        let j = if k + 1 == w {
            i1
        } else {
            i + gallop(&pts[i..i1], |p| (p.0 as f64 / 1e9) < t0 + (k + 1) as f64 * span / w as f64)
        };
        if j > i {
            let (a, b) = line.min_max(i, j);
            t.push(t0 + (k as f64 + 0.5) / w as f64 * span);
            lo.push(a);
            hi.push(b);
        }
        i = j;
    }
    Reduced { t, lo, hi, agg: true }
}

/// Throughput and goodput (bits per second) over `[t0, t1]`, one value per group of four
/// pixel columns (a readable rate): the core's moving average (`series::tput`: bits sent in
/// `(t − window, t]` divided by the window) with the group as the window, evaluated at each
/// group's end and drawn as a step over the group (each value at the group's start, one more
/// point at `t1`).
/// The cumulated bytes make each value two binary searches, whatever the packets.
fn throughput(d: &Detail, dir: Dir, t0: f64, t1: f64, w: u32) -> (Reduced, Reduced) {
    let sent = &d.lines[dir.idx()].sent;
    let cols = (w.clamp(1, MAX_COLUMNS) as usize / 4).max(1);
    let span = (t1 - t0).max(f64::MIN_POSITIVE);
    let dt = span / cols as f64;
    // Bytes (all, new) sent up to and including time t.
    let upto = |t: f64| match after(sent, t) {
        0 => (0, 0),
        i => sent[i - 1].1,
    };
    let (mut t, mut all, mut new) = (Vec::with_capacity(cols), Vec::with_capacity(cols), Vec::with_capacity(cols));
    let mut prev = upto(t0);
    for k in 0..cols {
        let end = t0 + (k + 1) as f64 * dt;
        let now = upto(end);
        // A step function: the group's value holds from its start to the next group's.
        t.push(end - dt);
        all.push((now.0 - prev.0) as f64 * 8.0 / dt);
        new.push((now.1 - prev.1) as f64 * 8.0 / dt);
        prev = now;
    }
    if let (Some(&a), Some(&n)) = (all.last(), new.last()) {
        t.push(t1);
        all.push(a);
        new.push(n);
    }
    (
        Reduced { t: t.clone(), lo: all.clone(), hi: all, agg: false },
        Reduced { t, lo: new.clone(), hi: new, agg: false },
    )
}

/// A panel series over the view: times (s) and per point the lowest and highest value (equal
/// unless `agg`: then each point stands for a pixel column's min and max).
#[derive(Clone, Debug, PartialEq)]
pub struct Reduced {
    /// Times, s since the connection's first packet.
    pub t: Vec<f64>,
    /// Lowest value at each time.
    pub lo: Vec<f64>,
    /// Highest value at each time.
    pub hi: Vec<f64>,
    /// Whether points are min/max per pixel column.
    pub agg: bool,
}

impl Reduced {
    /// As the JSON answer has it: `{t, lo, hi, agg}`.
    pub fn to_json(&self) -> Value {
        json!({ "t": self.t, "lo": self.lo, "hi": self.hi, "agg": self.agg })
    }
}

/// The panels under the time-sequence plot for one view (see [`panels`]).
pub struct PanelsData {
    /// Start of the view, s.
    pub t0: f64,
    /// End of the view, s.
    pub t1: f64,
    /// Whether the advertised window is scaled (the scale was seen in the handshake).
    pub window_scaled: bool,
    /// The series by their API names (`tput_bps`, `rtt_ms`, ...).
    pub series: Vec<(&'static str, Reduced)>,
}

impl PanelsData {
    /// The JSON answer of `api/panels`.
    pub fn to_json(&self) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("t".into(), json!([self.t0, self.t1]));
        o.insert("window_scaled".into(), json!(self.window_scaled));
        for (name, s) in &self.series {
            o.insert((*name).into(), s.to_json());
        }
        Value::Object(o)
    }
}

/// The panels under the time-sequence plot, for the same time range: throughput, RTT, bytes in
/// flight and the advertised window (of the returning direction, which limits this one).
pub fn panels(d: &Detail, dir: Dir, v: &Viewport) -> PanelsData {
    let t0 = v.t0.unwrap_or(0.0);
    let t1 = v.t1.unwrap_or(d.last_ns() as f64 / 1e9).max(t0);
    let l = &d.lines[dir.idx()];
    let (tput, goodput) = throughput(d, dir, t0, t1, v.w);
    PanelsData {
        t0,
        t1,
        window_scaled: l.window_scaled,
        series: vec![
            ("tput_bps", tput),
            ("goodput_bps", goodput),
            ("cwnd_bytes", reduce(&l.cwnd_bytes, t0, t1, v.w)),
            ("rtt_ms", reduce(&l.rtt_ms, t0, t1, v.w)),
            ("rtt_karn_ms", reduce(&l.rtt_karn_ms, t0, t1, v.w)),
            ("flight_bytes", reduce(&l.flight_bytes, t0, t1, v.w)),
            ("window_bytes", reduce(&l.window_bytes, t0, t1, v.w)),
        ],
    }
}

/// The panels as the JSON answer of `api/panels`.
pub fn panels_json(d: &Detail, dir: Dir, v: &Viewport) -> Value {
    panels(d, dir, v).to_json()
}

/// TCP flags as a packet listing shows them (`S`, `A`, `F`, `R`, `P`, `U`, `E`, `C`: print's
/// letters but AE's, and nothing for none).
pub fn flags_text(f: u16) -> String {
    use tcpscope_core::decode::Flags;
    use tcpscope_core::export::packet::FLAG_LETTERS;
    FLAG_LETTERS.iter().filter(|&&(m, _)| m != Flags::AE && f & m == m).map(|&(_, c)| c).collect()
}

/// Whether an event goes in the side list: the frequent bookkeeping ones (every ACK's advance,
/// useless ACK, RTT sample and SACK block) are on the plots already and only shown on hover.
fn listed(ev: &Event) -> bool {
    !matches!(ev, Event::AckAdvance { .. } | Event::UselessAck | Event::RttSample { .. } | Event::Sack { .. })
}

fn event_row(d: &Detail, e: &crate::data::EventAt) -> Value {
    json!({
        "frame": e.frame,
        "t": e.ts_ns.saturating_sub(d.t0_ns()) as f64 / 1e9,
        "dir": dir_of(e.dir),
        "data_dir": dir_of(e.ev.data_dir(e.dir)),
        "kind": e.ev.name(),
        "text": e.ev.describe(),
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
    let segs = &d.ladder.segs;
    let i = segs.partition_point(|p| p.frame < frame);
    let Some(p) = segs.get(i).filter(|p| p.frame == frame) else { return Value::Null };
    let j = d.events.partition_point(|e| e.frame < frame);
    let evs: Vec<Value> = d.events[j..].iter().take_while(|e| e.frame == frame).map(|e| event_row(d, e)).collect();
    json!({
        "frame": p.frame,
        "t": p.t,
        "dir": dir_of(p.dir),
        "seq": p.seq_off,
        "ack": p.ack_off,
        "win": p.win,
        "len": p.len,
        "flags": flags_text(p.flags.0),
        "in_flight": d.in_flight.get(i).copied().flatten(),
        "events": evs,
    })
}

/// Most pixel rows a request may ask for.
pub const MAX_ROWS: u32 = 8192;

/// The ladder of the connection for a viewport (`api/ladder`): time across, a's line above
/// b's, from the core's ladder series (`series::ladder`, which `tcpscope plot -k ladder` draws
/// too) by [`tcpscope_core::plot::ladder::ladder_across`], for a plot area of `v.w` × `h`
/// pixels (labels are placed, or left out, by pixels). The sequence range is not used.
pub fn ladder_figure(d: &Detail, v: &Viewport, h: u32) -> Figure {
    use tcpscope_core::plot::ladder::{LadderView, ladder_across};
    let l = &d.ladder;
    let view = LadderView {
        from_s: v.t0,
        to_s: v.t1,
        title: Some(format!("connection {}: a {} ↔ b {} (ladder)", d.id, l.info.a, l.info.b)),
        area_px: (v.w.clamp(1, MAX_COLUMNS) as f64, h.clamp(1, MAX_ROWS) as f64),
    };
    ladder_across(l, &view)
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
        let line = crate::data::Line::new(pts.clone());
        // Min/max of index ranges against a plain fold, across block boundaries.
        for (i, j) in [(0, 1), (0, 64), (3, 64), (63, 65), (10, 1000), (64, 128), (65, 19_999), (0, 20_000)] {
            let want = pts[i..j].iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
            assert_eq!(line.min_max(i, j), want, "{i}..{j}");
        }
        for (t0, t1, w) in [(0.0, t as f64 / 1e9, 100u32), (3.0, 7.5, 37), (1.0, 1.001, 500), (0.0, 50.0, 9000)] {
            let r = reduce(&line, t0, t1, w).to_json();
            let w = w.min(MAX_COLUMNS) as usize;
            let vis: Vec<&(u64, f64)> =
                pts.iter().filter(|p| p.0 as f64 / 1e9 >= t0 && p.0 as f64 / 1e9 <= t1).collect();
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
                    want.push((
                        inside.iter().cloned().fold(f64::MAX, f64::min),
                        inside.iter().cloned().fold(f64::MIN, f64::max),
                    ));
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

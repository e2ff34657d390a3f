//! The time-sequence plot (the thesis, ch. 2.4; tcptrace `-S`), from a [`Tsg`] series.
//!
//! Drawing, as the thesis describes it and with tcptrace's marks and colours:
//!
//! - each packet of the plotted direction with payload: a vertical line from its first payload
//!   byte to the byte after its last, with an arrowhead at each end (`seg new`, foreground);
//!   retransmissions red with an `R` (`seg rexmit`), out-of-order segments pink with an `O`
//!   (`seg ooo`), zero-window probes orange with a `P` (`seg probe`); a packet without payload
//!   is two arrowheads facing each other at its sequence number, an X (class suffix `zero`); a
//!   segment with PSH has a diamond instead of the upper arrowhead, as tcptrace draws it, when
//!   segments are at least four pixel columns apart on average (zoomed in);
//! - from each returning ACK: the ack line (green) and the window line (ack + window, yellow)
//!   as over-and-up stair steps from the previous returning packet's point. An ACK that does not
//!   advance the ack line gets a down tick (`ack dup`); a window edge equal to the previous
//!   one an up tick (`win dup`); the others are `ack step` / `win step`;
//! - SACK blocks purple bars with horizontal ticks at both edges (`sack`; D-SACK `dsack`, `D`);
//! - notes (`note ...`): SYN (orange diamond), FIN (orange box), RST, URG, ECE/CWR, zero window
//!   (`Z`), third duplicate ACK (`3`).
//!
//! **Aggregation.** With [`TsgView::columns`] set (the SVG's plot width in pixels) and more
//! visible `new` segments than columns, the `new` segments (and zero-length packets) of each
//! pixel column become one `seg agg` mark from their lowest to their highest sequence number,
//! with their count and first frame. When returning packets (or plain SACK blocks) outnumber
//! the columns 4 to 1 (`AGGREGATE_FACTOR`), the ack and window lines step once per column and the
//! column's repeats become one tick (`ack dup agg`, `win dup agg`), SACK blocks one bar per
//! column (`sack agg`). Retransmissions, out-of-order segments, probes, D-SACKs and notes are
//! never aggregated, so none disappears when zoomed out.

use super::{Anchor, Axis, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, Way};
use crate::series::mipmap::{Mipmap, Summary, Take, gallop};
use crate::series::tsg::{DataSeg, NoteKind, SegKind, Tsg};

/// Which part of the series to draw and how.
#[derive(Clone, Debug, Default)]
pub struct TsgView {
    /// Start time, seconds since the connection's first packet (default 0).
    pub from_s: Option<f64>,
    /// End time (default: the connection's last packet).
    pub to_s: Option<f64>,
    /// Lowest relative sequence number shown (default: from the data).
    pub seq_from: Option<i64>,
    /// Highest relative sequence number shown.
    pub seq_to: Option<i64>,
    /// Pixel columns available: aggregate `new` segments beyond one per column (`None`: never).
    pub columns: Option<u32>,
    /// Title (default: endpoints, direction and connection id).
    pub title: Option<String>,
}

/// Returning packets (or SACK blocks) per pixel column beyond which they are drawn per column.
const AGGREGATE_FACTOR: usize = 4;

/// An aggregate of one pixel column: lowest start, highest end, count, first frame.
type Bucket = (i64, i64, u32, u64);

/// Block summary of data segments: the extent of what they occupy (`lo` = first sequence
/// number, `hi` = after the last, both bounds of each, for pruning by a sequence range), how
/// many there are, and the bucket of the `new` ones among them.
#[derive(Clone, Copy, Debug)]
struct SegSum {
    lo_min: i64,
    lo_max: i64,
    hi_min: i64,
    hi_max: i64,
    n: u32,
    new: Option<Bucket>,
}

fn merge_bucket(a: Option<Bucket>, b: Option<Bucket>) -> Option<Bucket> {
    match (a, b) {
        (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1), a.2 + b.2, a.3)),
        (a, b) => a.or(b),
    }
}

impl Summary for SegSum {
    fn merge(&self, l: &Self) -> Self {
        SegSum {
            lo_min: self.lo_min.min(l.lo_min),
            lo_max: self.lo_max.max(l.lo_max),
            hi_min: self.hi_min.min(l.hi_min),
            hi_max: self.hi_max.max(l.hi_max),
            n: self.n + l.n,
            new: merge_bucket(self.new, l.new),
        }
    }
}

/// Block summary of returning packets: the highest ack, and how many repeat the ack or the
/// window edge.
#[derive(Clone, Copy, Debug)]
struct AckSum {
    ack_max: i64,
    repeats: u32,
    edge_repeats: u32,
}

impl Summary for AckSum {
    fn merge(&self, l: &Self) -> Self {
        AckSum {
            ack_max: self.ack_max.max(l.ack_max),
            repeats: self.repeats + l.repeats,
            edge_repeats: self.edge_repeats + l.edge_repeats,
        }
    }
}

fn seg_sum(s: &DataSeg) -> SegSum {
    let (lo, hi) = (s.seq_off.min(s.payload_start()), s.end());
    let new = (s.kind == SegKind::New).then_some((s.payload_start(), s.payload_end(), 1, s.frame));
    SegSum { lo_min: lo, lo_max: lo, hi_min: hi, hi_max: hi, n: 1, new }
}

fn ack_sum(p: &crate::series::tsg::AckPoint) -> AckSum {
    AckSum { ack_max: p.ack_off, repeats: p.repeats as u32, edge_repeats: p.edge_repeats as u32 }
}

/// Summaries of a [`Tsg`] at every time scale, built once (O(n)) for a series that is drawn
/// many times (the viewer): with it, [`tsg_indexed`] draws a zoomed-out figure in
/// O(columns · log n) instead of visiting every visible packet, and draws the same marks.
#[derive(Clone, Debug)]
pub struct TsgIndex {
    /// Packets (and series) it was built for, to refuse another series.
    lens: (usize, usize),
    segs: Mipmap<SegSum>,
    acks: Mipmap<AckSum>,
    /// Positions of the segments that are not `new` (always drawn one by one; few).
    others: Vec<usize>,
}

impl TsgIndex {
    /// The summaries of `tsg`.
    pub fn new(tsg: &Tsg) -> TsgIndex {
        TsgIndex {
            lens: (tsg.segments.len(), tsg.acks.len()),
            segs: Mipmap::new(tsg.segments.len(), |k| seg_sum(&tsg.segments[k])),
            acks: Mipmap::new(tsg.acks.len(), |k| ack_sum(&tsg.acks[k])),
            others: (0..tsg.segments.len()).filter(|&k| tsg.segments[k].kind != SegKind::New).collect(),
        }
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn line(x1: f64, y1: f64, x2: f64, y2: f64, color: Color) -> Prim {
    Prim { shape: Shape::Line { x1, y1, x2, y2 }, color }
}

/// A SACK block: a purple bar with a serif at each end, as tcptrace draws it.
fn sack_bar(x: f64, from: i64, to: i64) -> Vec<Prim> {
    let (c, l, r) = (Color::Purple, from as f64, to as f64);
    vec![
        line(x, l, x, r, c),
        at(Shape::Tick { x, y: l, way: Way::Horizontal }, c),
        at(Shape::Tick { x, y: r, way: Way::Horizontal }, c),
    ]
}

fn at(shape: Shape, color: Color) -> Prim {
    Prim { shape, color }
}

fn text(x: f64, y: f64, anchor: Anchor, s: &str, color: Color) -> Prim {
    Prim { shape: Shape::Text { x, y, anchor, text: s.to_string() }, color }
}

/// Colour of a segment kind.
pub fn seg_color(kind: SegKind) -> Color {
    match kind {
        SegKind::New => Color::Fg,
        SegKind::Retransmission => Color::Red,
        SegKind::OutOfOrder => Color::Pink,
        SegKind::ZeroWindowProbe => Color::Orange,
    }
}

fn seg_class(kind: SegKind, zero: bool) -> &'static str {
    match (kind, zero) {
        (SegKind::New, false) => "seg new",
        (SegKind::New, true) => "seg new zero",
        (SegKind::Retransmission, false) => "seg rexmit",
        (SegKind::Retransmission, true) => "seg rexmit zero",
        (SegKind::OutOfOrder, false) => "seg ooo",
        (SegKind::OutOfOrder, true) => "seg ooo zero",
        (SegKind::ZeroWindowProbe, false) => "seg probe",
        (SegKind::ZeroWindowProbe, true) => "seg probe zero",
    }
}

/// The marks of one segment: a line with an arrowhead at each end, or an X.
fn segment_mark(s: &DataSeg, psh: bool) -> Mark {
    let x = secs(s.t_ns);
    let color = seg_color(s.kind);
    let (lo, hi) = (s.payload_start() as f64, s.payload_end() as f64);
    let mut prims = Vec::with_capacity(4);
    if s.len > 0 {
        prims.push(line(x, lo, x, hi, color));
    }
    prims.push(at(Shape::Arrow { x, y: lo, way: Way::Down }, color));
    // tcptrace tops a pushed segment with a diamond instead of the up arrow.
    if psh && s.flags.has(crate::decode::Flags::PSH) && s.len > 0 {
        prims.push(at(Shape::Diamond { x, y: hi }, color));
    } else {
        prims.push(at(Shape::Arrow { x, y: hi, way: Way::Up }, color));
    }
    match s.kind {
        SegKind::Retransmission => prims.push(text(x, hi, Anchor::Above, "R", color)),
        SegKind::OutOfOrder => prims.push(text(x, hi, Anchor::Above, "O", color)),
        SegKind::ZeroWindowProbe => prims.push(text(x, lo, Anchor::Below, "P", color)),
        SegKind::New => {}
    }
    Mark { class: seg_class(s.kind, s.len == 0), frame: Some(s.frame), count: 1, prims }
}

/// Builds the time-sequence figure of `tsg` as `view` asks.
pub fn tsg(tsg: &Tsg, view: &TsgView) -> Figure {
    tsg_indexed(tsg, None, view)
}

/// The part of the plane a view shows: times `[x0, x1]` (s since the connection's first packet)
/// and sequence numbers `[qlo, qhi]`, and the pixel columns it has.
struct Frame {
    x0: f64,
    x1: f64,
    qlo: i64,
    qhi: i64,
    columns: Option<u32>,
}

impl Frame {
    fn of(tsg: &Tsg, view: &TsgView) -> Frame {
        let x0 = view.from_s.unwrap_or(0.0);
        Frame {
            x0,
            x1: view.to_s.unwrap_or(secs(tsg.last_ns)).max(x0),
            qlo: view.seq_from.unwrap_or(i64::MIN),
            qhi: view.seq_to.unwrap_or(i64::MAX),
            columns: view.columns,
        }
    }

    fn in_x(&self, t_ns: u64) -> bool {
        let t = secs(t_ns);
        t >= self.x0 && t <= self.x1
    }

    fn in_y(&self, lo: i64, hi: i64) -> bool {
        hi >= self.qlo && lo <= self.qhi
    }

    fn seg_visible(&self, s: &DataSeg) -> bool {
        self.in_x(s.t_ns) && self.in_y(s.payload_start().min(s.seq_off), s.end())
    }

    /// The pixel column (of `cols`) of time `t`.
    fn column(&self, t: f64, cols: usize) -> usize {
        ((((t - self.x0) / (self.x1 - self.x0).max(f64::MIN_POSITIVE)) * cols as f64) as usize).min(cols - 1)
    }

    /// The time at the middle of pixel column `c` (of `cols`).
    fn column_x(&self, c: usize, cols: usize) -> f64 {
        self.x0 + (c as f64 + 0.5) / cols as f64 * (self.x1 - self.x0)
    }

    /// The pixel columns when more than `AGGREGATE_FACTOR` items share each.
    fn crowded(&self, items: usize) -> Option<usize> {
        self.columns.filter(|&c| c > 0 && items > AGGREGATE_FACTOR * c as usize).map(|c| c as usize)
    }
}

/// What was drawn spans, for the automatic y range: the data and the ack line (`lo`..`hi`), and
/// the highest window edge (`win_hi`). The window line does not set the range: an advertised
/// window far above the data left the data in the lower 40 % of the plot (issue 17); the line
/// leaves the top instead, marked (`win above`).
struct Extent {
    lo: i64,
    hi: i64,
    win_hi: i64,
}

impl Extent {
    fn add(&mut self, lo: i64, hi: i64) {
        self.lo = self.lo.min(lo);
        self.hi = self.hi.max(hi);
    }
}

/// [`tsg`], using `index` (built by [`TsgIndex::new`] from this `tsg`) to aggregate without
/// visiting every packet: the same figure, faster when zoomed out.
pub fn tsg_indexed(tsg: &Tsg, index: Option<&TsgIndex>, view: &TsgView) -> Figure {
    let index = index.filter(|ix| ix.lens == (tsg.segments.len(), tsg.acks.len()));
    let f = Frame::of(tsg, view);
    let mut ext = Extent { lo: i64::MAX, hi: i64::MIN, win_hi: i64::MIN };
    let mut remarks = Vec::new();
    let (mut marks, n_acks, acks_crowded) = returning_marks(tsg, index, &f, &mut ext);
    let (n_sack, sacks_crowded) = sack_marks(tsg, &f, &mut marks);
    if acks_crowded || sacks_crowded {
        remarks.push(format!(
            "{n_acks} ACKs and {n_sack} SACK blocks, too many to draw one by one: each pixel column shows their range"
        ));
    }
    segment_marks(tsg, index, &f, &mut ext, &mut marks, &mut remarks);
    note_marks(tsg, &f, &mut marks);

    // --- Axes ---
    if ext.lo > ext.hi {
        (ext.lo, ext.hi) = (0, 1);
    }
    let (y0, y1) = match (view.seq_from, view.seq_to) {
        (Some(a), Some(b)) => (a as f64, b as f64),
        (a, b) => {
            let pad = ((ext.hi - ext.lo) as f64 * 0.03).max(1.0);
            (a.map_or(ext.lo as f64 - pad, |v| v as f64), b.map_or(ext.hi as f64 + pad, |v| v as f64))
        }
    };
    if view.seq_to.is_none() && ext.win_hi as f64 > y1 {
        window_above(&mut marks, &mut remarks, f.x0, y1, ext.win_hi);
    }
    let x = Axis::new("time (s since the connection's first packet)", f.x0, f.x1, 8);
    let y = Axis::new("relative sequence number (bytes, first payload byte = 0)", y0, y1, 8);

    let title = view.title.clone().unwrap_or_else(|| {
        let (from, to) = match tsg.dir {
            crate::analysis::Dir::AtoB => (tsg.info.a, tsg.info.b),
            crate::analysis::Dir::BtoA => (tsg.info.b, tsg.info.a),
        };
        format!("connection {} {}: {from} → {to} (time-sequence)", tsg.conn + 1, tsg.dir.name())
    });
    let legend = legend(&marks);
    Figure { title, x, y, marks, legend, remarks }
}

/// The ack line and the window line from the returning packets in view, window marks first
/// (drawn under the ack line): stair steps from the previous point, the state at the left edge
/// from the last point before it; one step per pixel column when they crowd the columns. Also
/// gives how many returning packets are in view and whether they were drawn per column.
fn returning_marks(tsg: &Tsg, index: Option<&TsgIndex>, f: &Frame, ext: &mut Extent) -> (Vec<Mark>, usize, bool) {
    let first_vis = tsg.acks.partition_point(|p| secs(p.t_ns) < f.x0);
    // (x, highest ack, window edge) of the previous point.
    let mut prev = first_vis.checked_sub(1).map(|i| {
        let p = &tsg.acks[i];
        // The highest ack so far is that of the last point that advanced the line (each one is
        // above all before it), or the first point's if none did: a short walk back, not a scan.
        let max_ack = tsg.acks[..=i].iter().rev().find(|q| q.advances).unwrap_or(&tsg.acks[0]).ack_off;
        (f.x0, max_ack, p.edge())
    });
    let mut win_marks = Vec::new();
    let mut ack_marks = Vec::new();
    let visible = &tsg.acks[first_vis..first_vis + tsg.acks[first_vis..].partition_point(|p| secs(p.t_ns) <= f.x1)];
    let ack_cols = f.crowded(visible.len());
    if let Some(cols) = ack_cols {
        // One stair step per pixel column for each line, ending at the column's last value, and
        // one tick per column standing for all the repeats in it.
        let mut i = 0;
        while i < visible.len() {
            let c = f.column(secs(visible[i].t_ns), cols);
            let j = i + gallop(&visible[i..], |p| f.column(secs(p.t_ns), cols) == c);
            let col = &visible[i..j];
            let x = f.column_x(c, cols);
            let last = &col[col.len() - 1];
            let (ack, repeats, edge_repeats) = match index {
                // The column's summary from the blocks it spans.
                Some(ix) => {
                    let a = ix
                        .acks
                        .fold(first_vis + i, first_vis + j, |k| ack_sum(&tsg.acks[k]))
                        .expect("a column is never empty");
                    (a.ack_max, a.repeats, a.edge_repeats)
                }
                None => (
                    col.iter().map(|p| p.ack_off).max().unwrap_or(last.ack_off),
                    col.iter().filter(|p| p.repeats).count() as u32,
                    col.iter().filter(|p| p.edge_repeats).count() as u32,
                ),
            };
            let edge = last.edge();
            let (px, pack, pedge) = prev.unwrap_or((x, ack, edge));
            let ack = pack.max(ack);
            if f.in_y(pack.min(ack), ack) {
                ext.add(pack, ack);
                let g = Color::Green;
                let prims = vec![line(px, pack as f64, x, pack as f64, g), line(x, pack as f64, x, ack as f64, g)];
                ack_marks.push(Mark { class: "ack step agg", frame: Some(col[0].frame), count: (j - i) as u32, prims });
                if repeats > 0 {
                    let prims = vec![at(Shape::Tick { x, y: ack as f64, way: Way::Down }, g)];
                    ack_marks.push(Mark { class: "ack dup agg", frame: Some(col[0].frame), count: repeats, prims });
                }
            }
            if f.in_y(pedge.min(edge), pedge.max(edge)) {
                ext.win_hi = ext.win_hi.max(pedge.max(edge));
                let y = Color::Yellow;
                let prims = vec![line(px, pedge as f64, x, pedge as f64, y), line(x, pedge as f64, x, edge as f64, y)];
                win_marks.push(Mark { class: "win step agg", frame: Some(col[0].frame), count: (j - i) as u32, prims });
                if edge_repeats > 0 {
                    let prims = vec![at(Shape::Tick { x, y: edge as f64, way: Way::Up }, y)];
                    win_marks.push(Mark {
                        class: "win dup agg",
                        frame: Some(col[0].frame),
                        count: edge_repeats,
                        prims,
                    });
                }
            }
            prev = Some((x, ack, edge));
            i = j;
        }
    }
    for p in visible.iter().filter(|_| ack_cols.is_none()) {
        let x = secs(p.t_ns);
        let edge = p.edge();
        let Some((px, pack, pedge)) = prev else {
            // The first ACK of the connection starts both lines.
            ext.add(p.ack_off, p.ack_off);
            prev = Some((x, p.ack_off, edge));
            continue;
        };
        let ack = pack.max(p.ack_off);
        if f.in_y(pack.min(ack), ack) || f.in_y(p.ack_off, p.ack_off) {
            ext.add(pack.min(p.ack_off), ack);
            let g = Color::Green;
            let mut prims = vec![line(px, pack as f64, x, pack as f64, g)];
            let class = if p.advances {
                prims.push(line(x, pack as f64, x, ack as f64, g));
                "ack step"
            } else {
                prims.push(at(Shape::Tick { x, y: p.ack_off as f64, way: Way::Down }, g));
                "ack dup"
            };
            ack_marks.push(Mark { class, frame: Some(p.frame), count: 1, prims });
        }
        if f.in_y(pedge.min(edge), pedge.max(edge)) {
            ext.win_hi = ext.win_hi.max(pedge.max(edge));
            let c = Color::Yellow;
            let mut prims = vec![line(px, pedge as f64, x, pedge as f64, c)];
            let class = if p.edge_repeats {
                prims.push(at(Shape::Tick { x, y: edge as f64, way: Way::Up }, c));
                "win dup"
            } else {
                prims.push(line(x, pedge as f64, x, edge as f64, c));
                "win step"
            };
            win_marks.push(Mark { class, frame: Some(p.frame), count: 1, prims });
        }
        prev = Some((x, ack, edge));
    }
    win_marks.append(&mut ack_marks);
    (win_marks, visible.len(), ack_cols.is_some())
}

/// SACK blocks in view: D-SACKs always one by one, plain ones per pixel column when they crowd
/// the columns. Gives how many plain blocks are in view and whether they were drawn per column.
fn sack_marks(tsg: &Tsg, f: &Frame, marks: &mut Vec<Mark>) -> (usize, bool) {
    let sacks: Vec<_> = tsg.sacks.iter().filter(|b| f.in_x(b.t_ns) && f.in_y(b.from, b.to)).collect();
    let n_sack = sacks.iter().filter(|b| !b.dsack).count();
    let sack_cols = f.crowded(n_sack);
    let mut sack_buckets: Vec<Option<Bucket>> = vec![None; sack_cols.unwrap_or(0)];
    for b in sacks {
        let c = Color::Purple;
        if let (Some(cols), false) = (sack_cols, b.dsack) {
            let k = f.column(secs(b.t_ns), cols);
            let e = sack_buckets[k].get_or_insert((b.from, b.to, 0, b.frame));
            e.0 = e.0.min(b.from);
            e.1 = e.1.max(b.to);
            e.2 += 1;
            continue;
        }
        let x = secs(b.t_ns);
        let mut prims = sack_bar(x, b.from, b.to);
        if b.dsack {
            prims.push(text(x, b.to as f64, Anchor::Right, "D", c));
        }
        marks.push(Mark { class: if b.dsack { "dsack" } else { "sack" }, frame: Some(b.frame), count: 1, prims });
    }
    let n_cols = sack_buckets.len();
    for (k, e) in sack_buckets.into_iter().enumerate() {
        let Some((lo, hi, n, frame)) = e else { continue };
        marks.push(Mark {
            class: "sack agg",
            frame: Some(frame),
            count: n,
            prims: sack_bar(f.column_x(k, n_cols), lo, hi),
        });
    }
    (n_sack, sack_cols.is_some())
}

/// The data segments in view, aggregated per pixel column when the `new` ones outnumber the
/// columns; the others (retransmissions, out-of-order, probes) always one by one, on top.
fn segment_marks(
    tsg: &Tsg,
    index: Option<&TsgIndex>,
    f: &Frame,
    ext: &mut Extent,
    marks: &mut Vec<Mark>,
    remarks: &mut Vec<String>,
) {
    // Packets are in trace order, normally also time order: then the visible ones are found by
    // binary search (a zoomed-in view of a huge connection costs what it shows), else by a scan.
    let all = &tsg.segments[..];
    let (base, candidates) = if tsg.segments_time_ordered {
        let lo = all.partition_point(|s| secs(s.t_ns) < f.x0);
        (lo, &all[lo..lo + all[lo..].partition_point(|s| secs(s.t_ns) <= f.x1)])
    } else {
        (0, all)
    };
    // One pass over the visible segments (a zoomed-out view of a big connection has millions):
    // the extent, the count of new segments and their per-column buckets (used only if they
    // outnumber the columns), and the others, which are always drawn one by one.
    let cols = f.columns.filter(|&c| c > 0).map(|c| c as usize);
    let mut buckets: Vec<Option<Bucket>> = vec![None; cols.unwrap_or(0)];
    let (mut n_vis, mut n_plain) = (0usize, 0usize);
    let mut others: Vec<&DataSeg> = Vec::new();
    // With the index (and time order): per pixel column, the blocks of segments wholly inside
    // the sequence range count by their summaries, only those straddling its edges one by one.
    let indexed = index.filter(|_| tsg.segments_time_ordered).zip(cols);
    let take = |b: &SegSum| {
        if b.hi_max < f.qlo || b.lo_min > f.qhi {
            Take::Nothing
        } else if b.hi_min >= f.qlo && b.lo_max <= f.qhi {
            Take::All
        } else {
            Take::Look
        }
    };
    if let Some((ix, cols)) = indexed {
        let mut i = 0;
        while i < candidates.len() {
            let c = f.column(secs(candidates[i].t_ns), cols);
            let j = i + gallop(&candidates[i..], |s| f.column(secs(s.t_ns), cols) == c);
            let acc = std::cell::Cell::new(None::<SegSum>);
            let add = |b: &SegSum| acc.set(Some(acc.get().map_or(*b, |a| a.merge(b))));
            ix.segs.visit(base + i, base + j, &take, &mut |b| add(b), &mut |k| {
                if f.seg_visible(&all[k]) {
                    add(&seg_sum(&all[k]));
                }
            });
            if let Some(b) = acc.get() {
                n_vis += b.n as usize;
                ext.add(b.lo_min, b.hi_max);
                if let Some(nb) = b.new {
                    n_plain += nb.2 as usize;
                    buckets[c] = Some(nb);
                }
            }
            i = j;
        }
        let (a, b) =
            (ix.others.partition_point(|&k| k < base), ix.others.partition_point(|&k| k < base + candidates.len()));
        others.extend(ix.others[a..b].iter().map(|&k| &all[k]).filter(|s| f.seg_visible(s)));
    }
    for s in candidates.iter().filter(|s| f.seg_visible(s)).filter(|_| indexed.is_none()) {
        n_vis += 1;
        ext.add(s.seq_off.min(s.payload_start()), s.end());
        if s.kind != SegKind::New {
            others.push(s);
            continue;
        }
        n_plain += 1;
        if let Some(cols) = cols {
            let b =
                buckets[f.column(secs(s.t_ns), cols)].get_or_insert((s.payload_start(), s.payload_end(), 0, s.frame));
            b.0 = b.0.min(s.payload_start());
            b.1 = b.1.max(s.payload_end());
            b.2 += 1;
        }
    }
    // PSH diamonds only where segments are at least 4 columns apart on average: on a dense
    // plot (bulk senders set PSH on most segments) they would bury the segments.
    let psh = f.columns.is_none_or(|c| n_vis * 4 <= c as usize);
    match cols {
        Some(cols) if n_plain > cols => {
            for (c, b) in buckets.iter().enumerate() {
                let Some((lo, hi, n, frame)) = *b else { continue };
                let x = f.column_x(c, cols);
                let (lo, hi) = (lo as f64, hi as f64);
                let prims = vec![
                    line(x, lo, x, hi, Color::Fg),
                    at(Shape::Arrow { x, y: lo, way: Way::Down }, Color::Fg),
                    at(Shape::Arrow { x, y: hi, way: Way::Up }, Color::Fg),
                ];
                marks.push(Mark { class: "seg agg", frame: Some(frame), count: n, prims });
            }
            remarks.push(format!(
                "{n_plain} new segments, too many to draw one by one: each of the {cols} pixel columns shows \
                 the range its segments cover; events drawn singly"
            ));
        }
        _ => {
            // New data first, so retransmissions are drawn on top.
            match indexed {
                // Few are visible: find them, skipping the blocks outside the sequence range.
                Some((ix, _)) => {
                    let look = |b: &SegSum| if take(b) == Take::Nothing { Take::Nothing } else { Take::Look };
                    ix.segs.visit(base, base + candidates.len(), &look, &mut |_| {}, &mut |k| {
                        let s = &all[k];
                        if s.kind == SegKind::New && f.seg_visible(s) {
                            marks.push(segment_mark(s, psh));
                        }
                    });
                }
                None => {
                    for s in candidates.iter().filter(|s| f.seg_visible(s)).filter(|s| s.kind == SegKind::New) {
                        marks.push(segment_mark(s, psh));
                    }
                }
            }
        }
    }
    for s in others {
        marks.push(segment_mark(s, psh));
    }
}

/// The notes in view: SYN, FIN, RST, URG, ECN, zero window, third duplicate ACK.
fn note_marks(tsg: &Tsg, f: &Frame, marks: &mut Vec<Mark>) {
    for n in tsg.notes.iter().filter(|n| f.in_x(n.t_ns) && f.in_y(n.y, n.y)) {
        let (x, y) = (secs(n.t_ns), n.y as f64);
        let (class, color, mut prims) = match n.kind {
            NoteKind::Syn { .. } => ("note syn", Color::Orange, vec![at(Shape::Diamond { x, y }, Color::Orange)]),
            NoteKind::Fin { .. } => ("note fin", Color::Orange, vec![at(Shape::Box { x, y }, Color::Orange)]),
            NoteKind::RstOut | NoteKind::RstIn => ("note rst", Color::Magenta, vec![]),
            NoteKind::Urg => ("note urg", Color::Red, vec![]),
            NoteKind::Ece | NoteKind::Cwr => {
                ("note ecn", Color::Yellow, vec![at(Shape::Diamond { x, y }, Color::Yellow)])
            }
            NoteKind::ZeroWindow => ("note zwin", Color::Magenta, vec![]),
            NoteKind::TripleDupAck => ("note dup3", Color::Green, vec![]),
        };
        let anchor = match n.kind {
            NoteKind::TripleDupAck => Anchor::Below,
            NoteKind::Fin { .. } | NoteKind::RstIn => Anchor::Right,
            _ => Anchor::Above,
        };
        prims.push(text(x, y, anchor, n.kind.label(), color));
        marks.push(Mark { class, frame: Some(n.frame), count: 1, prims });
    }
}

/// Where the window line first goes above the top `y1` of the plot (from `x0` on): an arrow and
/// "window ↑" there, and a remark with the highest edge `win_hi`.
fn window_above(marks: &mut Vec<Mark>, remarks: &mut Vec<String>, x0: f64, y1: f64, win_hi: i64) {
    let above = |ya: f64, yb: f64| ya.max(yb) > y1;
    let first = marks
        .iter()
        .filter(|m| m.class.starts_with("win"))
        .flat_map(|m| &m.prims)
        .filter_map(|p| match p.shape {
            Shape::Line { x1: xa, y1: ya, x2: xb, y2: yb } if above(ya, yb) => {
                Some(if ya > y1 { xa.min(xb) } else { xb.max(xa) })
            }
            Shape::Tick { x, y, .. } if y > y1 => Some(x),
            _ => None,
        })
        .fold(f64::INFINITY, f64::min)
        .max(x0);
    if first.is_finite() {
        let c = Color::Yellow;
        let prims =
            vec![at(Shape::Arrow { x: first, y: y1, way: Way::Up }, c), text(first, y1, Anchor::Below, "window ↑", c)];
        marks.push(Mark { class: "win above", frame: None, count: 1, prims });
        remarks.push(format!(
            "the window line leaves the top from {first:.3} s (up to {win_hi} bytes); the y scale follows the data"
        ));
    }
}

/// Legend entries for the classes present (the basic ones always).
fn legend(marks: &[Mark]) -> Vec<LegendEntry> {
    let has = |p: &str| marks.iter().any(|m| m.class.starts_with(p));
    let mut v = Vec::new();
    let mut add = |color, sample, text: &str| v.push(LegendEntry { color, sample, text: text.to_string() });
    add(Color::Fg, Sample::Segment, "data segment (seq .. seq+len)");
    if marks
        .iter()
        .any(|m| m.class.starts_with("seg") && m.prims.iter().any(|p| matches!(p.shape, Shape::Diamond { .. })))
    {
        add(Color::Fg, Sample::Letter("◇"), "PSH set (diamond on top)");
    }
    if has("seg rexmit") {
        add(Color::Red, Sample::Segment, "retransmission (R)");
    }
    if has("seg ooo") {
        add(Color::Pink, Sample::Segment, "out of order (O)");
    }
    if has("seg probe") {
        add(Color::Orange, Sample::Segment, "zero-window probe (P)");
    }
    add(Color::Green, Sample::Step, "ack line");
    if has("ack dup") {
        add(Color::Green, Sample::DownTick, "ack repeated");
    }
    add(Color::Yellow, Sample::Step, "window line (ack + window)");
    if has("win dup") {
        add(Color::Yellow, Sample::UpTick, "window edge repeated");
    }
    if has("win above") {
        add(Color::Yellow, Sample::Letter("↑"), "window line above the top");
    }
    if has("sack") || has("dsack") {
        add(Color::Purple, Sample::Bar, "SACK block (D: D-SACK)");
    }
    if has("note syn") || has("note fin") {
        add(Color::Orange, Sample::Letter("SYN"), "SYN / FIN");
    }
    if has("note rst") {
        add(Color::Magenta, Sample::Letter("RST"), "reset");
    }
    if has("note zwin") {
        add(Color::Magenta, Sample::Letter("Z"), "zero window");
    }
    if has("note dup3") {
        add(Color::Green, Sample::Letter("3"), "third duplicate ACK");
    }
    if has("note ecn") {
        add(Color::Yellow, Sample::Letter("ECE"), "ECN echo / CWR");
    }
    if has("note urg") {
        add(Color::Red, Sample::Letter("U"), "urgent");
    }
    if has("seg agg") {
        add(Color::Fg, Sample::Segment, "new segments of one pixel column");
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Dir, Settings};

    /// The binary search for the visible segments and the walk back for the highest ack give
    /// the figure the plain scans give (the same series, marked as not time-ordered, takes the
    /// scan), at every zoom.
    #[test]
    fn fast_paths_draw_what_the_scans_draw() {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap"));
        let (fast, _) =
            crate::series::from_file::<crate::series::tsg::TsgSink>(path, 0, Dir::AtoB, Settings::default()).unwrap();
        let fast = fast.unwrap();
        assert!(fast.segments_time_ordered);
        let mut slow = fast.clone();
        slow.segments_time_ordered = false;
        let key = |f: &Figure| {
            f.marks.iter().map(|m| format!("{} {:?} {} {:?}", m.class, m.frame, m.count, m.prims)).collect::<Vec<_>>()
        };
        let index = TsgIndex::new(&fast);
        for (from, to, columns) in [
            (None, None, None),
            (Some(0.08), Some(0.09), Some(800)),
            (Some(0.5), Some(1.2), Some(60)),
            (Some(1.0), None, Some(3000)),
            (None, None, Some(7)),
            (None, None, Some(100)),
        ] {
            let view = TsgView { from_s: from, to_s: to, columns, ..Default::default() };
            let (a, b) = (tsg(&fast, &view), tsg(&slow, &view));
            assert_eq!(key(&a), key(&b), "{from:?}..{to:?}");
            // The index draws the same marks, axes and remarks.
            let c = tsg_indexed(&fast, Some(&index), &view);
            assert_eq!(key(&c), key(&a), "indexed {from:?}..{to:?}");
            assert_eq!((c.y.min, c.y.max, &c.remarks), (a.y.min, a.y.max, &a.remarks));
            // The slow definition of the highest ack before the left edge.
            if let Some(x0) = from {
                let before: Vec<_> = fast.acks.iter().filter(|p| secs(p.t_ns) < x0).collect();
                let want = before.iter().map(|p| p.ack_off).max();
                let walk =
                    before.iter().rev().find(|q| q.advances).map(|q| q.ack_off).or(before.first().map(|p| p.ack_off));
                assert_eq!(walk, want);
            }
        }
    }

    /// A series of 100 copies of loss-snd's, one after the other in time and sequence space
    /// (73,700 segments, 47 retransmissions per copy): the figure drawn with the index equals
    /// the scan's at every zoom, with and without a sequence range, and the aggregated figure
    /// keeps every retransmission and bounds each column as the per-packet definition does.
    #[test]
    fn indexed_figure_equals_the_scan() {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap"));
        let (one, _) =
            crate::series::from_file::<crate::series::tsg::TsgSink>(path, 0, Dir::AtoB, Settings::default()).unwrap();
        let one = one.unwrap();
        let (dt, ds) = (one.last_ns + 1_000_000, one.segments.iter().map(|s| s.end()).max().unwrap() + 1000);
        let mut big = one.clone();
        for k in 1..100u64 {
            let (t, q, f) = (k * dt, k as i64 * ds, k * 100_000);
            big.segments.extend(one.segments.iter().map(|s| DataSeg {
                t_ns: s.t_ns + t,
                seq_off: s.seq_off + q,
                frame: s.frame + f,
                ..*s
            }));
            big.acks.extend(one.acks.iter().map(|p| crate::series::tsg::AckPoint {
                t_ns: p.t_ns + t,
                ack_off: p.ack_off + q,
                frame: p.frame + f,
                ..*p
            }));
        }
        big.last_ns = 100 * dt;
        assert!(big.segments.is_sorted_by_key(|s| s.t_ns) && big.segments_time_ordered);
        let index = TsgIndex::new(&big);
        let key = |f: &Figure| {
            f.marks.iter().map(|m| format!("{} {:?} {} {:?}", m.class, m.frame, m.count, m.prims)).collect::<Vec<_>>()
        };
        let end = secs(big.last_ns);
        let q = ds * 37;
        let views = [
            (None, None, None, None, 1200),
            (None, None, Some(q), Some(q + ds / 3), 1200),
            (Some(end * 0.25), Some(end * 0.75), None, None, 1200),
            (Some(end * 0.3), Some(end * 0.31), None, None, 500),
            (Some(end * 0.3), Some(end * 0.30001), None, None, 1200),
            (Some(end * 0.1), Some(end * 0.9), Some(q - 5000), Some(q + 20_000), 800),
            (None, None, None, None, 3),
        ];
        let mut aggregated = 0;
        for (from_s, to_s, seq_from, seq_to, w) in views {
            let view = TsgView { from_s, to_s, seq_from, seq_to, columns: Some(w), ..Default::default() };
            let (a, b) = (tsg(&big, &view), tsg_indexed(&big, Some(&index), &view));
            assert_eq!(key(&b), key(&a), "{view:?}");
            assert_eq!((b.y.min, b.y.max, &b.remarks), (a.y.min, a.y.max, &a.remarks), "{view:?}");
            // Every visible retransmission is its own mark.
            let (x0, x1) = (from_s.unwrap_or(0.0), to_s.unwrap_or(end));
            let (lo, hi) = (seq_from.unwrap_or(i64::MIN), seq_to.unwrap_or(i64::MAX));
            let shown = |s: &DataSeg| secs(s.t_ns) >= x0 && secs(s.t_ns) <= x1 && s.end() >= lo && s.seq_off <= hi;
            let rexmits: Vec<u64> = big
                .segments
                .iter()
                .filter(|s| s.kind == SegKind::Retransmission && shown(s))
                .map(|s| s.frame)
                .collect();
            let drawn: Vec<u64> =
                b.marks.iter().filter(|m| m.class.starts_with("seg rexmit")).filter_map(|m| m.frame).collect();
            assert_eq!(drawn, rexmits, "{view:?}");
            // Each aggregate column spans the lowest to the highest byte of its new segments:
            // the definition, packet by packet.
            let mut want = std::collections::BTreeMap::new();
            for s in big.segments.iter().filter(|s| s.kind == SegKind::New && shown(s)) {
                let c = ((((secs(s.t_ns) - x0) / (x1 - x0)) * w as f64) as usize).min(w as usize - 1);
                let e = want.entry(c).or_insert((i64::MAX, i64::MIN, 0u32, s.frame));
                *e = (e.0.min(s.payload_start()), e.1.max(s.payload_end()), e.2 + 1, e.3);
            }
            let aggs: Vec<_> = b.marks.iter().filter(|m| m.class == "seg agg").collect();
            if !aggs.is_empty() {
                aggregated += 1;
                let got: Vec<_> = aggs
                    .iter()
                    .map(|m| match m.prims[0].shape {
                        Shape::Line { y1, y2, .. } => (y1 as i64, y2 as i64, m.count, m.frame.unwrap()),
                        _ => panic!("an aggregate without its line"),
                    })
                    .collect();
                assert_eq!(got, want.into_values().collect::<Vec<_>>(), "{view:?}");
            }
        }
        assert!(aggregated >= 3, "only {aggregated} views aggregated");
    }
}

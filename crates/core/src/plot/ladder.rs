//! The ladder diagram (timing chart, seed 001 figure 1) and the state diagram (its figure 2) of
//! one connection, from a [`crate::series::ladder::Ladder`].
//!
//! Ladder: endpoint a's time line at x = 0, b's at x = 1, time going down (y is minus the
//! time, labelled with the time). A segment captured at `t` is an arrow from its sender's line
//! at `t − d(sender)` to its receiver's at `t + d(receiver)`, `d` each endpoint's distance from
//! the capture point ([`crate::series::states::States::transit_s`]): every arrow crosses the
//! capture point's line (x = d(a) / (d(a) + d(b))) at its capture time. With a distance
//! unknown it is 0; with both unknown the arrows are level. Each arrow is labelled with the
//! segment's flags, sequence range, ack, window, length and options when there is a text line's
//! room; the states are written beside each line where they change.
//!
//! State diagram: the states of RFC 9293's figure 5 in its layout, every transition an endpoint
//! took drawn as an arrow in its colour (a red, b blue, as seed 001), numbered in its order and
//! labelled with the segment that caused it.

use super::{Axis, AxisStyle, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape};
use crate::analysis::Dir;
use crate::series::ladder::{Ladder, LadderSeg};
use crate::series::states::{Side, States, TcpState};

/// Most arrows drawn: a ladder is read arrow by arrow; more is a time-sequence plot's job.
pub const MAX_ARROWS: usize = 2000;

/// What part of the ladder to draw, and how big the plot area is.
#[derive(Clone, Debug)]
pub struct LadderView {
    /// Start, s since the connection's first packet.
    pub from_s: Option<f64>,
    /// End.
    pub to_s: Option<f64>,
    /// Title (`None`: the connection and its endpoints).
    pub title: Option<String>,
    /// The plot area in pixels (width, height): arrowheads and the room for labels are
    /// measured in pixels.
    pub area_px: (f64, f64),
}

/// Pixels per data unit on each axis.
struct Scale {
    ux: f64,
    uy: f64,
}

impl Scale {
    /// An arrowhead (two short lines) at `(x2, y2)` on the line from `(x1, y1)`, 8 px long.
    fn head(&self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), color: Color) -> [Prim; 2] {
        let (dx, dy) = ((x2 - x1) * self.ux, (y2 - y1) * self.uy);
        let n = (dx * dx + dy * dy).sqrt().max(1e-9);
        let (ex, ey) = (dx / n, dy / n);
        let (len, half) = (8.0, 3.5);
        let wing = |s: f64| {
            let px = -ex * len + s * -ey * half;
            let py = -ey * len + s * ex * half;
            Prim { shape: Shape::Line { x1: x2, y1: y2, x2: x2 + px / self.ux, y2: y2 + py / self.uy }, color }
        };
        [wing(1.0), wing(-1.0)]
    }
}

fn side_color(side: Side) -> Color {
    match side {
        Side::A => Color::Red,
        Side::B => Color::Blue,
    }
}

fn seg_color(s: &LadderSeg) -> (Color, &'static str) {
    if s.flags.rst() {
        (Color::Magenta, "seg rst")
    } else if s.rexmit {
        (Color::Red, "seg rexmit")
    } else if s.flags.syn() || s.flags.fin() {
        (Color::Orange, "seg synfin")
    } else if s.len > 0 {
        (Color::Fg, "seg data")
    } else {
        (Color::Green, "seg ack")
    }
}

/// The ladders' legend: the segments' colours (as [`seg_color`]), then each side's state
/// colour with `states` (a's, b's) as its text.
fn legend(states: [String; 2]) -> Vec<LegendEntry> {
    let [a, b] = states;
    vec![
        LegendEntry { color: Color::Fg, sample: Sample::Line, text: "data".into() },
        LegendEntry { color: Color::Green, sample: Sample::Line, text: "ACK, no data".into() },
        LegendEntry { color: Color::Orange, sample: Sample::Line, text: "SYN or FIN".into() },
        LegendEntry { color: Color::Magenta, sample: Sample::Line, text: "RST".into() },
        LegendEntry { color: Color::Red, sample: Sample::Line, text: "retransmission".into() },
        LegendEntry { color: side_color(Side::A), sample: Sample::Letter("a"), text: a },
        LegendEntry { color: side_color(Side::B), sample: Sample::Letter("b"), text: b },
    ]
}

/// The ladder figure.
pub fn ladder(l: &Ladder, v: &LadderView) -> Figure {
    let from = v.from_s.unwrap_or(0.0).max(0.0);
    let last = l.last_s.max(l.states.transitions.iter().map(|t| t.at_s).fold(0.0, f64::max));
    let to = v.to_s.unwrap_or(last).max(from + 1e-6);
    let d = [l.states.transit_s[0].unwrap_or(0.0), l.states.transit_s[1].unwrap_or(0.0)];
    // Room for the arrows' ends (up to the larger distance before and after the window), and
    // a little more.
    let reach = d[0].max(d[1]);
    let pad = (to - from) * 0.03 + reach;
    let time = Axis::new("time (s)", from, to, 10);
    let y = Axis {
        label: "time since the connection's first packet (s)".into(),
        min: -(to + pad),
        max: -(from - pad),
        ticks: time.ticks.iter().map(|(t, s)| (-t, s.clone())).collect(),
        style: AxisStyle::Linear,
        name: "time (s)".into(),
    };
    let x = Axis {
        label: String::new(),
        min: -0.75,
        max: 1.75,
        ticks: vec![(0.0, format!("a {}", l.info.a)), (1.0, format!("b {}", l.info.b))],
        style: AxisStyle::Linear,
        name: String::new(),
    };
    let sc = Scale { ux: v.area_px.0 / (x.max - x.min), uy: v.area_px.1 / (y.max - y.min) };
    let mut marks = Vec::new();
    let line = |x1: f64, y1: f64, x2: f64, y2: f64, color: Color| Prim { shape: Shape::Line { x1, y1, x2, y2 }, color };
    let text = |x: f64, y: f64, anchor, text: String, color| Prim { shape: Shape::Text { x, y, anchor, text }, color };
    for xs in [0.0, 1.0] {
        marks.push(Mark {
            class: "timeline",
            frame: None,
            count: 1,
            prims: vec![line(xs, -(from - pad), xs, -(to + pad), Color::Fg)],
        });
    }
    let mut remarks = Vec::new();
    if d[0] + d[1] > 0.0 {
        let xc = d[0] / (d[0] + d[1]);
        marks.push(Mark {
            class: "capture",
            frame: None,
            count: 1,
            prims: vec![
                line(xc, -(from - pad), xc, -(to + pad), Color::Gray),
                text(xc, -(to + pad), super::Anchor::Above, "capture point".into(), Color::Gray),
            ],
        });
    }
    let dist = |v: Option<f64>| v.map_or("unknown (0)".to_string(), |v| format!("{:.3} ms", v * 1e3));
    remarks.push(format!(
        "arrows slope by each endpoint's distance from the capture point (half its smallest half-loop): a {}, b {}",
        dist(l.states.transit_s[0]),
        dist(l.states.transit_s[1])
    ));
    // Arrows, labelled where there is a line of text's room since the last label.
    let shown: Vec<&LadderSeg> = l.segs.iter().filter(|s| s.t >= from && s.t <= to).collect();
    let total = shown.len();
    let mut last_label_px = f64::NEG_INFINITY;
    let mut unlabelled = 0;
    for s in shown.iter().take(MAX_ARROWS) {
        let (xa, xb, ta, tb) = match s.dir {
            Dir::AtoB => (0.0, 1.0, s.t - d[0], s.t + d[1]),
            Dir::BtoA => (1.0, 0.0, s.t - d[1], s.t + d[0]),
        };
        let (p1, p2) = ((xa, -ta), (xb, -tb));
        let (color, class) = seg_color(s);
        let mut prims = vec![line(p1.0, p1.1, p2.0, p2.1, color)];
        prims.extend(sc.head(p1, p2, color));
        // The label sits on the arrow's middle.
        let mid = ((xa + xb) / 2.0, -(ta + tb) / 2.0);
        let mid_px = -mid.1 * sc.uy;
        if mid_px - last_label_px >= 12.0 {
            last_label_px = mid_px;
            prims.push(text(mid.0, mid.1, super::Anchor::Above, s.label(), color));
        } else {
            unlabelled += 1;
        }
        marks.push(Mark { class, frame: Some(s.frame), count: 1, prims });
    }
    if total > MAX_ARROWS {
        remarks.push(format!(
            "the first {MAX_ARROWS} of {total} segments drawn: narrow the window (--from/--to) to see the rest"
        ));
    }
    if unlabelled > 0 {
        remarks.push(format!(
            "{unlabelled} arrows left unlabelled, closer than a line of text to the one above: narrow the window or raise --height"
        ));
    }
    // States beside the lines: the state at the window's start, then each change.
    for side in [Side::A, Side::B] {
        let (line_x, xs, anchor, color): (f64, f64, _, _) = match side {
            Side::A => (0.0, -0.02, super::Anchor::Left, side_color(side)),
            Side::B => (1.0, 1.02, super::Anchor::Right, side_color(side)),
        };
        let init = l.states.initial[side.idx()];
        let mut state = init.state;
        let mut assumed = init.assumed;
        let mut prims = Vec::new();
        // Labels closer than a line of text (11 px) to the one above move down under it; the
        // dot on the line stays at the time.
        let mut last_px = (from - pad) * sc.uy;
        for t in l.states.transitions.iter().filter(|t| t.side == side) {
            if t.at_s < from {
                state = t.to;
                assumed = false;
                continue;
            }
            if t.at_s > to {
                break;
            }
            let y_px = (t.at_s * sc.uy).max(last_px + 11.0);
            last_px = y_px;
            prims.push(Prim { shape: Shape::Dot { x: line_x, y: -t.at_s }, color });
            prims.push(text(xs, -y_px / sc.uy, anchor, t.to.name().to_string(), color));
        }
        let first = format!("{}{}", state.name(), if assumed { " (assumed)" } else { "" });
        prims.insert(0, text(xs, -(from - pad), anchor, first, color));
        marks.push(Mark { class: "state", frame: None, count: 1, prims });
    }
    let legend = legend(["a's state".into(), "b's state".into()]);
    let title = v
        .title
        .clone()
        .unwrap_or_else(|| format!("connection {}: a {} ↔ b {} (ladder)", l.conn + 1, l.info.a, l.info.b));
    Figure { title, x, y, marks, legend, remarks }
}

/// Pixels a label's character is taken to take (the viewer's and the SVG's 10–11 px sans-serif
/// average under 6 px; a little more keeps neighbours apart).
const CHAR_PX: f64 = 6.2;
/// A line of text, px.
const LINE_PX: f64 = 12.0;

/// The ladder with time across, for the viewer: its x is the time axis that every view of a
/// connection shares (so it zooms and pans with them, `docs/viewer.md`); endpoint a's time line
/// is at y = 1, b's at y = 0. Arrows as in [`ladder`]: a segment captured at `t` goes from its
/// sender's line at `t − d(sender)` to its receiver's at `t + d(receiver)`.
///
/// Label density: labels are written in rows between the two lines, each on its arrow where the
/// arrow crosses the first row whose previous label ends left of it; a label that fits in no
/// row is left out (counted in a remark), so zooming in labels more arrows. When the window
/// holds more segments than half the plot's pixel columns (`area_px.0`), arrows are aggregated:
/// one per pixel column, direction and kind (its mark's `count` says how many segments, its
/// `frame` is the first's), and none is labelled. The states are written above a's line and
/// below b's at each change (a dot on the line at the estimated time; a label that would
/// overlap the one before moves right), the state at the window's start first.
pub fn ladder_across(l: &Ladder, v: &LadderView) -> Figure {
    let from = v.from_s.unwrap_or(0.0);
    let last = l.last_s.max(l.states.transitions.iter().map(|t| t.at_s).fold(0.0, f64::max));
    let to = v.to_s.unwrap_or(last).max(from + 1e-6);
    let d = [l.states.transit_s[0].unwrap_or(0.0), l.states.transit_s[1].unwrap_or(0.0)];
    let reach = d[0].max(d[1]);
    let x = Axis::new("time (s)", from, to, 10);
    let y = Axis {
        label: String::new(),
        min: -0.3,
        max: 1.3,
        ticks: vec![(1.0, "a".into()), (0.0, "b".into())],
        style: AxisStyle::Linear,
        name: String::new(),
    };
    let (w_px, h_px) = (v.area_px.0.max(1.0), v.area_px.1.max(1.0));
    let sc = Scale { ux: w_px / (to - from), uy: h_px / (y.max - y.min) };
    let px = |t: f64| (t - from) * sc.ux;
    let line = |x1: f64, y1: f64, x2: f64, y2: f64, color: Color| Prim { shape: Shape::Line { x1, y1, x2, y2 }, color };
    let text = |x: f64, y: f64, anchor, text: String, color| Prim { shape: Shape::Text { x, y, anchor, text }, color };
    let mut marks = Vec::new();
    for ys in [1.0, 0.0] {
        marks.push(Mark { class: "timeline", frame: None, count: 1, prims: vec![line(from, ys, to, ys, Color::Fg)] });
    }
    if d[0] + d[1] > 0.0 {
        let yc = 1.0 - d[0] / (d[0] + d[1]);
        marks.push(Mark {
            class: "capture",
            frame: None,
            count: 1,
            prims: vec![
                line(from, yc, to, yc, Color::Gray),
                text(from, yc, super::Anchor::Right, "capture point".into(), Color::Gray),
            ],
        });
    }
    let mut remarks = Vec::new();
    let dist = |v: Option<f64>| v.map_or("unknown (0)".to_string(), |v| format!("{:.3} ms", v * 1e3));
    remarks.push(format!(
        "arrows slope by each endpoint's distance from the capture point (half its smallest half-loop): a {}, b {}",
        dist(l.states.transit_s[0]),
        dist(l.states.transit_s[1])
    ));
    // Every segment whose arrow reaches into the window (capture order, which may step back).
    let shown: Vec<&LadderSeg> = l.segs.iter().filter(|s| s.t + reach >= from && s.t - reach <= to).collect();
    let ends = |s: &LadderSeg| match s.dir {
        Dir::AtoB => ((s.t - d[0], 1.0), (s.t + d[1], 0.0)),
        Dir::BtoA => ((s.t - d[1], 0.0), (s.t + d[0], 1.0)),
    };
    let arrow = |s: &LadderSeg, color: Color| {
        let (p1, p2) = ends(s);
        let mut prims = vec![line(p1.0, p1.1, p2.0, p2.1, color)];
        prims.extend(sc.head(p1, p2, color));
        prims
    };
    if 2 * shown.len() > w_px as usize {
        // One arrow per pixel column, direction and kind: the last mark of each (direction,
        // kind) is extended while its segments stay in its column.
        let mut open: Vec<(Dir, &str, i64, usize)> = Vec::new();
        for s in &shown {
            let (color, class) = seg_color(s);
            let col = px(s.t).floor() as i64;
            match open.iter_mut().find(|o| o.0 == s.dir && o.1 == class) {
                Some(o) if o.2 == col => marks[o.3].count += 1,
                found => {
                    let at = marks.len();
                    marks.push(Mark { class, frame: Some(s.frame), count: 1, prims: arrow(s, color) });
                    match found {
                        Some(o) => (o.2, o.3) = (col, at),
                        None => open.push((s.dir, class, col, at)),
                    }
                }
            }
        }
        remarks.push(format!(
            "{} segments in view, more than one per two pixel columns: one arrow per column, direction and kind, unlabelled; zoom in to see each",
            shown.len()
        ));
    } else {
        // Label rows between the lines, a line of text apart, from a's line down.
        let rows = ((sc.uy / LINE_PX) as usize).saturating_sub(1).max(1);
        let row_y = |k: usize| 1.0 - (k + 1) as f64 / (rows + 1) as f64;
        let mut row_end = vec![f64::NEG_INFINITY; rows];
        let mut unlabelled = 0;
        for s in &shown {
            let (color, class) = seg_color(s);
            let mut prims = arrow(s, color);
            let label = s.label();
            let width = label.chars().count() as f64 * CHAR_PX + 8.0;
            let ((x1, y1), (x2, y2)) = ends(s);
            // Where the arrow crosses row k's height.
            let cross = |k: usize| x1 + (x2 - x1) * (row_y(k) - y1) / (y2 - y1);
            match (0..rows).find(|&k| px(cross(k)) >= row_end[k]) {
                Some(k) => {
                    row_end[k] = px(cross(k)) + width;
                    prims.push(text(cross(k), row_y(k), super::Anchor::Right, label, color));
                }
                None => unlabelled += 1,
            }
            marks.push(Mark { class, frame: Some(s.frame), count: 1, prims });
        }
        if unlabelled > 0 {
            remarks.push(format!("{unlabelled} arrows left unlabelled, no room in any row: zoom in to label them"));
        }
    }
    // States above a's line and below b's.
    for side in [Side::A, Side::B] {
        let (line_y, anchor) = match side {
            Side::A => (1.0, super::Anchor::Above),
            Side::B => (0.0, super::Anchor::Below),
        };
        let color = side_color(side);
        let init = l.states.initial[side.idx()];
        let (mut state, mut assumed) = (init.state, init.assumed);
        let mut visible = Vec::new();
        for t in l.states.transitions.iter().filter(|t| t.side == side) {
            if t.at_s < from {
                (state, assumed) = (t.to, false);
            } else if t.at_s <= to {
                visible.push(t);
            }
        }
        // A centred label at `t` px, moved right of the one before (the first, right of the
        // plot's left edge).
        let mut last_end = 0.0;
        let mut place = |at_px: f64, label: &str| {
            let half = label.chars().count() as f64 * CHAR_PX / 2.0;
            let c = at_px.max(last_end + 4.0 + half);
            last_end = c + half;
            from + c / sc.ux
        };
        let first = format!("{}{}", state.name(), if assumed { " (assumed)" } else { "" });
        let xs = place(0.0, &first);
        marks.push(Mark { class: "state", frame: None, count: 1, prims: vec![text(xs, line_y, anchor, first, color)] });
        for t in visible {
            let xs = place(px(t.at_s), t.to.name());
            marks.push(Mark {
                class: "state",
                frame: Some(t.frame),
                count: 1,
                prims: vec![
                    Prim { shape: Shape::Dot { x: t.at_s, y: line_y }, color },
                    text(xs, line_y, anchor, t.to.name().to_string(), color),
                ],
            });
        }
    }
    let legend = legend([format!("a {}: its states", l.info.a), format!("b {}: its states", l.info.b)]);
    let title = v
        .title
        .clone()
        .unwrap_or_else(|| format!("connection {}: a {} ↔ b {} (ladder)", l.conn + 1, l.info.a, l.info.b));
    Figure { title, x, y, marks, legend, remarks }
}

/// Where each state sits in the diagram (RFC 9293 figure 5's layout, x and y in 0..10, up is
/// up). CLOSED is drawn twice: at the top as where connections start, at the bottom as where
/// they end ([`CLOSED_END`]).
fn place(s: TcpState) -> (f64, f64) {
    match s {
        TcpState::Closed => (5.0, 10.0),
        TcpState::Listen => (5.0, 8.4),
        TcpState::SynRcvd => (1.8, 6.8),
        TcpState::SynSent => (8.2, 6.8),
        TcpState::Established => (5.0, 5.2),
        TcpState::FinWait1 => (1.8, 3.6),
        TcpState::CloseWait => (8.2, 3.6),
        TcpState::Closing => (5.0, 2.4),
        TcpState::FinWait2 => (1.8, 1.2),
        TcpState::LastAck => (8.2, 1.2),
        TcpState::TimeWait => (5.0, 0.0),
    }
}

/// The bottom CLOSED: where a connection that got past its handshake ends.
const CLOSED_END: (f64, f64) = (8.2, -1.2);

/// Half a state box's size, in data units.
const BOX: (f64, f64) = (1.15, 0.32);

/// The state diagram of both endpoints.
pub fn states(s: &States, title: Option<String>, area_px: (f64, f64)) -> Figure {
    let x = Axis {
        label: String::new(),
        min: -0.5,
        max: 10.5,
        ticks: vec![],
        style: AxisStyle::Linear,
        name: String::new(),
    };
    let y = Axis {
        label: String::new(),
        min: -1.8,
        max: 10.6,
        ticks: vec![],
        style: AxisStyle::Linear,
        name: String::new(),
    };
    let sc = Scale { ux: area_px.0 / (x.max - x.min), uy: area_px.1 / (y.max - y.min) };
    let end_of = |from: TcpState, to: TcpState| {
        let late = !matches!(from, TcpState::Closed | TcpState::Listen | TcpState::SynSent | TcpState::SynRcvd);
        if to == TcpState::Closed && late { CLOSED_END } else { place(to) }
    };
    // Which boxes were visited (the bottom CLOSED is its own box).
    let mut visited: Vec<(f64, f64)> = Vec::new();
    for side in [Side::A, Side::B] {
        visited.push(place(s.initial[side.idx()].state));
    }
    for t in &s.transitions {
        visited.push(end_of(t.from, t.to));
    }
    let mut marks = Vec::new();
    let mut boxes: Vec<(TcpState, (f64, f64))> = TcpState::ALL.iter().map(|&st| (st, place(st))).collect();
    boxes.push((TcpState::Closed, CLOSED_END));
    for (st, (cx, cy)) in boxes {
        let seen = visited.contains(&(cx, cy));
        let mut prims = Vec::new();
        if seen {
            prims.push(Prim {
                shape: Shape::Rect { x1: cx - BOX.0, y1: cy - BOX.1, x2: cx + BOX.0, y2: cy + BOX.1 },
                color: Color::Gray,
            });
        }
        prims.push(Prim {
            shape: Shape::Text { x: cx, y: cy, anchor: super::Anchor::Center, text: st.name().into() },
            color: if seen { Color::Fg } else { Color::Gray },
        });
        marks.push(Mark { class: if seen { "state seen" } else { "state" }, frame: None, count: 1, prims });
    }
    // Transitions: a's on one side of the line between the boxes, b's on the other.
    for side in [Side::A, Side::B] {
        let color = side_color(side);
        let off = if side == Side::A { -0.12 } else { 0.12 };
        for (k, t) in s.transitions.iter().filter(|t| t.side == side).enumerate() {
            let (p, q) = (place(t.from), end_of(t.from, t.to));
            let (dx, dy) = ((q.0 - p.0) * sc.ux, (q.1 - p.1) * sc.uy);
            let n = (dx * dx + dy * dy).sqrt().max(1e-9);
            // Perpendicular offset, in data units.
            let (ox, oy) = (-dy / n * off * 40.0 / sc.ux, dx / n * off * 40.0 / sc.uy);
            let clip = |from: (f64, f64), to: (f64, f64)| {
                // Where the line from the box centre `from` towards `to` leaves the box.
                let (vx, vy) = (to.0 - from.0, to.1 - from.1);
                let k = (BOX.0 / vx.abs().max(1e-9)).min(BOX.1 / vy.abs().max(1e-9)).min(0.5);
                (from.0 + vx * k, from.1 + vy * k)
            };
            let a = clip(p, q);
            let b = clip(q, p);
            let (a, b) = ((a.0 + ox, a.1 + oy), (b.0 + ox, b.1 + oy));
            let mut prims = vec![Prim { shape: Shape::Line { x1: a.0, y1: a.1, x2: b.0, y2: b.1 }, color }];
            prims.extend(sc.head(a, b, color));
            let verb = if t.sent { "sent" } else { "rcvd" };
            let label = format!("{}{} {verb} {}", side.name(), k + 1, t.flags);
            let mid = ((a.0 + b.0) / 2.0 + ox, (a.1 + b.1) / 2.0 + oy);
            let anchor = if side == Side::A { super::Anchor::Left } else { super::Anchor::Right };
            prims.push(Prim { shape: Shape::Text { x: mid.0, y: mid.1, anchor, text: label }, color });
            marks.push(Mark { class: "transition", frame: Some(t.frame), count: 1, prims });
        }
    }
    let legend = vec![
        LegendEntry { color: Color::Red, sample: Sample::Line, text: format!("a {}", s.info.a) },
        LegendEntry { color: Color::Blue, sample: Sample::Line, text: format!("b {}", s.info.b) },
    ];
    let assumed: Vec<String> = [Side::A, Side::B]
        .iter()
        .filter(|sd| s.initial[sd.idx()].assumed)
        .map(|sd| format!("{} in {}", sd.name(), s.initial[sd.idx()].state.name()))
        .collect();
    let mut remarks = vec!["aN: a's N-th transition, with the segment it sent or received (rcvd)".to_string()];
    if !assumed.is_empty() {
        remarks.push(format!("assumed before the first segment: {}", assumed.join(", ")));
    }
    let title = title.unwrap_or_else(|| format!("connection {}: TCP states of a and b", s.conn + 1));
    Figure { title, x, y, marks, legend, remarks }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Settings;
    use crate::series::ladder::LadderSink;
    use crate::series::run_pkts;
    use crate::testutil::{Pkt, flag::*, scripted};

    /// A handshake, `n` data segments of 100 bytes from a each acknowledged by b (1 ms apart),
    /// and an active close by a.
    fn conn(n: u32) -> Ladder {
        let mut p: Vec<Pkt> = vec![
            scripted(true, 0.0, SYN, 0, 0, 0, 1000, vec![]),
            scripted(false, 1.0, SYN | ACK, 0, 0, 0, 1000, vec![]),
            scripted(true, 2.0, ACK, 0, 0, 0, 1000, vec![]),
        ];
        for i in 0..n {
            let t = 3.0 + 2.0 * i as f64;
            p.push(scripted(true, t, PSH | ACK, i * 100, 0, 100, 1000, vec![]));
            p.push(scripted(false, t + 1.0, ACK, 0, (i + 1) * 100, 0, 1000, vec![]));
        }
        let (t, e) = (3.0 + 2.0 * n as f64, n * 100);
        p.push(scripted(true, t, FIN | ACK, e, 0, 0, 1000, vec![]));
        p.push(scripted(false, t + 1.0, FIN | ACK, 0, e + 1, 0, 1000, vec![]));
        p.push(scripted(true, t + 2.0, ACK, e + 1, 1, 0, 1000, vec![]));
        run_pkts(&p, Settings::default(), LadderSink::new(0)).finish().unwrap()
    }

    fn view(w: f64, h: f64) -> LadderView {
        LadderView { from_s: None, to_s: None, title: None, area_px: (w, h) }
    }

    fn seg_marks(f: &Figure) -> Vec<&Mark> {
        f.marks.iter().filter(|m| m.class.starts_with("seg")).collect()
    }

    fn texts(m: &Mark) -> Vec<(f64, f64, &str)> {
        m.prims
            .iter()
            .filter_map(|p| match &p.shape {
                Shape::Text { x, y, text, .. } => Some((*x, *y, text.as_str())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn across_one_labelled_arrow_per_segment_and_the_states_at_each_change() {
        let l = conn(3);
        let f = ladder_across(&l, &view(1600.0, 500.0));
        let segs = seg_marks(&f);
        assert_eq!(segs.len(), l.segs.len());
        for (m, s) in segs.iter().zip(&l.segs) {
            assert_eq!((m.frame, m.count), (Some(s.frame), 1));
            // Arrow from the sender's line to the receiver's, labelled with the segment.
            let Shape::Line { y1, y2, .. } = m.prims[0].shape else { panic!("{:?}", m.prims[0]) };
            let want = if s.dir == Dir::AtoB { (1.0, 0.0) } else { (0.0, 1.0) };
            assert_eq!((y1, y2), want);
            assert_eq!(texts(m).iter().map(|t| t.2).collect::<Vec<_>>(), [s.label().as_str()]);
        }
        // Labels in a row do not overlap (each ends, in its estimated width, before the next).
        let ux = 1600.0 / (f.x.max - f.x.min);
        let mut rows: Vec<(f64, f64, usize)> =
            segs.iter().flat_map(|m| texts(m)).map(|(x, y, t)| (y, x * ux, t.chars().count())).collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        for w in rows.windows(2) {
            if w[0].0 == w[1].0 {
                assert!(w[0].1 + w[0].2 as f64 * CHAR_PX <= w[1].1, "{w:?}");
            }
        }
        // The states: the initial one per side, then one mark per transition, its causing frame.
        let states: Vec<&Mark> = f.marks.iter().filter(|m| m.class == "state").collect();
        assert_eq!(states.len(), 2 + l.states.transitions.len());
        let named: Vec<&str> = states.iter().flat_map(|m| texts(m)).map(|t| t.2).collect();
        assert!(named.contains(&"TIME_WAIT") && named.contains(&"LAST_ACK"), "{named:?}");
        // Each side's state labels (centred) start inside the plot and do not overlap.
        for line in [0.0, 1.0] {
            let mut spans: Vec<(f64, f64)> = states
                .iter()
                .flat_map(|m| texts(m))
                .filter(|t| t.1 == line)
                .map(|(x, _, t)| {
                    let half = t.chars().count() as f64 * CHAR_PX / 2.0;
                    ((x - f.x.min) * ux - half, (x - f.x.min) * ux + half)
                })
                .collect();
            spans.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert!(spans[0].0 >= 0.0, "{spans:?}");
            assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "{spans:?}");
        }
        assert!(f.remarks.iter().all(|r| !r.contains("unlabelled")), "{:?}", f.remarks);
    }

    #[test]
    fn across_leaves_labels_out_where_no_row_has_room_and_zooming_in_labels_them() {
        let l = conn(40);
        let labelled = |f: &Figure| seg_marks(f).iter().filter(|m| !texts(m).is_empty()).count();
        let out = ladder_across(&l, &view(600.0, 120.0));
        let n = labelled(&out);
        assert!(n > 0 && n < l.segs.len(), "{n} of {}", l.segs.len());
        assert!(out.remarks.iter().any(|r| r.contains(&format!("{} arrows left unlabelled", l.segs.len() - n))));
        // The first 20 ms only, as wide: more labels of fewer arrows.
        let v = LadderView { to_s: Some(0.02), ..view(600.0, 120.0) };
        let zoomed = ladder_across(&l, &v);
        assert!(seg_marks(&zoomed).len() < l.segs.len());
        assert!(labelled(&zoomed) as f64 / seg_marks(&zoomed).len() as f64 > n as f64 / l.segs.len() as f64);
    }

    #[test]
    fn across_aggregates_per_pixel_column_when_zoomed_out() {
        let l = conn(500);
        let f = ladder_across(&l, &view(300.0, 400.0));
        let segs = seg_marks(&f);
        // Every segment counted once, no arrow labelled, at most one mark per column, direction
        // and kind.
        assert_eq!(segs.iter().map(|m| m.count as usize).sum::<usize>(), l.segs.len());
        assert!(segs.iter().all(|m| texts(m).is_empty()));
        assert!(segs.len() <= 300 * 2 * 5 && segs.len() < l.segs.len(), "{}", segs.len());
        assert!(f.remarks.iter().any(|r| r.starts_with(&format!("{} segments in view", l.segs.len()))));
        // Wide enough: one arrow each.
        let f = ladder_across(&l, &view(2.0 * l.segs.len() as f64, 400.0));
        assert!(seg_marks(&f).iter().all(|m| m.count == 1));
    }
}

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
    let legend = vec![
        LegendEntry { color: Color::Fg, sample: Sample::Line, text: "data".into() },
        LegendEntry { color: Color::Green, sample: Sample::Line, text: "ACK, no data".into() },
        LegendEntry { color: Color::Orange, sample: Sample::Line, text: "SYN or FIN".into() },
        LegendEntry { color: Color::Magenta, sample: Sample::Line, text: "RST".into() },
        LegendEntry { color: Color::Red, sample: Sample::Line, text: "retransmission".into() },
        LegendEntry { color: Color::Red, sample: Sample::Letter("a"), text: "a's state".into() },
        LegendEntry { color: Color::Blue, sample: Sample::Letter("b"), text: "b's state".into() },
    ];
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

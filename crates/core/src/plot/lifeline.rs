//! The plots of a correlation (`correlate --plot`): the time-sequence plot with each packet
//! drawn at every point that saw it, joined (NetLogger's lifeline of a packet), and the
//! one-way-delay plot. Times are seconds since the first packet of all captures, on the first
//! capture's clock; sequence numbers relative to the direction's first.

use super::{Axis, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, chart};
use crate::correlate::{Correlation, Fate};

fn title(c: &Correlation, conn: usize, dir: u8, what: &str) -> String {
    let r = &c.dirs[conn * 2 + dir as usize];
    format!("connection {} {}: {} → {} ({what}, points {})", conn + 1, r.dir, r.src, r.dst, r.path)
}

/// The lifelines of direction `dir` (0: a→b) of connection `conn` (0-based): per packet a line
/// through its sightings in path order (x its time at the point, y its sequence number), a
/// tick where it left the first point, a dot at each point between, an arrowhead where it
/// reached the last; a packet lost
/// ends in a red diamond where it was last seen; a capture's missed sighting is an orange box
/// on the line.
/// `span`: only packets that left their first point within it (s), and the x axis on it.
pub fn lifelines(c: &Correlation, conn: usize, dir: u8, span: (Option<f64>, Option<f64>)) -> Figure {
    let cd = conn * 2 + dir as usize;
    let path = &c.paths[cd];
    let mut marks = Vec::new();
    let (mut x1, mut y0, mut y1) = (0f64, f64::INFINITY, 1f64);
    let (mut lost, mut missed) = (0, 0);
    for (k, l) in c.lives.iter().enumerate() {
        if l.conn as usize != conn || l.dir != dir {
            continue;
        }
        let y = f64::from(l.seq.wrapping_sub(c.bases[cd]));
        let pts: Vec<(f64, f64)> = path
            .iter()
            .filter_map(|&p| {
                let s = c.sight(k, p);
                s.seen().then(|| ((c.to_ref(p, s.t) - c.t0) as f64 * 1e-9, y))
            })
            .collect();
        let Some(&first) = pts.first() else { continue };
        if span.0.is_some_and(|a| first.0 < a) || span.1.is_some_and(|b| first.0 > b) {
            continue;
        }
        let last = pts[pts.len() - 1];
        x1 = x1.max(last.0);
        y0 = y0.min(y);
        y1 = y1.max(y + f64::from(l.len));
        let fate = c.fates[k];
        let color = match fate {
            Fate::Lost => Color::Red,
            Fate::Duplicated => Color::Purple,
            _ => Color::Fg,
        };
        let mut prims = vec![
            Prim { shape: Shape::Polyline { pts: pts.clone() }, color },
            Prim { shape: Shape::Tick { x: first.0, y: first.1, way: super::Way::Horizontal }, color },
        ];
        // The points between: a dot at each sighting.
        for &(x, y) in &pts[1..pts.len().saturating_sub(1).max(1)] {
            prims.push(Prim { shape: Shape::Dot { x, y }, color });
        }
        if fate == Fate::Lost {
            lost += 1;
            prims.push(Prim { shape: Shape::Diamond { x: last.0, y: last.1 }, color: Color::Red });
        } else if pts.len() > 1 {
            prims.push(Prim { shape: Shape::Arrow { x: last.0, y: last.1, way: super::Way::Up }, color });
        }
        // Points on the path between the first and last sightings that missed it.
        let seen: Vec<bool> = path.iter().map(|&p| c.sight(k, p).seen()).collect();
        if let (Some(a), Some(b)) = (seen.iter().position(|&s| s), seen.iter().rposition(|&s| s)) {
            for m in a + 1..b {
                if !seen[m] {
                    missed += 1;
                    // Halfway in time between its neighbours' sightings.
                    let (pa, pb) = (path[m - 1], path[m + 1]);
                    let (sa, sb) = (c.sight(k, pa), c.sight(k, pb));
                    if sa.seen() && sb.seen() {
                        let x = ((c.to_ref(pa, sa.t) + c.to_ref(pb, sb.t)) / 2 - c.t0) as f64 * 1e-9;
                        prims.push(Prim { shape: Shape::Box { x, y }, color: Color::Orange });
                    }
                }
            }
        }
        let first_frame = path.iter().map(|&p| c.sight(k, p)).find(|s| s.seen()).map(|s| s.frame);
        marks.push(Mark {
            class: match fate {
                Fate::Lost => "lifeline lost",
                Fate::Duplicated => "lifeline dup",
                _ => "lifeline",
            },
            frame: first_frame,
            count: 1,
            prims,
        });
    }
    let mut legend = vec![LegendEntry {
        color: Color::Fg,
        sample: Sample::Line,
        text: "a packet: left the first point (tick), reached the last (arrow)".into(),
    }];
    if lost > 0 {
        legend.push(LegendEntry { color: Color::Red, sample: Sample::Letter("◇"), text: "lost after here".into() });
    }
    if missed > 0 {
        legend.push(LegendEntry {
            color: Color::Orange,
            sample: Sample::Letter("□"),
            text: "a capture missed it here".into(),
        });
    }
    Figure {
        title: title(c, conn, dir, "lifelines"),
        x: Axis::new(
            "time (s since the first packet, first capture's clock)",
            span.0.unwrap_or(0.0),
            x1.max(span.0.unwrap_or(0.0) + 1e-3),
            8,
        ),
        y: {
            let y0 = if y0.is_finite() { y0 } else { 0.0 };
            let pad = (y1 - y0) * 0.03;
            Axis::new("sequence number (relative)", (y0 - pad).max(0.0), y1 + pad, 8)
        },
        marks,
        legend,
        remarks: vec![format!("{lost} lost on the path, {missed} sightings missed by a capture")],
    }
}

/// The one-way delay of each packet of direction `dir` of connection `conn` (first to last
/// point) at the time it left the first point; the smallest as a gray line (below it is
/// queueing). `columns`: more packets than this are drawn per pixel column.
pub fn one_way_delay(c: &Correlation, conn: usize, dir: u8, columns: Option<u32>) -> Figure {
    let cd = conn * 2 + dir as usize;
    let path = &c.paths[cd];
    let mut pts = Vec::new();
    if let (Some(&a), Some(&b)) = (path.first(), path.last())
        && a != b
    {
        for (k, l) in c.lives.iter().enumerate() {
            if l.conn as usize != conn || l.dir != dir {
                continue;
            }
            let (sa, sb) = (c.sight(k, a), c.sight(k, b));
            if sa.seen() && sb.seen() {
                let (ta, tb) = (c.to_ref(a, sa.t), c.to_ref(b, sb.t));
                pts.push(((ta - c.t0) as f64 * 1e-9, (tb - ta) as f64 / 1e6, sa.frame));
            }
        }
    }
    pts.sort_by(|p, q| p.0.total_cmp(&q.0));
    let x1 = pts.last().map_or(1e-3, |p| p.0.max(1e-3));
    let ymax = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let ymin = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let mut marks = chart::dots(&pts, Color::Blue, |x, y| Shape::Dot { x, y }, "owd", "owd agg", columns, 0.0, x1);
    if ymin.is_finite() {
        marks.push(Mark {
            class: "owd min",
            frame: None,
            count: 1,
            prims: vec![Prim { shape: Shape::Line { x1: 0.0, y1: ymin, x2: x1, y2: ymin }, color: Color::Gray }],
        });
    }
    Figure {
        title: title(c, conn, dir, "one-way delay"),
        x: Axis::new("time it left the first point (s since the first packet)", 0.0, x1, 8),
        y: Axis::new("one-way delay (ms)", 0.0, (ymax * 1.05).max(1e-3), 8),
        marks,
        legend: vec![
            LegendEntry { color: Color::Blue, sample: Sample::Dot, text: "one-way delay, first to last point".into() },
            LegendEntry { color: Color::Gray, sample: Sample::Line, text: "smallest: above it is queueing".into() },
        ],
        remarks: vec![format!("{} packets; clocks as `correlate` estimated them", pts.len())],
    }
}

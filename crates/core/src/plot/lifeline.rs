//! The plots of a correlation (`correlate --plot`): the time-sequence plot with each packet
//! drawn at every point that saw it, joined (NetLogger's lifeline of a packet), and the
//! one-way-delay plot. Times are seconds since the first packet of all captures, on the first
//! capture's clock; sequence numbers relative to the direction's first.

use super::{Axis, Color, Figure, LegendEntry, Mark, Prim, Sample, Shape, chart};
use crate::correlate::{Correlation, Fate};

fn title(c: &Correlation, conn: usize, dir: u8, what: &str, view: &LifelineView) -> String {
    let r = &c.dirs[conn * 2 + dir as usize];
    let name = view.label.clone().unwrap_or_else(|| format!("connection {} {}", conn + 1, r.dir));
    format!("{name}: {} → {} ({what}, points {})", r.src, r.dst, r.path)
}

/// What part of a correlated direction a plot draws, and at what resolution.
#[derive(Clone, Debug, Default)]
pub struct LifelineView {
    /// Only packets that left their first point from this time on (s since the origin); the
    /// x axis starts here.
    pub from_s: Option<f64>,
    /// Only packets that left their first point until this time; the x axis ends here (else at
    /// the last sighting drawn).
    pub to_s: Option<f64>,
    /// Time zero (ns on the first capture's clock); `None`: the first packet of all captures.
    /// The viewer gives the connection's first packet, so that the time-sequence plot of the
    /// first capture and the lifelines share their time axis.
    pub origin_ns: Option<i64>,
    /// Pixel columns: with more packets in view than twice this, only some are drawn (see
    /// [`lifelines_in`]) and the one-way delays are drawn per column.
    pub columns: Option<u32>,
    /// The point whose frame numbers the marks carry, none where it did not see the packet
    /// (the viewer's hover asks its trace for the packet); `None`: the first point that saw it.
    pub frames_of: Option<usize>,
    /// The wire sequence number y counts from; `None`: the direction's first packet's (its
    /// SYN's), as `correlate` counts. The viewer gives its time-sequence plot's (the first
    /// payload byte's) so that both plots share their y axis; a SYN is then at −1.
    pub seq_base: Option<u32>,
    /// How the title names the connection and direction (the viewer: its list's id and
    /// direction); `None`: as `correlate` numbers them (`connection 1 a2b`).
    pub label: Option<String>,
}

impl LifelineView {
    fn origin(&self, c: &Correlation) -> i64 {
        self.origin_ns.unwrap_or(c.t0)
    }

    fn in_span(&self, x: f64) -> bool {
        !(self.from_s.is_some_and(|a| x < a) || self.to_s.is_some_and(|b| x > b))
    }

    fn x_label(&self) -> &'static str {
        match self.origin_ns {
            None => "time (s since the first packet, first capture's clock)",
            Some(_) => "time (s since the connection's first packet, first capture's clock)",
        }
    }
}

/// The lifelines of direction `dir` (0: a→b) of connection `conn` (0-based): per packet a line
/// through its sightings in path order (x its time at the point, y its sequence number), a
/// tick where it left the first point, a dot at each point between, an arrowhead where it
/// reached the last; a packet lost
/// ends in a red diamond where it was last seen; a capture's missed sighting is an orange box
/// on the line.
/// `span`: only packets that left their first point within it (s), and the x axis on it.
pub fn lifelines(c: &Correlation, conn: usize, dir: u8, span: (Option<f64>, Option<f64>)) -> Figure {
    lifelines_in(c, conn, dir, &LifelineView { from_s: span.0, to_s: span.1, ..LifelineView::default() })
}

/// [`lifelines`] for a view. With `view.columns` = w and more than 2·w packets in the span,
/// the packets are put in w columns by the time they left their first point, and per column
/// three are drawn: the lowest and highest sequence number, and the first lost one (so that
/// the plot's outline and every column with a loss survive at any zoom); a remark says how
/// many were drawn. The counts in the remark and the legend are of every packet in the span.
pub fn lifelines_in(c: &Correlation, conn: usize, dir: u8, view: &LifelineView) -> Figure {
    let cd = conn * 2 + dir as usize;
    let path = &c.paths[cd];
    let origin = view.origin(c);
    let x_of = |p: usize, t: i64| (c.to_ref(p, t) - origin) as f64 * 1e-9;
    // The packets in the span, with the time each left its first point; the losses and the
    // captures' missed sightings counted over all of them, drawn or not.
    let mut chosen: Vec<(usize, f64)> = Vec::new();
    let (mut lost, mut missed) = (0, 0);
    for (k, l) in c.lives.iter().enumerate() {
        if l.conn as usize != conn || l.dir != dir {
            continue;
        }
        let seen: Vec<bool> = path.iter().map(|&p| c.sight(k, p).seen()).collect();
        let (Some(first), Some(last)) = (seen.iter().position(|&s| s), seen.iter().rposition(|&s| s)) else {
            continue;
        };
        let x = x_of(path[first], c.sight(k, path[first]).t);
        if view.in_span(x) {
            chosen.push((k, x));
            lost += usize::from(c.fates[k] == Fate::Lost);
            missed += (first + 1..last).filter(|&m| !seen[m]).count();
        }
    }
    let in_span = chosen.len();
    if let Some(w) = view.columns.map(|w| w.max(1) as usize)
        && in_span > 2 * w
    {
        let (x0, x1) = (
            view.from_s.unwrap_or_else(|| chosen.iter().map(|p| p.1).fold(f64::INFINITY, f64::min)),
            view.to_s.unwrap_or_else(|| chosen.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max)),
        );
        // Per column: the lowest, the highest sequence number, the first lost.
        let mut cols: Vec<[Option<usize>; 3]> = vec![[None; 3]; w];
        let seq = |k: usize| c.lives[k].seq.wrapping_sub(c.bases[cd]);
        for &(k, x) in &chosen {
            let e = &mut cols[chart::column(x, x0, x1, w)];
            if e[0].is_none_or(|j| seq(k) < seq(j)) {
                e[0] = Some(k);
            }
            if e[1].is_none_or(|j| seq(k) > seq(j)) {
                e[1] = Some(k);
            }
            if e[2].is_none() && c.fates[k] == Fate::Lost {
                e[2] = Some(k);
            }
        }
        let mut keep: Vec<usize> = cols.iter().flatten().flatten().copied().collect();
        keep.sort_unstable();
        keep.dedup();
        chosen.retain(|(k, _)| keep.binary_search(k).is_ok());
    }
    let mut marks = Vec::new();
    let (mut x1, mut y0, mut y1) = (0f64, f64::INFINITY, 1f64);
    for &(k, _) in &chosen {
        let l = &c.lives[k];
        let fate = c.fates[k];
        let seen: Vec<bool> = path.iter().map(|&p| c.sight(k, p).seen()).collect();
        let y = match view.seq_base {
            None => f64::from(l.seq.wrapping_sub(c.bases[cd])),
            // One below the base (a SYN) at −1.
            Some(b) => f64::from(l.seq.wrapping_sub(b).wrapping_add(1)) - 1.0,
        };
        let pts: Vec<(f64, f64)> = path
            .iter()
            .filter_map(|&p| {
                let s = c.sight(k, p);
                s.seen().then(|| (x_of(p, s.t), y))
            })
            .collect();
        let first = pts[0];
        let last = pts[pts.len() - 1];
        x1 = x1.max(last.0);
        y0 = y0.min(y);
        y1 = y1.max(y + f64::from(l.len));
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
            prims.push(Prim { shape: Shape::Diamond { x: last.0, y: last.1 }, color: Color::Red });
        } else if pts.len() > 1 {
            prims.push(Prim { shape: Shape::Arrow { x: last.0, y: last.1, way: super::Way::Up }, color });
        }
        // Points on the path between the first and last sightings that missed it.
        if let (Some(a), Some(b)) = (seen.iter().position(|&s| s), seen.iter().rposition(|&s| s)) {
            for m in a + 1..b {
                if !seen[m] {
                    // Halfway in time between its neighbours' sightings.
                    let (pa, pb) = (path[m - 1], path[m + 1]);
                    let (sa, sb) = (c.sight(k, pa), c.sight(k, pb));
                    if sa.seen() && sb.seen() {
                        let x = ((c.to_ref(pa, sa.t) + c.to_ref(pb, sb.t)) / 2 - origin) as f64 * 1e-9;
                        prims.push(Prim { shape: Shape::Box { x, y }, color: Color::Orange });
                    }
                }
            }
        }
        let first_frame = match view.frames_of {
            Some(p) => Some(c.sight(k, p)).filter(|s| s.seen()).map(|s| s.frame),
            None => path.iter().map(|&p| c.sight(k, p)).find(|s| s.seen()).map(|s| s.frame),
        };
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
    let marks_drawn = marks.len();
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
        title: title(c, conn, dir, "lifelines", view),
        x: {
            let x0 = view.from_s.unwrap_or(0.0);
            Axis::new(view.x_label(), x0, view.to_s.unwrap_or(x1).max(x0 + 1e-3), 8)
        },
        y: {
            let y0 = if y0.is_finite() { y0 } else { 0.0 };
            let pad = (y1 - y0) * 0.03;
            Axis::new("sequence number (relative)", (y0 - pad).max(0.0), y1 + pad, 8)
        },
        marks,
        legend,
        remarks: {
            let mut r = vec![format!("{lost} lost on the path, {missed} sightings missed by a capture")];
            if marks_drawn < in_span {
                r.push(format!(
                    "{marks_drawn} of {in_span} packets drawn: per pixel column the lowest, the highest and a lost one; zoom in to see every one"
                ));
            }
            r
        },
    }
}

/// The one-way delay of each packet of direction `dir` of connection `conn` (first to last
/// point) at the time it left the first point; the smallest as a gray line (below it is
/// queueing). `columns`: more packets than this are drawn per pixel column.
pub fn one_way_delay(c: &Correlation, conn: usize, dir: u8, columns: Option<u32>) -> Figure {
    one_way_delay_in(c, conn, dir, &LifelineView { columns, ..LifelineView::default() })
}

/// [`one_way_delay`] for a view: the packets that left the first point within the span, the x
/// axis on it, more packets than `view.columns` drawn per pixel column.
pub fn one_way_delay_in(c: &Correlation, conn: usize, dir: u8, view: &LifelineView) -> Figure {
    let cd = conn * 2 + dir as usize;
    let path = &c.paths[cd];
    let origin = view.origin(c);
    let mut pts = Vec::new();
    // (first point's frame, lifeline) of each packet drawn.
    let mut ends = Vec::new();
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
                let x = (ta - origin) as f64 * 1e-9;
                if view.in_span(x) {
                    pts.push((x, (tb - ta) as f64 / 1e6, sa.frame));
                    ends.push((sa.frame, k));
                }
            }
        }
    }
    pts.sort_by(|p, q| p.0.total_cmp(&q.0));
    let x0 = view.from_s.unwrap_or(0.0);
    let x1 = view.to_s.unwrap_or_else(|| pts.last().map_or(1e-3, |p| p.0.max(1e-3))).max(x0 + 1e-3);
    let ymax = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    // The path's floor is the direction's smallest delay, also when the span holds only later
    // packets.
    let ymin = if c.min_owd[cd].is_finite() {
        c.min_owd[cd] / 1e6
    } else {
        pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min)
    };
    let mut marks = chart::dots(&pts, Color::Blue, |x, y| Shape::Dot { x, y }, "owd", "owd agg", view.columns, x0, x1);
    if let Some(p) = view.frames_of {
        // The marks carry the first point's frames: those of point `p` instead.
        let at: std::collections::HashMap<u64, Option<u64>> =
            ends.iter().map(|&(f, k)| (f, Some(c.sight(k, p)).filter(|s| s.seen()).map(|s| s.frame))).collect();
        for m in &mut marks {
            m.frame = m.frame.and_then(|f| at.get(&f).copied().flatten());
        }
    }
    if ymin.is_finite() {
        marks.push(Mark {
            class: "owd min",
            frame: None,
            count: 1,
            prims: vec![Prim { shape: Shape::Line { x1: x0, y1: ymin, x2: x1, y2: ymin }, color: Color::Gray }],
        });
    }
    Figure {
        title: title(c, conn, dir, "one-way delay", view),
        x: Axis::new(
            match view.origin_ns {
                None => "time it left the first point (s since the first packet)",
                Some(_) => "time it left the first point (s since the connection's first packet)",
            },
            x0,
            x1,
            8,
        ),
        y: Axis::new("one-way delay (ms)", 0.0, (ymax * 1.05).max(1e-3), 8),
        marks,
        legend: vec![
            LegendEntry { color: Color::Blue, sample: Sample::Dot, text: "one-way delay, first to last point".into() },
            LegendEntry { color: Color::Gray, sample: Sample::Line, text: "smallest: above it is queueing".into() },
        ],
        remarks: vec![format!("{} packets; clocks as `correlate` estimated them", pts.len())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correlate::{Settings, correlate};

    fn loss_pair() -> Correlation {
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
        correlate(
            &[data.join("loss-snd.pcap"), data.join("loss-rcv.pcap")],
            &Settings { keep_packets: true, ..Settings::default() },
        )
        .unwrap()
    }

    /// At a few pixel columns: per column the lowest, the highest and a lost packet are drawn,
    /// so every column that had a loss still shows one; the counts are of every packet.
    #[test]
    fn few_columns_keep_the_outline_and_the_losses() {
        let c = loss_pair();
        let all = lifelines(&c, 0, 0, (None, None));
        let n = all.marks.len();
        let w = 40;
        let f = lifelines_in(&c, 0, 0, &LifelineView { columns: Some(w), ..LifelineView::default() });
        assert!(f.marks.len() <= 3 * w as usize && f.marks.len() < n, "{} of {n}", f.marks.len());
        assert_eq!(f.remarks[0], all.remarks[0], "the counts are of every packet");
        assert_eq!(
            f.remarks[1],
            format!(
                "{} of {n} packets drawn: per pixel column the lowest, the highest and a lost one; zoom in to see every one",
                f.marks.len()
            )
        );
        // The columns (by the time a packet left the first point) with a loss, over all packets.
        let left = |m: &Mark| match &m.prims[0].shape {
            Shape::Polyline { pts } => pts[0],
            _ => unreachable!(),
        };
        let (x0, x1) = all
            .marks
            .iter()
            .map(|m| left(m).0)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        let cols = |marks: &[Mark]| {
            let mut v: Vec<usize> = marks
                .iter()
                .filter(|m| m.class == "lifeline lost")
                .map(|m| chart::column(left(m).0, x0, x1, w as usize))
                .collect();
            v.dedup();
            v
        };
        assert_eq!(cols(&f.marks), cols(&all.marks));
        // Each column's lowest and highest sequence number are drawn.
        for k in 0..w as usize {
            let ys = |marks: &[Mark]| {
                let v: Vec<f64> = marks
                    .iter()
                    .filter(|m| chart::column(left(m).0, x0, x1, w as usize) == k)
                    .map(|m| left(m).1)
                    .collect();
                (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
            };
            assert_eq!(ys(&f.marks), ys(&all.marks), "column {k}");
        }
        // Enough columns: every packet.
        let wide = lifelines_in(&c, 0, 0, &LifelineView { columns: Some(n as u32), ..LifelineView::default() });
        assert_eq!(wide.marks.len(), n);
        assert_eq!(wide.remarks.len(), 1);
    }

    /// A view's origin moves every time by the same amount; its span is the x axis exactly.
    #[test]
    fn origin_and_span() {
        let c = loss_pair();
        let all = lifelines(&c, 0, 0, (None, None));
        let shift = 50_000_000; // 50 ms
        let view = LifelineView {
            from_s: Some(0.03),
            to_s: Some(0.2),
            origin_ns: Some(c.t0 + shift),
            ..LifelineView::default()
        };
        let f = lifelines_in(&c, 0, 0, &view);
        assert_eq!((f.x.min, f.x.max), (0.03, 0.2));
        let firsts = |fig: &Figure| -> Vec<(u64, f64)> {
            fig.marks
                .iter()
                .map(|m| match &m.prims[0].shape {
                    Shape::Polyline { pts } => (m.frame.unwrap(), pts[0].0),
                    _ => unreachable!(),
                })
                .collect()
        };
        let want: Vec<(u64, f64)> = firsts(&all)
            .into_iter()
            .map(|(fr, x)| (fr, x - 0.05))
            .filter(|&(_, x)| (0.03..=0.2).contains(&x))
            .collect();
        let got = firsts(&f);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.0, w.0);
            assert!((g.1 - w.1).abs() < 1e-9, "{g:?} vs {w:?}");
        }
        let o = one_way_delay_in(&c, 0, 0, &view);
        assert_eq!((o.x.min, o.x.max), (0.03, 0.2));
        assert!(o.marks.iter().filter(|m| m.class == "owd").all(|m| match m.prims[0].shape {
            Shape::Dot { x, .. } => (0.03..=0.2).contains(&x),
            _ => false,
        }));
    }
}

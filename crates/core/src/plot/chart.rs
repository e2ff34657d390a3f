//! Building blocks of the plots over time (tput, flight, ssize, rtt, dupack) and of the burst
//! plots: dot clouds and lines, aggregated per pixel column when there are more points than
//! columns.
//!
//! **Aggregation.** A dot cloud with more points than columns becomes one vertical line per
//! column from the column's lowest value to its highest (class `… agg`, `data-count` = points);
//! a line with more than two points per column keeps, per column, its first, lowest, highest and
//! last point in time order (the "M4" reduction: at one pixel per column the drawing is the same
//! as with every point). Both keep the file size proportional to the width, not to the trace.
//! Points that are events (retransmissions) are never passed through these: callers draw them
//! one by one.

use super::{Color, Mark, Prim, Shape};

/// Seconds of a time in ns.
pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The pixel column of `x` in `[x0, x1]` with `cols` columns.
pub fn column(x: f64, x0: f64, x1: f64, cols: usize) -> usize {
    let f = (x - x0) / (x1 - x0).max(f64::MIN_POSITIVE);
    ((f * cols as f64).max(0.0) as usize).min(cols.saturating_sub(1))
}

/// A dot per point `(x, y, frame)`, or per column a line from lowest to highest when there are
/// more points than `cols`. Returns the marks; `class` names single dots, `class_agg` columns.
/// `symbol` draws a single point (e.g. [`dot`]).
#[allow(clippy::too_many_arguments)] // the points, their look (3), and the columns (3)
pub fn dots(
    pts: &[(f64, f64, u64)],
    color: Color,
    symbol: fn(f64, f64) -> Shape,
    class: &'static str,
    class_agg: &'static str,
    cols: Option<u32>,
    x0: f64,
    x1: f64,
) -> Vec<Mark> {
    match cols.map(|c| c as usize) {
        Some(c) if c > 0 && pts.len() > c => {
            // Per column: lowest, highest, count, first frame.
            let mut b: Vec<Option<(f64, f64, u32, u64)>> = vec![None; c];
            for &(x, y, f) in pts {
                let e = b[column(x, x0, x1, c)].get_or_insert((y, y, 0, f));
                e.0 = e.0.min(y);
                e.1 = e.1.max(y);
                e.2 += 1;
            }
            b.into_iter()
                .enumerate()
                .filter_map(|(k, e)| {
                    let (lo, hi, n, f) = e?;
                    let x = x0 + (k as f64 + 0.5) / c as f64 * (x1 - x0);
                    let shape =
                        if hi > lo { Shape::Line { x1: x, y1: lo, x2: x, y2: hi } } else { Shape::Dot { x, y: lo } };
                    Some(Mark { class: class_agg, frame: Some(f), count: n, prims: vec![Prim { shape, color }] })
                })
                .collect()
        }
        _ => pts
            .iter()
            .map(|&(x, y, f)| Mark {
                class,
                frame: Some(f),
                count: 1,
                prims: vec![Prim { shape: symbol(x, y), color }],
            })
            .collect(),
    }
}

/// A dot symbol.
pub fn dot(x: f64, y: f64) -> Shape {
    Shape::Dot { x, y }
}

/// The points of a line, reduced to first, lowest, highest and last per column when there are
/// more than two points per column on average. `pts` must be in x order.
pub fn reduce(pts: &[(f64, f64)], cols: Option<u32>, x0: f64, x1: f64) -> Vec<(f64, f64)> {
    let Some(c) = cols.map(|c| c as usize).filter(|&c| c > 0 && pts.len() > 2 * c) else { return pts.to_vec() };
    let mut out = Vec::with_capacity(4 * c);
    let mut i = 0;
    while i < pts.len() {
        let k = column(pts[i].0, x0, x1, c);
        let j = i + pts[i..].partition_point(|p| column(p.0, x0, x1, c) == k);
        let col = &pts[i..j];
        let (mut lo, mut hi) = (0, 0);
        for (n, p) in col.iter().enumerate() {
            if p.1 < col[lo].1 {
                lo = n;
            }
            if p.1 > col[hi].1 {
                hi = n;
            }
        }
        let mut keep = vec![0, lo, hi, col.len() - 1];
        keep.sort_unstable();
        keep.dedup();
        out.extend(keep.into_iter().map(|n| col[n]));
        i = j;
    }
    out
}

/// Step points: the value holds until the next point (over, then up or down).
pub fn steps(pts: &[(f64, f64)], x_end: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(pts.len() * 2 + 1);
    for (i, &(x, y)) in pts.iter().enumerate() {
        // An unchanged value adds no corner: the horizontal run simply continues.
        if i > 0 && y == pts[i - 1].1 {
            continue;
        }
        if i > 0 {
            out.push((x, pts[i - 1].1));
        }
        out.push((x, y));
    }
    if let Some(&(x, y)) = pts.last()
        && x_end > x
    {
        out.push((x_end, y));
    }
    out
}

/// One mark holding a line through `pts` (nothing if fewer than two).
pub fn line(pts: Vec<(f64, f64)>, color: Color, class: &'static str, count: u32) -> Option<Mark> {
    (pts.len() >= 2).then(|| Mark {
        class,
        frame: None,
        count,
        prims: vec![Prim { shape: Shape::Polyline { pts }, color }],
    })
}

/// Default range of a time axis: the view's, or the whole connection.
pub fn time_range(view: &super::View, last_ns: u64) -> (f64, f64) {
    limits_range(view.from_s, view.to_s, last_ns)
}

/// The range of a time axis with these limits (seconds; `None`: from the connection's first
/// packet, to its last at `last_ns`), never empty.
pub fn limits_range(from_s: Option<f64>, to_s: Option<f64>, last_ns: u64) -> (f64, f64) {
    let x0 = from_s.unwrap_or(0.0);
    let x1 = to_s.unwrap_or(secs(last_ns)).max(x0);
    (x0, if x1 > x0 { x1 } else { x0 + 1e-3 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_keeps_extremes_per_column_and_small_lines_whole() {
        let pts: Vec<(f64, f64)> = (0..1000).map(|i| (i as f64 / 1000.0, ((i * 37) % 101) as f64)).collect();
        assert_eq!(reduce(&pts[..10], Some(10), 0.0, 1.0).len(), 10);
        let r = reduce(&pts, Some(10), 0.0, 1.0);
        assert!(r.len() <= 40);
        assert_eq!(r.iter().map(|p| p.1).fold(f64::MIN, f64::max), 100.0);
        assert_eq!(r.iter().map(|p| p.1).fold(f64::MAX, f64::min), 0.0);
        assert_eq!((r[0], r[r.len() - 1]), (pts[0], pts[999]));
        assert!(r.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn dots_aggregate_per_column_with_counts() {
        let pts: Vec<(f64, f64, u64)> = (0..100).map(|i| (i as f64 / 100.0, i as f64, i)).collect();
        let m = dots(&pts, Color::Fg, dot, "d", "d agg", Some(10), 0.0, 1.0);
        assert_eq!(m.len(), 10);
        assert_eq!(m.iter().map(|m| m.count).sum::<u32>(), 100);
        assert_eq!(dots(&pts, Color::Fg, dot, "d", "d agg", Some(200), 0.0, 1.0).len(), 100);
    }
}

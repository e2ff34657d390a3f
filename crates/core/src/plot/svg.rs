//! SVG output: a [`Figure`] as standalone SVG text, written directly.
//!
//! Layout: title on top, the plot area with axes, tick labels and a light grid, remarks under
//! the x axis, the legend in a corner of the plot area that holds nothing drawn (upper left
//! first, where a time-sequence plot is normally empty) or, when every corner holds something,
//! under the remarks in two columns (the plot area gets lower). [`render_row`] puts
//! several figures side by side in one document, each a nested `<svg class="panel">`. Every [`Mark`](super::Mark) is one `<g>` whose `class` is the mark's class, with
//! `data-frame` (and `data-count` for aggregates), so tools and tests can find marks by kind.
//! Arrowheads (shrunk on segments shorter than three head heights), ticks and symbols have a
//! fixed size in pixels; everything is clipped to the plot
//! area.

use std::fmt::Write as _;

use super::{Anchor, Color, Figure, Sample, Shape, Way};

const LEFT: f64 = 84.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 64.0;
/// Half the width of an arrowhead, px.
const ARROW_W: f64 = 3.0;
/// Height of an arrowhead, px.
const ARROW_H: f64 = 5.0;
/// Length of a tick, px.
const TICK: f64 = 5.0;
/// Half the size of a diamond or box, px.
const SYM: f64 = 3.5;

/// Width of the plot area of an SVG `width` pixels wide: the number of pixel columns, for
/// [`super::tsg::TsgView::columns`].
pub fn columns(width: u32) -> u32 {
    (width as f64 - LEFT - RIGHT).max(1.0) as u32
}

/// The plot area of an SVG `width` × `height` pixels (before a legend under the plot takes
/// its rows): for figures drawn in pixel-true shapes (the ladder's slanted arrowheads).
pub fn area(width: u32, height: u32) -> (f64, f64) {
    ((width as f64 - LEFT - RIGHT).max(1.0), (height as f64 - TOP - BOTTOM).max(1.0))
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            c => o.push(c),
        }
    }
    o
}

/// Renders `fig` as an SVG document of `width` × `height` pixels.
pub fn render(fig: &Figure, width: u32, height: u32) -> String {
    render_row(std::slice::from_ref(fig), width, height)
}

/// Renders figures side by side, each `width` × `height` pixels, in one SVG document.
pub fn render_row(figs: &[Figure], width: u32, height: u32) -> String {
    let total = width as usize * figs.len().max(1);
    let mut o = String::with_capacity(1024 + figs.iter().map(|f| f.marks.len() * 160).sum::<usize>());
    // Writing to a String cannot fail; the results are ignored below for that reason.
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="{height}" viewBox="0 0 {total} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(o, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    for (i, fig) in figs.iter().enumerate() {
        let _ = writeln!(
            o,
            r#"<svg class="panel" x="{}" y="0" width="{width}" height="{height}">"#,
            i as u64 * width as u64
        );
        panel(&mut o, fig, width, height, i);
        o.push_str("</svg>\n");
    }
    o.push_str("</svg>\n");
    o
}

fn panel(o: &mut String, fig: &Figure, width: u32, height: u32, id: usize) {
    let (w, h) = (width as f64, height as f64);
    let (x0, x1, y0, y1) = (fig.x.min, fig.x.max, fig.y.min, fig.y.max);
    // The legend goes into the corner of the plot area where it covers the fewest drawn points;
    // if every corner has some, it goes under the plot (below the remarks), which gets lower.
    let (bw, bh) = legend_size(fig);
    let pw = (w - LEFT - RIGHT).max(1.0);
    let (ph, (legend_at, bw, bh, cols)) = {
        let ph = (h - TOP - BOTTOM).max(1.0);
        let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
        let sy = |y: f64| TOP + ph - (y - y0) / (y1 - y0) * ph;
        let boxes = [
            (LEFT + 8.0, TOP + 8.0),
            (LEFT + pw - 8.0 - bw, TOP + 8.0),
            (LEFT + pw - 8.0 - bw, TOP + ph - 8.0 - bh),
            (LEFT + 8.0, TOP + ph - 8.0 - bh),
        ];
        let covered = coverage(fig, &boxes, bw, bh, &sx, &sy);
        let best = (0..4).min_by_key(|&k| covered[k]).unwrap_or(0);
        // Under the plot, in two columns: the plot area loses that height.
        let rows = fig.legend.len().div_ceil(2);
        let lh = 8.0 + ROW * rows as f64;
        // Below the last remark (baselines at 50, 62, ... px under the plot area).
        let below = 50.0 + 12.0 * fig.remarks.len().saturating_sub(1) as f64 + 8.0;
        let under = (below + lh + 2.0 - BOTTOM).max(0.0);
        if covered[best] > 0 && !fig.legend.is_empty() && h - TOP - BOTTOM - under >= 0.6 * (h - TOP - BOTTOM) {
            let ph = h - TOP - BOTTOM - under;
            (ph, ((LEFT, TOP + ph + below), pw, lh, 2))
        } else {
            (ph, (boxes[best], bw, bh, 1))
        }
    };
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| TOP + ph - (y - y0) / (y1 - y0) * ph;
    let _ = writeln!(
        o,
        r#"<clipPath id="area{id}"><rect x="{LEFT}" y="{TOP}" width="{pw:.1}" height="{ph:.1}"/></clipPath>"#
    );
    // A long title on a narrow panel gets a smaller font rather than run into its neighbour.
    let title_px = (1.8 * w / fig.title.chars().count().max(1) as f64).clamp(9.0, 14.0);
    let _ = writeln!(
        o,
        r#"<text class="title" x="{:.1}" y="22" text-anchor="middle" font-size="{title_px:.1}">{}</text>"#,
        w / 2.0,
        esc(&fig.title)
    );

    // Axes: frame, grid, ticks, labels.
    let _ = writeln!(o, r##"<g class="axes" stroke="#888888" fill="none">"##);
    let _ = writeln!(o, r#"<rect x="{LEFT}" y="{TOP}" width="{pw:.1}" height="{ph:.1}"/>"#);
    for (v, _) in &fig.x.ticks {
        let x = sx(*v);
        let _ = writeln!(o, r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#eeeeee"/>"##, TOP + ph);
        let _ = writeln!(o, r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}"/>"#, TOP + ph, TOP + ph + 5.0);
    }
    for (v, _) in &fig.y.ticks {
        let y = sy(*v);
        let _ = writeln!(o, r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eeeeee"/>"##, LEFT + pw);
        let _ = writeln!(o, r#"<line x1="{:.1}" y1="{y:.1}" x2="{LEFT}" y2="{y:.1}"/>"#, LEFT - 5.0);
    }
    let _ = writeln!(o, "</g>");
    let _ = writeln!(o, r##"<g class="labels" fill="#333333">"##);
    for (v, label) in &fig.x.ticks {
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            sx(*v),
            TOP + ph + 17.0,
            esc(label)
        );
    }
    for (v, label) in &fig.y.ticks {
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            sy(*v) + 4.0,
            esc(label)
        );
    }
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        TOP + ph + 34.0,
        esc(&fig.x.label)
    );
    let _ = writeln!(
        o,
        r#"<text x="14" y="{:.1}" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        esc(&fig.y.label)
    );
    for (i, r) in fig.remarks.iter().enumerate() {
        let _ = writeln!(
            o,
            r#"<text class="remark" x="{LEFT}" y="{:.1}" font-size="10">{}</text>"#,
            TOP + ph + 50.0 + 12.0 * i as f64,
            esc(r)
        );
    }
    let _ = writeln!(o, "</g>");

    // Marks.
    let _ = writeln!(o, r#"<g class="marks" clip-path="url(#area{id})" stroke-width="1" fill="none">"#);
    for m in &fig.marks {
        let _ = write!(o, r#"<g class="{}""#, m.class);
        if let Some(f) = m.frame {
            let _ = write!(o, r#" data-frame="{f}""#);
        }
        if m.count != 1 || m.class == "seg agg" {
            let _ = write!(o, r#" data-count="{}""#, m.count);
        }
        o.push('>');
        // Arrowheads of a short segment shrink with it (down to 2 px), so that a column of
        // back-to-back segments still reads as lines with heads, not as a stack of X's.
        let seg_px = m.prims.iter().find_map(|p| match p.shape {
            Shape::Line { x1, y1, x2, y2 } if x1 == x2 && y1 != y2 => Some((sy(y1) - sy(y2)).abs()),
            _ => None,
        });
        let head = seg_px.map_or(ARROW_H, |l| (l / 3.0).clamp(2.0, ARROW_H));
        for p in &m.prims {
            prim(o, &p.shape, p.color, head, &sx, &sy, (LEFT, TOP, LEFT + pw, TOP + ph));
        }
        o.push_str("</g>\n");
    }
    let _ = writeln!(o, "</g>");

    legend(o, fig, legend_at, bw, bh, cols);
}

/// How many drawn points fall into each candidate legend box (lines sampled along their length).
fn coverage(
    fig: &Figure,
    boxes: &[(f64, f64); 4],
    bw: f64,
    bh: f64,
    sx: &dyn Fn(f64) -> f64,
    sy: &dyn Fn(f64) -> f64,
) -> [usize; 4] {
    let mut covered = [0usize; 4];
    let mut hit = |x: f64, y: f64| {
        for (k, (bx, by)) in boxes.iter().enumerate() {
            // With a margin: labels and arrowheads reach beyond their anchor points.
            const M: f64 = 12.0;
            if x >= bx - M && x <= bx + bw + M && y >= by - M && y <= by + bh + M {
                covered[k] += 1;
            }
        }
    };
    let mut seg = |(ax, ay): (f64, f64), (bx, by): (f64, f64)| {
        let (ax, ay, bx, by) = (sx(ax), sy(ay), sx(bx), sy(by));
        // A point every 8 px along the segment, so that long lines count where they pass.
        let n = (((bx - ax).hypot(by - ay) / 8.0).ceil() as usize).clamp(1, 400);
        for i in 0..=n {
            let f = i as f64 / n as f64;
            hit(ax + (bx - ax) * f, ay + (by - ay) * f);
        }
    };
    for p in fig.marks.iter().flat_map(|m| &m.prims) {
        match &p.shape {
            Shape::Line { x1, y1, x2, y2 } => seg((*x1, *y1), (*x2, *y2)),
            Shape::Rect { x1, y1, x2, y2 } => {
                seg((*x1, *y1), (*x1, *y2));
                seg((*x1, *y2), (*x2, *y2));
                seg((*x2, *y2), (*x2, *y1));
            }
            Shape::Polyline { pts } => pts.windows(2).for_each(|w| seg(w[0], w[1])),
            Shape::Arrow { x, y, .. }
            | Shape::Tick { x, y, .. }
            | Shape::Diamond { x, y }
            | Shape::Box { x, y }
            | Shape::Dot { x, y }
            | Shape::Text { x, y, .. } => seg((*x, *y), (*x, *y)),
        }
    }
    covered
}

/// Width of a label of `n` characters at font size 10, px: sans-serif's average advance, a little
/// generous (the legend's estimate, scaled to 10 px).
fn label_width(n: usize) -> f64 {
    6.0 * n as f64
}

/// One primitive in pixel space; `area` (left, top, right, bottom) is the plot area, which a
/// label is kept inside of: "SYN" at the left edge was clipped to "YN" (issue 17).
fn prim(
    o: &mut String,
    shape: &Shape,
    color: Color,
    head: f64,
    sx: &dyn Fn(f64) -> f64,
    sy: &dyn Fn(f64) -> f64,
    area: (f64, f64, f64, f64),
) {
    let c = color.svg();
    match shape {
        Shape::Line { x1, y1, x2, y2 } => {
            let _ = write!(
                o,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}"/>"#,
                sx(*x1),
                sy(*y1),
                sx(*x2),
                sy(*y2)
            );
        }
        Shape::Arrow { x, y, way } => {
            let (px, py) = (sx(*x), sy(*y));
            // Tip at the point; the head opens away from the way it points.
            let back = if *way == Way::Up { head } else { -head };
            let half = ARROW_W * head / ARROW_H;
            let _ = write!(
                o,
                r#"<path class="arrow" d="M{:.1} {:.1}L{px:.1} {py:.1}L{:.1} {:.1}" stroke="{c}"/>"#,
                px - half,
                py + back,
                px + half,
                py + back
            );
        }
        Shape::Tick { x, y, way } => {
            let (px, py) = (sx(*x), sy(*y));
            let (dx, dy) = match way {
                Way::Up => (0.0, -TICK),
                Way::Down => (0.0, TICK),
                Way::Horizontal => (TICK / 2.0, 0.0),
            };
            let (ax, ay) = if *way == Way::Horizontal { (px - dx, py) } else { (px, py) };
            let _ = write!(
                o,
                r#"<line class="tick" x1="{ax:.1}" y1="{ay:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}"/>"#,
                px + dx,
                py + dy
            );
        }
        Shape::Diamond { x, y } => {
            let (px, py) = (sx(*x), sy(*y));
            let _ = write!(
                o,
                r#"<path class="diamond" d="M{px:.1} {:.1}L{:.1} {py:.1}L{px:.1} {:.1}L{:.1} {py:.1}Z" stroke="{c}"/>"#,
                py - SYM,
                px + SYM,
                py + SYM,
                px - SYM
            );
        }
        Shape::Dot { x, y } => {
            let _ = write!(o, r#"<circle cx="{:.1}" cy="{:.1}" r="1.6" fill="{c}" stroke="none"/>"#, sx(*x), sy(*y));
        }
        Shape::Polyline { pts } => {
            o.push_str(r#"<polyline points=""#);
            for (i, (x, y)) in pts.iter().enumerate() {
                let _ = write!(o, "{}{:.1},{:.1}", if i > 0 { " " } else { "" }, sx(*x), sy(*y));
            }
            let _ = write!(o, r#"" stroke="{c}" stroke-width="1.5" stroke-linejoin="round"/>"#);
        }
        Shape::Rect { x1, y1, x2, y2 } => {
            let (ax, bx, ay, by) = (sx(*x1), sx(*x2), sy(*y1), sy(*y2));
            let _ = write!(
                o,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{c}" fill-opacity="0.55" stroke="{c}"/>"#,
                ax.min(bx),
                ay.min(by),
                (bx - ax).abs(),
                (by - ay).abs()
            );
        }
        Shape::Box { x, y } => {
            let _ = write!(
                o,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" stroke="{c}"/>"#,
                sx(*x) - SYM,
                sy(*y) - SYM,
                2.0 * SYM,
                2.0 * SYM
            );
        }
        Shape::Text { x, y, anchor, text } => {
            let (px, py) = (sx(*x), sy(*y));
            let (tx, ty, ta) = match anchor {
                Anchor::Above => (px, py - ARROW_H - 2.0, "middle"),
                Anchor::Below => (px, py + ARROW_H + 11.0, "middle"),
                Anchor::Left => (px - 4.0, py + 4.0, "end"),
                Anchor::Right => (px + 4.0, py + 4.0, "start"),
                Anchor::Center => (px, py + 4.0, "middle"),
            };
            let (tx, ta) = inside(tx, ta, label_width(text.chars().count()), area);
            // Baselines: the text's 8 px above it and 3 below it stay inside too.
            let ty = ty.clamp(area.1 + 9.0, (area.3 - 3.0).max(area.1 + 9.0));
            let _ = write!(
                o,
                r#"<text x="{tx:.1}" y="{ty:.1}" text-anchor="{ta}" fill="{c}" stroke="none" font-size="10">{}</text>"#,
                esc(text)
            );
        }
    }
}

/// A label at `tx` with `anchor`, `w` px wide, moved (and turned, for a start or end anchor)
/// so that it lies inside `area`'s left and right edges (when it fits at all).
fn inside(tx: f64, anchor: &'static str, w: f64, area: (f64, f64, f64, f64)) -> (f64, &'static str) {
    let (left, right) = (area.0 + 1.0, area.2 - 1.0);
    match anchor {
        "start" if tx + w > right => ((tx - 8.0).min(right), "end"),
        "end" if tx - w < left => ((tx + 8.0).max(left), "start"),
        "middle" if right - left > w => (tx.clamp(left + w / 2.0, right - w / 2.0), "middle"),
        _ => (tx, anchor),
    }
}

const ROW: f64 = 13.0;

fn legend_size(fig: &Figure) -> (f64, f64) {
    let bw = 12.0 + 30.0 + 5.6 * fig.legend.iter().map(|e| e.text.chars().count()).max().unwrap_or(0) as f64;
    (bw, 8.0 + ROW * fig.legend.len() as f64)
}

/// The legend at `(lx, ly)`, `bw` × `bh`, its entries in `cols` columns.
fn legend(o: &mut String, fig: &Figure, (lx, ly): (f64, f64), bw: f64, bh: f64, cols: usize) {
    if fig.legend.is_empty() {
        return;
    }
    let row = ROW;
    let rows = fig.legend.len().div_ceil(cols.max(1));
    let colw = bw / cols.max(1) as f64;
    let _ = writeln!(
        o,
        r##"<g class="legend" fill="none"><rect x="{lx:.1}" y="{ly:.1}" width="{bw:.1}" height="{bh:.1}" fill="#ffffff" fill-opacity="0.85" stroke="#cccccc"/>"##
    );
    for (i, e) in fig.legend.iter().enumerate() {
        let cy = ly + 4.0 + row * ((i % rows) as f64 + 0.5);
        let sx0 = lx + 8.0 + colw * (i / rows) as f64;
        let c = e.color.svg();
        match e.sample {
            Sample::Segment | Sample::Bar => {
                let _ = write!(
                    o,
                    r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}"/>"#,
                    sx0 + 10.0,
                    cy - 5.0,
                    sx0 + 10.0,
                    cy + 5.0
                );
                if e.sample == Sample::Segment {
                    let _ = write!(
                        o,
                        r#"<path d="M{:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}M{:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}" stroke="{c}"/>"#,
                        sx0 + 7.0,
                        cy - 2.0,
                        sx0 + 10.0,
                        cy - 5.0,
                        sx0 + 13.0,
                        cy - 2.0,
                        sx0 + 7.0,
                        cy + 2.0,
                        sx0 + 10.0,
                        cy + 5.0,
                        sx0 + 13.0,
                        cy + 2.0
                    );
                } else {
                    let _ = write!(
                        o,
                        r#"<path d="M{:.1} {:.1}H{:.1}M{:.1} {:.1}H{:.1}" stroke="{c}"/>"#,
                        sx0 + 7.5,
                        cy - 5.0,
                        sx0 + 12.5,
                        sx0 + 7.5,
                        cy + 5.0,
                        sx0 + 12.5
                    );
                }
            }
            Sample::Step => {
                let _ = write!(
                    o,
                    r#"<path d="M{sx0:.1} {:.1}H{:.1}V{:.1}H{:.1}" stroke="{c}"/>"#,
                    cy + 4.0,
                    sx0 + 10.0,
                    cy - 4.0,
                    sx0 + 20.0
                );
            }
            Sample::DownTick | Sample::UpTick => {
                let d = if e.sample == Sample::DownTick { TICK } else { -TICK };
                let _ = write!(
                    o,
                    r#"<path d="M{sx0:.1} {cy:.1}H{:.1}M{:.1} {cy:.1}V{:.1}" stroke="{c}"/>"#,
                    sx0 + 20.0,
                    sx0 + 10.0,
                    cy + d
                );
            }
            Sample::Line => {
                let _ = write!(o, r#"<path d="M{sx0:.1} {cy:.1}H{:.1}" stroke="{c}" stroke-width="1.5"/>"#, sx0 + 20.0);
            }
            Sample::Dot => {
                let _ = write!(o, r#"<circle cx="{:.1}" cy="{cy:.1}" r="2" fill="{c}"/>"#, sx0 + 10.0);
            }
            Sample::Fill => {
                let _ = write!(
                    o,
                    r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{c}" fill-opacity="0.55" stroke="{c}"/>"#,
                    sx0 + 5.0,
                    cy - 5.0
                );
            }
            Sample::Letter(s) => {
                let _ = write!(
                    o,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="{c}" font-size="10">{}</text>"#,
                    sx0 + 10.0,
                    cy + 4.0,
                    esc(s)
                );
            }
        }
        let _ = writeln!(
            o,
            r##"<text x="{:.1}" y="{:.1}" fill="#222222" font-size="10">{}</text>"##,
            sx0 + 28.0,
            cy + 4.0,
            esc(&e.text)
        );
    }
    let _ = writeln!(o, "</g>");
}

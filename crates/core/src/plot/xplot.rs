//! xplot output (`.xpl`, tcptrace's graph format; grammar: xplot.org `get_input`).
//!
//! The header is `double double`: x is seconds since the connection's first packet, y the
//! relative sequence number (first payload byte 0), both printed as plain decimals. Then
//! `title`, `xlabel`, `ylabel` (each followed by its text on the next line), the commands, and
//! `go`. Colours are set by a bare colour line whenever the colour changes (tcptrace's
//! permanent colour), using tcptrace's names (`white` is the foreground). Commands: `line`,
//! `uarrow`/`darrow`, `utick`/`dtick`/`htick`, `diamond`, `box`, and `atext`/`btext`/`ltext`/
//! `rtext`/`ctext` with the text on the following line. The legend is written as `;` comments
//! (xplot has none). `dot` and polylines (as `line` pairs) serve the other plot kinds; a
//! histogram bar is its outline. The figure arrives aggregated as the caller chose (the CLI
//! uses four times the SVG's pixel columns, so the file stays bounded and xplot can zoom in
//! fourfold before it shows the aggregation).

use std::fmt::Write as _;

use super::{Anchor, Color, Figure, Shape, Way};

/// Renders `fig` as an xplot file.
pub fn render(fig: &Figure) -> String {
    let mut o = String::with_capacity(64 + fig.marks.len() * 96);
    // Writing to a String cannot fail; results are ignored for that reason.
    let _ = writeln!(o, "double double");
    let _ = writeln!(o, "title\n{}", one_line(&fig.title));
    let _ = writeln!(o, "xlabel\n{}", one_line(&fig.x.label));
    let _ = writeln!(o, "ylabel\n{}", one_line(&fig.y.label));
    for e in &fig.legend {
        let _ = writeln!(o, "; legend: {} = {}", e.color.xplot(), one_line(&e.text));
    }
    for r in &fig.remarks {
        let _ = writeln!(o, "; {}", one_line(r));
    }
    let mut current: Option<Color> = None;
    for m in &fig.marks {
        for p in &m.prims {
            if current != Some(p.color) {
                let _ = writeln!(o, "{}", p.color.xplot());
                current = Some(p.color);
            }
            match &p.shape {
                Shape::Line { x1, y1, x2, y2 } => {
                    let _ = writeln!(o, "line {x1} {y1} {x2} {y2}");
                }
                Shape::Arrow { x, y, way } => {
                    let cmd = if *way == Way::Up { "uarrow" } else { "darrow" };
                    let _ = writeln!(o, "{cmd} {x} {y}");
                }
                Shape::Tick { x, y, way } => {
                    let cmd = match way {
                        Way::Up => "utick",
                        Way::Down => "dtick",
                        Way::Horizontal => "htick",
                    };
                    let _ = writeln!(o, "{cmd} {x} {y}");
                }
                Shape::Diamond { x, y } => {
                    let _ = writeln!(o, "diamond {x} {y}");
                }
                Shape::Dot { x, y } => {
                    let _ = writeln!(o, "dot {x} {y}");
                }
                Shape::Polyline { pts } => {
                    for w in pts.windows(2) {
                        let _ = writeln!(o, "line {} {} {} {}", w[0].0, w[0].1, w[1].0, w[1].1);
                    }
                }
                Shape::Rect { x1, y1, x2, y2 } => {
                    let _ = writeln!(o, "line {x1} {y1} {x1} {y2}\nline {x1} {y2} {x2} {y2}\nline {x2} {y2} {x2} {y1}");
                }
                Shape::Box { x, y } => {
                    let _ = writeln!(o, "box {x} {y}");
                }
                Shape::Text { x, y, anchor, text } => {
                    let cmd = match anchor {
                        Anchor::Above => "atext",
                        Anchor::Below => "btext",
                        Anchor::Left => "ltext",
                        Anchor::Right => "rtext",
                        Anchor::Center => "ctext",
                    };
                    let _ = writeln!(o, "{cmd} {x} {y}\n{}", one_line(text));
                }
            }
        }
    }
    o.push_str("go\n");
    o
}

/// Text on one line, at most 1000 characters (xplot's line limit).
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ").chars().take(1000).collect()
}

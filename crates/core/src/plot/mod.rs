//! Plots: pure functions from [`crate::series`] to drawing primitives, and renderers.
//!
//! - [`Figure`] is what a plot is, independent of the output: axes with their ticks and labels,
//!   a legend, and [`Mark`]s (one per thing drawn: a segment, an ack step, a tick, a note), each
//!   a list of [`Prim`]itives in data coordinates (x = seconds since the connection's first
//!   packet, y = relative sequence number).
//! - [`tsg::tsg`] builds the time-sequence figure (the thesis, ch. 2.4) from a
//!   [`crate::series::tsg::Tsg`].
//! - [`svg::render`] writes SVG text; [`xplot::render`] writes tcptrace-compatible `.xpl`;
//!   [`make::png`] (feature `png`) rasterises the SVG.
//! - [`make::Request`] is one connection's plot from a trace, start to end (the pass, the
//!   limits, the figure): what `tcpscope plot` and Python's `tcpscope.plot` call; or, by
//!   [`make::Request::tables`], the series it is drawn from as tables ([`data`]: `plot --data`,
//!   Python's `tcpscope.series`).
//!
//! Primitives carry the marks of xplot (tcptrace's viewer): lines, up and down arrowheads, up,
//! down and horizontal ticks, diamonds, boxes and text placed above, below, left, right or
//! centred on a point. The SVG renderer sizes arrowheads and ticks in pixels, as xplot does.

pub mod ack;
pub mod burst;
pub mod chart;
pub mod data;
pub mod dupack;
pub mod flight;
pub mod ladder;
pub mod lifeline;
pub mod make;
pub mod rtt;
pub mod ssize;
pub mod svg;
pub mod tput;
pub mod tsg;
pub mod xplot;

/// Colours, named as xplot names them. `Fg` is the foreground: white in xplot (black
/// background), black in SVG (white background).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    /// Foreground: new data.
    Fg,
    /// Ack line.
    Green,
    /// Retransmissions.
    Red,
    /// Unused by tsg for now (tcptrace: hardware duplicates).
    Blue,
    /// Window line.
    Yellow,
    /// SACK blocks.
    Purple,
    /// SYN, FIN, zero-window probes.
    Orange,
    /// RST, zero windows.
    Magenta,
    /// Out-of-order segments.
    Pink,
    /// Axes and grid.
    Gray,
}

impl Color {
    /// The xplot colour name.
    pub fn xplot(self) -> &'static str {
        match self {
            Color::Fg => "white",
            Color::Green => "green",
            Color::Red => "red",
            Color::Blue => "blue",
            Color::Yellow => "yellow",
            Color::Purple => "purple",
            Color::Orange => "orange",
            Color::Magenta => "magenta",
            Color::Pink => "pink",
            Color::Gray => "gray20",
        }
    }
    /// The SVG colour (chosen to read on white: the window line is a dark yellow).
    pub fn svg(self) -> &'static str {
        match self {
            Color::Fg => "#000000",
            Color::Green => "#1a9a3a",
            Color::Red => "#e0181c",
            Color::Blue => "#2b6fd6",
            Color::Yellow => "#c99a00",
            Color::Purple => "#8a2be2",
            Color::Orange => "#f07800",
            Color::Magenta => "#d0108b",
            Color::Pink => "#f06eaa",
            Color::Gray => "#888888",
        }
    }
}

/// Which way an arrowhead or tick points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Up (xplot `uarrow`, `utick`).
    Up,
    /// Down (`darrow`, `dtick`).
    Down,
    /// Horizontal, for ticks only (`htick`).
    Horizontal,
}

/// Where text sits relative to its point (xplot `atext`, `btext`, `ltext`, `rtext`, `ctext`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// Above the point.
    Above,
    /// Below it.
    Below,
    /// To its left.
    Left,
    /// To its right.
    Right,
    /// Centred on it.
    Center,
}

/// A drawing primitive in data coordinates.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A straight line.
    Line {
        /// Start x.
        x1: f64,
        /// Start y.
        y1: f64,
        /// End x.
        x2: f64,
        /// End y.
        y2: f64,
    },
    /// An arrowhead whose tip is at the point.
    Arrow {
        /// x.
        x: f64,
        /// y.
        y: f64,
        /// Pointing up or down.
        way: Way,
    },
    /// A short tick from the point.
    Tick {
        /// x.
        x: f64,
        /// y.
        y: f64,
        /// Direction.
        way: Way,
    },
    /// A small diamond centred on the point.
    Diamond {
        /// x.
        x: f64,
        /// y.
        y: f64,
    },
    /// A small square centred on the point.
    Box {
        /// x.
        x: f64,
        /// y.
        y: f64,
    },
    /// A small filled dot (xplot `dot`).
    Dot {
        /// x.
        x: f64,
        /// y.
        y: f64,
    },
    /// Connected straight lines through the points (xplot: one `line` per pair).
    Polyline {
        /// The points, in drawing order.
        pts: Vec<(f64, f64)>,
    },
    /// A filled rectangle between two corners (a histogram bar; xplot: its outline).
    Rect {
        /// One corner's x.
        x1: f64,
        /// One corner's y.
        y1: f64,
        /// The other corner's x.
        x2: f64,
        /// The other corner's y.
        y2: f64,
    },
    /// Text near the point.
    Text {
        /// x.
        x: f64,
        /// y.
        y: f64,
        /// Placement.
        anchor: Anchor,
        /// One line of text.
        text: String,
    },
}

/// A primitive and its colour.
#[derive(Clone, Debug, PartialEq)]
pub struct Prim {
    /// What to draw.
    pub shape: Shape,
    /// In which colour.
    pub color: Color,
}

/// One thing on the plot, made of primitives: a data segment, an ack step, a SACK block, a note.
#[derive(Clone, Debug)]
pub struct Mark {
    /// What it is (e.g. `seg new`, `seg rexmit`, `ack step`, `ack dup`, `win step`, `win dup`,
    /// `sack`, `note syn`); the SVG class. Documented in `docs/plots.md`.
    pub class: &'static str,
    /// The frame it comes from (the first, for an aggregate).
    pub frame: Option<u64>,
    /// Number of packets it stands for (more than 1 for an aggregate).
    pub count: u32,
    /// The primitives.
    pub prims: Vec<Prim>,
}

/// How an axis labels its ticks, kept so that plots compared on one scale can share a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisStyle {
    /// Plain numbers at round values.
    Linear,
    /// Values in base units (bits/s, bytes) labelled with a decimal prefix chosen from the
    /// range (k, M, G); the title gets the prefixed unit.
    Si {
        /// The unit, e.g. `bit/s`.
        unit: &'static str,
    },
    /// Values are log10 of the quantity; ticks at powers of ten, labelled with prefixes.
    Log10 {
        /// The unit of the quantity.
        unit: &'static str,
    },
}

/// An axis: range, tick positions with labels, and a title.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Axis title.
    pub label: String,
    /// Lowest value shown.
    pub min: f64,
    /// Highest value shown.
    pub max: f64,
    /// Tick positions and their labels.
    pub ticks: Vec<(f64, String)>,
    /// How ticks are labelled.
    pub style: AxisStyle,
    /// The title without the unit [`AxisStyle::Si`] adds.
    pub name: String,
}

/// A decimal prefix for values up to `max`: (divisor, prefix).
pub fn si_prefix(max: f64) -> (f64, &'static str) {
    let m = max.abs();
    [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")].into_iter().find(|(d, _)| m >= *d).unwrap_or((1.0, ""))
}

/// `v` with a decimal prefix and up to three significant digits, e.g. `12.5 M`.
pub fn si(v: f64) -> String {
    let (d, p) = si_prefix(v);
    let x = v / d;
    let s = if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    format!("{s} {p}")
}

fn round_ticks(min: f64, max: f64, n: usize, div: f64) -> Vec<(f64, String)> {
    let raw = (max - min) / div / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
    let mut ticks = Vec::new();
    let mut k = (min / div / step).ceil();
    while k * step <= max / div + step * 1e-9 {
        let v = k * step;
        let shown = if v.abs() < step * 1e-9 { 0.0 } else { v };
        ticks.push((v * div, format!("{shown:.decimals$}")));
        k += 1.0;
    }
    ticks
}

impl Axis {
    /// An axis over `[min, max]` with about `n` ticks at round values (1, 2 or 5 × 10^k).
    pub fn new(label: &str, min: f64, max: f64, n: usize) -> Axis {
        Axis::styled(label, AxisStyle::Linear, min, max, n)
    }

    /// An axis of the given style (see [`AxisStyle`]) over `[min, max]` with about `n` ticks.
    pub fn styled(name: &str, style: AxisStyle, min: f64, max: f64, n: usize) -> Axis {
        let (min, max) = if max > min { (min, max) } else { (min - 0.5, min + 0.5) };
        let (label, ticks) = match style {
            AxisStyle::Linear => (name.to_string(), round_ticks(min, max, n, 1.0)),
            AxisStyle::Si { unit } => {
                let (d, p) = si_prefix(min.abs().max(max.abs()));
                (format!("{name} ({p}{unit})"), round_ticks(min, max, n, d))
            }
            AxisStyle::Log10 { unit } => {
                let ticks =
                    (min.ceil() as i64..=max.floor() as i64).map(|e| (e as f64, si(10f64.powi(e as i32)))).collect();
                (format!("{name} ({unit}, log scale)"), ticks)
            }
        };
        Axis { label, min, max, ticks, style, name: name.to_string() }
    }

    /// The same axis over another range (for plots compared on one scale).
    pub fn rescaled(&self, min: f64, max: f64) -> Axis {
        Axis::styled(&self.name, self.style, min, max, self.ticks.len().clamp(4, 10))
    }
}

/// What a legend entry shows next to its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sample {
    /// A vertical segment with arrowheads.
    Segment,
    /// A stair step.
    Step,
    /// A down tick.
    DownTick,
    /// An up tick.
    UpTick,
    /// A vertical bar with horizontal ticks (a SACK block).
    Bar,
    /// A letter, the note's label.
    Letter(&'static str),
    /// A line (a series drawn as a line).
    Line,
    /// A dot.
    Dot,
    /// A filled bar.
    Fill,
}

/// One legend entry.
#[derive(Clone, Debug)]
pub struct LegendEntry {
    /// Colour of the sample.
    pub color: Color,
    /// What the sample looks like.
    pub sample: Sample,
    /// The explanation.
    pub text: String,
}

/// A complete plot, independent of the output format.
#[derive(Clone, Debug)]
pub struct Figure {
    /// Title.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// Everything drawn, in drawing order.
    pub marks: Vec<Mark>,
    /// Legend entries, for the marks present.
    pub legend: Vec<LegendEntry>,
    /// Remarks printed under the plot (e.g. that segments were aggregated).
    pub remarks: Vec<String>,
}

/// Puts figures on one scale: every axis gets the union of their ranges (thesis figures 3.7
/// and 3.8 compare two connections this way).
pub fn share_scale(figs: &mut [Figure]) {
    let union = |f: &dyn Fn(&Figure) -> &Axis| {
        figs.iter().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), a| (lo.min(a.min), hi.max(a.max)))
    };
    let (x0, x1) = union(&|f| &f.x);
    let (y0, y1) = union(&|f| &f.y);
    for f in figs.iter_mut() {
        f.x = f.x.rescaled(x0, x1);
        f.y = f.y.rescaled(y0, y1);
        // Marker lines (class `avg`) span the whole height: stretch them to the new range.
        for m in f.marks.iter_mut().filter(|m| m.class == "avg") {
            for p in &mut m.prims {
                if let Shape::Line { y1: a, y2: b, .. } = &mut p.shape {
                    (*a, *b) = (y0, y1);
                }
            }
        }
    }
}

/// What every plot kind's view has in common: the part of the data to show, the title, and
/// how many pixel columns there are to aggregate into.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// Start, seconds since the connection's first packet (`None`: from the start).
    pub from_s: Option<f64>,
    /// End (`None`: to the last packet).
    pub to_s: Option<f64>,
    /// Title (`None`: connection, direction and endpoints).
    pub title: Option<String>,
    /// Pixel columns: more points than this are drawn per column (`None`: never aggregate).
    pub columns: Option<u32>,
    /// Moving-average window (tput) or counting interval (dupack), seconds.
    pub window_s: Option<f64>,
}

/// Default title of a plot of one connection and direction.
pub fn title(conn: usize, dir: crate::analysis::Dir, info: &crate::flow::ConnInfo, what: &str) -> String {
    let (from, to) = match dir {
        crate::analysis::Dir::AtoB => (info.a, info.b),
        crate::analysis::Dir::BtoA => (info.b, info.a),
    };
    format!("connection {} {}: {from} → {to} ({what})", conn + 1, dir.name())
}

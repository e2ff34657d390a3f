//! Plots: pure functions from [`crate::series`] to drawing primitives, and renderers.
//!
//! - [`Figure`] is what a plot is, independent of the output: axes with their ticks and labels,
//!   a legend, and [`Mark`]s (one per thing drawn: a segment, an ack step, a tick, a note), each
//!   a list of [`Prim`]itives in data coordinates (x = seconds since the connection's first
//!   packet, y = relative sequence number).
//! - [`tsg::tsg`] builds the time-sequence figure (the thesis, ch. 2.4) from a
//!   [`crate::series::tsg::Tsg`].
//! - [`svg::render`] writes SVG text; [`xplot::render`] writes tcptrace-compatible `.xpl`.
//!
//! Primitives carry the marks of xplot (tcptrace's viewer): lines, up and down arrowheads, up,
//! down and horizontal ticks, diamonds, boxes and text placed above, below, left, right or
//! centred on a point. The SVG renderer sizes arrowheads and ticks in pixels, as xplot does.

pub mod rtt;
pub mod svg;
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
}

impl Axis {
    /// An axis over `[min, max]` with about `n` ticks at round values (1, 2 or 5 × 10^k).
    pub fn new(label: &str, min: f64, max: f64, n: usize) -> Axis {
        let (min, max) = if max > min { (min, max) } else { (min - 0.5, min + 0.5) };
        let raw = (max - min) / n.max(1) as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
        let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
        let mut ticks = Vec::new();
        let mut v = (min / step).ceil() * step;
        while v <= max + step * 1e-9 {
            let shown = if v.abs() < step * 1e-9 { 0.0 } else { v };
            ticks.push((v, format!("{shown:.decimals$}")));
            v += step;
        }
        Axis { label: label.to_string(), min, max, ticks }
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

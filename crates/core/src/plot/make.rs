//! One connection's figure from a trace: the pass with the series sink of the plot's kind, the
//! `from`/`to` and sequence limits resolved against that connection, the figure built. What
//! `tcpscope plot` and the Python package's `tcpscope.plot` both call, so that they draw the
//! same bytes (docs/plots.md, docs/python.md); several connections on one scale (`--with`)
//! and where the bytes go stay with the caller.
//!
//! ```
//! use tcpscope_core::plot::make::{Kind, Request};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap");
//! let req = Request::new(path.into(), 1, Kind::Tsg);
//! let (fig, _dir) = req.figure(&mut |_| Ok(())).unwrap();
//! let svg = tcpscope_core::plot::svg::render_row(&[fig], req.width, req.height);
//! assert!(svg.starts_with("<svg"));
//! ```

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::{Figure, View, data, ladder::LadderView, rtt::RttView, tsg::TsgView};
use crate::analysis::{Dir, Settings};
use crate::capture::time::TimeSpec;
use crate::pass::FileSummary;
use crate::seq::{SeqNum, offset_from};
use crate::series::{self, OneConnection, Origin, ack, burst, dupack, flight, ladder, rtt, ssize, states, tput, tsg};
use crate::table::Part;

/// What a plot of one connection draws (docs/plots.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Time-sequence (thesis ch. 2).
    Tsg,
    /// RTT samples over time.
    Rtt,
    /// Throughput.
    Tput,
    /// Bytes in flight.
    Flight,
    /// Segment sizes.
    Ssize,
    /// The receiver's ACK delay over time and its histogram.
    Ack,
    /// Instantaneous rates (thesis ch. 4).
    Burst,
    /// Their distribution.
    BurstCdf,
    /// Duplicate ACKs against retransmissions.
    Dupack,
    /// Timing chart of both directions.
    Ladder,
    /// State diagram of both endpoints.
    States,
}

impl Kind {
    /// Every kind, in the order docs/plots.md gives them.
    pub const ALL: [Kind; 11] = [
        Kind::Tsg,
        Kind::Rtt,
        Kind::Tput,
        Kind::Flight,
        Kind::Ssize,
        Kind::Ack,
        Kind::Burst,
        Kind::BurstCdf,
        Kind::Dupack,
        Kind::Ladder,
        Kind::States,
    ];

    /// The name `--kind` takes.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tsg => "tsg",
            Kind::Rtt => "rtt",
            Kind::Tput => "tput",
            Kind::Flight => "flight",
            Kind::Ssize => "ssize",
            Kind::Ack => "ack",
            Kind::Burst => "burst",
            Kind::BurstCdf => "burst-cdf",
            Kind::Dupack => "dupack",
            Kind::Ladder => "ladder",
            Kind::States => "states",
        }
    }

    /// The kind of a name [`Kind::name`] gives.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Whether the plot draws both directions (the direction asked for is not used).
    pub fn both_ways(self) -> bool {
        matches!(self, Kind::Ladder | Kind::States)
    }
}

/// Why a figure could not be made.
#[derive(Debug)]
pub enum PlotError {
    /// The request does not fit the trace or is wrong in itself (a bad limit, connection 0, a
    /// connection the trace does not have): `tcpscope plot` exits 2.
    Usage(String),
    /// The trace could not be read, or holds no packets of the connection in the time limits:
    /// exits 1.
    Input(String),
    /// The caller's report of the files read failed.
    Io(io::Error),
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlotError::Usage(m) | PlotError::Input(m) => f.write_str(m),
            PlotError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PlotError {}

/// One connection's plot, as `tcpscope plot`'s flags of the same names ask for it.
#[derive(Clone, Debug)]
pub struct Request {
    /// A capture file or a ring directory (read whole, as one trace).
    pub trace: PathBuf,
    /// Connection id, 1-based (as `tcpscope conns` shows it).
    pub conn: usize,
    /// Direction whose data is drawn; `None`: the one that sent the most payload bytes.
    pub dir: Option<Dir>,
    /// What to draw.
    pub kind: Kind,
    /// Start: seconds since the connection's first packet, or an absolute time.
    pub from: Option<String>,
    /// End (same forms as `from`).
    pub to: Option<String>,
    /// Lowest sequence number shown (relative, or absolute with `abs_seq`).
    pub seq_from: Option<i64>,
    /// Highest sequence number shown.
    pub seq_to: Option<i64>,
    /// `seq_from`/`seq_to` are sequence numbers as on the wire.
    pub abs_seq: bool,
    /// Image width, pixels.
    pub width: u32,
    /// Image height, pixels.
    pub height: u32,
    /// Title (`None`: connection, direction and endpoints).
    pub title: Option<String>,
    /// Window scale to assume when the handshake was not captured.
    pub wscale: Option<u8>,
    /// tput: moving-average window; dupack: counting interval (seconds).
    pub window_s: Option<f64>,
    /// The zone absolute times without an offset are in.
    pub zone: jiff::tz::TimeZone,
}

impl Request {
    /// A plot of `kind` of connection `conn` with `tcpscope plot`'s defaults (1200 × 750
    /// pixels, no limits, times in UTC).
    pub fn new(trace: PathBuf, conn: usize, kind: Kind) -> Request {
        Request {
            trace,
            conn,
            dir: None,
            kind,
            from: None,
            to: None,
            seq_from: None,
            seq_to: None,
            abs_seq: false,
            width: 1200,
            height: 750,
            title: None,
            wscale: None,
            window_s: None,
            zone: jiff::tz::TimeZone::UTC,
        }
    }

    /// The limits given that this kind does not use (named by `tcpscope plot`'s flags), each a
    /// sentence for the user: every kind accepts every flag, so that one command line can be
    /// tried with several kinds, but none should be ignored silently.
    pub fn unused(&self) -> Vec<String> {
        let k = self.kind;
        let mut notes = Vec::new();
        if (self.from.is_some() || self.to.is_some()) && matches!(k, Kind::Burst | Kind::BurstCdf | Kind::States) {
            notes.push(format!("{} has no time axis: --from/--to do not apply (the whole connection)", k.name()));
        }
        if (self.seq_from.is_some() || self.seq_to.is_some()) && k != Kind::Tsg {
            notes.push(format!("--seq-from/--seq-to apply to tsg only, not to {}", k.name()));
        }
        if self.window_s.is_some() && !matches!(k, Kind::Tput | Kind::Dupack) {
            notes.push(format!("--window applies to tput and dupack only, not to {}", k.name()));
        }
        notes
    }

    /// Checks what can be checked before reading the trace (named by `tcpscope plot`'s
    /// flags).
    pub fn check(&self) -> Result<(), PlotError> {
        let usage = |m: &str| Err(PlotError::Usage(m.to_string()));
        if self.conn == 0 {
            return usage("connection ids start at 1 (see `tcpscope conns`)");
        }
        if self.window_s.is_some_and(|v| !v.is_finite()) {
            return usage("--window must be a number of seconds");
        }
        if self.window_s.is_some_and(|w| w <= 0.0) {
            return usage("--window must be above 0");
        }
        if let (Some(a), Some(b)) = (self.seq_from, self.seq_to)
            && b <= a
        {
            return usage("--seq-to must be above --seq-from");
        }
        if !(200..=20000).contains(&self.width) || !(150..=20000).contains(&self.height) {
            return usage("the width must be 200 to 20000 pixels, the height 150 to 20000");
        }
        if self.wscale.is_some_and(|w| w > 14) {
            return usage("--wscale must be 0 to 14");
        }
        Ok(())
    }

    /// Runs the pass for the connection and builds its figure: one read of the trace, for the
    /// series and for what the limits are resolved against. `columns`: the pixel columns
    /// points are aggregated to ([`super::svg::columns`] of the width for SVG and PNG; `None`
    /// for every point). `files` is told of the files read (their damage, a read error) before
    /// any error about the connection. Returns the figure and the direction drawn.
    pub fn figure_in(
        &self,
        columns: Option<u32>,
        files: &mut dyn FnMut(&FileSummary) -> io::Result<()>,
    ) -> Result<(Figure, Dir), PlotError> {
        self.check()?;
        let (mut fig, dir) = match self.kind {
            Kind::Tsg => {
                let (s, origin, dir) = self.series::<tsg::TsgSink>(self.dir, files)?;
                let (from_s, to_s) = self.limits(&origin)?;
                let (seq_from, seq_to) = self.seq_limits(dir, origin.base(dir))?;
                let v = TsgView { from_s, to_s, seq_from, seq_to, columns, title: self.title.clone() };
                (super::tsg::tsg(&s, &v), dir)
            }
            Kind::Rtt => {
                let (s, origin, dir) = self.series::<rtt::RttSink>(self.dir, files)?;
                let (from_s, to_s) = self.limits(&origin)?;
                (super::rtt::rtt(&s, &RttView { from_s, to_s, title: self.title.clone(), columns }), dir)
            }
            Kind::Tput => {
                let (s, origin, dir) = self.series::<tput::TputSink>(self.dir, files)?;
                (super::tput::tput(&s, &self.view(&origin, columns)?), dir)
            }
            Kind::Flight => {
                let (s, origin, dir) = self.series::<flight::FlightSink>(self.dir, files)?;
                (super::flight::flight(&s, &self.view(&origin, columns)?), dir)
            }
            Kind::Ssize => {
                let (s, origin, dir) = self.series::<ssize::SsizeSink>(self.dir, files)?;
                (super::ssize::ssize(&s, &self.view(&origin, columns)?), dir)
            }
            Kind::Ack => {
                let (s, origin, dir) = self.series::<ack::AckSink>(self.dir, files)?;
                (super::ack::ack(&s, &self.view(&origin, columns)?), dir)
            }
            Kind::Burst => {
                let (s, origin, dir) = self.series::<burst::BurstSink>(self.dir, files)?;
                (super::burst::burst(&s, &self.view(&origin, columns)?), dir)
            }
            Kind::BurstCdf => {
                let (s, origin, dir) = self.series::<burst::BurstSink>(self.dir, files)?;
                (super::burst::burst_cdf(&s, &self.view(&origin, columns)?), dir)
            }
            Kind::Dupack => {
                let (s, origin, dir) = self.series::<dupack::DupackSink>(self.dir, files)?;
                (super::dupack::dupack(&s, &self.view(&origin, columns)?), dir)
            }
            Kind::Ladder | Kind::States => {
                // Both directions: the sink ignores the direction.
                let area = super::svg::area(self.width, self.height);
                if self.kind == Kind::Ladder {
                    let (l, origin, _) = self.series::<ladder::LadderSink>(Some(Dir::AtoB), files)?;
                    let (from_s, to_s) = self.limits(&origin)?;
                    let v = LadderView { from_s, to_s, title: self.title.clone(), area_px: area };
                    return Ok((super::ladder::ladder(&l, &v), Dir::AtoB));
                }
                let (s, _, _) = self.series::<states::StatesSink>(Some(Dir::AtoB), files)?;
                return Ok((super::ladder::states(&s, self.title.clone(), area), Dir::AtoB));
            }
        };
        if self.dir.is_none() && self.title.is_none() {
            // Say that the direction was chosen, and by what.
            fig.title.push_str(" · the direction with the most data");
        }
        Ok((fig, dir))
    }

    /// [`Request::figure_in`] aggregated to the pixel columns of the width (SVG, PNG).
    pub fn figure(&self, files: &mut dyn FnMut(&FileSummary) -> io::Result<()>) -> Result<(Figure, Dir), PlotError> {
        self.figure_in(Some(super::svg::columns(self.width)), files)
    }

    /// The SVG of the figure (one plot, as `tcpscope plot -o FILE.svg` writes it) and the
    /// direction drawn.
    pub fn svg(&self, files: &mut dyn FnMut(&FileSummary) -> io::Result<()>) -> Result<(String, Dir), PlotError> {
        let (fig, dir) = self.figure(files)?;
        Ok((super::svg::render_row(std::slice::from_ref(&fig), self.width, self.height), dir))
    }

    /// The series the plot is drawn from, as tables ([`super::data`]): every point in the
    /// time window (`from`/`to`, checked as the drawing's; the sequence limits, the size and
    /// the title are the drawing's only), and the direction they are of. The same pass as the
    /// figure's.
    pub fn tables(&self, files: &mut dyn FnMut(&FileSummary) -> io::Result<()>) -> Result<(Vec<Part>, Dir), PlotError> {
        self.check()?;
        let iv = self.window_s;
        match self.kind {
            Kind::Tsg => self.parts::<tsg::TsgSink>(files, data::tsg),
            Kind::Rtt => self.parts::<rtt::RttSink>(files, data::rtt),
            Kind::Tput => self.parts::<tput::TputSink>(files, |s, w| data::tput(s, iv, w)),
            Kind::Flight => self.parts::<flight::FlightSink>(files, data::flight),
            Kind::Ssize => self.parts::<ssize::SsizeSink>(files, data::ssize),
            Kind::Ack => self.parts::<ack::AckSink>(files, data::ack),
            Kind::Burst | Kind::BurstCdf => self.parts::<burst::BurstSink>(files, |s, _| data::burst(s)),
            Kind::Dupack => self.parts::<dupack::DupackSink>(files, |s, w| data::dupack(s, iv, w)),
            // Both directions: the sink ignores the direction.
            Kind::Ladder => {
                let (l, origin, _) = self.series::<ladder::LadderSink>(Some(Dir::AtoB), files)?;
                Ok((data::ladder(l, self.window(&origin)?), Dir::AtoB))
            }
            Kind::States => {
                let (s, _, _) = self.series::<states::StatesSink>(Some(Dir::AtoB), files)?;
                Ok((data::states(&s), Dir::AtoB))
            }
        }
    }

    /// The tables `of` a series of one direction, in the time window.
    fn parts<M: OneConnection + Send>(
        &self,
        files: &mut dyn FnMut(&FileSummary) -> io::Result<()>,
        of: impl FnOnce(M::Series, data::Window) -> Vec<Part>,
    ) -> Result<(Vec<Part>, Dir), PlotError> {
        let (s, origin, dir) = self.series::<M>(self.dir, files)?;
        Ok((of(s, self.window(&origin)?), dir))
    }

    /// The time limits as the tables' [`data::Window`].
    fn window(&self, origin: &Origin) -> Result<data::Window, PlotError> {
        let (from_s, to_s) = self.limits(origin)?;
        Ok(data::Window { from_s, to_s })
    }

    /// The limits of the time axis, as a [`View`].
    fn view(&self, origin: &Origin, columns: Option<u32>) -> Result<View, PlotError> {
        let (from_s, to_s) = self.limits(origin)?;
        Ok(View { from_s, to_s, title: self.title.clone(), columns, window_s: self.window_s })
    }

    /// Runs the pass for the connection and returns the series and what the limits are
    /// resolved against, in direction `dir` or, when `None`, the one that carries the most
    /// data (both directions' series are collected in the one pass, and the other dropped).
    fn series<M: OneConnection + Send>(
        &self,
        dir: Option<Dir>,
        files: &mut dyn FnMut(&FileSummary) -> io::Result<()>,
    ) -> Result<(M::Series, Origin, Dir), PlotError> {
        let settings = Settings { assume_wscale: self.wscale, ..Settings::default() };
        let c = self.conn - 1;
        let input = |e: String| {
            let p = self.trace.display().to_string();
            PlotError::Input(if e.starts_with(&format!("{p}: ")) { e } else { format!("{p}: {e}") })
        };
        let (one, other, origin, summary) = match dir {
            Some(d) => {
                let ((s, o), summary) =
                    series::run_file(&self.trace, settings, (M::for_conn(c, d), Origin::new(c))).map_err(input)?;
                (Some((s, d)), None, o, summary)
            }
            None => {
                let sinks = (M::for_conn(c, Dir::AtoB), (M::for_conn(c, Dir::BtoA), Origin::new(c)));
                let ((a2b, (b2a, o)), summary) = series::run_file(&self.trace, settings, sinks).map_err(input)?;
                (Some((a2b, Dir::AtoB)), Some((b2a, Dir::BtoA)), o, summary)
            }
        };
        files(&summary).map_err(PlotError::Io)?;
        let dir = dir.unwrap_or_else(|| origin.busier());
        let sink = [one, other].into_iter().flatten().find(|(_, d)| *d == dir).map(|(s, _)| s);
        let series = sink.and_then(M::into_series).ok_or_else(|| self.no_conn())?;
        Ok((series, origin, dir))
    }

    fn no_conn(&self) -> PlotError {
        PlotError::Usage(format!("{}: no connection {}", self.trace.display(), self.conn))
    }

    /// The time limits, checked against the connection's span: a window without any of its
    /// packets is the same error as `stats --from` past the end (docs/cli.md#time-windows).
    fn limits(&self, origin: &Origin) -> Result<(Option<f64>, Option<f64>), PlotError> {
        let (Some(t0), Some(t1)) = (origin.t0, origin.t_last) else { return Err(self.no_conn()) };
        let (from_s, to_s) = self.time_limits(t0)?;
        let span_s = (t1 - t0) as f64 / 1e9;
        if from_s.is_some_and(|f| f > span_s) || to_s.is_some_and(|t| t < 0.0) {
            let show = |v: Option<f64>, none: &str| v.map_or(none.to_string(), |v| format!("{v} s"));
            return Err(PlotError::Input(format!(
                "{}: connection {} has no packets from {} to {} (it runs from 0 s to {span_s:.6} s)",
                self.trace.display(),
                self.conn,
                show(from_s, "its start"),
                show(to_s, "its end"),
            )));
        }
        Ok((from_s, to_s))
    }

    /// The `from`/`to` limits, in seconds since the connection's first packet (at `t0`, ns
    /// since the epoch). A bare number already is; an absolute time is resolved against the
    /// connection's first packet.
    fn time_limits(&self, t0: u64) -> Result<(Option<f64>, Option<f64>), PlotError> {
        let usage = |m: String| PlotError::Usage(m);
        let limit = |flag: &str, v: &Option<String>| -> Result<Option<f64>, PlotError> {
            let Some(v) = v else { return Ok(None) };
            if let Ok(secs) = v.trim().parse::<f64>() {
                return if secs.is_finite() { Ok(Some(secs)) } else { Err(usage(format!("{flag} {v:?}: not a time"))) };
            }
            let spec: TimeSpec = v.parse().map_err(|e| usage(format!("{flag}: {e}")))?;
            if let TimeSpec::Offset(ns) = spec {
                return Ok(Some(ns as f64 / 1e9));
            }
            let at = spec.resolve(t0, &self.zone).map_err(|e| usage(format!("{flag}: {e}")))?;
            Ok(Some((at as f64 - t0 as f64) / 1e9))
        };
        let (from, to) = (limit("--from", &self.from)?, limit("--to", &self.to)?);
        if let (Some(a), Some(b)) = (from, to)
            && b <= a
        {
            return Err(usage("--to must be after --from".to_string()));
        }
        Ok((from, to))
    }

    /// The sequence limits as relative offsets. Absolute ones (`abs_seq`) are turned into
    /// offsets by the direction's sequence base ([`offset_from`]).
    fn seq_limits(&self, dir: Dir, base: Option<SeqNum>) -> Result<(Option<i64>, Option<i64>), PlotError> {
        if !self.abs_seq || (self.seq_from.is_none() && self.seq_to.is_none()) {
            return Ok((self.seq_from, self.seq_to));
        }
        let base = base.ok_or_else(|| {
            PlotError::Usage(format!(
                "{}: connection {} has no {} segment",
                self.trace.display(),
                self.conn,
                dir.name()
            ))
        })?;
        let rel = |abs: i64| -> Result<i64, PlotError> {
            let abs = u32::try_from(abs)
                .map_err(|_| PlotError::Usage(format!("--abs-seq: {abs} is not a 32-bit sequence number")))?;
            Ok(offset_from(base, SeqNum(abs)).0)
        };
        Ok((self.seq_from.map(rel).transpose()?, self.seq_to.map(rel).transpose()?))
    }
}

/// A PNG of an SVG this module's renderer wrote ([`super::svg`]), rasterised with resvg, text
/// in the system's sans-serif font.
#[cfg(feature = "png")]
#[derive(Debug)]
pub struct Png {
    /// The PNG file's bytes.
    pub bytes: Vec<u8>,
    /// No font was found on this system: the image has no text.
    pub no_fonts: bool,
}

/// Rasterises `svg` (ours) to a PNG.
#[cfg(feature = "png")]
pub fn png(svg: &str) -> Result<Png, String> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    // fontdb's default sans-serif is Arial, rarely installed on Linux: use what is there.
    let have = |name: &str| db.faces().any(|f| f.families.iter().any(|(n, _)| n == name));
    let mut no_fonts = false;
    if let Some(name) =
        ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica", "Noto Sans"].into_iter().find(|n| have(n))
    {
        db.set_sans_serif_family(name);
    } else if db.is_empty() {
        no_fonts = true;
    }
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| format!("rendering PNG: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| "rendering PNG: empty image".to_string())?;
    resvg::render(&tree, tiny_skia::Transform::identity(), &mut pixmap.as_mut());
    let bytes = pixmap.encode_png().map_err(|e| format!("encoding PNG: {e}"))?;
    Ok(Png { bytes, no_fonts })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection whose last packet is earlier than its first (time going back): every kind
    /// draws, with the connection's span from its first packet to its latest (the span was
    /// last − first in u64, and overflowed).
    #[test]
    fn time_going_back_draws_every_kind() {
        use crate::testutil::{flag::*, pcap, scripted};
        let pkts = [
            scripted(true, 100.0, SYN, 0, 0, 0, 65535, vec![]),
            scripted(false, 110.0, SYN | ACK, 0, 0, 0, 65535, vec![]),
            scripted(true, 120.0, ACK, 0, 0, 100, 65535, vec![]),
            scripted(false, 130.0, ACK, 0, 100, 0, 65535, vec![]),
            scripted(true, 40.0, ACK, 100, 0, 100, 65535, vec![]),
        ];
        let path = std::env::temp_dir().join(format!("tcpscope-back-{}.pcap", std::process::id()));
        std::fs::write(&path, pcap(&pkts, false, false)).unwrap();
        for kind in Kind::ALL {
            let got = Request::new(path.clone(), 1, kind).svg(&mut |_| Ok(()));
            assert!(got.is_ok(), "{}: {:?}", kind.name(), got.err());
        }
        // A window starting inside that span draws too.
        let req = Request { from: Some("0.01".into()), ..Request::new(path.clone(), 1, Kind::Tsg) };
        assert!(req.svg(&mut |_| Ok(())).is_ok());
        std::fs::remove_file(&path).unwrap();
    }

    /// A flag the kind does not use is said, once each; those it uses are not.
    #[test]
    fn unused_limits_are_said() {
        let req = |kind, from: bool, seq: bool, window: bool| Request {
            from: from.then(|| "0.1".to_string()),
            seq_from: seq.then_some(5),
            window_s: window.then_some(1.0),
            ..Request::new("t.pcap".into(), 1, kind)
        };
        assert!(req(Kind::Tsg, true, true, false).unused().is_empty());
        assert!(req(Kind::Tput, true, false, true).unused().is_empty());
        assert!(req(Kind::Dupack, true, false, true).unused().is_empty());
        assert!(req(Kind::Ladder, true, false, false).unused().is_empty());
        let notes = req(Kind::Burst, true, true, true).unused();
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].starts_with("burst has no time axis"), "{notes:?}");
        assert_eq!(req(Kind::States, true, false, false).unused().len(), 1);
        assert_eq!(req(Kind::Rtt, false, true, true).unused().len(), 2);
        assert!(req(Kind::BurstCdf, false, false, false).unused().is_empty());
    }
}

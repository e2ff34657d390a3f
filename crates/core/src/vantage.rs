//! What other captures of the same connections prove about one capture's verdicts (issue 21:
//! `screen A --with B`, `stats A --with B`; definitions in `docs/screening.md`, "Several
//! captures").
//!
//! One capture's analysis infers: a retransmission was spurious when a D-SACK says so, a
//! segment was lost because it was sent again. With the same connections captured at other
//! points, [`crate::correlate`] knows instead. A [`Proof`] is its verdicts as the analysed
//! capture (point 1; the captures given with `--with` are points 2, 3, ... in their order)
//! sees them:
//!
//! - per frame of point 1 that correlate judged a retransmission ([`Resend`]): **spurious**
//!   (an earlier transmission of all its bytes reached the last point of its path) or
//!   **necessary** (they had not all reached it; where the earlier transmission was lost, when
//!   correlate located it); a frame that was several packets on the wire (TSO/GSO cut after
//!   point 1, GRO merged before it) is spurious only when every piece was and the pieces hold
//!   all its bytes, necessary otherwise ([`Proof::resend`]);
//! - per connection (found by its endpoints at point 1) and direction ([`VantageDir`]): the
//!   losses by location, the packets point 1's capture alone missed (capture loss, never
//!   network loss), and the retransmissions' counts.
//!
//! Every proved verdict names its **source**: the points whose sightings prove it, 1-based
//! and `+`-joined (`1+2`); a verdict of the capture alone has the source `inferred`.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::conn::Endpoint;
use crate::correlate::{self, Correlation, LossAt};
use crate::pass::Query;
use crate::table::{Field as F, Kind, Table};

/// The source of a verdict the analysed capture reached alone.
pub const INFERRED: &str = "inferred";

/// What correlate proved about one retransmission that left (or reached) point 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resend {
    /// Spurious (the receiver's side already had its bytes), else necessary.
    pub spurious: bool,
    /// The points whose sightings prove it (1-based, `+`-joined).
    pub source: String,
    /// The proof in words.
    pub detail: String,
}

/// Correlate's verdict on one packet on the wire that was (a piece of) a frame of point 1. A
/// frame that was several packets between the points — a TSO/GSO super-segment cut after
/// point 1, or a GRO merge at point 1 — has one per piece that correlate judged a
/// retransmission.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Piece {
    /// Its first byte, relative to the first of its direction (correlate's numbering).
    seq: u64,
    /// Its payload bytes.
    len: u32,
    spurious: bool,
    /// The points whose sightings prove it (0-based): the analysed capture's, and its path's
    /// first and last.
    points: [usize; 3],
    /// Where its bytes' earlier transmission was lost (1-based from, to), when necessary and
    /// correlate located it.
    lost: Option<(usize, usize)>,
}
/// One direction of a connection as the captures together see it (screen's `vantage.a2b`,
/// `stats --json`'s `vantage.connections[].a2b`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct VantageDir {
    /// The points its packets pass, upstream first (1-based, `-`-joined).
    pub path: String,
    /// The points whose sightings prove these counts (1-based, `+`-joined).
    pub source: String,
    /// Packets seen at the first point of the path.
    pub packets: u64,
    /// Of them, seen at the last point.
    pub delivered: u64,
    /// Packets that left a point and never reached the next one, while it was capturing.
    pub lost_on_path: u64,
    /// lost_on_path / (delivered + lost_on_path).
    pub loss_rate: Option<f64>,
    /// Losses by location.
    pub losses: Vec<LossAt>,
    /// Packets not seen downstream only because that capture had ended or not begun: not
    /// counted as lost.
    pub outside_capture: u64,
    /// Packets point 1's capture missed that the network carried (seen downstream of it, and
    /// upstream unless it is the first point of the path): capture loss, not network loss.
    pub missed_here: u64,
    /// Sightings any of the captures missed.
    pub capture_loss: u64,
    /// Retransmissions that left the first point of the path.
    pub retransmissions: u64,
    /// Of them, whose bytes had not all reached the last point before.
    pub necessary_retransmissions: u64,
    /// Of them, whose bytes had all reached the last point by an earlier transmission.
    pub spurious_retransmissions: u64,
}

impl Table for VantageDir {
    const NAME: &'static str = "vantage_direction";
    const FIELDS: &'static [F] = &[
        F::new(
            "path",
            Kind::Text,
            "",
            "the captures its packets pass, upstream first (1 is TRACE, 2… the `--with` captures in their order; `-`-joined)",
        ),
        F::new("source", Kind::Text, "", "the captures whose sightings prove these counts, `+`-joined (`1+2`)"),
        F::new("packets", Kind::Int, "", "packets seen at the first capture of the path"),
        F::new("delivered", Kind::Int, "", "of them, seen at the last"),
        F::new(
            "lost_on_path",
            Kind::Int,
            "",
            "packets that left a capture point and never reached the next one while it was capturing: network loss, for certain",
        ),
        F::nullable("loss_rate", Kind::Float, "", "lost_on_path / (delivered + lost_on_path)"),
        F::new(
            "losses",
            Kind::List,
            "",
            "losses by location: `from` (capture last seen), `to` (next capture), `packets`",
        ),
        F::new(
            "outside_capture",
            Kind::Int,
            "",
            "packets missing downstream only because that capture had ended or not begun: not counted as lost",
        ),
        F::new(
            "missed_here",
            Kind::Int,
            "",
            "packets TRACE's capture missed though the network carried them (seen downstream of it, and upstream unless TRACE is the first capture of the path): capture loss, not network loss",
        ),
        F::new("capture_loss", Kind::Int, "", "sightings any of the captures missed"),
        F::new("retransmissions", Kind::Int, "", "retransmissions that left the first capture point of the path"),
        F::new(
            "necessary_retransmissions",
            Kind::Int,
            "",
            "of them, whose bytes had not all reached the last capture point before",
        ),
        F::new(
            "spurious_retransmissions",
            Kind::Int,
            "",
            "of them, whose bytes had all reached the last capture point by an earlier transmission",
        ),
    ];
}

/// One connection of the analysed capture as the captures together see it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConnVantage {
    /// Its id in `tcpscope correlate` of the same captures (1-based); `None`: not found there.
    pub conn: Option<usize>,
    /// Per direction `[a2b, b2a]`, in the analysed connection's orientation.
    pub dir: [Option<VantageDir>; 2],
}

/// What the other captures prove, from point 1's side: see the module doc.
#[derive(Debug)]
pub struct Proof {
    /// The captures, point 1 first.
    pub files: Vec<PathBuf>,
    /// Per frame of point 1 correlate judged a retransmission, its pieces' verdicts (one for
    /// a frame that was one packet on the wire), in byte order.
    resends: HashMap<u64, Vec<Piece>>,
    /// (lower, higher endpoint at point 1) → (correlate's connection index, its a is the lower).
    conns: HashMap<(Endpoint, Endpoint), (usize, bool)>,
    /// Per correlate connection and direction (`conn * 2 + dir`).
    dirs: Vec<VantageDir>,
}

/// Where correlate located a loss: (time it left the first point, s; from; to), 1-based points.
type LostAt = (f64, usize, usize);

/// `+`-joined 1-based points, sorted, each once.
fn source(points: &[usize]) -> String {
    let mut p: Vec<usize> = points.iter().map(|p| p + 1).collect();
    p.sort_unstable();
    p.dedup();
    p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("+")
}

impl Proof {
    /// Correlates the query's input with its vantage points ([`Query::vantage`]): `None`
    /// without any. The input must be one capture file (not standard input, a directory, or
    /// several files: the proof is tied to its frame numbers), read whole (no time window: the
    /// counts are the whole captures').
    pub fn of(query: &Query, settings: &correlate::Settings) -> Result<Option<Proof>, correlate::Error> {
        let others = query.vantage_points();
        if others.is_empty() {
            return Ok(None);
        }
        let inputs = query.inputs();
        let [one] = inputs else {
            return Err(correlate::Error::Usage(
                "--with takes one TRACE: the capture the others are compared with".into(),
            ));
        };
        if one.is_dir() || one.as_os_str() == "-" {
            return Err(correlate::Error::Usage(format!(
                "--with: {} must be a capture file (not a directory nor standard input)",
                one.display()
            )));
        }
        if query.windowed() {
            // The proof's counts are the whole captures': a window's connections would be
            // judged by packets outside it.
            return Err(correlate::Error::Usage("--with reads the captures whole: no time window".into()));
        }
        let mut files = vec![one.clone()];
        files.extend(others.iter().cloned());
        let corr = correlate::correlate(&files, settings)?;
        Ok(Some(Proof::from_correlation(&corr)))
    }

    /// The proof a correlation gives about its first capture.
    pub fn from_correlation(c: &Correlation) -> Proof {
        let dir_idx = |conn: usize, dir: &str| (conn - 1) * 2 + usize::from(dir == "b2a");
        // Where the earlier transmissions were lost: (conn, dir, relative seq) → (time, from, to).
        let mut lost: HashMap<(usize, usize, u64), Vec<LostAt>> = HashMap::new();
        // Missed at point 1, per direction.
        let mut missed = vec![0u64; c.dirs.len()];
        for e in &c.events {
            match e.kind {
                "lost" => lost.entry((e.conn, dir_idx(e.conn, e.dir), e.seq)).or_default().push((
                    e.time_s,
                    e.point,
                    e.to.unwrap_or(0),
                )),
                "capture_loss" if e.point == 1 => missed[dir_idx(e.conn, e.dir)] += 1,
                _ => {}
            }
        }
        // The retransmission verdicts, by the frame of the same packet at point 1: a frame
        // that was several packets on the wire gets each piece's (see `resend`).
        let mut resends: HashMap<u64, Vec<Piece>> = HashMap::new();
        for e in &c.events {
            if !matches!(e.kind, "spurious_retransmission" | "necessary_retransmission") {
                continue;
            }
            let Some(frame) = e.frame_at_1 else { continue };
            let cd = dir_idx(e.conn, e.dir);
            let path = &c.paths[cd];
            let (first, last) = (path[0], path[path.len() - 1]);
            let spurious = e.kind == "spurious_retransmission";
            let lost = if spurious {
                None
            } else {
                lost.get(&(e.conn, cd, e.seq))
                    .and_then(|v| v.iter().filter(|l| l.0 < e.time_s).max_by(|a, b| a.0.total_cmp(&b.0)))
                    .map(|&(_, from, to)| (from, to))
            };
            let piece = Piece { seq: e.seq, len: e.len, spurious, points: [0, first, last], lost };
            resends.entry(frame).or_default().push(piece);
        }
        for pieces in resends.values_mut() {
            pieces.sort_by_key(|p| p.seq);
            pieces.dedup();
        }
        let mut conns = HashMap::new();
        for (i, conn) in c.conns.iter().enumerate() {
            if let Some(Some((a, b))) = conn.at.first() {
                conns.insert(if a <= b { (*a, *b) } else { (*b, *a) }, (i, a <= b));
            }
        }
        let dirs = c
            .dirs
            .iter()
            .enumerate()
            .map(|(cd, d)| VantageDir {
                path: d.path.clone(),
                source: source(&c.paths[cd]),
                packets: d.packets,
                delivered: d.delivered,
                lost_on_path: d.lost_on_path,
                loss_rate: d.loss_rate,
                losses: d.losses.clone(),
                outside_capture: d.outside_capture,
                missed_here: missed[cd],
                capture_loss: d.capture_loss,
                retransmissions: d.retransmissions,
                necessary_retransmissions: d.necessary_retransmissions,
                spurious_retransmissions: d.spurious_retransmissions,
            })
            .collect();
        Proof { files: c.points.iter().map(|p| p.path.clone()).collect(), resends, conns, dirs }
    }

    /// Whether correlate judged the segment in frame `frame` of point 1 (or a piece of it) a
    /// retransmission.
    pub fn judged(&self, frame: u64) -> bool {
        self.resends.contains_key(&frame)
    }

    /// What was proved about the segment in frame `frame` of point 1, `len` payload bytes, if
    /// correlate judged it (or a piece of it) a retransmission. A frame that was several
    /// packets on the wire (cut after point 1 by TSO/GSO, or merged by GRO before it) takes a
    /// verdict true of the whole frame (docs/screening.md, "Several captures"): spurious only
    /// when every piece was a spurious retransmission and the pieces hold all `len` bytes (an
    /// earlier transmission of every byte had reached the last point), necessary otherwise —
    /// a piece whose bytes had not all reached it, or bytes never sent before.
    pub fn resend(&self, frame: u64, len: u32) -> Option<Resend> {
        let pieces = self.resends.get(&frame)?;
        let pts: Vec<usize> = pieces.iter().flat_map(|p| p.points).collect();
        let source = source(&pts);
        // The last point of the path (1-based): the last of the proving points.
        let last = pieces[0].points[2] + 1;
        let judged: u64 = pieces.iter().map(|p| u64::from(p.len)).sum();
        let lost_words = |p: &Piece| match p.lost {
            Some((from, to)) => format!("the earlier transmission was lost between captures {from} and {to}"),
            None => format!("its bytes had not all reached capture {last}"),
        };
        if let [p] = pieces.as_slice()
            && u64::from(len) <= judged
        {
            // One packet on the wire.
            let detail = if p.spurious {
                format!("an earlier transmission of its bytes had reached capture {last}")
            } else if p.lost.is_some() {
                format!("its bytes had not reached capture {last}: {}", lost_words(p))
            } else {
                lost_words(p)
            };
            return Some(Resend { spurious: p.spurious, source, detail });
        }
        // Several packets on the wire (or one, and bytes that were no retransmission).
        let n = pieces.len();
        let fresh = u64::from(len).saturating_sub(judged);
        let spurious = fresh == 0 && pieces.iter().all(|p| p.spurious);
        let detail = if spurious {
            format!(
                "an earlier transmission of the bytes of each of its {n} segments on the wire had reached capture {last}"
            )
        } else {
            let short: Vec<String> = pieces
                .iter()
                .filter(|p| !p.spurious)
                .map(|p| format!("bytes {}-{}: {}", p.seq, p.seq + u64::from(p.len), lost_words(p)))
                .collect();
            let mut d = format!("its bytes had not all reached capture {last}: of its {n} resent segments on the wire");
            if !short.is_empty() {
                d.push_str(&format!(", {} had not ({})", short.len(), short.join("; ")));
            }
            let reached = n - short.len();
            if reached > 0 {
                d.push_str(&format!(", {reached} had reached it before"));
            }
            if fresh > 0 {
                d.push_str(&format!("; {fresh} of its bytes were sent for the first time"));
            }
            d
        };
        Some(Resend { spurious, source, detail })
    }

    /// The connection whose endpoints at point 1 are `a` (the analysed connection's a) and `b`.
    pub fn conn(&self, a: Endpoint, b: Endpoint) -> ConnVantage {
        let key = if a <= b { (a, b) } else { (b, a) };
        let Some(&(i, corr_a_low)) = self.conns.get(&key) else { return ConnVantage::default() };
        // Same orientation when correlate's a is ours.
        let same = corr_a_low == (a <= b);
        let d = |x: usize| self.dirs.get(i * 2 + x).cloned();
        ConnVantage { conn: Some(i + 1), dir: if same { [d(0), d(1)] } else { [d(1), d(0)] } }
    }

    /// The captures in words: `capture 1 is A.pcap, 2 is B.pcap`.
    pub fn captures_text(&self) -> String {
        let names: Vec<String> =
            self.files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    if i == 0 {
                        format!("capture 1 is {}", f.display())
                    } else {
                        format!("{} is {}", i + 1, f.display())
                    }
                })
                .collect();
        names.join(", ")
    }
}

impl VantageDir {
    /// What the captures prove about this direction, in words, or `None` when there is nothing
    /// to say (no loss, no capture loss, no retransmission).
    pub fn words(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.lost_on_path > 0 {
            let at: Vec<String> = self.losses.iter().map(|l| format!("{}→{}: {}", l.from, l.to, l.packets)).collect();
            parts.push(format!("{} lost on the path ({})", self.lost_on_path, at.join(", ")));
        }
        if self.retransmissions > 0 {
            parts.push(format!(
                "{} retransmission{}: {} necessary, {} spurious",
                self.retransmissions,
                if self.retransmissions == 1 { "" } else { "s" },
                self.necessary_retransmissions,
                self.spurious_retransmissions
            ));
        }
        if self.missed_here > 0 {
            parts.push(format!(
                "{} packet{} missing from capture 1 only (capture loss, not network loss)",
                self.missed_here,
                if self.missed_here == 1 { "" } else { "s" }
            ));
        }
        (!parts.is_empty()).then(|| format!("captures {} prove: {}", self.source, parts.join(", ")))
    }
}

/// One connection in `stats --json --with`'s `vantage.connections`.
#[derive(Clone, Debug, Serialize)]
pub struct VantageConn<'a> {
    /// Its id, as in `connections`.
    pub id: usize,
    /// Its id in `tcpscope correlate` of the same captures, or null when not found there.
    pub conn: Option<usize>,
    /// a's data across the captures, or null.
    pub a2b: Option<&'a VantageDir>,
    /// b's data.
    pub b2a: Option<&'a VantageDir>,
}

impl<'a> VantageConn<'a> {
    /// Connection `id`'s row.
    pub fn new(id: usize, v: &'a ConnVantage) -> Self {
        VantageConn { id, conn: v.conn, a2b: v.dir[0].as_ref(), b2a: v.dir[1].as_ref() }
    }
}

impl Table for VantageConn<'_> {
    const NAME: &'static str = "vantage_connections";
    const FIELDS: &'static [F] = &[
        F::new("id", Kind::Int, "", "the connection's id, as in `connections`"),
        F::nullable(
            "conn",
            Kind::Int,
            "",
            "its id in `tcpscope correlate` of the same captures; null: not found there",
        ),
        F::nullable("a2b", Kind::Object, "", "a's data across the captures (the direction objects above), or null"),
        F::nullable("b2a", Kind::Object, "", "b's data"),
    ];
}

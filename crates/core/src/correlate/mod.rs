//! Correlation of captures of the same connections taken at two or more vantage points
//! (`tcpscope correlate A B [C ...]`, issue 21; full definitions in `docs/correlate.md`).
//!
//! A capture depends on where it was taken (thesis ch. 3; Paxson's tcpanaly paired a sender's
//! and a receiver's trace): a sender-side capture cannot tell a packet lost in the network from
//! one the receiver dropped, nor queueing from a slow receiver. With the same packets seen at
//! several points most of that becomes known. Definitions:
//!
//! - **Sighting**: one TCP packet in one capture. **Lifeline**: the sightings of one packet at
//!   the points that saw it. Two sightings are the same packet when they agree on sequence and
//!   acknowledgment numbers, payload length, flags, IPv4 ID and TCP timestamps (TSval, TSecr).
//!   Addresses and ports are *not* part of the match, so a connection whose addresses or ports a
//!   NAT rewrote between two points is still matched — by its sequence numbers (its ISNs) and
//!   the payload lengths; its row says `translated`. A packet whose match key was already seen
//!   at the same point starts a lifeline of its own (a *copy*; see duplicates below).
//! - **Window**: the pass is one streaming merge of the captures in time order (each capture is
//!   time-ordered). A sighting waits for the same packet at the other points for at most
//!   [`Settings::window_ns`] of input time (default 2 s); past it, it can no longer be matched,
//!   and a later sighting of the same packet starts a lifeline of its own (seen at one point
//!   only). The captures' clocks must therefore differ by less than the window (give
//!   `--offset` otherwise). A lifeline is judged as it leaves the window, with what is known
//!   then (`verdict::Judge`), and forgotten unless [`Settings::keep_packets`] asks for every
//!   packet (`--packets`, the plots): the memory is the window's lifelines and keys, per
//!   connection its counts, its path evidence, the lifelines waiting for their turn in arrival
//!   or departure order (a window or two), its byte ranges and its delays' summary (two
//!   convex hulls and a sketch), per pair of points the clock fit (per direction, the lower
//!   convex hull of the delays and at most 4096 more: `clock::Envelope`), and the events —
//!   not the captures' length (docs/correlate.md, "Memory").
//! - **Coverage** (TSO/GSO, GRO; `coverage.rs`): a segment cut or merged between two points — a
//!   sender-side capture sees a TSO/GSO super-segment before it is cut into MSS-sized frames, a
//!   receiver-side capture sees a GRO merge of several — matches nothing by its key. Its group
//!   is formed in the window when its first member leaves it (`Matcher::group`): every other
//!   member entered within the window of it and is still held. For a data lifeline (not a copy)
//!   not seen at every point, when another point of its connection saw a packet after it
//!   entered (its capture still running), the candidates are the data lifelines of its
//!   connection (the root after joins) and direction still in the window, not seen at every
//!   point and not yet handed over, that hold any of its bytes or of the bytes of a segment
//!   containing it; each is a *piece* of the one nearest to it in time of those
//!   it lies inside — longer, containing its bytes, seen at none of its points, within the
//!   window — unless it is itself a *whole* (something is a piece of it); a whole's pieces are
//!   taken in byte order. Nearest in time on what is known then: each time less its point's
//!   offset from the leaving lifeline's first point, the midpoint of the smallest raw
//!   differences each way so far (`Evidence::offset`; 0 while unknown). The group is its
//!   pieces: each piece is one packet (in every count, the delays and the `--packets` rows),
//!   seen at its own points and, at the whole's points, at the whole's sighting. Its one-way
//!   delay is therefore measured from the whole's first byte leaving (a split: the sender's
//!   capture saw the whole before the cut) or to its last byte arriving (a merge: the capture
//!   saw it once merged) — never less than the piece's own. Bytes of the whole no piece covers
//!   become pieces (of the largest piece's length) seen where the whole was: lost between the
//!   points downstream of a split (the lost piece, located), missed by the upstream capture of
//!   a merge. The group's lifelines are handed to the verdicts at once, in byte order, with the
//!   first member's entry time (still a valid frontier: everything that leaves later entered at
//!   or after it); the other members are skipped when they reach the front and are no longer
//!   matched. Work: nothing for a lifeline seen at every point; else a range query in its
//!   connection's indexes by sequence number (`coverage::Index`, one per connection as made
//!   and direction: its data lifelines in the window not yet seen at every point) for those
//!   holding its bytes, then those holding the bytes of the segments containing it (its
//!   whole's other pieces) — wherever they entered the window, at most
//!   `coverage::MAX_CANDIDATES` (4096) — and `coverage::pair` over those. [`Life::whole`]
//!   marks a piece; rows say `split` or `merged`.
//! - **Overlap** (TSO at one point, GRO with other boundaries at another; `coverage::overlap`):
//!   when the candidates include two seen at disjoint points that overlap without either
//!   containing the other, or come from three sets of points (a router's wire segments between
//!   super-segments and merges), the group is the leaving lifeline's overlap component: the
//!   bytes cut wherever a candidate begins or ends, each candidate holding a cut tied to the
//!   nearest in time at each other point, nearest pairs first, never two of one point in one
//!   sending (a retransmission's merge goes with the retransmission, nearer to it, and the lost
//!   sending is left alone); the component is what the ties connect,
//!   gathered again over its members' bytes until none holds a byte outside them. Each cut is
//!   one lifeline, seen at each point at the sighting of the member that carried it there
//!   (its delay: from the upstream segment's capture to the downstream one's); a member's
//!   bytes tied to nothing elsewhere are one lifeline per run, seen where it was
//!   (`coverage::fold_cuts`). A super-segment dropped whole is tied to nothing and stays one
//!   lost packet. Rows say `split` when the first point saw the cut inside a larger segment,
//!   `merged` otherwise.
//! - **Path order**: for each connection and direction, the order in which its packets pass
//!   the points (upstream first), found from the data: point i is upstream of j for a→b when
//!   `min(t_j − t_i)` over a→b packets plus `min(t_i − t_j)` over b→a packets is positive (the
//!   sum is the smallest round trip between the points, whatever the clocks' offset); with
//!   packets of one direction only at both, by the majority of their times. Gathered as the
//!   sightings are matched (`stream::Evidence`): a packet is judged on what its connection's
//!   packets up to a window after it say.
//! - **Clock offset** of capture j against the first capture (Paxson, "On calibrating
//!   measurements of packet transit times", 1998): with `f` = the one-way delays i → j as the
//!   clocks read them and `r` = those j → i, the offset is `(min f − min r) / 2` — exact when
//!   the smallest delays are equal both ways; otherwise wrong by half their difference, so the
//!   stated uncertainty is `(min f + min r) / 2` (the true offset lies in `[−min r, min f]`).
//!   **Skew** (Moon, Skelly, Towsley, "Estimation and removal of clock skew from network delay
//!   measurements", 1999): each direction's lower envelope is the edge of the lower convex hull
//!   of (time, delay) under the mean time (the solution of Moon's linear program); the skew is
//!   half the difference of the two slopes; its uncertainty is half their sum (what is left
//!   when a skew makes them opposite) and half each slope's standard error (the least-squares
//!   slope through the smallest delay of each of 64 time slices: the floor), in quadrature.
//!   The skew is applied when it exceeds twice its uncertainty.
//!   `--offset` replaces the estimate for a capture.
//! - **One-way delay** of a packet: its time at the last point of its path minus its time at
//!   the first, both on the first capture's clock; its **queueing part** is that minus the
//!   smallest one-way delay of its connection and direction. A direction's smallest and
//!   largest are exact (hull vertices); its median comes from a sketch, within 2⁻¹⁰ of its
//!   distance from the direction's first delay, plus, with a skew applied, the skews'
//!   difference times a sixteenth of the capture's span (`verdict::Delays`). Only packets
//!   judged on a path with the final path's ends count (a connection's first packets may be
//!   judged before a late capture further down matched anything of it); a smallest delay
//!   below zero is flagged (`negative_delay`: the clocks' correction is wrong).
//! - **Lost between P and Q**: seen at P, at no point downstream of it, and Q (the next point
//!   downstream) was capturing when it should have arrived. **Capture loss at P**: not seen at
//!   P but seen both upstream and downstream of it, or not seen at P (the first point) but seen
//!   downstream while P was capturing — the packet passed P, P's capture missed it. A packet
//!   seen nowhere downstream after a downstream capture ended, or before it began, is neither;
//!   nor is one judged delivered on a path lacking a point of the final path that did not see
//!   it (outside the captures).
//! - **Duplicated**: a copy (same match key at the same point) not seen at the first point of
//!   its path: a copy made on the path. **Reordered**: arrived at the last point after a packet
//!   that left the first point later. **CE-marked on path**: ECN CE at the last point but not
//!   at the first. **Changed on path**: window field, MSS option, DSCP or (a hop count, not a
//!   change) TTL differ between the first and last sightings.
//! - **Retransmission**: a data segment (or SYN, FIN) that left the first point and starts below
//!   the highest sequence number sent before it; **spurious** when an earlier transmission of
//!   all its bytes reached the last point (the receiver already had them), **necessary**
//!   otherwise.
//! - **RTT share**: for each data segment sent once and delivered, and the first ACK leaving
//!   the last point that covers it after it arrived, RTT = one-way delay out + receiver delay
//!   (ACK leaving − data arriving) + the ACK's one-way delay back. Path = the two directions'
//!   smallest one-way delays; queueing = the rest of the two one-way delays; receiver = the
//!   receiver delay. Shares are means over those samples, summing to 1.

mod clock;
mod coverage;
mod rows;
mod stream;
mod verdict;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

pub use clock::{Clock, ClockSource, estimate_pair};
pub use rows::{CorrDir, CorrEvent, CorrPacket, DelaySummary, LossAt, PointRow};
pub use stream::Settings;
pub use verdict::Fate;

use crate::conn::Endpoint;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A capture could not be read (the message names the file and the byte offset).
    #[error(transparent)]
    File(#[from] crate::capture::FileError),
    /// The request cannot be met (fewer than two captures, a bad offset).
    #[error("{0}")]
    Usage(String),
}

/// One capture (vantage point).
#[derive(Debug, Clone)]
pub struct Point {
    /// Its file.
    pub path: PathBuf,
    /// TCP packets read.
    pub packets: u64,
    /// Frames that were not TCP (or not decodable).
    pub skipped: u64,
    /// First and last time (ns, on its own clock), if any packet.
    pub span: Option<(i64, i64)>,
    /// Link type of its first record.
    pub link_type: Option<u32>,
}

/// Per point of one packet: when and how it was seen.
#[derive(Debug, Clone, Copy)]
pub struct Sight {
    /// Time on the capture's own clock (ns since the epoch), minus a given `--offset`.
    pub t: i64,
    /// Frame number in its capture.
    pub frame: u64,
    /// TTL / hop limit.
    pub ttl: u8,
    /// ECN codepoint.
    pub ecn: u8,
    /// DSCP.
    pub dscp: u8,
    /// Window field as on the wire.
    pub win: u16,
    /// MSS option (0: none).
    pub mss: u16,
}

impl Sight {
    const NONE: Sight = Sight { t: i64::MIN, frame: 0, ttl: 0, ecn: 0, dscp: 0, win: 0, mss: 0 };

    /// Whether the point saw the packet.
    pub fn seen(&self) -> bool {
        self.t != i64::MIN
    }
}

/// One packet across the points.
#[derive(Debug, Clone)]
pub struct Life {
    /// Connection (index into [`Correlation::conns`]).
    pub conn: u32,
    /// 0: a → b, 1: b → a.
    pub dir: u8,
    /// Sequence number on the wire.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Payload length.
    pub len: u32,
    /// TCP flags.
    pub flags: u16,
    /// A copy: the same match key was seen before at a point that saw this one.
    pub copy: bool,
    /// Matched by byte coverage: the points (bit p: point p) that saw this packet only as part
    /// of a larger segment covering it (a TSO/GSO super-segment before it was split, or a GRO
    /// merge): its sightings there are that segment's. 0 for a packet matched whole.
    pub whole: u32,
}

/// One connection across the points.
#[derive(Debug, Clone)]
pub struct Conn {
    /// Endpoint a (sent the SYN, or the first packet seen) and b, as the first capture that saw
    /// the connection has them.
    pub a: Endpoint,
    /// Endpoint b.
    pub b: Endpoint,
    /// Per point, its endpoints there (a, b) when seen there.
    pub at: Vec<Option<(Endpoint, Endpoint)>>,
}

impl Conn {
    /// Whether addresses or ports differ between points (a NAT on the path).
    pub fn translated(&self) -> bool {
        let mut seen = self.at.iter().flatten();
        let Some(first) = seen.next() else { return false };
        seen.any(|x| x != first)
    }
}

/// The result of a correlation.
#[derive(Debug)]
pub struct Correlation {
    /// The captures, in the order given.
    pub points: Vec<Point>,
    /// Each capture's clock against the first capture's.
    pub clocks: Vec<Clock>,
    /// Connections.
    pub conns: Vec<Conn>,
    /// How many lifelines (packets across the points) the pass judged.
    pub lifelines: u64,
    /// With [`Settings::keep_packets`], every packet: its facts, and its sightings
    /// (`sights[i * points + p]`), in the order first seen; empty otherwise.
    pub lives: Vec<Life>,
    /// Sightings, `points` per kept lifeline.
    pub sights: Vec<Sight>,
    /// Per connection and direction (`conn * 2 + dir`), the results.
    pub dirs: Vec<CorrDir>,
    /// The notable packets, in time order: losses, capture losses, duplicates, reorderings,
    /// CE marks, changes, spurious retransmissions.
    pub events: Vec<CorrEvent>,
    /// Per point, the packets its capture missed.
    pub capture_missed: Vec<u64>,
    /// Per connection and direction (`conn * 2 + dir`), the points its packets pass, upstream
    /// first (0-based).
    pub paths: Vec<Vec<usize>>,
    /// The first packet's time over all captures (ns, first capture's clock).
    pub t0: i64,
    /// Per kept lifeline, what became of it.
    pub fates: Vec<Fate>,
    /// Per connection and direction, the sequence number relative ones count from.
    pub bases: Vec<u32>,
    /// Per connection and direction, the smallest one-way delay first to last point (ns; NaN
    /// without any).
    pub min_owd: Vec<f64>,
}

impl Correlation {
    /// The sighting of lifeline `i` at point `p`.
    pub fn sight(&self, i: usize, p: usize) -> &Sight {
        &self.sights[i * self.points.len() + p]
    }

    /// A time of point `p`'s clock on the first capture's clock (ns).
    pub fn to_ref(&self, p: usize, t: i64) -> i64 {
        self.clocks[p].to_ref(t)
    }

    /// One row per kept packet ([`Settings::keep_packets`]), in the order first seen.
    pub fn packet_rows(&self) -> impl Iterator<Item = CorrPacket> + '_ {
        let n = self.points.len();
        self.lives.iter().enumerate().map(move |(k, l)| {
            let cd = l.conn as usize * 2 + l.dir as usize;
            let at: Vec<Option<i64>> = (0..n)
                .map(|p| {
                    let s = self.sight(k, p);
                    s.seen().then(|| self.to_ref(p, s.t))
                })
                .collect();
            let path = &self.paths[cd];
            let owd = match (path.first(), path.last()) {
                (Some(&a), Some(&b)) if a != b => at[a].zip(at[b]).map(|(x, y)| (y - x) as f64),
                _ => None,
            };
            let ms = |x: f64| (x / 1e3).round() / 1e3;
            CorrPacket {
                conn: l.conn as usize + 1,
                dir: rows::dir_name(l.dir),
                seq: u64::from(l.seq.wrapping_sub(self.bases[cd])),
                len: l.len,
                flags: crate::export::packet::flag_letters(crate::decode::Flags(l.flags)),
                at_s: at.iter().map(|t| t.map(|t| ((t - self.t0) as f64 * 1e-3).round() / 1e6)).collect(),
                frames: (0..n).map(|p| self.sight(k, p)).map(|s| s.seen().then_some(s.frame)).collect(),
                one_way_delay_ms: owd.map(ms),
                queueing_ms: owd.map(|d| ms(d - self.min_owd[cd])),
                fate: self.fates[k].name(),
                coverage: self.coverage(k),
            }
        })
    }

    /// How lifeline `k` was matched by byte coverage: `split` when the points that saw it only
    /// as part of a larger segment are upstream of those that saw it as itself (or, for bytes
    /// no piece covered, when the whole was seen at the path's first point), `merged`
    /// otherwise; `None` when matched whole.
    pub fn coverage(&self, k: usize) -> Option<&'static str> {
        let l = &self.lives[k];
        let own = (0..self.points.len()).filter(|&p| self.sight(k, p).seen()).fold(0u32, |m, p| m | 1 << p);
        coverage::kind(l.whole, own, &self.paths[l.conn as usize * 2 + l.dir as usize])
    }

    /// One row per capture: its clock and what it missed.
    pub fn point_rows(&self) -> Vec<PointRow> {
        let r6 = |x: f64| (x * 1e6).round() / 1e6;
        self.points
            .iter()
            .zip(&self.clocks)
            .enumerate()
            .map(|(i, (p, c))| PointRow {
                point: i + 1,
                file: p.path.display().to_string(),
                packets: p.packets,
                skipped: p.skipped,
                clock: c.source.name(),
                offset_ms: r6(c.total_offset_ns() / 1e6),
                offset_uncertainty_ms: r6(c.offset_uncertainty_ns / 1e6),
                offset_at_s: c.t_ref as f64 * 1e-9,
                skew_ppm: r6(c.skew * 1e6),
                skew_uncertainty_ppm: r6(c.skew_uncertainty * 1e6),
                skew_applied: c.skew_applied,
                clock_samples: (c.samples.0 + c.samples.1) as u64,
                capture_loss: self.capture_missed[i],
            })
            .collect()
    }
}

/// Correlates the captures `paths` (two or more, each time-ordered): the one streaming pass,
/// then the clocks, then the verdicts.
pub fn correlate(paths: &[PathBuf], settings: &Settings) -> Result<Correlation, Error> {
    if paths.len() < 2 {
        return Err(Error::Usage("correlate needs two or more captures of the same connections".into()));
    }
    if paths.len() > 32 {
        return Err(Error::Usage("correlate takes at most 32 captures".into()));
    }
    let mut judge = verdict::Judge::new(paths.len(), settings);
    let raw = stream::run(paths, settings, &mut judge)?;
    Ok(judge.finish(raw))
}

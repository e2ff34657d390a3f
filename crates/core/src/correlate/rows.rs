//! The records `correlate` gives out (JSON, CSV, text), each with its field list.

use serde::Serialize;

use crate::table::{Field as F, Kind, Table};

/// A direction as every record names it: 0 is `a2b` (from the SYN's sender, or the first
/// packet's), 1 is `b2a`.
pub(crate) fn dir_name(d: u8) -> &'static str {
    if d == 0 { "a2b" } else { "b2a" }
}

/// Smallest, median and largest of a set of delays (ms); null without any.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct DelaySummary {
    /// Smallest.
    pub min: Option<f64>,
    /// Median (the lower middle value of an even count).
    pub median: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

impl DelaySummary {
    /// From values in ns (reordered here).
    pub fn of(v: &mut [f64]) -> DelaySummary {
        DelaySummary::from_ns(DelaySummary::pick(v))
    }

    /// The smallest, median and largest of values in ns, or `None` without any: a selection,
    /// not a sort (the values of a bulk transfer are a million).
    pub(crate) fn pick(v: &mut [f64]) -> Option<(f64, f64, f64)> {
        if v.is_empty() {
            return None;
        }
        let min = v.iter().copied().min_by(f64::total_cmp)?;
        let max = v.iter().copied().max_by(f64::total_cmp)?;
        let (_, median, _) = v.select_nth_unstable_by((v.len() - 1) / 2, f64::total_cmp);
        Some((min, *median, max))
    }

    /// From the smallest, median and largest in ns.
    pub(crate) fn from_ns(v: Option<(f64, f64, f64)>) -> DelaySummary {
        let ms = |x: f64| Some((x / 1e3).round() / 1e3);
        v.map_or_else(DelaySummary::default, |(a, b, c)| DelaySummary { min: ms(a), median: ms(b), max: ms(c) })
    }
}

impl Table for DelaySummary {
    const NAME: &'static str = "correlate_delay";
    const FIELDS: &'static [F] = &[
        F::nullable("min", Kind::Float, "ms", "smallest"),
        F::nullable("median", Kind::Float, "ms", "median (the lower middle value of an even count)"),
        F::nullable("max", Kind::Float, "ms", "largest"),
    ];
}

/// Packets lost between two consecutive points of a path.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LossAt {
    /// The point they were last seen at (1-based, the order of the captures given).
    pub from: usize,
    /// The next point downstream, where they never arrived.
    pub to: usize,
    /// How many.
    pub packets: u64,
}

/// One connection and direction across the points: `correlate --json` `directions`, CSV rows.
#[derive(Debug, Clone, Serialize)]
pub struct CorrDir {
    /// Connection id (1-based, order of first appearance over all captures).
    pub conn: usize,
    /// `a2b` or `b2a`.
    pub dir: &'static str,
    /// Sender, as the first capture that saw the connection has it.
    pub src: String,
    /// Receiver.
    pub dst: String,
    /// Addresses or ports differ between points (NAT): matched by sequence numbers.
    pub translated: bool,
    /// The points its packets pass, upstream first (1-based), `-`-joined.
    pub path: String,
    /// Packets seen at the first point of the path.
    pub packets: u64,
    /// Of them, seen at the last point.
    pub delivered: u64,
    /// Packets that left a point and never reached the next one (nor any further).
    pub lost_on_path: u64,
    /// lost_on_path / (delivered + lost_on_path).
    pub loss_rate: Option<f64>,
    /// Losses by location.
    pub losses: Vec<LossAt>,
    /// Sightings the captures missed (the packet was seen upstream and downstream of them).
    pub capture_loss: u64,
    /// Packets not seen downstream only because a capture had ended (or not begun).
    pub outside_capture: u64,
    /// Pieces of segments seen whole upstream and cut downstream (TSO/GSO), matched by byte
    /// coverage (a lost piece included): each piece is one packet in every count.
    pub split_pieces: u64,
    /// Packets seen apart upstream and merged into one segment downstream (GRO), matched by
    /// byte coverage: each is one packet in every count.
    pub merged_pieces: u64,
    /// Copies made on the path.
    pub duplicated: u64,
    /// Arrived at the last point after a packet that left the first point later.
    pub reordered: u64,
    /// CE at the last point, not at the first.
    pub ce_marked: u64,
    /// Window field different at the last point.
    pub window_changed: u64,
    /// MSS option different at the last point.
    pub mss_changed: u64,
    /// DSCP different at the last point.
    pub dscp_changed: u64,
    /// TTL at the first point minus TTL at the last (routers between), largest.
    pub ttl_hops: Option<u8>,
    /// One-way delay, first to last point.
    pub one_way_delay_ms: DelaySummary,
    /// Its queueing part (above the smallest).
    pub queueing_ms: DelaySummary,
    /// The smallest one-way delay is below zero on the first capture's clock: a packet
    /// arriving before it left. The clocks' correction is wrong by at least that much (a given
    /// offset, or an estimate through another capture); the delays are not to be trusted.
    pub negative_delay: bool,
    /// Retransmissions that left the first point.
    pub retransmissions: u64,
    /// Of them, whose bytes had not all reached the last point before.
    pub necessary_retransmissions: u64,
    /// Of them, whose bytes had all reached the last point by an earlier transmission.
    pub spurious_retransmissions: u64,
    /// RTT samples (data sent once and delivered, its ACK back at the first point).
    pub rtt_samples: u64,
    /// Their mean RTT.
    pub rtt_ms: Option<f64>,
    /// Share of it that is path delay.
    pub rtt_path_share: Option<f64>,
    /// Share that is queueing.
    pub rtt_queueing_share: Option<f64>,
    /// Share that the receiver held the data before acknowledging it.
    pub rtt_receiver_share: Option<f64>,
}

impl Table for CorrDir {
    const NAME: &'static str = "correlate_directions";
    const FIELDS: &'static [F] = &[
        F::new("conn", Kind::Int, "", "connection id (1-based, order of first appearance over all captures)"),
        F::new("dir", Kind::Text, "", "`a2b` (from the SYN's sender, or the first packet's) or `b2a`"),
        F::new("src", Kind::Text, "", "sender `addr:port`, as the first capture that saw the connection has it"),
        F::new("dst", Kind::Text, "", "receiver"),
        F::new(
            "translated",
            Kind::Bool,
            "",
            "addresses or ports differ between points (NAT): matched by ISN and payload lengths",
        ),
        F::new(
            "path",
            Kind::Text,
            "",
            "the points its packets pass, upstream first (1-based capture numbers, `-`-joined)",
        ),
        F::new("packets", Kind::Int, "", "packets seen at the first point of the path"),
        F::new("delivered", Kind::Int, "", "of them, seen at the last point"),
        F::new(
            "lost_on_path",
            Kind::Int,
            "",
            "packets that left a point and never reached the next one (nor any further), while it was capturing",
        ),
        F::nullable("loss_rate", Kind::Float, "", "lost_on_path / (delivered + lost_on_path): the true loss rate"),
        F::new("losses", Kind::List, "", "losses by location: `from` (point last seen), `to` (next point), `packets`"),
        F::new(
            "capture_loss",
            Kind::Int,
            "",
            "sightings a capture missed: the packet was seen upstream and downstream of it (not network loss)",
        ),
        F::new(
            "outside_capture",
            Kind::Int,
            "",
            "packets missing downstream only because that capture had ended or not begun",
        ),
        F::new(
            "split_pieces",
            Kind::Int,
            "",
            "pieces of segments seen whole upstream and cut downstream (TSO/GSO), matched by byte coverage; each piece, a lost one included, is one packet in every count",
        ),
        F::new(
            "merged_pieces",
            Kind::Int,
            "",
            "packets seen apart upstream and merged into one segment downstream (GRO), matched by byte coverage; each is one packet in every count",
        ),
        F::new(
            "duplicated",
            Kind::Int,
            "",
            "copies made on the path (a match key seen twice at a point, not twice at the first)",
        ),
        F::new("reordered", Kind::Int, "", "arrived at the last point after a packet that left the first point later"),
        F::new("ce_marked", Kind::Int, "", "ECN CE at the last point, not at the first"),
        F::new("window_changed", Kind::Int, "", "window field different at the last point (a middlebox)"),
        F::new("mss_changed", Kind::Int, "", "MSS option different at the last point (clamping)"),
        F::new("dscp_changed", Kind::Int, "", "DSCP different at the last point (re-marked on the path)"),
        F::nullable("ttl_hops", Kind::Int, "", "TTL at the first point minus at the last, largest: routers between"),
        F::new(
            "one_way_delay_ms",
            Kind::Object,
            "ms",
            "one-way delay first to last point on the first capture's clock: `min`, `median`, `max`",
        ),
        F::new("queueing_ms", Kind::Object, "ms", "its part above the smallest: `min`, `median`, `max`"),
        F::new(
            "negative_delay",
            Kind::Bool,
            "",
            "true when the smallest one-way delay is below 0 (a packet arriving before it left): the clocks' correction is wrong by at least that much, and the delays are not to be trusted",
        ),
        F::new(
            "retransmissions",
            Kind::Int,
            "",
            "data segments (SYN, FIN) that left the first point below the highest sequence sent before",
        ),
        F::new(
            "necessary_retransmissions",
            Kind::Int,
            "",
            "of them, whose bytes had not all reached the last point by an earlier transmission",
        ),
        F::new(
            "spurious_retransmissions",
            Kind::Int,
            "",
            "of them, whose bytes had all reached the last point (the receiver had them)",
        ),
        F::new("rtt_samples", Kind::Int, "", "data segments sent once and delivered whose ACK reached the first point"),
        F::nullable("rtt_ms", Kind::Float, "ms", "their mean RTT: delay out + receiver delay + the ACK's delay back"),
        F::nullable(
            "rtt_path_share",
            Kind::Float,
            "",
            "share of the RTT that is the path (smallest one-way delays both ways)",
        ),
        F::nullable(
            "rtt_queueing_share",
            Kind::Float,
            "",
            "share that is queueing (one-way delays above their smallest)",
        ),
        F::nullable(
            "rtt_receiver_share",
            Kind::Float,
            "",
            "share the receiver held the data before its ACK left (delayed ACKs, application)",
        ),
    ];
}

/// One capture: `correlate --json` `points`.
#[derive(Debug, Clone, Serialize)]
pub struct PointRow {
    /// 1-based, the order given.
    pub point: usize,
    /// The file.
    pub file: String,
    /// TCP packets read.
    pub packets: u64,
    /// Frames that were not TCP.
    pub skipped: u64,
    /// `reference`, `estimated`, `given` or `unknown`.
    pub clock: &'static str,
    /// Its clock minus the first capture's, at `offset_at_s`.
    pub offset_ms: f64,
    /// Half-width of the interval the offset lies in.
    pub offset_uncertainty_ms: f64,
    /// When the offset is given (s since the epoch, its clock).
    pub offset_at_s: f64,
    /// Skew estimate.
    pub skew_ppm: f64,
    /// Its uncertainty.
    pub skew_uncertainty_ppm: f64,
    /// Whether applied.
    pub skew_applied: bool,
    /// Packets matched to this point both ways, the estimate's samples.
    pub clock_samples: u64,
    /// Packets this capture missed.
    pub capture_loss: u64,
}

impl Table for PointRow {
    const NAME: &'static str = "correlate_points";
    const FIELDS: &'static [F] = &[
        F::new("point", Kind::Int, "", "1-based, the order the captures were given"),
        F::new("file", Kind::Text, "", "the capture file"),
        F::new("packets", Kind::Int, "", "TCP packets read"),
        F::new("skipped", Kind::Int, "", "frames that were not TCP or not decodable"),
        F::new(
            "clock",
            Kind::Text,
            "",
            "`reference` (the first capture), `estimated`, `given` (`--offset`), `unknown` (no packets matched both ways: times as they are)",
        ),
        F::new("offset_ms", Kind::Float, "ms", "its clock minus the first capture's, at `offset_at_s`"),
        F::new(
            "offset_uncertainty_ms",
            Kind::Float,
            "ms",
            "half-width of the interval the offset lies in: half the smallest round trip between the points",
        ),
        F::new(
            "offset_at_s",
            Kind::Float,
            "s",
            "when the offset holds (s since the epoch, this capture's clock; 0 for the reference)",
        ),
        F::new("skew_ppm", Kind::Float, "ppm", "clock rate minus the reference's (Moon's lower envelopes)"),
        F::new("skew_uncertainty_ppm", Kind::Float, "ppm", "half the disagreement of the two directions' slopes"),
        F::new("skew_applied", Kind::Bool, "", "the skew is applied (it exceeds twice its uncertainty)"),
        F::new(
            "clock_samples",
            Kind::Int,
            "",
            "packets seen here and at the capture it was estimated against, both ways",
        ),
        F::new("capture_loss", Kind::Int, "", "packets this capture missed (seen upstream and downstream of it)"),
    ];
}

/// One notable packet: `correlate --events`, JSON `events`.
#[derive(Debug, Clone, Serialize)]
pub struct CorrEvent {
    /// Seconds since the first packet of all captures, on the first capture's clock, when it
    /// left the first point that saw it.
    pub time_s: f64,
    /// Connection id.
    pub conn: usize,
    /// `a2b` or `b2a`.
    pub dir: &'static str,
    /// What: `lost`, `capture_loss`, `duplicated`, `reordered`, `ce_marked`, `changed`,
    /// `spurious_retransmission`, `necessary_retransmission`.
    pub kind: &'static str,
    /// The point it concerns (1-based): where it was last seen (`lost`), the capture that missed
    /// it, the first point that saw it.
    pub point: usize,
    /// The next point (`lost`: where it never arrived), or null.
    pub to: Option<usize>,
    /// Frame number at `point` (or at the first point that saw it).
    pub frame: u64,
    /// Frame number of the same packet at point 1, if seen there (not written: what
    /// `screen --with` ties a verdict to).
    #[serde(skip)]
    pub frame_at_1: Option<u64>,
    /// Sequence number relative to the first of its direction.
    pub seq: u64,
    /// Payload length.
    pub len: u32,
    /// How it is known, in words.
    pub detail: String,
}

impl Table for CorrEvent {
    const NAME: &'static str = "correlate_events";
    const FIELDS: &'static [F] = &[
        F::new(
            "time_s",
            Kind::Float,
            "s",
            "since the first packet of all captures, first capture's clock, when it left the first point that saw it",
        ),
        F::new("conn", Kind::Int, "", "connection id"),
        F::new("dir", Kind::Text, "", "`a2b` or `b2a`"),
        F::new(
            "kind",
            Kind::Text,
            "",
            "`lost`, `capture_loss`, `duplicated`, `reordered`, `ce_marked`, `changed`, `spurious_retransmission`, `necessary_retransmission`",
        ),
        F::new(
            "point",
            Kind::Int,
            "",
            "the point it concerns (1-based): last seen (`lost`), the capture that missed it, else the first that saw it",
        ),
        F::nullable("to", Kind::Int, "", "`lost`: the next point, where it never arrived"),
        F::new(
            "frame",
            Kind::Int,
            "",
            "frame number at `point` (at the first point that saw it when `point` missed it)",
        ),
        F::new("seq", Kind::Int, "", "sequence number relative to the first of its direction"),
        F::new("len", Kind::Int, "B", "payload length"),
        F::new("detail", Kind::Text, "", "the evidence, in words"),
    ];
}

/// One packet across the points: `correlate --packets`.
#[derive(Debug, Clone, Serialize)]
pub struct CorrPacket {
    /// Connection id.
    pub conn: usize,
    /// `a2b` or `b2a`.
    pub dir: &'static str,
    /// Sequence number relative to the first of its direction.
    pub seq: u64,
    /// Payload length.
    pub len: u32,
    /// Flags, as `print` writes them.
    pub flags: crate::export::packet::FlagLetters,
    /// Per point (order given), when seen there: s since the first packet, first capture's
    /// clock; null where not seen.
    pub at_s: Vec<Option<f64>>,
    /// Per point, its frame number there; null where not seen.
    pub frames: Vec<Option<u64>>,
    /// First to last point of its path.
    pub one_way_delay_ms: Option<f64>,
    /// Its part above the direction's smallest.
    pub queueing_ms: Option<f64>,
    /// `delivered`, `lost`, `outside_capture`, `duplicated`.
    pub fate: &'static str,
    /// Matched by byte coverage: `split` (seen whole upstream, this piece downstream: TSO/GSO),
    /// `merged` (this piece upstream, merged downstream: GRO); null when matched whole.
    pub coverage: Option<&'static str>,
}

impl Table for CorrPacket {
    const NAME: &'static str = "correlate_packets";
    const FIELDS: &'static [F] = &[
        F::new("conn", Kind::Int, "", "connection id"),
        F::new("dir", Kind::Text, "", "`a2b` or `b2a`"),
        F::new("seq", Kind::Int, "", "sequence number relative to the first packet of its direction (the SYN's)"),
        F::new("len", Kind::Int, "B", "payload length"),
        F::new(
            "flags",
            Kind::Text,
            "",
            "as `print`: S SYN, F FIN, R RST, P PSH, A ACK, U URG, E ECE, C CWR, N AE; `.` for none",
        ),
        F::new(
            "at_s",
            Kind::List,
            "s",
            "per point in the order given: when seen there, since the first packet of all captures on the first capture's clock; null where not seen",
        ),
        F::new("frames", Kind::List, "", "per point: its frame number there, or null"),
        F::nullable("one_way_delay_ms", Kind::Float, "ms", "first to last point of its path"),
        F::nullable("queueing_ms", Kind::Float, "ms", "its part above the smallest of its connection and direction"),
        F::new(
            "fate",
            Kind::Text,
            "",
            "`delivered` (reached the last point that saw it), `lost`, `outside_capture` (missing only where a capture was not running), `duplicated` (a copy made on the path)",
        ),
        F::nullable(
            "coverage",
            Kind::Text,
            "",
            "matched by byte coverage: `split` (one segment upstream, this piece of it downstream: TSO/GSO; its times and frames there are the whole segment's), `merged` (this piece upstream, merged into one segment downstream: GRO; likewise); null when matched whole",
        ),
    ];
}

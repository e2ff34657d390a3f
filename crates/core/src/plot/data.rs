//! The series behind each plot as tables (`tcpscope plot --data`, Python's `tcpscope.series`;
//! docs/json.md, "The series behind the plots"): the points a plot is drawn from, every one in
//! its time window ([`Window`]; no pixel columns, no sequence limits), in the units and words of
//! the other tables (seconds since the connection's first packet, relative sequence numbers,
//! bytes, bits/s, ms; a segment's class as the `segments` table's `verdict` names it).
//!
//! Each plot kind gives one or more [`Part`]s, each of rows of one record declared here, whose
//! fields are their documentation (the field tables of docs/json.md are made from them). Every
//! row starts with a [`SeriesRef`] (`conn`, `dir`: the direction whose data the plot shows),
//! but the ladder's, whose rows have their own direction each, and the state diagram's,
//! `tcpscope states`' rows.

use super::chart::secs;
use crate::analysis::{Dir, RttKind};
use crate::export::packet::{FlagLetters, flag_letters};
use crate::series::ack::AckSeries;
use crate::series::burst::BurstSeries;
use crate::series::dupack::DupackSeries;
use crate::series::flight::{BytesPoint, FlightSeries};
use crate::series::ladder::Ladder;
use crate::series::rtt::RttSeries;
use crate::series::ssize::SsizeSeries;
use crate::series::states::States;
use crate::series::tput::{Bytes, RatePoint, TputSeries};
use crate::series::tsg::{SegKind, Tsg};
use crate::table::{Name, Part, record};

/// The time a plot's tables are cut to (`plot --from/--to`, Python's `start`/`end`): seconds
/// since the connection's first packet, both ends included, as the drawings show them. A row
/// with a time is kept when it is in the window; a span (a cwnd round, a dup-ACK interval)
/// when it overlaps it. The tables without a time axis (the burst histogram and its integral,
/// the states) are the whole connection's, as their plots are.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    /// Start (`None`: the connection's first packet).
    pub from_s: Option<f64>,
    /// End (`None`: its last packet).
    pub to_s: Option<f64>,
}

impl Window {
    /// Whether a time (s) is in the window.
    fn has(&self, t_s: f64) -> bool {
        self.from_s.is_none_or(|f| t_s >= f) && self.to_s.is_none_or(|t| t_s <= t)
    }
    /// Whether a time (ns since the connection's first packet) is in the window.
    fn has_ns(&self, t_ns: u64) -> bool {
        self.has(secs(t_ns))
    }
    /// Whether the span from `a_s` to `b_s` overlaps the window.
    fn overlaps(&self, a_s: f64, b_s: f64) -> bool {
        self.from_s.is_none_or(|f| b_s >= f) && self.to_s.is_none_or(|t| a_s <= t)
    }
}

/// Milliseconds of `ns`.
fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

record! {
    /// The connection and direction a plot's series are of: the columns every table of them
    /// but the ladder's and the states' begins with.
    #[derive(Clone, Copy, Debug)]
    pub struct SeriesRef = "series_ref", SeriesRefColumns {
        /// Connection id.
        pub conn: usize, "", "connection id (1-based)";
        /// Direction of the data.
        pub dir: Name, "", "`a2b` or `b2a`: the direction whose data the plot shows (the ACKs, SACK blocks and duplicate ACKs in its tables come from the other one)";
    }
}

record! {
    /// A packet of the plotted direction on the time-sequence plot.
    #[derive(Clone, Debug)]
    pub struct TsgSegment = "tsg_segments", TsgSegmentColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number (in its file)";
        /// Relative sequence number.
        pub seq: i64, "", "relative sequence number of its first sequence byte (a SYN's is -1)";
        /// Payload.
        pub len: u32, "bytes", "payload bytes";
        /// Its class on the plot.
        pub kind: Name, "", "what the analysis made of it, as the `segments` table's `verdict` says: `new`, `retransmission`, `out_of_order` (a hole fill), `probe`, `keep_alive` or `no_data` (the plot colours the first four apart)";
        /// Flags.
        pub flags: FlagLetters, "", "flag letters, as `print` writes them";
    }
}

record! {
    /// A packet with ACK of the returning direction: the ack and window lines.
    #[derive(Clone, Debug)]
    pub struct TsgAck = "tsg_acks", TsgAckColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number (in its file)";
        /// Relative ack.
        pub ack: i64, "", "relative acknowledgment number (the ack line)";
        /// Window.
        pub win_bytes: u64, "bytes", "advertised window, scaled when the scale is known";
        /// Right edge.
        pub edge: i64, "", "`ack` + `win_bytes`: the window line";
        /// Steps up.
        pub advances: bool, "", "the ack is above every earlier one (the ack line steps up)";
        /// Repeats.
        pub repeats: bool, "", "the ack does not advance (the plot's down tick; not only duplicate ACKs)";
        /// Window edge repeats.
        pub edge_repeats: bool, "", "the window's right edge is the previous ACK's (the plot's up tick)";
        /// Flags.
        pub flags: FlagLetters, "", "flag letters of the acknowledging packet";
    }
}

record! {
    /// A SACK block of the returning direction.
    #[derive(Clone, Debug)]
    pub struct TsgSack = "tsg_sacks", TsgSackColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number of the packet carrying it";
        /// Left edge.
        pub left: i64, "", "relative sequence number of its left edge";
        /// Right edge.
        pub right: i64, "", "relative sequence number of its right edge (exclusive)";
        /// D-SACK.
        pub dsack: bool, "", "a D-SACK (RFC 2883): bytes received twice";
    }
}

record! {
    /// A note written on the time-sequence plot.
    #[derive(Clone, Debug)]
    pub struct TsgNote = "tsg_notes", TsgNoteColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number of the packet it is about";
        /// Height.
        pub seq: i64, "", "where on the sequence axis (relative)";
        /// Text.
        pub note: Name, "", "the text drawn: `SYN`, `R SYN`, `FIN`, `R FIN` (R: retransmitted), `RST_OUT`, `RST_IN`, `U` (URG), `ECE`, `CWR`, `Z` (zero window), `3` (third duplicate ACK)";
    }
}

record! {
    /// An RTT sample.
    #[derive(Clone, Debug)]
    pub struct RttSample = "rtt_samples", RttSampleColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet: the acknowledging packet";
        /// The sample.
        pub rtt_ms: f64, "ms", "the sample";
        /// Its kind.
        pub kind: Name, "", "`karn` or `timestamp` (as the `rtt` table)";
        /// Frame.
        pub frame: u64, "", "frame number of the acknowledging packet";
    }
}

record! {
    /// A data packet, as the throughput plot counts it.
    #[derive(Clone, Debug)]
    pub struct TputPacket = "tput_packets", TputPacketColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number (in its file)";
        /// Payload.
        pub bytes: u32, "bytes", "payload bytes (throughput counts them)";
        /// New payload.
        pub new_bytes: u32, "bytes", "payload bytes not sent before (goodput counts them)";
        /// A retransmission.
        pub rexmit: bool, "", "it carried sequence bytes seen before";
    }
}

record! {
    /// A point of one of the throughput plot's lines.
    #[derive(Clone, Debug)]
    pub struct TputRate = "tput_rates", TputRateColumns {
        /// Which line.
        pub line: Name, "", "`instantaneous` (each data packet's bytes over the time since the previous one), `average` (bytes sent in the moving window before each packet entered or left it, over the window) or `goodput_average` (the same of new bytes)";
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Rate.
        pub bps: f64, "bit/s", "the rate (the plot rounds the averages to whole bits/s; not here)";
        /// Frame.
        pub frame: u64, "", "frame of the packet the value belongs to (for an average: the packet that entered or left the window)";
        /// Window.
        pub window_s: Option<f64>, "s", "the moving window (the plot's: `--window`, or chosen from the duration and the lowest RTT); null on `instantaneous`";
    }
}

record! {
    /// A point of the in-flight plot's bytes in flight or advertised window.
    #[derive(Clone, Debug)]
    pub struct FlightPoint = "flight_points", FlightPointColumns {
        /// Which line.
        pub line: Name, "", "`in_flight` (bytes in flight after each data packet, once the peer acknowledged something) or `window` (the window each ACK of the peer advertised)";
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number of the packet it comes from";
        /// Bytes.
        pub bytes: u64, "bytes", "bytes in flight, or the advertised window";
        /// Whether windows are scaled.
        pub window_scaled: bool, "", "the peer's window scale was known: windows in bytes (false: the raw field, too small by an unknown factor if the connection scaled)";
    }
}

record! {
    /// A round trip in which the congestion window could be told.
    #[derive(Clone, Debug)]
    pub struct CwndRound = "flight_cwnd", CwndRoundColumns {
        /// Start.
        pub start_s: f64, "s", "since the connection's first packet: the round's first data packet, or the ACK that ended the round before";
        /// End.
        pub end_s: f64, "s", "the ACK that ended it";
        /// Frame.
        pub frame: u64, "", "frame number of that ACK";
        /// Estimate.
        pub bytes: u64, "bytes", "the largest flight in the round: the congestion-window estimate ([plots.md](plots.md#bytes-in-flight-flight))";
        /// Packets.
        pub packets: u32, "", "data packets sent in the round";
    }
}

record! {
    /// A data packet's size.
    #[derive(Clone, Debug)]
    pub struct SsizePoint = "ssize_segments", SsizePointColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number (in its file)";
        /// Payload.
        pub len: u32, "bytes", "payload bytes";
        /// Its class.
        pub kind: Name, "", "`new`, `retransmission`, `out_of_order` or `probe`, as on the time-sequence plot";
        /// The receiver's MSS.
        pub peer_mss: Option<u16>, "bytes", "the MSS option of the receiving side's SYN (the plot's line); null without one";
    }
}

record! {
    /// An acknowledgment whose delay was measured.
    #[derive(Clone, Debug)]
    pub struct AckDelay = "ack_delays", AckDelayColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet: the acknowledging packet";
        /// Delay.
        pub delay_ms: f64, "ms", "the receiver's delay: the capture point's half-loop taken off ([statistics.md](statistics.md#acknowledgment-strategy))";
        /// Class.
        pub kind: Name, "", "`quick`, `delayed`, `untimed`, `piggybacked`, `pair` or `stretch`";
        /// Frame.
        pub frame: u64, "", "frame number of the acknowledging packet";
    }
}

record! {
    /// A data packet after the direction's first, with its instantaneous rate.
    #[derive(Clone, Debug)]
    pub struct BurstPacket = "burst_packets", BurstPacketColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number (in its file)";
        /// Payload.
        pub bytes: u32, "bytes", "payload bytes";
        /// Gap.
        pub gap_ms: f64, "ms", "time since the previous data packet";
        /// Rate.
        pub rate_bps: f64, "bit/s", "its instantaneous rate: its bits over the gap (at least 1 µs)";
    }
}

record! {
    /// A bin of the burstiness plot's histogram.
    #[derive(Clone, Debug)]
    pub struct BurstBin = "burst_bins", BurstBinColumns {
        /// Lower edge.
        pub lo_bps: f64, "bit/s", "lower edge (10 bins a decade, as the plot)";
        /// Upper edge.
        pub hi_bps: f64, "bit/s", "upper edge";
        /// Bytes.
        pub bytes: u64, "bytes", "payload bytes of the packets with a rate in the bin";
    }
}

record! {
    /// A step of the burstiness CDF.
    #[derive(Clone, Debug)]
    pub struct BurstCdf = "burst_cdf", BurstCdfColumns {
        /// Rate.
        pub rate_bps: f64, "bit/s", "a rate some packet was sent at";
        /// Bytes.
        pub bytes: u64, "bytes", "payload bytes sent at that rate or below";
    }
}

record! {
    /// A duplicate ACK.
    #[derive(Clone, Debug)]
    pub struct DupAck = "dupack_dupacks", DupAckColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number (in its file)";
        /// The repeated ack.
        pub ack: i64, "", "the repeated relative acknowledgment number";
        /// Which duplicate.
        pub n: u32, "", "which duplicate of that ack (1 the first, 3 the third)";
    }
}

record! {
    /// A retransmitted packet.
    #[derive(Clone, Debug)]
    pub struct DupackRexmit = "dupack_rexmits", DupackRexmitColumns {
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number (in its file)";
        /// Sequence.
        pub seq: i64, "", "relative sequence number of its first sequence byte";
        /// Bytes.
        pub bytes: u32, "bytes", "retransmitted payload bytes";
    }
}

record! {
    /// The counts of one interval of the duplicate-ACK plot.
    #[derive(Clone, Debug)]
    pub struct DupackInterval = "dupack_intervals", DupackIntervalColumns {
        /// Start.
        pub start_s: f64, "s", "since the connection's first packet";
        /// Length.
        pub interval_s: f64, "s", "the interval (the plot's: `--window`, or a round hundredth of the connection's duration)";
        /// Duplicate ACKs.
        pub dupacks: u32, "", "duplicate ACKs in it";
        /// Retransmissions.
        pub rexmits: u32, "", "retransmitted packets in it";
    }
}

record! {
    /// A segment of the ladder (timing chart), either direction.
    #[derive(Clone, Debug)]
    pub struct LadderRow = "ladder_segments", LadderRowColumns {
        /// Connection id.
        pub conn: usize, "", "connection id (1-based)";
        /// Its direction.
        pub dir: Name, "", "`a2b` or `b2a`: this segment's direction";
        /// Time.
        pub time_s: f64, "s", "since the connection's first packet";
        /// Frame.
        pub frame: u64, "", "frame number (in its file)";
        /// Flags.
        pub flags: FlagLetters, "", "flag letters, as `print` writes them";
        /// Wire sequence number.
        pub seq_raw: u32, "", "the sequence number on the wire";
        /// Relative sequence number.
        pub seq: i64, "", "relative sequence number of its first sequence byte (a SYN's is -1)";
        /// Relative ack.
        pub ack: Option<i64>, "", "relative acknowledgment number (the peer's space); null when the ACK flag is off";
        /// Window.
        pub win_bytes: u64, "bytes", "advertised window, scaled when the scale is known";
        /// Payload.
        pub len: u32, "bytes", "payload bytes";
        /// Retransmission.
        pub rexmit: bool, "", "it resent sequence space already seen";
        /// The arrow's label.
        pub label: String, "", "the arrow's label on the ladder (flags, range, ack, window, length, options)";
    }
}

/// A segment's class in the words of the `segments` table's `verdict` (the plot's own, its SVG
/// classes, are shorter: `rexmit`, `ooo`).
fn verdict(k: SegKind) -> Name {
    Name(match k {
        SegKind::New => "new",
        SegKind::Retransmission => "retransmission",
        SegKind::OutOfOrder => "out_of_order",
        SegKind::ZeroWindowProbe => "probe",
    })
}

fn dir(d: Dir) -> Name {
    Name(d.name())
}

/// The time-sequence plot's series: `segments`, `acks`, `sacks`, `notes`.
pub fn tsg(mut s: Tsg, w: Window) -> Vec<Part> {
    let r = SeriesRef { conn: s.conn + 1, dir: dir(s.dir) };
    s.segments.retain(|p| w.has_ns(p.t_ns));
    s.acks.retain(|a| w.has_ns(a.t_ns));
    s.sacks.retain(|b| w.has_ns(b.t_ns));
    s.notes.retain(|n| w.has_ns(n.t_ns));
    let segments = Part::map("segments", s.segments, |p| TsgSegment {
        time_s: secs(p.t_ns),
        frame: p.frame,
        seq: p.seq_off,
        len: p.len,
        kind: if p.keepalive {
            Name("keep_alive")
        } else if p.kind == SegKind::New {
            Name(crate::export::rows::unclassified(p.len, p.flags))
        } else {
            verdict(p.kind)
        },
        flags: flag_letters(p.flags),
    });
    let acks = Part::map("acks", s.acks, |a| TsgAck {
        time_s: secs(a.t_ns),
        frame: a.frame,
        ack: a.ack_off,
        win_bytes: a.win_bytes,
        edge: a.ack_off.saturating_add_unsigned(a.win_bytes),
        advances: a.advances,
        repeats: a.repeats,
        edge_repeats: a.edge_repeats,
        flags: flag_letters(a.flags),
    });
    let sacks = Part::map("sacks", s.sacks, |b| TsgSack {
        time_s: secs(b.t_ns),
        frame: b.frame,
        left: b.from,
        right: b.to,
        dsack: b.dsack,
    });
    let notes = Part::map("notes", s.notes, |n| TsgNote {
        time_s: secs(n.t_ns),
        frame: n.frame,
        seq: n.y,
        note: Name(n.kind.label()),
    });
    [segments, acks, sacks, notes].map(|p| p.prefixed(r)).into()
}

/// The RTT plot's series: `samples`.
pub fn rtt(mut s: RttSeries, w: Window) -> Vec<Part> {
    let r = SeriesRef { conn: s.conn + 1, dir: dir(s.dir) };
    s.points.retain(|p| w.has_ns(p.t_ns));
    let samples = Part::map("samples", s.points, |p| RttSample {
        time_s: secs(p.t_ns),
        rtt_ms: ms(p.rtt_ns),
        kind: Name(match p.kind {
            RttKind::Karn => "karn",
            RttKind::Timestamp => "timestamp",
        }),
        frame: p.frame,
    });
    vec![samples.prefixed(r)]
}

/// The throughput plot's three lines, as [`TputRate`]'s `line` names them.
const LINES: [&str; 3] = ["instantaneous", "average", "goodput_average"];

/// The throughput plot's series: `packets` and `rates`, the averages over `window_s` (the
/// plot's window, [`super::tput::default_window_s`] of the whole connection when `None`),
/// taken over every packet and kept in `w`, as the plot draws them.
pub fn tput(mut s: TputSeries, window_s: Option<f64>, w: Window) -> Vec<Part> {
    let r = SeriesRef { conn: s.conn + 1, dir: dir(s.dir) };
    let window_s = window_s
        .filter(|w| *w > 0.0)
        .unwrap_or_else(|| super::tput::default_window_s(secs(s.last_ns), s.rtt_min_ns.map(secs)));
    let window_ns = (window_s * 1e9).round().max(1.0) as u64;
    // Each point with its line (an index of LINES): 32 bytes a point, not a row's 56.
    let lines =
        [s.instantaneous(Bytes::All), s.moving_average(Bytes::All, window_ns), s.moving_average(Bytes::New, window_ns)];
    let points: Vec<(u8, RatePoint)> = lines
        .into_iter()
        .enumerate()
        .flat_map(|(k, v)| v.into_iter().map(move |p| (k as u8, p)))
        .filter(|(_, p)| w.has_ns(p.t_ns))
        .collect();
    s.points.retain(|p| w.has_ns(p.t_ns));
    let rates = Part::map("rates", points, move |&(k, p)| TputRate {
        line: Name(LINES[k as usize]),
        time_s: secs(p.t_ns),
        bps: p.bps,
        frame: p.frame,
        window_s: (k > 0).then_some(window_s),
    });
    let packets = Part::map("packets", s.points, |p| TputPacket {
        time_s: secs(p.t_ns),
        frame: p.frame,
        bytes: p.bytes,
        new_bytes: p.new_bytes,
        rexmit: p.rexmit,
    });
    vec![packets.prefixed(r), rates.prefixed(r)]
}

/// The in-flight plot's series: `points` (bytes in flight, advertised window) and `cwnd`.
pub fn flight(mut s: FlightSeries, w: Window) -> Vec<Part> {
    let r = SeriesRef { conn: s.conn + 1, dir: dir(s.dir) };
    let scaled = s.rwnd_scaled;
    // Each point with whether it is a window (else bytes in flight).
    let points: Vec<(bool, BytesPoint)> = s
        .flight
        .into_iter()
        .map(|p| (false, p))
        .chain(s.rwnd.into_iter().map(|p| (true, p)))
        .filter(|(_, p)| w.has_ns(p.t_ns))
        .collect();
    s.cwnd.retain(|r| w.overlaps(secs(r.start_ns), secs(r.end_ns)));
    let points = Part::map("points", points, move |&(window, p)| FlightPoint {
        line: Name(if window { "window" } else { "in_flight" }),
        time_s: secs(p.t_ns),
        frame: p.frame,
        bytes: p.bytes,
        window_scaled: scaled,
    });
    let cwnd = Part::map("cwnd", s.cwnd, |r| CwndRound {
        start_s: secs(r.start_ns),
        end_s: secs(r.end_ns),
        frame: r.frame,
        bytes: r.bytes,
        packets: r.packets,
    });
    vec![points.prefixed(r), cwnd.prefixed(r)]
}

/// The segment-size plot's series: `segments`.
pub fn ssize(mut s: SsizeSeries, w: Window) -> Vec<Part> {
    let r = SeriesRef { conn: s.conn + 1, dir: dir(s.dir) };
    s.points.retain(|p| w.has_ns(p.t_ns));
    let peer_mss = s.peer_mss;
    let segments = Part::map("segments", s.points, move |p| SsizePoint {
        time_s: secs(p.t_ns),
        frame: p.frame,
        len: p.len,
        kind: verdict(p.kind),
        peer_mss,
    });
    vec![segments.prefixed(r)]
}

/// The ACK-delay plot's series: `delays`.
pub fn ack(mut s: AckSeries, w: Window) -> Vec<Part> {
    let r = SeriesRef { conn: s.conn + 1, dir: dir(s.dir) };
    s.points.retain(|p| w.has_ns(p.t_ns));
    let delays = Part::map("delays", s.points, |p| AckDelay {
        time_s: secs(p.t_ns),
        delay_ms: ms(p.delay_ns),
        kind: Name(p.kind.name()),
        frame: p.frame,
    });
    vec![delays.prefixed(r)]
}

/// The burstiness plots' series: `packets`, `bins` (the histogram's) and `cdf`.
pub fn burst(s: BurstSeries) -> Vec<Part> {
    let r = SeriesRef { conn: s.conn + 1, dir: dir(s.dir) };
    let bins = s.histogram(super::burst::BINS_PER_DECADE);
    let bins = Part::map("bins", bins, |b| BurstBin { lo_bps: b.lo_bps, hi_bps: b.hi_bps, bytes: b.bytes });
    let cdf = Part::map("cdf", s.cdf(), |&(rate_bps, bytes)| BurstCdf { rate_bps, bytes });
    let packets = Part::map("packets", s.points, |p| BurstPacket {
        time_s: secs(p.t_ns),
        frame: p.frame,
        bytes: p.bytes,
        gap_ms: ms(p.gap_ns),
        rate_bps: p.rate_bps,
    });
    [packets, bins, cdf].map(|p| p.prefixed(r)).into()
}

/// The duplicate-ACK plot's series: `dupacks`, `rexmits` and `intervals` (of `interval_s`,
/// the plot's: [`super::dupack::default_interval`] of the time shown when `None`).
pub fn dupack(mut s: DupackSeries, interval_s: Option<f64>, w: Window) -> Vec<Part> {
    let r = SeriesRef { conn: s.conn + 1, dir: dir(s.dir) };
    let (x0, x1) = super::chart::limits_range(w.from_s, w.to_s, s.last_ns);
    let iv = interval_s.filter(|w| *w > 0.0).unwrap_or_else(|| super::dupack::default_interval(x1 - x0));
    let iv_ns = (iv * 1e9).round().max(1.0) as u64;
    let counts: Vec<(usize, (u32, u32))> = s
        .per_interval(iv_ns)
        .into_iter()
        .enumerate()
        .filter(|&(k, _)| w.overlaps(k as f64 * iv, (k + 1) as f64 * iv))
        .collect();
    s.dupacks.retain(|p| w.has_ns(p.t_ns));
    s.rexmits.retain(|p| w.has_ns(p.t_ns));
    let intervals = Part::map("intervals", counts, move |&(k, (dupacks, rexmits))| DupackInterval {
        start_s: k as f64 * iv,
        interval_s: iv,
        dupacks,
        rexmits,
    });
    let dupacks =
        Part::map("dupacks", s.dupacks, |p| DupAck { time_s: secs(p.t_ns), frame: p.frame, ack: p.ack_off, n: p.n });
    let rexmits = Part::map("rexmits", s.rexmits, |p| DupackRexmit {
        time_s: secs(p.t_ns),
        frame: p.frame,
        seq: p.seq_off,
        bytes: p.bytes,
    });
    [dupacks, rexmits, intervals].map(|p| p.prefixed(r)).into()
}

/// The ladder's series: `segments` (both directions), each row's label made as it is taken.
pub fn ladder(mut l: Ladder, w: Window) -> Vec<Part> {
    let conn = l.conn + 1;
    l.segs.retain(|s| w.has(s.t));
    let segments = Part::map("segments", l.segs, move |s| LadderRow {
        conn,
        dir: dir(s.dir),
        time_s: s.t,
        frame: s.frame,
        flags: flag_letters(s.flags),
        seq_raw: s.seq,
        seq: s.seq_off,
        ack: s.ack_off,
        win_bytes: s.win,
        len: s.len,
        rexmit: s.rexmit,
        label: s.label(),
    });
    vec![segments]
}

/// The state diagram's series: `steps`, each endpoint's initial state and transitions (the
/// rows of `tcpscope states`).
pub fn states(s: &States) -> Vec<Part> {
    vec![Part::new("steps", crate::export::states::rows(s, s.conn + 1))]
}

/// Every table of this module: `(table, fields)`, for the docs' field lists.
pub const ALL: &[(&str, &[crate::table::Field])] = {
    use crate::table::Table;
    &[
        (SeriesRef::NAME, SeriesRef::FIELDS),
        (TsgSegment::NAME, TsgSegment::FIELDS),
        (TsgAck::NAME, TsgAck::FIELDS),
        (TsgSack::NAME, TsgSack::FIELDS),
        (TsgNote::NAME, TsgNote::FIELDS),
        (RttSample::NAME, RttSample::FIELDS),
        (TputPacket::NAME, TputPacket::FIELDS),
        (TputRate::NAME, TputRate::FIELDS),
        (FlightPoint::NAME, FlightPoint::FIELDS),
        (CwndRound::NAME, CwndRound::FIELDS),
        (SsizePoint::NAME, SsizePoint::FIELDS),
        (AckDelay::NAME, AckDelay::FIELDS),
        (BurstPacket::NAME, BurstPacket::FIELDS),
        (BurstBin::NAME, BurstBin::FIELDS),
        (BurstCdf::NAME, BurstCdf::FIELDS),
        (DupAck::NAME, DupAck::FIELDS),
        (DupackRexmit::NAME, DupackRexmit::FIELDS),
        (DupackInterval::NAME, DupackInterval::FIELDS),
        (LadderRow::NAME, LadderRow::FIELDS),
    ]
};

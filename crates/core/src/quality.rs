//! How good a trace is: what the capture (not the network) got wrong, per connection and per
//! trace (`tcpscope quality`, `docs/quality.md`). The [`QualitySink`] finds what statistics do
//! not count: frames recorded twice, time going backwards in file order, segments larger than
//! the receiver's MSS (offload); the rest comes from [`crate::stats`] (bytes acknowledged but
//! never captured, Zeek's capture-loss rule; segments cut by the snaplen; the two half-loops
//! that place the capture point) and from the file summaries (damage, bad timestamps).

use crate::analysis::{At, ConnIdx, Event, SegmentInfo, Sink};
use crate::flow::ConnInfo;
use crate::stats::ConnStats;

/// What the quality sink finds on one connection.
#[derive(Clone, Debug, Default)]
pub struct ConnQuality {
    /// Segments identical to the connection's previous one (the same frame recorded twice).
    pub duplicate_frames: u64,
    /// Segments earlier than the connection's previous one.
    pub backwards: u64,
    /// The largest step back (ns).
    pub max_backwards_ns: u64,
    /// Segments with more payload than the MSS their receiver announced (offload: TSO/GRO).
    pub oversize_segments: u64,
    /// The largest payload of those.
    pub max_oversize: u32,
    /// Advancing ACKs (both directions) and those acknowledging bytes never captured: Zeek's
    /// capture-loss events.
    pub ack_events: u64,
    /// ACKs of bytes never captured.
    pub gap_events: u64,
    /// Per direction: the previous segment's fingerprint and the receiver's MSS.
    last: Option<(u8, u64)>,
    last_ts_ns: u64,
    mss: [Option<u16>; 2],
}

/// What the quality sink finds on one trace, in the order its segments were read.
#[derive(Clone, Debug, Default)]
pub struct TraceQuality {
    /// TCP segments earlier than the segment before them in the file.
    pub backwards: u64,
    /// The largest step back (ns), and the frame that took it.
    pub max_backwards_ns: u64,
    /// Frame of the largest step back.
    pub max_backwards_frame: u64,
    /// The longest silence between two consecutive TCP segments (ns), and the frame after it.
    pub max_gap_ns: u64,
    /// Frame after the longest silence.
    pub max_gap_frame: u64,
    last_ts_ns: u64,
}

/// The [`Sink`] of `tcpscope quality`: per connection and per trace.
#[derive(Default)]
pub struct QualitySink {
    /// Per connection, by index.
    pub conns: Vec<ConnQuality>,
    /// The trace.
    pub trace: TraceQuality,
}

/// A segment's header fields: two records of one frame have the same.
fn fingerprint(s: &SegmentInfo) -> u64 {
    // Not a cryptographic hash: the fields folded by multiply-xorshift steps.
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    for v in [
        s.seq.0 as u64,
        s.ack.0 as u64,
        s.flags.0 as u64,
        s.len as u64,
        s.win_bytes,
        s.ip_id as u64,
        s.tsval.map_or(1 << 40, |v| v as u64),
        // Not the TTL: one packet seen before and after a router on the captured segment is
        // one frame recorded twice too (tcptrace's hardware_dups trace).
        s.hdr_len as u64,
    ] {
        h = (h ^ v).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 29;
    }
    h
}

impl Sink for QualitySink {
    fn connection(&mut self, conn: ConnIdx, _info: &ConnInfo) {
        debug_assert_eq!(conn, self.conns.len());
        self.conns.push(ConnQuality::default());
    }

    fn segment(&mut self, s: &SegmentInfo) {
        let t = s.at.ts_ns;
        let tq = &mut self.trace;
        if tq.last_ts_ns != 0 {
            if t < tq.last_ts_ns {
                tq.backwards += 1;
                if tq.last_ts_ns - t > tq.max_backwards_ns {
                    tq.max_backwards_ns = tq.last_ts_ns - t;
                    tq.max_backwards_frame = s.at.frame;
                }
            } else if t - tq.last_ts_ns > tq.max_gap_ns {
                tq.max_gap_ns = t - tq.last_ts_ns;
                tq.max_gap_frame = s.at.frame;
            }
        }
        tq.last_ts_ns = tq.last_ts_ns.max(t);
        let c = &mut self.conns[s.at.conn];
        let dir = s.at.dir.idx();
        if c.last_ts_ns != 0 && t < c.last_ts_ns {
            c.backwards += 1;
            c.max_backwards_ns = c.max_backwards_ns.max(c.last_ts_ns - t);
        }
        c.last_ts_ns = c.last_ts_ns.max(t);
        // The same frame twice: every header field but the TTL equal to the connection's
        // previous segment, which was in the same direction. A field that differs between two sends
        // (an IP ID, a TSval, or payload) must be there: two pure ACKs without either are
        // legitimately alike.
        let fp = fingerprint(s);
        let distinct = s.ip_id != 0 || s.tsval.is_some() || s.len > 0;
        if distinct && c.last == Some((dir as u8, fp)) {
            c.duplicate_frames += 1;
        }
        c.last = Some((dir as u8, fp));
        if s.flags.syn() && s.mss.is_some() {
            c.mss[dir] = s.mss;
        }
        if let Some(m) = c.mss[1 - dir]
            && s.len > m as u32
        {
            c.oversize_segments += 1;
            c.max_oversize = c.max_oversize.max(s.len);
        }
    }

    fn event(&mut self, at: &At, ev: &Event) {
        let c = &mut self.conns[at.conn];
        match ev {
            Event::AckAdvance { .. } => c.ack_events += 1,
            Event::AckedUnseen { .. } => c.gap_events += 1,
            _ => {}
        }
    }
}

/// Where the capture point sits between the endpoints, from the two half-loops: the time from
/// a's data to b's ACK of it (capture → b → capture) and from b's data to a's ACK (capture →
/// a → capture), each the smallest of its Karn samples (the handshake's included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// a's half-loop is at most a tenth of the RTT: the capture is at or near a.
    NearA,
    /// b's half-loop is at most a tenth of the RTT.
    NearB,
    /// Neither: somewhere on the path.
    Middle,
}

impl Position {
    /// Name as in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Position::NearA => "near_a",
            Position::NearB => "near_b",
            Position::Middle => "middle",
        }
    }

    /// From the half-loops to a and to b (ns), when both are known.
    pub fn of(loop_a: Option<u64>, loop_b: Option<u64>) -> Option<Position> {
        let (a, b) = (loop_a?, loop_b?);
        let rtt = a + b;
        Some(if a * 10 <= rtt {
            Position::NearA
        } else if b * 10 <= rtt {
            Position::NearB
        } else {
            Position::Middle
        })
    }
}

/// The half-loops of a connection (ns): (to a, to b), from its statistics.
pub fn half_loops(c: &ConnStats) -> (Option<u64>, Option<u64>) {
    // a's data is acknowledged by b: its samples are the half-loop to b.
    (c.rtt_min_ns(1), c.rtt_min_ns(0))
}

/// Zeek's capture-loss notice fires at 10 % of ACKs; retransmission counts and RTTs are off
/// well before: a trace is doubtful from 1 %.
pub const LOSS_DOUBTFUL: f64 = 0.01;

/// One connection's quality, as `tcpscope quality` gives it ([`ConnRow::FIELDS`]).
#[derive(serde::Serialize, Clone, Debug)]
#[allow(missing_docs)]
pub struct ConnRow {
    pub id: usize,
    pub file: usize,
    pub acked_unseen_bytes: u64,
    pub ack_events: u64,
    pub gap_events: u64,
    pub capture_loss: Option<f64>,
    pub duplicate_frames: u64,
    pub backwards_timestamps: u64,
    pub max_backwards_ms: f64,
    pub truncated_packets: u64,
    pub oversize_segments: u64,
    pub max_segment_bytes: u64,
    pub halfloop_a_ms: Option<f64>,
    pub halfloop_b_ms: Option<f64>,
    pub position: Option<&'static str>,
    pub doubtful: Vec<&'static str>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl ConnRow {
    /// Connection `id` (1-based in the run) from its statistics and the quality sink's findings.
    pub fn new(id: usize, c: &ConnStats, q: &ConnQuality) -> ConnRow {
        let (la, lb) = half_loops(c);
        let [a, b] = c.dirs();
        let unseen = a.rare().acked_unseen_bytes + b.rare().acked_unseen_bytes;
        let loss =
            (q.ack_events + q.gap_events > 0).then(|| q.gap_events as f64 / q.ack_events.max(q.gap_events) as f64);
        let mut row = ConnRow {
            id,
            file: c.info().file,
            acked_unseen_bytes: unseen,
            ack_events: q.ack_events,
            gap_events: q.gap_events,
            capture_loss: loss,
            duplicate_frames: q.duplicate_frames,
            backwards_timestamps: q.backwards,
            max_backwards_ms: ms(q.max_backwards_ns),
            truncated_packets: a.truncated_packets + b.truncated_packets,
            oversize_segments: q.oversize_segments,
            max_segment_bytes: q.max_oversize as u64,
            halfloop_a_ms: la.map(ms),
            halfloop_b_ms: lb.map(ms),
            position: Position::of(la, lb).map(Position::name),
            doubtful: Vec::new(),
        };
        row.doubtful = doubts(loss, q.duplicate_frames, q.backwards, q.oversize_segments);
        row
    }
}

/// Why numbers read from a capture are doubtful, by stable name.
pub fn doubts(loss: Option<f64>, dups: u64, backwards: u64, oversize: u64) -> Vec<&'static str> {
    let mut v = Vec::new();
    if loss.is_some_and(|l| l >= LOSS_DOUBTFUL) {
        v.push("capture_loss");
    }
    if dups > 0 {
        v.push("duplicate_frames");
    }
    if backwards > 0 {
        v.push("time_backwards");
    }
    if oversize > 0 {
        v.push("offload");
    }
    v
}

use crate::table::{Field, Kind, Table};

impl Table for ConnRow {
    const NAME: &'static str = "quality_connections";
    const FIELDS: &'static [Field] = &[
        Field::new("id", Kind::Int, "", "the connection's id, as in `stats`"),
        Field::new("file", Kind::Int, "", "index (from 0) of its file in `files`"),
        Field::new(
            "acked_unseen_bytes",
            Kind::Int,
            "bytes",
            "bytes of either direction acknowledged but never captured: the capture missed them",
        ),
        Field::new("ack_events", Kind::Int, "", "ACKs advancing over data the capture saw"),
        Field::new("gap_events", Kind::Int, "", "ACKs acknowledging bytes never captured (Zeek's gap events)"),
        Field::nullable(
            "capture_loss",
            Kind::Float,
            "",
            "Zeek's capture-loss ratio: `gap_events` / (`ack_events`, at least `gap_events`); null without ACKs",
        ),
        Field::new(
            "duplicate_frames",
            Kind::Int,
            "",
            "segments identical in every header field but the TTL (an IP ID, a TSval or payload present) to the connection's previous one: one frame recorded twice",
        ),
        Field::new("backwards_timestamps", Kind::Int, "", "segments earlier than the connection's previous one"),
        Field::new("max_backwards_ms", Kind::Float, "ms", "largest of those steps back"),
        Field::new(
            "truncated_packets",
            Kind::Int,
            "",
            "segments whose payload the snaplen cut (lengths come from the IP header: counts stay right)",
        ),
        Field::new(
            "oversize_segments",
            Kind::Int,
            "",
            "segments with more payload than the MSS their receiver announced: offload (TSO/GRO) at the capture point",
        ),
        Field::new("max_segment_bytes", Kind::Int, "bytes", "largest payload of those (0 without)"),
        Field::nullable(
            "halfloop_a_ms",
            Kind::Float,
            "ms",
            "smallest time from b's data to a's ACK at the capture point (capture → a → capture); null without a Karn sample",
        ),
        Field::nullable(
            "halfloop_b_ms",
            Kind::Float,
            "ms",
            "the same for a's data and b's ACK (capture → b → capture)",
        ),
        Field::nullable(
            "position",
            Kind::Text,
            "",
            "`near_a`, `near_b` (that half-loop at most a tenth of their sum) or `middle`; null when a half-loop is unknown",
        ),
        Field::new(
            "doubtful",
            Kind::List,
            "",
            "why its numbers are doubtful: `capture_loss` (at least 1 %), `duplicate_frames`, `time_backwards`, `offload`; empty when none",
        ),
    ];
}

/// One file's quality ([`FileRow::FIELDS`]).
#[derive(serde::Serialize, Clone, Debug)]
#[allow(missing_docs)]
pub struct FileRow {
    pub path: String,
    pub records: u64,
    pub tcp_packets: u64,
    pub damaged: usize,
    pub bad_timestamps: u64,
    pub backwards_timestamps: u64,
    pub max_backwards_ms: f64,
    pub max_backwards_frame: Option<u64>,
    pub max_gap_s: f64,
    pub max_gap_frame: Option<u64>,
    pub acked_unseen_bytes: u64,
    pub ack_events: u64,
    pub gap_events: u64,
    pub capture_loss: Option<f64>,
    pub duplicate_frames: u64,
    pub truncated_packets: u64,
    pub oversize_segments: u64,
    pub positions: std::collections::BTreeMap<&'static str, u64>,
    pub doubtful: Vec<&'static str>,
}

impl FileRow {
    /// File `f`'s row: its summary, the trace's order findings `t`, and its connections' rows.
    pub fn new(f: &crate::pass::FileSummary, t: &TraceQuality, conns: &[&ConnRow]) -> FileRow {
        let sum = |g: fn(&ConnRow) -> u64| conns.iter().map(|c| g(c)).sum::<u64>();
        let (acks, gaps) = (sum(|c| c.ack_events), sum(|c| c.gap_events));
        let loss = (acks + gaps > 0).then(|| gaps as f64 / acks.max(gaps) as f64);
        let mut positions = std::collections::BTreeMap::new();
        for p in conns.iter().filter_map(|c| c.position) {
            *positions.entry(p).or_default() += 1;
        }
        let dups = sum(|c| c.duplicate_frames);
        let oversize = sum(|c| c.oversize_segments);
        let mut doubtful = doubts(loss, dups, t.backwards, oversize);
        if !f.damaged.is_empty() {
            doubtful.push("damaged");
        }
        if f.bad_timestamps > 0 {
            doubtful.push("bad_timestamps");
        }
        FileRow {
            path: f.path.display().to_string(),
            records: f.packets,
            tcp_packets: f.tcp_packets,
            damaged: f.damaged.len(),
            bad_timestamps: f.bad_timestamps,
            backwards_timestamps: t.backwards,
            max_backwards_ms: ms(t.max_backwards_ns),
            max_backwards_frame: (t.backwards > 0).then_some(t.max_backwards_frame),
            max_gap_s: t.max_gap_ns as f64 / 1e9,
            max_gap_frame: (t.max_gap_ns > 0).then_some(t.max_gap_frame),
            acked_unseen_bytes: sum(|c| c.acked_unseen_bytes),
            ack_events: acks,
            gap_events: gaps,
            capture_loss: loss,
            duplicate_frames: dups,
            truncated_packets: sum(|c| c.truncated_packets),
            oversize_segments: oversize,
            positions,
            doubtful,
        }
    }
}

impl Table for FileRow {
    const NAME: &'static str = "quality_files";
    const FIELDS: &'static [Field] = &[
        Field::new("path", Kind::Text, "", "the file as given"),
        Field::new("records", Kind::Int, "", "records read"),
        Field::new("tcp_packets", Kind::Int, "", "records decoded as TCP segments"),
        Field::new("damaged", Kind::Int, "", "stretches skipped as damaged (`stats --json` lists them)"),
        Field::new(
            "bad_timestamps",
            Kind::Int,
            "",
            "records whose timestamp was damaged (given the time of the record before)",
        ),
        Field::new(
            "backwards_timestamps",
            Kind::Int,
            "",
            "TCP segments earlier than the segment before them in the file",
        ),
        Field::new("max_backwards_ms", Kind::Float, "ms", "largest of those steps back"),
        Field::nullable("max_backwards_frame", Kind::Int, "", "the frame that took it"),
        Field::new(
            "max_gap_s",
            Kind::Float,
            "s",
            "longest silence between two consecutive TCP segments (a clock jump shows here)",
        ),
        Field::nullable("max_gap_frame", Kind::Int, "", "the frame after it"),
        Field::new("acked_unseen_bytes", Kind::Int, "bytes", "Σ over its connections"),
        Field::new("ack_events", Kind::Int, "", "Σ over its connections"),
        Field::new("gap_events", Kind::Int, "", "Σ over its connections"),
        Field::nullable(
            "capture_loss",
            Kind::Float,
            "",
            "`gap_events` / (`ack_events`, at least `gap_events`): Zeek's capture-loss ratio",
        ),
        Field::new("duplicate_frames", Kind::Int, "", "Σ over its connections"),
        Field::new("truncated_packets", Kind::Int, "", "Σ over its connections"),
        Field::new("oversize_segments", Kind::Int, "", "Σ over its connections"),
        Field::new(
            "positions",
            Kind::Counts,
            "",
            "connections by capture point position (`near_a`, `near_b`, `middle`)",
        ),
        Field::new(
            "doubtful",
            Kind::List,
            "",
            "as a connection's, plus `damaged` and `bad_timestamps`; empty when none",
        ),
    ];
}

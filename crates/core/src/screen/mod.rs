//! Screening: what is wrong with each connection, in plain words (thesis ch. 4-5; Tstat).
//!
//! [`ScreenSink`] folds the analysis' segments and events into, per connection:
//! - the class of every retransmitted or out-of-order segment ([`OosClass`]), with the evidence
//!   the rule used ([`OosEvent`]);
//! - what limited the connection, as fractions of its lifetime ([`Limits`]);
//! - burstiness (thesis ch. 4) and acknowledgment behaviour;
//! - a severity score, a boring flag ([`Rules`]) and a verdict sentence.
//!
//! Every rule is written down in `docs/screening.md`; the code names the rule it applies.

pub mod rules;
mod side;

use std::sync::Arc;

use serde::Serialize;

use crate::analysis::{At, ConnIdx, Dir, Event, Evidence, SegmentInfo, Sink};
pub use crate::event::OosClass;
use crate::flow::ConnInfo;
use crate::vantage::{ConnVantage, INFERRED, Proof, VantageDir};
pub use rules::Rules;
use side::Side;

/// Counts per class (`out_of_sequence` in the JSON; the required keys first).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct OosCounts {
    /// [`OosClass::Rto`]
    pub rto: u32,
    /// [`OosClass::FastRetransmit`]
    pub fast_retransmit: u32,
    /// [`OosClass::Reordering`]
    pub reordering: u32,
    /// [`OosClass::NetworkDuplicate`]
    pub network_duplicate: u32,
    /// [`OosClass::Spurious`]
    pub spurious: u32,
    /// [`OosClass::FlowControl`]
    pub flow_control: u32,
    /// [`OosClass::Unknown`]
    pub unknown: u32,
    /// [`OosClass::TailLossProbe`]
    pub tail_loss_probe: u32,
    /// [`OosClass::SynTimeout`]
    pub syn_timeout: u32,
}

impl OosCounts {
    fn slot(&mut self, c: OosClass) -> &mut u32 {
        match c {
            OosClass::Rto => &mut self.rto,
            OosClass::FastRetransmit => &mut self.fast_retransmit,
            OosClass::TailLossProbe => &mut self.tail_loss_probe,
            OosClass::Reordering => &mut self.reordering,
            OosClass::NetworkDuplicate => &mut self.network_duplicate,
            OosClass::Spurious => &mut self.spurious,
            OosClass::FlowControl => &mut self.flow_control,
            OosClass::SynTimeout => &mut self.syn_timeout,
            OosClass::Unknown => &mut self.unknown,
        }
    }
    /// Count of one class.
    pub fn get(&self, c: OosClass) -> u32 {
        let mut copy = *self;
        *copy.slot(c)
    }
    /// Retransmissions: every class but reordering, network duplicates and probes.
    pub fn retransmissions(&self) -> u32 {
        OosClass::ALL.iter().filter(|c| c.is_retransmission()).map(|&c| self.get(c)).sum()
    }
    fn add(&mut self, o: &OosCounts) {
        for c in OosClass::ALL {
            *self.slot(c) += o.get(c);
        }
    }
}

/// One classified segment and the evidence the rule used (times in ms).
#[derive(Clone, Debug, Serialize)]
pub struct OosEvent {
    /// The class.
    pub class: OosClass,
    /// Which rule decided it, in words.
    pub rule: &'static str,
    /// Direction of the segment ("a2b" / "b2a").
    pub dir: &'static str,
    /// Its frame number.
    pub frame: u64,
    /// Seconds since the connection's first packet (the earliest, when time goes back).
    pub time_s: f64,
    /// Relative sequence number of its first byte.
    pub seq: i64,
    /// Payload bytes.
    pub len: u32,
    /// Frame of the previous copy of these bytes, when remembered.
    pub prev_frame: Option<u64>,
    /// Time since the previous copy was sent (retransmission) or since the segment before the
    /// hole (hole fill): Tstat's "RT".
    pub since_prev_ms: Option<f64>,
    /// Hole fill: time since the segment after the hole (Tstat's "ΔT").
    pub since_hole_ms: Option<f64>,
    /// Duplicate ACKs of the current cumulative ACK when it was sent.
    pub dup_acks: u32,
    /// A SACK block above it had been received.
    pub sack_above: bool,
    /// RTT estimate (mean of the two half-loops' means).
    pub rtt_ms: Option<f64>,
    /// Minimum RTT estimate.
    pub rtt_min_ms: Option<f64>,
    /// RTO estimate.
    pub rto_ms: f64,
    /// Where the RTT estimate came from: "both halves", "one half" or "none".
    pub rtt_source: &'static str,
    /// Frame of the D-SACK that showed the retransmission was not needed, if one did.
    pub dsack_frame: Option<u64>,
    /// What other captures proved about it (`--with`); `None`: inferred from this capture
    /// alone. Not a field of the event records: `screen --json` gives it in `vantage.events`.
    #[serde(skip)]
    pub proved: Option<Box<Proved>>,
}

/// A verdict other captures proved (docs/screening.md, "Several captures").
#[derive(Clone, Debug)]
pub struct Proved {
    /// The class this capture alone gave it.
    pub inferred: OosClass,
    /// The captures whose sightings prove it (1-based, `+`-joined).
    pub source: String,
    /// The proof in words.
    pub detail: String,
}

/// Where the verdict on one classified segment comes from: `screen --json`'s
/// `vantage.events`, one per entry of `events`, in the same order.
#[derive(Clone, Debug, Serialize)]
pub struct EventSource<'a> {
    /// The segment's frame (as in `events`).
    pub frame: u64,
    /// Its direction.
    pub dir: &'static str,
    /// Its class now (as in `events`).
    pub class: OosClass,
    /// `inferred` (this capture alone), or the captures that prove it (`1+2`).
    pub source: &'a str,
    /// The class this capture alone gave it.
    pub inferred: OosClass,
    /// The proof in words, or null.
    pub detail: Option<&'a str>,
}

impl crate::table::Table for EventSource<'_> {
    const NAME: &'static str = "screen_vantage_events";
    const FIELDS: &'static [crate::table::Field] = {
        use crate::table::{Field as F, Kind};
        &[
            F::new("frame", Kind::Int, "", "the segment's frame, as in `events`"),
            F::new("dir", Kind::Text, "", "`a2b` or `b2a`"),
            F::new("class", Kind::Text, "", "its class, as in `events`"),
            F::new(
                "source",
                Kind::Text,
                "",
                "`inferred`: TRACE's analysis alone decided it; else the captures whose sightings prove it, `+`-joined (`1+2`: TRACE and the first `--with` capture)",
            ),
            F::new("inferred", Kind::Text, "", "the class TRACE's analysis alone gave it"),
            F::nullable("detail", Kind::Text, "", "the proof in words"),
        ]
    };
}

/// What other captures prove about a connection: `screen --json`'s `vantage` (with `--with`).
#[derive(Serialize)]
pub struct VantageRow<'a> {
    /// Its id in `tcpscope correlate` of the same captures, or null when not found there.
    pub conn: Option<usize>,
    /// a's data across the captures, or null.
    pub a2b: Option<&'a VantageDir>,
    /// b's data.
    pub b2a: Option<&'a VantageDir>,
    /// Where each event's verdict comes from (JSON only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventSource<'a>>>,
}

impl crate::table::Table for VantageRow<'_> {
    const NAME: &'static str = "screen_vantage";
    const FIELDS: &'static [crate::table::Field] = {
        use crate::table::{Field as F, Kind};
        &[
            F::nullable(
                "conn",
                Kind::Int,
                "",
                "its id in `tcpscope correlate` of the same captures; null: not found there",
            ),
            F::nullable("a2b", Kind::Object, "", "a's data across the captures (below), or null"),
            F::nullable("b2a", Kind::Object, "", "b's data"),
            F::new(
                "events",
                Kind::List,
                "",
                "JSON only: where each event's verdict comes from, one per entry of `events` in the same order (below)",
            ),
        ]
    };
}

impl crate::table::Table for OosEvent {
    const NAME: &'static str = "events";
    const FIELDS: &'static [crate::table::Field] = {
        use crate::table::{Field as F, Kind};
        &[
            F::new(
                "class",
                Kind::Text,
                "",
                "why it was sent: `rto`, `fast_retransmit`, `tail_loss_probe`, `reordering`, `network_duplicate`, `spurious`, `flow_control`, `syn_timeout`, `unknown` ([screening.md](screening.md))",
            ),
            F::new("rule", Kind::Text, "", "the rule that decided it, in words"),
            F::new("dir", Kind::Text, "", "`a2b` or `b2a`: the segment's direction"),
            F::new("frame", Kind::Int, "", "its frame number (in its file)"),
            F::new("time_s", Kind::Float, "s", "since the connection's earliest packet"),
            F::new("seq", Kind::Int, "", "relative sequence number of its first byte"),
            F::new("len", Kind::Int, "bytes", "payload bytes"),
            F::nullable("prev_frame", Kind::Int, "", "frame of the previous copy of these bytes, when remembered"),
            F::nullable(
                "since_prev_ms",
                Kind::Float,
                "ms",
                "time since the previous copy (retransmission) or the segment before the hole (hole fill): Tstat's RT",
            ),
            F::nullable(
                "since_hole_ms",
                Kind::Float,
                "ms",
                "hole fill: time since the segment after the hole (Tstat's ΔT)",
            ),
            F::new("dup_acks", Kind::Int, "", "duplicate ACKs of the cumulative ACK when it was sent"),
            F::new("sack_above", Kind::Bool, "", "a SACK block above it had been received"),
            F::nullable("rtt_ms", Kind::Float, "ms", "RTT estimate: the two half-loops' means summed"),
            F::nullable("rtt_min_ms", Kind::Float, "ms", "minimum RTT estimate"),
            F::new("rto_ms", Kind::Float, "ms", "RTO estimate"),
            F::new(
                "rtt_source",
                Kind::Text,
                "",
                "where the RTT estimate came from: `both halves`, `one half` or `none`",
            ),
            F::nullable(
                "dsack_frame",
                Kind::Int,
                "",
                "frame of the D-SACK that showed the retransmission was not needed",
            ),
        ]
    };
}

/// Fractions of a connection's lifetime (first to last packet) by what limited it. They sum
/// to at most 1: the handshake, and the time before the main sender's first data packet or
/// after its FIN, belong to none.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Limits {
    /// The sender had nothing to send.
    pub application: f64,
    /// Data in flight reached the receiver's advertised window, or the window was zero.
    pub receiver_window: f64,
    /// In flight below the receiver's window: the congestion window or the network.
    pub congestion: f64,
    /// Loss recovery and retransmission-timer stalls.
    pub recovery: f64,
}

/// Burstiness of one direction's data (thesis ch. 4).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Burstiness {
    /// Average throughput of the data phase (first to last data packet), bits/s.
    pub average_bps: Option<f64>,
    /// Fraction of payload bytes sent at more than `burst_factor` × the average rate.
    pub bursty_fraction: Option<f64>,
    /// Bursts by length (lengths 2 to 16; 16 counts 16 or more), only lengths that occurred.
    pub bursts: Vec<BurstCount>,
}

/// How many bursts of one length there were, and how many of them lost data.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct BurstCount {
    /// Packets in the burst.
    pub packets: u32,
    /// Bursts of that length.
    pub count: u32,
    /// Of which a later loss repair resent a byte.
    pub with_loss: u32,
}

/// Acknowledgment behaviour of the receiver of one direction's data.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AckBehaviour {
    /// ACKs that advanced the cumulative ACK, per data segment received.
    pub acks_per_data_segment: Option<f64>,
    /// ACKs that advanced the cumulative ACK by more than two segments (RFC 2525 stretch ACK).
    pub stretch_acks: u64,
    /// The receiver's pure ACKs as a fraction of its packets.
    pub pure_ack_fraction: Option<f64>,
    /// A delayed-ACK timer, when evident: the mean wait (ms) of ACKs that came 20 ms or more
    /// after the segment they acknowledged beyond the usual round trip.
    pub delayed_ack_ms: Option<f64>,
    /// How many ACKs showed it.
    pub delayed_acks: u64,
    /// Small segments this side sent right after the peer's delayed ACK (analysis' rule,
    /// statistics.md) of the small segment before them: Nagle's algorithm held them for it.
    pub nagle_waits: u64,
    /// The mean delay (ms) of those delayed ACKs.
    pub nagle_delay_ms: Option<f64>,
}

/// The per-direction part of a screening result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirScreen {
    /// Out-of-sequence counts of this direction's segments.
    pub out_of_sequence: OosCounts,
    /// What limited this direction as a sender.
    pub limits: Limits,
    /// Zero-window episodes (the window went from open to zero).
    pub zero_windows: u32,
    /// Time the window stayed zero, seconds.
    pub zero_window_s: f64,
    /// Retransmission-timer stalls.
    pub timeout_stalls: u32,
    /// Their total time, seconds (silence before the timeout retransmission).
    pub timeout_stall_s: f64,
    /// Burstiness of this direction's data.
    pub burstiness: Burstiness,
    /// How the peer acknowledged this direction's data.
    pub acks: AckBehaviour,
    /// Payload bytes sent, retransmissions included.
    #[serde(skip)]
    pub payload_bytes: u64,
    /// Payload bytes of the segments classified as retransmissions (any class but
    /// reordering, network duplicate and flow control).
    #[serde(skip)]
    pub rexmit_bytes: u64,
    /// Some data segment was sent while earlier data was unacknowledged.
    #[serde(skip)]
    pub pipelined: bool,
    /// Packets sent.
    #[serde(skip)]
    pub packets: u64,
    /// `limits` in ns (application, receiver window, congestion, recovery).
    #[serde(skip)]
    pub limits_ns: [u64; 4],
}

/// The screening result of one connection.
#[derive(Clone, Debug, Serialize)]
pub struct ConnScreen {
    /// Index (id - 1) within its file.
    #[serde(skip)]
    pub idx: ConnIdx,
    /// Endpoints (a sent the SYN), file, reuse reason.
    #[serde(skip)]
    pub info: ConnInfo,
    /// Whether the boring rules hold.
    pub boring: bool,
    /// 0 (fine) to 1 (very troubled); see [`severity`].
    pub severity: f64,
    /// The judgement in plain words.
    pub verdict: String,
    /// What limited the main sender (the direction that sent more payload).
    pub limits: Limits,
    /// Out-of-sequence counts over both directions.
    pub out_of_sequence: OosCounts,
    /// The direction the verdict and limits describe ("a2b" / "b2a").
    pub main_dir: &'static str,
    /// Lifetime, seconds.
    pub duration_s: f64,
    /// Per direction `[a2b, b2a]`.
    pub dir: [DirScreen; 2],
    /// Classified segments with their evidence (at most [`MAX_EVIDENCE`], in trace order).
    pub events: Vec<OosEvent>,
    /// Events not kept because of the cap.
    pub events_dropped: u64,
    /// What other captures prove about it (`--with`), or `None` without them.
    #[serde(skip)]
    pub vantage: Option<Box<ConnVantage>>,
}

/// The order "most troubled first" everywhere tcpscope ranks connections (`screen`, the
/// report, the viewer's list sorted by severity): connections that are not boring first, then
/// the most severe, ties by position. Returns positions into `screens`.
pub fn rank(screens: &[ConnScreen]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..screens.len()).collect();
    order.sort_by(|&x, &y| {
        let (a, b) = (&screens[x], &screens[y]);
        a.boring.cmp(&b.boring).then(b.severity.total_cmp(&a.severity)).then(x.cmp(&y))
    });
    order
}

/// One connection as `screen --json` and `--csv` give it: its fields are [`ScreenRow::FIELDS`].
#[derive(Serialize)]
pub struct ScreenRow<'a> {
    /// Its id (1-based).
    pub id: usize,
    /// Endpoint a, `addr:port`.
    pub a: String,
    /// Endpoint b.
    pub b: String,
    /// Whether the boring rules hold.
    pub boring: bool,
    /// 0 (fine) to 1 (very troubled).
    pub severity: f64,
    /// The judgement in plain words.
    pub verdict: &'a str,
    /// What limited the main sender.
    pub limits: &'a Limits,
    /// Out-of-sequence counts over both directions.
    pub out_of_sequence: &'a OosCounts,
    /// The direction the verdict and limits describe.
    pub main_dir: &'static str,
    /// Lifetime, seconds.
    pub duration_s: f64,
    /// a's data, as a sender.
    pub a2b: &'a DirScreen,
    /// b's data.
    pub b2a: &'a DirScreen,
    /// Each classified segment (JSON only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<&'a [OosEvent]>,
    /// Events beyond those kept (JSON only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_dropped: Option<u64>,
    /// What other captures prove (only with `--with`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vantage: Option<VantageRow<'a>>,
}

impl<'a> ScreenRow<'a> {
    /// Connection `id`'s row; `events` adds the evidence list.
    pub fn new(id: usize, s: &'a ConnScreen, events: bool) -> Self {
        ScreenRow {
            id,
            a: s.info.a.to_string(),
            b: s.info.b.to_string(),
            boring: s.boring,
            severity: s.severity,
            verdict: &s.verdict,
            limits: &s.limits,
            out_of_sequence: &s.out_of_sequence,
            main_dir: s.main_dir,
            duration_s: s.duration_s,
            a2b: &s.dir[0],
            b2a: &s.dir[1],
            events: events.then_some(&s.events[..]),
            events_dropped: events.then_some(s.events_dropped),
            vantage: s.vantage.as_deref().map(|v| VantageRow {
                conn: v.conn,
                a2b: v.dir[0].as_ref(),
                b2a: v.dir[1].as_ref(),
                events: events.then(|| s.events.iter().map(EventSource::of).collect()),
            }),
        }
    }
}

impl crate::table::Table for ScreenRow<'_> {
    const NAME: &'static str = "screen";
    const FIELDS: &'static [crate::table::Field] = {
        use crate::table::{Field as F, Kind};
        &[
            F::new("id", Kind::Int, "", "as in `conns` (order of first appearance, counted over all files given)"),
            F::new("a", Kind::Text, "", "endpoint a, `addr:port` (`[addr]:port` for IPv6)"),
            F::new("b", Kind::Text, "", "endpoint b"),
            F::new("boring", Kind::Bool, "", "the boring rules hold"),
            F::new("severity", Kind::Float, "", "0 (fine) to 1 (very troubled), see screening.md \"Severity\""),
            F::new("verdict", Kind::Text, "", "plain words, most serious first; \"boring\" or \"no trouble found\""),
            F::new(
                "limits",
                Kind::Object,
                "",
                "fractions of the lifetime (first to last packet) the main direction's sender was limited by the application, the receiver's window, the network/congestion window, loss recovery and timeout stalls; sum ≤ 1",
            ),
            F::new(
                "out_of_sequence",
                Kind::Object,
                "",
                "classified segments over both directions: `rto`, `fast_retransmit`, `reordering`, `network_duplicate`, `spurious`, `flow_control` (zero-window probes), `unknown`, `tail_loss_probe`, `syn_timeout` (a SYN or SYN-ACK sent again)",
            ),
            F::new(
                "main_dir",
                Kind::Text,
                "",
                "the direction that sent more payload; `limits` and `verdict` describe it",
            ),
            F::new("duration_s", Kind::Float, "s", "lifetime"),
            F::new(
                "a2b",
                Kind::Object,
                "",
                "a's data as a sender: its own `out_of_sequence` and `limits`; `zero_windows` (episodes: the peer's window went from open to zero), `zero_window_s`; `timeout_stalls`, `timeout_stall_s`; `burstiness` (`average_bps`, `bursty_fraction`, `bursts` by length 2–16, 16 = 16 or more); `acks`, how the peer acknowledged this data (`acks_per_data_segment`, `stretch_acks`, `pure_ack_fraction` of the peer's packets, `delayed_ack_ms` or null, `delayed_acks`, `nagle_waits`: small segments this side sent right after the peer's delayed ACK of the one before, `nagle_delay_ms` or null: those ACKs' mean delay)",
            ),
            F::new("b2a", Kind::Object, "", "the same for b's data"),
            F::new(
                "events",
                Kind::List,
                "",
                "JSON only: each classified segment in trace order (at most 256 per connection): `class`, the `rule` that decided it, `dir`, `frame`, `time_s` since the connection's earliest packet, relative `seq`, `len`, `prev_frame` (previous copy), `since_prev_ms` (RT), `since_hole_ms` (ΔT, hole fills), `dup_acks`, `sack_above`, the estimates `rtt_ms`, `rtt_min_ms`, `rto_ms`, `rtt_source`, and `dsack_frame` when a D-SACK made it spurious",
            ),
            F::new("events_dropped", Kind::Int, "", "JSON only: events beyond the 256 kept (the counts include them)"),
            F::new(
                "vantage",
                Kind::Object,
                "",
                "only with `--with`: what the other captures prove (below); the classes in `out_of_sequence`, `events` and the verdict are then the proved ones",
            ),
        ]
    };
}

impl<'a> EventSource<'a> {
    /// Where `e`'s verdict comes from.
    pub fn of(e: &'a OosEvent) -> Self {
        let p = e.proved.as_deref();
        EventSource {
            frame: e.frame,
            dir: e.dir,
            class: e.class,
            source: p.map_or(INFERRED, |p| &p.source),
            inferred: p.map_or(e.class, |p| p.inferred),
            detail: p.map(|p| p.detail.as_str()),
        }
    }
}

/// Evidence records kept per connection (the counts are always complete).
pub const MAX_EVIDENCE: usize = 256;

/// Screening state of one connection: both sides while it is open, their results once it has
/// closed (so memory follows the live connections, not all connections seen).
struct Conn {
    info: ConnInfo,
    side: Option<Box<[Side; 2]>>,
    done: Option<Box<[DirScreen; 2]>>,
    /// The earliest packet's time (`u64::MAX` before the first), and the latest's.
    first_ns: u64,
    last_ns: u64,
    /// The first packet's time in file order: while the pass runs, an event's `time_s` holds
    /// its nanoseconds from this (an exact integer in an `f64` below 2^53 ns, 104 days), made
    /// seconds since the earliest packet when the connection is read
    /// ([`Conn::rebase_events`]): with time going back, a packet earlier than every other may
    /// come after the events.
    anchor_ns: u64,
    events: Vec<OosEvent>,
    events_dropped: u64,
    vantage: Option<Box<ConnVantage>>,
}

/// Folds the analysis into screening results.
pub struct ScreenSink {
    rules: Rules,
    conns: Vec<Conn>,
    proof: Option<Arc<Proof>>,
}

impl ScreenSink {
    /// A sink applying `rules`.
    pub fn new(rules: Rules) -> Self {
        ScreenSink { rules, conns: Vec::new(), proof: None }
    }

    /// What other captures of the same connections prove (`--with`), applied as the segments
    /// come: a retransmission they judged gets their class, and each connection their counts
    /// (docs/screening.md, "Several captures"). The trace analysed must be the proof's first
    /// capture (its frame numbers).
    pub fn with_proof(mut self, proof: Option<Arc<Proof>>) -> Self {
        self.proof = proof;
        self
    }

    /// Each connection's classified segments, in connection order ([`ConnScreen::events`]),
    /// without the rest of its screening: for a table of the events alone (`export`), which
    /// with many connections would otherwise conclude each (its verdict, its directions'
    /// results) to drop it.
    pub fn into_events(self) -> Vec<Vec<OosEvent>> {
        self.conns
            .into_iter()
            .map(|mut c| {
                c.rebase_events();
                c.events
            })
            .collect()
    }

    /// The results, in connection order.
    pub fn finish(self) -> Vec<ConnScreen> {
        let rules = self.rules;
        self.conns.into_iter().enumerate().map(|(idx, c)| conclude(idx, c, &rules)).collect()
    }
}

impl Sink for ScreenSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        debug_assert_eq!(conn, self.conns.len());
        self.conns.push(Conn {
            info: *info,
            side: Some(Box::default()),
            done: None,
            first_ns: u64::MAX,
            last_ns: 0,
            anchor_ns: 0,
            events: Vec::new(),
            events_dropped: 0,
            vantage: self.proof.as_ref().map(|p| Box::new(p.conn(info.a, info.b))),
        });
    }

    fn event(&mut self, at: &At, ev: &Event) {
        let Some(c) = self.conns.get_mut(at.conn) else { return };
        let Some(side) = c.side.as_deref_mut() else { return };
        let (d, r) = (at.dir.idx(), at.dir.rev().idx());
        match *ev {
            Event::Unneeded { resent_frame, was, .. }
                if was.is_retransmission() && self.proof.as_ref().is_some_and(|p| p.judged(resent_frame)) =>
            {
                // The other captures decided this one (`prove` took it, as the analysis' class
                // `was` is a retransmission's): the D-SACK is only noted.
                let dir = at.dir.name();
                if let Some(e) = c.events.iter_mut().rev().find(|e| e.frame == resent_frame && e.dir == dir) {
                    e.dsack_frame = Some(at.frame);
                }
            }
            Event::Unneeded { seq_off, resent_frame, was } => {
                // The peer received it twice: the retransmission was not needed.
                let s = &mut side[d].oos;
                *s.slot(was) = s.get(was).saturating_sub(1);
                s.spurious += 1;
                let dir = at.dir.name();
                if let Some(e) =
                    c.events.iter_mut().rev().find(|e| e.frame == resent_frame && e.seq == seq_off.0 && e.dir == dir)
                {
                    e.class = OosClass::Spurious;
                    e.rule = "resent, then reported received twice by a D-SACK";
                    e.dsack_frame = Some(at.frame);
                }
                side[d].not_lost(seq_off);
            }
            Event::ZeroWindow => side[r].zero_window(at.ts_ns),
            Event::RttSample { rtt_ns, .. } => side[d].rtt_sample(rtt_ns),
            // Read by `acked_by` with the acknowledging segment, which comes next.
            Event::AckAdvance { ack, .. } => side[d].advance = Some(ack),
            _ => {}
        }
    }

    fn evidence(&mut self, at: &At, why: &Evidence) {
        let Some(side) = self.conns.get_mut(at.conn).and_then(|c| c.side.as_deref_mut()) else { return };
        side[at.dir.idx()].classified(at, why);
    }

    fn segment(&mut self, s: &SegmentInfo) {
        let Some(c) = self.conns.get_mut(s.at.conn) else { return };
        let t = s.at.ts_ns;
        if c.first_ns == u64::MAX {
            // The first packet: no time before it to charge.
            c.last_ns = t;
            c.anchor_ns = t;
        }
        // The earliest packet so far, as the statistics' first time (time may go back).
        c.first_ns = c.first_ns.min(t);
        let t0 = c.last_ns;
        c.last_ns = c.last_ns.max(t);
        let Some(side) = c.side.as_deref_mut() else { return };
        // Time since the previous packet, charged to what limited each side as a sender then.
        if t > t0 {
            let [a, b] = side;
            a.account(t0, t, s.at.dir == Dir::AtoB, b);
            b.account(t0, t, s.at.dir == Dir::BtoA, a);
        }
        let (me, peer) = pair(side, s.at.dir);
        if let Some(mut e) = me.sent(s, &self.rules.classify) {
            e.time_s = t.wrapping_sub(c.anchor_ns) as i64 as f64;
            if let Some(r) = self.proof.as_ref().and_then(|p| p.resend(s.at.frame, s.len)) {
                prove(me, &mut e, &r, s.seq_off);
            }
            if c.events.len() < MAX_EVIDENCE {
                c.events.push(e);
            } else {
                c.events_dropped += 1;
            }
        }
        let turn = me.turn_ns(peer);
        me.nagle(s, turn);
        peer.acked_by(s);
        // Closed both ways (or reset): keep the results, free the state.
        if (me.closed() && peer.closed()) || me.rst_sent {
            let [a, b] = side;
            let cl = &self.rules.classify;
            c.done = Some(Box::new([a.result(b, c.last_ns, cl), b.result(a, c.last_ns, cl)]));
            c.side = None;
        }
    }

    fn own_thread(&self) -> bool {
        true
    }

    const CLASSIFY: bool = true;

    // Each connection's screening sees only its own packets and events: the shards' results,
    // put in the order of first appearance, are one thread's.
    const JOINS: bool = true;
    fn join(parts: Vec<Self>, order: &[u8]) -> Self {
        let mut parts = parts.into_iter();
        let ScreenSink { rules, conns, proof } = parts.next().expect("a pass has a shard");
        let conns = crate::sink::in_order(std::iter::once(conns).chain(parts.map(|p| p.conns)), order);
        ScreenSink { rules, conns, proof }
    }
}

/// A retransmission other captures judged: spurious ones become [`OosClass::Spurious`]; a
/// necessary one keeps the analysis' class, but not `spurious` (a D-SACK's inference the
/// captures refute: then `unknown`, a retransmission of no known cause). Segments the analysis
/// did not call retransmissions (reordering, network duplicates, window probes) are left as
/// they are: correlate judges retransmissions at the first point of the path, not those.
fn prove(side: &mut Side, e: &mut OosEvent, r: &crate::vantage::Resend, seq: crate::seq::SeqOff) {
    if !e.class.is_retransmission() {
        return;
    }
    let class = match (r.spurious, e.class) {
        (true, _) => OosClass::Spurious,
        (false, OosClass::Spurious) => OosClass::Unknown,
        (false, c) => c,
    };
    if class != e.class {
        let s = &mut side.oos;
        *s.slot(e.class) = s.get(e.class).saturating_sub(1);
        *s.slot(class) += 1;
    }
    if r.spurious {
        side.not_lost(seq);
    }
    e.proved = Some(Box::new(Proved { inferred: e.class, source: r.source.clone(), detail: r.detail.clone() }));
    e.rule =
        if r.spurious { "proved spurious by the other captures" } else { "proved necessary by the other captures" };
    e.class = class;
}

/// The two sides as (the sender of a packet going `dir`, its peer).
fn pair(side: &mut [Side; 2], dir: Dir) -> (&mut Side, &mut Side) {
    let [a, b] = side;
    match dir {
        Dir::AtoB => (a, b),
        Dir::BtoA => (b, a),
    }
}

impl Conn {
    /// Makes its events' times seconds since the earliest packet (see [`Conn::anchor_ns`]).
    fn rebase_events(&mut self) {
        // The earliest packet is at or before the first in file order.
        let shift = self.anchor_ns.wrapping_sub(self.first_ns) as i64;
        for e in &mut self.events {
            e.time_s = (e.time_s as i64).wrapping_add(shift) as u64 as f64 / 1e9;
        }
    }
}

/// Turns the live state into the result: limits, severity, boring, verdict.
fn conclude(idx: ConnIdx, mut c: Conn, rules: &Rules) -> ConnScreen {
    c.rebase_events();
    let life_ns = c.last_ns.saturating_sub(c.first_ns);
    let mut dir = match (c.done, c.side) {
        (Some(done), _) => *done,
        (None, Some(side)) => {
            let [a, b] = &*side;
            [a.result(b, c.last_ns, &rules.classify), b.result(a, c.last_ns, &rules.classify)]
        }
        (None, None) => Default::default(),
    };
    let life = life_ns.max(1) as f64;
    for d in &mut dir {
        let f = |i: usize| d.limits_ns[i] as f64 / life;
        d.limits = Limits { application: f(0), receiver_window: f(1), congestion: f(2), recovery: f(3) };
    }
    let main = if dir[1].payload_bytes > dir[0].payload_bytes { 1 } else { 0 };
    let mut oos = OosCounts::default();
    oos.add(&dir[0].out_of_sequence);
    oos.add(&dir[1].out_of_sequence);
    let mut s = ConnScreen {
        idx,
        info: c.info,
        boring: false,
        severity: 0.0,
        verdict: String::new(),
        limits: dir[main].limits,
        out_of_sequence: oos,
        main_dir: if main == 0 { "a2b" } else { "b2a" },
        duration_s: life_ns as f64 / 1e9,
        dir,
        events: c.events,
        events_dropped: c.events_dropped,
        vantage: c.vantage,
    };
    s.severity = severity(&s);
    s.boring = is_boring(&s, rules);
    s.verdict = verdict(&s, main, rules);
    s
}

impl ConnScreen {
    /// The value of a metric named in [`rules::METRICS`].
    pub fn metric(&self, name: &str) -> Option<f64> {
        let o = &self.out_of_sequence;
        let both = |f: fn(&DirScreen) -> f64| f(&self.dir[0]) + f(&self.dir[1]);
        let payload = both(|d| d.payload_bytes as f64);
        Some(match name {
            "retransmissions" => o.retransmissions() as f64,
            "retransmitted_fraction" => {
                if payload > 0.0 {
                    both(|d| d.rexmit_bytes as f64) / payload
                } else {
                    0.0
                }
            }
            "rto" => o.rto as f64,
            "fast_retransmit" => o.fast_retransmit as f64,
            "spurious" => o.spurious as f64,
            "reordering" => o.reordering as f64,
            "network_duplicate" => o.network_duplicate as f64,
            "zero_windows" => both(|d| d.zero_windows as f64),
            "timeout_stalls" => both(|d| d.timeout_stalls as f64),
            "application" => self.limits.application,
            "receiver_window" => self.limits.receiver_window,
            "congestion" => self.limits.congestion,
            "recovery" => self.limits.recovery,
            "bursty_fraction" => self.main().burstiness.bursty_fraction.unwrap_or(0.0),
            "severity" => self.severity,
            "duration_s" => self.duration_s,
            "bytes" => payload,
            "packets" => both(|d| d.packets as f64),
            "nagle_waits" => both(|d| d.acks.nagle_waits as f64),
            _ => return None,
        })
    }

    /// The main sender's direction result.
    pub fn main(&self) -> &DirScreen {
        &self.dir[if self.main_dir == "a2b" { 0 } else { 1 }]
    }
}

/// Severity in [0, 1]: the chance-style union `1 - Π(1 - s_i)` of independent troubles, each
/// in [0, 1] (definitions in `docs/screening.md`):
/// - retransmission: retransmitted fraction of payload bytes × 5 (20 % is the worst);
/// - timeouts: fraction of the lifetime in timeout stalls × 2;
/// - receiver window: fraction of the lifetime limited by the receiver's window.
pub fn severity(s: &ConnScreen) -> f64 {
    let life = s.duration_s.max(1e-9);
    let stall: f64 = s.dir.iter().map(|d| d.timeout_stall_s).sum();
    let parts = [s.metric("retransmitted_fraction").unwrap_or(0.0) * 5.0, stall / life * 2.0, s.limits.receiver_window];
    let ok: f64 = parts.iter().map(|p| 1.0 - p.clamp(0.0, 1.0)).product();
    ((1.0 - ok) * 1000.0).round() / 1000.0
}

fn is_boring(s: &ConnScreen, rules: &Rules) -> bool {
    let b = &rules.boring;
    if b.stop_and_wait && s.dir.iter().any(|d| d.pipelined) {
        return false;
    }
    b.max.iter().all(|(k, v)| s.metric(k).is_none_or(|m| m <= *v))
        && b.min.iter().all(|(k, v)| s.metric(k).is_none_or(|m| m >= *v))
}

fn pct(f: f64) -> String {
    format!("{:.0}%", f * 100.0)
}

/// The verdict: the troubles found, most serious first, for the main direction, then what the
/// other direction's segments showed; or "boring" / "no trouble found".
fn verdict(s: &ConnScreen, main: usize, rules: &Rules) -> String {
    let d = &s.dir[main];
    let arrow = |i: usize| if i == 0 { "a→b" } else { "b→a" };
    let mut parts = resends(d, main == 0);
    let o = &d.out_of_sequence;
    let l = &s.limits;
    let zero = (d.zero_windows > 0).then(|| {
        let times = if d.zero_windows == 1 { "1 time".to_string() } else { format!("{} times", d.zero_windows) };
        let probes = if o.flow_control > 0 { format!(", {} probes", o.flow_control) } else { String::new() };
        format!("zero window {times}, {:.1} s in total{probes}", d.zero_window_s)
    });
    match (l.receiver_window >= 0.05, zero) {
        (true, Some(z)) => parts.push(format!("receiver window-limited {} of the time ({z})", pct(l.receiver_window))),
        (true, None) => parts.push(format!("receiver window-limited {} of the time", pct(l.receiver_window))),
        (false, Some(z)) => parts.push(z),
        (false, None) => {}
    }
    if l.recovery >= 0.05 {
        parts.push(format!("in loss recovery {} of the time", pct(l.recovery)));
    }
    if l.application >= 0.5 {
        parts.push(format!("application-limited {} of the time", pct(l.application)));
    } else if l.congestion >= 0.5 {
        parts.push(format!("network/congestion-limited {} of the time", pct(l.congestion)));
    }
    // Most bulk senders are bursty (thesis ch. 4); it is worth saying only when long bursts
    // lost data, which the thesis found to go together.
    let lossy: u32 = d.burstiness.bursts.iter().filter(|b| b.packets >= 10).map(|b| b.with_loss).sum();
    if lossy > 0 {
        let f = d.burstiness.bursty_fraction.unwrap_or(0.0);
        parts.push(format!(
            "bursty: {} of bytes sent at >{}× the average rate, {lossy} burst{} of 10+ packets lost data",
            pct(f),
            rules.classify.burst_factor,
            if lossy == 1 { "" } else { "s" }
        ));
    }
    if s.boring {
        return "boring".into();
    }
    let mut other = resends(&s.dir[1 - main], main == 1);
    for (i, list) in [(main, &mut parts), (1 - main, &mut other)] {
        if let Some(n) = nagle(&s.dir[i]) {
            list.push(n);
        }
        if let Some(w) = s.vantage.as_ref().and_then(|v| v.dir[i].as_ref()).and_then(VantageDir::words) {
            list.push(w);
        }
    }
    match (parts.is_empty(), other.is_empty()) {
        (true, true) => "no trouble found".into(),
        (false, true) => format!("{}: {}", arrow(main), parts.join("; ")),
        (true, false) => format!("{}: {}", arrow(1 - main), other.join("; ")),
        (false, false) => format!("{}: {}; {}: {}", arrow(main), parts.join("; "), arrow(1 - main), other.join("; ")),
    }
}

/// Delayed ACKs holding up Nagle's algorithm on a request/response connection (seed 001's `-D`
/// story): said when at least 2 small segments waited for the peer's delayed ACK, and they are
/// at least 5 % of this side's packets.
fn nagle(d: &DirScreen) -> Option<String> {
    let a = &d.acks;
    (a.nagle_waits >= 2 && a.nagle_waits.saturating_mul(20) >= d.packets).then(|| {
        format!(
            "delayed ACKs of {:.0} ms interact with Nagle: {} small segments waited for the peer's delayed ACK \
             of the one before (request/response; TCP_NODELAY or TCP_QUICKACK avoid it)",
            a.nagle_delay_ms.unwrap_or(0.0),
            a.nagle_waits
        )
    })
}

/// What one direction's out-of-sequence segments say: timeout stalls, retransmissions by class
/// with their share of its bytes, unneeded ones, reordering, network duplicates. `opener`: the
/// direction of a, which sent the SYN (its handshake resends are SYNs, b's SYN-ACKs).
fn resends(d: &DirScreen, opener: bool) -> Vec<String> {
    let plural = |n: u32| if n == 1 { "" } else { "s" };
    let o = &d.out_of_sequence;
    let mut parts: Vec<String> = Vec::new();
    if d.timeout_stalls > 0 {
        parts.push(format!(
            "{} timeout stall{}, {:.1} s",
            d.timeout_stalls,
            plural(d.timeout_stalls),
            d.timeout_stall_s
        ));
    }
    if o.syn_timeout > 0 {
        let what = if opener { "SYN" } else { "SYN-ACK" };
        parts.push(format!("{} {what} retransmission{}", o.syn_timeout, plural(o.syn_timeout)));
    }
    let resent = o.rto + o.fast_retransmit + o.tail_loss_probe + o.unknown;
    if resent > 0 {
        let mut kinds = Vec::new();
        for (n, what) in [
            (o.fast_retransmit, "fast"),
            (o.rto, "after timeout"),
            (o.tail_loss_probe, "tail-loss probe"),
            (o.unknown, "unclassified"),
        ] {
            if n > 0 {
                kinds.push(format!("{n} {what}"));
            }
        }
        let mut p = format!("{resent} retransmission{} ({})", plural(resent), kinds.join(", "));
        let f = if d.payload_bytes > 0 { d.rexmit_bytes as f64 / d.payload_bytes as f64 } else { 0.0 };
        if f > 0.0 {
            let share = match f {
                f if f >= 0.01 => pct(f),
                f if f >= 0.001 => format!("{:.1}%", f * 100.0),
                _ => "<0.1%".into(),
            };
            p += &format!(", {share} of bytes");
        }
        parts.push(p);
    }
    if o.spurious > 0 {
        parts.push(format!("{} unneeded retransmission{}", o.spurious, plural(o.spurious)));
    }
    if o.reordering > 0 {
        parts.push(format!("{} segment{} reordered by the network", o.reordering, plural(o.reordering)));
    }
    if o.network_duplicate > 0 {
        parts.push(format!("{} duplicated by the network", o.network_duplicate));
    }
    parts
}

#[cfg(test)]
mod tests;

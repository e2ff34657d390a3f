//! Per-connection, per-direction statistics: a fold over the analysis' segments and events.
//!
//! Every counter is defined in `docs/statistics.md`. Direction convention: a counter in
//! `a2b` counts packets *sent by a*, except the RTT group, which describes *a's data* (samples
//! taken when b's ACK arrives), as tcptrace does.

use crate::analysis::{At, ConnIdx, Event, RttKind, SegmentInfo, Sink};
use crate::conn::ConnId;
use crate::flow::ConnInfo;
use crate::seq::SeqNum;

pub use crate::summary::{Mean, Summary};

mod kept;
use kept::{C, Kept, S};

/// Statistics of one direction, as wide as they are written: what [`ConnStats::dir`] reads
/// from the narrow form a pass keeps them in (`stats/kept.rs`). See `docs/statistics.md` for
/// each field.
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    /// Last packet (ns).
    pub last_ts_ns: u64,
    /// First packet (ns).
    pub first_ts_ns: u64,
    /// Longest gap between two consecutive packets of this direction (ns).
    pub max_idle_ns: u64,
    /// All TCP packets sent in this direction.
    pub packets: u64,
    /// Packets with payload.
    pub data_packets: u64,
    /// Payload bytes, retransmissions included.
    pub payload_bytes: u64,
    /// Payload bytes never seen before in this direction.
    pub unique_bytes: u64,
    /// ACK set, no payload, no SYN/FIN/RST.
    pub pure_acks: u64,
    /// Packets carrying at least one sequence byte (payload, SYN or FIN) seen before.
    pub rexmit_packets: u64,
    /// Payload bytes seen before.
    pub rexmit_bytes: u64,
    /// First packet with payload (ns), 0 if none.
    pub first_data_ts_ns: u64,
    /// Last packet with payload (ns).
    pub last_data_ts_ns: u64,
    /// Most bytes in flight after a data packet (SACK-aware).
    pub max_in_flight: u64,
    /// Packets with a timestamps option.
    pub timestamp_packets: u64,
    /// Packets with SYN.
    pub syn: u64,
    /// Packets with FIN.
    pub fin: u64,
    /// Advertised window (bytes, scaled when known) over ACK packets and SYNs, not RSTs.
    pub window: Mean,
    /// Packets with RST.
    pub rst: u64,
    /// MSS option (last seen).
    pub mss: Option<u16>,
    /// Window scale option as sent (last seen, unclamped).
    pub wscale_opt: Option<u8>,
    /// Shift applied to this direction's windows (`None`: unknown).
    pub wscale: Option<u8>,
    /// SACK-permitted option seen.
    pub sack_permitted: bool,
    /// Packets whose payload the snaplen cut.
    pub truncated_packets: u64,
    /// Payload bytes missing because of the snaplen.
    pub truncated_bytes: u64,
    /// Karn-valid RTT samples of this direction's data.
    pub rtt: Summary,
    /// Timestamp-echo RTT samples of this direction's data.
    pub rtt_ts: Summary,
    /// Bytes of this direction cumulatively acknowledged by the peer (advance of its ACKs).
    pub acked_bytes: u64,
    /// Time of the last ACK from the peer that advanced over this direction's data (ns).
    pub last_ack_advance_ts_ns: u64,
    /// The sequence number of this side's SYN as on the wire, when its SYN was seen.
    pub isn: Option<SeqNum>,
    /// The wire sequence number of offset 0 ([`SegmentInfo::seq_base`]), once a segment was seen.
    pub seq_base: Option<SeqNum>,
    /// The ACK strategy of this side as a receiver of the peer's data.
    pub acks: AckStats,
    /// The counters that are zero in most connections (losses, SACK, zero windows, checksum
    /// verification...), allocated with the first that is not: see [`DirRare`].
    pub rare: Option<Box<DirRare>>,
}

/// The statistics of a direction that most connections never set, kept apart so that a
/// connection without losses, SACK blocks, zero windows or checksum verification carries a
/// pointer instead of ~190 bytes a direction (`docs/performance.md`, *concurrent*). Read through
/// [`DirStats::rare`]; the fields are [`DirStats`]' as `docs/statistics.md` defines them.
#[derive(Clone, Debug, Default)]
pub struct DirRare {
    /// Packets with SACK blocks.
    pub sack_packets: u64,
    /// SACK blocks sent.
    pub sack_blocks: u64,
    /// Packets filling a hole below the highest sequence number seen.
    pub out_of_order_packets: u64,
    /// Duplicate ACKs sent (about the other direction's data).
    pub dup_acks: u64,
    /// Third duplicate ACKs sent (the fast-retransmit trigger of RFC 5681).
    pub triple_dup_acks: u64,
    /// D-SACKs sent.
    pub dsacks: u64,
    /// Zero-window advertisements.
    pub zero_window_adverts: u64,
    /// Zero-window probes sent.
    pub zero_window_probes: u64,
    /// Payload bytes of zero-window probes (neither unique nor retransmitted).
    pub zero_window_probe_bytes: u64,
    /// Keep-alives sent.
    pub keepalives: u64,
    /// Times the right window edge moved left.
    pub window_shrinks: u64,
    /// ACKs that ended on a retransmitted segment (no sample).
    pub karn_discards: u64,
    /// ACKs that ended on a segment after a loss (no sample).
    pub post_loss_acks: u64,
    /// Gaps in the sequence space opened by a packet above the highest byte seen.
    pub holes: u64,
    /// Bytes of this direction acknowledged by the peer but never captured.
    pub acked_unseen_bytes: u64,
    /// Analysis hit a capacity limit (numbers approximate from then on).
    pub partial: bool,
    /// Segments whose checksum failed (not offload), not analysed; `None` when no segment of
    /// this direction was verified (verification off, or every one cut by the snaplen).
    pub checksum_errors: Option<u64>,
    /// Segments whose TCP checksum failed as checksum offload leaves it; `None` as above.
    pub checksum_offloaded: Option<u64>,
    /// Window scale inferred for a connection seen without its handshake
    /// (`analysis/wscale.rs`).
    pub wscale_inferred: Option<u8>,
}

impl DirRare {
    /// Nothing counted (the [`Default`], usable in constants).
    pub const NONE: DirRare = DirRare {
        sack_packets: 0,
        sack_blocks: 0,
        out_of_order_packets: 0,
        dup_acks: 0,
        triple_dup_acks: 0,
        dsacks: 0,
        zero_window_adverts: 0,
        zero_window_probes: 0,
        zero_window_probe_bytes: 0,
        keepalives: 0,
        window_shrinks: 0,
        karn_discards: 0,
        post_loss_acks: 0,
        holes: 0,
        acked_unseen_bytes: 0,
        partial: false,
        checksum_errors: None,
        checksum_offloaded: None,
        wscale_inferred: None,
    };
}

/// How one side acknowledged the other's data (`docs/statistics.md`, *Acknowledgment
/// strategy*): counters, the delay's summary and the delayed ACKs' histogram.
#[derive(Clone, Debug)]
pub struct AckStats {
    /// Segments that newly acknowledged the peer's payload.
    pub acking: u64,
    /// Those that rode on a segment sent anyway (payload, SYN or FIN).
    pub piggybacked: u64,
    /// Pure ACKs of at most one full segment sent at once.
    pub quick: u64,
    /// Pure ACKs of at most one full segment held by the delayed-ACK timer.
    pub delayed: u64,
    /// Runs of two or more quick ACKs in a row.
    pub quick_episodes: u64,
    /// ACKs of more than two full segments.
    pub stretch: u64,
    /// Pure ACKs that said nothing new and answered nothing.
    pub useless: u64,
    /// Payload bytes newly acknowledged.
    pub payload_bytes: u64,
    /// Bytes on the wire (IP and TCP headers) of the pure ACKs sent.
    pub wire_bytes: u64,
    /// Delay of the quick and delayed ACKs (ns, half-loop taken off).
    pub delay: Mean,
    /// The capture point's half-loop to this side and back (ns), `u64::MAX` until measured
    /// (as [`crate::event::AckFacts::loop_ns`]): read through [`AckStats::loop_ns`]. 8 bytes, not an
    /// `Option`'s 16.
    loop_ns: u64,
    /// Delays of the delayed ACKs, allocated with the first one.
    pub hist: Option<Box<DelayHist>>,
}

impl Default for AckStats {
    fn default() -> Self {
        AckStats {
            acking: 0,
            piggybacked: 0,
            quick: 0,
            delayed: 0,
            quick_episodes: 0,
            stretch: 0,
            useless: 0,
            payload_bytes: 0,
            wire_bytes: 0,
            delay: Mean::NONE,
            loop_ns: u64::MAX,
            hist: None,
        }
    }
}

impl AckStats {
    /// The capture point's half-loop to this side and back (ns), once measured.
    pub fn loop_ns(&self) -> Option<u64> {
        (self.loop_ns != u64::MAX).then_some(self.loop_ns)
    }

    /// The delayed-ACK timer: the mean delay of the most common bin of the delayed ACKs'
    /// histogram (ns), from two delayed ACKs on.
    pub fn timer_ns(&self) -> Option<f64> {
        self.hist.as_ref().filter(|_| self.delayed >= 2).and_then(|h| h.mode())
    }
}

/// A histogram of delays from [`DelayHist::LOW_NS`] up, eight bins an octave over ten octaves
/// (the last bin takes everything above): each bin's count and its samples' mean, so the mode
/// reads as a time, not as a bin's edges.
///
/// Only the bins that hold a delay are kept, in bin order, 12 bytes each: a side's delayed
/// ACKs fall in one or two bins, and every side that delayed one keeps its histogram to the
/// end of the run (all [`DelayHist::BINS`] of them were 640 bytes a side).
#[derive(Clone, Debug, Default)]
pub struct DelayHist {
    /// (bin, count, mean of its samples in ns), by bin; no bin twice, no count 0.
    bins: Vec<(u8, u32, f32)>,
}

impl DelayHist {
    /// Bins.
    pub const BINS: usize = 80;
    /// The first bin's lower edge: 2^22 ns, 4.19 ms (delayed ACKs are at least 5 ms).
    pub const LOW_NS: u64 = 1 << 22;

    /// The bin of `ns`.
    pub fn bin(ns: u64) -> usize {
        if ns < Self::LOW_NS {
            return 0;
        }
        // Octave from the leading bit, the eighth within it from the next three bits.
        let octave = 63 - ns.leading_zeros() as usize - 22;
        let eighth = ((ns >> (63 - ns.leading_zeros() - 3)) & 7) as usize;
        (octave * 8 + eighth).min(Self::BINS - 1)
    }

    fn add(&mut self, ns: u64) {
        let b = Self::bin(ns) as u8;
        let i = match self.bins.binary_search_by_key(&b, |e| e.0) {
            Ok(i) => i,
            Err(i) => {
                // Grown one entry at a time: a side rarely fills more than a few bins.
                self.bins.reserve_exact(1);
                self.bins.insert(i, (b, 0, 0.0));
                i
            }
        };
        let (_, count, mean) = &mut self.bins[i];
        *count = count.saturating_add(1);
        // A running mean: f32 sums of millions of samples would lose the digits that matter.
        *mean += (ns as f32 - *mean) / *count as f32;
    }

    /// The mean of the fullest bin (the lowest of equals), or `None` when empty.
    pub fn mode(&self) -> Option<f64> {
        let &(_, _, mean) = self.bins.iter().rev().max_by_key(|e| e.1)?;
        Some(mean as f64)
    }
}

impl DirStats {
    /// The rarely set counters ([`DirRare::NONE`] while none was set).
    pub fn rare(&self) -> &DirRare {
        self.rare.as_deref().unwrap_or(&DirRare::NONE)
    }
    /// The rarely set counters, allocated on first use.
    pub fn rare_mut(&mut self) -> &mut DirRare {
        self.rare.get_or_insert_default()
    }
    /// Unique bytes over the data time (first to last data packet), in bits per second.
    pub fn throughput_bps(&self) -> Option<f64> {
        let t = self.last_data_ts_ns.saturating_sub(self.first_data_ts_ns);
        (self.data_packets > 0 && t > 0).then(|| self.unique_bytes as f64 * 8e9 / t as f64)
    }
    /// Bytes acknowledged by the peer over the time from the first data packet to the last
    /// ACK advance, in bits per second.
    pub fn goodput_bps(&self) -> Option<f64> {
        let t = self.last_ack_advance_ts_ns.saturating_sub(self.first_data_ts_ns);
        (self.data_packets > 0 && t > 0 && self.last_ack_advance_ts_ns > 0)
            .then(|| self.acked_bytes as f64 * 8e9 / t as f64)
    }
    /// Data time (first to last data packet) in ns.
    pub fn data_time_ns(&self) -> u64 {
        self.last_data_ts_ns.saturating_sub(self.first_data_ts_ns)
    }
}

/// Connection state as `conns` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnState {
    /// Handshake seen, closed by FIN both ways.
    Complete,
    /// A RST was seen.
    Reset,
    /// Handshake seen, not closed in the capture.
    Open,
    /// The capture began after the handshake (no SYN seen).
    NoHandshake,
    /// Packets were seen in one direction only.
    OneDirection,
}

impl ConnState {
    /// Stable name.
    pub fn name(self) -> &'static str {
        match self {
            ConnState::Complete => "complete",
            ConnState::Reset => "reset",
            ConnState::Open => "open",
            ConnState::NoHandshake => "no_handshake",
            ConnState::OneDirection => "one_direction",
        }
    }
}

/// Statistics of one connection: its directions kept narrow (`stats/kept.rs`), read as
/// [`DirStats`] through [`ConnStats::dir`]. 512 bytes, an allocator size class: what the pass
/// adds to it on every packet; who it is, read when it is written, in a 64-byte box of its own
/// (`docs/performance.md`, *concurrent*).
#[derive(Clone, Debug)]
pub struct ConnStats {
    /// Longest time with no packet in either direction (ns).
    pub max_idle_ns: u64,
    /// Per direction: `[a2b, b2a]`.
    kept: [Kept; 2],
    id: Box<Identity>,
}

/// Who a [`ConnStats`] is.
#[derive(Clone, Debug)]
struct Identity {
    info: ConnInfo,
    /// As [`ConnStats::idx`]: below 2^32, as the flow table's index keeps it.
    idx: u32,
    trace: u32,
}

impl ConnStats {
    /// A connection with nothing counted yet.
    pub fn new(idx: ConnIdx, info: ConnInfo, trace: usize) -> ConnStats {
        let (idx, trace) = (narrow(idx), narrow(trace));
        ConnStats { max_idle_ns: 0, kept: [Kept::new(), Kept::new()], id: Box::new(Identity { info, idx, trace }) }
    }
    /// A connection whose directions read as `dir` (`[a2b, b2a]`): statistics made otherwise
    /// than by a pass (tests).
    pub fn with_dirs(idx: ConnIdx, info: ConnInfo, trace: usize, max_idle_ns: u64, dir: &[DirStats; 2]) -> ConnStats {
        ConnStats { max_idle_ns, kept: dir.each_ref().map(Kept::of), ..ConnStats::new(idx, info, trace) }
    }
    /// Index in its trace, in order of first appearance.
    pub fn idx(&self) -> ConnIdx {
        self.id.idx as ConnIdx
    }
    /// Renumbers it (the shards' lists joined).
    pub fn set_idx(&mut self, idx: ConnIdx) {
        self.id.idx = narrow(idx);
    }
    /// Index of its trace among the run's ([`crate::pass::Analysis::inputs`]).
    pub fn trace(&self) -> usize {
        self.id.trace as usize
    }
    /// Sets the index of its trace (several traces' statistics put together).
    pub fn set_trace(&mut self, trace: usize) {
        self.id.trace = narrow(trace);
    }
    /// Endpoints, file, reuse reason.
    pub fn info(&self) -> &ConnInfo {
        &self.id.info
    }
    /// Asks for its identity's memory (in a box of its own) to be loaded: a hint for a reader
    /// about to write it ([`crate::hint`]).
    #[inline]
    pub fn prefetch_identity(&self) {
        crate::hint::prefetch(&*self.id);
    }
    /// Endpoints, file, reuse reason, to change (several traces' statistics put together).
    pub fn info_mut(&mut self) -> &mut ConnInfo {
        &mut self.id.info
    }
    /// Direction `i` (0 `a2b`, 1 `b2a`), every number as wide as it is written.
    pub fn dir(&self, i: usize) -> DirStats {
        self.kept[i].view()
    }
    /// Both directions, `[a2b, b2a]`.
    pub fn dirs(&self) -> [DirStats; 2] {
        [self.dir(0), self.dir(1)]
    }
    /// Packets of direction `i` (without reading the rest of it).
    pub fn packets(&self, i: usize) -> u64 {
        self.kept[i].get(C::Packets)
    }
    /// Packets with payload of direction `i` (without reading the rest of it).
    pub fn data_packets(&self, i: usize) -> u64 {
        self.kept[i].get(C::DataPackets)
    }
    /// Whether direction `i` allocated its rare counters' box.
    #[cfg(test)]
    pub(crate) fn rare_allocated(&self, i: usize) -> bool {
        self.kept[i].rare_allocated()
    }
    /// Its name whatever else was read in the same run: its trace and its index there.
    pub fn conn_id(&self) -> ConnId {
        ConnId { trace: self.trace(), index: self.idx() }
    }
    /// First packet (ns).
    pub fn first_ts_ns(&self) -> u64 {
        let [a, b] = &self.kept;
        match (a.seen(), b.seen()) {
            (false, _) => b.first_ts_ns(),
            (_, false) => a.first_ts_ns(),
            _ => a.first_ts_ns().min(b.first_ts_ns()),
        }
    }
    /// Last packet (ns).
    pub fn last_ts_ns(&self) -> u64 {
        self.kept[0].last_ts_ns.max(self.kept[1].last_ts_ns)
    }
    /// Whether the handshake was seen (a SYN from a).
    pub fn handshake(&self) -> bool {
        self.kept[0].has_syn()
    }
    /// The smallest Karn RTT sample of direction `i`'s data (ns), if any.
    pub fn rtt_min_ns(&self, i: usize) -> Option<u64> {
        self.kept[i].rtt_min()
    }
    /// The state.
    pub fn state(&self) -> ConnState {
        let [a, b] = &self.kept;
        if !a.seen() || !b.seen() {
            ConnState::OneDirection
        } else if a.rst() + b.rst() > 0 {
            ConnState::Reset
        } else if !self.handshake() {
            ConnState::NoHandshake
        } else if a.has_fin() && b.has_fin() {
            ConnState::Complete
        } else {
            ConnState::Open
        }
    }
}

/// `i` as a [`ConnStats`] keeps it: the flow table numbers fewer than 2^32 connections, and a run
/// reads fewer than 2^32 traces.
fn narrow(i: usize) -> u32 {
    u32::try_from(i).expect("fewer than 2^32 connections and traces")
}

/// The [`Sink`] that builds [`ConnStats`] for every connection.
#[derive(Default)]
pub struct StatsSink {
    /// Connections, by index (boxed: growing the list moves pointers, not 512-byte records).
    pub conns: Vec<Box<ConnStats>>,
}

impl Sink for StatsSink {
    const JOINS: bool = true;
    fn join(parts: Vec<Self>, order: &[u8]) -> Self {
        let mut conns = crate::sink::in_order(parts.into_iter().map(|p| p.conns), order);
        conns.iter_mut().enumerate().for_each(|(idx, c)| c.set_idx(idx));
        StatsSink { conns }
    }
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        debug_assert_eq!(conn, self.conns.len());
        self.conns.push(Box::new(ConnStats::new(conn, *info, 0)));
    }

    #[inline]
    fn prefetch(&self, conn: ConnIdx) {
        if let Some(c) = self.conns.get(conn) {
            crate::hint::prefetch_all::<ConnStats>(c);
        }
    }

    // Inlined into the analysis, which builds `s` only to hand it here.
    #[inline]
    fn segment(&mut self, s: &SegmentInfo) {
        let t = s.at.ts_ns;
        let c = &mut self.conns[s.at.conn];
        let last_any = c.last_ts_ns();
        if last_any != 0 {
            c.max_idle_ns = c.max_idle_ns.max(t.saturating_sub(last_any));
        }
        c.kept[s.at.dir.idx()].segment(s);
    }

    fn event(&mut self, at: &At, ev: &Event) {
        let d = &mut self.conns[at.conn].kept[at.dir.idx()];
        match *ev {
            Event::OutOfOrder { .. } => d.rare_mut().out_of_order_packets += 1,
            Event::Hole { .. } => d.rare_mut().holes += 1,
            Event::AckedUnseen { bytes } => d.rare_mut().acked_unseen_bytes += bytes,
            Event::DupAck { n, .. } => {
                let r = d.rare_mut();
                r.dup_acks += 1;
                r.triple_dup_acks += (n == 3) as u64;
            }
            Event::Dsack { .. } => d.rare_mut().dsacks += 1,
            Event::ZeroWindow => d.rare_mut().zero_window_adverts += 1,
            Event::ZeroWindowProbe { len } => {
                let r = d.rare_mut();
                r.zero_window_probes += 1;
                r.zero_window_probe_bytes += len as u64;
            }
            Event::KeepAlive => d.rare_mut().keepalives += 1,
            Event::WindowShrink { .. } => d.rare_mut().window_shrinks += 1,
            Event::RttSample { rtt_ns, kind: RttKind::Karn, .. } => d.rtt_add(S::Rtt, rtt_ns),
            Event::RttSample { rtt_ns, kind: RttKind::Timestamp, .. } => d.rtt_add(S::RttTs, rtt_ns),
            Event::KarnDiscard => d.rare_mut().karn_discards += 1,
            Event::PostLossAck => d.rare_mut().post_loss_acks += 1,
            Event::AnalysisPartial { .. } => d.rare_mut().partial = true,
            Event::ChecksumError => {
                let r = d.rare_mut();
                *r.checksum_errors.get_or_insert(0) += 1;
                r.checksum_offloaded.get_or_insert(0);
            }
            Event::ChecksumVerified { offloaded } => {
                let r = d.rare_mut();
                r.checksum_errors.get_or_insert(0);
                *r.checksum_offloaded.get_or_insert(0) += offloaded as u64;
            }
            Event::WscaleInferred { shift } => d.rare_mut().wscale_inferred = Some(shift),
            Event::AckAdvance { bytes, ack } => {
                d.acked(bytes, at.ts_ns);
                // The receiver's strategy is counted on its side.
                self.conns[at.conn].kept[at.dir.rev().idx()].ack_add(bytes, ack);
            }
            Event::UselessAck => d.useless_ack(),
            Event::Retransmission { .. } | Event::Sack { .. } | Event::Unneeded { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Summary;

    /// Two-pass mean and sample standard deviation, in exact-ish f64 for the reference.
    fn two_pass(xs: &[u64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt())
    }

    /// Each side's ISN is its SYN's wire number and its sequence base the number offset 0 is
    /// counted from: ISN + 1 after a SYN; the first segment's own number without one.
    #[test]
    fn isn_and_sequence_base_as_on_the_wire() {
        use crate::testutil::{flag::*, scripted};
        let stats = |pkts: &[crate::testutil::Pkt]| {
            crate::series::run_pkts(pkts, Default::default(), super::StatsSink::default()).conns
        };
        let handshake = [
            scripted(true, 0.0, SYN, 0, 0, 0, 65535, vec![]),
            scripted(false, 10.0, SYN | ACK, 0, 0, 0, 65535, vec![]),
            scripted(true, 20.0, ACK, 0, 0, 100, 65535, vec![]),
            scripted(false, 30.0, ACK, 0, 100, 0, 65535, vec![]),
        ];
        let c = &stats(&handshake)[0];
        let got = c.dirs().map(|d| (d.isn.map(|n| n.0), d.seq_base.map(|n| n.0)));
        assert_eq!(got, [(Some(1000), Some(1001)), (Some(5000), Some(5001))]);
        // Captured after the handshake: no ISN, and the first segment's number is offset 0.
        let c = &stats(&handshake[2..])[0];
        let got = c.dirs().map(|d| (d.isn.map(|n| n.0), d.seq_base.map(|n| n.0)));
        assert_eq!(got, [(None, Some(1001)), (None, Some(5001))]);
    }

    /// With time going back, the times are the earliest and the latest, not the first and last
    /// in file order (docs/statistics.md, *Times*): never a negative duration (it overflowed).
    #[test]
    fn times_are_the_earliest_and_the_latest() {
        use crate::testutil::{flag::*, scripted};
        let pkts = [
            scripted(true, 100.0, SYN, 0, 0, 0, 65535, vec![]),
            scripted(false, 110.0, SYN | ACK, 0, 0, 0, 65535, vec![]),
            scripted(true, 120.0, ACK, 0, 0, 100, 65535, vec![]),
            // 70 ms before the SYN, then back to 130 and down to 90.
            scripted(true, 30.0, ACK, 100, 0, 100, 65535, vec![]),
            scripted(true, 130.0, ACK, 200, 0, 100, 65535, vec![]),
            scripted(false, 90.0, ACK, 0, 300, 0, 65535, vec![]),
        ];
        let c = &crate::series::run_pkts(&pkts, Default::default(), super::StatsSink::default()).conns[0];
        let ms = |ns: u64| (ns - 1_000_000_000_000) as f64 / 1e6;
        assert_eq!((ms(c.first_ts_ns()), ms(c.last_ts_ns())), (30.0, 130.0));
        let [a, b] = c.dirs();
        assert_eq!((ms(a.first_ts_ns), ms(a.last_ts_ns)), (30.0, 130.0));
        assert_eq!((ms(b.first_ts_ns), ms(b.last_ts_ns)), (90.0, 110.0));
        assert_eq!(a.data_time_ns(), 100_000_000, "first to last data segment, earliest to latest");
        // 30 → 130 is 100 ms after the latest before it (120), not after the one just before.
        assert_eq!(a.max_idle_ns, 20_000_000);
        let [first, last, duration, _] = crate::export::json::conn_times(c);
        assert!((last - first - 0.1).abs() < 1e-6 && (duration - 0.1).abs() < 1e-9, "{duration}");
    }

    /// Each kind of acknowledgment counted where the receiver sent it (b2a for a's data).
    #[test]
    fn ack_strategy_counts_each_kind() {
        use crate::testutil::{flag::*, scripted};
        let pkts = [
            scripted(true, 0.0, SYN, 0, 0, 0, 65535, vec![]),
            scripted(false, 0.1, SYN | ACK, 0, 0, 0, 65535, vec![]),
            scripted(true, 0.2, ACK, 0, 0, 0, 65535, vec![]),
            // Three segments, one ACK of all three: a stretch ACK.
            scripted(true, 10.0, ACK, 0, 0, 100, 65535, vec![]),
            scripted(true, 10.1, ACK, 100, 0, 100, 65535, vec![]),
            scripted(true, 10.2, ACK, 200, 0, 100, 65535, vec![]),
            scripted(false, 10.3, ACK, 0, 300, 0, 65535, vec![]),
            // The same ACK again, a said nothing in between: useless.
            scripted(false, 11.0, ACK, 0, 300, 0, 65535, vec![]),
            // A window update is not.
            scripted(false, 12.0, ACK, 0, 300, 0, 60000, vec![]),
            // Acknowledged with b's answer: piggy-backed.
            scripted(true, 20.0, ACK, 300, 0, 100, 65535, vec![]),
            scripted(false, 20.5, ACK, 0, 400, 50, 65535, vec![]),
            // Acknowledged after 40 ms: delayed; then at once: quick, twice: an episode.
            scripted(true, 30.0, ACK, 400, 50, 100, 65535, vec![]),
            scripted(false, 70.1, ACK, 50, 500, 0, 65535, vec![]),
            scripted(true, 80.0, ACK, 500, 50, 100, 65535, vec![]),
            scripted(false, 80.1, ACK, 50, 600, 0, 65535, vec![]),
            scripted(true, 90.0, ACK, 600, 50, 100, 65535, vec![]),
            scripted(false, 90.1, ACK, 50, 700, 0, 65535, vec![]),
        ];
        let c = &crate::series::run_pkts(&pkts, Default::default(), super::StatsSink::default()).conns[0];
        let k = &c.dir(1).acks;
        let got = (k.acking, k.stretch, k.useless, k.piggybacked, k.delayed, k.quick, k.quick_episodes);
        assert_eq!(got, (5, 1, 1, 1, 1, 2, 1));
        assert_eq!(k.payload_bytes, 700);
        // The half-loop is the quickest answer, 0.1 ms (the script's times are f64 ms: ±1 ns);
        // the delayed ACK waited 40 ms beyond it.
        assert!(k.loop_ns().unwrap().abs_diff(100_000) <= 1, "{:?}", k.loop_ns());
        assert_eq!(k.delay.n, 3);
        assert!(k.delay.max.abs_diff(40_000_000) <= 1, "{}", k.delay.max);
        // a acknowledged b's 50 bytes once, with data.
        assert_eq!((c.dir(0).acks.acking, c.dir(0).acks.piggybacked), (1, 1));
    }

    #[test]
    fn delay_histogram_bins_and_mode() {
        use super::DelayHist;
        let low = DelayHist::LOW_NS;
        assert_eq!([DelayHist::bin(0), DelayHist::bin(low), DelayHist::bin(low + low / 8)], [0, 0, 1]);
        assert_eq!([DelayHist::bin(2 * low), DelayHist::bin(2 * low - 1), DelayHist::bin(u64::MAX)], [8, 7, 79]);
        let mut h = DelayHist::default();
        for ns in [40_100_000, 40_300_000, 40_200_000, 200_000_000, 120_000_000] {
            h.add(ns);
        }
        assert!((h.mode().unwrap() - 40_200_000.0).abs() < 10.0, "{:?}", h.mode());
        // Equal counts: the lowest bin's mean, whatever the order the bins filled in.
        let mut h = DelayHist::default();
        assert_eq!(h.mode(), None);
        for ns in [200_000_000, 120_000_000, 40_000_000, 120_000_000, 40_000_000, 200_000_000] {
            h.add(ns);
        }
        assert_eq!(h.mode(), Some(40_000_000.0));
        assert_eq!(h.bins.len(), 3);
        assert!(h.bins.windows(2).all(|w| w[0].0 < w[1].0), "{:?}", h.bins);
    }

    #[test]
    fn summary_is_small() {
        // Six per connection: most of a closed connection's statistics.
        assert_eq!(std::mem::size_of::<Summary>(), 48);
    }

    #[test]
    fn summary_matches_two_pass() {
        let cases: Vec<Vec<u64>> = vec![
            vec![5, 5, 5, 5],
            vec![1, 2, 3, 4, 100],
            // A first sample far from the rest (a SYN's window, then a scaled one).
            std::iter::once(64_240).chain((0..10_000).map(|i| 6_291_456 + (i % 7) * 1448)).collect(),
            // RTTs in ns around 40 ms with sub-ms jitter.
            (0..50_000).map(|i| 40_000_000 + (i * 7919) % 300_000).collect(),
            vec![u64::MAX - 10, u64::MAX, u64::MAX - 3],
            vec![0, u64::MAX],
        ];
        for xs in cases {
            let mut s = Summary::default();
            xs.iter().for_each(|&x| s.add(x));
            let (mean, sd) = two_pass(&xs);
            assert_eq!((s.n, s.min, s.max), (xs.len() as u64, *xs.iter().min().unwrap(), *xs.iter().max().unwrap()));
            let m = s.mean().unwrap();
            assert!((m - mean).abs() <= mean.abs() * 1e-12, "mean {m} against {mean} for {:?}", &xs[..3]);
            let d = s.stdev().unwrap();
            assert!((d - sd).abs() <= sd * 1e-9 + mean.abs() * 1e-12, "stdev {d} against {sd} for {:?}", &xs[..3]);
        }
        let mut one = Summary::default();
        assert_eq!((one.mean(), one.stdev()), (None, None));
        one.add(7);
        assert_eq!((one.mean(), one.stdev()), (Some(7.0), None));
    }
}

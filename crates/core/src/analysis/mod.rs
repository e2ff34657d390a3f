//! Per-connection TCP analysis: one sender view and one receiver view per direction.
//!
//! Read RFC 9293 (sequence space, §3.4), RFC 7323 (window scale §2, timestamps §3-4),
//! RFC 2018 and 2883 (SACK, D-SACK), RFC 6298 (§3, Karn's rule) and RFC 5681 (§2, duplicate
//! ACKs) first; each rule below names its source, and `docs/statistics.md` gives the definitions
//! with their tcptrace and Wireshark counterparts.
//!
//! [`Connection::on_segment`] takes one decoded segment of the connection and emits
//! [`Event`]s and one [`SegmentInfo`] to a [`Sink`]. State is bounded by the connection's
//! unacknowledged data: holes and SACKed ranges are [`ranges::RangeSet`]s with a fixed capacity,
//! the list of unacknowledged segments for RTT sampling is capped at [`MAX_UNACKED`].

pub mod ranges;

pub use crate::event::{At, ConnIdx, Dir, Event, RttKind, SegmentInfo};
pub use crate::sink::Sink;

use std::collections::VecDeque;

use crate::conn::SplitReason;
use crate::decode::Segment;
use crate::seq::{SeqNum, SeqOff, Unwrapper};
use ranges::RangeSet;

/// Most unacknowledged transmissions remembered per direction for RTT sampling.
pub const MAX_UNACKED: usize = 1 << 15;
/// Most TSvals awaiting their echo per direction.
const MAX_TS_PENDING: usize = 4096;

/// Analysis settings.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Idle time after which a segment that does not continue the old sequence space starts a
    /// new connection on the same 4-tuple (tcptrace: 240 s).
    pub idle_split_ns: u64,
    /// Window scale to assume when the handshake was not captured (`None`: unknown).
    pub assume_wscale: Option<u8>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { idle_split_ns: 240 * 1_000_000_000, assume_wscale: None }
    }
}

/// A range of sequence space sent and not yet cumulatively acknowledged.
#[derive(Clone, Copy, Debug)]
struct Sent {
    start: SeqOff,
    end: SeqOff,
    /// When (and in which frame) the range was first sent: the RTT sample's start.
    ts_ns: u64,
    frame: u64,
    /// When (and in which frame) any of it was last sent: an ACK covering it after a later
    /// range is "post-loss".
    last_ts_ns: u64,
    last_frame: u64,
    /// Some of it was sent more than once: ambiguous for RTT (Karn).
    ambiguous: bool,
}

/// What one endpoint has sent, and what it has said about the other's data.
///
/// Sequence offsets of this endpoint's data are relative to `unwrap`'s base; acknowledgments
/// *received* for this data (`snd_una`, `sacked`) are stored here too, so the sender view is in
/// one place.
#[derive(Default, Debug)]
struct Half {
    /// Unwraps this endpoint's sequence numbers; set by its SYN (base ISN+1), its first segment,
    /// or the first ACK the peer sends for it, whichever comes first.
    unwrap: Option<Unwrapper>,
    /// ISN from this endpoint's SYN.
    isn: Option<SeqNum>,
    /// Highest offset sent + 1 (SYN and FIN count), i.e. Wireshark's `nextseq`. Invariant: every
    /// byte below it has been seen unless it is in `holes`.
    snd_max: Option<SeqOff>,
    /// What is outstanding (holes, SACKed ranges, unacknowledged ranges, TSvals awaiting their
    /// echo); allocated while any is non-empty, so an idle connection carries none of it.
    out: Option<Box<Outstanding>>,
    /// Highest cumulative ACK the peer sent for this data (RFC 9293 SND.UNA at the capture point).
    snd_una: Option<SeqOff>,
    /// Options from this endpoint's SYN.
    syn_wscale: Option<u8>,
    syn_seen: bool,
    /// Shift applied to this endpoint's windows; `None` until known.
    wscale: Option<u8>,
    /// The last packet's ACK number, window and "was a probe / keep-alive" (Wireshark's
    /// `lastack`, `window`, `lastsegmentflags`).
    last_ack: Option<SeqNum>,
    last_win_raw: Option<u16>,
    last_was_probe: bool,
    /// Duplicate ACK counter of the current ack value (Wireshark `dupacknum`).
    dupacks: u32,
    /// The right edge (ack + window) of the last advertisement, with its ack offset.
    last_edge: Option<(SeqOff, SeqOff)>,
    /// End of the last zero-window probe's payload (a probe does not move `snd_max`).
    probe_end: Option<SeqOff>,
    /// Offset (in this space) of the FIN, once seen.
    fin_off: Option<SeqOff>,
    fin_seen: bool,
    rst_seen: bool,
    /// The partial-analysis warnings already emitted (bit per structure).
    partial: u8,
}

/// The parts of a [`Half`] that grow with unacknowledged data.
#[derive(Default, Debug)]
struct Outstanding {
    /// Bytes below `snd_max` never seen in the capture (and not yet acknowledged).
    holes: RangeSet,
    /// Bytes above `snd_una` the peer reported in SACK blocks (RFC 6675 scoreboard).
    sacked: RangeSet,
    /// Ranges sent and not yet cumulatively acknowledged, sorted by sequence and disjoint: new
    /// data is pushed at the back, a retransmission marks the ranges it repeats.
    unacked: VecDeque<Sent>,
    /// TSvals sent, first occurrence each, awaiting the peer's echo: (TSval, time, frame).
    ts_pending: VecDeque<(u32, u64, u64)>,
}

impl Outstanding {
    fn is_empty(&self) -> bool {
        self.holes.is_empty() && self.sacked.is_empty() && self.unacked.is_empty() && self.ts_pending.is_empty()
    }
}

impl Half {
    /// The outstanding state, allocated on first use.
    fn out(&mut self) -> &mut Outstanding {
        self.out.get_or_insert_default()
    }

    /// This endpoint's unwrapper, created with `base` as offset 0 if it does not exist yet.
    fn unwrapper(&mut self, base: SeqNum) -> &mut Unwrapper {
        self.unwrap.get_or_insert_with(|| Unwrapper::new(base))
    }
}

/// Analysis state of one connection.
#[derive(Debug)]
pub struct Connection {
    idx: ConnIdx,
    half: [Half; 2],
    last_ts_ns: u64,
    packets: u64,
}

impl Connection {
    /// A new connection with index `idx` (its id is `idx + 1`).
    pub fn new(idx: ConnIdx) -> Self {
        Connection { idx, half: Default::default(), last_ts_ns: 0, packets: 0 }
    }

    /// Whether a FIN was seen both ways or a RST either way.
    pub fn closed(&self) -> bool {
        self.half.iter().any(|h| h.rst_seen) || self.half.iter().all(|h| h.fin_seen)
    }

    /// Frees the outstanding state that holds nothing (an idle connection then carries none).
    /// Once both sides have closed, TSvals still awaiting an echo will never get one. Called
    /// when the connection closes and by the engine's periodic sweep, not per packet: a bulk
    /// transfer empties and refills its TSval queue on every ACK.
    pub fn release(&mut self) {
        let closed = self.closed();
        for h in &mut self.half {
            if let Some(o) = &mut h.out {
                if closed && o.unacked.is_empty() {
                    o.ts_pending.clear();
                }
                if o.is_empty() {
                    h.out = None;
                }
            }
        }
    }

    /// Time of the last packet.
    pub fn last_ts_ns(&self) -> u64 {
        self.last_ts_ns
    }

    /// Whether `seg`, coming in direction `dir` at `ts_ns`, starts a new connection on this
    /// 4-tuple instead of continuing this one.
    ///
    /// - A SYN without ACK whose ISN differs from this endpoint's earlier SYN (port reuse,
    ///   as Wireshark's `reused_ports`), or a SYN on a connection that had no handshake at all.
    /// - After more than `idle_split_ns` of silence: if the connection was closed, the segment
    ///   is a SYN, or its sequence number is over 2^24 from where the endpoint left off (tcptrace
    ///   splits on idle time alone; a long-lived idle session that resumes is one connection).
    pub fn splits_on(&self, seg: &Segment<'_>, dir: Dir, ts_ns: u64, settings: &Settings) -> Option<SplitReason> {
        let h = &self.half[dir.idx()];
        let peer = &self.half[dir.rev().idx()];
        if seg.flags.syn() && !seg.flags.ack() {
            match h.isn {
                Some(isn) if isn != seg.seq => return Some(SplitReason::NewIsn),
                None if !peer.syn_seen && self.packets > 0 => return Some(SplitReason::NewIsn),
                _ => {}
            }
        }
        if ts_ns.saturating_sub(self.last_ts_ns) > settings.idle_split_ns {
            let far = match (h.unwrap, h.snd_max) {
                (Some(u), Some(m)) => (u.off(seg.seq) - m).abs() > 1 << 24,
                _ => false,
            };
            if self.closed() || seg.flags.syn() || far {
                return Some(SplitReason::IdleGap);
            }
        }
        None
    }

    /// Analyses one segment sent in direction `dir`.
    pub fn on_segment<S: Sink>(
        &mut self,
        seg: &Segment<'_>,
        dir: Dir,
        frame: u64,
        ts_ns: u64,
        settings: &Settings,
        sink: &mut S,
    ) {
        let at = At { conn: self.idx, dir, frame, ts_ns };
        let flags = seg.flags;
        let (syn, fin, rst) = (flags.syn() as i64, flags.fin() as i64, flags.rst());
        let len = seg.payload_len;
        let (me, peer) = split(&mut self.half, dir);

        // --- Handshake: ISN and options (RFC 9293 §3.5, RFC 7323 §2.2) ---
        if flags.syn() {
            me.syn_seen = true;
            if me.isn.is_none() {
                me.isn = Some(seg.seq);
                let base = SeqNum(seg.seq.0.wrapping_add(1));
                if me.unwrap.is_some_and(|u| u.base() != base) {
                    // Offsets taken before the SYN (e.g. from an injected RST) used another base.
                    me.snd_max = None;
                    me.out = None;
                }
                me.unwrap = Some(Unwrapper::new(base));
            }
            me.syn_wscale = seg.options.wscale_clamped();
            if me.syn_wscale.is_none() {
                // RFC 7323 §2.2: without the option on both SYNs, neither side scales.
                me.wscale = Some(0);
                peer.wscale = Some(0);
            }
            if peer.syn_seen {
                // RFC 7323 §2.2: scaling is in effect only if both SYNs carried the option.
                let both = me.syn_wscale.is_some() && peer.syn_wscale.is_some();
                me.wscale = Some(if both { me.syn_wscale.unwrap_or(0) } else { 0 });
                peer.wscale = Some(if both { peer.syn_wscale.unwrap_or(0) } else { 0 });
            }
        }
        if me.wscale.is_none() && !me.syn_seen && !peer.syn_seen {
            me.wscale = settings.assume_wscale;
        }

        // --- Sender view: where the segment sits in this direction's sequence space ---
        let start = me.unwrapper(seg.seq).advance(seg.seq);
        let end = start + syn + len as i64 + fin;
        let snd_max = *me.snd_max.get_or_insert(start);
        let peer_win_zero = peer.last_win_raw == Some(0) && !peer.rst_seen;
        let mut new_bytes = 0u32;
        let mut rexmit_bytes = 0u32;
        let mut is_rexmit = false;
        let mut probe = false;

        // A keep-alive repeats the last byte sent: with no payload, or with one byte that was
        // already acknowledged (an unacknowledged byte sent again is a retransmission).
        let all_acked = me.snd_una.is_some_and(|una| una >= snd_max);
        let keepalive =
            !flags.syn() && !flags.fin() && !rst && start == snd_max - 1 && (len == 0 || (len == 1 && all_acked));
        if peer_win_zero && !flags.syn() && !rst && (len > 0 || keepalive) {
            // A window probe (RFC 9293 §3.8.6.1): counted as a probe, never as a retransmission.
            probe = true;
            sink.event(&at, &Event::ZeroWindowProbe { len });
        } else if keepalive {
            sink.event(&at, &Event::KeepAlive);
        }
        if probe {
            // tcptrace's rule: a probe's bytes stay out of the sequence bookkeeping (they are
            // counted as probe bytes), so the real transmission that follows is new data. If the
            // receiver accepted the probe, the next segment starts right after it: no hole.
            if len > 0 {
                me.probe_end = Some(end);
            }
        } else if end > start {
            // Bytes seen before = below snd_max and not in a hole (tcptrace's rule).
            let seen = |a: SeqOff, b: SeqOff, holes: &RangeSet| -> u64 {
                let below = (b.min(snd_max) - a).max(0);
                if below == 0 { 0 } else { below as u64 - holes.overlap(a, a + below) }
            };
            let pay_start = start + syn;
            let pay_end = pay_start + len as i64;
            // One lookup of the outstanding state for the whole block (it is in every packet's path).
            let out = me.out.get_or_insert_default();
            let seen_all = seen(start, end, &out.holes);
            let seen_pay = seen(pay_start, pay_end, &out.holes) as u32;
            let hole_fill = start < snd_max && (end - start) as u64 > seen_all;
            // Conservation: each payload byte is new or seen before (or part of a probe).
            rexmit_bytes = seen_pay;
            new_bytes = len - seen_pay.min(len);
            if !keepalive {
                is_rexmit = seen_all > 0;
                if is_rexmit {
                    let (prev_sent, acked) = rexmit_evidence(out, me.snd_una, start, end);
                    sink.event(&at, &Event::Retransmission { seq_off: start, bytes: seen_pay, prev_sent, acked });
                }
                if hole_fill && end < snd_max {
                    sink.event(&at, &Event::OutOfOrder { seq_off: start });
                }
            }
            let accepted_probe = me.probe_end.take().is_some_and(|p| p >= start && snd_max < start);
            if start > snd_max && !accepted_probe {
                sink.event(&at, &Event::Hole { from: snd_max, to: start });
                if !out.holes.insert(snd_max, start) {
                    partial(&mut me.partial, 1, "holes", &at, sink);
                }
            }
            out.holes.remove(start, end);
            me.snd_max = Some(snd_max.max(end));
            if flags.fin() {
                me.fin_off = Some(end - 1);
            }
            // Remember the transmission for RTT sampling.
            let sent = Sent { start, end, ts_ns, frame, last_ts_ns: ts_ns, last_frame: frame, ambiguous: is_rexmit };
            if out.unacked.back().is_none_or(|b| b.end <= start) {
                if out.unacked.len() >= MAX_UNACKED {
                    out.unacked.pop_front();
                    partial(&mut me.partial, 2, "unacked segments", &at, sink);
                }
                out.unacked.push_back(sent);
            } else {
                // Below the highest range: mark what it repeats; a range it alone covers (a hole
                // fill) is inserted in order.
                let first = out.unacked.partition_point(|s| s.end <= start);
                let mut i = first;
                while let Some(s) = out.unacked.get_mut(i).filter(|s| s.start < end) {
                    s.ambiguous = true;
                    s.last_ts_ns = ts_ns;
                    s.last_frame = frame;
                    i += 1;
                }
                if i == first && me.snd_una.is_none_or(|una| end > una) {
                    let start = me.snd_una.map_or(start, |una| start.max(una));
                    out.unacked.insert(first, Sent { start, ..sent });
                }
            }
        }
        if flags.fin() {
            me.fin_seen = true;
        }
        if rst {
            me.rst_seen = true;
        }

        // --- Receiver view: what this segment says about the peer's data ---
        let mut ack_off = None;
        if flags.ack() {
            let a = peer.unwrapper(seg.ack).advance(seg.ack);
            ack_off = Some(a);
            on_ack(peer, a, &at, sink);
            // SACK blocks (RFC 2018) and D-SACK (RFC 2883 §4: the first block is below the
            // cumulative ACK, or contained in the second block).
            let blocks = seg.options.sack_blocks();
            for (i, &(le, re)) in blocks.iter().enumerate() {
                let Some(u) = peer.unwrap else { break };
                let (l, r) = (u.off(le), u.off(re));
                if r <= l {
                    continue;
                }
                let dsack =
                    i == 0 && (r <= a || blocks.get(1).is_some_and(|&(l2, r2)| u.off(l2) <= l && r <= u.off(r2)));
                if dsack {
                    sink.event(&at, &Event::Dsack { from: l, to: r });
                    continue;
                }
                sink.event(&at, &Event::Sack { from: l, to: r });
                if r > a && !peer.out().sacked.insert(l.max(a), r) {
                    partial(&mut peer.partial, 4, "SACK scoreboard", &at, sink);
                }
            }
        }
        // Duplicate ACK: Wireshark's rule (RFC 5681 §2 definition plus "window unchanged" and
        // "seq at nextseq", which keep window updates and data from counting).
        let dup = flags.ack()
            && len == 0
            && !flags.syn()
            && !flags.fin()
            && !rst
            && seg.win_raw != 0
            && me.last_win_raw == Some(seg.win_raw)
            && me.last_ack == Some(seg.ack)
            && start == snd_max
            && !peer.last_was_probe;
        if me.last_ack != Some(seg.ack) {
            me.dupacks = 0;
        }
        if dup && let Some(a) = ack_off {
            me.dupacks += 1;
            sink.event(&at, &Event::DupAck { n: me.dupacks, ack_off: a });
        }

        // Window (RFC 7323 §2.3: the SYN's window is never scaled).
        let shift = if flags.syn() { Some(0) } else { me.wscale };
        let win_bytes = (seg.win_raw as u64) << shift.unwrap_or(0);
        if flags.ack() && !flags.syn() && !rst {
            if seg.win_raw == 0 {
                sink.event(&at, &Event::ZeroWindow);
            }
            if let (Some(a), Some(_)) = (ack_off, shift) {
                let edge = a + win_bytes as i64;
                if let Some((last_a, last_edge)) = me.last_edge
                    && a >= last_a
                    && edge < last_edge
                {
                    sink.event(&at, &Event::WindowShrink { by: (last_edge - edge) as u64 });
                }
                if me.last_edge.is_none_or(|(last_a, _)| a >= last_a) {
                    me.last_edge = Some((a, edge));
                }
            }
        }

        // Timestamps: RTT from the echo (RFC 7323 §4.3), measured for the peer's data.
        if let Some((tsval, tsecr)) = seg.options.timestamps {
            if flags.ack() && tsecr != 0 {
                let pending = &mut peer.out().ts_pending;
                while let Some(&(v, t, f)) = pending.front() {
                    let d = SeqNum(v).diff(SeqNum(tsecr));
                    if d > 0 {
                        break;
                    }
                    pending.pop_front();
                    if d == 0 {
                        let rat = At { dir: dir.rev(), ..at };
                        sink.event(
                            &rat,
                            &Event::RttSample {
                                rtt_ns: ts_ns.saturating_sub(t),
                                kind: RttKind::Timestamp,
                                sent_frame: f,
                            },
                        );
                    }
                }
            }
            let pending = &mut me.out().ts_pending;
            if pending.back().is_none_or(|&(v, _, _)| SeqNum(tsval).diff(SeqNum(v)) > 0) {
                if pending.len() >= MAX_TS_PENDING {
                    pending.pop_front();
                }
                pending.push_back((tsval, ts_ns, frame));
            }
        }

        // Bytes in flight after a data segment (SACK-aware: RFC 6675's "pipe" without loss
        // marking): highest sent - cumulatively acked - SACKed above it.
        let in_flight = match (len > 0, me.snd_una, me.snd_max) {
            (true, Some(una), Some(max)) if max > una => Some((max - una) as u64 - me.out().sacked.overlap(una, max)),
            (true, Some(_), Some(_)) => Some(0),
            _ => None,
        };

        me.last_ack = Some(seg.ack);
        me.last_win_raw = Some(seg.win_raw);
        me.last_was_probe = probe || keepalive;
        self.last_ts_ns = ts_ns;
        self.packets += 1;
        if self.closed() {
            self.release();
        }

        sink.segment(&SegmentInfo {
            at,
            flags,
            seq_off: start,
            seq: seg.seq,
            ack: seg.ack,
            len,
            new_bytes,
            rexmit_bytes,
            is_rexmit,
            truncated_bytes: seg.truncated_bytes(),
            ack_off,
            win_bytes,
            wscale: shift,
            in_flight,
            sack_blocks: seg.options.sack_len,
            tsval: seg.options.timestamps.map(|(v, _)| v),
            ip_id: seg.ip_id,
            ttl: seg.ttl,
            mss: seg.options.mss,
            wscale_opt: seg.options.wscale,
            sack_permitted: seg.options.sack_permitted,
        });
    }
}

/// The two halves as (this endpoint, its peer).
fn split(half: &mut [Half; 2], dir: Dir) -> (&mut Half, &mut Half) {
    let [a, b] = half;
    match dir {
        Dir::AtoB => (a, b),
        Dir::BtoA => (b, a),
    }
}

/// What the sender's state says about a retransmission of `[start, end)`: when the first
/// repeated range was last sent (time, frame), and whether the receiver already had every byte
/// (below the cumulative ACK or SACKed). Only called for retransmissions, off the common path.
fn rexmit_evidence(o: &Outstanding, snd_una: Option<SeqOff>, start: SeqOff, end: SeqOff) -> (Option<(u64, u64)>, bool) {
    let una = snd_una.unwrap_or(SeqOff::MIN);
    let i = o.unacked.partition_point(|s| s.end <= start);
    let prev = o.unacked.get(i).filter(|s| s.start < end).map(|s| (s.last_ts_ns, s.last_frame));
    let above = start.max(una);
    let acked = end <= una || o.sacked.overlap(above, end) == (end - above) as u64;
    (prev, acked)
}

fn partial<S: Sink>(done: &mut u8, bit: u8, what: &'static str, at: &At, sink: &mut S) {
    if *done & bit == 0 {
        *done |= bit;
        sink.event(at, &Event::AnalysisPartial { what });
    }
}

/// A cumulative ACK `a` for `h`'s data: capture loss, RTT samples (Karn), scoreboard pruning.
fn on_ack<S: Sink>(h: &mut Half, a: SeqOff, at: &At, sink: &mut S) {
    if h.snd_una.is_some_and(|una| a <= una) {
        return;
    }
    let data_dir = At { dir: at.dir.rev(), ..*at };
    // Acknowledged but never captured: holes below a, and anything above the highest byte seen.
    let out = h.out.get_or_insert_default();
    let mut unseen = out.holes.remove_below(a);
    if let Some(max) = h.snd_max {
        let from = h.snd_una.unwrap_or(max).max(max);
        if a > from {
            unseen += (a - from) as u64;
        }
    }
    if unseen > 0 {
        sink.event(&data_dir, &Event::AckedUnseen { bytes: unseen });
    }
    if let Some(old) = h.snd_una {
        // Credit payload only: not the SYN (offset -1) nor the FIN.
        let lo = if h.isn.is_some() { 0 } else { SeqOff::MIN };
        // A FIN below the first byte (garbage on the wire) must not make an empty range panic.
        let hi = h.fin_off.unwrap_or(SeqOff::MAX).max(lo);
        let bytes = a.clamp(lo, hi).saturating_sub(old.clamp(lo, hi));
        if bytes > 0 {
            sink.event(&data_dir, &Event::AckAdvance { bytes: bytes as u64 });
        }
    }
    h.snd_una = Some(a);
    out.sacked.remove_below(a);

    // RTT (RFC 6298 §3 Karn's rule, tcptrace's exact-match rule): the ACK must end exactly on a
    // transmission that was never repeated, and no earlier transmission it covers may have
    // been sent after it.
    // `unacked` is in sequence order, so everything this ACK covers is at the front.
    let mut candidate: Option<Sent> = None;
    let mut latest_other = 0u64;
    while let Some(s) = out.unacked.front().copied().filter(|s| s.end <= a) {
        out.unacked.pop_front();
        if let Some(c) = candidate.replace(s) {
            latest_other = latest_other.max(c.last_ts_ns);
        }
    }
    if candidate.is_some_and(|c| c.end != a) {
        candidate = None;
    }
    if let Some(front) = out.unacked.front_mut()
        && front.start < a
    {
        front.start = a;
    }
    if let Some(c) = candidate {
        if c.ambiguous {
            sink.event(&data_dir, &Event::KarnDiscard);
        } else if latest_other > c.ts_ns {
            sink.event(&data_dir, &Event::PostLossAck);
        } else {
            sink.event(
                &data_dir,
                &Event::RttSample {
                    rtt_ns: at.ts_ns.saturating_sub(c.ts_ns),
                    kind: RttKind::Karn,
                    sent_frame: c.frame,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests;

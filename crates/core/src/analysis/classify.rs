//! Why a segment was out of sequence: each retransmission, hole fill and zero-window probe gets
//! a class ([`OosClass`]) and the evidence its rule read ([`Evidence`]); a D-SACK later marks a
//! retransmission unneeded.
//!
//! Tstat's classifier (Mellia et al., "TCP anomalies", 2005) with its RTT and RTO estimates from
//! the two half-loops seen at the capture point, RFC 5681 §3.2 (duplicate-ACK threshold),
//! RFC 6675 and RFC 8985 (SACK above a segment marks it lost; tail-loss probes, §7), RFC 2883
//! (D-SACK). Every rule and constant is in `docs/screening.md`, "Out-of-sequence
//! classification".

use std::collections::VecDeque;

use serde::Deserialize;

use super::{At, Bits, Event, Half, HalfRare, Sink};
use crate::decode::Segment;
use crate::event::{Evidence, OosClass};
use crate::seq::SeqOff;
use crate::summary::Summary;

const MS: f64 = 1e6;
/// Holes remembered per direction for classifying the segment that fills them.
const MAX_HOLES: usize = 16;
/// Recent data segments remembered to recognise a network duplicate.
const RECENT: usize = 4;
/// Recent retransmissions remembered for a D-SACK to find.
const MAX_RESENT: usize = 64;

/// The classifier's constants (the `[classify]` section of a rules file).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Classify {
    /// Floor of the RTO estimate, ms (Linux TCP_RTO_MIN 200; Windows 300; RFC 6298 1000).
    pub rto_min_ms: f64,
    /// Floor of the minimum-RTT estimate, ms.
    pub rtt_min_floor_ms: f64,
    /// Duplicate ACKs that count as fast-retransmit evidence (RFC 5681 §3.2).
    pub dupack_threshold: u32,
    /// A packet whose instantaneous rate exceeds this multiple of the average is "bursty"
    /// (thesis ch. 4 uses 10). Read by screening's burstiness, not by the classifier.
    pub burst_factor: f64,
}

impl Default for Classify {
    fn default() -> Self {
        Classify { rto_min_ms: 200.0, rtt_min_floor_ms: 1.0, dupack_threshold: 3, burst_factor: 10.0 }
    }
}

/// A gap in the sequence space and when it opened.
#[derive(Clone, Copy, Debug)]
struct Hole {
    from: SeqOff,
    to: SeqOff,
    /// The last data packet before the hole opened, and the packet that opened it.
    before_ns: u64,
    after_ns: u64,
}

/// What identifies one transmission of a segment (24 bytes: written for every segment).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Print {
    /// Its frame; 0 for an empty slot.
    frame: u64,
    /// The sequence number as on the wire.
    seq: u32,
    len: u32,
    tsval: u32,
    ip_id: u16,
    ttl: u8,
    has_ts: bool,
}

/// A retransmission a D-SACK may show unneeded.
#[derive(Clone, Copy, Debug)]
struct Resent {
    seq: SeqOff,
    len: u32,
    frame: u64,
    class: OosClass,
}

/// What the classifier remembers of one sender beyond the analysis' own state (the cumulative
/// ACK, the SACK scoreboard, duplicate ACKs and the highest byte sent are the analysis'). Kept
/// small: every segment writes one. A [`Half`] allocates it only when the pass classifies
/// ([`Sink::CLASSIFY`]): `stats` never reads it, and with many connections open at once the
/// two of every connection were 368 bytes (`docs/performance.md`, *concurrent*).
#[derive(Default, Debug)]
pub(super) struct Memory {
    /// Half-loop RTT of this side's data (data → peer's ACK at the capture point).
    rtt: Summary,
    /// When this side last sent payload.
    last_data_ns: u64,
    /// Start of the last segment resent (a tail-loss probe is the first resend of the tail).
    last_resent: Option<SeqOff>,
    recent: [Print; RECENT],
    /// Largest payload sent.
    mss: u32,
    recent_next: u8,
    /// Holes and retransmissions, allocated with the first of either.
    rare: Option<Box<Rare>>,
}

/// What only connections with holes or retransmissions need.
#[derive(Default, Debug)]
struct Rare {
    /// Holes in this side's data, with their times.
    holes: Vec<Hole>,
    /// Retransmissions a D-SACK could still show unneeded, oldest first.
    resent: VecDeque<Resent>,
}

impl Memory {
    /// What a side that has not sent yet reads as (the [`Default`]).
    pub(super) const NONE: Memory = Memory {
        rtt: Summary::NONE,
        last_data_ns: 0,
        last_resent: None,
        recent: [Print { frame: 0, seq: 0, len: 0, tsval: 0, ip_id: 0, ttl: 0, has_ts: false }; RECENT],
        mss: 0,
        recent_next: 0,
        rare: None,
    };

    /// An RTT sample of this side's data.
    #[inline]
    pub(super) fn rtt_sample(&mut self, rtt_ns: u64) {
        self.rtt.add(rtt_ns);
    }

    /// A hole `[from, to)` opened at `ts_ns` (after the data sent last).
    pub(super) fn hole(&mut self, from: SeqOff, to: SeqOff, ts_ns: u64) {
        let before_ns = self.last_data_ns;
        let holes = &mut self.rare.get_or_insert_default().holes;
        if holes.len() >= MAX_HOLES {
            holes.remove(0);
        }
        holes.push(Hole { from, to, before_ns, after_ns: ts_ns });
    }

    fn holes(&self) -> &[Hole] {
        self.rare.as_ref().map_or(&[], |r| &r.holes)
    }

    /// After the segment `[start, end)` with `len` payload bytes has been classified.
    #[inline(always)] // once per packet, from one place: as if written in on_segment
    pub(super) fn sent(&mut self, seg: &Segment<'_>, (start, end): (SeqOff, SeqOff), ts_ns: u64, frame: u64) {
        let len = seg.payload_len;
        if len > 0 {
            self.mss = self.mss.max(len);
            self.last_data_ns = ts_ns;
            if let Some(r) = &mut self.rare
                && !r.holes.is_empty()
            {
                r.holes.retain_mut(|h| {
                    if start <= h.from {
                        h.from = h.from.max(end);
                    } else if end >= h.to {
                        h.to = h.to.min(start);
                    }
                    h.from < h.to
                });
            }
        }
        if end > start {
            let (tsval, has_ts) = seg.options.timestamps.map_or((0, false), |(v, _)| (v, true));
            let print = Print { frame, seq: seg.seq.0, len, tsval, ip_id: seg.ip_id, ttl: seg.ttl, has_ts };
            self.recent[self.recent_next as usize] = print;
            self.recent_next = (self.recent_next + 1) % RECENT as u8;
        }
    }

    /// The earlier packet `seg` is an exact copy of: same sequence, length, IP ID and TSval.
    /// Nothing tells a copy from a resend when there is neither an IP ID nor a TSval (IPv6
    /// without timestamps): Tstat read the IPv6 payload length as the "IP ID" there, calling
    /// every same-size resend a duplicate.
    fn duplicate_of(&self, seg: &Segment<'_>) -> Option<Print> {
        let tsval = seg.options.timestamps;
        if seg.ip_id == 0 && tsval.is_none() {
            return None;
        }
        let (tsval, has_ts) = tsval.map_or((0, false), |(v, _)| (v, true));
        let same = |p: &&Print| {
            (p.seq, p.len, p.ip_id, p.tsval, p.has_ts) == (seg.seq.0, seg.payload_len, seg.ip_id, tsval, has_ts)
        };
        self.recent.iter().filter(|p| p.frame != 0).find(same).copied()
    }
}

/// The RTT and RTO the classifier uses at one moment.
struct Estimate {
    mean_ns: Option<f64>,
    min_ns: Option<f64>,
    rto_ns: f64,
    source: &'static str,
}

/// The RTT estimate for classifying `me`'s segments: Tstat's sum of the two half-loop means, the
/// variance of a sum of independent halves, floors from the rules.
fn estimate(me: &Memory, peer: &Memory, cl: &Classify) -> Estimate {
    let (me, other) = (&me.rtt, &peer.rtt);
    let floor = cl.rtt_min_floor_ms * MS;
    let rto_min = cl.rto_min_ms * MS;
    match (me.mean(), other.mean()) {
        (Some(a), b) => {
            let mean = a + b.unwrap_or(0.0);
            let var = me.stdev().unwrap_or(0.0).powi(2) + other.stdev().unwrap_or(0.0).powi(2);
            let min = (me.min + if b.is_some() { other.min } else { 0 }) as f64;
            Estimate {
                mean_ns: Some(mean),
                min_ns: Some(min.max(floor)),
                rto_ns: (mean + 4.0 * var.sqrt()).max(rto_min),
                source: if b.is_some() { "both halves" } else { "one half" },
            }
        }
        // Without this half the RTO is its floor: a resend that late without loss evidence
        // is timer-driven (RFC 6298's initial 1 s would call the first backoffs unknown).
        (None, Some(b)) => Estimate {
            mean_ns: Some(b),
            min_ns: Some((other.min as f64).max(floor)),
            rto_ns: rto_min.max(b),
            source: "one half",
        },
        (None, None) => Estimate { mean_ns: None, min_ns: None, rto_ns: rto_min, source: "none" },
    }
}

/// The evidence common to every rule about `me`'s segment at `seq`; the class is set by the
/// caller.
fn evidence(me: &Half, peer: &Half, seq: SeqOff, cl: &Classify) -> Evidence {
    let est = estimate(me.memory(), peer.memory(), cl);
    Evidence {
        class: OosClass::Unknown,
        seq_off: seq,
        rule: "",
        prev_frame: None,
        since_prev_ns: None,
        since_hole_ns: None,
        dup_acks: peer.dupacks,
        sack_above: sack_above(me, seq),
        rtt_ns: est.mean_ns,
        rtt_min_ns: est.min_ns,
        rto_ns: est.rto_ns,
        rtt_source: est.source,
    }
}

/// Whether the peer SACKed any of `me`'s data above `seq`.
fn sack_above(me: &Half, seq: SeqOff) -> bool {
    HalfRare::sacked(me.rare.as_deref()).ranges().last().is_some_and(|&(_, to)| to > seq)
}

/// Loss evidence from the receiver: enough duplicate ACKs, or a SACK block above the segment
/// (RFC 6675 / RACK, RFC 8985: any SACKed data above a segment sent an RTT ago marks it lost).
fn fast_evidence(e: &Evidence, cl: &Classify) -> bool {
    e.dup_acks >= cl.dupack_threshold || e.sack_above
}

/// A retransmission by `me` of `[start, end)` (bytes seen before), its previous copy sent at
/// `prev` (time, frame), `acked` when the receiver already had every byte; `snd_max` is the
/// highest byte sent + 1 before it.
#[allow(clippy::too_many_arguments)] // the segment's facts, as retransmission::on_data has them
pub(super) fn retransmission(
    me: &mut Half,
    peer: &Half,
    seg: &Segment<'_>,
    (start, snd_max): (SeqOff, SeqOff),
    prev: Option<(u64, u64)>,
    acked: bool,
    at: &At,
    cl: &Classify,
) -> Evidence {
    let mut e = evidence(me, peer, start, cl);
    let rt = prev.map(|(t, _)| at.ts_ns.saturating_sub(t) as f64);
    e.prev_frame = prev.map(|(_, f)| f);
    e.since_prev_ns = rt;
    let (rto, min) = (e.rto_ns, e.rtt_min_ns);
    let sack = me.has(Bits::SYN_SACK) && peer.has(Bits::SYN_SACK);
    let m = me.memory_mut();
    let tail = start >= snd_max - m.mss.max(1) as i64;
    let first_resend = m.last_resent != Some(start);
    m.last_resent = Some(start);
    (e.class, e.rule) = if seg.flags.syn() {
        (OosClass::SynTimeout, "a SYN or SYN-ACK sent again")
    } else if acked {
        (OosClass::Spurious, "every byte was already acknowledged (cumulative ACK or SACK)")
    } else if rt.is_some_and(|rt| rt > rto) && tail && first_resend && sack && !fast_evidence(&e, cl) {
        // RFC 8985 §7: with one segment outstanding the probe timeout is 1.5 SRTT + 200 ms,
        // as long as an RTO; what tells them apart is that the probe comes first.
        (
            OosClass::TailLossProbe,
            "the last segment's first resend after a timer, SACK in use (RFC 8985 tail-loss probe)",
        )
    } else if rt.is_some_and(|rt| rt > rto) {
        (OosClass::Rto, "resent more than an RTO after the previous copy")
    } else if fast_evidence(&e, cl) {
        (OosClass::FastRetransmit, "resent within an RTO with duplicate ACKs or a SACK above it")
    } else if tail && sack && rt.zip(min).is_some_and(|(rt, min)| rt >= min) {
        (OosClass::TailLossProbe, "the last segment resent within an RTO but at least an RTT later, no loss evidence")
    } else {
        (OosClass::Unknown, "resent within an RTO without loss evidence")
    };
    // Tstat's first test: a copy identical to an earlier packet was made by the network,
    // whatever the retransmission rules said.
    if let Some(p) = m.duplicate_of(seg) {
        // A lower TTL: the capture saw the same packet again one or more hops later (a capture
        // on both sides of a router), not a copy made by the network.
        e.rule = if p.ttl == seg.ttl {
            "same sequence, length, IP ID and TSval as an earlier packet"
        } else {
            "same sequence, length, IP ID and TSval as an earlier packet, lower TTL: seen again after a router hop"
        };
        (e.class, e.prev_frame) = (OosClass::NetworkDuplicate, Some(p.frame));
    }
    if matches!(e.class, OosClass::FastRetransmit | OosClass::Rto | OosClass::TailLossProbe | OosClass::Unknown) {
        let resent = &mut m.rare.get_or_insert_default().resent;
        if resent.len() >= MAX_RESENT {
            resent.pop_front();
        }
        resent.push_back(Resent { seq: start, len: seg.payload_len, frame: at.frame, class: e.class });
    }
    e
}

/// A segment of `me` at `seq` filling a hole (not seen before): late delivery or a
/// retransmission of a segment lost before the capture point.
pub(super) fn hole_fill(me: &Half, peer: &Half, seq: SeqOff, at: &At, cl: &Classify) -> Evidence {
    let mut e = evidence(me, peer, seq, cl);
    let hole = me.memory().holes().iter().find(|h| h.from <= seq && seq < h.to).copied();
    let rt = hole.map(|h| at.ts_ns.saturating_sub(h.before_ns) as f64);
    let dt = hole.map(|h| at.ts_ns.saturating_sub(h.after_ns) as f64);
    e.since_prev_ns = rt;
    e.since_hole_ns = dt;
    let (rto, min) = (e.rto_ns, e.rtt_min_ns);
    // Tstat tests loss evidence first; but the receiver's duplicate ACKs and SACKs answer any
    // hole, reordered or lost, so a fill sooner than a round trip after the hole opened
    // (nothing resent could come back that fast) is reordering whatever the ACKs said.
    // The 0.8 leaves room for jitter in the minimum-RTT estimate.
    (e.class, e.rule) = if dt.zip(min).is_some_and(|(dt, min)| dt < 0.8 * min) {
        (OosClass::Reordering, "filled a hole less than an RTT after it opened")
    } else if rt.is_some_and(|rt| rt > rto) {
        (OosClass::Rto, "filled a hole more than an RTO after the segment before it")
    } else if fast_evidence(&e, cl) {
        (OosClass::FastRetransmit, "filled a hole at least an RTT late, with duplicate ACKs or a SACK above it")
    } else {
        (OosClass::Unknown, "filled a hole at least an RTT late without loss evidence")
    };
    e
}

/// A zero-window probe of `me`.
pub(super) fn probe(me: &Half, peer: &Half, cl: &Classify) -> Evidence {
    let mut e = evidence(me, peer, me.snd_una.get().unwrap_or(SeqOff(0)), cl);
    (e.class, e.rule) = (OosClass::FlowControl, "sent while the receiver's window was zero");
    e
}

/// A D-SACK of `[from, to)` in `h`'s data: the latest retransmission it covers was not needed.
/// `data_dir` is the event's place (the data's direction, the D-SACK's frame).
pub(super) fn dsack<S: Sink>(h: &mut Half, from: SeqOff, to: SeqOff, data_dir: &At, sink: &mut S) {
    let Some(rare) = h.memory.as_deref_mut().and_then(|m| m.rare.as_mut()) else { return };
    let resent = &mut rare.resent;
    if let Some(i) = resent.iter().rposition(|r| r.seq < to && from < r.seq + r.len.max(1) as i64) {
        let r = resent.remove(i).expect("position found above");
        sink.event(data_dir, &Event::Unneeded { seq_off: r.seq, resent_frame: r.frame, was: r.class });
    }
}

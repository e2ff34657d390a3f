//! Where a segment sits in its direction's sequence space: new data, a retransmission (bytes
//! seen before: tcptrace's rule), a hole fill (out of order), or a jump past a hole (bytes not
//! captured); and the transmissions remembered for RTT sampling (RFC 6298 §3).

use super::{
    At, Bits, Classify, Event, Half, HalfRare, MAX_UNACKED, Outstanding, Sent, Sink, classify, partial, push_compact,
};
use crate::analysis::ranges::RangeSet;
use crate::decode::Segment;
use crate::seq::{OptOff, SeqOff};

/// What the sender view found about a segment.
pub(super) struct Found {
    /// Payload bytes never seen before, and seen before.
    pub new_bytes: u32,
    pub rexmit_bytes: u32,
    /// Some sequence byte (payload, SYN or FIN) was seen before.
    pub is_rexmit: bool,
}

/// Classifies the segment `seg`, `[start, end)` (payload from `start + syn`) sent by `me`,
/// whose highest byte sent + 1 was `snd_max`, and records it; `probe` and `keepalive` from
/// [`super::probe::classify`]. Retransmissions and hole fills carry their class
/// ([`classify`]).
#[inline(always)] // once per packet, from one place: as if written in on_segment
#[allow(clippy::too_many_arguments)] // the segment's facts, as on_segment has them
pub(super) fn on_data<S: Sink>(
    me: &mut Half,
    peer: &Half,
    seg: &Segment<'_>,
    (start, end, snd_max): (SeqOff, SeqOff, SeqOff),
    (syn, fin): (i64, bool),
    (probe, keepalive): (bool, bool),
    (ts_ns, frame): (u64, u64),
    at: &At,
    cl: &Classify,
    sink: &mut S,
) -> Found {
    let len = seg.payload_len;
    let mut new_bytes = 0u32;
    let mut rexmit_bytes = 0u32;
    let mut is_rexmit = false;
    if probe {
        // tcptrace's rule: a probe's bytes stay out of the sequence bookkeeping (they are
        // counted as probe bytes), so the real transmission that follows is new data. If the
        // receiver accepted the probe, the next segment starts right after it: no hole.
        if len > 0 {
            me.rare().probe_end.set(end);
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
        let holes = HalfRare::holes(me.rare.as_deref());
        let seen_all = seen(start, end, holes);
        let seen_pay = seen(pay_start, pay_end, holes) as u32;
        let hole_fill = start < snd_max && (end - start) as u64 > seen_all;
        // Conservation: each payload byte is new or seen before (or part of a probe).
        rexmit_bytes = seen_pay;
        new_bytes = len - seen_pay.min(len);
        if !keepalive {
            is_rexmit = seen_all > 0;
            let fill = hole_fill && end < snd_max;
            if is_rexmit || fill {
                let sacked = HalfRare::sacked(me.rare.as_deref());
                let resent = is_rexmit.then(|| rexmit_evidence(out, sacked, me.snd_una.get(), start, end));
                classified(me, peer, seg, (start, snd_max), (resent, seen_pay, fill), at, cl, sink);
            }
        }
        let out = me.out.get_or_insert_default();
        let accepted_probe =
            me.rare.as_deref_mut().and_then(|r| r.probe_end.take()).is_some_and(|p| p >= start && snd_max < start);
        if start > snd_max && !accepted_probe {
            sink.event(at, &Event::Hole { from: snd_max, to: start });
            if S::CLASSIFY {
                me.memory.get_or_insert_default().hole(snd_max, start, ts_ns);
            }
            // Bytes the peer acknowledged before they were seen were counted as acknowledged
            // but unseen when that ACK came: they are no hole to count again.
            let from = me.snd_una.get().map_or(snd_max, |u| u.max(snd_max));
            if from < start && !HalfRare::ranges(&mut me.rare).holes.insert(from, start) {
                partial(&mut me.bits, Bits::PARTIAL_HOLES, "holes", at, sink);
            }
        }
        if let Some(r) = HalfRare::ranges_mut(&mut me.rare) {
            r.holes.remove(start, end);
        }
        let max = snd_max.max(end);
        if max > snd_max {
            // Bytes past a FIN (not TCP, but seen on the wire).
            HalfRare::keep_fin_apart(&mut me.bits, me.snd_max, &mut me.rare);
        }
        me.snd_max.set(max);
        if fin {
            // Most FINs end what their side sends: the offset is then snd_max's, a bit.
            let top = end == max;
            me.bits.set(Bits::FIN_AT_TOP, top);
            if !top {
                me.rare.get_or_insert_default().fin_off.set(end - 1);
            } else if let Some(r) = me.rare.as_deref_mut() {
                r.fin_off = OptOff::NONE;
            }
        }
        // Remember the transmission for RTT sampling.
        if frame > Sent::MAX_FRAME {
            partial(&mut me.bits, Bits::PARTIAL_FRAMES, "frame numbers past 2^40", at, sink);
        }
        if out.unacked.back().is_none_or(|b| b.end() <= start) {
            for sent in Sent::pieces(start, end, ts_ns, frame, is_rexmit) {
                if out.unacked.len() >= MAX_UNACKED {
                    out.unacked.pop_front();
                    partial(&mut me.bits, Bits::PARTIAL_UNACKED, "unacked segments", at, sink);
                }
                push_compact(&mut out.unacked, sent);
            }
        } else {
            // Below the highest range: mark what it repeats; a range it alone covers (a hole
            // fill) is inserted in order.
            let first = out.unacked.partition_point(|s| s.end() <= start);
            let mut i = first;
            while let Some(s) = out.unacked.get_mut(i).filter(|s| s.start < end) {
                s.resent(ts_ns, frame);
                i += 1;
            }
            if i == first && me.snd_una.get().is_none_or(|una| end > una) {
                let start = me.snd_una.get().map_or(start, |una| start.max(una));
                for (k, sent) in Sent::pieces(start, end, ts_ns, frame, is_rexmit).enumerate() {
                    out.unacked.insert(first + k, sent);
                }
            }
        }
    }
    Found { new_bytes, rexmit_bytes, is_rexmit }
}

/// Raises the retransmission (`resent`: what [`rexmit_evidence`] found) and the hole fill
/// (`fill`) of `seg`, each with its class and evidence. Off the common path.
#[allow(clippy::too_many_arguments)] // the segment's facts, as on_data has them
#[cold]
fn classified<S: Sink>(
    me: &mut Half,
    peer: &Half,
    seg: &Segment<'_>,
    (start, snd_max): (SeqOff, SeqOff),
    (resent, bytes, fill): (Option<Repeat>, u32, bool),
    at: &At,
    cl: &Classify,
    sink: &mut S,
) {
    if !S::CLASSIFY {
        if let Some(Repeat { prev_sent, acked }) = resent {
            sink.event(at, &Event::Retransmission { seq_off: start, bytes, prev_sent, acked, class: None });
        }
        if fill {
            sink.event(at, &Event::OutOfOrder { seq_off: start, class: None });
        }
        return;
    }
    let rexmit = resent.map(|Repeat { prev_sent, acked }| {
        let why = classify::retransmission(me, peer, seg, (start, snd_max), prev_sent, acked, at, cl);
        sink.event(at, &Event::Retransmission { seq_off: start, bytes, prev_sent, acked, class: Some(why.class) });
        sink.evidence(at, &why);
        why.class
    });
    if fill {
        match rexmit {
            // Also a retransmission: classified there, once.
            Some(class) => sink.event(at, &Event::OutOfOrder { seq_off: start, class: Some(class) }),
            None => {
                let why = classify::hole_fill(me, peer, start, at, cl);
                sink.event(at, &Event::OutOfOrder { seq_off: start, class: Some(why.class) });
                sink.evidence(at, &why);
            }
        }
    }
}

/// What the sender's state says about a retransmission.
struct Repeat {
    /// When (and in which frame) the first repeated range was last sent, if remembered.
    prev_sent: Option<(u64, u64)>,
    /// The receiver already had every byte.
    acked: bool,
}

/// What the sender's state says about a retransmission of `[start, end)`: when the first
/// repeated range was last sent (time, frame), and whether the receiver already had every byte
/// (below the cumulative ACK or SACKed). Only called for retransmissions, off the common path.
fn rexmit_evidence(o: &Outstanding, sacked: &RangeSet, snd_una: Option<SeqOff>, start: SeqOff, end: SeqOff) -> Repeat {
    let una = snd_una.unwrap_or(SeqOff::MIN);
    let i = o.unacked.partition_point(|s| s.end() <= start);
    let prev_sent = o.unacked.get(i).filter(|s| s.start < end).map(|s| (s.ts_ns, s.frame()));
    let above = start.max(una);
    let acked = end <= una || sacked.overlap(above, end) == (end - above) as u64;
    Repeat { prev_sent, acked }
}

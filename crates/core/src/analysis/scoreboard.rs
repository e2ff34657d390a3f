//! What the receiver has: the cumulative ACK (bytes acknowledged but never captured, the
//! advance, RFC 9293 §3.4), SACK and D-SACK blocks (RFC 2018, RFC 2883 §4) kept as a scoreboard
//! (RFC 6675), and the bytes in flight it implies.

use super::{At, Bits, Event, Half, HalfRare, Sink, partial};
use crate::decode::Segment;
use crate::seq::SeqOff;

/// A cumulative ACK `a` for `h`'s data, carried by `seg`: capture loss, RTT samples (Karn),
/// scoreboard pruning, the ACK strategy (`acks`). Whether it advanced over anything.
#[inline]
pub(super) fn on_ack<S: Sink>(h: &mut Half, seg: &Segment<'_>, a: SeqOff, at: &At, sink: &mut S) -> bool {
    if h.snd_una.get().is_some_and(|una| a <= una) {
        return false;
    }
    let data_dir = At { dir: at.dir.rev(), ..*at };
    // Acknowledged but never captured: holes below a, and anything above the highest byte seen.
    let out = h.out.get_or_insert_default();
    let mut unseen = HalfRare::ranges_mut(&mut h.rare).map_or(0, |r| r.holes.remove_below(a));
    if let Some(max) = h.snd_max.get() {
        let from = h.snd_una.get().unwrap_or(max).max(max);
        if a > from {
            unseen += (a - from) as u64;
        }
    }
    if unseen > 0 {
        sink.event(&data_dir, &Event::AckedUnseen { bytes: unseen });
    }
    // Payload newly acknowledged (`acks::on_advance` raises `AckAdvance` with it).
    let mut bytes = 0;
    if let Some(old) = h.snd_una.get() {
        // Credit payload only: not the SYN (offset -1) nor the FIN.
        let lo = if h.bits.has(Bits::ISN) { SeqOff(0) } else { SeqOff::MIN };
        // A FIN below the first byte (garbage on the wire) must not make an empty range panic.
        let hi = HalfRare::fin_off(h.bits, h.snd_max, h.rare.as_deref()).unwrap_or(SeqOff::MAX).max(lo);
        bytes = a.clamp(lo, hi).0.saturating_sub(old.clamp(lo, hi).0) as u64;
    }
    h.snd_una.set(a);
    if let Some(r) = HalfRare::ranges_mut(&mut h.rare) {
        r.sacked.remove_below(a);
    }
    let oldest = super::rtt::karn(out, &mut h.memory, a, at, &data_dir, sink);
    // Bytes never captured: no arrival to measure the receiver's delay from.
    super::acks::on_advance(h, seg, bytes, oldest.filter(|_| unseen == 0), &data_dir, sink);
    true
}

/// The SACK and D-SACK blocks of `seg`, which acknowledges `h`'s data cumulatively up to `a`.
#[inline(always)] // once per packet, from one place: as if written in its caller
pub(super) fn on_sack<S: Sink>(h: &mut Half, seg: &Segment<'_>, a: SeqOff, at: &At, sink: &mut S) {
    let peer = h;
    // SACK blocks (RFC 2018) and D-SACK (RFC 2883 §4: the first block is below the
    // cumulative ACK, or contained in the second block).
    let blocks = seg.options.sack_blocks();
    for (i, &(le, re)) in blocks.iter().enumerate() {
        let Some(u) = peer.unwrap else { break };
        let (l, r) = (u.off(le), u.off(re));
        if r <= l {
            continue;
        }
        let dsack = i == 0 && (r <= a || blocks.get(1).is_some_and(|&(l2, r2)| u.off(l2) <= l && r <= u.off(r2)));
        if dsack {
            sink.event(at, &Event::Dsack { from: l, to: r });
            if S::CLASSIFY {
                super::classify::dsack(peer, l, r, &At { dir: at.dir.rev(), ..*at }, sink);
            }
            continue;
        }
        sink.event(at, &Event::Sack { from: l, to: r });
        if r > a && !HalfRare::ranges(&mut peer.rare).sacked.insert(l.max(a), r) {
            partial(&mut peer.bits, Bits::PARTIAL_SACK, "SACK scoreboard", at, sink);
        }
    }
}

/// Bytes in flight after a data segment of `me` (SACK-aware: RFC 6675's "pipe" without loss
/// marking): highest sent - cumulatively acked - SACKed above it.
#[inline(always)] // once per packet, from one place: as if written in its caller
pub(super) fn in_flight(me: &mut Half, len: u32) -> Option<u64> {
    match (len > 0, me.snd_una.get(), me.snd_max.get()) {
        (true, Some(una), Some(max)) if max > una => {
            Some((max - una) as u64 - HalfRare::sacked(me.rare.as_deref()).overlap(una, max))
        }
        (true, Some(_), Some(_)) => Some(0),
        _ => None,
    }
}

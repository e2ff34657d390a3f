//! Round-trip times at the capture point: Karn's samples (RFC 6298 §3, tcptrace's exact-match
//! rule) and timestamp echoes (RFC 7323 §4.3, as pping does).

use super::classify::Memory;
use super::{At, Bits, Event, Half, MAX_TS_PENDING, Outstanding, RttKind, Sent, Sink, partial};
use crate::decode::Segment;
use crate::seq::{SeqNum, SeqOff};

/// The RTT sample, if any, of a cumulative ACK `a` (at `at`) for data whose outstanding state is
/// `out`: the transmissions it covers leave `out.unacked`; a classifying pass gives the sample to
/// `memory` (allocated if not yet). Events go to `data_dir`, the data's
/// direction. Returns when the oldest data the ACK newly covers arrived, for the ACK strategy's
/// delay (`acks`), unless any of what it covers was sent twice or out of order (recovery: the
/// delay would measure that, not the receiver).
#[inline(always)] // once per packet, from one place: as if written in its caller
pub(super) fn karn<S: Sink>(
    out: &mut Outstanding,
    memory: &mut Option<Box<Memory>>,
    a: SeqOff,
    at: &At,
    data_dir: &At,
    sink: &mut S,
) -> Option<u64> {
    // RTT (RFC 6298 §3 Karn's rule, tcptrace's exact-match rule): the ACK must end exactly on a
    // transmission that was never repeated, and no earlier transmission it covers may have
    // been sent after it.
    // `unacked` is in sequence order, so everything this ACK covers is at the front.
    let mut candidate: Option<Sent> = None;
    let mut latest_other = 0u64;
    // The oldest range covered (its first arrival), and whether any covered was sent twice.
    let mut oldest = None;
    let mut resent = false;
    while let Some(s) = out.unacked.front().copied().filter(|s| s.end() <= a) {
        out.unacked.pop_front();
        oldest = oldest.or(Some(s.ts_ns));
        resent |= s.ambiguous();
        if let Some(c) = candidate.replace(s) {
            // When it was last sent (`Sent::ts_ns`).
            latest_other = latest_other.max(c.ts_ns);
        }
    }
    // Sent in order: no range it covers was sent after the last one.
    let in_order = candidate.is_none_or(|c| latest_other <= c.ts_ns);
    if candidate.is_some_and(|c| c.end() != a) {
        candidate = None;
    }
    if let Some(front) = out.unacked.front_mut()
        && front.start < a
    {
        // Part of a range: its arrival is the oldest when nothing before it was covered.
        oldest = oldest.or(Some(front.ts_ns));
        resent |= front.ambiguous();
        front.set_start(a);
    }
    if let Some(c) = candidate {
        if c.ambiguous() {
            sink.event(data_dir, &Event::KarnDiscard);
        } else if latest_other > c.ts_ns {
            sink.event(data_dir, &Event::PostLossAck);
        } else {
            let rtt_ns = at.ts_ns.saturating_sub(c.ts_ns);
            if S::CLASSIFY {
                memory.get_or_insert_default().rtt_sample(rtt_ns);
            }
            sink.event(data_dir, &Event::RttSample { rtt_ns, kind: RttKind::Karn, sent_frame: c.frame() });
        }
    }
    oldest.filter(|_| in_order && !resent)
}

/// Timestamps of a segment `me` sent (its ACK, if any, acknowledging `peer`'s data): a sample of
/// the peer's data when the echo matches a TSval first seen, and this TSval remembered.
#[inline(always)] // once per packet, from one place: as if written in its caller
pub(super) fn on_timestamps<S: Sink>(me: &mut Half, peer: &mut Half, seg: &Segment<'_>, at: &At, sink: &mut S) {
    let (flags, dir, ts_ns, frame) = (seg.flags, at.dir, at.ts_ns, at.frame);
    if let Some((tsval, tsecr)) = seg.options.timestamps {
        if flags.ack() && tsecr != 0 {
            // The field, not a method of `peer`: the samples go to `peer.memory` meanwhile.
            let pending = peer.out.get_or_insert_default();
            while let Some((v, t, f)) = pending.ts_front() {
                let d = SeqNum(v).diff(SeqNum(tsecr));
                if d > 0 {
                    break;
                }
                pending.ts_pending.pop_front();
                if d == 0 {
                    let rat = At { dir: dir.rev(), ..*at };
                    let rtt_ns = ts_ns.saturating_sub(t);
                    if S::CLASSIFY {
                        peer.memory.get_or_insert_default().rtt_sample(rtt_ns);
                    }
                    sink.event(&rat, &Event::RttSample { rtt_ns, kind: RttKind::Timestamp, sent_frame: f });
                }
            }
        }
        let out = me.out.get_or_insert_default();
        if out.ts_back().is_none_or(|v| SeqNum(tsval).diff(SeqNum(v)) > 0) {
            if out.ts_pending.len() >= MAX_TS_PENDING {
                out.ts_pending.pop_front();
            }
            if !out.ts_push(tsval, ts_ns, frame) {
                partial(&mut me.bits, Bits::PARTIAL_TSVALS, "TSvals awaiting an echo 2^32 frames apart", at, sink);
            }
        }
    }
}

//! What acknowledgments say about the flow: duplicate ACKs (RFC 5681 §2, with Wireshark's
//! extra conditions) and the advertised window (RFC 7323 §2.3 scaling; zero windows; a right
//! edge moving left, which RFC 9293 §3.8.6 discourages).

use super::{At, Bits, Event, Half, Sink};
use crate::decode::Segment;
use crate::seq::SeqOff;

/// Whether `seg`, sent by `me` (data starting at `start`, its highest byte sent + 1 `snd_max`),
/// is a duplicate ACK of `peer`'s data (acknowledged up to `ack_off`); counts and raises it.
#[inline(always)] // once per packet, from one place: as if written in on_segment
#[allow(clippy::too_many_arguments)] // the segment's facts, as on_segment has them
pub(super) fn on_dup_ack<S: Sink>(
    me: &mut Half,
    peer: &Half,
    seg: &Segment<'_>,
    (start, snd_max): (SeqOff, SeqOff),
    ack_off: Option<SeqOff>,
    at: &At,
    sink: &mut S,
) {
    let (flags, len, rst) = (seg.flags, seg.payload_len, seg.flags.rst());
    // Duplicate ACK: Wireshark's rule (RFC 5681 §2 definition plus "window unchanged" and
    // "seq at nextseq", which keep window updates and data from counting).
    let dup = flags.ack()
        && len == 0
        && !flags.syn()
        && !flags.fin()
        && !rst
        && seg.win_raw != 0
        && me.last() == Some((seg.ack, seg.win_raw))
        && start == snd_max
        && !peer.has(Bits::LAST_WAS_PROBE);
    if me.last().map(|(a, _)| a) != Some(seg.ack) {
        me.dupacks = 0;
    }
    if dup && let Some(a) = ack_off {
        me.dupacks += 1;
        sink.event(at, &Event::DupAck { n: me.dupacks, ack_off: a });
    }
}

/// The window `seg` (sent by `me`) advertises, in bytes, and the shift applied (`None`: the
/// scale is unknown); raises zero windows and shrinks.
#[inline(always)] // once per packet, from one place: as if written in on_segment
pub(super) fn on_window<S: Sink>(
    me: &mut Half,
    seg: &Segment<'_>,
    ack_off: Option<SeqOff>,
    at: &At,
    sink: &mut S,
) -> (u64, Option<u8>) {
    let (flags, rst) = (seg.flags, seg.flags.rst());
    let shift = if flags.syn() { Some(0) } else { me.wscale };
    let win_bytes = (seg.win_raw as u64) << shift.unwrap_or(0);
    if flags.ack() && !flags.syn() && !rst {
        if seg.win_raw == 0 {
            sink.event(at, &Event::ZeroWindow);
        }
        if let (Some(a), Some(_)) = (ack_off, shift) {
            let edge = a + win_bytes as i64;
            if let Some(last_a) = me.edge_ack.get()
                && a >= last_a
                && edge < me.edge
            {
                sink.event(at, &Event::WindowShrink { by: (me.edge - edge) as u64 });
            }
            if me.edge_ack.get().is_none_or(|last_a| a >= last_a) {
                me.edge_ack.set(a);
                me.edge = edge;
            }
        }
    }
    (win_bytes, shift)
}

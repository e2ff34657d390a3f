//! Segments that carry no new data on purpose: zero-window probes (RFC 9293 §3.8.6.1) and
//! keep-alives (RFC 9293 §3.8.4, RFC 1122 §4.2.3.6).

use super::{At, Bits, Event, Half, Settings, Sink, classify};
use crate::seq::SeqOff;

/// Whether a segment starting at `start` (the sender's highest byte sent + 1 is `snd_max`) is a
/// zero-window probe or a keep-alive; raises the event. Returns `(probe, keepalive)`.
#[inline(always)] // once per packet, from one place: as if written in on_segment
#[allow(clippy::too_many_arguments)] // the segment's facts, as on_segment has them
pub(super) fn classify<S: Sink>(
    me: &Half,
    peer: &Half,
    (syn, fin, rst): (bool, bool, bool),
    len: u32,
    start: SeqOff,
    snd_max: SeqOff,
    at: &At,
    settings: &Settings,
    sink: &mut S,
) -> (bool, bool) {
    let peer_win_zero = peer.last().is_some_and(|(_, w)| w == 0) && !peer.has(Bits::RST_SEEN);
    // A keep-alive repeats the last byte sent: with no payload, or with one byte that was
    // already acknowledged (an unacknowledged byte sent again is a retransmission).
    let all_acked = me.snd_una.get().is_some_and(|una| una >= snd_max);
    let keepalive = !syn && !fin && !rst && start == snd_max - 1 && (len == 0 || (len == 1 && all_acked));
    let mut probe = false;
    if peer_win_zero && !syn && !rst && (len > 0 || keepalive) {
        // A window probe (RFC 9293 §3.8.6.1): counted as a probe, never as a retransmission.
        probe = true;
        sink.event(at, &Event::ZeroWindowProbe { len });
        if S::CLASSIFY {
            sink.evidence(at, &classify::probe(me, peer, &settings.classify));
        }
    } else if keepalive {
        sink.event(at, &Event::KeepAlive);
    }
    (probe, keepalive)
}

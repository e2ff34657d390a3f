//! How a receiver acknowledges: the delay from data to its ACK, and what each ACK did (RFC 9293
//! §3.8.6.3 and RFC 1122 §4.2.3.2: an ACK may be delayed, by less than 0.5 s, and at least every
//! second full-sized segment is acknowledged; RFC 5681 §4.2; RFC 2525 §2.13 on stretch ACKs;
//! seed 003 §1.6 on what "too liberal" ACKs cost). Definitions in `docs/statistics.md`
//! (*Acknowledgment strategy*).
//!
//! Nothing here runs per packet but a comparison: the facts are worked out from what the
//! scoreboard and the RTT sampling already do for an ACK that advances (`scoreboard::on_ack`:
//! the payload it newly acknowledges; `rtt::karn`: the arrival of the oldest transmission it
//! covers, from the unacknowledged list the RTT sampling keeps anyway), and given with
//! [`Event::AckAdvance`]. An ACK's delay is its time minus the arrival of the oldest data it newly
//! acknowledges; the smallest such delay is the capture point's half-loop to the receiver (near
//! zero at a receiver-side capture, about the RTT at a sender-side one); the delay reported is
//! the measured one minus that half-loop.

use super::{At, Event, Half, Sink};
use crate::decode::Segment;
use crate::event::{AckFacts, AckKind};

/// An ACK of at most one full segment whose delay (half-loop removed) is at least this was held
/// by the receiver's delayed-ACK timer; below it, it was sent at once (a quick ACK). Delayed-ACK
/// timers are 40 ms (Linux's minimum) to 500 ms; a receiver sends an immediate ACK within
/// microseconds of the data.
pub const DELAYED_MIN_NS: u64 = 5_000_000;

/// What the acknowledgments of one endpoint's data have shown so far: four fixed fields, kept
/// in the data sender's [`Half`] beside its `snd_una`.
#[derive(Clone, Copy, Debug)]
pub(super) struct AckState {
    /// Smallest delay measured from this endpoint's data to the peer's ACK of it: the half-loop
    /// from the capture point to the receiver and back (`u64::MAX` before any).
    loop_ns: u64,
    /// Largest payload this endpoint sent.
    pub(super) largest: u32,
    /// The MSS the receiver announced (0: not seen).
    pub(super) peer_mss: u16,
    /// Consecutive quick ACKs of this data.
    quick_run: u16,
}

impl Default for AckState {
    fn default() -> Self {
        AckState { loop_ns: u64::MAX, largest: 0, peer_mss: 0, quick_run: 0 }
    }
}

/// `h`'s data was newly acknowledged by `seg`: `bytes` of payload (SYN and FIN not counted),
/// the oldest transmission covered having arrived at `oldest_ns` (`None`: not measurable, the
/// ACK covers a retransmission, a hole, or data sent out of order). Raises
/// [`Event::AckAdvance`] when payload was acknowledged; a SYN or FIN alone only gives the
/// half-loop a sample.
#[inline(always)] // once per advancing ACK, from one place: as if written in scoreboard::on_ack
pub(super) fn on_advance<S: Sink>(
    h: &mut Half,
    seg: &Segment<'_>,
    bytes: u64,
    oldest_ns: Option<u64>,
    data_dir: &At,
    sink: &mut S,
) {
    let w = &mut h.acks;
    let raw = oldest_ns.map(|t| data_dir.ts_ns.saturating_sub(t));
    if let Some(r) = raw {
        w.loop_ns = w.loop_ns.min(r);
    }
    if bytes == 0 {
        return;
    }
    let ack = facts(w, seg, bytes, raw);
    sink.event(data_dir, &Event::AckAdvance { bytes, ack });
}

/// The class of an ACK of `bytes` of payload whose measured delay was `raw`.
#[inline(always)]
fn facts(w: &mut AckState, seg: &Segment<'_>, bytes: u64, raw: Option<u64>) -> AckFacts {
    let f = seg.flags;
    let carried = seg.payload_len > 0 || f.syn() || f.fin();
    // A full segment: the sender's largest, at most what the receiver said it takes.
    let full = match w.peer_mss {
        0 => w.largest,
        m => w.largest.min(m as u32),
    }
    .max(1) as u64;
    let delay_ns = raw.map_or(u64::MAX, |r| r - w.loop_ns);
    let kind = if bytes > 2 * full {
        AckKind::Stretch
    } else if bytes > full {
        AckKind::Pair
    } else if carried || f.rst() {
        AckKind::Piggybacked
    } else if delay_ns == u64::MAX {
        AckKind::Untimed
    } else if delay_ns >= DELAYED_MIN_NS {
        AckKind::Delayed
    } else {
        AckKind::Quick
    };
    let episode = if kind == AckKind::Quick {
        w.quick_run = w.quick_run.saturating_add(1);
        w.quick_run == 2
    } else {
        w.quick_run = 0;
        false
    };
    AckFacts { kind, carried, episode, delay_ns, loop_ns: w.loop_ns }
}

/// `me` sent `seg`, acknowledging nothing new of the peer's data (its ACK at or below the
/// peer's `snd_una`): [`Event::UselessAck`] when it was a pure ACK that also moved no window,
/// carried no SACK block, and answered nothing (`spoke`: the peer sent a segment since `me`'s
/// last one). A data segment fails the first test: this costs a comparison per segment.
#[inline(always)] // once per packet, from one place: as if written in on_segment
pub(super) fn on_stale<S: Sink>(me: &Half, seg: &Segment<'_>, spoke: bool, at: &At, sink: &mut S) {
    let f = seg.flags;
    if seg.payload_len == 0
        && !spoke
        && !f.syn()
        && !f.fin()
        && !f.rst()
        && me.last() == Some((seg.ack, seg.win_raw))
        && seg.options.sack_len == 0
    {
        sink.event(at, &Event::UselessAck);
    }
}

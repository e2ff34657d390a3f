//! How a receiver acknowledges: the delay from data to its ACK, and what each ACK did (RFC 9293
//! §3.8.6.3 and RFC 1122 §4.2.3.2: an ACK may be delayed, by less than 0.5 s, and at least every
//! second full-sized segment is acknowledged; RFC 5681 §4.2; RFC 2525 §2.13 on stretch ACKs;
//! seed 003 §1.6 on what "too liberal" ACKs cost). Definitions in `docs/statistics.md`
//! (*Acknowledgment strategy*).
//!
//! The sender's side keeps the last few in-order data segments awaiting an ACK (their end and
//! arrival time, a fixed array: no per-packet memory); an ACK's delay is its time minus the
//! arrival of the oldest data it newly acknowledges. The smallest such delay is the capture
//! point's half-loop to the receiver (near zero at a receiver-side capture, about the RTT at a
//! sender-side one); the delay reported is the measured one minus that half-loop.

use super::Half;
use super::retransmission::Found;
use crate::decode::Segment;
use crate::event::{AckFacts, AckKind};
use crate::seq::SeqOff;

/// In-order data segments remembered per direction while awaiting an ACK. With more pending,
/// the newest entry grows to cover them (its time stays the older one's).
const PENDING: usize = 4;

/// An ACK of at most one full segment whose delay (half-loop removed) is at least this was held
/// by the receiver's delayed-ACK timer; below it, it was sent at once (a quick ACK). Delayed-ACK
/// timers are 40 ms (Linux's minimum) to 500 ms; a receiver sends an immediate ACK within
/// microseconds of the data.
pub const DELAYED_MIN_NS: u64 = 5_000_000;

/// This endpoint's data awaiting the peer's ACK (ACK delay), and this endpoint's own acking
/// state as a receiver.
#[derive(Clone, Copy, Debug)]
pub(super) struct AckState {
    /// End offsets and arrival times of in-order data awaiting an ACK: a ring of `n` from
    /// `head`, oldest first (a ring: moving the arrays cost a `memmove` per ACK).
    ends: [SeqOff; PENDING],
    times: [u64; PENDING],
    head: u8,
    n: u8,
    /// Data arrived out of order (a hole, a fill, a retransmission): the peer's ACKs up to here
    /// measure loss recovery, not the ACK strategy, and give no delay.
    taint_to: Option<SeqOff>,
    /// Smallest delay measured: the half-loop from the capture point to the receiver and back.
    loop_ns: u64,
    /// Largest payload this endpoint sent.
    largest: u32,
    /// A full segment of this endpoint's data: `largest`, at most the MSS the peer announced
    /// (kept up to date here: once per data segment, not per ACK).
    full: u32,
    /// MSS this endpoint announced (the most the peer will send it).
    mss: Option<u16>,
    /// Consecutive quick ACKs this endpoint sent.
    quick_run: u16,
    /// The peer sent a segment since this endpoint's last one.
    peer_spoke: bool,
}

impl Default for AckState {
    fn default() -> Self {
        AckState {
            ends: [SeqOff(0); PENDING],
            times: [0; PENDING],
            head: 0,
            n: 0,
            taint_to: None,
            loop_ns: u64::MAX,
            largest: 0,
            full: 1,
            mss: None,
            quick_run: 0,
            peer_spoke: false,
        }
    }
}

/// `me` sent `seg`, `[start, end)` (SYN and payload), when its highest byte sent + 1 was
/// `snd_max`; `found` is what the retransmission analysis made of it, `probe` whether it was a
/// window probe or keep-alive. In order when every byte was new and it began at `snd_max`.
#[inline(always)] // once per packet, from one place: as if written in on_segment
pub(super) fn on_sent(
    me: &mut Half,
    peer: &Half,
    seg: &Segment<'_>,
    (start, end): (SeqOff, SeqOff),
    snd_max: SeqOff,
    (found, probe): (&Found, bool),
    ts: u64,
) {
    let len = seg.payload_len;
    if len == 0 && !seg.flags.syn() {
        return;
    }
    let new_all = !found.is_rexmit && found.new_bytes == len && !probe;
    let w = &mut me.acks;
    if seg.flags.syn()
        && let Some(m) = seg.options.mss
    {
        w.mss = Some(m);
    }
    if len > w.largest {
        w.largest = len;
    }
    w.full = match peer.acks.mss {
        Some(m) => (m as u32).min(w.largest),
        None => w.largest,
    }
    .max(1);
    if start != snd_max || !new_all {
        // Out of order or resent: the ACKs until all of it is acknowledged are about recovery.
        w.n = 0;
        let to = end.max(snd_max);
        w.taint_to = Some(w.taint_to.map_or(to, |t| t.max(to)));
        return;
    }
    let n = w.n as usize;
    if n < PENDING {
        let i = (w.head as usize + n) % PENDING;
        w.ends[i] = end;
        w.times[i] = ts;
        w.n += 1;
    } else {
        w.ends[(w.head as usize + PENDING - 1) % PENDING] = end;
    }
}

/// `me` sent `seg`, acknowledging `peer`'s data up to `a` when the cumulative ACK had been at
/// `prev` (`None`: none seen yet). What the ACK did for the ACK strategy.
#[inline(always)] // once per packet, from one place: as if written in on_segment
pub(super) fn on_ack(
    me: &mut Half,
    peer: &mut Half,
    seg: &Segment<'_>,
    a: Option<SeqOff>,
    prev: Option<SeqOff>,
    ts: u64,
) -> AckFacts {
    let spoke = std::mem::take(&mut me.acks.peer_spoke);
    peer.acks.peer_spoke = true;
    let Some(a) = a else { return AckFacts::NONE };
    let flags = seg.flags;
    let pure = || seg.payload_len == 0 && !flags.syn() && !flags.fin() && !flags.rst();
    let Some(prev) = prev else {
        peer.acks.drop_below(a);
        return AckFacts::NONE;
    };
    if a <= prev {
        // Nothing new acknowledged: useless unless it moved the window, carried SACK
        // information, or answered something the peer sent (a duplicate ACK, a probe's answer).
        let useless = !spoke
            && me.last_ack == Some(seg.ack)
            && me.last_win_raw == Some(seg.win_raw)
            && seg.options.sack_len == 0
            && pure();
        return if useless { AckFacts { kind: AckKind::Useless, ..AckFacts::NONE } } else { AckFacts::NONE };
    }
    let payload = peer.payload_between(prev, a);
    let w = &mut peer.acks;
    // The oldest data it newly acknowledges is the ring's head (entries at or below `prev`
    // were dropped by the ACK before, unless the data came after it).
    let raw = match w.taint_to {
        Some(t) => {
            if a >= t {
                w.taint_to = None;
            }
            None
        }
        None => w.drop_below(prev).then(|| ts.saturating_sub(w.times[w.head as usize])),
    };
    w.drop_below(a);
    if let Some(r) = raw {
        w.loop_ns = w.loop_ns.min(r);
    }
    let delay = raw.map(|r| r - w.loop_ns);
    if payload == 0 {
        // The SYN or FIN alone: a half-loop sample, not an ACK of data.
        return AckFacts::NONE;
    }
    let full = w.full as u64;
    let kind = if payload > 2 * full {
        AckKind::Stretch
    } else if payload > full {
        AckKind::Pair
    } else if !pure() {
        AckKind::Piggybacked
    } else {
        match delay {
            None => AckKind::Untimed,
            Some(d) if d >= DELAYED_MIN_NS => AckKind::Delayed,
            Some(_) => AckKind::Quick,
        }
    };
    let r = &mut me.acks;
    let episode = if kind == AckKind::Quick {
        r.quick_run = r.quick_run.saturating_add(1);
        r.quick_run == 2
    } else {
        r.quick_run = 0;
        false
    };
    AckFacts { kind, bytes: payload.min(u32::MAX as u64) as u32, delay_ns: delay, loop_ns: peer.acks.loop_ns, episode }
}

impl AckState {
    /// Forgets the pending data at or below `a`; whether any remains.
    #[inline(always)]
    fn drop_below(&mut self, a: SeqOff) -> bool {
        while self.n > 0 && self.ends[self.head as usize] <= a {
            self.head = (self.head + 1) % PENDING as u8;
            self.n -= 1;
        }
        self.n > 0
    }
}

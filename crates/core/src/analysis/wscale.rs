//! The window scale of a connection seen mid-stream (no SYN: RFC 7323 §2.2's option unseen),
//! inferred from the connection's own behaviour.
//!
//! For each candidate shift `s` (0-14) of the windows one endpoint advertises:
//!
//! - **Bound.** Its peer never sends beyond the right edge it was offered (RFC 9293 §3.8.6,
//!   RFC 7323 §2.3): a data segment ending above the highest `ack + window·2^s` seen so far
//!   (one byte of slack for a zero-window probe) rules `s` out. An ACK the sender used passed
//!   the capture point before the data it allowed, wherever the capture was taken, so this holds
//!   from any vantage point (unless the capture missed that ACK). The smallest `s` never ruled
//!   out is a lower bound: the scale is at least that.
//! - **Exact fits.** Two things happen at the true shift and almost never at another: a sender
//!   limited by the window ends a segment exactly on the offered edge, and a receiver whose
//!   application does not read keeps the edge still while the ACK advances (its window shrinks
//!   by what it acknowledges, to the granularity `2^s`; counted only when the raw window moved
//!   by 4 or more, which keeps the neighbouring shifts from fitting by rounding). Each is one
//!   piece of evidence for `s`.
//!
//! The inference is **certain** when the shift with the most evidence, at or above the bound,
//! has at least [`MIN_EVIDENCE`] pieces and [`MARGIN`] times any other's; a pattern repeating
//! itself counts once (a Solaris receiver acknowledging two segments and reopening one fits
//! shift 1 forty times over on tcptrace's `discard_solaris`). The analysis then applies the
//! shift to this endpoint's windows from that packet on (window shrinks are evaluated from
//! there; zero windows need no scale). Otherwise the scale stays unknown: the bound alone is not
//! reported, real senders do overrun offered windows (zeek's `http_206_example_b`: 105 segments
//! beyond the edge of a connection without scaling). A connection from before window scaling
//! (1990) has shift 0 and shows it by the same rules.

use super::{At, Bits, Event, Half, Sink};
use crate::decode::Segment;
use crate::seq::SeqOff;

/// Pieces of evidence the winning shift needs.
pub const MIN_EVIDENCE: u32 = 2;
/// How many times the next best shift's evidence the winner needs.
pub const MARGIN: u32 = 4;

const SHIFTS: usize = 15;

/// What the inference has gathered about one endpoint's windows (about 400 bytes, boxed, only
/// while the scale is unknown).
#[derive(Clone, Debug, Default)]
pub(super) struct Infer {
    /// Highest right edge offered so far, per shift (peer's sequence offsets).
    max_edge: Option<[i64; SHIFTS]>,
    /// Data segments of the peer beyond that edge, per shift.
    beyond: [u32; SHIFTS],
    /// Exact fits, per shift.
    evidence: [u32; SHIFTS],
    /// Per shift, the window change of the last still edge counted and the low bits of the last
    /// edge filled: a pattern repeating itself (a receiver that always acknowledges two
    /// segments and reopens one) counts once, or it would outvote the truth.
    last_still: [i32; SHIFTS],
    last_fill: [u32; SHIFTS],
    /// The last advertisement: (ack offset, raw window).
    last: Option<(i64, u16)>,
}

impl Infer {
    /// An ACK of this endpoint: it offers `raw` (unscaled) from `ack`.
    pub(super) fn advert(&mut self, ack: SeqOff, raw: u16) {
        let a = ack.0;
        if let Some((a0, w0)) = self.last
            && a > a0
            && (raw as i32 - w0 as i32).abs() >= 4
        {
            let dw = raw as i32 - w0 as i32;
            for s in 0..SHIFTS {
                let (e0, e1) = (a0 + ((w0 as i64) << s), a + ((raw as i64) << s));
                if (e1 - e0).abs() < 1 << s && self.last_still[s] != dw {
                    self.last_still[s] = dw;
                    self.evidence[s] += 1;
                }
            }
        }
        self.last = Some((a, raw));
        let edges = self.max_edge.get_or_insert([i64::MIN; SHIFTS]);
        for (s, e) in edges.iter_mut().enumerate() {
            *e = (*e).max(a + ((raw as i64) << s));
        }
    }

    /// A data segment of the peer ending at offset `end` (payload only).
    pub(super) fn data(&mut self, end: SeqOff) {
        let Some(edges) = &self.max_edge else { return };
        for (s, &edge) in edges.iter().enumerate() {
            if end.0 > edge + 1 {
                self.beyond[s] += 1;
            } else if end.0 == edge && self.last_fill[s] != end.0 as u32 {
                self.last_fill[s] = end.0 as u32;
                self.evidence[s] += 1;
            }
        }
    }

    /// The shift, once certain: the most evidence among the shifts no data segment ruled out,
    /// [`MIN_EVIDENCE`] pieces at least and [`MARGIN`] times any other's.
    pub(super) fn result(&self) -> Option<u8> {
        self.max_edge?;
        let lo = (0..SHIFTS).find(|&s| self.beyond[s] == 0)?;
        let (best, &n) = self.evidence.iter().enumerate().skip(lo).max_by_key(|&(s, n)| (*n, std::cmp::Reverse(s)))?;
        let second = self.evidence.iter().enumerate().skip(lo).filter(|&(s, _)| s != best).map(|(_, n)| *n).max();
        (n >= MIN_EVIDENCE && second.is_none_or(|m| n >= MARGIN * m)).then_some(best as u8)
    }
}

/// What segment `seg` (sent by `me`, its first sequence number at `start`, acknowledging
/// `ack_off` of the peer's data) tells about the scales: its ACK tests the scale of `me`'s
/// windows, its payload the peer's. Only while the scale is unknown: no SYN seen either way and
/// no `--wscale`.
#[inline(always)] // once per packet, from one place: as if written in on_segment
pub(super) fn on_segment<S: Sink>(
    me: &mut Half,
    peer: &mut Half,
    seg: &Segment<'_>,
    (start, ack_off): (SeqOff, Option<SeqOff>),
    at: &At,
    sink: &mut S,
) {
    let f = seg.flags;
    if f.syn() || f.rst() || me.has(Bits::SYN_SEEN) || peer.has(Bits::SYN_SEEN) {
        return;
    }
    if seg.payload_len > 0
        && peer.wscale.is_none()
        && let Some(i) = peer.rare.as_deref_mut().and_then(|r| r.infer.as_deref_mut())
    {
        i.data(start + seg.payload_len as i64);
        if let Some(shift) = i.result() {
            // Decided by a data segment: raised in the advertiser's direction.
            sink.event(&At { dir: at.dir.rev(), ..*at }, &Event::WscaleInferred { shift });
            peer.wscale = Some(shift);
            peer.rare().infer = None;
        }
    }
    if me.wscale.is_none()
        && let Some(a) = ack_off
    {
        let i = me.rare().infer.get_or_insert_default();
        i.advert(a, seg.win_raw);
        if let Some(shift) = i.result() {
            sink.event(at, &Event::WscaleInferred { shift });
            me.wscale = Some(shift);
            me.rare().infer = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn still_edges_and_filled_windows_single_out_the_shift_repeats_do_not() {
        // Shift 7: the edge stays at 1000 + 100·128 = 13800 while the ACK advances.
        let mut i = Infer::default();
        for (a, w) in [(1000, 100u16), (1640, 95), (2920, 85), (3432, 81)] {
            i.advert(SeqOff(a), w);
        }
        assert_eq!(i.result(), Some(7));
        // Without still edges, a sender 5000 bytes ahead of a 100-unit window rules out shifts
        // up to 5 (100·2^5 = 3200 < 5000) but not 6: a bound.
        let mut i = Infer::default();
        i.advert(SeqOff(0), 100);
        i.data(SeqOff(5000));
        assert_eq!(i.result(), None);
        assert_eq!((0..SHIFTS).find(|&s| i.beyond[s] == 0), Some(6));
        // Filling the window exactly, twice, at shift 6: once is not enough.
        for k in 1..=2 {
            i.advert(SeqOff(1000 * k), 100);
            i.data(SeqOff(1000 * k + 6400));
            assert_eq!(i.result(), if k == 1 { None } else { Some(6) });
        }
        assert_eq!(i.result(), Some(6));
        // A pattern repeating itself counts once: the same still-edge step, again and again.
        let mut i = Infer::default();
        for k in 0..20 {
            i.advert(SeqOff(2920 * k), 3660);
            i.advert(SeqOff(2920 * k + 2920), 2200);
        }
        assert_eq!(i.result(), None);
    }
}

//! The handshake: each side's ISN and SYN options, and whether windows are scaled (RFC 9293
//! §3.5, RFC 7323 §2.2).

use super::{Bits, Half, HalfRare, Settings};
use crate::decode::Segment;
use crate::seq::{OptOff, SeqNum, Unwrapper};

/// What a segment's SYN (if any) sets: `me` sent it, `peer` is the other side.
#[inline(always)] // once per packet, from one place: as if written in on_segment
pub(super) fn on_segment(me: &mut Half, peer: &mut Half, seg: &Segment<'_>, settings: &Settings) {
    let flags = seg.flags;
    if flags.syn() {
        me.bits.set(Bits::SYN_SEEN, true);
        if let Some(m) = seg.options.mss {
            // The most `me` takes: a full segment of the peer's data (`acks`).
            peer.acks.peer_mss = m;
        }
        me.bits.or(Bits::SYN_SACK, seg.options.sack_permitted);
        if me.isn().is_none() {
            me.isn = seg.seq;
            me.bits.set(Bits::ISN, true);
            let base = SeqNum(seg.seq.0.wrapping_add(1));
            if me.unwrap.is_some_and(|u| u.base() != base) {
                // Offsets taken before the SYN (e.g. from an injected RST) used another base.
                HalfRare::keep_fin_apart(&mut me.bits, me.snd_max, &mut me.rare);
                me.snd_max = OptOff::NONE;
                me.out = None;
                if let Some(r) = me.rare.as_deref_mut() {
                    r.ranges = None;
                }
            }
            me.unwrap = Some(Unwrapper::new(base));
        }
        me.syn_wscale = seg.options.wscale_clamped();
        if me.syn_wscale.is_none() {
            // RFC 7323 §2.2: without the option on both SYNs, neither side scales.
            me.wscale = Some(0);
            peer.wscale = Some(0);
        }
        if peer.has(Bits::SYN_SEEN) {
            // RFC 7323 §2.2: scaling is in effect only if both SYNs carried the option.
            let both = me.syn_wscale.is_some() && peer.syn_wscale.is_some();
            me.wscale = Some(if both { me.syn_wscale.unwrap_or(0) } else { 0 });
            peer.wscale = Some(if both { peer.syn_wscale.unwrap_or(0) } else { 0 });
        }
    }
    if me.wscale.is_none() && !me.has(Bits::SYN_SEEN) && !peer.has(Bits::SYN_SEEN) {
        me.wscale = settings.assume_wscale;
    }
}

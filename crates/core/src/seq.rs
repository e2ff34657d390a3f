//! Sequence-number arithmetic.
//!
//! Two types keep wire values and derived values apart (STYLE §4, §10):
//! - [`SeqNum`] is the 32-bit value from the header, compared as a serial number (RFC 1982), so
//!   ordering survives wraparound.
//! - [`SeqOff`] is a signed 64-bit offset of a byte from a direction's base (see
//!   [`Unwrapper`]); offsets never wrap, so every later computation is plain arithmetic.

/// A 32-bit TCP sequence or acknowledgment number as it appears on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SeqNum(pub u32);

impl SeqNum {
    /// Signed distance `self - other` in serial-number arithmetic (RFC 1982): correct as long as
    /// the two values are less than 2^31 apart.
    pub fn diff(self, other: SeqNum) -> i64 {
        self.0.wrapping_sub(other.0) as i32 as i64
    }
}

/// A byte position in one direction's sequence space: the offset from that direction's base.
/// With a captured SYN the base is ISN + 1, so the SYN has offset -1 and the first payload byte
/// offset 0. Without a handshake the base is the first sequence number seen in that direction
/// (bytes before it, e.g. retransmitted later, get negative offsets).
///
/// A type of its own so that the compiler keeps it apart from wire values ([`SeqNum`]) and from
/// lengths: an offset plus a length is an offset, an offset minus an offset a length (`i64`,
/// signed: on garbage input a range may be reversed). Plots take the number (`.0`): their
/// series are in plot units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct SeqOff(pub i64);

impl SeqOff {
    /// Below any real offset.
    pub const MIN: SeqOff = SeqOff(i64::MIN);
    /// Above any real offset.
    pub const MAX: SeqOff = SeqOff(i64::MAX);
}

impl std::ops::Add<i64> for SeqOff {
    type Output = SeqOff;
    #[inline]
    fn add(self, n: i64) -> SeqOff {
        SeqOff(self.0 + n)
    }
}

impl std::ops::Sub<i64> for SeqOff {
    type Output = SeqOff;
    #[inline]
    fn sub(self, n: i64) -> SeqOff {
        SeqOff(self.0 - n)
    }
}

impl std::ops::Sub for SeqOff {
    type Output = i64;
    #[inline]
    fn sub(self, other: SeqOff) -> i64 {
        self.0 - other.0
    }
}

impl std::fmt::Display for SeqOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The offset of the wire value `abs` in a direction whose offset 0 is the wire value `base`,
/// for a value a user typed (a plot's `--abs-seq` limits): `(abs - base) mod 2^32`, where a value
/// up to 64 KiB below the base counts as before it (the SYN is -1).
pub fn offset_from(base: SeqNum, abs: SeqNum) -> SeqOff {
    let v = abs.0.wrapping_sub(base.0);
    SeqOff(if v > u32::MAX - 65535 { v as i64 - (1 << 32) } else { v as i64 })
}

/// Turns wire sequence numbers into [`SeqOff`]s by tracking the most recent value seen.
///
/// Invariant: the reference offset `last_off` is that of the most recent (furthest) wire value
/// seen, `base + last_off` (mod 2^32); any wire value within 2^31 of it maps to `last_off +
/// diff`, so a connection can carry any number of bytes.
///
/// 12 bytes, alignment 4, and `Option<Unwrapper>` the same (every direction of every open
/// connection holds one, `docs/performance.md`, *concurrent*): the reference wire value is
/// not stored but derived, and `last_off`, never negative (it starts at 0 and only moves
/// forward), is kept as two 32-bit words, the high one plus 1 in a `NonZeroU32` whose zero is
/// the `Option`'s `None`.
#[derive(Clone, Copy, Debug)]
pub struct Unwrapper {
    base: SeqNum,
    /// `last_off`'s low 32 bits.
    off_lo: u32,
    /// `last_off`'s high 32 bits, plus 1.
    off_hi1: std::num::NonZeroU32,
}

impl Unwrapper {
    /// An unwrapper whose offset 0 is the wire value `base`.
    pub fn new(base: SeqNum) -> Self {
        Unwrapper { base, off_lo: 0, off_hi1: std::num::NonZeroU32::MIN }
    }

    /// The wire value at offset 0.
    pub fn base(&self) -> SeqNum {
        self.base
    }

    /// The reference offset.
    #[inline]
    fn last_off(&self) -> SeqOff {
        SeqOff(((self.off_hi1.get() - 1) as i64) << 32 | self.off_lo as i64)
    }

    /// Offset of `seq`, relative to the nearest (in serial arithmetic) recently seen value.
    #[inline]
    pub fn off(&self, seq: SeqNum) -> SeqOff {
        let last = SeqNum(self.base.0.wrapping_add(self.off_lo));
        self.last_off() + seq.diff(last)
    }

    /// Like [`off`](Self::off), and moves the reference forward when `seq` is ahead, so that
    /// unwrapping keeps working after 4 GiB.
    #[inline]
    pub fn advance(&mut self, seq: SeqNum) -> SeqOff {
        let off = self.off(seq);
        if off > self.last_off() {
            // `off` > `last_off` >= 0: its high word is below 2^31, plus 1 is not zero.
            self.off_lo = off.0 as u32;
            self.off_hi1 = std::num::NonZeroU32::new((off.0 >> 32) as u32 + 1).expect("a positive offset");
        }
        off
    }
}

/// An `Option<SeqOff>` in 8 bytes, not 16: [`SeqOff::MIN`] stands for `None`. No offset an
/// [`Unwrapper`] gives reaches it (they start at -2^31 at the lowest and only the reference
/// moves, forward), so every offset stored round-trips. The analysis keeps five of these a
/// direction, for every connection open (`docs/performance.md`, *concurrent*). Written by hand:
/// std gives a niche to `NonZero` integers only, and `SeqOff` arithmetic is on plain `i64`s.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct OptOff(SeqOff);

impl OptOff {
    /// No offset.
    pub const NONE: OptOff = OptOff(SeqOff::MIN);

    /// The offset, if any.
    #[inline]
    pub fn get(self) -> Option<SeqOff> {
        (self.0 != SeqOff::MIN).then_some(self.0)
    }

    /// Holds `off` from now on.
    #[inline]
    pub fn set(&mut self, off: SeqOff) {
        debug_assert_ne!(off, SeqOff::MIN, "no real offset is SeqOff::MIN");
        self.0 = off;
    }

    /// The offset held, after setting it to `off` if there was none.
    #[inline]
    pub fn get_or_set(&mut self, off: SeqOff) -> SeqOff {
        if self.0 == SeqOff::MIN {
            self.set(off);
        }
        self.0
    }

    /// The offset, leaving none.
    #[inline]
    pub fn take(&mut self) -> Option<SeqOff> {
        std::mem::replace(self, OptOff::NONE).get()
    }
}

impl Default for OptOff {
    fn default() -> Self {
        OptOff::NONE
    }
}

impl std::fmt::Debug for OptOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_optional_offset_is_8_bytes_and_round_trips() {
        assert_eq!(std::mem::size_of::<OptOff>(), 8);
        let mut o = OptOff::default();
        assert_eq!((o.get(), o.take()), (None, None));
        for v in [SeqOff(-(1 << 31)), SeqOff(-1), SeqOff(0), SeqOff(i64::MAX)] {
            o.set(v);
            assert_eq!(o.get(), Some(v));
            assert_eq!((o.take(), o.get()), (Some(v), None));
            assert_eq!((o.get_or_set(v), o.get_or_set(SeqOff(7))), (v, v));
            o = OptOff::NONE;
        }
    }

    #[test]
    fn serial_diff_survives_wrap() {
        assert_eq!(SeqNum(5).diff(SeqNum(u32::MAX - 4)), 10);
        assert_eq!(SeqNum(u32::MAX - 4).diff(SeqNum(5)), -10);
    }

    #[test]
    fn an_optional_unwrapper_is_12_bytes() {
        assert_eq!([size_of::<Unwrapper>(), size_of::<Option<Unwrapper>>(), align_of::<Unwrapper>()], [12, 12, 4]);
        // The high word carries: 2^32 + 5 and beyond read back.
        let mut u = Unwrapper::new(SeqNum(10));
        for step in 0..6u32 {
            let seq = SeqNum(10u32.wrapping_add(step.wrapping_mul(1 << 30)).wrapping_add(5));
            assert_eq!(u.advance(seq).0, step as i64 * (1 << 30) + 5);
        }
        // Past 2^32 (steps 4 and 5), a value just behind the reference maps just below it.
        let last = 10u32.wrapping_add(5u32.wrapping_mul(1 << 30)).wrapping_add(5);
        assert_eq!(u.off(SeqNum(last.wrapping_sub(1))).0, 5 * (1 << 30) + 4);
    }

    #[test]
    fn unwrapper_counts_past_4gib() {
        let mut u = Unwrapper::new(SeqNum(u32::MAX - 99));
        assert_eq!(u.advance(SeqNum(u32::MAX)).0, 99);
        assert_eq!(u.advance(SeqNum(900)).0, 1000);
        // Walk 5 GiB in 1 GiB steps: the offset keeps growing.
        let mut seq = 900u32;
        let mut off = 1000i64;
        for _ in 0..5 {
            seq = seq.wrapping_add(1 << 30);
            off += 1 << 30;
            assert_eq!(u.advance(SeqNum(seq)).0, off);
        }
        // An older value still maps below the reference.
        assert_eq!(u.off(SeqNum(seq.wrapping_sub(10))).0, off - 10);
    }

    #[test]
    fn a_typed_sequence_number_becomes_an_offset_across_the_wrap() {
        let base = SeqNum(u32::MAX - 9);
        assert_eq!(super::offset_from(base, SeqNum(u32::MAX - 9)).0, 0);
        assert_eq!(super::offset_from(base, SeqNum(5)).0, 15, "after the wrap");
        assert_eq!(super::offset_from(base, SeqNum(u32::MAX - 10)).0, -1, "the SYN");
        assert_eq!(super::offset_from(base, SeqNum(u32::MAX - 9 - 65535)).0, -65535);
        assert_eq!(super::offset_from(base, SeqNum(u32::MAX - 9 - 65536)).0, (1 << 32) - 65536);
    }
}

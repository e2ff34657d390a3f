//! A direction's statistics as the pass keeps them: narrow, exact, read as a [`DirStats`].
//!
//! With 200,000 connections open at once every connection's statistics are held from its first
//! packet to the end of the run, so their size is most of the memory a connection costs
//! (`docs/performance.md`, *concurrent*). A direction of a typical connection (handshake, a
//! request and a response, delayed ACKs, FINs) sets about thirty of [`DirStats`]' numbers, none
//! near 2^32: they are kept here in the width they need, and read back only through
//! [`Kept::view`], the wide [`DirStats`] every reader (JSON, the tables, the viewer, the lab)
//! takes. Nothing is rounded: every number reads back as the wide form would hold it.
//!
//! - Packet counters are `u16`, byte and sample counters `u32` (`syn` and `fin` `u8`); a sum
//!   that would carry out of them carries into a `u64` of high bits in the [`Spill`] box
//!   (allocated with the first carry: a connection's 65,536th packet, never for most), so
//!   `lo + (high << bits)` is the exact count.
//! - The RTT summaries keep their counts among the counters ([`Sums`]); the half-loop is a
//!   `u32` of nanoseconds, a larger one in the spill box (none of the 400,000 directions of the
//!   `concurrent` trace, whose RTTs are seconds, has one).
//! - The advertised window keeps its samples as `u32` ([`Mean32`]: a scaled window is below
//!   2^30); the first sample above `u32::MAX` (or the 2^32 - 1th) moves the summary, as it
//!   stands, into its wide [`Mean`] in the spill box, where it goes on. The sums are the same
//!   `f64` operations on the same values either way, so the written means are bit-identical.
//!   The RTTs and the ACK delay stay wide: samples of seconds are common (a capture far from a
//!   slow peer; every connection of the round-robin `concurrent` trace).
//! - What most connections never set (retransmissions, RSTs, useless ACKs, and [`DirRare`]'s
//!   counters) is in a [`Rare`] box allocated with the first of them; the ACK delays' summary
//!   and histogram in a [`Timed`] box allocated with the first quick or delayed ACK.
//! - Options (ISN, sequence base, MSS, window scale) are their values and a byte of flags.

use super::{AckStats, DelayHist, DirRare, DirStats, Mean, Summary};
use crate::event::{AckFacts, AckKind, SegmentInfo};
use crate::seq::SeqNum;
use crate::summary::add_sample;

/// A counter of a [`Kept`]: the packet counts are `u16`s ([`Kept::n16`]), the byte and sample
/// counts `u32`s ([`Kept::n32`]).
#[derive(Clone, Copy, Debug)]
pub(super) enum C {
    Packets,
    DataPackets,
    PureAcks,
    TimestampPackets,
    TruncatedPackets,
    Acking,
    Piggybacked,
    Quick,
    Delayed,
    QuickEpisodes,
    Stretch,
    // The `u32`s from here.
    PayloadBytes,
    UniqueBytes,
    TruncatedBytes,
    AckedBytes,
    AckPayloadBytes,
    AckWireBytes,
    /// The samples of the RTT summaries ([`Sums`]).
    RttSamples,
    RttTsSamples,
}
/// How many [`C`]s are `u16`s.
const N16: usize = C::Stretch as usize + 1;
/// How many [`C`]s.
const N: usize = C::RttTsSamples as usize + 1;

/// The `u8` counters of [`Kept::n8`].
const SYN: usize = 0;
const FIN: usize = 1;

// Bits of `Kept::flags`.
/// A packet was seen (`first_ts_ns` is set).
const SEEN: u8 = 1;
const HAS_ISN: u8 = 2;
const HAS_MSS: u8 = 4;
const HAS_WSCALE_OPT: u8 = 8;
const HAS_WSCALE: u8 = 16;
const SACK_PERMITTED: u8 = 32;
const HAS_SEQ_BASE: u8 = 64;

/// A [`Mean`] of samples that fit in 32 bits: 24 bytes, not 40. `n == SPILLED` once it moved to
/// its wide form in the [`Spill`] box.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Mean32 {
    n: u32,
    first: u32,
    min: u32,
    max: u32,
    /// Sum of (x - first), as [`Mean`] sums it.
    sum: f64,
}

const SPILLED: u32 = u32::MAX;

impl Mean32 {
    /// Adds `x` as [`Mean::add`] does and returns its difference from the first sample; `None`
    /// (and nothing changed) when it belongs to the wide form: moved there already, a sample
    /// above `u32::MAX`, or a count that would reach [`SPILLED`].
    #[inline]
    fn add(&mut self, x: u64) -> Option<f64> {
        if x > u32::MAX as u64 || self.n >= SPILLED - 1 {
            return None;
        }
        let parts = (&mut self.first, &mut self.min, &mut self.max, &mut self.sum);
        let d = add_sample(self.n as u64, parts, x as u32);
        self.n += 1;
        Some(d)
    }
    /// The wide form of a mean that was not moved.
    fn wide(&self) -> Mean {
        Mean::from_parts((self.n as u64, self.first as u64, self.sum, self.min as u64, self.max as u64))
    }
    /// The narrow form of `m`, when it fits.
    fn narrow(m: &Mean) -> Option<Mean32> {
        let (n, first, sum, min, max) = m.parts();
        let fits = |v: u64| u32::try_from(v).ok();
        Some(Mean32 {
            n: fits(n).filter(|&n| n < SPILLED)?,
            first: fits(first)?,
            min: fits(min)?,
            max: fits(max)?,
            sum,
        })
    }
}

/// What most directions never set: allocated with the first of it.
#[derive(Clone, Debug, Default)]
pub(super) struct Rare {
    /// The rare counters readers see as [`DirStats::rare`].
    pub(super) r: DirRare,
    rexmit_packets: u64,
    rexmit_bytes: u64,
    rst: u64,
    /// As [`AckStats`]' `useless`.
    useless: u64,
    /// What did not fit in the narrow fields.
    spill: Option<Box<Spill>>,
}

/// The high bits and wide forms of what outgrew the narrow fields (see the module's doc).
#[derive(Clone, Debug, Default)]
struct Spill {
    /// Bits above the 16 or 32 of each [`C`] counter (wrapping, as a `u64` sum would).
    high: [u64; N],
    /// Bits above the 8 of `syn` and `fin`.
    high8: [u64; 2],
    /// The largest `in_flight` above `u32::MAX`.
    max_in_flight: u64,
    /// The advertised window's summary, once a window or the count outgrew [`Mean32`].
    window: Option<Mean>,
    /// The smallest half-loop of at least `u32::MAX` ns.
    loop_ns: Option<u64>,
}

/// A [`Summary`] whose count is one of the counters ([`C::RttSamples`], [`C::RttTsSamples`]):
/// 40 bytes, not 48. The sums are [`Summary`]'s, the same operations on the same values.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    first: u64,
    sum: f64,
    min: u64,
    max: u64,
    sum_sq: f64,
}

impl Sums {
    /// Adds `x` as [`Summary::add`] does to a summary of `n` samples.
    #[inline]
    fn add(&mut self, n: u64, x: u64) {
        let d = add_sample(n, (&mut self.first, &mut self.min, &mut self.max, &mut self.sum), x);
        self.sum_sq += d * d;
    }
    /// The summary of these sums and `n` samples.
    fn wide(&self, n: u64) -> Summary {
        Summary::from_parts((n, self.first, self.sum, self.min, self.max), self.sum_sq)
    }
    /// The count and sums of `s`.
    fn narrow(s: &Summary) -> (u64, Sums) {
        let ((n, first, sum, min, max), sum_sq) = s.parts();
        (n, Sums { first, sum, min, max, sum_sq })
    }
}

/// The ACK delays of a side that sent quick or delayed ACKs (a quarter of the directions on
/// the concurrent trace), allocated with the first.
#[derive(Clone, Debug, Default)]
struct Timed {
    /// As [`AckStats`]' `delay`.
    delay: Mean,
    /// As [`AckStats`]' `hist`: no bin until a delayed ACK.
    hist: DelayHist,
}

/// Which RTT summary of a [`Kept`].
#[derive(Clone, Copy)]
pub(super) enum S {
    Rtt,
    RttTs,
}

/// One direction's statistics (see the module's doc); 248 bytes, not [`DirStats`]' 472.
#[derive(Clone, Debug, Default)]
pub(super) struct Kept {
    pub(super) last_ts_ns: u64,
    first_ts_ns: u64,
    max_idle_ns: u64,
    first_data_ts_ns: u64,
    last_data_ts_ns: u64,
    last_ack_advance_ts_ns: u64,
    /// As [`AckStats`]' `loop_ns` while below `u32::MAX`, which stands for none here; a larger
    /// one is in the spill box.
    loop_ns: u32,
    window: Mean32,
    /// As [`DirStats`]' `rtt` and `rtt_ts`, their counts among the counters. Samples of seconds
    /// are common (a capture far from a slow peer; every connection of the round-robin
    /// `concurrent` trace), so the samples are kept as wide as they are written.
    rtt: Sums,
    rtt_ts: Sums,
    n16: [u16; N16],
    n32: [u32; N - N16],
    max_in_flight: u32,
    isn: u32,
    seq_base: u32,
    mss: u16,
    n8: [u8; 2],
    wscale_opt: u8,
    wscale: u8,
    flags: u8,
    timed: Option<Box<Timed>>,
    rare: Option<Box<Rare>>,
}

impl Kept {
    /// Nothing seen.
    pub(super) fn new() -> Kept {
        Kept { loop_ns: u32::MAX, ..Default::default() }
    }

    /// Whether a packet was seen in this direction.
    #[inline]
    pub(super) fn seen(&self) -> bool {
        self.flags & SEEN != 0
    }
    pub(super) fn first_ts_ns(&self) -> u64 {
        self.first_ts_ns
    }
    pub(super) fn has_syn(&self) -> bool {
        self.n8[SYN] != 0 || self.get8(SYN) != 0
    }
    pub(super) fn has_fin(&self) -> bool {
        self.n8[FIN] != 0 || self.get8(FIN) != 0
    }
    pub(super) fn rst(&self) -> u64 {
        self.rare.as_ref().map_or(0, |r| r.rst)
    }

    fn spill(&self) -> Option<&Spill> {
        self.rare.as_ref().and_then(|r| r.spill.as_deref())
    }
    fn rare_kept(&mut self) -> &mut Rare {
        self.rare.get_or_insert_default()
    }
    /// The rare counters, allocated on first use.
    #[inline]
    pub(super) fn rare_mut(&mut self) -> &mut DirRare {
        &mut self.rare_kept().r
    }
    #[cold]
    #[inline(never)]
    fn spill_mut(&mut self) -> &mut Spill {
        self.rare_kept().spill.get_or_insert_default()
    }

    /// Adds `v` to counter `c`, carrying into the spill box. (`c` is a constant where it is
    /// called: the width's branch folds away.)
    #[inline(always)]
    pub(super) fn add(&mut self, c: C, v: u64) {
        let i = c as usize;
        let carry = if i < N16 {
            let (lo, o) = self.n16[i].overflowing_add(v as u16);
            self.n16[i] = lo;
            (v >> 16) + o as u64
        } else {
            let (lo, o) = self.n32[i - N16].overflowing_add(v as u32);
            self.n32[i - N16] = lo;
            (v >> 32) + o as u64
        };
        if carry != 0 {
            let h = &mut self.spill_mut().high[i];
            *h = h.wrapping_add(carry);
        }
    }
    /// Counter `c`.
    pub(super) fn get(&self, c: C) -> u64 {
        let i = c as usize;
        let high = self.spill().map_or(0, |s| s.high[i]);
        if i < N16 {
            (self.n16[i] as u64).wrapping_add(high << 16)
        } else {
            (self.n32[i - N16] as u64).wrapping_add(high << 32)
        }
    }
    #[inline(always)]
    fn add8(&mut self, i: usize, v: u64) {
        let (lo, o) = self.n8[i].overflowing_add(v as u8);
        self.n8[i] = lo;
        let carry = (v >> 8) + o as u64;
        if carry != 0 {
            let h = &mut self.spill_mut().high8[i];
            *h = h.wrapping_add(carry);
        }
    }
    fn get8(&self, i: usize) -> u64 {
        let high = self.spill().map_or(0, |s| s.high8[i]);
        (self.n8[i] as u64).wrapping_add(high << 8)
    }

    /// Adds a sample of the advertised window.
    #[inline]
    fn window_add(&mut self, x: u64) {
        if self.window.add(x).is_none() {
            self.window_spilled(x);
        }
    }
    /// Moves the window's summary to its wide form (if not yet there) and adds `x` there.
    #[cold]
    #[inline(never)]
    fn window_spilled(&mut self, x: u64) {
        let was = (self.window.n != SPILLED).then(|| self.window.wide());
        self.window.n = SPILLED;
        let wide = &mut self.spill_mut().window;
        if let Some(w) = was {
            *wide = Some(w);
        }
        wide.get_or_insert_default().add(x);
    }
    /// The advertised window's summary.
    fn window(&self) -> Mean {
        if self.window.n != SPILLED {
            return self.window.wide();
        }
        self.spill().and_then(|s| s.window).expect("a spilled mean is in the spill box")
    }

    /// Adds an RTT sample of kind `k`.
    #[inline]
    pub(super) fn rtt_add(&mut self, k: S, x: u64) {
        let c = match k {
            S::Rtt => C::RttSamples,
            S::RttTs => C::RttTsSamples,
        };
        let n = self.get(c);
        match k {
            S::Rtt => self.rtt.add(n, x),
            S::RttTs => self.rtt_ts.add(n, x),
        }
        self.add(c, 1);
    }
    /// The smallest Karn RTT sample, if any (without building the whole [`Summary`]).
    pub(super) fn rtt_min(&self) -> Option<u64> {
        (self.get(C::RttSamples) > 0).then_some(self.rtt.min)
    }

    /// The smallest half-loop measured, `u64::MAX` for none (as [`AckStats`] keeps it).
    fn loop_ns(&self) -> u64 {
        let narrow = if self.loop_ns == u32::MAX { u64::MAX } else { self.loop_ns as u64 };
        let wide = self.spill().and_then(|s| s.loop_ns).unwrap_or(u64::MAX);
        narrow.min(wide)
    }
    /// Keeps `ns` if it is the smallest half-loop yet (`u64::MAX`: none measured).
    #[inline]
    fn loop_min(&mut self, ns: u64) {
        match u32::try_from(ns) {
            Ok(v) if v < u32::MAX => self.loop_ns = self.loop_ns.min(v),
            _ if ns != u64::MAX => self.loop_spilled(ns),
            _ => {}
        }
    }
    #[cold]
    #[inline(never)]
    fn loop_spilled(&mut self, ns: u64) {
        let w = &mut self.spill_mut().loop_ns;
        *w = Some(w.map_or(ns, |w| w.min(ns)));
    }

    /// A packet sent in this direction (as [`super::StatsSink::segment`] documents).
    #[inline]
    pub(super) fn segment(&mut self, s: &SegmentInfo) {
        let t = s.at.ts_ns;
        // The earliest and the latest times, not the first and the last in file order: with
        // time going back (merged captures, a clock stepped) those would give a negative
        // duration (docs/statistics.md, *Times*).
        if !self.seen() {
            self.first_ts_ns = t;
            self.seq_base = s.seq_base().0;
            self.flags |= SEEN | HAS_SEQ_BASE;
        } else {
            self.first_ts_ns = self.first_ts_ns.min(t);
            self.max_idle_ns = self.max_idle_ns.max(t.saturating_sub(self.last_ts_ns));
        }
        self.last_ts_ns = self.last_ts_ns.max(t);
        self.add(C::Packets, 1);
        let f = s.flags;
        if s.len > 0 {
            self.add(C::DataPackets, 1);
            self.add(C::PayloadBytes, s.len as u64);
            if self.first_data_ts_ns == 0 || t < self.first_data_ts_ns {
                self.first_data_ts_ns = t;
            }
            self.last_data_ts_ns = self.last_data_ts_ns.max(t);
        } else if f.ack() && !f.syn() && !f.fin() && !f.rst() {
            self.add(C::PureAcks, 1);
            self.add(C::AckWireBytes, s.hdr_len as u64);
        }
        self.add(C::UniqueBytes, s.new_bytes as u64);
        if s.is_rexmit || s.rexmit_bytes > 0 {
            let r = self.rare_kept();
            r.rexmit_packets += s.is_rexmit as u64;
            r.rexmit_bytes += s.rexmit_bytes as u64;
        }
        if f.syn() {
            if self.flags & HAS_ISN == 0 {
                self.isn = s.seq.0;
                self.flags |= HAS_ISN;
            }
            self.add8(SYN, 1);
        }
        if f.fin() {
            self.add8(FIN, 1);
        }
        if f.rst() {
            self.rare_kept().rst += 1;
        }
        if let Some(m) = s.mss {
            self.mss = m;
            self.flags |= HAS_MSS;
        }
        if let Some(w) = s.wscale_opt {
            self.wscale_opt = w;
            self.flags |= HAS_WSCALE_OPT;
        }
        if s.sack_permitted {
            self.flags |= SACK_PERMITTED;
        }
        if !f.syn() {
            match s.wscale {
                Some(w) => {
                    self.wscale = w;
                    self.flags |= HAS_WSCALE;
                }
                None => self.flags &= !HAS_WSCALE,
            }
        }
        self.add(C::TimestampPackets, s.has_timestamps() as u64);
        if s.sack_blocks > 0 {
            let r = self.rare_mut();
            r.sack_packets += 1;
            r.sack_blocks += s.sack_blocks as u64;
        }
        if (f.ack() || f.syn()) && !f.rst() {
            self.window_add(s.win_bytes);
        }
        if let Some(v) = s.in_flight {
            match u32::try_from(v) {
                Ok(v) => self.max_in_flight = self.max_in_flight.max(v),
                Err(_) => {
                    let m = &mut self.spill_mut().max_in_flight;
                    *m = (*m).max(v);
                }
            }
        }
        if s.truncated_bytes > 0 {
            self.add(C::TruncatedPackets, 1);
            self.add(C::TruncatedBytes, s.truncated_bytes as u64);
        }
    }

    /// The peer acknowledged `bytes` of this direction's data at `t`.
    #[inline]
    pub(super) fn acked(&mut self, bytes: u64, t: u64) {
        self.add(C::AckedBytes, bytes);
        self.last_ack_advance_ts_ns = t;
    }

    /// An ACK of this side that newly acknowledged `bytes` of the peer's payload (as
    /// [`AckStats`] counts it).
    #[inline]
    pub(super) fn ack_add(&mut self, bytes: u64, a: AckFacts) {
        self.add(C::Acking, 1);
        self.add(C::AckPayloadBytes, bytes);
        self.loop_min(a.loop_ns);
        self.add(C::Piggybacked, a.carried as u64);
        self.add(C::QuickEpisodes, a.episode as u64);
        match a.kind {
            AckKind::Quick | AckKind::Delayed => {
                let t = self.timed.get_or_insert_default();
                t.delay.add(a.delay_ns);
                if a.kind == AckKind::Delayed {
                    t.hist.add(a.delay_ns);
                    self.add(C::Delayed, 1);
                } else {
                    self.add(C::Quick, 1);
                }
            }
            AckKind::Stretch => self.add(C::Stretch, 1),
            _ => {}
        }
    }

    /// A pure ACK of this side that said nothing new.
    pub(super) fn useless_ack(&mut self) {
        self.rare_kept().useless += 1;
    }

    /// The direction as readers see it: every number as wide as [`DirStats`] keeps it.
    pub(super) fn view(&self) -> DirStats {
        let rare = self.rare.as_deref();
        let spill = self.spill();
        let flag = |f: u8| self.flags & f != 0;
        DirStats {
            last_ts_ns: self.last_ts_ns,
            first_ts_ns: self.first_ts_ns,
            max_idle_ns: self.max_idle_ns,
            packets: self.get(C::Packets),
            data_packets: self.get(C::DataPackets),
            payload_bytes: self.get(C::PayloadBytes),
            unique_bytes: self.get(C::UniqueBytes),
            pure_acks: self.get(C::PureAcks),
            rexmit_packets: rare.map_or(0, |r| r.rexmit_packets),
            rexmit_bytes: rare.map_or(0, |r| r.rexmit_bytes),
            first_data_ts_ns: self.first_data_ts_ns,
            last_data_ts_ns: self.last_data_ts_ns,
            max_in_flight: (self.max_in_flight as u64).max(spill.map_or(0, |s| s.max_in_flight)),
            timestamp_packets: self.get(C::TimestampPackets),
            syn: self.get8(SYN),
            fin: self.get8(FIN),
            window: self.window(),
            rst: self.rst(),
            mss: flag(HAS_MSS).then_some(self.mss),
            wscale_opt: flag(HAS_WSCALE_OPT).then_some(self.wscale_opt),
            wscale: flag(HAS_WSCALE).then_some(self.wscale),
            sack_permitted: flag(SACK_PERMITTED),
            truncated_packets: self.get(C::TruncatedPackets),
            truncated_bytes: self.get(C::TruncatedBytes),
            rtt: self.rtt.wide(self.get(C::RttSamples)),
            rtt_ts: self.rtt_ts.wide(self.get(C::RttTsSamples)),
            acked_bytes: self.get(C::AckedBytes),
            last_ack_advance_ts_ns: self.last_ack_advance_ts_ns,
            isn: flag(HAS_ISN).then_some(SeqNum(self.isn)),
            seq_base: flag(HAS_SEQ_BASE).then_some(SeqNum(self.seq_base)),
            acks: AckStats {
                acking: self.get(C::Acking),
                piggybacked: self.get(C::Piggybacked),
                quick: self.get(C::Quick),
                delayed: self.get(C::Delayed),
                quick_episodes: self.get(C::QuickEpisodes),
                stretch: self.get(C::Stretch),
                useless: rare.map_or(0, |r| r.useless),
                payload_bytes: self.get(C::AckPayloadBytes),
                wire_bytes: self.get(C::AckWireBytes),
                delay: self.timed.as_ref().map_or(Mean::NONE, |t| t.delay),
                loop_ns: self.loop_ns(),
                hist: self.timed.as_ref().filter(|t| !t.hist.bins.is_empty()).map(|t| Box::new(t.hist.clone())),
            },
            rare: rare.map(|r| Box::new(r.r.clone())),
        }
    }

    /// A direction that reads as `d` (statistics made otherwise than by a pass: tests).
    pub(super) fn of(d: &DirStats) -> Kept {
        let mut k = Kept::new();
        k.last_ts_ns = d.last_ts_ns;
        k.first_ts_ns = d.first_ts_ns;
        k.max_idle_ns = d.max_idle_ns;
        k.first_data_ts_ns = d.first_data_ts_ns;
        k.last_data_ts_ns = d.last_data_ts_ns;
        k.last_ack_advance_ts_ns = d.last_ack_advance_ts_ns;
        let a = &d.acks;
        k.loop_min(a.loop_ns);
        for (c, v) in [
            (C::Packets, d.packets),
            (C::DataPackets, d.data_packets),
            (C::PayloadBytes, d.payload_bytes),
            (C::UniqueBytes, d.unique_bytes),
            (C::PureAcks, d.pure_acks),
            (C::TimestampPackets, d.timestamp_packets),
            (C::TruncatedPackets, d.truncated_packets),
            (C::TruncatedBytes, d.truncated_bytes),
            (C::AckedBytes, d.acked_bytes),
            (C::Acking, a.acking),
            (C::Piggybacked, a.piggybacked),
            (C::Quick, a.quick),
            (C::Delayed, a.delayed),
            (C::QuickEpisodes, a.quick_episodes),
            (C::Stretch, a.stretch),
            (C::AckPayloadBytes, a.payload_bytes),
            (C::AckWireBytes, a.wire_bytes),
        ] {
            k.add(c, v);
        }
        k.add8(SYN, d.syn);
        k.add8(FIN, d.fin);
        match u32::try_from(d.max_in_flight) {
            Ok(v) => k.max_in_flight = v,
            Err(_) => k.spill_mut().max_in_flight = d.max_in_flight,
        }
        k.window = Mean32::narrow(&d.window).unwrap_or_else(|| {
            k.spill_mut().window = Some(d.window);
            Mean32 { n: SPILLED, ..Default::default() }
        });
        let ((n, rtt), (n_ts, rtt_ts)) = (Sums::narrow(&d.rtt), Sums::narrow(&d.rtt_ts));
        (k.rtt, k.rtt_ts) = (rtt, rtt_ts);
        k.add(C::RttSamples, n);
        k.add(C::RttTsSamples, n_ts);
        if a.delay.n > 0 || a.hist.is_some() {
            k.timed = Some(Box::new(Timed { delay: a.delay, hist: a.hist.as_deref().cloned().unwrap_or_default() }));
        }
        let mut flags = 0;
        for (on, f) in [
            (d.packets > 0, SEEN),
            (d.seq_base.is_some(), HAS_SEQ_BASE),
            (d.isn.is_some(), HAS_ISN),
            (d.mss.is_some(), HAS_MSS),
            (d.wscale_opt.is_some(), HAS_WSCALE_OPT),
            (d.wscale.is_some(), HAS_WSCALE),
            (d.sack_permitted, SACK_PERMITTED),
        ] {
            flags |= if on { f } else { 0 };
        }
        k.flags = flags;
        k.isn = d.isn.map_or(0, |n| n.0);
        k.seq_base = d.seq_base.map_or(0, |n| n.0);
        k.mss = d.mss.unwrap_or(0);
        k.wscale_opt = d.wscale_opt.unwrap_or(0);
        k.wscale = d.wscale.unwrap_or(0);
        if d.rare.is_some() || d.rexmit_packets > 0 || d.rexmit_bytes > 0 || d.rst > 0 || a.useless > 0 {
            let r = k.rare_kept();
            r.r = d.rare().clone();
            r.rexmit_packets = d.rexmit_packets;
            r.rexmit_bytes = d.rexmit_bytes;
            r.rst = d.rst;
            r.useless = a.useless;
        }
        k
    }

    /// Whether the rare box was allocated (for the tests that hold it to what it is for).
    #[cfg(test)]
    pub(super) fn rare_allocated(&self) -> bool {
        self.rare.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two of these, the longest idle time and the identity's pointer fill the 512-byte size class
    /// (`analysis::tests::per_connection_state_sizes_are_pinned`); the narrow window's summary
    /// is 24 bytes, not 40.
    #[test]
    fn kept_sizes_are_pinned() {
        use std::mem::size_of;
        assert_eq!([size_of::<Kept>(), size_of::<Mean32>(), size_of::<Sums>()], [248, 24, 40]);
    }

    /// A counter that carries out of its 16, 32 (or 8) bits reads as the `u64` sum would.
    #[test]
    fn counters_carry_exactly() {
        let mut k = Kept::new();
        k.add(C::Packets, u16::MAX as u64 - 1);
        k.add(C::AckedBytes, u32::MAX as u64 - 1);
        assert!(k.spill().is_none());
        k.add(C::Packets, 5);
        k.add(C::Packets, 1 << 40);
        k.add(C::AckedBytes, 3 << 40);
        k.add(C::AckedBytes, u32::MAX as u64);
        for _ in 0..300 {
            k.add8(SYN, 1);
        }
        k.add8(FIN, 1 << 20);
        let d = k.view();
        assert_eq!(d.packets, u16::MAX as u64 + 4 + (1 << 40));
        assert_eq!(d.acked_bytes, (3 << 40) + 2 * u32::MAX as u64 - 1);
        assert_eq!((d.syn, d.fin), (300, 1 << 20));
        assert_eq!(d.data_packets, 0);
        assert!(k.spill().is_some());
        // Wrapping as the u64 sum does.
        k.add(C::Stretch, u64::MAX);
        k.add(C::Stretch, 2);
        k.add(C::UniqueBytes, u64::MAX);
        k.add(C::UniqueBytes, 2);
        assert_eq!((k.get(C::Stretch), k.get(C::UniqueBytes)), (1, 1));
    }

    /// The RTT summaries, their counts among the counters, and the half-loop, narrow or not,
    /// read as the wide forms would hold them.
    #[test]
    fn summaries_and_the_half_loop_read_as_the_wide_forms() {
        let samples = [8_181_818_000u64, 3, u64::MAX, 2_551_800_000, 17];
        let (mut k, mut rtt) = (Kept::new(), Summary::default());
        for &x in &samples {
            k.rtt_add(S::RttTs, x);
            rtt.add(x);
        }
        assert_eq!(format!("{:?}", k.view().rtt_ts), format!("{rtt:?}"));
        assert_eq!((k.view().rtt.n, k.rtt_min(), k.view().acks.loop_ns()), (0, None, None));
        for (ns, least) in [(u64::MAX, None), (5 << 32, Some(5 << 32)), (u32::MAX as u64, Some(u32::MAX as u64))] {
            k.loop_min(ns);
            assert_eq!(k.view().acks.loop_ns(), least);
        }
        k.loop_min(40);
        k.loop_min(u32::MAX as u64 + 1);
        assert_eq!(k.view().acks.loop_ns(), Some(40));
    }

    /// The window's summary keeps the wide form's sums bit for bit, before and after a sample
    /// above `u32::MAX` moves it into the spill box.
    #[test]
    fn the_window_moves_to_the_wide_form_exactly() {
        let samples = [70_000u64, 3, 123_456_789, u32::MAX as u64, 1 << 33, 5, u64::MAX, 17];
        let mut k = Kept::new();
        let mut window = Mean::default();
        for (i, &x) in samples.iter().enumerate() {
            k.window_add(x);
            window.add(x);
            let bits = |m: &Mean| {
                let (n, first, sum, min, max) = m.parts();
                (n, first, sum.to_bits(), min, max)
            };
            assert_eq!(bits(&k.window()), bits(&window), "after sample {i}");
            assert_eq!(k.window.n == SPILLED, i >= 4, "after sample {i}");
        }
    }

    /// A direction read back through [`Kept::of`] reads the same, wide values included.
    #[test]
    fn views_round_trip() {
        let mut d = DirStats {
            packets: 7,
            payload_bytes: u64::MAX,
            max_in_flight: 1 << 40,
            syn: 1,
            fin: 1000,
            rexmit_packets: 2,
            mss: Some(1460),
            wscale: Some(0),
            isn: Some(SeqNum(0)),
            ..Default::default()
        };
        d.window.add(65_535);
        d.rtt.add(u64::MAX);
        d.rtt_ts.add(40_000_000);
        d.acks.delay.add(1 << 35);
        d.acks.useless = 2;
        let mut h = DelayHist::default();
        h.add(40_000_000);
        (d.acks.hist, d.acks.delayed) = (Some(Box::new(h)), 1);
        d.rare_mut().dup_acks = 3;
        let back = Kept::of(&d).view();
        assert_eq!(format!("{back:?}"), format!("{d:?}"));
        let none = DirStats::default();
        assert_eq!(format!("{:?}", Kept::of(&none).view()), format!("{none:?}"));
        assert_eq!(format!("{:?}", Kept::new().view()), format!("{none:?}"));
    }
}

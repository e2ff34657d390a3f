//! Per-connection TCP analysis: one sender view and one receiver view per direction.
//!
//! Read RFC 9293 (sequence space, §3.4), RFC 7323 (window scale §2, timestamps §3-4),
//! RFC 2018 and 2883 (SACK, D-SACK), RFC 6298 (§3, Karn's rule) and RFC 5681 (§2, duplicate
//! ACKs) first; each rule below names its source, and `docs/statistics.md` gives the definitions
//! with their tcptrace and Wireshark counterparts.
//!
//! [`Connection::on_segment`] takes one decoded segment of the connection and emits
//! [`Event`]s and one [`SegmentInfo`] to a [`Sink`], through one module per TCP concept, each
//! naming the RFC sections it follows: `handshake` (ISNs, SYN options, window scaling), `probe`
//! (zero-window probes, keep-alives), `retransmission` (new data, retransmissions, hole fills,
//! holes; the transmissions kept for RTT sampling), `scoreboard` (the cumulative ACK, SACK and
//! D-SACK, bytes in flight), `window` (duplicate ACKs, advertised windows), `rtt` (Karn's samples,
//! timestamp echoes). State is bounded by the connection's
//! unacknowledged data: holes and SACKed ranges are [`ranges::RangeSet`]s with a fixed capacity,
//! the list of unacknowledged segments for RTT sampling is capped at [`MAX_UNACKED`].

mod acks;
mod classify;
mod handshake;
mod probe;
mod queue;
pub mod ranges;
mod retransmission;
mod rtt;
mod scoreboard;
mod window;
mod wscale;

pub use crate::event::{At, ConnIdx, Dir, Event, Evidence, OosClass, RttKind, SegmentInfo};
pub use crate::sink::Sink;
pub use acks::DELAYED_MIN_NS;
pub use classify::Classify;

use std::collections::VecDeque;

use crate::conn::SplitReason;
use crate::decode::Segment;
use crate::seq::{OptOff, SeqNum, SeqOff, Unwrapper};
use queue::Queue;
use ranges::RangeSet;

/// Most unacknowledged transmissions remembered per direction for RTT sampling.
pub const MAX_UNACKED: usize = 1 << 15;
/// Most TSvals awaiting their echo per direction.
const MAX_TS_PENDING: usize = 4096;

/// Analysis settings.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Idle time after which a segment that does not continue the old sequence space starts a
    /// new connection on the same 4-tuple (tcptrace: 240 s).
    pub idle_split_ns: u64,
    /// Window scale to assume when the handshake was not captured (`None`: unknown).
    pub assume_wscale: Option<u8>,
    /// The out-of-sequence classifier's constants.
    pub classify: Classify,
    /// Verify IPv4 header and TCP checksums (`--checksums`; off by default, as in Wireshark:
    /// summing every payload costs ~20 % on bulk traces). See `decode::checksum`.
    pub checksums: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            idle_split_ns: 240 * 1_000_000_000,
            assume_wscale: None,
            classify: Classify::default(),
            checksums: false,
        }
    }
}

/// A range of sequence space sent and not yet cumulatively acknowledged (24 bytes: every
/// direction with data in flight holds some, `docs/performance.md`, *concurrent*).
#[derive(Clone, Copy, Debug)]
struct Sent {
    start: SeqOff,
    /// When the range was last sent; until it is sent again (ambiguous), when it was first
    /// sent: the RTT sample's start. The first sending of a range sent twice is never read
    /// (Karn: no sample, no receiver delay), so one word holds both.
    ts_ns: u64,
    /// In one word: the frame it was last sent in (first, as `ts_ns`) in the low
    /// [`Sent::FRAME_BITS`], its length (`end - start`) in the next [`Sent::LEN_BITS`], and
    /// in the top bit whether some of it was sent more than once (ambiguous for RTT, Karn).
    /// A longer range is kept as several ([`Sent::MAX_LEN`]); a frame past 2^40 is kept as
    /// 2^40 - 1, with a warning ([`Sent::MAX_FRAME`]).
    packed: u64,
}

impl Sent {
    const FRAME_BITS: u32 = 40;
    const LEN_BITS: u32 = 23;
    /// The largest frame number kept: 1.1 × 10^12 packets, past any capture file (at 64 bytes
    /// a packet, 70 TB).
    const MAX_FRAME: u64 = (1 << Self::FRAME_BITS) - 1;
    /// The longest range kept as one: 8 MiB, past any segment (IPv4's 64 KiB, BIG TCP's
    /// few hundred KiB).
    const MAX_LEN: i64 = (1 << Self::LEN_BITS) - 1;
    const AMBIGUOUS: u64 = 1 << 63;

    /// A range `start..end` (not empty, at most [`Sent::MAX_LEN`]) first sent in `frame` at
    /// `ts_ns`.
    #[inline]
    fn new(start: SeqOff, end: SeqOff, ts_ns: u64, frame: u64, ambiguous: bool) -> Self {
        debug_assert!((1..=Self::MAX_LEN).contains(&(end - start)), "a range of 1 to MAX_LEN bytes");
        let packed = frame.min(Self::MAX_FRAME) | ((end - start) as u64) << Self::FRAME_BITS | (ambiguous as u64) << 63;
        Sent { start, ts_ns, packed }
    }

    /// `start..end`, sent in `frame` at `ts_ns`, as ranges of at most [`Sent::MAX_LEN`] bytes:
    /// one, unless `end - start` is longer than any segment.
    #[inline]
    fn pieces(start: SeqOff, end: SeqOff, ts_ns: u64, frame: u64, ambiguous: bool) -> impl Iterator<Item = Sent> {
        // Each piece from where the last ended: no count of pieces to divide out, no range to
        // step through (~25 instructions a data packet, a range and a division, before).
        let mut from = start;
        std::iter::from_fn(move || {
            (from < end).then(|| {
                let to = end.min(from + Self::MAX_LEN);
                let sent = Sent::new(from, to, ts_ns, frame, ambiguous);
                from = to;
                sent
            })
        })
    }

    /// Where it ends (exclusive).
    #[inline]
    fn end(&self) -> SeqOff {
        self.start + ((self.packed & !Self::AMBIGUOUS) >> Self::FRAME_BITS) as i64
    }

    /// Drops its part below `start` (acknowledged), keeping its end.
    #[inline]
    fn set_start(&mut self, start: SeqOff) {
        let end = self.end();
        debug_assert!(self.start < start && start < end, "a part of it stays");
        self.packed = self.packed & (Self::AMBIGUOUS | Self::MAX_FRAME) | ((end - start) as u64) << Self::FRAME_BITS;
        self.start = start;
    }

    /// The frame it was last sent in: the first while it is not ambiguous.
    fn frame(&self) -> u64 {
        self.packed & Self::MAX_FRAME
    }

    /// Some of it was sent more than once: ambiguous for RTT (Karn).
    fn ambiguous(&self) -> bool {
        self.packed & Self::AMBIGUOUS != 0
    }

    /// Marks it sent again in `frame` at `ts_ns`.
    fn resent(&mut self, ts_ns: u64, frame: u64) {
        self.ts_ns = ts_ns;
        self.packed = self.packed & !Self::MAX_FRAME | frame.min(Self::MAX_FRAME) | Self::AMBIGUOUS;
    }
}

/// Appends `x` to `q`, growing it by doubling from one element rather than from `VecDeque`'s
/// first capacity of four. Most directions keep one or two ranges outstanding, and with many
/// connections open at once every one holds these queues (`docs/performance.md`,
/// *concurrent*). Written by hand because std's `VecDeque` has no growth-policy knob; the
/// doubling keeps a push amortised O(1).
#[inline]
fn push_compact<T>(q: &mut VecDeque<T>, x: T) {
    if q.len() == q.capacity() {
        q.reserve_exact(q.len().max(1));
    }
    q.push_back(x);
}

/// What one endpoint has sent, and what it has said about the other's data.
///
/// Sequence offsets of this endpoint's data are relative to `unwrap`'s base; acknowledgments
/// *received* for this data (`snd_una`, `sacked`) are stored here too, so the sender view is in
/// one place.
#[derive(Default, Debug)]
struct Half {
    /// Unwraps this endpoint's sequence numbers; set by its SYN (base ISN+1), its first segment,
    /// or the first ACK the peer sends for it, whichever comes first.
    unwrap: Option<Unwrapper>,
    /// ISN from this endpoint's SYN, with [`Bits::ISN`] ([`Half::isn`]).
    isn: SeqNum,
    /// Highest offset sent + 1 (SYN and FIN count), i.e. Wireshark's `nextseq`. Invariant: every
    /// byte below it has been seen unless it is in `holes`.
    snd_max: OptOff,
    /// What is outstanding (holes, SACKed ranges, unacknowledged ranges, TSvals awaiting their
    /// echo); allocated while any is non-empty, so an idle connection carries none of it.
    out: Option<Box<Outstanding>>,
    /// Highest cumulative ACK the peer sent for this data (RFC 9293 SND.UNA at the capture point).
    snd_una: OptOff,
    /// Options from this endpoint's SYN.
    syn_wscale: Option<u8>,
    /// Shift applied to this endpoint's windows; `None` until known.
    wscale: Option<u8>,
    /// The last packet's ACK number and window, with [`Bits::LAST`] ([`Half::last`];
    /// Wireshark's `lastack`, `window`).
    last_ack: SeqNum,
    last_win_raw: u16,
    /// Duplicate ACK counter of the current ack value (Wireshark `dupacknum`).
    dupacks: u32,
    /// The ack offset of the last advertisement (none before one), and its right edge
    /// (ack + window).
    edge_ack: OptOff,
    edge: SeqOff,
    /// The last zero-window probe's end, the window scale inference, the range sets, a FIN's
    /// offset below `snd_max`: allocated with the first of them.
    rare: Option<Box<HalfRare>>,
    /// What the out-of-sequence classifier remembers of this sender: allocated by its first
    /// segment when the pass classifies ([`Sink::CLASSIFY`]), never otherwise.
    memory: Option<Box<classify::Memory>>,
    /// What the peer's ACKs of this endpoint's data have shown (`acks`: the peer's ACK
    /// strategy).
    acks: acks::AckState,
    /// Flags, and which of `isn` and `last_*` hold a value.
    bits: Bits,
}

/// What few senders set: three words of every [`Half`] before, and without them a
/// connection's analysis state is 224 bytes, an allocator size class of its own, not 256; and
/// the range sets' pointer, a word of every [`Outstanding`] before (`docs/performance.md`,
/// *concurrent*). Allocated with a zero-window probe, a window scale to infer (a connection
/// seen without its handshake), a hole or SACK block, or a FIN below the highest byte sent; a
/// FIN that ends what its side sent, as nearly every one does, is a bit ([`Bits::FIN_AT_TOP`]),
/// or closed connections, held for two minutes after, would each allocate it. Freed by
/// [`Connection::release`] once it holds nothing.
#[derive(Default, Debug)]
struct HalfRare {
    /// End of the last zero-window probe's payload (a probe does not move `snd_max`).
    probe_end: OptOff,
    /// Offset (in this space) of the FIN when it is not `snd_max - 1` ([`HalfRare::fin_off`]).
    fin_off: OptOff,
    /// Window scale inference of this endpoint's windows, while its scale is unknown.
    infer: Option<Box<wscale::Infer>>,
    /// Holes and SACKed ranges, allocated with the first of either: most directions have
    /// neither, and with many connections open at once two empty sets in every direction with
    /// data in flight were 48 bytes each.
    ranges: Option<Box<Ranges>>,
}

impl HalfRare {
    /// Before a [`Half`]'s `snd_max` changes (bytes past its FIN, a new base): a FIN's offset
    /// read from it ([`Bits::FIN_AT_TOP`]) moves into the box. From its fields, as
    /// [`HalfRare::fin_off`].
    fn keep_fin_apart(bits: &mut Bits, snd_max: OptOff, rare: &mut Option<Box<HalfRare>>) {
        if bits.has(Bits::FIN_AT_TOP) {
            bits.set(Bits::FIN_AT_TOP, false);
            if let Some(m) = snd_max.get() {
                rare.get_or_insert_default().fin_off.set(m - 1);
            }
        }
    }

    /// Offset of a [`Half`]'s FIN, once seen, from its fields (not a method of `Half`: callers
    /// hold its outstanding state meanwhile).
    #[inline]
    fn fin_off(bits: Bits, snd_max: OptOff, rare: Option<&HalfRare>) -> Option<SeqOff> {
        if bits.has(Bits::FIN_AT_TOP) { snd_max.get().map(|m| m - 1) } else { rare.and_then(|r| r.fin_off.get()) }
    }
}

/// A [`Half`]'s flags, a bit each: as `bool`s and `Option`s they took `Half` to 152 bytes and
/// a connection's analysis state to 320; with these (and the 12-byte [`Unwrapper`]) they were
/// 120 and 256, allocator size classes of their own, and with [`HalfRare`] 104 and 224
/// (`docs/performance.md`, *concurrent*).
#[derive(Clone, Copy, Default, Debug)]
struct Bits(u16);

impl Bits {
    /// `isn` holds this endpoint's SYN's sequence number.
    const ISN: u16 = 1;
    /// `last_ack` and `last_win_raw` hold the last packet's.
    const LAST: u16 = 1 << 1;
    /// This endpoint sent a SYN.
    const SYN_SEEN: u16 = 1 << 2;
    /// Its SYN offered SACK (the classifier's tail-loss probe needs it both ways).
    const SYN_SACK: u16 = 1 << 3;
    /// Its last packet was a probe or keep-alive (Wireshark's `lastsegmentflags`).
    const LAST_WAS_PROBE: u16 = 1 << 4;
    const FIN_SEEN: u16 = 1 << 5;
    const RST_SEEN: u16 = 1 << 6;
    /// The peer sent a segment since this endpoint's last one (`acks`: an ACK answering it is
    /// not useless).
    const PEER_SPOKE: u16 = 1 << 7;
    /// The partial-analysis warnings already emitted, one for each structure that hit its
    /// capacity ([`partial`]).
    const PARTIAL_HOLES: u16 = 1 << 8;
    const PARTIAL_UNACKED: u16 = 1 << 9;
    const PARTIAL_SACK: u16 = 1 << 10;
    /// A frame number past [`Sent::MAX_FRAME`] was kept as it.
    const PARTIAL_FRAMES: u16 = 1 << 11;
    /// The last FIN seen is the highest byte sent: its offset is `snd_max - 1`
    /// ([`HalfRare::fin_off`]).
    const FIN_AT_TOP: u16 = 1 << 12;
    /// Pending TSvals dropped: their frames were more than 2^32 apart ([`Outstanding::ts_push`]).
    const PARTIAL_TSVALS: u16 = 1 << 13;

    #[inline]
    fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }

    /// Sets `bit` when `on` (a flag that, once seen, stays).
    #[inline]
    fn or(&mut self, bit: u16, on: bool) {
        self.0 |= bit * on as u16;
    }

    #[inline]
    fn set(&mut self, bit: u16, on: bool) {
        self.0 = if on { self.0 | bit } else { self.0 & !bit };
    }
}

/// The parts of a [`Half`] that grow with unacknowledged data: 80 bytes, an allocator size
/// class (`docs/performance.md`, *concurrent*).
#[derive(Default, Debug)]
struct Outstanding {
    /// Ranges sent and not yet cumulatively acknowledged, sorted by sequence and disjoint: new
    /// data is pushed at the back, a retransmission marks the ranges it repeats. On the heap: with
    /// two inline, 43 % of the outstanding states on 20,000 concurrent connections still had
    /// more, and the inline room cost more bytes than it saved (`docs/performance.md`).
    unacked: VecDeque<Sent>,
    /// TSvals sent, first occurrence each, awaiting the peer's echo. The first two inline:
    /// every packet with timestamps reads its peer's and appends to its own, and 97 % of the
    /// outstanding states held at most two at the peak on 20,000 concurrent connections.
    ts_pending: Queue<Pending, 2>,
    /// The frame the pending TSvals' frames count from ([`Pending::frame_off`]).
    frame_base: u64,
}

/// A TSval awaiting its echo, in 16 bytes, not 24: the frame it was first sent in is an offset
/// from its queue's [`Outstanding::frame_base`].
#[derive(Clone, Copy, Default, Debug)]
struct Pending {
    tsval: u32,
    frame_off: u32,
    /// When it was first sent: the start of the RTT sample its echo gives.
    ts_ns: u64,
}

/// The range sets of a [`Half`] ([`HalfRare`]).
#[derive(Default, Debug)]
struct Ranges {
    /// Bytes below `snd_max` never seen in the capture (and not yet acknowledged).
    holes: RangeSet,
    /// Bytes above `snd_una` the peer reported in SACK blocks (RFC 6675 scoreboard).
    sacked: RangeSet,
}

impl Ranges {
    fn is_empty(&self) -> bool {
        self.holes.is_empty() && self.sacked.is_empty()
    }
}

/// What a [`Half`] without range sets reads as.
static NO_RANGES: Ranges = Ranges { holes: RangeSet::new(), sacked: RangeSet::new() };

impl Outstanding {
    fn is_empty(&self) -> bool {
        self.unacked.is_empty() && self.ts_pending.is_empty()
    }

    /// The pending TSval at the front: (TSval, time, frame).
    #[inline]
    fn ts_front(&self) -> Option<(u32, u64, u64)> {
        self.ts_pending.front().map(|p| (p.tsval, p.ts_ns, self.frame_base + p.frame_off as u64))
    }

    /// Takes the pending TSval at the front: (TSval, time, frame).
    fn ts_pop(&mut self) -> Option<(u32, u64, u64)> {
        let front = self.ts_front();
        self.ts_pending.pop_front();
        front
    }

    /// The last TSval pending.
    #[inline]
    fn ts_back(&self) -> Option<u32> {
        self.ts_pending.back().map(|p| p.tsval)
    }

    /// Appends a TSval first sent in `frame` at `ts_ns`. False when some pending TSvals were
    /// dropped for it: their frames and this one were more than 2^32 frames apart, past any
    /// echo's wait (the caller warns, [`Bits::PARTIAL_TSVALS`]).
    #[inline]
    fn ts_push(&mut self, tsval: u32, ts_ns: u64, frame: u64) -> bool {
        if self.ts_pending.is_empty() {
            self.frame_base = frame;
        }
        let Some(off) = frame.checked_sub(self.frame_base).and_then(|d| u32::try_from(d).ok()) else {
            return self.ts_rebase(tsval, ts_ns, frame);
        };
        self.ts_pending.push_back(Pending { tsval, frame_off: off, ts_ns });
        true
    }

    /// [`Outstanding::ts_push`] for a frame below the base (inputs merged by time number their
    /// frames apart) or 2^32 past it: the base moves to the smallest frame, the oldest TSvals
    /// dropped while the frames span more than 2^32.
    #[cold]
    #[inline(never)]
    fn ts_rebase(&mut self, tsval: u32, ts_ns: u64, frame: u64) -> bool {
        let mut all: VecDeque<(u32, u64, u64)> = std::iter::from_fn(|| self.ts_pop()).collect();
        all.push_back((tsval, ts_ns, frame));
        let span = |all: &VecDeque<(u32, u64, u64)>| {
            let (lo, hi) = all.iter().fold((u64::MAX, 0), |(lo, hi), &(_, _, f)| (lo.min(f), hi.max(f)));
            (lo, hi - lo)
        };
        let mut kept = true;
        while span(&all).1 > u32::MAX as u64 {
            all.pop_front();
            kept = false;
        }
        self.frame_base = span(&all).0;
        for (v, t, f) in all {
            self.ts_pending.push_back(Pending { tsval: v, frame_off: (f - self.frame_base) as u32, ts_ns: t });
        }
        kept
    }
}

impl HalfRare {
    /// The holes of `rare`'s half (empty when none was ever recorded).
    #[inline]
    fn holes(rare: Option<&HalfRare>) -> &RangeSet {
        &rare.and_then(|r| r.ranges.as_deref()).unwrap_or(&NO_RANGES).holes
    }

    /// The SACKed ranges (empty when none was ever recorded).
    #[inline]
    fn sacked(rare: Option<&HalfRare>) -> &RangeSet {
        &rare.and_then(|r| r.ranges.as_deref()).unwrap_or(&NO_RANGES).sacked
    }

    /// The range sets, allocated on first use: for an insertion (a removal needs none).
    fn ranges(rare: &mut Option<Box<HalfRare>>) -> &mut Ranges {
        rare.get_or_insert_default().ranges.get_or_insert_default()
    }

    /// The range sets, if any was allocated.
    #[inline]
    fn ranges_mut(rare: &mut Option<Box<HalfRare>>) -> Option<&mut Ranges> {
        rare.as_deref_mut().and_then(|r| r.ranges.as_deref_mut())
    }

    /// Whether it holds nothing (it may be freed).
    fn is_empty(&self) -> bool {
        self.probe_end.get().is_none()
            && self.fin_off.get().is_none()
            && self.infer.is_none()
            && self.ranges.as_deref().is_none_or(Ranges::is_empty)
    }
}

impl Half {
    /// The sequence number of this endpoint's SYN, once seen.
    #[inline]
    fn isn(&self) -> Option<SeqNum> {
        self.bits.has(Bits::ISN).then_some(self.isn)
    }

    /// The last packet's ACK number and raw window, once it sent one.
    #[inline]
    fn last(&self) -> Option<(SeqNum, u16)> {
        self.bits.has(Bits::LAST).then_some((self.last_ack, self.last_win_raw))
    }

    #[inline]
    fn has(&self, bit: u16) -> bool {
        self.bits.has(bit)
    }

    /// What few senders set, allocated on first use.
    fn rare(&mut self) -> &mut HalfRare {
        self.rare.get_or_insert_default()
    }

    /// The classifier's memory of this sender (empty until it sent, when classifying).
    fn memory(&self) -> &classify::Memory {
        self.memory.as_deref().unwrap_or(&classify::Memory::NONE)
    }

    /// The classifier's memory, allocated on first use: only when the pass classifies.
    fn memory_mut(&mut self) -> &mut classify::Memory {
        self.memory.get_or_insert_default()
    }

    /// This endpoint's unwrapper, created with `base` as offset 0 if it does not exist yet.
    fn unwrapper(&mut self, base: SeqNum) -> &mut Unwrapper {
        self.unwrap.get_or_insert_with(|| Unwrapper::new(base))
    }
}

/// Analysis state of one connection (its index is where the engine keeps it: 8 bytes fewer
/// took it to a smaller allocator size class, `docs/performance.md`, *concurrent*).
#[derive(Debug, Default)]
pub struct Connection {
    half: [Half; 2],
    last_ts_ns: u64,
    packets: u64,
}

impl Connection {
    /// A new connection, before its first segment.
    pub fn new() -> Self {
        Connection::default()
    }

    /// Whether a FIN was seen both ways or a RST either way.
    pub fn closed(&self) -> bool {
        self.half.iter().any(|h| h.has(Bits::RST_SEEN)) || self.half.iter().all(|h| h.has(Bits::FIN_SEEN))
    }

    /// Asks for the memory of both directions' outstanding state to be loaded ([`crate::hint`]),
    /// or with `deep` that of their first and last unacknowledged ranges, found through it (so
    /// a step later, once it is in the caches). A hint: it changes nothing.
    #[inline]
    pub fn prefetch(&self, deep: bool) {
        for o in self.half.iter().filter_map(|h| h.out.as_deref()) {
            if deep {
                o.unacked.front().into_iter().chain(o.unacked.back()).for_each(|s| crate::hint::prefetch(s));
            } else {
                crate::hint::prefetch_all(o);
            }
        }
    }

    /// Frees the outstanding state, range sets and rare box that hold nothing (an idle
    /// connection then carries none).
    /// Once both sides have closed, TSvals still awaiting an echo will never get one. Called
    /// when the connection closes and by the engine's periodic sweep, not per packet: a bulk
    /// transfer empties and refills its TSval queue on every ACK.
    pub fn release(&mut self) {
        let closed = self.closed();
        for h in &mut self.half {
            if let Some(o) = &mut h.out {
                if closed && o.unacked.is_empty() {
                    o.ts_pending.clear();
                }
                if o.is_empty() {
                    h.out = None;
                }
            }
            if let Some(r) = h.rare.as_deref_mut() {
                if r.ranges.as_deref().is_some_and(Ranges::is_empty) {
                    r.ranges = None;
                }
                if r.is_empty() {
                    h.rare = None;
                }
            }
        }
    }

    /// Time of the last packet.
    pub fn last_ts_ns(&self) -> u64 {
        self.last_ts_ns
    }

    /// Whether `seg`, coming in direction `dir` at `ts_ns`, starts a new connection on this
    /// 4-tuple instead of continuing this one.
    ///
    /// - A SYN without ACK whose ISN differs from this endpoint's earlier SYN (port reuse,
    ///   as Wireshark's `reused_ports`), or a SYN on a connection that had no handshake at all.
    /// - After more than `idle_split_ns` of silence: if the connection was closed, the segment
    ///   is a SYN, or its sequence number is over 2^24 from where the endpoint left off (tcptrace
    ///   splits on idle time alone; a long-lived idle session that resumes is one connection).
    pub fn splits_on(&self, seg: &Segment<'_>, dir: Dir, ts_ns: u64, settings: &Settings) -> Option<SplitReason> {
        let h = &self.half[dir.idx()];
        let peer = &self.half[dir.rev().idx()];
        if seg.flags.syn() && !seg.flags.ack() {
            match h.isn() {
                Some(isn) if isn != seg.seq => return Some(SplitReason::NewIsn),
                None if !peer.has(Bits::SYN_SEEN) && self.packets > 0 => return Some(SplitReason::NewIsn),
                _ => {}
            }
        }
        if ts_ns.saturating_sub(self.last_ts_ns) > settings.idle_split_ns {
            let far = match (h.unwrap, h.snd_max.get()) {
                (Some(u), Some(m)) => (u.off(seg.seq) - m).abs() > 1 << 24,
                _ => false,
            };
            if self.closed() || seg.flags.syn() || far {
                return Some(SplitReason::IdleGap);
            }
        }
        None
    }

    /// Analyses one segment of this connection sent at `at` (its direction, file, frame, time).
    pub fn on_segment<S: Sink>(&mut self, seg: &Segment<'_>, at: At, settings: &Settings, sink: &mut S) {
        let At { dir, frame, ts_ns, .. } = at;
        let flags = seg.flags;
        let (syn, fin, rst) = (flags.syn() as i64, flags.fin() as i64, flags.rst());
        let len = seg.payload_len;
        let (me, peer) = split(&mut self.half, dir);

        handshake::on_segment(me, peer, seg, settings);

        // The sender's view: where the segment sits in this direction's sequence space.
        let start = me.unwrapper(seg.seq).advance(seg.seq);
        let end = start + syn + len as i64 + fin;
        let snd_max = me.snd_max.get_or_set(start);
        let probed =
            probe::classify(me, peer, (flags.syn(), flags.fin(), rst), len, start, snd_max, &at, settings, sink);
        let found = retransmission::on_data(
            me,
            peer,
            seg,
            (start, end, snd_max),
            (syn, flags.fin()),
            probed,
            (ts_ns, frame),
            &at,
            &settings.classify,
            sink,
        );
        if S::CLASSIFY {
            me.memory_mut().sent(seg, (start, end), ts_ns, frame);
        }
        // The largest segment (`acks`: what a full segment is); a max, not a branch.
        me.acks.largest = me.acks.largest.max(len);
        me.bits.or(Bits::FIN_SEEN, flags.fin());
        me.bits.or(Bits::RST_SEEN, rst);

        // The receiver's view: what this segment says about the peer's data.
        let mut ack_off = None;
        let spoke = me.has(Bits::PEER_SPOKE);
        me.bits.set(Bits::PEER_SPOKE, false);
        peer.bits.set(Bits::PEER_SPOKE, true);
        if flags.ack() {
            let a = peer.unwrapper(seg.ack).advance(seg.ack);
            ack_off = Some(a);
            if !scoreboard::on_ack(peer, seg, a, &at, sink) {
                acks::on_stale(me, seg, spoke, &at, sink);
            }
            scoreboard::on_sack(peer, seg, a, &at, sink);
        }
        wscale::on_segment(me, peer, seg, (start, ack_off), &at, sink);
        window::on_dup_ack(me, peer, seg, (start, snd_max), ack_off, &at, sink);
        let (win_bytes, shift) = window::on_window(me, seg, ack_off, &at, sink);
        rtt::on_timestamps(me, peer, seg, &at, sink);
        let in_flight = scoreboard::in_flight(me, len);

        me.last_ack = seg.ack;
        me.last_win_raw = seg.win_raw;
        me.bits.set(Bits::LAST, true);
        me.bits.set(Bits::LAST_WAS_PROBE, probed.0 || probed.1);
        self.last_ts_ns = ts_ns;
        self.packets += 1;
        if self.closed() {
            self.release();
        }

        sink.segment(&SegmentInfo {
            at,
            flags,
            seq_off: start,
            seq: seg.seq,
            ack: seg.ack,
            len,
            new_bytes: found.new_bytes,
            rexmit_bytes: found.rexmit_bytes,
            is_rexmit: found.is_rexmit,
            truncated_bytes: seg.truncated_bytes(),
            ack_off,
            win_bytes,
            wscale: shift,
            in_flight,
            sack_blocks: seg.options.sack_len,
            tsval: seg.options.timestamps.map(|(v, _)| v),
            ip_id: seg.ip_id,
            ttl: seg.ttl,
            mss: seg.options.mss,
            wscale_opt: seg.options.wscale,
            sack_permitted: seg.options.sack_permitted,
            hdr_len: seg.hdr_len,
        });
    }
}

/// The two halves as (this endpoint, its peer).
fn split(half: &mut [Half; 2], dir: Dir) -> (&mut Half, &mut Half) {
    let [a, b] = half;
    match dir {
        Dir::AtoB => (a, b),
        Dir::BtoA => (b, a),
    }
}

/// Warns, once per direction and structure (`bit`, one of [`Bits`]' `PARTIAL_*`), that `what`
/// hit its capacity.
fn partial<S: Sink>(done: &mut Bits, bit: u16, what: &'static str, at: &At, sink: &mut S) {
    if !done.has(bit) {
        done.set(bit, true);
        sink.event(at, &Event::AnalysisPartial { what });
    }
}

#[cfg(test)]
mod tests;

//! Damaged captures: telling a record that cannot be right from a good one, and finding the
//! next good one after it.
//!
//! A classic pcap file has no framing but the record lengths: one wrong length and every later
//! header is read from the wrong place. A record is accepted only when its header is plausible
//! (captured length within the bound and not above the original length, an original length
//! that is not zero) *and* so is the header right after it (or the file ends there): a length
//! damaged into another plausible one sends the next header into the middle of a packet, which
//! is then almost never plausible. pcapng blocks carry their length twice, so a block is checked
//! on its own. When a record or block fails, the reader scans forward a byte at a time for the
//! next offset where [`CHAIN`] records (or [`CHAIN_NG`] blocks) in a row pass stricter checks (timestamps
//! close to each other and to the last good record, a fraction in range, a known block type),
//! and goes on from there; the bytes skipped are a [`Damage`]. These checks run only after a
//! record failed: the per-record path adds a few comparisons.

use std::fmt;

use super::{CaptureError, CaptureReader, Framing, MAX_TS_NS, Record};

/// pcap records in a row that must be plausible where reading resumes, fewer only when the
/// file ends right after them.
pub(super) const CHAIN: usize = 4;
/// pcapng blocks in a row, likewise: a block carries its length at both ends, so two blocks
/// that check out are already far from chance (and more would lose the good blocks between
/// damage close together).
const CHAIN_NG: usize = 2;
/// Largest captured length of a pcap record when the file's snaplen is smaller (Wireshark's
/// limit for ordinary link types).
pub(super) const MAX_CAPLEN: u32 = 262_144;
/// Largest original length believed (GSO/BIG TCP frames reach hundreds of kB, not 16 MB).
pub(super) const MAX_ORIG_LEN: u32 = 1 << 24;
/// Largest pcapng block believed (a packet block's data is bounded as a pcap record's; name
/// resolution and custom blocks can be larger, not this large).
pub(super) const MAX_BLOCK: u32 = 1 << 24;
/// Where reading resumes, consecutive records are at most this many seconds apart.
const CHAIN_JUMP_S: u64 = 86_400;
/// After a record whose length is not confirmed otherwise, a next record further away than
/// this in time must be followed by a plausible header too (a damaged timestamp in an intact
/// record, or captures concatenated years apart, are; a header read from a wrong place is not).
const NEXT_JUMP_S: u64 = 366 * 86_400;

/// A record whose time lies more than this (ns) outside the span from the time of the record
/// before it to the record's after it has a damaged timestamp: a capture is in time order but
/// for small steps, so an intact record lies between its neighbours (a lone keepalive between
/// two idle minutes too), and a real jump (a clock step, files put together) is followed by the
/// records after it. A random byte in the seconds moves them by more than this 96 times in 100.
pub(super) const TIME_OUTLIER_NS: u64 = 10_000_000_000;

/// How far after a record whose time is suspect, and after which damage begins, the record
/// reading will go on from is looked for (bytes).
const TIME_SCAN: usize = 1 << 16;

/// A stretch of a file that was skipped because its bytes could not be records.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Damage {
    /// Byte offset of the first byte skipped (in the decompressed file).
    pub start: u64,
    /// Byte offset where reading resumed (the file's end if it did not).
    pub end: u64,
    /// Why the record (block) at `start` could not be right.
    pub reason: String,
    /// Records read after it, up to the next damage or the end of the file.
    pub records_after: u64,
    /// The file it is in, when the summary is a trace's of several files (a ring's, summed by
    /// [`crate::pass::FileSummary::sum`]); `None` in a file's own summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<std::path::PathBuf>,
}

impl Damage {
    /// One line for a person: `bytes A..B corrupt (reason), skipped; N records read after it`,
    /// or `at byte A: corrupt (reason), nothing skipped; ...` when the damage cost no byte of
    /// the decompressed stream (compressed bytes after the last gzip member).
    pub fn describe(&self) -> String {
        if self.start == self.end {
            return format!(
                "at byte {}: corrupt ({}), nothing skipped; {} records read after it",
                self.start, self.reason, self.records_after
            );
        }
        format!(
            "bytes {}..{} corrupt ({}), skipped; {} records read after it",
            self.start, self.end, self.reason, self.records_after
        )
    }
}

/// Why a record header cannot be right.
#[derive(Debug, Clone, Copy)]
pub(super) enum Fault {
    CapTooBig { caplen: u32, bound: u32 },
    CapAboveOrig { caplen: u32, orig: u32 },
    OrigZero,
    OrigTooBig(u32),
    Fraction(u32),
    TimeJump(u64),
    BlockLength(u32),
    BlockType(u32),
    TrailingLength { lead: u32, trail: u32 },
    Unparsable,
    EpbCaplen(u32),
    PastEnd { length: u64 },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Fault::CapTooBig { caplen, bound } => write!(f, "captured length {caplen} above the {bound}-byte bound"),
            Fault::CapAboveOrig { caplen, orig } => {
                write!(f, "captured length {caplen} above the original length {orig}")
            }
            Fault::OrigZero => write!(f, "original length 0"),
            Fault::OrigTooBig(n) => write!(f, "original length {n}"),
            Fault::Fraction(n) => write!(f, "timestamp fraction {n} out of range"),
            Fault::TimeJump(s) => write!(f, "timestamp jumps more than {s} s"),
            Fault::BlockLength(n) => write!(f, "block length {n}"),
            Fault::BlockType(t) => write!(f, "unknown block type {t:#x}"),
            Fault::TrailingLength { lead, trail } => {
                write!(f, "trailing block length {trail} differs from the leading {lead}")
            }
            Fault::Unparsable => write!(f, "block does not parse"),
            Fault::EpbCaplen(n) => write!(f, "captured length {n} does not fit the packet block"),
            Fault::PastEnd { length } => write!(f, "length {length} runs past the end of the file"),
        }
    }
}

/// The four words every pcap record header starts with.
#[derive(Debug, Clone, Copy)]
pub(super) struct RecHeader {
    pub ts_sec: u32,
    pub frac: u32,
    pub caplen: u32,
    pub orig: u32,
}

impl RecHeader {
    /// The header at `at` in `w`, which must hold 16 bytes there.
    /// Once per record on the common path: one bounds check for the 16 bytes, not one a byte
    /// (out of line and checked byte by byte it cost intact files 10 % of the instructions).
    #[inline(always)]
    pub fn read(w: &[u8], at: usize, big_endian: bool) -> RecHeader {
        let b: [u8; 16] = w[at..at + 16].try_into().expect("a 16-byte slice");
        let word = |i: usize| {
            let x = [b[i], b[i + 1], b[i + 2], b[i + 3]];
            if big_endian { u32::from_be_bytes(x) } else { u32::from_le_bytes(x) }
        };
        RecHeader { ts_sec: word(0), frac: word(4), caplen: word(8), orig: word(12) }
    }

    /// Whether it can be a record's header (`bound`: the largest captured length): what
    /// [`RecHeader::fault`] checks, in two comparisons for the per-record path.
    #[inline(always)]
    pub fn plausible(self, bound: u32) -> bool {
        self.caplen <= self.orig.min(bound) && self.orig.wrapping_sub(1) < MAX_ORIG_LEN
    }

    /// Why it cannot be a record's header (`bound`: the largest captured length), if it cannot.
    #[inline]
    pub fn fault(self, bound: u32) -> Option<Fault> {
        if self.caplen > bound {
            Some(Fault::CapTooBig { caplen: self.caplen, bound })
        } else if self.caplen > self.orig {
            Some(Fault::CapAboveOrig { caplen: self.caplen, orig: self.orig })
        } else if self.orig == 0 {
            Some(Fault::OrigZero)
        } else if self.orig > MAX_ORIG_LEN {
            Some(Fault::OrigTooBig(self.orig))
        } else {
            None
        }
    }

    /// Why the header after a record of a length it does not confirm (neither the whole packet
    /// nor the snaplen) cannot be right: [`RecHeader::fault`], a fraction out of range, or a
    /// time more than [`NEXT_JUMP_S`] from the record's (`prev_s`; then
    /// [`CaptureReader::next_pcap_checked`] looks one header further before it decides). A
    /// length damaged by a few bytes puts this header a few bytes off, where its fields are
    /// shifted bytes of the real ones: the fraction takes a byte of the seconds or of the
    /// captured length as its top or bottom byte, and is out of range but for a few in 256.
    #[inline]
    pub fn next_fault(self, bound: u32, nanos: bool, prev_s: u32) -> Option<Fault> {
        if let Some(f) = self.fault(bound) {
            return Some(f);
        }
        if self.frac >= if nanos { 1_000_000_000 } else { 1_000_000 } {
            return Some(Fault::Fraction(self.frac));
        }
        if self.ts_sec.abs_diff(prev_s) as u64 > NEXT_JUMP_S {
            return Some(Fault::TimeJump(NEXT_JUMP_S));
        }
        None
    }

    /// [`RecHeader::fault`] plus what a header where reading resumes must also satisfy: a
    /// fraction in range and a time within [`CHAIN_JUMP_S`] of the record before (`prev_s`).
    fn strict_fault(self, bound: u32, nanos: bool, prev_s: Option<u64>) -> Option<Fault> {
        if let Some(f) = self.fault(bound) {
            return Some(f);
        }
        if self.frac >= if nanos { 1_000_000_000 } else { 1_000_000 } {
            return Some(Fault::Fraction(self.frac));
        }
        match prev_s {
            Some(p) if (self.ts_sec as u64).abs_diff(p) > CHAIN_JUMP_S => Some(Fault::TimeJump(CHAIN_JUMP_S)),
            _ => None,
        }
    }
}

/// Whether what follows the data of an enhanced packet block (`block`, the whole block) is
/// options an enhanced packet block may have, ending exactly at the block's end: a damaged
/// captured length leaves packet bytes there, which almost never are.
#[inline]
pub(super) fn epb_fits(block: &[u8], caplen: usize, big_endian: bool) -> bool {
    let Some(mut at) = 28usize.checked_add(caplen.next_multiple_of(4)) else { return false };
    let end = block.len().saturating_sub(4);
    while at < end {
        let Some(&[a, b, c, d]) = block.get(at..at + 4) else { return false };
        let (code, len) = if big_endian {
            (u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]))
        } else {
            (u16::from_le_bytes([a, b]), u16::from_le_bytes([c, d]))
        };
        if code == 0 {
            // opt_endofopt: empty, and the last thing in the block.
            return len == 0 && at + 4 == end;
        }
        // The options an enhanced packet block may have: comment, flags, hash, drop count,
        // packet id, queue, verdict, and the custom ones.
        if !matches!(code, 1..=7 | 2988 | 2989 | 19372 | 19373) {
            return false;
        }
        at += 4 + (len as usize).next_multiple_of(4);
    }
    at == end
}

/// pcapng block types a chain where reading resumes may hold.
pub(super) fn known_block(t: u32) -> bool {
    matches!(t, 0x0A0D0D0A | 1 | 2 | 3 | 4 | 5 | 6 | 9 | 0xA | 0xBAD | 0x4000_0BAD)
}

impl CaptureReader {
    /// The largest captured length a pcap record of this file may have.
    #[inline(always)]
    pub(super) fn caplen_bound(&self) -> u32 {
        self.caplen_bound
    }

    /// Whether a record's time needs a look at the record after it (off the per-record path):
    /// more than [`TIME_OUTLIER_NS`] from the record's before it.
    #[inline(always)]
    pub(super) fn time_suspect(&self, ts_ns: u64) -> bool {
        self.last_ts_ns != 0 && ts_ns.abs_diff(self.last_ts_ns) > TIME_OUTLIER_NS
    }

    /// The time of a record whose timestamp says `ts_ns`, the record after it saying `next_ns`
    /// (`None`: no record after it can be read): `ts_ns`, unless it lies outside the span of its
    /// neighbours' times by more than [`TIME_OUTLIER_NS`] and is not within that of the record
    /// after the next either (`after_next`: when the next one's timestamp is the damaged one);
    /// then the timestamp is damaged, counted in `bad_timestamps`, and the record is given the
    /// time of the record before it (its bytes are intact: leaving it out would make a hole in
    /// the connection's sequence space, a loss that did not happen).
    pub(super) fn checked_time(
        &mut self,
        ts_ns: u64,
        next_ns: Option<u64>,
        after_next: impl FnOnce(&mut Self) -> Result<Option<u64>, CaptureError>,
    ) -> Result<u64, CaptureError> {
        let last = self.last_ts_ns;
        let outside = |n: u64| {
            let (lo, hi) = (n.min(last), n.max(last));
            ts_ns.saturating_add(TIME_OUTLIER_NS) < lo || ts_ns > hi.saturating_add(TIME_OUTLIER_NS)
        };
        if !self.time_suspect(ts_ns) {
            return Ok(ts_ns);
        }
        // MAX_TS_NS is where pcapng times past 2262 are clamped: a damaged one, so the record
        // after it is the neighbour; so it is when the next block is not a packet.
        let mut after_next = Some(after_next);
        let next_ns = match next_ns {
            Some(MAX_TS_NS) | None => after_next.take().map_or(Ok(None), |f| f(self))?,
            n => n,
        };
        if !next_ns.is_some_and(outside) {
            return Ok(ts_ns);
        }
        if let Some(f) = after_next
            && f(self)?.is_some_and(|n| n != MAX_TS_NS && n.abs_diff(ts_ns) <= TIME_OUTLIER_NS)
        {
            return Ok(ts_ns);
        }
        self.bad_timestamps += 1;
        Ok(last)
    }

    /// A classic pcap record's time in ns (`len`: the record's, header included; `next`: the
    /// header after it, if in the file): a fraction out of range is a damaged timestamp,
    /// counted and given the record before's time (the first record keeps its seconds); a time
    /// far from both neighbours' is one too ([`CaptureReader::checked_time`]; when the header
    /// after it cannot be right, the record after the damage is its neighbour).
    pub(super) fn pcap_time(
        &mut self,
        h: RecHeader,
        len: usize,
        next: Option<RecHeader>,
        nanos: bool,
    ) -> Result<u64, CaptureError> {
        let (unit, max) = if nanos { (1, 1_000_000_000) } else { (1000, 1_000_000) };
        if h.frac >= max {
            self.bad_timestamps += 1;
            return Ok(if self.last_ts_ns != 0 { self.last_ts_ns } else { h.ts_sec as u64 * 1_000_000_000 });
        }
        let ts_ns = h.ts_sec as u64 * 1_000_000_000 + h.frac as u64 * unit;
        if !self.time_suspect(ts_ns) {
            return Ok(ts_ns);
        }
        let bound = self.caplen_bound();
        let hl = len - h.caplen as usize;
        let time = |n: RecHeader| {
            (n.frac < max && n.fault(bound).is_none()).then(|| n.ts_sec as u64 * 1_000_000_000 + n.frac as u64 * unit)
        };
        let next_ns = match next {
            Some(n) if time(n).is_some() => time(n),
            // The header after it cannot be right: the time of the record reading will go on
            // from.
            Some(_) => self.time_after_damage(len)?,
            None => None,
        };
        let big_endian = matches!(self.framing, Framing::Pcap { big_endian: true, .. });
        self.checked_time(ts_ns, next_ns, |r| {
            let Some(n) = next.filter(|&n| time(n).is_some()) else { return Ok(None) };
            let at = len + hl + n.caplen as usize;
            r.fill(at + hl)?;
            Ok(if r.window().len() >= at + hl { time(RecHeader::read(r.window(), at, big_endian)) } else { None })
        })
    }

    /// What the pcapng block `at` bytes into the window says of the time of a record before it
    /// whose time is suspect: `Some(Some(t))`, the time of an enhanced packet block of a
    /// described interface; `Some(None)`, nothing (the file ends, another block type);
    /// `None`, the block cannot be right.
    pub(super) fn next_block_time(&mut self, at: usize) -> Result<Option<Option<u64>>, CaptureError> {
        self.fill(at + 28)?;
        let Framing::Pcapng { big_endian } = self.framing else { return Ok(Some(None)) };
        let w = self.window();
        let word = |w: &[u8], i: usize| {
            let b: [u8; 4] = w.get(at + i..at + i + 4)?.try_into().ok()?;
            Some(if big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
        };
        let (Some(kind), Some(len)) = (word(w, 0), word(w, 4)) else { return Ok(Some(None)) };
        if kind == 0x0A0D0D0A {
            return Ok(Some(None));
        }
        if !known_block(kind) || len < 12 || len % 4 != 0 || len > MAX_BLOCK || (kind == 6 && len < 32) {
            return Ok(None);
        }
        self.fill(at + len as usize)?;
        let w = self.window();
        match word(w, len as usize - 4) {
            None => return Ok(Some(None)),
            Some(trail) if trail != len => return Ok(None),
            Some(_) => {}
        }
        if kind != 6 {
            return Ok(Some(None));
        }
        let (iface, hi, lo) = (word(w, 8), word(w, 12), word(w, 16));
        match (iface.and_then(|i| self.interfaces.get(i as usize)), hi, lo) {
            (Some(i), Some(hi), Some(lo)) => Ok(Some(Some(i.ts_ns(((hi as u64) << 32) | lo as u64)))),
            _ => Ok(None),
        }
    }

    /// The time of the record where reading will go on after damage that starts `at` bytes
    /// into the window (the end of a record whose time is suspect): that of the first chain
    /// ([`CHAIN`] records, [`CHAIN_NG`] blocks) within [`TIME_SCAN`] bytes, if it starts with a
    /// packet. Only for a suspect time after which damage begins: rare, and off the per-record
    /// path. The window is filled to a fixed length first, so that the answer does not depend
    /// on how the bytes arrive.
    pub(super) fn time_after_damage(&mut self, at: usize) -> Result<Option<u64>, CaptureError> {
        let ahead = CHAIN * (self.caplen_bound() as usize + 24) + 32;
        self.fill(at + TIME_SCAN + ahead)?;
        let Some(off) = (at + 1..at + TIME_SCAN).find(|&off| self.chain_in_window(off) == Some(true)) else {
            return Ok(None);
        };
        Ok(match self.framing {
            Framing::Pcap { big_endian, nanos, .. } => {
                let h = RecHeader::read(self.window(), off, big_endian);
                let unit = if nanos { 1 } else { 1000 };
                Some(h.ts_sec as u64 * 1_000_000_000 + h.frac as u64 * unit)
            }
            Framing::Pcapng { .. } => self.next_block_time(off)?.flatten(),
        })
    }

    /// Notes the bytes from `start` to the position as damaged.
    fn damaged(&mut self, start: u64, fault: String) {
        let d = Damage { start, end: self.pos, reason: fault, records_after: 0, file: None };
        self.damage.push((d, self.frame));
    }

    /// At the end of the bytes a gzip or zstd decompressor gave: if that end is a hole in its
    /// output (`decompress`), the bytes left before it (a record it cut) are skipped with
    /// those after it up to where records start again, as damage described by the
    /// decompressor, and `true` is returned to go on reading.
    pub(super) fn past_hole(&mut self) -> Result<bool, CaptureError> {
        let Some(why) = self.hole.as_ref().and_then(|h| h.take()) else { return Ok(false) };
        let start = self.pos;
        self.consume(self.window().len());
        self.source.eof = false;
        self.resync(0)?;
        self.damaged(start, why);
        Ok(true)
    }

    /// Every damaged stretch so far, with the records read after each.
    pub fn damage(&self) -> Vec<Damage> {
        let mut out: Vec<Damage> = self.damage.iter().map(|(d, _)| d.clone()).collect();
        for (i, d) in out.iter_mut().enumerate() {
            let until = self.damage.get(i + 1).map_or(self.frame, |(_, f)| *f);
            d.records_after = until - self.damage[i].1;
        }
        out
    }

    /// A classic pcap record, checked, on the general path: whatever
    /// [`CaptureReader::next_pcap_record`] leaves (a record not wholly in the window, the end
    /// of the file, a record that fails its checks, the modified format's longer header).
    pub(super) fn next_pcap_checked(&mut self) -> Result<Option<(usize, usize, Record<'static>)>, CaptureError> {
        let Framing::Pcap { big_endian, nanos, modified, link_type } = self.framing else { return Ok(None) };
        let hl = if modified { 24 } else { 16 };
        let bound = self.caplen_bound();
        loop {
            self.fill(hl)?;
            let avail = self.window().len();
            if avail == 0 {
                return Ok(None);
            }
            if avail < hl {
                return Err(CaptureError::Truncated { offset: self.pos, needed: hl - avail });
            }
            let h = RecHeader::read(self.window(), 0, big_endian);
            if let Some(f) = h.fault(bound) {
                let start = self.pos;
                self.resync(1)?;
                self.damaged(start, f.to_string());
                continue;
            }
            let len = hl + h.caplen as usize;
            self.fill(len + hl)?;
            let avail = self.window().len();
            if avail < len {
                // The file ends inside the record: a cut-off last record, unless good records
                // follow its header (then its length was wrong).
                let start = self.pos;
                if self.chain_after(1) {
                    self.resync(1)?;
                    self.damaged(start, Fault::PastEnd { length: h.caplen as u64 }.to_string());
                    continue;
                }
                return Err(CaptureError::Truncated { offset: start, needed: len - avail });
            }
            if avail >= len + hl
                && !self.whole_or_snapped(h)
                && let Some(f) = RecHeader::read(self.window(), len, big_endian).next_fault(bound, nanos, h.ts_sec)
                && !(matches!(f, Fault::TimeJump(_)) && self.framed_after(len, hl, big_endian, bound)?)
            {
                let start = self.pos;
                let at = start + len as u64;
                self.resync(1)?;
                self.damaged(start, format!("the record header after it, at byte {at}: {f}"));
                continue;
            }
            let next = (avail >= len + hl).then(|| RecHeader::read(self.window(), len, big_endian));
            let ts_ns = self.pcap_time(h, len, next, nanos)?;
            let (offset, start) = (self.pos, self.source.start + hl);
            self.consume(len);
            self.frame += 1;
            self.last_ts_ns = ts_ns;
            let rec = Record { ts_ns, data: &[], orig_len: h.orig, link_type, frame: self.frame, offset };
            return Ok(Some((start, h.caplen as usize, rec)));
        }
    }

    /// Whether the record whose header is at `at` in the window (plausible but for its time)
    /// is followed by a plausible header, or by the end of the file.
    fn framed_after(&mut self, at: usize, hl: usize, big_endian: bool, bound: u32) -> Result<bool, CaptureError> {
        let next = RecHeader::read(self.window(), at, big_endian);
        let after = at + hl + next.caplen as usize;
        self.fill(after + hl)?;
        let w = self.window();
        Ok(if w.len() >= after + hl {
            RecHeader::read(w, after, big_endian).plausible(bound)
        } else {
            self.at_eof() && w.len() == after
        })
    }

    /// Whether a record's length is believed without the header after it: it holds the whole
    /// packet or exactly the snaplen (a damaged length rarely lands on either), so a bad header
    /// after it is damage after it, not a sign that its own length is wrong.
    #[inline]
    pub(super) fn whole_or_snapped(&self, h: RecHeader) -> bool {
        h.caplen == h.orig || h.caplen == self.snaplen
    }

    /// Whether a chain starts somewhere in the window after its first `skip` bytes, the end of
    /// the file being in the window (no bytes are read or consumed).
    fn chain_after(&mut self, skip: usize) -> bool {
        (skip..self.window().len()).any(|off| self.chain_in_window(off) == Some(true))
    }

    /// Skips `skip` bytes and then every byte up to the next offset where a chain starts, or to
    /// the end of the file.
    fn resync(&mut self, skip: usize) -> Result<(), CaptureError> {
        self.fill(skip)?;
        self.consume(skip.min(self.window().len()));
        loop {
            // A chain needs at most CHAIN records of the largest size: read that far ahead.
            let ahead = CHAIN * (self.caplen_bound() as usize + 24) + 32;
            self.fill(ahead.min(1 << 22))?;
            if self.window().is_empty() {
                return Ok(());
            }
            let w = self.window().len();
            let reach = if self.at_eof() { w } else { w.saturating_sub(ahead.min(1 << 22)).max(1) };
            for off in 0..reach {
                if self.chain_in_window(off) == Some(true) {
                    self.consume(off);
                    return Ok(());
                }
            }
            self.consume(reach);
        }
    }

    /// Whether [`CHAIN`] records or [`CHAIN_NG`] blocks start at `off` in the window and pass the strict
    /// checks (fewer when the file ends right after them); `None` when the window ends first
    /// and the file goes on.
    fn chain_in_window(&self, off: usize) -> Option<bool> {
        match self.framing {
            Framing::Pcap { big_endian, nanos, modified, .. } => {
                let hl = if modified { 24 } else { 16 };
                self.pcap_chain(off, hl, big_endian, nanos)
            }
            Framing::Pcapng { big_endian } => self.pcapng_chain(off, big_endian),
        }
    }

    fn pcap_chain(&self, mut off: usize, hl: usize, big_endian: bool, nanos: bool) -> Option<bool> {
        let w = self.window();
        let bound = self.caplen_bound();
        // Consecutive records close in time; not compared with the last good record, whose
        // timestamp may be one of the damaged bytes.
        let mut prev = None;
        for i in 0..CHAIN {
            if w.len() < off + hl {
                return if self.at_eof() { Some(i > 0 && w.len() == off) } else { None };
            }
            let h = RecHeader::read(w, off, big_endian);
            if h.strict_fault(bound, nanos, prev).is_some() {
                return Some(false);
            }
            prev = Some(h.ts_sec as u64);
            off += hl + h.caplen as usize;
        }
        if w.len() < off {
            return if self.at_eof() { Some(false) } else { None };
        }
        Some(true)
    }

    fn pcapng_chain(&self, mut off: usize, big_endian: bool) -> Option<bool> {
        let w = self.window();
        let word = |i: usize, be: bool| {
            let b: [u8; 4] = w.get(i..i + 4)?.try_into().ok()?;
            Some(if be { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
        };
        let mut be = big_endian;
        for i in 0..CHAIN_NG {
            if w.len() < off + 12 {
                return if self.at_eof() { Some(i > 0 && w.len() == off) } else { None };
            }
            let t = word(off, be)?;
            if t == 0x0A0D0D0A {
                // A section header gives its own byte order.
                be = match w.get(off + 8..off + 12)? {
                    [0x1a, 0x2b, 0x3c, 0x4d] => true,
                    [0x4d, 0x3c, 0x2b, 0x1a] => false,
                    _ => return Some(false),
                };
            } else if !known_block(t) {
                return Some(false);
            }
            let len = word(off + 4, be)?;
            if len < 12 || len % 4 != 0 || len > MAX_BLOCK {
                return Some(false);
            }
            let len = len as usize;
            if w.len() < off + len {
                return if self.at_eof() { Some(false) } else { None };
            }
            if word(off + len - 4, be)? as usize != len {
                return Some(false);
            }
            if t == 6 {
                // An enhanced packet block: a described interface, its data within the block.
                let (iface, caplen) = (word(off + 8, be)?, word(off + 20, be)? as usize);
                let ok = len >= 32
                    && epb_fits(&w[off..off + len], caplen, be)
                    && (self.interfaces.is_empty() || (iface as usize) < self.interfaces.len());
                if !ok {
                    return Some(false);
                }
            }
            off += len;
        }
        Some(true)
    }

    /// The header of the pcapng block at the window's start, if it cannot be right: an unknown
    /// type is let through (pcapng allows new types), a length that is not a multiple of 4,
    /// too small or too large is not, nor a length that runs past a file that goes on.
    pub(super) fn pcapng_fault(&self, big_endian: bool) -> Option<Fault> {
        let w = self.window();
        let b: [u8; 8] = w.get(..8)?.try_into().ok()?;
        let word = |i: usize| {
            let b = [b[i], b[i + 1], b[i + 2], b[i + 3]];
            if big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) }
        };
        if word(0) == 0x0A0D0D0A {
            return None;
        }
        let len = word(4);
        if len < 12 || len % 4 != 0 || len > MAX_BLOCK {
            return Some(Fault::BlockLength(len));
        }
        if word(0) == 6 && len < 32 {
            return Some(Fault::BlockLength(len));
        }
        let block = w.get(..len as usize)?;
        let t: [u8; 4] = block[block.len() - 4..].try_into().ok()?;
        let trail = if big_endian { u32::from_be_bytes(t) } else { u32::from_le_bytes(t) };
        if trail != len {
            return Some(Fault::TrailingLength { lead: len, trail });
        }
        if word(0) == 6 {
            let c: [u8; 4] = block[20..24].try_into().ok()?;
            let caplen = if big_endian { u32::from_be_bytes(c) } else { u32::from_le_bytes(c) };
            if !epb_fits(block, caplen as usize, big_endian) {
                return Some(Fault::EpbCaplen(caplen));
            }
        }
        None
    }

    /// After a pcapng block at the position failed (`fault`): skips to the next chain of good
    /// blocks and notes the damage.
    pub(super) fn pcapng_resync(&mut self, fault: Fault) -> Result<(), CaptureError> {
        let start = self.pos;
        self.resync(1)?;
        self.damaged(start, fault.to_string());
        Ok(())
    }

    /// At the end of the file inside a pcapng block at the position: whether good blocks
    /// follow its start (its length was wrong, not the file cut).
    pub(super) fn pcapng_cut_is_corrupt(&mut self) -> bool {
        self.chain_after(1)
    }
}

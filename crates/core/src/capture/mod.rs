//! Reading capture files: pcap (µs and ns, either byte order) and pcapng, plain, gzip or zstd,
//! from a file or standard input.
//!
//! This layer knows files and link types, nothing about TCP. [`CaptureReader::next_record`]
//! yields [`Record`]s: a timestamp converted once to nanoseconds, the captured bytes, the
//! original length and the link type. Block decoding is pcap-parser's; this module adds what an
//! analyser needs around it: byte offsets for every error, a clean end told apart from a cut-off
//! last record, and one bounded buffer whatever the file size.
//!
//! ```no_run
//! use tcpscope_core::capture::CaptureReader;
//! let mut r = CaptureReader::open("trace.pcap".as_ref()).unwrap();
//! while let Some(rec) = r.next_record().unwrap() {
//!     println!("{} {} bytes", rec.ts_ns, rec.data.len());
//! }
//! ```

mod decompress;
pub mod index;
mod resync;
pub mod set;
pub mod time;
mod write;

pub use index::{Index, IndexBuilder};
pub use resync::Damage;
pub use set::{Cursor, SetError, SetReader, TraceSet};
pub use time::{TimeSpec, Window};
pub use write::PcapWriter;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use pcap_parser::pcapng::{self, Block};
use pcap_parser::{PcapError, nom, pcap};

/// One captured packet, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Capture time, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// The captured bytes (at most the snapshot length).
    pub data: &'a [u8],
    /// The packet's length on the wire; larger than `data.len()` when the snaplen cut it.
    pub orig_len: u32,
    /// LINKTYPE_* value (tcpdump.org link-layer header types) of the interface it came from.
    pub link_type: u32,
    /// 1-based frame number within the file, as Wireshark's `frame.number`.
    pub frame: u64,
    /// Byte offset of the record's header in the (decompressed) file.
    pub offset: u64,
}

/// What went wrong reading a capture. Every variant names the byte offset; the file name is
/// added by the caller that knows it ([`FileError`]).
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file does not start with a pcap or pcapng magic number.
    #[error("not a pcap or pcapng capture (first bytes {magic:02x?})")]
    NotACapture {
        /// The first bytes found.
        magic: Vec<u8>,
    },
    /// The file ends inside a record: normal for a capture that was still being written.
    #[error("file ends inside a record at byte offset {offset} ({needed} more bytes needed)")]
    Truncated {
        /// Offset of the incomplete record.
        offset: u64,
        /// How many more bytes the record needed, at least.
        needed: usize,
    },
    /// A block's contents make no sense (bad length, bad magic...).
    #[error("corrupt {what} at byte offset {offset}")]
    Corrupt {
        /// What could not be parsed.
        what: String,
        /// Offset of the bad block.
        offset: u64,
    },
    /// The operating system failed to read.
    #[error("read error at byte offset {offset}: {source}")]
    Io {
        /// Offset reached.
        offset: u64,
        /// The I/O error.
        source: io::Error,
    },
}

impl CaptureError {
    /// The byte offset the error refers to (0 when it concerns the file as a whole).
    pub fn offset(&self) -> u64 {
        match self {
            CaptureError::NotACapture { .. } => 0,
            CaptureError::Truncated { offset, .. }
            | CaptureError::Corrupt { offset, .. }
            | CaptureError::Io { offset, .. } => *offset,
        }
    }
}

/// A [`CaptureError`] together with the file it happened in.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct FileError {
    /// The file ("-" for standard input).
    pub path: PathBuf,
    /// What happened.
    #[source]
    pub source: CaptureError,
}

/// How the bytes are compressed on disk, found from the magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Plain file.
    None,
    /// gzip (`.gz`), possibly several members.
    Gzip,
    /// Zstandard (`.zst`).
    Zstd,
}

/// The capture format, found from the magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Classic pcap (libpcap) format.
    Pcap,
    /// pcapng.
    Pcapng,
}

/// Where the bytes come from: a file, pipe or decompressor, read into a bounded window
/// `buf[start..end]` that is refilled on demand.
struct Source {
    reader: Box<dyn Read + Send>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

/// pcapng interface description, as much of it as timestamps and decoding need.
#[derive(Debug, Clone, Copy)]
struct Interface {
    link_type: u32,
    /// Timestamp units per second (`if_tsresol`).
    units_per_sec: u64,
    /// Seconds added to every timestamp (`if_tsoffset`).
    offset_s: i64,
    snaplen: u32,
    /// ns per timestamp unit when a unit is a whole number of ns (µs, ns, ms...), else 0.
    ns_per_unit: u64,
}

impl Interface {
    fn new(link_type: u32, units_per_sec: u64, offset_s: i64, snaplen: u32) -> Self {
        let ns_per_unit =
            if units_per_sec > 0 && 1_000_000_000 % units_per_sec == 0 { 1_000_000_000 / units_per_sec } else { 0 };
        Interface { link_type, units_per_sec, offset_s, snaplen, ns_per_unit }
    }

    /// A timestamp in ns since the epoch: a multiplication for the usual units, the 128-bit
    /// division of [`ticks_to_ns`] (the same answer) otherwise.
    #[inline]
    fn ts_ns(&self, ticks: u64) -> u64 {
        if self.ns_per_unit != 0
            && self.offset_s == 0
            && let Some(ns) = ticks.checked_mul(self.ns_per_unit)
            && ns <= MAX_TS_NS
        {
            return ns;
        }
        ticks_to_ns(ticks, self.units_per_sec, self.offset_s)
    }
}

#[derive(Debug, Clone, Copy)]
enum Framing {
    Pcap { big_endian: bool, nanos: bool, modified: bool, link_type: u32 },
    Pcapng { big_endian: bool },
}

/// Streaming reader over one capture file.
///
/// Invariant: `pos` is the offset, in the decompressed file, of the first byte not yet
/// consumed; it corresponds to `source.buf[source.start]`.
pub struct CaptureReader {
    source: Source,
    framing: Framing,
    interfaces: Vec<Interface>,
    pos: u64,
    frame: u64,
    last_ts_ns: u64,
    done: bool,
    compression: Compression,
    /// A second handle on a plain file (same open file description, so the same offset), used
    /// to seek; `None` for compressed input and standard input.
    seek_handle: Option<File>,
    /// pcapng section header blocks read so far.
    sections: u64,
    /// Count of records whose nanosecond/microsecond fraction was out of range.
    pub bad_timestamps: u64,
    /// Count of pcapng packets naming an interface that was never described.
    pub unknown_interface: u64,
    /// A pcap file's snapshot length (0 for pcapng).
    snaplen: u32,
    /// The largest captured length a pcap record may have: the snaplen, at least
    /// [`resync::MAX_CAPLEN`].
    caplen_bound: u32,
    /// Stretches skipped as damaged, each with the records read before it.
    damage: Vec<(Damage, u64)>,
    /// Where a gzip or zstd decompressor says its output has a hole (`decompress`).
    hole: Option<decompress::Hole>,
}

const STREAM_CHUNK: usize = 1 << 16;
/// Largest record accepted (pcapng blocks included); larger lengths are corruption.
const MAX_RECORD: usize = 1 << 30;

impl CaptureReader {
    /// Opens a file; `-` means standard input. Compression and format are detected from the
    /// magic numbers, not the file name.
    pub fn open(path: &Path) -> Result<CaptureReader, CaptureError> {
        if path.as_os_str() == "-" {
            return Self::from_reader(Box::new(io::stdin()));
        }
        let mut file = File::open(path).map_err(|source| CaptureError::Io { offset: 0, source })?;
        let mut magic = [0u8; 4];
        let n = read_up_to(&file, &mut magic).map_err(|source| CaptureError::Io { offset: 0, source })?;
        file.seek(SeekFrom::Start(0)).map_err(|source| CaptureError::Io { offset: 0, source })?;
        if compression_of(&magic[..n]) == Compression::None {
            // Plain file: read straight into the record buffer (no second buffer, no mmap:
            // memory stays at one chunk whatever the file size).
            let seek_handle = file.try_clone().ok();
            let mut r = Self::with_source(Self::stream(Box::new(file)), Compression::None)?;
            r.seek_handle = seek_handle;
            return Ok(r);
        }
        Self::from_reader(Box::new(file))
    }

    /// Reads from any byte stream (compressed or not).
    pub fn from_reader(reader: Box<dyn Read + Send>) -> Result<CaptureReader, CaptureError> {
        let mut br = BufReader::with_capacity(64 * 1024, reader);
        let head = br.fill_buf().map_err(|source| CaptureError::Io { offset: 0, source })?;
        let compression = compression_of(head);
        let hole = decompress::Hole::default();
        let inner: Box<dyn Read + Send> = match compression {
            Compression::None => Box::new(br),
            Compression::Gzip | Compression::Zstd => Box::new(
                decompress::Decompressor::new(Box::new(br), compression == Compression::Zstd, hole.clone())
                    .map_err(|source| CaptureError::Io { offset: 0, source })?,
            ),
        };
        let mut r = Self::with_source(Self::stream(inner), compression)?;
        if compression != Compression::None {
            r.hole = Some(hole);
        }
        Ok(r)
    }

    fn stream(reader: Box<dyn Read + Send>) -> Source {
        Source { reader, buf: vec![0; STREAM_CHUNK], start: 0, end: 0, eof: false }
    }

    /// Reads from bytes in memory (tests, fuzzing).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<CaptureReader, CaptureError> {
        Self::from_reader(Box::new(io::Cursor::new(bytes)))
    }

    fn with_source(source: Source, compression: Compression) -> Result<CaptureReader, CaptureError> {
        let mut r = CaptureReader {
            source,
            framing: Framing::Pcapng { big_endian: false },
            interfaces: Vec::new(),
            pos: 0,
            frame: 0,
            last_ts_ns: 0,
            done: false,
            compression,
            seek_handle: None,
            sections: 0,
            bad_timestamps: 0,
            unknown_interface: 0,
            snaplen: 0,
            caplen_bound: resync::MAX_CAPLEN,
            damage: Vec::new(),
            hole: None,
        };
        r.fill(24)?;
        let head = r.window();
        let magic: Vec<u8> = head[..head.len().min(4)].to_vec();
        match magic.as_slice() {
            [0x0a, 0x0d, 0x0d, 0x0a] => {
                // The section header is read by next_record like any later section header.
                r.framing = Framing::Pcapng { big_endian: false };
            }
            [0xd4, 0xc3, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0xc3, 0xd4]
            | [0x4d, 0x3c, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0x3c, 0x4d]
            | [0x34, 0xcd, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0xcd, 0x34] => {
                let (rest, h) = match pcap::parse_pcap_header(head) {
                    Ok(v) => v,
                    Err(nom::Err::Incomplete(_)) | Err(_) if head.len() < 24 => {
                        return Err(CaptureError::Truncated { offset: 0, needed: 24 - head.len() });
                    }
                    Err(_) => {
                        return Err(CaptureError::Corrupt { what: "pcap file header".into(), offset: 0 });
                    }
                };
                let consumed = head.len() - rest.len();
                r.snaplen = h.snaplen;
                r.caplen_bound = h.snaplen.clamp(resync::MAX_CAPLEN, resync::MAX_BLOCK);
                r.framing = Framing::Pcap {
                    big_endian: h.is_bigendian(),
                    nanos: h.is_nanosecond_precision(),
                    modified: h.is_modified_format(),
                    // The upper bits carry FCS-length flags (pcap spec, "LinkType and additional
                    // information"); the link type is the low 16 bits.
                    link_type: h.network.0 as u32 & 0xffff,
                };
                r.consume(consumed);
            }
            _ => return Err(CaptureError::NotACapture { magic }),
        }
        Ok(r)
    }

    /// The capture format.
    pub fn format(&self) -> Format {
        match self.framing {
            Framing::Pcap { .. } => Format::Pcap,
            Framing::Pcapng { .. } => Format::Pcapng,
        }
    }

    /// A classic pcap file's snapshot length (`None` for pcapng: each interface has its own).
    pub fn snaplen(&self) -> Option<u32> {
        matches!(self.framing, Framing::Pcap { .. }).then_some(self.snaplen)
    }

    /// How the file was compressed.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Bytes of the (decompressed) file consumed so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Positions the reader so that the next record returned is the one whose header starts at
    /// byte `offset`, numbered `frame`. `offset` must be a record boundary this file's reader
    /// reported (an [`Index`] entry); the pcapng interfaces in force there must be those
    /// described before the first packet (what [`Index::seekable`] checks).
    ///
    /// A plain file seeks; a compressed stream can only read forward, so an offset behind the
    /// current position is an error (reopen the file instead).
    pub fn seek_to(&mut self, offset: u64, frame: u64) -> Result<(), CaptureError> {
        if matches!(self.framing, Framing::Pcapng { .. }) && self.interfaces.is_empty() && self.frame == 0 {
            // Read the section and interface blocks that precede the first packet.
            let _ = self.next_inner()?;
        }
        if self.seek_handle.is_none() || offset == self.pos {
            if offset < self.pos {
                return Err(CaptureError::Io {
                    offset,
                    source: io::Error::other("cannot seek backwards in a compressed stream"),
                });
            }
            while self.pos < offset {
                if self.next_inner()?.is_none() {
                    return Err(CaptureError::Truncated { offset, needed: 1 });
                }
            }
        } else if let Some(f) = self.seek_handle.as_mut() {
            f.seek(SeekFrom::Start(offset)).map_err(|source| CaptureError::Io { offset, source })?;
            self.source.start = 0;
            self.source.end = 0;
            self.source.eof = false;
            self.pos = offset;
        }
        self.frame = frame.saturating_sub(1);
        self.done = false;
        Ok(())
    }

    /// The next packet, `Ok(None)` at a clean end of file. After an error the reader is finished
    /// and returns `Ok(None)`; everything returned before the error is valid.
    // Inlined, the common case's record goes to the caller in registers, not through memory.
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, CaptureError> {
        if !self.done
            && let Some((start, len, rec)) = self.next_pcap_record().or_else(|| self.next_epb_record())
        {
            return Ok(Some(Record { data: &self.buffer()[start..start + len], ..rec }));
        }
        self.next_record_slow()
    }

    /// [`CaptureReader::next_record`] for everything but a classic pcap record or a pcapng
    /// enhanced packet block in the window.
    #[inline(never)]
    fn next_record_slow(&mut self) -> Result<Option<Record<'_>>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        let mut next = self.next_inner();
        // The end of a decompressor's output may be a hole in it: reading goes on after.
        while matches!(next, Ok(None) | Err(CaptureError::Truncated { .. })) && self.past_hole()? {
            next = self.next_inner();
        }
        match next {
            Ok(Some((start, len, rec))) => {
                let data = &self.buffer()[start..start + len];
                Ok(Some(Record { data, ..rec }))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        }
    }

    /// The common case, a classic pcap record wholly in the window, read without the general
    /// machinery below: the record header is four fixed integers, and going through
    /// pcap-parser's result types, the block enum and [`Action`] cost ~15 instructions a record
    /// more (2.5 % of the reading thread on bulk). The record is taken only when it and the
    /// header after it pass [`resync::RecHeader::fault`]'s checks (`resync` says why). `None`
    /// sends the caller to [`CaptureReader::next_inner`] (other formats, a record or the next
    /// header not yet in the window, the end of the file, a record failing its checks), which
    /// reads the same record the same way.
    #[inline]
    fn next_pcap_record(&mut self) -> Option<(usize, usize, Record<'static>)> {
        let Framing::Pcap { big_endian, nanos, modified: false, link_type } = self.framing else { return None };
        let w = self.window();
        if w.len() < 16 {
            return None;
        }
        let bound = self.caplen_bound();
        let h = resync::RecHeader::read(w, 0, big_endian);
        let caplen = h.caplen as usize;
        if !h.plausible(bound)
            || w.len() < 32 + caplen
            || (!self.whole_or_snapped(h)
                && resync::RecHeader::read(w, 16 + caplen, big_endian).next_fault(bound, nanos, h.ts_sec).is_some())
        {
            return None;
        }
        // A damaged timestamp (resync::TIME_OUTLIER_NS) is for the general path to decide.
        let (unit, max) = if nanos { (1, 1_000_000_000) } else { (1000, 1_000_000) };
        let ts_ns = h.ts_sec as u64 * 1_000_000_000 + h.frac as u64 * unit;
        if h.frac >= max || self.time_suspect(ts_ns) {
            return None;
        }
        let offset = self.pos;
        let start = self.source.start + 16;
        self.consume(16 + caplen);
        self.frame += 1;
        self.last_ts_ns = ts_ns;
        Some((start, caplen, Record { ts_ns, data: &[], orig_len: h.orig, link_type, frame: self.frame, offset }))
    }

    /// The common case of a pcapng file (Wireshark's and dumpcap's format), an enhanced packet
    /// block wholly in the window, read as [`CaptureReader::next_pcap_record`] reads a pcap
    /// record: pcap-parser's general block parser (the block enum, its options collected into a
    /// `Vec`) and a 128-bit division for the timestamp made pcapng files ~60 % slower to read
    /// than the same packets in pcap. Accepts exactly the blocks pcap-parser accepts (its
    /// options are parsed leniently and never reject a block; ours are skipped) and reads them
    /// the same way; anything else (another block, a length that does not check out, an unknown
    /// interface) returns `None`, and [`CaptureReader::next_inner`] deals with it.
    #[inline]
    fn next_epb_record(&mut self) -> Option<(usize, usize, Record<'static>)> {
        const EPB: u32 = 6;
        let Framing::Pcapng { big_endian } = self.framing else { return None };
        let w = self.window();
        let word = |i: usize| {
            let b: [u8; 4] = w.get(i..i + 4)?.try_into().ok()?;
            Some(if big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
        };
        if word(0)? != EPB {
            return None;
        }
        let total = word(4)? as usize;
        let caplen = word(20)?;
        // pcap-parser: a block of at least 32 bytes, the data padded to 4 bytes within it, the
        // length repeated at its end.
        if total < 32 || total > w.len() || caplen >= u32::MAX - 4 {
            return None;
        }
        let caplen = caplen as usize;
        if caplen.next_multiple_of(4) > total - 32 || word(total - 4)? as usize != total {
            return None;
        }
        // Options after the data (or a captured length damaged short): they must check out.
        if caplen.next_multiple_of(4) != total - 32 && !resync::epb_fits(&w[..total], caplen, big_endian) {
            return None;
        }
        let iface = self.interfaces.get(word(8)? as usize)?;
        let ts_ns = iface.ts_ns(((word(12)? as u64) << 32) | word(16)? as u64);
        if self.time_suspect(ts_ns) {
            return None;
        }
        let (orig_len, link_type) = (word(24)?.max(caplen as u32), iface.link_type);
        let offset = self.pos;
        let start = self.source.start + 28;
        self.consume(total);
        self.frame += 1;
        self.last_ts_ns = ts_ns;
        Some((start, caplen, Record { ts_ns, data: &[], orig_len, link_type, frame: self.frame, offset }))
    }

    /// Finds the next packet; returns its data as a range of `buffer()` plus the other fields.
    fn next_inner(&mut self) -> Result<Option<(usize, usize, Record<'static>)>, CaptureError> {
        loop {
            let window = self.window();
            if window.is_empty() {
                if self.at_eof() {
                    return Ok(None);
                }
                self.fill(1)?;
                continue;
            }
            let offset = self.pos;
            let base = window.as_ptr() as usize;
            let Framing::Pcapng { big_endian } = self.framing else { return self.next_pcap_checked() };
            if let Some(fault) = self.pcapng_fault(big_endian) {
                self.pcapng_resync(fault)?;
                continue;
            }
            let window = self.window();
            let parsed = if window.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
                pcapng::parse_sectionheaderblock(window).map(|(rest, b)| (rest, Block::SectionHeader(b)))
            } else if big_endian {
                pcapng::parse_block_be(window)
            } else {
                pcapng::parse_block_le(window)
            };
            let parsed = parsed.map(|(rest, b)| (rest.len(), b));
            let needed = match &parsed {
                Err(nom::Err::Incomplete(needed)) => Some(match needed {
                    nom::Needed::Size(n) => n.get(),
                    nom::Needed::Unknown => 1,
                }),
                Err(nom::Err::Error(PcapError::Incomplete(n)) | nom::Err::Failure(PcapError::Incomplete(n))) => {
                    Some((*n).max(1))
                }
                _ => None,
            };
            if let Some(needed) = needed {
                if !self.at_eof() {
                    let want = self.window().len() + needed;
                    self.fill(want)?;
                    continue;
                }
                // The file ends inside the block: cut off, unless good blocks follow its start.
                if self.pcapng_cut_is_corrupt() {
                    let w = self.window();
                    let lead = [w[4], w[5], w[6], w[7]];
                    let length = if big_endian { u32::from_be_bytes(lead) } else { u32::from_le_bytes(lead) } as u64;
                    self.pcapng_resync(resync::Fault::PastEnd { length })?;
                    continue;
                }
                return Err(CaptureError::Truncated { offset, needed });
            }
            let (rest_len, parsed) = match parsed {
                Ok(v) => v,
                Err(_) => {
                    self.pcapng_resync(resync::Fault::Unparsable)?;
                    continue;
                }
            };
            let consumed = window.len() - rest_len;
            // Turn the borrowed block into owned facts before touching `self`.
            let action = match parsed {
                Block::SectionHeader(shb) => Action::Section { big_endian: shb.big_endian() },
                Block::InterfaceDescription(idb) => {
                    // pcap-parser 0.17 reads `if_tsoffset` little-endian in either byte
                    // order, and rejects every power-of-2 `if_tsresol` (its range check
                    // includes the flag bit): both taken from the raw values here.
                    let big_endian = matches!(self.framing, Framing::Pcapng { big_endian: true });
                    let offset_s = if big_endian { idb.if_tsoffset.swap_bytes() } else { idb.if_tsoffset };
                    let units = units_per_sec(idb.if_tsresol).unwrap_or(1_000_000);
                    Action::Interface(Interface::new(idb.linktype.0 as u32, units, offset_s, idb.snaplen))
                }
                Block::EnhancedPacket(epb) => match self.interfaces.get(epb.if_id as usize) {
                    Some(iface) => {
                        let ticks = ((epb.ts_high as u64) << 32) | epb.ts_low as u64;
                        let ts_ns = iface.ts_ns(ticks);
                        let start = epb.data.as_ptr() as usize - base;
                        let len = (epb.caplen as usize).min(epb.data.len());
                        Action::Packet {
                            start,
                            len,
                            ts_ns: Some(ts_ns),
                            orig_len: epb.origlen,
                            link_type: iface.link_type,
                        }
                    }
                    None => Action::UnknownInterface,
                },
                Block::SimplePacket(spb) => match self.interfaces.first() {
                    Some(iface) => {
                        let mut len = (spb.origlen as usize).min(spb.data.len());
                        if iface.snaplen != 0 {
                            len = len.min(iface.snaplen as usize);
                        }
                        let start = spb.data.as_ptr() as usize - base;
                        // A simple packet block has no timestamp: the previous one is reused.
                        Action::Packet { start, len, ts_ns: None, orig_len: spb.origlen, link_type: iface.link_type }
                    }
                    None => Action::UnknownInterface,
                },
                // Statistics, name resolution, custom and unknown blocks carry no packets.
                Block::Unknown(b) if !resync::known_block(b.block_type) => Action::Unknown(b.block_type),
                _ => Action::None,
            };
            let mut out = None;
            match action {
                Action::Packet { start, len, ts_ns, orig_len, link_type } => {
                    let ts_ns = match ts_ns {
                        Some(t) if self.time_suspect(t) => {
                            let (next, framed) = match self.next_block_time(consumed)? {
                                Some(next) => (next, true),
                                None => (self.time_after_damage(consumed)?, false),
                            };
                            self.checked_time(t, next, |r| {
                                if !framed {
                                    return Ok(None);
                                }
                                // The block after the next, if the next one is whole (its
                                // length checked out; the file may end inside it).
                                let Some(&[a, b, c, d]) = r.window().get(consumed + 4..consumed + 8) else {
                                    return Ok(None);
                                };
                                let len = if big_endian {
                                    u32::from_be_bytes([a, b, c, d])
                                } else {
                                    u32::from_le_bytes([a, b, c, d])
                                };
                                if len < 12 || r.window().len() < consumed + len as usize {
                                    return Ok(None);
                                }
                                Ok(r.next_block_time(consumed + len as usize)?.flatten())
                            })?
                        }
                        Some(t) => t,
                        None => self.last_ts_ns,
                    };
                    out = Some((start, len, ts_ns, orig_len.max(len as u32), link_type));
                }
                Action::Section { big_endian } => {
                    self.framing = Framing::Pcapng { big_endian };
                    self.interfaces.clear();
                    self.sections += 1;
                }
                Action::Interface(iface) => self.interfaces.push(iface),
                Action::UnknownInterface => self.unknown_interface += 1,
                Action::Unknown(t) => {
                    // Not a type pcapng defines: most likely a damaged one, reported as such
                    // (the block, framed by its lengths, is all that is skipped).
                    let start = self.pos;
                    self.consume(consumed);
                    self.damage.push((
                        Damage {
                            start,
                            end: self.pos,
                            reason: resync::Fault::BlockType(t).to_string(),
                            records_after: 0,
                            file: None,
                        },
                        self.frame,
                    ));
                    continue;
                }
                Action::None => {}
            }
            let window_start = self.window_start();
            self.consume(consumed);
            if let Some((start, len, ts_ns, orig_len, link_type)) = out {
                self.frame += 1;
                self.last_ts_ns = ts_ns;
                let rec = Record { ts_ns, data: &[], orig_len, link_type, frame: self.frame, offset };
                return Ok(Some((window_start + start, len, rec)));
            }
        }
    }

    fn buffer(&self) -> &[u8] {
        &self.source.buf
    }

    fn window_start(&self) -> usize {
        self.source.start
    }

    fn window(&self) -> &[u8] {
        &self.source.buf[self.source.start..self.source.end]
    }

    fn at_eof(&self) -> bool {
        self.source.eof
    }

    fn consume(&mut self, n: usize) {
        self.pos += n as u64;
        self.source.start += n;
    }

    /// Makes the window at least `want` bytes long, unless the stream ends first. Grows the
    /// buffer only as far as the largest record requires.
    fn fill(&mut self, want: usize) -> Result<(), CaptureError> {
        let pos = self.pos;
        let Source { reader, buf, start, end, eof } = &mut self.source;
        if *end - *start >= want || *eof {
            return Ok(());
        }
        if *start > 0 {
            buf.copy_within(*start..*end, 0);
            *end -= *start;
            *start = 0;
        }
        if want > MAX_RECORD {
            return Err(CaptureError::Corrupt { what: format!("record of more than {MAX_RECORD} bytes"), offset: pos });
        }
        while *end < want && !*eof {
            // Grow by doubling as data actually arrives, so a bogus length in a header costs
            // no more memory than the file has.
            if *end == buf.len() {
                buf.resize((buf.len() * 2).min(want.next_power_of_two()).max(*end + 1), 0);
            }
            match reader.read(&mut buf[*end..]) {
                Ok(0) => *eof = true,
                Ok(n) => *end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(CaptureError::Io { offset: pos + (*end - *start) as u64, source });
                }
            }
        }
        Ok(())
    }
}

/// What one block means for the reader, detached from the buffer.
enum Action {
    Packet { start: usize, len: usize, ts_ns: Option<u64>, orig_len: u32, link_type: u32 },
    Section { big_endian: bool },
    Interface(Interface),
    UnknownInterface,
    Unknown(u32),
    None,
}

fn compression_of(head: &[u8]) -> Compression {
    if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else {
        Compression::None
    }
}

fn read_up_to(mut f: &File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Timestamp units per second given by a pcapng `if_tsresol` (default 6): 10^r, or 2^(r & 0x7f)
/// when its top bit is set (Endace DAG cards write 2^-32 s); `None` when that does not fit in
/// 64 bits.
fn units_per_sec(r: u8) -> Option<u64> {
    let e = (r & 0x7f) as u32;
    if r & 0x80 == 0 { 10u64.checked_pow(e) } else { 1u64.checked_shl(e) }
}

/// The latest time a record can have, in ns since the epoch: 2262-04-11 23:47:16.854775807
/// UTC, the largest signed 64-bit count of ns (Arrow's and Parquet's timestamps, the `ts_ns`
/// columns of the tables, and a JSON reader's 64-bit integers). A pcapng time past it (a
/// damaged one: an absurd tick count or offset) is clamped to it.
pub const MAX_TS_NS: u64 = i64::MAX as u64;

/// Converts pcapng ticks to ns since the epoch, exactly (128-bit intermediate), clamped to
/// `0..=`[`MAX_TS_NS`].
fn ticks_to_ns(ticks: u64, units_per_sec: u64, offset_s: i64) -> u64 {
    let units = units_per_sec.max(1) as u128;
    let ns = ticks as u128 * 1_000_000_000 / units;
    let ns = ns as i128 + offset_s as i128 * 1_000_000_000;
    ns.clamp(0, MAX_TS_NS as i128) as u64
}

#[cfg(test)]
mod damage_tests;
#[cfg(test)]
mod tests;

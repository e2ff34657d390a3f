//! gzip and zstd input that survives damage in the compressed stream.
//!
//! A damaged deflate or zstd stream decodes to wrong bytes for a while before the decoder
//! notices (gzip checks its CRC only at a member's end, zstd its checksum at a frame's end), and
//! nothing of the member or frame after the damage can be decoded: its bytes refer to what came
//! before. So this reader
//! - holds the last decompressed bytes of a member (frame) back ([`GZIP_HOLD`], [`ZSTD_HOLD`]) until either more
//!   follow or the member ends with its checksum right, and drops them when the decoder fails
//!   or the checksum does not match: the records read are the file's, not a damaged decoder's;
//! - then looks for the next member (frame) in the compressed bytes and goes on from there:
//!   files written as several members (bgzip, `cat a.gz b.gz`, pigz per file, ring files
//!   compressed one by one, zstd's multi-frame writers) lose only the damaged one;
//! - stops its output at each such hole ([`Decompressor::read`] returns end of file until the
//!   capture reader takes the hole's description with [`Hole::take`]), so that the record cut
//!   by the hole is skipped as damage and the records after it are found by the same
//!   resynchronisation as in an uncompressed file (`resync`).
//!
//! A stream that simply ends (a file cut short) is not damage: everything decoded is right,
//! and the capture reader says where the records end.
//!
//! Written here rather than taken from flate2's and zstd's readers: those end at the first
//! error, without the compressed offset, and hand out bytes before the checksum that would
//! have rejected them. The deflate and zstd decoding itself is theirs.

use std::io::{self, Read};
use std::sync::{Arc, Mutex};

use flate2::{Crc, Decompress, FlushDecompress, Status};
use zstd::stream::raw::{Decoder as ZstdDecoder, InBuffer, Operation, OutBuffer};

/// Decompressed bytes of a gzip member held back until the decoder has gone this far past
/// them. Deflate decodes damaged bytes without noticing (its Huffman codes resynchronise;
/// flipping one bit of a gzip of `randloss-snd.pcap`, 100 seeds, was noticed only by the CRC at
/// the member's end every time), so this protects members up to its size (bgzip's are 64 KiB)
/// and no more: a longer member is handed out unverified but for its last `GZIP_HOLD` bytes.
pub(crate) const GZIP_HOLD: usize = 1 << 20;
/// The same for zstd, which notices damage to its entropy-coded sections at the end of the
/// damaged block (at most 128 KiB of output); damage to raw literals shows only in the frame's
/// checksum.
pub(crate) const ZSTD_HOLD: usize = 2 << 17;
const IN_CHUNK: usize = 1 << 16;
const OUT_CHUNK: usize = 1 << 16;
/// A gzip header longer than this (its name and comment fields) is taken as damage.
const MAX_GZIP_HEADER: usize = 1 << 16;
const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The description of the last hole in the output, shared by the decompressor (which sets it
/// and stops its output) and the capture reader (which takes it and reads on).
#[derive(Clone, Default)]
pub(crate) struct Hole(Arc<Mutex<Option<String>>>);

impl Hole {
    /// Takes the pending hole's description, letting the output go on.
    pub(crate) fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn set(&self, what: String) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(what);
    }

    fn pending(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }
}

enum Codec {
    Gzip { inflate: Decompress, crc: Crc, state: GzState },
    Zstd(Box<ZstdDecoder<'static>>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum GzState {
    Header,
    Body,
    Trailer,
}

/// A decompressing reader that recovers from damage (see the module documentation).
pub(crate) struct Decompressor {
    input: Box<dyn Read + Send>,
    codec: Codec,
    inbuf: Vec<u8>,
    in_start: usize,
    in_end: usize,
    in_eof: bool,
    /// Compressed offset of `inbuf[0]`.
    in_base: u64,
    /// Compressed offset where the current member (frame) began.
    unit_start: u64,
    /// Decompressed bytes: `held[..given]` handed out, `held[given..ok]` may be, `held[ok..]`
    /// not yet.
    held: Vec<u8>,
    given: usize,
    ok: usize,
    hole: Hole,
    finished: bool,
    /// Decompressed bytes of the current member (frame) so far.
    unit_out: u64,
    scratch: Vec<u8>,
}

impl Decompressor {
    /// A gzip (`zstd` false) or zstd decompressor of `input`, reporting holes through `hole`.
    pub(crate) fn new(input: Box<dyn Read + Send>, zstd: bool, hole: Hole) -> io::Result<Decompressor> {
        let codec = if zstd {
            Codec::Zstd(Box::new(ZstdDecoder::new()?))
        } else {
            Codec::Gzip { inflate: Decompress::new(false), crc: Crc::new(), state: GzState::Header }
        };
        Ok(Decompressor {
            input,
            codec,
            inbuf: vec![0; IN_CHUNK],
            in_start: 0,
            in_end: 0,
            in_eof: false,
            in_base: 0,
            unit_start: 0,
            held: Vec::new(),
            given: 0,
            ok: 0,
            hole: hole.clone(),
            finished: false,
            unit_out: 0,
            scratch: Vec::new(),
        })
    }

    fn hold(&self) -> usize {
        match self.codec {
            Codec::Gzip { .. } => GZIP_HOLD,
            Codec::Zstd(_) => ZSTD_HOLD,
        }
    }

    fn name(&self) -> &'static str {
        match self.codec {
            Codec::Gzip { .. } => "gzip",
            Codec::Zstd(_) => "zstd",
        }
    }

    /// Compressed offset of the next unconsumed input byte.
    fn in_pos(&self) -> u64 {
        self.in_base + self.in_start as u64
    }

    /// Reads compressed input until `want` bytes are unconsumed or the input ends.
    fn fill_in(&mut self, want: usize) -> io::Result<()> {
        if self.in_end - self.in_start >= want || self.in_eof {
            return Ok(());
        }
        if self.in_start > 0 {
            self.inbuf.copy_within(self.in_start..self.in_end, 0);
            self.in_base += self.in_start as u64;
            self.in_end -= self.in_start;
            self.in_start = 0;
        }
        if self.inbuf.len() < want {
            self.inbuf.resize(want, 0);
        }
        while self.in_end < want && !self.in_eof {
            match self.input.read(&mut self.inbuf[self.in_end..]) {
                Ok(0) => self.in_eof = true,
                Ok(n) => self.in_end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The member (frame) so far is right: everything held may go.
    fn verified(&mut self) {
        self.ok = self.held.len();
    }

    /// A member (frame) ended, verified: the next starts at the current input position.
    fn unit_done(&mut self) {
        self.verified();
        self.unit_start = self.in_pos();
        self.unit_out = 0;
    }

    /// The decoder failed at the current input position: drops what is held back, looks for
    /// the next member (frame) and stops the output there with a description of the hole.
    fn damaged(&mut self, why: &str) -> io::Result<()> {
        // At least one byte on: where the damage was noticed may look like a member's start.
        self.damaged_from(why, 1)
    }

    /// [`Decompressor::damaged`], looking for the next member `skip` bytes on.
    fn damaged_from(&mut self, why: &str, skip: usize) -> io::Result<()> {
        let (at, unit) = (self.in_pos(), self.unit_start);
        let dropped = self.held.len() - self.ok;
        let passed = self.unit_out.saturating_sub(dropped as u64);
        self.held.truncate(self.ok);
        let name = self.name();
        self.in_start = (self.in_start + skip).min(self.in_end);
        let resumed = self.find_next()?;
        match &mut self.codec {
            Codec::Gzip { inflate, crc, state } => {
                inflate.reset(false);
                *crc = Crc::new();
                *state = GzState::Header;
            }
            Codec::Zstd(d) => d.reinit()?,
        }
        let after = match resumed {
            Some(off) => format!("decompressing resumed at compressed byte {off}, the next {name} member"),
            None => {
                self.finished = true;
                format!("no {name} member after it")
            }
        };
        self.unit_start = self.in_pos();
        self.unit_out = 0;
        // Bytes of a member longer than the hold went out before its checksum could be checked.
        let passed = if passed > 0 {
            format!(", its first {passed} read unverified (damaged bytes there read as damaged records)")
        } else {
            String::new()
        };
        self.hole.set(format!(
            "{name} stream damaged in the member from compressed byte {unit} ({why} at compressed byte \
             {at}): its last {dropped} decompressed bytes dropped{passed}; {after}"
        ));
        Ok(())
    }

    /// Skips compressed input up to the next plausible member (frame) start from the current
    /// position; its offset, or `None` at the end of the input.
    fn find_next(&mut self) -> io::Result<Option<u64>> {
        loop {
            self.fill_in(MAX_GZIP_HEADER.min(IN_CHUNK))?;
            let w = &self.inbuf[self.in_start..self.in_end];
            let found = match self.codec {
                Codec::Gzip { .. } => (0..w.len())
                    .find(|&i| w[i..].starts_with(&GZIP_MAGIC) && !matches!(gzip_header(&w[i..]), Some(Err(_)))),
                Codec::Zstd(_) => w.windows(4).position(|m| m == ZSTD_MAGIC),
            };
            if let Some(i) = found {
                self.in_start += i;
                return Ok(Some(self.in_pos()));
            }
            if self.in_eof {
                self.in_start = self.in_end;
                return Ok(None);
            }
            // Keep the last bytes: a magic number may straddle the refill.
            self.in_start = self.in_end.saturating_sub(3).max(self.in_start);
            let keep = self.in_end - self.in_start;
            self.fill_in(keep + 1)?;
        }
    }

    /// Decodes some input into `held`, marking what may be handed out.
    fn step(&mut self) -> io::Result<()> {
        match self.codec {
            Codec::Gzip { .. } => self.step_gzip()?,
            Codec::Zstd(_) => self.step_zstd()?,
        }
        self.ok = self.ok.max(self.held.len().saturating_sub(self.hold()));
        Ok(())
    }

    fn step_gzip(&mut self) -> io::Result<()> {
        let Codec::Gzip { state, .. } = &self.codec else { unreachable!() };
        match *state {
            GzState::Header => {
                self.fill_in(10)?;
                if self.in_start == self.in_end {
                    // The input ends between members: done.
                    self.finished = true;
                    return Ok(());
                }
                self.unit_start = self.in_pos();
                let mut need = 10;
                let len = loop {
                    self.fill_in(need)?;
                    match gzip_header(&self.inbuf[self.in_start..self.in_end]) {
                        Some(Ok(len)) => break len,
                        Some(Err(why)) => return self.damaged(why),
                        None if self.in_eof => {
                            // Cut inside a header: a truncated file, nothing more to read.
                            self.finished = true;
                            return Ok(());
                        }
                        None => need = (self.in_end - self.in_start) * 2,
                    }
                };
                self.in_start += len;
                if let Codec::Gzip { state, .. } = &mut self.codec {
                    *state = GzState::Body;
                }
            }
            GzState::Body => {
                self.fill_in(1)?;
                let Codec::Gzip { inflate, crc, state } = &mut self.codec else { unreachable!() };
                let (in0, t0, out0) = (inflate.total_in(), inflate.total_out(), self.held.len());
                // Into a scratch buffer: `decompress_vec` zeroes all of the vector's spare
                // capacity on every call, a megabyte here (16 % of a gzip read's instructions).
                self.scratch.resize(OUT_CHUNK, 0);
                let r = inflate.decompress(
                    &self.inbuf[self.in_start..self.in_end],
                    &mut self.scratch,
                    FlushDecompress::None,
                );
                self.held.extend_from_slice(&self.scratch[..(inflate.total_out() - t0) as usize]);
                self.in_start += (inflate.total_in() - in0) as usize;
                crc.update(&self.held[out0..]);
                self.unit_out += (self.held.len() - out0) as u64;
                match r {
                    Ok(Status::StreamEnd) => *state = GzState::Trailer,
                    Ok(_) if inflate.total_in() == in0 && self.held.len() == out0 => {
                        if self.in_eof {
                            // Cut inside the member: what was decoded is right.
                            self.verified();
                            self.finished = true;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => return self.damaged(&format!("deflate: {e}")),
                }
            }
            GzState::Trailer => {
                self.fill_in(8)?;
                if self.in_end - self.in_start < 8 {
                    self.verified();
                    self.finished = true;
                    return Ok(());
                }
                let t = &self.inbuf[self.in_start..self.in_start + 8];
                let (want_crc, want_len) =
                    (u32::from_le_bytes(t[..4].try_into().unwrap()), u32::from_le_bytes(t[4..].try_into().unwrap()));
                let Codec::Gzip { inflate, crc, state } = &mut self.codec else { unreachable!() };
                if crc.sum() != want_crc || crc.amount() != want_len {
                    return self.damaged("CRC or length in the member's trailer does not match");
                }
                self.in_start += 8;
                inflate.reset(false);
                *crc = Crc::new();
                *state = GzState::Header;
                self.unit_done();
                self.fill_in(2)?;
                let rest = &self.inbuf[self.in_start..self.in_end];
                if !rest.is_empty() && !rest.starts_with(&GZIP_MAGIC[..rest.len().min(2)]) {
                    // Not another member: padding or garbage after the last one.
                    return self.damaged_from("bytes after a member that do not start another", 0);
                }
            }
        }
        Ok(())
    }

    fn step_zstd(&mut self) -> io::Result<()> {
        self.fill_in(1)?;
        if self.in_start == self.in_end {
            self.verified();
            self.finished = true;
            return Ok(());
        }
        let Codec::Zstd(d) = &mut self.codec else { unreachable!() };
        self.held.reserve(OUT_CHUNK);
        let mut input = InBuffer::around(&self.inbuf[self.in_start..self.in_end]);
        let len = self.held.len();
        let mut output = OutBuffer::around_pos(&mut self.held, len);
        let r = d.run(&mut input, &mut output);
        let (consumed, produced) = (input.pos(), output.pos() - len);
        self.in_start += consumed;
        self.unit_out += produced as u64;
        match r {
            Ok(0) => {
                // A frame ended, its checksum (if it has one) right.
                self.unit_done();
            }
            Ok(_) if consumed == 0 && produced == 0 && self.in_eof => {
                // Cut inside a frame: what was decoded is right.
                self.verified();
                self.finished = true;
            }
            Ok(_) => {}
            Err(e) => return self.damaged(&format!("zstd: {e}")),
        }
        Ok(())
    }
}

impl Read for Decompressor {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.given < self.ok {
                let n = buf.len().min(self.ok - self.given);
                buf[..n].copy_from_slice(&self.held[self.given..self.given + n]);
                self.given += n;
                if self.given == self.held.len() {
                    self.held.clear();
                    (self.given, self.ok) = (0, 0);
                } else if self.given >= self.held.len() / 2 {
                    // Moving the rest down only when half is handed out: each byte moves once
                    // on average, whatever the hold.
                    self.held.drain(..self.given);
                    self.ok -= self.given;
                    self.given = 0;
                }
                return Ok(n);
            }
            if self.hole.pending() || self.finished {
                return Ok(0);
            }
            self.step()?;
        }
    }
}

/// The length of the gzip member header (RFC 1952 §2.3) at the start of `b`; `None` when `b`
/// ends inside it.
fn gzip_header(b: &[u8]) -> Option<Result<usize, &'static str>> {
    if b.len() < 10 {
        return None;
    }
    if !b.starts_with(&GZIP_MAGIC) {
        return Some(Err("not a gzip member header"));
    }
    let flags = b[3];
    if flags & 0xe0 != 0 {
        return Some(Err("reserved gzip header flags set"));
    }
    let mut at = 10;
    if flags & 0x04 != 0 {
        let x = b.get(at..at + 2)?;
        at += 2 + u16::from_le_bytes([x[0], x[1]]) as usize;
    }
    for field in [0x08, 0x10] {
        if flags & field != 0 {
            match b.get(at..)?.iter().position(|&c| c == 0) {
                Some(end) => at += end + 1,
                None if b.len() >= MAX_GZIP_HEADER => return Some(Err("gzip header name or comment too long")),
                None => return None,
            }
        }
    }
    if flags & 0x02 != 0 {
        at += 2;
    }
    if at > MAX_GZIP_HEADER {
        return Some(Err("gzip header too long"));
    }
    (b.len() >= at).then_some(Ok(at))
}

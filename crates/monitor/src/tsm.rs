//! The recording file (`.tsm`): append-only, self-describing, crash-safe, compact.
//!
//! ```text
//! file   := MAGIC frame*
//! MAGIC  := 89 'T' 'S' 'M' 0D 0A 1A 0A            (8 bytes; PNG's trick: catches text-mode mangling)
//! frame  := len:u32le kind:u8 body[len] crc:u32le   (crc32 of kind and body)
//! ```
//! Kinds: `H` header (JSON: format, version, the sample columns by name and unit, the interval,
//! the filter and whether the kernel ran it), `C` a connection first seen (JSON), `E` a connection
//! gone (JSON), `S` a block of samples (zstd of the columnar encoding below), `V` an application
//! event (JSON), `P` a CPU sample (JSON). Unknown kinds are skipped, so later versions can add frames.
//!
//! A frame is written whole and the file flushed after each block, so a recorder killed at any
//! point leaves a file that reads up to its last complete frame; the reader reports where the
//! tail was cut (or failed its CRC) and keeps everything before it.
//!
//! Samples block, before compression (all integers LEB128 varints):
//! ```text
//! rows  ncols
//! conn[rows]                         connection ids
//! t[0]  zigzag(t[i] - t[i-1])...     ns since the epoch
//! per column (ncols, in the header's order):
//!   presence: 0 all absent | 1 all present | 2 then a bitmap of rows (1 = present), LSB first
//!   for each present row: zigzag(value - the previous value of the same connection and column,
//!   wrapping), the first one of a connection in the file relative to 0
//! ```
//! The previous values carry over from block to block (and are forgotten at the connection's
//! `E` frame), so blocks are read in file order, which the reader does anyway: a connection
//! sampled at 10 Hz pays its absolute values once, not once per block.
//! Counters change little between samples, so most deltas are one byte, and zstd removes most of
//! the rest (the measured size is in docs/monitor.md).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::fields::{FIELDS, Kind, Sample};

/// The first 8 bytes of every recording.
pub const MAGIC: [u8; 8] = [0x89, b'T', b'S', b'M', 0x0d, 0x0a, 0x1a, 0x0a];

/// Largest frame body the reader accepts (a corrupt length must not make it allocate gigabytes).
const MAX_FRAME: usize = 64 << 20;

/// Most samples in one block (the writer's bound on memory; the reader refuses more).
const MAX_BLOCK_ROWS: usize = 1 << 20;

/// Largest decompressed samples block the reader accepts.
const MAX_BLOCK_BYTES: usize = 1 << 30;

/// The header frame.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Header {
    pub format: String,
    pub version: u32,
    /// Raw sample columns in block order: name and unit.
    pub columns: Vec<(String, String)>,
    pub interval_ns: u64,
    pub filter: String,
    pub kernel_filter: bool,
    pub pid: Option<u32>,
    pub host: String,
    pub start_ns: u64,
    /// The stream's id (16 hex digits), the same in every session appended to one file; a
    /// collector files the stream under it (`ship.rs`).
    #[serde(default)]
    pub stream: String,
    /// The sampler that made the recording: `bpf` or `netlink` (absent in older files).
    #[serde(default)]
    pub sampler: String,
}

impl Header {
    pub fn new(interval_ns: u64, filter: &str, kernel_filter: bool, pid: Option<u32>, start_ns: u64) -> Header {
        let host =
            std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default();
        Header {
            format: "tcpscope-tsm".into(),
            version: 1,
            columns: raw_columns().map(|i| (FIELDS[i].name.to_string(), FIELDS[i].unit.to_string())).collect(),
            interval_ns,
            filter: filter.into(),
            kernel_filter,
            pid,
            host,
            start_ns,
            stream: new_stream_id(),
            sampler: "netlink".into(),
        }
    }
}

/// 16 random hex digits.
pub fn new_stream_id() -> String {
    let mut b = [0u8; 8];
    if File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_err() {
        // No /dev/urandom (not Linux): the time and pid are unique enough for a file name.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        b = (t ^ u64::from(std::process::id()) << 40).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The length of the longest prefix of the file at `path` made of the magic and whole frames
/// that pass their CRC (0 if it does not start with the magic).
pub fn valid_len(path: &Path) -> io::Result<u64> {
    let data = std::fs::read(path)?;
    if data.len() < 8 || data[..8] != MAGIC {
        return Ok(0);
    }
    let mut at = 8;
    while data.len() - at >= 9 {
        let len = u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]) as usize;
        if data.len() - at - 9 < len {
            break;
        }
        let mut h = crc32fast::Hasher::new();
        h.update(&data[at + 4..at + 5 + len]);
        if h.finalize().to_le_bytes() != data[at + 5 + len..at + 9 + len] {
            break;
        }
        at += 9 + len;
    }
    Ok(at as u64)
}

/// A connection first seen.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ConnStart {
    pub id: u32,
    pub cookie: u64,
    pub family: String,
    pub src: String,
    pub sport: u16,
    pub dst: String,
    pub dport: u16,
    pub cong: Option<String>,
    pub inode: u32,
    pub uid: u32,
    /// Time of the first sample that saw it, ns since the epoch.
    pub t_ns: u64,
    /// Length of its `tcp_info` attribute (tells which fields this kernel has).
    pub info_len: usize,
}

#[cfg(test)]
impl ConnStart {
    /// A connection for tests: IPv4 10.0.0.1:1 → 10.0.0.2:2, cookie `id`, no congestion
    /// control, zero times; tests set what they look at.
    pub(crate) fn sample(id: u32) -> ConnStart {
        ConnStart {
            id,
            cookie: u64::from(id),
            family: "ipv4".into(),
            src: "10.0.0.1".into(),
            sport: 1,
            dst: "10.0.0.2".into(),
            dport: 2,
            cong: None,
            inode: 0,
            uid: 0,
            t_ns: 0,
            info_len: 0,
        }
    }
}

/// A connection gone: absent from a dump after being present.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ConnEnd {
    pub id: u32,
    /// Last dump that saw it.
    pub last_ns: u64,
    /// First dump that did not, or the time the recorder stopped.
    pub gone_ns: u64,
    /// The recorder stopped while the connection was still there (not a real end).
    #[serde(default)]
    pub recorder_stopped: bool,
}

/// An application or host event written into the recording.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Event {
    pub t_ns: u64,
    pub name: String,
    /// The event's other fields, in the order given.
    pub fields: Vec<(String, String)>,
}

fn raw_columns() -> impl Iterator<Item = usize> {
    FIELDS.iter().enumerate().filter(|(_, f)| matches!(f.kind, Kind::Raw { .. })).map(|(i, _)| i)
}

/// Writes a recording.
pub struct Writer {
    out: BufWriter<File>,
    cols: Vec<usize>,
    /// The samples of the block being built, already encoded.
    pending: BlockEnc,
    /// The block's bytes, its compressed form, and the compressor, kept from block to block:
    /// at 10,000 sockets a block is megabytes, and new memory each time was page faults.
    raw: Vec<u8>,
    z: Vec<u8>,
    zc: zstd::bulk::Compressor<'static>,
    /// Per connection, the last value written of each column (the deltas' base).
    prev: WriterBases,
    last_flush: Instant,
    /// Bytes written so far (magic included).
    pub bytes: u64,
    /// Samples written so far.
    pub samples: u64,
    /// A block is written when this many samples are waiting (a bound on memory), or at
    /// [`Writer::tick`] after `flush_every`.
    pub block_rows: usize,
    pub flush_every: std::time::Duration,
}

impl Writer {
    /// Creates `path` (truncating it) and writes the magic and the header.
    pub fn create(path: &Path, header: &Header) -> io::Result<Writer> {
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(&MAGIC)?;
        Writer::start(out, MAGIC.len() as u64, header)
    }

    /// Appends a new session to the recording at `path` (after cutting a torn tail left by a
    /// crash), under the stream id of its first header; creates it if it is absent or empty.
    /// Returns the writer and the header as written.
    pub fn append(path: &Path, header: &Header) -> io::Result<(Writer, Header)> {
        let have = if path.exists() { valid_len(path)? } else { 0 };
        if have <= MAGIC.len() as u64 {
            return Ok((Writer::create(path, header)?, header.clone()));
        }
        let first = read(path)?.header.ok_or_else(|| io::Error::other(format!("{}: no header", path.display())))?;
        let header = Header { stream: first.stream, ..header.clone() };
        let f = OpenOptions::new().write(true).open(path)?;
        f.set_len(have)?;
        let mut out = BufWriter::new(f);
        out.seek(SeekFrom::End(0))?;
        Ok((Writer::start(out, have, &header)?, header))
    }

    fn start(out: BufWriter<File>, bytes: u64, header: &Header) -> io::Result<Writer> {
        let cols: Vec<usize> = raw_columns().collect();
        let n = cols.len();
        let mut w = Writer {
            out,
            cols,
            pending: BlockEnc::new(n),
            raw: Vec::new(),
            z: Vec::new(),
            zc: zstd::bulk::Compressor::new(3)?,
            prev: WriterBases::new(n),
            last_flush: Instant::now(),
            bytes,
            samples: 0,
            block_rows: MAX_BLOCK_ROWS,
            flush_every: std::time::Duration::from_secs(1),
        };
        w.frame(b'H', &serde_json::to_vec(header)?)?;
        w.out.flush()?;
        Ok(w)
    }

    fn frame(&mut self, kind: u8, body: &[u8]) -> io::Result<()> {
        let mut crc = crc32fast::Hasher::new();
        crc.update(&[kind]);
        crc.update(body);
        self.out.write_all(&(body.len() as u32).to_le_bytes())?;
        self.out.write_all(&[kind])?;
        self.out.write_all(body)?;
        self.out.write_all(&crc.finalize().to_le_bytes())?;
        self.bytes += 9 + body.len() as u64;
        Ok(())
    }

    /// Records a connection start (before any of its samples, which wait for their block).
    pub fn conn(&mut self, c: &ConnStart) -> io::Result<()> {
        self.frame(b'C', &serde_json::to_vec(c)?)
    }

    pub fn end(&mut self, e: &ConnEnd) -> io::Result<()> {
        self.block()?;
        self.prev.remove(e.id);
        self.frame(b'E', &serde_json::to_vec(e)?)
    }

    pub fn event(&mut self, e: &Event) -> io::Result<()> {
        self.block()?;
        self.frame(b'V', &serde_json::to_vec(e)?)?;
        self.out.flush()
    }

    /// Records a CPU sample (host cores and the monitored process).
    pub fn cpu(&mut self, c: &crate::events::CpuSample) -> io::Result<()> {
        self.frame(b'P', &serde_json::to_vec(c)?)
    }

    /// Adds a sample to the pending block (encoded at once: the block keeps bytes, not samples).
    pub fn sample(&mut self, s: &Sample) -> io::Result<()> {
        let base = self.prev.get(s.conn);
        self.pending.push(s, &self.cols, base);
        self.samples += 1;
        if self.pending.rows >= self.block_rows {
            self.block()?;
            self.out.flush()?;
        }
        Ok(())
    }

    /// Writes the pending samples if `flush_every` has passed since the last block.
    pub fn tick(&mut self) -> io::Result<()> {
        if self.last_flush.elapsed() >= self.flush_every {
            self.block()?;
            self.out.flush()?;
        }
        Ok(())
    }

    /// Writes the pending samples and flushes the file.
    pub fn finish(&mut self) -> io::Result<()> {
        self.block()?;
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }

    fn block(&mut self) -> io::Result<()> {
        self.last_flush = Instant::now();
        if self.pending.rows == 0 {
            return Ok(());
        }
        self.pending.finish(&self.cols, &mut self.raw);
        self.z.clear();
        self.z.reserve(zstd::zstd_safe::compress_bound(self.raw.len()));
        self.zc.compress_to_buffer(&self.raw, &mut self.z)?;
        let z = std::mem::take(&mut self.z);
        let r = self.frame(b'S', &z);
        self.z = z;
        r
    }
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// The writer's deltas' bases: per connection, the last value written of each column, in one
/// flat vector of slots found by connection id through a vector, not a hash map. (At 10,000
/// connections a hash lookup per sample was a cache miss per sample, a third of the encoder's
/// time; ids come from the tracker in the dump's order, so consecutive samples' slots are
/// mostly consecutive in memory.) Slots of ended connections are reused.
struct WriterBases {
    ncols: usize,
    /// Slot + 1 of each connection id below [`WriterBases::DENSE`] (0: none).
    slot_of: Vec<u32>,
    /// Slots of ids from [`WriterBases::DENSE`] on (not the tracker's: only a caller's own ids).
    sparse: FxHashMap<u32, u32>,
    vals: Vec<u64>,
    free: Vec<u32>,
}

impl WriterBases {
    /// Ids up to this are looked up in a vector (4 bytes per id).
    const DENSE: u32 = 1 << 24;

    fn new(ncols: usize) -> WriterBases {
        WriterBases { ncols, slot_of: Vec::new(), sparse: FxHashMap::default(), vals: Vec::new(), free: Vec::new() }
    }

    /// The bases of connection `id` (zeros for a connection not seen since its start or end).
    fn get(&mut self, id: u32) -> &mut [u64] {
        let have = if id < WriterBases::DENSE {
            self.slot_of.get(id as usize).and_then(|&s| s.checked_sub(1))
        } else {
            self.sparse.get(&id).copied()
        };
        let slot = match have {
            Some(s) => s,
            None => {
                let s = match self.free.pop() {
                    Some(s) => {
                        let at = s as usize * self.ncols;
                        self.vals[at..at + self.ncols].fill(0);
                        s
                    }
                    None => {
                        self.vals.resize(self.vals.len() + self.ncols, 0);
                        (self.vals.len() / self.ncols - 1) as u32
                    }
                };
                if id < WriterBases::DENSE {
                    if self.slot_of.len() <= id as usize {
                        self.slot_of.resize(id as usize + 1, 0);
                    }
                    self.slot_of[id as usize] = s + 1;
                } else {
                    self.sparse.insert(id, s);
                }
                s
            }
        };
        let at = slot as usize * self.ncols;
        &mut self.vals[at..at + self.ncols]
    }

    /// Forgets connection `id`'s bases (it ended).
    fn remove(&mut self, id: u32) {
        let slot = if id < WriterBases::DENSE {
            self.slot_of.get_mut(id as usize).and_then(|s| std::mem::take(s).checked_sub(1))
        } else {
            self.sparse.remove(&id)
        };
        if let Some(s) = slot {
            self.free.push(s);
        }
    }
}

/// The deltas' bases of the connections of one block, taken out of `prev` for the block (one
/// hash lookup per row, not per value) and put back by [`Bases::restore`].
struct Bases {
    /// Per row, its connection's slot.
    row: Vec<usize>,
    slots: Vec<(u32, Vec<u64>)>,
}

impl Bases {
    fn take(conns: impl Iterator<Item = u32>, ncols: usize, prev: &mut HashMap<u32, Vec<u64>>) -> Bases {
        let mut slot_of: HashMap<u32, usize> = HashMap::new();
        let mut b = Bases { row: Vec::new(), slots: Vec::new() };
        for conn in conns {
            let i = *slot_of.entry(conn).or_insert_with(|| {
                b.slots.push((conn, prev.remove(&conn).unwrap_or_else(|| vec![0; ncols])));
                b.slots.len() - 1
            });
            b.row.push(i);
        }
        b
    }

    fn restore(self, prev: &mut HashMap<u32, Vec<u64>>) {
        prev.extend(self.slots);
    }
}

/// A samples block being built: each sample is encoded as it comes, into the block's row
/// header and one buffer per column, which [`BlockEnc::finish`] lays out one after the other.
/// (Holding the samples until the block is written cost 1.6 KB per sample, 160 MB a second
/// at 10,000 sockets and 10 Hz, and the page faults of that memory.)
struct BlockEnc {
    rows: usize,
    conns: Vec<u8>,
    times: Vec<u8>,
    last_t: u64,
    /// Per column, the varint deltas of its present rows.
    vals: Vec<Vec<u8>>,
    /// Per row, its sample's presence mask (bits by [`FIELDS`] index): the columns' presence
    /// is worked out from these once per block, not per value.
    masks: Vec<u128>,
}

impl BlockEnc {
    fn new(ncols: usize) -> BlockEnc {
        BlockEnc {
            rows: 0,
            conns: Vec::new(),
            times: Vec::new(),
            last_t: 0,
            vals: vec![Vec::new(); ncols],
            masks: Vec::new(),
        }
    }

    /// Encodes `r` against its connection's bases (`base`, updated).
    fn push(&mut self, r: &Sample, cols: &[usize], base: &mut [u64]) {
        put(&mut self.conns, u64::from(r.conn));
        if self.rows == 0 {
            put(&mut self.times, r.t_ns);
        } else {
            put(&mut self.times, zigzag(r.t_ns.wrapping_sub(self.last_t) as i64));
        }
        self.last_t = r.t_ns;
        let (m, v) = (r.raw.mask(), r.raw.values());
        self.masks.push(m);
        for ((&c, out), b) in cols.iter().zip(self.vals.iter_mut()).zip(base.iter_mut()) {
            if m >> c & 1 != 0 {
                let d = zigzag(v[c].wrapping_sub(*b) as i64);
                *b = v[c];
                if d < 0x80 {
                    out.push(d as u8);
                } else {
                    put(out, d);
                }
            }
        }
        self.rows += 1;
    }

    /// The block's bytes (before compression); the builder is left empty for the next block.
    fn finish(&mut self, cols: &[usize], out: &mut Vec<u8>) {
        let n = self.vals.len();
        out.clear();
        out.reserve(20 + self.conns.len() + self.times.len() + self.vals.iter().map(Vec::len).sum::<usize>() + n);
        put(out, self.rows as u64);
        put(out, n as u64);
        out.extend_from_slice(&self.conns);
        out.extend_from_slice(&self.times);
        // Usually every row has the same fields (one kernel, one congestion control).
        let same = self.masks.first().filter(|&&m0| self.masks.iter().all(|&m| m == m0));
        for (k, &c) in cols.iter().enumerate() {
            let present = match same {
                Some(m0) => (m0 >> c & 1) as usize * self.rows,
                None => self.masks.iter().filter(|&&m| m >> c & 1 != 0).count(),
            };
            if present == 0 {
                out.push(0);
            } else if present == self.rows {
                out.push(1);
            } else {
                out.push(2);
                for chunk in self.masks.chunks(8) {
                    out.push(chunk.iter().enumerate().fold(0u8, |b, (i, &m)| b | ((m >> c & 1) as u8) << i));
                }
            }
            out.extend_from_slice(&self.vals[k]);
            self.vals[k].clear();
        }
        self.rows = 0;
        self.conns.clear();
        self.times.clear();
        self.masks.clear();
    }
}

/// Reads varints from a block, with the block's offset for errors.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cur<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let v = *self.b.get(self.at).ok_or_else(|| format!("block ends at byte {} (inside the block)", self.at))?;
        self.at += 1;
        Ok(v)
    }

    fn var(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("varint longer than 10 bytes at byte {} of the block", self.at))
    }
}

/// Decodes a samples block; `map[k]` is the [`FIELDS`] index of the header's column `k`
/// (`None` for a column this version does not know, which is skipped).
fn decode_block(b: &[u8], map: &[Option<usize>], prev: &mut HashMap<u32, Vec<u64>>) -> Result<Vec<Sample>, String> {
    let mut c = Cur { b, at: 0 };
    let rows = c.var()? as usize;
    let ncols = c.var()? as usize;
    if ncols != map.len() {
        return Err(format!("block has {ncols} columns, the header {}", map.len()));
    }
    // Each row takes at least two bytes (its connection and time), and a writer never puts more
    // than MAX_BLOCK_ROWS in a block: a larger claim is corruption, not an allocation to make.
    if rows > b.len() / 2 || rows > MAX_BLOCK_ROWS {
        return Err(format!("block claims {rows} rows in {} bytes", b.len()));
    }
    let mut out: Vec<Sample> = Vec::with_capacity(rows);
    for _ in 0..rows {
        let conn = u32::try_from(c.var()?).map_err(|_| "connection id out of range".to_string())?;
        out.push(Sample::empty(0, conn));
    }
    let mut t = 0u64;
    for (i, s) in out.iter_mut().enumerate() {
        let v = c.var()?;
        t = if i == 0 { v } else { t.wrapping_add(unzigzag(v) as u64) };
        s.t_ns = t;
    }
    let mut bits = vec![0u8; rows.div_ceil(8)];
    let mut bases = Bases::take(out.iter().map(|s| s.conn), ncols, prev);
    for (k, &m) in map.iter().enumerate() {
        let kind = c.byte()?;
        match kind {
            0 => continue,
            1 => bits.iter_mut().for_each(|b| *b = 0xff),
            2 => {
                for b in bits.iter_mut() {
                    *b = c.byte()?;
                }
            }
            k => return Err(format!("unknown presence kind {k} at byte {} of the block", c.at - 1)),
        }
        for (i, s) in out.iter_mut().enumerate() {
            if bits[i / 8] & (1 << (i % 8)) == 0 {
                continue;
            }
            let p = &mut bases.slots[bases.row[i]].1[k];
            *p = p.wrapping_add(unzigzag(c.var()?) as u64);
            if let Some(f) = m {
                s.raw.set(f, Some(*p));
            }
        }
    }
    bases.restore(prev);
    Ok(out)
}

/// A recording read back.
#[derive(Debug, Default)]
pub struct Recording {
    pub path: PathBuf,
    pub header: Option<Header>,
    pub conns: Vec<ConnStart>,
    pub ends: Vec<ConnEnd>,
    /// Every sample, in file order (time order).
    pub samples: Vec<Sample>,
    pub events: Vec<Event>,
    pub cpu: Vec<crate::events::CpuSample>,
    /// Sessions in the file (1, or more when a recorder appended after a restart).
    pub sessions: u32,
    /// Bytes of the file.
    pub bytes: u64,
    /// Why reading stopped before the end of the file, with the byte offset (a cut or corrupt
    /// tail: what came before it is kept).
    pub tail: Option<String>,
}

impl Recording {
    /// Samples of connection `id`, in time order.
    pub fn samples_of(&self, id: u32) -> Vec<&Sample> {
        self.samples.iter().filter(|s| s.conn == id).collect()
    }
}

/// Whether `path` starts with the recording magic.
pub fn is_recording(path: &Path) -> bool {
    let mut m = [0u8; 8];
    File::open(path).and_then(|mut f| f.read_exact(&mut m)).is_ok() && m == MAGIC
}

/// Reads a recording. A file that is not one (wrong magic, or a bad header) is an error naming
/// the file; a cut or corrupt tail is not (see [`Recording::tail`]).
pub fn read(path: &Path) -> io::Result<Recording> {
    let data = std::fs::read(path)?;
    let bad = |at: usize, what: String| {
        io::Error::new(io::ErrorKind::InvalidData, format!("{}: byte {at}: {what}", path.display()))
    };
    if data.len() < 8 || data[..8] != MAGIC {
        return Err(bad(0, "not a tcpscope recording (magic missing)".into()));
    }
    let mut rec = Recording { path: path.to_path_buf(), bytes: data.len() as u64, ..Recording::default() };
    let mut map: Vec<Option<usize>> = Vec::new();
    let mut prev: HashMap<u32, Vec<u64>> = HashMap::new();
    // A file can hold several sessions (a recorder restarted with `--to` appends): each starts
    // with a header, and its connection ids are shifted past the ids of the sessions before it.
    let (mut id_base, mut max_id) = (0u32, 0u32);
    let mut at = 8;
    while at < data.len() {
        if data.len() - at < 9 {
            rec.tail = Some(format!("byte {at}: cut inside a frame header ({} bytes left)", data.len() - at));
            break;
        }
        let len = u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]) as usize;
        let kind = data[at + 4];
        if len > MAX_FRAME || data.len() - at - 9 < len {
            rec.tail = Some(format!("byte {at}: frame of {len} bytes cut by the end of the file"));
            break;
        }
        let body = &data[at + 5..at + 5 + len];
        let crc = u32::from_le_bytes(data[at + 5 + len..at + 9 + len].try_into().expect("4 bytes by the length check"));
        let mut h = crc32fast::Hasher::new();
        h.update(&[kind]);
        h.update(body);
        if h.finalize() != crc {
            rec.tail = Some(format!("byte {at}: frame fails its CRC"));
            break;
        }
        let json_err = |e: serde_json::Error| bad(at, format!("frame '{}': {e}", kind as char));
        match kind {
            b'H' => {
                let h: Header = serde_json::from_slice(body).map_err(json_err)?;
                map = h.columns.iter().map(|(n, _)| FIELDS.iter().position(|f| f.name == n)).collect();
                prev.clear();
                id_base = max_id;
                rec.sessions += 1;
                // The first session's header describes the file.
                rec.header.get_or_insert(h);
            }
            b'C' => {
                let mut c: ConnStart = serde_json::from_slice(body).map_err(json_err)?;
                c.id += id_base;
                max_id = max_id.max(c.id);
                rec.conns.push(c);
            }
            b'E' => {
                let mut e: ConnEnd = serde_json::from_slice(body).map_err(json_err)?;
                prev.remove(&e.id);
                e.id += id_base;
                rec.ends.push(e);
            }
            b'V' => rec.events.push(serde_json::from_slice(body).map_err(json_err)?),
            b'P' => rec.cpu.push(serde_json::from_slice(body).map_err(json_err)?),
            b'S' => {
                if rec.header.is_none() {
                    return Err(bad(at, "samples before the header".into()));
                }
                let raw = zstd::bulk::decompress(body, MAX_BLOCK_BYTES)
                    .map_err(|e| bad(at, format!("samples block: {e}")))?;
                let rows = decode_block(&raw, &map, &mut prev).map_err(|e| bad(at, format!("samples block: {e}")))?;
                rec.samples.extend(rows.into_iter().map(|mut s| {
                    s.conn += id_base;
                    s
                }));
            }
            _ => {}
        }
        at += 9 + len;
    }
    if rec.header.is_none() {
        return Err(match rec.tail {
            Some(t) => {
                io::Error::new(io::ErrorKind::InvalidData, format!("{}: {t}, before any header", path.display()))
            }
            None => bad(8, "no header frame".into()),
        });
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::index;

    fn sample(t: u64, conn: u32, k: u64) -> Sample {
        let mut s = Sample::empty(t, conn);
        s.raw.set(index("snd_cwnd"), Some(10 + k % 7));
        s.raw.set(index("bytes_acked"), Some(k * 1448));
        s.raw.set(index("max_pacing_rate"), Some(u64::MAX));
        if k.is_multiple_of(3) {
            s.raw.set(index("rtt"), Some(1000 + k));
        }
        s
    }

    #[test]
    fn round_trip_and_cut_tail() {
        let dir = std::env::temp_dir().join(format!("tsm-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.tsm");
        let h = Header::new(100_000_000, "port 1", true, None, 5);
        let mut w = Writer::create(&path, &h).unwrap();
        w.block_rows = 50;
        let c = ConnStart {
            cookie: 7,
            cong: Some("cubic".into()),
            inode: 3,
            t_ns: 5,
            info_len: 248,
            ..ConnStart::sample(0)
        };
        w.conn(&c).unwrap();
        let mut want = Vec::new();
        for k in 0..120 {
            // Connection 3 ends at k = 60 and its id is not reused; 0 and 1 go on.
            let conn = if k < 60 && k % 3 == 2 { 3 } else { (k % 2) as u32 };
            let s = sample(1_000_000_000 + k * 100_000_000, conn, k);
            want.push(s.clone());
            w.sample(&s).unwrap();
            if k == 60 {
                w.end(&ConnEnd { id: 3, last_ns: 0, gone_ns: 0, recorder_stopped: false }).unwrap();
            }
        }
        w.event(&Event { t_ns: 9, name: "x.start".into(), fields: vec![("guid".into(), "a".into())] }).unwrap();
        w.finish().unwrap();
        let r = read(&path).unwrap();
        assert_eq!(r.header.as_ref(), Some(&h));
        assert_eq!(r.conns, vec![c]);
        assert_eq!(r.samples, want);
        assert_eq!(r.events.len(), 1);
        assert!(r.tail.is_none());
        // Every cut of the file reads up to its last complete frame, without error.
        let data = std::fs::read(&path).unwrap();
        let cut = dir.join("cut.tsm");
        let mut last = 0;
        let header_end = 8 + 9 + serde_json::to_vec(&h).unwrap().len();
        for n in (header_end..data.len()).step_by(7) {
            std::fs::write(&cut, &data[..n]).unwrap();
            let r = read(&cut).unwrap();
            assert!(r.samples.len() >= last && r.samples.len() <= 120);
            assert_eq!(r.samples[..], want[..r.samples.len()]);
            last = r.samples.len();
        }
        std::fs::write(&cut, &data[..data.len() - 1]).unwrap();
        assert!(read(&cut).unwrap().tail.unwrap().contains("cut by the end"));
        // A flipped bit is caught by the CRC.
        let mut bad = data.clone();
        let n = bad.len() - 20;
        bad[n] ^= 1;
        std::fs::write(&cut, &bad).unwrap();
        assert!(read(&cut).unwrap().tail.unwrap().contains("CRC"));
        std::fs::write(&cut, b"hello world").unwrap();
        assert!(read(&cut).unwrap_err().to_string().contains("magic"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A block whose rows all have the same fields (the usual case, taken by a shortcut) and one
    /// where one row lacks a field read back as written.
    #[test]
    fn uniform_and_mixed_presence() {
        let dir = std::env::temp_dir().join(format!("tsm-uniform-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.tsm");
        let mut w = Writer::create(&path, &Header::new(1, "", true, None, 5)).unwrap();
        let mut want = Vec::new();
        for k in 0..40u64 {
            let mut s = sample(k, (k % 4) as u32 + 1, 3 * k);
            if k == 33 {
                s.raw.set(index("snd_cwnd"), None);
            }
            want.push(s.clone());
            w.sample(&s).unwrap();
            if k == 19 {
                w.block().unwrap();
            }
        }
        w.finish().unwrap();
        assert_eq!(read(&path).unwrap().samples, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An ended connection's slot of previous values is reused by a new one, which starts from
    /// zero; ids far beyond the tracker's take the sparse path.
    #[test]
    fn bases_reused_after_an_end_and_sparse_ids() {
        let dir = std::env::temp_dir().join(format!("tsm-bases-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.tsm");
        let mut w = Writer::create(&path, &Header::new(1, "", true, None, 5)).unwrap();
        let mut want = Vec::new();
        let mut put = |w: &mut Writer, s: Sample| {
            want.push(s.clone());
            w.sample(&s).unwrap();
        };
        for k in 0..10 {
            put(&mut w, sample(k, 1, 1000 + k));
            put(&mut w, sample(k, 2, 2000 + k));
        }
        w.end(&ConnEnd { id: 1, last_ns: 9, gone_ns: 10, recorder_stopped: false }).unwrap();
        for k in 10..20 {
            put(&mut w, sample(k, 5, 50 + k));
            put(&mut w, sample(k, 2, 2000 + k));
            put(&mut w, sample(k, 1 << 30, 7 * k));
        }
        w.finish().unwrap();
        assert_eq!(read(&path).unwrap().samples, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Corrupt bodies with valid CRCs (what a buggy writer, not a crash, would leave) make
    /// errors, never panics.
    #[test]
    fn corrupt_frames_are_errors_not_panics() {
        let dir = std::env::temp_dir().join(format!("tsm-corrupt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.tsm");
        let mut w = Writer::create(&path, &Header::new(1, "", true, None, 5)).unwrap();
        for k in 0..200 {
            w.sample(&sample(k * 1000, (k % 3) as u32, k)).unwrap();
            if k % 50 == 49 {
                w.block().unwrap();
            }
        }
        w.event(&Event { t_ns: 1, name: "a".into(), fields: vec![] }).unwrap();
        w.finish().unwrap();
        let data = std::fs::read(&path).unwrap();
        // Frame starts.
        let mut frames = Vec::new();
        let mut at = 8;
        while at < data.len() {
            let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
            frames.push((at, len));
            at += 9 + len;
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let cut = dir.join("c.tsm");
        for _ in 0..400 {
            let mut d = data.clone();
            let (at, len) = frames[next() as usize % frames.len()];
            if len == 0 {
                continue;
            }
            for _ in 0..1 + next() % 4 {
                d[at + 5 + next() as usize % len] ^= 1 << (next() % 8);
            }
            // Also try the uncompressed layer: decompress, corrupt, recompress.
            if d[at + 4] == b'S' && next() % 2 == 0 {
                let mut raw = zstd::stream::decode_all(&data[at + 5..at + 5 + len]).unwrap();
                let i = next() as usize % raw.len();
                raw[i] = next() as u8;
                let z = zstd::bulk::compress(&raw, 3).unwrap();
                let mut f = d[..at].to_vec();
                f.extend_from_slice(&(z.len() as u32).to_le_bytes());
                f.push(b'S');
                f.extend_from_slice(&z);
                f.extend_from_slice(&[0; 4]);
                f.extend_from_slice(&d[at + 9 + len..]);
                d = f;
            }
            let len = u32::from_le_bytes(d[at..at + 4].try_into().unwrap()) as usize;
            let mut h = crc32fast::Hasher::new();
            h.update(&d[at + 4..at + 5 + len]);
            let crc = h.finalize().to_le_bytes();
            d[at + 5 + len..at + 9 + len].copy_from_slice(&crc);
            std::fs::write(&cut, &d).unwrap();
            let _ = read(&cut);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn append_adds_a_session_after_a_torn_tail() {
        let dir = std::env::temp_dir().join(format!("tsm-append-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.tsm");
        let conn = |id| ConnStart { cookie: 7, inode: 3, t_ns: 5, info_len: 248, ..ConnStart::sample(id) };
        let h = Header::new(1, "", true, None, 5);
        let mut w = Writer::create(&path, &h).unwrap();
        w.conn(&conn(1)).unwrap();
        w.conn(&conn(2)).unwrap();
        for k in 0..10 {
            w.sample(&sample(k, 1 + (k % 2) as u32, k)).unwrap();
        }
        w.finish().unwrap();
        drop(w);
        // A crash mid-frame leaves a torn tail, which append cuts.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[200, 0, 0, 0, b'S', 1, 2]).unwrap();
        drop(f);
        let (mut w, h2) = Writer::append(&path, &Header::new(1, "", true, None, 9)).unwrap();
        assert_eq!(h2.stream, h.stream, "the stream id carries over");
        w.conn(&conn(1)).unwrap();
        for k in 0..5 {
            w.sample(&sample(100 + k, 1, 100 + k)).unwrap();
        }
        w.finish().unwrap();
        let r = read(&path).unwrap();
        assert!(r.tail.is_none(), "{:?}", r.tail);
        assert_eq!(r.sessions, 2);
        assert_eq!(r.conns.iter().map(|c| c.id).collect::<Vec<_>>(), [1, 2, 3], "session 2's id 1 becomes 3");
        assert_eq!(r.samples_of(3).len(), 5);
        assert_eq!(r.samples_of(3)[4].get("bytes_acked"), Some(104 * 1448), "bases reset per session");
        assert_eq!(r.samples.len(), 15);
        assert_eq!(valid_len(&path).unwrap(), r.bytes);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! A trace set: a directory (a ring of files written by `tcpscope capture`, or `tcpdump -C/-G`
//! output) or several files, read as one trace in time order (thesis, appendix A.3: "find the
//! first packet after a given time, next packet, previous packet", whichever file holds them).
//!
//! - [`TraceSet::open`] lists the files, reads each one's [`Index`] sidecar when there is a
//!   valid one, otherwise only its first record's time, and orders the files by that time.
//! - [`Cursor`] seeks to a time and steps to the next or previous packet across file
//!   boundaries. It holds one block of one file in memory (an index block: ≤ 1024 packets or
//!   ≈ 1 MiB); a file without an index is indexed in memory the first time the cursor enters it.
//! - [`SetReader`] streams the packets of a time window `[from, to)` in time order, for the
//!   analysis pass: with an index, each file is read from its first block holding a packet at
//!   or after `from` to the last block holding one before `to` (without, from its beginning to
//!   its end); files are opened only when the merge reaches their first packet, so a ring costs
//!   one open file and files that overlap in time are merged packet by packet.
//!
//! The cursor visits files in order of their first packet and each file in record order: that
//! is time order when the files do not overlap in time and each file's times never decrease
//! (a ring; [`Index::sorted`] says whether a file's do). [`SetReader`] is exact either way.
//!
//! ```no_run
//! use tcpscope_core::capture::{Cursor, TraceSet};
//! let set = TraceSet::open(&["/var/lib/tcpscope/ring".into()]).unwrap();
//! let mut c = Cursor::new(set);
//! if let Some((file, rec)) = c.seek(1_795_302_498_000_000_000).unwrap() {
//!     println!("first packet at or after: file {file}, frame {}, {} ns", rec.frame, rec.ts_ns);
//! }
//! let before = c.prev().unwrap().map(|(_, r)| r.ts_ns);
//! ```

use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;

use super::index::{EVERY_BYTES, EVERY_PKTS, SIDECAR_SUFFIX};
use super::{CaptureError, CaptureReader, Compression, FileError, Format, Index, Record};

/// Why a trace set could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// A directory could not be listed.
    #[error("{}: {source}", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A directory holds no capture files.
    #[error("{}: no capture files in this directory", path.display())]
    Empty {
        /// The directory.
        path: PathBuf,
    },
    /// Standard input cannot be part of a set (it can be read only once, in order).
    #[error("standard input cannot be read as part of a trace set or with a time window")]
    Stdin,
    /// Reading a capture file failed.
    #[error(transparent)]
    File(#[from] FileError),
}

/// One file of a set.
#[derive(Debug)]
pub struct SetFile {
    /// The file.
    pub path: PathBuf,
    /// Its size when the set was opened.
    pub bytes: u64,
    /// Its index: the sidecar's, or one built in memory by the cursor.
    pub index: Option<Index>,
    /// Whether `index` came from a valid sidecar.
    pub sidecar: bool,
    /// Its first record's time (`None` when empty or unreadable).
    pub first_ts_ns: Option<u64>,
    /// Why it could not be read, if it could not be opened at all.
    pub error: Option<String>,
}

impl SetFile {
    /// Latest packet time, when known from the index.
    pub fn last_ts_ns(&self) -> Option<u64> {
        self.index.as_ref().map(|i| i.last_ts_ns)
    }
}

/// Files read as one trace, in order of their first packet.
#[derive(Debug)]
pub struct TraceSet {
    /// The files, ordered by first packet (unreadable and empty files last).
    pub files: Vec<SetFile>,
    /// Stale or invalid index sidecars that were ignored, one message each.
    pub warnings: Vec<String>,
}

/// Whether a directory entry is a capture file of a ring (not an index, a temporary or a
/// hidden file).
fn is_capture_name(name: &str) -> bool {
    !(name.starts_with('.') || name.ends_with(SIDECAR_SUFFIX) || name.ends_with(".tmp"))
}

/// Whether a file in a directory may be a capture: empty (just created by a capture), or
/// starting with a pcap, pcapng, gzip or zstd magic number. Other files in a directory (notes,
/// checksums) are not part of the trace; a file named on the command line always is.
fn looks_like_capture(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let n = match std::fs::File::open(path).and_then(|mut f| f.read(&mut magic)) {
        Ok(n) => n,
        Err(_) => return true, // let the reader report it
    };
    let m = &magic[..n];
    n == 0
        || m.starts_with(&[0x1f, 0x8b])
        || m == [0x28, 0xb5, 0x2f, 0xfd]
        || m == [0x0a, 0x0d, 0x0d, 0x0a]
        || matches!(
            m,
            [0xd4, 0xc3, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0xc3, 0xd4]
                | [0x4d, 0x3c, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0x3c, 0x4d]
                | [0x34, 0xcd, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0xcd, 0x34]
        )
}

impl TraceSet {
    /// Opens directories (every capture file in them, in name order before sorting by time)
    /// and files as one set.
    pub fn open(paths: &[PathBuf]) -> Result<TraceSet, SetError> {
        let mut list = Vec::new();
        for p in paths {
            if p.as_os_str() == "-" {
                return Err(SetError::Stdin);
            }
            if p.is_dir() {
                let dir_err = |source| SetError::Dir { path: p.clone(), source };
                let mut names = Vec::new();
                for e in std::fs::read_dir(p).map_err(dir_err)? {
                    let e = e.map_err(dir_err)?;
                    let name = e.file_name().to_string_lossy().into_owned();
                    if is_capture_name(&name)
                        && e.file_type().map(|t| t.is_file()).unwrap_or(false)
                        && looks_like_capture(&e.path())
                    {
                        names.push(e.path());
                    }
                }
                if names.is_empty() {
                    return Err(SetError::Empty { path: p.clone() });
                }
                names.sort();
                list.extend(names);
            } else {
                list.push(p.clone());
            }
        }
        let mut warnings = Vec::new();
        let mut files: Vec<SetFile> = list.into_iter().map(|path| SetFile::probe(path, &mut warnings)).collect();
        // Stable: files starting at the same time keep the order given (or the name order).
        files.sort_by_key(|f| (f.first_ts_ns.is_none(), f.first_ts_ns));
        Ok(TraceSet { files, warnings })
    }

    /// Time of the set's first packet (`None` when no file has a packet).
    pub fn start_ns(&self) -> Option<u64> {
        self.files.iter().filter_map(|f| f.first_ts_ns).min()
    }

    /// `[from, to)` of `window` placed on this set (offsets count from its first packet, clock
    /// times are in `tz` on its date); a window that ends before it starts is an error.
    pub fn window(&self, window: &super::Window, tz: &jiff::tz::TimeZone) -> Result<(u64, u64), String> {
        let (from, to) = window.resolve(self.start_ns().unwrap_or(0), tz).map_err(|e| e.to_string())?;
        if from >= to {
            return Err(format!(
                "empty time window: it ends ({}) before it starts ({})",
                super::time::clock(to, tz),
                super::time::clock(from, tz)
            ));
        }
        Ok((from, to))
    }

    /// What to tell a user whose window `[from, to)` held no packet: the window, and where the
    /// trace is.
    pub fn empty_window_text(&self, from: u64, to: u64, tz: &jiff::tz::TimeZone) -> String {
        use super::time::clock;
        let start = self
            .start_ns()
            .map_or("no packets at all".to_string(), |s| format!("its first packet is at {}", clock(s, tz)));
        let end = if to == u64::MAX { "the end".to_string() } else { clock(to, tz) };
        format!("no packets from {} to {end} ({start})", clock(from, tz))
    }

    /// Builds the index of file `i` in memory if it has none (reads the file through).
    pub fn ensure_index(&mut self, i: usize) -> Result<&Index, SetError> {
        let f = &mut self.files[i];
        if f.index.is_none() {
            let (idx, _stopped) = Index::build(&f.path, EVERY_PKTS, EVERY_BYTES)
                .map_err(|source| FileError { path: f.path.clone(), source })?;
            // A file that ends inside a record (still being written) is indexed up to there;
            // a corrupt one up to the corruption, which the reader reports when it gets there.
            f.index = Some(idx);
        }
        // Set just above.
        Ok(f.index.as_ref().expect("index present"))
    }
}

impl SetFile {
    fn probe(path: PathBuf, warnings: &mut Vec<String>) -> SetFile {
        let mut f = SetFile { path, bytes: 0, index: None, sidecar: false, first_ts_ns: None, error: None };
        match std::fs::metadata(&f.path) {
            Ok(m) => f.bytes = m.len(),
            Err(e) => {
                f.error = Some(CaptureError::Io { offset: 0, source: e }.to_string());
                return f;
            }
        }
        match Index::load(&f.path, f.bytes) {
            Ok(Some(idx)) => {
                f.first_ts_ns = (idx.packets > 0).then_some(idx.first_ts_ns);
                f.index = Some(idx);
                f.sidecar = true;
                return f;
            }
            Ok(None) => {}
            Err(e) => warnings.push(format!("{e}; reading the file instead")),
        }
        match CaptureReader::open(&f.path) {
            Ok(mut r) => match r.next_record() {
                Ok(Some(rec)) => f.first_ts_ns = Some(rec.ts_ns),
                Ok(None) => {}
                Err(CaptureError::Truncated { .. }) => {}
                Err(e) => f.error = Some(e.to_string()),
            },
            Err(e) => f.error = Some(e.to_string()),
        }
        f
    }
}

/// A packet copied out of a reader's buffer.
#[derive(Clone, Debug, Default)]
struct Owned {
    ts_ns: u64,
    data: Vec<u8>,
    orig_len: u32,
    link_type: u32,
    frame: u64,
    offset: u64,
}

impl Owned {
    fn set(&mut self, rec: &Record<'_>) {
        self.ts_ns = rec.ts_ns;
        self.data.clear();
        self.data.extend_from_slice(rec.data);
        self.orig_len = rec.orig_len;
        self.link_type = rec.link_type;
        self.frame = rec.frame;
        self.offset = rec.offset;
    }

    fn record(&self) -> Record<'_> {
        Record {
            ts_ns: self.ts_ns,
            data: &self.data,
            orig_len: self.orig_len,
            link_type: self.link_type,
            frame: self.frame,
            offset: self.offset,
        }
    }
}

/// Where a cursor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pos {
    /// Before the first packet: `next` returns the first.
    Start,
    /// On packet `recs[i]` of the loaded block.
    At(usize),
    /// After the last packet: `prev` returns the last.
    End,
}

/// Seeks by time and steps packet by packet through a [`TraceSet`] (see the module doc).
///
/// Each call returns the packet the cursor moved to, with the index of its file in
/// [`TraceSet::files`]; frame numbers and offsets are those within that file.
pub struct Cursor {
    set: TraceSet,
    /// `(file, block)` loaded in `recs`.
    loaded: Option<(usize, usize)>,
    recs: Vec<Owned>,
    /// Spare buffers from earlier blocks.
    spare: Vec<Owned>,
    pos: Pos,
    /// An open reader: `(file, reader)`.
    reader: Option<(usize, CaptureReader)>,
}

impl Cursor {
    /// A cursor before the first packet of `set`.
    pub fn new(set: TraceSet) -> Cursor {
        Cursor { set, loaded: None, recs: Vec::new(), spare: Vec::new(), pos: Pos::Start, reader: None }
    }

    /// The set.
    pub fn set(&self) -> &TraceSet {
        &self.set
    }

    fn current(&self) -> Option<(usize, Record<'_>)> {
        match (self.pos, self.loaded) {
            (Pos::At(i), Some((f, _))) => Some((f, self.recs[i].record())),
            _ => None,
        }
    }

    /// Number of blocks of file `f` (0 when empty or unreadable).
    fn blocks(&mut self, f: usize) -> Result<usize, SetError> {
        if self.set.files[f].error.is_some() || self.set.files[f].first_ts_ns.is_none() {
            return Ok(0);
        }
        Ok(self.set.ensure_index(f)?.blocks.len())
    }

    /// Reads block `b` of file `f` into `recs`.
    fn load(&mut self, f: usize, b: usize) -> Result<(), SetError> {
        if self.loaded == Some((f, b)) {
            return Ok(());
        }
        self.set.ensure_index(f)?;
        let file = &self.set.files[f];
        let idx = file.index.as_ref().expect("ensured above");
        let (first, end) = idx.block_frames(b);
        let (_, _, offset) = idx.blocks[b];
        let seekable = idx.seekable;
        let path = file.path.clone();
        let ferr = |source| SetError::File(FileError { path: path.clone(), source });
        // Reuse the open reader when it can get there (forward, or any plain file).
        let reuse = match &self.reader {
            Some((rf, r)) => *rf == f && seekable && (r.seek_handle.is_some() || r.position() <= offset),
            None => false,
        };
        if !reuse {
            self.reader = Some((f, CaptureReader::open(&path).map_err(ferr)?));
        }
        let r = &mut self.reader.as_mut().expect("set above").1;
        if seekable {
            r.seek_to(offset, first).map_err(ferr)?;
        } else {
            // Interfaces change mid-file: read from the start of the file to the block.
            if reuse {
                *r = CaptureReader::open(&path).map_err(ferr)?;
            }
            for _ in 1..first {
                if r.next_record().map_err(ferr)?.is_none() {
                    break;
                }
            }
        }
        self.spare.append(&mut self.recs);
        for _ in first..end {
            match r.next_record() {
                Ok(Some(rec)) => {
                    let mut o = self.spare.pop().unwrap_or_default();
                    o.set(&rec);
                    self.recs.push(o);
                }
                Ok(None) | Err(CaptureError::Truncated { .. }) => break,
                Err(e) => {
                    self.loaded = None;
                    return Err(ferr(e));
                }
            }
        }
        self.loaded = Some((f, b));
        Ok(())
    }

    /// Loads the first non-empty block at or after `(f, b)`, positioned on its first packet.
    fn forward_from(&mut self, mut f: usize, mut b: usize) -> Result<Option<(usize, Record<'_>)>, SetError> {
        while f < self.set.files.len() {
            if b < self.blocks(f)? {
                self.load(f, b)?;
                if !self.recs.is_empty() {
                    self.pos = Pos::At(0);
                    return Ok(self.current());
                }
                b += 1;
            } else {
                f += 1;
                b = 0;
            }
        }
        self.pos = Pos::End;
        Ok(None)
    }

    /// Loads the last non-empty block before `(f, b)` (exclusive), positioned on its last packet.
    fn backward_from(&mut self, mut f: usize, mut b: usize) -> Result<Option<(usize, Record<'_>)>, SetError> {
        loop {
            if b == 0 {
                if f == 0 {
                    self.pos = Pos::Start;
                    return Ok(None);
                }
                f -= 1;
                b = self.blocks(f)?;
                continue;
            }
            b -= 1;
            self.load(f, b)?;
            if !self.recs.is_empty() {
                self.pos = Pos::At(self.recs.len() - 1);
                return Ok(self.current());
            }
        }
    }

    /// Moves to the next packet; `None` past the last one.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<(usize, Record<'_>)>, SetError> {
        match (self.pos, self.loaded) {
            (Pos::Start, _) => self.forward_from(0, 0),
            (Pos::End, _) => Ok(None),
            (Pos::At(i), Some((f, b))) => {
                if i + 1 < self.recs.len() {
                    self.pos = Pos::At(i + 1);
                    Ok(self.current())
                } else {
                    self.forward_from(f, b + 1)
                }
            }
            (Pos::At(_), None) => self.forward_from(0, 0),
        }
    }

    /// Moves to the previous packet; `None` before the first one.
    pub fn prev(&mut self) -> Result<Option<(usize, Record<'_>)>, SetError> {
        match (self.pos, self.loaded) {
            (Pos::Start, _) => Ok(None),
            (Pos::End, _) => {
                let n = self.set.files.len();
                self.backward_from(n, 0)
            }
            (Pos::At(i), Some((f, b))) => {
                if i > 0 {
                    self.pos = Pos::At(i - 1);
                    Ok(self.current())
                } else {
                    self.backward_from(f, b)
                }
            }
            (Pos::At(_), None) => Ok(None),
        }
    }

    /// Moves to the first packet at or after `ts_ns` (`None`, positioned after the last packet,
    /// when there is none).
    pub fn seek(&mut self, ts_ns: u64) -> Result<Option<(usize, Record<'_>)>, SetError> {
        // The last file starting at or before the time holds it, unless it ends before it.
        let n_start = self.set.files.partition_point(|f| f.first_ts_ns.is_some_and(|t| t <= ts_ns));
        let mut found = if n_start == 0 {
            self.forward_from(0, 0)?.map(|(f, r)| (f, r.ts_ns))
        } else {
            let mut f = n_start - 1;
            // Earlier files may end exactly at the time (equal times across a boundary).
            while f > 0 && self.blocks(f - 1)? > 0 && self.set.ensure_index(f - 1)?.last_ts_ns >= ts_ns {
                f -= 1;
            }
            let b = self.set.ensure_index(f)?.start_block(ts_ns);
            self.forward_from(f, b)?.map(|(f, r)| (f, r.ts_ns))
        };
        while let Some((_, t)) = found {
            if t >= ts_ns {
                break;
            }
            // Within the loaded block first, then on through the following ones.
            if let (Pos::At(i), Some(_)) = (self.pos, self.loaded)
                && let Some(j) = self.recs[i..].iter().position(|r| r.ts_ns >= ts_ns)
            {
                self.pos = Pos::At(i + j);
                return Ok(self.current());
            }
            if let (Pos::At(_), Some(_)) = (self.pos, self.loaded) {
                self.pos = Pos::At(self.recs.len() - 1);
            }
            found = self.next()?.map(|(f, r)| (f, r.ts_ns));
        }
        Ok(self.current())
    }
}

/// An open file of a [`SetReader`] with its next packet.
struct Active {
    file: usize,
    reader: CaptureReader,
    head: Owned,
    /// Stop at the first packet at or after the window's end (times known to never decrease).
    sorted: bool,
    /// No packet of the window at or after this frame (from the index's block ranges).
    stop_frame: u64,
}

/// Streams the packets of a window `[from, to)` of a [`TraceSet`] in time order (see the
/// module doc). Frame numbers and offsets are those within each packet's file.
pub struct SetReader<'s> {
    set: &'s TraceSet,
    from: u64,
    to: u64,
    /// Files still to open, in order of first packet.
    pending: VecDeque<usize>,
    active: Vec<Active>,
    current: Owned,
    errors: VecDeque<(usize, CaptureError)>,
    /// Files opened (in order) with their format and compression, for their summaries.
    pub opened: Vec<(usize, Format, Compression)>,
    /// Records read from the files, in the window or not (what the indexes saved shows here).
    pub records_read: u64,
    /// Records with an out-of-range timestamp fraction, by file (index into the set's files).
    pub bad_timestamps: Vec<u64>,
    /// Stretches skipped as damaged, by file (filled when the file is done).
    pub damage: Vec<Vec<super::Damage>>,
}

impl<'s> SetReader<'s> {
    /// A reader of the packets of `set` with `from <= ts_ns < to`; `to == u64::MAX` is no end
    /// at all.
    pub fn new(set: &'s TraceSet, from: u64, to: u64) -> SetReader<'s> {
        let pending = (0..set.files.len())
            .filter(|&i| {
                let f = &set.files[i];
                let Some(mut first) = f.first_ts_ns else { return false };
                if let Some(idx) = &f.index {
                    first = idx.ranges.iter().map(|r| r.0).min().unwrap_or(first);
                }
                (to == u64::MAX || first < to) && f.last_ts_ns().is_none_or(|last| last >= from)
            })
            .collect();
        SetReader {
            set,
            from,
            to,
            pending,
            active: Vec::new(),
            current: Owned::default(),
            errors: VecDeque::new(),
            opened: Vec::new(),
            records_read: 0,
            bad_timestamps: vec![0; set.files.len()],
            damage: vec![Vec::new(); set.files.len()],
        }
    }

    /// Opens file `i` at the index block before the window (or at its start) and reads up to
    /// its first packet in the window.
    fn open(&mut self, i: usize) {
        let f = &self.set.files[i];
        let mut reader = match CaptureReader::open(&f.path) {
            Ok(r) => r,
            Err(e) => return self.errors.push_back((i, e)),
        };
        self.opened.push((i, reader.format(), reader.compression()));
        let (mut sorted, mut stop_frame) = (false, u64::MAX);
        if let Some(idx) = &f.index {
            sorted = idx.sorted;
            stop_frame = idx.stop_frame(self.to);
            if idx.seekable && !idx.blocks.is_empty() {
                let (_, frame, offset) = idx.blocks[idx.start_block(self.from)];
                if let Err(e) = reader.seek_to(offset, frame) {
                    return self.errors.push_back((i, e));
                }
            }
        }
        let mut a = Active { file: i, reader, head: Owned::default(), sorted, stop_frame };
        if self.advance(&mut a) {
            self.active.push(a);
        }
    }

    /// Reads `a`'s next packet in the window into its head; false when the file is done.
    fn advance(&mut self, a: &mut Active) -> bool {
        let more = self.advance_to_window(a);
        self.bad_timestamps[a.file] = a.reader.bad_timestamps;
        if !more {
            self.damage[a.file] = a.reader.damage();
        }
        more
    }

    fn advance_to_window(&mut self, a: &mut Active) -> bool {
        loop {
            match a.reader.next_record() {
                Ok(Some(rec)) => {
                    self.records_read += 1;
                    if rec.frame >= a.stop_frame {
                        return false;
                    }
                    if rec.ts_ns >= self.to && self.to != u64::MAX {
                        if a.sorted {
                            return false;
                        }
                        continue;
                    }
                    if rec.ts_ns < self.from {
                        continue;
                    }
                    a.head.set(&rec);
                    return true;
                }
                Ok(None) => return false,
                Err(e) => {
                    self.errors.push_back((a.file, e));
                    return false;
                }
            }
        }
    }

    /// The next packet of the window with the index of its file, or an error of file `i`
    /// (which is then finished; call again to go on with the others).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<(usize, Record<'_>), (usize, CaptureError)>> {
        loop {
            if let Some(e) = self.errors.pop_front() {
                return Some(Err(e));
            }
            let min = self
                .active
                .iter()
                .enumerate()
                .min_by_key(|(_, a)| (a.head.ts_ns, a.file))
                .map(|(k, a)| (k, a.head.ts_ns));
            // Open the files whose first packet comes before the earliest head.
            if let Some(&p) = self.pending.front()
                && min.is_none_or(|(_, t)| self.set.files[p].first_ts_ns.is_some_and(|ft| ft <= t))
            {
                self.pending.pop_front();
                self.open(p);
                continue;
            }
            let (k, _) = min?;
            let mut a = self.active.swap_remove(k);
            std::mem::swap(&mut self.current, &mut a.head);
            let file = a.file;
            if self.advance(&mut a) {
                self.active.push(a);
            }
            return Some(Ok((file, self.current.record())));
        }
    }
}

#[cfg(test)]
#[path = "set_tests.rs"]
mod tests;

//! The index of one capture file: where its packets are, by time, so that a time lookup reads
//! one small JSON file and one block of the capture instead of the whole capture.
//!
//! `tcpscope capture` writes one beside every file it closes, named after it with
//! [`SIDECAR_SUFFIX`] appended (`tcpscope-20261122T120600.000000Z.pcap.idx.json`). For other
//! files the [`TraceSet`](super::TraceSet) builds the same thing in memory on first need
//! ([`Index::build`]).
//!
//! # Format (version 1)
//!
//! One JSON object (schema only ever gains fields; readers ignore fields they do not know):
//!
//! | field | meaning |
//! |---|---|
//! | `tcpscope_index` | format version, `1` |
//! | `file_bytes` | size of the capture file when indexed; an index whose size does not match the file is stale and ignored |
//! | `format` | `"pcap"` or `"pcapng"` |
//! | `packets` | packet records in the file |
//! | `first_ts_ns` | time of the first record, ns since the Unix epoch (0 when empty) |
//! | `last_ts_ns` | the latest record time in the file (not necessarily the last record's) |
//! | `sorted` | whether record times never decrease in file order (what a time lookup assumes) |
//! | `seekable` | whether every interface block comes before the first packet, so a reader may start at any entry |
//! | `blocks` | `[ts_ns, frame, offset]` of the first record of each block: its time, its 1-based frame number in the file, and the byte offset of its record header (in the decompressed file). The first entry is the first packet; a new block starts every `every_pkts` packets or once `every_bytes` bytes of file have passed, whichever is first. |
//! | `every_pkts`, `every_bytes` | those two limits |
//! | `ranges` | `[min_ts_ns, max_ts_ns]` of each block, in the order of `blocks`: with them a window is found by seeking even in a file whose times go back now and then (packets timestamped on several CPUs) |
//! | `capture` | optional, written by `tcpscope capture`: `{"received": n, "dropped": n, "if_dropped": n}`, libpcap's counters over this file's lifetime (packets the kernel received for the filter, dropped for lack of buffer space, dropped by the interface) |

use std::io;
use std::path::{Path, PathBuf};

use super::{CaptureError, CaptureReader, Format};

/// Suffix appended to a capture file's name to name its index.
pub const SIDECAR_SUFFIX: &str = ".idx.json";
/// Default block length in packets.
pub const EVERY_PKTS: u64 = 1024;
/// Default block length in bytes: keeps a block (what a cursor holds in memory) near 1 MiB
/// whatever the snaplen.
pub const EVERY_BYTES: u64 = 1 << 20;

/// Capture counters of libpcap over the life of one file (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CaptureCounters {
    /// Packets received by the kernel for this capture.
    pub received: u64,
    /// Packets dropped because the capture buffer was full.
    pub dropped: u64,
    /// Packets dropped by the interface or its driver.
    pub if_dropped: u64,
}

/// The index of one capture file (see the module doc for the meaning of each field).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Index {
    /// Format version.
    pub tcpscope_index: u32,
    /// Size of the capture file when indexed.
    pub file_bytes: u64,
    /// Capture format.
    pub format: Format,
    /// Packet records.
    pub packets: u64,
    /// First record's time.
    pub first_ts_ns: u64,
    /// Latest record time.
    pub last_ts_ns: u64,
    /// Record times never decrease.
    pub sorted: bool,
    /// A reader may start at any block.
    pub seekable: bool,
    /// Block length limit in packets.
    pub every_pkts: u64,
    /// Block length limit in bytes.
    pub every_bytes: u64,
    /// `(ts_ns, frame, offset)` of each block's first record.
    pub blocks: Vec<(u64, u64, u64)>,
    /// `(min_ts_ns, max_ts_ns)` of each block (empty in an index that lacks them).
    #[serde(default)]
    pub ranges: Vec<(u64, u64)>,
    /// libpcap's counters while the file was written, if written by `tcpscope capture`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureCounters>,
}

/// Builds an [`Index`] record by record, as a file is read or written.
#[derive(Debug)]
pub struct IndexBuilder {
    idx: Index,
    /// Offset of the current block's first record.
    block_offset: u64,
    last_ts_ns: u64,
}

impl IndexBuilder {
    /// A builder starting a new block every `every_pkts` packets or `every_bytes` bytes.
    pub fn new(format: Format, every_pkts: u64, every_bytes: u64) -> Self {
        IndexBuilder {
            idx: Index {
                tcpscope_index: 1,
                file_bytes: 0,
                format,
                packets: 0,
                first_ts_ns: 0,
                last_ts_ns: 0,
                sorted: true,
                seekable: true,
                every_pkts: every_pkts.max(1),
                every_bytes: every_bytes.max(1),
                blocks: Vec::new(),
                ranges: Vec::new(),
                capture: None,
            },
            block_offset: 0,
            last_ts_ns: 0,
        }
    }

    /// Adds the record numbered `frame` whose header starts at byte `offset`.
    pub fn add(&mut self, ts_ns: u64, frame: u64, offset: u64) {
        let i = &mut self.idx;
        let new_block = match i.blocks.last() {
            None => true,
            Some(&(_, f, _)) => frame - f >= i.every_pkts || offset - self.block_offset >= i.every_bytes,
        };
        if new_block {
            i.blocks.push((ts_ns, frame, offset));
            i.ranges.push((ts_ns, ts_ns));
            self.block_offset = offset;
        } else if let Some(r) = i.ranges.last_mut() {
            r.0 = r.0.min(ts_ns);
            r.1 = r.1.max(ts_ns);
        }
        if i.packets == 0 {
            i.first_ts_ns = ts_ns;
        } else if ts_ns < self.last_ts_ns {
            i.sorted = false;
        }
        i.packets += 1;
        i.last_ts_ns = i.last_ts_ns.max(ts_ns);
        self.last_ts_ns = ts_ns;
    }

    /// Records that interfaces or sections changed after the first packet (pcapng), so a reader
    /// must start at the beginning.
    pub fn not_seekable(&mut self) {
        self.idx.seekable = false;
    }

    /// Packets added so far.
    pub fn packets(&self) -> u64 {
        self.idx.packets
    }

    /// The index of a file of `file_bytes` bytes.
    pub fn finish(mut self, file_bytes: u64, capture: Option<CaptureCounters>) -> Index {
        self.idx.file_bytes = file_bytes;
        self.idx.capture = capture;
        self.idx
    }
}

/// Why an index could not be read.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The sidecar could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The index file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The sidecar is not a valid index.
    #[error("{}: not a valid tcpscope index: {source}", path.display())]
    Invalid {
        /// The index file.
        path: PathBuf,
        /// Where and why parsing failed (line and column).
        source: serde_json::Error,
    },
    /// The capture file changed since it was indexed.
    #[error("{}: stale index ({indexed} bytes indexed, the file has {actual})", path.display())]
    Stale {
        /// The index file.
        path: PathBuf,
        /// `file_bytes` in the index.
        indexed: u64,
        /// The capture's size now.
        actual: u64,
    },
}

impl Index {
    /// The sidecar path of a capture file.
    pub fn sidecar(capture: &Path) -> PathBuf {
        let mut s = capture.as_os_str().to_owned();
        s.push(SIDECAR_SUFFIX);
        PathBuf::from(s)
    }

    /// Reads the sidecar of `capture`: `Ok(None)` when there is none, an error when it is
    /// invalid or stale (the caller then builds a fresh index).
    pub fn load(capture: &Path, capture_bytes: u64) -> Result<Option<Index>, IndexError> {
        let path = Self::sidecar(capture);
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(IndexError::Io { path, source }),
        };
        let idx: Index =
            serde_json::from_slice(&text).map_err(|source| IndexError::Invalid { path: path.clone(), source })?;
        if idx.file_bytes != capture_bytes {
            return Err(IndexError::Stale { path, indexed: idx.file_bytes, actual: capture_bytes });
        }
        Ok(Some(idx))
    }

    /// Writes the sidecar of `capture` atomically (a temporary file renamed into place), so a
    /// reader never sees half an index.
    pub fn save(&self, capture: &Path) -> io::Result<()> {
        let path = Self::sidecar(capture);
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let text = serde_json::to_vec(self).map_err(io::Error::other)?;
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)
    }

    /// Indexes a capture by reading it through. Returns the index of what could be read and
    /// the error that stopped reading, if any (a record cut off at the end is normal for a file
    /// still being written).
    pub fn build(
        path: &Path,
        every_pkts: u64,
        every_bytes: u64,
    ) -> Result<(Index, Option<CaptureError>), CaptureError> {
        let file_bytes = std::fs::metadata(path).map_err(|source| CaptureError::Io { offset: 0, source })?.len();
        let mut r = CaptureReader::open(path)?;
        let mut b = IndexBuilder::new(r.format(), every_pkts, every_bytes);
        let mut sections = 0u64;
        let mut ifaces = 0usize;
        let err = loop {
            match r.next_record() {
                Ok(Some(rec)) => {
                    let (ts, frame, off) = (rec.ts_ns, rec.frame, rec.offset);
                    b.add(ts, frame, off);
                }
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
            // Interfaces or sections appearing after the first packet make offsets unusable on
            // their own.
            if b.packets() == 1 {
                sections = r.sections;
                ifaces = r.interfaces.len();
            } else if r.sections != sections || r.interfaces.len() != ifaces {
                b.not_seekable();
            }
        };
        Ok((b.finish(file_bytes, None), err))
    }

    /// The block holding the last record whose time is before `ts_ns` (where a search for the
    /// first record at or after `ts_ns` starts), assuming sorted times.
    pub fn block_before(&self, ts_ns: u64) -> usize {
        self.blocks.partition_point(|&(t, _, _)| t < ts_ns).saturating_sub(1)
    }

    /// The block where reading for a window starting at `from_ns` must start: the first block
    /// holding a packet at or after it (all earlier blocks are wholly before it). Without
    /// `ranges`, [`Index::block_before`] for a sorted file, else the first block.
    pub fn start_block(&self, from_ns: u64) -> usize {
        if self.ranges.len() == self.blocks.len() && !self.blocks.is_empty() {
            return self.ranges.iter().position(|&(_, max)| max >= from_ns).unwrap_or(self.blocks.len() - 1);
        }
        if self.sorted { self.block_before(from_ns) } else { 0 }
    }

    /// The first frame from which no packet is before `to_ns`: reading for a window ending at
    /// `to_ns` can stop there (`u64::MAX` when unknown).
    pub fn stop_frame(&self, to_ns: u64) -> u64 {
        if self.ranges.len() != self.blocks.len() {
            return u64::MAX;
        }
        let mut stop = u64::MAX;
        for (b, &(min, _)) in self.ranges.iter().enumerate().rev() {
            if min < to_ns {
                break;
            }
            stop = self.blocks[b].1;
        }
        stop
    }

    /// Frame numbers `[first, end)` of block `b`.
    pub fn block_frames(&self, b: usize) -> (u64, u64) {
        let first = self.blocks[b].1;
        let end = self.blocks.get(b + 1).map_or(self.packets + 1, |e| e.1);
        (first, end)
    }
}

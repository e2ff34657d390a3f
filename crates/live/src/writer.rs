//! One file of the ring: pcap or pcapng bytes serialised by pcap-parser, with the file's
//! [`Index`] built as records are written (the byte offset of each record is the count of bytes
//! written before it, so the index costs no extra I/O).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use pcap_parser::pcapng::{EnhancedPacketBlock, InterfaceDescriptionBlock, SectionHeaderBlock};
use pcap_parser::{LegacyPcapBlock, Linktype, PcapHeader, ToVec};
use tcpscope_core::capture::index::CaptureCounters;
use tcpscope_core::capture::{Format, Index, IndexBuilder};

/// An open ring file.
pub struct RingFile {
    /// Its path.
    pub path: PathBuf,
    out: BufWriter<File>,
    format: Format,
    /// Bytes written so far (the next record's offset).
    pub bytes: u64,
    frames: u64,
    index: IndexBuilder,
    /// Time of the first packet (ns since the epoch).
    pub first_ts_ns: u64,
}

fn gen_err(e: impl std::fmt::Debug) -> io::Error {
    io::Error::other(format!("serialising a capture block: {e:?}"))
}

impl RingFile {
    /// Creates `path` (which must not exist) and writes the file header.
    pub fn create(
        path: &Path,
        format: Format,
        link_type: i32,
        snaplen: u32,
        every_pkts: u64,
        first_ts_ns: u64,
    ) -> io::Result<RingFile> {
        let file = File::options().write(true).create_new(true).open(path)?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let header = match format {
            Format::Pcap => {
                let mut h = PcapHeader::new();
                h.snaplen = snaplen;
                h.network = Linktype(link_type);
                h.to_vec().map_err(gen_err)?
            }
            Format::Pcapng => {
                let mut shb = SectionHeaderBlock {
                    block_type: 0,
                    block_len1: 0,
                    bom: pcap_parser::pcapng::BOM_MAGIC,
                    major_version: 1,
                    minor_version: 0,
                    section_len: -1,
                    options: vec![],
                    block_len2: 0,
                };
                let mut idb = InterfaceDescriptionBlock {
                    block_type: 0,
                    block_len1: 0,
                    linktype: Linktype(link_type),
                    reserved: 0,
                    snaplen,
                    options: vec![],
                    block_len2: 0,
                    if_tsresol: 6,
                    if_tsoffset: 0,
                };
                let mut v = shb.to_vec().map_err(gen_err)?;
                v.extend(idb.to_vec().map_err(gen_err)?);
                v
            }
        };
        out.write_all(&header)?;
        Ok(RingFile {
            path: path.to_path_buf(),
            out,
            format,
            bytes: header.len() as u64,
            frames: 0,
            index: IndexBuilder::new(format, every_pkts, tcpscope_core::capture::index::EVERY_BYTES),
            first_ts_ns,
        })
    }

    /// Appends one packet captured at `ts_ns` (µs resolution) with `orig_len` bytes on the wire.
    pub fn write(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> io::Result<()> {
        let us = ts_ns / 1000;
        let rec = match self.format {
            Format::Pcap => LegacyPcapBlock {
                ts_sec: (us / 1_000_000) as u32,
                ts_usec: (us % 1_000_000) as u32,
                caplen: data.len() as u32,
                origlen: orig_len,
                data,
            }
            .to_vec_raw()
            .map_err(gen_err)?,
            Format::Pcapng => EnhancedPacketBlock {
                block_type: 0,
                block_len1: 0,
                if_id: 0,
                ts_high: (us >> 32) as u32,
                ts_low: us as u32,
                caplen: data.len() as u32,
                origlen: orig_len,
                data,
                options: vec![],
                block_len2: 0,
            }
            .to_vec()
            .map_err(gen_err)?,
        };
        self.out.write_all(&rec)?;
        self.frames += 1;
        self.index.add(us * 1000, self.frames, self.bytes);
        self.bytes += rec.len() as u64;
        Ok(())
    }

    /// Hands buffered records to the kernel, so readers of the ring see them (called once a
    /// second: the newest packets are at most a second away from analysis, and from disk after a
    /// crash).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Packets written.
    pub fn packets(&self) -> u64 {
        self.frames
    }

    /// Flushes, syncs and closes the file, then writes its index beside it.
    pub fn close(mut self, counters: Option<CaptureCounters>) -> io::Result<Index> {
        self.out.flush()?;
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        let idx = self.index.finish(self.bytes, counters);
        idx.save(&self.path)?;
        Ok(idx)
    }
}

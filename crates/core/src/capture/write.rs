//! Writing records as a classic pcap file: what `tcpscope repair` leaves of a damaged capture,
//! readable by every tool.

use std::io::{self, Write};

use super::Record;
use super::resync::MAX_ORIG_LEN;

/// Writes a little-endian, nanosecond-resolution pcap file (magic `a1b23c4d`): one link type,
/// records as given.
pub struct PcapWriter<W: Write> {
    out: W,
    link_type: u32,
    /// Records written.
    pub records: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    pub fn new(mut out: W, link_type: u32, snaplen: u32) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&[0; 8]); // thiszone, sigfigs
        h.extend_from_slice(&snaplen.to_le_bytes());
        h.extend_from_slice(&link_type.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, link_type, records: 0 })
    }

    /// The link type every record must have.
    pub fn link_type(&self) -> u32 {
        self.link_type
    }

    /// Writes one record (its link type is not checked: see [`PcapWriter::link_type`]). An
    /// original length no pcap reader would believe (a damaged one, above 16 MiB, possible in
    /// a pcapng block whose lengths frame it) is written as the captured length.
    pub fn write(&mut self, rec: &Record<'_>) -> io::Result<()> {
        let sec = (rec.ts_ns / 1_000_000_000).min(u32::MAX as u64) as u32;
        let ns = (rec.ts_ns % 1_000_000_000) as u32;
        let caplen = rec.data.len() as u32;
        let orig = if rec.orig_len > MAX_ORIG_LEN || rec.orig_len < caplen { caplen } else { rec.orig_len };
        let mut h = [0u8; 16];
        for (i, w) in [sec, ns, caplen, orig].into_iter().enumerate() {
            h[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        self.out.write_all(&h)?;
        self.out.write_all(rec.data)?;
        self.records += 1;
        Ok(())
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

//! The router's record of each packet its random-loss rule dropped: the rule logs the packet to
//! netfilter's log (nflog group [`GROUP`], with the direction as the log prefix) before it
//! drops it, and `tcpdump -i nflog:1` in the router's namespace writes the log to the run's
//! `drops.pcap` (link type NFLOG, each record written whole as it comes: readable even when the
//! run is killed). nflog groups belong to a network namespace, so every run's router has a
//! group 1 of its own and any number of runs record side by side.
//!
//! [`read`] turns that file into [`Dropped`] packets for `result.json`. The NFLOG records are
//! parsed here, by hand: no maintained crate reads them, and a record is a 4-byte header and
//! type-length-value attributes (<https://www.tcpdump.org/linktypes/LINKTYPE_NFLOG.html>);
//! the packet inside is decoded by the core's decoder.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The nflog group the router's loss rules log to (per network namespace).
pub const GROUP: u16 = 1;

/// The file the router's drops are recorded in.
pub const FILE: &str = "drops.pcap";

/// LINKTYPE_NFLOG.
const LINKTYPE_NFLOG: u32 = 239;
/// NFULA_PAYLOAD: the packet, from its network header.
const NFULA_PAYLOAD: u16 = 9;
/// NFULA_PREFIX: the log statement's prefix, NUL-terminated.
const NFULA_PREFIX: u16 = 10;

/// One packet the router's random-loss rule dropped, as the rule saw it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Dropped {
    /// `a2b` (sender → receiver) or `b2a`: the prefix of the rule that dropped it.
    pub dir: String,
    /// Its frame number in `drops.pcap` (1-based).
    pub frame: u64,
    /// When the log record reached the capture, Unix time in seconds (the kernel gives a
    /// forwarded packet's log no time of its own; libpcap stamps it when it reads it, which
    /// is after the drop, usually by microseconds).
    pub time: f64,
    /// Source address.
    pub src: String,
    /// Source port.
    pub sport: u16,
    /// Destination address.
    pub dst: String,
    /// Destination port.
    pub dport: u16,
    /// Sequence number as on the wire.
    pub seq: u32,
    /// Acknowledgment number as on the wire (0 when the ACK flag is off).
    pub ack: u32,
    /// TCP payload length (bytes), from the IP header: a TSO super-segment's whole length.
    pub len: u32,
    /// Flag letters as `tcpscope print` writes them (S SYN, F FIN, R RST, P PSH, A ACK, ...).
    pub flags: String,
    /// The IP header's identification field.
    pub ip_id: u16,
}

/// The drops recorded in `path` (an NFLOG capture); an error names the file and, for a damaged
/// record, its frame and byte offset.
pub fn read(path: &Path) -> Result<Vec<Dropped>, String> {
    let name = path.display();
    let mut r = tcpscope_core::capture::CaptureReader::open(path).map_err(|e| format!("{name}: {e}"))?;
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().map_err(|e| format!("{name}: {e}"))? {
        if rec.link_type != LINKTYPE_NFLOG {
            return Err(format!("{name}: link type {}, not NFLOG ({LINKTYPE_NFLOG})", rec.link_type));
        }
        let (prefix, packet) = nflog(rec.data).map_err(|e| format!("{name}: frame {}: {e}", rec.frame))?;
        let s = tcpscope_core::decode::decode(tcpscope_core::decode::link::linktype::RAW, packet, packet.len() as u32)
            .map_err(|e| format!("{name}: frame {}: not a TCP packet: {e:?}", rec.frame))?;
        out.push(Dropped {
            dir: prefix.to_string(),
            frame: rec.frame,
            time: rec.ts_ns as f64 / 1e9,
            src: s.src.to_string(),
            sport: s.sport,
            dst: s.dst.to_string(),
            dport: s.dport,
            seq: s.seq.0,
            ack: if s.flags.has(tcpscope_core::decode::Flags::ACK) { s.ack.0 } else { 0 },
            len: s.payload_len,
            flags: tcpscope_core::export::packet::flag_letters(s.flags).as_str().to_string(),
            ip_id: s.ip_id,
        });
    }
    Ok(out)
}

/// The prefix and the packet of one NFLOG record. Its attributes' lengths and types are in the
/// byte order of the host that wrote it: the first attribute's length tells which (read the
/// wrong way, a length of 4 to 255 bytes is a multiple of 256, longer than the record).
fn nflog(rec: &[u8]) -> Result<(&str, &[u8]), String> {
    if rec.len() < 8 {
        return Err(format!("NFLOG record of {} bytes", rec.len()));
    }
    let le = {
        let l = u16::from_le_bytes([rec[4], rec[5]]) as usize;
        (4..=rec.len() - 4).contains(&l)
    };
    let u16_at = |i: usize| {
        let b = [rec[i], rec[i + 1]];
        if le { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) }
    };
    let (mut prefix, mut payload) = (None, None);
    let mut at = 4;
    while at + 4 <= rec.len() {
        let (len, kind) = (u16_at(at) as usize, u16_at(at + 2) & 0x7fff);
        if len < 4 || at + len > rec.len() {
            return Err(format!("NFLOG attribute at byte {at} of the record: length {len}"));
        }
        let value = &rec[at + 4..at + len];
        match kind {
            NFULA_PAYLOAD => payload = Some(value),
            NFULA_PREFIX => {
                let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
                prefix = Some(std::str::from_utf8(&value[..end]).map_err(|_| "NFLOG prefix not UTF-8".to_string())?);
            }
            _ => {}
        }
        at += len.div_ceil(4) * 4;
    }
    match (prefix, payload) {
        (Some(p), Some(d)) => Ok((p, d)),
        (None, _) => Err("NFLOG record without a prefix (the direction)".into()),
        (_, None) => Err("NFLOG record without the packet".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An NFLOG record as this machine's libpcap wrote it (little-endian attributes): a packet
    /// header, prefix `a2b`, the out-device, uid, gid, then a SYN 127.0.0.1:35800 → :7.
    const RECORD: &str = "02000001 08000100 08000300 08000a00 61326200 08000500 00000001 08000b00 00000000 \
        08000e00 00000000 40000900 4500003c f04f4000 40064c6a 7f000001 7f000001 8bd80007 3cdc3720 00000000 \
        a002ffd7 fe300000 0204ffd7 0402080a a50d4c21 00000000 0103030a";

    fn bytes(hex: &str) -> Vec<u8> {
        let h: String = hex.chars().filter(|c| !c.is_whitespace()).collect();
        (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect()
    }

    fn pcap(records: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for w in [0xA1B2_C3D4u32, 0x0004_0002, 0, 0, 262144, LINKTYPE_NFLOG] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for (i, r) in records.iter().enumerate() {
            for w in [1_800_000_000u32 + i as u32, 500_000, r.len() as u32, r.len() as u32] {
                out.extend_from_slice(&w.to_le_bytes());
            }
            out.extend_from_slice(r);
        }
        out
    }

    #[test]
    fn a_logged_syn_is_read_with_its_direction() {
        let rec = bytes(RECORD);
        let (prefix, packet) = nflog(&rec).unwrap();
        assert_eq!((prefix, packet.len()), ("a2b", 60));
        let dir = std::env::temp_dir().join(format!("tcpscope-drops-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("drops.pcap");
        std::fs::write(&f, pcap(std::slice::from_ref(&rec))).unwrap();
        let d = read(&f).unwrap();
        assert_eq!(
            d,
            vec![Dropped {
                dir: "a2b".into(),
                frame: 1,
                time: 1_800_000_000.5,
                src: "127.0.0.1".into(),
                sport: 35800,
                dst: "127.0.0.1".into(),
                dport: 7,
                seq: 0x3cdc_3720,
                ack: 0,
                len: 0,
                flags: "S".into(),
                ip_id: 0xf04f,
            }]
        );
        // Attributes written big-endian (another host's file) read the same.
        let mut be = rec.clone();
        let mut at = 4;
        while at + 4 <= be.len() {
            let len = u16::from_le_bytes([be[at], be[at + 1]]) as usize;
            be.swap(at, at + 1);
            be.swap(at + 2, at + 3);
            at += len.div_ceil(4) * 4;
        }
        assert_eq!(nflog(&be).unwrap(), (prefix, packet));
        // A record cut inside an attribute, or without its prefix: an error naming the frame.
        std::fs::write(&f, pcap(&[rec.clone(), rec[..40].to_vec()])).unwrap();
        let e = read(&f).unwrap_err();
        assert!(e.contains("drops.pcap: frame 2: NFLOG attribute at byte 36"), "{e}");
        let mut anon = rec.clone();
        anon[14..16].copy_from_slice(&0x7fffu16.to_le_bytes());
        std::fs::write(&f, pcap(&[anon])).unwrap();
        assert!(read(&f).unwrap_err().contains("frame 1: NFLOG record without a prefix"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

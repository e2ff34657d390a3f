//! The TCP header and its options (RFC 9293 §3.1, RFC 7323, RFC 2018).
//!
//! Parsed by hand rather than with etherparse's `TcpHeaderSlice`: that needs the whole header
//! captured, and its options iterator stops at the first kind it does not know (MPTCP, TFO,
//! AccECN...), losing the timestamps and SACK blocks that often follow. A header whose options
//! were cut by the snaplen still yields its fixed fields here, and unknown options are kept by
//! kind.

use crate::seq::SeqNum;

/// Byte offsets of the fixed TCP header fields.
mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ_NUM: usize = 4;
    pub const ACK_NUM: usize = 8;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: usize = 14;
    /// Length of the fixed header; options follow.
    pub const OPTIONS: usize = 20;
}

/// TCP flag bits, including AE (the former NS bit, RFC 9768 AccECN) as bit 8.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(pub u16);

impl Flags {
    /// FIN
    pub const FIN: u16 = 0x001;
    /// SYN
    pub const SYN: u16 = 0x002;
    /// RST
    pub const RST: u16 = 0x004;
    /// PSH
    pub const PSH: u16 = 0x008;
    /// ACK
    pub const ACK: u16 = 0x010;
    /// URG
    pub const URG: u16 = 0x020;
    /// ECE
    pub const ECE: u16 = 0x040;
    /// CWR
    pub const CWR: u16 = 0x080;
    /// AE (AccECN), formerly NS.
    pub const AE: u16 = 0x100;

    /// Whether all bits of `mask` are set.
    pub fn has(self, mask: u16) -> bool {
        self.0 & mask == mask
    }
    /// SYN set.
    pub fn syn(self) -> bool {
        self.has(Self::SYN)
    }
    /// FIN set.
    pub fn fin(self) -> bool {
        self.has(Self::FIN)
    }
    /// RST set.
    pub fn rst(self) -> bool {
        self.has(Self::RST)
    }
    /// ACK set.
    pub fn ack(self) -> bool {
        self.has(Self::ACK)
    }
}

/// One SACK block as on the wire: left edge (first byte) and right edge (byte after the last).
pub type SackBlock = (SeqNum, SeqNum);

/// The options of one segment that the analysis uses; the rest are counted by kind.
#[derive(Clone, Copy, Debug)]
pub struct TcpOptions {
    /// MSS option (kind 2).
    pub mss: Option<u16>,
    /// Window scale shift as sent (kind 3); may exceed 14, see [`TcpOptions::wscale_clamped`].
    pub wscale: Option<u8>,
    /// SACK-permitted (kind 4).
    pub sack_permitted: bool,
    /// SACK blocks (kind 5), up to 4.
    pub sack: [SackBlock; 4],
    /// Number of valid entries in `sack`.
    pub sack_len: u8,
    /// A SACK option was present (possibly with no block, which is malformed).
    pub sack_present: bool,
    /// Timestamps (kind 8): TSval, TSecr.
    pub timestamps: Option<(u32, u32)>,
    /// Bitmap of other option kinds present (bit k for kind k < 64; kind ≥ 64 sets bit 63).
    pub other_kinds: u64,
    /// An option was malformed or cut off; the options before it were kept.
    pub malformed: bool,
}

impl TcpOptions {
    /// No options.
    pub const NONE: TcpOptions = TcpOptions {
        mss: None,
        wscale: None,
        sack_permitted: false,
        sack: [(SeqNum(0), SeqNum(0)); 4],
        sack_len: 0,
        sack_present: false,
        timestamps: None,
        other_kinds: 0,
        malformed: false,
    };
    /// The window scale to apply: RFC 7323 §2.3 says a shift above 14 is used as 14.
    pub fn wscale_clamped(&self) -> Option<u8> {
        self.wscale.map(|s| s.min(14))
    }
    /// The SACK blocks present.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
}

// One definition of "no options": `NONE` is a const (the reading thread's blank segment needs
// one), which `derive(Default)` cannot give.
impl Default for TcpOptions {
    fn default() -> Self {
        Self::NONE
    }
}

/// Fixed header fields plus options, decoded from at least 20 captured bytes.
#[derive(Clone, Copy, Debug)]
pub struct TcpHeader {
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: SeqNum,
    /// Acknowledgment number (meaningful only with ACK).
    pub ack: SeqNum,
    /// Header length in bytes from the data offset field (20..=60).
    pub header_len: usize,
    /// Flags.
    pub flags: Flags,
    /// Window field, unscaled.
    pub win_raw: u16,
    /// The header (options) was cut off by the snaplen.
    pub header_truncated: bool,
}

/// Why a TCP header could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpError {
    /// Fewer than 20 bytes captured.
    TooShort {
        /// Bytes available.
        captured: usize,
    },
    /// Data offset below 5 words.
    DataOffsetTooSmall(u8),
}

/// Decodes a TCP header from `b` (the captured bytes starting at the TCP header); its options
/// go to `options`, written in place (the reading thread's batch: [`super::decode_into`]).
#[inline]
pub fn parse(b: &[u8], options: &mut TcpOptions) -> Result<TcpHeader, TcpError> {
    use field::*;
    if b.len() < OPTIONS {
        return Err(TcpError::TooShort { captured: b.len() });
    }
    let be16 = |at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
    let be32 = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let data_off = b[DATA_OFF] >> 4;
    if data_off < 5 {
        return Err(TcpError::DataOffsetTooSmall(data_off));
    }
    let header_len = data_off as usize * 4;
    let flags = Flags(((b[DATA_OFF] as u16 & 1) << 8) | b[FLAGS] as u16);
    let opt_end = header_len.min(b.len());
    parse_options(&b[OPTIONS..opt_end], options);
    Ok(TcpHeader {
        sport: be16(SRC_PORT),
        dport: be16(DST_PORT),
        seq: SeqNum(be32(SEQ_NUM)),
        ack: SeqNum(be32(ACK_NUM)),
        header_len,
        flags,
        win_raw: be16(WIN_SIZE),
        header_truncated: b.len() < header_len,
    })
}

/// Option kinds (IANA "TCP Option Kind Numbers").
mod kind {
    pub const END: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WSCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
}

/// Walks the options TLV by TLV into `o`; a bad length stops the walk but keeps what came
/// before.
fn parse_options(mut b: &[u8], o: &mut TcpOptions) {
    *o = TcpOptions::NONE;
    // Linux's layout on every segment after the handshake, NOP NOP TS: no walk needed.
    if let &[kind::NOP, kind::NOP, kind::TIMESTAMPS, 10, v0, v1, v2, v3, e0, e1, e2, e3] = b {
        o.timestamps = Some((u32::from_be_bytes([v0, v1, v2, v3]), u32::from_be_bytes([e0, e1, e2, e3])));
        return;
    }
    while let Some(&k) = b.first() {
        match k {
            kind::END => break,
            kind::NOP => {
                b = &b[1..];
                continue;
            }
            _ => {}
        }
        let Some(&len) = b.get(1) else {
            o.malformed = true;
            break;
        };
        let len = len as usize;
        if len < 2 || len > b.len() {
            o.malformed = true;
            break;
        }
        let v = &b[2..len];
        let be32 = |at: usize| u32::from_be_bytes([v[at], v[at + 1], v[at + 2], v[at + 3]]);
        match (k, len) {
            (kind::MSS, 4) => o.mss = Some(u16::from_be_bytes([v[0], v[1]])),
            (kind::WSCALE, 3) => o.wscale = Some(v[0]),
            (kind::SACK_PERMITTED, 2) => o.sack_permitted = true,
            (kind::SACK, _) if (len - 2).is_multiple_of(8) => {
                o.sack_present = true;
                if len == 2 {
                    o.malformed = true; // a SACK option with no block
                }
                for i in 0..((len - 2) / 8).min(4) {
                    o.sack[i] = (SeqNum(be32(i * 8)), SeqNum(be32(i * 8 + 4)));
                }
                o.sack_len = ((len - 2) / 8).min(4) as u8;
            }
            (kind::TIMESTAMPS, 10) => o.timestamps = Some((be32(0), be32(4))),
            (kind::MSS | kind::WSCALE | kind::SACK_PERMITTED | kind::SACK | kind::TIMESTAMPS, _) => {
                o.malformed = true;
            }
            (k, _) => o.other_kinds |= 1u64 << (k.min(63)),
        }
        b = &b[len..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(b: &[u8]) -> TcpOptions {
        let mut o = TcpOptions::default();
        parse_options(b, &mut o);
        o
    }

    /// A header assembled by hand: ports 40000→80, seq 1000, ack 2000, SYN|ACK, window 65535,
    /// options MSS 1460, NOP, WS 7, SACK-permitted, TS 5/6, an unknown kind 30 (MPTCP) first.
    fn syn_ack() -> Vec<u8> {
        let mut h =
            vec![0x9c, 0x40, 0x00, 0x50, 0, 0, 0x03, 0xe8, 0, 0, 0x07, 0xd0, 0xb0, 0x12, 0xff, 0xff, 0, 0, 0, 0];
        h.extend_from_slice(&[30, 4, 0xaa, 0xbb]); // MPTCP, unknown to us
        h.extend_from_slice(&[2, 4, 0x05, 0xb4]);
        h.extend_from_slice(&[1, 3, 3, 7]);
        h.extend_from_slice(&[4, 2]);
        h.extend_from_slice(&[8, 10, 0, 0, 0, 5, 0, 0, 0, 6]);
        // 20 + 4 + 4 + 4 + 2 + 10 = 44 bytes = data offset 11.
        assert_eq!(h.len(), 44);
        h
    }

    #[test]
    fn fixed_fields_and_options_after_unknown_kind() {
        let mut o = TcpOptions::default();
        let h = parse(&syn_ack(), &mut o).unwrap();
        assert_eq!((h.sport, h.dport, h.seq.0, h.ack.0, h.header_len), (40000, 80, 1000, 2000, 44));
        assert!(h.flags.syn() && h.flags.ack() && !h.flags.fin());
        assert_eq!(h.win_raw, 65535);
        assert_eq!(o.mss, Some(1460));
        assert_eq!(o.wscale, Some(7));
        assert!(o.sack_permitted);
        assert_eq!(o.timestamps, Some((5, 6)));
        assert_eq!(o.other_kinds, 1 << 30);
        assert!(!o.malformed && !h.header_truncated);
    }

    #[test]
    fn every_truncation_is_handled() {
        let full = syn_ack();
        for cut in 0..full.len() {
            match parse(&full[..cut], &mut TcpOptions::default()) {
                Err(TcpError::TooShort { captured }) => assert!(cut < 20 && captured == cut),
                Ok(h) => {
                    assert!(cut >= 20);
                    assert!(h.header_truncated);
                    assert_eq!(h.seq.0, 1000);
                }
                Err(e) => panic!("unexpected {e:?} at {cut}"),
            }
        }
    }

    #[test]
    fn wscale_above_14_is_clamped_but_kept() {
        let o = options(&[3, 3, 255]);
        assert_eq!(o.wscale, Some(255));
        assert_eq!(o.wscale_clamped(), Some(14));
    }

    #[test]
    fn empty_sack_is_malformed_but_later_options_survive() {
        let o = options(&[5, 2, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 1]);
        assert!(o.sack_present && o.malformed && o.sack_len == 0);
        assert_eq!(o.timestamps, Some((9, 1)));
    }
}

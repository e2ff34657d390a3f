//! From a captured frame to one TCP segment.
//!
//! [`decode`] checks every length once and returns a [`Segment`] whose fields are plain values
//! and whose payload is a borrowed slice of the frame (never copied). The payload length comes
//! from the IP header, so a segment cut by the snaplen still counts all its bytes and is marked
//! `truncated`. Frames that carry no decodable TCP segment come back as a [`Skip`] saying why;
//! callers count them and go on.
//!
//! IP headers are parsed by etherparse's lax slices (which accept cut-off packets and a zero
//! IPv4 total length), except the common plain IPv4 header, read directly for speed and checked
//! against etherparse by a test and the fuzz target; link layers and TCP are parsed here
//! ([`link`], [`tcp`]).
//!
//! ```
//! use tcpscope_core::decode::{decode, link::linktype};
//! // An IPv4/TCP SYN built by hand (raw IP link type): 10.0.0.1:1234 -> 10.0.0.2:80.
//! let mut p = vec![0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
//! p.extend_from_slice(&[0x04, 0xd2, 0, 80, 0, 0, 0, 7, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
//! let seg = decode(linktype::RAW, &p, p.len() as u32).unwrap();
//! assert_eq!((seg.sport, seg.dport, seg.seq.0, seg.payload_len), (1234, 80, 7, 0));
//! assert!(seg.flags.syn());
//! ```

pub mod checksum;
pub mod link;
pub mod tcp;

use std::net::IpAddr;

use etherparse::{IpNumber, LaxIpSlice};

use crate::seq::SeqNum;
pub use checksum::Checksum;
pub use tcp::{Flags, SackBlock, TcpOptions};

/// A decoded TCP segment.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    /// IP source address.
    pub src: IpAddr,
    /// IP destination address.
    pub dst: IpAddr,
    /// TCP source port.
    pub sport: u16,
    /// TCP destination port.
    pub dport: u16,
    /// Sequence number as on the wire.
    pub seq: SeqNum,
    /// Acknowledgment number as on the wire (meaningful only with ACK).
    pub ack: SeqNum,
    /// TCP flags.
    pub flags: Flags,
    /// Window field as on the wire, before any scaling.
    pub win_raw: u16,
    /// TCP options.
    pub options: TcpOptions,
    /// Payload length according to the IP header (or the wire length when the IP length field is
    /// 0, as in TSO/BIG TCP captures).
    pub payload_len: u32,
    /// The captured part of the payload (shorter than `payload_len` when truncated; empty after
    /// [`Segment::detach`]).
    pub payload: &'a [u8],
    /// Payload bytes missing from the capture: `payload_len - payload.len()` as decoded.
    pub truncated: u32,
    /// IPv4 identification (0 for IPv6).
    pub ip_id: u16,
    /// TTL or hop limit.
    pub ttl: u8,
    /// ECN codepoint of the IP header (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn: u8,
    /// DSCP of the IP header: the six high bits of the IPv4 TOS byte or the IPv6 traffic class.
    pub dscp: u8,
    /// Anomalies found while decoding (bit set of [`Anomaly`]).
    pub anomalies: AnomalySet,
    /// What checking its checksums found ([`checksum::verify`]; set by the pass when
    /// verification is on, [`Checksum::NotVerified`] otherwise: [`decode`] leaves it alone).
    pub checksum: Checksum,
    /// IP and TCP header bytes (options and IPv6 extension headers included).
    pub hdr_len: u16,
}

impl Segment<'static> {
    /// A blank segment to decode into ([`decode_into`]).
    pub const EMPTY: Segment<'static> = Segment {
        src: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        dst: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        sport: 0,
        dport: 0,
        seq: SeqNum(0),
        ack: SeqNum(0),
        flags: Flags(0),
        win_raw: 0,
        options: TcpOptions::NONE,
        payload_len: 0,
        payload: &[],
        truncated: 0,
        ip_id: 0,
        ttl: 0,
        ecn: 0,
        dscp: 0,
        anomalies: AnomalySet(0),
        checksum: Checksum::NotVerified,
        hdr_len: 0,
    };
}

impl Segment<'_> {
    /// Payload bytes missing from the capture.
    pub fn truncated_bytes(&self) -> u32 {
        self.truncated
    }

    /// The same segment without its payload bytes, free of the frame's lifetime: what the
    /// analysis needs, to hand to another thread.
    pub fn detach(&self) -> Segment<'static> {
        Segment { payload: &[], ..*self }
    }
}

/// Why a frame yielded no TCP segment. Counted per file, never fatal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// A link type tcpscope does not decode.
    UnknownLinkType(u32),
    /// Not IP (ARP, LLDP...): the ethertype or protocol number found.
    NotIp {
        /// Ethertype / PPP protocol / address family.
        protocol: u32,
    },
    /// IP, but not TCP (UDP, ICMP...).
    NotTcp {
        /// IP protocol number.
        protocol: u8,
    },
    /// A non-first IP fragment: the TCP header is in the first fragment.
    Fragment,
    /// The capture ends before a header does.
    Truncated {
        /// Which header.
        layer: &'static str,
        /// Bytes the header needs from the start of the frame (or of the layer).
        needed: usize,
        /// Bytes captured.
        captured: usize,
    },
    /// A header's contents make no sense.
    Malformed {
        /// Which header.
        layer: &'static str,
        /// What is wrong.
        what: &'static str,
    },
}

impl Skip {
    /// Stable name of the reason, for counters and JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Skip::UnknownLinkType(_) => "unknown_link_type",
            Skip::NotIp { .. } => "not_ip",
            Skip::NotTcp { .. } => "not_tcp",
            Skip::Fragment => "ip_fragment",
            Skip::Truncated { .. } => "truncated_header",
            Skip::Malformed { .. } => "malformed",
        }
    }
}

/// Things worth counting about a segment that was still decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Anomaly {
    /// The snaplen cut the payload (the payload length still comes from the IP header).
    TruncatedPayload = 0,
    /// The snaplen cut the TCP options.
    TruncatedOptions = 1,
    /// IPv4 total length 0 or IPv6 payload length 0 without a jumbo option: a TSO / BIG TCP
    /// capture; the length was taken from the frame.
    IpLengthZero = 2,
    /// The IP length claims more bytes than the record's wire length (payload-stripped or
    /// rewritten captures); the IP length was used.
    IpLengthExceedsFrame = 3,
    /// A malformed or cut-off TCP option (the options before it were kept).
    BadOption = 4,
    /// A window scale shift above 14, used as 14 (RFC 7323 §2.3).
    WindowScaleAbove14 = 5,
}

impl Anomaly {
    /// All kinds, in bit order.
    pub const ALL: [Anomaly; 6] = [
        Anomaly::TruncatedPayload,
        Anomaly::TruncatedOptions,
        Anomaly::IpLengthZero,
        Anomaly::IpLengthExceedsFrame,
        Anomaly::BadOption,
        Anomaly::WindowScaleAbove14,
    ];
    /// Stable name, for counters and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Anomaly::TruncatedPayload => "truncated_payload",
            Anomaly::TruncatedOptions => "truncated_options",
            Anomaly::IpLengthZero => "ip_length_zero",
            Anomaly::IpLengthExceedsFrame => "ip_length_exceeds_frame",
            Anomaly::BadOption => "bad_tcp_option",
            Anomaly::WindowScaleAbove14 => "window_scale_above_14",
        }
    }
}

/// A small set of [`Anomaly`] values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnomalySet(pub u8);

impl AnomalySet {
    /// Adds one.
    pub fn insert(&mut self, a: Anomaly) {
        self.0 |= 1 << a as u8;
    }
    /// Whether it holds `a`.
    pub fn contains(self, a: Anomaly) -> bool {
        self.0 & (1 << a as u8) != 0
    }
    /// Iterates over the members.
    pub fn iter(self) -> impl Iterator<Item = Anomaly> {
        Anomaly::ALL.into_iter().filter(move |a| self.contains(*a))
    }
}

/// Decodes one frame. `orig_len` is the frame's length on the wire.
pub fn decode(link_type: u32, frame: &[u8], orig_len: u32) -> Result<Segment<'_>, Skip> {
    let mut seg = Segment::EMPTY;
    let payload = decode_into(link_type, frame, orig_len, &mut seg)?;
    Ok(Segment { payload, ..seg })
}

/// [`decode`] into `out`, all of it but the payload, which is returned (`out.payload` is left
/// alone); on error `out` holds garbage.
///
/// The reading thread decodes straight into the batch it hands on: a segment built on the
/// stack, field by field, and then copied whole stalls on store forwarding (the copy's wide
/// loads span the fields' narrow stores), which cost ~10 % of that thread on a bulk trace.
#[inline]
pub fn decode_into<'a>(
    link_type: u32,
    frame: &'a [u8],
    orig_len: u32,
    out: &mut Segment<'_>,
) -> Result<&'a [u8], Skip> {
    let ip_at = link::ip_offset(link_type, frame)?;
    let ip = &frame[ip_at..];
    // Bytes of IP packet that were on the wire (the snaplen may have cut `ip`).
    let ip_wire_len = (orig_len as usize).max(frame.len()).saturating_sub(ip_at);
    // The TCP part is inlined after each IP path: joined first, the fast path's result went
    // through memory, and reading its addresses back stalled on store forwarding.
    match plain_ipv4(ip) {
        Some(part) => tcp_part(part, ip_wire_len, out),
        None => tcp_part(plain_ipv6(ip).map_or_else(|| ip_part_general(ip), Ok)?, ip_wire_len, out),
    }
}

/// The TCP layer of [`decode_into`], given the IP layer's answer.
#[inline(always)]
fn tcp_part<'a>(part: IpPart<'a>, ip_wire_len: usize, out: &mut Segment<'_>) -> Result<&'a [u8], Skip> {
    let mut anomalies = AnomalySet::default();
    let IpPart { src, dst, ip_id, ttl, ecn, dscp, claimed_total, hdr_len: ip_hdr_len, payload } = part;
    // The IP length is trusted, as tcptrace and Wireshark do, even beyond the record's wire
    // length: tools that strip payloads (and some anonymisers) rewrite the record lengths but
    // not the IP header. Such segments are flagged.
    let total_len = match claimed_total {
        Some(t) => {
            if t > ip_wire_len {
                anomalies.insert(Anomaly::IpLengthExceedsFrame);
            }
            t
        }
        None => {
            anomalies.insert(Anomaly::IpLengthZero);
            ip_wire_len
        }
    };
    let tcp_len = total_len.saturating_sub(ip_hdr_len);

    let hdr = tcp::parse(payload, &mut out.options).map_err(|e| match e {
        tcp::TcpError::TooShort { captured } => Skip::Truncated { layer: "TCP header", needed: 20, captured },
        tcp::TcpError::DataOffsetTooSmall(_) => Skip::Malformed { layer: "TCP header", what: "data offset below 5" },
    })?;
    if hdr.header_truncated {
        anomalies.insert(Anomaly::TruncatedOptions);
    }
    if out.options.malformed {
        anomalies.insert(Anomaly::BadOption);
    }
    if out.options.wscale.is_some_and(|s| s > 14) {
        anomalies.insert(Anomaly::WindowScaleAbove14);
    }
    if hdr.header_len > tcp_len {
        // The header claims to be longer than the IP packet: nothing in it can be trusted.
        return Err(Skip::Malformed { layer: "TCP header", what: "data offset past the end of the IP packet" });
    }
    let payload_len = tcp_len.saturating_sub(hdr.header_len);
    let captured = &payload[hdr.header_len.min(payload.len())..];
    let captured = &captured[..captured.len().min(payload_len)];
    if captured.len() < payload_len {
        anomalies.insert(Anomaly::TruncatedPayload);
    }
    // Field by field: the options are in place already.
    out.src = src;
    out.dst = dst;
    out.sport = hdr.sport;
    out.dport = hdr.dport;
    out.seq = hdr.seq;
    out.ack = hdr.ack;
    out.flags = hdr.flags;
    out.win_raw = hdr.win_raw;
    out.payload_len = payload_len as u32;
    out.truncated = (payload_len - captured.len()) as u32;
    out.ip_id = ip_id;
    out.ttl = ttl;
    out.ecn = ecn;
    out.dscp = dscp;
    out.anomalies = anomalies;
    out.hdr_len = (ip_hdr_len + hdr.header_len).min(u16::MAX as usize) as u16;
    Ok(captured)
}

/// What the IP layer says about a TCP segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IpPart<'a> {
    src: IpAddr,
    dst: IpAddr,
    ip_id: u16,
    ttl: u8,
    ecn: u8,
    dscp: u8,
    /// Total length the header claims (header included); `None` when the field is 0.
    claimed_total: Option<usize>,
    /// Bytes before the TCP header: IP header, options, extension headers.
    hdr_len: usize,
    /// The captured bytes from the TCP header on, cut at the claimed length.
    payload: &'a [u8],
}

/// The common case read directly: IPv4 without options or fragmentation, carrying TCP, the
/// header captured and its total length sane. etherparse's general slice (every IP version,
/// extension headers, cut-off and zero-length packets) costs about a sixth of the reading
/// thread on such packets; anything else returns `None` and goes to it. A test and the decode
/// fuzz target check that both give the same answer ([`ip_fast_path_agrees`]).
#[inline]
fn plain_ipv4(ip: &[u8]) -> Option<IpPart<'_>> {
    let h: &[u8; 20] = ip.get(..20)?.try_into().ok()?;
    // Version 4, 20-byte header; no MF flag, fragment offset 0; TCP.
    if h[0] != 0x45 || h[6] & 0x3f != 0 || h[7] != 0 || h[9] != 6 {
        return None;
    }
    let total = u16::from_be_bytes([h[2], h[3]]) as usize;
    if total < 20 {
        return None;
    }
    Some(IpPart {
        src: IpAddr::from([h[12], h[13], h[14], h[15]]),
        dst: IpAddr::from([h[16], h[17], h[18], h[19]]),
        ip_id: u16::from_be_bytes([h[4], h[5]]),
        ttl: h[8],
        ecn: h[1] & 3,
        dscp: h[1] >> 2,
        claimed_total: Some(total),
        hdr_len: 20,
        payload: &ip[20..total.min(ip.len())],
    })
}

/// The same for IPv6: no extension header, TCP next, the header captured and a payload length
/// set (0 is a jumbogram or a BIG TCP capture). Through etherparse such packets cost ~290
/// instructions more than IPv4 ones.
#[inline]
fn plain_ipv6(ip: &[u8]) -> Option<IpPart<'_>> {
    let h: &[u8; 40] = ip.get(..40)?.try_into().ok()?;
    if h[0] >> 4 != 6 || h[6] != 6 {
        return None;
    }
    let payload_len = u16::from_be_bytes([h[4], h[5]]) as usize;
    if payload_len == 0 {
        return None;
    }
    let addr = |at: usize| IpAddr::from(<[u8; 16]>::try_from(&h[at..at + 16]).expect("16 bytes of 40"));
    Some(IpPart {
        src: addr(8),
        dst: addr(24),
        ip_id: 0,
        ttl: h[7],
        // The traffic class straddles the first two bytes; ECN is its low two bits.
        ecn: (h[1] >> 4) & 3,
        dscp: (h[0] & 0x0f) << 2 | h[1] >> 6,
        claimed_total: Some(payload_len + 40),
        hdr_len: 40,
        payload: &ip[40..(payload_len + 40).min(ip.len())],
    })
}

/// Any IP packet, through etherparse's lax slices (which accept cut-off packets and a zero
/// total length).
fn ip_part_general(ip: &[u8]) -> Result<IpPart<'_>, Skip> {
    let (slice, _ext_err) = LaxIpSlice::from_slice(ip).map_err(|e| {
        use etherparse::err::ip::LaxHeaderSliceError as E;
        match e {
            E::Len(l) => Skip::Truncated { layer: "IP header", needed: l.required_len, captured: l.len },
            E::Content(_) => Skip::Malformed { layer: "IP header", what: "bad version or header length" },
        }
    })?;
    let (src, dst, ip_id, ttl, ecn, dscp, claimed_total, payload) = match &slice {
        LaxIpSlice::Ipv4(v4) => {
            let h = v4.header();
            if h.fragments_offset().value() != 0 {
                return Err(Skip::Fragment);
            }
            let claimed = (h.total_len() != 0).then_some(h.total_len() as usize);
            (
                IpAddr::from(h.source()),
                IpAddr::from(h.destination()),
                h.identification(),
                h.ttl(),
                h.ecn().value(),
                h.dcp().value(),
                claimed,
                v4.payload(),
            )
        }
        LaxIpSlice::Ipv6(v6) => {
            let h = v6.header();
            if v6.is_payload_fragmented() && v6.extensions().first_header().is_some() {
                // etherparse reports a fragment header; only offset 0 carries the TCP header.
                if let Some(off) = v6_fragment_offset(v6)
                    && off != 0
                {
                    return Err(Skip::Fragment);
                }
            }
            let claimed = (h.payload_length() != 0).then_some(h.payload_length() as usize + 40);
            (
                IpAddr::from(h.source()),
                IpAddr::from(h.destination()),
                0,
                h.hop_limit(),
                h.ecn().value(),
                h.dscp().value(),
                claimed,
                v6.payload(),
            )
        }
    };
    if payload.ip_number != IpNumber::TCP {
        return Err(Skip::NotTcp { protocol: payload.ip_number.0 });
    }
    // Everything before the IP payload (IP header, options, extension headers).
    let hdr_len = payload.payload.as_ptr() as usize - ip.as_ptr() as usize;
    Ok(IpPart { src, dst, ip_id, ttl, ecn, dscp, claimed_total, hdr_len, payload: payload.payload })
}

/// Whether the direct IPv4 and IPv6 readings of `ip`, when one applies, give what etherparse's
/// does (for tests and fuzzing).
#[doc(hidden)]
pub fn ip_fast_path_agrees(ip: &[u8]) -> bool {
    plain_ipv4(ip).or_else(|| plain_ipv6(ip)).is_none_or(|fast| ip_part_general(ip) == Ok(fast))
}

/// The fragment offset of an IPv6 fragment header, if the extension chain has one.
fn v6_fragment_offset(v6: &etherparse::LaxIpv6Slice<'_>) -> Option<u16> {
    v6.extensions().clone().into_iter().find_map(|ext| match ext {
        etherparse::Ipv6ExtensionSlice::Fragment(f) => Some(f.fragment_offset().value()),
        _ => None,
    })
}

#[cfg(test)]
mod tests;

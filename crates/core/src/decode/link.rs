//! Link layers: from a captured frame to the start of its IP packet.
//!
//! Written by hand because no maintained crate covers the set people capture on (Linux cooked
//! SLL2, BSD loopback in either byte order, PPP as ns-3 writes it, MPLS and stacked VLANs, FDDI)
//! and each is a handful of fixed offsets.

use super::Skip;

/// LINKTYPE_* values (<https://www.tcpdump.org/linktypes.html>) that tcpscope decodes.
pub mod linktype {
    /// BSD loopback: 4-byte address family in the capturing host's byte order.
    pub const NULL: u32 = 0;
    /// Ethernet II (with 802.1Q/802.1ad tags, MPLS, PPPoE inside).
    pub const ETHERNET: u32 = 1;
    /// PPP (RFC 1661), optionally with HDLC address/control bytes; ns-3 point-to-point links.
    pub const PPP: u32 = 9;
    /// FDDI with 802.2 LLC/SNAP.
    pub const FDDI: u32 = 10;
    /// PPP in HDLC-like framing (RFC 1662).
    pub const PPP_HDLC: u32 = 50;
    /// Raw IP (also 12 and 14 on some BSDs as DLT values written directly).
    pub const RAW: u32 = 101;
    /// Cisco HDLC.
    pub const C_HDLC: u32 = 104;
    /// OpenBSD loopback: address family in network byte order.
    pub const LOOP: u32 = 108;
    /// Linux cooked capture v1.
    pub const LINUX_SLL: u32 = 113;
    /// Raw IPv4.
    pub const IPV4: u32 = 228;
    /// Raw IPv6.
    pub const IPV6: u32 = 229;
    /// Linux cooked capture v2.
    pub const LINUX_SLL2: u32 = 276;
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
const ETHERTYPE_MPLS: u16 = 0x8847;
const ETHERTYPE_MPLS_MC: u16 = 0x8848;
const ETHERTYPE_PPPOE: u16 = 0x8864;

/// Returns the offset of the IP header within `frame`.
pub fn ip_offset(link_type: u32, frame: &[u8]) -> Result<usize, Skip> {
    use linktype::*;
    match link_type {
        ETHERNET => ethertype_payload(frame, 12),
        LINUX_SLL => ethertype_payload(frame, 14),
        LINUX_SLL2 => {
            need(frame, 20, "Linux SLL2 header")?;
            // SLL2 puts the protocol first; the payload starts after the 20-byte header.
            dispatch_ethertype(frame, be16(frame, 0), 20)
        }
        RAW | 12 | 14 | IPV4 | IPV6 => Ok(0),
        NULL | LOOP => {
            need(frame, 4, "loopback header")?;
            let raw = [frame[0], frame[1], frame[2], frame[3]];
            // NULL is in the writer's byte order: take whichever reading is a small number.
            let le = u32::from_le_bytes(raw);
            let be = u32::from_be_bytes(raw);
            let family = if link_type == LOOP { be } else { le.min(be) };
            match family {
                2 | 10 | 24 | 28 | 30 => Ok(4), // AF_INET; AF_INET6 on Linux, *BSD, FreeBSD, Darwin
                f => Err(Skip::NotIp { protocol: f }),
            }
        }
        PPP | PPP_HDLC | C_HDLC => ppp_payload(frame, 0, link_type == C_HDLC),
        FDDI => {
            // frame control (1) + dst (6) + src (6), then LLC/SNAP: AA AA 03 + OUI (3) + type.
            need(frame, 21, "FDDI LLC/SNAP header")?;
            if frame[13] != 0xaa || frame[14] != 0xaa {
                return Err(Skip::NotIp { protocol: frame[13] as u32 });
            }
            dispatch_ethertype(frame, be16(frame, 19), 21)
        }
        other => Err(Skip::UnknownLinkType(other)),
    }
}

fn ethertype_payload(frame: &[u8], type_at: usize) -> Result<usize, Skip> {
    need(frame, type_at + 2, "link header")?;
    dispatch_ethertype(frame, be16(frame, type_at), type_at + 2)
}

fn dispatch_ethertype(frame: &[u8], mut ethertype: u16, mut at: usize) -> Result<usize, Skip> {
    // Stacked tags: each 802.1Q/802.1ad tag is 2 bytes of TCI then the next ethertype.
    let mut tags = 0;
    loop {
        match ethertype {
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => return Ok(at),
            ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => {
                tags += 1;
                if tags > 8 {
                    return Err(Skip::Malformed { layer: "vlan", what: "more than 8 VLAN tags" });
                }
                need(frame, at + 4, "VLAN tag")?;
                ethertype = be16(frame, at + 2);
                at += 4;
            }
            ETHERTYPE_MPLS | ETHERTYPE_MPLS_MC => {
                // Labels until the bottom-of-stack bit; the payload type is not signalled, so
                // look at the IP version nibble.
                loop {
                    need(frame, at + 4, "MPLS label")?;
                    let bottom = frame[at + 2] & 1 == 1;
                    at += 4;
                    if bottom {
                        break;
                    }
                }
                need(frame, at + 1, "MPLS payload")?;
                return match frame[at] >> 4 {
                    4 | 6 => Ok(at),
                    _ => Err(Skip::NotIp { protocol: ETHERTYPE_MPLS as u32 }),
                };
            }
            ETHERTYPE_PPPOE => {
                // PPPoE session header is 6 bytes, then the PPP protocol field.
                need(frame, at + 8, "PPPoE header")?;
                return ppp_payload(frame, at + 6, false);
            }
            other => return Err(Skip::NotIp { protocol: other as u32 }),
        }
    }
}

/// PPP: optional 0xff 0x03 address/control (or Cisco HDLC's address + control), then a 1- or
/// 2-byte protocol number (RFC 1661 §2: an odd first byte means a compressed 1-byte field).
fn ppp_payload(frame: &[u8], mut at: usize, cisco: bool) -> Result<usize, Skip> {
    need(frame, at + 2, "PPP header")?;
    if cisco || (frame[at] == 0xff && frame[at + 1] == 0x03) {
        at += 2;
    }
    need(frame, at + 1, "PPP protocol")?;
    let (proto, len) = if frame[at] & 1 == 1 {
        (frame[at] as u16, 1)
    } else {
        need(frame, at + 2, "PPP protocol")?;
        (be16(frame, at), 2)
    };
    match proto {
        0x21 | 0x57 | ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Ok(at + len),
        p => Err(Skip::NotIp { protocol: p as u32 }),
    }
}

fn need(frame: &[u8], len: usize, what: &'static str) -> Result<(), Skip> {
    if frame.len() < len { Err(Skip::Truncated { layer: what, needed: len, captured: frame.len() }) } else { Ok(()) }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

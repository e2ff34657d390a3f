//! Checksum verification (opt-in: `Settings::checksums`, `--checksums`), the definitions of
//! `docs/statistics.md` § Checksums.
//!
//! Only a record holding the whole segment is verified: not cut by the snaplen, IPv4 not a
//! fragment, the IP length field set (a TSO/GRO super-packet, IP length 0, is checksummed by
//! the NIC per wire segment; what the capture holds is not what was sent) and not beyond the
//! record, IPv6 without extension headers (a routing header changes the pseudo-header's
//! destination). The one's-complement sums are etherparse's (`checksum::Sum16BitWords`).
//!
//! A TCP checksum that fails is told from checksum offload on the capturing host per packet:
//! Linux with `CHECKSUM_PARTIAL` leaves the folded pseudo-header sum in the field
//! (`th->check = ~tcp_v4_check(len, saddr, daddr, 0)`, `__tcp_v4_send_check`,
//! `tcp_v6_send_check`), large send offload the same sum without the TCP length, other
//! stacks leave 0; a failing segment whose field holds any of these is
//! [`Checksum::Offloaded`], not [`Checksum::Bad`]. An IPv4 header checksum left 0 is offload
//! too (Windows offloads both); any other failing header checksum is damage.

use etherparse::checksum::Sum16BitWords;

use super::{IpPart, link, plain_ipv4, plain_ipv6};

/// What checking a segment's checksums found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Checksum {
    /// Not checked: verification off, or the record does not hold the whole segment.
    #[default]
    NotVerified = 0,
    /// The IPv4 header checksum (if any) and the TCP checksum are right.
    Good = 1,
    /// The TCP checksum fails but holds what checksum offload leaves (the pseudo-header sum
    /// or 0): the sending host's NIC fills it in after the capture point.
    Offloaded = 2,
    /// A checksum fails: the segment was damaged (its header fields cannot be trusted).
    Bad = 3,
}

/// Verifies the checksums of the TCP segment in `frame` (already decoded by
/// [`super::decode_into`] from the same arguments).
pub fn verify(link_type: u32, frame: &[u8], orig_len: u32) -> Checksum {
    let Ok(ip_at) = link::ip_offset(link_type, frame) else { return Checksum::NotVerified };
    let ip = &frame[ip_at..];
    let part = match plain_ipv4(ip).or_else(|| plain_ipv6(ip)) {
        Some(p) => p,
        None => match super::ip_part_general(ip) {
            Ok(p) => p,
            Err(_) => return Checksum::NotVerified,
        },
    };
    let Some(total) = part.claimed_total else { return Checksum::NotVerified };
    // Bytes of the IP packet on the wire: beyond them the IP length is not what was sent.
    let wire = (orig_len as usize).max(frame.len()).saturating_sub(ip_at);
    if total > wire || part.payload.len() + part.hdr_len != total || ip.len() < part.hdr_len {
        return Checksum::NotVerified;
    }
    match ip[0] >> 4 {
        4 => verify_v4(ip, &part),
        6 if part.hdr_len == 40 => verify_v6(ip, &part),
        _ => Checksum::NotVerified,
    }
}

fn verify_v4(ip: &[u8], part: &IpPart<'_>) -> Checksum {
    // More fragments: the TCP checksum covers bytes in later fragments.
    if ip[6] & 0x20 != 0 {
        return Checksum::NotVerified;
    }
    // A header checksum left 0 is offload too (Windows hosts offload both checksums).
    let header_offloaded = match Sum16BitWords::new().add_slice(&ip[..part.hdr_len]).ones_complement() {
        0 => false,
        _ if ip[10..12] == [0, 0] => true,
        _ => return Checksum::Bad,
    };
    let pseudo = Sum16BitWords::new().add_slice(&ip[12..20]).add_2bytes([0, 6]);
    match tcp(pseudo, part.payload) {
        Checksum::Good if header_offloaded => Checksum::Offloaded,
        c => c,
    }
}

fn verify_v6(ip: &[u8], part: &IpPart<'_>) -> Checksum {
    // The upper-layer length is 32 bits in the IPv6 pseudo-header; its high half is 0 here.
    let pseudo = Sum16BitWords::new().add_slice(&ip[8..40]).add_2bytes([0, 6]);
    tcp(pseudo, part.payload)
}

/// The TCP checksum of `seg` (header and payload) given the sum of its pseudo-header but for
/// the TCP length (the same words in IPv4 and IPv6).
fn tcp(pseudo_but_len: Sum16BitWords, seg: &[u8]) -> Checksum {
    if seg.len() < 20 || seg.len() > usize::from(u16::MAX) {
        return Checksum::NotVerified;
    }
    let pseudo = pseudo_but_len.clone().add_2bytes((seg.len() as u16).to_be_bytes());
    if pseudo.clone().add_slice(seg).ones_complement() == 0 {
        return Checksum::Good;
    }
    let field = u16::from_be_bytes([seg[16], seg[17]]);
    // The folded pseudo-header sum, as `~tcp_v4_check(len, saddr, daddr, 0)` leaves it, or
    // without the length, as large send offload leaves it in a super-packet (Microsoft's LSO
    // contract; seen in zeek__kerberos_tso). etherparse sums native-endian words: `to_be`
    // gives the value as read from the wire.
    let folded = |s: &Sum16BitWords| (!s.ones_complement()).to_be();
    if field == 0 || field == folded(&pseudo) || field == folded(&pseudo_but_len) {
        Checksum::Offloaded
    } else {
        Checksum::Bad
    }
}

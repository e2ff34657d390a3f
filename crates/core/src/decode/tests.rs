use super::*;
use crate::testutil::{Pkt, flag};

fn ip4(len: u16) -> Vec<u8> {
    Pkt {
        ts_ns: 0,
        src: [192, 0, 2, 1],
        dst: [192, 0, 2, 2],
        sport: 1234,
        dport: 80,
        seq: 42,
        ack: 7,
        flags: flag::ACK | flag::PSH,
        win: 100,
        len,
        opts: vec![],
        snap: None,
    }
    .ipv4()
    .0
}

/// Hand-assembled IPv6 packet with a hop-by-hop and a destination-options header before TCP.
fn ip6_with_ext(payload: u16) -> Vec<u8> {
    let tcp = &ip4(payload)[20..];
    let mut p = vec![0x60, 0, 0, 0];
    let plen = (8 + 8 + tcp.len()) as u16;
    p.extend_from_slice(&plen.to_be_bytes());
    p.push(0); // next: hop-by-hop
    p.push(64);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    p.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]); // HBH → dest opts, PadN
    p.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]); // dest opts → TCP
    p.extend_from_slice(tcp);
    p
}

fn check(link: u32, frame: &[u8], payload: u32) {
    let seg = decode(link, frame, frame.len() as u32).unwrap_or_else(|e| panic!("link {link}: {e:?}"));
    assert_eq!(
        (seg.sport, seg.dport, seg.seq.0, seg.ack.0, seg.payload_len),
        (1234, 80, 42, 7, payload),
        "link {link}"
    );
}

#[test]
fn every_link_type_reaches_the_same_segment() {
    let ip = ip4(10);
    let eth = |ty: &[u8]| [&[0u8; 12][..], ty, &ip].concat();
    check(link::linktype::ETHERNET, &eth(&[0x08, 0x00]), 10);
    // 802.1ad outer + 802.1Q inner tag.
    check(link::linktype::ETHERNET, &eth(&[0x88, 0xa8, 0, 5, 0x81, 0x00, 0, 6, 0x08, 0x00]), 10);
    // Two MPLS labels, bottom of stack on the second.
    check(link::linktype::ETHERNET, &eth(&[0x88, 0x47, 0, 1, 0x00, 64, 0, 2, 0x01, 64]), 10);
    check(link::linktype::LINUX_SLL, &[&[0u8; 14][..], &[0x08, 0x00], &ip].concat(), 10);
    check(link::linktype::LINUX_SLL2, &[&[0x08, 0x00][..], &[0u8; 18], &ip].concat(), 10);
    check(link::linktype::NULL, &[&[2, 0, 0, 0][..], &ip].concat(), 10);
    check(link::linktype::NULL, &[&[0, 0, 0, 2][..], &ip].concat(), 10);
    check(link::linktype::LOOP, &[&[0, 0, 0, 2][..], &ip].concat(), 10);
    check(link::linktype::PPP, &[&[0x00, 0x21][..], &ip].concat(), 10); // ns-3 style
    check(link::linktype::PPP, &[&[0xff, 0x03, 0x00, 0x21][..], &ip].concat(), 10);
    check(link::linktype::RAW, &ip, 10);
    check(link::linktype::IPV4, &ip, 10);
    let fddi = [&[0x50][..], &[0u8; 12], &[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00], &ip].concat();
    check(link::linktype::FDDI, &fddi, 10);
    let v6 = ip6_with_ext(10);
    check(link::linktype::RAW, &v6, 10);
    check(link::linktype::ETHERNET, &[&[0u8; 12][..], &[0x86, 0xdd], &v6].concat(), 10);
    check(link::linktype::NULL, &[&[30, 0, 0, 0][..], &v6].concat(), 10); // AF_INET6 on Darwin
}

#[test]
fn unknown_and_non_tcp_frames_are_skipped_with_a_reason() {
    assert_eq!(decode(147, &[0; 40], 40).unwrap_err(), Skip::UnknownLinkType(147));
    let arp = [&[0u8; 12][..], &[0x08, 0x06], &[0u8; 28]].concat();
    assert_eq!(decode(1, &arp, arp.len() as u32).unwrap_err(), Skip::NotIp { protocol: 0x0806 });
    let mut udp = ip4(10);
    udp[9] = 17;
    assert_eq!(decode(101, &udp, udp.len() as u32).unwrap_err(), Skip::NotTcp { protocol: 17 });
}

#[test]
fn only_the_first_fragment_carries_tcp() {
    let mut first = ip4(10);
    first[6] = 0x20; // MF, offset 0
    assert!(decode(101, &first, first.len() as u32).is_ok());
    let mut later = ip4(10);
    later[6] = 0x00;
    later[7] = 0x10; // offset 16 × 8
    assert_eq!(decode(101, &later, later.len() as u32).unwrap_err(), Skip::Fragment);
}

#[test]
fn payload_length_comes_from_the_ip_header_when_the_snaplen_cut_it() {
    let full = ip4(1000);
    let seg = decode(101, &full[..60], full.len() as u32).unwrap();
    assert_eq!((seg.payload_len, seg.payload.len(), seg.truncated_bytes()), (1000, 20, 980));
    assert!(seg.anomalies.contains(Anomaly::TruncatedPayload));
}

#[test]
fn an_ip_length_of_zero_takes_the_wire_length() {
    // TSO / BIG TCP: total length 0, the frame holds 20 + 20 + 3000 bytes.
    let mut p = ip4(3000);
    p[2] = 0;
    p[3] = 0;
    let seg = decode(101, &p, p.len() as u32).unwrap();
    assert_eq!(seg.payload_len, 3000);
    assert!(seg.anomalies.contains(Anomaly::IpLengthZero));
}

#[test]
fn every_truncation_of_a_frame_is_handled() {
    let frame = [&[0u8; 12][..], &[0x81, 0x00, 0, 5, 0x08, 0x00], &ip4(10)].concat();
    let wire = frame.len() as u32;
    for cut in 0..frame.len() {
        match decode(1, &frame[..cut], wire) {
            Ok(seg) => {
                assert!(cut >= 18 + 20 + 20, "decoded at {cut}");
                assert_eq!(seg.payload_len, 10);
            }
            Err(Skip::Truncated { .. }) => assert!(cut < 18 + 20 + 20, "failed at {cut}"),
            Err(e) => panic!("cut {cut}: {e:?}"),
        }
    }
}

/// `base` changed by `edit`.
fn edited(base: &[u8], edit: &dyn Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut p = base.to_vec();
    edit(&mut p);
    p
}

/// A direct IP reading (`fast`) takes every packet of `taken` and none of `declined`, and where
/// it applies agrees with etherparse's.
fn fast_path_checked(fast: fn(&[u8]) -> Option<IpPart<'_>>, taken: &[Vec<u8>], declined: &[Vec<u8>]) {
    for p in taken {
        assert!(fast(p).is_some(), "fast path not taken for {p:02x?}");
        assert!(ip_fast_path_agrees(p), "fast and general paths differ on {p:02x?}");
    }
    for p in declined {
        assert!(fast(p).is_none(), "fast path taken for {p:02x?}");
        assert!(ip_fast_path_agrees(p));
    }
}

/// The direct IPv4 reading agrees with etherparse's on every variation of a header near the
/// edge of the fast path's conditions, and does take the common ones.
#[test]
fn the_ipv4_fast_path_agrees_with_the_general_one() {
    let base = ip4(10); // 20-byte IP header, 20-byte TCP header, 10 bytes of payload
    let set = |edit: &dyn Fn(&mut Vec<u8>)| edited(&base, edit);
    let total = |p: &mut Vec<u8>, t: u16| p[2..4].copy_from_slice(&t.to_be_bytes());
    let taken = [
        base.clone(),
        set(&|p| p.extend_from_slice(&[0; 6])), // Ethernet padding after the packet
        set(&|p| p.truncate(45)),               // snaplen cut the payload
        set(&|p| p.truncate(30)),               // ... and the TCP header
        set(&|p| p.truncate(20)),               // ... all of TCP
        set(&|p| p[6] = 0x40),                  // DF
        set(&|p| p[1] = 0xbb),                  // DSCP and ECN bits
        set(&|p| total(p, 20)),                 // total length says no TCP at all
        set(&|p| total(p, 9000)),               // total length beyond the capture
    ];
    // TOS 0xbb: DSCP 46 (EF), ECN 3 (CE).
    assert_eq!(plain_ipv4(&taken[6]).map(|x| (x.dscp, x.ecn)), Some((46, 3)));
    let declined = [
        set(&|p| total(p, 0)),    // TSO / BIG TCP: length from the frame
        set(&|p| total(p, 19)),   // shorter than its own header
        set(&|p| p[6] = 0x20),    // MF: a first fragment
        set(&|p| p[7] = 1),       // a later fragment
        set(&|p| p[9] = 17),      // UDP
        set(&|p| p[0] = 0x46),    // options
        set(&|p| p[0] = 0x65),    // not version 4
        set(&|p| p.truncate(19)), // header cut off
    ];
    fast_path_checked(plain_ipv4, &taken, &declined);
}

/// The same for the direct IPv6 reading.
#[test]
fn the_ipv6_fast_path_agrees_with_the_general_one() {
    let v4 = ip4(10);
    let mut base = vec![0x60, 0, 0, 0, 0, 30, 6, 64];
    base.extend((1..=32).map(|i| i as u8)); // source and destination
    base.extend_from_slice(&v4[20..]); // the TCP header and 10 bytes of payload
    let set = |edit: &dyn Fn(&mut Vec<u8>)| edited(&base, edit);
    let plen = |p: &mut Vec<u8>, t: u16| p[4..6].copy_from_slice(&t.to_be_bytes());
    let taken = [
        base.clone(),
        set(&|p| p.extend_from_slice(&[0; 6])), // Ethernet padding after the packet
        set(&|p| p.truncate(65)),               // snaplen cut the payload
        set(&|p| p.truncate(50)),               // ... and the TCP header
        set(&|p| p.truncate(40)),               // ... all of TCP
        set(&|p| p[1] = 0xb5),                  // traffic class (ECN 3) and flow label
        set(&|p| p[0] = 0x6f),                  // traffic class' high bits
        set(&|p| plen(p, 9000)),                // payload length beyond the capture
    ];
    assert_eq!(plain_ipv6(&taken[5]).unwrap().ecn, 3);
    // Traffic class 0xfb (its high nibble in the first byte): DSCP 62, ECN 3.
    let tc = set(&|p| (p[0], p[1]) = (0x6f, 0xb5));
    assert_eq!(plain_ipv6(&tc).map(|x| (x.dscp, x.ecn)), Some((62, 3)));
    assert!(ip_fast_path_agrees(&tc));
    let declined = [
        set(&|p| plen(p, 0)),     // jumbogram / BIG TCP: length from the frame
        set(&|p| p[6] = 0),       // a hop-by-hop options header first
        set(&|p| p[6] = 44),      // a fragment header first
        set(&|p| p[6] = 17),      // UDP
        set(&|p| p[0] = 0x45),    // not version 6
        set(&|p| p.truncate(39)), // header cut off
    ];
    fast_path_checked(plain_ipv6, &taken, &declined);
}

/// Every frame of the public traces (skipped when `../shared` is absent) gets the same IP
/// reading from the fast paths as from etherparse.
#[test]
fn the_ip_fast_paths_agree_on_the_public_traces() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/public");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipping: ../shared/traces/public is absent");
        return;
    };
    let (mut fast, mut fast6, mut frames) = (0, 0, 0);
    for path in entries.map(|e| e.unwrap().path()) {
        let Ok(mut r) = crate::capture::CaptureReader::open(&path) else { continue };
        while let Ok(Some(rec)) = r.next_record() {
            frames += 1;
            let Ok(at) = link::ip_offset(rec.link_type, rec.data) else { continue };
            let ip = &rec.data[at..];
            fast += plain_ipv4(ip).is_some() as u32;
            fast6 += plain_ipv6(ip).is_some() as u32;
            assert!(ip_fast_path_agrees(ip), "{}: frame {} differs", path.display(), rec.frame);
        }
    }
    assert!(fast > 1000, "the fast path was taken for only {fast} of {frames} frames");
    assert!(fast6 > 100, "the IPv6 fast path was taken for only {fast6} of {frames} frames");
}

mod checksums {
    use crate::decode::checksum::{Checksum, verify};
    use crate::decode::link::linktype;
    use crate::testutil::{fill_checksums, ones_sum, pseudo_v4};

    /// An IPv4/TCP segment with 4 payload bytes, 10.0.0.1:1234 -> 10.0.0.2:80, both checksums
    /// filled by the test utilities' arithmetic (not the decoder's).
    fn v4() -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        p.extend_from_slice(&[0x04, 0xd2, 0, 80, 0, 0, 0, 7, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        p.extend_from_slice(b"abcd");
        fill_checksums(&mut p);
        p
    }

    #[test]
    fn good_offloaded_and_damaged_v4() {
        let p = v4();
        assert_eq!(verify(linktype::RAW, &p, p.len() as u32), Checksum::Good);
        // What Linux leaves with CHECKSUM_PARTIAL: the folded pseudo-header sum.
        let mut off = p.clone();
        off[36..38].copy_from_slice(&pseudo_v4(&p).to_be_bytes());
        assert_eq!(verify(linktype::RAW, &off, off.len() as u32), Checksum::Offloaded);
        // Large send offload: the pseudo-header sum without the TCP length.
        let mut lso = p.clone();
        lso[36..38].copy_from_slice(&ones_sum(&[&p[12..20], &[0, 6][..]].concat()).to_be_bytes());
        assert_eq!(verify(linktype::RAW, &lso, lso.len() as u32), Checksum::Offloaded);
        let mut zero = p.clone();
        zero[36..38].copy_from_slice(&[0, 0]);
        assert_eq!(verify(linktype::RAW, &zero, zero.len() as u32), Checksum::Offloaded);
        // Both offloaded (Windows): the header checksum 0 as well.
        let mut both = off.clone();
        both[10..12].copy_from_slice(&[0, 0]);
        assert_eq!(verify(linktype::RAW, &both, both.len() as u32), Checksum::Offloaded);
        // A flipped payload bit, a flipped header bit.
        let mut bad = p.clone();
        bad[41] ^= 4;
        assert_eq!(verify(linktype::RAW, &bad, bad.len() as u32), Checksum::Bad);
        let mut bad_ip = p.clone();
        bad_ip[8] ^= 1;
        assert_eq!(verify(linktype::RAW, &bad_ip, bad_ip.len() as u32), Checksum::Bad);
        // A changed address, the header checksum made right again: only the pseudo-header
        // catches it.
        let mut addr = p.clone();
        addr[15] ^= 1;
        addr[10..12].copy_from_slice(&[0, 0]);
        let h = !ones_sum(&addr[..20]);
        addr[10..12].copy_from_slice(&h.to_be_bytes());
        assert_eq!(verify(linktype::RAW, &addr, addr.len() as u32), Checksum::Bad);
    }

    #[test]
    fn only_whole_segments_are_verified() {
        let p = v4();
        // Cut by the snaplen.
        assert_eq!(verify(linktype::RAW, &p[..42], p.len() as u32), Checksum::NotVerified);
        // IP length 0 (TSO/GRO).
        let mut tso = p.clone();
        tso[2..4].copy_from_slice(&[0, 0]);
        assert_eq!(verify(linktype::RAW, &tso, tso.len() as u32), Checksum::NotVerified);
    }

    #[test]
    fn good_offloaded_and_damaged_v6() {
        let mut p = vec![0x60, 0, 0, 0, 0, 24, 6, 64];
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        p.extend_from_slice(&[0x04, 0xd2, 0, 80, 0, 0, 0, 7, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        p.extend_from_slice(b"abcd");
        let pseudo = ones_sum(&[&p[8..40], &[0, 0, 0, 24, 0, 0, 0, 6][..]].concat());
        let mut good = p.clone();
        let t = !ones_sum(&[pseudo.to_be_bytes().as_slice(), &p[40..]].concat());
        good[56..58].copy_from_slice(&t.to_be_bytes());
        assert_eq!(verify(linktype::RAW, &good, good.len() as u32), Checksum::Good);
        let mut off = p.clone();
        off[56..58].copy_from_slice(&pseudo.to_be_bytes());
        assert_eq!(verify(linktype::RAW, &off, off.len() as u32), Checksum::Offloaded);
        let mut bad = good.clone();
        bad[63] ^= 1;
        assert_eq!(verify(linktype::RAW, &bad, bad.len() as u32), Checksum::Bad);
    }
}

//! One frame through the decoder.
//!
//! Input layout (little endian): `link_type: u32`, `orig_len: u32`, then the frame.
//! - `link_type`: a value the decoder knows (0, 1, 9, 10, 50, 101, 104, 108, 113, 228, 229, 276)
//!   is used as is; with the top bit set the low 31 bits are used raw (12, 14, unknown types);
//!   anything else picks a known type by index. Seeds extracted from real captures simply store
//!   their link type.
//! - `orig_len`: the wire length handed to `decode`, used as is (it may be below, equal to or
//!   above the frame length).
//!
//! Never panics; the IPv4 and IPv6 fast paths agree with etherparse; a decoded segment satisfies the
//! invariants checked below.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tcpscope_core::decode::{Anomaly, decode, ip_fast_path_agrees, link};

const KNOWN: [u32; 12] = [0, 1, 9, 10, 50, 101, 104, 108, 113, 228, 229, 276];

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let raw = u32::from_le_bytes(data[0..4].try_into().unwrap());
    let link_type = if KNOWN.contains(&raw) {
        raw
    } else if raw & 0x8000_0000 != 0 {
        raw & 0x7fff_ffff
    } else {
        KNOWN[raw as usize % KNOWN.len()]
    };
    let orig_len = u32::from_le_bytes(data[4..8].try_into().unwrap());
    let frame = &data[8..];

    // The direct IPv4 reading and etherparse's agree wherever the former applies.
    if let Ok(at) = link::ip_offset(link_type, frame) {
        assert!(ip_fast_path_agrees(&frame[at..]), "IP fast paths differ from etherparse");
    }
    let Ok(seg) = decode(link_type, frame, orig_len) else { return };

    let plen = seg.payload.len();
    assert!(plen as u32 <= seg.payload_len, "captured payload {plen} > payload_len {}", seg.payload_len);
    assert_eq!(seg.truncated_bytes(), seg.payload_len - plen as u32);
    assert_eq!(seg.anomalies.contains(Anomaly::TruncatedPayload), (plen as u32) < seg.payload_len);
    // The payload is borrowed from the frame, never copied.
    let (f0, f1) = (frame.as_ptr() as usize, frame.as_ptr() as usize + frame.len());
    let p0 = seg.payload.as_ptr() as usize;
    assert!(plen == 0 || (p0 >= f0 && p0 + plen <= f1), "payload outside the frame");
    // Without IpLengthExceedsFrame the payload fits in what was on the wire.
    let wire = (orig_len as usize).max(frame.len());
    if !seg.anomalies.contains(Anomaly::IpLengthExceedsFrame) {
        assert!(seg.payload_len as usize <= wire, "payload_len {} > wire length {wire}", seg.payload_len);
    }
    assert!(seg.payload_len <= u16::MAX as u32 + 40 || seg.anomalies.contains(Anomaly::IpLengthZero));
    assert_eq!(seg.src.is_ipv4(), seg.dst.is_ipv4(), "mixed address families");
    assert!(seg.ecn <= 3);
    assert!(seg.options.sack_blocks().len() <= 4);
    assert!(seg.anomalies.0 >> Anomaly::ALL.len() == 0, "unknown anomaly bit");
    if let Some(s) = seg.options.wscale_clamped() {
        assert!(s <= 14);
    }
    for a in seg.anomalies.iter() {
        let _ = a.name();
    }
    // Deterministic.
    let again = decode(link_type, frame, orig_len).expect("second decode failed");
    assert_eq!(
        (again.payload_len, again.payload, again.seq.0, again.anomalies),
        (seg.payload_len, seg.payload, seg.seq.0, seg.anomalies)
    );
});

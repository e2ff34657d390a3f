use std::io::Write;

use super::*;
use crate::testutil::{Pkt, flag, pcap, pcapng};

fn pkts() -> Vec<Pkt> {
    (0..5u32)
        .map(|i| Pkt {
            ts_ns: 1_700_000_000_000_000_000 + i as u64 * 1_250_000, // multiples of 1 µs
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            sport: 40000,
            dport: 80,
            seq: 1000 + i * 100,
            ack: 1,
            flags: flag::ACK,
            win: 1000,
            len: 100,
            opts: vec![],
            snap: (i == 3).then_some(60),
        })
        .collect()
}

/// (ts_ns, data, orig_len, link_type, frame) of one record.
type Rec = (u64, Vec<u8>, u32, u32, u64);

/// Every record, and the error that ended the file if any.
fn read_all(bytes: Vec<u8>) -> (Vec<Rec>, Option<CaptureError>) {
    let mut r = CaptureReader::from_bytes(bytes).unwrap();
    let mut out = Vec::new();
    loop {
        match r.next_record() {
            Ok(Some(rec)) => out.push((rec.ts_ns, rec.data.to_vec(), rec.orig_len, rec.link_type, rec.frame)),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

#[test]
fn every_format_gives_the_same_records() {
    let p = pkts();
    let expected: Vec<_> = p
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (data, orig) = p.ipv4();
            (p.ts_ns, data, orig, 101, i as u64 + 1)
        })
        .collect();
    let plain = pcap(&p, false, false);
    let variants: Vec<(&str, Vec<u8>)> = vec![
        ("pcap µs le", plain.clone()),
        ("pcap µs be", pcap(&p, false, true)),
        ("pcap ns le", pcap(&p, true, false)),
        ("pcap ns be", pcap(&p, true, true)),
        ("pcapng", pcapng(&p)),
        ("gzip", gzip(&plain)),
        ("gzip, two members", [gzip(&plain[..100]), gzip(&plain[100..])].concat()),
        ("zstd", zstd::encode_all(&plain[..], 3).unwrap()),
    ];
    for (name, bytes) in variants {
        let (got, err) = read_all(bytes);
        assert!(err.is_none(), "{name}: {err:?}");
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn the_truncated_record_keeps_its_wire_length() {
    let (got, _) = read_all(pcap(&pkts(), false, false));
    assert_eq!(got[3].1.len(), 60);
    assert_eq!(got[3].2, 140); // 20 IP + 20 TCP + 100 payload
}

#[test]
fn a_cut_off_last_record_is_reported_with_its_offset_after_the_good_ones() {
    let full = pcap(&pkts(), false, false);
    // Record sizes: 16-byte header + 140 bytes, except record 4 (60 captured bytes).
    let last_start = 24 + 156 * 3 + (16 + 60);
    for cut in [last_start + 1, last_start + 15, last_start + 16, full.len() - 1] {
        let (got, err) = read_all(full[..cut].to_vec());
        assert_eq!(got.len(), 4, "cut at {cut}");
        match err {
            Some(CaptureError::Truncated { offset, .. }) => assert_eq!(offset as usize, last_start),
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    // Cut exactly between records: a clean end.
    let (got, err) = read_all(full[..last_start].to_vec());
    assert_eq!((got.len(), err.is_none()), (4, true));
}

#[test]
fn a_cut_off_record_in_a_compressed_stream_is_reported_too() {
    let full = pcap(&pkts(), false, false);
    let (got, err) = read_all(gzip(&full[..full.len() - 7]));
    assert_eq!(got.len(), 4);
    assert!(matches!(err, Some(CaptureError::Truncated { .. })), "{err:?}");
}

#[test]
fn not_a_capture_is_an_error_naming_the_magic() {
    match CaptureReader::from_bytes(b"hello, world".to_vec()) {
        Err(CaptureError::NotACapture { magic }) => assert_eq!(magic, b"hell"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert!(matches!(CaptureReader::from_bytes(vec![]), Err(CaptureError::NotACapture { .. })));
}

/// Every record, the error that ended the file if any, and the damage skipped.
fn read_damaged(bytes: Vec<u8>) -> (Vec<Rec>, Option<CaptureError>, Vec<Damage>) {
    let mut r = CaptureReader::from_bytes(bytes).unwrap();
    let (recs, err) = read_from(&mut r);
    (recs, err, r.damage())
}

fn read_from(r: &mut CaptureReader) -> (Vec<Rec>, Option<CaptureError>) {
    let mut out = Vec::new();
    loop {
        match r.next_record() {
            Ok(Some(rec)) => out.push((rec.ts_ns, rec.data.to_vec(), rec.orig_len, rec.link_type, rec.frame)),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

#[test]
fn a_corrupt_pcapng_block_length_is_skipped_and_the_blocks_after_it_read() {
    let good = read_all(pcapng(&pkts())).0;
    let mut f = pcapng(&pkts());
    // The first EPB follows SHB (28), two IDBs (20 + 44) and the custom block (20).
    let epb = 28 + 20 + 44 + 20;
    assert_eq!(u32::from_le_bytes(f[epb..epb + 4].try_into().unwrap()), 6);
    f[epb + 4..epb + 8].copy_from_slice(&7u32.to_le_bytes()); // length not a multiple of 4
    let (got, err, damage) = read_damaged(f);
    assert!(err.is_none(), "{err:?}");
    let data = |r: &[Rec]| r.iter().map(|r| (r.0, r.1.clone())).collect::<Vec<_>>();
    assert_eq!(data(&got), data(&good[1..]), "the four packets after the damaged one");
    assert_eq!(damage.len(), 1);
    let d = &damage[0];
    let second = epb as u64 + u32::from_le_bytes(pcapng(&pkts())[epb + 4..epb + 8].try_into().unwrap()) as u64;
    assert_eq!((d.start, d.end, d.records_after), (epb as u64, second, 4));
    assert_eq!(
        d.describe(),
        format!("bytes {epb}..{second} corrupt (block length 7), skipped; 4 records read after it")
    );
}

#[test]
fn a_corrupt_pcap_record_header_is_skipped_and_the_records_after_it_read() {
    let good = read_all(pcap(&pkts(), false, false)).0;
    // Record 2's captured length: 16-byte header + 140 bytes each.
    let rec2 = 24 + 156;
    for (what, at, value, lost) in [
        ("caplen far too big", rec2 + 8, 0x4000_0000u32, 1usize),
        ("caplen above orig len", rec2 + 8, 141, 1),
        ("caplen shortened: the next header is read from inside the packet", rec2 + 8, 100, 1),
        ("orig len zero", rec2 + 12, 0, 1),
    ] {
        let mut f = pcap(&pkts(), false, false);
        f[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let (got, err, damage) = read_damaged(f);
        assert!(err.is_none(), "{what}: {err:?}");
        assert_eq!(got.len(), good.len() - lost, "{what}");
        assert_eq!(got[0].1, good[0].1, "{what}");
        for (g, want) in got[1..].iter().zip(&good[1 + lost..]) {
            assert_eq!((g.0, &g.1), (want.0, &want.1), "{what}");
        }
        assert_eq!(damage.len(), 1, "{what}");
        assert_eq!((damage[0].start, damage[0].end), (rec2 as u64, rec2 as u64 + 156), "{what}");
        assert_eq!(damage[0].records_after, 3, "{what}");
    }
}

#[test]
fn a_damaged_pcap_read_a_few_bytes_at_a_time_gives_the_same_records_and_damage() {
    let mut f = pcap(&pkts(), false, false);
    f[24 + 156 + 8] = 0xff;
    f[24 + 156 * 3 + 40] ^= 0x55; // inside a packet's bytes: no damage to the framing
    let whole = read_damaged(f.clone());
    let mut r = CaptureReader::from_reader(Box::new(Trickle(io::Cursor::new(f)))).unwrap();
    let (recs, err) = read_from(&mut r);
    assert_eq!(format!("{whole:?}"), format!("{:?}", (recs, err, r.damage())));
    assert_eq!(whole.0.len(), 4);
}

#[test]
fn garbage_to_the_end_of_the_file_is_damage_with_nothing_after_it() {
    let mut f = pcap(&pkts()[..2], false, false);
    let end = f.len() as u64;
    f.extend((0..1000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    let (got, err, damage) = read_damaged(f);
    assert_eq!(got.len(), 2);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(damage.len(), 1);
    assert_eq!((damage[0].start, damage[0].end, damage[0].records_after), (end, end + 1000, 0));
}

#[test]
fn a_huge_record_length_is_not_a_huge_allocation() {
    // A record header claiming 2 GB of data, then EOF: damage, no panic, no OOM.
    let mut f = pcap(&pkts()[..1], false, false);
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0x80]);
    let mut r = CaptureReader::from_bytes(gzip(&f)).unwrap();
    let (got, err) = read_from(&mut r);
    assert_eq!(got.len(), 1);
    assert!(err.is_none(), "{err:?}");
    let d = r.damage();
    assert_eq!((d[0].start, d[0].end), (180, 196));
    assert_eq!(d[0].reason, "captured length 2147483648 above the 262144-byte bound");
}

/// A stream that hands out a few bytes per read, so that no record is ever wholly in the
/// reader's window: it takes the general path where a file read in chunks takes the direct one.
struct Trickle(io::Cursor<Vec<u8>>);

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(7);
        self.0.read(&mut buf[..n])
    }
}

#[test]
fn a_record_read_whole_or_in_pieces_gives_the_same_record_and_counts() {
    for (nanos, big_endian) in [(false, false), (false, true), (true, false), (true, true)] {
        let mut bytes = pcap(&pkts(), nanos, big_endian);
        // The first record's fraction one second too large: a damaged timestamp, counted; the
        // first record has no record before it to take the time of, and keeps its seconds.
        let frac_at = 24 + 4;
        let frac = if nanos { 1_500_000_000u32 } else { 1_500_000 };
        let frac = if big_endian { frac.to_be_bytes() } else { frac.to_le_bytes() };
        bytes[frac_at..frac_at + 4].copy_from_slice(&frac);
        let read = |mut r: CaptureReader| {
            let mut recs = Vec::new();
            while let Some(rec) = r.next_record().unwrap() {
                recs.push((rec.ts_ns, rec.data.to_vec(), rec.orig_len, rec.link_type, rec.frame, rec.offset));
            }
            (recs, r.bad_timestamps, r.position())
        };
        let whole = read(CaptureReader::from_bytes(bytes.clone()).unwrap());
        let pieces = read(CaptureReader::from_reader(Box::new(Trickle(io::Cursor::new(bytes.clone())))).unwrap());
        assert_eq!(whole, pieces, "nanos {nanos}, big endian {big_endian}");
        assert_eq!((whole.0.len(), whole.1, whole.2), (5, 1, bytes.len() as u64));
        assert_eq!(whole.0[0].0 % 1_000_000_000, 0, "the out-of-range fraction is dropped");
    }
}

/// A pcapng section in either byte order with what the direct reading of enhanced packet
/// blocks must either read as pcap-parser does or leave to it: options after the data, a
/// length not a multiple of 4, units of 2^-10 s and of 1 ms with an offset, an unknown
/// interface, a simple packet block, a block of unknown type, and last a block whose two lengths
/// differ.
fn odd_pcapng(big_endian: bool) -> Vec<u8> {
    let w32 = |v: u32| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let w16 = |v: u16| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let block = |f: &mut Vec<u8>, kind: u32, body: &[u8], trailer_off: u32| {
        let mut body = body.to_vec();
        body.resize(body.len().next_multiple_of(4), 0);
        let len = 12 + body.len() as u32;
        f.extend_from_slice(&w32(kind));
        f.extend_from_slice(&w32(len));
        f.extend_from_slice(&body);
        f.extend_from_slice(&w32(len + trailer_off));
    };
    let mut f = Vec::new();
    let shb = [&w32(0x1a2b_3c4d)[..], &w16(1), &w16(0), &(-1i64).to_le_bytes()].concat();
    block(&mut f, 0x0a0d_0d0a, &shb, 0);
    // Interfaces: 0 µs; 1 units of 2^-10 s; 2 ms, offset 5 s.
    block(&mut f, 1, &[&w16(101)[..], &w16(0), &w32(0)].concat(), 0);
    block(
        &mut f,
        1,
        &[&w16(101)[..], &w16(0), &w32(0), &w16(9), &w16(1), &[0x8a, 0, 0, 0], &w16(0), &w16(0)].concat(),
        0,
    );
    let tsoff = [&w16(9)[..], &w16(1), &[3, 0, 0, 0], &w16(14), &w16(8)].concat();
    let off = if big_endian { 5i64.to_be_bytes() } else { 5i64.to_le_bytes() };
    block(&mut f, 1, &[&w16(101)[..], &w16(0), &w32(0), &tsoff, &off, &w16(0), &w16(0)].concat(), 0);
    let p = pkts();
    let epb = |iface: u32, ticks: u64, data: &[u8], orig: u32, opts: &[u8]| {
        let mut data = data.to_vec();
        let caplen = data.len() as u32;
        data.resize(data.len().next_multiple_of(4), 0);
        [&w32(iface)[..], &w32((ticks >> 32) as u32), &w32(ticks as u32), &w32(caplen), &w32(orig), &data, opts]
            .concat()
    };
    let comment = [&w16(1)[..], &w16(5), b"hello\0\0\0", &w16(0), &w16(0)].concat();
    for (i, p) in p.iter().enumerate() {
        let (mut data, orig) = p.ipv4();
        if i == 1 {
            data.truncate(61);
        }
        let iface = (i % 3) as u32;
        let ticks = [1_700_000_000_123_000, 1_700_000_000 * 1024, 1_700_000_000_123][iface as usize] + i as u64;
        let opts: &[u8] = if i == 2 { &comment } else { &[] };
        block(&mut f, 6, &epb(iface, ticks, &data, orig, opts), 0);
    }
    block(&mut f, 6, &epb(7, 1, &[0x45], 1, &[]), 0);
    block(&mut f, 3, &[&w32(40)[..], &p[0].ipv4().0].concat(), 0);
    block(&mut f, 0x0000_0BAD, &[1, 2, 3], 0);
    block(&mut f, 6, &epb(0, 5, &p[4].ipv4().0, 140, &[]), 4);
    f
}

#[test]
fn enhanced_packet_blocks_read_directly_as_through_the_general_path() {
    for big_endian in [false, true] {
        let bytes = odd_pcapng(big_endian);
        let read = |mut r: CaptureReader| {
            let mut recs = Vec::new();
            let err = loop {
                match r.next_record() {
                    Ok(Some(rec)) => {
                        recs.push((rec.ts_ns, rec.data.to_vec(), rec.orig_len, rec.link_type, rec.frame, rec.offset))
                    }
                    Ok(None) => break None,
                    Err(e) => break Some(e.to_string()),
                }
            };
            (recs, err, r.unknown_interface, r.damage())
        };
        let whole = read(CaptureReader::from_bytes(bytes.clone()).unwrap());
        let pieces = read(CaptureReader::from_reader(Box::new(Trickle(io::Cursor::new(bytes)))).unwrap());
        assert_eq!(whole, pieces, "big endian {big_endian}");
        let (recs, err, unknown, damage) = whole;
        assert_eq!((recs.len(), unknown), (6, 1), "five enhanced packets and the simple one");
        assert_eq!(recs[1].1.len(), 61);
        assert_eq!(recs[0].0, 1_700_000_000_123_000_000, "µs");
        assert_eq!(recs[1].0, 1_700_000_000_000_000_000 + 1_000_000_000 / 1024, "2^-10 s");
        assert_eq!(recs[2].0, 1_700_000_000_125_000_000 + 5_000_000_000, "ms, offset 5 s");
        assert!(err.is_none(), "{err:?}");
        assert_eq!(damage.len(), 1, "the block with two lengths");
        assert!(damage[0].reason.contains("trailing block length"), "{:?}", damage[0]);
    }
}

/// The damaged inputs kept with the fuzz regressions: each kind of damage reported, with the
/// records after it.
#[test]
fn the_damaged_regression_inputs_report_each_kind_of_damage() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/capture_reader");
    let read = |name: &str| {
        let mut r = CaptureReader::from_bytes(std::fs::read(dir.join(name)).unwrap()).unwrap();
        let (recs, err) = read_from(&mut r);
        let reasons: Vec<String> = r.damage().iter().map(Damage::describe).collect();
        (recs.len(), err.map(|e| e.to_string()), reasons)
    };
    // 30 records; damaged: 3 (caplen), 8 (orig len 0), 9 (caplen shortened: its next header
    // is read from inside the packet), 14 (200 bytes of garbage from its 6th byte), 20 to 22
    // (zeroed).
    let (n, err, damage) = read("damaged-pcap-resync");
    assert_eq!((n, err), (22, None));
    assert_eq!(
        damage,
        [
            "bytes 286..430 corrupt (captured length 2147418112 above the 262144-byte bound), skipped; 4 records read after it",
            "bytes 1006..1294 corrupt (captured length 128 above the original length 0), skipped; 4 records read after it",
            "bytes 1808..2096 corrupt (captured length 3629503055 above the 262144-byte bound), skipped; 4 records read after it",
            "bytes 2548..2918 corrupt (captured length 128 above the original length 0), skipped; 7 records read after it",
        ]
    );
    // 30 enhanced packet blocks; damaged: 2 (length 7), 6 (trailing length), 10 (type), 13
    // (captured length shortened), 17 (length past the end), 22 to 24 (zeroed).
    let (n, err, damage) = read("damaged-pcapng-resync");
    assert_eq!((n, err), (22, None));
    assert_eq!(
        damage,
        [
            "bytes 264..364 corrupt (block length 7), skipped; 3 records read after it",
            "bytes 844..1004 corrupt (trailing block length 176 differs from the leading 160), skipped; 3 records read after it",
            "bytes 1484..1644 corrupt (unknown block type 0x77), skipped; 2 records read after it",
            "bytes 1964..2064 corrupt (captured length 57 does not fit the packet block), skipped; 3 records read after it",
            "bytes 2484..2644 corrupt (length 16777200 runs past the end of the file), skipped; 4 records read after it",
            "bytes 3224..3644 corrupt (block length 0), skipped; 5 records read after it",
        ]
    );
}

#[test]
fn a_time_jump_after_a_cut_record_is_believed_when_the_framing_goes_on() {
    // Record 4 is cut (60 of 140 bytes, not the snaplen): the header after it is checked more
    // strictly. Record 5 three years later, then the end of the file: both read, no damage.
    let mut f = pcap(&pkts(), false, false);
    let rec5 = 24 + 156 * 3 + 16 + 60;
    let sec = u32::from_le_bytes(f[rec5..rec5 + 4].try_into().unwrap()) + 3 * 366 * 86_400;
    f[rec5..rec5 + 4].copy_from_slice(&sec.to_le_bytes());
    let (got, err, damage) = read_damaged(f.clone());
    assert_eq!((got.len(), err.is_none(), damage.len()), (5, true, 0));
    // The same with a sixth record after it (a plausible header where record 5 ends).
    let mut six = f.clone();
    six.extend_from_slice(&f[24..24 + 156]);
    let (got, err, damage) = read_damaged(six);
    assert_eq!((got.len(), err.is_none(), damage.len()), (6, true, 0));
    // But with garbage where record 5 ends, record 4's length is not believed.
    let mut bad = f;
    bad.extend_from_slice(&[0xff; 16]);
    let (got, _, damage) = read_damaged(bad);
    assert_eq!(got.len(), 3, "{damage:?}");
    assert!(damage[0].reason.contains("timestamp jumps"), "{damage:?}");
}

/// A pcapng time past 2262 (an absurd tick count, as in pcapplusplus__pcapng-example's second
/// interface, or an offset) is clamped to `MAX_TS_NS`, the latest a signed 64-bit ns count
/// holds, on the multiplying path as on the dividing one; the times before it are exact.
#[test]
fn pcapng_times_past_2262_are_clamped_to_the_largest_signed_ns() {
    let us = Interface::new(1, 1_000_000, 0, 65535);
    assert_eq!(us.ts_ns(1_700_000_000_123_456), 1_700_000_000_123_456_000);
    assert_eq!(us.ts_ns(MAX_TS_NS / 1000), MAX_TS_NS / 1000 * 1000, "the last whole µs before it");
    // 2^64 - 1 ns and more as µs: the product fits a u64 or not, past the limit either way.
    for ticks in [MAX_TS_NS / 1000 + 1, 18_446_744_073_204_277_451, u64::MAX] {
        assert_eq!(us.ts_ns(ticks), MAX_TS_NS, "{ticks} µs");
    }
    let offset = Interface::new(1, 1_000_000, i64::MAX / 1_000_000_000, 65535);
    assert_eq!(offset.ts_ns(u64::MAX / 2), MAX_TS_NS, "an offset past it");
    let dag = Interface::new(1, 1 << 32, 0, 65535);
    assert_eq!(dag.ts_ns(u64::MAX), 4_294_967_295_999_999_999, "2^-32 s units: below it, exact");
    assert_eq!(dag.ts_ns(1 << 32), 1_000_000_000);
}

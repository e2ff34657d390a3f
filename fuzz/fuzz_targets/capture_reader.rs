//! Arbitrary bytes as a capture file (pcap, pcapng, gzip or zstd of either).
//!
//! Never panics; every record is well formed; damage skipped is in file order, holds no record
//! and accounts, with the records before it, for every record read; a file read as two files
//! of a trace set (`SetReader`, as `--merge` and time windows read) yields the same records, in
//! the same per-file order, as read alone; and read a few bytes at a time (so that no record is
//! ever whole in the reader's window, and the general path reads everything) it yields the same
//! records, the same damage and the same error as read whole (where the direct reading of pcap
//! records and pcapng enhanced packet blocks applies).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tcpscope_core::capture::{CaptureReader, SetReader, TraceSet};

/// Records read at most per input (a 16-byte pcap record header is the smallest record).
const MAX_RECORDS: usize = 100_000;

/// What the merge check compares: (ts_ns, data, orig_len, link_type, offset).
type Rec = (u64, Vec<u8>, u32, u32, u64);

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = CaptureReader::from_bytes(data.to_vec()) else { return };
    let _ = (r.format(), r.compression());
    let compressed = r.compression() != tcpscope_core::capture::Compression::None;
    let mut recs: Vec<Rec> = Vec::new();
    let mut errored = None;
    let mut capped = false;
    let mut last_pos = r.position();
    loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                assert_eq!(rec.frame, recs.len() as u64 + 1, "frame numbers count records");
                assert!(rec.orig_len as usize >= rec.data.len(), "orig_len below captured length");
                assert!(rec.offset >= last_pos, "record offset {} before position {last_pos}", rec.offset);
                if !compressed {
                    assert!(rec.data.len() <= data.len());
                }
                // Touch every byte handed out (catches a bad slice range under ASan too).
                let sum = rec.data.iter().fold(0u8, |a, &b| a.wrapping_add(b));
                std::hint::black_box(sum);
                recs.push((rec.ts_ns, rec.data.to_vec(), rec.orig_len, rec.link_type, rec.offset));
                if recs.len() >= MAX_RECORDS {
                    capped = true;
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                errored = Some((e.to_string(), e.offset()));
                break;
            }
        }
        let pos = r.position();
        assert!(pos > last_pos, "a record consumed no bytes");
        if !compressed {
            assert!(pos <= data.len() as u64, "position {pos} past the end ({})", data.len());
        }
        last_pos = pos;
    }
    if errored.is_some() {
        assert!(matches!(r.next_record(), Ok(None)), "a reader is finished after an error");
    }
    // Damage skipped: in file order, each stretch non-empty (empty only where damage in a
    // compressed stream cost no decompressed byte), no record read from inside one.
    let damage = r.damage();
    let mut after = 0;
    for d in &damage {
        assert!(
            after <= d.start && (d.start < d.end || (compressed && d.start == d.end)),
            "damage out of order or empty: {damage:?}"
        );
        assert!(!recs.iter().any(|rec| rec.4 >= d.start && rec.4 < d.end), "a record inside damage {d:?}");
        after = d.end;
    }
    if !compressed {
        assert!(after <= data.len() as u64, "damage past the end");
    }
    if !capped {
        assert_eq!(
            damage.iter().map(|d| d.records_after).sum::<u64>() + first_damage_frame(&damage, &recs),
            recs.len() as u64
        );
    }
    if capped || recs.len() > 10_000 {
        return;
    }

    // The same bytes a few at a time: the general path only.
    if !compressed && let Ok(mut t) = CaptureReader::from_reader(Box::new(Trickle(std::io::Cursor::new(data.to_vec()))))
    {
        let mut trickled: Vec<Rec> = Vec::new();
        let err = loop {
            match t.next_record() {
                Ok(Some(rec)) => trickled.push((rec.ts_ns, rec.data.to_vec(), rec.orig_len, rec.link_type, rec.offset)),
                Ok(None) => break None,
                Err(e) => break Some((e.to_string(), e.offset())),
            }
        };
        assert!(trickled == recs, "records read a few bytes at a time differ");
        assert_eq!(err, errored, "errors read a few bytes at a time differ");
        assert_eq!(t.damage(), damage, "damage read a few bytes at a time differs");
    }

    // The same bytes as two files of a trace set, read through its time-ordered merge.
    let dir = std::env::temp_dir().join(format!("tcpscope-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let paths = [dir.join("a"), dir.join("b")];
    for p in &paths {
        std::fs::write(p, data).expect("a scratch file");
    }
    let set = TraceSet::open(&paths).expect("two files open as a set");
    let mut merged = SetReader::new(&set, 0, u64::MAX);
    let mut per_file: [Vec<Rec>; 2] = [Vec::new(), Vec::new()];
    let mut frames = [0u64; 2];
    let mut errors = [0usize; 2];
    let mut steps = 0usize;
    while let Some(item) = merged.next() {
        steps += 1;
        assert!(steps <= 2 * recs.len() + 4, "the set yields more than its files");
        match item {
            Ok((i, rec)) => {
                frames[i] += 1;
                assert_eq!(rec.frame, frames[i], "a set's frame numbers count each file's records");
                per_file[i].push((rec.ts_ns, rec.data.to_vec(), rec.orig_len, rec.link_type, rec.offset));
            }
            Err((i, _)) => errors[i] += 1,
        }
    }
    // A file without a first record is left out of the set's reading (its error, if any, is
    // the set's: `SetFile::error`); otherwise the set reads it as it reads alone.
    for i in 0..2 {
        if recs.is_empty() {
            assert!(per_file[i].is_empty() && errors[i] == 0, "file {i}: read from a file without a record");
        } else {
            assert!(per_file[i] == recs, "file {i}: records in the set differ from the file read alone");
            assert_eq!(errors[i], errored.is_some() as usize, "file {i}: errors in the set differ");
        }
    }
});

/// Records read before the first damage (all of them when there is none).
fn first_damage_frame(damage: &[tcpscope_core::capture::Damage], recs: &[Rec]) -> u64 {
    match damage.first() {
        Some(d) => recs.iter().filter(|r| r.4 < d.start).count() as u64,
        None => recs.len() as u64,
    }
}

/// Hands out at most 7 bytes per read.
struct Trickle(std::io::Cursor<Vec<u8>>);

impl std::io::Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(7);
        self.0.read(&mut buf[..n])
    }
}

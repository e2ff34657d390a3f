//! The trace set against an oracle: the packets the test itself wrote, in the order it wrote
//! them, with their times.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::*;
use crate::capture::IndexBuilder;
use crate::testutil::{Pkt, flag, pcap, pcapng, rng};

const T0: u64 = 1_795_302_498_000_000_000;

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tcpscope-set-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pkt(ts_ns: u64, seq: u32) -> Pkt {
    Pkt {
        ts_ns,
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        sport: 40000,
        dport: 80,
        seq,
        ack: 1,
        flags: flag::ACK,
        win: 1000,
        len: (seq % 1400) as u16,
        opts: vec![],
        snap: Some(60),
    }
}

/// One packet as the oracle knows it: time, the file it is in, its frame in that file, and the
/// sequence number that identifies it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Truth {
    ts_ns: u64,
    file: PathBuf,
    frame: u64,
    seq: u32,
}

/// Four files of a "ring" with increasing, distinct µs times: plain pcap, pcapng, gzip'd pcap
/// and plain pcap again, 1500-2500 packets each (several index blocks each), written in an
/// order that differs from their time order. Returns the directory and the packets in time
/// order.
fn ring(name: &str) -> (PathBuf, Vec<Truth>) {
    let dir = tempdir(name);
    let mut next = rng(7);
    let mut ts = T0;
    let mut seq = 1u32;
    let mut truth = Vec::new();
    // Names sort in another order than time, so the set must order by time.
    for (k, name) in ["d.pcap", "c.pcapng", "b.pcap.gz", "a.pcap"].iter().enumerate() {
        let n = 1500 + next(1000) as usize;
        let mut pkts = Vec::new();
        for i in 0..n {
            ts += 1000 * (1 + next(5000));
            seq += 1;
            pkts.push(pkt(ts, seq));
            truth.push(Truth { ts_ns: ts, file: dir.join(name), frame: i as u64 + 1, seq });
        }
        ts += 1_000_000_000; // a gap between files
        let bytes = match k {
            1 => pcapng(&pkts),
            2 => {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(&pcap(&pkts, true, false)).unwrap();
                gz.finish().unwrap()
            }
            _ => pcap(&pkts, k == 0, k == 3),
        };
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    (dir, truth)
}

fn seq_of(rec: &Record<'_>) -> u32 {
    crate::decode::decode(rec.link_type, rec.data, rec.orig_len).unwrap().seq.0
}

fn check(got: Result<Option<(usize, Record<'_>)>, SetError>, want: Option<&Truth>, what: &str) {
    let got = got.unwrap().map(|(f, r)| (c_path(f), r.ts_ns, r.frame, seq_of(&r)));
    let want = want.map(|t| (t.file.clone(), t.ts_ns, t.frame, t.seq));
    assert_eq!(got, want, "{what}");
}

thread_local!(static PATHS: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) });
fn c_path(f: usize) -> PathBuf {
    PATHS.with(|p| p.borrow()[f].clone())
}

fn cursor(dir: &Path) -> Cursor {
    let set = TraceSet::open(&[dir.to_path_buf()]).unwrap();
    PATHS.with(|p| *p.borrow_mut() = set.files.iter().map(|f| f.path.clone()).collect());
    Cursor::new(set)
}

/// Seek, next and prev against the oracle, everywhere near file boundaries and at random.
fn exercise(dir: &Path, truth: &[Truth]) {
    let mut c = cursor(dir);
    // Files are in time order whatever their names.
    let order: Vec<String> =
        c.set().files.iter().map(|f| f.path.file_name().unwrap().to_string_lossy().into()).collect();
    assert_eq!(order, ["d.pcap", "c.pcapng", "b.pcap.gz", "a.pcap"]);
    // Walk forward through everything, then back.
    for (i, t) in truth.iter().enumerate() {
        let r = c.next();
        check(r, Some(t), &format!("next #{i}"));
    }
    let r = c.next();
    check(r, None, "next past the end");
    for (i, t) in truth.iter().enumerate().rev() {
        let r = c.prev();
        check(r, Some(t), &format!("prev #{i}"));
    }
    let r = c.prev();
    check(r, None, "prev before the start");
    // Every file boundary: seek to the first packet of a file, step back into the previous
    // file, and forward again.
    for i in 1..truth.len() {
        if truth[i].file == truth[i - 1].file {
            continue;
        }
        let r = c.seek(truth[i].ts_ns);
        check(r, Some(&truth[i]), "seek to a file's first packet");
        let r = c.prev();
        check(r, Some(&truth[i - 1]), "prev across the boundary");
        let r = c.prev();
        check(r, Some(&truth[i - 2]), "prev again");
        let r = c.next();
        check(r, Some(&truth[i - 1]), "next");
        let r = c.next();
        check(r, Some(&truth[i]), "next across the boundary");
        // A time in the gap between the files lands on the later file's first packet.
        let r = c.seek(truth[i - 1].ts_ns + 1);
        check(r, Some(&truth[i]), "seek into the gap");
    }
    // Random times: the first packet at or after them (slow definition: a linear scan).
    let mut next = rng(99);
    let (lo, hi) = (truth[0].ts_ns - 5_000_000, truth.last().unwrap().ts_ns + 5_000_000);
    for _ in 0..300 {
        let t = lo + next(hi - lo);
        let want = truth.iter().find(|p| p.ts_ns >= t);
        let r = c.seek(t);
        check(r, want, &format!("seek {t}"));
        let k = want.map_or(truth.len(), |w| truth.iter().position(|p| p == w).unwrap());
        let r = c.prev();
        check(r, k.checked_sub(1).map(|k| &truth[k]), "prev after seek");
    }
    let r = c.seek(hi);
    check(r, None, "seek past the end");
    let r = c.prev();
    check(r, truth.last(), "prev from the end");
    let r = c.seek(0);
    check(r, Some(&truth[0]), "seek before the start");
}

#[test]
fn cursor_without_indexes_builds_them() {
    let (dir, truth) = ring("noidx");
    exercise(&dir, &truth);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn cursor_with_sidecar_indexes() {
    let (dir, truth) = ring("sidecar");
    // Small blocks so that boundaries fall everywhere; written by the builder the capture uses.
    for name in ["d.pcap", "c.pcapng", "b.pcap.gz", "a.pcap"] {
        let path = dir.join(name);
        let (idx, err) = Index::build(&path, 7, 1 << 20).unwrap();
        assert!(err.is_none());
        assert_eq!(idx.packets, truth.iter().filter(|t| t.file == path).count() as u64);
        assert!(idx.sorted && idx.seekable);
        idx.save(&path).unwrap();
    }
    let set = TraceSet::open(std::slice::from_ref(&dir)).unwrap();
    assert!(set.files.iter().all(|f| f.sidecar), "sidecars used");
    assert!(set.warnings.is_empty());
    exercise(&dir, &truth);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn stale_or_corrupt_index_is_ignored_with_a_warning() {
    let (dir, truth) = ring("stale");
    let a = dir.join("a.pcap");
    let (idx, _) = Index::build(&a, 7, 1 << 20).unwrap();
    // Indexed, then the file grew (as the file being written does).
    let mut stale = idx.clone();
    stale.file_bytes -= 10;
    stale.save(&a).unwrap();
    std::fs::write(Index::sidecar(&dir.join("d.pcap")), b"{\"tcpscope_index\": 1, \"blocks\": [").unwrap();
    let set = TraceSet::open(std::slice::from_ref(&dir)).unwrap();
    assert_eq!(set.warnings.len(), 2, "{:?}", set.warnings);
    assert!(set.warnings.iter().any(|w| w.contains("a.pcap.idx.json: stale index")), "{:?}", set.warnings);
    assert!(
        set.warnings.iter().any(|w| w.contains("d.pcap.idx.json: not a valid tcpscope index")),
        "{:?}",
        set.warnings
    );
    exercise(&dir, &truth);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn builder_matches_reading() {
    // The index's block entries point at the records they name: seek to each and read.
    let (dir, truth) = ring("builder");
    let path = dir.join("c.pcapng");
    let (idx, _) = Index::build(&path, 100, 1 << 20).unwrap();
    let mine: Vec<&Truth> = truth.iter().filter(|t| t.file == path).collect();
    assert_eq!(idx.first_ts_ns, mine[0].ts_ns);
    assert_eq!(idx.last_ts_ns, mine.last().unwrap().ts_ns);
    assert_eq!(idx.blocks.len(), mine.len().div_ceil(100));
    let mut r = CaptureReader::open(&path).unwrap();
    for &(ts, frame, off) in idx.blocks.iter().rev() {
        r.seek_to(off, frame).unwrap();
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!((rec.ts_ns, rec.frame, rec.offset), (ts, frame, off));
        assert_eq!(seq_of(&rec), mine[frame as usize - 1].seq);
    }
    // The same through the builder used by the capture, fed the same facts.
    let mut b = IndexBuilder::new(idx.format, 100, 1 << 20);
    let mut r = CaptureReader::open(&path).unwrap();
    while let Some(rec) = r.next_record().unwrap() {
        b.add(rec.ts_ns, rec.frame, rec.offset);
    }
    assert_eq!(b.finish(idx.file_bytes, None), idx);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn reader_window_matches_a_filter() {
    let (dir, truth) = ring("window");
    for name in ["d.pcap", "a.pcap"] {
        Index::build(&dir.join(name), 50, 1 << 20).unwrap().0.save(&dir.join(name)).unwrap();
    }
    let set = TraceSet::open(std::slice::from_ref(&dir)).unwrap();
    let mut next = rng(3);
    let (lo, hi) = (truth[0].ts_ns - 1000, truth.last().unwrap().ts_ns + 1000);
    for k in 0..40 {
        let (mut from, mut to) = (lo + next(hi - lo), lo + next(hi - lo));
        if from > to {
            std::mem::swap(&mut from, &mut to);
        }
        if k == 0 {
            (from, to) = (0, u64::MAX);
        }
        let want: Vec<(PathBuf, u64, u64)> = truth
            .iter()
            .filter(|t| t.ts_ns >= from && t.ts_ns < to)
            .map(|t| (t.file.clone(), t.ts_ns, t.frame))
            .collect();
        let mut r = SetReader::new(&set, from, to);
        let mut got = Vec::new();
        while let Some(item) = r.next() {
            let (f, rec) = item.unwrap();
            got.push((set.files[f].path.clone(), rec.ts_ns, rec.frame));
        }
        assert_eq!(got, want, "window [{from}, {to})");
        // Files wholly outside a window with an index are not even opened.
        if to < truth[0].ts_ns + 1_000_000 {
            assert!(r.opened.len() <= 1);
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn reader_merges_files_that_overlap_in_time() {
    // Two captures of the same period (two capture points): interleaved times.
    let dir = tempdir("overlap");
    let mut truth = Vec::new();
    let mut files = [Vec::new(), Vec::new()];
    for i in 0..3000u32 {
        let ts = T0 + i as u64 * 1000 + if i % 2 == 0 { 0 } else { 500 };
        files[(i % 2) as usize].push(pkt(ts, i));
        truth.push(ts);
    }
    std::fs::write(dir.join("x.pcap"), pcap(&files[0], true, false)).unwrap();
    std::fs::write(dir.join("y.pcap"), pcap(&files[1], true, false)).unwrap();
    let set = TraceSet::open(&[dir.join("y.pcap"), dir.join("x.pcap")]).unwrap();
    let (from, to) = (truth[1000], truth[2500]);
    let mut r = SetReader::new(&set, from, to);
    let mut got = Vec::new();
    while let Some(item) = r.next() {
        got.push(item.unwrap().1.ts_ns);
    }
    assert_eq!(got, truth[1000..2500]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_file_cut_inside_a_record_is_read_up_to_the_cut() {
    // The file being written by a live capture ends inside a record.
    let dir = tempdir("cut");
    let pkts: Vec<Pkt> = (0..2000).map(|i| pkt(T0 + i * 1000, i as u32)).collect();
    let mut bytes = pcap(&pkts, true, false);
    bytes.truncate(bytes.len() - 7);
    std::fs::write(dir.join("live.pcap"), bytes).unwrap();
    let mut c = cursor(&dir);
    let r = c.seek(u64::MAX);
    assert!(r.unwrap().is_none());
    let last = c.prev().unwrap().map(|(_, r)| (r.ts_ns, r.frame));
    assert_eq!(last, Some((T0 + 1998 * 1000, 1999)));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_directory_without_captures_is_an_error() {
    let dir = tempdir("empty");
    std::fs::write(dir.join("x.pcap.idx.json"), b"{}").unwrap();
    let e = TraceSet::open(std::slice::from_ref(&dir)).unwrap_err();
    assert!(e.to_string().contains("no capture files"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn equal_times_across_a_file_boundary_seek_to_the_earlier_file() {
    // Fast links put several packets in one µs; a rotation can fall between them.
    let dir = tempdir("equal");
    let t = T0 + 5000;
    let one: Vec<Pkt> = vec![pkt(T0, 1), pkt(t, 2), pkt(t, 3)];
    let two: Vec<Pkt> = vec![pkt(t, 4), pkt(t + 1000, 5)];
    std::fs::write(dir.join("1.pcap"), pcap(&one, false, false)).unwrap();
    std::fs::write(dir.join("2.pcap"), pcap(&two, false, false)).unwrap();
    let mut c = cursor(&dir);
    let got = c.seek(t).unwrap().map(|(_, r)| seq_of(&r));
    assert_eq!(got, Some(2));
    let got: Vec<u32> = std::iter::from_fn(|| c.next().unwrap().map(|(_, r)| seq_of(&r))).collect();
    assert_eq!(got, [3, 4, 5]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn reader_seeks_with_the_index_even_when_times_go_back() {
    // Packets timestamped on several CPUs: every 10th packet swapped with the next one.
    let dir = tempdir("unsorted");
    let mut ts: Vec<u64> = (0..5000u64).map(|i| T0 + i * 1000).collect();
    for i in (0..4990).step_by(10) {
        ts.swap(i, i + 1);
    }
    let pkts: Vec<Pkt> = ts.iter().enumerate().map(|(i, &t)| pkt(t, i as u32)).collect();
    let path = dir.join("u.pcap");
    std::fs::write(&path, pcap(&pkts, false, false)).unwrap();
    let (from, to) = (T0 + 2500 * 1000 + 1, T0 + 2700 * 1000 + 1);
    // The slow definition: the file in order, filtered.
    let want: Vec<u64> = ts.iter().copied().filter(|&t| t >= from && t < to).collect();
    assert_eq!(want.len(), 200);
    for indexed in [false, true] {
        if indexed {
            let (idx, _) = Index::build(&path, 100, 1 << 20).unwrap();
            assert!(!idx.sorted);
            idx.save(&path).unwrap();
        }
        let set = TraceSet::open(std::slice::from_ref(&path)).unwrap();
        let mut r = SetReader::new(&set, from, to);
        let mut got = Vec::new();
        while let Some(item) = r.next() {
            got.push(item.unwrap().1.ts_ns);
        }
        assert_eq!(got, want, "indexed {indexed}");
        if indexed {
            // At most a block before the window and a block after it.
            assert!(r.records_read <= 200 + 2 * 100 + 1, "read {} records", r.records_read);
        } else {
            assert_eq!(r.records_read, 5000);
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

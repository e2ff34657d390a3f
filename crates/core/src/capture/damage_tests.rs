//! Real recorded traces damaged at seeded random places: what is read back must be records of
//! the original file (never garbage), and most intact records must be recovered.
//!
//! The damage is made at test time from the trace in `tests/data/` (always there) and from
//! public traces in `../shared/traces/public/` when that directory exists (skipped otherwise).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::*;

/// splitmix64: a deterministic stream of numbers from a seed.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// (ts_ns, data, orig_len, link_type) by byte offset.
type Recs = BTreeMap<u64, (u64, Vec<u8>, u32, u32)>;

fn records(bytes: Vec<u8>) -> (Recs, Vec<Damage>, Option<String>) {
    let mut r = CaptureReader::from_bytes(bytes).unwrap();
    let mut out = Recs::new();
    let err = loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                out.insert(rec.offset, (rec.ts_ns, rec.data.to_vec(), rec.orig_len, rec.link_type));
            }
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    (out, r.damage(), err)
}

/// The same packets as a little-endian pcapng file (one interface, µs), for pcapng damage.
pub(crate) fn to_pcapng(recs: &Recs) -> Vec<u8> {
    fn block(f: &mut Vec<u8>, kind: u32, body: &[u8]) {
        let len = 12 + body.len().next_multiple_of(4) as u32;
        f.extend_from_slice(&kind.to_le_bytes());
        f.extend_from_slice(&len.to_le_bytes());
        f.extend_from_slice(body);
        f.resize(f.len() + body.len().next_multiple_of(4) - body.len(), 0);
        f.extend_from_slice(&len.to_le_bytes());
    }
    let mut f = Vec::new();
    let shb = [&0x1a2b_3c4du32.to_le_bytes()[..], &1u16.to_le_bytes(), &0u16.to_le_bytes(), &(-1i64).to_le_bytes()];
    block(&mut f, 0x0a0d_0d0a, &shb.concat());
    let link = recs.values().next().map_or(1, |r| r.3) as u16;
    block(&mut f, 1, &[&link.to_le_bytes()[..], &0u16.to_le_bytes(), &0u32.to_le_bytes()].concat());
    for (ts_ns, data, orig, _) in recs.values() {
        let us = ts_ns / 1000;
        let head = [(us >> 32) as u32, us as u32, data.len() as u32, *orig];
        let mut body = 0u32.to_le_bytes().to_vec();
        for w in head {
            body.extend_from_slice(&w.to_le_bytes());
        }
        body.extend_from_slice(data);
        block(&mut f, 6, &body);
    }
    f
}

/// What reading a damaged copy gave.
#[derive(Debug)]
struct Outcome {
    /// Original records none of whose bytes were overwritten.
    intact: usize,
    /// Of those, read back identical.
    recovered: usize,
    /// Records read back that are not an original record at the same offset with the same
    /// lengths (a wrong frame), or an intact record read back different.
    invented: usize,
    /// Records read in all (damaged ones at the right place included).
    read: usize,
    /// Damaged regions reported.
    regions: usize,
}

/// Overwrites `n` bytes at seeded random offsets from `from` on and reads the copy back.
fn damage_and_read(original: &[u8], from: usize, n: usize, seed: u64) -> Outcome {
    let ng = original.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]);
    let (orig, damage, err) = records(original.to_vec());
    assert!(damage.is_empty() && err.is_none(), "the original reads cleanly: {damage:?} {err:?}");
    let mut bytes = original.to_vec();
    let mut rng = Rng(seed);
    let mut hit = BTreeSet::new();
    for _ in 0..n {
        let at = from + rng.below(bytes.len() - from);
        bytes[at] = rng.next() as u8;
        hit.insert(at as u64);
    }
    // Each original record spans its offset to the next one's (or the file's end).
    let ends: Vec<u64> = orig.keys().skip(1).copied().chain([original.len() as u64]).collect();
    let intact: BTreeSet<u64> =
        orig.keys().zip(&ends).filter(|&(&s, &e)| hit.range(s..e).next().is_none()).map(|(&s, _)| s).collect();
    let (got, damage, err) = records(bytes);
    if std::env::var("DAMAGE_DEBUG").is_ok() {
        eprintln!("  error {err:?}");
        for d in damage.iter().filter(|d| d.end - d.start > 2000) {
            eprintln!("  {}", d.describe());
        }
    }
    let mut out = Outcome { intact: intact.len(), recovered: 0, invented: 0, read: got.len(), regions: damage.len() };
    for (off, rec) in &got {
        match orig.get(off) {
            // At an original record's offset with its length: framed right. (In pcapng the
            // block's length frames it; a captured length damaged within the block's padding
            // is damage to the packet, as a damaged timestamp is.)
            Some(o)
                if o.1.len() == rec.1.len()
                    || (ng && o.1.len().next_multiple_of(4) == rec.1.len().next_multiple_of(4)) =>
            {
                if intact.contains(off) {
                    if o == rec {
                        out.recovered += 1;
                    } else {
                        if std::env::var("DAMAGE_DEBUG").is_ok() {
                            let prev = orig.range(..off).next_back().map(|(_, v)| v.0);
                            let next = orig.range(off + 1..).next().map(|(_, v)| v.0);
                            eprintln!(
                                "  intact at {off} read changed: time {} → {} (prev {prev:?}, next {next:?})",
                                o.0, rec.0
                            );
                        }
                        out.invented += 1;
                    }
                }
            }
            o => {
                if std::env::var("DAMAGE_DEBUG").is_ok() {
                    let near = orig.range(..=off).next_back().map(|(k, v)| (*k, v.1.len(), v.2));
                    let hits: Vec<_> = hit.range(off.saturating_sub(40)..off + 40).collect();
                    eprintln!(
                        "  invented at {off}: len {} orig {} (original here: {:?}; before: {near:?}; hits {hits:?})",
                        rec.1.len(),
                        rec.2,
                        o.map(|o| (o.1.len(), o.2))
                    );
                }
                out.invented += 1
            }
        }
    }
    out
}

fn check(name: &str, original: &[u8], from: usize, n: usize) -> Outcome {
    let mut total = Outcome { intact: 0, recovered: 0, invented: 0, read: 0, regions: 0 };
    for seed in 1..=5u64 {
        let o = damage_and_read(original, from, n, seed);
        eprintln!("{name}, {n} bytes overwritten, seed {seed}: {o:?}");
        assert_eq!(o.invented, 0, "{name} seed {seed}: records read that are not the original's: {o:?}");
        assert!(o.recovered * 10 >= o.intact * 9, "{name} seed {seed}: under 90 % of intact records: {o:?}");
        total.intact += o.intact;
        total.recovered += o.recovered;
        total.read += o.read;
        total.regions += o.regions;
    }
    total
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Bytes overwritten for a file of `len` bytes at the issue's density (3,000 in 1.6 MB).
fn density(len: usize) -> usize {
    len * 3000 / 1_600_000
}

#[test]
fn a_damaged_recorded_pcap_gives_back_most_records_and_no_garbage() {
    let f = std::fs::read(repo().join("tests/data/randloss-snd.pcap")).unwrap();
    check("randloss-snd.pcap", &f, 24, density(f.len()));
    // Ten times as dense: regions run into each other.
    let o = damage_and_read(&f, 24, 10 * density(f.len()), 9);
    assert_eq!(o.invented, 0, "{o:?}");
}

#[test]
fn a_damaged_recorded_pcapng_gives_back_most_records_and_no_garbage() {
    let f = std::fs::read(repo().join("tests/data/randloss-snd.pcap")).unwrap();
    let ng = to_pcapng(&records(f).0);
    // After the section and interface blocks (damage there is another story: see capture.md).
    check("randloss-snd.pcapng", &ng, 48, density(ng.len()));
}

#[test]
fn damaged_public_traces_give_back_most_records_and_no_garbage() {
    let dir = repo().join("../shared/traces/public");
    if !dir.is_dir() {
        eprintln!("skipped: {} is absent", dir.display());
        return;
    }
    for name in ["tcptrace__dsack.pcap", "zeek__http_1000-requests-one-dropped-response.pcap", "zeek__ssh.pcap"] {
        let f = std::fs::read(dir.join(name)).unwrap();
        check(name, &f, 24, density(f.len()));
        let ng = to_pcapng(&records(f).0);
        check(&format!("{name} as pcapng"), &ng, 48, density(ng.len()));
    }
    for name in ["zeek__irc-dcc-send.pcapng", "chrissanders__http_espn.pcapng"] {
        let f = std::fs::read(dir.join(name)).unwrap();
        // Past the section header and first interface (their sizes differ per file).
        let first = *records(f.clone()).0.keys().next().unwrap() as usize;
        check(name, &f, first, density(f.len()));
    }
}

/// A damaged file's records written out as pcap read back the same, with no damage, by
/// tcpscope and (when installed) by tshark.
#[test]
fn the_records_of_a_damaged_file_written_as_pcap_read_back_clean() {
    let f = std::fs::read(repo().join("tests/data/randloss-snd.pcap")).unwrap();
    let ng = to_pcapng(&records(f.clone()).0);
    for (name, original) in [("pcap", f), ("pcapng", ng)] {
        let mut bytes = original.clone();
        let mut rng = Rng(7);
        for _ in 0..density(bytes.len()) {
            let at = 48 + rng.below(bytes.len() - 48);
            bytes[at] = rng.next() as u8;
        }
        let (got, damage, err) = records(bytes);
        assert!(!damage.is_empty() && err.is_none(), "{name}");
        // The snaplen the records were cut at (what `repair` writes: the pcap file's, or the
        // largest captured length of a pcapng file's), so a cut record reads as such.
        let snaplen = got.values().map(|r| r.1.len() as u32).max().unwrap();
        let mut w: Option<PcapWriter<Vec<u8>>> = None;
        for (off, (ts_ns, data, orig_len, link_type)) in &got {
            let rec =
                Record { ts_ns: *ts_ns, data, orig_len: *orig_len, link_type: *link_type, frame: 0, offset: *off };
            let w = w.get_or_insert_with(|| PcapWriter::new(Vec::new(), *link_type, snaplen).unwrap());
            w.write(&rec).unwrap();
        }
        let out = w.unwrap().finish().unwrap();
        let (back, damage, err) = records(out.clone());
        assert!(damage.is_empty() && err.is_none(), "{name}: {damage:?} {err:?}");
        // The same records, but for damaged original lengths (written as the captured length)
        // and times past 2106 (damaged pcapng timestamps: pcap's seconds are 32 bits).
        let values = |r: &Recs| {
            r.values()
                .map(|(ts, data, orig, lt)| {
                    let ts = (ts / 1_000_000_000).min(u32::MAX as u64) * 1_000_000_000 + ts % 1_000_000_000;
                    (ts, data.clone(), if *orig > 1 << 24 { data.len() as u32 } else { *orig }, *lt)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(values(&back), values(&got), "{name}");
        let tmp = std::env::temp_dir().join(format!("tcpscope-repair-test-{}-{name}.pcap", std::process::id()));
        std::fs::write(&tmp, &out).unwrap();
        match std::process::Command::new("tshark")
            .args(["-r"])
            .arg(&tmp)
            .args(["-T", "fields", "-e", "frame.len"])
            .output()
        {
            Ok(o) => {
                let lens: Vec<u32> =
                    String::from_utf8_lossy(&o.stdout).lines().map(|l| l.trim().parse().unwrap()).collect();
                assert!(o.status.success(), "{name}: tshark: {}", String::from_utf8_lossy(&o.stderr));
                assert_eq!(
                    lens,
                    values(&back).iter().map(|r| r.2).collect::<Vec<_>>(),
                    "{name}: tshark's frame lengths"
                );
            }
            Err(_) => eprintln!("tshark not installed: not checked with it"),
        }
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Reads `bytes` (a damaged copy of `original`) and returns how many records read at an
/// original record's offset have a time more than [`resync::TIME_OUTLIER_NS`] from the
/// original's, how many fall outside the original's span of times, and `bad_timestamps`.
fn times_after_damage(original: &[u8], bytes: Vec<u8>) -> (usize, usize, u64) {
    let (orig, _, _) = records(original.to_vec());
    let (lo, hi) = orig.values().fold((u64::MAX, 0), |(lo, hi), r| (lo.min(r.0), hi.max(r.0)));
    let mut r = CaptureReader::from_bytes(bytes).unwrap();
    let (mut off_time, mut outside) = (0, 0);
    while let Ok(Some(rec)) = r.next_record() {
        if let Some(o) = orig.get(&rec.offset)
            && o.0.abs_diff(rec.ts_ns) > resync::TIME_OUTLIER_NS
        {
            off_time += 1;
            if std::env::var("DAMAGE_DEBUG").is_ok() {
                let i = orig.range(..rec.offset).count();
                eprintln!("  record {i} at {}: {} read as {}", rec.offset, o.0, rec.ts_ns);
            }
        }
        if rec.ts_ns.saturating_add(resync::TIME_OUTLIER_NS) < lo
            || rec.ts_ns > hi.saturating_add(resync::TIME_OUTLIER_NS)
        {
            outside += 1;
        }
    }
    (off_time, outside, r.bad_timestamps)
}

fn overwrite(original: &[u8], from: usize, n: usize, seed: u64) -> Vec<u8> {
    let mut bytes = original.to_vec();
    let mut rng = Rng(seed);
    for _ in 0..n {
        let at = from + rng.below(bytes.len() - from);
        bytes[at] = rng.next() as u8;
    }
    bytes
}

/// A damaged timestamp in a record read at its place (far from both neighbours', or a
/// fraction out of range) is counted and replaced by the previous record's time: no record
/// is read years away from the capture (issue 18: seed 7 over dsack left one dated 2091).
#[test]
fn damaged_timestamps_are_counted_and_replaced() {
    let f = std::fs::read(repo().join("tests/data/randloss-snd.pcap")).unwrap();
    let ng = to_pcapng(&records(f.clone()).0);
    let mut traces = vec![("randloss-snd.pcap".to_string(), f, 24), ("randloss-snd.pcapng".into(), ng, 48)];
    let dsack = repo().join("../shared/traces/public/tcptrace__dsack.pcap");
    if dsack.is_file() {
        let f = std::fs::read(&dsack).unwrap();
        let ng = to_pcapng(&records(f.clone()).0);
        traces.push(("tcptrace__dsack.pcap".into(), f, 24));
        traces.push(("tcptrace__dsack.pcapng".into(), ng, 48));
    } else {
        eprintln!("skipped the public trace: {} is absent", dsack.display());
    }
    // Two damaged timestamps in a row, or one beside damaged framing, can still pass: at most
    // 1 in 50 of those found, and none in the issue's case (seed 7 over dsack's pcap).
    let (mut found, mut passed) = (0, 0);
    for (name, original, from) in &traces {
        for seed in 1..=10 {
            let n = if name.contains("dsack") { 3000 } else { density(original.len()) };
            let (off_time, outside, bad) = times_after_damage(original, overwrite(original, *from, n, seed));
            eprintln!("{name}, {n} bytes, seed {seed}: {bad} bad timestamps, {off_time} off, {outside} outside");
            assert!(bad > 0, "{name} seed {seed}: no damaged timestamp found");
            if name == "tcptrace__dsack.pcap" && seed == 7 {
                assert_eq!((off_time, outside), (0, 0), "{name} seed {seed}: damaged times read");
            }
            found += bad;
            passed += off_time as u64;
        }
    }
    eprintln!("{found} damaged timestamps found, {passed} passed");
    assert!(passed * 50 <= found, "{passed} damaged timestamps passed, {found} found");
    // One record's seconds moved a year on, another's fraction out of range: both counted,
    // given the time before; the records around them untouched.
    let f = &traces[0].1;
    let (orig, _, _) = records(f.clone());
    let offs: Vec<u64> = orig.keys().copied().collect();
    let mut bytes = f.clone();
    let at = offs[100] as usize;
    let sec = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) + 366 * 86_400;
    bytes[at..at + 4].copy_from_slice(&sec.to_le_bytes());
    let at = offs[200] as usize + 4;
    bytes[at..at + 4].copy_from_slice(&2_000_000u32.to_le_bytes());
    let (got, damage, err) = records(bytes);
    assert!(damage.is_empty() && err.is_none());
    assert_eq!(got.len(), orig.len());
    for (i, (off, rec)) in got.iter().enumerate() {
        let want = if i == 100 || i == 200 { orig[&offs[i - 1]].0 } else { orig[off].0 };
        assert_eq!(rec.0, want, "record {i}");
        assert_eq!(rec.1, orig[off].1, "record {i}");
    }
    let mut r = CaptureReader::from_bytes(std::fs::read(repo().join("tests/data/randloss-snd.pcap")).unwrap()).unwrap();
    while let Ok(Some(_)) = r.next_record() {}
    assert_eq!(r.bad_timestamps, 0, "an intact file has no damaged timestamp");
}

/// An intact record between two idle stretches longer than the bound (keepalives), and a
/// clock stepped back, are not damage.
#[test]
fn idle_gaps_and_clock_steps_are_not_damaged_timestamps() {
    let f = std::fs::read(repo().join("tests/data/randloss-snd.pcap")).unwrap();
    let (orig, _, _) = records(f.clone());
    let offs: Vec<u64> = orig.keys().copied().collect();
    let mut bytes = f.clone();
    // Record 50 alone 60 s after record 49, every later one 120 s after; from record 300 on,
    // the clock 1,000 s back.
    for (i, &off) in offs.iter().enumerate().skip(50) {
        let at = off as usize;
        let shift: i64 = if i == 50 { 60 } else { 120 } - if i >= 300 { 1000 } else { 0 };
        let sec = (u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as i64 + shift) as u32;
        bytes[at..at + 4].copy_from_slice(&sec.to_le_bytes());
    }
    let (got, _, _) = records(bytes.clone());
    let mut r = CaptureReader::from_bytes(bytes).unwrap();
    while let Ok(Some(_)) = r.next_record() {}
    assert_eq!(r.bad_timestamps, 0);
    for (i, (off, rec)) in got.iter().enumerate() {
        let shift: i64 = if i < 50 {
            0
        } else if i == 50 {
            60
        } else {
            120
        } - if i >= 300 { 1000 } else { 0 };
        assert_eq!(rec.0 as i64, orig[off].0 as i64 + shift * 1_000_000_000, "record {i}");
    }
}

/// Every record of `bytes` as (time, data, original length, link type), in file order.
type Contents = Vec<(u64, Vec<u8>, u32, u32)>;

fn contents(bytes: Vec<u8>) -> (Contents, Vec<Damage>, Option<String>) {
    let (recs, damage, err) = records(bytes);
    (recs.into_values().collect(), damage, err)
}

/// `plain` compressed as members (frames) of `chunk` input bytes each, as bgzip, pigz per
/// file or ring files compressed one by one write them; zstd frames carry their checksum, as
/// the zstd command's do.
fn compress(plain: &[u8], zstd: bool, chunk: usize) -> (Vec<u8>, Vec<usize>) {
    use std::io::Write;
    let (mut out, mut starts) = (Vec::new(), Vec::new());
    for part in plain.chunks(chunk) {
        starts.push(out.len());
        if zstd {
            let mut e = zstd::Encoder::new(Vec::new(), 3).unwrap();
            e.include_checksum(true).unwrap();
            e.write_all(part).unwrap();
            out.extend(e.finish().unwrap());
        } else {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(part).unwrap();
            out.extend(e.finish().unwrap());
        }
    }
    (out, starts)
}

/// Damage in one member (frame) of a file written as several loses that member and the record
/// cut at its ends, says so, and invents nothing: every record read is one of the original's,
/// in order.
#[test]
fn damage_in_one_compressed_member_loses_only_that_member() {
    let plain = std::fs::read(repo().join("tests/data/randloss-snd.pcap")).unwrap();
    let (orig, _, _) = contents(plain.clone());
    for zstd in [false, true] {
        let (file, starts) = compress(&plain, zstd, 16 << 10);
        let mut worst = 1.0f64;
        for seed in 0..10 {
            let mut rng = Rng(seed);
            // A burst of 8 bytes in a member after the first (the first holds the file header).
            let m = 1 + rng.below(starts.len() - 1);
            let end = starts.get(m + 1).copied().unwrap_or(file.len());
            let at = starts[m] + rng.below(end - starts[m] - 8);
            let mut bytes = file.clone();
            for b in &mut bytes[at..at + 8] {
                *b ^= 1 + rng.below(255) as u8;
            }
            let (got, damage, err) = contents(bytes);
            let name = if zstd { "zstd" } else { "gzip" };
            // In order, each an original record: a subsequence of the original.
            let mut it = orig.iter();
            for g in &got {
                assert!(it.any(|o| o == g), "{name} seed {seed}: a record read is not the original's (at {at})");
            }
            assert!(err.is_none(), "{name} seed {seed}: {err:?}");
            assert!(
                damage.iter().any(|d| d.reason.starts_with(&format!("{name} stream damaged"))),
                "{name} seed {seed}: {damage:?}"
            );
            worst = worst.min(got.len() as f64 / orig.len() as f64);
        }
        eprintln!("zstd {zstd}: at least {:.1} % of the records recovered", worst * 100.0);
        assert!(worst >= 0.9, "zstd {zstd}: only {:.1} % of the records recovered", worst * 100.0);
    }
}

/// In one long zstd frame, damage loses the rest of it and is always reported. When zstd
/// notices it inside the damaged block (its entropy-coded sections check themselves), what is
/// read is exactly the original's records up to there; when only the frame's checksum shows
/// it (damage to raw literals or to a match's offset copies wrong bytes silently), the bytes
/// handed out more than the hold before it may be damaged, and are read as damaged records.
#[test]
fn damage_in_a_single_zstd_frame_keeps_what_came_before() {
    // Larger than the hold many times over (the recorded traces are not).
    let path = repo().join("../shared/traces/public/tcptrace__dsack.pcap");
    if !path.is_file() {
        eprintln!("skipped: {} is absent", path.display());
        return;
    }
    let plain = std::fs::read(path).unwrap();
    let (orig, _, _) = contents(plain.clone());
    let (file, _) = compress(&plain, true, plain.len());
    let (mut in_block, mut exact) = (0, 0);
    for seed in 0..10 {
        let mut rng = Rng(100 + seed);
        let at = file.len() / 2 + rng.below(file.len() / 2 - 16);
        let mut bytes = file.clone();
        bytes[at] ^= 1 + rng.below(255) as u8;
        let (got, damage, _) = contents(bytes);
        let reason = damage.iter().find(|d| d.reason.starts_with("zstd stream damaged")).map(|d| d.reason.clone());
        let reason = reason.unwrap_or_else(|| panic!("seed {seed}: not reported: {damage:?}"));
        let prefix = got.iter().zip(&orig).all(|(g, o)| g == o);
        assert!(!got.is_empty() && got.len() < orig.len(), "seed {seed}: {} records", got.len());
        if !reason.contains("checksum") {
            in_block += 1;
            assert!(prefix, "seed {seed}: noticed in its block, yet not a prefix of the original");
        }
        exact += prefix as usize;
    }
    eprintln!("of 10 damaged frames: {in_block} noticed in the block, {exact} read exactly up to the damage");
    assert!(in_block >= 3, "{in_block}");
}

/// A compressed file cut short is truncated, not damaged: every record read is the original's,
/// no damage is reported.
#[test]
fn a_cut_compressed_file_is_truncated_not_damaged() {
    let plain = std::fs::read(repo().join("tests/data/randloss-snd.pcap")).unwrap();
    let (orig, _, _) = contents(plain.clone());
    for zstd in [false, true] {
        for chunk in [16 << 10, plain.len()] {
            let (file, _) = compress(&plain, zstd, chunk);
            // (zstd decodes a block, up to 128 KiB, only whole: cut a third of the way into
            // this file's one frame, nothing can be read.)
            for cut in [file.len() / 2 + 7, file.len() - 3] {
                let (got, damage, _) = contents(file[..cut].to_vec());
                assert!(damage.is_empty(), "zstd {zstd} cut {cut}: {damage:?}");
                assert!(!got.is_empty() && got.iter().zip(&orig).all(|(g, o)| g == o), "zstd {zstd} cut {cut}");
            }
        }
    }
}

/// Bytes after the last member that start no other (tape padding, garbage) are said, and cost
/// no record; one such byte too.
#[test]
fn bytes_after_the_last_gzip_member_are_said_and_cost_nothing() {
    let plain = std::fs::read(repo().join("tests/data/randloss-snd.pcap")).unwrap();
    let (orig, _, _) = contents(plain.clone());
    for tail in [vec![0u8], vec![0u8; 4096], b"garbage".to_vec()] {
        let (mut file, _) = compress(&plain, false, 16 << 10);
        file.extend(&tail);
        let (got, damage, err) = contents(file);
        assert_eq!(got, orig, "{} bytes after", tail.len());
        assert!(err.is_none(), "{err:?}");
        assert_eq!(damage.len(), 1, "{damage:?}");
        assert!(damage[0].reason.contains("bytes after a member that do not start another"), "{damage:?}");
        // Every decompressed byte was read: an empty stretch, said as such.
        assert_eq!(damage[0].start, damage[0].end, "{damage:?}");
        assert!(damage[0].describe().contains("nothing skipped"), "{}", damage[0].describe());
    }
}

//! Reading a capture and counting what it holds: [`FileSummary`] per file, every record
//! counted and decoded once, at the edge of the pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::capture::{CaptureError, CaptureReader, Compression, Damage, Format, Record};
use crate::decode::{self, Anomaly, Checksum, Segment, Skip};
use crate::stats::ConnStats;

/// Packets between two progress reports.
pub(crate) const PROGRESS_EVERY: u64 = 1 << 16;

/// What a file contained and how reading it ended.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FileSummary {
    /// Path as given ("-" for standard input).
    pub path: PathBuf,
    /// pcap or pcapng (`None` if the file could not be opened as either).
    pub format: Option<Format>,
    /// Compression detected.
    pub compression: Option<Compression>,
    /// Packet records read.
    pub packets: u64,
    /// Captured bytes of those records.
    pub captured_bytes: u64,
    /// Records decoded as TCP segments.
    pub tcp_packets: u64,
    /// Records skipped, by reason (`not_ip`, `not_tcp`, `ip_fragment`, `truncated_header`,
    /// `malformed`, `unknown_link_type`, `checksum_error`).
    pub skipped: BTreeMap<&'static str, u64>,
    /// Records of link types tcpscope does not decode, by LINKTYPE value.
    pub unknown_link_types: BTreeMap<u32, u64>,
    /// Decoded segments with an anomaly, by kind (filled from `anomaly_counts` by `finish`).
    pub anomalies: BTreeMap<&'static str, u64>,
    /// Per-packet counting goes here (an array, not a map lookup per packet).
    #[serde(skip)]
    pub(super) anomaly_counts: [u64; Anomaly::ALL.len()],
    /// Segments carrying TCP options other than MSS, window scale, SACK and timestamps, by
    /// option kind (e.g. 30 MPTCP, 34 TCP Fast Open, 172 AccECN); kinds ≥ 63 are counted as 63.
    pub other_tcp_options: BTreeMap<u8, u64>,
    /// Records with a damaged timestamp, given the previous record's time (capture.md).
    pub bad_timestamps: u64,
    /// First and last record time (ns since the epoch).
    pub first_ts_ns: u64,
    /// Last record time.
    pub last_ts_ns: u64,
    /// Why reading stopped early, if it did.
    pub error: Option<String>,
    /// Byte offset of that error.
    pub error_offset: Option<u64>,
    /// Stretches of the file skipped because their bytes could not be records, in file order,
    /// each with the records read after it (reading goes on after damage; `error` is for what
    /// stopped it).
    pub damaged: Vec<Damage>,
}

/// Counts a record in the file's summary and decodes it; `None` when it carries no TCP segment
/// (the reason is counted).
#[inline]
pub(crate) fn count_and_decode<'a>(sum: &mut FileSummary, rec: &Record<'a>) -> Option<Segment<'a>> {
    let mut seg = Segment::EMPTY;
    let payload = count_and_decode_into(sum, rec, &mut seg)?;
    Some(Segment { payload, ..seg })
}

/// [`count_and_decode`] into `seg` ([`decode::decode_into`]): the payload is returned.
#[inline]
pub(crate) fn count_and_decode_into<'a>(
    sum: &mut FileSummary,
    rec: &Record<'a>,
    seg: &mut Segment<'_>,
) -> Option<&'a [u8]> {
    sum.packets += 1;
    sum.captured_bytes += rec.data.len() as u64;
    if sum.first_ts_ns == 0 {
        sum.first_ts_ns = rec.ts_ns;
    }
    sum.last_ts_ns = sum.last_ts_ns.max(rec.ts_ns);
    let payload = match decode::decode_into(rec.link_type, rec.data, rec.orig_len, seg) {
        Ok(payload) => payload,
        Err(skip) => {
            *sum.skipped.entry(skip.name()).or_default() += 1;
            if let Skip::UnknownLinkType(lt) = skip {
                *sum.unknown_link_types.entry(lt).or_default() += 1;
            }
            return None;
        }
    };
    sum.tcp_packets += 1;
    if seg.anomalies.0 != 0 {
        for a in seg.anomalies.iter() {
            sum.anomaly_counts[a as usize] += 1;
        }
    }
    let mut kinds = seg.options.other_kinds;
    while kinds != 0 {
        let k = kinds.trailing_zeros() as u8;
        *sum.other_tcp_options.entry(k).or_default() += 1;
        kinds &= kinds - 1;
    }
    Some(payload)
}

/// With `--checksums`, after [`count_and_decode`]: verifies the checksums of the segment
/// decoded from `rec` into `seg.checksum` ([`decode::checksum`]). One that fails (not offload)
/// is moved from `tcp_packets` to `skipped` as `checksum_error`, and left to the analyzer,
/// marked [`Checksum::Bad`], to count in its connection without analysing it. Without
/// `--checksums` it is not called and `seg.checksum` stays `NotVerified`
/// ([`Segment::EMPTY`]).
// Called by the readers after counting rather than inside it, and out of line: inside, it
// changed how the per-record path was compiled with verification off (+2 % instructions on a
// bulk trace).
#[cold]
#[inline(never)]
pub(crate) fn verify_checksums(sum: &mut FileSummary, rec: &Record<'_>, seg: &mut Segment<'_>) {
    seg.checksum = decode::checksum::verify(rec.link_type, rec.data, rec.orig_len);
    if seg.checksum == Checksum::Bad {
        sum.tcp_packets -= 1;
        *sum.skipped.entry("checksum_error").or_default() += 1;
    }
}

impl FileSummary {
    /// Whether the input could not be opened as a capture at all (nothing read, no format).
    pub fn unopened(&self) -> bool {
        self.format.is_none() && self.packets == 0
    }

    /// One summary for a trace read from `files` (a ring's): every count summed, the first
    /// error named by its file (with its offset in that file), each file's damaged stretches
    /// in file order, named by their file. A trace of one file is that file's summary.
    pub fn sum(path: &Path, files: &[FileSummary]) -> FileSummary {
        if let [one] = files
            && one.path == path
        {
            return one.clone();
        }
        let mut sum = FileSummary { path: path.to_path_buf(), ..Default::default() };
        for f in files {
            sum.format = sum.format.or(f.format);
            sum.compression = sum.compression.or(f.compression);
            sum.packets += f.packets;
            sum.captured_bytes += f.captured_bytes;
            sum.tcp_packets += f.tcp_packets;
            add_counts(&mut sum.skipped, &f.skipped);
            add_counts(&mut sum.unknown_link_types, &f.unknown_link_types);
            add_counts(&mut sum.anomalies, &f.anomalies);
            add_counts(&mut sum.other_tcp_options, &f.other_tcp_options);
            for (s, n) in sum.anomaly_counts.iter_mut().zip(f.anomaly_counts) {
                *s += n;
            }
            sum.bad_timestamps += f.bad_timestamps;
            sum.damaged.extend(f.damaged.iter().map(|d| Damage { file: Some(f.path.clone()), ..d.clone() }));
            sum.first_ts_ns = if sum.first_ts_ns == 0 { f.first_ts_ns } else { sum.first_ts_ns.min(f.first_ts_ns) };
            sum.last_ts_ns = sum.last_ts_ns.max(f.last_ts_ns);
            if sum.error.is_none()
                && let Some(e) = &f.error
            {
                sum.error = Some(format!("{}: {e}", f.path.display()));
                sum.error_offset = f.error_offset;
            }
        }
        sum
    }

    /// Moves the per-packet counters into the reported maps; call once, at the end of the file.
    pub fn finish(mut self) -> Self {
        for a in Anomaly::ALL {
            let n = std::mem::take(&mut self.anomaly_counts[a as usize]);
            if n > 0 {
                *self.anomalies.entry(a.name()).or_default() += n;
            }
        }
        self
    }
}

/// Adds `from`'s counts to `to`'s.
fn add_counts<K: Ord + Copy>(to: &mut BTreeMap<K, u64>, from: &BTreeMap<K, u64>) {
    for (k, n) in from {
        *to.entry(*k).or_default() += n;
    }
}

/// The result of analysing one file (or several merged).
#[derive(Debug, Default)]
pub struct Analysis {
    /// One summary per input file.
    pub files: Vec<FileSummary>,
    /// Connection statistics, in order of first appearance.
    pub conns: Vec<Box<ConnStats>>,
    /// Each trace's name, by [`ConnStats::trace`]: its input as given, or with `--merge` the
    /// inputs joined by ` + `.
    pub inputs: Vec<String>,
}

impl Analysis {
    /// Whether nothing useful could be read: every file failed before its first packet.
    pub fn nothing_read(&self) -> bool {
        self.files.iter().all(|f| f.packets == 0 && f.error.is_some())
    }
}

pub(crate) fn record_error(sum: &mut FileSummary, e: &CaptureError) {
    sum.error = Some(e.to_string());
    sum.error_offset = Some(e.offset());
}

/// Reads a file to its end (or its first error, recorded in `sum`): counts every record in
/// `sum`, decodes it, and hands each TCP segment with its frame number and time to `each`,
/// which returns false to stop. Reports progress now and then. Returns the error, if any.
pub(crate) fn read_segments(
    reader: &mut CaptureReader,
    sum: &mut FileSummary,
    progress: &(dyn Fn(u64, u64) + Sync),
    checksums: bool,
    mut each: impl FnMut(&Segment<'_>, u64, u64) -> bool,
) -> Option<CaptureError> {
    read_records(reader, sum, progress, |sum, rec| match count_and_decode(sum, rec) {
        Some(mut seg) => {
            if checksums {
                verify_checksums(sum, rec, &mut seg);
            }
            each(&seg, rec.frame, rec.ts_ns)
        }
        None => true,
    })
}

/// Reads a file to its end (or its first error, recorded in `sum`), handing each record to
/// `each` with the summary to count it in; `each` returns false to stop. Reports progress now
/// and then. Returns the error, if any.
#[inline]
pub(crate) fn read_records(
    reader: &mut CaptureReader,
    sum: &mut FileSummary,
    progress: &(dyn Fn(u64, u64) + Sync),
    mut each: impl FnMut(&mut FileSummary, &Record<'_>) -> bool,
) -> Option<CaptureError> {
    let mut error = None;
    loop {
        match reader.next_record() {
            Ok(Some(rec)) => {
                if !each(sum, &rec) {
                    break;
                }
                if rec.frame % PROGRESS_EVERY == 0 {
                    progress(reader.position(), sum.packets);
                }
            }
            Ok(None) => break,
            Err(e) => {
                record_error(sum, &e);
                error = Some(e);
                break;
            }
        }
    }
    sum.bad_timestamps = reader.bad_timestamps;
    sum.damaged = reader.damage();
    progress(reader.position(), sum.packets);
    error
}

/// Opens a file for a pass: the file's summary so far (with the error, if it could not be
/// opened) and the reader.
pub(crate) fn open(path: &Path) -> (FileSummary, Option<CaptureReader>) {
    let mut summary = FileSummary { path: path.to_path_buf(), ..Default::default() };
    match CaptureReader::open(path) {
        Ok(r) => {
            summary.format = Some(r.format());
            summary.compression = Some(r.compression());
            (summary, Some(r))
        }
        Err(e) => {
            record_error(&mut summary, &e);
            (summary, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// A summary with every field set, each count `k` times a distinct base.
    fn full(path: &str, k: u64, damage_at: u64) -> FileSummary {
        let mut f = FileSummary {
            path: path.into(),
            format: Some(Format::Pcap),
            compression: Some(Compression::None),
            packets: 100 * k,
            captured_bytes: 1000 * k,
            tcp_packets: 90 * k,
            bad_timestamps: 3 * k,
            first_ts_ns: 5_000 * k,
            last_ts_ns: 9_000 * k,
            error: Some(format!("cut at {}", 77 * k)),
            error_offset: Some(77 * k),
            damaged: vec![Damage {
                start: damage_at,
                end: damage_at + 8,
                reason: "r".into(),
                records_after: k,
                file: None,
            }],
            ..Default::default()
        };
        f.skipped.insert("not_tcp", 10 * k);
        f.unknown_link_types.insert(147, 2 * k);
        f.anomalies.insert("truncated_payload", 4 * k);
        f.other_tcp_options.insert(30, 5 * k);
        f
    }

    /// Every count of a ring's files is in their sum, damage too (named by its file): checked
    /// on the JSON, so a field added later and left out of `sum` fails here.
    #[test]
    fn sum_keeps_every_count_and_the_damage() {
        let files = [full("ring/a.pcap", 1, 40), full("ring/b.pcap", 2, 24)];
        let sum = FileSummary::sum(Path::new("ring"), &files);
        let (got, parts) = (serde_json::to_value(&sum).unwrap(), files.map(|f| serde_json::to_value(&f).unwrap()));
        let Value::Object(got) = got else { panic!("a summary is an object") };
        for (key, v) in &got {
            let of = |i: usize| &parts[i][key];
            match key.as_str() {
                "path" => assert_eq!(v, "ring"),
                "format" | "compression" => assert_eq!(v, of(0)),
                "first_ts_ns" => assert_eq!(v, 5_000),
                "last_ts_ns" => assert_eq!(v, 18_000),
                "error" => assert_eq!(v, "ring/a.pcap: cut at 77"),
                "error_offset" => assert_eq!(v, 77),
                "damaged" => {
                    let d = v.as_array().unwrap();
                    assert_eq!(d.len(), 2, "{key}");
                    assert_eq!((&d[0]["file"], &d[0]["start"]), (&Value::from("ring/a.pcap"), &Value::from(40)));
                    assert_eq!((&d[1]["file"], &d[1]["start"]), (&Value::from("ring/b.pcap"), &Value::from(24)));
                }
                _ if v.is_u64() => assert_eq!(v.as_u64(), Some(of(0).as_u64().unwrap() * 3), "{key}"),
                _ if v.is_object() => {
                    let m = v.as_object().unwrap();
                    assert!(!m.is_empty(), "{key} dropped");
                    for (k, n) in m {
                        assert_eq!(n.as_u64(), Some(of(0)[k].as_u64().unwrap() * 3), "{key}.{k}");
                    }
                }
                _ => panic!("{key}: a field this test does not know; say how `sum` adds it"),
            }
        }
        // A file's own summary has no `file` in its damage.
        assert!(parts[0]["damaged"][0].get("file").is_none());
    }
}

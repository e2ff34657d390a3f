//! `tcpscope print`, time windows and directories as TRACE (issue 6), on the recorded traces.
//!
//! Oracles: tshark's fields and times for the same packets (times as exact ns strings), and
//! the rule that a capture split into a ring of files gives the same answer as the whole file.

mod util;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tcpscope_core::capture::CaptureReader;

fn trace() -> PathBuf {
    util::data_dir().join("loss-snd.pcap")
}

/// `print --json ARGS` lines, with TZ=UTC.
fn print_json(args: &[&str]) -> Vec<Value> {
    let out = util::tcpscope().env("TZ", "UTC").arg("print").args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "print {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// "1795306570.849758000" → ns, exactly.
fn epoch_ns(s: &str) -> u64 {
    let (a, b) = s.split_once('.').unwrap();
    a.parse::<u64>().unwrap() * 1_000_000_000 + format!("{b:0<9}")[..9].parse::<u64>().unwrap()
}

/// tshark's view of every TCP packet: (ts_ns, sport, seq, ack, win, len, frame).
fn tshark(path: &Path) -> Vec<(u64, u64, u64, u64, u64, u64, u64)> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args([
            "-Y",
            "tcp",
            "-T",
            "fields",
            "-e",
            "frame.time_epoch",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.seq_raw",
            "-e",
            "tcp.ack_raw",
        ])
        .args(["-e", "tcp.window_size_value", "-e", "tcp.len", "-e", "frame.number", "-e", "tcp.flags.ack"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let n = |i: usize| f[i].parse::<u64>().unwrap();
            let ack = if f[7] == "1" || f[7] == "True" { n(3) } else { 0 };
            (epoch_ns(f[0]), n(1), n(2), ack, n(4), n(5), n(6))
        })
        .collect()
}

fn fields(v: &Value) -> (u64, u64, u64, u64, u64, u64, u64) {
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    (n("ts_ns"), n("sport"), n("seq"), n("ack"), n("win_raw"), n("len"), n("frame"))
}

#[test]
fn print_matches_tshark_packet_for_packet_in_a_window() {
    if !util::have("tshark") {
        eprintln!("skipping: tshark not installed");
        return;
    }
    let all = tshark(&trace());
    let t0 = all[0].0;
    // Whole trace, then a window given as offsets, then the same window in clock time.
    let got: Vec<_> = print_json(&[trace().to_str().unwrap()]).iter().map(fields).collect();
    assert_eq!(got, all);
    let (from, to) = (t0 + 500_000_000, t0 + 800_000_000);
    let want: Vec<_> = all.iter().filter(|p| p.0 >= from && p.0 < to).cloned().collect();
    assert!(want.len() > 50 && want.len() < all.len() / 2, "a real window: {} of {}", want.len(), all.len());
    let got: Vec<_> =
        print_json(&[trace().to_str().unwrap(), "--from", "+0.5", "--for", "300ms"]).iter().map(fields).collect();
    assert_eq!(got, want);
    let clock = jiff::Timestamp::from_nanosecond(from as i128).unwrap().strftime("%H:%M:%S%.f").to_string();
    let got: Vec<_> = print_json(&[
        trace().to_str().unwrap(),
        "--from",
        &clock,
        "--to",
        &format!("@{}.{:09}", to / 1_000_000_000, to % 1_000_000_000),
    ])
    .iter()
    .map(fields)
    .collect();
    assert_eq!(got, want, "--from {clock}");
}

#[test]
fn print_text_has_the_columns_of_figure_2_2() {
    let out =
        util::tcpscope().env("TZ", "UTC").args(["print", trace().to_str().unwrap(), "--for", "0.03"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# time\tsrc\tsport\tdst\tdport\tseq\tack\twin\tlen\tflags\tconn"));
    // The handshake as the recorder made it (tests/data/README.md): the SYN from 192.0.2.1:40001.
    let syn: Vec<&str> = lines.next().unwrap().split('\t').collect();
    assert_eq!(syn.len(), 11);
    assert_eq!(&syn[1..5], ["192.0.2.1", "40001", "198.51.100.1", "5001"]);
    assert_eq!(syn[6], "0000000000");
    assert_eq!(syn[9], "S");
    assert_eq!(syn[0].len(), "00:16:10.849758".len());
    assert_eq!(lines.next().unwrap().split('\t').nth(9), Some("SA"));
}

/// Writes the records of `src` into pcap files of at most `per` packets each in `dir` (a ring
/// as `tcpdump -C` would leave it), byte for byte as read.
fn split(src: &Path, dir: &Path, per: usize) -> usize {
    let mut r = CaptureReader::open(src).unwrap();
    let mut header = [0u8; 24];
    std::fs::File::open(src).unwrap().read_exact(&mut header).unwrap();
    let (mut files, mut n, mut cur) = (0, 0, Vec::new());
    let flush = |cur: &mut Vec<u8>, files: &mut usize| {
        if !cur.is_empty() {
            let mut f = header.to_vec();
            f.append(cur);
            std::fs::write(dir.join(format!("part-{files:03}.pcap")), f).unwrap();
            *files += 1;
        }
    };
    let raw = std::fs::read(src).unwrap();
    while let Some(rec) = r.next_record().unwrap() {
        let start = rec.offset as usize;
        let caplen = rec.data.len();
        cur.extend_from_slice(&raw[start..start + 16 + caplen]);
        n += 1;
        if n % per == 0 {
            flush(&mut cur, &mut files);
        }
    }
    flush(&mut cur, &mut files);
    files
}

#[test]
fn a_split_ring_gives_the_same_answers_as_the_whole_file() {
    let dir = util::tempdir("print-ring");
    assert!(split(&trace(), &dir, 300) >= 3);
    let d = dir.to_str().unwrap();
    let t = trace();
    let t = t.to_str().unwrap();
    for window in [vec![], vec!["--from", "+0.4", "--for", "0.5"], vec!["--from", "+1", "--to", "+1.2"]] {
        let mut a = vec!["conns", t];
        a.extend(&window);
        let mut b = vec!["conns", d];
        b.extend(&window);
        let (one, ring) = (util::json(&a), util::json(&b));
        assert_eq!(one["connections"].as_array().unwrap().len(), ring["connections"].as_array().unwrap().len());
        for (x, y) in one["connections"].as_array().unwrap().iter().zip(ring["connections"].as_array().unwrap()) {
            for k in ["id", "a", "b", "state", "handshake", "first_time", "last_time", "a2b", "b2a"] {
                assert_eq!(x[k], y[k], "{k} with window {window:?}");
            }
        }
        let p1: Vec<_> = print_json(&[&[t][..], &window].concat())
            .iter()
            .map(|v| (v["ts_ns"].clone(), v["seq"].clone(), v["conn"].clone()))
            .collect();
        let p2: Vec<_> = print_json(&[&[d][..], &window].concat())
            .iter()
            .map(|v| (v["ts_ns"].clone(), v["seq"].clone(), v["conn"].clone()))
            .collect();
        assert_eq!(p1, p2, "print with window {window:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Issue 23: a connection crossing the files of a ring has its later packets in later files;
/// `print` and the `segments` table name each packet's own file and its frame there. Oracle:
/// [`split`] put whole-file frame `n` (1-based) into `part-{(n-1)/per}` as frame `(n-1)%per+1`,
/// and the ring is printed in the whole file's order (checked above).
#[test]
fn r23_a_packet_is_named_by_its_own_file_in_a_ring() {
    let per = 300;
    let dir = util::tempdir("print-ring-file");
    assert!(split(&trace(), &dir, per) >= 3);
    let d = dir.to_str().unwrap();
    let t = trace();
    let whole = print_json(&[t.to_str().unwrap()]);
    let ring = print_json(&[d]);
    assert_eq!(whole.len(), ring.len());
    let want = |v: &Value| {
        let n = v["frame"].as_u64().unwrap() as usize - 1;
        (dir.join(format!("part-{:03}.pcap", n / per)).display().to_string(), (n % per + 1) as u64)
    };
    let got = |file: &str, frame: u64| (file.to_string(), frame);
    // The one connection spans every file: the bug named them all by the first.
    assert!(ring.iter().all(|v| v["conn"] == 1));
    let mut files = std::collections::BTreeSet::new();
    for (w, r) in whole.iter().zip(&ring) {
        assert_eq!(got(r["file"].as_str().unwrap(), r["frame"].as_u64().unwrap()), want(w), "print: {r}");
        files.insert(r["file"].as_str().unwrap().to_string());
    }
    assert!(files.len() >= 3, "{files:?}");
    // The segments table, in the same order.
    let out = dir.join("out");
    let o = util::run(&["export", d, "-o", out.to_str().unwrap(), "--format", "csv", "--tables", "segments"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut rows = csv::Reader::from_path(out.join("segments.csv")).unwrap();
    let header = rows.headers().unwrap().clone();
    let col = |k: &str| header.iter().position(|h| h == k).unwrap();
    let (file, frame) = (col("file"), col("frame"));
    let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), whole.len());
    for (w, r) in whole.iter().zip(&rows) {
        assert_eq!(got(&r[file], r[frame].parse().unwrap()), want(w), "segments: {r:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Issue 23: the `events` and `rtt` tables of a ring name the file of each row's `frame`
/// (`file`, after `input` and `conn`); oracle as above: the whole file's frame `n` is frame
/// `(n-1)%per+1` of `part-{(n-1)/per}`, and every other column is the whole file's.
#[test]
fn r23_events_and_rtt_name_the_file_of_their_frame_in_a_ring() {
    let per = 300;
    let dir = util::tempdir("export-ring-file");
    assert!(split(&trace(), &dir, per) >= 3);
    let want = |n: &str| {
        let n = n.parse::<usize>().unwrap() - 1;
        (dir.join(format!("part-{:03}.pcap", n / per)).display().to_string(), (n % per + 1).to_string())
    };
    let export = |src: &Path, out: &str| {
        let out = dir.join(out);
        let o = util::run(&[
            "export",
            src.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--format",
            "csv",
            "--tables",
            "events,rtt",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let (whole, ring) = (export(&trace(), "whole"), export(&dir, "ring"));
    for table in ["events", "rtt"] {
        let read = |d: &Path| {
            let mut r = csv::Reader::from_path(d.join(format!("{table}.csv"))).unwrap();
            let h: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
            (h, r.records().map(Result::unwrap).collect::<Vec<csv::StringRecord>>())
        };
        let ((hw, w), (hr, r)) = (read(&whole), read(&ring));
        assert_eq!(hw, hr);
        assert_eq!(&hr[..3], ["input", "conn", "file"]);
        let col = |k: &str| hr.iter().position(|h| h == k).unwrap();
        let (file, frame) = (col("file"), col("frame"));
        assert!(!w.is_empty() && w.len() == r.len(), "{table}: {} rows whole, {} in the ring", w.len(), r.len());
        let mut files = std::collections::BTreeSet::new();
        for (a, b) in w.iter().zip(&r) {
            assert_eq!(a[file], trace().display().to_string(), "{table}: {a:?}");
            assert_eq!((b[file].to_string(), b[frame].to_string()), want(&a[frame]), "{table}: {b:?}");
            files.insert(b[file].to_string());
            // The rest is the whole file's (frames the rows refer to are numbered in their own
            // file; `input` names the ring).
            for (i, k) in hr.iter().enumerate() {
                if !["input", "file", "frame", "prev_frame", "sent_frame", "dsack_frame"].contains(&k.as_str()) {
                    assert_eq!(a[i], b[i], "{table} column {k}");
                }
            }
        }
        assert!(files.len() >= 2, "{table}: rows in {files:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn connection_ids_in_a_window_are_those_conns_gives_for_it() {
    // Both recorded points of the loss scenario, merged, and a window that starts mid-transfer.
    let snd = util::data_dir().join("loss-snd.pcap");
    let rcv = util::data_dir().join("bursty-snd.pcap");
    let (s, r) = (snd.to_str().unwrap(), rcv.to_str().unwrap());
    let w = ["--from", "+0.3", "--for", "1h"];
    let conns = util::json(&[&["conns", s, r, "--merge"][..], &w].concat());
    let list = conns["connections"].as_array().unwrap();
    assert!(list.len() >= 2, "{conns}");
    for c in list {
        let id = c["id"].as_u64().unwrap().to_string();
        let lines = print_json(&[&[s, r, "-c", &id][..], &w].concat());
        assert_eq!(
            lines.len() as u64,
            c["a2b"]["packets"].as_u64().unwrap() + c["b2a"]["packets"].as_u64().unwrap(),
            "conn {id}"
        );
        let ends = |v: &Value| {
            let mut e = [(v["src"].clone(), v["sport"].clone()), (v["dst"].clone(), v["dport"].clone())];
            e.sort_by_key(|x| x.1.as_u64());
            e
        };
        let mut want =
            [(c["a"]["addr"].clone(), c["a"]["port"].clone()), (c["b"]["addr"].clone(), c["b"]["port"].clone())];
        want.sort_by_key(|x| x.1.as_u64());
        assert!(lines.iter().all(|l| ends(l) == want && l["conn"].as_u64().unwrap().to_string() == id));
    }
}

#[test]
fn bad_times_and_empty_windows_are_clear_errors() {
    let t = trace();
    let t = t.to_str().unwrap();
    let out = util::run(&["conns", t, "--from", "noon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("expected a clock time"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = util::run(&["print", t, "--for", "-5"]);
    assert_eq!(out.status.code(), Some(2));
    let out = util::run(&["print", t, "--from", "+2", "--to", "+1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty time window"));
    let empty = util::tempdir("print-empty");
    let out = util::run(&["conns", empty.to_str().unwrap()]);
    // Nothing to read is an input error (exit 1, docs/cli.md#exit-status), not a usage one.
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no capture files"));
    // A window with no packet: nothing read (exit 1), and where the trace is.
    let out =
        util::tcpscope().env("TZ", "UTC").args(["conns", t, "--from", "00:16:00", "--for", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("no packets from 00:16:00.000000 to 00:16:01.000000 (its first packet is at 00:16:10.849758)"),
        "{e}"
    );
    let out = util::run(&["print", t, "-c", "9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no connection 9"));
}

#[test]
fn plot_reads_a_ring_directory_like_the_whole_file() {
    let dir = util::tempdir("plot-ring");
    let ring = dir.join("ring");
    std::fs::create_dir_all(&ring).unwrap();
    assert!(split(&trace(), &ring, 250) >= 3);
    let (a, b) = (dir.join("ring.xpl"), dir.join("file.xpl"));
    for (input, out) in [(ring.as_path(), &a), (trace().as_path(), &b)] {
        let o = util::run(&["plot", input.to_str().unwrap(), "-c", "1", "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (x, y) = (std::fs::read_to_string(&a).unwrap(), std::fs::read_to_string(&b).unwrap());
    assert!(x.lines().count() > 1000);
    assert_eq!(x, y);
    let _ = std::fs::remove_dir_all(dir);
}

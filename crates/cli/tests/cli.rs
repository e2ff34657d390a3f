//! The command line: outputs, selection, inputs from every source, and errors.

mod util;

use std::io::Write;
use std::process::Stdio;

use tcpscope_core::testutil::{Pkt, flag::*, opt, pcap};
use util::*;

/// A small scripted transfer: handshake, 3 segments of 1000 bytes (the 2nd retransmitted), a
/// dup ACK, FINs. Truth from the script: a2b 1 retransmission of 1000 bytes, 3000 unique.
fn sample() -> Vec<u8> {
    let a = [10, 1, 1, 1];
    let b = [10, 1, 1, 2];
    let p = |ms: u64, from_a: bool, flags: u8, seq: u32, ack: u32, len: u16, opts: Vec<u8>| Pkt {
        ts_ns: 1_600_000_000_000_000_000 + ms * 1_000_000,
        src: if from_a { a } else { b },
        dst: if from_a { b } else { a },
        sport: if from_a { 33000 } else { 443 },
        dport: if from_a { 443 } else { 33000 },
        seq,
        ack,
        flags,
        win: 500,
        len,
        opts,
        snap: None,
    };
    let pk = vec![
        p(0, true, SYN, 100, 0, 0, [opt::mss(1460), opt::wscale(7)].concat()),
        p(10, false, SYN | ACK, 900, 101, 0, [opt::mss(1400), opt::wscale(6)].concat()),
        p(20, true, ACK, 101, 901, 0, vec![]),
        p(21, true, ACK, 101, 901, 1000, vec![]),
        p(22, true, ACK, 1101, 901, 1000, vec![]),
        p(23, true, ACK, 2101, 901, 1000, vec![]),
        p(31, false, ACK, 901, 1101, 0, vec![]),
        p(33, false, ACK, 901, 1101, 0, vec![]),
        p(240, true, ACK, 1101, 901, 1000, vec![]),
        p(250, false, ACK, 901, 3101, 0, vec![]),
        p(260, true, FIN | ACK, 3101, 901, 0, vec![]),
        p(270, false, FIN | ACK, 901, 3102, 0, vec![]),
        p(280, true, ACK, 3102, 902, 0, vec![]),
    ];
    pcap(&pk, false, false)
}

fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn stats_json_has_the_documented_shape_and_the_scripted_numbers() {
    let d = tempdir("shape");
    let f = write(&d, "s.pcap", &sample());
    let doc = json(&["stats", &f]);
    let c = &doc["connections"][0];
    assert_eq!(c["id"], 1);
    assert_eq!(c["a"]["addr"], "10.1.1.1");
    assert_eq!(c["a"]["port"], 33000);
    assert_eq!(c["b"]["port"], 443);
    assert_eq!(c["state"], "complete");
    assert!((c["first_time"].as_f64().unwrap() - 1_600_000_000.0).abs() < 1e-6);
    assert!((c["last_time"].as_f64().unwrap() - 1_600_000_000.28).abs() < 1e-6);
    for key in [
        "packets",
        "data_packets",
        "unique_bytes",
        "rexmit_packets",
        "rexmit_bytes",
        "out_of_order_packets",
        "dup_acks",
        "zero_window_adverts",
        "window_shrinks",
        "rtt_samples",
        "rtt_avg_ms",
        "throughput_bps",
    ] {
        assert!(c["a2b"].get(key).is_some() && c["b2a"].get(key).is_some(), "missing {key}");
    }
    let a2b = &c["a2b"];
    assert_eq!((a2b["packets"].as_u64(), a2b["data_packets"].as_u64()), (Some(8), Some(4)));
    assert_eq!(
        (a2b["unique_bytes"].as_u64(), a2b["rexmit_packets"].as_u64(), a2b["rexmit_bytes"].as_u64()),
        (Some(3000), Some(1), Some(1000))
    );
    assert_eq!(c["b2a"]["dup_acks"], 1);
    // Window scale: b's shift is 6, so its window 500 is 32000 bytes.
    assert_eq!(c["b2a"]["window_scale"], 6);
    assert_eq!(c["b2a"]["window_max_bytes"], 32000);
    // RTT samples of a's data: SYN (0 → 10 ms), the first segment (21 → 31 ms) and the FIN
    // (260 → 270 ms), 10 ms each. The ACK at 250 ms ends on the third segment but covers the
    // retransmission sent at 240 ms after it: post-loss, no sample.
    assert_eq!(a2b["rtt_samples"], 3);
    assert_eq!(a2b["post_loss_acks"], 1);
    assert!((a2b["rtt_avg_ms"].as_f64().unwrap() - 10.0).abs() < 1e-9);
    // Throughput: 3000 unique bytes over 21 → 240 ms = 219 ms.
    let tput = a2b["throughput_bps"].as_f64().unwrap();
    assert!((tput - 3000.0 * 8.0 / 0.219).abs() < 1.0, "{tput}");
}

#[test]
fn conns_prints_one_line_per_connection_and_csv_has_a_header() {
    let d = tempdir("conns");
    let f = write(&d, "s.pcap", &sample());
    let out = run(&["conns", &f]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("10.1.1.1:33000") && text.contains("complete"), "{text}");
    let out = run(&["conns", "--csv", &f]);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("id,file,input,conn,a_addr,a_port,b_addr,b_port,state"));
    assert!(lines.next().unwrap().starts_with("1,"));
    let out = run(&["stats", "--csv", &f]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().next().unwrap().contains("a2b_rexmit_packets"));
}

#[test]
fn stdin_gzip_and_plain_inputs_give_the_same_answer() {
    let d = tempdir("inputs");
    let bytes = sample();
    let f = write(&d, "s.pcap", &bytes);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bytes).unwrap();
    let g = write(&d, "s.pcap.gz", &gz.finish().unwrap());
    let plain = json(&["stats", &f]);
    let gzipped = json(&["stats", &g]);
    let mut child =
        tcpscope().args(["stats", "--json", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let piped: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plain["connections"][0]["a2b"], gzipped["connections"][0]["a2b"]);
    assert_eq!(plain["connections"][0]["a2b"], piped["connections"][0]["a2b"]);
}

#[test]
fn several_files_get_consecutive_ids_and_c_selects() {
    let d = tempdir("many");
    let f = write(&d, "s.pcap", &sample());
    let doc = json(&["conns", &f, &f, &f]);
    let ids: Vec<u64> = doc["connections"].as_array().unwrap().iter().map(|c| c["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![1, 2, 3]);
    let doc = json(&["stats", &f, &f, "-c", "2"]);
    assert_eq!(doc["connections"].as_array().unwrap().len(), 1);
    assert_eq!(doc["connections"][0]["id"], 2);
    let out = run(&["stats", &f, "-c", "9"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no connection 9"));
    // Merged: the same packets three times over are one connection with retransmissions.
    let doc = json(&["stats", "--merge", &f, &f]);
    assert_eq!(doc["connections"].as_array().unwrap().len(), 1);
    assert_eq!(doc["connections"][0]["a2b"]["packets"], 16);
}

#[test]
fn a_cut_off_file_reports_file_and_offset_and_keeps_the_results() {
    let d = tempdir("cut");
    let bytes = sample();
    let f = write(&d, "cut.pcap", &bytes[..bytes.len() - 10]);
    let out = run(&["conns", "--json", &f]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cut.pcap") && err.contains("byte offset"), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The last record (a's final ACK) was cut: 7 of a's 8 packets remain.
    assert_eq!(doc["connections"][0]["a2b"]["packets"], 7);
    assert!(doc["files"][0]["error_offset"].as_u64().unwrap() > 0);
}

#[test]
fn a_file_that_is_not_a_capture_fails_with_a_clear_message() {
    let d = tempdir("bad");
    let f = write(&d, "notes.txt", b"this is not a capture file\n");
    let out = run(&["conns", &f]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notes.txt") && err.contains("not a pcap or pcapng"), "{err}");
    let out = run(&["conns", "/nonexistent/x.pcap"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_closed_pipe_is_a_clean_exit() {
    let d = tempdir("pipe");
    let f = write(&d, "s.pcap", &sample());
    let many: Vec<&str> = std::iter::repeat_n(f.as_str(), 200).collect();
    let mut child = tcpscope().arg("stats").args(&many).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take()); // the reader goes away, like `| head`
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_two_thread_file_pass_equals_the_single_thread_one() {
    // One file alone runs decode and analysis in two threads with batches; `--merge` with one
    // file, and each of several files, run them in one thread. Every number must be the same.
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    files.extend(public_files().into_iter().filter(|p| p.metadata().map(|m| m.len() < 8 << 20).unwrap_or(false)));
    assert!(!files.is_empty());
    for f in files {
        let f = f.to_str().unwrap();
        let threaded = json(&["stats", f]);
        let single = json(&["stats", "--merge", f]);
        assert_eq!(threaded["connections"], single["connections"], "{f}");
        assert_eq!(threaded["files"], single["files"], "{f}");
        // Two files at once: each analysed in one thread, the same numbers again.
        let both = json(&["stats", f, f]);
        let n = threaded["connections"].as_array().unwrap().len();
        let first: Vec<serde_json::Value> = both["connections"].as_array().unwrap()[..n].to_vec();
        assert_eq!(serde_json::Value::Array(first), threaded["connections"], "{f}");
    }
}

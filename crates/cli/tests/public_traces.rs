//! Every public trace (`../shared/traces/public`, skipped when absent) is read without failure,
//! its packet count matches the MANIFEST (counted by tshark), and the byte counts are conserved.

mod util;

use util::*;

#[test]
#[cfg_attr(no_public_traces, ignore = "../shared/traces/public is absent")]
fn every_public_trace_is_read_and_conserves_bytes() {
    let Some(dir) = public_traces() else {
        eprintln!("skipping: ../shared/traces/public is absent");
        return;
    };
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut lines = manifest.lines();
    let head: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (file_col, pkts_col) = (col("file"), col("packets"));
    let mut checked = 0;
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        let path = dir.join(f[file_col]);
        if !path.exists() {
            continue;
        }
        let out = run(&["stats", "--json", path.to_str().unwrap()]);
        assert!(out.status.success(), "{}: {}", f[file_col], String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["files"][0]["packets"].as_u64().unwrap().to_string(), f[pkts_col], "{}: packets", f[file_col]);
        for c in doc["connections"].as_array().unwrap() {
            for d in ["a2b", "b2a"] {
                let x = &c[d];
                let n = |k: &str| x[k].as_u64().unwrap();
                assert_eq!(
                    n("unique_bytes") + n("rexmit_bytes") + n("zero_window_probe_bytes"),
                    n("payload_bytes"),
                    "{} conn {} {d}: unique + retransmitted + probe bytes = payload bytes",
                    f[file_col],
                    c["id"]
                );
                assert!(n("data_packets") <= n("packets"));
                assert!(n("rexmit_packets") <= n("packets"));
            }
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} traces checked");
}

/// `--checksums` on real captures whose bad checksums tshark's validation counts: checksum
/// offload on the capturing host is told from damage per packet (the whole of
/// zeek__tcp_ssh-dups and tcpdump__mptcp-v1, 63 segments of one host in
/// chrissanders__http_espn), and the one damaged segment of tcptrace__dsack is an error.
/// Without the flag nothing is verified.
#[test]
#[cfg_attr(no_public_traces, ignore = "../shared/traces/public is absent")]
fn checksum_offload_is_told_from_damage() {
    let Some(dir) = public_traces() else {
        eprintln!("skipping: ../shared/traces/public is absent");
        return;
    };
    let count = |doc: &serde_json::Value, k: &str| -> u64 {
        let cs = doc["connections"].as_array().unwrap();
        cs.iter().flat_map(|c| [&c["a2b"][k], &c["b2a"][k]]).map(|v| v.as_u64().unwrap()).sum()
    };
    for (file, errors, offloaded) in [
        ("zeek__tcp_ssh-dups.pcap", 0, 152),
        ("tcpdump__mptcp-v1.pcap", 0, 20),
        ("chrissanders__http_espn.pcapng", 0, 63),
        ("tcptrace__dsack.pcap", 1, 0),
    ] {
        let path = dir.join(file);
        let path = path.to_str().unwrap();
        let doc = json(&["stats", "-q", "--checksums", path]);
        assert_eq!((count(&doc, "checksum_errors"), count(&doc, "checksum_offloaded")), (errors, offloaded), "{file}");
        assert_eq!(doc["files"][0]["skipped"]["checksum_error"].as_u64().unwrap_or(0), errors, "{file}");
        let off = json(&["stats", "-q", path]);
        for c in off["connections"].as_array().unwrap() {
            assert!(c["a2b"]["checksum_errors"].is_null() && c["b2a"]["checksum_offloaded"].is_null(), "{file}");
        }
    }
}

/// Every public trace exports every table to Parquet, in one run: a value a column cannot hold
/// (a pcapng time past 2262 once was, in pcapplusplus__pcapng-example's second interface) must
/// not fail the export and lose the good tables.
#[test]
#[cfg_attr(no_public_traces, ignore = "../shared/traces/public is absent")]
fn every_public_trace_exports_every_table() {
    let traces: Vec<String> = public_files().iter().map(|p| p.to_str().unwrap().to_string()).collect();
    if traces.is_empty() {
        return; // public_files said why
    }
    assert!(traces.len() >= 40, "only {} traces", traces.len());
    let out_dir = tempdir("public-export");
    let mut args = vec!["export", "-q", "-o", out_dir.to_str().unwrap()];
    args.extend(traces.iter().map(String::as_str));
    let out = run(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for t in ["connections", "events", "segments", "rtt"] {
        let f = out_dir.join(format!("{t}.parquet"));
        assert!(f.metadata().is_ok_and(|m| m.len() > 0), "{t}.parquet missing");
    }
}

//! tcpscope against the peer tools on the public traces (`../shared/traces/public`; skipped when
//! absent): tcptrace for the per-direction counts whose definition we share (docs/statistics.md),
//! tshark for duplicate ACKs and zero windows (Wireshark's rules). Every known difference is
//! listed below with the reason; anything else that differs fails the test.

mod util;

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

use util::*;

/// (tcptrace -l CSV column without the _a2b/_b2a suffix, tcpscope JSON field).
const SHARED_WITH_TCPTRACE: &[(&str, &str)] = &[
    ("total_packets", "packets"),
    ("actual_data_pkts", "data_packets"),
    ("actual_data_bytes", "payload_bytes"),
    ("unique_bytes_sent", "unique_bytes"),
    ("rexmt_data_pkts", "rexmit_packets"),
    ("outoforder_pkts", "out_of_order_packets"),
    ("zero_win_adv", "zero_window_adverts"),
    ("zwnd_probe_pkts", "zero_window_probes"),
    ("RTT_samples", "rtt_samples"),
];

/// Files tcptrace cannot read as they are, so connections are not comparable.
const TCPTRACE_CANNOT: &[(&str, &str)] = &[
    (
        "pcapplusplus__many_interfaces-1.pcapng",
        "pcapng with several link types: tcptrace reads only the first interface's",
    ),
    ("pcapplusplus__pcapng-example.pcapng", "pcapng with several link types"),
    ("suricata__decode-sll2-02.pcap", "tcptrace has no Linux SLL2 decoder"),
    ("tcpdump__bigtcp-ipv4.pcap", "IP total length 0 (BIG TCP): tcptrace drops the packet, we use the wire length"),
    ("zeek__kerberos_tso.pcapng", "TSO frames with IP total length 0: tcptrace drops them, we count them"),
    ("zeek__mixed-vlan-mpls.pcap", "tcptrace has no MPLS decoder"),
    ("pcapplusplus__tcp-malformed.pcap", "data offset past the IP packet: we skip the segment as malformed"),
    (
        "tcpdump__timestamp_invalid_nano.pcap",
        "invalid ns fractions: tcptrace's time goes backwards and it splits the connection",
    ),
    (
        "zeek__http_1000-requests-one-dropped-response.pcap",
        "tcptrace prints the address ::1 as ':0001', so connections cannot be matched",
    ),
    (
        "zeek__tcp_rst-inject-rae.pcap",
        "an injected RST: tcptrace starts a new connection at the next SYN-ACK, we keep one (same ISNs)",
    ),
];

/// (file, field, reason): a deliberate difference in one field of one file.
const KNOWN: &[(&str, &str, &str)] = &[
    (
        "zeek__smb3_multichannel.pcap",
        "rexmit_packets",
        "1-byte keep-alives of acknowledged data: tcptrace calls them retransmissions",
    ),
    (
        "zeek__smb3_multichannel.pcap",
        "rtt_samples",
        "GRO super-frames acked exactly: tcptrace's segment list splits them differently",
    ),
    (
        "chrissanders__tcp_zerowindowdead.pcapng",
        "zero_window_probes",
        "Linux-style 0-byte probes at snd_una-1: tcptrace counts only probes with payload",
    ),
    (
        "zeek__http_206_example_b.pcap",
        "unique_bytes",
        "overlapping resends around 47 zero-window probes: tcptrace's range list merges differently",
    ),
    (
        "zeek__http_206_example_b.pcap",
        "rexmit_packets",
        "same: we count 89 (+0 OOO), tcptrace 65 (+26 OOO); tshark 56 + 52 OOO",
    ),
    ("zeek__http_206_example_b.pcap", "out_of_order_packets", "same"),
    ("zeek__tcp_reassembly.pcap", "out_of_order_packets", "segments missing from the capture then seen: hole fills"),
    ("zeek__tcp_reassembly.pcap", "rtt_samples", "one valid sample after a hole fill that tcptrace skips"),
    (
        "tcptrace__discard_solaris.pcap",
        "rtt_samples",
        "after fast retransmits tcptrace drops valid samples, e.g. conn 4 frame 1291 acked exactly by 1296 (sent once, nothing covered sent later)",
    ),
    (
        "suricata__tcp-rst-unacked-stream-12.pcap",
        "unique_bytes",
        "23 segments missing from the capture and D-SACKed spurious retransmissions: hole bookkeeping differs",
    ),
    ("suricata__tcp-rst-unacked-stream-12.pcap", "rexmit_packets", "same"),
    ("suricata__tcp-rst-unacked-stream-12.pcap", "out_of_order_packets", "same"),
    ("suricata__tcp-rst-unacked-stream-12.pcap", "rtt_samples", "same"),
    (
        "pcapplusplus__one_tcp_stream_max_seq.pcap",
        "rexmit_packets",
        "a 1-byte keep-alive of acknowledged data: tcptrace calls it a retransmission",
    ),
];

fn tcptrace_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let out = Command::new("tcptrace").args(["-l", "-r", "-n", "--csv"]).arg(path).output().expect("tcptrace");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && l.contains(',')).collect();
    let Some((head, rows)) = lines.split_first() else { return vec![] };
    let head: Vec<&str> = head.split(',').map(str::trim).collect();
    rows.iter()
        .map(|r| head.iter().map(|h| h.to_string()).zip(r.split(',').map(|v| v.trim().to_string())).collect())
        .collect()
}

fn key(a: &str, pa: &str, b: &str, pb: &str) -> Vec<(IpAddr, u16)> {
    let mut k = vec![(a.parse().unwrap(), pa.parse().unwrap()), (b.parse().unwrap(), pb.parse().unwrap())];
    k.sort();
    k
}

#[test]
#[cfg_attr(no_public_traces, ignore = "../shared/traces/public is absent")]
fn per_direction_counts_agree_with_tcptrace() {
    if !have("tcptrace") {
        eprintln!("skipping: tcptrace is not installed (make test installs it)");
        return;
    }
    let mut failures = Vec::new();
    let mut compared = 0;
    for path in public_files() {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if TCPTRACE_CANNOT.iter().any(|(f, _)| *f == name) {
            continue;
        }
        let doc = json(&["stats", path.to_str().unwrap()]);
        let mut ours: HashMap<Vec<(IpAddr, u16)>, Vec<&serde_json::Value>> = HashMap::new();
        for c in doc["connections"].as_array().unwrap() {
            let k = key(
                c["a"]["addr"].as_str().unwrap(),
                &c["a"]["port"].to_string(),
                c["b"]["addr"].as_str().unwrap(),
                &c["b"]["port"].to_string(),
            );
            ours.entry(k).or_default().push(c);
        }
        let rows = tcptrace_rows(&path);
        assert_eq!(rows.len(), doc["connections"].as_array().unwrap().len(), "{name}: connection count");
        for r in rows {
            let k = key(&r["host_a"], &r["port_a"], &r["host_b"], &r["port_b"]);
            let list = ours.get_mut(&k).unwrap_or_else(|| panic!("{name}: no connection {k:?}"));
            let c = list.remove(0);
            let a_is_a = c["a"]["addr"].as_str().unwrap().parse::<IpAddr>().unwrap()
                == r["host_a"].parse::<IpAddr>().unwrap()
                && c["a"]["port"].as_u64() == r["port_a"].parse::<u64>().ok();
            for (tdir, udir) in
                [("a2b", if a_is_a { "a2b" } else { "b2a" }), ("b2a", if a_is_a { "b2a" } else { "a2b" })]
            {
                for (tf, uf) in SHARED_WITH_TCPTRACE {
                    let theirs: f64 = r[&format!("{tf}_{tdir}")].parse().unwrap();
                    let mine = c[udir][*uf].as_u64().unwrap();
                    compared += 1;
                    if theirs as u64 != mine && !KNOWN.iter().any(|(f, fl, _)| *f == name && fl == uf) {
                        failures
                            .push(format!("{name} conn {} {udir} {uf}: tcptrace {theirs}, tcpscope {mine}", c["id"]));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {compared} values differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
#[cfg_attr(no_public_traces, ignore = "../shared/traces/public is absent")]
fn dup_acks_and_zero_windows_agree_with_tshark() {
    if !have("tshark") {
        eprintln!("skipping: tshark is not installed (make test installs it)");
        return;
    }
    // Wireshark does not analyse malformed segments, and after a probe its ZWP-ACK rule does
    // not fire where it did not recognise the probe (see KNOWN above).
    let known = ["pcapplusplus__tcp-malformed.pcap", "zeek__http_206_example_b.pcap"];
    let mut failures = Vec::new();
    for path in public_files() {
        let name = path.file_name().unwrap().to_str().unwrap();
        if known.contains(&name) {
            continue;
        }
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&path)
            .args(["-Y", "tcp", "-T", "fields", "-e", "tcp.analysis.duplicate_ack", "-e", "tcp.analysis.zero_window"])
            .output()
            .expect("tshark");
        let text = String::from_utf8_lossy(&out.stdout);
        let (mut dup, mut zw) = (0u64, 0u64);
        for l in text.lines() {
            let mut f = l.split('\t');
            dup += f.next().is_some_and(|v| !v.is_empty()) as u64;
            zw += f.next().is_some_and(|v| !v.is_empty()) as u64;
        }
        let doc = json(&["stats", path.to_str().unwrap()]);
        let (ud, uz) = (total(&doc, "dup_acks"), total(&doc, "zero_window_adverts"));
        if (dup, zw) != (ud, uz) {
            failures.push(format!("{name}: tshark dup {dup} zero-window {zw}, tcpscope {ud} {uz}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

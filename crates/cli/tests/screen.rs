//! `tcpscope screen` against what really happened: the project's recordings (`tests/data/`)
//! have a known cause each, and their truth files hold the kernel's own counters (fast
//! retransmissions, timeouts, tail-loss probes, D-SACKs, window probes) and the router's log of
//! every dropped and reordered segment. Both vantage points (sender, receiver) are checked.

mod util;

use serde_json::Value;
use util::*;

fn truth(name: &str) -> Value {
    let text = std::fs::read_to_string(data_dir().join(format!("{name}.truth.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The one connection of a recording, screened (boring ones included).
fn screened(name: &str, side: &str) -> Value {
    let path = data_dir().join(format!("{name}-{side}.pcap"));
    let doc = json(&["screen", "--all", path.to_str().unwrap()]);
    let conns = doc["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1, "{name}-{side}");
    conns[0].clone()
}

fn kernel(t: &Value, counter: &str) -> u64 {
    t["kernel"][format!("TcpExt{counter}")].as_u64().unwrap_or(0)
}

fn oos(c: &Value, class: &str) -> u64 {
    c["out_of_sequence"][class].as_u64().unwrap()
}

#[test]
fn the_json_has_the_documented_shape() {
    let c = screened("loss", "snd");
    assert_eq!(c["id"], 1);
    assert!(c["boring"].is_boolean());
    assert!(c["verdict"].is_string());
    let sev = c["severity"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&sev));
    let limits: f64 = ["application", "receiver_window", "congestion", "recovery"]
        .iter()
        .map(|k| c["limits"][k].as_f64().unwrap())
        .sum();
    assert!(limits <= 1.0 + 1e-9, "{limits}");
    for k in ["rto", "fast_retransmit", "reordering", "network_duplicate", "spurious", "flow_control", "unknown"] {
        assert!(c["out_of_sequence"][k].is_u64(), "{k}");
    }
    // Every classified segment is listed with its evidence, and the list adds up to the counts.
    let events = c["events"].as_array().unwrap();
    let total: u64 = c["out_of_sequence"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(events.len() as u64, total);
    for e in events {
        assert!(
            e["frame"].as_u64().unwrap() > 0
                && e["rto_ms"].as_f64().unwrap() > 0.0
                && !e["rule"].as_str().unwrap().is_empty()
        );
    }
}

/// At the sender, each retransmission is classified as the kernel counted it.
#[test]
fn sender_side_classes_equal_the_kernels_counters() {
    for name in ["clean", "loss", "randloss", "bottleneck", "reorder", "zerowin", "bursty"] {
        let t = truth(name);
        let c = screened(name, "snd");
        let m = &c["out_of_sequence"];
        assert_eq!(
            oos(&c, "fast_retransmit"),
            kernel(&t, "TCPFastRetrans") - kernel(&t, "TCPDSACKRecv"),
            "{name}: {m}"
        );
        assert_eq!(oos(&c, "rto"), kernel(&t, "TCPTimeouts"), "{name}: {m}");
        assert_eq!(oos(&c, "tail_loss_probe"), kernel(&t, "TCPLossProbes"), "{name}: {m}");
        assert_eq!(oos(&c, "spurious"), kernel(&t, "TCPDSACKRecv"), "{name}: D-SACKed resends are unneeded: {m}");
        assert_eq!(oos(&c, "flow_control"), kernel(&t, "TCPWinProbe"), "{name}: {m}");
        assert_eq!(oos(&c, "reordering") + oos(&c, "network_duplicate") + oos(&c, "unknown"), 0, "{name}: {m}");
    }
}

/// At the receiver: the holes the router's drops made are filled by fast retransmissions (the
/// tail loss leaves no hole), the segments it held back are reordering, and nothing that was
/// really dropped is called reordering.
#[test]
fn receiver_side_tells_losses_from_reordering() {
    for name in ["loss", "randloss", "bottleneck", "reorder"] {
        let t = truth(name);
        let c = screened(name, "rcv");
        let events = c["events"].as_array().unwrap();
        let dropped: Vec<(i64, i64)> = t["dropped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["seq"].as_i64().unwrap(), d["seq"].as_i64().unwrap() + d["len"].as_i64().unwrap()))
            .collect();
        for e in events {
            let seq = e["seq"].as_i64().unwrap();
            if dropped.iter().any(|&(a, b)| a <= seq && seq < b) {
                let class = e["class"].as_str().unwrap();
                assert!(
                    ["fast_retransmit", "rto", "tail_loss_probe"].contains(&class),
                    "{name}: dropped seq {seq} classified {class}"
                );
            }
        }
        assert_eq!(
            oos(&c, "reordering"),
            t["reordered"].as_array().unwrap().len() as u64,
            "{name}: {}",
            c["out_of_sequence"]
        );
        assert_eq!(oos(&c, "unknown"), 0, "{name}: {}", c["out_of_sequence"]);
    }
    // The reorder scenario's two unneeded fast retransmissions arrive as data the receiver had.
    assert_eq!(oos(&screened("reorder", "rcv"), "spurious"), 2);
}

/// Each recording's known cause is what the verdict names first among the limits.
#[test]
fn the_verdict_names_the_known_cause() {
    for side in ["snd", "rcv"] {
        let z = screened("zerowin", side);
        assert!(z["limits"]["receiver_window"].as_f64().unwrap() > 0.8, "zerowin-{side}: {}", z["limits"]);
        let v = z["verdict"].as_str().unwrap();
        assert!(v.contains("receiver window-limited") && v.contains("zero window 60 times"), "zerowin-{side}: {v}");

        let b = screened("bursty", side);
        assert!(b["limits"]["application"].as_f64().unwrap() > 0.8, "bursty-{side}: {}", b["limits"]);
        assert!(b["verdict"].as_str().unwrap().contains("application-limited"), "bursty-{side}");

        let l = screened("loss", side);
        assert!(l["verdict"].as_str().unwrap().contains("retransmission"), "loss-{side}: {}", l["verdict"]);
        let n = screened("bottleneck", side);
        assert!(n["limits"]["congestion"].as_f64().unwrap() > 0.8, "bottleneck-{side}: {}", n["limits"]);
        assert!(
            n["verdict"].as_str().unwrap().contains("7 retransmissions (7 fast)"),
            "bottleneck-{side}: {}",
            n["verdict"]
        );

        let clean = screened("clean", side);
        assert_eq!(clean["severity"].as_f64().unwrap(), 0.0, "clean-{side}");
        assert!(!clean["verdict"].as_str().unwrap().contains("retransmi"), "clean-{side}");
    }
    // The sender waited for its timer twice (the tail-loss probe, then the RTO).
    let l = screened("loss", "snd");
    assert_eq!(l["a2b"]["timeout_stalls"], 2);
    assert!(l["limits"]["recovery"].as_f64().unwrap() > 0.05);
}

/// The thesis' boring rule hides stop-and-wait exchanges; a rules file changes the rule.
#[test]
fn boring_connections_are_hidden_and_the_rules_file_decides_what_is_boring() {
    let clean = data_dir().join("clean-snd.pcap");
    let clean = clean.to_str().unwrap();
    // A bulk transfer pipelines its segments: not boring by the thesis' rule.
    let doc = json(&["screen", clean]);
    assert_eq!(doc["connections"].as_array().unwrap().len(), 1);
    assert_eq!(doc["boring_hidden"], 0);

    let dir = tempdir("screen-rules");
    let rules = dir.join("rules.toml");
    std::fs::write(
        &rules,
        "[boring]\nstop_and_wait = false\nmax = { retransmitted_fraction = 0.01, receiver_window = 0.1 }\n",
    )
    .unwrap();
    let doc = json(&["screen", clean, "--rules", rules.to_str().unwrap()]);
    assert_eq!(doc["connections"].as_array().unwrap().len(), 0, "clean bulk is boring under these rules");
    assert_eq!(doc["boring_hidden"], 1);
    let doc = json(&["screen", clean, "--rules", rules.to_str().unwrap(), "--all"]);
    assert_eq!(doc["connections"][0]["boring"], true);

    std::fs::write(&rules, "[boring]\nmax = { nonsense = 1 }\n").unwrap();
    let out = run(&["screen", clean, "--rules", rules.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown metric `nonsense`"));
}

/// Several files: ranked most troubled first across all of them, `--top` keeps the head.
#[test]
fn connections_are_ranked_by_severity_across_files() {
    let files: Vec<String> = ["clean-snd", "zerowin-snd", "loss-snd", "bursty-snd"]
        .iter()
        .map(|n| data_dir().join(format!("{n}.pcap")).to_string_lossy().into_owned())
        .collect();
    let mut args: Vec<&str> = vec!["screen", "--all"];
    args.extend(files.iter().map(String::as_str));
    let doc = json(&args);
    let conns = doc["connections"].as_array().unwrap();
    let sev: Vec<f64> = conns.iter().map(|c| c["severity"].as_f64().unwrap()).collect();
    assert!(sev.windows(2).all(|w| w[0] >= w[1]), "{sev:?}");
    assert_eq!(conns[0]["id"], 2, "the zero-window connection (file 2) is the worst");
    args.extend(["--top", "1"]);
    assert_eq!(json(&args)["connections"].as_array().unwrap().len(), 1);
    // CSV: one header and one row per connection, flattened field names.
    args.truncate(args.len() - 2);
    args.push("--csv");
    let out = run(&args);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 5);
    assert!(text.lines().next().unwrap().contains("out_of_sequence_fast_retransmit"));
}

/// Every public trace screens without failing, and the results are consistent.
#[test]
#[cfg_attr(no_public_traces, ignore = "../shared/traces/public is absent")]
fn every_public_trace_screens() {
    for f in public_files() {
        let out = run(&["screen", "--all", "--json", f.to_str().unwrap()]);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{}: {}", f.display(), String::from_utf8_lossy(&out.stderr));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        for c in doc["connections"].as_array().unwrap() {
            let limits: f64 = c["limits"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum();
            assert!(limits <= 1.0 + 1e-9, "{}: {c}", f.display());
            let stalls = c["a2b"]["timeout_stall_s"].as_f64().unwrap() + c["b2a"]["timeout_stall_s"].as_f64().unwrap();
            assert!(
                stalls <= c["duration_s"].as_f64().unwrap() + 1e-6,
                "{}: stalls longer than the connection",
                f.display()
            );
            let sev = c["severity"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&sev));
        }
    }
}

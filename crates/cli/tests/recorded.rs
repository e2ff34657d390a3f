//! The project's own recordings (`tests/data/`, made by `tests/data/record/record.sh`): real
//! Linux TCP with a known set of drops, reorderings and a slow reader. Expected numbers come from
//! each scenario's truth file: the sender's kernel counters (nstat) and the router's log.

mod util;

use serde_json::Value;
use util::*;

fn truth(name: &str) -> Value {
    let text = std::fs::read_to_string(data_dir().join(format!("{name}.truth.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The data connection's a2b (sender → receiver) statistics in one capture.
fn sender_dir(name: &str, side: &str) -> Value {
    let path = data_dir().join(format!("{name}-{side}.pcap"));
    let doc = json(&["stats", path.to_str().unwrap()]);
    let conns = doc["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1, "{name}-{side}: one connection");
    let t = truth(name);
    assert_eq!(conns[0]["a"]["port"], t["connection"]["sender"]["port"]);
    assert_eq!(conns[0]["state"], "complete");
    conns[0].clone()
}

/// (segments, gaps): distinct segments in `list` (by seq) and runs of adjacent ones, leaving
/// out a run that ends at the end of the transfer (nothing after it can make it a hole).
fn segments_and_gaps(list: &Value, transfer: u64) -> (u64, u64) {
    let mut segs: Vec<(u64, u64)> =
        list.as_array().unwrap().iter().map(|d| (d["seq"].as_u64().unwrap(), d["len"].as_u64().unwrap())).collect();
    segs.sort();
    segs.dedup_by_key(|s| s.0);
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for (seq, len) in segs {
        match runs.last_mut() {
            Some(r) if r.1 == seq => r.1 = seq + len,
            _ => runs.push((seq, seq + len)),
        }
    }
    let tail = runs.iter().filter(|r| r.1 >= transfer).count() as u64;
    let tail_segs = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["seq"].as_u64().unwrap() + d["len"].as_u64().unwrap() >= transfer)
        .map(|d| d["seq"].as_u64())
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    let distinct =
        list.as_array().unwrap().iter().map(|d| d["seq"].as_u64()).collect::<std::collections::HashSet<_>>().len()
            as u64;
    (distinct - tail_segs, runs.len() as u64 - tail)
}

const SCENARIOS: &[&str] = &["clean", "loss", "randloss", "bottleneck", "zerowin", "reorder", "bursty"];

#[test]
fn retransmissions_at_the_sender_equal_the_kernels_counter() {
    for name in SCENARIOS {
        let t = truth(name);
        let c = sender_dir(name, "snd");
        assert_eq!(c["a2b"]["rexmit_packets"], t["kernel"]["TcpRetransSegs"], "{name}: TcpRetransSegs");
    }
}

#[test]
fn every_byte_is_counted_once_as_unique_at_both_ends() {
    for name in SCENARIOS {
        let t = truth(name);
        for side in ["snd", "rcv"] {
            let c = sender_dir(name, side);
            assert_eq!(c["a2b"]["unique_bytes"], t["transfer_bytes"], "{name}-{side}");
            assert_eq!(c["a2b"]["payload_bytes"], t["captures"][side]["fwd_data_bytes"], "{name}-{side}");
        }
    }
}

#[test]
fn at_the_receiver_repairs_of_dropped_segments_are_out_of_order_fills() {
    // Downstream of the loss the originals were never seen: each repair fills a hole.
    for name in ["loss", "bottleneck"] {
        let t = truth(name);
        let (segs, gaps) = segments_and_gaps(&t["dropped"], t["transfer_bytes"].as_u64().unwrap());
        let c = sender_dir(name, "rcv");
        assert_eq!(c["a2b"]["out_of_order_packets"].as_u64(), Some(segs), "{name}: out-of-order");
        assert_eq!(c["a2b"]["holes"].as_u64(), Some(gaps), "{name}: holes");
        assert_eq!(c["a2b"]["rexmit_packets"], 0, "{name}: nothing arrives twice");
    }
}

#[test]
fn reordered_segments_are_out_of_order_and_spurious_resends_are_duplicates() {
    let t = truth("reorder");
    let (segs, gaps) = segments_and_gaps(&t["reordered"], t["transfer_bytes"].as_u64().unwrap());
    let c = sender_dir("reorder", "rcv");
    assert_eq!(c["a2b"]["out_of_order_packets"].as_u64(), Some(segs));
    assert_eq!(c["a2b"]["holes"].as_u64(), Some(gaps));
    // The kernel's retransmissions were spurious (D-SACKed): at the receiver they repeat bytes.
    assert_eq!(c["a2b"]["rexmit_packets"], t["kernel"]["TcpRetransSegs"]);
    assert_eq!(c["b2a"]["dsacks"], t["kernel"]["TcpExtTCPDSACKRecv"]);
}

#[test]
fn a_slow_reader_shows_zero_windows_and_the_kernels_window_probes() {
    let t = truth("zerowin");
    let c = sender_dir("zerowin", "snd");
    assert_eq!(c["a2b"]["zero_window_probes"], t["kernel"]["TcpExtTCPWinProbe"]);
    assert_eq!(c["b2a"]["zero_window_adverts"], t["captures"]["snd"]["rev_zero_window_advertisements"]);
    assert_eq!(c["a2b"]["rexmit_packets"], 0);
}

#[test]
fn rtt_is_the_configured_path_delay_plus_queueing() {
    // Each direction's one-way delay was measured capture to capture; Karn samples at the
    // sender can be no smaller than their sum (less the 1 ms jitter allowance of the relay).
    for name in ["clean", "loss", "reorder", "bursty"] {
        let t = truth(name);
        let d = &t["measured_one_way_delay_ms"];
        let floor = d["sender_to_receiver"]["min"].as_f64().unwrap() + d["receiver_to_sender"]["min"].as_f64().unwrap();
        let c = sender_dir(name, "snd");
        let min = c["a2b"]["rtt_min_ms"].as_f64().unwrap();
        let avg = c["a2b"]["rtt_avg_ms"].as_f64().unwrap();
        assert!(min >= floor - 1.0 && min < floor + 5.0, "{name}: rtt min {min} vs path {floor}");
        assert!(avg >= min && avg < floor + 15.0, "{name}: rtt avg {avg}");
    }
}

//! `tcpscope quality` on traces made faulty on purpose from the project's own clean recording
//! (`tests/data/clean-*.pcap`): frames removed, frames recorded twice, timestamps swapped. Each
//! fault is found, counted exactly, and named in the verdict; the clean trace has none. And the
//! capture point of the sender-side and receiver-side recordings of the same transfer.

mod util;

use std::path::Path;

use serde_json::Value;
use util::*;

/// The records of a little-endian classic pcap: the file header and each record's bytes.
fn records(path: &Path) -> (Vec<u8>, Vec<Vec<u8>>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "a little-endian pcap");
    let mut recs = Vec::new();
    let mut at = 24;
    while at + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        recs.push(b[at..at + 16 + incl].to_vec());
        at += 16 + incl;
    }
    (b[..24].to_vec(), recs)
}

fn write(name: &str, head: &[u8], recs: &[Vec<u8>]) -> TempPath {
    let path = tempfile(&format!("quality-{name}"), &format!("{name}.pcap"));
    let mut out = head.to_vec();
    recs.iter().for_each(|r| out.extend_from_slice(r));
    std::fs::write(&path, out).unwrap();
    path
}

/// Payload length of each frame (1-based frame numbers, index = frame − 1), from `print`.
fn payload_lens(path: &Path) -> Vec<u64> {
    let out = run(&["print", "--json", path.to_str().unwrap()]);
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["len"].as_u64().unwrap())
        .collect()
}

fn quality(path: &Path) -> Value {
    json(&["quality", path.to_str().unwrap()])
}

fn doubts(v: &Value) -> Vec<String> {
    v["doubtful"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_string()).collect()
}

#[test]
fn a_clean_recording_is_good_and_its_capture_points_are_where_they_were() {
    let snd = quality(&data_dir().join("clean-snd.pcap"));
    let rcv = quality(&data_dir().join("clean-rcv.pcap"));
    for q in [&snd, &rcv] {
        let f = &q["files"][0];
        assert_eq!(doubts(f), Vec::<String>::new(), "{f}");
        assert_eq!((f["duplicate_frames"].as_u64(), f["backwards_timestamps"].as_u64()), (Some(0), Some(0)));
        assert_eq!(f["gap_events"], 0);
    }
    // a sends; the sender-side capture is beside a, the receiver-side one beside b.
    assert_eq!(snd["connections"][0]["position"], "near_a", "{}", snd["connections"][0]);
    assert_eq!(rcv["connections"][0]["position"], "near_b", "{}", rcv["connections"][0]);
}

#[test]
fn removed_frames_are_capture_loss_of_exactly_their_bytes() {
    let src = data_dir().join("clean-rcv.pcap");
    let (head, recs) = records(&src);
    let lens = payload_lens(&src);
    // Every 50th data frame, from the 100th frame on: the receiver acknowledges what the
    // capture no longer has.
    let drop: Vec<usize> = (100..recs.len() - 100).filter(|&i| lens[i] > 0 && i % 50 == 0).collect();
    let bytes: u64 = drop.iter().map(|&i| lens[i]).sum();
    assert!(drop.len() >= 5);
    let kept: Vec<Vec<u8>> =
        recs.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, r)| r.clone()).collect();
    let path = write("removed", &head, &kept);
    let q = quality(&path);
    let f = &q["files"][0];
    assert_eq!(f["acked_unseen_bytes"], bytes, "{f}");
    assert_eq!(f["gap_events"], drop.len(), "{f}");
    assert!(doubts(f).contains(&"capture_loss".to_string()), "{f}");
    // Every other command says so once, pointing here.
    let out = run(&["stats", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("tcpscope quality").count(), 1, "{err}");
    assert!(err.contains("the capture missed"), "{err}");
    // The clean one does not.
    let out = run(&["stats", src.to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("tcpscope quality"));
}

#[test]
fn frames_recorded_twice_are_counted_one_by_one() {
    let src = data_dir().join("clean-snd.pcap");
    let (head, recs) = records(&src);
    let twice: Vec<usize> = (10..recs.len()).step_by(37).collect();
    let mut out = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        out.push(r.clone());
        if twice.contains(&i) {
            out.push(r.clone());
        }
    }
    let q = quality(&write("twice", &head, &out));
    let f = &q["files"][0];
    assert_eq!(f["duplicate_frames"], twice.len(), "{f}");
    assert!(doubts(f).contains(&"duplicate_frames".to_string()));
}

#[test]
fn swapped_timestamps_go_backwards_by_the_step_between_them() {
    let src = data_dir().join("clean-snd.pcap");
    let (head, mut recs) = records(&src);
    let ts = |r: &[u8]| {
        u32::from_le_bytes(r[0..4].try_into().unwrap()) as u64 * 1_000_000
            + u32::from_le_bytes(r[4..8].try_into().unwrap()) as u64
    };
    // Three swaps of neighbours' times, at frames far apart.
    let mut steps = Vec::new();
    for i in [200, 400, 600] {
        let (a, b) = (recs[i][..8].to_vec(), recs[i + 1][..8].to_vec());
        steps.push(ts(&b) - ts(&a));
        recs[i][..8].copy_from_slice(&b);
        recs[i + 1][..8].copy_from_slice(&a);
    }
    let q = quality(&write("swapped", &head, &recs));
    let f = &q["files"][0];
    let moved = steps.iter().filter(|&&s| s > 0).count();
    assert!(moved >= 2, "neighbours with distinct times: {steps:?}");
    assert_eq!(f["backwards_timestamps"], moved, "{f}");
    let max_us = *steps.iter().max().unwrap() as f64;
    assert!((f["max_backwards_ms"].as_f64().unwrap() - max_us / 1e3).abs() < 1e-6, "{f} {steps:?}");
    assert!(doubts(f).contains(&"time_backwards".to_string()));
}

//! `screen --with` and `stats --with` (issue 21): what other captures of the same connections
//! prove, on the recorded pairs of `tests/data` and on a connection recorded at the sender, the
//! router and the receiver in network namespaces (`util::record`, namespaces `p21b<PID>-…`),
//! with the router's record of each drop as the truth.

mod util;

use serde_json::Value;
use util::record::{self, Recording};

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// `screen --all --json TRACE --with OTHER...`: its one connection.
fn screened(trace: &std::path::Path, with: &[&std::path::Path]) -> Value {
    let mut a = vec!["screen", "--all", s(trace)];
    for w in with {
        a.extend(["--with", s(w)]);
    }
    let doc = util::json(&a);
    assert_eq!(doc["connections"].as_array().unwrap().len(), 1, "one connection: {doc}");
    doc["connections"][0].clone()
}

/// The text, CSV and JSON of both commands on the loss pair (12 drops between the sender's
/// capture and the receiver's), and the usage errors.
#[test]
fn the_loss_pair_in_every_output() {
    let d = util::data_dir();
    let (snd, rcv) = (d.join("loss-snd.pcap"), d.join("loss-rcv.pcap"));
    let out = util::run(&["screen", s(&snd), "--with", s(&rcv), "--events"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("capture 1 is {}, 2 is {}", snd.display(), rcv.display())), "{text}");
    assert!(
        text.contains(
            "captures 1+2 prove: 12 lost on the path (1→2: 12), 12 retransmissions: 12 necessary, 0 spurious"
        )
    );
    assert_eq!(text.matches("proved by captures 1+2: its bytes had not reached capture 2").count(), 12, "{text}");
    // Without --with: none of it.
    let alone = String::from_utf8(util::run(&["screen", s(&snd), "--events"]).stdout).unwrap();
    assert!(!alone.contains("capture 1") && !alone.contains("prove"), "{alone}");
    assert!(util::json(&["screen", s(&snd)])["connections"][0].get("vantage").is_none());

    let c = screened(&snd, &[&rcv]);
    let v = &c["vantage"];
    assert_eq!(v["conn"], 1);
    assert_eq!(record::losses(&v["a2b"]), vec![(1, 2, 12)]);
    let events = c["events"].as_array().unwrap();
    let sources = v["events"].as_array().unwrap();
    assert_eq!(sources.len(), events.len());
    for (e, src) in events.iter().zip(sources) {
        assert_eq!((&e["frame"], &e["class"]), (&src["frame"], &src["class"]));
        let resent = e["class"] != "reordering" && e["class"] != "network_duplicate" && e["class"] != "flow_control";
        assert_eq!(src["source"], if resent { "1+2" } else { "inferred" }, "{e} {src}");
    }

    let out = util::run(&["screen", s(&snd), "--with", s(&rcv), "--csv"]);
    let mut csv = csv::Reader::from_reader(&out.stdout[..]);
    let col = csv.headers().unwrap().iter().position(|h| h == "vantage_a2b_lost_on_path").expect("a vantage column");
    let row = csv.records().next().unwrap().unwrap();
    assert_eq!(row.get(col), Some("12"));

    let st = util::json(&["stats", s(&snd), "--with", s(&rcv)]);
    assert_eq!(st["vantage"]["captures"][1], s(&rcv));
    assert_eq!(st["vantage"]["connections"][0]["a2b"], v["a2b"]);
    assert_eq!(st["connections"], util::json(&["stats", s(&snd)])["connections"], "the statistics unchanged");
    let text = String::from_utf8(util::run(&["stats", s(&snd), "--with", s(&rcv)]).stdout).unwrap();
    assert!(
        text.contains("a2b path 1-2 [captures 1+2]: 740 packets, 728 delivered, 12 lost on path (1→2: 12)"),
        "{text}"
    );

    // Usage: --with takes one capture file; CSV is not how stats gives the proof.
    for bad in [
        vec!["screen", s(&snd), s(&rcv), "--with", s(&rcv)],
        vec!["stats", s(&snd), "--with", s(&rcv), "--csv"],
        vec!["screen", s(&d), "--with", s(&rcv)],
        vec!["screen", s(&snd), "--with", s(&rcv), "--from", "+1s"],
    ] {
        let out = util::run(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A capture that cannot be read: an input error naming it.
    let missing = d.join("no-such.pcap");
    let out = util::run(&["screen", s(&snd), "--with", s(&missing)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such.pcap"));
}

/// The reorder pair with the two D-SACKs (frames 309 and 1242, ACKs from the receiver) cut from
/// the sender's capture: alone, that capture cannot know its two resends were not needed (they
/// stay fast retransmits); with the receiver's capture they are spurious for certain.
#[test]
fn a_spurious_resend_is_proved_without_the_dsack() {
    let d = util::data_dir();
    let (snd, rcv) = (d.join("reorder-snd.pcap"), d.join("reorder-rcv.pcap"));
    let dir = util::tempdir("p21-dsack");
    let cut = dir.join("snd-no-dsack.pcap");
    record::rewrite(&snd, &cut, |f| f != 309 && f != 1242, |t| t, false);
    // In the cut capture the second resend is frame 854 (frame 309 is gone before it).
    let resends = |c: &Value| -> Vec<(u64, String)> {
        c["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["frame"] == 158 || e["frame"] == 854)
            .map(|e| (e["frame"].as_u64().unwrap(), e["class"].as_str().unwrap().to_string()))
            .collect()
    };
    let alone = screened(&cut, &[]);
    assert_eq!(resends(&alone), vec![(158, "fast_retransmit".into()), (854, "fast_retransmit".into())]);
    assert_eq!(alone["out_of_sequence"]["spurious"], 0);
    let c = screened(&cut, &[&rcv]);
    assert_eq!(resends(&c), vec![(158, "spurious".into()), (854, "spurious".into())]);
    assert_eq!(c["out_of_sequence"]["spurious"], 2);
    assert_eq!(c["out_of_sequence"]["fast_retransmit"], 0);
    let proved: Vec<&Value> =
        c["vantage"]["events"].as_array().unwrap().iter().filter(|e| e["source"] != "inferred").collect();
    assert_eq!(proved.len(), 2);
    for e in proved {
        assert_eq!(
            (&e["source"], &e["inferred"], &e["class"]),
            (&"1+2".into(), &"fast_retransmit".into(), &"spurious".into())
        );
    }
    // The two ACKs reached the receiver's capture and not the sender's, the last of their path:
    // with two captures that is a loss between them (correlate.md: only a capture upstream of
    // one that saw the packet can be told to have missed it). The data lost nothing.
    let v = &c["vantage"];
    assert_eq!(record::losses(&v["b2a"]), vec![(2, 1, 2)]);
    assert_eq!(v["b2a"]["missed_here"], 0);
    assert_eq!(v["a2b"]["lost_on_path"], 0);
    let verdict = c["verdict"].as_str().unwrap();
    assert!(verdict.contains("2 unneeded retransmissions"), "{verdict}");
    assert!(verdict.contains("2 retransmissions: 0 necessary, 2 spurious"), "{verdict}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The namespace prefix of this file's recordings.
const PREFIX: &str = "p21b";

/// Sender → (forwarder: 5 ms each way, 5 % of frames held 4 ms longer, so later ones overtake
/// them) → router (2 % random loss each way) → receiver; 1.5 MB in one bulk transfer.
const PATHS: &str = r#"
name = "p21-paths"
timeout = 30
[path]
delay = "5ms"
loss = 0.02
reverse_loss = 0.02
reorder = 0.05
reorder_gap = "4ms"
[hosts]
cc = "cubic"
[traffic]
length = 16384
count = 96
"#;

fn recorded() -> Option<Recording> {
    record::record_as(PREFIX, "paths", PATHS)
}

/// One recording at the sender, the router and the receiver, screened at the sender with the
/// other two: every drop located between the router and the receiver (the router's counters);
/// the resends the reordering caused proved spurious, and every one of the sender's
/// retransmissions judged as correlate judges it; `stats` says the same; and packets removed
/// from the sender's capture are that capture's loss, not network loss.
#[test]
fn three_points_prove_losses_and_spurious_resends() {
    let Some(rec) = recorded() else { return };
    let (fwd, rev) = rec.router_drops();
    let (snd, rtr, rcv) = (rec.file("snd.pcap"), rec.file("rtr.pcap"), rec.file("rcv.pcap"));
    let c = screened(&snd, &[&rtr, &rcv]);
    let v = &c["vantage"];
    let (a2b, b2a) = (&v["a2b"], &v["b2a"]);
    assert_eq!((a2b["path"].as_str(), b2a["path"].as_str()), (Some("1-2-3"), Some("3-2-1")));
    let n = |d: &Value, k: &str| d[k].as_u64().unwrap();
    // Located, certain losses: the router's drop record, packet by packet against correlate's
    // rows, and the proof's counts against it.
    assert!(fwd > 0, "no drop to locate");
    let pk = util::json(&["correlate", s(&snd), s(&rtr), s(&rcv), "--packets"]);
    let [fore, back] = record::drops_located(&rec, &pk["packets"], "");
    for (d, l, sender_side, router) in [(a2b, fore, (1, 2), (2, 3)), (b2a, back, (2, 1), (3, 2))] {
        let lost = l.router + l.sender_side;
        assert_eq!((n(d, "lost_on_path"), n(d, "outside_capture")), (lost, l.outside), "{fwd} + {rev} dropped: {d}");
        let mut want: Vec<(u64, u64, u64)> = [(sender_side, l.sender_side), (router, l.router)]
            .into_iter()
            .filter(|x| x.1 > 0)
            .map(|((a, b), k)| (a, b, k))
            .collect();
        let mut got = record::losses(d);
        want.sort();
        got.sort();
        assert_eq!(got, want);
    }
    assert_eq!((n(a2b, "missed_here"), n(a2b, "capture_loss")), (0, 0));

    // Each retransmission event as correlate judged the same frame.
    let corr = util::json(&["correlate", s(&snd), s(&rtr), s(&rcv), "--events"]);
    let judged: std::collections::HashMap<u64, String> = corr["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["dir"] == "a2b" && e["point"] == 1)
        .filter(|e| e["kind"].as_str().unwrap().ends_with("_retransmission"))
        .map(|e| (e["frame"].as_u64().unwrap(), e["kind"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(c["events_dropped"], 0, "all events kept");
    let (mut spurious, mut necessary) = (0, 0);
    for (e, src) in c["events"].as_array().unwrap().iter().zip(v["events"].as_array().unwrap()) {
        if e["dir"] != "a2b" || src["source"] == "inferred" {
            continue;
        }
        assert_eq!(src["source"], "1+3", "{src}");
        let frame = e["frame"].as_u64().unwrap();
        match judged.get(&frame).map(String::as_str) {
            Some("spurious_retransmission") => {
                assert_eq!(e["class"], "spurious", "{e} {src}");
                spurious += 1;
            }
            Some("necessary_retransmission") => {
                assert_ne!(e["class"], "spurious", "{e} {src}");
                necessary += 1;
            }
            other => panic!("frame {frame} proved, correlate says {other:?}"),
        }
    }
    assert_eq!((spurious, necessary), (n(a2b, "spurious_retransmissions"), n(a2b, "necessary_retransmissions")));
    assert!(spurious > 0, "the reordering made no spurious retransmission: {a2b}");
    assert!(c["out_of_sequence"]["spurious"].as_u64().unwrap() >= spurious);
    eprintln!(
        "recording: {fwd} + {rev} router drops; {} located a2b; {spurious} spurious and {necessary} necessary \
         retransmissions proved; verdict: {}",
        n(a2b, "lost_on_path"),
        c["verdict"]
    );

    // stats says the same.
    let st = util::json(&["stats", s(&snd), "--with", s(&rtr), "--with", s(&rcv)]);
    assert_eq!(st["vantage"]["connections"][0]["a2b"], *a2b);

    // Four delivered data frames removed from the sender's capture: missing from capture 1
    // only, not lost; the losses unchanged.
    let gone: Vec<u64> = pk["packets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["dir"] == "a2b" && r["fate"] == "delivered" && r["len"].as_u64() > Some(0))
        .skip(41)
        .step_by(101)
        .take(4)
        .map(|r| r["frames"][0].as_u64().unwrap())
        .collect();
    assert_eq!(gone.len(), 4);
    let dir = util::tempdir("p21-cut");
    let cut = dir.join("snd-cut.pcap");
    record::rewrite(&snd, &cut, |f| !gone.contains(&f), |t| t, false);
    let c2 = screened(&cut, &[&rtr, &rcv]);
    let a = &c2["vantage"]["a2b"];
    assert_eq!(n(a, "missed_here"), 4, "{a}");
    assert_eq!(record::losses(a), record::losses(a2b));
    assert!(
        c2["verdict"]
            .as_str()
            .unwrap()
            .contains("4 packets missing from capture 1 only (capture loss, not network loss)"),
        "{}",
        c2["verdict"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

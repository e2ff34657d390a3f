//! Scripted conversations for the screening rules: each builds packets with chosen timing and
//! asserts the class, the limit or the verdict the rules in docs/screening.md give.

use super::*;
use crate::analysis::Settings;
use crate::capture::Record;
use crate::pass::Analyzer;
use crate::testutil::{Pkt, flag::*, opt, scripted};

/// A script of [`scripted`] packets, SACK offered on both SYNs.
struct Script {
    pkts: Vec<Pkt>,
    /// Frames (0-based) whose IP ID is copied from the frame before: a network duplicate.
    dup_of_previous: Vec<usize>,
}

impl Script {
    fn new() -> Self {
        let mut s = Script { pkts: Vec::new(), dup_of_previous: Vec::new() };
        s.pkt(true, 0.0, SYN, 0, 0, 0, 1000, [opt::mss(1000), opt::sack_perm()].concat());
        s.pkt(false, 10.0, SYN | ACK, 0, 0, 0, 60000, [opt::mss(1000), opt::sack_perm()].concat());
        s.pkt(true, 20.0, ACK, 0, 0, 0, 1000, vec![]);
        s
    }
    #[allow(clippy::too_many_arguments)] // one argument per header field the script sets
    fn pkt(
        &mut self,
        from_a: bool,
        ms: f64,
        flags: u8,
        seq: u32,
        ack: u32,
        len: u16,
        win: u16,
        opts: Vec<u8>,
    ) -> &mut Self {
        self.pkts.push(scripted(from_a, ms, flags, seq, ack, len, win, opts));
        self
    }
    fn a(&mut self, ms: f64, seq: u32, len: u16) -> &mut Self {
        self.pkt(true, ms, ACK, seq, 0, len, 1000, vec![])
    }
    fn b(&mut self, ms: f64, ack: u32, win: u16, sack: &[(u32, u32)]) -> &mut Self {
        let blocks: Vec<(u32, u32)> = sack.iter().map(|&(l, r)| (1001 + l, 1001 + r)).collect();
        let opts = if blocks.is_empty() { vec![] } else { opt::sack(&blocks) };
        self.pkt(false, ms, ACK, 0, ack, 0, win, opts)
    }
    fn run(&self, rules: Rules) -> ConnScreen {
        let mut an = Analyzer::new(rules.settings(Settings::default()), ScreenSink::new(rules));
        for (i, p) in self.pkts.iter().enumerate() {
            let (mut data, orig) = p.ipv4();
            if self.dup_of_previous.contains(&i) {
                let (prev, _) = self.pkts[i - 1].ipv4();
                data[4..6].copy_from_slice(&prev[4..6]);
            }
            an.record(&Record {
                ts_ns: p.ts_ns,
                data: &data,
                orig_len: orig,
                link_type: 101,
                frame: i as u64 + 1,
                offset: 0,
            });
        }
        an.sink.finish().remove(0)
    }
}

fn classes(s: &ConnScreen) -> Vec<OosClass> {
    s.events.iter().map(|e| e.class).collect()
}

#[test]
fn a_resend_with_a_sack_above_it_is_a_fast_retransmit() {
    // 0..1000 is lost; 1000..4000 arrive and are SACKed; 0 is resent 25 ms after the original.
    let mut s = Script::new();
    s.a(30.0, 0, 1000).a(30.1, 1000, 1000).a(30.2, 2000, 1000).a(30.3, 3000, 1000);
    s.b(40.1, 0, 60000, &[(1000, 2000)]).b(40.2, 0, 60000, &[(1000, 3000)]).b(40.3, 0, 60000, &[(1000, 4000)]);
    s.a(55.0, 0, 1000).b(65.0, 4000, 60000, &[]);
    let r = s.run(Rules::default());
    assert_eq!(classes(&r), [OosClass::FastRetransmit]);
    let e = &r.events[0];
    assert_eq!((e.frame, e.seq, e.len, e.prev_frame, e.dup_acks, e.sack_above), (11, 0, 1000, Some(4), 3, true));
    assert!((e.since_prev_ms.unwrap() - 25.0).abs() < 0.01);
    assert_eq!(r.dir[0].timeout_stalls, 0);
    assert!(r.verdict.contains("1 retransmission (1 fast), 20% of bytes"), "{}", r.verdict);
}

#[test]
fn a_resend_after_the_rto_without_evidence_is_a_timeout_and_a_stall() {
    // Two segments in flight, no answer for 300 ms (> the 200 ms RTO floor): the head is resent.
    let mut s = Script::new();
    s.a(30.0, 0, 1000).a(30.1, 1000, 1000).a(330.0, 0, 1000).b(340.0, 2000, 60000, &[]);
    let r = s.run(Rules::default());
    assert_eq!(classes(&r), [OosClass::Rto]);
    assert_eq!(r.dir[0].timeout_stalls, 1);
    assert!((r.dir[0].timeout_stall_s - 0.3).abs() < 1e-3, "{}", r.dir[0].timeout_stall_s);
    // 30 → 330 ms stalled, 330 → 340 in recovery: 310 of 340 ms.
    assert!((r.limits.recovery - 310.0 / 340.0).abs() < 1e-3, "{:?}", r.limits);
    // With a higher RTO floor the same resend is no longer late enough for a timeout.
    let rules = Rules::parse("[classify]\nrto_min_ms = 500").unwrap();
    assert_eq!(classes(&s.run(rules)), [OosClass::Unknown]);
}

#[test]
fn resending_what_was_acknowledged_is_spurious_and_a_dsack_makes_a_resend_spurious() {
    let mut s = Script::new();
    s.a(30.0, 0, 1000).b(40.0, 1000, 60000, &[]).a(300.0, 0, 1000);
    assert_eq!(classes(&s.run(Rules::default())), [OosClass::Spurious]);

    // A fast retransmit the receiver then reports as received twice (D-SACK below the ACK).
    let mut s = Script::new();
    s.a(30.0, 0, 1000).a(30.1, 1000, 1000).a(30.2, 2000, 1000).a(30.3, 3000, 1000);
    s.b(40.1, 0, 60000, &[(1000, 2000)]).b(40.2, 0, 60000, &[(1000, 3000)]).b(40.3, 0, 60000, &[(1000, 4000)]);
    s.a(55.0, 0, 1000).b(56.0, 4000, 60000, &[]).b(65.0, 4000, 60000, &[(0, 1000)]);
    let r = s.run(Rules::default());
    assert_eq!(classes(&r), [OosClass::Spurious]);
    assert_eq!(r.events[0].dsack_frame, Some(13));
    assert_eq!(r.out_of_sequence.fast_retransmit, 0);
}

#[test]
fn an_exact_copy_is_a_network_duplicate_and_a_quick_hole_fill_is_reordering() {
    let mut s = Script::new();
    s.a(30.0, 0, 1000).a(30.05, 0, 1000);
    s.dup_of_previous.push(4);
    // 2000..3000 overtakes 1000..2000 by 0.1 ms: a hole filled long before an RTT (~20 ms).
    s.a(30.1, 2000, 1000).a(30.2, 1000, 1000).b(40.0, 3000, 60000, &[]);
    let r = s.run(Rules::default());
    assert_eq!(classes(&r), [OosClass::NetworkDuplicate, OosClass::Reordering]);
    assert_eq!(r.events[0].prev_frame, Some(4));
    assert!(r.events[1].since_hole_ms.unwrap() < 1.0);
    assert!(
        r.verdict.contains("1 duplicated by the network") && r.verdict.contains("1 segment reordered"),
        "{}",
        r.verdict
    );
}

#[test]
fn a_closed_window_limits_the_sender_and_probes_are_flow_control() {
    // The receiver closes its window at 40 ms and opens it at 1040 ms; the sender probes twice.
    let mut s = Script::new();
    s.a(30.0, 0, 1000).b(40.0, 1000, 0, &[]);
    s.pkt(true, 440.0, ACK, 999, 0, 0, 1000, vec![]).b(450.0, 1000, 0, &[]);
    s.pkt(true, 840.0, ACK, 999, 0, 0, 1000, vec![]).b(850.0, 1000, 0, &[]);
    s.b(1040.0, 1000, 60000, &[]).a(1050.0, 1000, 1000).b(1060.0, 2000, 60000, &[]);
    let r = s.run(Rules::default());
    assert_eq!(r.out_of_sequence.flow_control, 2);
    assert_eq!(r.dir[0].zero_windows, 1);
    assert!((r.dir[0].zero_window_s - 1.0).abs() < 1e-6);
    // From 40 to 1040 ms of 1060: receiver window.
    assert!((r.limits.receiver_window - 1000.0 / 1060.0).abs() < 1e-3, "{:?}", r.limits);
    assert!(
        r.verdict.contains("receiver window-limited 94% of the time (zero window 1 time, 1.0 s in total, 2 probes)"),
        "{}",
        r.verdict
    );
}

#[test]
fn stop_and_wait_exchanges_are_boring_and_pipelining_is_not() {
    // Request, response, request, response: each segment acknowledged before the next.
    let mut s = Script::new();
    s.a(30.0, 0, 100).pkt(false, 40.0, ACK, 0, 100, 500, 60000, vec![]).pkt(
        true,
        50.0,
        ACK,
        100,
        500,
        100,
        1000,
        vec![],
    );
    s.pkt(false, 60.0, ACK, 500, 200, 500, 60000, vec![]).pkt(true, 70.0, ACK, 200, 1000, 0, 1000, vec![]);
    let r = s.run(Rules::default());
    assert!(r.boring, "{r:?}");
    assert_eq!(r.verdict, "boring");
    assert_eq!(r.severity, 0.0);
    // Two segments in flight at once: not boring (but nothing wrong either).
    let mut s = Script::new();
    s.a(30.0, 0, 1000).a(30.1, 1000, 1000).b(40.0, 2000, 60000, &[]);
    let r = s.run(Rules::default());
    assert!(!r.boring);
    assert_eq!(r.verdict, "no trouble found");
    let lenient = Rules::parse("[boring]\nstop_and_wait = false").unwrap();
    assert!(s.run(lenient).boring);
}

#[test]
fn handshake_resends_are_syn_timeouts_and_only_the_openers_wait_is_a_stall() {
    // a's SYN at 0 and again at 1 s; b's SYN-ACK at 1.01 s, again at 2.01 s (its own timer),
    // then a third time at 2.5 s answering a third SYN from a at 2.49 s.
    let syn = || [opt::mss(1000), opt::sack_perm()].concat();
    let mut s = Script { pkts: Vec::new(), dup_of_previous: Vec::new() };
    s.pkt(true, 0.0, SYN, 0, 0, 0, 1000, syn()).pkt(true, 1000.0, SYN, 0, 0, 0, 1000, syn());
    s.pkt(false, 1010.0, SYN | ACK, 0, 0, 0, 60000, syn()).pkt(false, 2010.0, SYN | ACK, 0, 0, 0, 60000, syn());
    s.pkt(true, 2490.0, SYN, 0, 0, 0, 1000, syn()).pkt(false, 2500.0, SYN | ACK, 0, 0, 0, 60000, syn());
    s.pkt(true, 2510.0, ACK, 0, 0, 0, 1000, vec![]);
    let r = s.run(Rules::default());
    assert_eq!((r.dir[0].out_of_sequence.syn_timeout, r.dir[1].out_of_sequence.syn_timeout), (2, 2));
    assert_eq!(classes(&r), [OosClass::SynTimeout; 4]);
    // a waited 1 s, then 1.49 s; b waited 1 s for its own timer; its last SYN-ACK answered.
    assert_eq!((r.dir[0].timeout_stalls, r.dir[1].timeout_stalls), (2, 1));
    assert!((r.dir[0].timeout_stall_s - 2.49).abs() < 1e-6, "{}", r.dir[0].timeout_stall_s);
    assert_eq!(
        r.verdict,
        "a→b: 2 timeout stalls, 2.5 s; 2 SYN retransmissions; b→a: 1 timeout stall, 1.0 s; 2 SYN-ACK retransmissions"
    );
}

#[test]
fn a_dsack_makes_a_resend_spurious_even_past_the_evidence_kept() {
    // MAX_EVIDENCE + 10 rounds of: a segment lost, resent on a SACK above it, then D-SACKed.
    let mut s = Script::new();
    let n = (MAX_EVIDENCE + 10) as u32;
    for i in 0..n {
        let (seq, t) = (i * 2000, 30.0 + i as f64 * 100.0);
        s.a(t, seq, 1000).a(t + 0.1, seq + 1000, 1000);
        s.b(t + 10.0, seq, 60000, &[(seq + 1000, seq + 2000)]);
        s.a(t + 11.0, seq, 1000).b(t + 21.0, seq + 2000, 60000, &[]);
        s.b(t + 22.0, seq + 2000, 60000, &[(seq, seq + 1000)]);
    }
    let r = s.run(Rules::default());
    assert_eq!((r.out_of_sequence.spurious, r.out_of_sequence.fast_retransmit), (n, 0));
    assert_eq!((r.events.len(), r.events_dropped), (MAX_EVIDENCE, 10));
    assert!(r.events.iter().all(|e| e.class == OosClass::Spurious && e.dsack_frame.is_some()));
}

/// One ranking: not boring first, most severe first, ties by position.
#[test]
fn rank_puts_boring_last_then_severity_then_position() {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap"));
    let q = crate::pass::Query::new(vec![path.into()]);
    let (sink, _, _) = q.run_one(ScreenSink::new(Rules::default()), &|_, _| {}).unwrap();
    let one = sink.finish().remove(0);
    let with = |boring: bool, severity: f64| ConnScreen { boring, severity, ..one.clone() };
    let screens = vec![with(true, 0.9), with(false, 0.1), with(false, 0.5), with(true, 0.0), with(false, 0.5)];
    assert_eq!(super::rank(&screens), vec![2, 4, 1, 0, 3]);
}

/// `screen --json`'s keys are its table's fields, in order.
#[test]
fn a_rows_keys_are_its_fields() {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap"));
    let q = crate::pass::Query::new(vec![path.into()]);
    let (sink, _, _) = q.run_one(ScreenSink::new(Rules::default()), &|_, _| {}).unwrap();
    let one = sink.finish().remove(0);
    let v = serde_json::to_value(ScreenRow::new(1, &one, true)).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    // `vantage` only with other captures (`--with`): then every field.
    let fields = crate::table::names(<ScreenRow as crate::table::Table>::FIELDS);
    assert_eq!(keys, fields[..fields.len() - 1]);
    let proved = proved("loss-snd.pcap", "loss-rcv.pcap").remove(0);
    let v = serde_json::to_value(ScreenRow::new(1, &proved, true)).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, fields);
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let names = |f| crate::table::names(f).iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(keys(&v["vantage"]), names(<VantageRow as crate::table::Table>::FIELDS));
    assert_eq!(keys(&v["vantage"]["a2b"]), names(<VantageDir as crate::table::Table>::FIELDS));
    assert_eq!(keys(&v["vantage"]["events"][0]), names(<EventSource as crate::table::Table>::FIELDS));
}

/// Screens `a` of `tests/data` with `others` as its other vantage points.
fn proved(a: &str, other: &str) -> Vec<ConnScreen> {
    let data = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data"));
    let q = crate::pass::Query::new(vec![data.join(a)]).vantage(vec![data.join(other)]);
    let proof = crate::vantage::Proof::of(&q, &Default::default()).unwrap().map(Arc::new);
    assert!(proof.is_some());
    let (sink, _, _) = q.run_one(ScreenSink::new(Rules::default()).with_proof(proof), &|_, _| {}).unwrap();
    sink.finish()
}

/// The events of `s` whose verdict other captures proved, as (class, inferred class, source).
fn proofs(s: &ConnScreen) -> Vec<(OosClass, OosClass, String)> {
    s.events.iter().filter_map(|e| e.proved.as_ref().map(|p| (e.class, p.inferred, p.source.clone()))).collect()
}

/// The reorder pair (tests/data/README.md): the relay held six segments; the sender resent two
/// of them although nothing was lost (truth: 2 spurious, TCPDSACKRecv 2). At the sender the
/// analysis infers it from D-SACKs; with the receiver's capture it is proved — the class is
/// the same, its source the two captures. The counts do not change, and nothing is lost.
#[test]
fn a_spurious_retransmission_is_proved_by_the_receivers_capture() {
    let s = proved("reorder-snd.pcap", "reorder-rcv.pcap").remove(0);
    let p = proofs(&s);
    assert_eq!(p.len(), 2, "{:?}", s.events);
    for (class, _, source) in &p {
        assert_eq!((*class, source.as_str()), (OosClass::Spurious, "1+2"));
    }
    assert_eq!(s.out_of_sequence.spurious, 2);
    let v = s.vantage.as_deref().unwrap();
    let a2b = v.dir[0].as_ref().unwrap();
    assert_eq!((a2b.lost_on_path, a2b.spurious_retransmissions, a2b.missed_here), (0, 2, 0));
    assert!(s.verdict.contains("captures 1+2 prove: 2 retransmissions: 0 necessary, 2 spurious"), "{}", s.verdict);
    // From the receiver's side, the same two are spurious: the sender's capture says they left,
    // the receiver's had their bytes already.
    let r = proved("reorder-rcv.pcap", "reorder-snd.pcap").remove(0);
    let spurious: Vec<_> = proofs(&r).into_iter().filter(|x| x.0 == OosClass::Spurious).collect();
    assert_eq!(spurious.len(), 2, "{:?}", r.events);
}

/// The loss pair: the relay dropped 12 transmissions between the two captures. Every
/// retransmission the sender made is proved necessary (its class stays the analysis'), each
/// drop located between capture 1 and 2 — or, seen from the receiver's capture, 2 and 1.
#[test]
fn losses_are_located_and_retransmissions_proved_necessary() {
    let s = proved("loss-snd.pcap", "loss-rcv.pcap").remove(0);
    let v = s.vantage.as_deref().unwrap();
    let a2b = v.dir[0].as_ref().unwrap();
    assert_eq!(a2b.lost_on_path, 12);
    assert_eq!(a2b.losses, vec![crate::correlate::LossAt { from: 1, to: 2, packets: 12 }]);
    assert_eq!((a2b.necessary_retransmissions, a2b.spurious_retransmissions), (12, 0));
    let p = proofs(&s);
    assert_eq!(p.len(), 12, "{:?}", s.events);
    assert!(p.iter().all(|(c, i, src)| c == i && *c != OosClass::Spurious && src == "1+2"), "{p:?}");
    assert_eq!(s.out_of_sequence.spurious, 0);
    assert!(s.verdict.contains("12 lost on the path (1→2: 12)"), "{}", s.verdict);
    // Seen from the receiver (capture 1), the same drops are upstream of it: 2→1.
    let r = proved("loss-rcv.pcap", "loss-snd.pcap").remove(0);
    let d = r.vantage.as_deref().unwrap().dir[0].clone().unwrap();
    assert_eq!(d.losses, vec![crate::correlate::LossAt { from: 2, to: 1, packets: 12 }]);
    // Without the other capture, no proof and no vantage.
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap"));
    let q = crate::pass::Query::new(vec![path.into()]);
    assert!(crate::vantage::Proof::of(&q, &Default::default()).unwrap().is_none());
    let (sink, _, _) = q.run_one(ScreenSink::new(Rules::default()), &|_, _| {}).unwrap();
    let alone = sink.finish().remove(0);
    assert!(alone.vantage.is_none() && proofs(&alone).is_empty());
    assert!(!alone.verdict.contains("prove"));
}

/// `into_events` (the `events` table's source) hands over what `finish` puts in each result:
/// every recorded scenario of tests/data and the public traces (when ../shared is there).
#[test]
fn into_events_are_the_results_events() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let public = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/public");
    let mut paths: Vec<_> = std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().path()).collect();
    paths.extend(std::fs::read_dir(&public).into_iter().flatten().map(|e| e.unwrap().path()));
    paths.retain(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"));
    let mut events = 0;
    for p in &paths {
        let run = |f: &dyn Fn(ScreenSink) -> String| {
            let q = crate::pass::Query::new(vec![p.clone()]);
            f(q.run(|| ScreenSink::new(Rules::default()), &|_, _| {}).unwrap().traces.remove(0).sink)
        };
        let want = run(&|s| format!("{:?}", s.finish().into_iter().map(|c| c.events).collect::<Vec<_>>()));
        assert_eq!(run(&|s| format!("{:?}", s.into_events())), want, "{}", p.display());
        events += want.matches("OosEvent").count();
    }
    assert!(events > 100, "{events} events");
}

impl Script {
    /// The handshake and two segments of a, all 100 ms later than [`Script::new`]'s: room
    /// for packets earlier than the connection's first (time going back).
    fn late_start() -> Script {
        let mut s = Script::new();
        s.a(30.0, 0, 1000).a(30.1, 1000, 1000);
        for p in &mut s.pkts {
            p.ts_ns += 100_000_000;
        }
        s
    }
}

/// A packet earlier than the connection's first (time going back, as in merged captures):
/// event times count from the earliest packet and the lifetime from the earliest to the
/// latest; never a negative time (this panicked on overflow before).
#[test]
fn time_going_back_gives_no_negative_time() {
    let mut s = Script::late_start();
    // 0..1000 resent 15 ms before the SYN (now at 100 ms), then resent again at 200 ms.
    s.a(85.0, 0, 1000).a(200.0, 0, 1000).b(210.0, 2000, 60000, &[]);
    let r = s.run(Rules::default());
    let times: Vec<f64> = r.events.iter().map(|e| e.time_s).collect();
    assert_eq!(times.len(), 2, "{:?}", r.events);
    // The first resend is the earliest packet: 0; the second counts from it.
    assert!(times[0].abs() < 1e-9 && (times[1] - 0.115).abs() < 1e-9, "{times:?}");
    assert!((r.duration_s - 0.125).abs() < 1e-9, "{}", r.duration_s);
}

/// Event times count from the connection's earliest packet even when it comes later in the
/// file than the events (they counted from the earliest packet before them).
#[test]
fn event_times_count_from_a_later_earliest_packet() {
    let mut s = Script::late_start();
    // 0..1000 resent at 200 ms (an event), then a packet at 50 ms, before every other.
    s.a(200.0, 0, 1000).b(210.0, 2000, 60000, &[]).b(50.0, 0, 60000, &[]);
    let r = s.run(Rules::default());
    let times: Vec<f64> = r.events.iter().map(|e| e.time_s).collect();
    assert_eq!(times.len(), 1, "{:?}", r.events);
    assert!((times[0] - 0.150).abs() < 1e-9, "{times:?}");
    assert!((r.duration_s - 0.160).abs() < 1e-9, "{}", r.duration_s);
}

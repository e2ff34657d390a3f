//! Scripted conversations: each test builds packets with chosen header fields and asserts the
//! numbers a person computes from the script (the arithmetic is in the comments).

use super::*;
use crate::capture::Record;
use crate::pass::Analyzer;
use crate::stats::{DirStats, StatsSink};
use crate::testutil::{Pkt, flag::*, opt};

const A: [u8; 4] = [10, 0, 0, 1];
const ISN_A: u32 = 1000;

/// Records stats and every event.
#[derive(Default)]
struct Rec {
    stats: StatsSink,
    events: Vec<(At, Event)>,
    evidence: Vec<(At, Evidence)>,
    segs: Vec<SegmentInfo>,
}

impl Sink for Rec {
    const CLASSIFY: bool = true;
    fn connection(&mut self, c: ConnIdx, info: &crate::flow::ConnInfo) {
        self.stats.connection(c, info);
    }
    fn segment(&mut self, s: &SegmentInfo) {
        self.stats.segment(s);
        self.segs.push(*s);
    }
    fn event(&mut self, at: &At, ev: &Event) {
        self.stats.event(at, ev);
        self.events.push((*at, *ev));
    }
    fn evidence(&mut self, at: &At, why: &Evidence) {
        self.evidence.push((*at, why.clone()));
    }
}

/// A conversation script. Sequence numbers are given relative to each side's ISN + 1 (the first
/// payload byte is 0), acks relative to the other side's.
#[derive(Default)]
struct Conv {
    pkts: Vec<Pkt>,
    settings: Settings,
}

impl Conv {
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
        self.pkts.push(crate::testutil::scripted(from_a, ms, flags, seq, ack, len, win, opts));
        self
    }
    fn a(&mut self, ms: f64, flags: u8, seq: u32, ack: u32, len: u16, win: u16) -> &mut Self {
        self.pkt(true, ms, flags, seq, ack, len, win, vec![])
    }
    fn b(&mut self, ms: f64, flags: u8, seq: u32, ack: u32, len: u16, win: u16) -> &mut Self {
        self.pkt(false, ms, flags, seq, ack, len, win, vec![])
    }
    /// SYN (ws 2) at 0 ms, SYN-ACK (ws 3) at 10 ms, ACK at 20 ms.
    fn handshake(&mut self) -> &mut Self {
        self.pkt(true, 0.0, SYN, 0, 0, 0, 1000, [opt::mss(1460), opt::wscale(2), opt::sack_perm()].concat());
        self.pkt(false, 10.0, SYN | ACK, 0, 0, 0, 2000, [opt::mss(1460), opt::wscale(3), opt::sack_perm()].concat());
        self.a(20.0, ACK, 0, 0, 0, 1000)
    }
    fn run(&self) -> Rec {
        let mut an = Analyzer::new(self.settings, Rec::default());
        for (i, p) in self.pkts.iter().enumerate() {
            let (data, orig) = p.ipv4();
            an.record(&Record {
                ts_ns: p.ts_ns,
                data: &data,
                orig_len: orig,
                link_type: 101,
                frame: i as u64 + 1,
                offset: 0,
            });
        }
        an.sink
    }
}

fn dir(r: &Rec, conn: usize, d: Dir) -> DirStats {
    r.stats.conns[conn].dir(d.idx())
}

fn conserved(d: &DirStats) {
    assert_eq!(d.unique_bytes + d.rexmit_bytes + d.rare().zero_window_probe_bytes, d.payload_bytes, "{d:?}");
}

#[test]
fn a_resent_segment_is_a_retransmission_of_its_bytes() {
    // Three 100-byte segments, the second sent again: 300 unique, 100 retransmitted, 400 sent.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 100, 0, 100, 1000).a(32.0, ACK, 200, 0, 100, 1000);
    c.a(300.0, ACK, 100, 0, 100, 1000);
    let r = c.run();
    let d = dir(&r, 0, Dir::AtoB);
    assert_eq!((d.data_packets, d.payload_bytes, d.unique_bytes), (4, 400, 300));
    assert_eq!((d.rexmit_packets, d.rexmit_bytes, d.rare().out_of_order_packets), (1, 100, 0));
    conserved(&d);
}

#[test]
fn a_partial_overlap_retransmits_only_the_seen_bytes() {
    // [0,100) then [50,150): 50 bytes seen before, 50 new.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(40.0, ACK, 50, 0, 100, 1000);
    let r = c.run();
    let d = dir(&r, 0, Dir::AtoB);
    assert_eq!((d.unique_bytes, d.rexmit_bytes, d.rexmit_packets), (150, 50, 1));
}

#[test]
fn filling_a_hole_is_out_of_order_not_a_retransmission() {
    // Segments 1, 3, then 2: the third packet fills [100,200) below the highest byte (300).
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 200, 0, 100, 1000).a(32.0, ACK, 100, 0, 100, 1000);
    let r = c.run();
    let d = dir(&r, 0, Dir::AtoB);
    assert_eq!((d.rare().out_of_order_packets, d.rexmit_packets, d.unique_bytes, d.rare().holes), (1, 0, 300, 1));
    let hole = r.events.iter().find_map(|(_, e)| match e {
        Event::Hole { from, to } => Some((*from, *to)),
        _ => None,
    });
    assert_eq!(hole, Some((SeqOff(100), SeqOff(200))));
}

#[test]
fn duplicate_acks_follow_the_wireshark_rule() {
    // b acks 100 four times more with the same window: dup #1..#4, the third is the "triple".
    // A window change or payload breaks the run; a new ack value resets the count.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 100, 0, 100, 1000);
    c.b(40.0, ACK, 0, 100, 0, 2000);
    for i in 0..4 {
        c.b(41.0 + i as f64, ACK, 0, 100, 0, 2000);
    }
    c.b(46.0, ACK, 0, 100, 0, 1999); // window update: not a dup
    c.b(47.0, ACK, 0, 100, 0, 1999); // dup #5 (same ack, same window as the previous packet)
    c.b(48.0, ACK, 0, 200, 0, 1999); // new ack
    c.b(49.0, ACK, 0, 200, 0, 1999); // dup #1 of the new ack
    let r = c.run();
    let ns: Vec<u32> =
        r.events.iter().filter_map(|(_, e)| if let Event::DupAck { n, .. } = e { Some(*n) } else { None }).collect();
    assert_eq!(ns, vec![1, 2, 3, 4, 5, 1]);
    let d = dir(&r, 0, Dir::BtoA);
    assert_eq!((d.rare().dup_acks, d.rare().triple_dup_acks), (6, 1));
}

#[test]
fn rtt_samples_obey_karns_rule() {
    // seg1 [0,100) at 30 ms acked at 80 ms: sample 50 ms. seg2 [100,200) at 31 ms, resent at
    // 300 ms, acked at 350 ms: ambiguous, no sample. seg3 [200,300) at 400 ms and seg4
    // [300,400) at 401 ms; seg3 resent at 700 ms; an ACK of 400 at 750 ms ends exactly on seg4
    // but covers seg3's later transmission: post-loss, no sample.
    // The SYN is sampled too: SYN at 0, SYN-ACK at 10 ms → 10 ms; b's SYN-ACK acked at 20 ms.
    let mut c = Conv::default();
    c.handshake();
    c.a(30.0, ACK, 0, 0, 100, 1000).b(80.0, ACK, 0, 100, 0, 2000);
    c.a(31.0, ACK, 100, 0, 100, 1000).a(300.0, ACK, 100, 0, 100, 1000).b(350.0, ACK, 0, 200, 0, 2000);
    c.a(400.0, ACK, 200, 0, 100, 1000).a(401.0, ACK, 300, 0, 100, 1000).a(700.0, ACK, 200, 0, 100, 1000);
    c.b(750.0, ACK, 0, 400, 0, 2000);
    let r = c.run();
    let a = dir(&r, 0, Dir::AtoB);
    assert_eq!((a.rtt.n, a.rtt.min, a.rtt.max), (2, 10_000_000, 50_000_000));
    assert_eq!((a.rare().karn_discards, a.rare().post_loss_acks), (1, 1));
    let b = dir(&r, 0, Dir::BtoA);
    assert_eq!((b.rtt.n, b.rtt.min), (1, 10_000_000));
}

#[test]
fn timestamp_echoes_give_rtt_samples() {
    // a sends TSval 7 at 30 ms and again at 35 ms (same tick); b echoes 7 at 90 ms: one sample
    // from the first send, 60 ms. A second echo of 7 gives nothing.
    let mut c = Conv::default();
    c.handshake();
    c.pkt(true, 30.0, ACK, 0, 0, 100, 1000, opt::ts(7, 1));
    c.pkt(true, 35.0, ACK, 100, 0, 100, 1000, opt::ts(7, 1));
    c.pkt(false, 90.0, ACK, 0, 200, 0, 2000, opt::ts(3, 7));
    c.pkt(false, 91.0, ACK, 0, 200, 0, 2000, opt::ts(3, 7));
    let r = c.run();
    let a = dir(&r, 0, Dir::AtoB);
    assert_eq!((a.rtt_ts.n, a.rtt_ts.min), (1, 60_000_000));
}

#[test]
fn windows_are_scaled_by_the_senders_shift_once_both_syns_agree() {
    // a's ws 2, b's ws 3 (RFC 7323): b's window 2000 → 16000 bytes; a's 1000 → 4000. SYN
    // windows are never scaled.
    let mut c = Conv::default();
    c.handshake().b(30.0, ACK, 0, 0, 0, 2000);
    let r = c.run();
    let (a, b) = (dir(&r, 0, Dir::AtoB), dir(&r, 0, Dir::BtoA));
    assert_eq!((a.wscale, b.wscale), (Some(2), Some(3)));
    assert_eq!((b.window.min, b.window.max), (2000, 16000));
    assert_eq!((a.window.min, a.window.max), (1000, 4000));
}

#[test]
fn without_a_handshake_the_scale_is_unknown_unless_assumed() {
    let mut c = Conv::default();
    c.a(0.0, ACK, 0, 0, 100, 1000).b(10.0, ACK, 0, 100, 0, 2000);
    let r = c.run();
    assert_eq!(dir(&r, 0, Dir::BtoA).wscale, None);
    assert_eq!(dir(&r, 0, Dir::BtoA).window.max, 2000);
    c.settings.assume_wscale = Some(4);
    let r = c.run();
    assert_eq!(dir(&r, 0, Dir::BtoA).wscale, Some(4));
    assert_eq!(dir(&r, 0, Dir::BtoA).window.max, 32000);
}

#[test]
fn a_right_edge_moving_left_is_a_window_shrink() {
    // b: ack 100 win 500 (edge 100 + 500·8 = 4100), then ack 100 win 300 (edge 2500): shrink by
    // 1600. Then ack 600 win 250 (edge 2600): moves right, no shrink.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 600, 1000);
    c.b(40.0, ACK, 0, 100, 0, 500).b(41.0, ACK, 0, 100, 0, 300).b(42.0, ACK, 0, 600, 0, 250);
    let r = c.run();
    assert_eq!(dir(&r, 0, Dir::BtoA).rare().window_shrinks, 1);
    assert!(r.events.iter().any(|(_, e)| matches!(e, Event::WindowShrink { by: 1600 })));
}

#[test]
fn zero_window_probes_are_neither_new_nor_retransmitted() {
    // b closes its window after 100 bytes; a probes byte 100 three times; b reopens; a sends
    // [100,200) for real. Probes: 3 packets, 3 bytes. Unique 200, no retransmission.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).b(40.0, ACK, 0, 100, 0, 0);
    c.a(240.0, ACK, 100, 0, 1, 1000).b(241.0, ACK, 0, 100, 0, 0);
    c.a(640.0, ACK, 100, 0, 1, 1000).b(641.0, ACK, 0, 100, 0, 0);
    c.a(1440.0, ACK, 100, 0, 1, 1000).b(1441.0, ACK, 0, 100, 0, 100);
    c.a(1450.0, ACK, 100, 0, 100, 1000);
    let r = c.run();
    let a = dir(&r, 0, Dir::AtoB);
    assert_eq!((a.rare().zero_window_probes, a.rare().zero_window_probe_bytes), (3, 3));
    assert_eq!((a.unique_bytes, a.rexmit_packets, a.rare().holes), (200, 0, 0));
    assert_eq!(dir(&r, 0, Dir::BtoA).rare().zero_window_adverts, 3);
    conserved(&a);
}

/// The payload an ACK acknowledges stops at the FIN, whether its offset is read from
/// `snd_max` (a FIN that ends what its side sent) or kept apart (bytes seen past it, or a FIN
/// sent again below the highest byte).
#[test]
fn the_payload_acknowledged_stops_at_the_fin() {
    let acked = |c: &mut Conv| {
        let r = c.b(100.0, ACK, 0, 151, 0, 2000).run();
        dir(&r, 0, Dir::BtoA).acks.payload_bytes
    };
    // 100 bytes and the FIN (offset 100): the ACK of 151 covers 100 bytes of payload.
    let mut at_top = Conv::default();
    at_top.handshake().a(30.0, FIN | ACK, 0, 0, 100, 1000);
    // 50 bytes past the FIN (not TCP, but on the wire) move snd_max to 151, not the FIN.
    let mut past = Conv::default();
    past.handshake().a(30.0, FIN | ACK, 0, 0, 100, 1000).a(31.0, ACK, 101, 0, 50, 1000);
    // 150 bytes, then a FIN at 100 below them.
    let mut below = Conv::default();
    below.handshake().a(30.0, ACK, 0, 0, 150, 1000).a(31.0, FIN | ACK, 100, 0, 0, 1000);
    assert_eq!([acked(&mut at_top), acked(&mut past), acked(&mut below)], [100; 3]);
}

#[test]
fn a_new_isn_on_a_used_four_tuple_is_a_new_connection() {
    let mut c = Conv::default();
    c.handshake().a(30.0, FIN | ACK, 0, 0, 0, 1000).b(31.0, FIN | ACK, 0, 1, 0, 2000).a(32.0, ACK, 1, 1, 0, 1000);
    // Same ports, new ISN (Conv writes ISN_A for SYNs: shift it by editing the packet).
    c.pkt(true, 5000.0, SYN, 0, 0, 0, 1000, vec![]);
    c.pkts.last_mut().unwrap().seq = 777_777;
    // A retransmitted SYN with the same ISN stays in that connection.
    c.pkt(true, 6000.0, SYN, 0, 0, 0, 1000, vec![]);
    c.pkts.last_mut().unwrap().seq = 777_777;
    let r = c.run();
    assert_eq!(r.stats.conns.len(), 2);
    assert_eq!(r.stats.conns[1].info().reuse, Some(crate::flow::SplitReason::NewIsn));
    assert_eq!(r.stats.conns[0].state(), crate::stats::ConnState::Complete);
    let second = dir(&r, 1, Dir::AtoB);
    assert_eq!((second.syn, second.rexmit_packets), (2, 1));
}

#[test]
fn bytes_in_flight_subtract_sacked_bytes() {
    // a sends 10 × 100 bytes; b acks 100 and SACKs [300,500); a's next segment [1000,1100)
    // leaves 1100 - 100 - 200 = 800 bytes in flight. Before b's first ACK nothing is measured;
    // b's ACK of the SYN-ACK... a's 10th segment: 1000 - 0 = 1000 (snd_una = 0 after the
    // handshake).
    let mut c = Conv::default();
    c.handshake();
    for i in 0..10 {
        c.a(30.0 + i as f64, ACK, i * 100, 0, 100, 1000);
    }
    let base = ISN_A + 1;
    c.pkt(false, 60.0, ACK, 0, 100, 0, 2000, opt::sack(&[(base + 300, base + 500)]));
    c.a(61.0, ACK, 1000, 0, 100, 1000);
    let r = c.run();
    let flights: Vec<Option<u64>> = r.segs.iter().filter(|s| s.len > 0).map(|s| s.in_flight).collect();
    assert_eq!(flights[9], Some(1000));
    assert_eq!(flights[10], Some(800));
    assert_eq!(dir(&r, 0, Dir::AtoB).max_in_flight, 1000);
}

#[test]
fn a_sack_block_below_the_ack_is_a_dsack() {
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 0, 0, 100, 1000);
    let base = ISN_A + 1;
    c.pkt(false, 60.0, ACK, 0, 100, 0, 2000, opt::sack(&[(base, base + 100)]));
    let r = c.run();
    assert_eq!(dir(&r, 0, Dir::BtoA).rare().dsacks, 1);
    assert_eq!(dir(&r, 0, Dir::BtoA).rare().sack_blocks, 1);
}

#[test]
fn data_acknowledged_but_never_captured_is_counted() {
    // a's [0,100) captured, [100,300) not; b acks 300: 200 bytes acked unseen.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).b(60.0, ACK, 0, 300, 0, 2000);
    let r = c.run();
    assert_eq!(dir(&r, 0, Dir::AtoB).rare().acked_unseen_bytes, 200);
    // Same with a hole: [0,100) and [200,300) captured, b acks 300: the hole's 100 bytes.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 200, 0, 100, 1000).b(60.0, ACK, 0, 300, 0, 2000);
    let r = c.run();
    assert_eq!(dir(&r, 0, Dir::AtoB).rare().acked_unseen_bytes, 100);
    // The ACK before the segment after the gap (a receiver-side capture that missed one):
    // the gap's bytes are counted when acknowledged, not again when the next segment opens it.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).b(31.0, ACK, 0, 200, 0, 2000).a(32.0, ACK, 200, 0, 100, 1000);
    c.b(33.0, ACK, 0, 300, 0, 2000);
    let r = c.run();
    assert_eq!(dir(&r, 0, Dir::AtoB).rare().acked_unseen_bytes, 100);
}

#[test]
fn sequence_numbers_wrap_without_losing_count() {
    // ISN 2^32 - 150: the third 100-byte segment crosses zero.
    let mut c = Conv::default();
    c.handshake();
    for i in 0..5 {
        c.a(30.0 + i as f64, ACK, i * 100, 0, 100, 1000);
    }
    for p in &mut c.pkts {
        let shift = u32::MAX - 150 - ISN_A;
        if p.src == A {
            p.seq = p.seq.wrapping_add(shift);
        } else if p.flags & ACK != 0 {
            p.ack = p.ack.wrapping_add(shift);
        }
    }
    c.a(40.0, ACK, 200, 0, 100, 1000);
    c.pkts.last_mut().unwrap().seq = (u32::MAX - 150).wrapping_add(1 + 200);
    let r = c.run();
    let a = dir(&r, 0, Dir::AtoB);
    assert_eq!((a.unique_bytes, a.rexmit_bytes), (500, 100));
}

/// The slow twin: a byte set. Random scripts of segments (with reordering and repeats) must give
/// the same unique and retransmitted byte counts as a naive "have I seen this byte" set.
#[test]
fn retransmitted_bytes_match_a_naive_byte_set() {
    let mut next = crate::testutil::rng(0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..300 {
        let mut c = Conv::default();
        c.handshake();
        let mut seen = std::collections::HashSet::new();
        let (mut unique, mut rexmit, mut rexmit_pkts) = (0u64, 0u64, 0u64);
        for i in 0..40 {
            let seq = next(2000) as u32;
            let len = 1 + next(300) as u16;
            c.a(30.0 + i as f64, ACK, seq, 0, len, 1000);
            let mut any = false;
            for b in seq..seq + len as u32 {
                if seen.insert(b) {
                    unique += 1;
                } else {
                    rexmit += 1;
                    any = true;
                }
            }
            rexmit_pkts += any as u64;
        }
        let r = c.run();
        let a = dir(&r, 0, Dir::AtoB);
        assert_eq!((a.unique_bytes, a.rexmit_bytes, a.rexmit_packets), (unique, rexmit, rexmit_pkts));
        conserved(&a);
    }
}

/// Every event's data direction ([`Event::data_dir`]) is the direction of the data it is about,
/// whether the analysis raised it with the data's direction or the ACK's: the viewer opens that
/// direction's plot when the user jumps to the event (it used to open the other one for
/// `acked_unseen`).
#[test]
fn every_event_names_the_direction_of_its_data() {
    // a sends [0,100), [200,300) (100..200 not captured), then [300,400) twice; b acks 100 three
    // times (dup ACKs, with a SACK block), then everything: 100 bytes acked unseen. b's window
    // goes to zero and back.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 200, 0, 100, 1000);
    c.b(40.0, ACK, 0, 100, 0, 2000);
    c.pkt(false, 41.0, ACK, 0, 100, 0, 2000, opt::sack(&[(ISN_A + 201, ISN_A + 301)]));
    c.pkt(false, 42.0, ACK, 0, 100, 0, 2000, opt::sack(&[(ISN_A + 201, ISN_A + 301)]));
    c.a(50.0, ACK, 300, 0, 100, 1000).a(80.0, ACK, 300, 0, 100, 1000);
    c.b(90.0, ACK, 0, 400, 0, 0).b(95.0, ACK, 0, 400, 0, 2000);
    let r = c.run();
    let mut seen = std::collections::BTreeSet::new();
    // After the handshake (whose third packet gives an RTT sample of b's SYN), all of it is
    // about a's data.
    for (at, ev) in r.events.iter().filter(|(at, _)| at.frame > 3) {
        seen.insert(ev.name());
        assert!(Event::NAMES.contains(&ev.name()), "{}", ev.name());
        assert_eq!(ev.data_dir(at.dir), Dir::AtoB, "{} raised {:?}", ev.name(), at.dir);
    }
    for name in ["acked_unseen", "ack_advance", "dup_ack", "sack", "retransmission", "zero_window", "rtt_sample"] {
        assert!(seen.contains(name), "{name} not raised: {seen:?}");
    }
}

/// The class the analysis gave each retransmission and hole fill, in order; the evidence given
/// after each says the same.
fn classes(r: &Rec) -> Vec<(Dir, u64, OosClass)> {
    let classes: Vec<_> = r
        .events
        .iter()
        .filter_map(|(at, e)| match *e {
            Event::Retransmission { class, .. } | Event::OutOfOrder { class, .. } => {
                class.map(|c| (at.dir, at.frame, c))
            }
            _ => None,
        })
        .collect();
    let evidence: Vec<_> = r.evidence.iter().map(|(at, e)| (at.dir, at.frame, e.class)).collect();
    assert_eq!(classes, evidence);
    classes
}

#[test]
fn retransmissions_carry_their_class_and_evidence() {
    // 0 and 100 sent; 0 (not the tail, which would be a tail-loss probe) is resent 271 ms later
    // with no answer (> the 200 ms RTO floor): RTO, the previous copy in frame 4.
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 100, 0, 100, 1000);
    c.a(301.0, ACK, 0, 0, 100, 1000);
    let r = c.run();
    assert_eq!(classes(&r), [(Dir::AtoB, 6, OosClass::Rto)]);
    let why = &r.evidence[0].1;
    assert_eq!(why.seq_off, SeqOff(0));
    assert_eq!((why.prev_frame, why.dup_acks, why.sack_above, why.rtt_source), (Some(4), 0, false, "both halves"));
    assert!((why.since_prev_ns.unwrap() - 271e6).abs() < 1e3, "{why:?}");
    // The half-loops: SYN → SYN-ACK (a's, 10 ms) and SYN-ACK → ACK (b's, 10 ms); the RTO is
    // its 200 ms floor.
    assert_eq!((why.rtt_ns, why.rto_ns), (Some(20e6), 200e6));
}

#[test]
fn handshake_resends_are_syn_timeouts_in_the_direction_that_sent_them() {
    // a's SYN is sent three times (0, 1 s, 3 s); b answers the last, then sends its SYN-ACK again.
    let syn = || [opt::mss(1460), opt::sack_perm()].concat();
    let mut c = Conv::default();
    c.pkt(true, 0.0, SYN, 0, 0, 0, 1000, syn()).pkt(true, 1000.0, SYN, 0, 0, 0, 1000, syn());
    c.pkt(true, 3000.0, SYN, 0, 0, 0, 1000, syn()).pkt(false, 3010.0, SYN | ACK, 0, 0, 0, 2000, syn());
    c.pkt(false, 4010.0, SYN | ACK, 0, 0, 0, 2000, syn()).a(4020.0, ACK, 0, 0, 0, 1000);
    let r = c.run();
    let expect = [
        (Dir::AtoB, 2, OosClass::SynTimeout),
        (Dir::AtoB, 3, OosClass::SynTimeout),
        (Dir::BtoA, 5, OosClass::SynTimeout),
    ];
    assert_eq!(classes(&r), expect);
}

#[test]
fn a_dsack_marks_the_retransmission_it_covers_unneeded() {
    // [0,100) resent at 40 ms after 3 dup ACKs' worth of SACK; b then D-SACKs [0,100).
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 100, 0, 100, 1000);
    let base = ISN_A + 1;
    c.pkt(false, 35.0, ACK, 0, 0, 0, 2000, opt::sack(&[(base + 100, base + 200)]));
    c.a(40.0, ACK, 0, 0, 100, 1000);
    c.pkt(false, 50.0, ACK, 0, 200, 0, 2000, opt::sack(&[(base, base + 100)]));
    let r = c.run();
    assert_eq!(classes(&r), [(Dir::AtoB, 7, OosClass::FastRetransmit)]);
    let unneeded: Vec<_> = r
        .events
        .iter()
        .filter_map(|(at, e)| match e {
            Event::Unneeded { seq_off, resent_frame, was } => Some((at.dir, at.frame, *seq_off, *resent_frame, *was)),
            _ => None,
        })
        .collect();
    assert_eq!(unneeded, [(Dir::AtoB, 8, SeqOff(0), 7, OosClass::FastRetransmit)]);
}

#[test]
fn a_pass_that_does_not_ask_for_classes_gets_none() {
    /// Events only: [`Sink::CLASSIFY`] left false.
    #[derive(Default)]
    struct Plain(Vec<Event>, usize);
    impl Sink for Plain {
        fn event(&mut self, _: &At, ev: &Event) {
            self.0.push(*ev);
        }
        fn evidence(&mut self, _: &At, _: &Evidence) {
            self.1 += 1;
        }
    }
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 100, 0, 100, 1000).a(301.0, ACK, 0, 0, 100, 1000);
    let mut an = Analyzer::new(c.settings, Plain::default());
    for (i, p) in c.pkts.iter().enumerate() {
        let (data, orig) = p.ipv4();
        let rec =
            Record { ts_ns: p.ts_ns, data: &data, orig_len: orig, link_type: 101, frame: i as u64 + 1, offset: 0 };
        an.record(&rec);
    }
    let plain = an.sink;
    let classes: Vec<_> = plain
        .0
        .iter()
        .filter_map(|e| if let Event::Retransmission { class, .. } = e { Some(*class) } else { None })
        .collect();
    assert_eq!((classes, plain.1), (vec![None], 0));
}

#[test]
fn a_transmission_keeps_its_range_frame_and_karn_flag_in_24_bytes() {
    assert_eq!(std::mem::size_of::<Sent>(), 24);
    let (frame, len) = (Sent::MAX_FRAME, Sent::MAX_LEN);
    let mut s = Sent::new(SeqOff(-1), SeqOff(len - 1), 5, frame, false);
    assert_eq!((s.start, s.end(), s.frame(), s.ambiguous(), s.ts_ns), (SeqOff(-1), SeqOff(len - 1), frame, false, 5));
    // Sent again: the last sending replaces the first (never read once ambiguous).
    s.resent(9, 12);
    assert_eq!((s.end(), s.frame(), s.ambiguous(), s.ts_ns), (SeqOff(len - 1), 12, true, 9));
    // Acknowledged in part: the end stays, as do the frame and the flag.
    s.set_start(SeqOff(7));
    assert_eq!((s.start, s.end(), s.frame(), s.ambiguous()), (SeqOff(7), SeqOff(len - 1), 12, true));
    assert!(Sent::new(SeqOff(0), SeqOff(1), 5, 7, true).ambiguous());
    // A frame past what is kept reads as the largest kept.
    assert_eq!(Sent::new(SeqOff(0), SeqOff(1), 5, u64::MAX >> 1, false).frame(), Sent::MAX_FRAME);
}

#[test]
fn a_range_longer_than_any_segment_is_kept_in_pieces() {
    let ranges = |start: i64, end: i64| -> Vec<(i64, i64)> {
        Sent::pieces(SeqOff(start), SeqOff(end), 1, 2, false).map(|s| (s.start.0, s.end().0)).collect()
    };
    let m = Sent::MAX_LEN;
    assert_eq!(ranges(-1, 1448), [(-1, 1448)]);
    assert_eq!(ranges(0, m), [(0, m)]);
    assert_eq!(ranges(0, 2 * m + 5), [(0, m), (m, 2 * m), (2 * m, 2 * m + 5)]);
}

#[test]
fn outstanding_queues_grow_from_one() {
    let mut q = VecDeque::new();
    let mut caps = vec![];
    for i in 0..5u64 {
        push_compact(&mut q, (0u32, i, i));
        caps.push(q.capacity());
    }
    assert_eq!(caps, [1, 2, 4, 4, 8]);
    assert!(q.iter().map(|e| e.1).eq(0..5));
}

#[test]
fn outstanding_state_without_ranges_is_small() {
    use std::mem::size_of;
    // Held by every direction with data in flight, its first two TSvals inline (an 80-byte
    // size class); the range sets in the rare box, only when used.
    assert_eq!([size_of::<Outstanding>(), size_of::<Pending>(), size_of::<HalfRare>()], [80, 16, 32]);
    assert!(Outstanding::default().is_empty());
    assert!(HalfRare::holes(None).is_empty() && HalfRare::sacked(None).is_empty());
    let mut rare = None;
    HalfRare::ranges(&mut rare).holes.insert(SeqOff(0), SeqOff(10));
    assert_eq!(HalfRare::holes(rare.as_deref()).ranges().to_vec(), [(SeqOff(0), SeqOff(10))]);
    assert!(!rare.as_deref().expect("allocated").is_empty());
}

/// A pending TSval's frame is an offset from its queue's base: frames below the base (inputs
/// merged by time) move the base; frames more than 2^32 apart drop the oldest, told.
#[test]
fn pending_tsvals_keep_their_frames() {
    let drain = |o: &mut Outstanding| std::iter::from_fn(|| o.ts_pop()).collect::<Vec<_>>();
    let mut o = Outstanding::default();
    let big = 1u64 << 45;
    assert!(o.ts_push(1, 10, big) && o.ts_push(2, 20, big + 7) && o.ts_push(3, 30, big - 5));
    assert!(o.ts_push(4, 40, big + u32::MAX as u64 - 5));
    assert_eq!(drain(&mut o), [(1, 10, big), (2, 20, big + 7), (3, 30, big - 5), (4, 40, big + u32::MAX as u64 - 5)]);
    // 2^32 + 10 past the first: the first two go, each more than 2^32 frames below it.
    assert!(o.ts_push(1, 10, big) && o.ts_push(2, 20, big + 7) && o.ts_push(3, 30, big + 100));
    assert!(!o.ts_push(4, 40, big + (1 << 32) + 10));
    assert_eq!(drain(&mut o), [(3, 30, big + 100), (4, 40, big + (1 << 32) + 10)]);
}

/// A direction with one or two TSvals awaiting their echo keeps them in its outstanding
/// state's one allocation; a third moves them to the heap.
#[test]
fn outstanding_tsvals_inline_up_to_two() {
    let queues = |n: u32| {
        let mut c = Conv::default();
        c.handshake();
        for i in 0..n {
            c.pkt(true, 30.0 + i as f64, ACK, 100 * i, 0, 100, 1000, opt::ts(100 + i, 7));
        }
        let mut an = Analyzer::new(c.settings, StatsSink::default());
        for (i, p) in c.pkts.iter().enumerate() {
            let (data, orig) = p.ipv4();
            let frame = i as u64 + 1;
            an.record(&Record { ts_ns: p.ts_ns, data: &data, orig_len: orig, link_type: 101, frame, offset: 0 });
        }
        let o = an.connection(0).expect("held").half[0].out.as_deref().expect("in flight");
        (o.unacked.len(), o.ts_pending.len(), o.ts_pending.spilled())
    };
    assert_eq!([queues(2), queues(3)], [(2, 2, false), (3, 3, true)]);
}

/// Every connection open at once holds these (`docs/performance.md`, *concurrent*): a size
/// that grows fails here first.
#[test]
fn per_connection_state_sizes_are_pinned() {
    use std::mem::size_of;
    // The classifier's memory is boxed, allocated only by a pass that classifies; optional
    // offsets are `OptOff`s of 8 bytes.
    assert_eq!([size_of::<Half>(), size_of::<Connection>(), size_of::<classify::Memory>()], [104, 224, 184]);
    // The statistics as a pass keeps them (`stats/kept.rs`: two 248-byte directions, the
    // longest idle time, the pointer to who the connection is): a size class of 512 bytes.
    assert_eq!(size_of::<crate::stats::ConnStats>(), 512);
}

/// A pass that does not classify never allocates the classifier's memory; one that does, for
/// every side that sent.
#[test]
fn classifier_memory_only_when_classifying() {
    fn run<S: Sink>(c: &Conv, sink: S) -> [(bool, bool); 2] {
        let mut an = Analyzer::new(c.settings, sink);
        for (i, p) in c.pkts.iter().enumerate() {
            let (data, orig) = p.ipv4();
            let frame = i as u64 + 1;
            an.record(&Record { ts_ns: p.ts_ns, data: &data, orig_len: orig, link_type: 101, frame, offset: 0 });
        }
        let conn = an.connection(0).expect("held");
        conn.half.each_ref().map(|h| (h.memory.is_some(), h.has(Bits::SYN_SACK)))
    }
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(301.0, ACK, 0, 0, 100, 1000);
    assert_eq!(run(&c, StatsSink::default()), [(false, true), (false, true)]);
    assert_eq!(run(&c, Rec::default()), [(true, true), (true, true)]);
}

/// A connection without losses, SACK blocks or zero windows allocates no rare counters; the
/// first duplicate ACK allocates them in its direction only.
#[test]
fn rare_counters_only_when_counted() {
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).b(40.0, ACK, 0, 100, 0, 2000);
    let r = c.run();
    let s = &r.stats.conns[0];
    assert!(s.dirs().iter().all(|d| d.rare().dup_acks == 0) && !s.rare_allocated(0) && !s.rare_allocated(1));
    c.b(41.0, ACK, 0, 100, 0, 2000);
    let r = c.run();
    let s = &r.stats.conns[0];
    assert_eq!((s.rare_allocated(0), s.dir(1).rare().dup_acks), (false, 1));
}

/// A frame number past what a transmission keeps (2^40) warns once a direction and is kept as
/// the largest kept; the analysis goes on.
#[test]
fn frame_numbers_past_2_40_warn_once() {
    let mut c = Conv::default();
    c.handshake().a(30.0, ACK, 0, 0, 100, 1000).a(31.0, ACK, 100, 0, 100, 1000).b(60.0, ACK, 0, 200, 0, 2000);
    let mut an = Analyzer::new(c.settings, Rec::default());
    for (i, p) in c.pkts.iter().enumerate() {
        let (data, orig) = p.ipv4();
        let frame = (1 << 41) + i as u64;
        an.record(&Record { ts_ns: p.ts_ns, data: &data, orig_len: orig, link_type: 101, frame, offset: 0 });
    }
    let r = an.sink;
    let warned =
        r.events.iter().filter(|(_, e)| matches!(e, Event::AnalysisPartial { what: "frame numbers past 2^40" }));
    // a sent three ranges (its SYN and two segments), b one (its SYN).
    assert_eq!(warned.count(), 2, "one warning a direction");
    let sent_frames: Vec<u64> = r
        .events
        .iter()
        .filter_map(|(_, e)| if let Event::RttSample { sent_frame, .. } = e { Some(*sent_frame) } else { None })
        .collect();
    assert!(!sent_frames.is_empty() && sent_frames.iter().all(|&f| f == Sent::MAX_FRAME), "{sent_frames:?}");
    assert_eq!(dir(&r, 0, Dir::AtoB).unique_bytes, 200);
}

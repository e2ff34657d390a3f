//! The strategies of a pass give one answer.

use std::path::Path;

use super::threads::{SAID_BATCH, pipelined, shard_order};
use super::*;
use crate::analysis::SegmentInfo;
use crate::capture::Record;
use crate::screen::{Rules, ScreenSink};
use crate::testutil::{self, Pkt, flag::*};

/// Short connections between 10.0.0.1 and a few servers, from few client ports so 4-tuples
/// are reused (some soon after closing, some after a pause longer than the expiry), their
/// packets interleaved; written as a pcap in the temporary directory.
fn interleaved_connections(name: &str) -> PathBuf {
    let mut next = testutil::rng(7);
    let mut pkts = Vec::new();
    let mut t = 1_000_000_000_000u64;
    for k in 0..400u32 {
        t += next(300_000_000) + if k % 97 == 96 { 200_000_000_000 } else { 0 };
        let (c, s) = ([10, 0, 0, 1], [10, 0, 1, next(5) as u8]);
        let (cp, sp) = (40_000 + next(30) as u16, 80);
        let (ci, si) = (next(1 << 32) as u32, next(1 << 32) as u32);
        let len = 1 + next(1400) as u16;
        let mut at = t;
        let mut p = |from_c: bool, flags: u8, seq: u32, ack: u32, len: u16| {
            at += 1 + next(200_000_000);
            let (src, dst, sport, dport) = if from_c { (c, s, cp, sp) } else { (s, c, sp, cp) };
            pkts.push(Pkt {
                ts_ns: at,
                src,
                dst,
                sport,
                dport,
                seq,
                ack,
                flags,
                win: 1000,
                len,
                opts: vec![],
                snap: None,
            });
        };
        p(true, SYN, ci, 0, 0);
        p(false, SYN | ACK, si, ci + 1, 0);
        p(true, ACK, ci + 1, si + 1, 0);
        p(true, ACK | PSH, ci + 1, si + 1, len);
        if k.is_multiple_of(5) {
            p(true, ACK | PSH, ci + 1, si + 1, len); // a retransmission
        }
        p(false, ACK, si + 1, ci + 1 + len as u32, 0);
        if !k.is_multiple_of(7) {
            p(true, FIN | ACK, ci + 1 + len as u32, si + 1, 0);
            p(false, FIN | ACK, si + 1, ci + 2 + len as u32, 0);
            p(true, ACK, ci + 2 + len as u32, si + 2, 0);
        }
    }
    // A connection of an endpoint with itself (one 4-tuple key both ways), its packets among
    // the others': their direction must not depend on which packets went through the same
    // flow table in between (one analyzer and the shards disagreed; the pipeline fuzz target).
    let me = [10, 0, 2, 1];
    for (i, flags) in [SYN | ACK, ACK | PSH, ACK, ACK | PSH, ACK].into_iter().enumerate() {
        let len = if flags & PSH != 0 { 10 } else { 0 };
        let (ts_ns, seq) = (1_000_000_000_000 + 7_000_000_000 + i as u64 * 300_000_000, 100 + i as u32 * 10);
        pkts.push(Pkt {
            ts_ns,
            src: me,
            dst: me,
            sport: 5000,
            dport: 5000,
            seq,
            ack: 1,
            flags,
            win: 1000,
            len,
            opts: vec![],
            snap: None,
        });
    }
    pkts.sort_by_key(|p| p.ts_ns);
    // Time going back: two packets two hours ahead, on 4-tuples of their own, in the middle
    // (two, or the reader would take the one for a damaged timestamp, capture.md). Every
    // connection is then silent for over an hour by the trace clock.
    for sport in [9, 10] {
        let mut ahead = pkts[pkts.len() / 2].clone();
        (ahead.ts_ns, ahead.sport) = (ahead.ts_ns + 7_200_000_000_000, sport);
        pkts.insert(pkts.len() / 2, ahead);
    }
    let path = std::env::temp_dir().join(format!("tcpscope-{name}-{}.pcap", std::process::id()));
    std::fs::write(&path, testutil::pcap(&pkts, false, false)).unwrap();
    path
}

/// A pass on one thread.
fn single(path: &Path) -> (FileSummary, StatsSink) {
    let run = Query::new(vec![path.to_path_buf()]).threads(1).run(StatsSink::default, &|_, _| {}).unwrap();
    let mut files = run.files;
    (files.remove(0), run.traces.into_iter().next().unwrap().sink)
}

/// What a pass found, comparably: the file's summary and every connection's statistics.
fn answer(sum: &FileSummary, sink: &StatsSink) -> (String, Vec<String>) {
    (format!("{sum:?}"), sink.conns.iter().map(|c| format!("{c:?}")).collect())
}

#[test]
fn sharding_gives_the_same_answer() {
    let made = interleaved_connections("shards");
    let public = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/public");
    let mut paths = vec![made.clone()];
    match std::fs::read_dir(&public) {
        Ok(entries) => paths.extend(entries.map(|e| e.unwrap().path())),
        Err(_) => eprintln!("skipping the public traces: ../shared/traces/public is absent"),
    }
    for path in &paths {
        // One thread, sweeping for itself; two (a reading thread keeps the sweeps); shards.
        let (sum, one) = single(path);
        let want = answer(&sum, &one);
        let (sum, piped, _) = pipelined(path, 0, Settings::default(), &|_, _| {}, StatsSink::default());
        assert_eq!(answer(&sum, &piped), want, "{}, pipelined", path.display());
        for shards in [2, 3, MAX_SHARDS] {
            let run = Query::new(vec![path.clone()]).threads(shards).run(StatsSink::default, &|_, _| {}).unwrap();
            let joined = run.traces.into_iter().next().unwrap().sink;
            assert_eq!(answer(&run.files[0], &joined), want, "{}, {shards} shards", path.display());
        }
    }
    // The screening results too (a sink of its own thread when pipelined).
    for path in &paths {
        let screen = |threads| {
            let q = Query::new(vec![path.clone()]).threads(threads);
            let run = q.run(|| ScreenSink::new(Rules::default()), &|_, _| {}).unwrap();
            format!("{:?}", run.traces.into_iter().next().unwrap().sink.finish())
        };
        let want = screen(1);
        for shards in [2, MAX_SHARDS] {
            assert_eq!(screen(shards), want, "{}, {shards} shards", path.display());
        }
    }
    // The made trace exercises what the join has to get right.
    let (sum, one) = single(&made);
    assert_eq!(sum.bad_timestamps, 0, "the packets ahead are taken as they are");
    let reused = one.conns.iter().filter(|c| c.info().reuse.is_some()).count();
    assert!(one.conns.len() > 300 && reused > 50, "{} connections, {reused} reusing a 4-tuple", one.conns.len());
    std::fs::remove_file(made).unwrap();
}

#[test]
fn shard_order_merges_by_first_frame() {
    assert_eq!(shard_order(&[vec![1, 5, 6], vec![2, 3, 9], vec![]]), vec![0, 1, 1, 0, 0, 1]);
    assert_eq!(shard_order(&[vec![], vec![]]), Vec::<u8>::new());
}

/// A closed connection silent for longer than the expiry is over, whether or not a sweep
/// came by in between: the next packet on its 4-tuple starts a new connection.
#[test]
fn expiry_does_not_wait_for_a_sweep() {
    let conn = |t: u64, sport: u16, isn: u32| {
        let p = |dt: u64, from_a: bool, flags: u8, seq: u32, ack: u32| {
            let (src, dst, sp, dp) = if from_a {
                ([10, 0, 0, 1], [10, 0, 0, 2], sport, 80)
            } else {
                ([10, 0, 0, 2], [10, 0, 0, 1], 80, sport)
            };
            Pkt {
                ts_ns: t + dt,
                src,
                dst,
                sport: sp,
                dport: dp,
                seq,
                ack,
                flags,
                win: 1000,
                len: 0,
                opts: vec![],
                snap: None,
            }
        };
        vec![
            p(0, true, SYN, isn, 0),
            p(1, false, SYN | ACK, 9, isn + 1),
            p(2, true, FIN | ACK, isn + 1, 10),
            p(3, false, FIN | ACK, 10, isn + 2),
        ]
    };
    let t0 = 1_000_000_000_000u64;
    let later = t0 + EVICT_CLOSED_NS + 5_000_000_000;
    // Alone: no packet between the two connections, so no sweep. With traffic on another
    // 4-tuple every second in between: sweeps.
    let alone: Vec<Pkt> = [conn(t0, 1000, 100), conn(later, 1000, 100)].concat();
    let mut busy = alone.clone();
    busy.extend((1..130).flat_map(|s| conn(t0 + s * 1_000_000_000, 2000 + s as u16, 7)));
    busy.sort_by_key(|p| p.ts_ns);
    for (name, pkts) in [("alone", alone), ("busy", busy)] {
        let mut an = Analyzer::new(Settings::default(), StatsSink::default());
        for p in &pkts {
            let (data, orig) = p.ipv4();
            an.record(&Record { frame: 0, offset: 0, ts_ns: p.ts_ns, link_type: 101, data: &data, orig_len: orig });
        }
        let on_1000: Vec<_> = an.sink.conns.iter().filter(|c| c.info().a.port == 1000).collect();
        assert_eq!(on_1000.len(), 2, "{name}");
        // The same ISN again: only the expiry separates them, so no reuse reason.
        assert_eq!(on_1000[1].info().reuse, None, "{name}");
    }
}

#[test]
fn every_pipeline_gives_the_same_answer() {
    let screen = || ScreenSink::new(Rules::default());
    assert!(screen().own_thread() && !StatsSink::default().own_thread());
    for name in ["randloss-snd.pcap", "loss-rcv.pcap"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(name);
        // Pipelined: three stages for the screen sink (more than one batch of records), two
        // for the statistics sink.
        let run = |threads| {
            let query = Query::new(vec![path.clone()]).threads(threads);
            let (sink, files, _) = query.run_one((StatsSink::default(), screen()), &|_, _| {}).unwrap();
            let sum = &files[0];
            let stats: Vec<String> = sink.0.conns.iter().map(|c| format!("{c:?}")).collect();
            (sum.tcp_packets, stats, serde_json::to_string(&sink.1.finish()).unwrap())
        };
        let (one, piped) = (run(1), run(2));
        assert!(one.0 > SAID_BATCH as u64, "{name}: {} packets", one.0);
        assert_eq!(one, piped, "{name}");
        let (_, stats, _) = pipelined(&path, 0, Settings::default(), &|_, _| {}, StatsSink::default());
        assert_eq!(one.1, stats.conns.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>(), "{name}");
    }
}

/// `--merge` and a window over the same files read them with one merge reader: the same
/// summaries, frames and statistics with no window as with a window holding everything.
#[test]
fn merge_with_and_without_a_window_agree() {
    let paths = paths_of();
    let plain = Query::new(paths.clone()).merge(true).stats(&|_, _| {}).unwrap();
    let everything = Window { length_ns: Some(u64::MAX / 2), ..Window::default() };
    let windowed = Query::new(paths).merge(true).window(everything).stats(&|_, _| {}).unwrap();
    assert_eq!(format!("{:?}", plain.files), format!("{:?}", windowed.files));
    assert_eq!(format!("{:?}", plain.conns), format!("{:?}", windowed.conns));
    assert_eq!(plain.files.len(), 2);
    // Frames are counted within each file, as tshark numbers them on that file.
    #[derive(Default)]
    struct Frames {
        file_of: Vec<usize>,
        last: Vec<u64>,
    }
    impl crate::sink::Sink for Frames {
        fn connection(&mut self, _: crate::analysis::ConnIdx, info: &crate::flow::ConnInfo) {
            self.file_of.push(info.file);
        }
        fn segment(&mut self, s: &SegmentInfo) {
            let f = self.file_of[s.at.conn];
            self.last.resize(self.last.len().max(f + 1), 0);
            self.last[f] = self.last[f].max(s.at.frame);
        }
    }
    let (frames, _, _) = Query::new(paths_of()).merge(true).run_one(Frames::default(), &|_, _| {}).unwrap();
    let packets: Vec<u64> = plain.files.iter().map(|f| f.packets).collect();
    assert_eq!(frames.last, packets);
}

/// A connection's (trace, index) name does not depend on the other inputs of the run, where its
/// run-wide id does: a trace read alone and read after another gives each connection the same
/// name and the same statistics.
#[test]
fn a_connection_is_named_by_its_trace_whatever_else_is_read() {
    let paths = paths_of();
    let alone = Query::new(vec![paths[1].clone()]).stats(&|_, _| {}).unwrap();
    let both = Query::new(paths.clone()).stats(&|_, _| {}).unwrap();
    assert_eq!(both.inputs, paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>());
    let first = both.conns.iter().filter(|c| c.trace() == 0).count();
    assert!(first > 0 && alone.conns.len() == both.conns.len() - first);
    for (a, b) in alone.conns.iter().zip(&both.conns[first..]) {
        assert_eq!(a.conn_id().index, b.conn_id().index);
        assert_eq!((a.conn_id().trace, b.conn_id().trace), (0, 1));
        assert_eq!(alone.inputs[a.trace()], both.inputs[b.trace()]);
        assert_eq!(format!("{:?}", a.dirs()), format!("{:?}", b.dirs()));
    }
    let merged = Query::new(paths.clone()).merge(true).stats(&|_, _| {}).unwrap();
    assert_eq!(merged.inputs, [format!("{} + {}", paths[0].display(), paths[1].display())]);
    assert!(merged.conns.iter().enumerate().all(|(i, c)| c.conn_id() == crate::conn::ConnId { trace: 0, index: i }));
}

fn paths_of() -> Vec<PathBuf> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    vec![data.join("loss-rcv.pcap"), data.join("randloss-snd.pcap")]
}

/// Counts packets and stops after `limit`, or fails there.
struct Stopper {
    seen: u64,
    limit: u64,
    fail: bool,
}

impl crate::sink::Sink for Stopper {
    fn segment(&mut self, _: &SegmentInfo) {
        self.seen += 1;
    }
    fn after_packet(&mut self) -> std::io::Result<bool> {
        if self.seen < self.limit {
            Ok(true)
        } else if self.fail {
            Err(std::io::Error::other("stopped"))
        } else {
            Ok(false)
        }
    }
    fn own_thread(&self) -> bool {
        self.limit % 2 == 1 // odd limits try the three-stage pipeline
    }
}

/// A sink that stops the pass, or fails, does so under every strategy: it is told of no packet
/// after it said so, and its error comes back from the query.
#[test]
fn a_sink_stops_or_fails_the_pass_under_every_strategy() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let path = data.join("randloss-snd.pcap");
    let (all, _) = single(&path);
    assert!(all.tcp_packets > 1000, "{} packets", all.tcp_packets);
    let everything = Window { length_ns: Some(u64::MAX / 2), ..Window::default() };
    for limit in [100, 101] {
        for (name, query) in [
            ("one thread", Query::new(vec![path.clone()]).threads(1)),
            ("pipelined", Query::new(vec![path.clone()]).threads(2)),
            ("a window", Query::new(vec![path.clone()]).window(everything)),
        ] {
            let stop = query.run_one(Stopper { seen: 0, limit, fail: false }, &|_, _| {}).unwrap().0;
            assert_eq!(stop.seen, limit, "{name}");
            let failed = query.run_one(Stopper { seen: 0, limit, fail: true }, &|_, _| {});
            assert_eq!(failed.err().map(|e| e.to_string()), Some("stopped".into()), "{name}, {limit}");
        }
    }
}

/// A connection whose client sends three data segments, one with its checksums right, one as
/// checksum offload leaves them, one damaged (a payload bit flipped): with `--checksums` the
/// damaged one is counted in its direction and the file's `skipped`, and not analysed (its
/// bytes are neither sent nor retransmitted); the offloaded one is analysed. Without, nothing
/// is verified and every segment is analysed. The same under every strategy.
#[test]
fn checksum_errors_are_counted_and_not_analysed() {
    let s = testutil::scripted;
    let pkts = [
        s(true, 0.0, SYN, 0, 0, 0, 65535, vec![]),
        s(false, 10.0, SYN | ACK, 0, 0, 0, 65535, vec![]),
        s(true, 20.0, ACK, 0, 0, 0, 65535, vec![]),
        s(true, 21.0, ACK, 0, 0, 100, 65535, vec![]),
        s(true, 22.0, ACK, 100, 0, 100, 65535, vec![]),
        s(true, 23.0, ACK, 200, 0, 100, 65535, vec![]),
        s(false, 30.0, ACK, 0, 300, 0, 65535, vec![]),
        s(true, 40.0, FIN | ACK, 300, 0, 0, 65535, vec![]),
        s(false, 41.0, FIN | ACK, 0, 301, 0, 65535, vec![]),
    ];
    let mut file = testutil::pcap(&pkts, false, false);
    // Records follow the 24-byte file header, each behind a 16-byte record header.
    let mut at = 24;
    for i in 0..pkts.len() {
        let len = u32::from_le_bytes(file[at + 8..at + 12].try_into().unwrap()) as usize;
        let ip = &mut file[at + 16..at + 16 + len];
        testutil::fill_checksums(ip);
        match i {
            4 => {
                let partial = testutil::pseudo_v4(ip);
                ip[36..38].copy_from_slice(&partial.to_be_bytes());
            }
            5 => ip[50] ^= 1,
            _ => {}
        }
        at += 16 + len;
    }
    let path = std::env::temp_dir().join(format!("tcpscope-checksums-{}.pcap", std::process::id()));
    std::fs::write(&path, &file).unwrap();
    for threads in [1, 2, 4] {
        for checksums in [true, false] {
            let settings = Settings { checksums, ..Settings::default() };
            let run = Query::new(vec![path.clone()]).threads(threads).settings(settings);
            let run = run.run(StatsSink::default, &|_, _| {}).unwrap();
            let sum = &run.files[0];
            let sink = &run.traces[0].sink;
            assert_eq!(sink.conns.len(), 1);
            let [a, b] = &sink.conns[0].dirs();
            if checksums {
                assert_eq!(sum.skipped.get("checksum_error"), Some(&1), "{threads} threads");
                assert_eq!(sum.tcp_packets, 8);
                assert_eq!((a.rare().checksum_errors, a.rare().checksum_offloaded), (Some(1), Some(1)));
                assert_eq!((b.rare().checksum_errors, b.rare().checksum_offloaded), (Some(0), Some(0)));
                // The damaged segment is not analysed: 200 bytes sent, the ACKs of 300 cover
                // bytes never seen.
                assert_eq!((a.packets, a.unique_bytes), (5, 200));
                assert!(a.rare().acked_unseen_bytes > 0);
            } else {
                assert_eq!(sum.skipped.get("checksum_error"), None);
                assert_eq!(
                    (a.rare().checksum_errors, a.rare().checksum_offloaded, b.rare().checksum_errors),
                    (None, None, None)
                );
                assert_eq!((a.packets, a.unique_bytes, a.rare().acked_unseen_bytes), (6, 300, 0));
            }
        }
    }
    std::fs::remove_file(&path).unwrap();
}

/// The `n` shard queries of one input hold, between them, every connection of the full pass
/// with the same statistics: read as a file and as a trace set (a ring's files merged), the
/// cluster's plan (docs/scale.md).
#[test]
fn shard_queries_together_give_the_full_pass() {
    let made = interleaved_connections("shard-queries");
    // Each connection by what names it on every machine: its endpoints and first packet.
    let key = |c: &crate::stats::ConnStats| format!("{} {} {}", c.info().a, c.info().b, c.first_ts_ns());
    let rows = |an: &Analysis| -> Vec<(String, String)> {
        let mut v: Vec<_> = an.conns.iter().map(|c| (key(c), format!("{:?}", c.dirs()))).collect();
        v.sort();
        v
    };
    for merge in [false, true] {
        let q = Query::new(vec![made.clone()]).merge(merge);
        let want = rows(&q.stats(&|_, _| {}).unwrap());
        let mut got = Vec::new();
        let mut sizes = Vec::new();
        for k in 0..3 {
            let part = rows(&q.clone().shard(k, 3).stats(&|_, _| {}).unwrap());
            sizes.push(part.len());
            got.extend(part);
        }
        got.sort();
        assert_eq!(got, want, "merge {merge}");
        assert!(sizes.iter().all(|&n| n > 0 && n < want.len()), "every shard has a share: {sizes:?}");
    }
    std::fs::remove_file(made).unwrap();
}

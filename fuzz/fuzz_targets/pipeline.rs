//! Arbitrary bytes as a capture file, end to end: capture → decode → flow → analysis →
//! statistics, the way `tcpscope stats` runs.
//!
//! Never panics, and payload bytes are conserved per connection direction:
//! `unique_bytes + rexmit_bytes + zero_window_probe_bytes == payload_bytes`. The same segments
//! split by 4-tuple over three analyzers and joined (as `analyze_file_sharded` does over
//! threads) give the same statistics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tcpscope_core::analysis::{Settings, Sink};
use tcpscope_core::capture::CaptureReader;
use tcpscope_core::decode;
use tcpscope_core::flow::FlowKey;
use tcpscope_core::pass::{Analyzer, SweepClock, shard_order};
use tcpscope_core::stats::StatsSink;

const SHARDS: usize = 3;

const MAX_RECORDS: usize = 100_000;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::from_bytes(data.to_vec()) else { return };
    let mut an = Analyzer::new(Settings::default(), StatsSink::default());
    let mut shards: Vec<_> = (0..SHARDS).map(|_| Analyzer::new(Settings::default(), StatsSink::default())).collect();
    let (mut n, mut clock) = (0, SweepClock::default());
    while let Ok(Some(rec)) = reader.next_record() {
        an.record(&rec);
        if let Ok(seg) = decode::decode(rec.link_type, rec.data, rec.orig_len) {
            shards[FlowKey::shard(&seg, SHARDS)].segment_after_sweep(clock.tick(rec.ts_ns), &seg, rec.frame, rec.ts_ns);
        }
        n += 1;
        if n >= MAX_RECORDS {
            break;
        }
    }
    let firsts: Vec<Vec<u64>> = shards.iter().map(|a| a.first_frames().to_vec()).collect();
    let joined = StatsSink::join(shards.into_iter().map(|a| a.sink).collect(), &shard_order(&firsts));
    let text = |s: &StatsSink| s.conns.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>();
    assert_eq!(text(&joined), text(&an.sink), "the shards joined differ from one analyzer");
    assert!(an.summary.tcp_packets <= an.summary.packets);
    assert!(an.sink.conns.len() as u64 <= an.summary.tcp_packets, "more connections than TCP segments");
    for (i, c) in an.sink.conns.iter().enumerate() {
        for (d, s) in c.dirs().iter().enumerate() {
            assert_eq!(
                s.unique_bytes + s.rexmit_bytes + s.rare().zero_window_probe_bytes,
                s.payload_bytes,
                "conn {i} dir {d}: unique {} + rexmit {} + zwp {} != payload {}",
                s.unique_bytes,
                s.rexmit_bytes,
                s.rare().zero_window_probe_bytes,
                s.payload_bytes
            );
        }
    }
});

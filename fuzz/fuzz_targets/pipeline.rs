//! Arbitrary bytes as a capture file, end to end: capture → decode → flow → analysis →
//! statistics, the way `tcpscope stats` runs.
//!
//! Never panics, and payload bytes are conserved per connection direction:
//! `unique_bytes + rexmit_bytes + zero_window_probe_bytes == payload_bytes`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tcpscope_core::analysis::Settings;
use tcpscope_core::capture::CaptureReader;
use tcpscope_core::pass::Analyzer;
use tcpscope_core::stats::StatsSink;

const MAX_RECORDS: usize = 100_000;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::from_bytes(data.to_vec()) else { return };
    let mut an = Analyzer::new(Settings::default(), StatsSink::default());
    let mut n = 0;
    while let Ok(Some(rec)) = reader.next_record() {
        an.record(&rec);
        n += 1;
        if n >= MAX_RECORDS {
            break;
        }
    }
    assert!(an.summary.tcp_packets <= an.summary.packets);
    assert!(an.sink.conns.len() as u64 <= an.summary.tcp_packets, "more connections than TCP segments");
    for (i, c) in an.sink.conns.iter().enumerate() {
        for (d, s) in c.dir.iter().enumerate() {
            assert_eq!(
                s.unique_bytes + s.rexmit_bytes + s.zero_window_probe_bytes,
                s.payload_bytes,
                "conn {i} dir {d}: unique {} + rexmit {} + zwp {} != payload {}",
                s.unique_bytes,
                s.rexmit_bytes,
                s.zero_window_probe_bytes,
                s.payload_bytes
            );
        }
    }
});

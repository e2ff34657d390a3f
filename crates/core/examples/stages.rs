//! Times the engine's stages on one file, each on one thread: reading records, reading and
//! decoding, and analysing already-decoded segments with the statistics sink and with none;
//! then the whole pass as `tcpscope stats` runs it.
//! Usage: `cargo run --release --example stages -- TRACE [ROUNDS]`.

use std::time::Instant;
use tcpscope_core::analysis::{Settings, Sink};
use tcpscope_core::capture::CaptureReader;
use tcpscope_core::decode::{self, Segment};
use tcpscope_core::pass::{Analyzer, Query};
use tcpscope_core::stats::StatsSink;

struct Null;
impl Sink for Null {}

fn analyse<S: Sink>(segs: &[(Segment<'static>, u64, u64)], sink: S) -> (f64, S) {
    let t = Instant::now();
    let mut an = Analyzer::new(Settings::default(), sink);
    for (s, frame, ts) in segs {
        an.segment(s, *frame, *ts);
    }
    (t.elapsed().as_secs_f64() * 1e3, an.sink)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: stages TRACE [ROUNDS]");
    let rounds: usize = args.next().map_or(5, |s| s.parse().expect("rounds"));
    let noprog = |_: u64, _: u64| {};
    let mut segs = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        let mut reader = CaptureReader::open(path.as_ref()).expect("open");
        let mut n = 0u64;
        while let Ok(Some(rec)) = reader.next_record() {
            n += rec.data.len() as u64;
        }
        let read = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let mut reader = CaptureReader::open(path.as_ref()).expect("open");
        segs.clear();
        while let Ok(Some(rec)) = reader.next_record() {
            if let Ok(s) = decode::decode(rec.link_type, rec.data, rec.orig_len) {
                segs.push((s.detach(), rec.frame, rec.ts_ns));
            }
        }
        let decode = t.elapsed().as_secs_f64() * 1e3;
        let (stats, sink) = analyse(&segs, StatsSink::default());
        let (null, _) = analyse(&segs, Null);
        let t = Instant::now();
        let two = Query::new(vec![path.clone().into()]).stats(&noprog).expect("a statistics sink does not fail");
        let piped = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(sink.conns.len(), two.conns.len());
        println!(
            "read {read:6.1} ms  +decode {decode:6.1}  analyse: stats {stats:6.1}  null sink {null:6.1}  whole, as stats runs it {piped:6.1}  ({n})"
        );
    }
}

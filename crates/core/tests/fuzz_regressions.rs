//! Every input the fuzzers found a bug with (`fuzz/regressions/<target>/`) goes through the whole
//! pipeline again: no panic, byte conservation holds, split over analysing threads by 4-tuple
//! it gives the same statistics, and the times `stats` and `screen` show run forward.

use std::path::Path;

use tcpscope_core::analysis::Settings;
use tcpscope_core::capture::CaptureReader;
use tcpscope_core::pass::{Analyzer, Query};
use tcpscope_core::screen::{Rules, ScreenSink};
use tcpscope_core::stats::StatsSink;

#[test]
fn fuzz_regressions_stay_fixed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut n = 0;
    for target in std::fs::read_dir(&root).unwrap() {
        for file in std::fs::read_dir(target.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            let Ok(mut reader) = CaptureReader::from_bytes(bytes) else { continue };
            let mut an = Analyzer::new(Settings::default(), StatsSink::default());
            let mut offsets = Vec::new();
            while let Ok(Some(rec)) = reader.next_record() {
                offsets.push(rec.offset);
                an.record(&rec);
            }
            // Damage skipped is in file order, non-empty unless it cost no decompressed byte,
            // and no record was read from inside it.
            let compressed = reader.compression() != tcpscope_core::capture::Compression::None;
            let mut after = 0;
            for d in reader.damage() {
                let empty_ok = compressed && d.start == d.end;
                assert!(after <= d.start && (d.start < d.end || empty_ok), "{}: {d:?}", path.display());
                assert!(!offsets.iter().any(|&o| o >= d.start && o < d.end), "{}: {d:?}", path.display());
                after = d.end;
            }
            for c in &an.sink.conns {
                for d in &c.dirs() {
                    assert_eq!(
                        d.unique_bytes + d.rexmit_bytes + d.rare().zero_window_probe_bytes,
                        d.payload_bytes,
                        "{}",
                        path.display()
                    );
                }
            }
            let sharded = Query::new(vec![path.clone()]).threads(3).stats(&|_, _| {}).unwrap();
            let text = |conns: &[Box<_>]| conns.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>();
            assert_eq!(text(&sharded.conns), text(&an.sink.conns), "{}: sharded", path.display());
            // The times each output shows run forward (time going back overflowed them).
            for c in &an.sink.conns {
                let [first, last, duration, _] = tcpscope_core::export::json::conn_times(c);
                assert!(first <= last && duration >= 0.0, "{}: {first} to {last}", path.display());
            }
            let rules = Rules::default();
            let run = Query::new(vec![path.clone()])
                .settings(rules.settings(Settings::default()))
                .run(|| ScreenSink::new(rules.clone()), &|_, _| {})
                .unwrap();
            for t in run.traces {
                for c in t.sink.finish() {
                    assert!(c.duration_s >= 0.0, "{}: screen duration {}", path.display(), c.duration_s);
                    assert!(c.events.iter().all(|e| e.time_s >= 0.0), "{}: screen event times", path.display());
                }
            }
            n += 1;
        }
    }
    assert!(n > 0, "no regression inputs found under {}", root.display());
}

//! Times `correlate` in-process on two or more captures, best of ROUNDS (for profiling the
//! engine without the CLI); with `--json`, then writes the document `tcpscope correlate
//! --json` writes (points, directions, events), to check that a change kept the answers.
//! Usage: `cargo run --release --example correlate -- [--json] ROUNDS A B [C ...]`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use tcpscope_core::correlate::{CorrDir, CorrEvent, PointRow, Settings, correlate};

/// As the CLI's `correlate --json` document.
#[derive(Serialize)]
struct Doc<'a> {
    points: Vec<PointRow>,
    directions: &'a [CorrDir],
    events: &'a [CorrEvent],
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.first().is_some_and(|a| a == "--json");
    if json {
        args.remove(0);
    }
    let usage = "usage: correlate [--json] ROUNDS A B [C ...]";
    let rounds: usize = args.first().and_then(|s| s.parse().ok()).expect(usage);
    let paths: Vec<PathBuf> = args[1..].iter().map(PathBuf::from).collect();
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..rounds {
        let t = Instant::now();
        let c = correlate(&paths, &Settings::default()).expect("correlate");
        let s = t.elapsed().as_secs_f64();
        best = best.min(s);
        let n: u64 = c.points.iter().map(|p| p.packets).sum();
        eprintln!("{n} packets, {} lifelines: {s:.3} s ({:.2} M packets/s)", c.lifelines, n as f64 / s / 1e6);
        last = Some(c);
    }
    eprintln!("best {best:.3} s");
    if let (true, Some(c)) = (json, last) {
        let mut out = std::io::stdout().lock();
        let doc = Doc { points: c.point_rows(), directions: &c.dirs, events: &c.events };
        serde_json::to_writer_pretty(&mut out, &doc).expect("write");
        writeln!(out).expect("write");
    }
}

//! Where a zoom answer's time goes, without HTTP: for the zoom levels of `web/bench/zoom.mjs`
//! (the whole connection down by halves), the time to build the time-sequence figure, to
//! serialize it (JSON, and packed as the page asks for it: `fmt=bin`), and to build and
//! serialize the panels (JSON, packed), with the answers' sizes. Each figure is the fastest of five
//! runs on one thread (on a shared machine the fastest run is the closest to its CPU time).
//!
//! `cargo run --release -p tcpscope-view --example zoomcost -- TRACE [WIDTH]`

use std::time::Instant;

use tcpscope_core::analysis::{Dir, Settings};
use tcpscope_view::api::{Viewport, figure_out, panels, panels_json, tsg_figure};
use tcpscope_view::data::Traces;
use tcpscope_view::pack;

fn best<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut out = None;
    let mut ms = f64::MAX;
    for _ in 0..5 {
        let s = Instant::now();
        let v = f();
        ms = ms.min(s.elapsed().as_secs_f64() * 1e3);
        out = Some(v);
    }
    (ms, out.expect("five runs"))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: zoomcost TRACE [WIDTH]");
    let w: u32 = args.next().map_or(1200, |s| s.parse().expect("width"));
    let s = Instant::now();
    let t = Traces::load(vec![path.into()], Settings::default());
    let id = (1..=t.an.conns.len())
        .max_by_key(|&i| (0..2).map(|d| t.an.conns[i - 1].packets(d)).sum::<u64>())
        .expect("a connection");
    println!("load {:.2} s", s.elapsed().as_secs_f64());
    let s = Instant::now();
    let d = t.detail(id).expect("detail");
    println!("open {:.2} s", s.elapsed().as_secs_f64());
    let last = d.last_ns() as f64 / 1e9;
    println!(
        "{:>12} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>9} {:>9} {:>9} {:>9}",
        "span s", "figure", "json", "bin", "pan js", "pan bin", "marks", "fig json", "fig bin", "pan json", "pan bin"
    );
    for k in 0..=20 {
        let span = last / 2f64.powi(k);
        let v =
            Viewport { t0: Some(last / 2.0 - span / 2.0), t1: Some(last / 2.0 + span / 2.0), s0: None, s1: None, w };
        let (fig_ms, f) = best(|| tsg_figure(&d, Dir::AtoB, &v));
        let (ser_ms, body) = best(|| serde_json::to_vec(&figure_out(&d, Dir::AtoB, &f)).expect("json"));
        let (bin_ms, bin) = best(|| pack::figure(&d, Dir::AtoB, &f));
        let (pan_ms, pj) = best(|| serde_json::to_vec(&panels_json(&d, Dir::AtoB, &v)).expect("json"));
        let (pbin_ms, pb) = best(|| pack::panels(&panels(&d, Dir::AtoB, &v)));
        println!(
            "{span:>12.6} {fig_ms:>7.2} {ser_ms:>7.2} {bin_ms:>7.2} {pan_ms:>7.2} {pbin_ms:>7.2} {:>6} {:>9} {:>9} {:>9} {:>9}",
            f.marks.len(),
            body.len(),
            bin.len(),
            pj.len(),
            pb.len()
        );
    }
}

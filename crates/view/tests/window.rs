//! `view --from/--for/--to`: the viewer reads only the window of each trace, as `conns` does,
//! and the details of a connection come from the same window.

use std::path::PathBuf;

use tcpscope_core::analysis::Settings;
use tcpscope_core::capture::{TimeSpec, TraceSet, Window};
use tcpscope_core::pass::Query;
use tcpscope_core::stats::StatsSink;
use tcpscope_view::data::Traces;

fn data(f: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data")).join(f)
}

fn window(from: &str, length_ns: Option<u64>, to: Option<&str>) -> Window {
    Window { from: Some(from.parse::<TimeSpec>().unwrap()), length_ns, to: to.map(|t| t.parse().unwrap()) }
}

/// The zone `view` reads clock times in without `--local`.
const UTC: jiff::tz::TimeZone = jiff::tz::TimeZone::UTC;

#[test]
fn the_viewer_reads_the_window_as_conns_does() {
    // loss-snd.pcap runs from 00:16:10.849758 UTC for 1.72 s.
    let w = window("+0.5s", Some(500_000_000), None);
    let path = data("loss-snd.pcap");
    let t = Traces::load_window(vec![path.clone()], Settings::default(), &w, &UTC);
    let whole = Traces::load(vec![path.clone()], Settings::default());

    // The oracle: the core's windowed pass, as `conns --from +0.5s --for 0.5` runs it.
    let set = TraceSet::open(std::slice::from_ref(&path)).unwrap();
    let (from, to) = w.resolve(set.start_ns().unwrap(), &UTC).unwrap();
    let (stats, files, _) =
        Query::new(vec![path.clone()]).span(from, to).run_one(StatsSink::default(), &|_, _| {}).unwrap();

    assert!(t.an.files[0].error.is_none(), "{:?}", t.an.files[0].error);
    assert_eq!(t.an.files[0].packets, files[0].packets);
    assert!(t.an.files[0].packets > 0 && t.an.files[0].packets < whole.an.files[0].packets);
    assert_eq!(t.an.conns.len(), stats.conns.len());
    for (a, b) in t.an.conns.iter().zip(&stats.conns) {
        assert_eq!(a.dir(0).packets, b.dir(0).packets);
        assert_eq!(a.dir(1).packets, b.dir(1).packets);
        assert_eq!(a.dir(0).rexmit_packets, b.dir(0).rexmit_packets);
    }
    assert_eq!(t.screens.len(), t.an.conns.len());

    // The details pass reads the same window: every packet in it, none outside.
    let d = t.detail(1).unwrap();
    let c = &t.an.conns[0];
    assert_eq!(d.ladder.segs.len() as u64, c.dir(0).packets + c.dir(1).packets);
    assert!(d.t0_ns() >= from && d.t0_ns() + d.last_ns() < to);
    assert!(d.ladder.segs.len() < whole.detail(1).unwrap().ladder.segs.len());
}

#[test]
fn absolute_times_and_to_bound_the_window() {
    let path = data("loss-snd.pcap");
    let w = window("2026-11-22T00:16:11Z", None, Some("2026-11-22T00:16:11.5Z"));
    let t = Traces::load_window(vec![path], Settings::default(), &w, &UTC);
    let d = t.detail(1).unwrap();
    let (from, to) = (1_795_306_571_000_000_000u64, 1_795_306_571_500_000_000u64);
    assert!(d.t0_ns() >= from, "{} < {from}", d.t0_ns());
    assert!(d.t0_ns() + d.last_ns() < to);
}

#[test]
fn an_empty_window_is_an_error_naming_where_the_trace_is() {
    let w = window("+10s", Some(1_000_000_000), None);
    let t = Traces::load_window(vec![data("loss-snd.pcap"), data("clean-snd.pcap")], Settings::default(), &w, &UTC);
    let e = t.an.files[0].error.as_deref().unwrap_or_default();
    assert!(e.contains("no packets from") && e.contains("first packet is at"), "{e}");
    assert!(t.an.conns.is_empty());
    assert!(t.an.nothing_read());

    let backwards = window("+1s", None, Some("+0.5s"));
    let t = Traces::load_window(vec![data("loss-snd.pcap")], Settings::default(), &backwards, &UTC);
    let e = t.an.files[0].error.as_deref().unwrap_or_default();
    assert!(e.contains("empty time window"), "{e}");
}

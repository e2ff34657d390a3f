//! The viewer's HTTP API on the project's recorded traces: answers bounded by the viewport,
//! full detail when zoomed in, only its own routes, the Host and token checks.
//!
//! Requests are written by hand on a TCP socket: a client library would normalise the path
//! tricks (`/../`) that these tests must send as they are.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tcpscope_core::analysis::Settings;
use tcpscope_view::data::Traces;
use tcpscope_view::{Options, Server};

fn data(f: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data")).join(f)
}

fn start(bind: IpAddr) -> Server {
    let t = Traces::load(vec![data("loss-snd.pcap"), data("zerowin-snd.pcap")], Settings::default());
    Server::start(Arc::new(t), &Options { bind, port: 0 }).expect("server starts")
}

/// Sends a raw request and returns the status and body.
fn raw(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(request.as_bytes()).expect("write");
    let mut buf = String::new();
    s.read_to_string(&mut buf).expect("read");
    let status = buf.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn get_host(addr: SocketAddr, path: &str, host: &str) -> (u16, String) {
    // HTTP/1.0: the answer comes unchunked, as it is.
    raw(addr, &format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n"))
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    get_host(addr, path, &format!("127.0.0.1:{}", addr.port()))
}

fn json(addr: SocketAddr, path: &str) -> Value {
    let (status, body) = get(addr, path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).expect("JSON")
}

fn marks<'a>(fig: &'a Value, class: &str) -> Vec<&'a Value> {
    fig["marks"].as_array().unwrap().iter().filter(|m| m["c"] == class).collect()
}

fn count(ms: &[&Value]) -> u64 {
    ms.iter().map(|m| m["n"].as_u64().unwrap()).sum()
}

/// Zoomed out to 50 columns, the 740 packets of the loss trace's sender become at most one
/// mark per column; every packet is still counted in some mark, and none of the 12
/// retransmissions (10 dropped segments, two of them dropped twice: tests/data/loss.truth.json)
/// is merged away.
#[test]
fn zoomed_out_answer_is_bounded_by_columns_and_keeps_every_retransmission() {
    let s = start(IpAddr::from([127, 0, 0, 1]));
    let conns = json(s.addr, "/api/conns");
    let c = &conns["conns"][0];
    let w = 50;
    let fig = json(s.addr, &format!("/api/tsg?conn=1&dir=a2b&w={w}"));
    let agg = marks(&fig, "seg agg");
    assert!(!agg.is_empty() && agg.len() <= w, "{} aggregates", agg.len());
    let rexmit = marks(&fig, "seg rexmit");
    assert_eq!(rexmit.len(), 12);
    // Every packet of the direction is in exactly one segment mark (the statistics pass counts
    // them independently).
    let seg: Vec<&Value> = fig["marks"].as_array().unwrap().iter().filter(|m| m["c"].as_str().unwrap().starts_with("seg")).collect();
    assert_eq!(count(&seg), c["a2b"]["packets"].as_u64().unwrap());
    // The ack and window lines step at most once per column.
    assert!(marks(&fig, "ack step agg").len() <= w && marks(&fig, "win step agg").len() <= w);
    assert!(marks(&fig, "ack step").is_empty(), "no per-packet ack steps when aggregated");
    // The panels too: no series longer than twice the columns.
    let p = json(s.addr, &format!("/api/panels?conn=1&dir=a2b&w={w}"));
    for k in ["tput_bps", "goodput_bps", "rtt_ms", "rtt_karn_ms", "flight_bytes", "window_bytes", "cwnd_bytes"] {
        assert!(p[k]["t"].as_array().unwrap().len() <= 2 * w, "{k}");
    }
    // Throughput × group duration, summed over the groups, is every payload byte sent; goodput
    // the bytes sent for the first time (the statistics pass counts both independently).
    let bytes = |k: &str| {
        let t: Vec<f64> = p[k]["t"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let v: Vec<f64> = p[k]["hi"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        t.windows(2).zip(&v).map(|(t, v)| v * (t[1] - t[0]) / 8.0).sum::<f64>().round() as u64
    };
    assert_eq!(bytes("tput_bps"), c["a2b"]["payload_bytes"].as_u64().unwrap());
    assert_eq!(bytes("goodput_bps"), c["a2b"]["unique_bytes"].as_u64().unwrap());
    s.stop();
}

/// Zoomed in around the first loss (byte 43440 dropped, recovered at 0.082 s), every packet is
/// its own mark, and hovering it gives its packet-listing row and events.
#[test]
fn zoomed_in_answer_has_every_packet_with_its_row() {
    let s = start(IpAddr::from([127, 0, 0, 1]));
    let fig = json(s.addr, "/api/tsg?conn=1&dir=a2b&t0=0.07&t1=0.09&w=1000");
    assert!(fig["marks"].as_array().unwrap().iter().all(|m| !m["c"].as_str().unwrap().contains("agg")));
    let rx = marks(&fig, "seg rexmit");
    assert_eq!(rx.len(), 1);
    let frame = rx[0]["f"].as_u64().unwrap();
    let row = json(s.addr, &format!("/api/packet?conn=1&frame={frame}"));
    assert_eq!(row["seq"], 43440, "the dropped byte's segment");
    assert_eq!(row["len"], 1448);
    assert_eq!(row["dir"], "a2b");
    assert!(row["events"].as_array().unwrap().iter().any(|e| e["kind"] == "retransmission"));
    // The zero-window trace's events list its 119 zero windows (tests/data/zerowin.truth.json).
    let ev = json(s.addr, "/api/events?conn=2");
    let zw = ev["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "zero_window").count();
    assert_eq!(zw, 119);
    s.stop();
}

#[test]
fn only_its_routes_answer() {
    let s = start(IpAddr::from([127, 0, 0, 1]));
    for p in ["/../../etc/passwd", "/api/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/tests/data/loss-snd.pcap", "/api/file?path=/etc/passwd", "/api/conns/x"] {
        assert_eq!(get(s.addr, p).0, 404, "{p}");
    }
    for p in ["/api/tsg?conn=99", "/api/tsg?conn=0", "/api/packet?conn=1"] {
        let (st, _) = get(s.addr, p);
        assert!(st == 404 || st == 400, "{p}: {st}");
    }
    assert_eq!(get(s.addr, "/api/tsg?conn=1&dir=x").0, 400);
    assert_eq!(get(s.addr, "/api/tsg?conn=1&t0=NaN").0, 400);
    let post = format!("POST /api/conns HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", s.addr.port());
    assert_eq!(raw(s.addr, &post).0, 405);
    let (st, page) = get(s.addr, "/");
    assert_eq!(st, 200);
    assert!(page.contains("<canvas") || page.contains("tcpscope"));
    s.stop();
}

/// DNS rebinding: a page on another site that resolves its name to 127.0.0.1 sends its own
/// Host header; the loopback server answers only its own addresses.
#[test]
fn loopback_server_rejects_foreign_host_headers() {
    let s = start(IpAddr::from([127, 0, 0, 1]));
    assert_eq!(get_host(s.addr, "/api/conns", "evil.example:80").0, 403);
    assert_eq!(get_host(s.addr, "/api/conns", &format!("localhost:{}", s.addr.port())).0, 200);
    assert_eq!(raw(s.addr, "GET /api/conns HTTP/1.0\r\n\r\n").0, 403, "no Host header");
    s.stop();
}

#[test]
fn non_loopback_server_requires_the_token() {
    let s = start(IpAddr::from([0, 0, 0, 0]));
    let token = s.url.trim_end_matches('/').rsplit('/').next().unwrap().to_string();
    assert_eq!(token.len(), 32, "{}", s.url);
    let addr = SocketAddr::new(IpAddr::from([127, 0, 0, 1]), s.addr.port());
    assert_eq!(get(addr, "/api/conns").0, 404);
    assert_eq!(get(addr, "/").0, 404);
    assert_eq!(get(addr, &format!("/{}/api/conns", "0".repeat(32))).0, 404);
    assert_eq!(get(addr, &format!("/{token}x/api/conns")).0, 404);
    assert_eq!(get(addr, &format!("/{token}/api/conns")).0, 200);
    assert_eq!(get(addr, &format!("/{token}/")).0, 200);
    s.stop();
}

/// A ring directory named on the command line is one trace, read whole: the same connections,
/// screening and details as the capture it was cut from.
#[test]
fn a_ring_directory_is_one_trace() {
    let dir = std::env::temp_dir().join(format!("tcpscope-view-ring-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(data("loss-snd.pcap"), dir.join("loss-snd.pcap")).unwrap();
    let ring = Traces::load(vec![data("zerowin-snd.pcap"), dir.clone()], Settings::default());
    let files = Traces::load(vec![data("zerowin-snd.pcap"), data("loss-snd.pcap")], Settings::default());
    assert_eq!(ring.an.files[1].path, dir);
    assert_eq!(ring.an.files[1].packets, files.an.files[1].packets);
    assert_eq!(ring.an.conns.len(), 2);
    assert_eq!(ring.an.conns[1].info.file, 1);
    assert_eq!(ring.an.conns[1].dir[0].rexmit_packets, files.an.conns[1].dir[0].rexmit_packets);
    assert_eq!(ring.screens[1].verdict, files.screens[1].verdict);
    let (a, b) = (ring.detail(2).unwrap(), files.detail(2).unwrap());
    assert_eq!(a.packets.len(), b.packets.len());
    assert_eq!(a.tsg[0].segments.len(), b.tsg[0].segments.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

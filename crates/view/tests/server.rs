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
    let seg: Vec<&Value> =
        fig["marks"].as_array().unwrap().iter().filter(|m| m["c"].as_str().unwrap().starts_with("seg")).collect();
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
    // Zero windows are advertised by the receiver (b2a) about the sender's data (a2b): the page
    // jumps to the plot of `data_dir`.
    let rows = ev["events"].as_array().unwrap();
    assert!(rows.iter().filter(|e| e["kind"] == "zero_window").all(|e| e["dir"] == "b2a" && e["data_dir"] == "a2b"));
    assert!(rows.iter().filter(|e| e["kind"] == "zero_window_probe").all(|e| e["data_dir"] == "a2b"));
    s.stop();
}

#[test]
fn only_its_routes_answer() {
    let s = start(IpAddr::from([127, 0, 0, 1]));
    for p in [
        "/../../etc/passwd",
        "/api/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/tests/data/loss-snd.pcap",
        "/api/file?path=/etc/passwd",
        "/api/conns/x",
    ] {
        assert_eq!(get(s.addr, p).0, 404, "{p}");
    }
    for p in ["/api/tsg?conn=99", "/api/tsg?conn=0", "/api/packet?conn=1"] {
        let (st, _) = get(s.addr, p);
        assert!(st == 404 || st == 400, "{p}: {st}");
    }
    assert_eq!(get(s.addr, "/api/tsg?conn=1&dir=x").0, 400);
    assert_eq!(get(s.addr, "/api/tsg?conn=1&t0=NaN").0, 400);
    let post = format!(
        "POST /api/conns HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        s.addr.port()
    );
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
    assert_eq!(ring.an.conns[1].info().file, 1);
    assert_eq!(ring.an.conns[1].dir(0).rexmit_packets, files.an.conns[1].dir(0).rexmit_packets);
    assert_eq!(ring.screens[1].verdict, files.screens[1].verdict);
    let (a, b) = (ring.detail(2).unwrap(), files.detail(2).unwrap());
    assert_eq!(a.ladder.segs.len(), b.ladder.segs.len());
    assert_eq!(a.tsg[0].segments.len(), b.tsg[0].segments.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The body of a `GET` as bytes (the packed answers are binary).
fn get_bytes(addr: SocketAddr, path: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n", addr.port()).as_bytes()).expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let i = buf.windows(4).position(|w| w == b"\r\n\r\n").expect("headers end");
    assert!(buf.starts_with(b"HTTP/1.0 200") || buf.starts_with(b"HTTP/1.1 200"), "{path}");
    buf.split_off(i + 4)
}

/// Whether a packed coordinate (an f32 offset from `origin`) is the JSON answer's number.
fn close(got: f64, want: f64, origin: f64) -> bool {
    (got - want).abs() <= 1.2e-7 * (want - origin).abs() + 1e-12
}

/// The packed answers (`fmt=bin`, what the page reads) hold the same marks and series as the
/// JSON answers, mark for mark and primitive for primitive, coordinates to f32 precision of
/// their offset from the view's origin; zoomed out, in, and to a sequence range.
#[test]
fn packed_answers_decode_to_the_json_answers() {
    use tcpscope_view::pack::{unpack, values};
    let s = start(IpAddr::from([127, 0, 0, 1]));
    let ops = ["l", "a", "t", "d", "b", "o", "p", "r", "x"];
    let mut seen_ops = std::collections::BTreeSet::new();
    for q in [
        "conn=1&dir=a2b&w=50",
        "conn=1&dir=a2b&w=1200",
        "conn=1&dir=b2a&w=1200",
        "conn=1&dir=a2b&t0=0.07&t1=0.09&w=1000",
        "conn=1&dir=a2b&t0=0.07&t1=0.09&s0=40000&s1=60000&w=700",
        "conn=2&dir=a2b&w=800",
        "conn=2&dir=b2a&t0=1&t1=3&w=800",
    ] {
        let js = json(s.addr, &format!("/api/tsg?{q}"));
        let bin = get_bytes(s.addr, &format!("/api/tsg?{q}&fmt=bin"));
        let (h, a) = unpack(&bin).expect("a packed answer");
        for k in ["title", "x", "y", "legend", "remarks", "dir", "last", "error"] {
            assert_eq!(h[k], js[k], "{q}: {k}");
        }
        let (ox, oy) = (h["ox"].as_f64().unwrap(), h["oy"].as_f64().unwrap());
        let table =
            |k: &str| h[k].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect::<Vec<_>>();
        let (classes, colors, texts) = (table("classes"), table("colors"), table("texts"));
        let arr = |k: &str| values(&a[k]);
        let (cls, frame, count, mprim) = (arr("mark_class"), arr("mark_frame"), arr("mark_count"), arr("mark_prim"));
        let (op, color, extra, pxy, xy) =
            (arr("prim_op"), arr("prim_color"), arr("prim_extra"), arr("prim_xy"), arr("xy"));
        let marks = js["marks"].as_array().unwrap();
        assert_eq!(cls.len(), marks.len(), "{q}");
        for (i, m) in marks.iter().enumerate() {
            assert_eq!(classes[cls[i] as usize], m["c"].as_str().unwrap(), "{q}: mark {i}");
            assert_eq!(
                if frame[i].is_nan() { Value::Null } else { Value::from(frame[i] as u64) },
                m["f"],
                "{q}: mark {i}"
            );
            assert_eq!(count[i] as u64, m["n"].as_u64().unwrap());
            let prims = m["p"].as_array().unwrap();
            assert_eq!((mprim[i + 1] - mprim[i]) as usize, prims.len(), "{q}: mark {i}");
            for (k, p) in prims.iter().enumerate() {
                let j = mprim[i] as usize + k;
                let p = p.as_array().unwrap();
                let o = ops[op[j] as usize];
                seen_ops.insert(o);
                assert_eq!(p[0], o, "{q}: mark {i}");
                assert_eq!(colors[color[j] as usize], p[1].as_str().unwrap());
                let c = &xy[pxy[j] as usize..pxy[j + 1] as usize];
                let nums: Vec<f64> = p[2..].iter().filter_map(|v| v.as_f64()).collect();
                let words: Vec<&str> = p[2..].iter().filter_map(|v| v.as_str()).collect();
                match o {
                    "a" | "t" => assert_eq!(words, [["u", "d", "h"][extra[j] as usize]]),
                    "x" => {
                        assert_eq!(
                            words,
                            [["a", "b", "l", "r", "c"][extra[j] as usize], texts[c[2] as usize].as_str()]
                        );
                    }
                    _ => assert!(words.is_empty()),
                }
                for (n, want) in nums.iter().enumerate() {
                    let origin = if n % 2 == 0 { ox } else { oy };
                    assert!(close(c[n] + origin, *want, origin), "{q}: mark {i} prim {k}: {} vs {want}", c[n] + origin);
                }
            }
        }
        // The panels of the same view.
        let pj = json(s.addr, &format!("/api/panels?{q}"));
        let pbin = get_bytes(s.addr, &format!("/api/panels?{q}&fmt=bin"));
        let (ph, pa) = unpack(&pbin).expect("packed panels");
        assert_eq!(ph["t"], pj["t"]);
        assert_eq!(ph["window_scaled"], pj["window_scaled"]);
        let ot = ph["ot"].as_f64().unwrap();
        for (name, agg) in ph["series"].as_object().unwrap() {
            assert_eq!(*agg, pj[name]["agg"], "{name}");
            let want =
                |k: &str| pj[name][k].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>();
            let t = values(&pa[&format!("{name}.t")]);
            let lo = values(&pa[&format!("{name}.lo")]);
            let hi = pa.get(&format!("{name}.hi")).map_or_else(|| lo.clone(), values);
            assert_eq!(t.len(), want("t").len(), "{q}: {name}");
            for (got, w) in t.iter().zip(want("t")) {
                assert!(close(got + ot, w, ot), "{q}: {name}: t {} vs {w}", got + ot);
            }
            for (k, got) in [("lo", &lo), ("hi", &hi)] {
                for (g, w) in got.iter().zip(want(k)) {
                    assert!(close(*g, w, 0.0), "{q}: {name}: {k} {g} vs {w}");
                }
            }
        }
    }
    // The recorded traces draw lines, arrowheads, ticks and letters at least.
    for o in ["l", "a", "t", "x"] {
        assert!(seen_ops.contains(o), "{o} not exercised: {seen_ops:?}");
    }
    s.stop();
}

/// Every answer asks the client to close its connection (`Connection: close`; browsers do): a
/// connection kept alive held one of tiny_http's threads, and several opened at once could then
/// queue one behind them for ever (see `send_with` in lib.rs). The length is exact, so the
/// client knows where the answer ends.
#[test]
fn answers_ask_to_close_their_connection() {
    let s = start(IpAddr::from([127, 0, 0, 1]));
    for path in ["/api/conns", "/api/tsg?conn=1&w=50&fmt=bin", "/nowhere", "/", ""] {
        let mut c = TcpStream::connect(s.addr).expect("connect");
        c.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        let req =
            format!("GET /{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n", path.trim_start_matches('/'), s.addr.port());
        c.write_all(req.as_bytes()).expect("write");
        let mut buf = Vec::new();
        let mut chunk = [0u8; 65536];
        let (head, len) = loop {
            let n = c.read(&mut chunk).expect("read");
            assert!(n > 0, "{path}: closed before the headers");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..i]).to_string();
                let len: usize =
                    head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).expect("length").parse().unwrap();
                break (head, i + 4 + len);
            }
        };
        while buf.len() < len {
            let n = c.read(&mut chunk).expect("read");
            assert!(n > 0, "{path}: closed before the body's end");
            buf.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(buf.len(), len, "{path}: nothing after the answer");
        assert!(head.starts_with("HTTP/1.1 "), "{path}: {head}");
        assert!(head.contains("\r\nConnection: close"), "{path}: {head}");
    }
    s.stop();
}

/// The list as the page asks for it: filtered, sorted and paged on the server. Every page of
/// every query, put together, is the list the test builds itself from the whole one (the rules
/// of docs/viewer.md: boring rows out unless asked for, the filter anywhere in "id endpoints
/// state verdict file" in any case, nulls last, ties by id).
#[test]
fn the_list_is_filtered_sorted_and_paged_on_the_server() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    files.sort();
    // And connections with nothing to say for most statistics (`null`s, sorted last): SYNs that
    // were never answered.
    let unanswered = std::env::temp_dir().join(format!("tcpscope-unanswered-{}.pcap", std::process::id()));
    std::fs::write(&unanswered, unanswered_syns(3)).unwrap();
    files.push(unanswered.clone());
    let files = [files.clone(), files].concat();
    let s = Server::start(
        Arc::new(Traces::load(files, Settings::default())),
        &Options { bind: IpAddr::from([127, 0, 0, 1]), port: 0 },
    )
    .unwrap();
    let all = json(s.addr, "/api/conns")["conns"].as_array().unwrap().clone();
    std::fs::remove_file(&unanswered).unwrap();
    assert!(all.len() > 20, "{} connections", all.len());
    assert!(
        all.iter().any(|c| c["b2a"]["rtt_avg_ms"].is_null()) && all.iter().any(|c| !c["b2a"]["rtt_avg_ms"].is_null())
    );
    let endpoints = |c: &Value| {
        format!(
            "{}:{} → {}:{}",
            c["a"]["addr"].as_str().unwrap(),
            c["a"]["port"],
            c["b"]["addr"].as_str().unwrap(),
            c["b"]["port"]
        )
    };
    let value = |c: &Value, key: &str| -> Value {
        match key {
            "endpoints" => Value::from(endpoints(c)),
            // Both directions summed (issue 17: the list's rexmit column showed the sum and
            // sorted by a2b).
            _ if key.starts_with("both.") => {
                let n = &key[5..];
                Value::from(c["a2b"][n].as_u64().unwrap() + c["b2a"][n].as_u64().unwrap())
            }
            _ => key.split('.').fold(c.clone(), |v, k| v[k].clone()),
        }
    };
    let check = |query: &str, sort: &str, desc: bool, filter: &str, boring: bool| {
        let f = filter.to_lowercase();
        let mut want: Vec<&Value> = all
            .iter()
            .filter(|c| boring || c["boring"] != true)
            .filter(|c| {
                format!(
                    "{} {} {} {} {}",
                    c["id"],
                    endpoints(c),
                    c["state"].as_str().unwrap(),
                    c["verdict"].as_str().unwrap_or(""),
                    c["file"].as_str().unwrap()
                )
                .to_lowercase()
                .contains(&f)
            })
            .collect();
        want.sort_by(|x, y| {
            let (a, b) = (value(x, sort), value(y, sort));
            let o = match (a.is_null(), b.is_null()) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                _ => {
                    let o = match (a.as_f64(), b.as_f64()) {
                        (Some(a), Some(b)) => a.partial_cmp(&b).unwrap(),
                        _ => a.as_str().unwrap().cmp(b.as_str().unwrap()),
                    };
                    if desc { o.reverse() } else { o }
                }
            };
            o.then(x["id"].as_u64().cmp(&y["id"].as_u64()))
        });
        let want: Vec<u64> = want.iter().map(|c| c["id"].as_u64().unwrap()).collect();
        let mut got = Vec::new();
        loop {
            let p = json(s.addr, &format!("/api/conns?{query}&from={}&n=7", got.len()));
            assert_eq!(p["total"], all.len(), "{query}");
            assert_eq!(p["matched"], want.len(), "{query}");
            let rows = p["conns"].as_array().unwrap();
            if rows.is_empty() {
                break;
            }
            assert!(rows.len() <= 7);
            got.extend(rows.iter().map(|c| c["id"].as_u64().unwrap()));
        }
        assert_eq!(got, want, "{query}");
        want.len()
    };
    assert_eq!(check("sort=id&desc=0&boring=1", "id", false, "", true), all.len());
    let boring = all.iter().filter(|c| c["boring"] == true).count();
    assert_eq!(check("sort=id&desc=0", "id", false, "", false), all.len() - boring, "boring rows left out");
    check("sort=a2b.rexmit_packets&desc=1&boring=1", "a2b.rexmit_packets", true, "", true);
    check("sort=b2a.rtt_avg_ms&desc=0&boring=1", "b2a.rtt_avg_ms", false, "", true);
    for k in tcpscope_view::list::BOTH_KEYS {
        check(&format!("sort={k}&desc=1&boring=1"), k, true, "", true);
        check(&format!("sort={k}&desc=0&boring=1"), k, false, "", true);
    }
    check("sort=severity&desc=1", "severity", true, "", false);
    check("sort=endpoints&desc=0&boring=1", "endpoints", false, "", true);
    check("sort=verdict&desc=1&boring=1", "verdict", true, "", true);
    assert!(check("sort=duration_s&desc=1&boring=1&q=ZeroWin-SND", "duration_s", true, "ZeroWin-SND", true) >= 2);
    assert_eq!(check("q=no%20such%20host", "severity", true, "no such host", false), 0);
    // Bounded: rows beyond the list are none, a page at most MAX_ROWS.
    let p = json(s.addr, "/api/conns?sort=id&from=100000&n=5");
    assert!(p["conns"].as_array().unwrap().is_empty() && p["from"] == p["matched"]);
    assert!(
        json(s.addr, "/api/conns?sort=id&boring=1&n=100000")["conns"].as_array().unwrap().len()
            <= tcpscope_view::list::MAX_ROWS
    );
    // The sort keys answered are the ones accepted; flags and unknown keys are not.
    let keys = json(s.addr, "/api/conns?n=0")["keys"].as_array().unwrap().clone();
    assert!(keys.len() > 100 && keys.contains(&Value::from("b2a.rtt_avg_ms")));
    for k in &keys {
        assert_eq!(get(s.addr, &format!("/api/conns?n=1&sort={}", k.as_str().unwrap())).0, 200, "{k}");
    }
    for bad in ["sort=a2b.sack_permitted", "sort=nonsense", "sort=a2b.nonsense", "desc=maybe", "from=-1", "n=x"] {
        assert_eq!(get(s.addr, &format!("/api/conns?{bad}")).0, 400, "{bad}");
    }
    s.stop();
}

/// A pcap (µs, Ethernet) of `n` SYNs from 10.0.0.1 to 10.0.0.2:80, each from its own port and
/// never answered.
fn unanswered_syns(n: u16) -> Vec<u8> {
    let mut out = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0];
    for i in 0..n {
        let mut f = vec![0u8; 12];
        f.extend([0x08, 0x00]);
        // IPv4, 20 bytes, total length 40, TTL 64, TCP; checksum left 0 (not checked).
        f.extend([0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        let port = 40000 + i;
        f.extend(port.to_be_bytes());
        f.extend(80u16.to_be_bytes());
        f.extend((1000u32 + i as u32).to_be_bytes());
        f.extend([0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
        let len = f.len() as u32;
        out.extend((1_700_000_000u32 + i as u32).to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend(len.to_le_bytes());
        out.extend(len.to_le_bytes());
        out.extend(f);
    }
    out
}

/// The report reads the details of all its plotted connections of a file in one pass: the same
/// details, mark for mark and event for event, as one pass each.
#[test]
fn details_read_together_are_the_ones_read_one_by_one() {
    // One file of two connections: the zero-window trace's records after the loss trace's.
    let (a, b) = (std::fs::read(data("loss-snd.pcap")).unwrap(), std::fs::read(data("zerowin-snd.pcap")).unwrap());
    assert_eq!(a[..24], b[..24], "same link type and snap length");
    let both = std::env::temp_dir().join(format!("tcpscope-two-{}.pcap", std::process::id()));
    std::fs::write(&both, [&a[..], &b[24..]].concat()).unwrap();
    let load = || Traces::load(vec![both.clone(), data("clean-snd.pcap")], Settings::default());
    let (together, alone) = (load(), load());
    assert_eq!(together.an.conns.len(), 3);
    together.prefetch(&[2, 1, 3, 2]).unwrap();
    let v = tcpscope_view::api::Viewport { w: 300, ..Default::default() };
    for id in 1..=3 {
        let (t, o) = (together.detail(id).unwrap(), alone.detail(id).unwrap());
        assert!(t.ladder.segs.len() > 100, "connection {id}: {} packets", t.ladder.segs.len());
        assert_eq!(tcpscope_view::api::events_json(&t), tcpscope_view::api::events_json(&o), "connection {id}");
        for dir in [tcpscope_core::analysis::Dir::AtoB, tcpscope_core::analysis::Dir::BtoA] {
            let fig = |d: &tcpscope_view::data::Detail| {
                serde_json::to_value(tcpscope_view::api::figure_out(
                    d,
                    dir,
                    &tcpscope_view::api::tsg_figure(d, dir, &v),
                ))
                .unwrap()
            };
            assert_eq!(fig(&t), fig(&o), "connection {id}");
            assert_eq!(
                tcpscope_view::api::panels_json(&t, dir, &v),
                tcpscope_view::api::panels_json(&o, dir, &v),
                "connection {id}"
            );
        }
    }
    std::fs::remove_file(&both).ok();
}

/// The list says which keys sort ascending on a first click, and a report's rows carry their
/// place in screen's ranking, which the page's severity order follows (not a copy of the rule).
#[test]
fn the_list_and_the_report_carry_the_servers_rules() {
    let s = start(IpAddr::from([127, 0, 0, 1]));
    let page = json(s.addr, "/api/conns?sort=severity&desc=1&boring=1&from=0&n=100");
    let asc: Vec<&str> = page["ascending_keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(asc, ["id", "endpoints", "state", "verdict", "file"]);
    let live: Vec<u64> = page["conns"].as_array().unwrap().iter().map(|c| c["id"].as_u64().unwrap()).collect();
    s.stop();

    let t = tcpscope_view::data::Traces::load(
        vec![data("loss-snd.pcap"), data("zerowin-snd.pcap")],
        tcpscope_core::analysis::Settings::default(),
    );
    let report = tcpscope_view::report::report_data(&t, &[1], 100).unwrap();
    assert_eq!(report["ascending_keys"], page["ascending_keys"]);
    let mut rows: Vec<(u64, u64)> = report["conns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["rank"].as_u64().unwrap(), c["id"].as_u64().unwrap()))
        .collect();
    rows.sort();
    // The report's ranks order its rows as the server orders the live list by severity.
    assert_eq!(rows.iter().map(|r| r.1).collect::<Vec<_>>(), live);
}

/// The texts of a mark's text primitives (`["x", colour, x, y, anchor, text]`).
fn mark_texts(m: &Value) -> Vec<String> {
    m["p"].as_array().unwrap().iter().filter(|p| p[0] == "x").map(|p| p[5].as_str().unwrap().to_string()).collect()
}

/// The ladder (`api/ladder`): zoomed out, one arrow per pixel column, direction and kind that
/// still counts every packet of both directions (counted independently by the statistics
/// pass); zoomed in, one arrow per packet, labelled with what its packet-listing row says; the
/// states of both sides beside their lines; the packed answer is the JSON one.
#[test]
fn the_ladder_has_every_packet_of_both_directions_labelled_when_zoomed_in() {
    let s = start(IpAddr::from([127, 0, 0, 1]));
    let conns = json(s.addr, "/api/conns");
    let c = &conns["conns"][0];
    let packets = c["a2b"]["packets"].as_u64().unwrap() + c["b2a"]["packets"].as_u64().unwrap();
    let segs = |fig: &Value| -> Vec<Value> {
        fig["marks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["c"].as_str().unwrap().starts_with("seg"))
            .cloned()
            .collect()
    };
    let out = json(s.addr, "/api/ladder?conn=1&w=200&h=400");
    let agg = segs(&out);
    assert_eq!(agg.iter().map(|m| m["n"].as_u64().unwrap()).sum::<u64>(), packets);
    assert!(agg.len() < 200 * 2 * 5 && agg.iter().any(|m| m["n"].as_u64().unwrap() > 1), "{} marks", agg.len());
    assert!(agg.iter().all(|m| mark_texts(m).is_empty()), "no labels when aggregated");
    assert!(out["remarks"].as_array().unwrap().iter().any(|r| r.as_str().unwrap().contains("one arrow per column")));
    // The states: a (the client) opened actively, b passively; the first states are assumed.
    let states: Vec<String> = marks(&out, "state").iter().flat_map(|m| mark_texts(m)).collect();
    assert!(states.contains(&"CLOSED (assumed)".to_string()) && states.contains(&"LISTEN (assumed)".to_string()));
    assert!(states.contains(&"SYN_SENT".to_string()) && states.contains(&"SYN_RCVD".to_string()), "{states:?}");

    // Zoomed in around the first loss: each packet its own arrow, the retransmission among them.
    let q = "conn=1&t0=0.078&t1=0.084&w=1500&h=800";
    let fig = json(s.addr, &format!("/api/ladder?{q}"));
    assert_eq!((fig["x"][0].as_f64(), fig["x"][1].as_f64()), (Some(0.078), Some(0.084)));
    let zoomed = segs(&fig);
    assert!(zoomed.len() > 10 && zoomed.iter().all(|m| m["n"] == 1), "{} marks", zoomed.len());
    assert_eq!(zoomed.iter().filter(|m| m["c"] == "seg rexmit").count(), 1);
    let mut labelled = 0;
    for m in &zoomed {
        let row = json(s.addr, &format!("/api/packet?conn=1&frame={}", m["f"]));
        let Some(label) = mark_texts(m).pop() else { continue };
        labelled += 1;
        let (seq, len) = (row["seq"].as_i64().unwrap(), row["len"].as_i64().unwrap());
        let range = if len > 0 { format!(" {seq}:{} ", seq + len) } else { format!(" seq {seq} ") };
        assert!(label.contains(&range), "{label} vs {row}");
        assert!(label.contains(&format!(" ack {} ", row["ack"])), "{label} vs {row}");
        assert!(label.contains(&format!(" win {}", row["win"])), "{label} vs {row}");
        // Flags: the listing's letters are the label's first word's initials.
        let initials: String = label.split(' ').next().unwrap().split(',').map(|f| &f[..1]).collect();
        let mut a: Vec<char> = initials.chars().collect();
        let mut b: Vec<char> = row["flags"].as_str().unwrap().chars().collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{label} vs {row}");
    }
    assert!(labelled * 2 >= zoomed.len(), "{labelled} of {} labelled", zoomed.len());
    // The packed answer decodes to the same marks.
    let bin = get_bytes(s.addr, &format!("/api/ladder?{q}&fmt=bin"));
    assert_eq!(&bin[..4], b"TSC1");
    let hl = u32::from_le_bytes(bin[4..8].try_into().unwrap()) as usize;
    let head: Value = serde_json::from_slice(&bin[8..8 + hl]).unwrap();
    assert_eq!(head["arrays"]["mark_class"][2].as_u64(), Some(fig["marks"].as_array().unwrap().len() as u64));
    assert_eq!(get(s.addr, "/api/ladder?conn=1&h=x").0, 400);
    assert_eq!(get(s.addr, "/api/ladder?conn=9").0, 404);
    s.stop();
}

/// `view --correlate`: the lifelines of a connection as the receiver's capture lists it, on its
/// own time axis (0 at its first packet there), against core's per-packet rows of the
/// correlation (`correlate --packets`); without a correlation, no such routes.
#[test]
fn correlated_traces_answer_lifelines_and_one_way_delays() {
    use tcpscope_core::correlate::{Settings as CorrSettings, correlate};
    let (snd, rcv) = (data("loss-snd.pcap"), data("loss-rcv.pcap"));
    let mut t = Traces::load(vec![snd.clone(), rcv.clone()], Settings::default());
    t.correlate(&CorrSettings::default()).expect("correlated");
    let s =
        Server::start(Arc::new(t), &Options { bind: IpAddr::from([127, 0, 0, 1]), port: 0 }).expect("server starts");
    let points = json(s.addr, "/api/correlate");
    assert_eq!(points["points"].as_array().unwrap().len(), 2);

    let c = correlate(&[snd, rcv], &CorrSettings { keep_packets: true, ..CorrSettings::default() }).unwrap();
    let rows: Vec<_> = c.packet_rows().collect();
    // Connection 2 is the receiver's capture (point 2) of the one connection; its b→a is the
    // ACKs, which leave point 2 first.
    let origin = rows.iter().filter_map(|r| r.at_s[1]).fold(f64::INFINITY, f64::min);
    let (t0, t1) = (0.1, 0.4);
    let want: Vec<(u64, f64)> = rows
        .iter()
        .filter(|r| r.dir == "b2a")
        .filter_map(|r| Some((r.frames[1]?, r.at_s[1]? - origin)))
        .filter(|&(_, x)| (t0..=t1).contains(&x))
        .collect();
    assert!(want.len() > 50, "{} ACKs in the window", want.len());
    let fig = json(s.addr, &format!("/api/lifeline?conn=2&dir=b2a&t0={t0}&t1={t1}&w=4000"));
    assert_eq!(fig["dir"], "b2a");
    assert!(fig["title"].as_str().unwrap().starts_with("connection 2 b2a: "), "{}", fig["title"]);
    let got: Vec<(u64, f64)> =
        marks(&fig, "lifeline").iter().map(|m| (m["f"].as_u64().unwrap(), m["p"][0][2].as_f64().unwrap())).collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.0, w.0);
        // The rows' times are rounded to the µs.
        assert!((g.1 - w.1).abs() <= 1e-6, "{g:?} vs {w:?}");
    }
    // One-way delays of the same packets: every ACK arrived.
    let owd = json(s.addr, &format!("/api/owd?conn=2&dir=b2a&t0={t0}&t1={t1}&w=4000"));
    assert_eq!(marks(&owd, "owd").len(), want.len());
    // Connection 1 is the sender's capture (point 1): its ACKs' marks carry the sender's frame
    // numbers, not those of the point they left first, so that hovering one finds its packet.
    let origin1 = rows.iter().filter_map(|r| r.at_s[0]).fold(f64::INFINITY, f64::min);
    // Drawn by the time each left its first point, the receiver (point 2).
    let acks: Vec<Option<u64>> = rows
        .iter()
        .filter(|r| r.dir == "b2a")
        .filter(|r| r.at_s[1].is_some_and(|t| (t0..=t1).contains(&(t - origin1))))
        .map(|r| r.frames[0])
        .collect();
    for route in ["lifeline", "owd"] {
        let f = json(s.addr, &format!("/api/{route}?conn=1&dir=b2a&t0={t0}&t1={t1}&w=4000"));
        let drawn: Vec<Option<u64>> = f["marks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["c"].as_str().unwrap().starts_with("lifeline") || m["c"] == "owd")
            .map(|m| m["f"].as_u64())
            .collect();
        // One-way delays only of the ACKs that arrived.
        let want: Vec<Option<u64>> = acks.iter().copied().filter(|f| route == "lifeline" || f.is_some()).collect();
        let sorted = |mut v: Vec<Option<u64>>| {
            v.sort_unstable();
            v
        };
        assert!(want.len() > 50);
        assert_eq!(sorted(drawn), sorted(want), "{route}: the sender's frames");
    }
    // The packed form of the same answer decodes.
    assert!(!get_bytes(s.addr, &format!("/api/lifeline?conn=2&dir=b2a&t0={t0}&t1={t1}&w=400&fmt=bin")).is_empty());
    assert_eq!(get(s.addr, "/api/lifeline?conn=9&dir=a2b").0, 404);
    s.stop();

    // Not correlated: `null`, and the routes say why.
    let plain = start(IpAddr::from([127, 0, 0, 1]));
    assert_eq!(json(plain.addr, "/api/correlate"), Value::Null);
    let (status, body) = get(plain.addr, "/api/lifeline?conn=1&dir=a2b");
    assert_eq!(status, 404);
    assert!(body.contains("not correlated"), "{body}");
    plain.stop();
}

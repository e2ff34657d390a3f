//! The viewer's timeline API (`api/monitor`, `api/timeline`) on a real recording made here: the
//! monitor samples a paced loopback transfer (no root needed: any user may dump
//! `NETLINK_SOCK_DIAG`), with host CPU and application events sent by the transfer itself.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::Value;
use tcpscope_core::analysis::Settings;
use tcpscope_monitor::events::EventLog;
use tcpscope_monitor::record::{self, Options as RecordOptions};
use tcpscope_view::data::Traces;
use tcpscope_view::timeline::Monitor;
use tcpscope_view::{Options, Server};

fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n", addr.port()).unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).expect("read");
    let status = buf.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn ok(addr: SocketAddr, path: &str) -> Value {
    let (status, v) = get(addr, path);
    assert_eq!(status, 200, "{path}: {v}");
    v
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

/// Records ~1.5 s of a loopback transfer paced in bursts (three `xfer` stages per burst, each
/// with its guid) at 10 ms, with CPU every 50 ms. Returns the recording's path.
fn record(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("run.tsm");
    let sock = dir.join("events.sock");
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let opts = RecordOptions {
        filter: format!("sport {port} or dport {port}"),
        interval: Duration::from_millis(10),
        pid: None,
        duration: Some(Duration::from_millis(1500)),
        events: Some(format!("unix:{}", sock.display())),
        cpu_every: Some(Duration::from_millis(50)),
        to: None,
        to_grace: Duration::ZERO,
        cpu_budget: None,
    };
    let stop = AtomicBool::new(false);
    let spec = format!("unix:{}", sock.display());
    std::thread::scope(|s| {
        let rec = s.spawn(|| record::run(&opts, Some(&path), None, &stop, |_| {}).expect("recording"));
        // The recorder binds the events socket first thing; give it a moment.
        std::thread::sleep(Duration::from_millis(150));
        let reader = s.spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 65536];
            while c.read(&mut buf).unwrap() > 0 {}
        });
        let log = EventLog::connect(&spec).unwrap();
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        // The connection's first sample comes at the next 10 ms dump: the first event after it.
        std::thread::sleep(Duration::from_millis(50));
        for k in 0..8 {
            let guid = k.to_string();
            log.start("xfer", &guid, &[]).unwrap();
            c.write_all(&vec![1u8; 4 << 20]).unwrap();
            log.end("xfer", &guid, 0, &[]).unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(c);
        reader.join().unwrap();
        rec.join().unwrap();
    });
    path
}

#[test]
fn timeline_api_on_a_recorded_transfer() {
    let dir = std::env::temp_dir().join(format!("tcpscope-view-timeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = record(&dir);
    let m = Monitor::load(&path).expect("the recording reads");
    let s = Server::start_with(
        Arc::new(Traces::load(vec![], Settings::default())),
        Some(Arc::new(m)),
        &Options { bind: IpAddr::from([127, 0, 0, 1]), port: 0 },
    )
    .unwrap();

    // The list: both ends of the transfer, the sender with a diagnosis and a bandwidth.
    let list = ok(s.addr, "/api/monitor");
    assert_eq!(list["recording"], "run.tsm");
    let conns = list["conns"].as_array().unwrap();
    assert_eq!(conns.len(), 2, "{list}");
    let sender = conns
        .iter()
        .max_by(|a, b| a["ave_bw"].as_f64().unwrap_or(0.0).total_cmp(&b["ave_bw"].as_f64().unwrap_or(0.0)))
        .unwrap();
    assert!(sender["ave_bw"].as_f64().unwrap() > 1e6, "{sender}");
    assert!(sender["diagnosis"].as_str().unwrap().starts_with("mostly "), "{sender}");
    assert!(sender["duration_s"].as_f64().unwrap() > 0.5);
    let id = sender["id"].as_u64().unwrap();

    // Whole, at full resolution: every sample is a point.
    let full = ok(s.addr, &format!("/api/timeline?conn={id}&w=8192"));
    let last = full["last"].as_f64().unwrap();
    let cwnd = &full["series"]["cwnd_bytes"];
    let n = cwnd["t"].as_array().unwrap().len();
    assert!(n > 60, "{n} cwnd samples");
    assert_eq!(cwnd["agg"], false);
    let max_full = nums(&cwnd["hi"]).into_iter().fold(0.0, f64::max);
    for name in ["ssthresh_bytes", "rtt_ms", "flight_bytes", "delivery_bps", "retrans"] {
        assert!(full["series"][name]["t"].is_array(), "{name}");
    }
    assert!(nums(&full["series"]["rtt_ms"]["hi"]).iter().all(|r| *r > 0.0));
    // The triage: one bar per interval, shares of it.
    let limits = full["limits"].as_array().unwrap();
    assert_eq!(limits.len(), n - 1, "a bar per interval");
    for l in limits {
        let sum = l["network"].as_f64().unwrap() + l["receiver"].as_f64().unwrap() + l["sender"].as_f64().unwrap();
        assert!(sum <= 1.0 + 1e-6, "{l}");
    }
    // The pauses between bursts are the sender's: some intervals are mostly sender-limited.
    assert!(limits.iter().any(|l| l["sender"].as_f64().unwrap() > 0.5));
    // Events: the two stages in NetLogger's order, sixteen events, each with its guid.
    assert_eq!(full["lanes"], serde_json::json!(["xfer.start", "xfer.end"]));
    let evs = full["events"].as_array().unwrap();
    assert_eq!(evs.len(), 16, "{evs:?}");
    assert!(evs.iter().all(|e| e["guid"].is_string() && e["lane"].is_u64()));
    assert!(!full["cpu"]["host_pct"]["t"].as_array().unwrap().is_empty());

    // Zoomed out to 20 columns: at most one point per column, and the peak is kept.
    let w = 20;
    let narrow = ok(s.addr, &format!("/api/timeline?conn={id}&w={w}"));
    let c = &narrow["series"]["cwnd_bytes"];
    assert_eq!(c["agg"], true);
    assert!(c["t"].as_array().unwrap().len() <= w);
    assert_eq!(nums(&c["hi"]).into_iter().fold(0.0, f64::max), max_full);
    assert!(narrow["limits"].as_array().unwrap().len() <= w);

    // Zoomed in: only what is in the view.
    let (t0, t1) = (last * 0.25, last * 0.5);
    let part = ok(s.addr, &format!("/api/timeline?conn={id}&t0={t0}&t1={t1}&w=8192"));
    let t = nums(&part["series"]["cwnd_bytes"]["t"]);
    assert!(!t.is_empty() && t.len() < n);
    assert!(t.iter().all(|x| (t0..=t1).contains(x)));
    assert!(part["events"].as_array().unwrap().iter().all(|e| (t0..=t1).contains(&e["t"].as_f64().unwrap())));

    // Bad requests.
    assert_eq!(get(s.addr, "/api/timeline?conn=99").0, 404);
    assert_eq!(get(s.addr, "/api/timeline").0, 400);
    assert_eq!(get(s.addr, &format!("/api/timeline?conn={id}&t0=x")).0, 400);
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A damaged recording is an error naming the file and the offset, not a panic; and without a
/// recording, the routes say so.
#[test]
fn damaged_recording_and_no_recording() {
    let dir = std::env::temp_dir().join(format!("tcpscope-view-timeline-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.tsm");
    std::fs::write(&bad, b"not a recording at all").unwrap();
    let e = Monitor::load(&bad).err().expect("an error").to_string();
    assert!(e.contains("bad.tsm") && e.contains("byte 0"), "{e}");
    let e = Monitor::load(&dir.join("missing.tsm")).err().expect("an error").to_string();
    assert!(e.contains("missing.tsm"), "{e}");
    let s = Server::start(
        Arc::new(Traces::load(vec![], Settings::default())),
        &Options { bind: IpAddr::from([127, 0, 0, 1]), port: 0 },
    )
    .unwrap();
    assert_eq!(get(s.addr, "/api/monitor"), (200, Value::Null));
    assert_eq!(get(s.addr, "/api/timeline?conn=1").0, 404);
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

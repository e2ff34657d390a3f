//! `tcpscope monitor` on real kernel TCP (issue 19).
//!
//! The triage tests each make a network namespace (util::netns: `tsc-<pid>-<tag>`, removed when
//! the test ends, also on failure), shape or slow its loopback traffic, record one transfer
//! with `tcpscope monitor`, and check that `tcpscope stats run.tsm --json` names the limit the
//! test set up: a token-bucket bottleneck (network), a slow reader with a 4 KiB receive buffer
//! (receiver), a writer that pauses (sender). Without root they say so and pass without running
//! (CI runs them as root). The others need no root: a killed recorder, and `--pid`.

mod util;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use util::netns::Netns;

const PORT: u16 = 5201;

/// How the transfer misbehaves.
#[derive(Clone, Copy)]
struct Transfer {
    /// Receive buffer of the reader (SO_RCVBUF on the listener), if set.
    rcvbuf: Option<usize>,
    /// The reader sleeps this long after each read of 1000 bytes.
    read_pause: Option<Duration>,
    /// The writer writes this many bytes, then sleeps.
    write_burst: Option<(usize, Duration)>,
    secs: f64,
}

/// Runs the transfer on loopback in the calling thread's namespace; returns bytes received.
fn transfer(t: Transfer) -> u64 {
    let l = TcpListener::bind(("127.0.0.1", PORT)).unwrap();
    if let Some(n) = t.rcvbuf {
        nix::sys::socket::setsockopt(&l, nix::sys::socket::sockopt::RcvBuf, &n).unwrap();
    }
    let reader = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        // A stalled transfer fails the test instead of hanging it.
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = vec![0u8; if t.read_pause.is_some() { 1000 } else { 1 << 16 }];
        let mut total = 0u64;
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return total,
                Ok(n) => total += n as u64,
            }
            if let Some(p) = t.read_pause {
                std::thread::sleep(p);
            }
        }
    });
    let mut c = TcpStream::connect(("127.0.0.1", PORT)).unwrap();
    let end = Instant::now() + Duration::from_secs_f64(t.secs);
    let chunk = vec![0x5au8; t.write_burst.map_or(1 << 16, |b| b.0)];
    c.set_write_timeout(Some(Duration::from_millis(100))).unwrap();
    while Instant::now() < end {
        // A timed-out write (a full send buffer) just tries again until the end.
        let _ = c.write(&chunk);
        if let Some((_, p)) = t.write_burst {
            std::thread::sleep(p);
        }
    }
    drop(c);
    reader.join().unwrap()
}

/// Records `t` in `ns` and returns the summary of the sending connection (`stats --json`).
fn record(ns: &Netns, name: &str, t: Transfer) -> serde_json::Value {
    let dir = util::tempdir(name);
    let file = dir.join("run.tsm");
    let f = file.to_str().unwrap().to_string();
    let secs = format!("{}s", t.secs + 1.0);
    let mon =
        ns.tcpscope(&["monitor", "--filter", &format!("port {PORT}"), "-i", "20ms", "-w", &f, "--for", &secs, "-q"]);
    // Ready once the header is written (after the first dump).
    let t0 = Instant::now();
    while std::fs::metadata(&file).map_or(true, |m| m.len() < 100) {
        assert!(t0.elapsed() < Duration::from_secs(10), "monitor did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let got = ns.run(move || transfer(t));
    assert!(got > 0);
    let out = mon.wait_with_output().unwrap();
    assert!(out.status.success(), "monitor: {}", String::from_utf8_lossy(&out.stderr));
    let doc = util::json(&["stats", &f]);
    let conns = doc["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 2, "both ends recorded: {doc:#}");
    let sender = conns.iter().find(|c| c["dport"] == PORT).unwrap().clone();
    let receiver = conns.iter().find(|c| c["sport"] == PORT).unwrap();
    assert!(receiver["diagnosis"].as_str().unwrap().contains("sent no data"), "{receiver:#}");
    assert!(receiver["bytes_received"].as_u64().unwrap() > 0);
    eprintln!(
        "{name}: {} bytes/sample; sender limits {}; {}",
        doc["bytes_per_sample"], sender["limits"], sender["diagnosis"]
    );
    let _ = std::fs::remove_dir_all(dir);
    sender
}

fn share(c: &serde_json::Value, k: &str) -> f64 {
    c["limits"][k].as_f64().unwrap_or_else(|| panic!("no {k} share: {c:#}"))
}

#[test]
fn triage_network_limited_by_a_bottleneck() {
    let Some(ns) = Netns::new("mon-net") else { return };
    // 20 Mbit/s token bucket on the namespace's loopback, queue of 50 ms. Loopback's 64 KiB MTU
    // would make every packet larger than the bucket (tbf drops those): use Ethernet's.
    ns.exec(&["ip", "link", "set", "lo", "mtu", "1500"]);
    ns.exec(&["tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "20mbit", "burst", "32kb", "latency", "50ms"]);
    let s = record(&ns, "mon-net", Transfer { rcvbuf: None, read_pause: None, write_burst: None, secs: 2.0 });
    assert!(share(&s, "network") > 0.6, "{s:#}");
    assert!(s["diagnosis"].as_str().unwrap().starts_with("mostly network/congestion-limited"), "{s:#}");
    // The bottleneck caps the goodput (acknowledged bytes) below 20 Mbit/s; AveBW counts the
    // retransmissions too, which the bucket's drops cause, so it can be higher.
    let goodput = s["bytes_acked"].as_f64().unwrap() * 8.0 / s["duration_s"].as_f64().unwrap();
    assert!(goodput < 20.5e6 && goodput > 5e6, "goodput {goodput}: {s:#}");
    eprintln!(
        "mon-net: goodput {goodput:.0} bit/s, AveBW {} bit/s, retransmitted {} segments",
        s["ave_bw"], s["retrans_segments"]
    );
}

#[test]
fn triage_receiver_limited_by_a_slow_reader() {
    let Some(ns) = Netns::new("mon-rcv") else { return };
    let t = Transfer { rcvbuf: Some(4096), read_pause: Some(Duration::from_millis(2)), write_burst: None, secs: 2.0 };
    let s = record(&ns, "mon-rcv", t);
    assert!(share(&s, "receiver") > 0.6, "{s:#}");
    assert!(s["diagnosis"].as_str().unwrap().starts_with("mostly receiver window-limited"), "{s:#}");
}

#[test]
fn triage_sender_limited_by_a_pausing_writer() {
    let Some(ns) = Netns::new("mon-snd") else { return };
    let t = Transfer {
        rcvbuf: None,
        read_pause: None,
        write_burst: Some((16 * 1024, Duration::from_millis(100))),
        secs: 2.0,
    };
    let s = record(&ns, "mon-snd", t);
    assert!(share(&s, "sender") > 0.6, "{s:#}");
    assert!(s["diagnosis"].as_str().unwrap().starts_with("mostly application-limited"), "{s:#}");
}

/// A connected loopback pair in this process, after `n` bytes client → server.
fn pair(n: usize) -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut s, _) = l.accept().unwrap();
    c.write_all(&vec![1u8; n]).unwrap();
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).unwrap();
    (c, s)
}

fn stats_json(file: &Path) -> serde_json::Value {
    util::json(&["stats", file.to_str().unwrap()])
}

#[test]
fn a_killed_recorder_leaves_a_readable_file() {
    let (c, s) = pair(10_000);
    let port = s.local_addr().unwrap().port();
    let dir = util::tempdir("mon-kill");
    let file = dir.join("run.tsm");
    let mut mon = util::tcpscope()
        .args(["monitor", "-f", &format!("sport {port} or dport {port}"), "-i", "5ms", "-q", "-w"])
        .arg(&file)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // Blocks are written every second: after 2.5 s at least two are on disk, the rest pending.
    // Meanwhile the client sends a little every 50 ms.
    let (mut c, mut s) = (c, s);
    let mut b = [0u8; 1000];
    for _ in 0..50 {
        c.write_all(&b).unwrap();
        s.read_exact(&mut b).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    mon.kill().unwrap(); // SIGKILL: no chance to flush
    mon.wait().unwrap();
    let doc = stats_json(&file);
    let n = doc["samples"].as_u64().unwrap();
    // Two sockets at 200 samples/s for ≥ 1 s of flushed blocks.
    assert!(n >= 2 * 150, "{n} samples survived: {doc:#}");
    assert_eq!(doc["connections"].as_array().unwrap().len(), 2);
    // The client sent: its limits plot has bars; the server received only: no limits plot.
    let conns = doc["connections"].as_array().unwrap();
    let id_of = |p: u16| conns.iter().find(|c| c["sport"] == p).unwrap()["id"].to_string();
    let svg = dir.join("limits.svg");
    let plot = |id: &str, kind: &str| {
        util::run(&["plot", file.to_str().unwrap(), "-k", kind, "-c", id, "-o", svg.to_str().unwrap()])
    };
    assert!(plot(&id_of(c.local_addr().unwrap().port()), "limits").status.success());
    assert!(std::fs::read_to_string(&svg).unwrap().contains("class=\"limit\""));
    let out = plot(&id_of(port), "limits");
    assert!(String::from_utf8_lossy(&out.stderr).contains("sent no data"), "{out:?}");
    assert!(plot(&id_of(port), "rtt").status.success());
    assert!(!plot(&id_of(port), "tsg").status.success(), "tsg needs packets");
    // Cutting the file anywhere (as a kill in the middle of a write would) still reads.
    let data = std::fs::read(&file).unwrap();
    let cut = dir.join("cut.tsm");
    std::fs::write(&cut, &data[..data.len() - 3]).unwrap();
    let out = util::run(&["stats", cut.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("read up to there"));
    drop((c, s));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn pid_selects_the_sockets_of_one_process() {
    let (c, s) = pair(1000);
    let cport = c.local_addr().unwrap().port();
    // A child process owns the client socket (as its stdin); the server end stays here.
    let mut child = Command::new("sleep").arg("5").stdin(Stdio::from(OwnedFd::from(c))).spawn().unwrap();
    let dir = util::tempdir("mon-pid");
    let file = dir.join("run.tsm");
    let pid = child.id().to_string();
    let out =
        util::run(&["monitor", "--pid", &pid, "-i", "10ms", "--for", "300ms", "-q", "-w", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stats_json(&file);
    let conns = doc["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1, "only the child's socket: {doc:#}");
    assert_eq!(conns[0]["sport"], cport);
    assert_eq!(doc["header"]["pid"], child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn events_and_cpu_are_recorded() {
    let dir = util::tempdir("mon-ev");
    let file = dir.join("run.tsm");
    let sock = dir.join("ev.sock");
    let spec = format!("unix:{}", sock.display());
    let mon = util::tcpscope()
        .args(["monitor", "-f", "port 1", "-i", "10ms", "--for", "1500ms", "-q", "--events", &spec, "-w"])
        .arg(&file)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !sock.exists() {
        assert!(t0.elapsed() < Duration::from_secs(10), "no event socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    let send = |args: &[&str]| {
        let out = util::tcpscope().args(["event", "--to", &spec]).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    send(&["block.start", "guid=9", "msg=two words"]);
    send(&["block.end", "guid=9", "status=0"]);
    // The Python module, as an application would use it (skipped visibly without python3).
    let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("../monitor/python");
    let py = format!(
        "import sys; sys.path.insert(0, {:?}); from tcpscope_events import EventLog; \
         log = EventLog({spec:?}); log.start('read', guid=10, path='/x y'); log.end('read', guid=10, status=-1)",
        module.display().to_string()
    );
    let python = match Command::new("python3").args(["-c", &py]).status() {
        Ok(st) => {
            assert!(st.success(), "python module");
            true
        }
        Err(e) => {
            eprintln!("skipping the Python module: python3 not runnable ({e})");
            false
        }
    };
    // A JSON line straight onto the socket, as a program would send it.
    std::os::unix::net::UnixDatagram::unbound()
        .unwrap()
        .send_to(br#"{"event":"disk.stall","ts":"2026-11-22T12:06:14.5Z","ms":300}"#, &sock)
        .unwrap();
    let out = mon.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(!sock.exists(), "the recorder removes its socket");
    let doc = stats_json(&file);
    let ev = doc["events"].as_array().unwrap();
    let names: Vec<&str> = ev.iter().map(|e| e["name"].as_str().unwrap()).collect();
    let mut want = vec!["block.start", "block.end", "disk.stall"];
    if python {
        want.splice(2..2, ["read.start", "read.end"]);
        assert_eq!(ev[2]["fields"], serde_json::json!([["guid", "10"], ["path", "/x y"]]));
        assert_eq!(ev[3]["fields"], serde_json::json!([["guid", "10"], ["status", "-1"]]));
    }
    assert_eq!(names, want, "{doc:#}");
    assert_eq!(ev[0]["fields"], serde_json::json!([["guid", "9"], ["msg", "two words"]]));
    assert_eq!(ev[want.len() - 1]["t_ns"], 1_795_349_174_500_000_000u64);
    let cores = doc["cpu"]["cores"].as_array().unwrap();
    assert!(!cores.is_empty(), "{doc:#}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A free local TCP port (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn collection_is_exactly_once_across_collector_and_recorder_kills() {
    let dir = util::tempdir("mon-ship");
    let (coll_dir, spill, sock) = (dir.join("collected"), dir.join("run.tsm"), dir.join("ev.sock"));
    let to = format!("tcp://127.0.0.1:{}", free_port());
    let spec = format!("unix:{}", sock.display());
    let collector = || {
        util::tcpscope()
            .args(["monitor", "-q", "--collect", &to, "-w"])
            .arg(&coll_dir)
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
    };
    let recorder = |extra: &[&str]| {
        let _ = std::fs::remove_file(&sock);
        let c = util::tcpscope()
            .args(["monitor", "-q", "-f", "port 1", "-i", "20ms", "--to", &to, "--events", &spec, "-w"])
            .arg(&spill)
            .args(extra)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while !sock.exists() {
            assert!(t0.elapsed() < Duration::from_secs(10), "recorder did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        c
    };
    let mut seq = 0;
    let mut send = |n: usize| {
        for _ in 0..n {
            seq += 1;
            let out =
                util::tcpscope().args(["event", "--to", &spec, "x.step", &format!("seq={seq}")]).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            std::thread::sleep(Duration::from_millis(60));
        }
    };
    // The recorder starts before its collector: it spills, then catches up.
    let mut rec = recorder(&[]);
    send(3);
    let mut coll = collector();
    send(3);
    // The collector dies (SIGKILL) and comes back; the recorder goes on meanwhile.
    coll.kill().unwrap();
    coll.wait().unwrap();
    send(3);
    let mut coll = collector();
    send(3);
    // The recorder dies; a new one appends to the same spill and ships the rest.
    std::thread::sleep(Duration::from_millis(200)); // the last events are read and written
    rec.kill().unwrap();
    rec.wait().unwrap();
    let rec = recorder(&["--for", "1500ms"]);
    send(3);
    let out = rec.wait_with_output().unwrap();
    assert!(out.status.success());
    coll.kill().unwrap();
    coll.wait().unwrap();
    let files: Vec<_> = std::fs::read_dir(&coll_dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "one stream: {files:?}");
    assert_eq!(std::fs::read(&files[0]).unwrap(), std::fs::read(&spill).unwrap(), "the collector's copy is the spill");
    let doc = stats_json(&files[0]);
    let seqs: Vec<u64> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["fields"][0][1].as_str().unwrap().parse().unwrap())
        .collect();
    // Events sent while no recorder ran are refused by `tcpscope event`; all others arrive once.
    assert_eq!(seqs, (1..=15).collect::<Vec<u64>>(), "{doc:#}");
    let _ = std::fs::remove_dir_all(dir);
}

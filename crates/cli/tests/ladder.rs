//! TCP states (`tcpscope states`) and the ladder and state diagrams (`plot -k ladder|states`) on
//! connections recorded in a network namespace (`l22-*`, root only; skipped visibly otherwise),
//! one per closing variant: active and passive close, simultaneous close, RST in each state a
//! socket can produce, half-close with data after the FIN; the thesis' figure 2.1; and xplot
//! writing every segment of a 20 Mbit/s transfer.

mod util;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use util::netns::Netns;
use util::{json, run, tempdir};

/// tcpdump on the namespace's loopback, writing `file` (snaplen 128), until dropped.
struct Tcpdump {
    child: Child,
    /// Its stderr, kept open: it writes its counts there when it stops.
    _err: std::process::ChildStderr,
}

impl Tcpdump {
    fn start(ns: &Netns, file: &Path, port: u16) -> Tcpdump {
        let mut child = Command::new("ip")
            // --immediate-mode: without it packets wait in the kernel's ring for up to a second,
            // and a capture stopped sooner loses them.
            .args(["netns", "exec", &ns.name, "tcpdump", "--immediate-mode", "-i", "lo", "-s", "128", "-U", "-w"])
            .arg(file)
            .args(["tcp", "port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump");
        // It says "listening on lo" once it captures.
        let mut err = child.stderr.take().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("listening on") {
            let n = err.read(&mut buf).unwrap();
            assert!(n > 0, "tcpdump ended: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        Tcpdump { child, _err: err }
    }

    /// Stops it (SIGTERM to its PID) and waits.
    fn stop(mut self) {
        std::thread::sleep(Duration::from_millis(300));
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

/// Sets SO_LINGER to 0: close() then sends a RST.
fn linger0(s: &TcpStream) {
    let l = nix::libc::linger { l_onoff: 1, l_linger: 0 };
    nix::sys::socket::setsockopt(&s.as_fd(), nix::sys::socket::sockopt::Linger, &l).unwrap();
}

fn pause(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// A client and a server in the namespace, port `port`: `client` and `server` run on their own
/// threads with their socket. Returns the capture.
fn record(
    ns: &Netns,
    dir: &Path,
    name: &str,
    port: u16,
    client: impl FnOnce(TcpStream) + Send + 'static,
    server: impl FnOnce(TcpStream) + Send + 'static,
) -> PathBuf {
    let file = dir.join(format!("{name}.pcap"));
    let dump = Tcpdump::start(ns, &file, port);
    ns.run(move || {
        let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let srv = std::thread::spawn(move || server(l.accept().unwrap().0));
        client(TcpStream::connect(("127.0.0.1", port)).unwrap());
        srv.join().unwrap();
    });
    dump.stop();
    file
}

/// Each side's path of states as `states --json` gives it: (a, b).
fn paths(file: &Path) -> (Vec<String>, Vec<String>) {
    let doc = json(&["states", "-q", file.to_str().unwrap(), "-c", "1"]);
    let mut a = Vec::new();
    let mut b = Vec::new();
    for r in doc["states"].as_array().unwrap() {
        let to = r["to"].as_str().unwrap().to_string();
        if r["side"] == "a" { a.push(to) } else { b.push(to) }
    }
    (a, b)
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const OPEN_A: [&str; 3] = ["CLOSED", "SYN_SENT", "ESTABLISHED"];
const OPEN_B: [&str; 3] = ["LISTEN", "SYN_RCVD", "ESTABLISHED"];

fn with(open: [&str; 3], rest: &[&str]) -> Vec<String> {
    names(&open.iter().chain(rest).copied().collect::<Vec<_>>())
}

/// Draws the ladder and the state diagram (SVG) and checks their marks: one arrow per segment,
/// a state label at every transition.
fn check_plots(file: &Path, dir: &Path) {
    let f = file.to_str().unwrap();
    let segs = json(&["stats", "-q", f])["connections"][0]["a2b"]["packets"].as_u64().unwrap()
        + json(&["stats", "-q", f])["connections"][0]["b2a"]["packets"].as_u64().unwrap();
    let out = dir.join("ladder.svg");
    let o = run(&["plot", "-q", f, "-c", "1", "-k", "ladder", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    let arrows = svg.matches(r#"<g class="seg "#).count();
    assert_eq!(arrows as u64, segs, "one arrow per segment");
    let transitions = json(&["states", "-q", f, "-c", "1"])["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["step"].as_u64() > Some(0))
        .count();
    // Each state mark: the initial state's text, then a dot and a text per transition.
    let state_texts = svg
        .split(r#"<g class="state""#)
        .skip(1)
        .map(|g| g.split("</g>").next().unwrap().matches("<text").count())
        .sum::<usize>();
    assert_eq!(state_texts, 2 + transitions);
    let out = dir.join("states.svg");
    let o = run(&["plot", "-q", f, "-c", "1", "-k", "states", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    assert_eq!(svg.matches(r#"<g class="transition""#).count(), transitions);
}

#[test]
fn recorded_closing_variants_go_through_the_rfc_9293_states() {
    let Some(ns) = Netns::with_prefix("l22", "close") else { return };
    if !util::have("tcpdump") {
        eprintln!("skipping: tcpdump is not installed");
        return;
    }
    let d = tempdir("ladder-close");

    // Active close by the client (a), passive by the server (b); the server waits before its
    // FIN so that its ACK of the client's FIN goes alone.
    let f = record(
        &ns,
        &d,
        "active",
        5101,
        |mut c| {
            c.write_all(b"0123456789").unwrap();
            let mut buf = [0u8; 10];
            c.read_exact(&mut buf).unwrap();
            drop(c);
            pause(300);
        },
        |mut s| {
            let mut buf = [0u8; 10];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
            assert_eq!(s.read(&mut buf).unwrap(), 0);
            pause(100);
        },
    );
    let (a, b) = paths(&f);
    assert_eq!(a, with(OPEN_A, &["FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT"]));
    assert_eq!(b, with(OPEN_B, &["CLOSE_WAIT", "LAST_ACK", "CLOSED"]));
    check_plots(&f, &d);

    // The server closes first (seed 001's hw3): b active, a passive.
    let f = record(
        &ns,
        &d,
        "server-first",
        5102,
        |mut c| {
            c.write_all(b"0123456789").unwrap();
            let mut buf = [0u8; 10];
            c.read_exact(&mut buf).unwrap();
            assert_eq!(c.read(&mut buf).unwrap(), 0);
            pause(100);
        },
        |mut s| {
            let mut buf = [0u8; 10];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
            drop(s);
            pause(300);
        },
    );
    let (a, b) = paths(&f);
    assert_eq!(a, with(OPEN_A, &["CLOSE_WAIT", "LAST_ACK", "CLOSED"]));
    assert_eq!(b, with(OPEN_B, &["FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT"]));

    // Half-close with data after the FIN: the client shuts down its sending side, the server
    // then sends 1450 bytes and closes.
    let f = record(
        &ns,
        &d,
        "half",
        5103,
        |mut c| {
            c.write_all(b"request").unwrap();
            c.shutdown(Shutdown::Write).unwrap();
            let mut got = Vec::new();
            c.read_to_end(&mut got).unwrap();
            assert_eq!(got.len(), 1450);
        },
        |mut s| {
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            pause(100);
            s.write_all(&[7u8; 1450]).unwrap();
            pause(100);
        },
    );
    let (a, b) = paths(&f);
    assert_eq!(a, with(OPEN_A, &["FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT"]));
    assert_eq!(b, with(OPEN_B, &["CLOSE_WAIT", "LAST_ACK", "CLOSED"]));
    // The data after the FIN: b sent 1450 bytes while a was in FIN_WAIT_2.
    let st = json(&["stats", "-q", f.to_str().unwrap()]);
    assert_eq!(st["connections"][0]["b2a"]["unique_bytes"].as_u64(), Some(1450));
    check_plots(&f, &d);

    // RST while established: the client closes with SO_LINGER 0.
    let f = record(
        &ns,
        &d,
        "rst-established",
        5104,
        |mut c| {
            c.write_all(b"x").unwrap();
            pause(100);
            linger0(&c);
            drop(c);
        },
        |mut s| {
            let mut buf = [0u8; 1];
            s.read_exact(&mut buf).unwrap();
            let _ = s.read(&mut buf);
        },
    );
    let (a, b) = paths(&f);
    assert_eq!(a, with(OPEN_A, &["CLOSED"]));
    assert_eq!(b, with(OPEN_B, &["CLOSED"]));

    // RST in CLOSE_WAIT (b) / FIN_WAIT_2 (a): the server aborts after the client's FIN.
    let f = record(
        &ns,
        &d,
        "rst-close-wait",
        5105,
        |c| {
            c.shutdown(Shutdown::Write).unwrap();
            pause(300);
        },
        |mut s| {
            let mut buf = [0u8; 1];
            assert_eq!(s.read(&mut buf).unwrap(), 0);
            pause(100);
            linger0(&s);
            drop(s);
        },
    );
    let (a, b) = paths(&f);
    assert_eq!(a, with(OPEN_A, &["FIN_WAIT_1", "FIN_WAIT_2", "CLOSED"]));
    assert_eq!(b, with(OPEN_B, &["CLOSE_WAIT", "CLOSED"]));
    check_plots(&f, &d);

    // RST in SYN_SENT: a connection refused (nothing listens on the port).
    let file = d.join("refused.pcap");
    let dump = Tcpdump::start(&ns, &file, 5106);
    ns.run(|| assert!(TcpStream::connect(("127.0.0.1", 5106)).is_err()));
    dump.stop();
    let (a, b) = paths(&file);
    assert_eq!(a, names(&["CLOSED", "SYN_SENT", "CLOSED"]));
    assert_eq!(b, names(&["CLOSED"]));

    // Simultaneous close: a slow queue on the loopback (tbf, 8 kbit/s: ~66 ms a 66-byte packet)
    // holds each FIN long enough for the other side to send its own first. A 1500-byte write
    // empties the bucket (1600 bytes) first, so that the ACK of it and the FINs after it wait;
    // a barrier has both sides shut down together.
    let ns2 = ns.name.clone();
    let both = std::sync::Arc::new(std::sync::Barrier::new(2));
    let both2 = both.clone();
    let f = record(
        &ns,
        &d,
        "simultaneous",
        5107,
        move |mut c| {
            c.set_nodelay(true).unwrap();
            pause(50);
            let st = Command::new("ip")
                .args(["netns", "exec", &ns2, "tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "8kbit"])
                .args(["burst", "1600", "latency", "5s"])
                .status()
                .unwrap();
            assert!(st.success());
            c.write_all(&[1u8; 1500]).unwrap();
            pause(5);
            both.wait();
            c.shutdown(Shutdown::Write).unwrap();
            pause(1500);
        },
        move |s| {
            both2.wait();
            s.shutdown(Shutdown::Write).unwrap();
            pause(1500);
        },
    );
    ns.exec(&["tc", "qdisc", "del", "dev", "lo", "root"]);
    let (a, b) = paths(&f);
    assert_eq!(a, with(OPEN_A, &["FIN_WAIT_1", "CLOSING", "TIME_WAIT"]));
    assert_eq!(b, with(OPEN_B, &["FIN_WAIT_1", "CLOSING", "TIME_WAIT"]));
    check_plots(&f, &d);
    // TCPSCOPE_KEEP=1 keeps the recordings (the pictures of docs/plots.md are drawn from them).
    if std::env::var_os("TCPSCOPE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&d);
    } else {
        eprintln!("kept {}", d.display());
    }
}

#[test]
fn thesis_figure_2_1_ladder_has_its_twelve_arrows() {
    let d = tempdir("ladder-thesis");
    let Some(f) = util::thesis::fig21(&d) else { return };
    let out = d.join("l.svg");
    let o = run(&["plot", "-q", f.to_str().unwrap(), "-c", "1", "-k", "ladder", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    assert_eq!(svg.matches(r#"<g class="seg data""#).count(), 5);
    assert_eq!(svg.matches(r#"<g class="seg rexmit""#).count(), 1);
    assert_eq!(svg.matches(r#"<g class="seg ack""#).count(), 6);
    // Mid-stream: both start ESTABLISHED (assumed) and stay there.
    let (a, b) = paths(&f);
    assert_eq!((a, b), (names(&["ESTABLISHED"]), names(&["ESTABLISHED"])));
    // The timestamps are HOST-A's (the thesis): the capture is at HOST-A (b here, the first
    // packet being HOST-B's), 3.5 s from HOST-B (half of 7 s from data to its ACK).
    let doc = json(&["states", "-q", f.to_str().unwrap(), "-c", "1"]);
    let a0 = &doc["states"][0];
    assert_eq!(a0["side"], "a");
    assert_eq!(a0["distance_s"].as_f64(), Some(3.5));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn xplot_writes_every_segment_of_a_20_mbit_transfer() {
    let Some(ns) = Netns::with_prefix("l22", "xpl") else { return };
    if !util::have("tcpdump") {
        eprintln!("skipping: tcpdump is not installed");
        return;
    }
    let d = tempdir("ladder-xpl");
    ns.exec(&["ip", "link", "set", "lo", "mtu", "1500"]);
    // Segments as on a wire: no offload on the loopback.
    ns.exec(&["ethtool", "-K", "lo", "tso", "off", "gso", "off", "gro", "off"]);
    ns.exec(&["tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "20mbit", "burst", "32kb", "latency", "100ms"]);
    const BYTES: usize = 8 << 20;
    let f = record(
        &ns,
        &d,
        "bulk",
        5201,
        |mut c| {
            let chunk = vec![0u8; 1 << 16];
            for _ in 0..BYTES / chunk.len() {
                c.write_all(&chunk).unwrap();
            }
        },
        |mut s| {
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            assert_eq!(got.len(), BYTES);
        },
    );
    let fs = f.to_str().unwrap();
    let st = json(&["stats", "-q", fs]);
    let data = st["connections"][0]["a2b"]["data_packets"].as_u64().unwrap();
    let packets = st["connections"][0]["a2b"]["packets"].as_u64().unwrap();
    // More data segments than 4× the pixel columns of the default width: the old aggregation
    // would have merged them.
    assert!(data > 4 * 1092, "{data} data segments");
    let xpl = d.join("t.xpl");
    let o = run(&["plot", "-q", fs, "-c", "1", "-o", xpl.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&xpl).unwrap();
    let starts = |p: &str| text.lines().filter(|l| l.starts_with(p)).count() as u64;
    // Every segment is drawn: its bottom a down-arrow; its top an up-arrow, or a diamond when
    // pushed (tcptrace's marks). The direction's packets: the data, its SYN, FIN and ACK.
    let (down, up, diamonds) = (starts("darrow "), starts("uarrow "), starts("diamond "));
    eprintln!(
        "20 Mbit/s transfer: {data} data segments of {packets} packets; .xpl: {down} down-arrows, {up} up-arrows, {diamonds} diamonds"
    );
    assert_eq!(down, packets);
    assert!(up + diamonds >= data);
    let agg = d.join("a.xpl");
    let o = run(&["plot", "-q", fs, "-c", "1", "--xpl-aggregate", "-o", agg.to_str().unwrap()]);
    assert!(o.status.success());
    let down_agg = std::fs::read_to_string(&agg).unwrap().lines().filter(|l| l.starts_with("darrow ")).count() as u64;
    eprintln!("with --xpl-aggregate: {down_agg} down-arrows");
    assert!(down_agg < packets);
    let _ = std::fs::remove_dir_all(&d);
}

//! TCP states (`tcpscope states`) and the ladder and state diagrams (`plot -k ladder|states`) on
//! connections recorded in a network namespace (`l22-*`, root only; skipped visibly otherwise),
//! one per closing variant: active and passive close, simultaneous close, RST in each state a
//! socket can produce, half-close with data after the FIN, RST received in CLOSING, LAST_ACK
//! and TIME_WAIT (`v22-*`: the peer's traffic dropped by nftables, a raw socket's RST); the
//! thesis' figure 2.1; and xplot writing every segment of a 20 Mbit/s transfer.

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

/// The end of the last FIN that `sport` sent in `file` (its sequence number plus its length and
/// the FIN's one): what the peer acknowledges once it has it. Reads the capture as tcpdump wrote
/// it so far (pcap, Ethernet on the loopback, IPv4), written by hand: a few fixed offsets.
fn fin_end(file: &Path, sport: u16) -> Option<u32> {
    let b = std::fs::read(file).ok()?;
    let (mut i, mut end) = (24, None);
    while i + 16 <= b.len() {
        let caplen = u32::from_le_bytes(b[i + 8..i + 12].try_into().unwrap()) as usize;
        let p = &b[i + 16..(i + 16 + caplen).min(b.len())];
        i += 16 + caplen;
        if p.len() < 14 + 20 || p[12..14] != [0x08, 0x00] || p[14 + 9] != 6 {
            continue;
        }
        let ihl = (p[14] & 0x0f) as usize * 4;
        let ip_len = u16::from_be_bytes([p[16], p[17]]) as usize;
        let t = &p[14 + ihl..];
        if t.len() < 20 || u16::from_be_bytes([t[0], t[1]]) != sport || t[13] & 0x01 == 0 {
            continue;
        }
        let len = ip_len - ihl - (t[12] >> 4) as usize * 4;
        end = Some(u32::from_be_bytes(t[4..8].try_into().unwrap()).wrapping_add(len as u32 + 1));
    }
    end
}

/// Sends a bare RST from 127.0.0.1:`sport` to 127.0.0.1:`dport` with sequence number `seq`,
/// through a raw socket (the kernel writes the IP header), on the calling thread's namespace.
fn raw_rst(sport: u16, dport: u16, seq: u32) {
    use nix::libc;
    use nix::sys::socket::{AddressFamily, SockFlag, SockProtocol, SockType, socket};
    use std::os::fd::AsRawFd;
    let mut h = [0u8; 20];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[12] = 5 << 4;
    h[13] = 0x04;
    // The checksum over the pseudo-header (both addresses 127.0.0.1, protocol 6, length 20)
    // and the header (RFC 9293 §3.1).
    let mut words: Vec<u32> = vec![0x7f00, 0x0001, 0x7f00, 0x0001, 6, 20];
    words.extend(h.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32));
    let mut sum: u32 = words.iter().sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[16..18].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    let fd = socket(AddressFamily::Inet, SockType::Raw, SockFlag::empty(), SockProtocol::Tcp).expect("raw socket");
    // By libc: nix's socket addresses need its `net` feature, which would rebuild nix (and all
    // that uses it) for one test.
    let to = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: dport.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be() },
        sin_zero: [0; 8],
    };
    // SAFETY: `h` and `to` outlive the call, which reads `h.len()` bytes and a sockaddr_in.
    let sent = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            h.as_ptr().cast(),
            h.len(),
            0,
            (&to as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    assert_eq!(sent, 20, "send the RST: {}", std::io::Error::last_os_error());
}

/// The kernel's TCP sockets in `state` (ss's name: `time-wait`, `last-ack`, `closing`) on
/// port `port` of the namespace.
fn sockets_in(ns: &str, state: &str, port: u16) -> usize {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "ss", "-tanH", "state", state])
        .arg(format!("( sport = :{port} or dport = :{port} )"))
        .output()
        .expect("ss");
    assert!(o.status.success(), "ss: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.trim().is_empty()).count()
}

/// Waits up to 3 s for `n` sockets in `state` on `port`; returns how many there were.
fn wait_for(ns: &str, state: &str, port: u16, n: usize) -> usize {
    for _ in 0..60 {
        if sockets_in(ns, state, port) == n {
            return n;
        }
        pause(50);
    }
    sockets_in(ns, state, port)
}

/// The last transition of `side` in `states --json`: (to, sent, flags).
fn last_of(file: &Path, side: &str) -> (String, bool, String) {
    let doc = json(&["states", "-q", file.to_str().unwrap(), "-c", "1"]);
    let r = doc["states"].as_array().unwrap().iter().rev().find(|r| r["side"] == side).unwrap().clone();
    (r["to"].as_str().unwrap().into(), r["sent"] == true, r["flags"].as_str().unwrap_or("").into())
}

/// RST in CLOSING, LAST_ACK and TIME_WAIT, made to happen on real Linux in a namespace (`v22-*`)
/// and checked against the kernel (`ss`: the socket left that state) and against RFC 9293
/// §3.10.7.4 ("CLOSING, LAST-ACK, TIME-WAIT: if the RST bit is set, then enter the CLOSED
/// state"), which `tcpscope states` is to follow.
#[test]
fn recorded_rst_in_closing_last_ack_and_time_wait_closes_as_rfc_9293_says() {
    let Some(ns) = Netns::with_prefix("v22", "rst") else { return };
    for tool in ["tcpdump", "nft", "ss", "tc"] {
        if !util::have(tool) {
            eprintln!("skipping: {tool} is not installed");
            return;
        }
    }
    let d = tempdir("ladder-rst");
    // Linux's default: a RST kills a TIME_WAIT socket (RFC 1337's protection off), per netns.
    ns.exec(&["sysctl", "-qw", "net.ipv4.tcp_rfc1337=0"]);

    // TIME_WAIT: a closes actively and waits; a RST from b's port with the sequence number a
    // expects next (after b's FIN), sent by a raw socket, ends it.
    let file = d.join("rst-time-wait.pcap");
    let (f2, ns2) = (file.clone(), ns.name.clone());
    let f = record(
        &ns,
        &d,
        "rst-time-wait",
        5301,
        move |mut c| {
            let port = c.local_addr().unwrap().port();
            c.write_all(b"x").unwrap();
            let mut buf = [0u8; 1];
            c.read_exact(&mut buf).unwrap();
            drop(c);
            assert_eq!(wait_for(&ns2, "time-wait", 5301, 1), 1, "a in TIME_WAIT");
            let seq = fin_end(&f2, 5301).expect("b's FIN captured");
            raw_rst(5301, port, seq);
            assert_eq!(wait_for(&ns2, "time-wait", 5301, 0), 0, "the RST ended TIME_WAIT");
        },
        |mut s| {
            let mut buf = [0u8; 1];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
            assert_eq!(s.read(&mut buf).unwrap(), 0);
            pause(100);
        },
    );
    assert_eq!(f, file);
    let (a, b) = paths(&f);
    assert_eq!(a, with(OPEN_A, &["FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT", "CLOSED"]));
    assert_eq!(b, with(OPEN_B, &["CLOSE_WAIT", "LAST_ACK", "CLOSED"]));
    assert_eq!(last_of(&f, "a"), ("CLOSED".into(), false, "RST".into()));
    check_plots(&f, &d);

    // LAST_ACK: a shuts down its sending side; b's FIN is dropped on its way into a (after the
    // capture point, nftables' input hook), so b waits in LAST_ACK; a, in FIN_WAIT_2, then
    // closes with SO_LINGER 0 and sends a RST.
    ns.exec(&["nft", "add table inet v22"]);
    ns.exec(&["nft", "add chain inet v22 in { type filter hook input priority 0 ; }"]);
    ns.exec(&["nft", "add rule inet v22 in tcp sport 5302 tcp flags & fin == fin drop"]);
    let ns2 = ns.name.clone();
    let f = record(
        &ns,
        &d,
        "rst-last-ack",
        5302,
        move |c| {
            c.shutdown(Shutdown::Write).unwrap();
            assert_eq!(wait_for(&ns2, "last-ack", 5302, 1), 1, "b in LAST_ACK");
            linger0(&c);
            drop(c);
            assert_eq!(wait_for(&ns2, "last-ack", 5302, 0), 0, "the RST ended LAST_ACK");
        },
        |mut s| {
            let mut buf = [0u8; 1];
            assert_eq!(s.read(&mut buf).unwrap(), 0);
            pause(100);
        },
    );
    ns.exec(&["nft", "delete table inet v22"]);
    let (a, b) = paths(&f);
    // a never got b's FIN: its RST does not acknowledge it, which places the FIN's arrival
    // after the RST (the state machine's acknowledgment rule), when a is closed already.
    assert_eq!(a, with(OPEN_A, &["FIN_WAIT_1", "FIN_WAIT_2", "CLOSED"]));
    assert_eq!(b, with(OPEN_B, &["CLOSE_WAIT", "LAST_ACK", "CLOSED"]));
    assert_eq!(last_of(&f, "a"), ("CLOSED".into(), true, "RST,ACK".into()));
    assert_eq!(last_of(&f, "b"), ("CLOSED".into(), false, "RST,ACK".into()));
    check_plots(&f, &d);

    // CLOSING: a simultaneous close as in the closing variants' test (a slow queue holds the
    // FINs), and once both FINs have left, everything but RSTs is dropped as it is sent
    // (nftables' output hook, before the capture point): the ACKs of the FINs never go, both
    // stay in CLOSING. b then closes with the 1500 bytes a sent still unread, and Linux sends a
    // RST (data lost: RFC 9293 §3.10.4 leaves it to the application).
    let ns2 = ns.name.clone();
    // Three meetings: both shut down together; both FINs sent; both seen in CLOSING.
    let step = std::sync::Arc::new(std::sync::Barrier::new(2));
    let step2 = step.clone();
    let f = record(
        &ns,
        &d,
        "rst-closing",
        5303,
        move |mut c| {
            let exec = |cmd: &[&str]| {
                let st = Command::new("ip").args(["netns", "exec", &ns2]).args(cmd).status().unwrap();
                assert!(st.success(), "{cmd:?}");
            };
            c.set_nodelay(true).unwrap();
            pause(50);
            exec(&[
                "tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "8kbit", "burst", "1600", "latency", "5s",
            ]);
            c.write_all(&[1u8; 1500]).unwrap();
            pause(5);
            step.wait();
            c.shutdown(Shutdown::Write).unwrap();
            // Both FINs have passed the output hook: what follows is dropped there but RSTs.
            step.wait();
            exec(&["nft", "add table inet v22"]);
            exec(&["nft", "add chain inet v22 out { type filter hook output priority 0 ; }"]);
            exec(&["nft", "add rule inet v22 out tcp flags & rst != rst drop"]);
            assert_eq!(wait_for(&ns2, "closing", 5303, 2), 2, "both in CLOSING");
            step.wait();
            assert_eq!(wait_for(&ns2, "closing", 5303, 0), 0, "the RST ended CLOSING on both sides");
            drop(c);
        },
        move |s| {
            step2.wait();
            s.shutdown(Shutdown::Write).unwrap();
            step2.wait();
            step2.wait();
            drop(s);
        },
    );
    ns.exec(&["nft", "delete table inet v22"]);
    ns.exec(&["tc", "qdisc", "del", "dev", "lo", "root"]);
    let (a, b) = paths(&f);
    assert_eq!(a, with(OPEN_A, &["FIN_WAIT_1", "CLOSING", "CLOSED"]));
    assert_eq!(b, with(OPEN_B, &["FIN_WAIT_1", "CLOSING", "CLOSED"]));
    assert_eq!(last_of(&f, "a"), ("CLOSED".into(), false, "RST,ACK".into()));
    assert_eq!(last_of(&f, "b"), ("CLOSED".into(), true, "RST,ACK".into()));
    check_plots(&f, &d);
    if std::env::var_os("TCPSCOPE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&d);
    } else {
        eprintln!("kept {}", d.display());
    }
}

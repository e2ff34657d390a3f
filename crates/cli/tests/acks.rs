//! The ACK strategy (`stats`' acknowledgment fields, docs/statistics.md#acknowledgment-strategy)
//! against real Linux receivers whose behaviour is known: request/response connections recorded
//! on loopback in network namespaces this test makes (named `a22b-PID-TAG`, removed when done),
//! so the capture is beside the receiver and the delays are exact.
//!
//! - Nagle on and delayed ACKs (Linux's defaults), two small writes then a read: the server
//!   holds its ACK of the first write (it has nothing to send yet) until its 40 ms timer fires,
//!   and Nagle holds the second write until that ACK (seed 001's `-D` story).
//! - The same with `TCP_QUICKACK` set by the server before every read: no delayed ACKs.
//! - `TCP_NODELAY` on the client: both writes leave at once and are acknowledged together.

mod util;

use std::io::{BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use util::netns::Netns;

const ROUNDS: usize = 40;

/// A tcpdump on `lo` of the namespace, writing `file`.
struct Tcpdump(Child);

impl Tcpdump {
    fn start(ns: &Netns, file: &Path) -> Option<Tcpdump> {
        let child = Command::new("ip")
            .args(["netns", "exec", &ns.name, "tcpdump", "-i", "lo", "--immediate-mode", "-U", "-s", "256", "-w"])
            .arg(file)
            .arg("tcp")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            eprintln!("skipping: tcpdump is not installed");
            return None;
        };
        // tcpdump says "listening on lo" once its filter is attached; the packets after count.
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let t = Instant::now();
        while !line.contains("listening on") {
            line.clear();
            if err.read_line(&mut line).unwrap_or(0) == 0 {
                eprintln!("skipping: tcpdump could not capture here");
                let _ = child.wait();
                return None;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "tcpdump did not start");
        }
        // Its stderr keeps a reader, so that tcpdump never blocks writing its summary.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Some(Tcpdump(child))
    }

    fn stop(mut self) {
        std::thread::sleep(Duration::from_millis(300));
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0.id() as i32), nix::sys::signal::Signal::SIGTERM);
        let _ = self.0.wait();
    }
}

fn set_int(fd: i32, level: i32, opt: i32, v: i32) {
    // SAFETY: a valid socket, a pointer to an int and its size.
    let r = unsafe {
        nix::libc::setsockopt(fd, level, opt, &v as *const i32 as *const _, std::mem::size_of::<i32>() as u32)
    };
    assert_eq!(r, 0, "setsockopt {opt}");
}

/// `ROUNDS` requests of two 100-byte writes, each answered with 100 bytes, between a client
/// and a server in `ns`; the client disables Nagle when `nodelay`, the server asks for quick
/// ACKs before every read when `quickack`.
fn request_response(ns: &Netns, nodelay: bool, quickack: bool) {
    ns.run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 200];
            for _ in 0..ROUNDS {
                if quickack {
                    set_int(s.as_raw_fd(), nix::libc::IPPROTO_TCP, nix::libc::TCP_QUICKACK, 1);
                }
                s.read_exact(&mut buf).unwrap();
                s.write_all(&buf[..100]).unwrap();
            }
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_nodelay(nodelay).unwrap();
        let mut answer = [0u8; 100];
        for _ in 0..ROUNDS {
            c.write_all(&[1u8; 100]).unwrap();
            c.write_all(&[2u8; 100]).unwrap();
            c.read_exact(&mut answer).unwrap();
        }
        server.join().unwrap();
        drop(c);
    })
}

/// Records one run and returns its connection's `stats` JSON.
fn record(tag: &str, nodelay: bool, quickack: bool) -> Option<(Value, util::TempPath)> {
    let ns = Netns::with_prefix("a22b", tag)?;
    let file = util::tempfile(&format!("acks-{tag}"), "rr.pcap");
    let dump = Tcpdump::start(&ns, &file)?;
    request_response(&ns, nodelay, quickack);
    dump.stop();
    drop(ns);
    let doc = util::json(&["stats", file.to_str().unwrap()]);
    let conns = doc["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1, "one connection: {doc}");
    Some((conns[0].clone(), file))
}

/// `screen`'s verdict of the one connection in `file`.
fn verdict(file: &Path) -> String {
    let doc = util::json(&["screen", "--all", file.to_str().unwrap()]);
    doc["connections"][0]["verdict"].as_str().unwrap().to_string()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn nagle_and_delayed_acks_make_40_ms_rounds_quickack_and_nodelay_do_not() {
    let Some((nagle, nagle_file)) = record("nagle", false, false) else { return };
    let server = &nagle["b2a"];
    eprintln!("nagle: server {server}");
    // Linux starts in quick-ACK mode and delays from then on: most requests wait for the timer.
    let delayed = server["delayed_acks"].as_u64().unwrap();
    assert!(delayed >= ROUNDS as u64 / 2, "delayed ACKs: {delayed} of {ROUNDS}");
    let timer = f(&server["delayed_ack_timer_ms"]);
    assert!((39.0..=60.0).contains(&timer), "Linux's delayed-ACK timer is 40 ms: {timer}");
    // Beside the receiver: the half-loop is the kernel's turnaround.
    assert!(f(&server["ack_halfloop_ms"]) < 1.0, "{}", server["ack_halfloop_ms"]);
    assert_eq!(server["stretch_acks"], 0);
    // 40 rounds of 40 ms.
    assert!(f(&nagle["duration_s"]) > 0.02 * ROUNDS as f64, "{}", nagle["duration_s"]);

    // screen says why the rounds took 40 ms (seed 001's -D story), and only then.
    let v = verdict(&nagle_file);
    assert!(v.contains("interact with Nagle"), "{v}");
    let Some((quick, quick_file)) = record("quick", false, true) else { return };
    assert!(!verdict(&quick_file).contains("Nagle"));
    let server = &quick["b2a"];
    eprintln!("quickack: server {server}");
    assert_eq!(server["delayed_acks"], 0, "TCP_QUICKACK: no ACK waits for the timer");
    assert!(server["quick_acks"].as_u64().unwrap() >= ROUNDS as u64, "{}", server["quick_acks"]);
    assert!(server["quick_ack_episodes"].as_u64().unwrap() >= 1);
    assert!(server["delayed_ack_timer_ms"].is_null());
    assert!(f(&quick["duration_s"]) < 0.01 * ROUNDS as f64, "{}", quick["duration_s"]);

    let Some((nodelay, nodelay_file)) = record("nodelay", true, false) else { return };
    assert!(!verdict(&nodelay_file).contains("Nagle"));
    let server = &nodelay["b2a"];
    eprintln!("nodelay: server {server}");
    // Both writes leave at once and are acknowledged together, at once (two segments: the
    // every-second-segment rule): one ACK per two data segments, none delayed.
    assert!(server["delayed_acks"].as_u64().unwrap() <= 2, "{}", server["delayed_acks"]);
    let per = f(&server["acks_per_data_segment"]);
    assert!((0.45..=0.6).contains(&per), "ACKs per data segment: {per}");
    assert_eq!(f(&quick["b2a"]["acks_per_data_segment"]), 1.0, "TCP_QUICKACK: one ACK per segment");
    assert!(f(&nodelay["duration_s"]) < 0.01 * ROUNDS as f64, "{}", nodelay["duration_s"]);
    // Half the ACKs: half the ACK overhead of the quick ACKs' one per segment.
    assert!(f(&server["ack_overhead"]) < f(&quick["b2a"]["ack_overhead"]));
}

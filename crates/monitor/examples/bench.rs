//! The monitor's cost at scale (issue 19): N loopback connections (2N sockets) carrying a little
//! traffic, sampled at 10 Hz for some seconds; prints the sampler's CPU (share of one core), the
//! recording's bytes per socket-sample, and the same dumps done as flent does, by running
//! `ss -tin` and parsing its text, for comparison.
//!
//! `cargo run --release -p tcpscope-monitor --example bench -- [PAIRS] [SECONDS]` (default
//! 5000 pairs = 10,000 sockets, 10 s). Needs an open-file limit above 2 × PAIRS + 100
//! (`ulimit -n`); `bench/monitor.sh` sets it. Run it in a namespace of its own or on an idle
//! machine: every TCP socket of the namespace is sampled.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tcpscope_monitor::record::{self, Options};

/// CPU seconds (user + system) of this process, and of its waited-for children.
fn cpu() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<f64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    // Fields after ')' start at number 3: utime 14, stime 15, cutime 16, cstime 17 (USER_HZ 100).
    let g = |n: usize| f.get(n - 3).copied().unwrap_or(0.0) / 100.0;
    (g(14) + g(15), g(16) + g(17))
}

/// User and system CPU seconds of the calling thread (the netlink dumps' kernel time included).
fn user_sys() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let after = s.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<f64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    (f.get(11).copied().unwrap_or(0.0) / 100.0, f.get(12).copied().unwrap_or(0.0) / 100.0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let pairs: usize = args.next().map_or(5000, |a| a.parse().expect("PAIRS"));
    let secs: f64 = args.next().map_or(10.0, |a| a.parse().expect("SECONDS"));
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().unwrap();
    let mut clients = Vec::with_capacity(pairs);
    let mut servers = Vec::with_capacity(pairs);
    for _ in 0..pairs {
        clients.push(TcpStream::connect(addr).expect("connect (is the open-file limit high enough?)"));
        servers.push(l.accept().expect("accept").0);
    }
    eprintln!("{} sockets open", 2 * pairs);
    // Traffic: every 100 ms, 100 bytes on every client; the servers read it.
    let stop = Arc::new(AtomicBool::new(false));
    let st = Arc::clone(&stop);
    let traffic = std::thread::spawn(move || {
        let msg = [7u8; 100];
        let mut buf = [0u8; 100];
        while !st.load(Ordering::Relaxed) {
            let t = Instant::now();
            for (c, s) in clients.iter_mut().zip(servers.iter_mut()) {
                let _ = c.write_all(&msg);
                let _ = s.read_exact(&mut buf);
            }
            std::thread::sleep(Duration::from_millis(100).saturating_sub(t.elapsed()));
        }
        (clients, servers)
    });
    // 1. The traffic alone, as a baseline.
    let (c0, _) = cpu();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (c1, _) = cpu();
    let base = (c1 - c0) / secs;
    // 2. The monitor recording at 10 Hz.
    let path = std::env::temp_dir().join(format!("tcpscope-bench-{}.tsm", std::process::id()));
    let opts = Options {
        filter: format!("port {}", addr.port()),
        interval: Duration::from_millis(100),
        pid: None,
        duration: Some(Duration::from_secs_f64(secs)),
        events: None,
        cpu_every: Some(Duration::from_millis(100)),
        to: None,
        to_grace: Duration::ZERO,
    };
    let never = AtomicBool::new(false);
    let (c2, _) = cpu();
    let (u2, s2) = user_sys();
    let t = Instant::now();
    let r = record::run(&opts, Some(&path), None, &never, |_| {}).expect("monitor");
    let wall = t.elapsed().as_secs_f64();
    let (c3, _) = cpu();
    let (u3, s3) = user_sys();
    // The sampler runs on this thread: its own CPU time, kernel time of the dumps included.
    let mon = ((u3 - u2) + (s3 - s2)) / wall;
    println!(
        "monitor: {} sockets, {} dumps in {wall:.1} s ({} late), {} samples, {} bytes: {:.2} bytes/socket-sample; \
         CPU {:.1}% of one core (user {:.1}%, system {:.1}%; the whole process {:.1}%, traffic alone {:.1}%)",
        2 * pairs,
        r.dumps,
        r.overruns,
        r.samples,
        r.bytes,
        r.bytes as f64 / r.samples.max(1) as f64,
        mon * 100.0,
        (u3 - u2) / wall * 100.0,
        (s3 - s2) / wall * 100.0,
        (c3 - c2) / wall * 100.0,
        base * 100.0
    );
    let _ = std::fs::remove_file(&path);
    // 3. `ss -tin` at 10 Hz, its text parsed for cwnd, rtt and bytes_acked (flent's way).
    let (_, ch0) = cpu();
    let (pu0, ps0) = user_sys();
    let t = Instant::now();
    let (mut dumps, mut found, mut late) = (0u64, 0u64, 0u64);
    let mut next = Instant::now();
    let filter = format!("( sport = :{p} or dport = :{p} )", p = addr.port());
    while t.elapsed().as_secs_f64() < secs {
        let out = Command::new("ss").args(["-tin", &filter]).output().expect("run ss");
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines() {
            let mut cwnd = None;
            let mut rtt = None;
            let mut acked = None;
            for w in line.split_whitespace() {
                if let Some(v) = w.strip_prefix("cwnd:") {
                    cwnd = v.parse::<u64>().ok();
                } else if let Some(v) = w.strip_prefix("rtt:") {
                    rtt = v.split('/').next().and_then(|x| x.parse::<f64>().ok());
                } else if let Some(v) = w.strip_prefix("bytes_acked:") {
                    acked = v.parse::<u64>().ok();
                }
            }
            if cwnd.is_some() || rtt.is_some() || acked.is_some() {
                found += 1;
            }
        }
        dumps += 1;
        next += Duration::from_millis(100);
        match next.checked_duration_since(Instant::now()) {
            Some(d) => std::thread::sleep(d),
            None => late += 1,
        }
    }
    let wall = t.elapsed().as_secs_f64();
    let (_, ch1) = cpu();
    let (pu1, ps1) = user_sys();
    let parse = (pu1 - pu0) + (ps1 - ps0);
    println!(
        "ss -tin: {dumps} dumps in {wall:.1} s ({late} late), {found} sockets parsed: CPU {:.1}% of one core \
         (ss {:.1}%, reading and parsing its text {:.1}%)",
        ((ch1 - ch0) + parse) / wall * 100.0,
        (ch1 - ch0) / wall * 100.0,
        parse / wall * 100.0
    );
    stop.store(true, Ordering::Relaxed);
    let _ = traffic.join();
}

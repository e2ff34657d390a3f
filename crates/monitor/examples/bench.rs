//! The monitor's cost at scale (issue 19): N loopback connections (2N sockets) carrying a little
//! traffic, sampled at 10 Hz for some seconds; prints the sampler's CPU (share of one core), the
//! recording's bytes per socket-sample, and the same dumps done as flent does, by running
//! `ss -tin` and parsing its text, for comparison; then the kernel's part alone (bare dumps, not
//! decoded, with more and more extensions asked for): the floor of any `NETLINK_SOCK_DIAG` reader;
//! the monitor with the BPF sampler (`--sampler bpf`) beside the netlink one, and the BPF
//! iterator's passes read and not decoded.
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

use netlink_packet_core::{NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, NetlinkHeader, NetlinkMessage};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_SOCK_DIAG};
use tcpscope_monitor::bpf::BpfIter;
use tcpscope_monitor::filter::Filter;
use tcpscope_monitor::record::{self, Options};
use tcpscope_monitor::source::SamplerKind;

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

/// Minor page faults of the calling thread (new memory touched: system time).
fn minflt() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    s.rsplit_once(')').and_then(|x| x.1.split_whitespace().nth(7)).and_then(|x| x.parse().ok()).unwrap_or(0)
}

/// CPU time of the calling thread, ns (`/proc/thread-self/schedstat`: finer than the ticks of
/// `stat`, user and system together).
fn thread_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(0)
}

/// The kernel's part alone: `n` dumps of `family` at 10 Hz asking for `ext`, filtered in the
/// kernel by `filter`'s bytecode, the replies received and not decoded. Returns the thread's CPU
/// per dump (ms), the reply bytes per dump and the `recv` calls per dump.
fn bare_dumps(family: u8, ext: ExtensionFlags, filter: &str, n: u32) -> (f64, f64, f64) {
    let mut sock = Socket::new(NETLINK_SOCK_DIAG).expect("netlink socket");
    sock.bind_auto().expect("bind");
    sock.connect(&SocketAddr::new(0, 0)).expect("connect");
    let bc = Filter::parse(filter).expect("filter").bytecode().expect("bytecode");
    let req = InetRequest {
        family,
        protocol: IPPROTO_TCP,
        extensions: ext,
        states: StateFlags::all() - StateFlags::LISTEN - StateFlags::TIME_WAIT - StateFlags::SYN_RECV,
        socket_id: if family == AF_INET { SocketId::new_v4() } else { SocketId::new_v6() },
    };
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut msg = NetlinkMessage::new(header, SockDiagMessage::InetRequest(req).into());
    msg.finalize();
    let mut out = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut out);
    out.extend_from_slice(&((4 + bc.len()) as u16).to_ne_bytes());
    out.extend_from_slice(&1u16.to_ne_bytes());
    out.extend_from_slice(&bc);
    let len = out.len() as u32;
    out[0..4].copy_from_slice(&len.to_ne_bytes());
    let mut buf = Vec::with_capacity(1 << 16);
    let (mut cpu, mut bytes, mut recvs) = (0u64, 0u64, 0u64);
    let mut next = Instant::now();
    for _ in 0..n {
        let c0 = thread_ns();
        sock.send(&out, 0).expect("send");
        'dump: loop {
            buf.clear();
            sock.recv(&mut buf, 0).expect("recv");
            bytes += buf.len() as u64;
            recvs += 1;
            let mut at = 0;
            while at + 16 <= buf.len() {
                let len = u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
                let kind = u16::from_ne_bytes([buf[at + 4], buf[at + 5]]);
                if kind == NLMSG_DONE || kind == NLMSG_ERROR {
                    break 'dump;
                }
                at += (len.max(16) + 3) & !3;
            }
        }
        cpu += thread_ns() - c0;
        next += Duration::from_millis(100);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    (cpu as f64 / 1e6 / f64::from(n), bytes as f64 / f64::from(n), recvs as f64 / f64::from(n))
}

/// The object's `tcpscope_tcp_walk`, loaded: the tcp iterator with a program that does nothing.
fn walk_program() -> Result<aya::Ebpf, String> {
    let btf = aya::Btf::from_sys_fs().map_err(|e| e.to_string())?;
    let mut ebpf =
        aya::EbpfLoader::new().btf(Some(&btf)).load(tcpscope_monitor::bpf::OBJECT).map_err(|e| e.to_string())?;
    let prog: &mut aya::programs::Iter =
        ebpf.program_mut("tcpscope_tcp_walk").ok_or("no walk program")?.try_into().map_err(|e| format!("{e}"))?;
    prog.load("tcp", &btf).map_err(|e| e.to_string())?;
    Ok(ebpf)
}

/// One pass of the walk program, read to its (empty) end.
fn walk_pass(ebpf: &mut aya::Ebpf) -> Result<(), String> {
    let prog: &mut aya::programs::Iter =
        ebpf.program_mut("tcpscope_tcp_walk").ok_or("no walk program")?.try_into().map_err(|e| format!("{e}"))?;
    let id = prog.attach().map_err(|e| e.to_string())?;
    let mut f = prog.take_link(id).map_err(|e| e.to_string())?.into_file().map_err(|e| e.to_string())?;
    let mut sink = Vec::new();
    f.read_to_end(&mut sink).map_err(|e| e.to_string())?;
    Ok(())
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
    // 2. The monitor recording at 10 Hz, with each sampler in turn.
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
        cpu_budget: None,
    };
    let never = AtomicBool::new(false);
    for sampler in [SamplerKind::Netlink, SamplerKind::Bpf] {
        let (c2, _) = cpu();
        let (u2, s2) = user_sys();
        let f2 = minflt();
        let t = Instant::now();
        let r = match record::run_with(&opts, sampler, Some(&path), None, &never, |_| {}) {
            Ok(r) => r,
            Err(e) => {
                println!("monitor ({sampler:?}): not run: {e}");
                continue;
            }
        };
        let wall = t.elapsed().as_secs_f64();
        let (c3, _) = cpu();
        let (u3, s3) = user_sys();
        let f3 = minflt();
        // The sampler runs on this thread: its own CPU time, kernel time of the dumps included.
        let mon = ((u3 - u2) + (s3 - s2)) / wall;
        println!(
            "monitor ({} sampler): {} sockets, {} dumps in {wall:.1} s ({} late), {} samples, {} bytes: {:.2} \
             bytes/socket-sample; {:.2} ms CPU and {} page faults per dump; CPU {:.1}% of one core (user {:.1}%, \
             system {:.1}%; the whole process {:.1}%, traffic alone {:.1}%)",
            r.sampler,
            2 * pairs,
            r.dumps,
            r.overruns,
            r.samples,
            r.bytes,
            r.bytes as f64 / r.samples.max(1) as f64,
            mon * wall * 1000.0 / r.dumps.max(1) as f64,
            (f3 - f2) / r.dumps.max(1),
            mon * 100.0,
            (u3 - u2) / wall * 100.0,
            (s3 - s2) / wall * 100.0,
            (c3 - c2) / wall * 100.0,
            base * 100.0
        );
        let _ = std::fs::remove_file(&path);
    }
    // 2b. The same with the CLI's default budget (5 % of one core with the default interval):
    // the sampler spaces its dumps out to stay within it.
    let budget = Options { cpu_budget: Some(0.05), ..opts.clone() };
    let (u4, s4) = user_sys();
    let t = Instant::now();
    let r = record::run(&budget, Some(&path), None, &never, |_| {}).expect("monitor");
    let wall = t.elapsed().as_secs_f64();
    let (u5, s5) = user_sys();
    println!(
        "monitor, 5% budget: {} dumps in {wall:.1} s ({} put off by the budget, one every {:.0} ms): CPU {:.1}% of \
         one core (user {:.1}%, system {:.1}%)",
        r.dumps,
        r.stretched,
        wall * 1000.0 / r.dumps.max(1) as f64,
        ((u5 - u4) + (s5 - s4)) / wall * 100.0,
        (u5 - u4) / wall * 100.0,
        (s5 - s4) / wall * 100.0
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
        "ss -tin: {dumps} dumps in {wall:.1} s ({late} late), {found} sockets parsed: {:.2} ms CPU per dump; \
         CPU {:.1}% of one core (ss {:.1}%, reading and parsing its text {:.1}%)",
        ((ch1 - ch0) + parse) * 1000.0 / dumps.max(1) as f64,
        ((ch1 - ch0) + parse) / wall * 100.0,
        (ch1 - ch0) / wall * 100.0,
        parse / wall * 100.0
    );
    // 4. The kernel's part alone (the floor any NETLINK_SOCK_DIAG reader pays): bare dumps at
    // 10 Hz, replies received and not decoded, asking for more and more; the variants take turns
    // (rounds of 5 dumps) so that a change in the machine's load spreads over all of them.
    let filter = format!("port {}", addr.port());
    let (info, cong, mem, vegas) =
        (ExtensionFlags::INFO, ExtensionFlags::CONG, ExtensionFlags::MEMINFO, ExtensionFlags::VEGASINFO);
    let variants = [
        ("IPv4, no extensions", AF_INET, ExtensionFlags::empty()),
        ("IPv4, INFO", AF_INET, info),
        ("IPv4, INFO CONG", AF_INET, info | cong),
        ("IPv4, INFO MEMINFO", AF_INET, info | mem),
        ("IPv4, INFO CONG MEMINFO VEGASINFO", AF_INET, info | cong | mem | vegas),
        ("IPv6 (no socket matches), INFO", AF_INET6, info),
    ];
    let rounds = (secs / 2.5).max(1.0) as u32;
    let mut sums = vec![(0.0, 0.0, 0.0); variants.len()];
    for _ in 0..rounds {
        for (v, sum) in variants.iter().zip(sums.iter_mut()) {
            let (ms, bytes, recvs) = bare_dumps(v.1, v.2, &filter, 5);
            sum.0 += ms / f64::from(rounds);
            sum.1 += bytes / f64::from(rounds);
            sum.2 += recvs / f64::from(rounds);
        }
    }
    // The BPF sampler's kernel part: the iterator's passes at 10 Hz, records read and not
    // decoded, and the same walk with a program that writes nothing (the iterator's own cost),
    // in turns of 5.
    match (BpfIter::new(Filter::parse(&filter).expect("filter")).map_err(|e| e.to_string()), walk_program()) {
        (Ok(mut it), Ok(mut walk)) => {
            let (mut cpu_ns, mut walk_ns, mut bytes) = (0u64, 0u64, 0usize);
            let mut next = Instant::now();
            for _ in 0..rounds {
                for k in 0..10 {
                    let c0 = thread_ns();
                    if k < 5 {
                        bytes += it.pass().expect("bpf iterator pass");
                        cpu_ns += thread_ns() - c0;
                    } else {
                        walk_pass(&mut walk).expect("bpf iterator walk");
                        walk_ns += thread_ns() - c0;
                    }
                    next += Duration::from_millis(100);
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                }
            }
            let n = f64::from(5 * rounds);
            for (what, ns) in [("the sampler's program", cpu_ns), ("a program that writes nothing", walk_ns)] {
                let ms = ns as f64 / 1e6 / n;
                println!(
                    "kernel floor: BPF iterator pass, {what}: {ms:.2} ms CPU per pass = {:.1}% of one core at 10 Hz",
                    ms * 10.0 / 1000.0 * 100.0
                );
            }
            println!("  ({:.0} bytes of records per socket)", bytes as f64 / n / (2 * pairs) as f64);
        }
        (Err(e), _) | (_, Err(e)) => println!("kernel floor: BPF iterator: not run: {e}"),
    }
    for ((what, ..), (ms, bytes, recvs)) in variants.iter().zip(sums) {
        // At 10 Hz, X ms of CPU per dump is X ms per 100 ms: 10·X ‰, X % of one core.
        println!(
            "kernel floor: {what}: {ms:.2} ms CPU per dump = {:.1}% of one core at 10 Hz, {:.0} bytes per socket, \
             {recvs:.0} recv calls of {:.1} KB",
            ms * 10.0 / 1000.0 * 100.0,
            bytes / (2 * pairs) as f64,
            bytes / recvs.max(1.0) / 1024.0
        );
    }
    stop.store(true, Ordering::Relaxed);
    let _ = traffic.join();
}

//! `tcpscope lab run`: every sweep point × trial in its own directory, one after the other.
//!
//! A run builds three namespaces, sender — router — receiver, joined by veth links:
//!
//! ```text
//!  [snd] snd0 10.9.1.1 ── rtr0 10.9.1.254 [rtr] rtr1 10.9.2.254 ── rcv0 10.9.2.1 [rcv]
//! ```
//!
//! With `path.delay`, a fourth namespace sits on the sender's link, `snd0 ── dly0 [dly] dly1 ──
//! rtr0`, where the delay forwarder ([`crate::delay`]) holds every frame, both ways, for the
//! delay; its per-frame logs are the run's `delay-a2b.log` and `delay-b2a.log`.
//!
//! The router forwards; its egress towards the receiver (`rtr1`) is the bottleneck: an htb
//! class at `path.rate` over a pfifo/bfifo (or codel) queue of `path.queue_*`; `rtr0` likewise
//! for `path.reverse_rate`. Random loss is an nftables rule in the router's forward hook
//! (`numgen random mod 1000000 < p·10⁶ counter drop`), per direction. tcpdump captures the
//! sender's and the receiver's link (headers only, 128 bytes). The ttcp transfer runs in this
//! process, on two threads that joined the sender's and the receiver's namespace.
//!
//! Each run's directory (`OUT/pNN-key=value,.../tK/`) holds `run.json` (the run's settings),
//! `snd.pcap` and `rcv.pcap`, `queue.csv` (the bottleneck queue every 10 ms, [`crate::queue`]),
//! `tcpinfo.tsm` (the sender's tcp_info every 10 ms, [`crate::tcpinfo`]),
//! and `result.json`: status (`ok` or `failed` with the error), both
//! ttcp reports, the router's qdisc counters (`tc -s -j qdisc`) and nftables drop counters, and
//! tcpdump's own packet counts. A run whose `result.json` says `ok` is skipped when the
//! experiment is run again into the same directory (resume); a failed run is run again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::experiment::{Discipline, Experiment, Plan, Point};
use crate::netns::{Namespaces, Proc, in_ns, spawn_in};
use crate::ttcp;

const RCV_IP: &str = "10.9.2.1";

/// What a run left in its `result.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// `"ok"` or `"failed"`.
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Seconds the run took, setup and teardown included.
    pub wall_s: f64,
    /// The transmitter's ttcp report.
    #[serde(default)]
    pub sender: Option<Value>,
    /// The receiver's ttcp report.
    #[serde(default)]
    pub receiver: Option<Value>,
    /// The router's counters: `forward` / `reverse` qdisc stats (tc's JSON), and nftables drops.
    #[serde(default)]
    pub router: Option<Router>,
    /// tcpdump's closing counts (`N packets captured`, `N packets dropped by kernel`).
    #[serde(default)]
    pub capture: Vec<String>,
    /// tcp_info samples of the sender's socket recorded in `tcpinfo.tsm` (every 10 ms).
    #[serde(default)]
    pub tcp_info_samples: Option<u64>,
    /// The delay forwarder's statistics (sender → router, router → sender), with `path.delay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_forwarder: Option<[crate::delay::Stats; 2]>,
}

/// The router's ground truth for one run.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Router {
    /// Packets the bottleneck queue (sender → receiver) dropped (its leaf qdisc's drops).
    pub queue_drops: u64,
    /// Packets the reverse queue dropped.
    pub reverse_queue_drops: u64,
    /// Packets the random-loss rule dropped, sender → receiver.
    pub loss_drops: u64,
    /// Packets the random-loss rule dropped, receiver → sender.
    pub reverse_loss_drops: u64,
    /// `tc -s -j qdisc show dev rtr1` at the end of the run.
    pub qdisc_forward: Value,
    /// `tc -s -j qdisc show dev rtr0`.
    pub qdisc_reverse: Value,
}

/// What `run.json` holds: enough to know what a run was, and to tell whether a directory
/// holds this experiment's runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    /// The experiment's name.
    pub experiment: String,
    /// The sweep point's index.
    pub point: usize,
    /// The swept keys and their values at this point.
    pub params: serde_json::Map<String, Value>,
    /// The trial (1-based).
    pub trial: u32,
    /// Every setting of the run.
    pub settings: Experiment,
}

/// Set by SIGINT/SIGTERM: the run in progress is abandoned (its namespaces and processes
/// removed) and no further run starts.
fn interrupted(flag: &AtomicBool) -> bool {
    flag.load(Ordering::Relaxed)
}

/// Runs every point × trial of the plan into `out`; prints one line per run on stderr.
/// Returns (runs done now, skipped as done before, failed).
pub fn run_plan(plan: &Plan, out: &Path) -> Result<(usize, usize, usize), String> {
    for tool in ["ip", "tc", "nft", "tcpdump"] {
        if which(tool).is_none() {
            return Err(format!("`{tool}` not found: the lab needs iproute2, nftables and tcpdump"));
        }
    }
    if !plan.base.hosts.offload && which("ethtool").is_none() {
        return Err("`ethtool` not found: needed to turn offloads off (or set hosts.offload = true)".into());
    }
    if !nix::unistd::geteuid().is_root() {
        return Err("the lab needs root (network namespaces, qdiscs, packet capture)".into());
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(|e| format!("signal handler: {e}"))?;
    }
    for n in crate::netns::remove_stale() {
        eprintln!("lab: removed namespace {n}, left by a lab that no longer runs");
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    // One lab per directory: two writing the same runs would mix their captures.
    let lock_path = out.join(".lock");
    let lock_file = std::fs::File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    let _lock = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| format!("{}: another `lab run` is using this directory ({e})", out.display()))?;
    let total = plan.points.len() * plan.base.trials as usize;
    let (mut done, mut skipped, mut failed) = (0, 0, 0);
    let mut seq = 0;
    for p in &plan.points {
        for trial in 1..=p.exp.trials {
            seq += 1;
            if interrupted(&stop) {
                return Err(format!("interrupted; {done} runs done, {skipped} skipped, {failed} failed"));
            }
            let dir = out.join(p.dir_name()).join(format!("t{trial}"));
            let info = RunInfo {
                experiment: p.exp.name.clone(),
                point: p.index,
                params: p.values.iter().map(|(k, v)| (k.clone(), toml_json(v))).collect(),
                trial,
                settings: p.exp.clone(),
            };
            let label = format!("[{seq}/{total}] {}/t{trial}", p.dir_name());
            if previous(&dir, &info)? == Some(true) {
                skipped += 1;
                eprintln!("lab: {label}: done before, skipped");
                continue;
            }
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            write_json(&dir.join("run.json"), &info)?;
            let _ = std::fs::remove_file(dir.join("result.json"));
            let t = Instant::now();
            let res = run_one(p, &dir, &stop);
            let wall_s = t.elapsed().as_secs_f64();
            let result = match res {
                Ok(mut r) => {
                    r.wall_s = wall_s;
                    done += 1;
                    let rx = r.receiver.as_ref().and_then(|v| v["bytes"].as_u64()).unwrap_or(0);
                    let real = r.receiver.as_ref().and_then(|v| v["real_s"].as_f64()).unwrap_or(0.0);
                    eprintln!(
                        "lab: {label}: ok, {rx} bytes in {real:.2} s = {:.2} Mbit/s (ttcp -r)",
                        rx as f64 * 8.0 / real.max(1e-3) / 1e6
                    );
                    r
                }
                Err(e) => {
                    if interrupted(&stop) {
                        // Not a result: the run will be done again on resume.
                        let _ = std::fs::remove_file(dir.join("run.json"));
                        return Err(format!("interrupted during {label}; {done} runs done, {skipped} skipped"));
                    }
                    failed += 1;
                    eprintln!("lab: {label}: FAILED: {e}");
                    RunResult {
                        status: "failed".into(),
                        error: Some(e),
                        wall_s,
                        sender: None,
                        receiver: None,
                        router: None,
                        capture: Vec::new(),
                        tcp_info_samples: None,
                        delay_forwarder: None,
                    }
                }
            };
            write_json(&dir.join("result.json"), &result)?;
        }
    }
    Ok((done, skipped, failed))
}

/// Whether the run in `dir` was done before: `Some(true)` finished with these settings,
/// `Some(false)` present but failed or unfinished, `None` never started. A directory holding a
/// run of *different* settings is an error (two experiments in one directory).
fn previous(dir: &Path, info: &RunInfo) -> Result<Option<bool>, String> {
    let Ok(text) = std::fs::read_to_string(dir.join("run.json")) else { return Ok(None) };
    let old: RunInfo = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", dir.join("run.json").display()))?;
    if old != *info {
        return Err(format!(
            "{} holds a run with other settings (the experiment file changed?); use another output directory",
            dir.display()
        ));
    }
    let ok = std::fs::read_to_string(dir.join("result.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<RunResult>(&t).ok())
        .is_some_and(|r| r.status == "ok");
    Ok(Some(ok))
}

fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text + "\n").map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A TOML value as JSON.
pub fn toml_json(v: &toml::Value) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// Builds the path, runs the transfer with both captures, collects the router's counters.
fn run_one(p: &Point, dir: &Path, stop: &AtomicBool) -> Result<RunResult, String> {
    let e = &p.exp;
    // hosts.cc is set on the sockets (TCP_CONGESTION, as ttcp --cc): a namespace's default
    // (net.ipv4.tcp_congestion_control) may only name the kernel's *allowed* algorithms.
    // The forwarder is on the path for a delay or for reordering.
    let delay = (e.path.delay.is_some_and(|d| d.0 > 0) || e.path.reorder > 0.0)
        .then(|| Duration::from_micros(e.path.delay.map_or(0, |d| d.0)));
    let roles: &[&str] = if delay.is_some() { &["snd", "dly", "rtr", "rcv"] } else { &["snd", "rtr", "rcv"] };
    let ns = Namespaces::new(roles)?;
    let (snd, rtr, rcv) = (ns.name("snd").to_string(), ns.name("rtr").to_string(), ns.name("rcv").to_string());
    let dly = delay.map(|_| ns.name("dly").to_string());
    build_path(e, &snd, &rtr, &rcv, dly.as_deref())?;
    // Declared after the namespaces: stopped before they are removed.
    let forwarder = match (delay, &dly) {
        (Some(d), Some(n)) => {
            let gap = Duration::from_micros(e.path.reorder_gap.map_or(1000, |g| g.0));
            let forward = crate::delay::Effect { delay: d, reorder: e.path.reorder, gap };
            let back = crate::delay::Effect { delay: d, reorder: 0.0, gap };
            Some(crate::delay::Forwarder::start(
                n,
                "dly0",
                "dly1",
                [forward, back],
                [dir.join("delay-a2b.log"), dir.join("delay-b2a.log")],
            )?)
        }
        _ => None,
    };
    let mut caps = Vec::new();
    let captured: &[(&String, &str, &str)] =
        if e.capture { &[(&snd, "snd0", "snd.pcap"), (&rcv, "rcv0", "rcv.pcap")] } else { &[] };
    for &(n, dev, file) in captured {
        let f = dir.join(file);
        let fs = f.to_str().ok_or("output path is not UTF-8")?;
        let mut c = Proc::spawn(
            &format!("tcpdump on {dev}"),
            &[
                "ip",
                "netns",
                "exec",
                n,
                "tcpdump",
                "-i",
                dev,
                "-n",
                "-s",
                "128",
                "--immediate-mode",
                "-U",
                "-Z",
                "root",
                "-w",
                fs,
                "tcp",
            ],
        )?;
        c.wait_for("listening on", Duration::from_secs(10))?;
        caps.push(c);
    }
    let timeout = Duration::from_secs_f64(e.timeout);
    let sampler = crate::queue::Sampler::start(&rtr, "rtr1", dir.join("queue.csv"))?;
    let recorder =
        crate::tcpinfo::Recorder::start(&format!("dport {}", e.traffic.port), &dir.join("tcpinfo.tsm"), Some(&snd))?;
    let rcfg = ttcp::Config {
        transmit: false,
        buflen: e.traffic.length as usize,
        nbuf: e.traffic.count.unwrap_or(2048),
        port: e.traffic.port,
        sockbufsize: e.hosts.rcvbuf,
        nodelay: false,
        data: ttcp::Data::Pattern,
        align: (16384, 0),
        cc: e.hosts.cc.clone(),
        time: None,
        io_timeout: Some(timeout),
        host: None,
        quickack: e.hosts.quickack,
        bind: std::net::Ipv4Addr::UNSPECIFIED.into(),
    };
    let tcfg = ttcp::Config {
        transmit: true,
        sockbufsize: e.hosts.sndbuf,
        nodelay: !e.hosts.nagle,
        time: e.traffic.seconds.map(Duration::from_secs_f64),
        host: Some(RCV_IP.into()),
        quickack: false,
        ..rcfg.clone()
    };
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let receiver = spawn_in(&rcv, move || {
        let r = ttcp::Receiver::bind(rcfg, &mut |_| {});
        match r {
            Ok(r) => {
                let _ = ready_tx.send(Ok(()));
                r.run(&mut std::io::sink(), &mut |_| {}).map_err(|e| format!("ttcp -r: {e}"))
            }
            Err(e) => {
                let _ = ready_tx.send(Err(format!("ttcp -r: {e}")));
                Err(format!("ttcp -r: {e}"))
            }
        }
    });
    ready_rx.recv_timeout(Duration::from_secs(10)).map_err(|_| "ttcp -r did not start".to_string())??;
    let sender = spawn_in(&snd, move || {
        ttcp::transmit(&tcfg, &mut std::io::empty(), &mut |_| {}).map_err(|e| format!("ttcp -t: {e}"))
    });
    // Wait for the sender, then the receiver, watching for Ctrl-C; past the timeout the
    // sockets' own timeouts end the threads, so the limits here only add a margin. A failed
    // sender ends the run at once (the receiver's thread ends by its socket timeout).
    let joined = |h: std::thread::JoinHandle<Result<Result<ttcp::Report, String>, String>>| {
        h.join().map_err(|_| "a ttcp thread panicked".to_string())?.and_then(|r| r)
    };
    let t0 = Instant::now();
    let wait = |h: &std::thread::JoinHandle<_>, limit: Duration| -> Result<(), String> {
        while !h.is_finished() {
            if interrupted(stop) {
                return Err("interrupted".into());
            }
            if t0.elapsed() > limit {
                return Err(format!("the transfer did not end within timeout = {} s", e.timeout));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    };
    wait(&sender, timeout + Duration::from_secs(5))?;
    let s = joined(sender)?;
    wait(&receiver, timeout + Duration::from_secs(10))?;
    let r = joined(receiver)?;
    if s.bytes != r.bytes {
        return Err(format!("ttcp -t sent {} bytes but ttcp -r received {}", s.bytes, r.bytes));
    }
    // The last ACKs and FINs into the captures. (tcpdump runs in immediate mode: without it
    // the packets still in libpcap's ring when tcpdump is stopped are lost — a second's worth
    // at the end of every capture.)
    std::thread::sleep(Duration::from_millis(300));
    sampler.stop()?;
    let tcp_info_samples = Some(recorder.stop()?);
    let router = router_counters(&rtr)?;
    let mut capture = Vec::new();
    for c in caps {
        let lines: Vec<String> = c.stop().into_iter().filter(|l| l.contains("packets")).collect();
        // An incomplete capture would make the analysis wrong: fail the run instead.
        let count = |what: &str| {
            lines.iter().find(|l| l.ends_with(what)).and_then(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        };
        let (captured, filtered) = (count("packets captured"), count("packets received by filter"));
        if count("packets dropped by kernel").unwrap_or(0) > 0 || captured < filtered {
            return Err(format!("a capture is incomplete: {}", lines.join(", ")));
        }
        capture.extend(lines);
    }
    let delay_forwarder = match forwarder {
        Some(f) => Some(f.stop()?),
        None => None,
    };
    Ok(RunResult {
        status: "ok".into(),
        error: None,
        wall_s: 0.0,
        sender: serde_json::to_value(&s).ok(),
        receiver: serde_json::to_value(&r).ok(),
        router: Some(router),
        capture,
        tcp_info_samples,
        delay_forwarder,
    })
}

/// Links, addresses, routes, host settings, the bottleneck queues and the loss rules.
/// With `dly`, the sender's link runs through the delay namespace: `snd0 ── dly0 [dly] dly1 ── rtr0`,
/// two veths whose middle ends have no address, the forwarder's wire.
fn build_path(e: &Experiment, snd: &str, rtr: &str, rcv: &str, dly: Option<&str>) -> Result<(), String> {
    let ip = |ns: &str, args: &[&str]| {
        let mut v = vec!["ip", "-n", ns];
        v.extend_from_slice(args);
        crate::netns::cmd(&v)
    };
    let mtu = e.path.mtu.to_string();
    match dly {
        None => {
            ip(rtr, &["link", "add", "rtr0", "type", "veth", "peer", "name", "snd0", "netns", snd])?;
        }
        Some(d) => {
            ip(d, &["link", "add", "dly0", "type", "veth", "peer", "name", "snd0", "netns", snd])?;
            ip(d, &["link", "add", "dly1", "type", "veth", "peer", "name", "rtr0", "netns", rtr])?;
            in_ns(d, &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])?;
            for dev in ["dly0", "dly1"] {
                ip(d, &["link", "set", dev, "mtu", &mtu, "promisc", "on", "up"])?;
                in_ns(d, &["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"])?;
            }
        }
    }
    ip(rtr, &["link", "add", "rtr1", "type", "veth", "peer", "name", "rcv0", "netns", rcv])?;
    for (ns, dev, addr) in [
        (snd, "snd0", "10.9.1.1/24"),
        (rtr, "rtr0", "10.9.1.254/24"),
        (rtr, "rtr1", "10.9.2.254/24"),
        (rcv, "rcv0", "10.9.2.1/24"),
    ] {
        ip(ns, &["addr", "add", addr, "dev", dev])?;
        ip(ns, &["link", "set", dev, "mtu", &mtu, "up"])?;
        if !e.hosts.offload {
            in_ns(ns, &["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"])?;
        }
        if dly.is_some() {
            // Checksums computed before a frame leaves the host: a frame whose checksum is left
            // to the "hardware" (veth passes it on unfinished) reaches the forwarder's packet
            // socket without it, and the router would drop what the forwarder sends on.
            in_ns(ns, &["ethtool", "-K", dev, "tx", "off"])?;
        }
    }
    ip(snd, &["route", "add", "default", "via", "10.9.1.254"])?;
    ip(rcv, &["route", "add", "default", "via", "10.9.2.254"])?;
    in_ns(rtr, &["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
    for ns in [snd, rcv] {
        in_ns(ns, &["sysctl", "-qw", &format!("net.ipv4.tcp_ecn={}", u8::from(e.hosts.ecn))])?;
    }
    // The bottleneck, towards the receiver: htb at the rate over the queue.
    let (q_kind, q_limit) = match (e.path.discipline, e.path.queue_packets, e.path.queue_bytes) {
        (Discipline::Droptail, _, Some(b)) => ("bfifo", b.to_string()),
        (Discipline::Droptail, p, None) => ("pfifo", p.unwrap_or(1000).to_string()),
        (Discipline::Codel, p, _) => ("codel", p.unwrap_or(1000).to_string()),
        (Discipline::FqCodel, p, _) => ("fq_codel", p.unwrap_or(1000).to_string()),
    };
    queue(rtr, "rtr1", e.path.rate.map(|r| r.0), q_kind, &q_limit)?;
    queue(rtr, "rtr0", e.path.reverse_rate.map(|r| r.0), "pfifo", "1000")?;
    // Random loss in the forward hook, per direction, with counters.
    let ppm = |p: f64| (p * 1e6).round() as u64;
    let mut rules = String::from(
        "table inet tcpscope_lab {\n  chain path {\n    type filter hook forward priority 0; policy accept;\n",
    );
    for (dev, p, tag) in [("rtr0", e.path.loss, "forward"), ("rtr1", e.path.reverse_loss, "reverse")] {
        if ppm(p) > 0 {
            rules += &format!(
                "    iifname \"{dev}\" numgen random mod 1000000 < {} counter drop comment \"{tag}\"\n",
                ppm(p)
            );
        }
    }
    rules += "  }\n}\n";
    let mut child = std::process::Command::new("ip")
        .args(["netns", "exec", rtr, "nft", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("nft: {e}"))?;
    if let Some(mut i) = child.stdin.take() {
        use std::io::Write;
        i.write_all(rules.as_bytes()).map_err(|e| format!("nft: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("nft: {e}"))?;
    if !out.status.success() {
        return Err(format!("nft -f: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

/// The egress queue of `dev`: with a rate, htb root → class at the rate → the queue as its
/// leaf; without, the queue as the root qdisc.
fn queue(ns: &str, dev: &str, rate_bps: Option<u64>, kind: &str, limit: &str) -> Result<(), String> {
    let tc = |args: &[&str]| {
        let mut v = vec!["tc"];
        v.extend_from_slice(args);
        in_ns(ns, &v)
    };
    match rate_bps {
        Some(r) => {
            let rate = format!("{r}bit");
            tc(&["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1"])?;
            tc(&["class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", &rate, "ceil", &rate])?;
            tc(&["qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", kind, "limit", limit])?;
        }
        None => {
            tc(&["qdisc", "add", "dev", dev, "root", "handle", "10:", kind, "limit", limit])?;
        }
    }
    Ok(())
}

/// The router's qdisc and nftables counters.
fn router_counters(rtr: &str) -> Result<Router, String> {
    let qd = |dev: &str| -> Result<Value, String> {
        let t = in_ns(rtr, &["tc", "-s", "-j", "qdisc", "show", "dev", dev])?;
        serde_json::from_str(&t).map_err(|e| format!("tc -j: {e}"))
    };
    // The queue's own drops: htb counts its leaf's drops again, so only the leaf (10:) counts.
    let drops = |v: &Value| {
        v.as_array()
            .map(|a| a.iter().filter(|q| q["handle"] == "10:").filter_map(|q| q["drops"].as_u64()).sum())
            .unwrap_or(0)
    };
    let (fwd, rev) = (qd("rtr1")?, qd("rtr0")?);
    let nft: Value =
        serde_json::from_str(&in_ns(rtr, &["nft", "-j", "list", "ruleset"])?).map_err(|e| format!("nft -j: {e}"))?;
    let mut loss = (0, 0);
    for item in nft["nftables"].as_array().into_iter().flatten() {
        let rule = &item["rule"];
        let n: u64 =
            rule["expr"].as_array().into_iter().flatten().filter_map(|x| x["counter"]["packets"].as_u64()).sum();
        match rule["comment"].as_str() {
            Some("forward") => loss.0 += n,
            Some("reverse") => loss.1 += n,
            _ => {}
        }
    }
    Ok(Router {
        queue_drops: drops(&fwd),
        reverse_queue_drops: drops(&rev),
        loss_drops: loss.0,
        reverse_loss_drops: loss.1,
        qdisc_forward: fwd,
        qdisc_reverse: rev,
    })
}

/// The default output directory of an experiment.
pub fn default_out(plan: &Plan) -> PathBuf {
    PathBuf::from(format!("lab-{}", plan.base.name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")))
}

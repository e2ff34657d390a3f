//! The BPF sampler against the netlink sampler on the same real sockets, in a network namespace
//! made by the test (root only; skipped with a message otherwise), its fallback when it cannot
//! load, and the committed BPF object against the command that rebuilds it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};
use tcpscope_monitor::bpf::BpfIter;
use tcpscope_monitor::diag::{Diag, SockInfo};
use tcpscope_monitor::fields::{FIELDS, Kind, Src, index};
use tcpscope_monitor::filter::Filter;
use tcpscope_monitor::source::{SamplerKind, Source};
use tcpscope_monitor::track::Sampler;

/// A network namespace for the life of the value, named after this process.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Option<Netns> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipping: this test needs root (a network namespace and a BPF program)");
            return None;
        }
        let name = format!("tsm-bpf19-{}-{tag}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).stderr(Stdio::null()).status();
        match Command::new("ip").args(["netns", "add", &name]).status() {
            Ok(s) if s.success() => {}
            other => {
                eprintln!("skipping: `ip netns add` is unavailable here ({other:?})");
                return None;
            }
        }
        let ns = Netns(name);
        let up = Command::new("ip").args(["netns", "exec", &ns.0, "ip", "link", "set", "lo", "up"]).status().unwrap();
        assert!(up.success(), "bring lo up in {}", ns.0);
        Some(ns)
    }

    /// Runs `f` on a thread inside the namespace: its sockets, netlink dumps and BPF
    /// iterators are the namespace's.
    fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/var/run/netns/{}", self.0);
        std::thread::spawn(move || {
            let fd = std::fs::File::open(&path).unwrap();
            nix::sched::setns(fd, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
        .join()
        .unwrap()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Sends `n` bytes from `c` to `s`, the reader pausing `pause` every 64 KiB.
fn transfer(mut c: TcpStream, mut s: TcpStream, n: usize, pause: Duration) -> (TcpStream, TcpStream) {
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        let mut got = 0;
        while got < n {
            let k = s.read(&mut buf).unwrap();
            assert!(k > 0, "peer closed early");
            got += k;
            std::thread::sleep(pause);
        }
        s
    });
    c.write_all(&vec![7u8; n]).unwrap();
    let s = reader.join().unwrap();
    (c, s)
}

/// The test's sockets after their transfers, quiet: a sender held back by its small send
/// buffer, one held back by a slow reader's small receive window, and an IPv6 pair.
fn make_conns() -> (Vec<TcpStream>, Vec<u16>) {
    let mut keep = Vec::new();
    let mut ports = Vec::new();
    // Send-buffer-limited: a small SO_SNDBUF (locked, so it cannot grow), a fast reader.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    setsockopt(&c.as_fd(), sockopt::SndBuf, &4096).unwrap();
    let (s, _) = l.accept().unwrap();
    let (c, s) = transfer(c, s, 4 << 20, Duration::ZERO);
    ports.push(l.local_addr().unwrap().port());
    keep.extend([c, s]);
    // Receiver-limited: a small receive buffer set before the handshake, a reader that pauses.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    setsockopt(&l.as_fd(), sockopt::RcvBuf, &8192).unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    let (c, s) = transfer(c, s, 1 << 20, Duration::from_millis(2));
    ports.push(l.local_addr().unwrap().port());
    keep.extend([c, s]);
    // IPv6, data both ways.
    let l = TcpListener::bind("[::1]:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    let (c, s) = transfer(c, s, 300_000, Duration::ZERO);
    let (s, c) = transfer(s, c, 100_000, Duration::ZERO);
    ports.push(l.local_addr().unwrap().port());
    keep.extend([c, s]);
    // Let the last ACKs land: the comparison wants sockets whose state no longer changes
    // (their clocks still run: those values only grow, and the test allows for that).
    std::thread::sleep(Duration::from_millis(300));
    (keep, ports)
}

fn by_cookie(v: Vec<SockInfo>) -> BTreeMap<u64, SockInfo> {
    v.into_iter().map(|s| (s.cookie, s)).collect()
}

fn netlink(filter: &Filter) -> BTreeMap<u64, SockInfo> {
    let mut d = Diag::new(filter.clone()).unwrap();
    let mut out = Vec::new();
    d.dump(|s| out.push(s)).unwrap();
    by_cookie(out)
}

fn bpf(b: &mut BpfIter) -> BTreeMap<u64, SockInfo> {
    let mut out = Vec::new();
    b.dump(|s| out.push(s)).unwrap();
    by_cookie(out)
}

/// The fields the netlink sampler reads from the kernel (not derived), except BBR's, which the
/// BPF sampler does not read.
fn compared_fields() -> Vec<usize> {
    (0..FIELDS.len())
        .filter(|&i| matches!(FIELDS[i].kind, Kind::Raw { src, .. } if !matches!(src, Src::Bbr(_))))
        .collect()
}

/// Every difference between the BPF sampler's view `b` and the netlink sampler's views before
/// (`a`) and after (`c`): a value must lie between the two netlink values (equal when the socket
/// did not change; a clock such as `busy_time` or `last_data_recv` may move between reads).
fn differences(a: &BTreeMap<u64, SockInfo>, b: &BTreeMap<u64, SockInfo>, c: &BTreeMap<u64, SockInfo>) -> Vec<String> {
    let mut out = Vec::new();
    let keys = |m: &BTreeMap<u64, SockInfo>| m.keys().copied().collect::<BTreeSet<_>>();
    if keys(a) != keys(b) || keys(b) != keys(c) {
        out.push(format!("sockets: netlink {:?}, bpf {:?}, netlink {:?}", keys(a), keys(b), keys(c)));
        return out;
    }
    for (cookie, sb) in b {
        let (sa, sc) = (&a[cookie], &c[cookie]);
        let who = format!("{}:{} -> {}:{}", sb.ends.src, sb.ends.sport, sb.ends.dst, sb.ends.dport);
        if (sa.family, sa.ends, sa.inode, sa.uid, &sa.cong) != (sb.family, sb.ends, sb.inode, sb.uid, &sb.cong) {
            out.push(format!(
                "{who}: identity netlink {:?} bpf {:?}",
                (sa.family, sa.ends, sa.inode, sa.uid, &sa.cong),
                (sb.family, sb.ends, sb.inode, sb.uid, &sb.cong)
            ));
        }
        for i in compared_fields() {
            let (va, vb, vc) = (sa.raw.get(i), sb.raw.get(i), sc.raw.get(i));
            let ok = match (va, vb, vc) {
                (Some(x), Some(y), Some(z)) => x.min(z) <= y && y <= x.max(z),
                (None, None, None) => true,
                _ => false,
            };
            if !ok {
                out.push(format!("{who}: {} netlink {va:?} bpf {vb:?} netlink {vc:?}", FIELDS[i].name));
            }
        }
        for i in (0..FIELDS.len()).filter(|&i| matches!(FIELDS[i].kind, Kind::Raw { src: Src::Bbr(_), .. })) {
            if sb.raw.get(i).is_some() {
                out.push(format!("{who}: {} present with the BPF sampler", FIELDS[i].name));
            }
        }
    }
    out
}

#[test]
fn bpf_and_netlink_samplers_agree_on_the_same_sockets() {
    let Some(ns) = Netns::new("agree") else { return };
    ns.run(|| {
        let (keep, ports) = make_conns();
        let expr = ports.iter().map(|p| format!("port {p}")).collect::<Vec<_>>().join(" or ");
        let filter = Filter::parse(&expr).unwrap();
        let mut b = BpfIter::new(filter.clone()).expect("the BPF sampler loads here (root, BTF)");
        // A read of the netlink sampler, one of the BPF sampler, one of netlink: every BPF value
        // must lie between the two netlink ones. A socket that changed between the reads (a
        // late ACK, a timer) can break that by chance, so the triple is tried a few times; a
        // wrong value fails every time.
        let mut last = Vec::new();
        let mut seen = None;
        for _ in 0..5 {
            let (a, bb, c) = (netlink(&filter), bpf(&mut b), netlink(&filter));
            last = differences(&a, &bb, &c);
            if last.is_empty() {
                seen = Some(bb);
                break;
            }
        }
        assert!(last.is_empty(), "the samplers differ:\n{}", last.join("\n"));
        let socks = seen.unwrap();
        // Six sockets, both ends of three connections, and the values the comparison is about
        // are not all zero (else it would prove little).
        assert_eq!(socks.len(), 6, "{:?}", socks.values().map(|s| s.ends).collect::<Vec<_>>());
        let max = |name: &str| socks.values().filter_map(|s| s.raw.get(index(name))).max().unwrap_or(0);
        for name in ["bytes_acked", "snd_cwnd", "rtt", "delivery_rate", "busy_time", "rwnd_limited", "delivered"] {
            assert!(max(name) > 0, "{name} is 0 on every socket: the comparison proves little");
        }
        assert!(max("bytes_acked") > 4 << 20, "bytes_acked {}", max("bytes_acked"));
        assert!(socks.values().any(|s| s.family == 10), "no IPv6 socket");
        drop(keep);
    });
}

#[test]
fn filter_and_pid_select_the_same_sockets_with_both_samplers() {
    let Some(ns) = Netns::new("filter") else { return };
    ns.run(|| {
        let (keep, ports) = make_conns();
        // Each port alone, in both directions (`sport` is the local end).
        for expr in [format!("sport {}", ports[0]), format!("dport {}", ports[1]), format!("port {}", ports[2])] {
            let f = Filter::parse(&expr).unwrap();
            let mut b = BpfIter::new(f.clone()).unwrap();
            let n: BTreeSet<u64> = netlink(&f).into_keys().collect();
            let p: BTreeSet<u64> = bpf(&mut b).into_keys().collect();
            assert_eq!(n, p, "{expr}");
            assert_eq!(n.len(), if expr.starts_with("port") { 2 } else { 1 }, "{expr}");
        }
        // --pid: the sockets whose inodes this process holds, through the sampling loop.
        let pid = std::process::id();
        let cookies = |src: Source| {
            let mut s = Sampler::new(src, Duration::from_millis(10), Some(pid));
            s.once().unwrap().samples.len()
        };
        let all = Filter::parse("").unwrap();
        let n = cookies(Source::Netlink(Diag::new(all.clone()).unwrap()));
        let p = cookies(BpfIter::new(all).unwrap().into());
        assert_eq!((n, p), (6, 6));
        drop(keep);
    });
}

/// Without the privilege to load BPF (as `nobody`), `auto` falls back to netlink and says
/// why, and `bpf` is an error that says why.
#[test]
fn without_privilege_auto_falls_back_to_netlink() {
    if std::env::var_os("TCPSCOPE_BPF_CHILD").is_some() {
        let (src, why) = Source::open(Filter::parse("").unwrap(), SamplerKind::Auto).unwrap();
        assert_eq!(src.name(), "netlink");
        let why = why.expect("a reason for the fallback");
        assert!(why.contains("did not load"), "{why}");
        let e = Source::open(Filter::parse("").unwrap(), SamplerKind::Bpf).err().expect("--sampler bpf fails");
        assert!(e.to_string().starts_with("--sampler bpf: "), "{e}");
        println!("child ok: {why}");
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        // Unprivileged already: the same checks, here.
        eprintln!("(not root: checking the fallback as this user)");
        let (src, why) = Source::open(Filter::parse("").unwrap(), SamplerKind::Auto).unwrap();
        assert_eq!(src.name(), "netlink", "{why:?}");
        return;
    }
    if Command::new("setpriv").arg("--version").stdout(Stdio::null()).status().is_err() {
        eprintln!("skipping: no setpriv to drop root's privileges");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
        .arg(&exe)
        .args(["--exact", "without_privilege_auto_falls_back_to_netlink", "--nocapture"])
        .env("TCPSCOPE_BPF_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("child ok"), "{text}");
}

/// The committed object is what `bpf/build.sh` makes from the committed source (with Debian
/// 12's clang 14; skipped with a message where it is not installed: `make bpf-deps`).
#[test]
fn bpf_object_is_reproducible() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf");
    let missing: Vec<&str> = ["clang-14", "llvm-strip-14"]
        .into_iter()
        .filter(|t| Command::new(t).arg("--version").stdout(Stdio::null()).status().is_err())
        .collect();
    if !missing.is_empty() || !std::path::Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        eprintln!("skipping: {missing:?} or libbpf-dev's headers are not installed (make bpf-deps)");
        return;
    }
    let out = std::env::temp_dir().join(format!("tcpscope-bpf-{}.o", std::process::id()));
    let st = Command::new(dir.join("build.sh")).arg(&out).status().unwrap();
    assert!(st.success(), "bpf/build.sh failed");
    let built = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let committed = std::fs::read(dir.join("tcp_iter.bpf.o")).unwrap();
    assert!(built == committed, "bpf/tcp_iter.bpf.o is not what bpf/build.sh makes from tcp_iter.bpf.c: rerun it");
}

/// A recording made with `--sampler bpf` says so, and holds the connection's samples with
/// their `tcp_info` fields (as `tcpscope monitor --sampler bpf -w FILE` makes it).
#[test]
fn a_recording_with_the_bpf_sampler_says_so() {
    use tcpscope_monitor::record::{self, Options};
    let Some(ns) = Netns::new("record") else { return };
    ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let (c, s) = transfer(c, s, 200_000, Duration::ZERO);
        let port = l.local_addr().unwrap().port();
        let path = std::env::temp_dir().join(format!("tcpscope-bpf-rec-{}.tsm", std::process::id()));
        let opts = Options {
            filter: format!("port {port}"),
            interval: Duration::from_millis(20),
            pid: None,
            duration: Some(Duration::from_millis(300)),
            events: None,
            cpu_every: None,
            to: None,
            to_grace: Duration::ZERO,
            cpu_budget: None,
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let r = record::run_with(&opts, SamplerKind::Bpf, Some(&path), None, &stop, |_| {}).unwrap();
        assert_eq!((r.sampler, r.sampler_note.as_deref()), ("bpf", None));
        let rec = tcpscope_monitor::tsm::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(rec.header.as_ref().unwrap().sampler, "bpf");
        assert_eq!(rec.conns.len(), 2);
        assert!(rec.conns.iter().all(|c| c.info_len == 280 && c.cong.is_some() && c.inode != 0));
        assert!(rec.samples.len() >= 4, "{} samples", rec.samples.len());
        let acked = rec.samples.iter().filter_map(|s| s.get("bytes_acked")).max().unwrap();
        assert!(acked > 200_000, "bytes_acked {acked}");
        drop((c, s));
    });
}

//! The sampler against real kernel sockets on loopback (no root needed: any user may dump
//! `NETLINK_SOCK_DIAG`), and the length-tolerant `tcp_info` decoder on real attributes cut to the
//! lengths older kernels sent.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use tcpscope_monitor::diag::{Diag, SockInfo};
use tcpscope_monitor::fields::{FIELDS, Kind, Raw, Src, TCP_INFO_KNOWN_LEN, decode_tcp_info, index};
use tcpscope_monitor::filter::Filter;

/// A connected pair on loopback (v4 or v6) that has moved `n` bytes client → server.
fn pair(v6: bool, n: usize) -> (TcpStream, TcpStream) {
    let l = TcpListener::bind(if v6 { "[::1]:0" } else { "127.0.0.1:0" }).unwrap();
    let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut s, _) = l.accept().unwrap();
    c.write_all(&vec![7u8; n]).unwrap();
    let mut got = vec![0u8; n];
    s.read_exact(&mut got).unwrap();
    (c, s)
}

fn find(filter: &str, port: u16) -> Vec<SockInfo> {
    let mut d = Diag::new(Filter::parse(filter).unwrap()).unwrap();
    d.keep_info = true;
    let mut out = Vec::new();
    d.dump(|s| {
        if s.ends.sport == port || s.ends.dport == port {
            out.push(s)
        }
    })
    .unwrap();
    assert!(d.kernel_filter, "the kernel refused the filter's bytecode");
    out
}

#[test]
fn dumps_v4_and_v6_with_kernel_filter() {
    for v6 in [false, true] {
        let (c, s) = pair(v6, 100_000);
        std::thread::sleep(Duration::from_millis(20));
        let port = s.local_addr().unwrap().port();
        let cport = c.local_addr().unwrap().port();
        let got = find(&format!("sport {port} or dport {port}"), port);
        assert_eq!(got.len(), 2, "v6={v6}: both ends of the pair");
        let client = got.iter().find(|s| s.ends.sport == cport).unwrap();
        assert_eq!(client.family, if v6 { 10 } else { 2 });
        assert!(client.cookie != 0);
        assert!(client.info.len() >= 192, "tcp_info of {} bytes", client.info.len());
        // The SYN counts as one acknowledged byte.
        assert_eq!(client.raw.get(index("bytes_acked")), Some(100_001));
        assert_eq!(client.raw.get(index("state")), Some(1));
        assert!(client.raw.get(index("snd_mss")).unwrap() > 0);
        assert!(client.raw.get(index("wmem")).is_some(), "MEMINFO requested and returned");
        let cong = client.cong.as_deref().unwrap();
        // BBR's own attribute comes with the VEGASINFO request (Linux's default here is bbr).
        assert_eq!(client.raw.get(index("bbr_bw")).is_some(), cong == "bbr", "{cong}");
        let server = got.iter().find(|s| s.ends.sport == port).unwrap();
        assert_eq!(server.raw.get(index("bytes_received")), Some(100_000));
        // The filter ran in the kernel: a filter on another port returns neither.
        assert!(find(&format!("dport {}", port.wrapping_add(1)), port).is_empty());
        drop((c, s));
    }
}

/// `tcp_info` lengths of older kernels (see docs/monitor.md): each one ends after a field that
/// kernel version added.
const OLD_LENGTHS: &[(usize, &str)] = &[
    (104, "3.x: up to total_retrans"),
    (120, "3.15: pacing rates"),
    (136, "4.1: bytes_acked/received"),
    (144, "4.2: segs_out/in"),
    (160, "4.6: notsent_bytes .. data_segs_out"),
    (168, "4.9: delivery_rate"),
    (192, "4.10: busy/rwnd/sndbuf chronos"),
    (200, "4.18: delivered, delivered_ce"),
    (224, "4.19: bytes_sent .. reord_seen"),
    (232, "5.4: rcv_ooopack, snd_wnd"),
    (240, "6.2: rcv_wnd, rehash"),
    (248, "6.7: total_rto, total_rto_recoveries, total_rto_time"),
];

fn check_truncations(full: &[u8]) {
    let mut whole = Raw::default();
    decode_tcp_info(full, &mut whole);
    for &(len, what) in OLD_LENGTHS.iter().filter(|(l, _)| *l <= full.len()) {
        let mut raw = Raw::default();
        decode_tcp_info(&full[..len], &mut raw);
        for (i, f) in FIELDS.iter().enumerate() {
            let Kind::Raw { src, .. } = f.kind else { continue };
            let end = match src {
                Src::Info { off, size } => off as usize + size as usize,
                Src::Bits { off, .. } => off as usize + 1,
                _ => continue,
            };
            if end <= len {
                assert_eq!(raw.get(i), whole.get(i), "{} at length {len} ({what})", f.name);
                assert!(raw.get(i).is_some());
            } else {
                assert_eq!(raw.get(i), None, "{} must be absent at length {len} ({what})", f.name);
            }
        }
    }
}

#[test]
fn decodes_truncated_real_attributes() {
    // A live attribute from this kernel...
    let (c, s) = pair(false, 50_000);
    let port = s.local_addr().unwrap().port();
    let got = find(&format!("sport {port}"), port);
    let info = &got[0].info;
    check_truncations(info);
    if info.len() >= TCP_INFO_KNOWN_LEN {
        let mut raw = Raw::default();
        decode_tcp_info(info, &mut raw);
        assert!(raw.get(index("total_rto_time")).is_some());
    }
    drop((c, s));
    // ...and one recorded on Linux 6.18 (tests/data), so the test does not depend on the kernel
    // the tests run on.
    let hex = include_str!("data/tcp_info_6.18.hex");
    let rec: Vec<u8> =
        (0..hex.trim().len()).step_by(2).map(|i| u8::from_str_radix(&hex.trim()[i..i + 2], 16).unwrap()).collect();
    assert_eq!(rec.len(), 280);
    check_truncations(&rec);
    let mut raw = Raw::default();
    decode_tcp_info(&rec[..160], &mut raw);
    assert_eq!(raw.get(index("delivery_rate")), None);
    assert_eq!(raw.get(index("busy_time")), None);
    assert!(raw.get(index("min_rtt")).is_some());
}

/// Prints this kernel's attribute as hex (to refresh tests/data): `cargo test -p
/// tcpscope-monitor --test loopback print_attribute -- --ignored --nocapture`.
#[test]
#[ignore = "a tool, not a test: prints a live tcp_info attribute as hex"]
fn print_attribute() {
    let (c, _s) = pair(false, 50_000);
    let port = c.local_addr().unwrap().port();
    let got = find(&format!("sport {port}"), port);
    println!("{}", got[0].info.iter().map(|b| format!("{b:02x}")).collect::<String>());
}

/// With a CPU budget the sampler spaces its dumps out when they cost more than the budget
/// allows at the interval; without one it keeps the interval.
#[test]
fn cpu_budget_spaces_dumps_out() {
    use std::sync::atomic::AtomicBool;
    use std::time::Instant;
    use tcpscope_monitor::track::Sampler;
    let never = AtomicBool::new(false);
    let run = |budget: Option<f64>| {
        let diag = Diag::new(Filter::parse("dport 9").unwrap()).unwrap();
        let mut s = Sampler::new(diag, Duration::from_millis(2), None);
        s.cpu_budget = budget;
        s.run(Some(Instant::now() + Duration::from_millis(400)), &never, |_| Ok(true)).unwrap();
        (s.dumps, s.stretched)
    };
    let (free, none_stretched) = run(None);
    assert_eq!(none_stretched, 0);
    // A dump costs at least 20 µs of CPU: at 0.01 % of a core that is ≥ 200 ms apart.
    let (held, stretched) = run(Some(0.000_1));
    assert!(stretched > 0 && held <= 3, "{held} dumps, {stretched} put off");
    assert!(free > 3 * held, "without a budget {free} dumps, with {held}");
}

//! The delay forwarder's benchmark at a given rate of 1514-byte frames (issue 20: "hold 1 Gbit/s
//! of 1500-byte packets with delay accurate to 100 µs"), without TCP: a generator sends frames
//! on a veth into the forwarder's namespace at a fixed pace, the forwarder (the lab's own, as a
//! run starts it) holds each for the delay and sends it on to a veth whose far end drops it.
//!
//! ```text
//!  [gen] gen0 ── dly0 [dly: forwarder] dly1 ── sink0 [gen]
//! ```
//!
//! Per round it runs the generator alone into a plain veth pair (what the generator can offer on
//! this machine now, the peer figure), then through the forwarder, and prints one JSON line:
//! offered and carried frames per second, their ratio, and the forwarder's lateness (time held −
//! delay, from the kernel's arrival stamp to the hand-off) as percentiles from its log.
//!
//! `cargo run --release -p tcpscope-lab --example forwarder_bench -- [MBIT] [SECONDS] [BURST]
//! [ROUNDS]` as root (defaults 1000, 3, 1, 3). BURST > 1 sends that many frames back to back
//! every BURST intervals (the same mean rate, the bursts a TCP sender makes). The generator
//! paces by spinning on the clock; when it falls behind (the machine is shared) it does not
//! catch up with a burst, so what it offered is measured, not assumed. `FORWARDER_BENCH_RPS=0`:
//! no RPS on the receiving veths; `FORWARDER_BENCH_LOG=null`: the forwarder logs to /dev/null.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use tcpscope_lab::delay::{Addr, Effect, Forwarder, packet_socket};
use tcpscope_lab::netns::{Namespaces, cmd, in_ns, spawn_in};

const FRAME: usize = 1514;
const DELAY: Duration = Duration::from_millis(1);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: f64| args.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(d);
    let (mbit, secs, burst, rounds) = (arg(0, 1000.0), arg(1, 3.0), arg(2, 1.0) as u32, arg(3, 3.0) as u32);
    if let Err(e) = run(mbit, secs, burst.max(1), rounds.max(1)) {
        eprintln!("forwarder_bench: {e}");
        std::process::exit(1);
    }
}

fn run(mbit: f64, secs: f64, burst: u32, rounds: u32) -> Result<(), String> {
    let interval = Duration::from_secs_f64(FRAME as f64 * 8.0 / (mbit * 1e6));
    for round in 1..=rounds {
        // The peer: the generator alone, into a veth pair.
        let alone = {
            let ns = Namespaces::new(&["gen"])?;
            let g = ns.name("gen").to_string();
            cmd(&["ip", "-n", &g, "link", "add", "gen0", "type", "veth", "peer", "name", "sink0"])?;
            for d in ["gen0", "sink0"] {
                cmd(&["ip", "-n", &g, "link", "set", d, "up"])?;
            }
            generate(&g, interval, burst, secs)?
        };
        let ns = Namespaces::new(&["gen", "dly"])?;
        let (g, d) = (ns.name("gen").to_string(), ns.name("dly").to_string());
        cmd(&["ip", "-n", &d, "link", "add", "dly0", "type", "veth", "peer", "name", "gen0", "netns", &g])?;
        cmd(&["ip", "-n", &d, "link", "add", "dly1", "type", "veth", "peer", "name", "sink0", "netns", &g])?;
        for dev in ["dly0", "dly1"] {
            cmd(&["ip", "-n", &d, "link", "set", dev, "promisc", "on", "up"])?;
            in_ns(&d, &["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"])?;
        }
        for dev in ["gen0", "sink0"] {
            cmd(&["ip", "-n", &g, "link", "set", dev, "up"])?;
        }
        // As a run sets it: what the forwarder sends is received on the other CPUs (unless
        // FORWARDER_BENCH_RPS=0: then in the forwarder's own send calls).
        let rps = std::env::var("FORWARDER_BENCH_RPS").map_or(true, |v| v != "0");
        if let Some(mask) = tcpscope_lab::delay::rps_mask().filter(|_| rps) {
            for dev in ["gen0", "sink0"] {
                in_ns(&g, &["sh", "-c", &format!("echo {mask} > /sys/class/net/{dev}/queues/rx-0/rps_cpus")])?;
            }
        }
        let dir = std::env::temp_dir().join(format!("forwarder-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        // FORWARDER_BENCH_LOG=null: the forwarder's logs to /dev/null (the percentiles are then
        // its own, from result statistics, instead of the log's).
        let null = std::env::var("FORWARDER_BENCH_LOG").is_ok_and(|v| v == "null");
        let logs = if null {
            [std::path::PathBuf::from("/dev/null"), std::path::PathBuf::from("/dev/null")]
        } else {
            [dir.join("a2b.log"), dir.join("b2a.log")]
        };
        let effect = Effect { delay: DELAY, reorder: 0.0, gap: DELAY, hosts: Vec::new(), by: Addr::Source, seed: 0 };
        let fw = Forwarder::start(&d, "dly0", "dly1", [effect.clone(), effect], logs.clone())?;
        let offered = generate(&g, interval, burst, secs)?;
        std::thread::sleep(DELAY * 20);
        let [st, _] = fw.stop()?;
        let log = if null { String::new() } else { std::fs::read_to_string(&logs[0]).map_err(|e| e.to_string())? };
        let _ = std::fs::remove_dir_all(&dir);
        // Lateness of our frames (the generator's size), µs.
        let mut late: Vec<i64> = log
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let (_, dir, size, held) = (w.next()?, w.next()?, w.next()?, w.next()?);
                (dir == "-" && size == "1514")
                    .then(|| held.parse::<i64>().ok().map(|h| h - DELAY.as_micros() as i64))?
            })
            .collect();
        late.sort_unstable();
        // Nearest rank, as the forwarder's own percentiles.
        let pct = |q: f64| {
            if null {
                return Some(
                    [(0.5, st.late_p50_us), (0.9, st.late_p90_us), (0.99, st.late_p99_us), (0.999, st.late_p999_us)]
                        .iter()
                        .find(|(p, _)| *p == q)
                        .map_or(0, |(_, v)| *v as i64),
                );
            }
            let rank = ((q * late.len() as f64).ceil() as usize).max(1);
            late.get(rank - 1).copied()
        };
        let forwarded = if null { st.frames as usize } else { late.len() };
        let over = if null { st.late_100us as usize } else { late.iter().filter(|&&x| x > 100).count() };
        let fps = |n: u64, s: f64| n as f64 / s;
        println!(
            "{}",
            serde_json::json!({
                "round": round,
                "rps": rps,
                "log": !null,
                "rate_mbit": mbit,
                "burst": burst,
                "seconds": secs,
                "alone_fps": fps(alone.0, alone.1),
                "offered_fps": fps(offered.0, offered.1),
                "target_fps": 1.0 / interval.as_secs_f64(),
                "forwarded": forwarded,
                "carried_of_offered": forwarded as f64 / offered.0.max(1) as f64,
                "offered_of_alone": fps(offered.0, offered.1) / fps(alone.0, alone.1).max(1.0),
                "late_p50_us": pct(0.5),
                "late_p90_us": pct(0.9),
                "late_p99_us": pct(0.99),
                "late_p999_us": pct(0.999),
                "late_max_us": if null { st.max_error_us as i64 } else { late.last().copied().unwrap_or(0) },
                "late_over_100us": over as f64 / forwarded.max(1) as f64,
                "mean_error_us": st.mean_error_us,
                "send_mean_us": st.send_mean_us,
                "frames_per_read": st.frames_per_read,
                "drops": st.drops,
            })
        );
    }
    Ok(())
}

/// Sends 1514-byte frames on `gen0` of namespace `ns` at one per `interval` (in bursts of
/// `burst`) for `secs`; returns (frames sent, seconds taken).
fn generate(ns: &str, interval: Duration, burst: u32, secs: f64) -> Result<(u64, f64), String> {
    let h = spawn_in(ns, move || -> Result<(u64, f64), String> {
        let fd = packet_socket("gen0", 0, 0).map_err(|e| format!("gen0: {e}"))?;
        // A frame of an experimental EtherType (0x88b5) to the broadcast address: nothing on the
        // far side takes it, so it is dropped there after the forwarder.
        let mut frame = vec![0u8; FRAME];
        frame[..6].copy_from_slice(&[0xff; 6]);
        frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]);
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs_f64(secs);
        let mut next = t0;
        let mut sent = 0u64;
        while next < end {
            while Instant::now() < next {
                std::hint::spin_loop();
            }
            for _ in 0..burst {
                // SAFETY: `frame` is valid for reads of its length; `fd` is an open socket.
                let n = unsafe { libc::send(fd.as_raw_fd(), frame.as_ptr() as *const libc::c_void, frame.len(), 0) };
                if n > 0 {
                    sent += 1;
                }
            }
            // Behind (descheduled): start again from now rather than send the missed frames in
            // one burst.
            next = (next + interval * burst).max(Instant::now());
        }
        Ok((sent, t0.elapsed().as_secs_f64()))
    });
    h.join().map_err(|_| "generator panicked".to_string())??
}

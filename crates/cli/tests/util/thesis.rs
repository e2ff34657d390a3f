//! The thesis' own traces (Shepard 1991, seed 000 in `../shared/seeds`) as pcap files: figure
//! 2.1 (synthetic, HOST-A sends to HOST-B) and figures 2.2 + 2.3 (the first 100 packets of a real
//! 4.3BSD rsh/rdump connection, captured mid-stream: no handshake, no flags printed).
//!
//! The thesis prints no flags: every packet is written with ACK set (each carries an
//! acknowledgment number), and nothing else. Figure 2.1's hosts get the addresses 10.0.0.1
//! (HOST-A, port 1023) and 10.0.0.2 (HOST-B, port 514) and its times the date of figure 2.2.

use std::path::{Path, PathBuf};

use tcpscope_core::testutil::{Pkt, flag, pcap};

/// The seed text, if `../shared/seeds` is present.
fn seed() -> Option<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seeds");
    let entry = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("000_"))?;
    std::fs::read_to_string(entry.path()).ok()
}

/// 12:06:00 on an arbitrary day (1990-11-22), ns since the epoch.
const DAY_NS: u64 = 659_232_000 * 1_000_000_000;

fn clock_ns(s: &str) -> Option<u64> {
    let mut it = s.split(':');
    let (h, m, sec) = (it.next()?.parse::<u64>().ok()?, it.next()?.parse::<u64>().ok()?, it.next()?);
    let (whole, frac) = sec.split_once('.').unwrap_or((sec, "0"));
    let frac_ns = format!("{frac:0<9}")[..9].parse::<u64>().ok()?;
    Some(DAY_NS + (h * 3600 + m * 60 + whole.parse::<u64>().ok()?) * 1_000_000_000 + frac_ns)
}

fn ip(s: &str) -> Option<[u8; 4]> {
    let v: Vec<u8> = s.split('.').filter_map(|p| p.parse().ok()).collect();
    v.try_into().ok()
}

fn pkt(ts_ns: u64, (src, sport): ([u8; 4], u16), (dst, dport): ([u8; 4], u16), nums: [u32; 3], len: u16) -> Pkt {
    Pkt {
        ts_ns,
        src,
        dst,
        sport,
        dport,
        seq: nums[0],
        ack: nums[1],
        flags: flag::ACK,
        win: nums[2] as u16,
        len,
        opts: vec![],
        snap: None,
    }
}

/// Figures 2.2 and 2.3 (100 packets) written to `dir/thesis-fig2.2.pcap`; `None` (said on
/// stderr) when the seed is absent.
pub fn fig22(dir: &Path) -> Option<PathBuf> {
    let Some(text) = seed() else {
        eprintln!("skipping: ../shared/seeds (the thesis, seed 000) is absent");
        return None;
    };
    let mut pkts = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').map(str::trim).collect();
        if f.len() != 9 || !f[0].starts_with("12:06:") {
            continue;
        }
        let n = |i: usize| f[i].parse::<u64>().ok();
        let (Some(ts), Some(src), Some(dst)) = (clock_ns(f[0]), ip(f[1]), ip(f[3])) else { continue };
        let (Some(sp), Some(dp), Some(seq), Some(ack), Some(win), Some(len)) = (n(2), n(4), n(5), n(6), n(7), n(8))
        else {
            continue;
        };
        pkts.push(pkt(ts, (src, sp as u16), (dst, dp as u16), [seq as u32, ack as u32, win as u32], len as u16));
    }
    assert_eq!(pkts.len(), 100, "figures 2.2 and 2.3 hold 100 packets");
    let path = dir.join("thesis-fig2.2.pcap");
    std::fs::write(&path, pcap(&pkts, false, false)).unwrap();
    Some(path)
}

/// Figure 2.1 (12 packets) written to `dir/thesis-fig2.1.pcap`; `None` when the seed is absent.
pub fn fig21(dir: &Path) -> Option<PathBuf> {
    let Some(text) = seed() else {
        eprintln!("skipping: ../shared/seeds (the thesis, seed 000) is absent");
        return None;
    };
    // The first table of the chapter: `H:MM:SS [HOST-A] <----- seq ack win len [HOST-B]` or
    // `H:MM:SS seq ack win len ---->`.
    let start = text.find("timestamp\t\t\tseq")?;
    let a = ([10, 0, 0, 1], 1023);
    let b = ([10, 0, 0, 2], 514);
    let mut pkts = Vec::new();
    for line in text[start..].lines().skip(2) {
        let f: Vec<&str> = line.split('\t').map(str::trim).filter(|s| !s.is_empty()).collect();
        if f.is_empty() || !f[0].contains(':') {
            break;
        }
        let nums: Vec<u32> = f.iter().filter_map(|s| s.parse().ok()).collect();
        let Some(ts) = clock_ns(f[0]).map(|t| t + 11 * 3600 * 1_000_000_000) else { break };
        let to_b = f.iter().any(|s| s.contains("---->"));
        let (from, to) = if to_b { (a, b) } else { (b, a) };
        if nums.len() != 4 {
            break;
        }
        pkts.push(pkt(ts, from, to, [nums[0], nums[1], nums[2]], nums[3] as u16));
    }
    assert_eq!(pkts.len(), 12, "figure 2.1 holds 12 packets");
    let path = dir.join("thesis-fig2.1.pcap");
    std::fs::write(&path, pcap(&pkts, false, false)).unwrap();
    Some(path)
}

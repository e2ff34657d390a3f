//! Writes one synthetic bulk connection of about N packets (default five million) for the
//! viewer's benchmark (`make bench-view`): a handshake, MSS-sized data segments captured with a
//! 54-byte snaplen, an ACK for every second segment acknowledging what was sent one RTT
//! (20 ms) earlier, and 1 in 5000 segments lost: when the ACKs reach it, three duplicate ACKs
//! with a SACK block, then its retransmission. The sequence space wraps (4.8 GB).
//!
//! `cargo run --release -p tcpscope-view --example bigtrace -- OUT.pcap [PACKETS]`

use std::io::{BufWriter, Write};

use tcpscope_core::testutil::{Pkt, flag, opt, pcap};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args.next().ok_or_else(|| std::io::Error::other("usage: bigtrace OUT.pcap [PACKETS]"))?;
    let total: u64 = args.next().map(|n| n.parse().map_err(std::io::Error::other)).transpose()?.unwrap_or(5_000_000);
    let mut f = BufWriter::with_capacity(1 << 20, std::fs::File::create(&out)?);
    // The file header once, then each record without it.
    let header = pcap(&[], false, false);
    f.write_all(&header)?;
    let mut w = Out { f, n: 0, skip: header.len() };
    let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let base = |ts_ns, src, dst, sport, dport, seq, ack, flags, len| Pkt {
        ts_ns,
        src,
        dst,
        sport,
        dport,
        seq,
        ack,
        flags,
        win: 8192,
        len,
        opts: vec![],
        snap: Some(54),
    };
    let (isn_a, isn_b) = (1_000u32, 7_000u32);
    let mut t = 1_800_000_000_000_000_000u64;
    let mut syn = base(t, a, b, 40000, 5001, isn_a, 0, flag::SYN, 0);
    syn.opts = [opt::mss(1448), opt::wscale(7)].concat();
    w.put(syn)?;
    t += 10_000_000;
    let mut sa = base(t, b, a, 5001, 40000, isn_b, isn_a + 1, flag::SYN | flag::ACK, 0);
    sa.opts = [opt::mss(1448), opt::wscale(7), opt::sack_perm()].concat();
    w.put(sa)?;
    t += 10_000_000;
    w.put(base(t, a, b, 40000, 5001, isn_a + 1, isn_b + 1, flag::ACK, 0))?;
    let mss = 1448u64;
    let seq = |off: u64| (isn_a as u64 + 1 + off) as u32;
    let ack_of = |off: u64| base(0, b, a, 5001, 40000, isn_b + 1, seq(off), flag::ACK, 0);
    // The ACKs arriving at the sender acknowledge what was sent one RTT (20 ms) earlier.
    const LAG: u64 = 20_000_000 / 12_000;
    let mut i = 0u64; // segments sent
    let mut holes = std::collections::VecDeque::new();
    while w.n + 8 < total {
        t += 12_000; // ~1 Gbit/s
        let off = i * mss;
        if i % 5000 == 4999 {
            holes.push_back(off);
        } else {
            w.put(base(t, a, b, 40000, 5001, seq(off), isn_b + 1, flag::ACK, mss as u16))?;
        }
        i += 1;
        if !i.is_multiple_of(2) || i < LAG {
            continue;
        }
        let acked = (i - LAG) * mss;
        match holes.front() {
            Some(&h) if acked > h => {
                // Three duplicate ACKs SACKing what arrived above the hole, then the repair.
                for k in 1..=3u64 {
                    let mut d = ack_of(h);
                    d.ts_ns = t + k * 1000;
                    d.opts = opt::sack(&[(seq(h + mss), seq(acked))]);
                    w.put(d)?;
                }
                t += 4_000;
                w.put(base(t, a, b, 40000, 5001, seq(h), isn_b + 1, flag::ACK, mss as u16))?;
                holes.pop_front();
            }
            Some(&h) => {
                let mut k = ack_of(acked.min(h));
                k.ts_ns = t;
                w.put(k)?;
            }
            None => {
                let mut k = ack_of(acked);
                k.ts_ns = t;
                w.put(k)?;
            }
        }
    }
    t += 20_000_000;
    w.put(base(t, a, b, 40000, 5001, seq(i * mss), isn_b + 1, flag::FIN | flag::ACK, 0))?;
    w.put(base(t + 20_000_000, b, a, 5001, 40000, isn_b + 1, seq(i * mss) + 1, flag::FIN | flag::ACK, 0))?;
    w.put(base(t + 40_000_000, a, b, 40000, 5001, seq(i * mss) + 1, isn_b + 2, flag::ACK, 0))?;
    w.f.flush()?;
    eprintln!("{out}: {} packets, {i} data segments", w.n);
    Ok(())
}

struct Out {
    f: BufWriter<std::fs::File>,
    n: u64,
    /// Length of the file header `pcap` writes before each record.
    skip: usize,
}

impl Out {
    fn put(&mut self, p: Pkt) -> std::io::Result<()> {
        self.n += 1;
        self.f.write_all(&pcap(&[p], false, false)[self.skip..])
    }
}

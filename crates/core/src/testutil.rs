//! Building packets and capture files by hand, for tests, fuzz seeds and benchmarks.
//!
//! Fields are chosen by the caller, so a test's expected numbers come from the script, not from
//! the code under test.

/// A seeded xorshift generator: `next(m)` is a number below `m`. Deterministic, so a failing
/// random test fails the same way every time.
pub fn rng(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed.max(1);
    move |m| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    }
}

/// One TCP/IPv4 packet, described by its header fields.
#[derive(Clone, Debug)]
pub struct Pkt {
    /// Capture time, ns.
    pub ts_ns: u64,
    /// IPv4 source.
    pub src: [u8; 4],
    /// IPv4 destination.
    pub dst: [u8; 4],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Flags byte (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10).
    pub flags: u8,
    /// Window field.
    pub win: u16,
    /// Payload length (zero bytes are written).
    pub len: u16,
    /// Raw option bytes (padded to 4 here).
    pub opts: Vec<u8>,
    /// Bytes of the frame to keep (snaplen), `None` for all.
    pub snap: Option<usize>,
}

/// TCP flag bytes.
pub mod flag {
    /// FIN
    pub const FIN: u8 = 0x01;
    /// SYN
    pub const SYN: u8 = 0x02;
    /// RST
    pub const RST: u8 = 0x04;
    /// PSH
    pub const PSH: u8 = 0x08;
    /// ACK
    pub const ACK: u8 = 0x10;
}

/// Option encoders.
pub mod opt {
    /// MSS option.
    pub fn mss(v: u16) -> Vec<u8> {
        vec![2, 4, (v >> 8) as u8, v as u8]
    }
    /// Window scale option (with a leading NOP).
    pub fn wscale(s: u8) -> Vec<u8> {
        vec![1, 3, 3, s]
    }
    /// SACK-permitted (with two NOPs).
    pub fn sack_perm() -> Vec<u8> {
        vec![1, 1, 4, 2]
    }
    /// Timestamps (with two NOPs).
    pub fn ts(val: u32, ecr: u32) -> Vec<u8> {
        let mut v = vec![1, 1, 8, 10];
        v.extend_from_slice(&val.to_be_bytes());
        v.extend_from_slice(&ecr.to_be_bytes());
        v
    }
    /// SACK blocks (with two NOPs).
    pub fn sack(blocks: &[(u32, u32)]) -> Vec<u8> {
        let mut v = vec![1, 1, 5, 2 + 8 * blocks.len() as u8];
        for (l, r) in blocks {
            v.extend_from_slice(&l.to_be_bytes());
            v.extend_from_slice(&r.to_be_bytes());
        }
        v
    }
}

impl Pkt {
    /// The raw IPv4 packet (LINKTYPE_RAW), and the original (wire) length.
    pub fn ipv4(&self) -> (Vec<u8>, u32) {
        let mut opts = self.opts.clone();
        while !opts.len().is_multiple_of(4) {
            opts.push(0);
        }
        let tcp_len = 20 + opts.len();
        let total = 20 + tcp_len + self.len as usize;
        let mut p = Vec::with_capacity(total);
        // A sender's IP ID changes from packet to packet (here with the time), so a resent
        // segment differs from a copy the network duplicated.
        let id = (self.ts_ns / 1000) as u16 | 1;
        p.extend_from_slice(&[
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            (id >> 8) as u8,
            id as u8,
            0x40,
            0,
            64,
            6,
            0,
            0,
        ]);
        p.extend_from_slice(&self.src);
        p.extend_from_slice(&self.dst);
        p.extend_from_slice(&self.sport.to_be_bytes());
        p.extend_from_slice(&self.dport.to_be_bytes());
        p.extend_from_slice(&self.seq.to_be_bytes());
        p.extend_from_slice(&self.ack.to_be_bytes());
        p.push(((tcp_len / 4) as u8) << 4);
        p.push(self.flags);
        p.extend_from_slice(&self.win.to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 0]);
        p.extend_from_slice(&opts);
        p.resize(total, 0);
        let orig = p.len() as u32;
        if let Some(s) = self.snap {
            p.truncate(s);
        }
        (p, orig)
    }
}

/// A packet of the scripted conversation the unit tests use: a = 10.0.0.1:40000 (ISN 1000),
/// b = 10.0.0.2:80 (ISN 5000); `ms` after a fixed epoch; `seq` and `ack` relative (the first
/// payload byte is 0), as a person writes a script.
#[allow(clippy::too_many_arguments)] // one argument per header field the script sets
pub fn scripted(from_a: bool, ms: f64, flags: u8, seq: u32, ack: u32, len: u16, win: u16, opts: Vec<u8>) -> Pkt {
    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];
    let (src, dst, sport, dport, isn, peer_isn) =
        if from_a { (A, B, 40000, 80, 1000u32, 5000u32) } else { (B, A, 80, 40000, 5000, 1000) };
    let syn = flags & flag::SYN != 0;
    Pkt {
        ts_ns: 1_000_000_000_000 + (ms * 1e6) as u64,
        src,
        dst,
        sport,
        dport,
        seq: if syn { isn } else { isn.wrapping_add(1).wrapping_add(seq) },
        ack: if flags & flag::ACK != 0 { peer_isn.wrapping_add(1).wrapping_add(ack) } else { 0 },
        flags,
        win,
        len,
        opts,
        snap: None,
    }
}

/// A classic pcap file (LINKTYPE_RAW) holding the packets; µs or ns, either byte order.
pub fn pcap(pkts: &[Pkt], nanos: bool, big_endian: bool) -> Vec<u8> {
    let w32 = |v: u32| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let w16 = |v: u16| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut f = Vec::new();
    f.extend_from_slice(&w32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
    f.extend_from_slice(&w16(2));
    f.extend_from_slice(&w16(4));
    f.extend_from_slice(&w32(0));
    f.extend_from_slice(&w32(0));
    f.extend_from_slice(&w32(262_144));
    f.extend_from_slice(&w32(101));
    for p in pkts {
        let (data, orig) = p.ipv4();
        let frac = if nanos { p.ts_ns % 1_000_000_000 } else { p.ts_ns % 1_000_000_000 / 1000 };
        f.extend_from_slice(&w32((p.ts_ns / 1_000_000_000) as u32));
        f.extend_from_slice(&w32(frac as u32));
        f.extend_from_slice(&w32(data.len() as u32));
        f.extend_from_slice(&w32(orig));
        f.extend_from_slice(&data);
    }
    f
}

/// A little-endian pcapng file: one section, two interfaces (raw IP in µs, raw IP in ns with a
/// 1000 s offset), packets alternating between them, plus a custom block to skip.
pub fn pcapng(pkts: &[Pkt]) -> Vec<u8> {
    fn block(f: &mut Vec<u8>, kind: u32, body: &[u8]) {
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let len = 12 + body.len() as u32;
        f.extend_from_slice(&kind.to_le_bytes());
        f.extend_from_slice(&len.to_le_bytes());
        f.extend_from_slice(&body);
        f.extend_from_slice(&len.to_le_bytes());
    }
    let mut f = Vec::new();
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    block(&mut f, 0x0a0d_0d0a, &shb);
    // Interface 0: raw IP, default µs resolution.
    let mut idb = Vec::new();
    idb.extend_from_slice(&101u16.to_le_bytes());
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&0u32.to_le_bytes());
    block(&mut f, 1, &idb);
    // Interface 1: raw IP, if_tsresol 9 (ns), if_tsoffset -1000 s (timestamps written +1000 s).
    let mut idb = Vec::new();
    idb.extend_from_slice(&101u16.to_le_bytes());
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&0u32.to_le_bytes());
    idb.extend_from_slice(&9u16.to_le_bytes());
    idb.extend_from_slice(&1u16.to_le_bytes());
    idb.extend_from_slice(&[9, 0, 0, 0]);
    idb.extend_from_slice(&14u16.to_le_bytes());
    idb.extend_from_slice(&8u16.to_le_bytes());
    idb.extend_from_slice(&(-1000i64).to_le_bytes());
    idb.extend_from_slice(&[0, 0, 0, 0]);
    block(&mut f, 1, &idb);
    block(&mut f, 0x0000_0BAD, &[1, 2, 3, 4, 5]);
    for (i, p) in pkts.iter().enumerate() {
        let (data, orig) = p.ipv4();
        let iface = (i % 2) as u32;
        let ticks = if iface == 0 { p.ts_ns / 1000 } else { p.ts_ns + 1_000_000_000_000 };
        let mut epb = Vec::new();
        epb.extend_from_slice(&iface.to_le_bytes());
        epb.extend_from_slice(&((ticks >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ticks as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&orig.to_le_bytes());
        epb.extend_from_slice(&data);
        block(&mut f, 6, &epb);
    }
    f
}

/// One's-complement sum of big-endian 16-bit words, folded: an arithmetic of its own, not the
/// decoder's (etherparse's), to check it.
pub fn ones_sum(bytes: &[u8]) -> u16 {
    let mut s: u32 = bytes.chunks(2).map(|c| (u32::from(c[0]) << 8) | u32::from(*c.get(1).unwrap_or(&0))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The folded pseudo-header sum of an IPv4/TCP packet without IP options ([`Pkt::ipv4`]).
pub fn pseudo_v4(ip: &[u8]) -> u16 {
    ones_sum(&[&ip[12..20], &[0, 6], &((ip.len() - 20) as u16).to_be_bytes()[..]].concat())
}

/// Fills the IPv4 header and TCP checksums of a whole IPv4/TCP packet without IP options
/// ([`Pkt::ipv4`] writes them 0, which checksum verification takes for offload).
pub fn fill_checksums(ip: &mut [u8]) {
    ip[10..12].copy_from_slice(&[0, 0]);
    ip[36..38].copy_from_slice(&[0, 0]);
    let h = !ones_sum(&ip[..20]);
    ip[10..12].copy_from_slice(&h.to_be_bytes());
    let t = !ones_sum(&[pseudo_v4(ip).to_be_bytes().as_slice(), &ip[20..]].concat());
    ip[36..38].copy_from_slice(&t.to_be_bytes());
}

/// The `segments` and `rtt` rows of capture `path`, as `export` makes them (the `file` column
/// says `file`), for tests of the rows and of their writers.
pub fn packet_rows(
    path: &std::path::Path,
    file: &'static str,
) -> (Vec<crate::export::rows::SegmentRow<'static>>, Vec<crate::export::rows::RttRow>) {
    use crate::analysis::{At, Event, SegmentInfo, Sink};
    use crate::export::rows::{RttRow, SegmentRow, Verdict};
    struct Rows(Verdict, &'static std::sync::Arc<str>, Vec<SegmentRow<'static>>, Vec<RttRow>);
    impl Sink for Rows {
        fn event(&mut self, at: &At, ev: &Event) {
            self.0.event(ev);
            self.3.extend(RttRow::of(at, ev));
        }
        fn segment(&mut self, s: &SegmentInfo) {
            let row = self.0.row(s, self.1);
            self.2.push(row);
        }
        const CLASSIFY: bool = true;
    }
    let q = crate::pass::Query::new(vec![path.into()]);
    // Leaked: a test's few bytes, for rows that borrow their file's name for `'static`.
    let file = Box::leak(Box::new(file.into()));
    let (rows, _, _) = q.run_one(Rows(Verdict::default(), file, Vec::new(), Vec::new()), &|_, _| {}).unwrap();
    (rows.2, rows.3)
}

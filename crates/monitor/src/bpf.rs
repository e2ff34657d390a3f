//! The BPF sampler: one pass of a BPF iterator over the kernel's TCP sockets (`bpf_iter/tcp`).
//!
//! The program (`bpf/tcp_iter.bpf.c`, committed compiled as `bpf/tcp_iter.bpf.o`; `bpf/build.sh`
//! rebuilds it) writes one 384-byte record per socket: the values the netlink sampler takes from
//! `inet_diag_msg` and `INET_DIAG_MEMINFO`, the congestion control's name, and a `struct
//! tcp_info` in Linux 6.18's layout filled as the kernel's `tcp_get_info()` fills it. So a record
//! decodes into the same [`SockInfo`] as a netlink reply, `tcp_info` by the same decoder
//! ([`crate::fields::decode_tcp_info`]). BBR's `tcp_bbr_info` is not read (the `bbr_*` fields
//! are absent with this sampler).
//!
//! Loading (aya: pure Rust, CO-RE relocation against `/sys/kernel/btf/vmlinux`) needs BTF, the
//! privilege to load tracing programs (CAP_BPF and CAP_PERFMON, or root), a kernel with the
//! `tcp` iterator and every `tcp_sock` member the program reads (6.18 or later, for the AccECN
//! counters), and the kernel's HZ (from its config) dividing 1000. Anything else is an error
//! that says why; [`crate::source::Source::open`] then falls back to netlink.
//!
//! The filter runs in user space, on every record ([`Filter::matches`], the test the netlink
//! sampler runs on each reply).

use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use aya::programs::Iter;
use aya::{Btf, Ebpf, EbpfLoader};

use crate::diag::{Congs, DumpStats, SockInfo, cong_name};
use crate::fields::{DiagField, LAYOUT, Raw, decode_tcp_info, read_le};
use crate::filter::{Ends, Filter};

/// The compiled program (`bpf/build.sh` makes it from `bpf/tcp_iter.bpf.c`).
pub static OBJECT: &[u8] = include_bytes!("../bpf/tcp_iter.bpf.o");

/// The program's name in the object.
const PROGRAM: &str = "tcpscope_tcp";

/// Bytes of one record (`struct rec` in the program).
pub const REC_LEN: usize = 384;
/// Where the record's `struct tcp_info` starts, and its length (Linux 6.18's).
pub const REC_INFO: usize = 104;
pub const REC_INFO_LEN: usize = 280;

/// A loaded iterator program, ready to be run once per dump.
pub struct BpfIter {
    // The program's maps and the program itself live as long as this.
    ebpf: Ebpf,
    filter: Filter,
    /// Keep each record's `tcp_info` in [`SockInfo::info`] (for tests and tools).
    pub keep_info: bool,
    /// The kernel's HZ the program was loaded with.
    pub hz: u32,
    buf: Vec<u8>,
    congs: Congs,
}

impl BpfIter {
    /// Loads the program and checks that it runs (one pass). The error says why it cannot.
    pub fn new(filter: Filter) -> io::Result<BpfIter> {
        let hz = kernel_hz()?;
        if hz == 0 || !1000u32.is_multiple_of(hz) {
            return Err(other(format!("the kernel's HZ is {hz}, which does not divide 1000")));
        }
        let btf = Btf::from_sys_fs().map_err(|e| other(format!("no kernel BTF (/sys/kernel/btf/vmlinux): {e}")))?;
        let (us, ms) = (1_000_000 / hz, 1000 / hz);
        let mut ebpf = EbpfLoader::new()
            .btf(Some(&btf))
            .override_global("us_per_jiffy", &us, true)
            .override_global("ms_per_jiffy", &ms, true)
            .load(OBJECT)
            .map_err(|e| other(format!("loading the BPF object: {}", chain(&e))))?;
        let prog: &mut Iter = ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| other(format!("no program {PROGRAM} in the BPF object")))?
            .try_into()
            .map_err(|e| other(format!("{PROGRAM}: {}", chain(&e))))?;
        prog.load("tcp", &btf).map_err(|e| other(format!("loading the tcp iterator: {}", chain(&e))))?;
        let mut it = BpfIter { ebpf, filter, keep_info: false, hz, buf: Vec::new(), congs: Vec::new() };
        it.read_all()?;
        Ok(it)
    }

    /// Runs the iterator once, every record of the network namespace's TCP sockets read and not
    /// decoded (the kernel's part of a dump, for the benchmark). Returns the bytes read.
    pub fn pass(&mut self) -> io::Result<usize> {
        self.read_all()?;
        Ok(self.buf.len())
    }

    /// Runs the iterator once: every record of the network namespace's TCP sockets into the
    /// buffer.
    fn read_all(&mut self) -> io::Result<()> {
        let prog: &mut Iter = self
            .ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| other("the BPF program is gone"))?
            .try_into()
            .map_err(|e| other(format!("{PROGRAM}: {}", chain(&e))))?;
        // A link and its iterator file per pass: an iterator is read once, to its end.
        let id = prog.attach().map_err(|e| other(format!("attaching the tcp iterator: {}", chain(&e))))?;
        let link = prog.take_link(id).map_err(|e| other(format!("the tcp iterator's link: {}", chain(&e))))?;
        let mut file = link.into_file().map_err(|e| other(format!("opening the tcp iterator: {}", chain(&e))))?;
        self.buf.clear();
        file.read_to_end(&mut self.buf)
            .map_err(|e| io::Error::new(e.kind(), format!("reading the tcp iterator: {e}")))?;
        Ok(())
    }

    /// One pass: calls `each` for every socket that passes the filter (every state but
    /// LISTEN, TIME_WAIT and SYN_RECV, IPv4 and IPv6). Returns the wall-clock time (ns since the
    /// epoch) the pass began, and its counts.
    pub fn dump(&mut self, mut each: impl FnMut(SockInfo)) -> io::Result<(u64, DumpStats)> {
        let t_ns = crate::record::now_ns();
        self.read_all()?;
        let mut stats = DumpStats::default();
        if !self.buf.len().is_multiple_of(REC_LEN) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "tcp iterator: byte {}: a cut record ({} bytes read, records are {REC_LEN})",
                    self.buf.len() / REC_LEN * REC_LEN,
                    self.buf.len()
                ),
            ));
        }
        for (n, rec) in self.buf.chunks_exact(REC_LEN).enumerate() {
            let s = decode_record(rec, &mut self.congs, self.keep_info).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidData, format!("tcp iterator: byte {}: {e}", n * REC_LEN))
            })?;
            stats.replies += 1;
            if self.filter.matches(&s.ends) {
                each(s);
            } else {
                stats.filtered += 1;
            }
        }
        Ok((t_ns, stats))
    }
}

/// One record of the program into the netlink sampler's [`SockInfo`].
pub fn decode_record(rec: &[u8], congs: &mut Congs, keep_info: bool) -> Result<SockInfo, String> {
    if rec.len() != REC_LEN {
        return Err(format!("a record of {} bytes, not {REC_LEN}", rec.len()));
    }
    let u = |off: usize, size: usize| read_le(rec, off, size).unwrap_or(0);
    let len = u(0, 2) as usize;
    if len != REC_LEN {
        return Err(format!("the record says it is {len} bytes, not {REC_LEN} (a program of another version?)"));
    }
    let family = u(2, 2) as u8;
    let (src, dst) = match family {
        2 => (
            IpAddr::V4(Ipv4Addr::new(rec[52], rec[53], rec[54], rec[55])),
            IpAddr::V4(Ipv4Addr::new(rec[68], rec[69], rec[70], rec[71])),
        ),
        10 => {
            let a = |off: usize| {
                let mut b = [0u8; 16];
                b.copy_from_slice(&rec[off..off + 16]);
                IpAddr::V6(Ipv6Addr::from(b))
            };
            (a(52), a(68))
        }
        f => return Err(format!("address family {f}")),
    };
    let state = u(4, 1);
    let info = &rec[REC_INFO..REC_INFO + REC_INFO_LEN];
    let mut raw = Raw::default();
    decode_tcp_info(info, &mut raw);
    let l = &*LAYOUT;
    for &(i, d) in &l.diag {
        raw.set(
            i,
            Some(match d {
                DiagField::State => state,
                DiagField::RQueue => u(28, 4),
                DiagField::WQueue => u(32, 4),
            }),
        );
    }
    for &(i, k) in &l.mem {
        raw.set(i, Some(u(36 + 4 * k, 4)));
    }
    let cong: &[u8] = &rec[84..100];
    Ok(SockInfo {
        family,
        ends: Ends { src, sport: u(24, 2) as u16, dst, dport: u(26, 2) as u16 },
        cookie: u(8, 8),
        inode: u(16, 4) as u32,
        uid: u(20, 4) as u32,
        cong: if cong[0] == 0 { None } else { Some(cong_name(congs, cong)) },
        info_len: REC_INFO_LEN,
        info: if keep_info { info.to_vec() } else { Vec::new() },
        raw,
    })
}

/// The running kernel's `CONFIG_HZ`, from `/boot/config-RELEASE` or `/proc/config.gz` (where
/// libbpf looks for `__kconfig` values too).
pub fn kernel_hz() -> io::Result<u32> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let boot = format!("/boot/config-{}", release.trim());
    let text = match std::fs::read_to_string(&boot) {
        Ok(t) => t,
        Err(_) => {
            let mut t = String::new();
            std::fs::File::open("/proc/config.gz")
                .and_then(|f| flate2::read::GzDecoder::new(f).read_to_string(&mut t))
                .map_err(|e| other(format!("the kernel's HZ: neither {boot} nor /proc/config.gz ({e})")))?;
            t
        }
    };
    config_hz(&text).ok_or_else(|| other("the kernel's config has no CONFIG_HZ"))
}

/// `CONFIG_HZ=N` in a kernel config's text.
pub fn config_hz(config: &str) -> Option<u32> {
    config.lines().find_map(|l| l.strip_prefix("CONFIG_HZ=")).and_then(|v| v.trim().parse().ok())
}

fn other(msg: impl Into<String>) -> io::Error {
    io::Error::other(msg.into())
}

/// An error with its sources (aya's errors keep the kernel's reason, e.g. the verifier's, in
/// the chain).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        // Some of aya's errors repeat their source in their own text.
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hz_from_a_config() {
        assert_eq!(config_hz("# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"), Some(250));
        assert_eq!(config_hz("CONFIG_HZ_250=y\n"), None);
    }

    /// A record built by hand, as the program lays it out, decodes to what was put in.
    #[test]
    fn a_record_decodes() {
        let mut r = vec![0u8; REC_LEN];
        r[0..2].copy_from_slice(&(REC_LEN as u16).to_le_bytes());
        r[2..4].copy_from_slice(&2u16.to_le_bytes());
        r[4] = 1;
        r[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        r[16..20].copy_from_slice(&4242u32.to_le_bytes());
        r[20..24].copy_from_slice(&1000u32.to_le_bytes());
        r[24..26].copy_from_slice(&5201u16.to_le_bytes());
        r[26..28].copy_from_slice(&40000u16.to_le_bytes());
        r[28..32].copy_from_slice(&7u32.to_le_bytes());
        r[32..36].copy_from_slice(&9u32.to_le_bytes());
        r[36..40].copy_from_slice(&100u32.to_le_bytes());
        r[48..52].copy_from_slice(&400u32.to_le_bytes());
        r[52..56].copy_from_slice(&[10, 0, 0, 1]);
        r[68..72].copy_from_slice(&[10, 0, 0, 2]);
        r[84..88].copy_from_slice(b"bbr\0");
        // tcp_info: snd_cwnd at 80, bytes_acked at 120.
        r[REC_INFO + 80..REC_INFO + 84].copy_from_slice(&33u32.to_le_bytes());
        r[REC_INFO + 120..REC_INFO + 128].copy_from_slice(&123_456u64.to_le_bytes());
        let mut congs = Vec::new();
        let s = decode_record(&r, &mut congs, false).unwrap();
        assert_eq!(s.cookie, 0x1122_3344_5566_7788);
        assert_eq!((s.inode, s.uid, s.family), (4242, 1000, 2));
        assert_eq!(s.ends.src, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(s.ends.dst, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)));
        assert_eq!((s.ends.sport, s.ends.dport), (5201, 40000));
        assert_eq!(s.cong.as_deref(), Some("bbr"));
        let f = |n: &str| s.raw.get(crate::fields::index(n));
        assert_eq!(f("state"), Some(1));
        assert_eq!(f("rqueue"), Some(7));
        assert_eq!(f("wqueue"), Some(9));
        assert_eq!(f("rmem"), Some(100));
        assert_eq!(f("tmem"), Some(400));
        assert_eq!(f("snd_cwnd"), Some(33));
        assert_eq!(f("bytes_acked"), Some(123_456));
        assert_eq!(f("bbr_bw"), None);
        // A record of another length is refused, not misread.
        r[0] = 0;
        assert!(decode_record(&r, &mut congs, false).unwrap_err().contains("not 384"));
    }
}

//! One dump of the kernel's TCP sockets over `NETLINK_SOCK_DIAG`, as `ss -tim` asks for it.
//!
//! The framing (netlink header, `inet_diag_req_v2`, the reply's `inet_diag_msg` and its
//! attributes) is `netlink-packet-sock-diag`'s, read through its buffer views (no allocation per
//! reply). Two things it cannot do are done here by hand:
//! - the request's `INET_DIAG_REQ_BYTECODE` attribute (the crate's `InetRequest` has no
//!   attributes), appended after the serialized request with the length patched;
//! - `struct tcp_info`: with its `rich_nlas` feature the crate parses exactly 232 bytes and
//!   rejects shorter attributes from older kernels, so we take the raw bytes and decode them by
//!   their length ([`crate::fields::decode_tcp_info`]); likewise BBR's `tcp_bbr_info`, which the
//!   crate leaves as an unknown attribute.

use std::io;
use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, NetlinkBuffer, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_packet_sock_diag::constants::{
    AF_INET, AF_INET6, INET_DIAG_BBRINFO, INET_DIAG_CONG, INET_DIAG_INFO, INET_DIAG_MEMINFO, IPPROTO_TCP,
    SOCK_DIAG_BY_FAMILY,
};
use netlink_packet_sock_diag::inet::{
    ExtensionFlags, InetRequest, InetResponseBuffer, InetResponseHeader, SocketId, StateFlags,
};
use netlink_packet_utils::traits::Parseable;
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_SOCK_DIAG};

use crate::fields::{DiagField, LAYOUT, Raw, decode_tcp_info, read_le};
use crate::filter::{Ends, Filter};

/// `INET_DIAG_REQ_BYTECODE`, the request attribute carrying the filter program.
const INET_DIAG_REQ_BYTECODE: u16 = 1;

/// One socket of one dump.
#[derive(Clone, Debug)]
pub struct SockInfo {
    pub family: u8,
    pub ends: Ends,
    /// The kernel's socket cookie (`idiag_cookie`): stable for the socket's life, never reused
    /// while the machine is up.
    pub cookie: u64,
    pub inode: u32,
    pub uid: u32,
    /// Congestion control (`INET_DIAG_CONG`).
    pub cong: Option<Arc<str>>,
    /// Length of the `INET_DIAG_INFO` attribute (`struct tcp_info`, as long as the kernel made
    /// it: tells which fields this kernel has).
    pub info_len: usize,
    /// The attribute itself, if [`Diag::keep_info`] is set (else empty: a copy per socket per
    /// dump is not free).
    pub info: Vec<u8>,
    /// Raw values indexed like [`crate::fields::FIELDS`] (derived slots absent).
    pub raw: Raw,
}

/// Counts of one dump.
#[derive(Clone, Copy, Debug, Default)]
pub struct DumpStats {
    /// Replies the kernel sent.
    pub replies: u64,
    /// Replies dropped by the user-space filter (0 when the kernel ran the bytecode).
    pub filtered: u64,
    /// Replies the netlink crate could not parse (skipped).
    pub unparsed: u64,
}

/// A `NETLINK_SOCK_DIAG` socket ready to dump TCP sockets matching a filter.
pub struct Diag {
    sock: Socket,
    filter: Filter,
    bytecode: Option<Vec<u8>>,
    /// Whether the kernel accepted the bytecode (else the filter runs in user space only).
    pub kernel_filter: bool,
    /// Keep each reply's raw `tcp_info` in [`SockInfo::info`] (for tests and tools).
    pub keep_info: bool,
    buf: Vec<u8>,
    seq: u32,
    congs: Congs,
}

impl Diag {
    /// Opens the socket. The filter is compiled to bytecode; if the kernel rejects it on the first
    /// dump, later dumps filter in user space ([`Diag::kernel_filter`] says which).
    pub fn new(filter: Filter) -> io::Result<Diag> {
        let mut sock = Socket::new(NETLINK_SOCK_DIAG)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        let bytecode = filter.bytecode();
        let kernel_filter = bytecode.is_some();
        Ok(Diag {
            sock,
            filter,
            bytecode,
            kernel_filter,
            keep_info: false,
            buf: Vec::with_capacity(1 << 16),
            seq: 0,
            congs: Vec::new(),
        })
    }

    /// Dumps IPv4 then IPv6 TCP sockets (all states but LISTEN, TIME_WAIT and SYN_RECV, which
    /// have no `tcp_info`), calling `each` for every socket that passes the filter. Returns the
    /// wall-clock time (ns since the epoch) the dump was asked for, and its counts.
    pub fn dump(&mut self, mut each: impl FnMut(SockInfo)) -> io::Result<(u64, DumpStats)> {
        let t_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let mut stats = DumpStats::default();
        for family in [AF_INET, AF_INET6] {
            match self.dump_family(family, &mut stats, &mut each) {
                Err(e) if e.raw_os_error() == Some(22) && self.kernel_filter => {
                    // EINVAL: the kernel's bytecode audit refused our program.
                    self.kernel_filter = false;
                    self.dump_family(family, &mut stats, &mut each)?;
                }
                r => r?,
            }
        }
        Ok((t_ns, stats))
    }

    fn dump_family(&mut self, family: u8, stats: &mut DumpStats, each: &mut impl FnMut(SockInfo)) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let req = InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::INFO
                | ExtensionFlags::CONG
                | ExtensionFlags::VEGASINFO
                | ExtensionFlags::MEMINFO,
            states: StateFlags::all() - StateFlags::LISTEN - StateFlags::TIME_WAIT - StateFlags::SYN_RECV,
            socket_id: if family == AF_INET { SocketId::new_v4() } else { SocketId::new_v6() },
        };
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        header.sequence_number = self.seq;
        let mut msg = NetlinkMessage::new(header, SockDiagMessage::InetRequest(req).into());
        msg.finalize();
        let mut out = vec![0u8; msg.buffer_len()];
        msg.serialize(&mut out);
        if let (Some(bc), true) = (&self.bytecode, self.kernel_filter) {
            // struct rtattr { u16 rta_len; u16 rta_type; } then the program (a multiple of 4).
            out.extend_from_slice(&((4 + bc.len()) as u16).to_ne_bytes());
            out.extend_from_slice(&INET_DIAG_REQ_BYTECODE.to_ne_bytes());
            out.extend_from_slice(bc);
            let len = out.len() as u32;
            out[0..4].copy_from_slice(&len.to_ne_bytes());
        }
        self.sock.send(&out, 0)?;
        loop {
            self.buf.clear();
            self.sock.recv(&mut self.buf, 0)?;
            let mut at = 0;
            while at + 16 <= self.buf.len() {
                let len =
                    u32::from_ne_bytes([self.buf[at], self.buf[at + 1], self.buf[at + 2], self.buf[at + 3]]) as usize;
                if len < 16 || at + len > self.buf.len() {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, format!("netlink message of length {len}")));
                }
                let bytes = &self.buf[at..at + len];
                at += (len + 3) & !3;
                // The crate's buffer views, not its parsed messages: a parsed reply allocates a
                // vector of attributes, a copy of tcp_info and a string per socket per dump, which
                // at 10,000 sockets and 10 Hz was a measurable part of the sampler's time.
                let Ok(nl) = NetlinkBuffer::new_checked(bytes) else {
                    stats.unparsed += 1;
                    continue;
                };
                match nl.message_type() {
                    NLMSG_DONE => return Ok(()),
                    NLMSG_ERROR => {
                        if let Ok(m) = NetlinkMessage::<SockDiagMessage>::deserialize(bytes)
                            && let NetlinkPayload::Error(e) = m.payload
                            && e.code.is_some()
                        {
                            return Err(e.to_io());
                        }
                    }
                    SOCK_DIAG_BY_FAMILY => {
                        let Some(s) = sock_info(nl.payload(), &mut self.congs, self.keep_info) else {
                            stats.unparsed += 1;
                            continue;
                        };
                        stats.replies += 1;
                        if self.filter.matches(&s.ends) {
                            each(s);
                        } else {
                            stats.filtered += 1;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// Congestion-control names seen, so that each reply's name is a shared string, not a new one.
pub(crate) type Congs = Vec<(Vec<u8>, Arc<str>)>;

/// The shared string of a NUL-terminated congestion-control name.
pub(crate) fn cong_name(congs: &mut Congs, v: &[u8]) -> Arc<str> {
    let name = v.split(|&b| b == 0).next().unwrap_or(v);
    match congs.iter().find(|(n, _)| n == name) {
        Some((_, a)) => Arc::clone(a),
        None => {
            let a: Arc<str> = String::from_utf8_lossy(name).into();
            congs.push((name.to_vec(), Arc::clone(&a)));
            a
        }
    }
}

/// One reply: the `inet_diag_msg` header by the crate's buffer view and its attributes by the
/// crate's iterator, values borrowed from the receive buffer. `None` if it does not parse.
fn sock_info(payload: &[u8], congs: &mut Congs, keep_info: bool) -> Option<SockInfo> {
    let buf = InetResponseBuffer::new_checked(payload).ok()?;
    let h = InetResponseHeader::parse(&buf).ok()?;
    let id = &h.socket_id;
    let mut raw = Raw::default();
    let mut info: &[u8] = &[];
    let mut cong = None;
    let mut mem: Option<&[u8]> = None;
    let mut bbr: Option<&[u8]> = None;
    for nla in buf.nlas() {
        let nla = nla.ok()?;
        let (kind, len) = (nla.kind(), usize::from(nla.length()));
        // `value()` borrows the view; the slice of the receive buffer itself outlives it.
        let v: &[u8] = nla.into_inner().get(4..len)?;
        match kind {
            INET_DIAG_INFO => info = v,
            INET_DIAG_CONG => cong = Some(cong_name(congs, v)),
            INET_DIAG_MEMINFO => mem = Some(v),
            INET_DIAG_BBRINFO => bbr = Some(v),
            _ => {}
        }
    }
    if !info.is_empty() {
        decode_tcp_info(info, &mut raw);
    }
    let l = &*LAYOUT;
    for &(i, d) in &l.diag {
        raw.set(
            i,
            Some(match d {
                DiagField::State => u64::from(h.state),
                DiagField::RQueue => u64::from(h.recv_queue),
                DiagField::WQueue => u64::from(h.send_queue),
            }),
        );
    }
    // struct inet_diag_meminfo { u32 idiag_rmem, idiag_wmem, idiag_fmem, idiag_tmem; }
    if let Some(m) = mem {
        for &(i, k) in &l.mem {
            raw.set(i, read_le(m, 4 * k, 4));
        }
    }
    // struct tcp_bbr_info { u32 bbr_bw_lo, bbr_bw_hi, bbr_min_rtt, bbr_pacing_gain, bbr_cwnd_gain; }
    if let Some(b) = bbr {
        for &(i, k) in &l.bbr {
            raw.set(
                i,
                if k == 0 {
                    read_le(b, 0, 4).zip(read_le(b, 4, 4)).map(|(lo, hi)| lo | hi << 32)
                } else {
                    read_le(b, 4 * k, 4)
                },
            );
        }
    }
    Some(SockInfo {
        family: h.family,
        ends: Ends {
            src: id.source_address,
            sport: id.source_port,
            dst: id.destination_address,
            dport: id.destination_port,
        },
        cookie: u64::from_ne_bytes(id.cookie),
        inode: h.inode,
        uid: h.uid,
        cong,
        info_len: info.len(),
        info: if keep_info { info.to_vec() } else { Vec::new() },
        raw,
    })
}

/// An address as it should be shown: IPv4-mapped IPv6 as IPv4.
pub fn show_addr(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v) => v.to_ipv4_mapped().map_or(a, IpAddr::V4),
        v4 => v4,
    }
}

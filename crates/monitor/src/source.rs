//! Where samples come from: the BPF iterator ([`crate::bpf`]) or `NETLINK_SOCK_DIAG`
//! ([`crate::diag`]), both yielding the same [`SockInfo`] per socket.

use std::io;
use std::str::FromStr;

use crate::bpf::BpfIter;
use crate::diag::{Diag, DumpStats, SockInfo};
use crate::filter::Filter;

/// `--sampler`: which one to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SamplerKind {
    /// The BPF iterator if it loads, else netlink.
    Auto,
    /// `NETLINK_SOCK_DIAG`, the default: the BPF sampler measured no cheaper at scale
    /// (docs/monitor.md, Cost at scale), starts 0.25 s later and lacks BBR's fields.
    #[default]
    Netlink,
    Bpf,
}

impl FromStr for SamplerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<SamplerKind, String> {
        match s {
            "auto" => Ok(SamplerKind::Auto),
            "netlink" => Ok(SamplerKind::Netlink),
            "bpf" => Ok(SamplerKind::Bpf),
            _ => Err(format!("`{s}`: the sampler is auto, netlink or bpf")),
        }
    }
}

/// An open sampler.
pub enum Source {
    Netlink(Diag),
    Bpf(Box<BpfIter>),
}

impl From<Diag> for Source {
    fn from(d: Diag) -> Source {
        Source::Netlink(d)
    }
}

impl From<BpfIter> for Source {
    fn from(b: BpfIter) -> Source {
        Source::Bpf(Box::new(b))
    }
}

impl Source {
    /// Opens the sampler `kind` asks for. With [`SamplerKind::Auto`], a BPF iterator that
    /// cannot load falls back to netlink, and the second value says why; with
    /// [`SamplerKind::Bpf`] that is an error.
    pub fn open(filter: Filter, kind: SamplerKind) -> io::Result<(Source, Option<String>)> {
        match kind {
            SamplerKind::Netlink => Ok((Diag::new(filter)?.into(), None)),
            SamplerKind::Bpf => BpfIter::new(filter)
                .map(|b| (b.into(), None))
                .map_err(|e| io::Error::new(e.kind(), format!("--sampler bpf: {e}"))),
            SamplerKind::Auto => match BpfIter::new(filter.clone()) {
                Ok(b) => Ok((b.into(), None)),
                Err(e) => Ok((Diag::new(filter)?.into(), Some(format!("the BPF iterator did not load: {e}")))),
            },
        }
    }

    /// One dump: `each` for every socket that passes the filter.
    pub fn dump(&mut self, each: impl FnMut(SockInfo)) -> io::Result<(u64, DumpStats)> {
        match self {
            Source::Netlink(d) => d.dump(each),
            Source::Bpf(b) => b.dump(each),
        }
    }

    /// Whether the filter ran in the kernel (netlink's bytecode); the BPF sampler filters in
    /// user space.
    pub fn kernel_filter(&self) -> bool {
        match self {
            Source::Netlink(d) => d.kernel_filter,
            Source::Bpf(_) => false,
        }
    }

    /// `netlink` or `bpf`.
    pub fn name(&self) -> &'static str {
        match self {
            Source::Netlink(_) => "netlink",
            Source::Bpf(_) => "bpf",
        }
    }

    /// Keep each socket's raw `tcp_info` ([`SockInfo::info`]).
    pub fn set_keep_info(&mut self, keep: bool) {
        match self {
            Source::Netlink(d) => d.keep_info = keep,
            Source::Bpf(b) => b.keep_info = keep,
        }
    }
}

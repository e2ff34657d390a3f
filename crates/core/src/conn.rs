//! The vocabulary every part of the engine shares about a connection: its endpoints, its index,
//! its directions, and its identity as fixed when it was first seen. It sits below `flow` (which
//! finds a segment's connection) and `analysis` (which follows it), so neither imports the other.

use std::net::IpAddr;

/// An address and port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    /// IP address.
    pub addr: IpAddr,
    /// TCP port.
    pub port: u16,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.addr {
            IpAddr::V4(a) => write!(f, "{a}:{}", self.port),
            IpAddr::V6(a) => write!(f, "[{a}]:{}", self.port),
        }
    }
}

/// Index of a connection in the order of first appearance (0-based; shown 1-based as `id`).
pub type ConnIdx = usize;

/// A connection's name that stays the same whatever else is read with it: its trace (an input
/// as given, or all of them with `--merge`) and its index among that trace's connections. The
/// `id` outputs show numbers the connections of a whole run, for `-c`, so it moves when another
/// input is read before; this pair does not, so the tables of several runs (exports of many
/// traces, a cluster's parts) concatenate and join on it (`input`, `conn` in the outputs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId {
    /// Index of the trace among the run's inputs (0 with one input).
    pub trace: usize,
    /// Index of the connection in its trace, in order of first appearance (shown 1-based).
    pub index: ConnIdx,
}

/// Direction of a packet within its connection. `AtoB` is from the endpoint that sent the SYN
/// (or, without a SYN, the sender of the first packet seen).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// From endpoint a to endpoint b.
    AtoB = 0,
    /// From endpoint b to endpoint a.
    BtoA = 1,
}

impl Dir {
    /// The other direction.
    pub fn rev(self) -> Dir {
        match self {
            Dir::AtoB => Dir::BtoA,
            Dir::BtoA => Dir::AtoB,
        }
    }
    /// 0 for a→b, 1 for b→a.
    pub fn idx(self) -> usize {
        self as usize
    }
    /// "a2b" or "b2a", as in the JSON and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Dir::AtoB => "a2b",
            Dir::BtoA => "b2a",
        }
    }
}

/// Identity of a connection, fixed when it is created.
#[derive(Clone, Copy, Debug)]
pub struct ConnInfo {
    /// Endpoint a: the SYN's sender, or the sender of the first packet seen.
    pub a: Endpoint,
    /// Endpoint b.
    pub b: Endpoint,
    /// Index of the file it was seen in (several files analysed separately).
    pub file: usize,
    /// Why this connection exists as a separate one from an earlier one on the same 4-tuple.
    pub reuse: Option<SplitReason>,
}

/// Why a segment on a known 4-tuple started a new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitReason {
    /// A SYN with a different initial sequence number (port reuse).
    NewIsn,
    /// The 4-tuple had been idle for longer than the idle limit and the segment does not
    /// continue the old sequence space.
    IdleGap,
}

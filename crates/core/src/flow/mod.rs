//! Which connection, and which direction, a segment belongs to.
//!
//! A connection is identified by its 4-tuple plus the initial sequence numbers: the table maps
//! a 4-tuple to its *current* connection, and the analysis decides when a segment starts a new
//! one on the same 4-tuple (port reuse: a SYN with a new ISN; activity after a long idle gap),
//! see [`crate::analysis::Connection::splits_on`].

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::net::IpAddr;

use rustc_hash::FxHasher;

use crate::conn::{ConnIdx, Dir};
pub use crate::conn::{ConnInfo, Endpoint, SplitReason};
use crate::decode::Segment;

/// The unordered 4-tuple: the smaller endpoint first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    lo: Endpoint,
    hi: Endpoint,
}

impl FlowKey {
    /// The key of a segment, and whether the segment goes from `lo` to `hi`.
    pub fn of(seg: &Segment<'_>) -> (FlowKey, bool) {
        let s = Endpoint { addr: seg.src, port: seg.sport };
        let d = Endpoint { addr: seg.dst, port: seg.dport };
        if s <= d { (FlowKey { lo: s, hi: d }, true) } else { (FlowKey { lo: d, hi: s }, false) }
    }
}

/// 4-tuple → current connection.
#[derive(Default)]
pub struct FlowTable {
    map: HashMap<FlowKey, (ConnIdx, Endpoint), BuildHasherDefault<FxHasher>>,
    /// The last lookup's answer for each direction of its 4-tuple: consecutive packets mostly
    /// belong to one connection, and comparing addresses is cheaper than hashing them.
    recent: [Option<(Directed, ConnIdx, Dir)>; 2],
}

/// A directed 4-tuple as the one-connection cache compares it: an IPv4 one packed into one
/// integer (exact, so equal keys mean equal 4-tuples; the common case, two integer compares
/// instead of four `IpAddr`/port compares), any other as its endpoints.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Directed {
    V4(u128),
    Other(Endpoint, Endpoint),
}

impl Directed {
    #[inline]
    fn new(src: Endpoint, dst: Endpoint) -> Directed {
        match (src.addr, dst.addr) {
            (IpAddr::V4(s), IpAddr::V4(d)) => Directed::V4(
                (u32::from(s) as u128) << 64
                    | (u32::from(d) as u128) << 32
                    | (src.port as u128) << 16
                    | dst.port as u128,
            ),
            _ => Directed::Other(src, dst),
        }
    }
}

impl FlowTable {
    /// The current connection of the segment's 4-tuple and the segment's direction in it.
    // Always inlined: called for every packet, and the call itself (saving and restoring the
    // registers of a large function) cost ~18 of its ~45 instructions.
    #[inline(always)]
    pub fn lookup(&mut self, seg: &Segment<'_>) -> Option<(ConnIdx, Dir)> {
        let src = Endpoint { addr: seg.src, port: seg.sport };
        let dst = Endpoint { addr: seg.dst, port: seg.dport };
        let directed = Directed::new(src, dst);
        // By reference: copying an entry out first and comparing the copy stalled on store
        // forwarding (the copy's stores, the compare's loads at other offsets): a third of
        // this function's time.
        for (k, idx, dir) in self.recent.iter().flatten() {
            if *k == directed {
                return Some((*idx, *dir));
            }
        }
        let (key, _) = FlowKey::of(seg);
        let &(idx, a) = self.map.get(&key)?;
        let dir = if a == src { Dir::AtoB } else { Dir::BtoA };
        self.remember(src, dst, idx, dir);
        Some((idx, dir))
    }

    /// Makes `idx` the answer of the one-connection cache for both directions. A connection
    /// of an endpoint with itself (src == dst) has one key for both directions: the cache
    /// answers what the map does (a2b, a being the source), or the answer would depend on
    /// whether another connection's packets went through this table in between (one analyzer
    /// and the shards of a split pass disagreed: found by the pipeline fuzz target).
    fn remember(&mut self, src: Endpoint, dst: Endpoint, idx: ConnIdx, dir: Dir) {
        let dir = if src == dst { Dir::AtoB } else { dir };
        self.recent = [Some((Directed::new(src, dst), idx, dir)), Some((Directed::new(dst, src), idx, dir.rev()))];
    }

    /// Makes `idx` the current connection of the segment's 4-tuple, with endpoint a chosen from
    /// this first segment. Returns the connection's identity and the segment's direction.
    pub fn insert(
        &mut self,
        seg: &Segment<'_>,
        idx: ConnIdx,
        file: usize,
        reuse: Option<SplitReason>,
    ) -> (ConnInfo, Dir) {
        let (key, _) = FlowKey::of(seg);
        let src = Endpoint { addr: seg.src, port: seg.sport };
        let dst = Endpoint { addr: seg.dst, port: seg.dport };
        // A SYN-ACK's receiver sent the SYN.
        let syn_ack = seg.flags.syn() && seg.flags.ack();
        let (a, b, dir) = if syn_ack { (dst, src, Dir::BtoA) } else { (src, dst, Dir::AtoB) };
        self.map.insert(key, (idx, a));
        self.remember(src, dst, idx, dir);
        (ConnInfo { a, b, file, reuse }, dir)
    }

    /// Forgets a 4-tuple's connection (when it is finished and evicted).
    pub fn remove_if(&mut self, seg_key: &FlowKey, idx: ConnIdx) {
        if self.map.get(seg_key).is_some_and(|&(i, _)| i == idx) {
            self.map.remove(seg_key);
            self.recent = [None, None];
        }
    }

    /// Number of 4-tuples tracked.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no 4-tuple is tracked.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl FlowKey {
    /// Which of `n` shards the segment's 4-tuple goes to: the same for both directions.
    #[inline]
    pub fn shard(seg: &Segment<'_>, n: usize) -> usize {
        fn bits(a: IpAddr) -> u64 {
            match a {
                IpAddr::V4(a) => u32::from(a) as u64,
                IpAddr::V6(a) => {
                    let x = u128::from(a);
                    (x >> 64) as u64 ^ x as u64
                }
            }
        }
        // XOR is symmetric in the two endpoints; the multiply spreads its bits to the top 32,
        // which scale to 0..n without a division.
        let x = bits(seg.src) ^ bits(seg.dst) ^ (seg.sport ^ seg.dport) as u64;
        (((x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) * n as u64) >> 32) as usize
    }

    /// The key of the 4-tuple between two endpoints.
    pub fn between(x: Endpoint, y: Endpoint) -> FlowKey {
        if x <= y { FlowKey { lo: x, hi: y } } else { FlowKey { lo: y, hi: x } }
    }
}

//! Which connection, and which direction, a segment belongs to.
//!
//! A connection is identified by its 4-tuple plus the initial sequence numbers: the table maps
//! a 4-tuple to its *current* connection, and the analysis decides when a segment starts a new
//! one on the same 4-tuple (port reuse: a SYN with a new ISN; activity after a long idle gap),
//! see [`crate::analysis::Connection::splits_on`].

use std::hash::BuildHasher;
use std::net::IpAddr;

use rustc_hash::FxBuildHasher;

mod index;
use index::{Index, tag};

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

/// A connection's endpoints a and b as the flow table keeps them, in 16 bytes: an IPv4 pair as
/// its addresses and ports, any other pair in the table's `others` list, by index. As two
/// [`Endpoint`]s (an `IpAddr` each) they were 40 bytes a connection started
/// (`docs/performance.md`, *concurrent*).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ends {
    V4 { a: u32, b: u32, ports: u32 },
    Other(usize),
}

impl Ends {
    fn new(a: Endpoint, b: Endpoint, others: &mut Vec<(Endpoint, Endpoint)>) -> Ends {
        match (a.addr, b.addr) {
            (IpAddr::V4(x), IpAddr::V4(y)) => {
                Ends::V4 { a: x.into(), b: y.into(), ports: (a.port as u32) << 16 | b.port as u32 }
            }
            _ => {
                others.push((a, b));
                Ends::Other(others.len() - 1)
            }
        }
    }

    /// The IPv4 4-tuple `x` (a [`Directed::V4`]) as kept with its source as a, and the other
    /// way round.
    #[inline(always)]
    fn v4_both_ways(x: u128) -> (Ends, Ends) {
        // `x`'s low word is its ports as `ports` packs them (source first).
        let (src, dst, p) = ((x >> 64) as u32, (x >> 32) as u32, x as u32);
        (Ends::V4 { a: src, b: dst, ports: p }, Ends::V4 { a: dst, b: src, ports: p.rotate_left(16) })
    }

    /// The endpoints a and b.
    fn get(self, others: &[(Endpoint, Endpoint)]) -> (Endpoint, Endpoint) {
        match self {
            Ends::V4 { a, b, ports } => (
                Endpoint { addr: IpAddr::V4(a.into()), port: (ports >> 16) as u16 },
                Endpoint { addr: IpAddr::V4(b.into()), port: ports as u16 },
            ),
            Ends::Other(i) => others[i],
        }
    }

    /// Whether the 4-tuple `d` (either way round) is this one, and if so whether it goes from
    /// a to b (a connection of an endpoint with itself: from a to b).
    #[inline]
    fn joins(self, d: Directed, others: &[(Endpoint, Endpoint)]) -> Option<Dir> {
        match (self, d) {
            (Ends::V4 { .. }, Directed::V4(x)) => {
                let (ab, ba) = Ends::v4_both_ways(x);
                if self == ab {
                    Some(Dir::AtoB)
                } else if self == ba {
                    Some(Dir::BtoA)
                } else {
                    None
                }
            }
            (Ends::Other(i), Directed::Other(src, dst)) => {
                let (a, b) = others[i];
                if a == src && b == dst {
                    Some(Dir::AtoB)
                } else if a == dst && b == src {
                    Some(Dir::BtoA)
                } else {
                    None
                }
            }
            _ => None,
        }
    }
}

/// 4-tuple → current connection.
///
/// Each connection's 4-tuple is kept once, as its endpoints a and b in `ends` (by index); the
/// hash table holds only indexes into it. A map from the key to the index held every live
/// connection's 40-byte key a second time, in 72-byte slots: ~90 bytes a connection with
/// 200,000 open at once (`docs/performance.md`, *concurrent*).
#[derive(Default)]
pub struct FlowTable {
    /// The current connection of each 4-tuple tracked, hashed by its [`FlowKey`].
    table: Index,
    /// Endpoints a and b of every connection started here, by index.
    ends: Vec<Ends>,
    /// The endpoints of those not between two IPv4 addresses ([`Ends::Other`]).
    others: Vec<(Endpoint, Endpoint)>,
    /// The last lookup's answer for each direction of its 4-tuple: consecutive packets mostly
    /// belong to one connection, and comparing addresses is cheaper than hashing them.
    recent: [Option<(Directed, ConnIdx, Dir)>; 2],
    /// Lookups that went past `recent` to the index.
    hashed: u64,
}

/// A segment's place in the flow index, from [`FlowTable::prefetch`] for [`FlowTable::peek`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ahead(u32);

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

    /// The hash of the 4-tuple, the same either way round: for IPv4, each endpoint as one
    /// integer (address and port), the smaller first, hashed as two words. Hashing a
    /// [`FlowKey`] (ordering the endpoints as `IpAddr`s, then a 40-byte value) was ~4.5 % of
    /// the pass on 200,000 concurrent connections, where nearly every packet is hashed twice
    /// (ahead for the prefetch, then for the lookup): the key's stores and loads of different
    /// widths stalled on store forwarding.
    #[inline]
    fn hash(self) -> u64 {
        match self {
            Directed::V4(x) => {
                let (src, dst, ports) = ((x >> 64) as u64, (x >> 32) as u32 as u64, x as u32 as u64);
                let (es, ed) = (src << 16 | ports >> 16, dst << 16 | ports & 0xFFFF);
                FxBuildHasher.hash_one((es.min(ed), es.max(ed)))
            }
            Directed::Other(s, d) => FxBuildHasher.hash_one(FlowKey::between(s, d)),
        }
    }

    /// The same 4-tuple the other way round.
    #[inline]
    fn rev(self) -> Directed {
        match self {
            Directed::V4(x) => {
                Directed::V4((x >> 32 & 0xFFFF_FFFF) << 64 | (x >> 64) << 32 | (x & 0xFFFF) << 16 | x >> 16 & 0xFFFF)
            }
            Directed::Other(s, d) => Directed::Other(d, s),
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
        self.hashed += 1;
        let (ends, others) = (&self.ends, &self.others);
        let t = tag(directed.hash());
        let (idx, dir) = match directed {
            // The common case as two whole-value compares a slot.
            Directed::V4(x) => {
                let (ab, ba) = Ends::v4_both_ways(x);
                let idx = self.table.find(t, |i| ends[i] == ab || ends[i] == ba)?;
                (idx, if ends[idx] == ab { Dir::AtoB } else { Dir::BtoA })
            }
            Directed::Other(..) => {
                let idx = self.table.find(t, |i| ends[i].joins(directed, others).is_some())?;
                (idx, ends[idx].joins(directed, others).unwrap_or(Dir::AtoB))
            }
        };
        self.remember(directed, src == dst, idx, dir);
        Some((idx, dir))
    }

    /// Asks for the memory where [`FlowTable::lookup`] will start looking for the segment's
    /// connection, a few packets ahead of it ([`crate::pass`]), and returns what
    /// [`FlowTable::peek`] takes a few packets later; `None` when the segment belongs to the
    /// last lookup's connection, whose memory is in the caches already. A hint: it changes
    /// nothing.
    #[inline(always)]
    pub fn prefetch(&self, seg: &Segment<'_>) -> Option<Ahead> {
        let directed =
            Directed::new(Endpoint { addr: seg.src, port: seg.sport }, Endpoint { addr: seg.dst, port: seg.dport });
        if matches!(self.recent, [Some((k, _, _)), _] | [_, Some((k, _, _))] if k == directed) {
            return None;
        }
        let t = tag(directed.hash());
        self.table.prefetch(t);
        Some(Ahead(t))
    }

    /// The connection [`FlowTable::lookup`] will most likely find for the segment
    /// [`FlowTable::prefetch`] was given, by its hash alone (no endpoints compared), and asks for
    /// that connection's endpoints to be loaded. For [`crate::pass`] to ask for the
    /// connection's memory ahead; a wrong guess costs only the memory asked for.
    #[inline(always)]
    pub fn peek(&self, ahead: Ahead) -> Option<ConnIdx> {
        let idx = self.table.find(ahead.0, |_| true)?;
        crate::hint::prefetch(&self.ends[idx]);
        Some(idx)
    }

    /// Makes `idx` the answer of the one-connection cache for both directions. A connection
    /// of an endpoint with itself (src == dst) has one key for both directions: the cache
    /// answers what the map does (a2b, a being the source), or the answer would depend on
    /// whether another connection's packets went through this table in between (one analyzer
    /// and the shards of a split pass disagreed: found by the pipeline fuzz target).
    /// `directed` is the segment's 4-tuple as it went, `own` whether its two endpoints are one.
    /// (Given the segment's `Directed` and turning it round, not making both from the
    /// endpoints: that was ~80 instructions a packet where every packet is hashed.)
    #[inline]
    fn remember(&mut self, directed: Directed, own: bool, idx: ConnIdx, dir: Dir) {
        let dir = if own { Dir::AtoB } else { dir };
        self.recent = [Some((directed, idx, dir)), Some((directed.rev(), idx, dir.rev()))];
    }

    /// Starts a connection, the next index, and makes it the current connection of the
    /// segment's 4-tuple, with endpoint a chosen from this first segment. Returns its index, its
    /// identity and the segment's direction.
    pub fn insert(&mut self, seg: &Segment<'_>, file: usize, reuse: Option<SplitReason>) -> (ConnIdx, ConnInfo, Dir) {
        let src = Endpoint { addr: seg.src, port: seg.sport };
        let dst = Endpoint { addr: seg.dst, port: seg.dport };
        // A SYN-ACK's receiver sent the SYN.
        let syn_ack = seg.flags.syn() && seg.flags.ack();
        let (a, b, dir) = if syn_ack { (dst, src, Dir::BtoA) } else { (src, dst, Dir::AtoB) };
        let idx = self.ends.len();
        let directed = Directed::new(src, dst);
        let FlowTable { table, ends, others, .. } = self;
        table.replace_or_insert(tag(directed.hash()), idx, |i| ends[i].joins(directed, others).is_some());
        ends.push(Ends::new(a, b, others));
        self.remember(directed, src == dst, idx, dir);
        (idx, ConnInfo { a, b, file, reuse }, dir)
    }

    /// Forgets connection `idx` if it is its 4-tuple's current one (when it is finished and
    /// evicted).
    pub fn remove(&mut self, idx: ConnIdx) {
        let (a, b) = self.ends[idx].get(&self.others);
        if self.table.remove(tag(Directed::new(a, b).hash()), idx) {
            self.recent = [None, None];
        }
    }

    /// Lookups so far that the one-connection cache did not answer.
    pub fn hashed(&self) -> u64 {
        self.hashed
    }

    /// Number of 4-tuples tracked.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no 4-tuple is tracked.
    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{flag::*, scripted};

    /// A connection's endpoints kept in 16 bytes read back as given, and a segment's 4-tuple
    /// is matched either way round, IPv4 or not, never across the two.
    #[test]
    fn ends_keep_the_endpoints_and_match_both_ways() {
        assert_eq!(std::mem::size_of::<Ends>(), 16);
        let e = |s: &str| s.parse::<std::net::SocketAddr>().map(|a| Endpoint { addr: a.ip(), port: a.port() }).unwrap();
        let mut others = Vec::new();
        let pairs =
            [("10.0.0.1:80", "192.168.7.2:65535"), ("[2001:db8::1]:443", "[::2]:1"), ("10.0.0.1:9", "10.0.0.1:9")];
        let ends: Vec<Ends> = pairs.iter().map(|(a, b)| Ends::new(e(a), e(b), &mut others)).collect();
        assert_eq!(others.len(), 1, "only the IPv6 pair in the list");
        for ((a, b), k) in pairs.iter().zip(&ends) {
            assert!(k.get(&others) == (e(a), e(b)));
            assert_eq!(k.joins(Directed::new(e(a), e(b)), &others), Some(Dir::AtoB), "{a} {b}");
            let back = if a == b { Dir::AtoB } else { Dir::BtoA };
            assert_eq!(k.joins(Directed::new(e(b), e(a)), &others), Some(back), "{a} {b}");
        }
        // Another port, another address, another family: no match.
        assert_eq!(ends[0].joins(Directed::new(e("10.0.0.1:81"), e("192.168.7.2:65535")), &others), None);
        assert_eq!(ends[0].joins(Directed::new(e("10.0.0.1:80"), e("192.168.7.3:65535")), &others), None);
        assert_eq!(ends[1].joins(Directed::new(e("10.0.0.1:80"), e("192.168.7.2:65535")), &others), None);
        assert_eq!(ends[1].joins(Directed::new(e("[2001:db8::1]:443"), e("[::3]:1")), &others), None);
    }

    /// A 4-tuple turned round is the one made from its endpoints swapped.
    #[test]
    fn a_directed_four_tuple_turns_round() {
        let e = |s: &str| s.parse::<std::net::SocketAddr>().map(|a| Endpoint { addr: a.ip(), port: a.port() }).unwrap();
        for (x, y) in
            [("10.0.0.1:80", "192.168.7.2:65535"), ("255.0.0.1:0", "0.0.0.9:1"), ("[2001:db8::1]:443", "[::2]:1")]
        {
            assert!(Directed::new(e(x), e(y)).rev() == Directed::new(e(y), e(x)), "{x} {y}");
        }
    }

    /// A 4-tuple hashes the same either way round, and the two endpoints of an IPv4 one are
    /// not confused with their swapped ports.
    #[test]
    fn a_four_tuple_hashes_the_same_both_ways() {
        let e = |s: &str| s.parse::<std::net::SocketAddr>().map(|a| Endpoint { addr: a.ip(), port: a.port() }).unwrap();
        for (x, y) in
            [("10.0.0.1:80", "10.0.0.2:5000"), ("[2001:db8::1]:443", "[2001:db8::2]:1"), ("10.0.0.1:1", "[::1]:1")]
        {
            assert_eq!(Directed::new(e(x), e(y)).hash(), Directed::new(e(y), e(x)).hash(), "{x} {y}");
        }
        assert_ne!(
            Directed::new(e("10.0.0.1:80"), e("10.0.0.2:5000")).hash(),
            Directed::new(e("10.0.0.1:5000"), e("10.0.0.2:80")).hash()
        );
    }

    /// Both directions find the current connection; a new one on the 4-tuple replaces it; only
    /// the current one is forgotten; other 4-tuples are told apart by their endpoints alone.
    #[test]
    fn each_four_tuple_finds_its_current_connection() {
        let frames: Vec<_> =
            [scripted(true, 0.0, SYN, 0, 0, 0, 1000, vec![]), scripted(false, 1.0, SYN | ACK, 0, 0, 0, 1000, vec![])]
                .iter()
                .map(|p| p.ipv4().0)
                .collect();
        let [a2b, b2a] = [0, 1].map(|i| crate::decode::decode(101, &frames[i], frames[i].len() as u32).unwrap());
        let mut other = scripted(true, 0.0, SYN, 0, 0, 0, 1000, vec![]);
        other.sport += 1;
        let other = other.ipv4().0;
        let other = crate::decode::decode(101, &other, other.len() as u32).unwrap();

        let mut t = FlowTable::default();
        assert_eq!(t.lookup(&a2b), None);
        let (idx, info, dir) = t.insert(&b2a, 0, None);
        // A SYN-ACK's receiver is a.
        assert_eq!((idx, info.a.port, dir), (0, 40000, Dir::BtoA));
        assert_eq!(t.insert(&other, 0, None).0, 1);
        for _ in 0..2 {
            // The second time round from the table, not the one-connection cache.
            t.recent = [None, None];
            assert_eq!([t.lookup(&a2b), t.lookup(&b2a)], [Some((0, Dir::AtoB)), Some((0, Dir::BtoA))]);
            assert_eq!(t.lookup(&other), Some((1, Dir::AtoB)));
        }
        // The guess ahead: by the index alone, none for the last lookup's connection.
        let peek = |t: &FlowTable, seg| t.prefetch(seg).and_then(|a| t.peek(a));
        assert_eq!([peek(&t, &a2b), peek(&t, &b2a)], [Some(0), Some(0)]);
        assert_eq!(t.prefetch(&other), None);
        t.recent = [None, None];
        assert_eq!(peek(&t, &other), Some(1));
        let hashed = t.hashed();
        t.lookup(&other);
        t.lookup(&other);
        assert_eq!(t.hashed(), hashed + 1, "the second lookup is the cache's");
        // Port reuse: connection 2 is the 4-tuple's current one; 0 is gone from the table.
        assert_eq!(t.insert(&a2b, 0, Some(SplitReason::NewIsn)).0, 2);
        assert_eq!(t.len(), 2);
        t.remove(0);
        t.recent = [None, None];
        assert_eq!([t.lookup(&b2a), t.lookup(&other)], [Some((2, Dir::BtoA)), Some((1, Dir::AtoB))]);
        assert_eq!(peek(&t, &a2b), Some(2));
        t.remove(2);
        t.recent = [None, None];
        assert_eq!(peek(&t, &a2b), None);
        assert_eq!([t.lookup(&a2b), t.lookup(&other)], [None, Some((1, Dir::AtoB))]);
        assert_eq!(t.len(), 1);
    }
}

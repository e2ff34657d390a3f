//! The one streaming pass: the captures merged in time order, each packet matched to its
//! sightings at the other points within the window (module doc of `correlate`). A lifeline
//! that leaves the window is handed to the verdicts ([`super::verdict::Judge`]) and forgotten
//! here: the matcher holds the lifelines of one window, whatever the captures' length.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::path::PathBuf;

use rustc_hash::{FxHashSet, FxHasher};

use super::coverage::{self, Cand, Index};
use super::verdict::Judge;
use super::{Conn, Error, Life, Point, Sight};
use crate::capture::{CaptureReader, FileError};
use crate::conn::Endpoint;
use crate::pass::{Decoding, FileSummary};

type Fx = BuildHasherDefault<FxHasher>;

/// How to correlate.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long (ns of input time) a sighting waits for the same packet at the other points.
    pub window_ns: i64,
    /// Per capture, a given clock offset (ns, its clock minus the first capture's) that
    /// replaces the estimate; index 0 is ignored (the first capture is the reference).
    pub offsets_ns: Vec<Option<i64>>,
    /// Keep every packet's facts and sightings for after the pass ([`super::Correlation::lives`]:
    /// `--packets`, the plots, the viewer). Off, the memory is bounded by the window and the
    /// number of connections, not by the captures' length (module doc, "Memory").
    pub keep_packets: bool,
    /// Judge on a thread of its own, overlapped with the matching (`None`: when the machine
    /// has a core for it besides the reading threads and the matcher's; docs/correlate.md,
    /// "Speed"). The verdicts are the same either way.
    pub judge_thread: Option<bool>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { window_ns: 2_000_000_000, offsets_ns: Vec::new(), keep_packets: false, judge_thread: None }
    }
}

/// What identifies one packet at every point (addresses and ports are left out: NAT).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct MatchKey {
    pub seq: u32,
    pub ack: u32,
    pub len: u32,
    pub flags: u16,
    pub ip_id: u16,
    pub ts: Option<(u32, u32)>,
}

/// One decoded packet of one capture, owned (the merge holds one per capture).
#[derive(Clone, Copy, Debug)]
pub(super) struct Obs {
    pub key: MatchKey,
    pub src: Endpoint,
    pub dst: Endpoint,
    pub sight: Sight,
}

/// The pass's result: the captures, the connections, and the verdicts' state to finish.
pub(super) struct Raw {
    pub points: Vec<Point>,
    pub conns: Vec<Conn>,
    /// Per connection as made (before joins): its final index and whether its directions are
    /// the final connection's the other way round.
    pub made: Vec<(u32, bool)>,
    /// Per final connection, its evidence of the path order.
    pub evidence: Vec<Evidence>,
    pub given: Vec<Option<i64>>,
}

/// What a connection's packets say about the order of the points (module doc, "Path order"),
/// gathered as sightings are matched, on the captures' own clocks: the order needs no clock.
#[derive(Clone, Debug)]
pub(super) struct Evidence {
    n: usize,
    /// `min[d][i][j]`: the smallest `t_j − t_i` over the packets of direction d seen at both.
    min: Vec<i64>,
    /// `before[i][j]`: packets a→b seen at i before j, and b→a seen at j before i.
    before: Vec<u32>,
    /// The points that saw any of its packets, bit p for point p.
    pub on: u32,
    /// Bumped whenever what the verdicts read of it ([`Evidence::path`], [`Evidence::min`])
    /// may have changed apart from `on`: a smallest difference, the majority of a pair of
    /// points, a join. The matcher hands the judging thread a copy only when it did.
    version: u64,
    /// [`Evidence::path`], worked out once for a copy handed to the judging thread (a copy is
    /// never changed; a change clears it anyway): every lifeline judged asks for it.
    path: Option<Box<[u8]>>,
}

impl Evidence {
    fn new(n: usize) -> Evidence {
        Evidence { n, min: vec![i64::MAX; 2 * n * n], before: vec![0; n * n], on: 0, version: 0, path: None }
    }

    /// The smallest `t_j − t_i` of direction `d` (raw clocks), if any packet was seen at both.
    pub fn min(&self, d: u8, i: usize, j: usize) -> Option<i64> {
        let v = self.min[(d as usize * self.n + i) * self.n + j];
        (v != i64::MAX).then_some(v)
    }

    /// The offset of `j`'s raw clock against `i`'s (`t_j − t_i` for a packet seen at both at
    /// once), Paxson's midpoint of the smallest raw differences both ways, when the packets
    /// seen at both so far went both ways and say which point is upstream.
    pub fn offset(&self, i: usize, j: usize) -> Option<i64> {
        // d: the direction that passes i first.
        let d = match self.upstream(i, j)? {
            true => 0,
            false => 1,
        };
        let (f, r) = (self.min(d, i, j)?, self.min(1 - d, j, i)?);
        Some(((i128::from(f) - i128::from(r)) / 2) as i64)
    }

    /// A packet of direction `d` seen at `i` (time `ti`) and `j` (time `tj`).
    fn pair(&mut self, d: u8, i: usize, ti: i64, j: usize, tj: i64) {
        let n = self.n;
        self.path = None;
        let (ij, ji) = ((d as usize * n + i) * n + j, (d as usize * n + j) * n + i);
        if tj - ti < self.min[ij] || ti - tj < self.min[ji] {
            self.version += 1;
        }
        let m = &mut self.min[ij];
        *m = (*m).min(tj - ti);
        let m = &mut self.min[ji];
        *m = (*m).min(ti - tj);
        if ti != tj {
            let (a, b) = if (ti < tj) == (d == 0) { (i, j) } else { (j, i) };
            self.before[a * n + b] += 1;
            // The majority (`upstream` without both smallest differences) turns only when
            // the count ahead reaches a tie or leaves one.
            let ahead = i64::from(self.before[a * n + b]) - i64::from(self.before[b * n + a]);
            if ahead == 0 || ahead == 1 {
                self.version += 1;
            }
        }
    }

    /// Another connection's evidence (`flip`: its directions are this one's the other way).
    fn absorb(&mut self, o: &Evidence, flip: bool) {
        let n = self.n;
        for d in 0..2 {
            let od = if flip { 1 - d } else { d };
            for k in 0..n * n {
                let x = &mut self.min[d * n * n + k];
                *x = (*x).min(o.min[od * n * n + k]);
            }
        }
        for i in 0..n {
            for j in 0..n {
                self.before[i * n + j] += if flip { o.before[j * n + i] } else { o.before[i * n + j] };
            }
        }
        self.on |= o.on;
        self.version += 1;
        self.path = None;
    }

    /// Whether `i` is upstream of `j` for a→b: by the smallest round trip between them when
    /// packets were seen at both both ways (whatever the clocks' offset), else by the majority
    /// of the packets' times. `None` when nothing says.
    pub fn upstream(&self, i: usize, j: usize) -> Option<bool> {
        if let (Some(f), Some(r)) = (self.min(0, i, j), self.min(1, j, i)) {
            return Some(i128::from(f) + i128::from(r) > 0);
        }
        let (a, b) = (self.before[i * self.n + j], self.before[j * self.n + i]);
        (a != b).then_some(a > b)
    }

    /// The points a→b passes, upstream first (b→a: the reverse); points that saw none of the
    /// connection's packets are not on it. Written into `out`, its length returned.
    pub fn path(&self, out: &mut [usize; MAX_POINTS]) -> usize {
        if let Some(path) = &self.path {
            for (o, &p) in out.iter_mut().zip(path.iter()) {
                *o = usize::from(p);
            }
            return path.len();
        }
        let n = self.n;
        let mut k = 0;
        for p in 0..n {
            if self.on & (1 << p) != 0 {
                out[k] = p;
                k += 1;
            }
        }
        let wins = |i: usize| (0..n).filter(|&j| j != i && self.upstream(i, j) == Some(true)).count();
        out[..k].sort_by_key(|&p| (std::cmp::Reverse(wins(p)), p));
        k
    }
}

/// `correlate` takes at most 32 captures (one bit each in the matcher).
pub(super) const MAX_POINTS: usize = 32;

/// Connections, joined when a packet shows two of them are one (union-find with the parity of
/// their directions: a NAT, or two points that first saw the connection from different packets).
#[derive(Default)]
struct Conns {
    parent: Vec<u32>,
    /// Direction flip relative to the parent.
    flip: Vec<bool>,
    /// Per connection as first made: its a and b.
    ends: Vec<(Endpoint, Endpoint)>,
    /// Per connection, its path evidence (a root's holds its joined connections').
    evidence: Vec<Evidence>,
    /// Per root, the connections (as made) joined into it, itself first.
    members: Vec<Vec<u32>>,
}

impl Conns {
    fn add(&mut self, a: Endpoint, b: Endpoint, n: usize) -> u32 {
        let id = self.parent.len() as u32;
        self.parent.push(id);
        self.flip.push(false);
        self.ends.push((a, b));
        self.evidence.push(Evidence::new(n));
        self.members.push(vec![id]);
        id
    }

    fn find(&mut self, c: u32) -> (u32, bool) {
        let p = self.parent[c as usize];
        if p == c {
            return (c, false);
        }
        let (root, f) = self.find(p);
        let f = f ^ self.flip[c as usize];
        self.parent[c as usize] = root;
        self.flip[c as usize] = f;
        (root, f)
    }

    /// Records that direction `d1` of `c1` is direction `d2` of `c2`.
    fn join(&mut self, c1: u32, d1: bool, c2: u32, d2: bool) {
        let (r1, f1) = self.find(c1);
        let (r2, f2) = self.find(c2);
        if r1 == r2 {
            return;
        }
        // The older connection stays the root: its a is the one seen first.
        let (root, child, x) = if r1 < r2 { (r1, r2, d1 ^ f1 ^ d2 ^ f2) } else { (r2, r1, d1 ^ f1 ^ d2 ^ f2) };
        self.parent[child as usize] = root;
        self.flip[child as usize] = x;
        let ev = std::mem::replace(&mut self.evidence[child as usize], Evidence::new(0));
        self.evidence[root as usize].absorb(&ev, x);
        let m = std::mem::take(&mut self.members[child as usize]);
        self.members[root as usize].extend(m);
    }
}

/// One capture being merged: its segments come from a reading thread ([`Decoding`]).
struct Input {
    decoding: Decoding,
    head: Option<Obs>,
    given: i64,
}

impl Input {
    /// Takes the next TCP packet into `head` (`None` at the end of the capture).
    fn advance(&mut self, point: &mut Point) {
        let Some((s, frame, ts_ns)) = self.decoding.next() else {
            self.head = None;
            return;
        };
        let t = ts_ns as i64 - self.given;
        point.span = Some(point.span.map_or((t, t), |(a, _)| (a, t)));
        self.head = Some(Obs {
            key: MatchKey {
                seq: s.seq.0,
                ack: if s.flags.ack() { s.ack.0 } else { 0 },
                len: s.payload_len,
                flags: s.flags.0,
                ip_id: s.ip_id,
                ts: s.options.timestamps,
            },
            src: Endpoint { addr: s.src, port: s.sport },
            dst: Endpoint { addr: s.dst, port: s.dport },
            sight: Sight {
                t,
                frame,
                ttl: s.ttl,
                ecn: s.ecn,
                dscp: s.dscp,
                win: s.win_raw,
                mss: s.options.mss.unwrap_or(0),
            },
        });
    }
}

/// A lifeline that left the window, as the verdicts take it: its connection is the root (as
/// made) of the connections joined so far, and its direction that root's.
pub(super) struct Gone<'a> {
    pub life: Life,
    pub sights: &'a [Sight],
    pub evidence: &'a Evidence,
    /// Its place in the order lifelines leave the window (ties of the verdicts' heaps): its
    /// index in the order made times 2¹⁶, plus, for a lifeline of a group matched by byte
    /// coverage (all handed over when its first member leaves, with that member's index), its
    /// place in the group's byte order.
    pub idx: u64,
    /// When it entered the window (ns of input time): every lifeline that leaves after it has
    /// all its sightings at or after this time.
    pub entered: i64,
}

/// Per lifeline, the matcher's working state, in one record: a sighting that matches reads it
/// for the lifelines of its key, and the window of a fast transfer (~10⁵ lifelines) is far
/// larger than the caches, so one cache miss here replaces three (window time, key chain,
/// which points saw it) and a fourth (its connection).
#[derive(Clone, Copy)]
struct Hot {
    /// When it entered the window (ns).
    entered: i64,
    /// The previous lifeline with the same key (`u64::MAX`: none).
    older: u64,
    /// The points that saw it, bit p for point p (at most 32 points).
    seen: u32,
    /// Its connection as made (before joins) times 2, plus 1 for b → a.
    conn_dir: u32,
}

/// A point's last 4-tuple (lower, higher endpoint) and its connection and a-is-lower.
type LastTuple = (Endpoint, Endpoint, Option<(u32, bool)>);

/// The matching state, apart from the readers (so that it can be fed packets in tests).
pub(super) struct Matcher {
    n: usize,
    window: i64,
    /// Per match key, its newest lifeline; older ones with the same key are chained by
    /// [`Hot::older`] (a Vec per key cost an allocation per packet). Entries whose newest
    /// lifeline has left the window count as absent and are swept out once per window of input
    /// time (`swept`): one sequential pass over the table instead of a lookup per lifeline.
    pending: HashMap<MatchKey, u64, Fx>,
    /// When `pending` was last swept (ns of input time).
    swept: Option<i64>,
    /// The index of the oldest lifeline still held (`hot[0]`, `lives[0]`): lifelines are
    /// numbered in the order made, and leave the window in that order.
    base: u64,
    /// Per lifeline in the window, what a new sighting needs to read (see [`Hot`]).
    hot: VecDeque<Hot>,
    /// Per point, the last tuple looked up and its answer (a bulk transfer asks the same).
    last_tuple: Vec<Option<LastTuple>>,
    /// (point, lower endpoint, higher endpoint) → (connection as made, a is the lower).
    tuples: HashMap<(u8, Endpoint, Endpoint), (u32, bool), Fx>,
    conns: Conns,
    /// The lifelines in the window.
    lives: VecDeque<Life>,
    /// Their sightings, `n` per lifeline.
    sights: VecDeque<Sight>,
    /// Per connection as made and direction (`conn * 2 + dir`), its data lifelines in the
    /// window (payload, not a copy) not yet seen at every point, by sequence number: where a
    /// group's members are looked for ([`Index`]).
    data: Vec<Index>,
    /// Lifelines already handed over as members of a group (module doc, "Coverage"): skipped
    /// when they reach the front.
    handed: FxHashSet<u64>,
    /// The points' bits (a lifeline seen at all of them is matched whole).
    all: u32,
    /// Per point, the time of its last packet so far (ns; `i64::MIN`: none yet).
    last: Vec<i64>,
}

/// A group of lifelines matched by byte coverage, as it is handed over: its lifelines in byte
/// order and their sightings, `n` each.
struct Folded {
    lives: Vec<Life>,
    sights: Vec<Sight>,
}

impl Matcher {
    pub fn new(n: usize, window: i64) -> Matcher {
        Matcher {
            n,
            window,
            pending: HashMap::default(),
            swept: None,
            base: 0,
            hot: VecDeque::new(),
            last_tuple: vec![None; n],
            tuples: HashMap::default(),
            conns: Conns::default(),
            lives: VecDeque::new(),
            sights: VecDeque::new(),
            data: Vec::new(),
            handed: FxHashSet::default(),
            all: if n >= 32 { u32::MAX } else { (1u32 << n) - 1 },
            last: vec![i64::MIN; n],
        }
    }

    /// Whether lifeline `i` (made before `now`) is still in the window at `now`.
    fn in_window(&self, i: u64, now: i64) -> bool {
        i >= self.base && now - self.hot[(i - self.base) as usize].entered <= self.window
    }

    /// Hands every lifeline that has left the window at `now` to `judge`, oldest first, and
    /// forgets it (`now`: `i64::MAX` at the end of the captures, all of them). A data lifeline
    /// not seen at every point is first looked up as a member of a group matched by byte
    /// coverage ([`Matcher::group`]): then the whole group is handed over in its place.
    pub fn expire(&mut self, now: i64, judge: &mut dyn FnMut(Gone<'_>)) {
        let n = self.n;
        while self.hot.front().is_some_and(|h| now == i64::MAX || now - h.entered > self.window) {
            let idx = self.base;
            let h = self.hot[0];
            let l = &self.lives[0];
            if h.seen != self.all && l.len > 0 && !l.copy {
                self.data[h.conn_dir as usize].remove(l.seq, idx);
            }
            let handed = !self.handed.is_empty() && self.handed.remove(&idx);
            let folded = if !handed && l.len > 0 && !l.copy && h.seen != self.all { self.group() } else { None };
            let (root, f) = self.conns.find(h.conn_dir >> 1);
            let evidence = &self.conns.evidence[root as usize];
            match folded {
                _ if handed => {}
                Some(g) => {
                    for (k, life) in g.lives.into_iter().enumerate() {
                        let sights = &g.sights[k * n..(k + 1) * n];
                        let idx = idx << 16 | k.min(0xFFFF) as u64;
                        judge(Gone { life, sights, evidence, idx, entered: h.entered });
                    }
                }
                None => {
                    let mut life = self.lives[0].clone();
                    life.conn = root;
                    life.dir ^= u8::from(f);
                    let sights = self.sights.make_contiguous();
                    judge(Gone { life, sights: &sights[..n], evidence, idx: idx << 16, entered: h.entered });
                }
            }
            self.hot.pop_front();
            self.lives.pop_front();
            self.sights.drain(..n);
            self.base += 1;
        }
    }

    /// The group matched by byte coverage (module doc, "Coverage") of the front lifeline, the
    /// first of its members to leave the window, if it has one: its candidates are the data
    /// lifelines of its connection (joined: every connection as made that was joined into its
    /// root) and direction in the window, not seen at every point and not yet handed over
    /// (the [`Index`] of each), that hold any of its bytes — and, when one of those contains it
    /// (its whole, if it is a piece), any of the bytes of those containing it (the whole's
    /// other pieces) — wherever they entered the window, at most
    /// [`coverage::MAX_CANDIDATES`]; [`coverage::pair`] groups them, their times put on the
    /// front lifeline's first point's clock with the offsets known so far
    /// ([`Evidence::offset`]). That is the group [`coverage::pair`] finds among all the
    /// candidates of the window: a lifeline is only ever a piece of one that contains it, and
    /// every lifeline that could contain one of the group's members, or be its piece, holds
    /// some of those bytes. When two candidates straddle each other or three sets of points saw
    /// them (TSO and GRO together), the group is the front lifeline's overlap component
    /// instead ([`coverage::overlap`], gathered again over its members' bytes until none holds
    /// a byte outside them), folded into its cuts ([`coverage::fold_cuts`]), unless it turns
    /// out to be a whole and its pieces. Its members are marked handed over, and can no longer
    /// be matched (a later sighting of one starts a lifeline of its own).
    fn group(&mut self) -> Option<Folded> {
        let n = self.n;
        let h0 = self.hot[0];
        let (root, f0) = self.conns.find(h0.conn_dir >> 1);
        let rd = (h0.conn_dir & 1) ^ u32::from(f0);
        // Pieces or a whole elsewhere: at another point of its connection that saw a packet
        // since it entered (not one whose capture had ended, or was quiet, then).
        let on = self.conns.evidence[root as usize].on & !h0.seen;
        if !(0..n).any(|p| on >> p & 1 == 1 && self.last[p] >= h0.entered) {
            return None;
        }
        // The members' connections as made, each with its direction that is the root's `rd`.
        let made: Vec<u32> = self.conns.members[root as usize].clone();
        let dirs: Vec<usize> = made
            .iter()
            .map(|&m| {
                let (_, f) = self.conns.find(m);
                (m * 2 + (rd ^ u32::from(f))) as usize
            })
            .collect();
        let ev = &self.conns.evidence[root as usize];
        let seen = |m: u32| (0..n).filter(move |p| m >> p & 1 == 1);
        let r = seen(h0.seen).next().unwrap_or(0);
        let mut off = [0i64; MAX_POINTS];
        for (p, o) in off.iter_mut().enumerate().take(n) {
            *o = if p == r { 0 } else { ev.offset(r, p).unwrap_or(0) };
        }
        let seq0 = self.lives[0].seq;
        let cand = |i: u64| {
            let slot = (i - self.base) as usize;
            let h = &self.hot[slot];
            let l = &self.lives[slot];
            let t = seen(h.seen).map(|p| self.sights[slot * n + p].t - off[p]).min().unwrap_or(0);
            Cand { start: i64::from(l.seq.wrapping_sub(seq0) as i32), len: l.len, points: h.seen, t }
        };
        let me = cand(self.base);
        // The front lifeline (first), then the candidates holding any byte from `from` to `to`
        // (relative to `seq0`) in every member's index (the front lifeline left its own before
        // this call), with their `Cand`s; `None` past MAX_CANDIDATES (the same bytes sent over
        // and over: no group).
        let (data, base) = (&self.data, self.base);
        let gather = |from: i64, to: i64| {
            let mut idxs = vec![base];
            for &cd in &dirs {
                for i in data[cd].overlapping(seq0, from, to) {
                    if idxs.len() > coverage::MAX_CANDIDATES {
                        return None;
                    }
                    idxs.push(i);
                }
            }
            let cands: Vec<Cand> = idxs.iter().map(|&i| cand(i)).collect();
            Some((idxs, cands))
        };
        let (mut idxs, mut cands) = gather(0, i64::from(me.len))?;
        // Whether any candidate is its whole or its piece, or carries some of its bytes
        // elsewhere with other boundaries: else it has no group (none of these holds of the
        // front lifeline and itself).
        if !cands
            .iter()
            .any(|c| me.inside(c, self.window) || c.inside(&me, self.window) || me.straddles(c, self.window))
        {
            return None;
        }
        // The bytes of the segments containing it: its whole's other pieces lie there.
        let (from, to) = cands
            .iter()
            .filter(|c| me.inside(c, self.window))
            .fold((0, me.end()), |(a, b), c| (a.min(c.start), b.max(c.end())));
        if (from, to) != (0, me.end()) {
            (idxs, cands) = gather(from, to)?;
        }
        // Its overlap component, when its members straddle each other (TSO at one point and
        // GRO at another) or were seen at three sets of points or more (a router's wire
        // segments between them): gathered until no member holds bytes outside what was
        // looked at.
        let mut comp = None;
        if coverage::any_straddle(&cands, self.window) || coverage::point_sets(cands.iter()) > 2 {
            let (mut from, mut to) = (from, to);
            while let Some(g) = coverage::overlap(&cands, 0, self.window).filter(|g| g.needs_cuts) {
                let lo = g.members.iter().map(|&i| cands[i].start).min().unwrap_or(from).min(from);
                let hi = g.members.iter().map(|&i| cands[i].end()).max().unwrap_or(to).max(to);
                if (lo, hi) == (from, to) {
                    comp = Some(g);
                    break;
                }
                (from, to) = (lo, hi);
                (idxs, cands) = gather(from, to)?;
            }
        }
        self.sights.make_contiguous();
        let (sights, _) = self.sights.as_slices();
        let lives = &self.lives;
        let member = |i: usize| {
            let slot = (idxs[i] - base) as usize;
            (&lives[slot], &sights[slot * n..(slot + 1) * n])
        };
        let (members, (folded, sights)) = match comp {
            Some(g) => (g.members.clone(), coverage::fold_cuts(&g, &cands, n, member)),
            None => {
                let g =
                    coverage::pair(&cands, self.window).into_iter().find(|g| g.whole == 0 || g.pieces.contains(&0))?;
                let members = std::iter::once(g.whole).chain(g.pieces.iter().copied()).collect::<Vec<_>>();
                (members, coverage::fold(&g, &cands, n, member))
            }
        };
        for i in members {
            if idxs[i] != base {
                let slot = (idxs[i] - base) as usize;
                let h = &mut self.hot[slot];
                self.data[h.conn_dir as usize].remove(self.lives[slot].seq, idxs[i]);
                self.handed.insert(idxs[i]);
                h.seen = self.all;
            }
        }
        let lives = folded
            .into_iter()
            .map(|mut l| {
                l.conn = root;
                l.dir = rd as u8;
                l
            })
            .collect();
        Some(Folded { lives, sights })
    }

    /// The connection and direction (false: a → b) of a packet at point `p`, if known there.
    fn conn_of(&mut self, p: usize, o: &Obs) -> Option<(u32, bool)> {
        let lo_first = o.src <= o.dst;
        let (lo, hi) = if lo_first { (o.src, o.dst) } else { (o.dst, o.src) };
        let hit = match self.last_tuple[p] {
            Some((l, h, v)) if l == lo && h == hi => v,
            _ => {
                let v = self.tuples.get(&(p as u8, lo, hi)).copied();
                self.last_tuple[p] = Some((lo, hi, v));
                v
            }
        };
        hit.map(|(c, a_is_lo)| (c, a_is_lo != lo_first))
    }

    fn set_conn(&mut self, p: usize, o: &Obs, c: u32, dir: bool) {
        let lo_first = o.src <= o.dst;
        let (lo, hi) = if lo_first { (o.src, o.dst) } else { (o.dst, o.src) };
        // dir false (a → b) from lo means a is lo.
        self.tuples.insert((p as u8, lo, hi), (c, lo_first != dir));
        self.last_tuple[p] = None;
    }

    /// One packet of point `p`, in time order over all points. Lifelines that have left the
    /// window must have been taken out first ([`Matcher::expire`]).
    pub fn push(&mut self, p: usize, o: &Obs) {
        let now = o.sight.t;
        let window = self.window;
        if self.swept.is_none_or(|s| now - s > window) {
            let (hot, base) = (&self.hot, self.base);
            self.pending.retain(|_, idx| *idx >= base && now - hot[(*idx - base) as usize].entered <= window);
            self.swept = Some(now);
        }
        let n = self.n;
        self.last[p] = now;
        let bit = 1u32 << p;
        // The newest lifeline of this key, if still in the window.
        let newest = self.pending.get(&o.key).copied().filter(|&i| self.in_window(i, now));
        // The oldest lifeline of this key still in the window that this point has not seen.
        let mut found = None;
        let mut at = newest.unwrap_or(u64::MAX);
        while at != u64::MAX && self.in_window(at, now) {
            let h = self.hot[(at - self.base) as usize];
            if h.seen & bit == 0 {
                found = Some(at);
            }
            at = h.older;
        }
        let copy = newest.is_some();
        match found {
            Some(i) => {
                let slot = (i - self.base) as usize;
                let h = self.hot[slot];
                let (lc, ld) = (h.conn_dir >> 1, h.conn_dir & 1 == 1);
                // The path evidence: this sighting against the others of its packet.
                let (root, f) = self.conns.find(lc);
                let d = u8::from(ld ^ f);
                let ev = &mut self.conns.evidence[root as usize];
                ev.on |= bit;
                for q in 0..n {
                    if h.seen & (1 << q) != 0 {
                        ev.pair(d, q, self.sights[slot * n + q].t, p, o.sight.t);
                    }
                }
                self.sights[slot * n + p] = o.sight;
                self.hot[slot].seen |= bit;
                if self.hot[slot].seen == self.all {
                    // Seen at every point: no longer a candidate for byte coverage.
                    let l = &self.lives[slot];
                    if l.len > 0 && !l.copy {
                        self.data[h.conn_dir as usize].remove(l.seq, i);
                    }
                }
                match self.conn_of(p, o) {
                    Some((c, d)) => self.conns.join(lc, ld, c, d),
                    None => self.set_conn(p, o, lc, ld),
                }
            }
            None => {
                let (c, d) = match self.conn_of(p, o) {
                    Some(x) => x,
                    None => {
                        // A new connection: a is the SYN's sender, else the first packet's.
                        let (a, b) = if o.key.flags & 0x12 == 0x12 { (o.dst, o.src) } else { (o.src, o.dst) };
                        let c = self.conns.add(a, b, n);
                        self.data.extend([Index::default(), Index::default()]);
                        let d = o.src != a;
                        self.set_conn(p, o, c, d);
                        (c, d)
                    }
                };
                let (root, _) = self.conns.find(c);
                self.conns.evidence[root as usize].on |= bit;
                let idx = self.base + self.lives.len() as u64;
                if o.key.len > 0 && !copy && bit != self.all {
                    self.data[(c * 2 + u32::from(d)) as usize].insert(o.key.seq, o.key.len, idx);
                }
                self.lives.push_back(Life {
                    conn: c,
                    dir: u8::from(d),
                    seq: o.key.seq,
                    ack: o.key.ack,
                    len: o.key.len,
                    flags: o.key.flags,
                    copy,
                    whole: 0,
                });
                let at = self.sights.len();
                self.sights.extend(std::iter::repeat_n(Sight::NONE, n));
                self.sights[at + p] = o.sight;
                self.hot.push_back(Hot {
                    entered: now,
                    older: newest.unwrap_or(u64::MAX),
                    seen: bit,
                    conn_dir: c << 1 | u32::from(d),
                });
                self.pending.insert(o.key, idx);
            }
        }
    }

    /// The connections, joined: every lifeline must have been taken out ([`Matcher::expire`]
    /// with `i64::MAX`). Returns them, per connection as made its final index and flip, and
    /// per final connection its path evidence.
    pub fn finish(mut self) -> (Vec<Conn>, Vec<(u32, bool)>, Vec<Evidence>) {
        let k = self.conns.parent.len();
        let mut index = vec![u32::MAX; k];
        let mut conns: Vec<Conn> = Vec::new();
        let mut evidence = Vec::new();
        for c in 0..k as u32 {
            let (root, _) = self.conns.find(c);
            if index[root as usize] == u32::MAX {
                index[root as usize] = conns.len() as u32;
                let (a, b) = self.conns.ends[root as usize];
                conns.push(Conn { a, b, at: vec![None; self.n] });
                evidence.push(std::mem::replace(&mut self.conns.evidence[root as usize], Evidence::new(0)));
            }
        }
        for ((p, lo, hi), (c, a_is_lo)) in &self.tuples {
            let (root, f) = self.conns.find(*c);
            let conn = &mut conns[index[root as usize] as usize];
            // a at this point: lo when a_is_lo, flipped by the join.
            let (a, b) = if *a_is_lo != f { (*lo, *hi) } else { (*hi, *lo) };
            conn.at[*p as usize] = Some((a, b));
        }
        let made = (0..k as u32)
            .map(|c| {
                let (root, f) = self.conns.find(c);
                (index[root as usize], f)
            })
            .collect();
        (conns, made, evidence)
    }
}

/// What the matcher hands the judging thread, in the order it happened.
enum Item {
    /// A lifeline that left the window (its sightings: the batch's next `n`), as [`Gone`].
    Gone { life: Life, idx: u64, entered: i64 },
    /// Root connection `0`'s path evidence is now this copy (it changed since the last one).
    Evidence(u32, Box<Evidence>),
    /// The captures' first and last times and whether each has ended are now the batch's next
    /// `n` (they changed since the last lifeline handed over).
    Capturing,
}

/// Lifelines handed to the judging thread at once: a channel send per lifeline would cost
/// more than most verdicts.
const HAND_BATCH: usize = 4096;

/// Batches waiting for the judging thread: with [`HAND_BATCH`], the most lifelines between
/// the matcher and the verdicts (bounded memory stays bounded).
const HAND_QUEUE: usize = 4;

#[derive(Default)]
struct HandBatch {
    items: Vec<Item>,
    sights: Vec<Sight>,
    capturing: Vec<(Option<(i64, i64)>, bool)>,
}

/// The matcher's end of the judging thread: each lifeline that leaves the window goes there
/// with what the verdicts read of the matcher's state at that moment — its connection's path
/// evidence and the captures' spans — sent only when they changed, so that the verdicts are
/// the ones judging in place gave.
struct Handing {
    n: usize,
    batch: HandBatch,
    full: std::sync::mpsc::SyncSender<HandBatch>,
    empty: std::sync::mpsc::Receiver<HandBatch>,
    /// Per root connection, the (version, points) of the evidence last sent.
    sent: Vec<Option<(u64, u32)>>,
    /// The captures' spans and ends last sent.
    capturing: Vec<(Option<(i64, i64)>, bool)>,
}

impl Handing {
    fn gone(&mut self, g: Gone<'_>, points: &[Point], ended: &[bool]) {
        let root = g.life.conn as usize;
        if self.sent.len() <= root {
            self.sent.resize(root + 1, None);
        }
        let key = Some((g.evidence.version, g.evidence.on));
        if self.sent[root] != key {
            self.sent[root] = key;
            self.batch.items.push(Item::Evidence(root as u32, Box::new(g.evidence.clone())));
        }
        if (0..self.n).any(|p| self.capturing[p] != (points[p].span, ended[p])) {
            for (c, (p, e)) in self.capturing.iter_mut().zip(points.iter().zip(ended)) {
                *c = (p.span, *e);
            }
            self.batch.capturing.extend_from_slice(&self.capturing);
            self.batch.items.push(Item::Capturing);
        }
        self.batch.sights.extend_from_slice(g.sights);
        self.batch.items.push(Item::Gone { life: g.life, idx: g.idx, entered: g.entered });
        if self.batch.items.len() >= HAND_BATCH {
            self.send();
        }
    }

    /// Sends the batch on (unless empty) and takes an empty one back (or a new one).
    fn send(&mut self) {
        if self.batch.items.is_empty() {
            return;
        }
        let next = self.empty.try_recv().unwrap_or_default();
        // The judging thread ends only when this end is dropped, or by a panic that the join
        // surfaces.
        let _ = self.full.send(std::mem::replace(&mut self.batch, next));
    }
}

/// The judging thread: each lifeline handed over, to `judge`, with the evidence and the
/// captures' spans as they were when it left the window.
fn judging(
    judge: &mut Judge,
    mut points: Vec<Point>,
    full: std::sync::mpsc::Receiver<HandBatch>,
    empty: std::sync::mpsc::Sender<HandBatch>,
) {
    let n = points.len();
    let mut ended = vec![false; n];
    let mut evidence: Vec<Evidence> = Vec::new();
    for mut b in full {
        let (mut s, mut c) = (0, 0);
        for item in b.items.drain(..) {
            match item {
                Item::Evidence(root, e) => {
                    let root = root as usize;
                    if evidence.len() <= root {
                        evidence.resize_with(root + 1, || Evidence::new(0));
                    }
                    let mut e = *e;
                    let mut order = [0; MAX_POINTS];
                    let k = e.path(&mut order);
                    e.path = Some(order[..k].iter().map(|&p| p as u8).collect());
                    evidence[root] = e;
                }
                Item::Capturing => {
                    for (p, (span, e)) in b.capturing[c..c + n].iter().enumerate() {
                        points[p].span = *span;
                        ended[p] = *e;
                    }
                    c += n;
                }
                Item::Gone { life, idx, entered } => {
                    let evidence = &evidence[life.conn as usize];
                    let sights = &b.sights[s..s + n];
                    s += n;
                    judge.take(Gone { life, sights, evidence, idx, entered }, &points, &ended);
                }
            }
        }
        b.sights.clear();
        b.capturing.clear();
        let _ = empty.send(b);
    }
}

/// Where the lifelines that leave the window are judged.
enum Verdicts<'a> {
    /// Here, as each leaves.
    Here(&'a mut Judge),
    /// On the judging thread ([`judging`]).
    There(Handing),
}

impl Verdicts<'_> {
    fn gone(&mut self, g: Gone<'_>, points: &[Point], ended: &[bool]) {
        match self {
            Verdicts::Here(judge) => judge.take(g, points, ended),
            Verdicts::There(hand) => hand.gone(g, points, ended),
        }
    }
}

/// Reads every capture once, merged in time order (ties: the capture given first). Each
/// capture is read and decoded on a thread of its own (the reading stage of every pass,
/// [`Decoding`]); this thread merges and matches, and judges each lifeline that leaves the
/// window or hands it to a thread that does ([`judging`], [`Settings::judge_thread`]), in
/// batches through a bounded channel. On a machine with fewer cores than threads, the
/// judging thread cost wall time rather than saving it (docs/correlate.md, "Speed").
pub(super) fn run(paths: &[PathBuf], settings: &Settings, judge: &mut Judge) -> Result<Raw, Error> {
    let mut points = Vec::new();
    let mut readers = Vec::new();
    let mut given = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let reader =
            CaptureReader::open(path).map_err(|source| Error::File(FileError { path: path.clone(), source }))?;
        let g = if i == 0 { None } else { settings.offsets_ns.get(i).copied().flatten() };
        given.push(if i == 0 { Some(0) } else { g });
        points.push(Point { path: path.clone(), packets: 0, skipped: 0, span: None, link_type: None });
        readers.push((reader, g.unwrap_or(0)));
    }
    let n = paths.len();
    let mut m = Matcher::new(n, settings.window_ns);
    let mut ended_at = vec![false; n];
    let threaded =
        settings.judge_thread.unwrap_or_else(|| std::thread::available_parallelism().is_ok_and(|c| c.get() >= n + 2));
    std::thread::scope(|scope| {
        let (mut hand, judged) = if threaded {
            let (full_tx, full_rx) = std::sync::mpsc::sync_channel(HAND_QUEUE);
            let (empty_tx, empty_rx) = std::sync::mpsc::channel();
            let points = points.clone();
            let judged = scope.spawn(move || judging(judge, points, full_rx, empty_tx));
            let hand = Handing {
                n,
                batch: HandBatch::default(),
                full: full_tx,
                empty: empty_rx,
                sent: Vec::new(),
                capturing: vec![(None, false); n],
            };
            (Verdicts::There(hand), Some(judged))
        } else {
            (Verdicts::Here(judge), None)
        };
        let mut inputs = Vec::new();
        let mut threads = Vec::new();
        for (reader, given) in readers {
            let (decoding, thread) = Decoding::spawn(scope, reader, FileSummary::default());
            inputs.push(Input { decoding, head: None, given });
            threads.push(Some(thread));
        }
        // A capture has ended: its reading thread's counts, or the error that ended it.
        let mut ended = |p: usize, point: &mut Point| -> Result<(), Error> {
            let Some(thread) = threads[p].take() else { return Ok(()) };
            // A panic while reading is a bug in tcpscope: let it surface as one.
            let (sum, error, link_type) = thread.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            point.packets = sum.tcp_packets;
            point.skipped = sum.packets - sum.tcp_packets;
            point.link_type = link_type;
            match error {
                Some(source) => Err(Error::File(FileError { path: point.path.clone(), source })),
                None => Ok(()),
            }
        };
        for (p, (inp, pt)) in inputs.iter_mut().zip(points.iter_mut()).enumerate() {
            inp.advance(pt);
            if inp.head.is_none() {
                ended(p, pt)?;
                ended_at[p] = true;
            }
        }
        loop {
            let next =
                inputs.iter().enumerate().filter_map(|(i, x)| x.head.map(|h| (h.sight.t, i))).min().map(|(_, i)| i);
            let Some(p) = next else { break };
            let Some(o) = inputs[p].head else { break };
            // The one place lifelines leave the window: each connection direction's
            // lifelines are handed over here, in the order made, before any verdict.
            m.expire(o.sight.t, &mut |g| hand.gone(g, &points, &ended_at));
            m.push(p, &o);
            inputs[p].advance(&mut points[p]);
            if inputs[p].head.is_none() {
                ended(p, &mut points[p])?;
                ended_at[p] = true;
            }
        }
        m.expire(i64::MAX, &mut |g| hand.gone(g, &points, &ended_at));
        if let Verdicts::There(mut hand) = hand {
            hand.send();
        }
        // A panic while judging is a bug in tcpscope: let it surface as one.
        if let Some(judged) = judged {
            judged.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
        Ok::<(), Error>(())
    })?;
    let (conns, made, evidence) = m.finish();
    Ok(Raw { points, conns, made, evidence, given })
}

#[cfg(test)]
mod tests {
    use super::{Evidence, MAX_POINTS};

    /// What the verdicts read of an evidence: its path and every smallest difference.
    fn read(e: &Evidence) -> (Vec<usize>, Vec<Option<i64>>) {
        let mut out = [0; MAX_POINTS];
        let k = e.path(&mut out);
        let n = e.n;
        let mins = (0..2).flat_map(|d| (0..n).flat_map(move |i| (0..n).map(move |j| e.min(d, i, j))));
        (out[..k].to_vec(), mins.collect())
    }

    /// A copy taken when the version last changed reads as the evidence itself, whatever
    /// came since: the judging thread is handed copies only when the version changes.
    #[test]
    fn an_unchanged_version_reads_the_same() {
        // A small linear congruential generator: the test must not depend on a crate's stream.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut copies = 0;
        for _ in 0..200 {
            let n = 2 + next(3) as usize;
            let mut e = Evidence::new(n);
            e.on = (1 << n) - 1;
            let mut copy = e.clone();
            for _ in 0..300 {
                let (d, i, j) = (next(2) as u8, next(n as u64) as usize, next(n as u64) as usize);
                if i == j {
                    continue;
                }
                let ti = next(1000) as i64;
                e.pair(d, i, ti, j, ti + next(400) as i64 - 100);
                if e.version != copy.version {
                    copy = e.clone();
                    copies += 1;
                }
                assert_eq!(read(&copy), read(&e));
            }
        }
        // Most steps changed nothing the verdicts read.
        assert!(copies < 200 * 300 / 4, "{copies} copies");
    }
}

//! The one streaming pass: the captures merged in time order, each packet matched to its
//! sightings at the other points within the window (module doc of `correlate`).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::path::PathBuf;

use rustc_hash::FxHasher;

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
}

impl Default for Settings {
    fn default() -> Self {
        Settings { window_ns: 2_000_000_000, offsets_ns: Vec::new() }
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

/// The pass's result before the clocks and verdicts.
pub(super) struct Raw {
    pub points: Vec<Point>,
    pub conns: Vec<Conn>,
    pub lives: Vec<Life>,
    pub sights: Vec<Sight>,
    pub given: Vec<Option<i64>>,
}

/// Connections, joined when a packet shows two of them are one (union-find with the parity of
/// their directions: a NAT, or two points that first saw the connection from different packets).
#[derive(Default)]
struct Conns {
    parent: Vec<u32>,
    /// Direction flip relative to the parent.
    flip: Vec<bool>,
    /// Per connection as first made: its a and b.
    ends: Vec<(Endpoint, Endpoint)>,
}

impl Conns {
    fn add(&mut self, a: Endpoint, b: Endpoint) -> u32 {
        let id = self.parent.len() as u32;
        self.parent.push(id);
        self.flip.push(false);
        self.ends.push((a, b));
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

/// Per lifeline, the matcher's working state, in one record: a sighting that matches reads it
/// for the lifelines of its key, and the window of a fast transfer (~10⁵ lifelines) is far
/// larger than the caches, so one cache miss here replaces three (window time, key chain,
/// which points saw it) and a fourth (its connection).
#[derive(Clone, Copy)]
struct Hot {
    /// When it entered the window (ns).
    entered: i64,
    /// The previous lifeline with the same key (`u32::MAX`: none).
    older: u32,
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
    pending: HashMap<MatchKey, u32, Fx>,
    /// When `pending` was last swept (ns of input time).
    swept: Option<i64>,
    /// Per lifeline, what a new sighting needs to read (see [`Hot`]).
    hot: Vec<Hot>,
    /// Per point, the last tuple looked up and its answer (a bulk transfer asks the same).
    last_tuple: Vec<Option<LastTuple>>,
    /// (point, lower endpoint, higher endpoint) → (connection as made, a is the lower).
    tuples: HashMap<(u8, Endpoint, Endpoint), (u32, bool), Fx>,
    conns: Conns,
    pub lives: Vec<Life>,
    pub sights: Vec<Sight>,
}

impl Matcher {
    pub fn new(n: usize, window: i64) -> Matcher {
        Matcher {
            n,
            window,
            pending: HashMap::default(),
            swept: None,
            hot: Vec::new(),
            last_tuple: vec![None; n],
            tuples: HashMap::default(),
            conns: Conns::default(),
            lives: Vec::new(),
            sights: Vec::new(),
        }
    }

    /// Room for `k` more lifelines.
    pub fn reserve(&mut self, k: usize) {
        self.lives.reserve(k);
        self.sights.reserve(k * self.n);
        self.hot.reserve(k);
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

    /// One packet of point `p`, in time order over all points.
    pub fn push(&mut self, p: usize, o: &Obs) {
        let now = o.sight.t;
        let window = self.window;
        if self.swept.is_none_or(|s| now - s > window) {
            let hot = &self.hot;
            self.pending.retain(|_, idx| now - hot[*idx as usize].entered <= window);
            self.swept = Some(now);
        }
        let n = self.n;
        let bit = 1u32 << p;
        // The newest lifeline of this key, if still in the window.
        let newest = self.pending.get(&o.key).copied().filter(|&i| now - self.hot[i as usize].entered <= window);
        // The oldest lifeline of this key still in the window that this point has not seen.
        let mut found = None;
        let mut at = newest.unwrap_or(u32::MAX);
        while at != u32::MAX {
            let h = self.hot[at as usize];
            if now - h.entered > window {
                break;
            }
            if h.seen & bit == 0 {
                found = Some(at);
            }
            at = h.older;
        }
        let copy = newest.is_some();
        match found {
            Some(i) => {
                self.sights[i as usize * n + p] = o.sight;
                let h = &mut self.hot[i as usize];
                h.seen |= bit;
                let (lc, ld) = (h.conn_dir >> 1, h.conn_dir & 1 == 1);
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
                        let c = self.conns.add(a, b);
                        let d = o.src != a;
                        self.set_conn(p, o, c, d);
                        (c, d)
                    }
                };
                let idx = self.lives.len() as u32;
                self.lives.push(Life {
                    conn: c,
                    dir: u8::from(d),
                    seq: o.key.seq,
                    ack: o.key.ack,
                    len: o.key.len,
                    flags: o.key.flags,
                    copy,
                });
                self.sights.extend(std::iter::repeat_n(Sight::NONE, n));
                self.sights[idx as usize * n + p] = o.sight;
                self.hot.push(Hot {
                    entered: now,
                    older: newest.unwrap_or(u32::MAX),
                    seen: bit,
                    conn_dir: c << 1 | u32::from(d),
                });
                self.pending.insert(o.key, idx);
            }
        }
    }

    /// Resolves the joined connections: each lifeline names its final connection and direction.
    pub fn finish(mut self) -> (Vec<Conn>, Vec<Life>, Vec<Sight>) {
        let k = self.conns.parent.len();
        let mut index = vec![u32::MAX; k];
        let mut conns: Vec<Conn> = Vec::new();
        for c in 0..k as u32 {
            let (root, _) = self.conns.find(c);
            if index[root as usize] == u32::MAX {
                index[root as usize] = conns.len() as u32;
                let (a, b) = self.conns.ends[root as usize];
                conns.push(Conn { a, b, at: vec![None; self.n] });
            }
        }
        for ((p, lo, hi), (c, a_is_lo)) in &self.tuples {
            let (root, f) = self.conns.find(*c);
            let conn = &mut conns[index[root as usize] as usize];
            // a at this point: lo when a_is_lo, flipped by the join.
            let (a, b) = if *a_is_lo != f { (*lo, *hi) } else { (*hi, *lo) };
            conn.at[*p as usize] = Some((a, b));
        }
        for l in &mut self.lives {
            let (root, f) = self.conns.find(l.conn);
            l.conn = index[root as usize];
            l.dir ^= u8::from(f);
        }
        (conns, self.lives, self.sights)
    }
}

/// Reads every capture once, merged in time order (ties: the capture given first). Each
/// capture is read and decoded on a thread of its own (the reading stage of every pass,
/// [`Decoding`]); this thread merges and matches.
pub(super) fn run(paths: &[PathBuf], settings: &Settings) -> Result<Raw, Error> {
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
    let mut m = Matcher::new(paths.len(), settings.window_ns);
    // Room for the packets the largest file may hold (~100 bytes a packet in a headers-only
    // capture): growing the tables by doubling copied them and faulted their pages twice.
    let largest = paths.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).max().unwrap_or(0);
    m.reserve((largest / 100).min(1 << 26) as usize);
    std::thread::scope(|scope| {
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
            }
        }
        loop {
            let next =
                inputs.iter().enumerate().filter_map(|(i, x)| x.head.map(|h| (h.sight.t, i))).min().map(|(_, i)| i);
            let Some(p) = next else { break };
            let Some(o) = inputs[p].head else { break };
            m.push(p, &o);
            inputs[p].advance(&mut points[p]);
            if inputs[p].head.is_none() {
                ended(p, &mut points[p])?;
            }
        }
        Ok::<(), Error>(())
    })?;
    let (conns, lives, sights) = m.finish();
    Ok(Raw { points, conns, lives, sights, given })
}

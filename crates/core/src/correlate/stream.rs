//! The one streaming pass: the captures merged in time order, each packet matched to its
//! sightings at the other points within the window (module doc of `correlate`).

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::path::PathBuf;

use rustc_hash::FxHasher;

use super::{Conn, Error, Life, Point, Sight};
use crate::capture::{CaptureReader, FileError};
use crate::conn::Endpoint;

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

struct Input {
    reader: CaptureReader,
    path: PathBuf,
    head: Option<Obs>,
    given: i64,
}

impl Input {
    /// Reads the next TCP packet into `head`.
    fn advance(&mut self, point: &mut Point) -> Result<(), FileError> {
        self.head = None;
        loop {
            let rec = self.reader.next_record().map_err(|source| FileError { path: self.path.clone(), source })?;
            let Some(rec) = rec else { return Ok(()) };
            point.link_type.get_or_insert(rec.link_type);
            let Ok(s) = crate::decode::decode(rec.link_type, rec.data, rec.orig_len) else {
                point.skipped += 1;
                continue;
            };
            let t = rec.ts_ns as i64 - self.given;
            point.packets += 1;
            point.span = Some(point.span.map_or((t, t), |(a, _)| (a, t)));
            let src = Endpoint { addr: s.src, port: s.sport };
            let dst = Endpoint { addr: s.dst, port: s.dport };
            self.head = Some(Obs {
                key: MatchKey {
                    seq: s.seq.0,
                    ack: if s.flags.ack() { s.ack.0 } else { 0 },
                    len: s.payload_len,
                    flags: s.flags.0,
                    ip_id: s.ip_id,
                    ts: s.options.timestamps,
                },
                src,
                dst,
                sight: Sight {
                    t,
                    frame: rec.frame,
                    ttl: s.ttl,
                    ecn: s.ecn,
                    win: s.win_raw,
                    mss: s.options.mss.unwrap_or(0),
                },
            });
            return Ok(());
        }
    }
}

/// The matching state, apart from the readers (so that it can be fed packets in tests).
pub(super) struct Matcher {
    n: usize,
    window: i64,
    pending: HashMap<MatchKey, Vec<u32>, Fx>,
    expiry: VecDeque<(i64, MatchKey, u32)>,
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
            expiry: VecDeque::new(),
            tuples: HashMap::default(),
            conns: Conns::default(),
            lives: Vec::new(),
            sights: Vec::new(),
        }
    }

    /// The connection and direction (false: a → b) of a packet at point `p`, if known there.
    fn conn_of(&self, p: usize, o: &Obs) -> Option<(u32, bool)> {
        let lo_first = o.src <= o.dst;
        let (lo, hi) = if lo_first { (o.src, o.dst) } else { (o.dst, o.src) };
        self.tuples.get(&(p as u8, lo, hi)).map(|&(c, a_is_lo)| (c, a_is_lo != lo_first))
    }

    fn set_conn(&mut self, p: usize, o: &Obs, c: u32, dir: bool) {
        let lo_first = o.src <= o.dst;
        let (lo, hi) = if lo_first { (o.src, o.dst) } else { (o.dst, o.src) };
        // dir false (a → b) from lo means a is lo.
        self.tuples.insert((p as u8, lo, hi), (c, lo_first != dir));
    }

    /// One packet of point `p`, in time order over all points.
    pub fn push(&mut self, p: usize, o: &Obs) {
        let now = o.sight.t;
        while let Some(&(t, key, idx)) = self.expiry.front() {
            if now - t <= self.window {
                break;
            }
            self.expiry.pop_front();
            if let Some(v) = self.pending.get_mut(&key) {
                v.retain(|&i| i != idx);
                if v.is_empty() {
                    self.pending.remove(&key);
                }
            }
        }
        let n = self.n;
        let cands = self.pending.get(&o.key);
        let found = cands.and_then(|v| v.iter().copied().find(|&i| !self.sights[i as usize * n + p].seen()));
        let copy = cands.is_some_and(|v| !v.is_empty());
        match found {
            Some(i) => {
                self.sights[i as usize * n + p] = o.sight;
                let (lc, ld) = (self.lives[i as usize].conn, self.lives[i as usize].dir == 1);
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
                self.pending.entry(o.key).or_default().push(idx);
                self.expiry.push_back((now, o.key, idx));
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

/// Reads every capture once, merged in time order (ties: the capture given first).
pub(super) fn run(paths: &[PathBuf], settings: &Settings) -> Result<Raw, Error> {
    let mut points = Vec::new();
    let mut inputs = Vec::new();
    let mut given = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let reader =
            CaptureReader::open(path).map_err(|source| Error::File(FileError { path: path.clone(), source }))?;
        let g = if i == 0 { None } else { settings.offsets_ns.get(i).copied().flatten() };
        given.push(if i == 0 { Some(0) } else { g });
        points.push(Point { path: path.clone(), packets: 0, skipped: 0, span: None, link_type: None });
        inputs.push(Input { reader, path: path.clone(), head: None, given: g.unwrap_or(0) });
    }
    for (inp, pt) in inputs.iter_mut().zip(points.iter_mut()) {
        inp.advance(pt)?;
    }
    let mut m = Matcher::new(paths.len(), settings.window_ns);
    loop {
        let next = inputs.iter().enumerate().filter_map(|(i, x)| x.head.map(|h| (h.sight.t, i))).min().map(|(_, i)| i);
        let Some(p) = next else { break };
        let Some(o) = inputs[p].head else { break };
        m.push(p, &o);
        inputs[p].advance(&mut points[p])?;
    }
    let (conns, lives, sights) = m.finish();
    Ok(Raw { points, conns, lives, sights, given })
}

//! The verdicts, taken as each lifeline leaves the window (definitions in the module doc of
//! `correlate`): what is known then settles a packet's fate — the path order and the smallest
//! raw differences between points come from the connection's packets matched so far (its
//! first round trips settle them), and losses, capture losses, copies and changes need
//! nothing else. Reordering and retransmissions need the packets in the order they arrived at
//! the last point or left the first: they wait in a heap until no packet still to be judged
//! can come before them (every sighting of a lifeline is at or after the time it entered the
//! window, and lifelines leave in that order). The one-way delays are kept as a bounded
//! summary ([`Delays`]) put on the reference clock once the clocks are known, after the pass.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use super::clock::{self, Envelope, Hull, SliceIndex};
use super::coverage;
use super::rows::{CorrDir, CorrEvent, DelaySummary, LossAt, dir_name};
use super::stream::{Gone, MAX_POINTS, Raw, Settings};
use super::{Correlation, Life, Point, Sight};

/// Byte ranges, merged (a set of [start, end) intervals).
#[derive(Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    fn insert(&mut self, mut a: u64, mut b: u64) {
        if a >= b {
            return;
        }
        // Data in order extends the last range: in place, no search.
        if let Some(mut last) = self.0.last_entry()
            && *last.key() <= a
            && a <= *last.get()
        {
            let e = last.get_mut();
            *e = (*e).max(b);
            return;
        }
        // Merge with every range that touches [a, b), from the highest start down (the ranges
        // are disjoint and apart, so their ends fall in the same order as their starts).
        while let Some((&s, &e)) = self.0.range(..=b).next_back() {
            if e < a {
                break;
            }
            self.0.remove(&s);
            a = a.min(s);
            b = b.max(e);
        }
        self.0.insert(a, b);
    }

    fn covers(&self, a: u64, b: u64) -> bool {
        a >= b || self.0.range(..=a).next_back().is_some_and(|(_, e)| *e >= b)
    }

    fn overlaps(&self, a: u64, b: u64) -> bool {
        self.0.range(..b).next_back().is_some_and(|(_, e)| *e > a)
    }
}

const SYN: u16 = 0x02;
const FIN: u16 = 0x01;
const ACK: u16 = 0x10;

/// How many time slices [`Sketch`] keeps apart.
const SKETCH_SLICES: usize = 16;

/// Relative accuracy of a [`Sketch`] bin: a value is represented within this fraction of
/// itself.
const SKETCH_ALPHA: f64 = 1.0 / 1024.0;

/// A quantile sketch of values (ns, any sign) in logarithmic bins of relative width
/// 2·[`SKETCH_ALPHA`] (DDSketch's, Masson, Rim, Lee, VLDB 2019), kept per time slice
/// ([`SliceIndex`]: aligned, at most [`SKETCH_SLICES`], their width doubling — pairs of
/// slices merged — when the times no longer fit). The slices are what
/// lets the clock correction, linear in time, be applied after the pass: each slice's values
/// are moved by the correction at its middle. Written here rather than with the
/// `sketches-ddsketch` crate: that crate neither exposes its bins nor shifts a sketch, and
/// the correction needs both.
#[derive(Clone, Default)]
struct Sketch {
    index: SliceIndex,
    /// Per slice, its bins' counts (allocated at the first value).
    bins: Vec<FxHashMap<i32, u64>>,
}

fn ln_gamma() -> f64 {
    ((1.0 + SKETCH_ALPHA) / (1.0 - SKETCH_ALPHA)).ln()
}

/// The bin of value `v`: 0 for |v| < 1 ns, else ±(1 + ⌈ln|v| / ln γ⌉).
fn bin_of(v: f64) -> i32 {
    if v.abs() < 1.0 {
        return 0;
    }
    let k = (v.abs().ln() / ln_gamma()).ceil() as i32 + 1;
    if v < 0.0 { -k } else { k }
}

/// The value a bin stands for: within [`SKETCH_ALPHA`] of every value in it.
fn value_of(bin: i32) -> f64 {
    if bin == 0 {
        return 0.0;
    }
    let g = ((1.0 + SKETCH_ALPHA) / (1.0 - SKETCH_ALPHA)).powi(bin.abs() - 1);
    let v = 2.0 * g / (1.0 + (1.0 + SKETCH_ALPHA) / (1.0 - SKETCH_ALPHA));
    if bin < 0 { -v } else { v }
}

impl Sketch {
    fn push(&mut self, t: i64, v: f64, count: u64) {
        if self.bins.is_empty() {
            self.bins = vec![FxHashMap::default(); SKETCH_SLICES];
        }
        let k = self.index.place(t, &mut self.bins, |into, from| {
            if into.is_empty() {
                *into = from;
            } else {
                for (b, c) in from {
                    *into.entry(b).or_default() += c;
                }
            }
        });
        *self.bins[k].entry(bin_of(v)).or_default() += count;
    }

    /// Every bin as (the middle time of its slice, its value, its count).
    fn bins(&self) -> impl Iterator<Item = (i64, f64, u64)> + '_ {
        let half = self.index.width() / 2;
        self.bins.iter().enumerate().flat_map(move |(k, m)| {
            let mid = self.index.start(k) + half;
            m.iter().map(move |(&b, &c)| (mid, value_of(b), c))
        })
    }
}

/// One direction's one-way delays (raw: last point's clock minus first point's), in bounded
/// memory: the lower hulls of (time at the first point, delay) and of (time, −delay) give the
/// exact smallest and largest delay on the reference clock whatever the clocks turn out to be;
/// the median comes from a [`Sketch`] of the delay less the direction's first one (so that its
/// relative error is of the queueing, not of a clock offset).
#[derive(Default, Clone)]
pub(super) struct Delays {
    lo: Hull,
    hi: Hull,
    first: Option<i64>,
    sketch: Sketch,
    n: u64,
}

impl Delays {
    pub(super) fn push(&mut self, t: i64, d: i64) {
        self.lo.push(t, d);
        self.hi.push(t, -d);
        let r = *self.first.get_or_insert(d);
        self.sketch.push(t, (d - r) as f64, 1);
        self.n += 1;
    }

    fn absorb(&mut self, o: &mut Delays) {
        let Some(ro) = o.first else { return };
        self.lo.absorb(&mut o.lo);
        self.hi.absorb(&mut o.hi);
        let r = *self.first.get_or_insert(ro);
        for (t, v, c) in o.sketch.bins().collect::<Vec<_>>() {
            self.sketch.push(t, v + (ro - r) as f64, c);
        }
        self.n += o.n;
    }

    /// Smallest, median and largest on the reference clock (ns), `owd(t, d)` putting a raw
    /// delay `d` at time `t` of the first point on it.
    pub(super) fn summary(&mut self, owd: impl Fn(i64, i64) -> i64) -> Option<(f64, f64, f64)> {
        let r = self.first?;
        let min = self.lo.vertices().iter().map(|&(t, d)| owd(t, d)).min()?;
        let max = self.hi.vertices().iter().map(|&(t, d)| owd(t, -d)).max()?;
        let mut v: Vec<(f64, u64)> = self.sketch.bins().map(|(mid, x, c)| (x + owd(mid, r) as f64, c)).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: u64 = v.iter().map(|x| x.1).sum();
        // The lower middle value of an even count, as the exact summary.
        let rank = (total - 1) / 2;
        let mut seen = 0;
        let mut median = v.last()?.0;
        for &(x, c) in &v {
            seen += c;
            if seen > rank {
                median = x;
                break;
            }
        }
        Some((min as f64, median.clamp(min as f64, max as f64), max as f64))
    }
}

/// A lifeline's part in an event, kept until the event is written: the times it was seen
/// (point, raw time) give the event's time once the clocks are known.
#[derive(Clone, Debug)]
struct Pending {
    conn: u32,
    dir: u8,
    kind: &'static str,
    point: usize,
    to: Option<usize>,
    frame: u64,
    frame_first: Option<u64>,
    seq: u64,
    len: u32,
    detail: String,
    times: Vec<(usize, i64)>,
}

/// What an event needs of a lifeline whose verdict waits in a heap.
#[derive(Clone, Debug)]
struct Mark {
    frame_first_point: u64,
    frame_last_point: Option<u64>,
    frame_point_1: Option<u64>,
    seq: u64,
    len: u32,
    first: (usize, i64),
    last: Option<(usize, i64)>,
}

/// A heap entry, ordered by its time and then by the order lifelines were made.
#[derive(Clone, Debug)]
struct Timed<T> {
    t: i64,
    kind: u8,
    idx: u64,
    v: T,
}

impl<T> PartialEq for Timed<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.kind, self.idx) == (o.t, o.kind, o.idx)
    }
}
impl<T> Eq for Timed<T> {}
impl<T> PartialOrd for Timed<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Timed<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.t, self.kind, self.idx).cmp(&(o.t, o.kind, o.idx))
    }
}

/// Entries waiting for their turn, in order of (time, kind, index). They come nearly in that
/// order — lifelines are judged in the order made, and their times are within a window of it —
/// so an entry is placed by a short walk from the back (a binary search past 32 steps) and
/// taken from the front: a binary heap spent a sixth of the pass moving entries.
struct Queue<T>(VecDeque<Timed<T>>);

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue(VecDeque::new())
    }
}

impl<T> Queue<T> {
    fn push(&mut self, e: Timed<T>) {
        let mut i = self.0.len();
        let mut steps = 0;
        while i > 0 && self.0[i - 1] > e {
            i -= 1;
            steps += 1;
            if steps == 32 {
                i = self.0.partition_point(|x| *x < e);
                break;
            }
        }
        self.0.insert(i, e);
    }

    /// The first entry, if its time is before `horizon`.
    fn pop_before(&mut self, horizon: i64) -> Option<Timed<T>> {
        if self.0.front().is_some_and(|e| e.t < horizon) { self.0.pop_front() } else { None }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The first entry of `a` and `b` together, if its time is before `horizon`: two queues
    /// each nearly in order, taken as one.
    fn pop_either_before(a: &mut Queue<T>, b: &mut Queue<T>, horizon: i64) -> Option<Timed<T>> {
        let from_a = match (a.0.front(), b.0.front()) {
            (Some(x), Some(y)) => x < y,
            (x, _) => x.is_some(),
        };
        if from_a { a.pop_before(horizon) } else { b.pop_before(horizon) }
    }
}

/// A transmission at the first point, for the retransmission verdicts.
#[derive(Clone, Debug)]
struct Sent {
    a: u64,
    b: u64,
    delivered: bool,
    mark: Mark,
}

/// For the RTT shares: a data segment's arrival at the last point (kind 0), or an ACK of the
/// other direction leaving that point (kind 1).
#[derive(Clone, Debug)]
enum Rtt {
    Data { dir: u8, sent_at: i64, a: u64, b: u64 },
    Ack { dir: u8, ack: u32, back: Option<i64> },
}

/// A data segment waiting for the ACK that covers it.
#[derive(Clone, Debug)]
struct Waiting {
    arr: i64,
    sent_at: i64,
    a: u64,
    b: u64,
    acks: u32,
}

/// One connection direction's counts and state.
#[derive(Default)]
struct DirJ {
    judged: u64,
    packets: u64,
    delivered: u64,
    lost_on_path: u64,
    losses: BTreeMap<(usize, usize), u64>,
    capture_loss: u64,
    outside_capture: u64,
    split_pieces: u64,
    merged_pieces: u64,
    duplicated: u64,
    reordered: u64,
    ce_marked: u64,
    window_changed: u64,
    mss_changed: u64,
    dscp_changed: u64,
    ttl_hops: Option<u8>,
    retransmissions: u64,
    necessary: u64,
    spurious: u64,
    base: Option<u32>,
    /// The one-way delays, apart per (first, last) point of the path as known when each
    /// packet was judged: a connection's first packets may be judged before a point further
    /// down its path matched anything of it (a capture whose clock is late by more than a
    /// window less the round trip), and a delay to another point is not its path's. Only the
    /// final path's ends count (`Judge::finish`).
    delays: Vec<(u8, u8, Delays)>,
    /// Packets judged delivered on a path that lacked points the packet was not seen at: per
    /// set of those points (bit p: point p), how many, and with `keep`, their places in the
    /// kept lifelines. When the final path holds one of those points, they were not seen at a
    /// point of their path — whose capture the pass could not yet place —: outside the
    /// captures, not delivered (`Judge::finish`).
    unsure: Vec<(u32, u64, Vec<usize>)>,
    /// Arrivals at the last point, for reordering (kind 0 only).
    arrivals: Queue<(i64, Mark)>,
    /// The largest send time of the arrivals before the current arrival time, and the current
    /// one's time and largest send time.
    committed: i64,
    cur_arr: i64,
    cur_max: i64,
    sent: Queue<Sent>,
    highest: u64,
    got: Ranges,
    resent: Ranges,
    waiting: VecDeque<Waiting>,
    rtt_samples: u64,
    sum_rtt: f64,
    sum_recv: f64,
}

/// One connection (as made by the matcher, its root when judged).
#[derive(Default)]
struct ConnJ {
    dirs: [DirJ; 2],
    /// For the RTT shares, taken as one queue in order of (time, kind, index): the data
    /// segments (kind 0) and the ACKs (kind 1) apart, as an ACK's time (leaving the first
    /// point) is a path's delay before a data segment's (arriving at the last): in one queue
    /// each ACK was placed that far from the back.
    rtt: Queue<Rtt>,
    acks: Queue<Rtt>,
    busy: bool,
}

impl ConnJ {
    fn pending(&self) -> bool {
        !self.rtt.is_empty()
            || !self.acks.is_empty()
            || self.dirs.iter().any(|d| !d.arrivals.is_empty() || !d.sent.is_empty())
    }
}

/// The clock samples between two points i and j (ordered): `fwd` i → j as (t_i, t_j − t_i),
/// `rev` j → i as (t_i, t_i − t_j), for connections whose path order between them was known
/// when their packets were judged; the others' a→b and b→a samples both ways, placed by the
/// majority after the pass.
#[derive(Default)]
struct PairEnv {
    fwd: Envelope,
    rev: Envelope,
    /// [a→b as fwd, a→b as rev, b→a as fwd, b→a as rev].
    unknown: [Envelope; 4],
}

/// The verdicts, fed each lifeline as it leaves the window.
pub(super) struct Judge {
    n: usize,
    window: i64,
    keep: bool,
    conns: Vec<ConnJ>,
    busy: Vec<u32>,
    swept: i64,
    pairs: Vec<PairEnv>,
    events: Vec<Pending>,
    point_missed: Vec<u64>,
    lifelines: u64,
    kept_lives: Vec<Life>,
    kept_sights: Vec<Sight>,
    kept_fates: Vec<Fate>,
}

impl Judge {
    pub fn new(n: usize, settings: &Settings) -> Judge {
        Judge {
            n,
            window: settings.window_ns,
            keep: settings.keep_packets,
            conns: Vec::new(),
            busy: Vec::new(),
            swept: i64::MIN,
            pairs: (0..n * n).map(|_| PairEnv::default()).collect(),
            events: Vec::new(),
            point_missed: vec![0; n],
            lifelines: 0,
            kept_lives: Vec::new(),
            kept_sights: Vec::new(),
            kept_fates: Vec::new(),
        }
    }

    /// One lifeline that left the window. `points` and `ended`: the captures as read so far
    /// (their first and last times, raw) and whether each has ended.
    pub fn take(&mut self, g: Gone<'_>, points: &[Point], ended: &[bool]) {
        let n = self.n;
        let l = g.life;
        let s = g.sights;
        self.lifelines += 1;
        if self.swept == i64::MIN || g.entered - self.swept > self.window {
            self.sweep(g.entered);
        }
        let c = l.conn as usize;
        if self.conns.len() <= c {
            self.conns.resize_with(c + 1, ConnJ::default);
        }
        let mut order = [0usize; MAX_POINTS];
        let k = g.evidence.path(&mut order);
        let path = &mut order[..k];
        if l.dir == 1 {
            path.reverse();
        }
        let path: &[usize] = path;
        let mut fate = Fate::Delivered;
        let t = |p: usize| s[p].seen().then_some(s[p].t);
        // The sightings on the path, and where the path's ends saw it.
        let mut seen = [false; MAX_POINTS];
        for (x, &p) in seen.iter_mut().zip(path) {
            *x = s[p].seen();
        }
        let seen = &seen[..path.len()];
        let fi = seen.iter().position(|&x| x);
        let mut tbuf = [(0usize, 0i64); MAX_POINTS];
        let mut nt = 0;
        for (p, x) in s.iter().enumerate() {
            if x.seen() {
                tbuf[nt] = (p, x.t);
                nt += 1;
            }
        }
        let times = &tbuf[..nt];
        // The earliest sighting (the frame an event names when its point did not see it).
        let p0 = times.iter().min_by_key(|x| x.1).map_or(0, |x| x.0);
        let st = &mut self.conns[c].dirs[l.dir as usize];
        st.judged += 1;
        // Matched by byte coverage: split or merged, by the path as known now.
        let own = times.iter().fold(0u32, |m, &(p, _)| m | 1 << p);
        match coverage::kind(l.whole, own, path) {
            Some("split") => st.split_pieces += 1,
            Some(_) => st.merged_pieces += 1,
            None => {}
        }
        let base = *st.base.get_or_insert(l.seq);
        let rel = |x: u32| u64::from(x.wrapping_sub(base));
        let mut events = Vec::new();
        let mut ev = |kind: &'static str, point: usize, to: Option<usize>, detail: String| {
            events.push(Pending {
                conn: l.conn,
                dir: l.dir,
                kind,
                point,
                to,
                frame: if s[point].seen() { s[point].frame } else { s[p0].frame },
                frame_first: s[0].seen().then_some(s[0].frame),
                seq: rel(l.seq),
                len: l.len,
                detail,
                times: times.to_vec(),
            })
        };
        if let Some(fi) = fi {
            let li = seen.iter().rposition(|&x| x).unwrap_or(fi);
            let dir = l.dir;
            // The smallest raw difference between consecutive points of the path so far.
            let hop = |m: usize| g.evidence.min(dir, path[m], path[m + 1]).unwrap_or(0);
            // Whether point q was capturing at raw time `at`: it had begun, and it had not
            // ended before (a capture still running is capturing).
            let in_span = |q: usize, at: i64| points[q].span.is_some_and(|(a, b)| a <= at && (at <= b || !ended[q]));
            if fi == 0 {
                st.packets += 1;
            }
            if fi == 0 && li == path.len() - 1 {
                st.delivered += 1;
                // The points not on its path as known now that did not see it: if one of them
                // is on the final path, the packet was not delivered there (finish).
                let on_path = path.iter().fold(0u32, |m, &p| m | 1 << p);
                let lacked = (u32::MAX >> (32 - n)) & !on_path & !own;
                if lacked != 0 {
                    let kept = self.keep.then_some(self.kept_fates.len());
                    match st.unsure.iter_mut().find(|x| x.0 == lacked) {
                        Some(x) => {
                            x.1 += 1;
                            x.2.extend(kept);
                        }
                        None => st.unsure.push((lacked, 1, kept.into_iter().collect())),
                    }
                }
            }
            if l.copy && fi > 0 {
                fate = Fate::Duplicated;
            }
            for m in fi + 1..li {
                if !seen[m] {
                    let detail = format!("seen at points {} and {}", path[fi] + 1, path[li] + 1);
                    st.capture_loss += 1;
                    self.point_missed[path[m]] += 1;
                    ev("capture_loss", path[m], None, detail);
                }
            }
            if fi > 0 {
                if l.copy {
                    st.duplicated += 1;
                    ev("duplicated", path[fi], None, format!("a second copy, first seen at point {}", path[fi] + 1));
                } else {
                    let mut at = t(path[fi]).unwrap_or(0);
                    for m in (0..fi).rev() {
                        at -= hop(m);
                        if in_span(path[m], at) {
                            let detail = format!(
                                "arrived at point {} but point {} did not see it leave",
                                path[fi] + 1,
                                path[m] + 1
                            );
                            st.capture_loss += 1;
                            self.point_missed[path[m]] += 1;
                            ev("capture_loss", path[m], None, detail);
                        }
                    }
                }
            }
            if li + 1 < path.len() {
                let at = t(path[li]).unwrap_or(0) + hop(li);
                if in_span(path[li + 1], at) {
                    fate = Fate::Lost;
                    st.lost_on_path += 1;
                    *st.losses.entry((path[li] + 1, path[li + 1] + 1)).or_default() += 1;
                    ev(
                        "lost",
                        path[li],
                        Some(path[li + 1]),
                        format!("seen at point {}, never at point {} (capturing then)", path[li] + 1, path[li + 1] + 1),
                    );
                } else {
                    fate = Fate::OutsideCapture;
                    st.outside_capture += 1;
                }
            }
            if fi < li {
                change(st, &s[path[fi]], &s[path[li]], |kind, detail| ev(kind, path[li], None, detail));
            }
            let (first, last) = (path[0], path[path.len() - 1]);
            let mark = |s: &[Sight]| Mark {
                frame_first_point: s[first].frame,
                frame_last_point: s[last].seen().then_some(s[last].frame),
                frame_point_1: s[0].seen().then_some(s[0].frame),
                seq: rel(l.seq),
                len: l.len,
                first: (first, s[first].t),
                last: s[last].seen().then_some((last, s[last].t)),
            };
            if first != last
                && let (Some(a), Some(b)) = (t(first), t(last))
            {
                let (f, l) = (first as u8, last as u8);
                let k = match st.delays.iter().position(|x| (x.0, x.1) == (f, l)) {
                    Some(k) => k,
                    None => {
                        st.delays.push((f, l, Delays::default()));
                        st.delays.len() - 1
                    }
                };
                st.delays[k].2.push(a, b - a);
                st.arrivals.push(Timed { t: b, kind: 0, idx: g.idx, v: (a, mark(s)) });
            }
            if let Some(a_t) = t(first) {
                let a = rel(l.seq);
                let b = a + u64::from(l.len) + u64::from(l.flags & SYN != 0) + u64::from(l.flags & FIN != 0);
                if !l.copy && (l.len > 0 || l.flags & (SYN | FIN) != 0) {
                    let delivered = t(last).is_some();
                    st.sent.push(Timed { t: a_t, kind: 0, idx: g.idx, v: Sent { a, b, delivered, mark: mark(s) } });
                }
                if first != last
                    && !l.copy
                    && l.len > 0
                    && let Some(arr) = t(last)
                {
                    let v = Rtt::Data { dir: l.dir, sent_at: a_t, a, b: a + u64::from(l.len) };
                    self.conns[c].rtt.push(Timed { t: arr, kind: 0, idx: g.idx, v });
                }
            }
            // An ACK leaving this direction's first point: the other direction's last.
            if l.flags & ACK != 0
                && first != last
                && let Some(left) = t(first)
            {
                let v = Rtt::Ack { dir: 1 - l.dir, ack: l.ack, back: t(last) };
                self.conns[c].acks.push(Timed { t: left, kind: 1, idx: g.idx, v });
            }
        }
        self.events.append(&mut events);
        // The clock samples, every pair of points that saw it.
        for &(i, ti) in times {
            for &(j, tj) in times {
                if i == j {
                    continue;
                }
                let pe = &mut self.pairs[i * n + j];
                let known = g.evidence.min(0, i, j).zip(g.evidence.min(1, j, i));
                match known {
                    Some((f, r)) => {
                        let i_up = i128::from(f) + i128::from(r) > 0;
                        if (l.dir == 0) == i_up {
                            pe.fwd.push(ti, tj - ti);
                        } else {
                            pe.rev.push(ti, ti - tj);
                        }
                    }
                    None => {
                        let u = l.dir as usize * 2;
                        pe.unknown[u].push(ti, tj - ti);
                        pe.unknown[u + 1].push(ti, ti - tj);
                    }
                }
            }
        }
        if self.keep {
            self.kept_lives.push(l);
            self.kept_sights.extend_from_slice(s);
            self.kept_fates.push(fate);
        }
        self.release(c, g.entered);
        let conn = &mut self.conns[c];
        if !conn.busy && conn.pending() {
            conn.busy = true;
            self.busy.push(c as u32);
        }
    }

    /// Every connection's waiting verdicts up to `horizon` (once per window of input time, so
    /// that a connection gone quiet does not hold its last window's packets to the end).
    fn sweep(&mut self, horizon: i64) {
        self.swept = horizon;
        let busy = std::mem::take(&mut self.busy);
        for c in busy {
            self.release(c as usize, horizon);
            let conn = &mut self.conns[c as usize];
            conn.busy = conn.pending();
            if conn.busy {
                self.busy.push(c);
            }
        }
    }

    /// The verdicts that wait for order, of every entry of connection `c` before `horizon`.
    fn release(&mut self, c: usize, horizon: i64) {
        let conn = &mut self.conns[c];
        for d in 0..2u8 {
            let st = &mut conn.dirs[d as usize];
            // Reordering: arrived at the last point after a packet that left the first later.
            while let Some(e) = st.arrivals.pop_before(horizon) {
                let (send, m) = e.v;
                if e.t > st.cur_arr {
                    st.committed = st.committed.max(st.cur_max);
                    st.cur_arr = e.t;
                    st.cur_max = send;
                } else {
                    st.cur_max = st.cur_max.max(send);
                }
                if st.committed > send {
                    st.reordered += 1;
                    self.events.push(pending(
                        c,
                        d,
                        "reordered",
                        m.last.map_or(0, |x| x.0),
                        None,
                        &m,
                        true,
                        "arrived after a packet sent later".into(),
                    ));
                }
            }
            // Retransmissions, in the order they left the first point.
            while let Some(e) = st.sent.pop_before(horizon) {
                let x = e.v;
                if x.a < st.highest {
                    st.retransmissions += 1;
                    st.resent.insert(x.a, x.b);
                    let kind = if st.got.covers(x.a, x.b) {
                        st.spurious += 1;
                        "spurious_retransmission"
                    } else {
                        st.necessary += 1;
                        "necessary_retransmission"
                    };
                    self.events.push(pending(c, d, kind, x.mark.first.0, None, &x.mark, false, String::new()));
                }
                st.highest = st.highest.max(x.b);
                if x.delivered {
                    st.got.insert(x.a, x.b);
                }
            }
        }
        // RTT samples: in the order of the data's last point's clock.
        while let Some(e) = Queue::pop_either_before(&mut conn.rtt, &mut conn.acks, horizon) {
            match e.v {
                Rtt::Data { dir, sent_at, a, b } => {
                    let st = &mut conn.dirs[dir as usize];
                    if !st.resent.overlaps(a, b) {
                        st.waiting.push_back(Waiting { arr: e.t, sent_at, a, b, acks: 0 });
                    }
                }
                Rtt::Ack { dir, ack, back } => {
                    let st = &mut conn.dirs[dir as usize];
                    let base = st.base.unwrap_or(0);
                    let ack = u64::from(ack.wrapping_sub(base));
                    let left = e.t;
                    let (mut rtt, mut recv, mut m) = (0.0, 0.0, 0);
                    let resent = &st.resent;
                    st.waiting.retain_mut(|w| {
                        w.acks += 1;
                        if ack >= w.b {
                            if let Some(back) = back
                                && !resent.overlaps(w.a, w.b)
                            {
                                rtt += (back - w.sent_at) as f64;
                                recv += (left - w.arr) as f64;
                                m += 1;
                            }
                            return false;
                        }
                        w.acks < 256
                    });
                    st.sum_rtt += rtt;
                    st.sum_recv += recv;
                    st.rtt_samples += m;
                }
            }
        }
    }

    /// After the pass: the clocks, then every connection direction's row and the events.
    pub fn finish(mut self, raw: Raw) -> Correlation {
        let n = self.n;
        for c in 0..self.conns.len() {
            self.release(c, i64::MAX);
        }
        // The clock samples of connections whose order was not known when judged: placed by
        // the majority of those whose order is known.
        let mut envs = Vec::with_capacity(n * n);
        for (ij, mut pe) in std::mem::take(&mut self.pairs).into_iter().enumerate() {
            let (i, j) = (ij / n, ij % n);
            if i != j {
                let known: Vec<bool> = raw
                    .evidence
                    .iter()
                    .filter_map(|e| Some(i128::from(e.min(0, i, j)?) + i128::from(e.min(1, j, i)?) > 0))
                    .collect();
                let up = known.iter().filter(|&&x| x).count();
                let majority = up >= known.len() - up;
                let [a_f, a_r, b_f, b_r] = &mut pe.unknown;
                if majority {
                    pe.fwd.absorb(a_f);
                    pe.rev.absorb(b_r);
                } else {
                    pe.fwd.absorb(b_f);
                    pe.rev.absorb(a_r);
                }
            }
            envs.push((pe.fwd, pe.rev));
        }
        let clocks = clock::estimate(n, &raw.given, &mut envs);
        let spans: Vec<Option<(i64, i64)>> =
            raw.points.iter().zip(&clocks).map(|(p, c)| p.span.map(|(a, b)| (c.to_ref(a), c.to_ref(b)))).collect();
        let t0 = spans.iter().flatten().map(|s| s.0).min().unwrap_or(0);
        let nconn = raw.conns.len();
        // Per final connection and direction, its directions as judged.
        let mut parts: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nconn * 2];
        for (made, conn) in self.conns.iter().enumerate() {
            let (fi, flip) = raw.made[made];
            for d in 0..2 {
                if conn.dirs[d].judged > 0 {
                    parts[fi as usize * 2 + (d ^ usize::from(flip))].push((made, d));
                }
            }
        }
        let mut paths: Vec<Vec<usize>> = Vec::with_capacity(nconn * 2);
        for e in &raw.evidence {
            let mut order = [0usize; MAX_POINTS];
            let k = e.path(&mut order);
            let fwd = order[..k].to_vec();
            let mut rev = fwd.clone();
            rev.reverse();
            paths.push(fwd);
            paths.push(rev);
        }
        let mut bases = vec![0u32; nconn * 2];
        let mut min_owd = vec![f64::NAN; nconn * 2];
        let mut sums: Vec<(f64, f64, u64)> = vec![(0.0, 0.0, 0); nconn * 2];
        let mut dirs = Vec::with_capacity(nconn * 2);
        for cd in 0..nconn * 2 {
            let (c, d) = (cd / 2, (cd % 2) as u8);
            let conn = &raw.conns[c];
            let (src, dst) = if d == 0 { (conn.a, conn.b) } else { (conn.b, conn.a) };
            let path = &paths[cd];
            let mut row = CorrDir {
                conn: c + 1,
                dir: dir_name(d),
                src: src.to_string(),
                dst: dst.to_string(),
                translated: conn.translated(),
                path: path.iter().map(|p| (p + 1).to_string()).collect::<Vec<_>>().join("-"),
                packets: 0,
                delivered: 0,
                lost_on_path: 0,
                loss_rate: None,
                losses: Vec::new(),
                capture_loss: 0,
                outside_capture: 0,
                split_pieces: 0,
                merged_pieces: 0,
                duplicated: 0,
                reordered: 0,
                ce_marked: 0,
                window_changed: 0,
                mss_changed: 0,
                dscp_changed: 0,
                ttl_hops: None,
                one_way_delay_ms: DelaySummary::default(),
                queueing_ms: DelaySummary::default(),
                negative_delay: false,
                retransmissions: 0,
                necessary_retransmissions: 0,
                spurious_retransmissions: 0,
                rtt_samples: 0,
                rtt_ms: None,
                rtt_path_share: None,
                rtt_queueing_share: None,
                rtt_receiver_share: None,
            };
            let mut losses: BTreeMap<(usize, usize), u64> = BTreeMap::new();
            let mut delays = Delays::default();
            let ends = path.first().zip(path.last()).map(|(&f, &l)| (f as u8, l as u8));
            let on_path = path.iter().fold(0u32, |m, &p| m | 1 << p);
            for (i, &(made, md)) in parts[cd].iter().enumerate() {
                let st = &mut self.conns[made].dirs[md];
                if i == 0 {
                    bases[cd] = st.base.unwrap_or(0);
                }
                row.packets += st.packets;
                row.delivered += st.delivered;
                row.lost_on_path += st.lost_on_path;
                for (k, v) in &st.losses {
                    *losses.entry(*k).or_default() += v;
                }
                row.capture_loss += st.capture_loss;
                row.outside_capture += st.outside_capture;
                row.split_pieces += st.split_pieces;
                row.merged_pieces += st.merged_pieces;
                row.duplicated += st.duplicated;
                row.reordered += st.reordered;
                row.ce_marked += st.ce_marked;
                row.window_changed += st.window_changed;
                row.mss_changed += st.mss_changed;
                row.dscp_changed += st.dscp_changed;
                row.ttl_hops = match (row.ttl_hops, st.ttl_hops) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                row.retransmissions += st.retransmissions;
                row.necessary_retransmissions += st.necessary;
                row.spurious_retransmissions += st.spurious;
                sums[cd].0 += st.sum_rtt;
                sums[cd].1 += st.sum_recv;
                sums[cd].2 += st.rtt_samples;
                for (f, l, d) in &mut st.delays {
                    if Some((*f, *l)) == ends {
                        delays.absorb(d);
                    }
                }
                for (lacked, k, kept) in &st.unsure {
                    if lacked & on_path != 0 {
                        row.delivered -= k;
                        row.outside_capture += k;
                        for &i in kept {
                            self.kept_fates[i] = Fate::OutsideCapture;
                        }
                    }
                }
            }
            row.losses = losses.into_iter().map(|((from, to), packets)| LossAt { from, to, packets }).collect();
            let judged = row.delivered + row.lost_on_path;
            row.loss_rate = (judged > 0).then(|| row.lost_on_path as f64 / judged as f64);
            if let (Some(&first), Some(&last)) = (path.first(), path.last())
                && first != last
            {
                let (cf, cl) = (clocks[first], clocks[last]);
                let v = delays.summary(|t, dl| cl.to_ref(t + dl) - cf.to_ref(t));
                if let Some((mn, _, _)) = v {
                    min_owd[cd] = mn;
                    row.negative_delay = mn < 0.0;
                    row.one_way_delay_ms = DelaySummary::from_ns(v);
                    row.queueing_ms = DelaySummary::from_ns(v.map(|(a, b, c)| (a - mn, b - mn, c - mn)));
                }
            }
            dirs.push(row);
        }
        // RTT shares, once both directions' smallest delays are known.
        for cd in 0..nconn * 2 {
            let rcd = cd ^ 1;
            let (sum_rtt_raw, sum_recv_raw, m) = sums[cd];
            let path = &paths[cd];
            let (Some(&first), Some(&last)) = (path.first(), path.last()) else { continue };
            if first == last || min_owd[cd].is_nan() || min_owd[rcd].is_nan() || m == 0 {
                continue;
            }
            // Differences on one clock, put on the reference clock (a skew scales them).
            let scale = |p: usize| 1.0 - if clocks[p].skew_applied { clocks[p].skew } else { 0.0 };
            let sum_rtt = sum_rtt_raw * scale(first);
            let sum_r = sum_recv_raw * scale(last);
            let path_delay = min_owd[cd] + min_owd[rcd];
            let sum_path = path_delay * m as f64;
            let sum_q = sum_rtt - sum_r - sum_path;
            let row = &mut dirs[cd];
            if sum_rtt > 0.0 {
                row.rtt_samples = m;
                row.rtt_ms = Some((sum_rtt / m as f64 / 1e3).round() / 1e3);
                let share = |x: f64| Some(((x / sum_rtt) * 1e4).round() / 1e4);
                row.rtt_path_share = share(sum_path);
                row.rtt_queueing_share = share(sum_q);
                row.rtt_receiver_share = share(sum_r);
            }
        }
        // The events, on the reference clock, in time order.
        let mut events: Vec<(u8, CorrEvent)> = std::mem::take(&mut self.events)
            .into_iter()
            .map(|e| {
                let (fi, flip) = raw.made[e.conn as usize];
                let dir = e.dir ^ u8::from(flip);
                let first = e.times.iter().map(|&(p, t)| clocks[p].to_ref(t)).min().unwrap_or(t0);
                let last = paths[fi as usize * 2 + dir as usize].last().map_or(0, |p| p + 1);
                let detail = match e.kind {
                    "spurious_retransmission" => format!("an earlier transmission had reached point {last}"),
                    "necessary_retransmission" => format!("its bytes had not all reached point {last}"),
                    _ => e.detail,
                };
                (
                    dir,
                    CorrEvent {
                        time_s: (first - t0) as f64 * 1e-9,
                        conn: fi as usize + 1,
                        dir: dir_name(dir),
                        kind: e.kind,
                        point: e.point + 1,
                        to: e.to.map(|x| x + 1),
                        frame: e.frame,
                        frame_at_1: e.frame_first,
                        seq: e.seq,
                        len: e.len,
                        detail,
                    },
                )
            })
            .collect();
        events.sort_by(|a, b| a.1.time_s.total_cmp(&b.1.time_s).then(a.1.conn.cmp(&b.1.conn)).then(a.0.cmp(&b.0)));
        let mut lives = std::mem::take(&mut self.kept_lives);
        for l in &mut lives {
            let (fi, flip) = raw.made[l.conn as usize];
            l.conn = fi;
            l.dir ^= u8::from(flip);
        }
        Correlation {
            points: raw.points,
            clocks,
            conns: raw.conns,
            lifelines: self.lifelines,
            lives,
            sights: std::mem::take(&mut self.kept_sights),
            dirs,
            events: events.into_iter().map(|e| e.1).collect(),
            capture_missed: self.point_missed,
            paths,
            t0,
            fates: std::mem::take(&mut self.kept_fates),
            bases,
            min_owd,
        }
    }
}

/// An event of a lifeline whose verdict waited in a heap (`at_last`: its point is where it
/// arrived; else where it left).
#[allow(clippy::too_many_arguments)]
fn pending(
    c: usize,
    d: u8,
    kind: &'static str,
    point: usize,
    to: Option<usize>,
    m: &Mark,
    at_last: bool,
    detail: String,
) -> Pending {
    Pending {
        conn: c as u32,
        dir: d,
        kind,
        point,
        to,
        frame: if at_last { m.frame_last_point.unwrap_or(m.frame_first_point) } else { m.frame_first_point },
        frame_first: m.frame_point_1,
        seq: m.seq,
        len: m.len,
        detail,
        times: std::iter::once(m.first).chain(m.last).collect(),
    }
}

/// What became of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Seen at the last point of its path it reached while the captures ran (or seen at one
    /// point only, on a path of one).
    Delivered,
    /// Lost after the last point that saw it.
    Lost,
    /// Missing downstream only because that capture was not running.
    OutsideCapture,
    /// A copy made on the path.
    Duplicated,
}

impl Fate {
    /// As the outputs write it.
    pub fn name(self) -> &'static str {
        match self {
            Fate::Delivered => "delivered",
            Fate::Lost => "lost",
            Fate::OutsideCapture => "outside_capture",
            Fate::Duplicated => "duplicated",
        }
    }
}

/// What changed between a packet's first and last sighting.
fn change(row: &mut DirJ, a: &Sight, b: &Sight, mut ev: impl FnMut(&'static str, String)) {
    let h = a.ttl.saturating_sub(b.ttl);
    row.ttl_hops = Some(row.ttl_hops.map_or(h, |x| x.max(h)));
    if b.ecn == 3 && a.ecn != 3 {
        row.ce_marked += 1;
        ev("ce_marked", "CE at the last point, not at the first".into());
    }
    if a.win != b.win {
        row.window_changed += 1;
        ev("changed", format!("window field {} became {}", a.win, b.win));
    }
    if a.mss != b.mss {
        row.mss_changed += 1;
        ev("changed", format!("MSS option {} became {}", a.mss, b.mss));
    }
    if a.dscp != b.dscp {
        row.dscp_changed += 1;
        ev("changed", format!("DSCP {} became {}", a.dscp, b.dscp));
    }
}

#[cfg(test)]
mod tests {
    use super::Ranges;

    /// Random insertions against a bitmap of the bytes: the merged ranges cover exactly the
    /// bytes inserted, in order or not (the in-order fast path and the general merge).
    #[test]
    fn ranges_cover_what_was_inserted() {
        let mut x = 7u64;
        let mut rnd = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for round in 0..200 {
            let mut r = Ranges::default();
            let mut bytes = [false; 256];
            let mut next = 0;
            for _ in 0..40 {
                // Mostly in order, as data is; now and then anywhere.
                let a = if round % 2 == 0 && rnd(4) > 0 { next } else { rnd(240) };
                let b = (a + rnd(16)).min(256);
                r.insert(a, b);
                bytes[a as usize..b as usize].iter_mut().for_each(|x| *x = true);
                next = b;
                let starts: Vec<(u64, u64)> = r.0.iter().map(|(s, e)| (*s, *e)).collect();
                assert!(starts.windows(2).all(|w| w[0].1 < w[1].0), "disjoint and apart: {starts:?}");
                for s in 0..256u64 {
                    assert_eq!(r.covers(s, s + 1), bytes[s as usize], "byte {s} in {starts:?}");
                    assert_eq!(r.overlaps(s, s + 1), bytes[s as usize], "byte {s} in {starts:?}");
                }
            }
        }
    }
}

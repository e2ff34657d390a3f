//! Each capture's clock against the first capture's: offset (Paxson's minimum one-way delay
//! both ways) and skew (Moon's lower envelope), with their uncertainties (module doc of
//! `correlate`).

/// Where a capture's clock correction comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// The first capture: the others are put on its clock.
    Reference,
    /// Estimated from the packets.
    Estimated,
    /// Given by the user (`--offset`).
    Given,
    /// Not estimable (no packets matched both ways between this capture and another): times
    /// are taken as they are, and the one-way delays include the unknown offset.
    Unknown,
}

impl ClockSource {
    /// As the outputs write it.
    pub fn name(self) -> &'static str {
        match self {
            ClockSource::Reference => "reference",
            ClockSource::Estimated => "estimated",
            ClockSource::Given => "given",
            ClockSource::Unknown => "unknown",
        }
    }
}

/// A capture's clock: `its time − the first capture's time = offset + skew · (t − t_ref)`.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Where it comes from.
    pub source: ClockSource,
    /// A given offset already taken off the times when reading (ns).
    pub given_ns: i64,
    /// The estimated offset at `t_ref` (ns).
    pub offset_ns: f64,
    /// Half-width of the interval the offset lies in (ns): half the smallest round trip
    /// between the two points (any asymmetry of the smallest delays is within it).
    pub offset_uncertainty_ns: f64,
    /// The time the offset is given at (ns, this capture's clock).
    pub t_ref: i64,
    /// Estimated skew (dimensionless: ns per ns), whether applied or not.
    pub skew: f64,
    /// Its uncertainty: half the directions' slopes' sum (their disagreement) and half their
    /// standard errors about the delays' floor, in quadrature (`correlate` module doc).
    pub skew_uncertainty: f64,
    /// Whether the skew is applied (it exceeds twice its uncertainty).
    pub skew_applied: bool,
    /// Packets the estimate used, each way.
    pub samples: (usize, usize),
}

impl Clock {
    fn reference() -> Clock {
        Clock {
            source: ClockSource::Reference,
            given_ns: 0,
            offset_ns: 0.0,
            offset_uncertainty_ns: 0.0,
            t_ref: 0,
            skew: 0.0,
            skew_uncertainty: 0.0,
            skew_applied: false,
            samples: (0, 0),
        }
    }

    /// The correction at time `t` of this clock (ns).
    pub fn at(&self, t: i64) -> f64 {
        let s = if self.skew_applied { self.skew } else { 0.0 };
        self.offset_ns + s * (t - self.t_ref) as f64
    }

    /// Time `t` of this capture (given offset already removed) on the first capture's clock.
    pub fn to_ref(&self, t: i64) -> i64 {
        t - self.at(t).round() as i64
    }

    /// The whole offset at `t_ref`, the given part included (ns).
    pub fn total_offset_ns(&self) -> f64 {
        self.given_ns as f64 + self.offset_ns
    }
}

/// Delay samples: (time at the first point, delay as the clocks read it), ns.
#[cfg(test)]
pub type Samples = Vec<(i64, i64)>;

/// The lower convex hull of points sorted by time (monotone chain), exact in integers.
pub(super) fn lower_hull(pts: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut h: Vec<(i64, i64)> = Vec::new();
    for &p in pts {
        while h.len() >= 2 {
            let (a, b) = (h[h.len() - 2], h[h.len() - 1]);
            // Remove b when it lies on or above the segment a → p (differences of ns times
            // and delays: i128 holds their products exactly).
            let cross = i128::from(b.0 - a.0) * i128::from(p.1 - a.1) - i128::from(b.1 - a.1) * i128::from(p.0 - a.0);
            if cross <= 0 {
                h.pop();
            } else {
                break;
            }
        }
        h.push(p);
    }
    h
}

/// How many samples an [`Envelope`] holds besides its hull before it folds them in.
const FOLD: usize = 4096;

/// How many time slices [`Slices`] keeps the smallest delay of.
const SLICES: usize = 64;

/// Time slices of equal width, at most `n` of them (the length of the slots their owner keeps
/// one value per slice in): aligned to multiples of their width, a power of two ns that
/// doubles — each pair of aligned slices merged into one — whenever a time no longer fits.
/// The slices therefore depend on the set of times placed, not on their order, and the memory
/// is the `n` slots however many times are placed. [`Slices`] (the floor of the clock
/// samples' delays) and the verdicts' `Sketch` (the one-way delays' median) keep their
/// values in such slices.
#[derive(Debug, Clone, Copy)]
pub(super) struct SliceIndex {
    /// log2 of the width (ns).
    shift: u32,
    /// Index (time >> shift) of the first slot's slice.
    base: i64,
    /// Index of the last occupied slice (`top < base`: none yet).
    top: i64,
}

impl Default for SliceIndex {
    fn default() -> Self {
        SliceIndex { shift: 0, base: i64::MAX, top: i64::MIN }
    }
}

impl SliceIndex {
    /// The slot of time `t` in `slots` (one per slice, the first being the slice `base`),
    /// widening the slices until it fits with every slice occupied so far; `merge(into, from)`
    /// adds the value of a slot into another's (into an empty one, `T::default()`, it must
    /// give the value itself).
    pub(super) fn place<T: Default>(&mut self, t: i64, slots: &mut [T], mut merge: impl FnMut(&mut T, T)) -> usize {
        let n = slots.len();
        let mut i = t >> self.shift;
        while self.top >= self.base && i128::from(self.top.max(i)) - i128::from(self.base.min(i)) >= n as i128 {
            self.widen(slots, &mut merge);
            i = t >> self.shift;
        }
        if self.top < self.base {
            (self.base, self.top) = (i, i);
        } else if i < self.base {
            // The slots past the last occupied one are empty: they come round to the front.
            slots.rotate_right((self.base - i) as usize);
            self.base = i;
        }
        self.top = self.top.max(i);
        (i - self.base) as usize
    }

    /// Doubles the width: each pair of aligned slices becomes one, in place (the slot a slice
    /// goes to is never after its own, and a slot's own value has left it before another
    /// comes in), the values merged in slot order.
    fn widen<T: Default>(&mut self, slots: &mut [T], merge: &mut impl FnMut(&mut T, T)) {
        let nb = self.base >> 1;
        for k in 0..slots.len() {
            let v = std::mem::take(&mut slots[k]);
            let j = (((self.base + k as i64) >> 1) - nb) as usize;
            merge(&mut slots[j], v);
        }
        self.shift += 1;
        self.base = nb;
        self.top >>= 1;
    }

    /// The first time of slot `k`'s slice (ns).
    pub(super) fn start(&self, k: usize) -> i64 {
        (self.base + k as i64) << self.shift
    }

    /// The slices' width (ns).
    pub(super) fn width(&self) -> i64 {
        1i64 << self.shift
    }
}

/// The smallest delay in each of at most [`SLICES`] equal slices of time ([`SliceIndex`]), for
/// the slope's standard error (see [`Slices::slope_se`]). Written here: a least-squares slope
/// with its standard error is a dozen lines, a statistics crate for it is not worth its weight.
#[derive(Debug, Clone)]
struct Slices {
    index: SliceIndex,
    /// Per slice, its smallest (delay, time) (delay first: ties have one answer).
    min: [Option<(i64, i64)>; SLICES],
}

impl Default for Slices {
    fn default() -> Self {
        Slices { index: SliceIndex::default(), min: [None; SLICES] }
    }
}

/// Keeps the smaller of two slices' smallest (delay, time).
fn keep_min(into: &mut Option<(i64, i64)>, from: Option<(i64, i64)>) {
    if let Some(m) = from
        && into.is_none_or(|x| m < x)
    {
        *into = Some(m);
    }
}

impl Slices {
    fn push(&mut self, t: i64, d: i64) {
        let k = self.index.place(t, &mut self.min, keep_min);
        keep_min(&mut self.min[k], Some((d, t)));
    }

    /// The standard error of the least-squares slope through the slices' smallest delays (ns
    /// per s, times in s from `t_ref`): how well the floor of the delays fixes a slope. `None`
    /// with fewer than three slices.
    fn slope_se(&self, t_ref: i64) -> Option<f64> {
        let pts: Vec<(f64, f64)> =
            self.min.iter().flatten().map(|&(d, t)| ((t - t_ref) as f64 * 1e-9, d as f64)).collect();
        let m = pts.len() as f64;
        if pts.len() < 3 {
            return None;
        }
        let (mx, my) = (pts.iter().map(|p| p.0).sum::<f64>() / m, pts.iter().map(|p| p.1).sum::<f64>() / m);
        let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let slope = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
        let ssr: f64 = pts.iter().map(|p| (p.1 - my - slope * (p.0 - mx)).powi(2)).sum();
        Some((ssr / (m - 2.0) / sxx).sqrt())
    }
}

/// The delay samples of one direction between two points, as much of them as the estimate
/// needs: their lower convex hull (Moon's envelope is one of its edges, the smallest delay
/// one of its vertices), their count and the sum of their times. The hull of a set is the
/// hull of its parts' hulls, so the samples are folded into the hull every [`FOLD`] of them:
/// the memory is the hull and that buffer whatever the number of packets (the hull of
/// delays above a floor has a few dozen vertices), and the answer is the one all samples give.
#[derive(Debug, Clone)]
pub struct Envelope {
    hull: Hull,
    slices: Slices,
    n: usize,
    sum_t: i128,
}

impl Default for Envelope {
    fn default() -> Self {
        Envelope::with_fold(FOLD)
    }
}

impl Envelope {
    /// An empty one that folds every `fold` samples (at least 1).
    pub fn with_fold(fold: usize) -> Envelope {
        Envelope { hull: Hull::with_fold(fold), slices: Slices::default(), n: 0, sum_t: 0 }
    }

    /// One sample: (time at the first point, delay as the clocks read it), ns; in any order.
    pub fn push(&mut self, t: i64, d: i64) {
        self.n += 1;
        self.sum_t += i128::from(t);
        self.slices.push(t, d);
        self.hull.push(t, d);
    }

    /// Takes in another envelope's samples: its hull's vertices (the hull of the union is
    /// the hull of the parts' hulls), its count and time sum, and its time slices' smallest
    /// delays (each the smallest of its slice, so the floor is that of all the samples).
    pub fn absorb(&mut self, o: &mut Envelope) {
        if o.is_empty() {
            return;
        }
        self.hull.absorb(&mut o.hull);
        for &(d, t) in o.slices.min.iter().flatten() {
            self.slices.push(t, d);
        }
        self.n += o.n;
        self.sum_t += o.sum_t;
    }

    /// Whether none.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The lower hull of every sample so far, in time order.
    pub fn hull(&mut self) -> &[(i64, i64)] {
        self.hull.vertices()
    }
}

/// Samples a [`Hull`] made by `default()` holds besides its vertices before folding them in.
const HULL_FOLD: usize = 1024;

/// The lower convex hull of a set of (time, value) points, kept in bounded memory: the hull of
/// a set is the hull of its parts' hulls, so the points are folded into it every `fold` of
/// them. The smallest of `α·value + β·time` over the set, for any α > 0, is at one of its
/// vertices: so is the smallest one-way delay on the reference clock, which is such a function
/// of the raw delay and the time (`Clock::to_ref` is linear). [`Envelope`]'s hull, and the
/// verdicts' delay extremes.
#[derive(Debug, Clone)]
pub(super) struct Hull {
    pts: Vec<(i64, i64)>,
    buf: Vec<(i64, i64)>,
    fold: usize,
}

impl Default for Hull {
    fn default() -> Self {
        Hull::with_fold(HULL_FOLD)
    }
}

impl Hull {
    /// An empty one that folds every `fold` points (at least 1).
    pub fn with_fold(fold: usize) -> Hull {
        Hull { pts: Vec::new(), buf: Vec::new(), fold: fold.max(1) }
    }

    pub fn push(&mut self, t: i64, v: i64) {
        self.buf.push((t, v));
        if self.buf.len() >= self.fold {
            self.fold_in();
        }
    }

    fn fold_in(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let mut all = std::mem::take(&mut self.pts);
        all.append(&mut self.buf);
        all.sort_unstable();
        self.pts = lower_hull(&all);
    }

    /// Its vertices, in time order.
    pub fn vertices(&mut self) -> &[(i64, i64)] {
        self.fold_in();
        &self.pts
    }

    /// Takes in another hull's points: its vertices (the hull of the union is the hull of the
    /// parts' hulls).
    pub fn absorb(&mut self, o: &mut Hull) {
        for &(t, v) in o.vertices() {
            self.push(t, v);
        }
    }
}

/// Moon's lower envelope: the hull's edge under the mean time, as (slope ns/s, value at
/// `t_ref` ns), and whether it is a true edge (two hull points or more). Not empty.
fn envelope(e: &mut Envelope, t_ref: i64) -> (f64, f64, bool) {
    let mean = (e.sum_t - i128::from(t_ref) * e.n as i128) as f64 / e.n as f64 * 1e-9;
    let h: Vec<(f64, f64)> = e.hull().iter().map(|&(t, d)| ((t - t_ref) as f64 * 1e-9, d as f64)).collect();
    if h.len() < 2 {
        return (0.0, h[0].1, false);
    }
    let k = h.windows(2).position(|w| w[0].0 <= mean && mean <= w[1].0).unwrap_or(0);
    let (a, b) = (h[k], h[k + 1]);
    let slope = if b.0 > a.0 { (b.1 - a.1) / (b.0 - a.0) } else { 0.0 };
    (slope, a.1 - slope * a.0, true)
}

/// Estimates the clock of point j against point i from the packets seen at both: `fwd` are
/// the packets going i → j as (time at i ns, t_j − t_i ns), `rev` those going j → i as (time
/// at i, t_i − t_j). `None` without packets both ways.
pub fn estimate_pair(fwd: &[(i64, i64)], rev: &[(i64, i64)]) -> Option<Clock> {
    let env = |v: &[(i64, i64)]| {
        let mut e = Envelope::default();
        v.iter().for_each(|&(t, d)| e.push(t, d));
        e
    };
    estimate_envelopes(&mut env(fwd), &mut env(rev))
}

/// [`estimate_pair`] from the two directions' envelopes.
pub fn estimate_envelopes(fwd: &mut Envelope, rev: &mut Envelope) -> Option<Clock> {
    if fwd.is_empty() || rev.is_empty() {
        return None;
    }
    let t_ref = ((fwd.sum_t + rev.sum_t) / (fwd.n + rev.n) as i128) as i64;
    let (af, bf, ef) = envelope(fwd, t_ref);
    let (ar, br, er) = envelope(rev, t_ref);
    // Slopes are ns per s: 1e-9 of them is the dimensionless skew.
    let skew = (af - ar) / 2.0 * 1e-9;
    // Two parts, added in quadrature: the slopes' disagreement (a skew makes them opposite:
    // what is left is an error common to both), and the random error of each slope, which
    // the disagreement does not show when the two errors happen to cancel — the standard
    // error of a slope fitted to the floor of the delays (the smallest in each time slice),
    // half of each since the skew is half the slopes' difference.
    let disagreement = (af + ar) / 2.0;
    let se = fwd.slices.slope_se(t_ref).zip(rev.slices.slope_se(t_ref)).map(|(f, r)| f.hypot(r) / 2.0);
    let skew_uncertainty = disagreement.hypot(se.unwrap_or(0.0)) * 1e-9;
    let skew_applied = ef && er && se.is_some() && skew.abs() > 2.0 * skew_uncertainty;
    // The smallest delay is a vertex of the hull.
    let min = |e: &mut Envelope| e.hull().iter().map(|p| p.1).min().map_or(f64::INFINITY, |d| d as f64);
    let (mf, mr) = (min(fwd), min(rev));
    let (offset_ns, offset_uncertainty_ns) =
        if skew_applied { ((bf - br) / 2.0, (bf + br) / 2.0) } else { ((mf - mr) / 2.0, (mf + mr) / 2.0) };
    Some(Clock {
        source: ClockSource::Estimated,
        given_ns: 0,
        offset_ns,
        offset_uncertainty_ns: offset_uncertainty_ns.max(0.0),
        t_ref,
        skew,
        skew_uncertainty,
        skew_applied,
        samples: (fwd.n, rev.n),
    })
}

/// Every capture's clock against the first one's.
/// `given`: per capture, an offset the user gave; `envs[i * n + j]`: the samples between
/// points i and j (fwd i → j, rev j → i; see `verdict::PairEnv`).
pub(super) fn estimate(n: usize, given: &[Option<i64>], envs: &mut [(Envelope, Envelope)]) -> Vec<Clock> {
    let mut clocks: Vec<Option<Clock>> = vec![None; n];
    clocks[0] = Some(Clock::reference());
    for (p, g) in given.iter().enumerate().skip(1) {
        if let Some(g) = g {
            clocks[p] = Some(Clock { source: ClockSource::Given, given_ns: *g, ..Clock::reference() });
        }
    }
    // Directly against the first capture, then through any capture already placed.
    loop {
        let mut progress = false;
        for j in 1..n {
            if clocks[j].is_some() {
                continue;
            }
            for i in 0..n {
                let Some(ci) = clocks[i] else { continue };
                if i == j {
                    continue;
                }
                let (fwd, rev) = &mut envs[i * n + j];
                if let Some(mut c) = estimate_envelopes(fwd, rev) {
                    // j − ref = (j − i) + (i − ref), both linear in time.
                    c.offset_ns += ci.at(c.t_ref);
                    if ci.skew_applied {
                        c.skew += ci.skew;
                        c.skew_applied = true;
                    }
                    c.offset_uncertainty_ns += ci.offset_uncertainty_ns;
                    clocks[j] = Some(c);
                    progress = true;
                    break;
                }
            }
        }
        if !progress {
            break;
        }
    }
    clocks.into_iter().map(|c| c.unwrap_or(Clock { source: ClockSource::Unknown, ..Clock::reference() })).collect()
}

#[cfg(test)]
mod tests {
    use super::{SLICES, SliceIndex, Slices};

    /// A pseudo-random generator for the tests (64-bit LCG, the high bits).
    fn lcg(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |m| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        }
    }

    /// Times placed in any order give the same slices: the narrowest power-of-two width at
    /// which all fit in the slots, aligned, each slot counting exactly the times of its slice
    /// (widening merged its pairs, a time before the first slice moved them along).
    #[test]
    fn slices_are_the_narrowest_that_fit_whatever_the_order() {
        let mut rnd = lcg(3);
        for round in 0..300 {
            let n = [1usize, 2, 3, 8, 16, 64][round % 6];
            let spread = [1u64, 10, 1000, 1 << 20, 1 << 40][round % 5];
            let k = 1 + rnd(200) as usize;
            let origin = rnd(1 << 41) as i64 - (1 << 40);
            let mut times: Vec<i64> = (0..k).map(|_| origin + rnd(spread) as i64).collect();
            let place = |times: &[i64]| {
                let mut ix = SliceIndex::default();
                let mut slots = vec![0u64; n];
                for &t in times {
                    let at = ix.place(t, &mut slots, |a, b| *a += b);
                    slots[at] += 1;
                }
                (ix, slots)
            };
            let (ix, slots) = place(&times);
            let (lo, hi) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
            let fits = |s: u32| (hi >> s) - (lo >> s) < n as i64;
            assert!(fits(ix.shift) && (ix.shift == 0 || !fits(ix.shift - 1)), "width 2^{} for {lo}..{hi}", ix.shift);
            assert_eq!(ix.start(0), (lo >> ix.shift) << ix.shift, "aligned, the first slice the earliest time's");
            for (j, &c) in slots.iter().enumerate() {
                let (a, b) = (ix.start(j), ix.start(j) + ix.width());
                assert_eq!(c, times.iter().filter(|&&t| a <= t && t < b).count() as u64, "slot {j} of {n}");
            }
            // Another order, the same slices.
            for i in (1..times.len()).rev() {
                times.swap(i, rnd(i as u64 + 1) as usize);
            }
            let (ix2, slots2) = place(&times);
            assert_eq!((ix2.shift, ix2.base, ix2.top, &slots2), (ix.shift, ix.base, ix.top, &slots));
        }
    }

    /// [`Slices`] keeps, per slice, the smallest (delay, time) of its samples.
    #[test]
    fn slices_keep_each_slices_smallest_delay() {
        let mut rnd = lcg(11);
        for _ in 0..100 {
            let mut s = Slices::default();
            let samples: Vec<(i64, i64)> =
                (0..1 + rnd(500)).map(|_| (rnd(1 << 32) as i64, rnd(1000) as i64 - 500)).collect();
            for &(t, d) in &samples {
                s.push(t, d);
            }
            for (j, m) in s.min.iter().enumerate() {
                let (a, b) = (s.index.start(j), s.index.start(j) + s.index.width());
                let want = samples.iter().filter(|x| a <= x.0 && x.0 < b).map(|&(t, d)| (d, t)).min();
                assert_eq!(*m, want, "slice {j} of {SLICES}");
            }
        }
    }
}

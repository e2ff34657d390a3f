//! Each capture's clock against the first capture's: offset (Paxson's minimum one-way delay
//! both ways) and skew (Moon's lower envelope), with their uncertainties (module doc of
//! `correlate`).

use super::stream::{Raw, Settings};

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
    /// Its uncertainty: half the disagreement of the two directions' slopes.
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
pub type Samples = Vec<(i64, i64)>;

/// The lower convex hull of points sorted by x (monotone chain).
fn lower_hull(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut h: Vec<(f64, f64)> = Vec::new();
    for &p in pts {
        while h.len() >= 2 {
            let (a, b) = (h[h.len() - 2], h[h.len() - 1]);
            // Remove b when it lies on or above the segment a → p.
            if (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0) <= 0.0 {
                h.pop();
            } else {
                break;
            }
        }
        h.push(p);
    }
    h
}

/// Moon's lower envelope of (time s, delay ns): the hull's edge under the mean time, as
/// (slope ns/s, value at time 0), and whether it is a true edge (two hull points or more).
fn envelope(pts: &mut [(f64, f64)]) -> (f64, f64, bool) {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mean = pts.iter().map(|p| p.0).sum::<f64>() / pts.len() as f64;
    let h = lower_hull(pts);
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
    if fwd.is_empty() || rev.is_empty() {
        return None;
    }
    let t_ref = {
        let all = fwd.iter().chain(rev).map(|p| p.0 as i128).sum::<i128>();
        (all / (fwd.len() + rev.len()) as i128) as i64
    };
    let pts = |v: &[(i64, i64)]| -> Vec<(f64, f64)> {
        v.iter().map(|&(t, d)| ((t - t_ref) as f64 * 1e-9, d as f64)).collect()
    };
    let (mut f, mut r) = (pts(fwd), pts(rev));
    let (af, bf, ef) = envelope(&mut f);
    let (ar, br, er) = envelope(&mut r);
    // Slopes are ns per s: 1e-9 of them is the dimensionless skew.
    let skew = (af - ar) / 2.0 * 1e-9;
    let skew_uncertainty = (af + ar).abs() / 2.0 * 1e-9;
    let skew_applied = ef && er && skew.abs() > 2.0 * skew_uncertainty;
    let min = |v: &[(f64, f64)]| v.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let (mf, mr) = (min(&f), min(&r));
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
        samples: (fwd.len(), rev.len()),
    })
}

/// The samples between points i and j: per connection, the direction i is upstream of j in is
/// found from the data (module doc, "Path order"); connections seen one way only take the
/// others' majority.
fn samples(raw: &Raw, i: usize, j: usize) -> (Samples, Samples) {
    let n = raw.points.len();
    // Per connection: min(t_j − t_i) of a→b, min(t_i − t_j) of b→a.
    let mut mins = vec![[i64::MAX; 2]; raw.conns.len()];
    for (k, l) in raw.lives.iter().enumerate() {
        let (si, sj) = (&raw.sights[k * n + i], &raw.sights[k * n + j]);
        if si.seen() && sj.seen() {
            let d = if l.dir == 0 { sj.t - si.t } else { si.t - sj.t };
            let m = &mut mins[l.conn as usize][l.dir as usize];
            *m = (*m).min(d);
        }
    }
    let known: Vec<Option<bool>> =
        mins.iter().map(|m| (m[0] != i64::MAX && m[1] != i64::MAX).then(|| m[0] as i128 + m[1] as i128 > 0)).collect();
    let up = known.iter().flatten().filter(|&&x| x).count();
    let down = known.iter().flatten().filter(|&&x| !x).count();
    let majority = up >= down;
    let (mut fwd, mut rev) = (Vec::new(), Vec::new());
    for (k, l) in raw.lives.iter().enumerate() {
        let (si, sj) = (&raw.sights[k * n + i], &raw.sights[k * n + j]);
        if !(si.seen() && sj.seen()) {
            continue;
        }
        let i_up_a2b = known[l.conn as usize].unwrap_or(majority);
        if (l.dir == 0) == i_up_a2b {
            fwd.push((si.t, sj.t - si.t));
        } else {
            rev.push((si.t, si.t - sj.t));
        }
    }
    (fwd, rev)
}

/// Every capture's clock against the first one's.
pub(super) fn estimate(raw: &Raw, _settings: &Settings) -> Vec<Clock> {
    let n = raw.points.len();
    let mut clocks: Vec<Option<Clock>> = vec![None; n];
    clocks[0] = Some(Clock::reference());
    for (p, g) in raw.given.iter().enumerate().skip(1) {
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
                let (fwd, rev) = samples(raw, i, j);
                if let Some(mut c) = estimate_pair(&fwd, &rev) {
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

//! The verdicts, once the clocks are known: each packet's path, delays, losses and changes, and
//! each connection direction's sums (definitions in the module doc of `correlate`).

use std::collections::BTreeMap;

use super::clock::Clock;
use super::rows::{CorrDir, CorrEvent, DelaySummary, LossAt, dir_name};
use super::stream::Raw;
use super::{Correlation, Life, Sight};

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
/// `correlate` takes at most 32 captures (one bit each in the matcher).
const MAX_POINTS: usize = 32;
const FIN: u16 = 0x01;
const ACK: u16 = 0x10;

/// The points a connection's direction passes, upstream first: points that saw none of its
/// packets are not on it; the others are ordered by the majority of its packets' times (both
/// directions, the reverse one counted backwards).
fn path_order(lives: &[u32], all: &[Life], t: &dyn Fn(usize, usize) -> Option<i64>, n: usize) -> Vec<usize> {
    let mut on = vec![false; n];
    // before[i][j]: packets of a→b at i before j (b→a: j before i).
    let mut before = vec![vec![0i64; n]; n];
    let mut times = [None; MAX_POINTS];
    for &k in lives {
        let k = k as usize;
        for (p, x) in times.iter_mut().enumerate().take(n) {
            *x = t(k, p);
        }
        for i in 0..n {
            let Some(ti) = times[i] else { continue };
            on[i] = true;
            for j in 0..n {
                if let Some(tj) = times[j]
                    && i != j
                    && ((all[k].dir == 0 && ti < tj) || (all[k].dir == 1 && ti > tj))
                {
                    before[i][j] += 1;
                }
            }
        }
    }
    let mut pts: Vec<usize> = (0..n).filter(|&p| on[p]).collect();
    // Rank: how many other points each is ahead of.
    let wins = |i: usize| (0..n).filter(|&j| before[i][j] > before[j][i]).count();
    pts.sort_by_key(|&p| (std::cmp::Reverse(wins(p)), p));
    pts
}

/// Judges every packet and connection direction.
pub(super) fn judge(raw: Raw, clocks: Vec<Clock>) -> Correlation {
    let n = raw.points.len();
    let nconn = raw.conns.len();
    // Every sighting on the reference clock.
    let tref: Vec<i64> = raw
        .sights
        .iter()
        .enumerate()
        .map(|(k, s)| if s.seen() { clocks[k % n].to_ref(s.t) } else { i64::MIN })
        .collect();
    let t = |k: usize, p: usize| -> Option<i64> {
        let v = tref[k * n + p];
        (v != i64::MIN).then_some(v)
    };
    let spans: Vec<Option<(i64, i64)>> =
        raw.points.iter().zip(&clocks).map(|(p, c)| p.span.map(|(a, b)| (c.to_ref(a), c.to_ref(b)))).collect();
    let t0 = spans.iter().flatten().map(|s| s.0).min().unwrap_or(0);
    // Per connection and direction, its lifelines (u32, sized exactly: one table of a bulk
    // transfer's packets grown by doubling was copied and faulted in twice).
    let mut count = vec![0usize; nconn * 2];
    for l in &raw.lives {
        count[l.conn as usize * 2 + l.dir as usize] += 1;
    }
    let mut by_dir: Vec<Vec<u32>> = count.iter().map(|&c| Vec::with_capacity(c)).collect();
    for (k, l) in raw.lives.iter().enumerate() {
        by_dir[l.conn as usize * 2 + l.dir as usize].push(k as u32);
    }
    let mut dirs = Vec::new();
    let mut events = Vec::new();
    let mut point_missed = vec![0u64; n];
    let mut paths: Vec<Vec<usize>> = Vec::with_capacity(nconn * 2);
    let mut fates: Vec<Fate> = vec![Fate::Delivered; raw.lives.len()];
    let mut bases = vec![0u32; nconn * 2];
    let mut min_owd = vec![f64::NAN; nconn * 2];
    let mut owds: Vec<Vec<f64>> = vec![Vec::new(); nconn * 2];
    for c in 0..nconn {
        let both: Vec<u32> = by_dir[c * 2].iter().chain(&by_dir[c * 2 + 1]).copied().collect();
        let fwd = path_order(&both, &raw.lives, &t, n);
        let mut rev = fwd.clone();
        rev.reverse();
        paths.push(fwd);
        paths.push(rev);
    }
    // One-way delays first (the smallest of each direction is needed for both directions'
    // RTT shares).
    for cd in 0..nconn * 2 {
        let path = &paths[cd];
        let (Some(&first), Some(&last)) = (path.first(), path.last()) else { continue };
        if first == last {
            continue;
        }
        for &k in &by_dir[cd] {
            if let (Some(a), Some(b)) = (t(k as usize, first), t(k as usize, last)) {
                owds[cd].push((b - a) as f64);
            }
        }
        min_owd[cd] = owds[cd].iter().copied().fold(f64::INFINITY, f64::min);
    }
    for cd in 0..nconn * 2 {
        let (c, d) = (cd / 2, (cd % 2) as u8);
        let conn = &raw.conns[c];
        let (src, dst) = if d == 0 { (conn.a, conn.b) } else { (conn.b, conn.a) };
        let path = paths[cd].clone();
        let lives: &[u32] = &by_dir[cd];
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
            duplicated: 0,
            reordered: 0,
            ce_marked: 0,
            window_changed: 0,
            mss_changed: 0,
            dscp_changed: 0,
            ttl_hops: None,
            one_way_delay_ms: DelaySummary::default(),
            queueing_ms: DelaySummary::default(),
            retransmissions: 0,
            necessary_retransmissions: 0,
            spurious_retransmissions: 0,
            rtt_samples: 0,
            rtt_ms: None,
            rtt_path_share: None,
            rtt_queueing_share: None,
            rtt_receiver_share: None,
        };
        if lives.is_empty() || path.is_empty() {
            dirs.push(row);
            continue;
        }
        // The base of relative sequence numbers: the first packet's (the SYN's) at any point.
        let base = lives
            .iter()
            .min_by_key(|&&k| first_time(&t, k as usize, n))
            .map(|&k| raw.lives[k as usize].seq)
            .unwrap_or(0);
        bases[cd] = base;
        let rel = |s: u32| u64::from(s.wrapping_sub(base));
        let ev = |k: usize, kind: &'static str, point: usize, to: Option<usize>, detail: String| {
            let l = &raw.lives[k];
            let p0 = (0..n).filter(|&p| t(k, p).is_some()).min_by_key(|&p| t(k, p)).unwrap_or(0);
            let frame = if raw.sights[k * n + point].seen() {
                raw.sights[k * n + point].frame
            } else {
                raw.sights[k * n + p0].frame
            };
            CorrEvent {
                time_s: (first_time(&t, k, n) - t0) as f64 * 1e-9,
                conn: c + 1,
                dir: dir_name(d),
                kind,
                point: point + 1,
                to: to.map(|x| x + 1),
                frame,
                seq: rel(l.seq),
                len: l.len,
                detail,
            }
        };
        // Smallest delay between consecutive points of the path (for "was it capturing then").
        let hop_min: Vec<i64> = path
            .windows(2)
            .map(|w| {
                lives
                    .iter()
                    .filter_map(|&k| Some(t(k as usize, w[1])? - t(k as usize, w[0])?))
                    .min()
                    .unwrap_or(0)
                    .max(0)
            })
            .collect();
        let in_span = |p: usize, at: i64| spans[p].is_some_and(|(a, b)| a <= at && at <= b);
        let (first, last) = (path[0], path[path.len() - 1]);
        let mut losses: BTreeMap<(usize, usize), u64> = BTreeMap::new();
        let mut hops: Option<u8> = None;
        let mut seen = [false; MAX_POINTS];
        for &k in lives {
            let k = k as usize;
            let l = &raw.lives[k];
            for (s, &p) in seen.iter_mut().zip(&path) {
                *s = t(k, p).is_some();
            }
            let seen = &seen[..path.len()];
            let Some(fi) = seen.iter().position(|&s| s) else { continue };
            let li = seen.iter().rposition(|&s| s).unwrap_or(fi);
            if fi == 0 {
                row.packets += 1;
            }
            if fi == 0 && li == path.len() - 1 {
                row.delivered += 1;
            }
            fates[k] = if l.copy && fi > 0 { Fate::Duplicated } else { Fate::Delivered };
            // Missed in the middle: the packet passed those points.
            for m in fi + 1..li {
                if !seen[m] {
                    let detail = format!("seen at points {} and {}", path[fi] + 1, path[li] + 1);
                    missed(&mut row, &mut point_missed, &mut events, ev(k, "capture_loss", path[m], None, detail));
                }
            }
            // Not seen upstream of the first sighting.
            if fi > 0 {
                if l.copy {
                    row.duplicated += 1;
                    events.push(ev(
                        k,
                        "duplicated",
                        path[fi],
                        None,
                        format!("a second copy, first seen at point {}", path[fi] + 1),
                    ));
                } else {
                    let mut at = t(k, path[fi]).unwrap_or(0);
                    for m in (0..fi).rev() {
                        at -= hop_min[m];
                        if in_span(path[m], at) {
                            let detail = format!(
                                "arrived at point {} but point {} did not see it leave",
                                path[fi] + 1,
                                path[m] + 1
                            );
                            missed(
                                &mut row,
                                &mut point_missed,
                                &mut events,
                                ev(k, "capture_loss", path[m], None, detail),
                            );
                        }
                    }
                }
            }
            // Not seen downstream of the last sighting.
            if li + 1 < path.len() {
                let at = t(k, path[li]).unwrap_or(0) + hop_min[li];
                if in_span(path[li + 1], at) {
                    fates[k] = Fate::Lost;
                    row.lost_on_path += 1;
                    *losses.entry((path[li] + 1, path[li + 1] + 1)).or_default() += 1;
                    events.push(ev(
                        k,
                        "lost",
                        path[li],
                        Some(path[li + 1]),
                        format!("seen at point {}, never at point {} (capturing then)", path[li] + 1, path[li + 1] + 1),
                    ));
                } else {
                    fates[k] = Fate::OutsideCapture;
                    row.outside_capture += 1;
                }
            }
            // Changes between the first and last sightings.
            if fi < li {
                let (a, b) = (raw.sights[k * raw.points.len() + path[fi]], raw.sights[k * n + path[li]]);
                change(&mut row, &mut hops, &a, &b, |kind, detail| events.push(ev(k, kind, path[li], None, detail)));
            }
        }
        row.ttl_hops = hops;
        row.losses = losses.into_iter().map(|((from, to), packets)| LossAt { from, to, packets }).collect();
        let judged = row.delivered + row.lost_on_path;
        row.loss_rate = (judged > 0).then(|| row.lost_on_path as f64 / judged as f64);
        // Delays.
        let mn = min_owd[cd];
        // The queueing parts are the delays less a constant: the same order, the same picks.
        let v = DelaySummary::pick(&mut owds[cd]);
        row.one_way_delay_ms = DelaySummary::from_ns(v);
        row.queueing_ms = DelaySummary::from_ns(v.map(|(a, b, c)| (a - mn, b - mn, c - mn)));
        // Reordering: arrival at the last point after a later-sent packet's.
        if first != last {
            let mut sent: Vec<(i64, i64, u32)> =
                lives.iter().filter_map(|&k| Some((t(k as usize, first)?, t(k as usize, last)?, k))).collect();
            // Nearly in order already (lifelines are made in time order): the stable sort's
            // runs make that linear. The keys are unique, so the order is the unstable one's.
            sent.sort();
            let mut earliest_later = i64::MAX;
            for &(_, arr, k) in sent.iter().rev() {
                let k = k as usize;
                if arr > earliest_later {
                    row.reordered += 1;
                    events.push(ev(k, "reordered", last, None, "arrived after a packet sent later".into()));
                }
                earliest_later = earliest_later.min(arr);
            }
        }
        // Retransmissions, in the order they left the first point.
        let mut sent: Vec<(i64, usize)> = lives
            .iter()
            .map(|&k| k as usize)
            .filter(|&k| {
                let l = &raw.lives[k];
                !l.copy && (l.len > 0 || l.flags & (SYN | FIN) != 0)
            })
            .filter_map(|k| Some((t(k, first)?, k)))
            .collect();
        sent.sort();
        let mut highest = 0u64;
        let mut delivered = Ranges::default();
        let mut resent = Ranges::default();
        for &(_, k) in &sent {
            let l = &raw.lives[k];
            let a = rel(l.seq);
            let b = a + u64::from(l.len) + u64::from(l.flags & SYN != 0) + u64::from(l.flags & FIN != 0);
            if a < highest {
                row.retransmissions += 1;
                resent.insert(a, b);
                if delivered.covers(a, b) {
                    row.spurious_retransmissions += 1;
                    events.push(ev(
                        k,
                        "spurious_retransmission",
                        first,
                        None,
                        format!("an earlier transmission had reached point {}", last + 1),
                    ));
                } else {
                    row.necessary_retransmissions += 1;
                    events.push(ev(
                        k,
                        "necessary_retransmission",
                        first,
                        None,
                        format!("its bytes had not all reached point {}", last + 1),
                    ));
                }
            }
            highest = highest.max(b);
            if t(k, last).is_some() {
                delivered.insert(a, b);
            }
        }
        // RTT shares: data sent once, delivered, and the first ACK leaving the last point after
        // it that covers it, back at the first point.
        let rcd = c * 2 + (1 - d as usize);
        if first != last && !min_owd[rcd].is_nan() && !mn.is_nan() {
            let mut acks: Vec<(i64, usize)> = by_dir[rcd]
                .iter()
                .map(|&k| k as usize)
                .filter(|&k| raw.lives[k].flags & ACK != 0)
                .filter_map(|k| Some((t(k, last)?, k)))
                .collect();
            acks.sort();
            let mut data: Vec<(i64, usize)> = sent
                .iter()
                .filter(|&&(_, k)| raw.lives[k].len > 0)
                .filter_map(|&(_, k)| Some((t(k, last)?, k)))
                .collect();
            data.sort();
            let (mut sum_rtt, mut sum_path, mut sum_q, mut sum_r, mut m) = (0.0, 0.0, 0.0, 0.0, 0u64);
            let path_delay = mn + min_owd[rcd];
            let mut j = 0;
            for &(arr, k) in &data {
                let l = &raw.lives[k];
                let a = rel(l.seq);
                let b = a + u64::from(l.len);
                if resent.overlaps(a, b) {
                    continue;
                }
                while j < acks.len() && acks[j].0 < arr {
                    j += 1;
                }
                let Some(&(left, ak)) = acks[j..].iter().take(256).find(|&&(_, ak)| rel(raw.lives[ak].ack) >= b) else {
                    continue;
                };
                let (Some(sent_at), Some(back)) = (t(k, first), t(ak, first)) else { continue };
                let out = (arr - sent_at) as f64;
                let recv = (left - arr) as f64;
                let home = (back - left) as f64;
                let rtt = out + recv + home;
                sum_rtt += rtt;
                sum_path += path_delay;
                sum_q += out + home - path_delay;
                sum_r += recv;
                m += 1;
            }
            if m > 0 && sum_rtt > 0.0 {
                row.rtt_samples = m;
                row.rtt_ms = Some((sum_rtt / m as f64 / 1e3).round() / 1e3);
                let share = |x: f64| Some(((x / sum_rtt) * 1e4).round() / 1e4);
                row.rtt_path_share = share(sum_path);
                row.rtt_queueing_share = share(sum_q);
                row.rtt_receiver_share = share(sum_r);
            }
        }
        dirs.push(row);
    }
    events.sort_by(|a, b| a.time_s.total_cmp(&b.time_s).then(a.conn.cmp(&b.conn)));
    let points = raw.points;
    let mut corr = Correlation {
        points,
        clocks,
        conns: raw.conns,
        lives: raw.lives,
        sights: raw.sights,
        dirs,
        events,
        capture_missed: point_missed,
        paths,
        t0,
        fates,
        bases,
        min_owd,
    };
    corr.lives.shrink_to_fit();
    corr
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

/// A capture loss: counted for its direction and for the point (`e.point`, 1-based) that missed it.
fn missed(row: &mut CorrDir, point_missed: &mut [u64], events: &mut Vec<CorrEvent>, e: CorrEvent) {
    row.capture_loss += 1;
    point_missed[e.point - 1] += 1;
    events.push(e);
}

fn first_time(t: &dyn Fn(usize, usize) -> Option<i64>, k: usize, n: usize) -> i64 {
    (0..n).filter_map(|p| t(k, p)).min().unwrap_or(i64::MAX)
}

/// What changed between a packet's first and last sighting.
fn change(row: &mut CorrDir, hops: &mut Option<u8>, a: &Sight, b: &Sight, mut ev: impl FnMut(&'static str, String)) {
    let h = a.ttl.saturating_sub(b.ttl);
    *hops = Some(hops.map_or(h, |x| x.max(h)));
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

//! Byte coverage: the fallback match for a segment that TSO/GSO split or GRO merged between two
//! points (module doc of `correlate`, "Coverage"; `docs/correlate.md`).
//!
//! A data segment cut into pieces between two points (a TSO super-segment at the sender's
//! capture, MSS-sized frames on the wire) or merged from several (GRO at a receiver-side
//! capture) is a lifeline seen at one side only, and its pieces lifelines seen at the other
//! side only. When the first of them leaves the window, the matcher
//! (`stream::Matcher::group`) gathers the candidates from its connection and direction's
//! [`Index`]: the data lifelines in the window not seen at every point that hold any of its
//! bytes or of the bytes of a segment containing it, wherever they entered the window.
//! [`pair`] finds the groups among them:
//! each is a piece of the nearest in time of the longer ones, seen at none of its points,
//! that contain its bytes (its *whole*). [`fold`] makes a group its pieces: every piece takes
//! the whole's sightings at the whole's points (and [`Life::whole`] says which), the whole's
//! own lifeline goes, and bytes of the whole that no piece covers become lifelines seen only
//! where the whole was (the lost pieces, or the pieces a capture missed).
//!
//! TSO at one point and GRO at another cut the same bytes with boundaries neither of which
//! covers the other's: then [`overlap`] finds the leaving lifeline's component of the
//! candidates tied by the bytes they carry at different points, nearest in time first, and
//! [`fold_cuts`] makes each cut of its bytes a lifeline seen where its members were.

use std::collections::VecDeque;

use super::{Life, Sight};

/// The most lifelines looked at, in [`pair`], for one: those overlapping its start that could
/// contain it (a whole and a few pieces, unless many transmissions of the same bytes overlap)
/// and those in one hole of a whole. Past it the lifeline stays as it is: the bound keeps the
/// work linear when the same bytes are sent over and over within the window.
pub(super) const MAX_STEPS: usize = 512;

/// The most candidates the matcher gathers for one lifeline leaving the window: the data
/// lifelines over its bytes and those of the segments containing it ([`Index::overlapping`]).
/// A 64 KiB TSO or GRO segment has about 45 MSS-sized pieces; only the same bytes sent
/// hundreds of times within the window come near it. Past it the lifeline stays as it is (no
/// group): the work per leaving lifeline stays bounded whatever the input.
pub(super) const MAX_CANDIDATES: usize = 8 * MAX_STEPS;

/// One connection (as made) and direction's data lifelines (payload, not a copy) in the window
/// and not yet seen at every point, by sequence number: where byte coverage looks for the
/// members of a group, wherever they entered the window. A lifeline is inserted as it is made
/// and removed once seen at every point (the common case, no offload and no loss: the index
/// then holds only the packets between the first point and the last), once handed over in a
/// group, or when it leaves the window. Ordered by sequence number, not by entry: a whole's
/// pieces can enter the window any number of lifelines after it (a router's queue holding
/// them while the sender's capture sees later wholes), and by sequence number they are next to
/// it. A sorted ring (`VecDeque`, binary search) rather than a B-tree: a transfer's lifelines
/// are inserted at its end and removed near its front (seen at the last point in about the
/// order they were sent): an append, and a binary search and a short move, where a `BTreeMap`
/// cost more (callgrind, the bench pair without offload: `correlate` +8.7 % instructions
/// against +12.4 %; docs/correlate.md, Speed). An insertion or removal elsewhere moves the
/// shorter side: the lifelines between it and an end (a retransmission, a whole's pieces
/// behind the later wholes; at worst the lifelines of one connection and direction in the
/// window, for input in no sequence order at all).
#[derive(Default)]
pub(super) struct Index {
    /// (first byte's sequence number unwrapped, lifeline's index, payload length), sorted.
    by_start: VecDeque<(i64, u64, u32)>,
    /// The last sequence number inserted, raw and unwrapped: the others are unwrapped as the
    /// nearest to it (a window's sequence numbers lie within 2³¹ of each other).
    last: Option<(u32, i64)>,
    /// The longest payload ever inserted: a lifeline holding a given byte starts at most this
    /// far before it.
    longest: u32,
}

impl Index {
    fn unwrap(&self, seq: u32) -> i64 {
        self.last.map_or(0, |(raw, at)| at + i64::from(seq.wrapping_sub(raw) as i32))
    }

    /// Where `(at, idx)` is or would go.
    fn place(&self, at: i64, idx: u64) -> usize {
        self.by_start.partition_point(|&(s, i, _)| (s, i) < (at, idx))
    }

    /// Lifeline `idx`, `len` bytes from `seq`.
    pub fn insert(&mut self, seq: u32, len: u32, idx: u64) {
        let at = self.unwrap(seq);
        self.last = Some((seq, at));
        self.longest = self.longest.max(len);
        if self.by_start.back().is_none_or(|&(s, i, _)| (s, i) < (at, idx)) {
            self.by_start.push_back((at, idx, len));
        } else {
            let k = self.place(at, idx);
            self.by_start.insert(k, (at, idx, len));
        }
    }

    /// Takes lifeline `idx` (from `seq`) out, if it is in.
    pub fn remove(&mut self, seq: u32, idx: u64) {
        let Some(&(s, i, _)) = self.by_start.front() else { return };
        let at = self.unwrap(seq);
        if (s, i) == (at, idx) {
            self.by_start.pop_front();
            return;
        }
        let k = self.place(at, idx);
        if self.by_start.get(k).is_some_and(|&(s, i, _)| (s, i) == (at, idx)) {
            self.by_start.remove(k);
        }
    }

    /// The lifelines holding any byte from `seq0 + from` to `seq0 + to` (exclusive), in
    /// sequence order.
    pub fn overlapping(&self, seq0: u32, from: i64, to: i64) -> impl Iterator<Item = u64> + '_ {
        let at = self.unwrap(seq0);
        let (a, b) = (at + from, at + to);
        let k = self.by_start.partition_point(|&(s, _, _)| s < a - i64::from(self.longest) + 1);
        self.by_start
            .range(k..)
            .take_while(move |&&(s, _, _)| s < b)
            .filter(move |&&(s, _, len)| s + i64::from(len) > a)
            .map(|&(_, i, _)| i)
    }

    /// How many lifelines it holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_start.len()
    }
}

/// One unmatched data lifeline of one connection and direction.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cand {
    /// Its first byte's sequence number, unwrapped (counted along the connection, no wrap).
    pub start: i64,
    /// Payload length (> 0).
    pub len: u32,
    /// The points that saw it (bit p: point p).
    pub points: u32,
    /// Its first sighting's time (ns, on the first capture's clock).
    pub t: i64,
}

impl Cand {
    pub(super) fn end(&self) -> i64 {
        self.start + i64::from(self.len)
    }

    /// Whether `w` could be a whole this is a piece of: longer, containing its bytes, seen at
    /// none of its points, within the window.
    pub(super) fn inside(&self, w: &Cand, window: i64) -> bool {
        w.len > self.len
            && w.start <= self.start
            && self.end() <= w.end()
            && w.points & self.points == 0
            && (w.t - self.t).abs() <= window
    }
}

/// A whole segment and the pieces that cover it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Group {
    /// The whole (index into the candidates).
    pub whole: usize,
    /// Its pieces (indices), in byte order.
    pub pieces: Vec<usize>,
    /// The bytes of the whole no piece covers, `(start, len)`, each hole cut into pieces of the
    /// largest piece's length (the size the whole was cut to; the last one shorter).
    pub missing: Vec<(i64, u32)>,
}

/// Pairs the unmatched data lifelines `c` of one connection and direction whose byte ranges
/// cover each other. Each lifeline is a piece of the lifeline nearest to it in time among those
/// it lies inside ([`Cand::inside`]: longer, containing its bytes, seen at none of its points,
/// within `window` ns) — so that the pieces of a retransmission go to it, not to an earlier
/// transmission of the same bytes that was lost — unless a lifeline is a piece of it (a whole
/// is never a piece). A whole's pieces are taken in byte order (of two that overlap, the first,
/// then the nearest in time); what they leave uncovered is `missing`. A whole with a hole in
/// which lies a lifeline that could have been its piece and is no one's is left alone (the
/// bound stopped that one's search), as is one whose hole holds more than [`MAX_STEPS`]. Work: a sort, then at most [`MAX_STEPS`] candidates looked at per lifeline.
pub(super) fn pair(c: &[Cand], window: i64) -> Vec<Group> {
    let n = c.len();
    // By start, the longer first at one start (a whole before the pieces that begin with it).
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (c[i].start, std::cmp::Reverse(c[i].len), i));
    // Per lifeline, the whole it is nearest in time to, among the lifelines that overlap its
    // start (a sweep in `order`: a whole containing it started before it and ends after its
    // start). The overlapping ones are few (the whole, a piece or two at each side), unlike
    // all those that start within a whole's length before it (a profile of a recording sent
    // with TSO had the earlier search, over those, at 13 % of correlate's CPU time).
    let mut best: Vec<Option<usize>> = vec![None; n];
    sweep(c, &order, |x, active| {
        let me = &c[x];
        best[x] =
            active.iter().copied().filter(|&w| me.inside(&c[w], window)).min_by_key(|&w| ((c[w].t - me.t).abs(), w));
        false
    });
    let mut is_whole = vec![false; n];
    for w in best.iter().flatten() {
        is_whole[*w] = true;
    }
    let mut pieces: Vec<Vec<usize>> = vec![Vec::new(); n];
    for x in 0..n {
        if let Some(w) = best[x]
            && !is_whole[x]
        {
            pieces[w].push(x);
        }
    }
    let mut groups = Vec::new();
    'wholes: for w in 0..n {
        if pieces[w].is_empty() {
            continue;
        }
        let whole = c[w];
        let mut mine = std::mem::take(&mut pieces[w]);
        mine.sort_by_key(|&x| (c[x].start, (c[x].t - whole.t).abs(), x));
        let (mut at, mut kept, mut holes) = (whole.start, Vec::new(), Vec::new());
        for x in mine {
            if c[x].start < at {
                continue;
            }
            if c[x].start > at {
                holes.push((at, c[x].start));
            }
            kept.push(x);
            at = c[x].end();
        }
        if at < whole.end() {
            holes.push((at, whole.end()));
        }
        // A lifeline in a hole that could have been a piece and is none: the bound cut its
        // search short.
        for &(a, b) in &holes {
            let from = order.partition_point(|&i| c[i].start < a);
            let mut steps = order[from..].iter().take_while(|&&i| c[i].start < b);
            if steps.by_ref().take(MAX_STEPS).any(|&i| best[i].is_none() && !is_whole[i] && c[i].inside(&whole, window))
                || steps.next().is_some()
            {
                continue 'wholes;
            }
        }
        let cut = kept.iter().map(|&x| c[x].len).max().unwrap_or(1).max(1);
        let mut missing = Vec::new();
        for (mut a, b) in holes {
            while a < b {
                let len = (b - a).min(i64::from(cut)) as u32;
                missing.push((a, len));
                a += i64::from(len);
            }
        }
        groups.push(Group { whole: w, pieces: kept, missing });
    }
    groups
}

/// A sweep of the candidates `c` in `order` (by start): `visit(x, active)` is given the
/// candidates before `x` that still hold bytes at its start, at most the [`MAX_STEPS`] latest
/// of them (bounded: the one that began first goes), oldest first. Stops, returning true, when
/// `visit` does.
fn sweep(c: &[Cand], order: &[usize], mut visit: impl FnMut(usize, &[usize]) -> bool) -> bool {
    let mut active: Vec<usize> = Vec::new();
    for &x in order {
        active.retain(|&w| c[w].end() > c[x].start);
        if visit(x, &active) {
            return true;
        }
        if active.len() >= MAX_STEPS {
            active.remove(0);
        }
        active.push(x);
    }
    false
}

/// Whether two of the candidates `c` straddle each other ([`Cand::straddles`]): a [`sweep`]
/// by start, each looked at against those that overlap its start.
pub(super) fn any_straddle(c: &[Cand], window: i64) -> bool {
    let mut order: Vec<usize> = (0..c.len()).collect();
    order.sort_by_key(|&i| (c[i].start, i));
    sweep(c, &order, |x, active| active.iter().any(|&w| c[x].straddles(&c[w], window)))
}

/// How many distinct sets of points saw the candidates `c` (counted up to 3).
pub(super) fn point_sets<'a>(c: impl Iterator<Item = &'a Cand>) -> usize {
    let mut sets: Vec<u32> = Vec::with_capacity(3);
    for x in c {
        if !sets.contains(&x.points) {
            sets.push(x.points);
            if sets.len() == 3 {
                break;
            }
        }
    }
    sets.len()
}

/// One lifeline an overlap component is cut into ([`overlap`]): bytes `start .. start + len`
/// and the members that carry them, at most one per point (their point sets are disjoint), in
/// the candidates' order. One member alone: bytes no other point saw.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Cut {
    pub start: i64,
    pub len: u32,
    pub by: Vec<usize>,
}

/// The overlap component of a candidate ([`overlap`]).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Component {
    /// Its members (indices into the candidates), by start.
    pub members: Vec<usize>,
    /// Its bytes, cut where any member begins or ends, in byte order.
    pub cuts: Vec<Cut>,
    /// Whether it must be cut ([`fold_cuts`]): two members that carry the same bytes at
    /// different points overlap without either containing the other (TSO at one point, GRO
    /// with other boundaries at another), or its members were seen at more than two sets of
    /// points (a router's wire segments between a sender's super-segments and a receiver's
    /// merges). Without either, it is a whole and its pieces, which [`pair`] groups.
    pub needs_cuts: bool,
}

impl Cand {
    /// Whether `o` holds some of its bytes at none of its points, within the window: a member
    /// of the same sending seen elsewhere, if nothing nearer in time holds those bytes there.
    fn meets(&self, o: &Cand, window: i64) -> bool {
        self.start < o.end() && o.start < self.end() && self.points & o.points == 0 && (self.t - o.t).abs() <= window
    }

    fn contains(&self, o: &Cand) -> bool {
        self.start <= o.start && o.end() <= self.end()
    }

    /// Whether `o` holds some of its bytes at none of its points, within the window, and
    /// neither holds all of the other's: the same bytes cut with other boundaries.
    pub(super) fn straddles(&self, o: &Cand, window: i64) -> bool {
        self.meets(o, window) && !self.contains(o) && !o.contains(self)
    }
}

/// A union-find over some candidates (`ids`), with the points each set has seen.
struct Sets {
    ids: Vec<usize>,
    parent: Vec<usize>,
    points: Vec<u32>,
}

impl Sets {
    fn new(ids: Vec<usize>, c: &[Cand]) -> Sets {
        Sets { parent: (0..ids.len()).collect(), points: ids.iter().map(|&i| c[i].points).collect(), ids }
    }

    /// The set of candidate `i` (by its place in `ids`: a short list, or all candidates).
    fn find(&mut self, i: usize) -> usize {
        let mut x = if self.ids.get(i) == Some(&i) { i } else { self.ids.iter().position(|&y| y == i).unwrap_or(0) };
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    /// Joins the sets of `a` and `b` unless they saw a common point (`disjoint`) or are one.
    fn join(&mut self, a: usize, b: usize, disjoint: bool) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb || disjoint && self.points[ra] & self.points[rb] != 0 {
            return false;
        }
        let (lo, hi) = (ra.min(rb), ra.max(rb));
        self.parent[hi] = lo;
        self.points[lo] |= self.points[hi];
        true
    }
}

/// The overlap component of candidate `x` among the unmatched data lifelines `c` of one
/// connection and direction (module doc of `correlate`, "Coverage"): the bytes are cut at
/// every candidate's first and last byte; for each cut, the candidates holding it are tied
/// into sendings: each may be tied to the one nearest to it in time at each other point
/// (holding the cut, seen at none of its points, within `window` ns); the ties are made
/// nearest first, never putting two candidates of one point in one sending (so that the merge
/// of a retransmission, nearer to it, goes with the retransmission, and an earlier sending of
/// the same bytes that was lost is left alone). The component is what those
/// ties connect to `x`; its cuts are the sendings of each cut that involve its members
/// (adjacent cuts carried by the same members are one), and, per member, its bytes that no
/// other point carried (one cut per run of them). `None` when `x` is tied to nothing. Work: a
/// sort, then per cut the candidates holding it squared (at most [`MAX_STEPS`] of them: past
/// that, a cut ties nothing).
pub(super) fn overlap(c: &[Cand], x: usize, window: i64) -> Option<Component> {
    let n = c.len();
    let mut bounds: Vec<i64> = c.iter().flat_map(|k| [k.start, k.end()]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (c[i].start, i));
    let mut sets = Sets::new((0..n).collect(), c);
    // Per cut holding two or more sendings' members: (cut's index, its ties).
    let mut tied: Vec<(usize, Vec<(usize, usize)>)> = Vec::new();
    let mut active: Vec<usize> = Vec::new();
    let mut next = 0;
    let mut near: Vec<Vec<usize>> = Vec::new();
    for (k, &a) in bounds.iter().enumerate().take(bounds.len().saturating_sub(1)) {
        active.retain(|&i| c[i].end() > a);
        while next < n && c[order[next]].start == a {
            active.push(order[next]);
            next += 1;
        }
        if active.len() < 2 || active.len() > MAX_STEPS {
            continue;
        }
        // Each one's nearest in time at each other point.
        near.clear();
        for &y in &active {
            let mut best = [usize::MAX; 32];
            for &z in &active {
                if !c[y].meets(&c[z], window) {
                    continue;
                }
                let d = (c[z].t - c[y].t).abs();
                for (p, b) in best.iter_mut().enumerate() {
                    if c[z].points >> p & 1 == 1 && (*b == usize::MAX || (d, z) < ((c[*b].t - c[y].t).abs(), *b)) {
                        *b = z;
                    }
                }
            }
            let mut v: Vec<usize> = best.into_iter().filter(|&b| b != usize::MAX).collect();
            v.sort_unstable();
            v.dedup();
            near.push(v);
        }
        let mut pairs: Vec<(i64, usize, usize)> = Vec::new();
        for (ky, &y) in active.iter().enumerate() {
            for &z in &near[ky] {
                pairs.push(((c[z].t - c[y].t).abs(), y.min(z), y.max(z)));
            }
        }
        if pairs.is_empty() {
            continue;
        }
        pairs.sort_unstable();
        pairs.dedup();
        // The sendings of this cut: joined nearest first, never two members of one point.
        let mut local = Sets::new(active.clone(), c);
        let mut ties = Vec::new();
        for (_, y, z) in pairs {
            if local.join(y, z, true) {
                ties.push((y, z));
                sets.join(y, z, false);
            }
        }
        tied.push((k, ties));
    }
    let root = sets.find(x);
    let mut members: Vec<usize> = (0..n).filter(|&i| sets.find(i) == root).collect();
    if members.len() < 2 {
        return None;
    }
    members.sort_by_key(|&i| (c[i].start, i));
    let mut straddles = false;
    // The cuts carried at several points: per tied cut, its sendings (the ties' sets).
    let mut cuts: Vec<Cut> = Vec::new();
    for (k, ties) in &tied {
        let mut ids: Vec<usize> = ties.iter().flat_map(|&(y, z)| [y, z]).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut local = Sets::new(ids, c);
        for &(y, z) in ties {
            local.join(y, z, false);
            if sets.find(y) == root {
                straddles |= !c[y].contains(&c[z]) && !c[z].contains(&c[y]);
            }
        }
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut seen: Vec<usize> = Vec::new();
        for &(y, z) in ties {
            for i in [y, z] {
                let r = local.find(i);
                match seen.iter().position(|&s| s == r) {
                    Some(g) => groups[g].push(i),
                    None => {
                        seen.push(r);
                        groups.push(vec![i]);
                    }
                }
            }
        }
        let (a, b) = (bounds[*k], bounds[k + 1]);
        for mut by in groups {
            if sets.find(by[0]) != root {
                continue;
            }
            by.sort_unstable();
            by.dedup();
            cuts.push(Cut { start: a, len: (b - a) as u32, by });
        }
    }
    // Each member's bytes carried at its points only.
    let mut held: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
    for u in &cuts {
        for &m in &u.by {
            held[m].push((u.start, u.start + i64::from(u.len)));
        }
    }
    for &m in &members {
        let mut held = std::mem::take(&mut held[m]);
        held.sort_unstable();
        let mut at = c[m].start;
        for (a, b) in held.into_iter().chain([(c[m].end(), c[m].end())]) {
            if a > at {
                cuts.push(Cut { start: at, len: (a - at) as u32, by: vec![m] });
            }
            at = at.max(b);
        }
    }
    cuts.sort_by(|u, v| (u.start, &u.by).cmp(&(v.start, &v.by)));
    // Adjacent cuts carried by the same members are one.
    let mut joined: Vec<Cut> = Vec::with_capacity(cuts.len());
    for u in cuts {
        // The one to join lies among the cuts of the same bytes (at most one per sending).
        match joined.iter_mut().rev().take(MAX_STEPS).find(|v| v.by == u.by) {
            Some(v) if v.start + i64::from(v.len) == u.start => v.len += u.len,
            _ => joined.push(u),
        }
    }
    joined.sort_by(|u, v| (u.start, &u.by).cmp(&(v.start, &v.by)));
    let needs_cuts = straddles || point_sets(members.iter().map(|&i| &c[i])) > 2;
    Some(Component { members, cuts: joined, needs_cuts })
}

const FIN: u16 = 0x01;
const PSH: u16 = 0x08;

/// Folds group `g` of the candidates `c` into its pieces, in byte order: each piece takes the
/// whole's sightings at the whole's points ([`Life::whole`] says which) and keeps its own
/// elsewhere; the bytes no piece covers become lifelines of their own, seen where the whole
/// was. `member(i)` is candidate i's lifeline and its `n` sightings. Returns the new lifelines
/// and their sightings, `n` each, in one vector (one allocation per group).
pub(super) fn fold<'a>(
    g: &Group,
    c: &[Cand],
    n: usize,
    member: impl Fn(usize) -> (&'a Life, &'a [Sight]),
) -> (Vec<Life>, Vec<Sight>) {
    let w = &c[g.whole];
    let (wl, whole_sights) = member(g.whole);
    // (start, lifeline, its candidate, whether the sightings are its own)
    let mut out: Vec<(i64, Life, usize, bool)> = Vec::with_capacity(g.pieces.len() + g.missing.len());
    for &i in &g.pieces {
        let mut l = member(i).0.clone();
        l.whole = w.points;
        out.push((c[i].start, l, i, true));
    }
    for &(start, len) in &g.missing {
        let last = start + i64::from(len) == w.end();
        let l = Life {
            seq: wl.seq.wrapping_add((start - w.start) as u32),
            len,
            flags: if last { wl.flags } else { wl.flags & !(FIN | PSH) },
            copy: false,
            whole: w.points,
            ..wl.clone()
        };
        out.push((start, l, g.whole, false));
    }
    out.sort_by_key(|x| x.0);
    let mut sights = Vec::with_capacity(out.len() * n);
    for &(_, _, i, own) in &out {
        let mine = member(i).1;
        for p in 0..n {
            sights.push(if own && w.points >> p & 1 == 0 { mine[p] } else { whole_sights[p] });
        }
    }
    (out.into_iter().map(|x| x.1).collect(), sights)
}

/// Folds overlap component `g` of the candidates `c` into its cuts, in byte order: each cut is
/// one lifeline, seen at each member's points at that member's sighting ([`Life::whole`]: the
/// points where that member is longer than the cut); its flags are its last member's (FIN and
/// PSH only where the cut ends with that member), its acknowledgment number the first
/// member's. `member(i)` is candidate i's lifeline and its `n` sightings. Returns the new
/// lifelines and their sightings, `n` each.
pub(super) fn fold_cuts<'a>(
    g: &Component,
    c: &[Cand],
    n: usize,
    member: impl Fn(usize) -> (&'a Life, &'a [Sight]),
) -> (Vec<Life>, Vec<Sight>) {
    let mut lives = Vec::with_capacity(g.cuts.len());
    let mut sights = Vec::with_capacity(g.cuts.len() * n);
    for u in &g.cuts {
        let end = u.start + i64::from(u.len);
        let first = member(u.by[0]).0;
        let mut whole = 0;
        let mut flags = first.flags & !(FIN | PSH);
        for &m in &u.by {
            if c[m].start != u.start || c[m].end() != end {
                whole |= c[m].points;
            }
            if c[m].end() == end {
                flags |= member(m).0.flags & (FIN | PSH);
            }
        }
        let at = sights.len();
        sights.extend(std::iter::repeat_n(Sight::NONE, n));
        for &m in &u.by {
            let mine = member(m).1;
            for p in (0..n).filter(|&p| c[m].points >> p & 1 == 1) {
                sights[at + p] = mine[p];
            }
        }
        let m0 = &c[u.by[0]];
        lives.push(Life {
            seq: first.seq.wrapping_add((u.start - m0.start) as u32),
            len: u.len,
            flags,
            copy: false,
            whole,
            ..first.clone()
        });
    }
    (lives, sights)
}

/// How a piece was matched: `split` when the points that saw it only as part of a larger
/// segment (`whole`) are upstream on `path` (its direction's points, upstream first) of those
/// that saw it as itself (`own`), or, for bytes no piece covered (`own` empty), when the whole
/// was seen at the path's first point; `merged` otherwise; `None` when matched whole.
pub fn kind(whole: u32, own: u32, path: &[usize]) -> Option<&'static str> {
    if whole == 0 {
        return None;
    }
    let on = |m: u32| path.iter().position(|&p| m >> p & 1 == 1);
    let split = match (on(whole), on(own & !whole)) {
        (Some(w), Some(o)) => w < o,
        (Some(w), None) => w == 0,
        _ => false,
    };
    Some(if split { "split" } else { "merged" })
}

#[cfg(test)]
mod tests {
    use super::{Cand, Cut, Group, Index, overlap, pair};

    fn over(x: &Index, seq0: u32, from: i64, to: i64) -> Vec<u64> {
        x.overlapping(seq0, from, to).collect()
    }

    /// The index answers by bytes, not by entry: what holds a byte, whatever came in between,
    /// across the sequence numbers' wrap, and no longer once taken out.
    #[test]
    fn the_index_finds_what_holds_the_bytes() {
        let mut x = Index::default();
        let s0 = u32::MAX - 999; // the whole [s0, s0 + 3000) wraps at 1000
        x.insert(s0, 3000, 0);
        // 10 000 lifelines of other bytes in between (later segments of the transfer).
        for i in 0..10_000u32 {
            x.insert(s0.wrapping_add(3000 + 1000 * i), 1000, 1 + u64::from(i));
        }
        for j in 0..3u32 {
            x.insert(s0.wrapping_add(1000 * j), 1000, 20_000 + u64::from(j));
        }
        assert_eq!(x.len(), 10_004);
        // Its bytes: the whole and its pieces, in sequence order; the next segment not.
        assert_eq!(over(&x, s0, 0, 3000), [0, 20_000, 20_001, 20_002]);
        // One byte of a piece (asked from a sequence number past the wrap): it and the whole.
        assert_eq!(over(&x, 500, 0, 1), [0, 20_001]);
        // The last byte of the whole, and the first after it.
        assert_eq!(over(&x, s0, 2999, 3000), [0, 20_002]);
        assert_eq!(over(&x, s0, 3000, 3001), [1]);
        x.remove(0, 20_001);
        x.remove(s0, 0);
        x.remove(s0, 0);
        assert_eq!(over(&x, s0, 0, 3000), [20_000, 20_002]);
        assert_eq!(x.len(), 10_002);
    }

    fn cand(start: i64, len: u32, points: u32, t: i64) -> Cand {
        Cand { start, len, points, t }
    }

    #[test]
    fn a_whole_and_its_pieces_pair() {
        // TSO at point 0: one 3-piece segment; its pieces at point 1, in another order.
        let c = [cand(0, 300, 1, 0), cand(100, 100, 2, 12), cand(0, 100, 2, 10), cand(200, 100, 2, 14)];
        assert_eq!(pair(&c, 1000), vec![Group { whole: 0, pieces: vec![2, 1, 3], missing: vec![] }]);
        // GRO at point 1: pieces at point 0, the merge later at point 1.
        let c = [cand(0, 100, 1, 0), cand(100, 100, 1, 1), cand(0, 200, 2, 30)];
        assert_eq!(pair(&c, 1000), vec![Group { whole: 2, pieces: vec![0, 1], missing: vec![] }]);
    }

    #[test]
    fn what_no_piece_covers_is_missing_in_pieces_of_the_cut_size() {
        // Pieces 2 and 4 of five never arrived, nor the last (shorter) one.
        let c = [cand(0, 450, 1, 0), cand(0, 100, 2, 10), cand(200, 100, 2, 12)];
        let g = pair(&c, 1000);
        assert_eq!(g, vec![Group { whole: 0, pieces: vec![1, 2], missing: vec![(100, 100), (300, 100), (400, 50)] }]);
    }

    #[test]
    fn no_pairing_without_a_smaller_lifeline_elsewhere_in_time() {
        // Same point; the same range (not a cut); beyond the window; sticking out of the whole.
        for c in [
            vec![cand(0, 200, 1, 0), cand(0, 100, 1, 1), cand(100, 100, 1, 2)],
            vec![cand(0, 200, 1, 0), cand(0, 200, 2, 1)],
            vec![cand(0, 200, 1, 0), cand(0, 100, 2, 5000), cand(100, 100, 2, 5000)],
            vec![cand(0, 200, 1, 0), cand(150, 100, 2, 1)],
        ] {
            assert_eq!(pair(&c, 1000), vec![], "{c:?}");
        }
    }

    #[test]
    fn the_piece_nearest_in_time_is_taken_and_used_once() {
        // The same segment sent twice (lost, then resent), each split: each whole takes the
        // pieces of its own transmission.
        let c = [
            cand(0, 200, 1, 0),
            cand(0, 100, 2, 10),
            cand(100, 100, 2, 11),
            cand(0, 200, 1, 500),
            cand(0, 100, 2, 510),
            cand(100, 100, 2, 511),
        ];
        let mut g = pair(&c, 1000);
        g.sort_by_key(|g| g.whole);
        assert_eq!(
            g,
            vec![
                Group { whole: 0, pieces: vec![1, 2], missing: vec![] },
                Group { whole: 3, pieces: vec![4, 5], missing: vec![] }
            ]
        );
    }

    /// A TSO segment lost whole (a router dropped it before it was cut), then resent as two
    /// smaller ones that were cut: the pieces go to the retransmissions, nearer in time, and
    /// the lost original stays one packet (the longest is no longer taken first).
    #[test]
    fn pieces_go_to_the_nearest_whole_not_the_longest() {
        let c = [
            cand(0, 500, 1, 0),
            cand(0, 300, 1, 100),
            cand(300, 200, 1, 101),
            cand(0, 100, 2, 105),
            cand(100, 100, 2, 105),
            cand(200, 100, 2, 106),
            cand(300, 100, 2, 106),
            cand(400, 100, 2, 107),
        ];
        assert_eq!(
            pair(&c, 1000),
            vec![
                Group { whole: 1, pieces: vec![3, 4, 5], missing: vec![] },
                Group { whole: 2, pieces: vec![6, 7], missing: vec![] }
            ]
        );
    }

    /// A whole of many pieces (a thousand one-byte ones) is found by each of them: the search
    /// looks only at what overlaps a piece's start, not at everything a whole's length before.
    #[test]
    fn a_whole_of_many_pieces() {
        let mut c = vec![cand(0, 1000, 1, 0)];
        c.extend((0..1000).map(|i| cand(i, 1, 2, 1)));
        let g = pair(&c, 1000);
        assert_eq!((g.len(), g[0].pieces.len(), g[0].missing.len()), (1, 1000, 0));
    }

    /// The bound: more lifelines overlapping one byte than a search looks at (here the same
    /// bytes seen at a third point, beyond the window) push the whole out of it; its pieces
    /// find no whole and the lifelines stay as they are. The work stays linear.
    #[test]
    fn the_search_is_bounded() {
        let group = |k: usize| {
            let mut c = vec![cand(0, 300, 1, 0)];
            c.extend((0..k).map(|_| cand(0, 300, 4, 5000)));
            c.extend((0..3).map(|i| cand(i * 100, 100, 2, 10)));
            pair(&c, 1000)
        };
        assert_eq!(group(super::MAX_STEPS + 10), vec![]);
        let g = group(super::MAX_STEPS - 10);
        assert_eq!((g.len(), g[0].whole, g[0].pieces.len()), (1, 0, 3));
    }

    fn cuts(c: &[Cand], x: usize) -> Vec<(i64, u32, Vec<usize>)> {
        overlap(c, x, 1000)
            .map_or(vec![], |g| g.cuts.into_iter().map(|Cut { start, len, by }| (start, len, by)).collect())
    }

    /// TSO at point 0 (two super-segments) and GRO at point 1 with other boundaries: neither
    /// side's segments contain the other's; the component is all five, cut at every boundary,
    /// each cut seen at both points; the same whichever member asks.
    #[test]
    fn segments_cut_and_merged_with_other_boundaries_are_one_component() {
        let c = [
            cand(0, 300, 1, 0),
            cand(300, 300, 1, 1),
            cand(0, 200, 2, 10),
            cand(200, 300, 2, 11),
            cand(500, 100, 2, 12),
        ];
        let want = vec![(0, 200, vec![0, 2]), (200, 100, vec![0, 3]), (300, 200, vec![1, 3]), (500, 100, vec![1, 4])];
        for x in 0..5 {
            assert_eq!(cuts(&c, x), want, "asked by {x}");
        }
        let g = overlap(&c, 3, 1000).unwrap();
        assert!(g.needs_cuts);
        assert_eq!(g.members, [0, 2, 3, 1, 4]);
        // A whole and its pieces alone: no cut needed (pair groups them).
        let c = [cand(0, 300, 1, 0), cand(0, 100, 2, 10), cand(100, 200, 2, 11)];
        assert!(!overlap(&c, 0, 1000).unwrap().needs_cuts);
    }

    /// A super-segment lost whole, its bytes resent later with other boundaries and merged
    /// at the receiver with others again: the merges go with the retransmissions (nearer in
    /// time), the lost one is tied to nothing and stays one packet, lost.
    #[test]
    fn retransmitted_bytes_with_new_boundaries_go_with_the_retransmission() {
        let c = [
            cand(0, 300, 1, 0),
            cand(0, 100, 1, 500),
            cand(100, 200, 1, 501),
            cand(0, 200, 2, 510),
            cand(200, 100, 2, 512),
        ];
        assert_eq!(overlap(&c, 0, 1000), None);
        let want = vec![(0, 100, vec![1, 3]), (100, 100, vec![2, 3]), (200, 100, vec![2, 4])];
        assert_eq!(cuts(&c, 1), want);
        assert_eq!(cuts(&c, 4), want);
        // Delivered twice (a spurious retransmission): each merge with its own sending.
        let c = [
            cand(0, 300, 1, 0),
            cand(0, 200, 2, 10),
            cand(200, 100, 2, 11),
            cand(0, 300, 1, 500),
            cand(0, 300, 2, 510),
        ];
        assert_eq!(cuts(&c, 0), vec![(0, 200, vec![0, 1]), (200, 100, vec![0, 2])]);
        assert_eq!(overlap(&c, 3, 1000).map(|g| g.members), Some(vec![3, 4]));
    }

    /// Two sendings of the same bytes, each seen at both points: the later one at point 1 is
    /// nearest in time to the earlier one at point 0, which is taken by its own nearer
    /// sighting; ties made nearest first still pair the later two (a rule that asked each
    /// pair to be each other's nearest left them apart, one lost and one missed).
    #[test]
    fn ties_are_made_nearest_first() {
        let c = [cand(0, 100, 1, 10), cand(0, 100, 2, 11), cand(0, 100, 2, 13), cand(0, 100, 1, 18)];
        assert_eq!(cuts(&c, 3), vec![(0, 100, vec![2, 3])]);
        assert_eq!(cuts(&c, 0), vec![(0, 100, vec![0, 1])]);
    }

    /// A sender's super-segment, a router's wire segments and a receiver's merges of them:
    /// every cut seen at the three points; bytes the receiver never got are a cut of their own
    /// seen upstream only (the lost wire segment, located).
    #[test]
    fn three_points_are_bridged_by_the_wire_segments() {
        let c = [
            cand(0, 400, 1, 0),
            cand(0, 100, 2, 5),
            cand(100, 100, 2, 6),
            cand(200, 100, 2, 7),
            cand(300, 100, 2, 8),
            cand(0, 200, 4, 10),
            cand(300, 100, 4, 11),
        ];
        let g = overlap(&c, 5, 1000).unwrap();
        assert!(g.needs_cuts);
        let got: Vec<_> = g.cuts.into_iter().map(|u| (u.start, u.len, u.by)).collect();
        assert_eq!(
            got,
            vec![(0, 100, vec![0, 1, 5]), (100, 100, vec![0, 2, 5]), (200, 100, vec![0, 3]), (300, 100, vec![0, 4, 6])]
        );
    }

    /// A component spanning many lifelines: 100 super-segments of 300 bytes and 101 merges of
    /// 299 (the last 100), no boundary shared but the ends, asked by the last: one component,
    /// every cut at both points. Where the two sides' boundaries meet, a component ends.
    #[test]
    fn a_component_spans_many_lifelines() {
        let mut c: Vec<Cand> = (0..100).map(|i| cand(i * 300, 300, 1, i)).collect();
        c.extend((0..101).map(|i| cand(i * 299, if i == 100 { 100 } else { 299 }, 2, i + 5)));
        let g = overlap(&c, 200, 1000).unwrap();
        assert_eq!(g.members.len(), 201);
        assert!(g.cuts.iter().all(|u| u.by.len() == 2));
        assert_eq!(g.cuts.iter().map(|u| i64::from(u.len)).sum::<i64>(), 30_000);
        assert_eq!(g.cuts.len(), 200);
        let c =
            [cand(0, 300, 1, 0), cand(300, 300, 1, 1), cand(0, 200, 2, 5), cand(200, 100, 2, 6), cand(300, 300, 2, 7)];
        assert_eq!(overlap(&c, 0, 1000).map(|g| g.members), Some(vec![0, 2, 3]));
        assert_eq!(overlap(&c, 1, 1000).map(|g| g.members), Some(vec![1, 4]));
    }
}

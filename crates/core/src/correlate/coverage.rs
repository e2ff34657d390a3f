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
    let mut active: Vec<usize> = Vec::new();
    for &x in &order {
        let me = &c[x];
        active.retain(|&w| c[w].end() > me.start);
        best[x] = active
            .iter()
            .rev()
            .take(MAX_STEPS)
            .copied()
            .filter(|&w| me.inside(&c[w], window))
            .min_by_key(|&w| ((c[w].t - me.t).abs(), w));
        if active.len() >= MAX_STEPS {
            // Bounded: the one that began first goes.
            active.remove(0);
        }
        active.push(x);
    }
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
    use super::{Cand, Group, Index, pair};

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
}

//! A small sorted set of byte ranges in one direction's sequence space.
//!
//! Used for the holes below the highest byte seen (bytes never captured) and for the bytes the
//! peer reported in SACK blocks. Both stay small in practice (a few ranges per window of
//! loss); the set has a fixed capacity and reports when it had to give up precision, like
//! smoltcp's assembler, instead of growing without bound.

use crate::seq::SeqOff;

/// Sorted, disjoint, non-adjacent half-open ranges `[start, end)`.
#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    ranges: Vec<(SeqOff, SeqOff)>,
}

/// Most ranges a set keeps; past it the lowest range is dropped (see [`RangeSet::insert`]).
pub const MAX_RANGES: usize = 256;

impl RangeSet {
    /// An empty set.
    pub const fn new() -> Self {
        RangeSet { ranges: Vec::new() }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges, in order.
    pub fn ranges(&self) -> &[(SeqOff, SeqOff)] {
        &self.ranges
    }

    /// Total bytes covered.
    pub fn total(&self) -> u64 {
        self.ranges.iter().map(|&(s, e)| (e - s) as u64).sum()
    }

    /// Bytes of `[start, end)` covered by the set.
    pub fn overlap(&self, start: SeqOff, end: SeqOff) -> u64 {
        let mut n = 0;
        for &(s, e) in &self.ranges {
            if s >= end {
                break;
            }
            let lo = s.max(start);
            let hi = e.min(end);
            if hi > lo {
                n += (hi - lo) as u64;
            }
        }
        n
    }

    /// Adds `[start, end)`, merging neighbours. Returns false if the set was full and its lowest
    /// range was dropped to make room (precision lost).
    pub fn insert(&mut self, start: SeqOff, end: SeqOff) -> bool {
        if end <= start {
            return true;
        }
        let (mut s, mut e) = (start, end);
        // Ranges that touch or overlap [s, e) are merged into it.
        let first = self.ranges.partition_point(|&(_, re)| re < s);
        let mut last = first;
        while last < self.ranges.len() && self.ranges[last].0 <= e {
            s = s.min(self.ranges[last].0);
            e = e.max(self.ranges[last].1);
            last += 1;
        }
        self.ranges.splice(first..last, [(s, e)]);
        if self.ranges.len() > MAX_RANGES {
            self.ranges.remove(0);
            return false;
        }
        true
    }

    /// Removes `[start, end)`.
    // The set is empty for almost every segment: that test is inlined, the work is not.
    #[inline]
    pub fn remove(&mut self, start: SeqOff, end: SeqOff) {
        if end <= start || self.ranges.is_empty() {
            return;
        }
        self.remove_slow(start, end);
    }

    fn remove_slow(&mut self, start: SeqOff, end: SeqOff) {
        let mut out = Vec::new();
        let first = self.ranges.partition_point(|&(_, re)| re <= start);
        let mut last = first;
        while last < self.ranges.len() && self.ranges[last].0 < end {
            let (s, e) = self.ranges[last];
            if s < start {
                out.push((s, start));
            }
            if e > end {
                out.push((end, e));
            }
            last += 1;
        }
        self.ranges.splice(first..last, out);
    }

    /// Removes everything below `off`; returns the number of bytes removed.
    #[inline]
    pub fn remove_below(&mut self, off: SeqOff) -> u64 {
        if self.ranges.is_empty() {
            return 0;
        }
        let before = self.total();
        self.remove(SeqOff::MIN, off);
        before - self.total()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slow twin: a plain bitmap over a small universe.
    fn bitmap(set: &RangeSet, n: i64) -> Vec<bool> {
        (0..n).map(|i| set.overlap(SeqOff(i), SeqOff(i + 1)) == 1).collect()
    }

    #[test]
    fn matches_a_bitmap_on_random_operations() {
        let mut next = crate::testutil::rng(0x2545F4914F6CDD1Du64);
        for _ in 0..200 {
            let mut set = RangeSet::default();
            let mut truth = vec![false; 64];
            for _ in 0..30 {
                let a = next(64) as i64;
                let b = (a + next(10) as i64).min(64);
                if next(2) == 0 {
                    set.insert(SeqOff(a), SeqOff(b));
                    truth[a as usize..b as usize].iter_mut().for_each(|x| *x = true);
                } else {
                    set.remove(SeqOff(a), SeqOff(b));
                    truth[a as usize..b as usize].iter_mut().for_each(|x| *x = false);
                }
                assert_eq!(bitmap(&set, 64), truth);
                assert_eq!(set.total(), truth.iter().filter(|x| **x).count() as u64);
                // Disjoint, sorted, not adjacent.
                for w in set.ranges().windows(2) {
                    assert!(w[0].1 < w[1].0);
                }
            }
        }
    }
}

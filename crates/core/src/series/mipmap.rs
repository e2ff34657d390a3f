//! Summaries of a sequence's blocks at every scale (a "mipmap"), so that a fold over any index
//! range of a series costs O(B · levels) rather than O(range): the viewer's zoomed-out figures
//! and panels of a multi-million-packet connection visit a few hundred summaries per pixel
//! column instead of every packet.
//!
//! Written here rather than taken from a crate: the segment-tree crates we looked at fold a
//! range with a fixed operation, and the time-sequence figure needs to prune by a predicate on
//! the summaries (blocks wholly inside, wholly outside or straddling a sequence range) and to
//! see the items of the straddling blocks one by one, in order. It is sixty lines.

/// A summary of consecutive items; `merge` is associative (`self` comes first).
pub trait Summary: Copy {
    /// The summary of `self`'s items followed by `later`'s.
    fn merge(&self, later: &Self) -> Self;
}

/// What to do with a block in [`Mipmap::visit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// Use the block's summary: every item of it counts.
    All,
    /// Skip the block: no item of it counts.
    Nothing,
    /// Look at its smaller blocks (in the end, its items one by one).
    Look,
}

/// Items per block at each level.
const B: usize = 16;

/// Block summaries of `n` items: level 0 holds the summary of each whole block of `B` items,
/// level `l` of each block of `B^(l+1)` (a partial block at the end is never summarised: its
/// items are visited one by one).
#[derive(Clone, Debug)]
pub struct Mipmap<S> {
    levels: Vec<Vec<S>>,
}

/// No items (not derived: that would ask `S: Default`).
impl<S> Default for Mipmap<S> {
    fn default() -> Self {
        Mipmap { levels: Vec::new() }
    }
}

impl<S: Summary> Mipmap<S> {
    /// The summaries of items `0..n`, `item(k)` being item k's own.
    pub fn new(n: usize, item: impl Fn(usize) -> S) -> Mipmap<S> {
        let merge_all = |v: &mut dyn Iterator<Item = S>| v.reduce(|a, b| a.merge(&b));
        let mut levels: Vec<Vec<S>> =
            vec![(0..n / B).filter_map(|b| merge_all(&mut (b * B..(b + 1) * B).map(&item))).collect()];
        while levels[levels.len() - 1].len() >= B {
            let below = &levels[levels.len() - 1];
            let up = below.chunks_exact(B).filter_map(|c| merge_all(&mut c.iter().copied())).collect();
            levels.push(up);
        }
        Mipmap { levels }
    }

    /// Visits items `i..j` in order: for each block wholly inside, `take` decides; a taken
    /// block goes to `on_block`, the items outside taken or skipped blocks to `on_leaf`.
    pub fn visit(
        &self,
        i: usize,
        j: usize,
        take: &impl Fn(&S) -> Take,
        on_block: &mut impl FnMut(&S),
        on_leaf: &mut impl FnMut(usize),
    ) {
        self.go(self.levels.len(), i, j, take, on_block, on_leaf);
    }

    /// `level` 0: items; `level` l: the blocks of `levels[l - 1]`.
    fn go(
        &self,
        level: usize,
        i: usize,
        j: usize,
        take: &impl Fn(&S) -> Take,
        on_block: &mut impl FnMut(&S),
        on_leaf: &mut impl FnMut(usize),
    ) {
        if level == 0 {
            (i..j).for_each(on_leaf);
            return;
        }
        let size = B.pow(level as u32);
        let blocks = &self.levels[level - 1];
        let (bi, bj) = (i.div_ceil(size), (j / size).min(blocks.len()));
        if bi >= bj {
            return self.go(level - 1, i, j, take, on_block, on_leaf);
        }
        self.go(level - 1, i, bi * size, take, on_block, on_leaf);
        for (b, s) in blocks[bi..bj].iter().enumerate() {
            match take(s) {
                Take::All => on_block(s),
                Take::Nothing => {}
                Take::Look => self.go(level - 1, (bi + b) * size, (bi + b + 1) * size, take, on_block, on_leaf),
            }
        }
        self.go(level - 1, bj * size, j, take, on_block, on_leaf);
    }

    /// The summary of items `i..j` (`None` if empty), `item(k)` being item k's own.
    pub fn fold(&self, i: usize, j: usize, item: impl Fn(usize) -> S) -> Option<S> {
        // Both callbacks add to the one accumulator.
        let cell = std::cell::Cell::new(None::<S>);
        let push = |s: S| cell.set(Some(cell.get().map_or(s, |a: S| a.merge(&s))));
        self.visit(i, j, &|_| Take::All, &mut |s| push(*s), &mut |k| push(item(k)));
        cell.get()
    }
}

/// `v.partition_point(pred)` found by galloping from the start (1, 2, 4, ... then a binary
/// search in the last step): O(log d) for an answer d, and it touches memory near the start.
/// Cutting a zoomed-out view of millions of packets into pixel columns searches for each
/// column's end from the previous one's; a plain binary search over the rest of the series
/// takes ~22 cache misses per column, this a few. (Not in std or a crate we use.)
pub fn gallop<T>(v: &[T], pred: impl Fn(&T) -> bool) -> usize {
    let mut lo = 0;
    let mut step = 1;
    while lo + step <= v.len() && pred(&v[lo + step - 1]) {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(v.len());
    lo + v[lo..hi].partition_point(pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gallop_is_partition_point() {
        let v: Vec<u32> = (0..1000).map(|k| k / 3).collect();
        for x in [0, 1, 2, 7, 100, 332, 333, 334, 2000] {
            assert_eq!(gallop(&v, |&y| y < x), v.partition_point(|&y| y < x), "{x}");
        }
        assert_eq!(gallop(&[] as &[u32], |_| true), 0);
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct MinMaxCount(i64, i64, usize, usize);

    impl Summary for MinMaxCount {
        fn merge(&self, l: &Self) -> Self {
            MinMaxCount(self.0.min(l.0), self.1.max(l.1), self.2 + l.2, self.3)
        }
    }

    /// Folds and pruned visits give what a plain scan gives, for ranges across every level's
    /// block edges.
    #[test]
    fn folds_equal_scans() {
        let mut x: u64 = 0x2545f4914f6cdd1d;
        let v: Vec<i64> = (0..70_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 1_000_000) as i64
            })
            .collect();
        let m = Mipmap::new(v.len(), |k| MinMaxCount(v[k], v[k], 1, k));
        let item = |k: usize| MinMaxCount(v[k], v[k], 1, k);
        for (i, j) in [
            (0, 0),
            (0, 1),
            (0, 16),
            (5, 17),
            (15, 257),
            (16, 4096),
            (1, 65_537),
            (4095, 69_999),
            (0, 70_000),
            (333, 40_000),
        ] {
            let want = (i..j).map(item).reduce(|a, b| a.merge(&b));
            assert_eq!(m.fold(i, j, item), want, "{i}..{j}");
            // Only the items in [200k, 800k): blocks wholly inside taken, wholly outside skipped.
            let inside = |lo: i64, hi: i64| lo >= 200_000 && hi < 800_000;
            let take = |s: &MinMaxCount| match (inside(s.0, s.1), s.1 < 200_000 || s.0 >= 800_000) {
                (true, _) => Take::All,
                (_, true) => Take::Nothing,
                _ => Take::Look,
            };
            let (n, mut leaves) = (std::cell::Cell::new(0), Vec::new());
            m.visit(i, j, &take, &mut |s| n.set(n.get() + s.2), &mut |k| {
                if inside(v[k], v[k]) {
                    n.set(n.get() + 1);
                }
                leaves.push(k);
            });
            assert_eq!(n.get(), v[i..j].iter().filter(|&&y| inside(y, y)).count());
            assert!(leaves.is_sorted());
        }
    }
}

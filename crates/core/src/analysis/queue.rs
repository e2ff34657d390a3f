//! The TSvals of an [`super::Outstanding`] awaiting their echo: a few inline, more on the heap.
//!
//! With many connections open at once, every direction with data in flight holds its TSvals
//! awaiting an echo, nearly always one or two (`docs/performance.md`, *concurrent*). Kept
//! inline in the outstanding state's one allocation, they cost no block of their own and no
//! pointer to follow on each packet; past `N` they move to a `VecDeque`, for good (a bulk
//! transfer keeps thousands). Written over std's `VecDeque` because no well-kept crate offers
//! a ring buffer with inline storage that spills; the inline part is a small array, shifted
//! on removal at the front. Its length is a `NonZeroU8` (plus one), whose zero the enum takes
//! for its tag: with `arrayvec`'s `u32` length the queue of two TSvals was 64 bytes and the
//! outstanding state 104, a 112-byte allocation; it is 56 and 96 now.

use std::collections::VecDeque;
use std::num::NonZeroU8;

/// A FIFO: up to `N` elements inline, then on the heap.
#[derive(Debug)]
pub(super) enum Queue<T, const N: usize> {
    /// `items[..len1 - 1]`, oldest first.
    Inline {
        len1: NonZeroU8,
        items: [T; N],
    },
    Heap(VecDeque<T>),
}

impl<T: Copy + Default, const N: usize> Default for Queue<T, N> {
    fn default() -> Self {
        const { assert!(N < u8::MAX as usize, "the inline length is a byte") };
        Queue::Inline { len1: NonZeroU8::MIN, items: [T::default(); N] }
    }
}

impl<T: Copy + Default, const N: usize> Queue<T, N> {
    pub(super) fn len(&self) -> usize {
        match self {
            Queue::Inline { len1, .. } => len1.get() as usize - 1,
            Queue::Heap(q) => q.len(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn get(&self, i: usize) -> Option<&T> {
        match self {
            Queue::Inline { items, .. } => items[..self.len()].get(i),
            Queue::Heap(q) => q.get(i),
        }
    }

    pub(super) fn front(&self) -> Option<&T> {
        self.get(0)
    }

    pub(super) fn back(&self) -> Option<&T> {
        match self {
            Queue::Inline { items, .. } => items[..self.len()].last(),
            Queue::Heap(q) => q.back(),
        }
    }

    pub(super) fn pop_front(&mut self) -> Option<T> {
        match self {
            Queue::Inline { len1, items } => {
                let n = len1.get() as usize - 1;
                let first = *items[..n].first()?;
                items.copy_within(1..n, 0);
                *len1 = NonZeroU8::new(n as u8).expect("n >= 1");
                Some(first)
            }
            Queue::Heap(q) => q.pop_front(),
        }
    }

    pub(super) fn clear(&mut self) {
        match self {
            Queue::Inline { len1, .. } => *len1 = NonZeroU8::MIN,
            Queue::Heap(q) => q.clear(),
        }
    }

    /// The heap queue, the inline elements moved into it when there is no room for one more.
    /// A spilled queue doubles its capacity from `2N` (std's would start at four, then grow).
    fn room(&mut self) -> &mut Self {
        if let Queue::Inline { len1, items } = self
            && len1.get() as usize - 1 == N
        {
            let mut q = VecDeque::with_capacity(2 * N.max(1));
            q.extend(items.iter().copied());
            *self = Queue::Heap(q);
        }
        self
    }

    pub(super) fn push_back(&mut self, x: T) {
        match self.room() {
            Queue::Inline { len1, items } => {
                items[len1.get() as usize - 1] = x;
                *len1 = len1.checked_add(1).expect("below N + 1");
            }
            Queue::Heap(q) => q.push_back(x),
        }
    }

    /// The elements, in order.
    #[cfg(test)]
    pub(super) fn to_vec(&self) -> Vec<T> {
        match self {
            Queue::Inline { items, .. } => items[..self.len()].to_vec(),
            Queue::Heap(q) => q.iter().copied().collect(),
        }
    }

    /// Whether the elements are on the heap.
    #[cfg(test)]
    pub(super) fn spilled(&self) -> bool {
        matches!(self, Queue::Heap(_))
    }
}

#[cfg(test)]
mod tests {
    use super::Queue;

    /// The same answers as a `VecDeque` given the same operations, inline and spilled, the
    /// spill happening on the push that finds no room.
    #[test]
    fn behaves_as_a_deque_across_the_spill() {
        let mut q = Queue::<u32, 2>::default();
        let mut d = std::collections::VecDeque::new();
        let check = |q: &Queue<u32, 2>, d: &std::collections::VecDeque<u32>| {
            assert_eq!(q.to_vec(), d.iter().copied().collect::<Vec<_>>());
            assert_eq!((q.len(), q.is_empty(), q.front(), q.back()), (d.len(), d.is_empty(), d.front(), d.back()));
        };
        for x in [5, 7] {
            q.push_back(x);
            d.push_back(x);
        }
        check(&q, &d);
        assert!(!q.spilled());
        // Inline: removal at the front shifts.
        assert_eq!(q.pop_front(), d.pop_front());
        check(&q, &d);
        for x in [10, 20, 30, 40] {
            q.push_back(x);
            d.push_back(x);
            check(&q, &d);
        }
        assert!(q.spilled());
        while let Some(x) = d.pop_front() {
            assert_eq!(q.pop_front(), Some(x));
            check(&q, &d);
        }
        assert_eq!(q.pop_front(), None);
        q.push_back(1);
        q.clear();
        assert!(q.is_empty() && q.front().is_none() && q.spilled());
        let mut q = Queue::<u32, 3>::default();
        q.push_back(1);
        q.clear();
        assert!(q.is_empty() && !q.spilled());
    }

    /// The inline length's niche holds the enum's tag: two TSvals inline in 56 bytes.
    #[test]
    fn two_tsvals_inline_in_56_bytes() {
        assert_eq!(std::mem::size_of::<Queue<(u32, u64, u64), 2>>(), 56);
    }
}

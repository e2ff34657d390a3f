//! The flow table's hash index: 4-tuple hash → connection index, by open addressing.
//!
//! Written by hand, not hashbrown's `HashTable` (which the flow table used before): with
//! 200,000 connections open at once every lookup missed the caches on the table itself, and
//! hashbrown tells no one where a hash's slots are, so they could not be loaded ahead. Here a
//! hash's first slot is known ([`Index::prefetch`]) and [`crate::pass`] asks for it a few
//! packets early (`docs/performance.md`, *concurrent*).
//!
//! Linear probing over 8-byte slots (eight to a cache line), at most three quarters full,
//! with backward-shift deletion (no tombstones, so a long run never decays into slow probes).

/// The index of an empty slot.
const EMPTY: u32 = u32::MAX;

/// A connection in the index: its number, and 32 bits of its key's hash ([`tag`]), which
/// place it (the low bits) and are compared before its endpoints (held elsewhere, likely not in
/// the caches).
#[derive(Clone, Copy, Debug)]
struct Slot {
    idx: u32,
    tag: u32,
}

const FREE: Slot = Slot { idx: EMPTY, tag: 0 };

/// The 32 bits of a 64-bit hash the index keeps: both halves folded together.
#[inline(always)]
pub(super) fn tag(hash: u64) -> u32 {
    (hash >> 32) as u32 ^ hash as u32
}

#[derive(Default)]
pub(super) struct Index {
    /// A power of two of them, or none before the first insert.
    slots: Vec<Slot>,
    len: usize,
}

impl Index {
    /// Number of connections in it.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// Asks for the cache line of the first slot of `tag` to be loaded (a hint).
    #[inline(always)]
    pub(super) fn prefetch(&self, tag: u32) {
        if let Some(s) = self.slots.get(tag as usize & self.mask()) {
            crate::hint::prefetch(s);
        }
    }

    /// The position of the connection of `tag` for which `eq` holds.
    #[inline(always)]
    fn position(&self, tag: u32, mut eq: impl FnMut(usize) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut i = tag as usize & mask;
        loop {
            let s = self.slots[i];
            if s.idx == EMPTY {
                return None;
            }
            if s.tag == tag && eq(s.idx as usize) {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// The connection of `tag` for which `eq` holds.
    #[inline(always)]
    pub(super) fn find(&self, tag: u32, eq: impl FnMut(usize) -> bool) -> Option<usize> {
        self.position(tag, eq).map(|i| self.slots[i].idx as usize)
    }

    /// Puts connection `idx` in place of the one of `tag` for which `eq` holds, or adds it.
    pub(super) fn replace_or_insert(&mut self, tag: u32, idx: usize, eq: impl FnMut(usize) -> bool) {
        // Each connection keeps its statistics in memory (hundreds of bytes), so 2^32 - 1 of
        // them cannot be held anyway.
        let idx = u32::try_from(idx).ok().filter(|&i| i != EMPTY).expect("fewer than 2^32 - 1 connections");
        if let Some(i) = self.position(tag, eq) {
            self.slots[i] = Slot { idx, tag };
            return;
        }
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        self.place(Slot { idx, tag });
        self.len += 1;
    }

    /// Puts `s` in the first free slot from its own (there is one: the index is never full).
    fn place(&mut self, s: Slot) {
        let mask = self.mask();
        let mut i = s.tag as usize & mask;
        while self.slots[i].idx != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = s;
    }

    fn grow(&mut self) {
        let room = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![FREE; room]);
        for s in old.into_iter().filter(|s| s.idx != EMPTY) {
            self.place(s);
        }
    }

    /// Removes connection `idx`, placed by `tag`; false if it is not in the index.
    pub(super) fn remove(&mut self, tag: u32, idx: usize) -> bool {
        let Some(mut hole) = self.position(tag, |i| i == idx) else { return false };
        // Backward shift: each later slot of the run moves into the hole if its own slot is not
        // between the hole and it, so every connection stays reachable from its own slot.
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let s = self.slots[j];
            if s.idx == EMPTY {
                break;
            }
            let home = s.tag as usize & mask;
            if j.wrapping_sub(home) & mask >= j.wrapping_sub(hole) & mask {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = FREE;
        self.len -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a map, through inserts, replacements and removals that wrap around the end of
    /// the slots and collide on purpose (tags that share their low bits).
    #[test]
    fn agrees_with_a_map_through_collisions_and_removals() {
        let mut index = Index::default();
        let mut map = std::collections::HashMap::new();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut idx = 0;
        for round in 0..20_000 {
            // 300 keys; tags collide in their low bits often (and keys 0..300 share tags in pairs).
            let key = next() % 300;
            let t = ((key / 2) as u32).wrapping_mul(0x9E37_79B9) | 0xF;
            if next() % 3 == 0 {
                if let Some(i) = map.remove(&key) {
                    assert!(index.remove(t, i));
                }
                assert!(!index.remove(t, usize::MAX - 1));
            } else {
                index.replace_or_insert(t, idx, |i| map.get(&key) == Some(&i));
                map.insert(key, idx);
                idx += 1;
            }
            assert_eq!(index.len(), map.len());
            if round % 97 == 0 {
                for k in 0..300 {
                    let t = ((k / 2) as u32).wrapping_mul(0x9E37_79B9) | 0xF;
                    assert_eq!(index.find(t, |i| map.get(&k) == Some(&i)), map.get(&k).copied(), "key {k}");
                }
            }
        }
        assert!(index.slots.len() * 3 >= index.len() * 4);
    }
}

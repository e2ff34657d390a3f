//! Hints to the processor: a cache line loaded ahead of its use.
//!
//! With many connections open at once, each packet's connection (its flow-table entry, its
//! analysis state, its statistics) has left the caches since its last packet, and the pass
//! waits on memory for every one of them. Knowing the next packets of a batch, the analysing
//! thread asks for their connections' memory a few packets ahead ([`crate::pass`]).
//!
//! Written by hand because std's prefetch (`core::intrinsics::prefetch_read_data`) is unstable
//! and no maintained crate wraps the instruction; the one `unsafe` block of the engine's
//! analysis is here.
#![allow(unsafe_code)]

/// Bytes in a cache line on the processors we run on (x86-64).
const LINE: usize = 64;

/// Asks for the cache line holding `p` to be loaded. A hint: it changes no result.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 reads nothing into the program and never faults, whatever the address
    // (Intel SDM, "PREFETCHh"); `_mm_prefetch` is `unsafe` only as a `#[target_feature]`
    // function, and SSE is in every x86-64 processor.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks for every cache line of `*r` to be loaded.
#[inline(always)]
pub(crate) fn prefetch_all<T>(r: &T) {
    let p = (r as *const T).cast::<u8>();
    let mut off = 0;
    while off < size_of::<T>() {
        prefetch(p.wrapping_add(off));
        off += LINE;
    }
}

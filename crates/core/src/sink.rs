//! The consumer side of a pass: [`Sink`], and its combinators.
//!
//! The analysis pushes what it finds into a sink ([`crate::pass::Query::run`] drives it), as
//! ripgrep's searcher pushes matches into its `Sink`: every callback but the ones a consumer uses
//! defaults to doing nothing, and after each packet the sink says whether the pass goes on
//! ([`Sink::after_packet`]: stop early, or fail with an error the pass returns).
//!
//! Combinators: a tuple `(A, B)` feeds two sinks from one pass (nest tuples for more), a
//! `Vec<S>` several of one kind.

use std::io;
use std::path::Path;

use crate::conn::{ConnIdx, ConnInfo};
use crate::event::{At, Event, Evidence, SegmentInfo};

/// A consumer of the analysis. Methods default to doing nothing, so a consumer overrides only
/// what it uses.
///
/// Per packet, a sink is told of the packet's events (if any; a retransmission, hole fill or
/// window probe followed by its [`Sink::evidence`]), then of the packet itself
/// ([`Sink::segment`]), then asked [`Sink::after_packet`].
pub trait Sink {
    /// The pass starts reading a file: connections whose [`ConnInfo::file`] is `file` come from
    /// it (`path` as given, or the ring's file).
    fn file(&mut self, _file: usize, _path: &Path) {}
    /// A new connection was created (id order = call order).
    fn connection(&mut self, _conn: ConnIdx, _info: &ConnInfo) {}
    /// Connection `conn` will be told of a segment soon: a sink whose state per connection is
    /// large may ask for its memory ahead ([`crate::hint`]). A hint: it must change nothing.
    #[inline]
    fn prefetch(&self, _conn: ConnIdx) {}
    /// Every segment, in trace order.
    fn segment(&mut self, _seg: &SegmentInfo) {}
    /// Every event, before the [`SegmentInfo`] of the packet that caused it.
    fn event(&mut self, _at: &At, _ev: &Event) {}
    /// Why the out-of-sequence segment of the event just given (a retransmission, a hole fill,
    /// a zero-window probe) is in its class. Rare: only such segments have one. Only given to a
    /// sink that sets [`Sink::CLASSIFY`].
    fn evidence(&mut self, _at: &At, _why: &Evidence) {}
    /// Whether the sink wants out-of-sequence segments classified: the class in their events
    /// and [`Sink::evidence`]. The classifier's bookkeeping (its RTT estimate, the last
    /// segments sent) costs ~40 instructions a packet, paid only by passes that ask for it.
    const CLASSIFY: bool = false;
    /// Whether the pass goes on after this packet: `Ok(true)` (the default) to go on,
    /// `Ok(false)` when this sink needs no more of the trace, an error to stop the pass and have
    /// it return the error (a failed write). A combinator goes on while any of its parts wants
    /// to, so a sink that said `false` may still be told of packets: it ignores them.
    #[inline]
    fn after_packet(&mut self) -> io::Result<bool> {
        Ok(true)
    }
    /// Whether the sink does enough per segment to be worth a thread of its own when a file is
    /// analysed pipelined: handing every record to another thread costs ~100 instructions a
    /// packet and cross-core traffic. Measured on a bulk transfer: the screen sink (~350
    /// instructions a packet) gains, the statistics sink (~140) does not.
    fn own_thread(&self) -> bool {
        false
    }
    /// Whether [`Sink::join`] can put together sinks that each saw a share of one file's
    /// 4-tuples: a [`crate::pass::Query`] then splits a file alone over several analysing
    /// threads. Implement both or neither.
    const JOINS: bool = false;
    /// Joins the shards' sinks (only called when [`Sink::JOINS`]). `order` lists, for each
    /// connection in order of first appearance in the whole file, the shard it was in; each
    /// shard's own connections are in that order too, numbered from 0. The result is the sink
    /// one thread seeing every packet would hold.
    fn join(parts: Vec<Self>, _order: &[u8]) -> Self
    where
        Self: Sized,
    {
        // Only reached if JOINS is true without join implemented: a bug, caught by the tests
        // of each sink that sets JOINS.
        let n = parts.len();
        parts.into_iter().next().filter(|_| n == 1).expect("Sink::JOINS set without Sink::join")
    }
}

/// The shards' per-connection items in one list, in the order [`Sink::join`] is given: for
/// each connection in order of first appearance, the shard it was in, whose items are in that
/// order too. Each shard must have an item for each of its connections.
pub fn in_order<T>(shards: impl IntoIterator<Item = Vec<T>>, order: &[u8]) -> Vec<T> {
    let mut shards: Vec<_> = shards.into_iter().map(Vec::into_iter).collect();
    order.iter().map(|&s| shards[s as usize].next().expect("the order counts each shard's connections")).collect()
}

/// Two sinks fed from one pass (nest tuples for more).
impl<A: Sink, B: Sink> Sink for (A, B) {
    fn file(&mut self, file: usize, path: &Path) {
        self.0.file(file, path);
        self.1.file(file, path);
    }
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.0.connection(conn, info);
        self.1.connection(conn, info);
    }
    #[inline]
    fn prefetch(&self, conn: ConnIdx) {
        self.0.prefetch(conn);
        self.1.prefetch(conn);
    }
    #[inline]
    fn segment(&mut self, seg: &SegmentInfo) {
        self.0.segment(seg);
        self.1.segment(seg);
    }
    #[inline]
    fn event(&mut self, at: &At, ev: &Event) {
        self.0.event(at, ev);
        self.1.event(at, ev);
    }
    fn evidence(&mut self, at: &At, why: &Evidence) {
        self.0.evidence(at, why);
        self.1.evidence(at, why);
    }
    #[inline]
    fn after_packet(&mut self) -> io::Result<bool> {
        let a = self.0.after_packet()?;
        Ok(self.1.after_packet()? | a)
    }
    fn own_thread(&self) -> bool {
        self.0.own_thread() || self.1.own_thread()
    }
    const JOINS: bool = A::JOINS && B::JOINS;
    const CLASSIFY: bool = A::CLASSIFY || B::CLASSIFY;
    fn join(parts: Vec<Self>, order: &[u8]) -> Self {
        let (a, b): (Vec<A>, Vec<B>) = parts.into_iter().unzip();
        (A::join(a, order), B::join(b, order))
    }
}

/// Several sinks of one kind fed from one pass (the viewer's report: several connections'
/// details from one read of their file).
impl<S: Sink> Sink for Vec<S> {
    fn file(&mut self, file: usize, path: &Path) {
        self.iter_mut().for_each(|s| s.file(file, path));
    }
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.iter_mut().for_each(|s| s.connection(conn, info));
    }
    fn prefetch(&self, conn: ConnIdx) {
        self.iter().for_each(|s| s.prefetch(conn));
    }
    fn segment(&mut self, seg: &SegmentInfo) {
        self.iter_mut().for_each(|s| s.segment(seg));
    }
    fn event(&mut self, at: &At, ev: &Event) {
        self.iter_mut().for_each(|s| s.event(at, ev));
    }
    fn evidence(&mut self, at: &At, why: &Evidence) {
        self.iter_mut().for_each(|s| s.evidence(at, why));
    }
    fn after_packet(&mut self) -> io::Result<bool> {
        let mut more = self.is_empty();
        for s in self.iter_mut() {
            more |= s.after_packet()?;
        }
        Ok(more)
    }
    fn own_thread(&self) -> bool {
        self.iter().any(|s| s.own_thread())
    }
    const CLASSIFY: bool = S::CLASSIFY;
}

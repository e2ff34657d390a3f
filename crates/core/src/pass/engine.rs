//! The engine: one analyzer feeding decoded segments through flow and analysis into a sink,
//! and dropping the state of connections that are over.
//!
//! Memory: the analyzer keeps state per *live* connection. A connection closed (FIN both ways
//! or RST) and silent for [`EVICT_CLOSED_NS`], or silent for [`EVICT_IDLE_NS`], has expired: a
//! later packet on its 4-tuple starts a new connection, and a periodic sweep drops its analysis
//! state (its statistics stay).

use std::io;

use super::count::{FileSummary, count_and_decode, verify_checksums};
use crate::analysis::{At, ConnIdx, Connection, Dir, Event, Settings};
use crate::capture::Record;
use crate::decode::{Checksum, Segment};
use crate::flow::{Ahead, FlowTable};
use crate::sink::Sink;

/// A closed connection silent this long (trace time) is evicted: twice Linux's TIME-WAIT.
pub const EVICT_CLOSED_NS: u64 = 120 * 1_000_000_000;
/// Any connection silent this long is evicted.
pub const EVICT_IDLE_NS: u64 = 3600 * 1_000_000_000;
const _: () = assert!(EVICT_IDLE_NS > EVICT_CLOSED_NS, "`expired` compares with the shorter first");
/// Trace time between two eviction sweeps (a sweep visits every live connection).
const SWEEP_EVERY_NS: u64 = 10 * 1_000_000_000;
/// How many connections ahead the sweep asks for their state.
const SWEEP_AHEAD: usize = 8;

/// The engine: feeds records through decode, flow and analysis into a sink.
pub struct Analyzer<S: Sink> {
    settings: Settings,
    flows: FlowTable,
    /// Analysis state by connection index; `None` once evicted.
    conns: Vec<Option<Box<Connection>>>,
    /// Frame number of each connection's first packet.
    first_frames: Vec<u64>,
    live: Vec<ConnIdx>,
    /// The consumer.
    pub sink: S,
    file: usize,
    /// Counters of the current file.
    pub summary: FileSummary,
    /// When sweeps are due, when this analyzer keeps the schedule itself ([`Analyzer::segment`]).
    clock: SweepClock,
    /// Trace time of the last sweep done.
    swept_ns: u64,
    /// The error the sink stopped the pass with ([`Analyzer::go_on`]).
    failed: Option<io::Error>,
}

impl<S: Sink> Analyzer<S> {
    /// A fresh engine.
    pub fn new(settings: Settings, sink: S) -> Self {
        Analyzer {
            settings,
            flows: FlowTable::default(),
            conns: Vec::new(),
            first_frames: Vec::new(),
            live: Vec::new(),
            sink,
            file: 0,
            summary: FileSummary::default(),
            clock: SweepClock::default(),
            swept_ns: 0,
            failed: None,
        }
    }

    /// Sets the file of the packets analysed next: recorded in new connections
    /// ([`crate::flow::ConnInfo::file`]) and in every [`At`] (a packet's own file).
    pub fn set_file(&mut self, file: usize) {
        self.file = file;
    }

    /// Frame number of each connection's first packet, by index.
    pub fn first_frames(&self) -> &[u64] {
        &self.first_frames
    }

    /// The analysis state of connection `idx`, while held.
    #[cfg(test)]
    pub(crate) fn connection(&self, idx: ConnIdx) -> Option<&Connection> {
        self.conns.get(idx)?.as_deref()
    }

    /// Number of connections whose analysis state is held.
    pub fn live_connections(&self) -> usize {
        self.live.len()
    }

    /// Asks the sink whether the pass goes on after the packet just analysed
    /// ([`Sink::after_packet`]); an error it gives is kept for [`Analyzer::take_failure`].
    #[inline]
    pub fn go_on(&mut self) -> bool {
        match self.sink.after_packet() {
            Ok(more) => more,
            Err(e) => {
                self.failed = Some(e);
                false
            }
        }
    }

    /// The error the sink stopped the pass with, if it did.
    pub fn take_failure(&mut self) -> Option<io::Error> {
        self.failed.take()
    }

    /// Processes one record: counts it in [`Analyzer::summary`], decodes it, analyses it.
    pub fn record(&mut self, rec: &Record<'_>) {
        if let Some(mut seg) = count_and_decode(&mut self.summary, rec) {
            if self.settings.checksums {
                verify_checksums(&mut self.summary, rec, &mut seg);
            }
            self.segment(&seg, rec.frame, rec.ts_ns);
        }
    }

    /// Analyses one decoded segment (frame number and time from its record), after the sweep
    /// due before it, if any.
    pub fn segment(&mut self, seg: &Segment<'_>, frame: u64, ts_ns: u64) {
        let due = self.clock.tick(ts_ns);
        self.segment_after_sweep(due, seg, frame, ts_ns)
    }

    /// [`Analyzer::segment`] with the sweeps scheduled by whoever reads the trace (the reading
    /// thread of a pipelined pass): first the sweep at `swept_ns` if not done yet, the last
    /// one the trace's [`SweepClock`] made due before this packet. An analyzer that sees only
    /// some of a trace's packets (a shard) so sweeps at the same points between its packets as
    /// one analyzer seeing all of them would.
    pub fn segment_after_sweep(&mut self, swept_ns: u64, seg: &Segment<'_>, frame: u64, ts_ns: u64) {
        if swept_ns > self.swept_ns {
            self.sweep(swept_ns);
        }
        // One test of a byte the decoder left alone keeps verification off the per-packet
        // path when it is off (the default).
        if seg.checksum != Checksum::NotVerified {
            return self.verified(seg, frame, ts_ns);
        }
        self.analyse(seg, frame, ts_ns);
    }

    /// Lookups so far that the flow table's one-connection cache did not answer
    /// ([`FlowTable::hashed`]).
    pub fn flows_hashed(&self) -> u64 {
        self.flows.hashed()
    }

    /// The first step of asking for a segment's connection's memory ahead: where the flow
    /// table will look for it ([`FlowTable::prefetch`]). [`Analyzer::prefetch`] comes next,
    /// a few packets later, once that memory is in the caches.
    #[inline]
    pub fn prefetch_flow(&self, seg: &Segment<'_>) -> Option<Ahead> {
        self.flows.prefetch(seg)
    }

    /// Asks for the memory of the connection guessed from `ahead` (its endpoints, its analysis
    /// state and its sink's state) to be loaded, ahead of [`Analyzer::segment_after_sweep`] on
    /// its packet: with many connections open at once each packet's connection has left the
    /// caches, and a few packets of lead hide the wait. A hint: it changes no result. Returns
    /// the connection guessed, for [`Analyzer::prefetch_state`].
    #[inline]
    pub fn prefetch(&self, ahead: Ahead) -> Option<ConnIdx> {
        let idx = self.flows.peek(ahead)?;
        if let Some(Some(conn)) = self.conns.get(idx) {
            crate::hint::prefetch_all::<Connection>(conn);
        }
        self.sink.prefetch(idx);
        Some(idx)
    }

    /// The later steps, once connection `idx`'s state is in the caches: its outstanding
    /// state, then (`deep`) what that points to ([`Connection::prefetch`]).
    #[inline]
    pub fn prefetch_state(&self, idx: ConnIdx, deep: bool) {
        if let Some(Some(conn)) = self.conns.get(idx) {
            conn.prefetch(deep);
        }
    }

    /// Finds or starts the segment's connection and analyses the segment there; returns the
    /// connection's index (0-based) and the segment's direction.
    #[inline(always)]
    fn analyse(&mut self, seg: &Segment<'_>, frame: u64, ts_ns: u64) -> (ConnIdx, Dir) {
        let found = self.flows.lookup(seg).and_then(|(idx, dir)| {
            let conn = self.conns[idx].as_deref()?;
            // Expired is as if already evicted, whenever the sweep comes.
            if expired(conn, ts_ns) {
                return None;
            }
            Some((idx, dir, conn.splits_on(seg, dir, ts_ns, &self.settings)))
        });
        let (idx, dir) = match found {
            Some((idx, dir, None)) => (idx, dir),
            other => {
                let reuse = other.and_then(|(_, _, reason)| reason);
                let (idx, info, dir) = self.flows.insert(seg, self.file, reuse);
                debug_assert_eq!(idx, self.conns.len(), "the table numbers connections as they start");
                self.conns.push(Some(Box::new(Connection::new())));
                self.first_frames.push(frame);
                self.live.push(idx);
                self.sink.connection(idx, &info);
                (idx, dir)
            }
        };
        // The lookup above guarantees the state exists: evicted connections leave the table.
        if let Some(conn) = self.conns[idx].as_deref_mut() {
            let at = At { conn: idx, dir, file: self.file as u32, frame, ts_ns };
            conn.on_segment(seg, at, &self.settings, &mut self.sink);
        }
        (idx, dir)
    }

    /// A segment whose checksums were verified. A damaged one (not offload) cannot be
    /// trusted, so it is not analysed and starts no connection; when its 4-tuple is a live
    /// connection's, it is counted there ([`Event::ChecksumError`]). Any other is analysed,
    /// then counted as verified ([`Event::ChecksumVerified`]).
    #[cold]
    #[inline(never)]
    fn verified(&mut self, seg: &Segment<'_>, frame: u64, ts_ns: u64) {
        if seg.checksum == Checksum::Bad {
            let Some((idx, dir)) = self.flows.lookup(seg) else { return };
            if self.conns[idx].as_deref().is_some_and(|conn| !expired(conn, ts_ns)) {
                self.sink.event(&At { conn: idx, dir, file: self.file as u32, frame, ts_ns }, &Event::ChecksumError);
            }
            return;
        }
        let (idx, dir) = self.analyse(seg, frame, ts_ns);
        let offloaded = seg.checksum == Checksum::Offloaded;
        self.sink.event(
            &At { conn: idx, dir, file: self.file as u32, frame, ts_ns },
            &Event::ChecksumVerified { offloaded },
        );
    }

    /// Drops the analysis state of connections that have expired by trace time `now`.
    ///
    /// Every live connection's state is touched, each a cache miss with many open (200,000 on
    /// the concurrent trace, every 10 s of trace time): the state is asked for
    /// [`SWEEP_AHEAD`] connections ahead, and what it points to half as far ahead, as the pass
    /// asks for its packets' connections ([`crate::hint`]).
    fn sweep(&mut self, now: u64) {
        self.swept_ns = now;
        let (conns, flows, live) = (&mut self.conns, &mut self.flows, &mut self.live);
        let mut kept = 0;
        for i in 0..live.len() {
            if let Some(Some(c)) = live.get(i + SWEEP_AHEAD).map(|&j| conns[j].as_deref()) {
                crate::hint::prefetch_all::<Connection>(c);
            }
            if let Some(Some(c)) = live.get(i + SWEEP_AHEAD / 2).map(|&j| conns[j].as_deref()) {
                c.prefetch(false);
            }
            let idx = live[i];
            let Some(c) = conns[idx].as_deref_mut() else { continue };
            c.release();
            if expired(c, now) {
                flows.remove(idx);
                conns[idx] = None;
            } else {
                live[kept] = idx;
                kept += 1;
            }
        }
        live.truncate(kept);
    }
}

/// When the periodic sweep is due: every `SWEEP_EVERY_NS` of trace time, the latest packet
/// time so far. The reading thread keeps the schedule for shards (`threads::sharded`),
/// so that each sweeps at the same points of the trace as one analyzer would: where time goes
/// back in a capture, what a sweep drops depends on when it runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct SweepClock {
    now_ns: u64,
    last_ns: u64,
}

impl SweepClock {
    /// Counts a packet's time; returns the trace time of the last sweep due before this packet
    /// (0: none), what [`Analyzer::segment_after_sweep`] takes.
    #[inline]
    pub fn tick(&mut self, ts_ns: u64) -> u64 {
        let due = self.last_ns;
        self.now_ns = self.now_ns.max(ts_ns);
        if self.now_ns.saturating_sub(self.last_ns) > SWEEP_EVERY_NS {
            self.last_ns = self.now_ns;
        }
        due
    }
}

/// Whether a connection is finished for good at `now`: closed and silent for
/// [`EVICT_CLOSED_NS`], or silent for [`EVICT_IDLE_NS`]. A later packet on its 4-tuple starts a
/// new connection.
fn expired(c: &Connection, now: u64) -> bool {
    let silent = now.saturating_sub(c.last_ts_ns());
    // One compare per packet in the common case.
    silent > EVICT_CLOSED_NS && (silent > EVICT_IDLE_NS || c.closed())
}

//! The threads of a pass over one file: a reading thread that decodes records into batches,
//! and one analysing thread ([`pipelined`], plus one for a heavy sink) or several, each with
//! the connections of its share of the 4-tuples ([`sharded`]).

use std::io;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::mpsc;

use super::count::{FileSummary, count_and_decode_into, open, read_records, verify_checksums};
use super::engine::{Analyzer, SweepClock};
use crate::analysis::{At, ConnIdx, Event, Evidence, SegmentInfo, Settings};
use crate::capture::{CaptureError, CaptureReader};
use crate::decode::Segment;
use crate::flow::{ConnInfo, FlowKey};
use crate::sink::Sink;

/// How many packets ahead the analysing thread asks for a packet's connection's state
/// ([`Analyzer::prefetch`]; where the flow table will look for it twice as far ahead). 8 beat
/// 16 by 5 % in CPU time on the concurrent trace.
const AHEAD: usize = 8;

/// Segments handed from the reading thread to the analysing thread at a time.
const BATCH: usize = 4096;

/// Segments whose records are handed from the analysing thread to the sink's at a time (~140
/// bytes a record). 4,096 rather than 1,024: a quarter of the hand-overs, each a thread woken,
/// and the `segments` export of the bulk trace 3 % faster in wall time for the same CPU time
/// (docs/performance.md#exports-and-python). The unit tests hand over 1,024 at a time, so
/// that their traces (~2,000 packets) take more than one batch.
pub(super) const SAID_BATCH: usize = if cfg!(test) { 1024 } else { 4096 };

/// A decoded segment with its frame number and time, detached from the capture buffer.
#[derive(Clone, Copy)]
struct Decoded {
    seg: Segment<'static>,
    frame: u64,
    ts_ns: u64,
    /// Trace time of the last sweep due before this packet ([`SweepClock`]).
    swept_ns: u64,
}

/// Segments handed from the reading thread to an analysing one: `slots[..len]`. The slots are
/// made once and decoded into in place ([`decode::decode_into`]), never cleared nor pushed:
/// a fresh value pushed and then filled in cost a copy of it a packet.
struct Batch {
    slots: Vec<Decoded>,
    len: usize,
}

impl Batch {
    fn new() -> Batch {
        let blank = Decoded { seg: Segment::EMPTY, frame: 0, ts_ns: 0, swept_ns: 0 };
        Batch { slots: vec![blank; BATCH], len: 0 }
    }

    fn decoded(&self) -> &[Decoded] {
        &self.slots[..self.len]
    }

    /// Empties it for reuse (the slots stay, to be decoded into again).
    fn clear(&mut self) {
        self.len = 0;
    }

    /// The first free slot (there is one: a full batch is handed on at once).
    fn free(&mut self) -> &mut Decoded {
        &mut self.slots[self.len]
    }
}

/// Analyses one file in two threads: one reads and decodes records, the other runs flow and
/// analysis on batches of decoded segments, plus a third for the sink if it asks for one
/// ([`Sink::own_thread`]), so a single large file uses two cores or more (several files are
/// better spread over the cores one thread each). The answer is the one a single thread gives
/// (a test checks it). Returns the file's summary, the sink, and the error the sink stopped
/// the pass with, if any.
pub(crate) fn pipelined<S: Sink + Send>(
    path: &Path,
    file: usize,
    settings: Settings,
    progress: &(dyn Fn(u64, u64) + Sync),
    mut sink: S,
) -> (FileSummary, S, Option<io::Error>) {
    let (summary, reader) = open(path);
    let Some(reader) = reader else { return (summary, sink, None) };
    sink.file(file, path);
    if !sink.own_thread() {
        let (summary, _, sink, failed) = two_stages(reader, summary, file, settings, progress, sink);
        return (summary.finish(), sink, failed);
    }
    // Three stages: reading and decoding | flow and analysis | the sink, each batch handed on
    // through a bounded channel and its buffer handed back for reuse. On two cores the OS
    // shares them out: the analysis was the busiest thread when it also ran the screen sink.
    let mut an = Analyzer::new(settings, Recorder::<S>::default());
    an.set_file(file);
    let (pipe, (full_rx, empty_tx)) = pipe();
    let (said_tx, said_rx) = mpsc::sync_channel::<Vec<Said>>(4);
    let (said_empty_tx, said_empty_rx) = mpsc::channel::<Vec<Said>>();
    let (summary, (sink, failed)) = std::thread::scope(|scope| {
        let reading = scope.spawn(move || read_batches(reader, summary, progress, settings.checksums, vec![pipe]).0);
        let sinking = scope.spawn(move || {
            let mut sink = sink;
            // Dropping the receiver (returning) stops the stages before this one.
            for mut said in said_rx {
                for s in &said {
                    s.replay(&mut sink);
                    if let Said::Segment(_) = s {
                        match sink.after_packet() {
                            Ok(true) => {}
                            Ok(false) => return (sink, None),
                            Err(e) => return (sink, Some(e)),
                        }
                    }
                }
                said.clear();
                let _ = said_empty_tx.send(said);
            }
            (sink, None)
        });
        'batches: for mut batch in full_rx {
            for part in batch.decoded().chunks(SAID_BATCH) {
                for d in part {
                    an.segment_after_sweep(d.swept_ns, &d.seg, d.frame, d.ts_ns);
                }
                let next = said_empty_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(SAID_BATCH * 2));
                if said_tx.send(std::mem::replace(&mut an.sink.said, next)).is_err() {
                    break 'batches; // the sink stopped
                }
            }
            batch.clear();
            let _ = empty_tx.send(batch);
        }
        drop(said_tx);
        // A panic in another stage is a bug in tcpscope: let it surface as one.
        let summary = reading.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        let sink = sinking.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (summary, sink)
    });
    (summary.finish(), sink, failed)
}

/// A stage's end of the two channels between the reading stage and an analysing one: full
/// batches go one way, emptied ones come back for reuse.
type Pipe = (mpsc::SyncSender<Batch>, mpsc::Receiver<Batch>);
/// The analysing stage's end.
type PipeEnd = (mpsc::Receiver<Batch>, mpsc::Sender<Batch>);

fn pipe() -> (Pipe, PipeEnd) {
    let (full_tx, full_rx) = mpsc::sync_channel(4);
    let (empty_tx, empty_rx) = mpsc::channel();
    ((full_tx, empty_rx), (full_rx, empty_tx))
}

/// The reading stage: decodes the file's segments into batches of [`BATCH`], one per pipe
/// (the 4-tuple's shard when there are several), and hands them on. Returns the summary, the
/// error that ended reading, and the first record's link type.
fn read_batches(
    mut reader: CaptureReader,
    mut summary: FileSummary,
    progress: &(dyn Fn(u64, u64) + Sync),
    checksums: bool,
    pipes: Vec<Pipe>,
) -> (FileSummary, Option<CaptureError>, Option<u32>) {
    let n = pipes.len();
    let mut batches: Vec<Batch> = pipes.iter().map(|_| Batch::new()).collect();
    let mut clock = SweepClock::default();
    let mut link_type = None;
    // Each record is decoded straight into a batch ([`decode::decode_into`] says why), but its
    // shard is known only once it is decoded: the guess is the last record's, as a
    // connection's packets come in runs (and a bulk transfer is one connection).
    let mut guess = 0;
    let error = read_records(&mut reader, &mut summary, progress, |sum, rec| {
        if sum.packets == 0 {
            link_type = Some(rec.link_type);
        }
        let d = batches[guess].free();
        if count_and_decode_into(sum, rec, &mut d.seg).is_none() {
            return true;
        }
        if checksums {
            verify_checksums(sum, rec, &mut d.seg);
        }
        (d.frame, d.ts_ns, d.swept_ns) = (rec.frame, rec.ts_ns, clock.tick(rec.ts_ns));
        let s = if n == 1 { 0 } else { FlowKey::shard(&d.seg, n) };
        if s != guess {
            let d = *d;
            *batches[s].free() = d;
            guess = s;
        }
        let batch = &mut batches[s];
        batch.len += 1;
        batch.len < BATCH || hand_on(batch, &pipes[s])
    });
    for (batch, (full, _)) in batches.into_iter().zip(&pipes) {
        let _ = full.send(batch);
    }
    (summary, error, link_type)
}

/// The analysing stage: runs every batch through the analyzer and hands the buffer back.
/// Returns when the batches end or the sink stops the pass; dropping the receiver then stops
/// the reading stage.
fn analyse_batches<S: Sink>(an: &mut Analyzer<S>, (full, empty): PipeEnd) {
    let mut lead = true;
    for mut batch in full {
        let hashed = an.flows_hashed();
        let decoded = batch.decoded();
        let more = if lead { analyse_leading(an, decoded) } else { analyse(an, decoded) };
        if !more {
            return;
        }
        // Asking ahead costs ~60 instructions a packet and gains nothing when the packets
        // mostly follow their connection's previous one (a bulk transfer: ~5 % slower with it):
        // the next batch asks ahead only if more than an eighth of this one's looked up their
        // connection in the flow table's index.
        lead = (an.flows_hashed() - hashed) * 8 > decoded.len() as u64;
        batch.clear();
        let _ = empty.send(batch);
    }
}

/// Analyses a batch's segments in order; false when the sink stopped the pass.
fn analyse<S: Sink>(an: &mut Analyzer<S>, decoded: &[Decoded]) -> bool {
    for d in decoded {
        an.segment_after_sweep(d.swept_ns, &d.seg, d.frame, d.ts_ns);
        if !an.go_on() {
            return false;
        }
    }
    true
}

/// [`analyse`], asking for each packet's connection's memory ahead of it, in four steps each
/// needing the last one's memory ([`Analyzer::prefetch_flow`], [`Analyzer::prefetch`],
/// [`Analyzer::prefetch_state`]): with 200,000 connections open at once, 34 % less CPU time
/// for the analysing threads (`docs/performance.md`, *concurrent*).
fn analyse_leading<S: Sink>(an: &mut Analyzer<S>, decoded: &[Decoded]) -> bool {
    // Packet j's place in the flow index (step 1, at j - 2 AHEAD) at `places[j % (2 AHEAD)]`,
    // the connection guessed for it (step 2, at j - AHEAD) at `guessed[j % AHEAD]`.
    let mut places = [None; 2 * AHEAD];
    let mut guessed = [None; AHEAD];
    for (i, d) in decoded.iter().enumerate() {
        if let Some(ahead) = decoded.get(i + 2 * AHEAD) {
            places[i % (2 * AHEAD)] = an.prefetch_flow(&ahead.seg);
        }
        if let Some(idx) = guessed[(i + AHEAD / 4) % AHEAD] {
            an.prefetch_state(idx, true);
        }
        if let Some(idx) = guessed[(i + AHEAD / 2) % AHEAD] {
            an.prefetch_state(idx, false);
        }
        guessed[i % AHEAD] = places[(i + AHEAD) % (2 * AHEAD)].take().and_then(|place| an.prefetch(place));
        an.segment_after_sweep(d.swept_ns, &d.seg, d.frame, d.ts_ns);
        if !an.go_on() {
            return false;
        }
    }
    true
}

/// Sends a full batch on and takes an empty one back (or a new one); false once the receiver
/// is gone.
fn hand_on(batch: &mut Batch, (full, empty): &Pipe) -> bool {
    let next = empty.try_recv().unwrap_or_else(|_| Batch::new());
    full.send(std::mem::replace(batch, next)).is_ok()
}

/// One file read and decoded on a thread of its own by the reading stage every pass uses,
/// its segments taken one at a time in file order: `correlate` merges several captures so,
/// each decoded on its own core while the merge matches.
pub(crate) struct Decoding {
    end: PipeEnd,
    batch: Option<Batch>,
    at: usize,
}

/// What the reading thread of a [`Decoding`] returns: the file's summary (not finished), the
/// error that ended reading, and the first record's link type.
pub(crate) type DecodedFile = (FileSummary, Option<CaptureError>, Option<u32>);

impl Decoding {
    /// Starts reading `reader` on a thread of `scope`; join the handle once [`Decoding::next`]
    /// has said the end, for the summary and the error that ended it, if any. Dropping the
    /// `Decoding` first stops the thread.
    pub(crate) fn spawn<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        reader: CaptureReader,
        summary: FileSummary,
    ) -> (Decoding, std::thread::ScopedJoinHandle<'scope, DecodedFile>) {
        let (pipe, end) = pipe();
        let handle = scope.spawn(move || read_batches(reader, summary, &|_, _| {}, false, vec![pipe]));
        (Decoding { end, batch: None, at: 0 }, handle)
    }

    /// The next segment with its frame number and time (ns), or `None` at the end of the file
    /// (or at the error that ended it).
    pub(crate) fn next(&mut self) -> Option<(&Segment<'static>, u64, u64)> {
        while self.batch.as_ref().is_none_or(|b| self.at >= b.len) {
            if let Some(mut b) = self.batch.take() {
                b.clear();
                let _ = self.end.1.send(b);
            }
            self.batch = Some(self.end.0.recv().ok()?);
            self.at = 0;
        }
        let d = &self.batch.as_ref()?.slots[self.at];
        self.at += 1;
        Some((&d.seg, d.frame, d.ts_ns))
    }
}

/// The shard of each connection, in order of first appearance, from each shard's first frames
/// (`firsts[s][k]`: frame of shard s's connection k). Frames are unique within a file, so this
/// is exactly the order one analysis thread would have numbered them in. Public for the
/// pipeline fuzz target, which joins shards it ran itself.
pub fn shard_order(firsts: &[Vec<u64>]) -> Vec<u8> {
    let mut next = vec![0usize; firsts.len()];
    let total = firsts.iter().map(Vec::len).sum();
    (0..total)
        .map(|_| {
            let (s, _) = (0..firsts.len())
                .filter_map(|s| firsts[s].get(next[s]).map(|&f| (s, f)))
                .min_by_key(|&(_, f)| f)
                .expect("a connection left");
            next[s] += 1;
            s as u8
        })
        .collect()
}

/// Most analysing threads [`sharded`] uses. Reading and decoding a packet costs
/// about half to two thirds of analysing it (~500 against ~750–1,200 instructions), so one
/// reading thread keeps two or three busy at most; each more would hold its batches (a few
/// MB) for nothing.
pub const MAX_SHARDS: usize = 4;

/// Analyses one file with its connections split by 4-tuple over `shards` analysis threads, fed
/// by one reading thread: on many concurrent connections the analysis, not the reading, is the
/// busy stage, and connections are independent of each other. Each shard sees its packets in
/// file order, and connections are numbered in order of first appearance in the file, so the
/// answer is the one [`pipelined`] gives (a test checks it). A single connection
/// gains nothing: all its packets go to one shard.
pub(crate) fn sharded<S: Sink + Send>(
    path: &Path,
    file: usize,
    settings: Settings,
    shards: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
    make: impl Fn() -> S + Sync,
) -> (FileSummary, S, Option<io::Error>) {
    debug_assert!(S::JOINS);
    let shards = shards.clamp(1, MAX_SHARDS);
    if shards == 1 {
        return pipelined(path, file, settings, progress, make());
    }
    let (summary, reader) = open(path);
    let Some(reader) = reader else { return (summary, make(), None) };
    let (summary, parts) = std::thread::scope(|scope| {
        let (pipes, threads): (Vec<Pipe>, Vec<_>) = (0..shards)
            .map(|_| {
                let (pipe, end) = pipe();
                let mut sink = make();
                sink.file(file, path);
                let thread = scope.spawn(move || {
                    let mut an = Analyzer::new(settings, sink);
                    an.set_file(file);
                    analyse_batches(&mut an, end);
                    let failed = an.take_failure();
                    let first = an.first_frames().to_vec();
                    (an.sink, first, failed)
                });
                (pipe, thread)
            })
            .unzip();
        let (summary, _, _) = read_batches(reader, summary, progress, settings.checksums, pipes);
        // A panic in another stage is a bug in tcpscope: let it surface as one.
        let parts: Vec<(S, Vec<u64>, Option<io::Error>)> =
            threads.into_iter().map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect();
        (summary, parts)
    });
    let (mut sinks, mut firsts, mut failed) = (Vec::new(), Vec::new(), None);
    for (sink, first, f) in parts {
        sinks.push(sink);
        firsts.push(first);
        failed = failed.or(f);
    }
    (summary.finish(), S::join(sinks, &shard_order(&firsts)), failed)
}

/// Reading and decoding | flow, analysis and the sink: for a light sink, whose records would
/// cost more to hand to another thread than to consume in place. Returns the summary (not yet
/// finished), the error that ended reading as it was (not only its text in the summary), and
/// the sink.
fn two_stages<S: Sink>(
    reader: CaptureReader,
    summary: FileSummary,
    file: usize,
    settings: Settings,
    progress: &(dyn Fn(u64, u64) + Sync),
    sink: S,
) -> (FileSummary, Option<CaptureError>, S, Option<io::Error>) {
    let mut an = Analyzer::new(settings, sink);
    an.set_file(file);
    let (pipe, end) = pipe();
    let (summary, error, _) = std::thread::scope(|scope| {
        let reading = scope.spawn(move || read_batches(reader, summary, progress, settings.checksums, vec![pipe]));
        analyse_batches(&mut an, end);
        // A panic while reading is a bug in tcpscope: let it surface as one.
        reading.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    let failed = an.take_failure();
    (summary, error, an.sink, failed)
}

/// What the analysis told its sink, in order, to be told again on another thread.
enum Said {
    Connection(ConnIdx, ConnInfo),
    Event(At, Event),
    /// Rare (out-of-sequence segments only), so boxed: a `Said` stays the size of an event.
    Evidence(At, Box<Evidence>),
    Segment(SegmentInfo),
}

impl Said {
    #[inline]
    fn replay<S: Sink>(&self, sink: &mut S) {
        match self {
            Said::Connection(idx, info) => sink.connection(*idx, info),
            Said::Event(at, ev) => sink.event(at, ev),
            Said::Evidence(at, why) => sink.evidence(at, why),
            Said::Segment(seg) => sink.segment(seg),
        }
    }
}

/// A sink that records what it is told (the analysis stage of [`pipelined`]) for the sink `S`
/// it replays to, whose wishes it has.
struct Recorder<S> {
    said: Vec<Said>,
    sink: PhantomData<fn() -> S>,
}

impl<S> Default for Recorder<S> {
    fn default() -> Self {
        Recorder { said: Vec::new(), sink: PhantomData }
    }
}

impl<S: Sink> Sink for Recorder<S> {
    const CLASSIFY: bool = S::CLASSIFY;

    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.said.push(Said::Connection(conn, *info));
    }
    #[inline]
    fn segment(&mut self, seg: &SegmentInfo) {
        self.said.push(Said::Segment(*seg));
    }
    #[inline]
    fn event(&mut self, at: &At, ev: &Event) {
        self.said.push(Said::Event(*at, *ev));
    }
    fn evidence(&mut self, at: &At, why: &Evidence) {
        self.said.push(Said::Evidence(*at, Box::new(why.clone())));
    }
}

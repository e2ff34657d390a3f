//! One streaming pass over a trace: capture → decode → flow → analysis → sink.
//!
//! [`Analyzer`] is the engine for any [`Sink`]; [`analyze_file`] (reading and decoding in one
//! thread, analysis in another), [`analyze_file_sharded`] (one reading thread feeding several
//! analysing ones, each with the connections of its share of the 4-tuples) and
//! [`analyze_merged`] (several files in time order, one thread) run it over files and report
//! what each file contained, including why frames were skipped and where reading stopped.
//!
//! Memory: the analyzer keeps state per *live* connection. A connection closed (FIN both ways
//! or RST) and silent for [`EVICT_CLOSED_NS`], or silent for [`EVICT_IDLE_NS`], has expired: a
//! later packet on its 4-tuple starts a new connection, and a periodic sweep drops its analysis
//! state (its statistics stay).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crate::analysis::{At, ConnIdx, Connection, Event, SegmentInfo, Settings, Sink};
use crate::capture::{CaptureError, CaptureReader, Compression, Format, MergedReader, Record, SetReader, TraceSet};
use crate::decode::{self, Anomaly, Segment, Skip};
use crate::flow::{ConnInfo, FlowKey, FlowTable};
use crate::stats::{ConnStats, StatsSink};

/// A closed connection silent this long (trace time) is evicted: twice Linux's TIME-WAIT.
pub const EVICT_CLOSED_NS: u64 = 120 * 1_000_000_000;
/// Any connection silent this long is evicted.
pub const EVICT_IDLE_NS: u64 = 3600 * 1_000_000_000;
const _: () = assert!(EVICT_IDLE_NS > EVICT_CLOSED_NS, "`expired` compares with the shorter first");
/// Trace time between two eviction sweeps (a sweep visits every live connection).
const SWEEP_EVERY_NS: u64 = 10 * 1_000_000_000;
/// Packets between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 16;

/// What a file contained and how reading it ended.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FileSummary {
    /// Path as given ("-" for standard input).
    pub path: PathBuf,
    /// pcap or pcapng (`None` if the file could not be opened as either).
    pub format: Option<Format>,
    /// Compression detected.
    pub compression: Option<Compression>,
    /// Packet records read.
    pub packets: u64,
    /// Captured bytes of those records.
    pub captured_bytes: u64,
    /// Records decoded as TCP segments.
    pub tcp_packets: u64,
    /// Records skipped, by reason (`not_ip`, `not_tcp`, `ip_fragment`, `truncated_header`,
    /// `malformed`, `unknown_link_type`).
    pub skipped: BTreeMap<&'static str, u64>,
    /// Records of link types tcpscope does not decode, by LINKTYPE value.
    pub unknown_link_types: BTreeMap<u32, u64>,
    /// Decoded segments with an anomaly, by kind (filled from `anomaly_counts` by `finish`).
    pub anomalies: BTreeMap<&'static str, u64>,
    /// Per-packet counting goes here (an array, not a map lookup per packet).
    #[serde(skip)]
    anomaly_counts: [u64; Anomaly::ALL.len()],
    /// Segments carrying TCP options other than MSS, window scale, SACK and timestamps, by
    /// option kind (e.g. 30 MPTCP, 34 TCP Fast Open, 172 AccECN); kinds ≥ 63 are counted as 63.
    pub other_tcp_options: BTreeMap<u8, u64>,
    /// Records with an out-of-range timestamp fraction.
    pub bad_timestamps: u64,
    /// First and last record time (ns since the epoch).
    pub first_ts_ns: u64,
    /// Last record time.
    pub last_ts_ns: u64,
    /// Why reading stopped early, if it did.
    pub error: Option<String>,
    /// Byte offset of that error.
    pub error_offset: Option<u64>,
}

/// The engine: feeds records through decode, flow and analysis into a sink.
pub struct Analyzer<S: Sink> {
    settings: Settings,
    flows: FlowTable,
    /// Analysis state by connection index; `None` once evicted.
    conns: Vec<Option<Box<Connection>>>,
    keys: Vec<FlowKey>,
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
}

impl<S: Sink> Analyzer<S> {
    /// A fresh engine.
    pub fn new(settings: Settings, sink: S) -> Self {
        Analyzer {
            settings,
            flows: FlowTable::default(),
            conns: Vec::new(),
            keys: Vec::new(),
            first_frames: Vec::new(),
            live: Vec::new(),
            sink,
            file: 0,
            summary: FileSummary::default(),
            clock: SweepClock::default(),
            swept_ns: 0,
        }
    }

    /// Sets the file index recorded in new connections.
    pub fn set_file(&mut self, file: usize) {
        self.file = file;
    }

    /// Frame number of each connection's first packet, by index.
    pub fn first_frames(&self) -> &[u64] {
        &self.first_frames
    }

    /// Number of connections whose analysis state is held.
    pub fn live_connections(&self) -> usize {
        self.live.len()
    }

    /// Processes one record: counts it in [`Analyzer::summary`], decodes it, analyses it.
    pub fn record(&mut self, rec: &Record<'_>) {
        if let Some(seg) = count_and_decode(&mut self.summary, rec) {
            self.segment(&seg, rec.frame, rec.ts_ns);
        }
    }

    /// Analyses one decoded segment (frame number and time from its record), after the sweep
    /// due before it, if any; returns the index of its connection (0-based; ids are this plus
    /// one).
    pub fn segment(&mut self, seg: &Segment<'_>, frame: u64, ts_ns: u64) -> ConnIdx {
        let due = self.clock.tick(ts_ns);
        self.segment_after_sweep(due, seg, frame, ts_ns)
    }

    /// [`Analyzer::segment`] with the sweeps scheduled by whoever reads the trace (the reading
    /// thread of a pipelined pass): first the sweep at `swept_ns` if not done yet, the last
    /// one the trace's [`SweepClock`] made due before this packet. An analyzer that sees only
    /// some of a trace's packets (a shard) so sweeps at the same points between its packets as
    /// one analyzer seeing all of them would.
    pub fn segment_after_sweep(&mut self, swept_ns: u64, seg: &Segment<'_>, frame: u64, ts_ns: u64) -> ConnIdx {
        if swept_ns > self.swept_ns {
            self.sweep(swept_ns);
        }
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
                let idx = self.conns.len();
                let (info, dir) = self.flows.insert(seg, idx, self.file, reuse);
                self.conns.push(Some(Box::new(Connection::new(idx))));
                self.keys.push(FlowKey::between(info.a, info.b));
                self.first_frames.push(frame);
                self.live.push(idx);
                self.sink.connection(idx, &info);
                (idx, dir)
            }
        };
        // The lookup above guarantees the state exists: evicted connections leave the table.
        if let Some(conn) = self.conns[idx].as_deref_mut() {
            conn.on_segment(seg, dir, frame, ts_ns, &self.settings, &mut self.sink);
        }
        idx
    }

    /// Drops the analysis state of connections that have expired by trace time `now`.
    fn sweep(&mut self, now: u64) {
        self.swept_ns = now;
        let (conns, flows, keys) = (&mut self.conns, &mut self.flows, &self.keys);
        self.live.retain(|&idx| {
            let Some(c) = conns[idx].as_deref_mut() else { return false };
            c.release();
            let evict = expired(c, now);
            if evict {
                flows.remove_if(&keys[idx], idx);
                conns[idx] = None;
            }
            !evict
        });
    }
}

/// When the periodic sweep is due: every `SWEEP_EVERY_NS` of trace time, the latest packet
/// time so far. The reading thread keeps the schedule for shards ([`analyze_file_sharded`]),
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

/// Counts a record in the file's summary and decodes it; `None` when it carries no TCP segment
/// (the reason is counted).
#[inline]
fn count_and_decode<'a>(sum: &mut FileSummary, rec: &Record<'a>) -> Option<Segment<'a>> {
    let mut seg = Segment::EMPTY;
    let payload = count_and_decode_into(sum, rec, &mut seg)?;
    Some(Segment { payload, ..seg })
}

/// [`count_and_decode`] into `seg` ([`decode::decode_into`]): the payload is returned.
#[inline]
fn count_and_decode_into<'a>(sum: &mut FileSummary, rec: &Record<'a>, seg: &mut Segment<'_>) -> Option<&'a [u8]> {
    sum.packets += 1;
    sum.captured_bytes += rec.data.len() as u64;
    if sum.first_ts_ns == 0 {
        sum.first_ts_ns = rec.ts_ns;
    }
    sum.last_ts_ns = sum.last_ts_ns.max(rec.ts_ns);
    let payload = match decode::decode_into(rec.link_type, rec.data, rec.orig_len, seg) {
        Ok(payload) => payload,
        Err(skip) => {
            *sum.skipped.entry(skip.name()).or_default() += 1;
            if let Skip::UnknownLinkType(lt) = skip {
                *sum.unknown_link_types.entry(lt).or_default() += 1;
            }
            return None;
        }
    };
    sum.tcp_packets += 1;
    if seg.anomalies.0 != 0 {
        for a in seg.anomalies.iter() {
            sum.anomaly_counts[a as usize] += 1;
        }
    }
    let mut kinds = seg.options.other_kinds;
    while kinds != 0 {
        let k = kinds.trailing_zeros() as u8;
        *sum.other_tcp_options.entry(k).or_default() += 1;
        kinds &= kinds - 1;
    }
    Some(payload)
}

impl FileSummary {
    /// Moves the per-packet counters into the reported maps; call once, at the end of the file.
    pub fn finish(mut self) -> Self {
        for a in Anomaly::ALL {
            let n = std::mem::take(&mut self.anomaly_counts[a as usize]);
            if n > 0 {
                *self.anomalies.entry(a.name()).or_default() += n;
            }
        }
        self
    }
}

/// The result of analysing one file (or several merged).
#[derive(Debug, Default)]
pub struct Analysis {
    /// One summary per input file.
    pub files: Vec<FileSummary>,
    /// Connection statistics, in order of first appearance.
    pub conns: Vec<Box<ConnStats>>,
}

impl Analysis {
    /// Whether nothing useful could be read: every file failed before its first packet.
    pub fn nothing_read(&self) -> bool {
        self.files.iter().all(|f| f.packets == 0 && f.error.is_some())
    }
}

fn record_error(sum: &mut FileSummary, e: &CaptureError) {
    sum.error = Some(e.to_string());
    sum.error_offset = Some(e.offset());
}

/// Reads a file to its end (or its first error, recorded in `sum`): counts every record in
/// `sum`, decodes it, and hands each TCP segment with its frame number and time to `each`,
/// which returns false to stop. Reports progress now and then. Returns the error, if any.
pub fn read_segments(
    reader: &mut CaptureReader,
    sum: &mut FileSummary,
    progress: &(dyn Fn(u64, u64) + Sync),
    mut each: impl FnMut(&Segment<'_>, u64, u64) -> bool,
) -> Option<CaptureError> {
    read_records(reader, sum, progress, |sum, rec| match count_and_decode(sum, rec) {
        Some(seg) => each(&seg, rec.frame, rec.ts_ns),
        None => true,
    })
}

/// Reads a file to its end (or its first error, recorded in `sum`), handing each record to
/// `each` with the summary to count it in; `each` returns false to stop. Reports progress now
/// and then. Returns the error, if any.
#[inline]
fn read_records(
    reader: &mut CaptureReader,
    sum: &mut FileSummary,
    progress: &(dyn Fn(u64, u64) + Sync),
    mut each: impl FnMut(&mut FileSummary, &Record<'_>) -> bool,
) -> Option<CaptureError> {
    let mut error = None;
    loop {
        match reader.next_record() {
            Ok(Some(rec)) => {
                if !each(sum, &rec) {
                    break;
                }
                if rec.frame % PROGRESS_EVERY == 0 {
                    progress(reader.position(), sum.packets);
                }
            }
            Ok(None) => break,
            Err(e) => {
                record_error(sum, &e);
                error = Some(e);
                break;
            }
        }
    }
    sum.bad_timestamps = reader.bad_timestamps;
    progress(reader.position(), sum.packets);
    error
}

/// Segments handed from the reading thread to the analysing thread at a time.
const BATCH: usize = 4096;

/// Segments whose records are handed from the analysing thread to the sink's at a time: small
/// enough that a batch (~140 bytes a record) stays in cache between the two.
const SAID_BATCH: usize = 1024;

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

/// Analyses one file. `progress` is called now and then with the bytes consumed so far.
///
/// With `pipelined`, two threads: one reads and decodes records, the other runs flow and
/// analysis on batches of decoded segments, plus a third for the sink if it asks for one
/// ([`Sink::own_thread`]), so a single large file uses two cores or more (use it when
/// the file is alone; several files are better spread over the cores one thread each). The
/// answer is the same either way (a test checks it).
pub fn analyze_file(
    path: &Path,
    file: usize,
    settings: Settings,
    pipelined: bool,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Analysis {
    let (summary, sink) = analyze_file_with(path, file, settings, pipelined, progress, StatsSink::default());
    Analysis { files: vec![summary], conns: sink.conns }
}

/// [`analyze_file`] with any sink: returns the file's summary and the sink.
pub fn analyze_file_with<S: Sink + Send>(
    path: &Path,
    file: usize,
    settings: Settings,
    pipelined: bool,
    progress: &(dyn Fn(u64, u64) + Sync),
    sink: S,
) -> (FileSummary, S) {
    let (mut summary, reader) = open(path);
    let Some(mut reader) = reader else { return (summary, sink) };
    if !pipelined {
        let mut an = Analyzer::new(settings, sink);
        an.set_file(file);
        let _ = read_segments(&mut reader, &mut summary, progress, |seg, frame, ts_ns| {
            an.segment(seg, frame, ts_ns);
            true
        });
        return (summary.finish(), an.sink);
    }
    if !sink.own_thread() {
        let (summary, _, sink) = two_stages(reader, summary, file, settings, progress, sink);
        return (summary.finish(), sink);
    }
    // Three stages: reading and decoding | flow and analysis | the sink, each batch handed on
    // through a bounded channel and its buffer handed back for reuse. On two cores the OS
    // shares them out: the analysis was the busiest thread when it also ran the screen sink.
    let mut an = Analyzer::new(settings, Recorder::default());
    an.set_file(file);
    let (pipe, (full_rx, empty_tx)) = pipe();
    let (said_tx, said_rx) = mpsc::sync_channel::<Vec<Said>>(4);
    let (said_empty_tx, said_empty_rx) = mpsc::channel::<Vec<Said>>();
    let (summary, sink) = std::thread::scope(|scope| {
        let reading = scope.spawn(move || read_batches(reader, summary, progress, vec![pipe]).0);
        let sinking = scope.spawn(move || {
            let mut sink = sink;
            for mut said in said_rx {
                for s in &said {
                    s.replay(&mut sink);
                }
                said.clear();
                let _ = said_empty_tx.send(said);
            }
            sink
        });
        for mut batch in full_rx {
            for part in batch.decoded().chunks(SAID_BATCH) {
                for d in part {
                    an.segment_after_sweep(d.swept_ns, &d.seg, d.frame, d.ts_ns);
                }
                let next = said_empty_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(SAID_BATCH * 2));
                let _ = said_tx.send(std::mem::replace(&mut an.sink.said, next));
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
    (summary.finish(), sink)
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
/// (the 4-tuple's shard when there are several), and hands them on.
fn read_batches(
    mut reader: CaptureReader,
    mut summary: FileSummary,
    progress: &(dyn Fn(u64, u64) + Sync),
    pipes: Vec<Pipe>,
) -> (FileSummary, Option<CaptureError>) {
    let n = pipes.len();
    let mut batches: Vec<Batch> = pipes.iter().map(|_| Batch::new()).collect();
    let mut clock = SweepClock::default();
    // Each record is decoded straight into a batch ([`decode::decode_into`] says why), but its
    // shard is known only once it is decoded: the guess is the last record's, as a
    // connection's packets come in runs (and a bulk transfer is one connection).
    let mut guess = 0;
    let error = read_records(&mut reader, &mut summary, progress, |sum, rec| {
        let d = batches[guess].free();
        if count_and_decode_into(sum, rec, &mut d.seg).is_none() {
            return true;
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
    (summary, error)
}

/// The analysing stage: runs every batch through the analyzer and hands the buffer back.
fn analyse_batches<S: Sink>(an: &mut Analyzer<S>, (full, empty): PipeEnd) {
    for mut batch in full {
        for d in batch.decoded() {
            an.segment_after_sweep(d.swept_ns, &d.seg, d.frame, d.ts_ns);
        }
        batch.clear();
        let _ = empty.send(batch);
    }
}

/// Sends a full batch on and takes an empty one back (or a new one); false once the receiver
/// is gone.
fn hand_on(batch: &mut Batch, (full, empty): &Pipe) -> bool {
    let next = empty.try_recv().unwrap_or_else(|_| Batch::new());
    full.send(std::mem::replace(batch, next)).is_ok()
}

/// A sink whose work can be split by 4-tuple over several analysis threads
/// ([`analyze_file_sharded`]): each shard's sink sees the connections of its 4-tuples only,
/// numbered from 0, and `join` puts the shards' sinks together as if one had seen everything.
pub trait Shardable: Sink + Send + Sized {
    /// Joins the shards' sinks. `order` lists, for each connection in order of first
    /// appearance in the whole file, the shard it was in ([`shard_order`]); each shard's own
    /// connections are in that order too.
    fn join(parts: Vec<Self>, order: &[u8]) -> Self;
}

/// The shard of each connection, in order of first appearance, from each shard's first frames
/// (`firsts[s][k]`: frame of shard s's connection k). Frames are unique within a file, so this
/// is exactly the order one analysis thread would have numbered them in.
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

/// Most analysing threads [`analyze_file_sharded`] uses. Reading and decoding a packet costs
/// about half to two thirds of analysing it (~500 against ~750–1,200 instructions), so one
/// reading thread keeps two or three busy at most; each more would hold its batches (a few
/// MB) for nothing.
pub const MAX_SHARDS: usize = 4;

/// Analyses one file with its connections split by 4-tuple over `shards` analysis threads, fed
/// by one reading thread: on many concurrent connections the analysis, not the reading, is the
/// busy stage, and connections are independent of each other. Each shard sees its packets in
/// file order, and connections are numbered in order of first appearance in the file, so the
/// answer is the one [`analyze_file_with`] gives (a test checks it). A single connection
/// gains nothing: all its packets go to one shard.
pub fn analyze_file_sharded<S: Shardable>(
    path: &Path,
    file: usize,
    settings: Settings,
    shards: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
    make: impl Fn() -> S + Sync,
) -> (FileSummary, S) {
    let shards = shards.clamp(1, MAX_SHARDS);
    if shards == 1 {
        return analyze_file_with(path, file, settings, true, progress, make());
    }
    let (summary, reader) = open(path);
    let Some(reader) = reader else { return (summary, S::join(vec![make()], &[])) };
    let (summary, parts) = std::thread::scope(|scope| {
        let (pipes, threads): (Vec<Pipe>, Vec<_>) = (0..shards)
            .map(|_| {
                let (pipe, end) = pipe();
                let sink = make();
                let thread = scope.spawn(move || {
                    let mut an = Analyzer::new(settings, sink);
                    an.set_file(file);
                    analyse_batches(&mut an, end);
                    (an.sink, an.first_frames)
                });
                (pipe, thread)
            })
            .unzip();
        let (summary, _) = read_batches(reader, summary, progress, pipes);
        // A panic in another stage is a bug in tcpscope: let it surface as one.
        let parts: Vec<(S, Vec<u64>)> =
            threads.into_iter().map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect();
        (summary, parts)
    });
    let (sinks, firsts): (Vec<S>, Vec<Vec<u64>>) = parts.into_iter().unzip();
    (summary.finish(), S::join(sinks, &shard_order(&firsts)))
}

/// Opens a file for a pass: the file's summary so far (with the error, if it could not be
/// opened) and the reader.
fn open(path: &Path) -> (FileSummary, Option<CaptureReader>) {
    let mut summary = FileSummary { path: path.to_path_buf(), ..Default::default() };
    match CaptureReader::open(path) {
        Ok(r) => {
            summary.format = Some(r.format());
            summary.compression = Some(r.compression());
            (summary, Some(r))
        }
        Err(e) => {
            record_error(&mut summary, &e);
            (summary, None)
        }
    }
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
) -> (FileSummary, Option<CaptureError>, S) {
    let mut an = Analyzer::new(settings, sink);
    an.set_file(file);
    let (pipe, end) = pipe();
    let (summary, error) = std::thread::scope(|scope| {
        let reading = scope.spawn(move || read_batches(reader, summary, progress, vec![pipe]));
        analyse_batches(&mut an, end);
        // A panic while reading is a bug in tcpscope: let it surface as one.
        reading.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    (summary, error, an.sink)
}

/// One pass over an open capture with `sink`, reading and decoding on a thread of their own
/// while this one analyses: returns the sink and the error that ended reading early, if any
/// (the sink holds everything read before it). For [`crate::series::run_file`]: the viewer's
/// first look at a connection and `tcpscope plot` wait for such a pass.
pub fn analyze_reader<S: Sink>(reader: CaptureReader, settings: Settings, sink: S) -> (S, Option<CaptureError>) {
    let (_, error, sink) = two_stages(reader, FileSummary::default(), 0, settings, &|_, _| {}, sink);
    (sink, error)
}

/// One pass over an open capture on this thread that analyses only the segments `keep`
/// accepts, sweeping where a pass analysing all of them would (every segment's time goes
/// through the [`SweepClock`], as in a shard: [`Analyzer::segment_after_sweep`]). A connection
/// `keep` takes whole (its 4-tuple's packets) is analysed as in the full pass; its index counts
/// only the connections kept. Returns the sink and the error that ended reading early, if any.
pub fn analyze_only<S: Sink>(
    mut reader: CaptureReader,
    settings: Settings,
    sink: S,
    mut keep: impl FnMut(&Segment<'_>) -> bool,
) -> (S, Option<CaptureError>) {
    let mut an = Analyzer::new(settings, sink);
    let mut clock = SweepClock::default();
    let error = read_segments(&mut reader, &mut FileSummary::default(), &|_, _| {}, |seg, frame, ts_ns| {
        let due = clock.tick(ts_ns);
        if keep(seg) {
            an.segment_after_sweep(due, seg, frame, ts_ns);
        }
        true
    });
    (an.sink, error)
}

/// What the analysis told its sink, in order, to be told again on another thread.
enum Said {
    Connection(ConnIdx, ConnInfo),
    Event(At, Event),
    Segment(SegmentInfo),
}

impl Said {
    #[inline]
    fn replay<S: Sink>(&self, sink: &mut S) {
        match self {
            Said::Connection(idx, info) => sink.connection(*idx, info),
            Said::Event(at, ev) => sink.event(at, ev),
            Said::Segment(seg) => sink.segment(seg),
        }
    }
}

/// A sink that records what it is told (the analysis stage of [`analyze_file_with`]).
#[derive(Default)]
struct Recorder {
    said: Vec<Said>,
}

impl Sink for Recorder {
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
}

/// Analyses several files as one trace in time order (pieces of one capture).
pub fn analyze_merged(paths: &[PathBuf], settings: Settings, progress: &(dyn Fn(u64, u64) + Sync)) -> Analysis {
    let (files, sink) = analyze_merged_with(paths, settings, progress, StatsSink::default());
    Analysis { files, conns: sink.conns }
}

/// [`analyze_merged`] with any sink: returns the files' summaries and the sink.
pub fn analyze_merged_with<S: Sink>(
    paths: &[PathBuf],
    settings: Settings,
    progress: &(dyn Fn(u64, u64) + Sync),
    sink: S,
) -> (Vec<FileSummary>, S) {
    let mut summaries: Vec<FileSummary> =
        paths.iter().map(|p| FileSummary { path: p.clone(), ..Default::default() }).collect();
    let mut readers = Vec::new();
    let mut reader_file = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        match CaptureReader::open(p) {
            Ok(r) => {
                summaries[i].format = Some(r.format());
                summaries[i].compression = Some(r.compression());
                readers.push(r);
                reader_file.push(i);
            }
            Err(e) => record_error(&mut summaries[i], &e),
        }
    }
    let mut merged = MergedReader::new(readers);
    let mut an = Analyzer::new(settings, sink);
    let mut n = 0u64;
    while let Some(item) = merged.next_record() {
        match item {
            Ok((r, rec)) => {
                let f = reader_file[r];
                if let Some(seg) = count_and_decode(&mut summaries[f], &rec) {
                    an.set_file(f);
                    an.segment(&seg, rec.frame, rec.ts_ns);
                }
                n += 1;
                if n.is_multiple_of(PROGRESS_EVERY) {
                    progress(merged.readers().iter().map(|r| r.position()).sum(), n);
                }
            }
            Err((r, e)) => record_error(&mut summaries[reader_file[r]], &e),
        }
    }
    for (r, reader) in merged.readers().iter().enumerate() {
        summaries[reader_file[r]].bad_timestamps = reader.bad_timestamps;
    }
    (summaries.into_iter().map(FileSummary::finish).collect(), an.sink)
}

/// Analyses the packets of a trace set with `from <= ts_ns < to` as one trace in time order
/// (see [`crate::capture::set`]). Each file read appears in [`Analysis::files`] with the counts
/// of its packets *in the window*; files outside the window are not read and not listed
/// (unreadable ones are, with their error). Frame numbers in events are those within each
/// packet's file, so they can be checked with tshark on that file.
///
/// `each` sees every TCP segment with its file (index into `set.files`), record and connection
/// index; returning false stops the pass.
pub fn analyze_set(
    set: &TraceSet,
    from: u64,
    to: u64,
    settings: Settings,
    progress: &(dyn Fn(u64, u64) + Sync),
    each: impl FnMut(usize, &Record<'_>, &Segment<'_>, ConnIdx) -> bool,
) -> Analysis {
    let (files, sink) = analyze_set_with(set, from, to, 0, settings, progress, StatsSink::default(), each);
    Analysis { files, conns: sink.conns }
}

/// [`analyze_set`] with any sink: returns the summaries of the files read and the sink.
/// Connections name their file by its place in the returned summaries plus `file_base` (the
/// number of files listed before this set's, when several sets are reported together).
#[allow(clippy::too_many_arguments)]
pub fn analyze_set_with<S: Sink>(
    set: &TraceSet,
    from: u64,
    to: u64,
    file_base: usize,
    settings: Settings,
    progress: &(dyn Fn(u64, u64) + Sync),
    sink: S,
    mut each: impl FnMut(usize, &Record<'_>, &Segment<'_>, ConnIdx) -> bool,
) -> (Vec<FileSummary>, S) {
    // Summaries in the order files are first touched; `place[f]` is file f's position.
    let mut summaries: Vec<FileSummary> = Vec::new();
    let mut place: Vec<Option<usize>> = vec![None; set.files.len()];
    fn summary<'a>(
        summaries: &'a mut Vec<FileSummary>,
        place: &mut [Option<usize>],
        set: &TraceSet,
        f: usize,
    ) -> (usize, &'a mut FileSummary) {
        let p = *place[f].get_or_insert_with(|| {
            summaries.push(FileSummary { path: set.files[f].path.clone(), ..Default::default() });
            summaries.len() - 1
        });
        (p, &mut summaries[p])
    }
    for (f, file) in set.files.iter().enumerate() {
        if let Some(e) = &file.error {
            summary(&mut summaries, &mut place, set, f).1.error = Some(e.clone());
        }
    }
    let mut reader = SetReader::new(set, from, to);
    let mut an = Analyzer::new(settings, sink);
    let mut n = 0u64;
    let mut bytes = 0u64;
    while let Some(item) = reader.next() {
        match item {
            Ok((f, rec)) => {
                let (p, sum) = summary(&mut summaries, &mut place, set, f);
                if let Some(seg) = count_and_decode(sum, &rec) {
                    an.set_file(file_base + p);
                    let idx = an.segment(&seg, rec.frame, rec.ts_ns);
                    if !each(f, &rec, &seg, idx) {
                        break;
                    }
                }
                n += 1;
                bytes += rec.data.len() as u64 + 16;
                if n.is_multiple_of(PROGRESS_EVERY) {
                    progress(bytes, n);
                }
            }
            Err((f, e)) => record_error(summary(&mut summaries, &mut place, set, f).1, &e),
        }
    }
    progress(bytes, n);
    for &(f, format, compression) in &reader.opened {
        if let Some(p) = place[f] {
            summaries[p].format = Some(format);
            summaries[p].compression = Some(compression);
        }
    }
    (summaries.into_iter().map(FileSummary::finish).collect(), an.sink)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::{Rules, ScreenSink};
    use crate::testutil::{self, Pkt, flag::*};

    /// Short connections between 10.0.0.1 and a few servers, from few client ports so 4-tuples
    /// are reused (some soon after closing, some after a pause longer than the expiry), their
    /// packets interleaved; written as a pcap in the temporary directory.
    fn interleaved_connections(name: &str) -> PathBuf {
        let mut next = testutil::rng(7);
        let mut pkts = Vec::new();
        let mut t = 1_000_000_000_000u64;
        for k in 0..400u32 {
            t += next(300_000_000) + if k % 97 == 96 { 200_000_000_000 } else { 0 };
            let (c, s) = ([10, 0, 0, 1], [10, 0, 1, next(5) as u8]);
            let (cp, sp) = (40_000 + next(30) as u16, 80);
            let (ci, si) = (next(1 << 32) as u32, next(1 << 32) as u32);
            let len = 1 + next(1400) as u16;
            let mut at = t;
            let mut p = |from_c: bool, flags: u8, seq: u32, ack: u32, len: u16| {
                at += 1 + next(200_000_000);
                let (src, dst, sport, dport) = if from_c { (c, s, cp, sp) } else { (s, c, sp, cp) };
                pkts.push(Pkt {
                    ts_ns: at,
                    src,
                    dst,
                    sport,
                    dport,
                    seq,
                    ack,
                    flags,
                    win: 1000,
                    len,
                    opts: vec![],
                    snap: None,
                });
            };
            p(true, SYN, ci, 0, 0);
            p(false, SYN | ACK, si, ci + 1, 0);
            p(true, ACK, ci + 1, si + 1, 0);
            p(true, ACK | PSH, ci + 1, si + 1, len);
            if k.is_multiple_of(5) {
                p(true, ACK | PSH, ci + 1, si + 1, len); // a retransmission
            }
            p(false, ACK, si + 1, ci + 1 + len as u32, 0);
            if !k.is_multiple_of(7) {
                p(true, FIN | ACK, ci + 1 + len as u32, si + 1, 0);
                p(false, FIN | ACK, si + 1, ci + 2 + len as u32, 0);
                p(true, ACK, ci + 2 + len as u32, si + 2, 0);
            }
        }
        pkts.sort_by_key(|p| p.ts_ns);
        // Time going back: one packet two hours ahead, on a 4-tuple of its own, in the middle.
        // Every connection is then silent for over an hour by the trace clock.
        let mut ahead = pkts[pkts.len() / 2].clone();
        (ahead.ts_ns, ahead.sport) = (ahead.ts_ns + 7_200_000_000_000, 9);
        pkts.insert(pkts.len() / 2, ahead);
        let path = std::env::temp_dir().join(format!("tcpscope-{name}-{}.pcap", std::process::id()));
        std::fs::write(&path, testutil::pcap(&pkts, false, false)).unwrap();
        path
    }

    /// What a pass found, comparably: the file's summary and every connection's statistics.
    fn answer(sum: &FileSummary, sink: &StatsSink) -> (String, Vec<String>) {
        (format!("{sum:?}"), sink.conns.iter().map(|c| format!("{c:?}")).collect())
    }

    #[test]
    fn sharding_gives_the_same_answer() {
        let made = interleaved_connections("shards");
        let public = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/public");
        let mut paths = vec![made.clone()];
        match std::fs::read_dir(&public) {
            Ok(entries) => paths.extend(entries.map(|e| e.unwrap().path())),
            Err(_) => eprintln!("skipping the public traces: ../shared/traces/public is absent"),
        }
        for path in &paths {
            // One thread, sweeping for itself; two (a reading thread keeps the sweeps); shards.
            let (sum, one) = analyze_file_with(path, 0, Settings::default(), false, &|_, _| {}, StatsSink::default());
            let want = answer(&sum, &one);
            let (sum, piped) = analyze_file_with(path, 0, Settings::default(), true, &|_, _| {}, StatsSink::default());
            assert_eq!(answer(&sum, &piped), want, "{}, pipelined", path.display());
            for shards in [2, 3, MAX_SHARDS] {
                let (sum, joined) =
                    analyze_file_sharded(path, 0, Settings::default(), shards, &|_, _| {}, StatsSink::default);
                assert_eq!(answer(&sum, &joined), want, "{}, {shards} shards", path.display());
            }
        }
        // The made trace exercises what the join has to get right.
        let (_, one) = analyze_file_with(&made, 0, Settings::default(), false, &|_, _| {}, StatsSink::default());
        let reused = one.conns.iter().filter(|c| c.info.reuse.is_some()).count();
        assert!(one.conns.len() > 300 && reused > 50, "{} connections, {reused} reusing a 4-tuple", one.conns.len());
        std::fs::remove_file(made).unwrap();
    }

    #[test]
    fn shard_order_merges_by_first_frame() {
        assert_eq!(shard_order(&[vec![1, 5, 6], vec![2, 3, 9], vec![]]), vec![0, 1, 1, 0, 0, 1]);
        assert_eq!(shard_order(&[vec![], vec![]]), Vec::<u8>::new());
    }

    /// A closed connection silent for longer than the expiry is over, whether or not a sweep
    /// came by in between: the next packet on its 4-tuple starts a new connection.
    #[test]
    fn expiry_does_not_wait_for_a_sweep() {
        let conn = |t: u64, sport: u16, isn: u32| {
            let p = |dt: u64, from_a: bool, flags: u8, seq: u32, ack: u32| {
                let (src, dst, sp, dp) = if from_a {
                    ([10, 0, 0, 1], [10, 0, 0, 2], sport, 80)
                } else {
                    ([10, 0, 0, 2], [10, 0, 0, 1], 80, sport)
                };
                Pkt {
                    ts_ns: t + dt,
                    src,
                    dst,
                    sport: sp,
                    dport: dp,
                    seq,
                    ack,
                    flags,
                    win: 1000,
                    len: 0,
                    opts: vec![],
                    snap: None,
                }
            };
            vec![
                p(0, true, SYN, isn, 0),
                p(1, false, SYN | ACK, 9, isn + 1),
                p(2, true, FIN | ACK, isn + 1, 10),
                p(3, false, FIN | ACK, 10, isn + 2),
            ]
        };
        let t0 = 1_000_000_000_000u64;
        let later = t0 + EVICT_CLOSED_NS + 5_000_000_000;
        // Alone: no packet between the two connections, so no sweep. With traffic on another
        // 4-tuple every second in between: sweeps.
        let alone: Vec<Pkt> = [conn(t0, 1000, 100), conn(later, 1000, 100)].concat();
        let mut busy = alone.clone();
        busy.extend((1..130).flat_map(|s| conn(t0 + s * 1_000_000_000, 2000 + s as u16, 7)));
        busy.sort_by_key(|p| p.ts_ns);
        for (name, pkts) in [("alone", alone), ("busy", busy)] {
            let mut an = Analyzer::new(Settings::default(), StatsSink::default());
            for p in &pkts {
                let (data, orig) = p.ipv4();
                an.record(&Record { frame: 0, offset: 0, ts_ns: p.ts_ns, link_type: 101, data: &data, orig_len: orig });
            }
            let on_1000: Vec<_> = an.sink.conns.iter().filter(|c| c.info.a.port == 1000).collect();
            assert_eq!(on_1000.len(), 2, "{name}");
            // The same ISN again: only the expiry separates them, so no reuse reason.
            assert_eq!(on_1000[1].info.reuse, None, "{name}");
        }
    }

    #[test]
    fn every_pipeline_gives_the_same_answer() {
        let screen = || ScreenSink::new(Rules::default());
        assert!(screen().own_thread() && !StatsSink::default().own_thread());
        for name in ["randloss-snd.pcap", "loss-rcv.pcap"] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(name);
            // Pipelined: three stages for the screen sink (more than one batch of records), two
            // for the statistics sink.
            let run = |pipelined| {
                let (sum, sink) = analyze_file_with(
                    &path,
                    0,
                    Settings::default(),
                    pipelined,
                    &|_, _| {},
                    (StatsSink::default(), screen()),
                );
                let stats: Vec<String> = sink.0.conns.iter().map(|c| format!("{c:?}")).collect();
                (sum.tcp_packets, stats, serde_json::to_string(&sink.1.finish()).unwrap())
            };
            let (one, piped) = (run(false), run(true));
            assert!(one.0 > SAID_BATCH as u64, "{name}: {} packets", one.0);
            assert_eq!(one, piped, "{name}");
            let (_, stats) = analyze_file_with(&path, 0, Settings::default(), true, &|_, _| {}, StatsSink::default());
            assert_eq!(one.1, stats.conns.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>(), "{name}");
        }
    }
}

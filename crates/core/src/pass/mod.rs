//! One streaming pass over a trace: capture → decode → flow → analysis → sink.
//!
//! [`Query`] is the one way to run it: it names the inputs (files, ring directories or `-`), an
//! optional time window, the analysis [`Settings`] and how many threads may work, and
//! [`Query::run`] picks the strategy and feeds any [`Sink`]:
//!
//! | inputs                                   | strategy                                      |
//! |------------------------------------------|-----------------------------------------------|
//! | a window, a directory, or `merge`        | each input (or all, merged) a trace set, read in time order by one merge reader ([`crate::capture::SetReader`]) |
//! | one file, a sink that joins ([`Sink::JOINS`]) | one reading thread, up to [`MAX_SHARDS`] analysing ones, each with a share of the 4-tuples |
//! | one file, `only` one 4-tuple             | one thread, analysing that 4-tuple's packets   |
//! | one file                                 | one reading thread and one analysing (and one for a heavy sink) |
//! | several files                            | one thread per file, files spread over the cores |
//!
//! Every strategy gives the answer one thread reading everything in order gives (tests check
//! it). The modules, by job: `count` reads records and counts what each file holds
//! ([`FileSummary`]); `engine` is the [`Analyzer`] (flow table, analysis, eviction); `threads`
//! the pipelined and sharded passes over one file; `inputs` the passes on one thread (a file,
//! a trace set).

mod count;
mod engine;
mod inputs;
#[cfg(test)]
mod tests;
mod threads;

pub use count::{Analysis, FileSummary};
pub use engine::{Analyzer, EVICT_CLOSED_NS, EVICT_IDLE_NS, SweepClock};
pub(crate) use threads::Decoding;
pub use threads::{MAX_SHARDS, shard_order};

use std::io;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::analysis::Settings;
use crate::capture::{TraceSet, Window};
use crate::flow::FlowKey;
use crate::sink::Sink;
use crate::stats::StatsSink;

/// What to analyse and how: built once, then [`Query::run`] with any sink.
///
/// ```
/// use tcpscope_core::pass::Query;
/// use tcpscope_core::stats::StatsSink;
///
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap");
/// let an = Query::new(vec![path.into()]).stats(&|_, _| {}).unwrap();
/// assert_eq!(an.conns.len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Query {
    inputs: Vec<PathBuf>,
    window: Window,
    span: Option<(u64, u64)>,
    merge: bool,
    settings: Settings,
    threads: usize,
    only: Option<FlowKey>,
    /// `(k, n)`: only the packets of the 4-tuples in shard `k` of `n` ([`FlowKey::shard`]).
    shard: Option<(usize, usize)>,
    /// `None`: UTC (docs/cli.md#times-shown).
    tz: Option<jiff::tz::TimeZone>,
    /// Other captures of the same connections (vantage points, `--with`).
    vantage: Vec<PathBuf>,
}

/// What one trace of a [`Query`] gave: an input, or all of them with `merge`.
#[derive(Debug)]
pub struct Trace<S> {
    /// The sink that saw this trace's packets.
    pub sink: S,
    /// Its name: the input as given, or with `merge` the inputs joined by ` + `.
    pub input: String,
    /// This trace's files: a range of [`Run::files`].
    pub files: Range<usize>,
    /// The window `[from, to)` read (ns since the epoch), when the trace was read as a trace
    /// set ([`Query::window`], a directory or `merge`).
    pub window: Option<(u64, u64)>,
    /// Why the trace could not be read at all: its set could not be opened, or the window not
    /// placed on it.
    pub error: Option<String>,
    /// `error` is about the time window asked for (it ends before it starts, or a time cannot
    /// be placed on the trace), not about the input: a usage error.
    pub window_error: bool,
    /// The window held no packet: what to tell the user (the window, and where the trace is).
    pub empty: Option<String>,
    /// Stale or invalid index sidecars that were ignored, one message each.
    pub warnings: Vec<String>,
}

/// The result of [`Query::run`].
#[derive(Debug)]
pub struct Run<S> {
    /// One summary per file read, in the order of the traces.
    pub files: Vec<FileSummary>,
    /// One per input, or one with `merge`, in input order.
    pub traces: Vec<Trace<S>>,
}

impl<S> Trace<S> {
    /// The sink, and the rest of the trace's record without it.
    pub fn split(self) -> (S, Trace<()>) {
        let Trace { sink, input, files, window, error, window_error, empty, warnings } = self;
        (sink, Trace { sink: (), input, files, window, error, window_error, empty, warnings })
    }
}

impl<S> Run<S> {
    /// The traces' sinks, in order.
    pub fn sinks(self) -> impl Iterator<Item = S> {
        self.traces.into_iter().map(|t| t.sink)
    }
}

impl Run<StatsSink> {
    /// The files' summaries and every connection's statistics, in trace order.
    pub fn into_analysis(self) -> Analysis {
        let mut an = Analysis { files: self.files, ..Analysis::default() };
        for (i, t) in self.traces.into_iter().enumerate() {
            an.inputs.push(t.input);
            an.conns.extend(t.sink.conns.into_iter().map(|mut c| {
                c.set_trace(i);
                c
            }));
        }
        an
    }
}

impl Query {
    /// Every packet of `inputs` (files, ring directories, `-` for standard input), each input a
    /// trace of its own, with default settings and as many threads as rayon's pool has
    /// (`RAYON_NUM_THREADS`).
    pub fn new(inputs: Vec<PathBuf>) -> Query {
        Query {
            inputs,
            window: Window::default(),
            span: None,
            merge: false,
            settings: Settings::default(),
            threads: rayon::current_num_threads(),
            only: None,
            shard: None,
            tz: None,
            vantage: Vec::new(),
        }
    }

    /// Only the packets of a time window, as the user gave it (placed on each trace: offsets
    /// count from its first packet, clock times are in the query's time zone).
    pub fn window(mut self, window: Window) -> Query {
        self.window = window;
        self
    }

    /// Only the packets with `from <= ts_ns < to` (a window placed once, read again later).
    pub fn span(mut self, from: u64, to: u64) -> Query {
        self.span = Some((from, to));
        self
    }

    /// All inputs as one trace in time order (pieces of one capture).
    pub fn merge(mut self, merge: bool) -> Query {
        self.merge = merge;
        self
    }

    /// Analysis settings.
    pub fn settings(mut self, settings: Settings) -> Query {
        self.settings = settings;
        self
    }

    /// At most `n` threads (at least one).
    pub fn threads(mut self, n: usize) -> Query {
        self.threads = n.max(1);
        self
    }

    /// Only the packets of one 4-tuple (one input, read whole): its connections are analysed as
    /// in a full pass, numbered among themselves.
    pub fn only(mut self, key: FlowKey) -> Query {
        self.only = Some(key);
        self
    }

    /// Only the packets of the 4-tuples in shard `k` of `n` (the split the analysing threads
    /// use, [`FlowKey::shard`], the same on every machine): every file is still read whole and
    /// in order, but only that share of the connections is analysed, each as in a full pass
    /// (sweeps at the same points), numbered among themselves. The `n` queries of one input
    /// together give the connections of the full pass: a cluster's tasks (docs/scale.md).
    pub fn shard(mut self, k: usize, n: usize) -> Query {
        self.shard = (n > 1).then_some((k % n, n));
        self
    }

    /// One query per trace of this one (one per input, or this one with `merge`), each with
    /// the trace's name as [`Trace::input`] has it: for a caller that needs a trace's name
    /// while its pass runs (rows written as they come).
    pub fn per_trace(&self) -> Vec<(String, Query)> {
        if self.merge || self.inputs.len() <= 1 {
            let name = self.inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" + ");
            return vec![(name, self.clone())];
        }
        self.inputs
            .iter()
            .map(|p| (p.display().to_string(), Query { inputs: vec![p.clone()], ..self.clone() }))
            .collect()
    }

    /// The time zone clock times of a window are in, and its messages say times in (default:
    /// UTC; `--local` gives the local one, docs/cli.md#times-shown).
    pub fn time_zone(mut self, tz: jiff::tz::TimeZone) -> Query {
        self.tz = Some(tz);
        self
    }

    /// Other captures of the same connections, taken at other points of the path (`--with`):
    /// `vantage::Proof::of` correlates them with the input, so that the front ends say what
    /// they prove (docs/screening.md, "Several captures"). The pass itself reads the inputs
    /// only.
    pub fn vantage(mut self, others: Vec<PathBuf>) -> Query {
        self.vantage = others;
        self
    }

    /// The vantage points given ([`Query::vantage`]).
    pub fn vantage_points(&self) -> &[PathBuf] {
        &self.vantage
    }

    /// Whether only a time window of the inputs is read ([`Query::window`], [`Query::span`]).
    pub fn windowed(&self) -> bool {
        self.span.is_some() || self.window.is_set()
    }

    /// The inputs.
    pub fn inputs(&self) -> &[PathBuf] {
        &self.inputs
    }

    /// Bytes of the inputs, for a progress bar: a file's size, or the sum of a directory's files.
    pub fn input_bytes(&self) -> u64 {
        let len = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let bytes = |p: &std::path::Path| match std::fs::read_dir(p) {
            Ok(entries) => entries.filter_map(|e| e.ok()).map(|e| len(&e.path())).sum(),
            Err(_) => len(p),
        };
        self.inputs.iter().map(|p| bytes(p)).sum()
    }

    /// Whether the inputs are read as trace sets (a window, a directory, or `merge`).
    fn as_sets(&self) -> bool {
        self.merge || self.span.is_some() || self.window.is_set() || self.inputs.iter().any(|p| p.is_dir())
    }

    /// Runs the pass with a sink from `make` per trace. `progress` is told of bytes and packets
    /// read as they are, as increments. Errors reading a file are in its summary (the results
    /// of what was read before stand); the only error returned is one a sink stopped the pass
    /// with.
    pub fn run<S: Sink + Send>(
        &self,
        make: impl Fn() -> S + Sync,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> io::Result<Run<S>> {
        self.run_made(&make, true, progress)
    }

    /// [`Query::run`] with one sink, for a query of one trace (one input, or `merge`): returns
    /// the sink, the summaries of the trace's files and the trace's record.
    /// The file is not split over threads by 4-tuple (that takes a sink per thread).
    pub fn run_one<S: Sink + Send>(
        &self,
        sink: S,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> io::Result<(S, Vec<FileSummary>, Trace<()>)> {
        let cell = std::sync::Mutex::new(Some(sink));
        // Called once: one trace, and no shards.
        let make = || cell.lock().ok().and_then(|mut s| s.take()).expect("one trace, one sink");
        if !self.merge && self.inputs.len() != 1 {
            return Err(io::Error::other("run_one: a query of one trace was expected"));
        }
        let run = self.run_made(&make, false, progress)?;
        let (sink, rest) = run.traces.into_iter().next().expect("one trace").split();
        Ok((sink, run.files, rest))
    }

    fn run_made<S: Sink + Send>(
        &self,
        make: &(dyn Fn() -> S + Sync),
        shard: bool,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> io::Result<Run<S>> {
        let mut run = Run { files: Vec::new(), traces: Vec::new() };
        let mut failed = None;
        if self.as_sets() {
            let groups: Vec<Vec<PathBuf>> = if self.merge {
                vec![self.inputs.clone()]
            } else {
                self.inputs.iter().map(|p| vec![p.clone()]).collect()
            };
            for group in groups {
                let start = run.files.len();
                let mut trace = Trace {
                    sink: make(),
                    input: group.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" + "),
                    files: start..start,
                    window: None,
                    error: None,
                    window_error: false,
                    empty: None,
                    warnings: Vec::new(),
                };
                match self.open_set(&group) {
                    Err((e, window_error)) => (trace.error, trace.window_error) = (Some(e), window_error),
                    Ok((set, window)) => {
                        trace.warnings = set.warnings.clone();
                        let delta = Delta::new(progress);
                        let (files, sink, f) = inputs::set(
                            &set,
                            window,
                            start,
                            self.settings,
                            self.keep(),
                            &|b, p| delta.report(b, p),
                            trace.sink,
                        );
                        if files.is_empty() {
                            trace.empty = Some(set.empty_window_text(window.0, window.1, &self.zone()));
                        }
                        (trace.sink, trace.window, failed) = (sink, Some(window), failed.or(f));
                        run.files.extend(files);
                        trace.files = start..run.files.len();
                    }
                }
                run.traces.push(trace);
                if failed.is_some() {
                    break;
                }
            }
        } else {
            let one = self.inputs.len() == 1;
            let parts: Vec<_> = self
                .inputs
                .par_iter()
                .enumerate()
                .map(|(i, path)| {
                    let delta = Delta::new(progress);
                    let progress = &|b, p| delta.report(b, p);
                    if !one || self.threads == 1 || self.keep().is_some() {
                        inputs::one_thread(path, i, self.settings, self.keep(), progress, make())
                    } else if S::JOINS && shard {
                        threads::sharded(path, i, self.settings, self.threads, progress, make)
                    } else {
                        threads::pipelined(path, i, self.settings, progress, make())
                    }
                })
                .collect();
            for (i, (file, sink, f)) in parts.into_iter().enumerate() {
                run.files.push(file);
                run.traces.push(Trace {
                    sink,
                    input: self.inputs[i].display().to_string(),
                    files: i..i + 1,
                    window: None,
                    error: None,
                    window_error: false,
                    empty: None,
                    warnings: vec![],
                });
                failed = failed.or(f);
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(run),
        }
    }

    /// [`Query::run`] for the statistics of every connection.
    pub fn stats(&self, progress: &(dyn Fn(u64, u64) + Sync)) -> io::Result<Analysis> {
        Ok(self.run(StatsSink::default, progress)?.into_analysis())
    }

    /// Which packets to analyse, when not all.
    fn keep(&self) -> Option<inputs::Keep> {
        (self.only.is_some() || self.shard.is_some()).then_some(inputs::Keep { only: self.only, shard: self.shard })
    }

    /// The time zone clock times are in.
    fn zone(&self) -> jiff::tz::TimeZone {
        self.tz.clone().unwrap_or(jiff::tz::TimeZone::UTC)
    }

    /// Opens the trace set of `paths` and places the window on it.
    /// The set of `paths` and the window on it; the error says whether it is about the window.
    fn open_set(&self, paths: &[PathBuf]) -> Result<(TraceSet, (u64, u64)), (String, bool)> {
        let set = TraceSet::open(paths).map_err(|e| (e.to_string(), false))?;
        let window = match self.span {
            Some(span) => span,
            None => set.window(&self.window, &self.zone()).map_err(|e| (e, true))?,
        };
        Ok((set, window))
    }
}

/// Turns one reader's absolute reports (bytes, packets so far) into increments.
struct Delta<'a> {
    report: &'a (dyn Fn(u64, u64) + Sync),
    bytes: AtomicU64,
    packets: AtomicU64,
}

impl<'a> Delta<'a> {
    fn new(report: &'a (dyn Fn(u64, u64) + Sync)) -> Self {
        Delta { report, bytes: AtomicU64::new(0), packets: AtomicU64::new(0) }
    }
    fn report(&self, bytes: u64, packets: u64) {
        (self.report)(
            bytes.saturating_sub(self.bytes.swap(bytes, Ordering::Relaxed)),
            packets.saturating_sub(self.packets.swap(packets, Ordering::Relaxed)),
        )
    }
}

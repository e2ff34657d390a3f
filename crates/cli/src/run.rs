//! Runs a command: analyse the inputs (files in parallel), then print.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use tcpscope_core::analysis::{Settings, Sink};
use tcpscope_core::capture::{TraceSet, time};
use tcpscope_core::pass::{self, Analysis, FileSummary};
use tcpscope_core::stats::StatsSink;

use crate::args::{Cli, Command, CommonArgs};
use crate::output;

pub fn run(cli: Cli) -> io::Result<ExitCode> {
    match cli.command {
        Command::Conns(args) => {
            let an = analyse(&args)?;
            let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
            output::conns(&mut out, &an, &args)?;
            out.flush()?;
            Ok(status(&an))
        }
        Command::Stats(s) => {
            let args = s.common;
            let an = analyse(&args)?;
            let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
            output::stats(&mut out, &an, &args)?;
            out.flush()?;
            Ok(status(&an))
        }
        Command::Screen(args) => crate::screen::screen(&args),
        Command::Plot(args) => crate::plot::plot(&args),
        Command::View(args) => crate::view::view(&args),
        Command::Report(args) => crate::view::report(&args),
        Command::Print(p) => crate::print::print(&p.common),
        #[cfg(feature = "capture")]
        Command::Capture(a) => crate::print::capture(&a),
    }
}

/// Exit 0 when something useful was read (errors were reported on stderr), 1 when nothing.
pub fn status(an: &Analysis) -> ExitCode {
    if an.nothing_read() { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

pub fn settings(args: &CommonArgs) -> io::Result<Settings> {
    if args.idle_split.is_nan() || args.idle_split <= 0.0 {
        return Err(io::Error::other("--idle-split must be a positive number of seconds"));
    }
    Ok(Settings { idle_split_ns: (args.idle_split * 1e9) as u64, assume_wscale: args.wscale })
}

/// Analyses the inputs for statistics (see [`analyse_with`]); a file alone is analysed by as
/// many threads as there are cores, its connections split among them.
fn analyse(args: &CommonArgs) -> io::Result<Analysis> {
    let settings = settings(args)?;
    let alone = |path: &Path, progress: &(dyn Fn(u64, u64) + Sync)| {
        pass::analyze_file_sharded(path, 0, settings, rayon::current_num_threads(), progress, StatsSink::default)
    };
    let (files, sinks) = analyse_with(args, StatsSink::default, Some(&alone))?;
    Ok(Analysis { files, conns: sinks.into_iter().flat_map(|s| s.conns).collect() })
}

/// How a file given alone is analysed, if not by [`pass::analyze_file_with`] in two threads.
pub type Alone<'a, S> = Option<&'a (dyn Fn(&Path, &(dyn Fn(u64, u64) + Sync)) -> (FileSummary, S) + Sync)>;

/// Analyses the inputs with a sink from `make` per file: each file on its own (in parallel), or
/// all merged (one sink). Errors reading a file are printed on stderr with the file and
/// offset; the results of what was read stand. Sinks come back in file order.
pub fn analyse_with<S: Sink + Send>(
    args: &CommonArgs,
    make: impl Fn() -> S + Sync,
    alone: Alone<'_, S>,
) -> io::Result<(Vec<FileSummary>, Vec<S>)> {
    let settings = settings(args)?;
    let total: u64 = args.traces.iter().map(|p| input_bytes(p)).sum();
    let progress = Progress::new(total, args.quiet);
    let windowed = args.window.get().is_set() || args.traces.iter().any(|p| p.is_dir());
    let (files, sinks) = if windowed {
        analyse_sets(args, settings, &make, &progress)?
    } else if args.merge {
        let (files, sink) = pass::analyze_merged_with(&args.traces, settings, &progress.reader(), make());
        (files, vec![sink])
    } else if let (Some(alone), [path]) = (alone, &args.traces[..]) {
        let (file, sink) = alone(path, &progress.reader());
        (vec![file], vec![sink])
    } else {
        // One file: read and analyse in two threads. Several: one thread per file.
        let pipelined = args.traces.len() == 1;
        let parts: Vec<(FileSummary, S)> = args
            .traces
            .par_iter()
            .enumerate()
            .map(|(i, path)| pass::analyze_file_with(path, i, settings, pipelined, &progress.reader(), make()))
            .collect();
        parts.into_iter().unzip()
    };
    progress.finish();
    let mut err = io::stderr().lock();
    for f in &files {
        if let Some(e) = &f.error {
            writeln!(err, "tcpscope: {}: {e}", f.path.display())?;
        }
        for (lt, n) in &f.unknown_link_types {
            writeln!(err, "tcpscope: {}: {n} packets of unsupported link type {lt} skipped", f.path.display())?;
        }
    }
    Ok((files, sinks))
}

/// A progress bar on stderr, shown only on a terminal and only once the work has taken more
/// than a second: bytes read of the total, and packets per second.
struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: std::sync::atomic::AtomicBool,
    enabled: bool,
    packets: AtomicU64,
}

impl Progress {
    fn new(total: u64, quiet: bool) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({msg}, {bytes_per_sec}, {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let enabled = !quiet && io::stderr().is_terminal();
        Progress { bar, start: Instant::now(), shown: false.into(), enabled, packets: AtomicU64::new(0) }
    }
    /// A progress callback for one reader, which reports its absolute position (bytes,
    /// packets): turned into increments of the shared bar.
    fn reader(&self) -> impl Fn(u64, u64) + Sync + '_ {
        let (bytes, packets) = (AtomicU64::new(0), AtomicU64::new(0));
        move |b, p| {
            self.add(
                b.saturating_sub(bytes.swap(b, Ordering::Relaxed)),
                p.saturating_sub(packets.swap(p, Ordering::Relaxed)),
            )
        }
    }
    fn add(&self, bytes: u64, packets: u64) {
        self.bar.inc(bytes);
        let total = self.packets.fetch_add(packets, Ordering::Relaxed) + packets;
        let secs = self.start.elapsed().as_secs_f64();
        if self.enabled && secs > 0.0 {
            self.bar.set_message(format!("{:.2} M packets/s", total as f64 / secs / 1e6));
        }
        if self.enabled && !self.shown.load(Ordering::Relaxed) && self.start.elapsed() > Duration::from_secs(1) {
            self.shown.store(true, Ordering::Relaxed);
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// With a time window or a directory: each TRACE (a file or a ring directory) is one trace set,
/// or all of them one with `--merge`; only the window's packets are read (docs/capture.md).
fn analyse_sets<S: Sink>(
    args: &CommonArgs,
    settings: Settings,
    make: &impl Fn() -> S,
    progress: &Progress,
) -> io::Result<(Vec<FileSummary>, Vec<S>)> {
    let groups: Vec<Vec<std::path::PathBuf>> =
        if args.merge { vec![args.traces.clone()] } else { args.traces.iter().map(|p| vec![p.clone()]).collect() };
    let tz = time::local_zone();
    let (mut files, mut sinks) = (Vec::new(), Vec::new());
    for g in groups {
        let set = open_set(&g)?;
        let (from, to) = window(args, &set, &tz)?;
        let (f, sink) =
            pass::analyze_set_with(&set, from, to, files.len(), settings, &progress.reader(), make(), |_, _, _, _| {
                true
            });
        if f.is_empty() {
            empty_window_note(&set, from, to, &tz)?;
        }
        files.extend(f);
        sinks.push(sink);
    }
    Ok((files, sinks))
}

/// Opens a trace set and reports ignored indexes on stderr.
pub(crate) fn open_set(paths: &[std::path::PathBuf]) -> io::Result<TraceSet> {
    let set = TraceSet::open(paths).map_err(io::Error::other)?;
    let mut err = io::stderr().lock();
    for w in &set.warnings {
        writeln!(err, "tcpscope: {w}")?;
    }
    Ok(set)
}

/// The window `[from, to)` of the arguments for this set.
pub(crate) fn window(args: &CommonArgs, set: &TraceSet, tz: &jiff::tz::TimeZone) -> io::Result<(u64, u64)> {
    set.window(&args.window.get(), tz).map_err(io::Error::other)
}

/// Says on stderr that a window held no packet, and where the trace is.
pub(crate) fn empty_window_note(set: &TraceSet, from: u64, to: u64, tz: &jiff::tz::TimeZone) -> io::Result<()> {
    writeln!(io::stderr(), "tcpscope: {}", set.empty_window_text(from, to, tz))
}

/// Bytes of an input, for the progress bar: a file's size, or the sum of a directory's files.
fn input_bytes(p: &std::path::Path) -> u64 {
    let len = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    match std::fs::read_dir(p) {
        Ok(entries) => entries.filter_map(|e| e.ok()).map(|e| len(&e.path())).sum(),
        Err(_) => len(p),
    }
}

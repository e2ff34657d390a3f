//! Runs a command: analyse the inputs (files in parallel), then print.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tcpscope_core::analysis::{Settings, Sink};
use tcpscope_core::correlate;
use tcpscope_core::pass::{Analysis, FileSummary, Query, Run};
use tcpscope_core::stats::StatsSink;
use tcpscope_core::vantage::Proof;

use crate::args::{Cli, Command, CommonArgs};
use crate::output;

pub fn run(cli: Cli) -> io::Result<ExitCode> {
    match cli.command {
        Command::Conns(args) => {
            let an = analyse(&args)?;
            if an.nothing_read() {
                // Why was said on stderr; no empty table on stdout.
                return Ok(status(&an));
            }
            let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
            output::conns(&mut out, &an, &args)?;
            out.flush()?;
            Ok(status(&an))
        }
        Command::Stats(s) => {
            let args = s.common;
            let tz = args.zone.get();
            if let Some(r) = crate::monitor::stats_if_recording(&args) {
                return r;
            }
            if !s.with.is_empty() && args.csv {
                return Err(io::Error::other("stats --with: the proof is written as text or --json, not CSV"));
            }
            let proof = proof(&query(&args)?.vantage(s.with))?;
            let an = analyse(&args)?;
            if an.nothing_read() {
                return Ok(status(&an));
            }
            let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
            match &proof {
                Some(p) => output::stats_proved(&mut out, &an, &args, &tz, p)?,
                None => output::stats(&mut out, &an, &args, &tz)?,
            }
            out.flush()?;
            Ok(status(&an))
        }
        Command::Quality(args) => crate::quality::quality(&args),
        Command::Screen(args) => crate::screen::screen(&args),
        Command::States(args) => crate::states::states(&args),
        Command::Plot(args) => crate::plot::plot(&args),
        Command::Export(args) => crate::export::export(&args),
        Command::View(args) => crate::view::view(&args),
        Command::Report(args) => crate::view::report(&args),
        Command::Print(p) => crate::print::print(&p.common),
        Command::Repair(a) => crate::repair::repair(&a),
        #[cfg(feature = "capture")]
        Command::Capture(a) => crate::print::capture(&a),
        Command::Monitor(a) => crate::monitor::monitor(&a),
        Command::Event(a) => crate::monitor::event(&a),
        Command::Ttcp(a) => crate::lab::ttcp(&a),
        Command::Lab(a) => Ok(crate::lab::lab(&a)),
        Command::Correlate(a) => crate::correlate::correlate(&a),
    }
}

/// Exit 0 when something useful was read (errors were reported on stderr), 1 when nothing.
pub fn status(an: &Analysis) -> ExitCode {
    if an.nothing_read() { ExitCode::from(EXIT_INPUT) } else { ExitCode::SUCCESS }
}

/// The exit status when the input could not be read, or held nothing to analyse (no packets
/// in the time window): docs/cli.md#exit-status.
pub const EXIT_INPUT: u8 = 1;
/// The exit status of a usage error: a bad flag, or one the input cannot satisfy (no such
/// connection), or an output that cannot be written.
pub const EXIT_USAGE: u8 = 2;

/// An error about the input, which exits [`EXIT_INPUT`]: the message names the input.
#[derive(Debug)]
struct InputError(String);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// An error saying the input could not be read or held nothing to analyse: the command exits
/// [`EXIT_INPUT`]. Any other error is a usage error ([`EXIT_USAGE`]).
pub fn input_error(msg: impl Into<String>) -> io::Error {
    io::Error::other(InputError(msg.into()))
}

/// `path: msg`, unless `msg` already begins with the path (errors about a ring directory name
/// it themselves): a path is said once.
pub fn on_path(path: &std::path::Path, msg: &str) -> String {
    let p = path.display().to_string();
    if msg.starts_with(&format!("{p}: ")) { msg.to_string() } else { format!("{p}: {msg}") }
}

/// The exit status of a command that failed with `e`.
pub fn exit_status(e: &io::Error) -> ExitCode {
    let input = e.get_ref().is_some_and(|r| r.downcast_ref::<InputError>().is_some());
    ExitCode::from(if input { EXIT_INPUT } else { EXIT_USAGE })
}

pub fn settings(args: &CommonArgs) -> io::Result<Settings> {
    if args.idle_split.is_nan() || args.idle_split <= 0.0 {
        return Err(io::Error::other("--idle-split must be a positive number of seconds"));
    }
    Ok(Settings {
        idle_split_ns: (args.idle_split * 1e9) as u64,
        assume_wscale: args.wscale,
        checksums: args.checksums,
        ..Settings::default()
    })
}

/// The query the common arguments ask for: the inputs, their window, merged or not, the
/// analysis settings (the strategy is the query's to choose).
pub fn query(args: &CommonArgs) -> io::Result<Query> {
    Ok(Query::new(args.traces.clone())
        .settings(settings(args)?)
        .window(args.window.get())
        .merge(args.merge)
        .time_zone(args.zone.get()))
}

/// What the query's vantage points (`--with`) prove about its input, or `None` without any
/// (docs/screening.md, "Several captures"): correlate's pass over the captures, before the
/// analysis'.
pub fn proof(query: &Query) -> io::Result<Option<std::sync::Arc<Proof>>> {
    match Proof::of(query, &correlate::Settings::default()) {
        Ok(p) => Ok(p.map(std::sync::Arc::new)),
        Err(correlate::Error::Usage(m)) => Err(io::Error::other(m)),
        Err(e) => Err(input_error(e.to_string())),
    }
}

/// Analyses the inputs for statistics (see [`analyse_with`]).
fn analyse(args: &CommonArgs) -> io::Result<Analysis> {
    let an = analyse_with(args, StatsSink::default)?.into_analysis();
    crate::quality::warn(&an.files, &an.conns, args.quiet)?;
    Ok(an)
}

/// Runs the query of `args` with a sink from `make` per trace, with a progress bar. A trace
/// that cannot be read at all (a ring that cannot be opened, a window that cannot be placed on
/// it) is an error; errors reading a file are printed on stderr with the file and offset, and
/// the results of what was read stand.
pub fn analyse_with<S: Sink + Send>(args: &CommonArgs, make: impl Fn() -> S + Sync) -> io::Result<Run<S>> {
    analyse_query(query(args)?, args, make)
}

/// As [`analyse_with`], running `query` (the one `args` ask for, changed by the caller).
pub fn analyse_query<S: Sink + Send>(
    query: Query,
    args: &CommonArgs,
    make: impl Fn() -> S + Sync,
) -> io::Result<Run<S>> {
    let progress = Progress::new(query.input_bytes(), args.quiet);
    let run = query.run(make, &|bytes, packets| progress.add(bytes, packets));
    progress.finish();
    // The only error here is one a sink stopped the pass with (a closed pipe, say): kept as is.
    let run = run?;
    let mut err = io::stderr().lock();
    for t in &run.traces {
        if let Some(e) = &t.error {
            return Err(if t.window_error { io::Error::other(e.clone()) } else { input_error(e.clone()) });
        }
        for w in &t.warnings {
            writeln!(err, "tcpscope: {w}")?;
        }
        if let Some(e) = &t.empty {
            writeln!(err, "tcpscope: {e}")?;
        }
    }
    drop(err);
    say_files(&run.files, args.quiet)?;
    Ok(run)
}

/// What reading the files leaves to say on stderr, the same in every command that reads
/// traces: each damaged stretch and the count of damaged timestamps (not with `quiet`:
/// `--json` output keeps them in its file summaries), the error that stopped a file, the
/// packets of link types not decoded.
pub fn say_files(files: &[FileSummary], quiet: bool) -> io::Result<()> {
    let mut err = io::stderr().lock();
    for f in files {
        if !quiet {
            for d in &f.damaged {
                writeln!(err, "tcpscope: {}: {}", d.file.as_ref().unwrap_or(&f.path).display(), d.describe())?;
            }
        }
        if !quiet && f.bad_timestamps > 0 {
            let n = f.bad_timestamps;
            let s = if n == 1 { "" } else { "s" };
            writeln!(
                err,
                "tcpscope: {}: {n} record{s} with a damaged timestamp given the time of the record before",
                f.path.display()
            )?;
        }
        if let Some(e) = &f.error {
            writeln!(err, "tcpscope: {}", on_path(&f.path, e))?;
        }
        for (lt, n) in &f.unknown_link_types {
            writeln!(err, "tcpscope: {}: {n} packets of unsupported link type {lt} skipped", f.path.display())?;
        }
    }
    Ok(())
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

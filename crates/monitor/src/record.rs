//! A monitoring run: sample at a fixed interval, write the recording and/or stream the samples
//! as JSON lines or CSV.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::fields::{Sample, csv_header};
use crate::filter::Filter;
use crate::ship::ShipState;
use crate::source::{SamplerKind, Source};
use crate::track::{Sampler, Step};
use crate::tsm::{Header, Writer};

/// What to sample.
#[derive(Clone, Debug)]
pub struct Options {
    /// The filter as the user wrote it (parsed with [`Filter::parse`]).
    pub filter: String,
    pub interval: Duration,
    pub pid: Option<u32>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Receive application events here (`unix:PATH` or `udp:ADDR:PORT`).
    pub events: Option<String>,
    /// Sample host CPU (and the `pid`'s) at most this often; `None`: not at all.
    pub cpu_every: Option<Duration>,
    /// Ship the recording to this collector (`HOST:PORT`); the recording file is then appended
    /// to, not truncated, and is the spill while the collector is away.
    pub to: Option<String>,
    /// At the end, how long to keep trying to reach the collector before leaving the rest in
    /// the spill (sent by the next run with the same file).
    pub to_grace: Duration,
    /// Share of one core the sampling may take; above it, dumps are spaced further apart than
    /// `interval` ([`crate::track::Sampler::cpu_budget`]). `None`: every `interval`.
    pub cpu_budget: Option<f64>,
}

/// How streamed samples are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Json,
    Csv,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub dumps: u64,
    pub samples: u64,
    pub conns: u64,
    pub events: u64,
    pub cpu_samples: u64,
    /// Event lines that could not be parsed (skipped), with the first one's error.
    pub bad_events: u64,
    pub first_bad_event: Option<String>,
    /// With `to`: bytes of the recording the collector has (all of them when caught up), and
    /// connections made to it.
    pub shipped: Option<(u64, u64)>,
    pub overruns: u64,
    /// Dumps put off by the CPU budget.
    pub stretched: u64,
    pub kernel_filter: bool,
    /// The sampler used (`bpf` or `netlink`), and why it is not the BPF iterator when
    /// `auto` fell back.
    pub sampler: &'static str,
    pub sampler_note: Option<String>,
    /// Bytes of the recording.
    pub bytes: u64,
    pub elapsed: Duration,
}

/// The previous and first sample of each connection, for deltas and derived fields.
#[derive(Default)]
pub struct History {
    by: HashMap<u32, (Sample, Sample)>,
}

impl History {
    /// Writes `s` in `format` with its connection's history, then remembers it. Connections
    /// that ended should be [`History::forget`]-ed.
    pub fn write(&mut self, out: &mut impl Write, format: Stream, s: &Sample) -> io::Result<()> {
        let (prev, first) = match self.by.get(&s.conn) {
            Some((p, f)) => (Some(p), f),
            None => (None, s),
        };
        match format {
            Stream::Json => {
                serde_json::to_writer(&mut *out, &s.json(prev, first))?;
                out.write_all(b"\n")?;
            }
            Stream::Csv => writeln!(out, "{}", s.csv_row(prev, first))?,
        }
        match self.by.get_mut(&s.conn) {
            Some(e) => e.0 = s.clone(),
            None => {
                self.by.insert(s.conn, (s.clone(), s.clone()));
            }
        }
        Ok(())
    }

    pub fn forget(&mut self, conn: u32) {
        self.by.remove(&conn);
    }
}

/// Runs until `stop` is set or the duration passes. Writes the recording to `path` if given,
/// streams samples to `stream` if given, and calls `each` after every dump (for progress).
/// Samples with netlink; [`run_with`] chooses the sampler.
pub fn run(
    opts: &Options,
    path: Option<&Path>,
    stream: Option<(Stream, &mut dyn Write)>,
    stop: &AtomicBool,
    each: impl FnMut(&Step),
) -> io::Result<Report> {
    run_with(opts, SamplerKind::Netlink, path, stream, stop, each)
}

/// [`run`] with the sampler `sampler` (`--sampler`: the BPF iterator, netlink, or `auto`, the
/// first that works); the report says which one ran.
pub fn run_with(
    opts: &Options,
    sampler: SamplerKind,
    path: Option<&Path>,
    mut stream: Option<(Stream, &mut dyn Write)>,
    stop: &AtomicBool,
    mut each: impl FnMut(&Step),
) -> io::Result<Report> {
    let filter = Filter::parse(&opts.filter).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let (source, sampler_note) = Source::open(filter, sampler)?;
    let listener = opts
        .events
        .as_deref()
        .map(|spec| crate::events::Listener::bind(spec).and_then(crate::events::Receiver::start))
        .transpose()?;
    let mut last_cpu: Option<Instant> = None;
    let mut sampler = Sampler::new(source, opts.interval, opts.pid);
    sampler.cpu_budget = opts.cpu_budget;
    let started = Instant::now();
    // The first dump tells whether the kernel takes the bytecode, which the header records.
    sampler.once()?;
    let t0 = now_ns();
    let mut stream_id = String::new();
    let mut writer = match path {
        Some(p) => {
            let mut h = Header::new(
                opts.interval.as_nanos() as u64,
                &opts.filter,
                sampler.source.kernel_filter(),
                opts.pid,
                t0,
            );
            h.sampler = sampler.source.name().into();
            let at = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
            if opts.to.is_some() {
                let (w, h) = Writer::append(p, &h).map_err(at)?;
                stream_id = h.stream;
                Some(w)
            } else {
                Some(Writer::create(p, &h).map_err(at)?)
            }
        }
        None => None,
    };
    let shipper = match (&opts.to, path) {
        (Some(to), Some(p)) => {
            let state = Arc::new(ShipState::default());
            let done = Arc::new(AtomicBool::new(false));
            let (p, to, grace, st, d) =
                (p.to_path_buf(), to.clone(), opts.to_grace, Arc::clone(&state), Arc::clone(&done));
            let stream = stream_id.clone();
            let h = std::thread::spawn(move || crate::ship::ship(p, stream, to, d, grace, st));
            Some((h, done, state))
        }
        (Some(_), None) => {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "--to needs -w FILE: the recording is the spill"));
        }
        _ => None,
    };
    if let Some((Stream::Csv, out)) = stream.as_mut() {
        writeln!(out, "{}", csv_header())?;
    }
    let mut hist = History::default();
    let mut report = Report::default();
    let mut handle = |step: &Step| -> io::Result<bool> {
        report.conns += step.started.len() as u64;
        report.samples += step.samples.len() as u64;
        let t = step.samples.first().map_or_else(now_ns, |s| s.t_ns);
        if let Some((format, out)) = stream.as_mut() {
            for s in &step.samples {
                hist.write(out, *format, s)?;
            }
            for e in &step.ended {
                hist.forget(e.id);
            }
            out.flush()?;
        }
        each(step);
        if let Some(w) = writer.as_mut() {
            for c in &step.started {
                w.conn(c)?;
            }
            for s in &step.samples {
                w.sample(s)?;
            }
            for e in &step.ended {
                w.end(e)?;
            }
        }
        if let Some(l) = &listener {
            let (events, errs) = l.take();
            report.events += events.len() as u64;
            report.bad_events += errs.len() as u64;
            if report.first_bad_event.is_none() {
                report.first_bad_event = errs.into_iter().next();
            }
            if let Some(w) = writer.as_mut() {
                for e in &events {
                    w.event(e)?;
                }
            }
        }
        if let Some(every) = opts.cpu_every
            && last_cpu.is_none_or(|l| l.elapsed() >= every)
        {
            last_cpu = Some(Instant::now());
            // A process that exited has no /proc/PID/stat: its CPU is then simply absent.
            let c = crate::events::cpu_sample(t, opts.pid).or_else(|_| crate::events::cpu_sample(t, None))?;
            report.cpu_samples += 1;
            if let Some(w) = writer.as_mut() {
                w.cpu(&c)?;
            }
        }
        if let Some(w) = writer.as_mut() {
            w.tick()?;
        }
        Ok(true)
    };
    handle(sampler.last_step())?;
    let until = opts.duration.map(|d| started + d);
    let result = sampler.run(until, stop, &mut handle);
    let ends = sampler.tracker.finish(now_ns());
    if let Some(w) = writer.as_mut() {
        for e in &ends {
            w.end(e)?;
        }
        w.finish()?;
        report.bytes = w.bytes;
    }
    if let Some((h, done, state)) = shipper {
        done.store(true, Ordering::Relaxed);
        let _ = h.join();
        report.shipped = Some((state.sent.load(Ordering::Relaxed), state.connects.load(Ordering::Relaxed)));
    }
    result?;
    report.dumps = sampler.dumps;
    report.overruns = sampler.overruns;
    report.stretched = sampler.stretched;
    report.kernel_filter = sampler.source.kernel_filter();
    report.sampler = sampler.source.name();
    report.sampler_note = sampler_note;
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Wall-clock time, ns since the epoch.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Parses a duration: a number with `us`, `ms`, `s` or `m` (`10ms`, `1.5s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("`{s}` is not a duration (e.g. 10ms, 1.5s)"))?;
    let secs = match unit {
        "us" | "µs" => v / 1e6,
        "ms" => v / 1e3,
        "s" | "" => v,
        "m" | "min" => v * 60.0,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (us, ms, s, m)")),
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("`{s}` must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("5h").is_err());
    }
}

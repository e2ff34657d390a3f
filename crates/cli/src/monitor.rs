//! `tcpscope monitor` and the commands on its recordings (`stats run.tsm`): flags and printing
//! only; the work is `tcpscope-monitor`'s (docs/monitor.md).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Args;
use tcpscope_monitor::record::{self, History, Options, Stream};
use tcpscope_monitor::triage::{self, ConnSummary};
use tcpscope_monitor::{events, tsm};

use crate::args::CommonArgs;

/// Flags of `tcpscope monitor`.
#[derive(Args, Debug)]
pub struct MonitorArgs {
    /// Which sockets: `sport N`, `dport N`, `port N`, `src ADDR[/LEN]`, `dst ADDR[/LEN]`,
    /// `host ADDR[/LEN]`, joined by `and` / `or` (e.g. 'dport 5201 or sport 22'); compiled
    /// to the kernel's socket-filter bytecode. Default: every TCP socket.
    #[arg(long, short = 'f', value_name = "EXPR", default_value = "")]
    pub filter: String,
    /// Only the sockets of this process (matched by socket inode in /proc/PID/fd).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Sampling interval (1ms to minutes; e.g. 10ms, 0.5s). Default 100ms, within --cpu-budget.
    #[arg(long, short = 'i', value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Option<std::time::Duration>,
    /// CPU the sampling may take, in % of one core (e.g. 5%; 0 or `off`: no limit): when a
    /// sample of every matching socket costs more than that at the interval, samples are spaced
    /// further apart (the kernel's work for the dump included; docs/monitor.md, Cost at scale).
    /// Default: 5% with the default interval, no limit when -i is given.
    #[arg(long, value_name = "PERCENT", value_parser = parse_budget)]
    pub cpu_budget: Option<f64>,
    /// Record into this file (.tsm; docs/monitor.md).
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Stop after this long (e.g. 10s); otherwise at Ctrl-C / SIGTERM.
    #[arg(long = "for", value_name = "DURATION", value_parser = record::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Print every sample as a JSON line on standard output (fields: docs/monitor.md).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print every sample as a CSV row on standard output, after a header row.
    #[arg(long)]
    pub csv: bool,
    /// Receive application events on this socket and record them: `unix:PATH` or
    /// `udp:127.0.0.1:PORT` (NetLogger `ts=... event=... guid=...` lines or JSON objects;
    /// `tcpscope event` sends one).
    #[arg(long, value_name = "SOCKET")]
    pub events: Option<String>,
    /// Do not sample host CPU (/proc/stat) and the --pid process's CPU.
    #[arg(long)]
    pub no_cpu: bool,
    /// Ship the recording to a collector (`monitor --collect`) at tcp://HOST:PORT, exactly once
    /// across restarts of either; needs -w FILE, the local spill, which is then appended to
    /// (a new session) rather than truncated.
    #[arg(long, value_name = "tcp://HOST:PORT", requires = "write")]
    pub to: Option<String>,
    /// At the end, keep trying to reach the collector this long; what is not sent by then stays
    /// in the spill for the next run with the same -w FILE.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = record::parse_duration)]
    pub to_grace: std::time::Duration,
    /// Be a collector instead: accept recorders' --to on tcp://HOST:PORT (127.0.0.1 to stay
    /// local) and store each stream as DIR/STREAM.tsm, with -w DIR.
    #[arg(long, value_name = "tcp://HOST:PORT", requires = "write", conflicts_with_all = ["to", "pid", "export", "json", "csv", "events"])]
    pub collect: Option<String>,
    /// A live terminal view instead of a recording: one row per connection (cwnd, RTT, rate,
    /// retransmissions, what limits it), refreshed in place; q quits.
    #[arg(long, conflicts_with_all = ["write", "json", "csv", "collect", "export", "events"])]
    pub top: bool,
    /// Instead of sampling, print the samples of this recording (with --json or --csv).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["write", "pid", "duration"])]
    pub export: Option<PathBuf>,
    /// No progress line on standard error.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// How to read the kernel's sockets: `netlink` (NETLINK_SOCK_DIAG, as ss), `bpf` (a BPF
    /// iterator over TCP sockets; needs root and kernel BTF; no BBR fields), or `auto`: bpf if
    /// it loads, else netlink. The closing summary says which one ran (docs/monitor.md, The BPF
    /// sampler).
    #[arg(long, value_name = "netlink|bpf|auto", default_value = "netlink")]
    pub sampler: tcpscope_monitor::source::SamplerKind,
}

fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let d = record::parse_duration(s)?;
    if d < std::time::Duration::from_millis(1) {
        return Err(format!("`{s}`: the interval must be at least 1ms"));
    }
    Ok(d)
}

/// `5%`, `5` or `off` to a share of one core (0: no limit).
fn parse_budget(s: &str) -> Result<f64, String> {
    let t = s.trim();
    if t == "off" {
        return Ok(0.0);
    }
    match t.strip_suffix('%').unwrap_or(t).trim().parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p / 100.0),
        _ => Err(format!("`{s}`: a CPU budget is a percentage of one core (e.g. 5%) or `off`")),
    }
}

fn stream_format(json: bool, csv: bool) -> Option<Stream> {
    if json {
        Some(Stream::Json)
    } else if csv {
        Some(Stream::Csv)
    } else {
        None
    }
}

/// `tcpscope monitor`.
pub fn monitor(a: &MonitorArgs) -> io::Result<ExitCode> {
    let format = stream_format(a.json, a.csv);
    if let Some(path) = &a.export {
        return export(path, format.unwrap_or(Stream::Json));
    }
    if let Some(c) = &a.collect {
        return collect(a, c);
    }
    if a.write.is_none() && format.is_none() && !a.top {
        return Err(io::Error::other("say where the samples go: -w FILE (a recording), --json, --csv or --top"));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let interval = a.interval.unwrap_or(std::time::Duration::from_millis(100));
    let cpu_budget = match a.cpu_budget {
        Some(b) => (b > 0.0).then_some(b),
        None => a.interval.is_none().then_some(0.05),
    };
    let opts = Options {
        filter: a.filter.clone(),
        interval,
        pid: a.pid,
        duration: a.duration,
        events: a.events.clone(),
        // CPU counters move in 10 ms ticks: sampling them faster than 100 ms says nothing more.
        cpu_every: (!a.no_cpu).then(|| interval.max(std::time::Duration::from_millis(100))),
        to: a.to.as_deref().map(tcpscope_monitor::ship::parse_endpoint).transpose()?,
        to_grace: a.to_grace,
        cpu_budget,
    };
    if a.top {
        tcpscope_monitor::top::run(&opts, a.sampler, &stop)?;
        return Ok(ExitCode::SUCCESS);
    }
    let stdout = io::stdout();
    let mut lock = io::BufWriter::new(stdout.lock());
    let progress = !a.quiet && io::stderr().is_terminal();
    let mut live = 0i64;
    let report = record::run_with(
        &opts,
        a.sampler,
        a.write.as_deref(),
        format.map(|f| (f, &mut lock as &mut dyn Write)),
        &stop,
        |step| {
            live += step.started.len() as i64 - step.ended.len() as i64;
            if progress {
                eprint!("\r{live} connections, {} sockets in the last sample   ", step.samples.len());
            }
        },
    )?;
    lock.flush()?;
    if !a.quiet {
        if progress {
            eprintln!();
        }
        let per = if report.samples > 0 { report.bytes as f64 / report.samples as f64 } else { 0.0 };
        if let Some((sent, connects)) = report.shipped {
            let all = if sent >= report.bytes { "all" } else { "not all: the rest waits in the spill" };
            eprintln!("monitor: collector has {sent} of {} bytes ({all}; {connects} connections)", report.bytes);
        }
        if let Some(why) = &report.sampler_note {
            eprintln!("monitor: sampling with netlink: {why}");
        }
        if let Some(e) = &report.first_bad_event {
            eprintln!("monitor: {} event lines skipped, the first: {e}", report.bad_events);
        }
        eprintln!(
            "monitor: {} dumps ({} sampler) in {:.1} s ({} late{}), {} connections, {} samples, {} events, {} CPU \
             samples{}; filter ran in the {}",
            report.dumps,
            report.sampler,
            report.elapsed.as_secs_f64(),
            report.overruns,
            match (report.stretched, cpu_budget) {
                (0, _) | (_, None) => String::new(),
                (n, Some(b)) => format!(", {n} put off to stay within {}% of a core", b * 100.0),
            },
            report.conns,
            report.samples,
            report.events,
            report.cpu_samples,
            match &a.write {
                Some(p) => format!(", {} bytes to {} ({per:.1} bytes/sample)", report.bytes, p.display()),
                None => String::new(),
            },
            if report.kernel_filter || a.filter.trim().is_empty() { "kernel" } else { "user space" },
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `monitor --collect`: until SIGINT/SIGTERM.
fn collect(a: &MonitorArgs, listen: &str) -> io::Result<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let addr = tcpscope_monitor::ship::parse_endpoint(listen)?;
    // `requires = "write"` makes -w present.
    let dir = a.write.as_deref().unwrap_or(Path::new("."));
    let quiet = a.quiet;
    tcpscope_monitor::ship::collect(&addr, dir, &stop, move |m| {
        if !quiet {
            eprintln!("collect: {m}");
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

fn read(path: &Path) -> io::Result<tsm::Recording> {
    let rec = tsm::read(path)?;
    if let Some(t) = &rec.tail {
        eprintln!("tcpscope: {}: {t}; read up to there", path.display());
    }
    Ok(rec)
}

fn export(path: &Path, format: Stream) -> io::Result<ExitCode> {
    let rec = read(path)?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    if format == Stream::Csv {
        writeln!(out, "{}", tcpscope_monitor::fields::csv_header())?;
    }
    let mut hist = History::default();
    for s in &rec.samples {
        hist.write(&mut out, format, s)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `tcpscope stats` when its inputs are recordings; `None` when they are not (captures).
pub fn stats_if_recording(args: &CommonArgs) -> Option<io::Result<ExitCode>> {
    if args.traces.is_empty() || !args.traces.iter().all(|p| tsm::is_recording(p)) {
        return None;
    }
    Some(stats(args))
}

fn stats(args: &CommonArgs) -> io::Result<ExitCode> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut all = Vec::new();
    for path in &args.traces {
        let rec = read(path)?;
        let mut sums = triage::summarize_all(&rec);
        if !args.conn.is_empty() {
            sums.retain(|s| args.conn.contains(&(s.id as usize)));
        }
        if args.json {
            all.push(serde_json::json!({
                "file": path.display().to_string(),
                "header": rec.header,
                "bytes": rec.bytes,
                "samples": rec.samples.len(),
                "bytes_per_sample": (!rec.samples.is_empty()).then(|| rec.bytes as f64 / rec.samples.len() as f64),
                "tail": rec.tail,
                "events": rec.events,
                "cpu": cpu(&rec),
                "connections": sums,
            }));
            continue;
        }
        if args.csv {
            csv_rows(&mut out, &sums, all.is_empty())?;
            all.push(serde_json::Value::Null);
            continue;
        }
        text(&mut out, path, &rec, &sums)?;
    }
    if args.json {
        let v = if all.len() == 1 { all.remove(0) } else { serde_json::Value::Array(all) };
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// CPU shares over the whole recording (first to last CPU sample).
fn cpu(rec: &tsm::Recording) -> Option<events::CpuShares> {
    events::cpu_shares(rec.cpu.first()?, rec.cpu.last()?)
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn csv_rows(out: &mut impl Write, sums: &[ConnSummary], header: bool) -> io::Result<()> {
    if header {
        writeln!(
            out,
            "id,src,sport,dst,dport,cong,duration_s,bytes_sent,bytes_acked,bytes_received,retrans_segments,ave_bw,\
             max_int_bw,min_rtt_ms,max_cwnd_bytes,lim_network,lim_receiver,lim_sender,diagnosis"
        )?;
    }
    for s in sums {
        let l = s.limits;
        writeln!(
            out,
            "{},{},{},{},{},{},{:.3},{},{},{},{},{},{},{},{},{},{},{},\"{}\"",
            s.id,
            s.src,
            s.sport,
            s.dst,
            s.dport,
            s.cong.as_deref().unwrap_or(""),
            s.duration_s,
            opt(s.bytes_sent),
            opt(s.bytes_acked),
            opt(s.bytes_received),
            opt(s.retrans_segments),
            opt(s.ave_bw),
            opt(s.max_int_bw),
            opt(s.min_rtt_ms),
            opt(s.max_cwnd_bytes),
            opt(l.map(|l| l.network)),
            opt(l.map(|l| l.receiver)),
            opt(l.map(|l| l.sender)),
            s.diagnosis.replace('"', "\"\""),
        )?;
    }
    Ok(())
}

fn rate(bps: Option<f64>) -> String {
    match bps {
        None => "-".into(),
        Some(b) if b >= 1e9 => format!("{:.2} Gbit/s", b / 1e9),
        Some(b) if b >= 1e6 => format!("{:.2} Mbit/s", b / 1e6),
        Some(b) => format!("{:.1} kbit/s", b / 1e3),
    }
}

fn text(out: &mut impl Write, path: &Path, rec: &tsm::Recording, sums: &[ConnSummary]) -> io::Result<()> {
    let h = rec.header.as_ref();
    writeln!(
        out,
        "{}: {} connections, {} samples, {} events, {} bytes ({:.1} bytes/sample), host {}, interval {} ms",
        path.display(),
        rec.conns.len(),
        rec.samples.len(),
        rec.events.len(),
        rec.bytes,
        if rec.samples.is_empty() { 0.0 } else { rec.bytes as f64 / rec.samples.len() as f64 },
        h.map_or("?", |h| h.host.as_str()),
        h.map_or(0.0, |h| h.interval_ns as f64 / 1e6),
    )?;
    if let Some(c) = cpu(rec) {
        let cores: Vec<String> = c
            .cores
            .iter()
            .enumerate()
            .map(|(i, x)| {
                format!(
                    "cpu{i} user {:.0}% sys {:.0}% iowait {:.0}% softirq {:.0}%",
                    x[0] * 100.0,
                    x[1] * 100.0,
                    x[2] * 100.0,
                    x[3] * 100.0
                )
            })
            .collect();
        let p = c.proc.map_or(String::new(), |p| format!("; process {:.2} cores", p));
        writeln!(out, "  {}{p}", cores.join(", "))?;
    }
    if !rec.events.is_empty() {
        let mut names: Vec<(&str, usize)> = Vec::new();
        for e in &rec.events {
            match names.iter_mut().find(|(n, _)| *n == e.name) {
                Some(x) => x.1 += 1,
                None => names.push((&e.name, 1)),
            }
        }
        let list: Vec<String> = names.iter().map(|(n, k)| format!("{n} ×{k}")).collect();
        writeln!(out, "  events: {}", list.join(", "))?;
    }
    for s in sums {
        writeln!(
            out,
            "{:>4} {}:{} > {}:{} {} {:.1} s, {} samples{}",
            s.id,
            s.src,
            s.sport,
            s.dst,
            s.dport,
            s.cong.as_deref().unwrap_or("?"),
            s.duration_s,
            s.samples,
            if s.ended { ", ended" } else { "" }
        )?;
        writeln!(
            out,
            "     sent {} B, acked {} B, received {} B, retransmitted {} segments; AveBW {}, max IntBW {}; min RTT {} ms, max cwnd {} B",
            opt(s.bytes_sent),
            opt(s.bytes_acked),
            opt(s.bytes_received),
            opt(s.retrans_segments),
            rate(s.ave_bw),
            rate(s.max_int_bw),
            opt(s.min_rtt_ms),
            opt(s.max_cwnd_bytes),
        )?;
        if let Some(l) = s.limits {
            writeln!(
                out,
                "     limited by: network {:.0}%, receiver {:.0}%, sender {:.0}% (send buffer {:.0}%, idle {:.0}%)",
                l.network * 100.0,
                l.receiver * 100.0,
                l.sender * 100.0,
                l.send_buffer * 100.0,
                l.idle * 100.0
            )?;
        }
        writeln!(out, "     {}", s.diagnosis)?;
    }
    Ok(())
}

/// Flags of `tcpscope event`.
#[derive(Args, Debug)]
pub struct EventArgs {
    /// Event name (NetLogger style: dotted, `.start`/`.end` for the two ends of an action).
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Fields, `key=value` (e.g. guid=42 level=INFO).
    #[arg(value_name = "KEY=VALUE")]
    pub fields: Vec<String>,
    /// The recorder's event socket (`monitor --events`); default $TCPSCOPE_EVENTS.
    #[arg(long, value_name = "SOCKET")]
    pub to: Option<String>,
}

/// `tcpscope event`: one NetLogger Best-Practices line to a recorder.
pub fn event(a: &EventArgs) -> io::Result<ExitCode> {
    let to =
        a.to.clone()
            .or_else(|| std::env::var("TCPSCOPE_EVENTS").ok())
            .ok_or_else(|| io::Error::other("say where the recorder listens: --to unix:PATH or $TCPSCOPE_EVENTS"))?;
    let mut fields = Vec::new();
    for f in &a.fields {
        fields.push(f.split_once('=').ok_or_else(|| io::Error::other(format!("`{f}` is not key=value")))?);
    }
    let line = events::bp_line(record::now_ns(), &a.name, &fields)?;
    events::send(&to, &line)?;
    Ok(ExitCode::SUCCESS)
}

/// `tcpscope plot run.tsm -k cwnd|rtt|bw|limits|timeline -c ID` (`flight` and `tput` are taken as `cwnd`
/// and `bw`, their nearest kin for captures).
pub fn plot(args: &crate::args::PlotArgs) -> io::Result<ExitCode> {
    use crate::args::KindArg;
    use tcpscope_monitor::plot::Kind;
    let (kind, name) = match args.kind {
        KindArg::Cwnd | KindArg::Flight => (Kind::Cwnd, "cwnd"),
        KindArg::Rtt => (Kind::Rtt, "rtt"),
        KindArg::Bw | KindArg::Tput => (Kind::Bw, "bw"),
        KindArg::Limits => (Kind::Limits, "limits"),
        KindArg::Timeline => (Kind::Timeline, "timeline"),
        other => {
            let name = clap::ValueEnum::to_possible_value(&other).map_or(String::new(), |v| v.get_name().to_string());
            return Err(io::Error::other(format!(
                "-k {name} plots packets of a capture; a recording plots cwnd, rtt, bw, limits or timeline"
            )));
        }
    };
    let rec = read(&args.trace)?;
    let conn = u32::try_from(args.conn).map_err(|_| io::Error::other("connection id out of range"))?;
    let out = args.output.clone().unwrap_or_else(|| PathBuf::from(format!("{name}-{conn}.svg")));
    let ext = out.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let columns = tcpscope_core::plot::svg::columns(args.width);
    let mut fig = tcpscope_monitor::plot::figure(&rec, conn, kind, columns).map_err(io::Error::other)?;
    if let Some(t) = &args.title {
        fig.title = t.clone();
    }
    crate::plot::write(&out, &[fig], args, &ext)?;
    Ok(ExitCode::SUCCESS)
}

//! `view` and `report`: load the traces, then serve them or write the report.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use tcpscope_core::analysis::Settings;
use tcpscope_view::data::Traces;

use crate::args::{ReportArgs, ViewArgs, ViewCommon};

fn load(c: &ViewCommon) -> io::Result<Traces> {
    load_paths(c, c.traces.clone())
}

fn load_paths(c: &ViewCommon, paths: Vec<std::path::PathBuf>) -> io::Result<Traces> {
    if c.idle_split.is_nan() || c.idle_split <= 0.0 {
        return Err(io::Error::other("--idle-split must be a positive number of seconds"));
    }
    let settings = Settings {
        idle_split_ns: (c.idle_split * 1e9) as u64,
        assume_wscale: c.wscale,
        checksums: c.checksums,
        ..Settings::default()
    };
    let t = Traces::load_window(paths, settings, &c.window.get(), &c.zone.get());
    crate::run::say_files(&t.an.files, c.quiet)?;
    crate::quality::warn(&t.an.files, &t.an.conns, c.quiet)?;
    if !t.paths.is_empty() && t.an.nothing_read() {
        // A window that ends before it starts is the command line's fault (exit 2).
        if t.bad_window {
            return Err(io::Error::other("the time window is empty (see above)"));
        }
        return Err(crate::run::input_error("nothing could be read from the traces"));
    }
    Ok(t)
}

pub fn view(args: &ViewArgs) -> io::Result<ExitCode> {
    // A recording first: its timeline, with the captures after it.
    let first = &args.common.traces[0];
    let (monitor, traces) = if tcpscope_monitor::tsm::is_recording(first) {
        let m = tcpscope_view::timeline::Monitor::load(first)?;
        if let Some(t) = &m.rec.tail {
            writeln!(io::stderr(), "tcpscope: {}: {t}; read up to there", first.display())?;
        }
        (Some(Arc::new(m)), load_paths(&args.common, args.common.traces[1..].to_vec())?)
    } else {
        (None, load(&args.common)?)
    };
    let mut traces = traces;
    if args.correlate {
        if monitor.is_some() || traces.paths.len() < 2 {
            return Err(io::Error::other("--correlate needs two or more captures (and no monitor recording)"));
        }
        // A capture that could not be opened was said above: correlate would say it again.
        if traces.an.files.iter().any(|f| f.unopened()) {
            return Err(crate::run::input_error("--correlate: every capture must be readable"));
        }
        traces.correlate(&tcpscope_core::correlate::Settings::default()).map_err(crate::run::input_error)?;
    }
    let opts = tcpscope_view::Options { bind: args.bind, port: args.port };
    let server = tcpscope_view::Server::start_with(Arc::new(traces), monitor, &opts).map_err(|e| {
        let at = std::net::SocketAddr::new(args.bind, args.port);
        match e.kind() {
            io::ErrorKind::AddrInUse => io::Error::other(format!(
                "{at}: the port is in use; choose another with --port, or leave --port out for a free one"
            )),
            io::ErrorKind::PermissionDenied => io::Error::other(format!(
                "{at}: not allowed to listen there (ports below 1024 need root); choose another with --port"
            )),
            io::ErrorKind::AddrNotAvailable => {
                io::Error::other(format!("{at}: this machine has no such address; choose another with --bind"))
            }
            _ => io::Error::other(format!("listening on {at}: {e}")),
        }
    })?;
    let mut out = io::stdout().lock();
    writeln!(out, "tcpscope viewer: {}", server.url)?;
    out.flush()?;
    drop(out);
    if !args.no_open {
        // A launcher may wait for the browser it started: not on the way of the server.
        let url = server.url.clone();
        std::thread::spawn(move || {
            if let Err(e) = tcpscope_view::open_browser(&url) {
                let _ = writeln!(io::stderr(), "tcpscope: could not open a browser: {e}; open the URL above");
            }
        });
    }
    server.wait();
    Ok(ExitCode::SUCCESS)
}

pub fn report(args: &ReportArgs) -> io::Result<ExitCode> {
    // Before the analysis, which may take minutes: an output that cannot be written.
    if let Some(dir) = args.output.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(io::Error::other(format!(
            "{}: cannot write the report: there is no directory {}",
            args.output.display(),
            dir.display()
        )));
    }
    let traces = load(&args.common)?;
    let (ids, listed) = tcpscope_view::report::write(&traces, args.plots, args.rows, &args.output)?;
    let list: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    let total = traces.an.conns.len();
    writeln!(
        io::stdout(),
        "{}: {total} connection{}{}, plots of {}",
        args.output.display(),
        if total == 1 { "" } else { "s" },
        if listed < total { format!(" ({listed} most troubled listed; --rows to list more)") } else { String::new() },
        if list.is_empty() { "none".to_string() } else { list.join(", ") }
    )?;
    Ok(ExitCode::SUCCESS)
}

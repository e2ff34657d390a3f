//! `tcpscope print`: one line per packet of a time window (thesis, appendix A.3 and figure
//! 2.2), and `tcpscope capture`, which writes the rings `print` reads.

use std::io::{self, Write};
use std::process::ExitCode;

use tcpscope_core::capture::time;
use tcpscope_core::export::packet::PacketLine;
use tcpscope_core::pass;

use crate::args::CommonArgs;
use crate::run::{open_set, settings, window};

/// Prints the packets of the window; all TRACEs are read as one trace in time order.
///
/// Connection ids are those `tcpscope conns` gives for the same TRACEs and window: connections
/// numbered in order of first appearance *in the window*. A ring loses its oldest files as it
/// runs, so numbering from the start of the ring would change under the user's feet; a window
/// given in clock time names the same packets, hence the same ids, for as long as its files
/// exist.
pub fn print(args: &CommonArgs) -> io::Result<ExitCode> {
    let settings = settings(args)?;
    let set = open_set(&args.traces)?;
    let tz = time::local_zone();
    let (from, to) = window(args, &set, &tz)?;
    let names: Vec<String> = set.files.iter().map(|f| f.path.display().to_string()).collect();
    let buf = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut out = if args.json {
        Out::Json(buf)
    } else if args.csv {
        Out::Csv(Box::new(csv::Writer::from_writer(buf)))
    } else {
        let mut buf = buf;
        buf.write_all(PacketLine::TEXT_HEADER.as_bytes())?;
        Out::Text(buf)
    };
    let mut failed: Option<io::Error> = None;
    let wanted = |id: usize| args.conn.is_empty() || args.conn.contains(&id);
    let an = pass::analyze_set(&set, from, to, settings, &|_, _| {}, |f, rec, seg, idx| {
        let id = idx + 1;
        if !wanted(id) {
            return true;
        }
        let line = PacketLine::new(&names[f], rec, seg, id);
        match out.write(&line, &tz) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    out.flush()?;
    if an.files.is_empty() {
        crate::run::empty_window_note(&set, from, to, &tz)?;
    }
    let mut err = io::stderr().lock();
    for f in &an.files {
        if let Some(e) = &f.error {
            writeln!(err, "tcpscope: {}: {e}", f.path.display())?;
        }
    }
    for &id in &args.conn {
        if id == 0 || id > an.conns.len() {
            writeln!(err, "tcpscope: no connection {id} in this window (it has {})", an.conns.len())?;
            return Ok(ExitCode::from(2));
        }
    }
    Ok(if an.nothing_read() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Where lines go, in which form.
enum Out<W: Write> {
    Text(W),
    Json(W),
    Csv(Box<csv::Writer<W>>),
}

impl<W: Write> Out<W> {
    fn write(&mut self, line: &PacketLine<'_>, tz: &jiff::tz::TimeZone) -> io::Result<()> {
        match self {
            Out::Text(w) => line.write_text(w, &time::clock(line.ts_ns, tz)),
            Out::Json(w) => {
                serde_json::to_writer(&mut *w, line).map_err(io::Error::from)?;
                w.write_all(b"\n")
            }
            Out::Csv(w) => w.serialize(line).map_err(|e| match e.kind() {
                // Keep the kind: a closed pipe (`| head`) is a clean exit.
                csv::ErrorKind::Io(io) => io::Error::new(io.kind(), io.to_string()),
                _ => io::Error::other(e),
            }),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Text(w) | Out::Json(w) => w.flush(),
            Out::Csv(w) => w.flush(),
        }
    }
}

/// Runs `tcpscope capture` until SIGINT or SIGTERM.
#[cfg(feature = "capture")]
pub fn capture(args: &tcpscope_live::CaptureArgs) -> io::Result<ExitCode> {
    match tcpscope_live::run(args) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            writeln!(io::stderr(), "tcpscope capture: {e}")?;
            Ok(ExitCode::from(e.exit_code()))
        }
    }
}

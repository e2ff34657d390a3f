//! `tcpscope print`: one line per packet of a time window (thesis, appendix A.3 and figure
//! 2.2), and `tcpscope capture`, which writes the rings `print` reads.

use std::io::{self, Write};
use std::process::ExitCode;

use std::path::Path;

use tcpscope_core::analysis::{ConnIdx, SegmentInfo, Sink};
use tcpscope_core::capture::time;
use tcpscope_core::export::packet::PacketLine;
use tcpscope_core::flow::ConnInfo;
use tcpscope_core::pass::Analysis;

use crate::args::CommonArgs;
use crate::run::query;

/// Prints the packets of the window; all TRACEs are read as one trace in time order.
///
/// Connection ids are those `tcpscope conns` gives for the same TRACEs and window: connections
/// numbered in order of first appearance *in the window*. A ring loses its oldest files as it
/// runs, so numbering from the start of the ring would change under the user's feet; a window
/// given in clock time names the same packets, hence the same ids, for as long as its files
/// exist.
pub fn print(args: &CommonArgs) -> io::Result<ExitCode> {
    // All TRACEs as one trace in time order, the window placed on it.
    let query = query(args)?.merge(true);
    let tz = args.zone.get();
    // Not locked: the pass may run its sink on another thread.
    let buf = io::BufWriter::with_capacity(1 << 16, io::stdout());
    let out = if args.json {
        Out::Json(buf)
    } else if args.csv {
        Out::Csv(Box::new(csv::Writer::from_writer(buf)))
    } else {
        // The header is written with the first line, or at the end when the input was read
        // but the window has no packets of the wanted connections: never over a failed input.
        Out::Text { w: buf, header: false }
    };
    let printer =
        Printer { out, tz: tz.clone(), wanted: args.conn.clone(), names: Vec::new(), conns: Vec::new(), failed: None };
    let (mut printer, files, trace) = query.run_one(printer, &|_, _| {})?;
    if let Some(e) = trace.error {
        return Err(if trace.window_error { io::Error::other(e) } else { crate::run::input_error(e) });
    }
    let mut err = io::stderr().lock();
    for w in &trace.warnings {
        writeln!(err, "tcpscope: {w}")?;
    }
    if let Some(e) = &trace.empty {
        writeln!(err, "tcpscope: {e}")?;
    }
    drop(err);
    crate::run::say_files(&files, args.quiet)?;
    crate::quality::warn(&files, &[], args.quiet)?;
    let n = printer.conns.len();
    for &id in &args.conn {
        if id == 0 || id > n {
            return Err(io::Error::other(format!("no connection {id} in this window (it has {n})")));
        }
    }
    let an = Analysis { files, ..Analysis::default() };
    if !an.nothing_read() {
        printer.out.header()?;
    }
    printer.out.flush()?;
    Ok(crate::run::status(&an))
}

/// Writes each segment of the wanted connections as it is analysed; a failed write stops the
/// pass (a closed pipe is a clean exit).
struct Printer<W: Write> {
    out: Out<W>,
    tz: jiff::tz::TimeZone,
    wanted: Vec<usize>,
    /// Each file's name, by the index packets ([`tcpscope_core::event::At::file`]) name it by.
    names: Vec<String>,
    /// Each connection's endpoints.
    conns: Vec<ConnInfo>,
    /// The write that failed.
    failed: Option<io::Error>,
}

impl<W: Write> Sink for Printer<W> {
    fn file(&mut self, file: usize, path: &Path) {
        self.names.resize(self.names.len().max(file + 1), String::new());
        self.names[file] = path.display().to_string();
    }
    fn connection(&mut self, _: ConnIdx, info: &ConnInfo) {
        self.conns.push(*info);
    }
    fn segment(&mut self, seg: &SegmentInfo) {
        let id = seg.at.conn + 1;
        if !self.wanted.is_empty() && !self.wanted.contains(&id) {
            return;
        }
        let info = &self.conns[seg.at.conn];
        // The packet's own file: a connection crossing the files of a ring has its later
        // packets in later files (issue 23).
        let line = PacketLine::new(&self.names[seg.at.file as usize], info, seg, id);
        if let Err(e) = self.out.write(&line, &self.tz) {
            self.failed = Some(e);
        }
    }
    fn after_packet(&mut self) -> io::Result<bool> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }
}

/// Where lines go, in which form.
enum Out<W: Write> {
    /// Text lines under a header, written once (`header`: it was).
    Text {
        w: W,
        header: bool,
    },
    Json(W),
    Csv(Box<csv::Writer<W>>),
}

impl<W: Write> Out<W> {
    fn write(&mut self, line: &PacketLine<'_>, tz: &jiff::tz::TimeZone) -> io::Result<()> {
        match self {
            Out::Text { w, header } => {
                if !*header {
                    w.write_all(PacketLine::TEXT_HEADER.as_bytes())?;
                    *header = true;
                }
                line.write_text(w, &time::clock(line.ts_ns, tz))
            }
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

    /// Writes the text header if no line did.
    fn header(&mut self) -> io::Result<()> {
        if let Out::Text { w, header: header @ false } = self {
            w.write_all(PacketLine::TEXT_HEADER.as_bytes())?;
            *header = true;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Text { w, .. } | Out::Json(w) => w.flush(),
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

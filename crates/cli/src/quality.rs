//! `tcpscope quality`: how far a trace's numbers can be believed, per file and per connection
//! (docs/quality.md), and the one-line warning every other command gives when they cannot.

use std::io::{self, Write};
use std::process::ExitCode;

use tcpscope_core::pass::FileSummary;
use tcpscope_core::quality::{ConnRow, FileRow, LOSS_DOUBTFUL, QualitySink, TraceQuality};
use tcpscope_core::stats::{ConnStats, StatsSink};

use crate::args::CommonArgs;
use crate::output::{check_ids, selected};
use crate::run::{analyse_query, query, status};

pub fn quality(args: &CommonArgs) -> io::Result<ExitCode> {
    // Statistics give capture loss, snaplen cuts and the half-loops; the quality sink the rest.
    let run = analyse_query(query(args)?, args, || (StatsSink::default(), QualitySink::default()))?;
    let files = run.files;
    let (mut conns, mut quality, mut traces): (Vec<ConnStats>, Vec<_>, Vec<TraceQuality>) = Default::default();
    let mut conn_trace = Vec::new();
    for (i, t) in run.traces.into_iter().enumerate() {
        let (s, q) = t.sink;
        conn_trace.extend(std::iter::repeat_n(i, s.conns.len()));
        conns.extend(s.conns.into_iter().map(|c| *c));
        quality.extend(q.conns);
        traces.push(q.trace);
    }
    let an = tcpscope_core::pass::Analysis { files, ..Default::default() };
    if an.nothing_read() {
        return Ok(status(&an));
    }
    check_ids(conns.len(), args)?;
    let sel = selected(args);
    let rows: Vec<ConnRow> =
        conns.iter().zip(&quality).enumerate().map(|(i, (c, q))| ConnRow::new(i + 1, c, q)).collect();
    // A trace's order findings belong to its first file (a merged trace set has one trace).
    let file_rows: Vec<FileRow> = an
        .files
        .iter()
        .enumerate()
        .map(|(fi, f)| {
            let of_file: Vec<&ConnRow> = rows.iter().filter(|r| r.file == fi).collect();
            let trace = rows
                .iter()
                .zip(&conn_trace)
                .find(|(r, _)| r.file == fi)
                .map(|(_, &t)| t)
                .or_else(|| (fi < traces.len()).then_some(fi));
            let empty = TraceQuality::default();
            FileRow::new(f, trace.and_then(|t| traces.get(t)).unwrap_or(&empty), &of_file)
        })
        .collect();
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let shown: Vec<&ConnRow> = rows.iter().filter(|r| sel(r.id)).collect();
    if args.json {
        let doc = serde_json::json!({ "files": file_rows, "connections": shown });
        serde_json::to_writer_pretty(&mut out, &doc).map_err(io::Error::other)?;
        writeln!(out)?;
    } else {
        text(&mut out, &file_rows, &shown, &conns)?;
    }
    out.flush()?;
    Ok(status(&an))
}

fn ms(v: f64) -> String {
    format!("{v:.3} ms")
}

fn text<W: Write>(out: &mut W, files: &[FileRow], rows: &[&ConnRow], conns: &[ConnStats]) -> io::Result<()> {
    for f in files {
        writeln!(out, "file {}: {} records, {} TCP", f.path, f.records, f.tcp_packets)?;
        let loss = f.capture_loss.map_or("no ACKs".to_string(), |l| format!("{:.2} %", l * 100.0));
        writeln!(
            out,
            "  capture loss: {} bytes acknowledged but never captured, {} of {} ACKs ({loss}, Zeek's rule)",
            f.acked_unseen_bytes,
            f.gap_events,
            f.ack_events + f.gap_events.saturating_sub(f.ack_events)
        )?;
        writeln!(out, "  duplicated frames: {}", f.duplicate_frames)?;
        write!(out, "  time: {} segments earlier than the one before", f.backwards_timestamps)?;
        if let Some(fr) = f.max_backwards_frame {
            write!(out, " (largest step back {} at frame {fr})", ms(f.max_backwards_ms))?;
        }
        write!(out, ", {} damaged timestamps", f.bad_timestamps)?;
        if let Some(fr) = f.max_gap_frame {
            write!(out, ", longest silence {:.3} s before frame {fr}", f.max_gap_s)?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "  truncated by the snaplen: {} segments; larger than the MSS (offload): {}; damaged stretches: {}",
            f.truncated_packets, f.oversize_segments, f.damaged
        )?;
        let pos: Vec<String> = f.positions.iter().map(|(k, v)| format!("{v} {}", k.replace('_', " "))).collect();
        if !pos.is_empty() {
            writeln!(out, "  capture point: {}", pos.join(", "))?;
        }
        writeln!(out, "  verdict: {}", verdict(&f.doubtful))?;
    }
    for r in rows {
        let c = &conns[r.id - 1];
        writeln!(out, "\nconnection {}: {} -> {}", r.id, c.info().a, c.info().b)?;
        let place = match r.position {
            Some(p) => p.replace('_', " "),
            None => "unknown".to_string(),
        };
        let hl = |v: Option<f64>| v.map_or("unknown".to_string(), ms);
        writeln!(
            out,
            "  capture point: {place} (half-loop to a {}, to b {})",
            hl(r.halfloop_a_ms),
            hl(r.halfloop_b_ms)
        )?;
        let loss = r.capture_loss.map_or("no ACKs".to_string(), |l| format!("{:.2} %", l * 100.0));
        writeln!(out, "  capture loss: {} bytes, {} gap events ({loss})", r.acked_unseen_bytes, r.gap_events)?;
        writeln!(
            out,
            "  duplicated frames {}, segments back in time {}, truncated {}, larger than the MSS {}",
            r.duplicate_frames, r.backwards_timestamps, r.truncated_packets, r.oversize_segments
        )?;
        writeln!(out, "  verdict: {}", verdict(&r.doubtful))?;
    }
    Ok(())
}

fn verdict(doubts: &[&str]) -> String {
    if doubts.is_empty() {
        "good".to_string()
    } else {
        format!("doubtful: {}", doubts.iter().map(|d| d.replace('_', " ")).collect::<Vec<_>>().join(", "))
    }
}

/// The one line other commands print on stderr when the capture makes their numbers doubtful:
/// what the file summaries say (damage, damaged timestamps) and, when the command has
/// statistics, capture loss (bytes acknowledged but never captured, at least 1 % of the bytes
/// acknowledged). Nothing with `quiet`.
pub fn warn(files: &[FileSummary], conns: &[Box<ConnStats>], quiet: bool) -> io::Result<()> {
    if quiet {
        return Ok(());
    }
    let mut why = Vec::new();
    let (unseen, acked) = conns.iter().flat_map(|c| c.dirs()).fold((0u64, 0u64), |(u, a), d| {
        (u + d.rare().acked_unseen_bytes, a + d.acked_bytes + d.rare().acked_unseen_bytes)
    });
    if acked > 0 && unseen as f64 >= LOSS_DOUBTFUL * acked as f64 {
        why.push(format!("the capture missed {:.1} % of the bytes acknowledged", unseen as f64 * 100.0 / acked as f64));
    }
    let damaged: usize = files.iter().map(|f| f.damaged.len()).sum();
    if damaged > 0 {
        why.push(format!("{damaged} damaged stretches"));
    }
    let bad: u64 = files.iter().map(|f| f.bad_timestamps).sum();
    if bad > 0 {
        why.push(format!("{bad} damaged timestamps"));
    }
    if why.is_empty() {
        return Ok(());
    }
    let traces: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    writeln!(
        io::stderr().lock(),
        "tcpscope: warning: numbers may be off: {}; see `tcpscope quality {}`",
        why.join(", "),
        traces.join(" ")
    )
}

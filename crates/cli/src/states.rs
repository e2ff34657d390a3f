//! `tcpscope states TRACE -c ID`: the TCP state each endpoint of a connection went through,
//! with the segment that caused every transition (text, `--json`, `--csv`;
//! docs/plots.md#tcp-states, docs/json.md).

use std::io::{self, Write};
use std::process::ExitCode;

use tcpscope_core::export::states::{StateRow, rows};
use tcpscope_core::series::states::{Side, States, StatesSink};

use crate::args::CommonArgs;

pub fn states(args: &CommonArgs) -> io::Result<ExitCode> {
    if args.conn.is_empty() {
        return Err(io::Error::other("states needs the connection: -c ID (see `tcpscope conns`)"));
    }
    if args.conn.contains(&0) {
        return Err(io::Error::other("connection ids start at 1 (see `tcpscope conns`)"));
    }
    let ids = args.conn.clone();
    let run = crate::run::analyse_with(args, || ids.iter().map(|&id| StatesSink::new(id - 1)).collect::<Vec<_>>())?;
    if run.files.iter().all(|f| f.packets == 0 && f.error.is_some()) {
        // Why was said on stderr (as `conns`).
        return Ok(ExitCode::from(crate::run::EXIT_INPUT));
    }
    let mut found: Vec<(String, usize, States)> = Vec::new();
    for t in run.traces {
        for (sink, &id) in t.sink.into_iter().zip(&ids) {
            let s = sink.finish().ok_or_else(|| io::Error::other(format!("{}: no connection {id}", t.input)))?;
            found.push((t.input.clone(), id, s));
        }
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    if args.json {
        let all: Vec<StateRow> = found.iter().flat_map(|(_, id, s)| rows(s, *id)).collect();
        serde_json::to_writer_pretty(&mut out, &serde_json::json!({ "states": all })).map_err(io::Error::other)?;
        writeln!(out)?;
    } else if args.csv {
        let mut w = csv::Writer::from_writer(&mut out);
        for (_, id, s) in &found {
            for r in rows(s, *id) {
                w.serialize(r).map_err(io::Error::other)?;
            }
        }
        w.flush()?;
    } else {
        for (k, (input, id, s)) in found.iter().enumerate() {
            if k > 0 {
                writeln!(out)?;
            }
            text(&mut out, input, *id, s)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The text form: each side's path, the distances, then one line per transition.
fn text(out: &mut impl Write, input: &str, id: usize, s: &States) -> io::Result<()> {
    writeln!(out, "{input}: connection {id}: a {} ↔ b {}", s.info.a, s.info.b)?;
    for side in [Side::A, Side::B] {
        let init = s.initial[side.idx()];
        let mut path = format!("{}{}", init.state.name(), if init.assumed { " (assumed)" } else { "" });
        for t in s.transitions.iter().filter(|t| t.side == side) {
            path.push_str(" → ");
            path.push_str(t.to.name());
        }
        writeln!(out, "  {}: {path}", side.name())?;
    }
    let dist = |d: Option<f64>| d.map_or("unknown (taken as 0)".to_string(), |d| format!("{:.3} ms", d * 1e3));
    writeln!(
        out,
        "  distance from the capture point (half the smallest half-loop): a {}, b {}",
        dist(s.transit_s[0]),
        dist(s.transit_s[1])
    )?;
    writeln!(
        out,
        "  {:>11}  side  {:<26}  {:<18} {:>7}  {:>11}  why",
        "at (s)", "transition", "segment", "frame", "seen (s)"
    )?;
    for t in &s.transitions {
        writeln!(
            out,
            "  {:>11.6}  {:<4}  {:<26}  {:<5} {:<12} {:>7}  {:>11.6}  {}",
            t.at_s,
            t.side.name(),
            format!("{} → {}", t.from.name(), t.to.name()),
            if t.sent { "sent" } else { "rcvd" },
            t.flags,
            t.frame,
            t.seen_s,
            t.why
        )?;
    }
    Ok(())
}

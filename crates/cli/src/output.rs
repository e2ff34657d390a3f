//! Printing: aligned text for a terminal, CSV and JSON for programs.
//!
//! The text and CSV views are generated from the JSON view (`tcpscope_core::export::json`), so
//! the three can never disagree and every column is documented once, in `docs/json.md`.

use std::io::{self, Write};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use tcpscope_core::export::json::{self, Cell};
use tcpscope_core::pass::Analysis;

use crate::args::CommonArgs;

fn selected(args: &CommonArgs) -> impl Fn(usize) -> bool + '_ {
    move |id| args.conn.is_empty() || args.conn.contains(&id)
}

/// Every id asked for with `-c` exists among `n` connections.
pub(crate) fn check_ids(n: usize, args: &CommonArgs) -> io::Result<()> {
    for &id in &args.conn {
        if id == 0 || id > n {
            return Err(io::Error::other(format!("no connection {id} (the input has {n})")));
        }
    }
    Ok(())
}

pub(crate) fn to_value<T: serde::Serialize>(v: &T) -> io::Result<Value> {
    serde_json::to_value(v).map_err(io::Error::other)
}

/// Flattens nested objects into `a_b` keys, in order.
pub(crate) fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}_{k}") };
                flatten(&key, v, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

fn csv_field(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Writes one CSV row per item (header from the first row's keys). Rows are built in parallel a
/// block at a time and written in order: holding every row of 200,000 connections as JSON
/// values took 3 GB and most of the time.
pub(crate) fn write_csv<W: Write, T: Sync>(
    out: &mut W,
    items: &[T],
    row: impl Fn(&T) -> io::Result<Vec<(String, Value)>> + Sync,
) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    let mut header = false;
    for block in items.chunks(CSV_BLOCK) {
        let rows: Vec<Vec<(String, Value)>> = block.par_iter().map(&row).collect::<io::Result<_>>()?;
        for r in &rows {
            if !header {
                w.write_record(r.iter().map(|(k, _)| k.as_str()))?;
                header = true;
            }
            w.write_record(r.iter().map(|(_, v)| csv_field(v)))?;
        }
    }
    w.flush()
}

/// Rows built per parallel block of [`write_csv`].
const CSV_BLOCK: usize = 2048;

/// Fields `conns` prints in CSV, in order.
const CONNS_FIELDS: &[&str] = &[
    "id", "file", "a_addr", "a_port", "b_addr", "b_port", "state", "handshake", "first_time", "last_time",
    "duration_s", "a2b_packets", "a2b_payload_bytes", "a2b_unique_bytes", "b2a_packets", "b2a_payload_bytes",
    "b2a_unique_bytes",
];

pub fn conns<W: Write>(out: &mut W, an: &Analysis, args: &CommonArgs) -> io::Result<()> {
    check_ids(an.conns.len(), args)?;
    let doc = json::document(an, selected(args));
    if args.json {
        // Rows are serialized as they are made: a document of 200,000 connections built first
        // as JSON values took ~2 GB.
        let v = ConnsDoc { files: to_value(&an.files)?, connections: json::LazySeq::new(doc.connections().map(ConnsRow::from)) };
        serde_json::to_writer_pretty(&mut *out, &v).map_err(io::Error::other)?;
        return writeln!(out);
    }
    if args.csv {
        let ids: Vec<usize> = (1..=an.conns.len()).filter(|&id| (doc.selected)(id)).collect();
        return write_csv(out, &ids, |&id| {
            let mut flat = Vec::new();
            flatten("", &to_value(&doc.connection(id))?, &mut flat);
            Ok(CONNS_FIELDS.iter().filter_map(|k| flat.iter().find(|(fk, _)| fk == k).cloned()).collect())
        });
    }
    let w_ep = an.conns.iter().map(|c| c.info.a.to_string().len().max(c.info.b.to_string().len())).max().unwrap_or(10).max(10);
    writeln!(
        out,
        "{:>5}  {:<w$}  {:<w$}  {:<13} {:>9} {:>12} {:>9} {:>12} {:>11}",
        "id", "a", "b", "state", "a2b pkts", "a2b bytes", "b2a pkts", "b2a bytes", "duration",
        w = w_ep
    )?;
    for c in doc.connections() {
        writeln!(
            out,
            "{:>5}  {:<w$}  {:<w$}  {:<13} {:>9} {:>12} {:>9} {:>12} {:>9.3} s",
            c.id,
            ep(&c.a),
            ep(&c.b),
            c.state,
            c.a2b.packets,
            c.a2b.payload_bytes,
            c.b2a.packets,
            c.b2a.payload_bytes,
            c.duration_s,
            w = w_ep
        )?;
    }
    Ok(())
}

/// `conns --json`: the files, then one row per connection (docs/json.md#conns).
#[derive(Serialize)]
struct ConnsDoc<R> {
    files: Value,
    connections: R,
}

/// A connection's identity and size: the `stats --json` keys `conns --json` keeps, in their order.
#[derive(Serialize)]
struct ConnsRow {
    id: usize,
    file: String,
    a: json::EndpointJson,
    b: json::EndpointJson,
    state: &'static str,
    handshake: bool,
    reuse: Option<&'static str>,
    first_time: f64,
    last_time: f64,
    duration_s: f64,
    a2b: ConnsDir,
    b2a: ConnsDir,
}

#[derive(Serialize)]
struct ConnsDir {
    packets: u64,
    data_packets: u64,
    payload_bytes: u64,
    unique_bytes: u64,
}

impl From<&json::DirJson> for ConnsDir {
    fn from(d: &json::DirJson) -> Self {
        ConnsDir { packets: d.packets, data_packets: d.data_packets, payload_bytes: d.payload_bytes, unique_bytes: d.unique_bytes }
    }
}

impl From<json::ConnJson> for ConnsRow {
    fn from(c: json::ConnJson) -> Self {
        let (a2b, b2a) = ((&c.a2b).into(), (&c.b2a).into());
        ConnsRow {
            id: c.id,
            file: c.file,
            a: c.a,
            b: c.b,
            state: c.state,
            handshake: c.handshake,
            reuse: c.reuse,
            first_time: c.first_time,
            last_time: c.last_time,
            duration_s: c.duration_s,
            a2b,
            b2a,
        }
    }
}

fn ep(e: &json::EndpointJson) -> String {
    if e.addr.contains(':') { format!("[{}]:{}", e.addr, e.port) } else { format!("{}:{}", e.addr, e.port) }
}

pub fn stats<W: Write>(out: &mut W, an: &Analysis, args: &CommonArgs) -> io::Result<()> {
    check_ids(an.conns.len(), args)?;
    let doc = json::document(an, selected(args));
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
        return writeln!(out);
    }
    if args.csv {
        let ids: Vec<usize> = (1..=an.conns.len()).filter(|&id| (doc.selected)(id)).collect();
        return write_csv(out, &ids, |&id| {
            let mut flat = Vec::new();
            flatten("", &to_value(&doc.connection(id))?, &mut flat);
            Ok(flat)
        });
    }
    for f in &an.files {
        let skipped: u64 = f.skipped.values().sum();
        write!(out, "file {}: {} packets, {} TCP", f.path.display(), f.packets, f.tcp_packets)?;
        if skipped > 0 {
            let why: Vec<String> = f.skipped.iter().map(|(k, v)| format!("{v} {k}")).collect();
            write!(out, ", skipped {}", why.join(", "))?;
        }
        if !f.anomalies.is_empty() {
            let what: Vec<String> = f.anomalies.iter().map(|(k, v)| format!("{v} {k}")).collect();
            write!(out, "; anomalies: {}", what.join(", "))?;
        }
        writeln!(out)?;
        if let Some(e) = &f.error {
            writeln!(out, "  stopped early: {e}")?;
        }
    }
    // Connections are formatted in parallel, a block at a time, and written in order: the text
    // for 200,000 connections (~800 MB) cost three times the analysis when printed by one thread.
    let ids: Vec<usize> = (1..=an.conns.len()).filter(|&id| (doc.selected)(id)).collect();
    for block in ids.chunks(TEXT_BLOCK) {
        let parts: Vec<Vec<u8>> = block
            .par_chunks(TEXT_CHUNK)
            .map(|ids| {
                let mut buf = Vec::with_capacity(ids.len() * 4096);
                for &id in ids {
                    stats_text(&mut buf, &doc.connection(id))?;
                }
                Ok(buf)
            })
            .collect::<io::Result<_>>()?;
        for p in parts {
            out.write_all(&p)?;
        }
    }
    Ok(())
}

/// Connections formatted per parallel block (~8 MB of text held at a time), and per task
/// within it.
const TEXT_BLOCK: usize = 2048;
const TEXT_CHUNK: usize = 256;

/// One connection of the `stats` text table.
fn stats_text<W: Write>(out: &mut W, c: &json::ConnJson) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "connection {}: {} -> {}  ({}{})", c.id, ep(&c.a), ep(&c.b), c.state.replace('_', " "),
        match c.reuse { Some(r) => format!(", 4-tuple reused: {}", r.replace('_', " ")), None => String::new() })?;
    writeln!(out, "  first packet {:.6}  last packet {:.6}  duration {:.6} s  longest idle {:.6} s",
        c.first_time, c.last_time, c.duration_s, c.max_idle_s)?;
    out.write_all(COLUMNS)?;
    // Each row is put together in `line` and written once: six small writes per row were most
    // of the cost of printing 200,000 connections.
    let mut line = String::with_capacity(128);
    let mut cell = String::new();
    for ((k, va), (_, vb)) in c.a2b.cells().into_iter().zip(c.b2a.cells()) {
        line.clear();
        line.push_str("  ");
        line.push_str(k);
        pad(&mut line, 26 - k.len().min(26));
        for v in [va, vb] {
            cell.clear();
            text(&mut cell, k, v);
            pad(&mut line, 21 - cell.len().min(21));
            line.push_str(&cell);
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// The column heads, as `format!("  {:<26} {:>20} {:>20}\n", "", "a2b", "b2a")`.
const COLUMNS: &[u8] = b"                                              a2b                  b2a\n";

const SPACES: &str = "                                ";

// Padding by hand: `{:>20}` pads one char at a time, which dominated the time of printing
// 200,000 connections.
fn pad(line: &mut String, n: usize) {
    line.push_str(&SPACES[..n]);
}

/// A value for the text table: unknown is "-" (the window scale says "unknown"), floats rounded
/// to what their unit makes useful.
fn text(buf: &mut String, key: &str, v: Cell) {
    use std::fmt::Write as _;
    let _ = match v {
        Cell::Null if key == "window_scale" => write!(buf, "unknown"),
        Cell::Null => write!(buf, "-"),
        Cell::Bool(b) => {
            buf.push_str(if b { "yes" } else { "no" });
            Ok(())
        }
        Cell::Int(i) => {
            buf.push_str(itoa::Buffer::new().format(i));
            Ok(())
        }
        Cell::Float(f) if key.ends_with("_ms") => fixed(buf, f, 3),
        Cell::Float(f) if key.ends_with("_time") || key.ends_with("_s") => fixed(buf, f, 6),
        Cell::Float(f) => fixed(buf, f, 1),
    };
}

/// `format!("{f:.d$}")` by integer arithmetic: std's exact float formatting was a tenth of the
/// time of printing 200,000 connections. Values too large for exact integers fall back to it.
fn fixed(buf: &mut String, f: f64, d: u32) -> std::fmt::Result {
    use std::fmt::Write as _;
    let scale = 10i64.pow(d);
    let v = (f * scale as f64).round_ties_even();
    if !v.is_finite() || v.abs() >= 9.0e15 {
        return write!(buf, "{f:.*}", d as usize);
    }
    let v = v as i64;
    if v < 0 {
        buf.push('-');
    }
    let v = v.unsigned_abs();
    let scale = scale as u64;
    // itoa and zero padding by hand: `{:0width$}` went through the generic formatter.
    let mut ib = itoa::Buffer::new();
    buf.push_str(ib.format(v / scale));
    buf.push('.');
    let frac = ib.format(v % scale);
    for _ in frac.len()..d as usize {
        buf.push('0');
    }
    buf.push_str(frac);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn column_heads_as_formatted() {
        assert_eq!(super::COLUMNS, format!("  {:<26} {:>20} {:>20}\n", "", "a2b", "b2a").as_bytes());
    }

    #[test]
    fn fixed_matches_std_formatting() {
        for &f in &[0.0, 0.5, 1.25, -7.125, 1795306570.849758, 123.0004999, -0.0004, 65.887654, 1e17] {
            for d in [1u32, 3, 6] {
                let mut s = String::new();
                super::fixed(&mut s, f, d).unwrap();
                let std = format!("{f:.*}", d as usize);
                // std rounds half to even on the exact binary value; both agree off the midpoint.
                assert_eq!(s.trim_start_matches('-'), std.trim_start_matches('-'), "{f} {d}");
            }
        }
    }
}

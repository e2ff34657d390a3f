//! Printing: aligned text for a terminal, CSV and JSON for programs.
//!
//! The text and CSV views take their fields, names and order from the JSON view
//! (`tcpscope_core::export::json`: `DirJson::NAMES` and `DirJson::cells`), so the three can never
//! disagree and every column is documented once, in `docs/json.md`. `stats` writes its text and
//! CSV straight from the statistics rather than through JSON values or strings (tests hold
//! each to the JSON view): that was most of the time of printing 200,000 connections.

use std::io::{self, Write};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;

use tcpscope_core::export::json::{self, Cell};
use tcpscope_core::flow::Endpoint;
use tcpscope_core::pass::Analysis;
use tcpscope_core::stats::ConnStats;
use tcpscope_core::vantage::{ConnVantage, Proof, VantageConn};

use jiff::tz::TimeZone;
use tcpscope_core::capture::time::{push_micros, second_text};

use crate::args::CommonArgs;

mod fixed;
use fixed::push_fixed;

pub(crate) fn selected(args: &CommonArgs) -> impl Fn(usize) -> bool + '_ {
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

/// Writes one CSV row per item (header from the first row's keys), rows made in parallel a
/// block at a time and written in order: holding every row of 200,000 connections as JSON
/// values took 3 GB and most of the time.
pub(crate) fn write_csv<W: Write, T: Sync>(
    out: &mut W,
    items: &[T],
    row: impl Fn(&T) -> io::Result<Vec<(String, Value)>> + Sync,
) -> io::Result<()> {
    let Some(first) = items.first() else { return Ok(()) };
    let header = row(first)?;
    write_csv_header(out, header.iter().map(|(k, _)| k.as_str()))?;
    in_parallel_blocks(out, items, CSV_BLOCK, |items| {
        let mut w = csv::Writer::from_writer(Vec::new());
        for it in items {
            let r = row(it)?;
            // As one writer would have checked: every row as long as the header.
            if r.len() != header.len() {
                return Err(io::Error::other(format!(
                    "CSV row of {} fields under a header of {}",
                    r.len(),
                    header.len()
                )));
            }
            w.write_record(r.iter().map(|(_, v)| csv_field(v)))?;
        }
        w.into_inner().map_err(|e| e.into_error())
    })
}

/// Writes a CSV header row.
fn write_csv_header<W: Write, I: IntoIterator<Item = impl AsRef<[u8]>>>(out: &mut W, names: I) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(names)?;
    out.write_all(&w.into_inner().map_err(|e| e.into_error())?)
}

/// Rows built per parallel block of [`write_csv`].
const CSV_BLOCK: usize = 2048;

pub fn conns<W: Write>(out: &mut W, an: &Analysis, args: &CommonArgs) -> io::Result<()> {
    check_ids(an.conns.len(), args)?;
    let doc = json::document(an, selected(args));
    if args.json {
        // Rows are serialized as they are made: a document of 200,000 connections built first
        // as JSON values took ~2 GB.
        let v = ConnsDoc {
            files: to_value(&an.files)?,
            connections: json::LazySeq::new(doc.connections().map(json::ConnJson::brief)),
        };
        serde_json::to_writer_pretty(&mut *out, &v).map_err(io::Error::other)?;
        return writeln!(out);
    }
    if args.csv {
        let ids: Vec<usize> = (1..=an.conns.len()).filter(|&id| (doc.selected)(id)).collect();
        return conns_csv(out, an, &ids, Rows::Brief);
    }
    let w_ep = an
        .conns
        .iter()
        .map(|c| c.info().a.to_string().len().max(c.info().b.to_string().len()))
        .max()
        .unwrap_or(10)
        .max(10);
    writeln!(
        out,
        "{:>5}  {:<w$}  {:<w$}  {:<13} {:>9} {:>12} {:>9} {:>12} {:>11}",
        "id",
        "a",
        "b",
        "state",
        "a2b pkts",
        "a2b bytes",
        "b2a pkts",
        "b2a bytes",
        "duration",
        w = w_ep
    )?;
    for c in doc.connections() {
        let info = an.conns[c.id - 1].info();
        writeln!(
            out,
            "{:>5}  {:<w$}  {:<w$}  {:<13} {:>9} {:>12} {:>9} {:>12} {:>9.3} s",
            c.id,
            info.a.to_string(),
            info.b.to_string(),
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

/// `stats`: JSON, CSV, or the text with its times in `tz` (UTC unless `--local`).
pub fn stats<W: Write>(out: &mut W, an: &Analysis, args: &CommonArgs, tz: &TimeZone) -> io::Result<()> {
    check_ids(an.conns.len(), args)?;
    let doc = json::document(an, selected(args));
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
        return writeln!(out);
    }
    let ids: Vec<usize> = (1..=an.conns.len()).filter(|&id| (doc.selected)(id)).collect();
    if args.csv {
        return conns_csv(out, an, &ids, Rows::Stats);
    }
    for f in &an.files {
        let skipped: u64 = f.skipped.values().sum();
        write!(out, "file {}: {} packets, {} TCP", f.path.display(), f.packets, f.tcp_packets)?;
        if skipped > 0 {
            let why: Vec<String> = f.skipped.iter().map(|(k, v)| format!("{v} {k}")).collect();
            write!(out, ", skipped {}", why.join(", "))?;
        }
        if !f.anomalies.is_empty() {
            let what: Vec<String> = f.anomalies.iter().map(|(k, v)| anomaly_text(k, *v)).collect();
            write!(out, "; anomalies: {}", what.join(", "))?;
        }
        writeln!(out)?;
        if let Some(e) = &f.error {
            writeln!(out, "  stopped early: {e}")?;
        }
    }
    // Connections are formatted in parallel, a block at a time, and written in order: the text
    // for 200,000 connections (~800 MB) cost three times the analysis when printed by one thread.
    let table = Table::new(tz.clone());
    in_parallel_blocks(out, &ids, TEXT_BLOCK, |ids| {
        let mut buf = Vec::with_capacity(ids.len() * CONN_TEXT);
        let mut cell = Vec::with_capacity(32);
        for (i, &id) in ids.iter().enumerate() {
            // The next one's identity, a box of its own, meanwhile.
            if let Some(&next) = ids.get(i + 1) {
                an.conns[next - 1].prefetch_identity();
            }
            table.connection(&mut buf, &an.conns[id - 1], id, &mut cell);
        }
        Ok(buf)
    })
}

/// `stats --with`: the statistics, then what the other captures prove about each selected
/// connection (docs/screening.md, "Several captures"): with `--json` a `vantage` object beside
/// `files` and `connections` (docs/json.md#vantage_connections), as text a section after the
/// connections. Not CSV (the caller refuses it).
pub fn stats_proved<W: Write>(
    out: &mut W,
    an: &Analysis,
    args: &CommonArgs,
    tz: &TimeZone,
    proof: &Proof,
) -> io::Result<()> {
    check_ids(an.conns.len(), args)?;
    let sel = selected(args);
    let ids: Vec<usize> = (1..=an.conns.len()).filter(|&id| sel(id)).collect();
    let proved: Vec<ConnVantage> =
        ids.iter().map(|&id| proof.conn(an.conns[id - 1].info().a, an.conns[id - 1].info().b)).collect();
    if args.json {
        #[derive(Serialize)]
        struct Doc<'a, D: Serialize> {
            #[serde(flatten)]
            doc: D,
            vantage: VantageDoc<'a>,
        }
        #[derive(Serialize)]
        struct VantageDoc<'a> {
            captures: Vec<String>,
            connections: Vec<VantageConn<'a>>,
        }
        let vantage = VantageDoc {
            captures: proof.files.iter().map(|f| f.display().to_string()).collect(),
            connections: ids.iter().zip(&proved).map(|(&id, v)| VantageConn::new(id, v)).collect(),
        };
        let doc = Doc { doc: json::document(an, selected(args)), vantage };
        serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
        return writeln!(out);
    }
    stats(out, an, args, tz)?;
    writeln!(out, "\nproved by the other captures: {}", proof.captures_text())?;
    for (&id, v) in ids.iter().zip(&proved) {
        let c = &an.conns[id - 1];
        let Some(n) = v.conn else {
            writeln!(out, "conn {id}  {} <-> {}: not in the other captures", c.info().a, c.info().b)?;
            continue;
        };
        writeln!(out, "conn {id}  {} <-> {}  (correlate conn {n})", c.info().a, c.info().b)?;
        for (name, d) in ["a2b", "b2a"].iter().zip(&v.dir) {
            let Some(d) = d else { continue };
            let rate = d.loss_rate.map_or("-".into(), |r| format!("{:.2} %", r * 100.0));
            let at: Vec<String> = d.losses.iter().map(|l| format!("{}→{}: {}", l.from, l.to, l.packets)).collect();
            let at = if at.is_empty() { String::new() } else { format!(" ({})", at.join(", ")) };
            writeln!(
                out,
                "  {name} path {} [captures {}]: {} packets, {} delivered, {} lost on path{at}, loss rate {rate}",
                d.path, d.source, d.packets, d.delivered, d.lost_on_path
            )?;
            writeln!(
                out,
                "      retransmissions {}: {} necessary, {} spurious; missing from capture 1 only {} (capture loss, not network loss)",
                d.retransmissions, d.necessary_retransmissions, d.spurious_retransmissions, d.missed_here
            )?;
        }
    }
    Ok(())
}

/// An anomaly count in words. A payload cut by the snaplen is what every header-only capture
/// does (`tcpdump -s 128`): said so, lest it read as damage (issue 17).
fn anomaly_text(kind: &str, n: u64) -> String {
    match kind {
        "truncated_payload" => format!(
            "{n} segment{} with the payload cut by the snaplen (normal for header-only captures)",
            if n == 1 { "" } else { "s" }
        ),
        _ => format!("{n} {kind}"),
    }
}

/// `2026-11-22 12:16:10.849758 UTC`: a time in seconds since the epoch (a JSON `_time` value)
/// as a date and clock time in `tz`, rounded to the µs as [`clock_of_secs`] rounds it, with
/// the zone's abbreviation.
fn date_time(secs: f64, tz: &TimeZone) -> String {
    // 1.8e15 µs: exact in an f64, so the rounding gives the µs the capture said.
    let us = (secs * 1e6).round();
    if !us.is_finite() || jiff::Timestamp::from_microsecond(us as i64).is_err() {
        return format!("{secs:.6}");
    }
    let (sec, frac) = ((us as i64).div_euclid(1_000_000), (us as i64).rem_euclid(1_000_000));
    let Some(text) = second_text(sec, tz, "%Y-%m-%d %H:%M:%S %Z") else { return format!("{secs:.6}") };
    // The µs go between the clock and the zone (an abbreviation or offset, without spaces).
    let (clock, zone) = text.rsplit_once(' ').unwrap_or((&text, ""));
    let mut s = String::with_capacity(text.len() + 7);
    s.push_str(clock);
    push_micros(&mut s, frac as u32);
    s.push(' ');
    s.push_str(zone);
    s
}

/// A time in seconds since the epoch (a JSON `_time` value) as a clock time in `tz`,
/// `12:16:10.849758`, rounded to the µs.
fn clock_of_secs(secs: f64, tz: &TimeZone) -> String {
    let us = (secs * 1e6).round();
    // Past year ~2554 the time in ns does not fit 64 bits (a damaged or odd timestamp).
    match (0.0..1e17).contains(&us).then(|| (us as u64).checked_mul(1000)).flatten() {
        Some(ns) => tcpscope_core::capture::time::clock(ns, tz),
        None => format!("{secs:.6}"),
    }
}

/// Writes `make` of every run of [`TEXT_CHUNK`] items, made in parallel `block` items at a time
/// and written in order: memory stays at one block's text.
fn in_parallel_blocks<W: Write, T: Sync>(
    out: &mut W,
    items: &[T],
    block: usize,
    make: impl Fn(&[T]) -> io::Result<Vec<u8>> + Sync,
) -> io::Result<()> {
    for block in items.chunks(block) {
        let parts: Vec<Vec<u8>> = block.par_chunks(TEXT_CHUNK).map(&make).collect::<io::Result<_>>()?;
        for p in parts {
            out.write_all(&p)?;
        }
    }
    Ok(())
}

/// What a CSV row of a connection holds: its `stats --json` or its `conns --json` fields.
#[derive(Clone, Copy)]
enum Rows {
    Stats,
    Brief,
}

/// `stats --csv` and `conns --csv`: the flattened JSON connection, one row each, written straight
/// from the statistics (a test holds the two together): building a JSON value per row was ~50 µs
/// a connection. Rows are made in parallel a block at a time and written in order.
fn conns_csv<W: Write>(out: &mut W, an: &Analysis, ids: &[usize], rows: Rows) -> io::Result<()> {
    if ids.is_empty() {
        return Ok(()); // no row, no header
    }
    let files: Vec<String> = an.files.iter().map(|f| f.path.display().to_string()).collect();
    let head = match rows {
        Rows::Stats => json::stats_csv_columns(),
        Rows::Brief => json::conns_csv_columns(),
    };
    write_csv_header(out, head)?;
    in_parallel_blocks(out, ids, CSV_BLOCK, |ids| {
        let mut w = csv::Writer::from_writer(Vec::with_capacity(ids.len() * 1024));
        for &id in ids {
            let c = &an.conns[id - 1];
            let file = files.get(c.info().file).map_or("", String::as_str);
            conn_csv_row(&mut w, c, id, [file, an.inputs.get(c.trace()).map_or("", String::as_str)], rows)?;
        }
        w.into_inner().map_err(|e| e.into_error())
    })
}

/// One connection's row, fields as serde_json writes the values (floats shortest round-trip
/// through `zmij`, as serde_json does; `null` empty).
/// `names` are its file's and its trace's.
fn conn_csv_row(
    w: &mut csv::Writer<Vec<u8>>,
    c: &ConnStats,
    id: usize,
    names: [&str; 2],
    rows: Rows,
) -> io::Result<()> {
    let mut ib = itoa::Buffer::new();
    w.write_field(ib.format(id))?;
    let [file, input] = names;
    w.write_field(file)?;
    w.write_field(input)?;
    w.write_field(ib.format(c.idx() + 1))?;
    let mut addr = Vec::with_capacity(40);
    for e in [c.info().a, c.info().b] {
        addr.clear();
        json::push_ip(&mut addr, e.addr);
        w.write_field(&addr)?;
        w.write_field(ib.format(e.port))?;
    }
    w.write_field(c.state().name())?;
    csv_cell(w, Cell::Bool(c.handshake()))?;
    w.write_field(c.info().reuse.map_or("", json::reuse_name))?;
    let [first, last, duration, max_idle] = json::conn_times(c);
    for t in [first, last, duration] {
        csv_cell(w, Cell::Float(t))?;
    }
    match rows {
        Rows::Stats => {
            csv_cell(w, Cell::Float(max_idle))?;
            for i in 0..2 {
                for v in json::DirJson::of(c, i).cells() {
                    csv_cell(w, v)?;
                }
            }
        }
        Rows::Brief => {
            for d in &c.dirs() {
                for v in json::DirBrief::from(&json::DirJson::from(d)).cells() {
                    csv_cell(w, v)?;
                }
            }
        }
    }
    w.write_record(None::<&[u8]>)?;
    Ok(())
}

/// A value as serde_json writes it, `null` (and what JSON cannot hold, non-finite floats) empty.
fn csv_cell(w: &mut csv::Writer<Vec<u8>>, v: Cell) -> csv::Result<()> {
    match v {
        Cell::Int(i) => w.write_field(itoa::Buffer::new().format(i)),
        Cell::Float(f) if f.is_finite() => w.write_field(zmij::Buffer::new().format_finite(f)),
        Cell::Bool(b) => w.write_field(if b { "true" } else { "false" }),
        Cell::Float(_) | Cell::Null => w.write_field(""),
    }
}

/// Connections formatted per parallel block (~8 MB of text held at a time), and per task
/// within it.
const TEXT_BLOCK: usize = 2048;
const TEXT_CHUNK: usize = 256;

/// Bytes of a connection's text, for the buffers: a row per direction field and the head lines
/// (a guess too small made every block's buffer grow by copying: +90 M instructions of
/// `memcpy` on 300,000 packets of short connections when two fields were added).
const CONN_TEXT: usize = ROW * json::DIR_FIELDS + 512;

/// The column heads, as `format!("  {:<26} {:>20} {:>20}\n", "", "a2b", "b2a")`.
const COLUMNS: &[u8] = b"                                              a2b                  b2a\n";

/// A row of the table: `format!("  {name:<26}{a:>21}{b:>21}\n")`, when the name and the cells
/// fit their widths.
const NAME_WIDTH: usize = 26;
const CELL_WIDTH: usize = 21;
const ROW: usize = 2 + NAME_WIDTH + 2 * CELL_WIDTH + 1;

/// The `stats` text table of one connection, written straight from its statistics (no JSON
/// view with its strings; the cells come from [`json::DirJson`], so the three outputs agree).
///
/// Every connection's table has the same names in the same places: it is copied blank in one
/// piece, and the cells are written right-aligned into their places. Building each row from
/// padding, name and cells (six small copies a row) was ~36,000 instructions a connection.
struct Table {
    /// The column heads and every row with blank cells.
    blank: Vec<u8>,
    /// The zone times are shown in.
    tz: TimeZone,
    /// How each row's values are written.
    rows: [CellFormat; json::DIR_FIELDS],
}

/// How the values of a row are written: unknown is "-" (the window scale says "unknown"),
/// floats rounded to what their unit makes useful, times (`_time`, seconds since the epoch)
/// as clock times (the date is in the connection's head).
#[derive(Clone, Copy)]
struct CellFormat {
    decimals: usize,
    null: &'static [u8],
    clock: bool,
}

impl CellFormat {
    fn of(name: &str) -> Self {
        let decimals = if name.ends_with("_ms") {
            3
        } else if name.ends_with("_time") || name.ends_with("_s") {
            6
        } else {
            1
        };
        CellFormat {
            decimals,
            null: if name == "window_scale" { b"unknown" } else { b"-" },
            clock: name.ends_with("_time"),
        }
    }

    fn write(self, buf: &mut Vec<u8>, v: Cell, tz: &TimeZone) {
        match v {
            Cell::Float(f) if self.clock => buf.extend_from_slice(clock_of_secs(f, tz).as_bytes()),
            Cell::Null => buf.extend_from_slice(self.null),
            Cell::Bool(b) => buf.extend_from_slice(if b { b"yes" } else { b"no" }),
            Cell::Int(i) => buf.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
            Cell::Float(f) => push_fixed(buf, f, self.decimals),
        }
    }

    /// Writes `v` right-aligned into `slot` (blank), as [`CellFormat::write`] would; false when
    /// it is wider than the slot. Floats go through `scratch`.
    #[inline]
    fn put(self, slot: &mut [u8], v: Cell, scratch: &mut Vec<u8>, tz: &TimeZone) -> bool {
        let mut ib = itoa::Buffer::new();
        let text = match v {
            Cell::Float(f) if self.clock => {
                scratch.clear();
                scratch.extend_from_slice(clock_of_secs(f, tz).as_bytes());
                scratch
            }
            // Most counters of short connections are single digits.
            Cell::Int(i) if i < 10 => {
                slot[slot.len() - 1] = b'0' + i as u8;
                return true;
            }
            Cell::Int(i) => ib.format(i).as_bytes(),
            Cell::Null => self.null,
            Cell::Bool(b) => {
                if b {
                    &b"yes"[..]
                } else {
                    b"no"
                }
            }
            Cell::Float(f) => {
                scratch.clear();
                push_fixed(scratch, f, self.decimals);
                scratch
            }
        };
        let Some(at) = slot.len().checked_sub(text.len()) else { return false };
        slot[at..].copy_from_slice(text);
        true
    }
}

impl Table {
    fn new(tz: TimeZone) -> Self {
        let mut blank = COLUMNS.to_vec();
        for name in json::DirJson::NAMES {
            debug_assert!(name.len() <= NAME_WIDTH, "{name} is wider than the names' column");
            let at = blank.len();
            blank.resize(at + ROW, b' ');
            blank[at + 2..at + 2 + name.len()].copy_from_slice(name.as_bytes());
            blank[at + ROW - 1] = b'\n';
        }
        Table { blank, tz, rows: json::DirJson::NAMES.map(CellFormat::of) }
    }

    /// Appends one connection's text; `cell` is scratch space.
    fn connection(&self, buf: &mut Vec<u8>, c: &ConnStats, id: usize, cell: &mut Vec<u8>) {
        let start = buf.len();
        conn_head(buf, c, id, &self.tz);
        let rows_at = buf.len() + COLUMNS.len();
        buf.extend_from_slice(&self.blank);
        let (a, b) = (json::DirJson::of(c, 0).cells(), json::DirJson::of(c, 1).cells());
        let rows = buf[rows_at..].chunks_exact_mut(ROW);
        for (((row, fmt), va), vb) in rows.zip(&self.rows).zip(a).zip(b) {
            let (sa, sb) = row[ROW - 1 - 2 * CELL_WIDTH..ROW - 1].split_at_mut(CELL_WIDTH);
            if !(fmt.put(sa, va, cell, &self.tz) && fmt.put(sb, vb, cell, &self.tz)) {
                // A cell wider than its column pushes the rest of the row right.
                buf.truncate(start);
                return self.connection_by_rows(buf, c, id);
            }
        }
    }

    /// [`Table::connection`] a row at a time, for cells of any width.
    fn connection_by_rows(&self, buf: &mut Vec<u8>, c: &ConnStats, id: usize) {
        conn_head(buf, c, id, &self.tz);
        buf.extend_from_slice(COLUMNS);
        let (a, b) = (json::DirJson::of(c, 0).cells(), json::DirJson::of(c, 1).cells());
        for (((name, fmt), va), vb) in json::DirJson::NAMES.iter().zip(&self.rows).zip(a).zip(b) {
            buf.extend_from_slice(b"  ");
            buf.extend_from_slice(name.as_bytes());
            buf.resize(buf.len() + NAME_WIDTH.saturating_sub(name.len()), b' ');
            for v in [va, vb] {
                let at = buf.len();
                fmt.write(buf, v, &self.tz);
                let n = buf.len() - at;
                if n < CELL_WIDTH {
                    // Right-align: move the cell right and fill in front of it.
                    buf.resize(at + CELL_WIDTH, b' ');
                    buf.copy_within(at..at + n, at + CELL_WIDTH - n);
                    buf[at..at + CELL_WIDTH - n].fill(b' ');
                }
            }
            buf.push(b'\n');
        }
    }
}

/// The first two lines of a connection in the `stats` text: who, state, and times.
fn conn_head(buf: &mut Vec<u8>, c: &ConnStats, id: usize, tz: &TimeZone) {
    buf.extend_from_slice(b"\nconnection ");
    buf.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    buf.extend_from_slice(b": ");
    push_endpoint(buf, c.info().a);
    buf.extend_from_slice(b" -> ");
    push_endpoint(buf, c.info().b);
    buf.extend_from_slice(b"  (");
    push_words(buf, c.state().name());
    if let Some(r) = c.info().reuse {
        buf.extend_from_slice(b", 4-tuple reused: ");
        push_words(buf, json::reuse_name(r));
    }
    buf.extend_from_slice(b")\n");
    let [first, last, duration, idle] = json::conn_times(c);
    let (first, last) = (date_time(first, tz), date_time(last, tz));
    buf.extend_from_slice(b"  first packet ");
    buf.extend_from_slice(first.as_bytes());
    buf.extend_from_slice(b"  last packet ");
    // The date and zone once, unless the connection ran past midnight.
    let same_day = first.get(..11) == last.get(..11);
    let last = if same_day { last.get(11..26).unwrap_or(&last) } else { &last };
    buf.extend_from_slice(last.as_bytes());
    buf.extend_from_slice(b"  duration ");
    push_fixed(buf, duration, 6);
    buf.extend_from_slice(b" s  longest idle ");
    push_fixed(buf, idle, 6);
    buf.extend_from_slice(b" s\n");
}

/// A name with its underscores as spaces.
fn push_words(buf: &mut Vec<u8>, name: &str) {
    buf.extend(name.bytes().map(|b| if b == b'_' { b' ' } else { b }));
}

/// `addr:port`, `[addr]:port` for IPv6, as `Endpoint`'s `Display` writes it.
fn push_endpoint(buf: &mut Vec<u8>, e: Endpoint) {
    let v6 = e.addr.is_ipv6();
    if v6 {
        buf.push(b'[');
    }
    json::push_ip(buf, e.addr);
    buf.extend_from_slice(if v6 { b"]:" } else { b":" });
    buf.extend_from_slice(itoa::Buffer::new().format(e.port).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use tcpscope_core::flow::{ConnInfo, SplitReason};
    use tcpscope_core::stats::DirStats;

    #[test]
    fn a_connections_text_fits_its_buffer() {
        let table = Table::new(TimeZone::UTC);
        let mut cell = Vec::new();
        for id in 1..=12 {
            for v6 in [false, true] {
                let mut buf = Vec::new();
                table.connection(&mut buf, &sample(id, v6, false), id, &mut cell);
                assert!(buf.len() <= CONN_TEXT, "{} bytes", buf.len());
            }
        }
    }

    #[test]
    fn a_time_past_what_ns_hold_is_written_in_seconds() {
        // pcapplusplus__pcapng-example.pcapng has such a timestamp: the product overflowed.
        let tz = TimeZone::UTC;
        assert_eq!(clock_of_secs(2e10, &tz), "20000000000.000000");
        assert_eq!(clock_of_secs(-1.0, &tz), "-1.000000");
        assert!(clock_of_secs(1.7e9, &tz).contains(':'));
    }

    #[test]
    fn column_heads_as_formatted() {
        assert_eq!(COLUMNS, format!("  {:<26} {:>20} {:>20}\n", "", "a2b", "b2a").as_bytes());
    }

    fn endpoint(s: &str) -> Endpoint {
        s.parse::<std::net::SocketAddr>().map(|a| Endpoint { addr: a.ip(), port: a.port() }).unwrap()
    }

    /// Connections with every kind of cell: unknowns, flags, floats of each unit, IPv6, reuse,
    /// and (`huge`) cells wider than their column.
    fn sample(id: usize, v6: bool, huge: bool) -> ConnStats {
        let mut dir = [DirStats::default(), DirStats::default()];
        for (i, d) in dir.iter_mut().enumerate() {
            let k = (id * 7 + i) as u64;
            d.first_ts_ns = 1_700_000_000_123_456_789 + k * 1_000_500;
            d.last_ts_ns = d.first_ts_ns + k * 999_999_937;
            d.max_idle_ns = k * 1234;
            d.packets = k + 1;
            d.data_packets = k;
            d.payload_bytes = if huge { u64::MAX } else { k * 1460 };
            d.unique_bytes = if huge { u64::MAX / 2 } else { k * 1000 };
            d.first_data_ts_ns = d.first_ts_ns + 10;
            d.last_data_ts_ns = if huge { d.first_data_ts_ns + 1 } else { d.last_ts_ns };
            d.last_ack_advance_ts_ns = d.last_ts_ns;
            d.acked_bytes = k * 900;
            d.mss = (i == 0).then_some(1460);
            d.wscale = (!k.is_multiple_of(3)).then_some(7);
            d.sack_permitted = k.is_multiple_of(2);
            d.timestamp_packets = k % 3;
            if huge {
                d.rare_mut().partial = true;
            }
            for x in 0..k % 5 {
                d.rtt.add(1_000_000 * x + 2_500 * k + 500);
                d.rtt_ts.add(37_000 * x + k);
                d.window.add(65_535 * x + k);
            }
        }
        let (a, b) =
            if v6 { ("[2001:db8::1]:443", "[fe80::2:3]:51234") } else { ("10.0.0.1:80", "192.168.100.255:65535") };
        let info = ConnInfo {
            a: endpoint(a),
            b: endpoint(b),
            file: 0,
            reuse: [None, Some(SplitReason::NewIsn), Some(SplitReason::IdleGap)][id % 3],
        };
        ConnStats::with_dirs(id % 5, info, id % 2, id as u64 * 1_000_000_007, &dir)
    }

    /// An endpoint from its JSON form, as the text wrote it before.
    fn ep(e: &json::EndpointJson) -> String {
        if e.addr.contains(':') { format!("[{}]:{}", e.addr, e.port) } else { format!("{}:{}", e.addr, e.port) }
    }

    /// The text as the `format!` machinery wrote it before.
    fn reference(c: &json::ConnJson) -> String {
        let mut out = format!(
            "\nconnection {}: {} -> {}  ({}{})\n",
            c.id,
            ep(&c.a),
            ep(&c.b),
            c.state.replace('_', " "),
            match c.reuse {
                Some(r) => format!(", 4-tuple reused: {}", r.replace('_', " ")),
                None => String::new(),
            }
        );
        // Times in UTC, through jiff's civil time rather than the code's own path.
        let utc = |secs: f64| {
            let ts = jiff::Timestamp::from_microsecond((secs * 1e6).round() as i64).unwrap();
            ts.to_zoned(TimeZone::UTC).datetime()
        };
        let (first, last) = (utc(c.first_time), utc(c.last_time));
        let last = if first.date() == last.date() {
            last.strftime("%H:%M:%S%.6f").to_string()
        } else {
            last.strftime("%Y-%m-%d %H:%M:%S%.6f UTC").to_string()
        };
        out += &format!(
            "  first packet {} UTC  last packet {last}  duration {:.6} s  longest idle {:.6} s\n",
            first.strftime("%Y-%m-%d %H:%M:%S%.6f"),
            c.duration_s,
            c.max_idle_s.unwrap_or_default()
        );
        out += &format!("  {:<26} {:>20} {:>20}\n", "", "a2b", "b2a");
        for ((k, va), vb) in json::DirJson::NAMES.iter().zip(c.a2b.cells()).zip(c.b2a.cells()) {
            let [a, b] = [va, vb].map(|v| match v {
                Cell::Float(f) if k.ends_with("_time") => utc(f).strftime("%H:%M:%S%.6f").to_string(),
                Cell::Float(f) => format!("{f:.*}", CellFormat::of(k).decimals),
                v => {
                    let mut s = Vec::new();
                    CellFormat::of(k).write(&mut s, v, &TimeZone::UTC);
                    String::from_utf8(s).unwrap()
                }
            });
            out += &format!("  {k:<26}{a:>21}{b:>21}\n");
        }
        out
    }

    #[test]
    fn csv_is_the_flattened_json() {
        let files = ["a/b,c.pcap", ""];
        for id in 1..=12 {
            for (v6, huge) in [(false, false), (true, false), (false, true), (true, true)] {
                let mut c = sample(id, v6, huge);
                c.info_mut().file = id % 2;
                let [a, mut b] = c.dirs();
                b.rtt.add(u64::MAX); // a mean of 1.8e13 ms, and rates in the exponent form
                c = ConnStats::with_dirs(c.idx(), *c.info(), c.trace(), c.max_idle_ns, &[a, b]);
                let conn = || json::ConnJson::new(&c, id, files[id % 2].to_string(), files[1 - id % 2].to_string());
                for (rows, value, columns) in [
                    (Rows::Stats, to_value(&conn()).unwrap(), json::stats_csv_columns()),
                    (Rows::Brief, to_value(&conn().brief()).unwrap(), json::conns_csv_columns()),
                ] {
                    let mut flat = Vec::new();
                    flatten("", &value, &mut flat);
                    let header: Vec<String> = flat.iter().map(|(k, _)| k.clone()).collect();
                    assert_eq!(columns, header);
                    let mut want = csv::Writer::from_writer(Vec::new());
                    want.write_record(flat.iter().map(|(_, v)| csv_field(v))).unwrap();
                    let mut got = csv::Writer::from_writer(Vec::new());
                    conn_csv_row(&mut got, &c, id, [files[id % 2], files[1 - id % 2]], rows).unwrap();
                    assert_eq!(
                        String::from_utf8(got.into_inner().unwrap()).unwrap(),
                        String::from_utf8(want.into_inner().unwrap()).unwrap()
                    );
                }
            }
        }
    }

    #[test]
    fn table_is_the_formatted_text() {
        let table = Table::new(TimeZone::UTC);
        let mut cell = Vec::new();
        for id in 1..=12 {
            for (v6, huge) in [(false, false), (true, false), (false, true), (true, true)] {
                let c = sample(id, v6, huge);
                let want = reference(&json::ConnJson::new(&c, id, String::new(), String::new()));
                let mut fast = b"before".to_vec();
                table.connection(&mut fast, &c, id, &mut cell);
                assert_eq!(String::from_utf8(fast).unwrap(), format!("before{want}"));
                let mut by_rows = Vec::new();
                table.connection_by_rows(&mut by_rows, &c, id);
                assert_eq!(String::from_utf8(by_rows).unwrap(), want);
                assert_eq!(huge, want.lines().skip(4).any(|l| l.len() > ROW - 1), "a wide cell in the sample");
            }
        }
    }
}

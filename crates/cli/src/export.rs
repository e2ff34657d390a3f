//! `tcpscope export`: the analysis as tables in files (Parquet, Arrow IPC, CSV), one file per
//! table, written as rows come (docs/json.md#arrow-and-parquet).

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::Args;
use tcpscope_arrow::{Codec, Dest, FileOut, Format, OnThread, Out, TableName};
use tcpscope_core::pass::Analysis;
use tcpscope_core::screen::Rules;

use crate::args::CommonArgs;
use crate::run::{input_error, query, say_files, settings, status};

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Directory to write the tables into (made if missing): TABLE.FORMAT each.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: PathBuf,
    /// File format: parquet, arrow (Arrow IPC file) or csv.
    #[arg(long, value_name = "FORMAT", default_value = "parquet", value_parser = parse_format)]
    pub format: Format,
    /// Compression of Parquet's pages: zstd (smaller files) or lz4 (a little faster).
    #[arg(long, value_name = "CODEC", default_value = "zstd", value_parser = parse_codec)]
    pub compression: Codec,
    /// Tables to write (comma-separated): connections, events, segments, rtt.
    #[arg(long, value_name = "TABLES", value_delimiter = ',', default_value = "connections,events,segments,rtt",
          value_parser = parse_table)]
    pub tables: Vec<TableName>,
    /// Rules file (TOML) of the classifier behind `events` and the segments' `class`
    /// (docs/screening.md).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
}

pub(crate) fn parse_format(s: &str) -> Result<Format, String> {
    Format::parse(s).ok_or_else(|| format!("unknown format {s:?} (parquet, arrow, csv)"))
}

fn parse_codec(s: &str) -> Result<Codec, String> {
    Codec::parse(s).ok_or_else(|| format!("unknown compression {s:?} (lz4, zstd)"))
}

fn parse_table(s: &str) -> Result<TableName, String> {
    TableName::parse(s).ok_or_else(|| {
        let all: Vec<&str> = TableName::ALL.iter().map(|t| t.name()).collect();
        format!("unknown table {s:?} ({})", all.join(", "))
    })
}

pub fn export(args: &ExportArgs) -> io::Result<ExitCode> {
    let c = &args.common;
    if c.json || c.csv {
        return Err(io::Error::other("export writes its tables to files: --json and --csv do not apply"));
    }
    let rules = match &args.rules {
        Some(p) => Rules::load(p).map_err(io::Error::other)?,
        None => Rules::default(),
    };
    let query = query(c)?.settings(rules.settings(settings(c)?));
    std::fs::create_dir_all(&args.out).map_err(|e| io::Error::other(format!("{}: {e}", args.out.display())))?;
    let mut tables = args.tables.clone();
    tables.dedup();
    // Each file written on a thread of its own, overlapping the analysis (OnThread).
    let mut files: Vec<(TableName, Arc<Mutex<OnThread>>)> = Vec::new();
    for t in tables {
        let path = args.out.join(format!("{}.{}", t.name(), args.format.ext()));
        let schema = tcpscope_arrow::columns::schema(&t.columns());
        let file = FileOut::with_codec(&path, args.format, args.compression, &schema)?;
        files.push((t, Arc::new(Mutex::new(OnThread::new(file)?))));
    }
    let dests: Vec<(TableName, Dest)> = files.iter().map(|(t, f)| (*t, f.clone() as Dest)).collect();
    let report = tcpscope_arrow::export(&query, &rules, &dests, &c.conn, &|_, _| {})?;
    for (_, f) in &files {
        f.lock().map_err(|_| io::Error::other("a writer panicked"))?.finish()?;
    }
    for t in &report.traces {
        if let Some(e) = &t.error {
            return Err(if t.window_error { io::Error::other(e.clone()) } else { input_error(e.clone()) });
        }
        for w in t.warnings.iter().chain(&t.empty) {
            eprintln!("tcpscope: {w}");
        }
    }
    say_files(&report.files, c.quiet)?;
    crate::output::check_ids(report.connections, c)?;
    Ok(status(&Analysis { files: report.files, ..Analysis::default() }))
}

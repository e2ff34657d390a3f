//! Arbitrary bytes as a capture file, exported as tables (`tcpscope export`, the Python
//! package's `read`): the pass → rows → Arrow batches → Parquet, with its hand-written
//! encoders (integer differences, text written from its codes).
//!
//! Never panics, and the tables agree with each other and with their files:
//! - `connections` is two rows a connection, the same whether the pass also makes the
//!   per-packet tables (one analysing thread, the rows in packet order) or not (the pass
//!   `stats` runs, split over threads by 4-tuple);
//! - `segments` is one row a packet the connections counted, `rtt` one row a sample;
//! - every table written as Parquet reads back (the parquet crate's own reader) as the
//!   batches the pass gave.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use libfuzzer_sys::fuzz_target;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tcpscope_arrow::{Collect, Dest, FileOut, Format, Out, TableName, columns};
use tcpscope_core::analysis::Settings;
use tcpscope_core::pass::Query;
use tcpscope_core::screen::Rules;

/// The tables of one export, kept in memory, each concatenated.
fn collect(query: &Query, rules: &Rules, tables: &[TableName]) -> (Vec<RecordBatch>, usize) {
    let outs: Vec<Arc<Mutex<Collect>>> = tables.iter().map(|_| Arc::new(Mutex::new(Collect::default()))).collect();
    let dests: Vec<(TableName, Dest)> = tables.iter().zip(&outs).map(|(t, o)| (*t, o.clone() as Dest)).collect();
    let report = tcpscope_arrow::export(query, rules, &dests, &[], &|_, _| {}).expect("an export to memory");
    let batches = tables.iter().zip(outs).map(|(t, o)| concat(*t, &std::mem::take(&mut o.lock().unwrap().0))).collect();
    (batches, report.connections)
}

/// A table's batches as one.
fn concat(t: TableName, batches: &[RecordBatch]) -> RecordBatch {
    let schema = batches.first().map_or_else(|| columns::schema(&t.columns()), |b| b.schema());
    arrow_select::concat::concat_batches(&schema, batches).unwrap()
}

/// The sum of a `connections` column of counts.
fn sum(conns: &RecordBatch, name: &str) -> u64 {
    let col = conns.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
    col.as_primitive::<Int64Type>().iter().map(|v| u64::try_from(v.unwrap_or(0)).expect("a count below 0")).sum()
}

/// A file of this process under the temporary directory (`/dev/shm` when there is one).
fn scratch(name: &str) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    dir.join(format!("tcpscope-fuzz-export-{}-{name}", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let input = scratch("in.pcap");
    std::fs::write(&input, data).unwrap();
    let rules = Rules::default();
    let query = Query::new(vec![input.clone()]).settings(rules.settings(Settings::default()));
    let all = TableName::ALL;
    let (tables, n) = collect(&query, &rules, &all);
    let at = |t: TableName| &tables[all.iter().position(|x| *x == t).unwrap()];
    let conns = at(TableName::Connections);
    assert_eq!(conns.num_rows(), 2 * n, "connections: two rows a connection");
    assert_eq!(at(TableName::Segments).num_rows() as u64, sum(conns, "packets"), "segments: a row a packet");
    let samples = sum(conns, "rtt_samples") + sum(conns, "rtt_ts_samples");
    assert_eq!(at(TableName::Rtt).num_rows() as u64, samples, "rtt: a row a sample");

    let (alone, _) = collect(&query, &rules, &[TableName::Connections]);
    assert_eq!(alone[0], *conns, "connections alone differ from connections with the per-packet tables");

    // The export as the command line writes it: each table a Parquet file, its text columns
    // written from their codes.
    let paths: Vec<PathBuf> = all.iter().map(|t| scratch(&format!("{}.parquet", t.name()))).collect();
    let files: Vec<Arc<Mutex<FileOut>>> = all
        .iter()
        .zip(&paths)
        .map(|(t, p)| {
            Arc::new(Mutex::new(FileOut::create(p, Format::Parquet, &columns::schema(&t.columns())).unwrap()))
        })
        .collect();
    let dests: Vec<(TableName, Dest)> = all.iter().zip(&files).map(|(t, f)| (*t, f.clone() as Dest)).collect();
    tcpscope_arrow::export(&query, &rules, &dests, &[], &|_, _| {}).expect("an export to files");
    for (((t, want), f), path) in all.iter().zip(&tables).zip(&files).zip(&paths) {
        f.lock().unwrap().finish().unwrap();
        let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap().build().unwrap();
        let back: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
        let back = concat(*t, &back);
        assert_eq!(back.num_rows(), want.num_rows(), "{}: rows read back", t.name());
        for (i, field) in want.schema().fields().iter().enumerate() {
            assert_eq!(
                back.column(i).to_data(),
                want.column(i).to_data(),
                "{}: column {} read back from Parquet",
                t.name(),
                field.name()
            );
        }
        let _ = std::fs::remove_file(path);
    }
    let _ = std::fs::remove_file(&input);
});

//! The exported tables: their columns come from the field lists (and `docs/json.md` lists
//! them), their values are `stats --json`'s, and the files read back as written.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::{Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::DataType;
use parquet::basic::{Compression, Encoding};
use serde_json::Value;
use tcpscope_arrow::columns::schema;
use tcpscope_arrow::{Codec, Collect, Dest, FileOut, Format, OnThread, Out, TableName, export};
use tcpscope_core::export::json::document;
use tcpscope_core::pass::Query;
use tcpscope_core::screen::Rules;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(name)
}

/// Every table of `paths` (one query), in memory.
fn tables(query: &Query) -> Vec<(TableName, Vec<RecordBatch>)> {
    let outs: Vec<(TableName, Arc<Mutex<Collect>>)> =
        TableName::ALL.iter().map(|&t| (t, Arc::new(Mutex::new(Collect::default())))).collect();
    let dests: Vec<(TableName, Dest)> = outs.iter().map(|(t, c)| (*t, c.clone() as Dest)).collect();
    let rules = Rules::default();
    export(&query.clone().settings(rules.settings(Default::default())), &rules, &dests, &[], &|_, _| {}).unwrap();
    outs.into_iter().map(|(t, c)| (t, std::mem::take(&mut c.lock().unwrap().0))).collect()
}

/// A cell as JSON, for comparison with `stats --json`.
fn cell(a: &dyn Array, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
    }
    match a.data_type() {
        DataType::Int64 => a.as_any().downcast_ref::<Int64Array>().unwrap().value(i).into(),
        DataType::Float64 => a.as_any().downcast_ref::<Float64Array>().unwrap().value(i).into(),
        DataType::Boolean => a.as_any().downcast_ref::<BooleanArray>().unwrap().value(i).into(),
        DataType::Utf8 => a.as_any().downcast_ref::<StringArray>().unwrap().value(i).into(),
        t => panic!("unexpected type {t}"),
    }
}

/// Rows as JSON objects keyed by column name.
fn rows(batches: &[RecordBatch]) -> Vec<serde_json::Map<String, Value>> {
    let mut out = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            let row =
                b.schema().fields().iter().zip(b.columns()).map(|(f, a)| (f.name().clone(), cell(a, i))).collect();
            out.push(row);
        }
    }
    out
}

#[test]
fn connections_hold_every_stats_value() {
    let paths = vec![data("loss-snd.pcap"), data("reorder-rcv.pcap")];
    let q = Query::new(paths.clone());
    let an = q.stats(&|_, _| {}).unwrap();
    let json = serde_json::to_value(document(&an, |_| true)).unwrap();
    let conns = json["connections"].as_array().unwrap();
    let t = tables(&q);
    let got = rows(&t[0].1);
    assert_eq!(got.len(), 2 * conns.len());
    let mut checked = 0;
    for row in &got {
        let c = conns
            .iter()
            .find(|c| c["input"] == row["input"] && c["conn"] == row["conn"])
            .unwrap_or_else(|| panic!("no connection for {row:?}"));
        let dir = row["dir"].as_str().unwrap();
        for (name, v) in row {
            let want = match name.as_str() {
                "dir" => continue,
                n if n.starts_with("a_") || n.starts_with("b_") => &c[&n[..1]][&n[2..]],
                n if c.get(n).is_some() => &c[n],
                n => &c[dir][n.strip_prefix("dir_").unwrap_or(n)],
            };
            assert_eq!(v, want, "{name} of {} {dir}", row["conn"]);
            checked += 1;
        }
    }
    assert!(checked > 250, "{checked} values");
}

#[test]
fn segments_and_rtt_follow_the_trace() {
    let q = Query::new(vec![data("loss-snd.pcap")]);
    let an = q.stats(&|_, _| {}).unwrap();
    let t = tables(&q);
    let segs = rows(&t[2].1);
    assert_eq!(segs.len() as u64, an.files[0].tcp_packets);
    let d = &an.conns[0].dir(0);
    let rexmit = segs.iter().filter(|r| r["dir"] == "a2b" && r["verdict"] == "retransmission").count() as u64;
    assert_eq!(rexmit, d.rexmit_packets);
    let rtt = rows(&t[3].1);
    let karn = rtt.iter().filter(|r| r["dir"] == "a2b" && r["kind"] == "karn").count() as u64;
    assert_eq!(karn, d.rtt.n);
    let events = rows(&t[1].1);
    assert!(!events.is_empty() && events.iter().all(|e| e["input"] == segs[0]["input"] && e["conn"] == 1));
}

/// Each format (Parquet in each codec) writes what the in-memory batches hold, on a writing
/// thread as `export` does; Parquet and Arrow read back equal.
#[test]
fn files_read_back_as_written() {
    let q = Query::new(vec![data("loss-snd.pcap")]);
    let want = tables(&q);
    let dir = std::env::temp_dir().join(format!("tcpscope-arrow-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let formats = [
        (Format::Parquet, Codec::Lz4),
        (Format::Parquet, Codec::Zstd),
        (Format::Arrow, Codec::Lz4),
        (Format::Csv, Codec::Lz4),
    ];
    for (format, codec) in formats {
        for (t, batches) in &want {
            let path = dir.join(format!("{}.{}", t.name(), format.ext()));
            let file = FileOut::with_codec(&path, format, codec, &schema(&t.columns())).unwrap();
            let mut f = OnThread::new(file).unwrap();
            for b in batches {
                f.write(b).unwrap();
            }
            f.finish().unwrap();
            let back: Vec<RecordBatch> = match format {
                Format::Parquet => {
                    let file = std::fs::File::open(&path).unwrap();
                    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
                    // Text is dictionary-encoded; numbers (times, frames, sequence numbers,
                    // mostly distinct) are not, and integers are written as differences.
                    for rg in reader.metadata().row_groups() {
                        for (c, col) in t.columns().iter().zip(rg.columns()) {
                            let text = c.field.kind == tcpscope_core::table::Kind::Text;
                            let dict = col.dictionary_page_offset().is_some();
                            assert_eq!(dict, text, "{}.{}: dictionary page", t.name(), c.name);
                            let want = match codec {
                                Codec::Lz4 => matches!(col.compression(), Compression::LZ4_RAW),
                                Codec::Zstd => matches!(col.compression(), Compression::ZSTD(_)),
                            };
                            assert!(want, "{}.{}: {:?} for {codec:?}", t.name(), c.name, col.compression());
                            // Integers are written as differences.
                            let int = c.field.kind == tcpscope_core::table::Kind::Int;
                            let delta = col.encodings().any(|e| e == Encoding::DELTA_BINARY_PACKED);
                            assert_eq!(
                                delta,
                                int,
                                "{}.{}: {:?}",
                                t.name(),
                                c.name,
                                col.encodings().collect::<Vec<_>>()
                            );
                        }
                    }
                    reader.build().unwrap().map(|b| b.unwrap()).collect()
                }
                Format::Arrow => {
                    let file = std::fs::File::open(&path).unwrap();
                    arrow_ipc::reader::FileReader::try_new(file, None).unwrap().map(|b| b.unwrap()).collect()
                }
                Format::Csv => {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let header = text.lines().next().unwrap();
                    let names: Vec<&str> = t.columns().iter().map(|c| c.name).collect();
                    assert_eq!(header, names.join(","));
                    assert_eq!(text.lines().count(), 1 + batches.iter().map(|b| b.num_rows()).sum::<usize>());
                    continue;
                }
            };
            assert_eq!(rows(&back), rows(batches), "{} as {} ({codec:?})", t.name(), format.ext());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Column names are unique in each table, and `docs/json.md` lists the columns of
/// `connections` as the code makes them (`TCPSCOPE_BLESS=1` rewrites the list).
#[test]
fn columns_are_unique_and_documented() {
    for t in TableName::ALL {
        let mut names: Vec<&str> = t.columns().iter().map(|c| c.name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "{} has a duplicate column", t.name());
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/json.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let open = "<!-- columns: connections -->\n";
    let start = text.find(open).expect("docs/json.md has the connections' column list") + open.len();
    let end = start + text[start..].find("<!-- /columns -->").unwrap();
    let list: Vec<String> = TableName::Connections.columns().iter().map(|c| format!("`{}`", c.name)).collect();
    let want = format!("{}\n", list.join(", "));
    if text[start..end] != want {
        if std::env::var_os("TCPSCOPE_BLESS").is_some() {
            std::fs::write(&path, format!("{}{want}{}", &text[..start], &text[end..])).unwrap();
        } else {
            panic!("docs/json.md's connections columns differ from the code (TCPSCOPE_BLESS=1 rewrites them)");
        }
    }
}

/// The typed appends of the per-packet rows (`record!`) fill the columns exactly as the
/// serde walk of the same rows does: same values, same nulls, same schema.
#[test]
fn typed_rows_equal_their_serialized_form() {
    use tcpscope_arrow::columns::{Lent, TableBuilder, array, columns};
    use tcpscope_core::export::rows::{ConnRef, RttRow, SegmentRow};
    use tcpscope_core::table::{Record, RecordColumns, Row, Shared, Table};

    let (segments, rtt) = tcpscope_core::testutil::packet_rows(&data("loss-snd.pcap"), "a file");
    assert!(segments.iter().any(|r| r.class.is_some() && r.rtt_ms.is_some() || r.ack.is_none()), "nulls and values");
    assert!(!rtt.is_empty());

    fn both<R: Record + serde::Serialize>(fields: &[tcpscope_core::table::Field], rows: &[R]) {
        let mut cols = columns(ConnRef::FIELDS);
        cols.extend(columns(fields));
        let (mut typed, mut serde) = (TableBuilder::new(cols.clone()), TableBuilder::new(cols));
        let input: std::sync::Arc<str> = "in".into();
        for (i, r) in rows.iter().enumerate() {
            let c = ConnRef { input: Shared(&input), conn: i % 3 + 1 };
            typed.put(&c);
            typed.put(r);
            typed.end_row().unwrap();
            serde.append(&c, &[]).unwrap();
            serde.append(r, &[]).unwrap();
            serde.end_row().unwrap();
        }
        let (typed, serde) = (typed.finish().unwrap(), serde.finish().unwrap());
        assert_eq!(typed.num_rows(), rows.len());
        assert_eq!(typed, serde);
        // Stored in the record's own columns (`Record::push`, the exports' way), twice (a
        // second batch of the same columns: codes kept across batches).
        let mut conn = <ConnRef<'static> as Record>::Columns::default();
        let mut recs = R::Columns::default();
        let mut lent: Vec<Lent> = typed.schema().fields().iter().map(|_| Lent::default()).collect();
        for round in 0..2 {
            for (i, r) in rows.iter().enumerate() {
                let at = Row::new(i).unwrap();
                ConnRef { input: Shared(&input), conn: i % 3 + 1 }.push(&mut conn, at);
                r.push(&mut recs, at);
            }
            let mut cols = conn.columns();
            cols.extend(recs.columns());
            let arrays: Vec<_> = cols
                .into_iter()
                .zip(typed.schema().fields())
                .zip(&mut lent)
                .map(|((c, f), lent)| array(c, rows.len(), f.data_type(), lent).unwrap())
                .collect();
            let pushed = arrow_array::RecordBatch::try_new(typed.schema(), arrays).unwrap();
            assert_eq!(pushed, typed, "batch {round}");
        }
    }
    both(SegmentRow::FIELDS, &segments);
    both(RttRow::FIELDS, &rtt);
}

/// A typed value of the wrong kind for its column, or one too many, is an error naming it.
#[test]
fn typed_appends_check_their_columns() {
    use tcpscope_arrow::columns::{TableBuilder, columns};
    use tcpscope_core::export::rows::{ConnRef, RttRow};
    use tcpscope_core::table::{Columns, Name, Shared, Table};

    let x: std::sync::Arc<str> = "x".into();
    let rtt = RttRow { dir: Name("a2b"), frame: 3, sent_frame: 1, ts_ns: 9, rtt_ms: 1.5, kind: Name("karn") };
    // The columns of RttRow, given a ConnRef then an RttRow: an integer where text goes.
    let mut t = TableBuilder::new(columns(RttRow::FIELDS));
    t.put(&ConnRef { input: Shared(&x), conn: 1 });
    t.put(&rtt);
    let e = t.end_row().unwrap_err().to_string();
    assert!(e.contains("column sent_frame: text"), "{e}");
    let mut t = TableBuilder::new(columns(ConnRef::FIELDS));
    t.put(&ConnRef { input: Shared(&x), conn: 1 });
    t.int(5);
    assert!(t.end_row().unwrap_err().to_string().contains("more values than the 2 columns"));
    let mut t = TableBuilder::new(columns(ConnRef::FIELDS));
    t.text("x");
    t.uint(u64::MAX);
    assert!(t.end_row().unwrap_err().to_string().contains("does not fit"));
    let mut t = TableBuilder::new(columns(RttRow::FIELDS));
    t.put(&rtt);
    t.end_row().unwrap();
    assert_eq!(t.finish().unwrap().num_rows(), 1);
}

//! The series behind a plot as Arrow tables (core's `plot::data`: `tcpscope plot --data`,
//! Python's `tcpscope.series`): each part one record batch of its fields' schema, or one file.

use std::io;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use tcpscope_core::table::Part;

use crate::columns::{TableBuilder, columns, decode};
use crate::out::{Codec, FileOut, Format, Out};
use crate::tables::BATCH_ROWS;

/// The rows of `part` in batches of [`BATCH_ROWS`] (the builder's columns stay that small
/// however long the series: 4.2 M throughput points took 717 MB whole), each given to `each`
/// as the builder made it, text of a few values still coded; returns the table's schema.
fn batches(part: &Part, mut each: impl FnMut(RecordBatch) -> io::Result<()>) -> io::Result<arrow_schema::SchemaRef> {
    let mut t = TableBuilder::new(columns(&part.fields()));
    for i in 0..part.len() {
        part.put(i, &mut t);
        t.end_row()?;
        if t.rows() == BATCH_ROWS {
            each(t.finish()?)?;
        }
    }
    if t.rows() > 0 {
        each(t.finish()?)?;
    }
    Ok(t.schema().clone())
}

/// `part` as record batches of its fields' schema, and that schema.
pub fn batch(part: &Part) -> io::Result<(Vec<RecordBatch>, arrow_schema::SchemaRef)> {
    let mut out = Vec::new();
    let schema = batches(part, |b| {
        out.push(decode(&b)?);
        Ok(())
    })?;
    Ok((out, schema))
}

/// Writes each of `parts` to `dir` as `PREFIX-NAME.EXT` (`tsg-segments.parquet`); returns the
/// files written, in order.
pub fn write(parts: &[Part], dir: &Path, prefix: &str, format: Format, codec: Codec) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| io::Error::other(format!("{}: {e}", dir.display())))?;
    let mut written = Vec::with_capacity(parts.len());
    for part in parts {
        let path = dir.join(format!("{prefix}-{}.{}", part.name, format.ext()));
        let at = |e: io::Error| io::Error::other(format!("{}: {e}", path.display()));
        let schema = crate::columns::schema(&columns(&part.fields()));
        let mut file = FileOut::with_codec(&path, format, codec, &schema)?;
        batches(part, |b| file.write_coded(&b)).map_err(at)?;
        file.finish().map_err(at)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use tcpscope_core::analysis::Dir;
    use tcpscope_core::plot::make::{Kind, Request};
    use tcpscope_core::series::{self, tput::TputSink, tsg::TsgSink};

    const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap");

    /// The part as one batch.
    fn one(p: &Part) -> RecordBatch {
        let (b, schema) = batch(p).unwrap();
        arrow_select::concat::concat_batches(&schema, &b).unwrap()
    }

    fn parts(kind: Kind) -> (Vec<Part>, Dir) {
        Request::new(TRACE.into(), 1, kind).tables(&mut |_| Ok(())).unwrap()
    }

    /// The time-sequence tables hold the series' every point, field for field, in the schema
    /// of their fields; the same series read back from each file format.
    #[test]
    fn tsg_tables_are_the_series_point_for_point() {
        let (parts, dir) = parts(Kind::Tsg);
        let (tsg, _) = series::from_file::<TsgSink>(TRACE.as_ref(), 0, dir, Default::default()).unwrap();
        let tsg = tsg.unwrap();
        let names: Vec<&str> = parts.iter().map(|p| p.name).collect();
        assert_eq!(names, ["segments", "acks", "sacks", "notes"]);
        let lens = [tsg.segments.len(), tsg.acks.len(), tsg.sacks.len(), tsg.notes.len()];
        assert_eq!(parts.iter().map(Part::len).collect::<Vec<_>>(), lens);
        assert!(lens.iter().all(|&n| n > 0), "{lens:?}: loss-snd has each");
        let segs = one(&parts[0]);
        let col = |b: &RecordBatch, n: &str| b.column_by_name(n).unwrap().clone();
        let seq = col(&segs, "seq");
        let time = col(&segs, "time_s");
        let kind = col(&segs, "kind");
        let kind = kind.as_string::<i32>();
        for (i, s) in tsg.segments.iter().enumerate() {
            assert_eq!(seq.as_primitive::<Int64Type>().value(i), s.seq_off);
            assert_eq!(time.as_primitive::<Float64Type>().value(i), s.t_ns as f64 / 1e9);
            let verdict = match s.kind.name() {
                "rexmit" => "retransmission",
                "ooo" => "out_of_order",
                _ if s.len == 0 && !s.flags.syn() && !s.flags.fin() => "no_data",
                k => k,
            };
            assert_eq!(kind.value(i), verdict);
        }
        assert!(kind.iter().any(|k| k == Some("retransmission")));
        let acks = one(&parts[1]);
        let (ack, win, edge) = (col(&acks, "ack"), col(&acks, "win_bytes"), col(&acks, "edge"));
        for i in 0..acks.num_rows() {
            let [a, w, e] = [&ack, &win, &edge].map(|c| c.as_primitive::<Int64Type>().value(i));
            assert_eq!((a, w), (tsg.acks[i].ack_off, tsg.acks[i].win_bytes as i64));
            assert_eq!(e, a + w);
        }
        assert!(col(&segs, "dir").as_string::<i32>().iter().all(|d| d == Some(dir.name())));
        assert!(col(&segs, "conn").as_primitive::<Int64Type>().iter().all(|c| c == Some(1)));

        let out = std::env::temp_dir().join(format!("tcpscope-arrow-series-{}", std::process::id()));
        for format in [Format::Parquet, Format::Arrow, Format::Csv] {
            let files = write(&parts, &out, "tsg", format, Codec::default()).unwrap();
            let want: Vec<_> = names.iter().map(|n| out.join(format!("tsg-{n}.{}", format.ext()))).collect();
            assert_eq!(files, want);
            if format == Format::Parquet {
                let f = std::fs::File::open(&files[0]).unwrap();
                let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
                let back: Vec<RecordBatch> = r.build().unwrap().map(Result::unwrap).collect();
                let back = arrow_select::concat::concat_batches(&back[0].schema(), &back).unwrap();
                assert_eq!(back, segs);
            }
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// The throughput rates are the series' own functions' points, the averages over the
    /// window asked for (and the plot's own when not).
    #[test]
    fn tput_rates_are_the_series_lines() {
        let req = Request { window_s: Some(0.25), ..Request::new(TRACE.into(), 1, Kind::Tput) };
        let (parts, dir) = req.tables(&mut |_| Ok(())).unwrap();
        let (t, _) = series::from_file::<TputSink>(TRACE.as_ref(), 0, dir, Default::default()).unwrap();
        let t = t.unwrap();
        let rates = one(&parts[1]);
        let line = rates.column_by_name("line").unwrap().as_string::<i32>().clone();
        let bps = rates.column_by_name("bps").unwrap().as_primitive::<Float64Type>().clone();
        let window = rates.column_by_name("window_s").unwrap().as_primitive::<Float64Type>().clone();
        let of = |name: &str| -> Vec<f64> {
            (0..rates.num_rows()).filter(|&i| line.value(i) == name).map(|i| bps.value(i)).collect()
        };
        let want = |v: Vec<series::tput::RatePoint>| v.iter().map(|p| p.bps).collect::<Vec<_>>();
        assert_eq!(of("instantaneous"), want(t.instantaneous(series::tput::Bytes::All)));
        assert_eq!(of("average"), want(t.moving_average(series::tput::Bytes::All, 250_000_000)));
        assert_eq!(of("goodput_average"), want(t.moving_average(series::tput::Bytes::New, 250_000_000)));
        assert!(!of("average").is_empty());
        for i in 0..rates.num_rows() {
            let avg = line.value(i) != "instantaneous";
            assert_eq!(window.is_valid(i), avg);
            assert!(!avg || window.value(i) == 0.25);
        }
        assert_eq!(parts[0].len(), t.points.len());
    }

    /// Every kind gives its tables, each of its declared fields, with rows where loss-snd has
    /// them; an unknown connection is the plot's error.
    #[test]
    fn every_kind_gives_its_tables() {
        let want: &[(Kind, &[&str])] = &[
            (Kind::Rtt, &["samples"]),
            (Kind::Flight, &["points", "cwnd"]),
            (Kind::Ssize, &["segments"]),
            (Kind::Ack, &["delays"]),
            (Kind::Burst, &["packets", "bins", "cdf"]),
            (Kind::BurstCdf, &["packets", "bins", "cdf"]),
            (Kind::Dupack, &["dupacks", "rexmits", "intervals"]),
            (Kind::Ladder, &["segments"]),
            (Kind::States, &["steps"]),
        ];
        for (kind, names) in want {
            let (parts, _) = parts(*kind);
            assert_eq!(parts.iter().map(|p| p.name).collect::<Vec<_>>(), *names, "{kind:?}");
            for p in &parts {
                let b = one(p);
                assert_eq!(b.num_rows(), p.len());
                let cols: Vec<String> = b.schema().fields().iter().map(|f| f.name().clone()).collect();
                assert_eq!(cols, tcpscope_core::table::names(&p.fields()), "{kind:?} {}", p.name);
                assert!(!p.is_empty(), "{kind:?} {}: no rows", p.name);
            }
        }
        let err = Request::new(TRACE.into(), 99, Kind::Tsg).tables(&mut |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("no connection 99"), "{err}");
    }

    /// `--from`/`--to` keep what the plot shows: the rows with a time in the window (both ends
    /// included: the window starts and ends at a segment's own time), the spans that overlap
    /// it; the tables without a time axis whole. An absolute time is the same window; a window
    /// past the connection's end is the plot's error.
    #[test]
    fn the_time_window_keeps_what_the_plot_shows() {
        use arrow_select::filter::filter_record_batch;
        let segs = one(&parts(Kind::Tsg).0[0]);
        let time = segs.column_by_name("time_s").unwrap().as_primitive::<Float64Type>().clone();
        let (from, to) = (time.value(100), time.value(400));
        let windowed = |kind: Kind, iv: Option<f64>, from: String, to: String| {
            let req = Request { from: Some(from), to: Some(to), window_s: iv, ..Request::new(TRACE.into(), 1, kind) };
            req.tables(&mut |_| Ok(())).unwrap().0
        };
        let f64s = |b: &RecordBatch, n: &str| b.column_by_name(n).map(|c| c.as_primitive::<Float64Type>().clone());
        let kinds = [
            (Kind::Tsg, None),
            (Kind::Rtt, None),
            (Kind::Tput, None),
            (Kind::Flight, None),
            (Kind::Ssize, None),
            (Kind::Ack, None),
            (Kind::Dupack, Some(0.01)),
            (Kind::Ladder, None),
            (Kind::Burst, None),
            (Kind::States, None),
        ];
        let mut cut = 0;
        for (kind, iv) in kinds {
            let whole =
                Request { window_s: iv, ..Request::new(TRACE.into(), 1, kind) }.tables(&mut |_| Ok(())).unwrap().0;
            let part = windowed(kind, iv, from.to_string(), to.to_string());
            assert_eq!(part.len(), whole.len());
            let mut narrowed = false;
            for (w, p) in whole.iter().zip(&part) {
                let (w, p) = (one(w), one(p));
                let keep: arrow_array::BooleanArray = (0..w.num_rows())
                    .map(|i| {
                        let at = |n: &str| f64s(&w, n).map(|c| c.value(i));
                        Some(match (at("time_s"), at("start_s"), at("end_s"), at("interval_s")) {
                            _ if matches!(kind, Kind::Burst | Kind::States) => true,
                            (Some(t), ..) => from <= t && t <= to,
                            (None, Some(a), Some(b), _) => b >= from && a <= to,
                            (None, Some(a), None, Some(iv)) => a + iv >= from && a <= to,
                            _ => true,
                        })
                    })
                    .collect();
                let want = filter_record_batch(&w, &keep).unwrap();
                assert_eq!(p, want, "{kind:?}");
                cut += w.num_rows() - p.num_rows();
                narrowed |= p.num_rows() > 0 && p.num_rows() < w.num_rows();
            }
            // Every kind with a time axis had rows on both sides of the window and in it.
            assert_eq!(narrowed, !matches!(kind, Kind::Burst | Kind::States), "{kind:?}");
        }
        assert!(cut > 1000, "{cut}");
        // The window's ends are segments' own times, and included.
        let tsg = one(&windowed(Kind::Tsg, None, from.to_string(), to.to_string())[0]);
        let t = f64s(&tsg, "time_s").unwrap();
        assert_eq!((t.value(0), t.value(t.len() - 1)), (from, to));
        // The dup-ACK interval by default is the plot's: of the time shown.
        let iv = one(&windowed(Kind::Dupack, None, from.to_string(), to.to_string())[2]);
        let want = tcpscope_core::plot::dupack::default_interval(to - from);
        assert!(f64s(&iv, "interval_s").unwrap().iter().all(|v| v == Some(want)), "{want}");
        // An absolute time is the same window.
        // (The trace's first packet, from its pcap record header: little-endian, µs.)
        let file = std::fs::read(TRACE).unwrap();
        assert_eq!(file[..4], [0xd4, 0xc3, 0xb2, 0xa1]);
        let word = |o: usize| u32::from_le_bytes(file[o..o + 4].try_into().unwrap()) as f64;
        let start_s = word(24) + word(28) / 1e6;
        let at = |s: f64| format!("@{:.6}", start_s + s);
        let abs = one(&windowed(Kind::Rtt, None, at(from - 1e-4), at(to + 1e-4))[0]);
        let rel = one(&windowed(Kind::Rtt, None, (from - 1e-4).to_string(), (to + 1e-4).to_string())[0]);
        assert_eq!(abs, rel);
        let req = Request { from: Some("100".into()), ..Request::new(TRACE.into(), 1, Kind::Rtt) };
        let err = req.tables(&mut |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("has no packets from 100 s"), "{err}");
    }
}

//! Where a table's record batches go: a Parquet, Arrow IPC or CSV file written as they come,
//! or memory (the Python package), maybe on a thread of its own ([`OnThread`]).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

/// A file format of `tcpscope export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Apache Parquet, its pages compressed by a [`Codec`].
    Parquet,
    /// The Arrow IPC file format (Feather v2), uncompressed.
    Arrow,
    /// CSV with a header row.
    Csv,
}

impl Format {
    /// The file name extension.
    pub fn ext(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
            Format::Csv => "csv",
        }
    }

    /// The format named `s` (as `--format` takes it).
    pub fn parse(s: &str) -> Option<Format> {
        [Format::Parquet, Format::Arrow, Format::Csv].into_iter().find(|f| f.ext() == s)
    }
}

/// The compression of a Parquet file's pages (`tcpscope export --compression`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Codec {
    /// LZ4 (Parquet's `LZ4_RAW`): ~2 % fewer instructions than zstd for a `segments` file
    /// 1.45× as large (docs/performance.md#exports-and-python).
    Lz4,
    /// zstd, level 1, the default: with the integers written as differences its pages are
    /// small, and compressing them costs little more than LZ4.
    #[default]
    Zstd,
}

impl Codec {
    /// Its name, as `--compression` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    /// The codec named `s`.
    pub fn parse(s: &str) -> Option<Codec> {
        [Codec::Lz4, Codec::Zstd].into_iter().find(|c| c.name() == s)
    }
}

/// A table's destination.
pub trait Out: Send {
    /// Writes one batch.
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()>;
    /// Writes what is left (a file's footer).
    fn finish(&mut self) -> io::Result<()>;
}

/// The batches kept in memory, in order.
#[derive(Default)]
pub struct Collect(pub Vec<RecordBatch>);

impl Out for Collect {
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        self.0.push(batch.clone());
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Writer {
    Parquet(ArrowWriter<File>),
    Arrow(arrow_ipc::writer::FileWriter<File>),
    Csv(arrow_csv::Writer<File>),
    Done,
}

/// Text columns whose values come from a handful: `dir` (`a2b`, `b2a`), `flags` (letters),
/// `verdict`, `class` (`segments`), `kind` (`rtt`). Parquet keeps no statistics of them.
const FEW_VALUES: [&str; 5] = ["dir", "flags", "verdict", "class", "kind"];

/// A file being written; errors name it.
pub struct FileOut {
    path: PathBuf,
    w: Writer,
}

impl FileOut {
    /// Creates `path` for batches of `schema` in `format` (Parquet with the default [`Codec`]).
    pub fn create(path: &Path, format: Format, schema: &SchemaRef) -> io::Result<FileOut> {
        FileOut::with_codec(path, format, Codec::default(), schema)
    }

    /// Creates `path` for batches of `schema` in `format`, Parquet's pages compressed by `codec`.
    pub fn with_codec(path: &Path, format: Format, codec: Codec, schema: &SchemaRef) -> io::Result<FileOut> {
        let err = |e: &dyn std::fmt::Display| io::Error::other(format!("{}: {e}", path.display()));
        let file = File::create(path).map_err(|e| err(&e))?;
        let w = match format {
            Format::Parquet => {
                let compression = match codec {
                    Codec::Lz4 => Compression::LZ4_RAW,
                    Codec::Zstd => Compression::ZSTD(ZstdLevel::try_new(1).map_err(|e| err(&e))?),
                };
                let mut props = WriterProperties::builder().set_compression(compression);
                // Dictionary encoding pays for text (a handful of names, flags, verdicts), not
                // for numbers: most columns are times, frames, sequence numbers, all distinct,
                // whose dictionary Parquet builds, hashing every value, then drops.
                for f in schema.fields() {
                    let col = || parquet::schema::types::ColumnPath::from(f.name().as_str());
                    match f.data_type() {
                        arrow_schema::DataType::Utf8 => {}
                        // Integers as differences (DELTA_BINARY_PACKED): frames, times and
                        // sequence numbers grow by small steps, so a `segments` file is 5× smaller
                        // and its pages cost the writer ~9 % fewer instructions than plain values
                        // (docs/performance.md#exports-and-python).
                        arrow_schema::DataType::Int64 => {
                            props = props
                                .set_column_dictionary_enabled(col(), false)
                                .set_column_encoding(col(), Encoding::DELTA_BINARY_PACKED);
                        }
                        _ => props = props.set_column_dictionary_enabled(col(), false),
                    }
                }
                // No page statistics for the text whose values come from a handful (directions,
                // flag letters, verdicts, classes): their minimum and maximum prune nothing, and
                // comparing every value with them cost the `segments` writer 11 % of its
                // instructions (docs/performance.md#exports-and-python).
                for f in schema.fields() {
                    if f.data_type() == &arrow_schema::DataType::Utf8 && FEW_VALUES.contains(&f.name().as_str()) {
                        let col = parquet::schema::types::ColumnPath::from(f.name().as_str());
                        props = props.set_column_statistics_enabled(col, EnabledStatistics::None);
                    }
                }
                let props = props.build();
                Writer::Parquet(ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| err(&e))?)
            }
            Format::Arrow => Writer::Arrow(arrow_ipc::writer::FileWriter::try_new(file, schema).map_err(|e| err(&e))?),
            Format::Csv => Writer::Csv(arrow_csv::WriterBuilder::new().with_header(true).build(file)),
        };
        Ok(FileOut { path: path.to_path_buf(), w })
    }

    fn err(&self, e: impl std::fmt::Display) -> io::Error {
        io::Error::other(format!("{}: {e}", self.path.display()))
    }
}

impl Out for FileOut {
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        let r = match &mut self.w {
            Writer::Parquet(w) => w.write(batch).map_err(|e| e.to_string()),
            Writer::Arrow(w) => w.write(batch).map_err(|e| e.to_string()),
            Writer::Csv(w) => w.write(batch).map_err(|e| e.to_string()),
            Writer::Done => Err("written after its end".into()),
        };
        r.map_err(|e| self.err(e))
    }

    fn finish(&mut self) -> io::Result<()> {
        let r = match std::mem::replace(&mut self.w, Writer::Done) {
            Writer::Parquet(w) => w.close().map(drop).map_err(|e| e.to_string()),
            Writer::Arrow(mut w) => w.finish().map_err(|e| e.to_string()),
            Writer::Csv(w) => w.into_inner().sync_all().map_err(|e| e.to_string()),
            Writer::Done => Ok(()),
        };
        r.map_err(|e| self.err(e))
    }
}

/// A destination written on a thread of its own: batches are handed to it through a bounded
/// channel ([`OnThread::QUEUE`] batches), so that encoding and compressing a file's pages (half
/// of a `segments` export's instructions) overlaps the analysis instead of following it.
pub struct OnThread {
    tx: Option<mpsc::SyncSender<RecordBatch>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl OnThread {
    /// Batches waiting for the writer at most: memory stays bounded when it is the slower.
    pub const QUEUE: usize = 2;

    /// Starts a thread writing into `out`; it finishes `out` when the batches end.
    pub fn new<O: Out + 'static>(mut out: O) -> io::Result<OnThread> {
        let (tx, rx) = mpsc::sync_channel::<RecordBatch>(OnThread::QUEUE);
        let thread = std::thread::Builder::new().name("tcpscope-write".into()).spawn(move || {
            for batch in rx {
                out.write(&batch)?;
            }
            out.finish()
        })?;
        Ok(OnThread { tx: Some(tx), thread: Some(thread) })
    }

    /// Ends the batches and waits for the writer: its error, if it failed.
    fn stop(&mut self) -> io::Result<()> {
        drop(self.tx.take());
        match self.thread.take() {
            // A panic in the writer is a bug in tcpscope: let it surface as one.
            Some(t) => t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            None => Ok(()),
        }
    }
}

impl Out for OnThread {
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        match &self.tx {
            Some(tx) if tx.send(batch.clone()).is_ok() => Ok(()),
            // The writer stopped: on an error, which is the answer.
            _ => {
                self.stop()?;
                Err(io::Error::other("written after its end"))
            }
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        self.stop()
    }
}

impl Drop for OnThread {
    fn drop(&mut self) {
        // Not finished (an error elsewhere stopped the export): the thread still ends.
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use std::sync::Arc;

    /// Fails its `n`-th write.
    struct Failing(usize);

    impl Out for Failing {
        fn write(&mut self, _: &RecordBatch) -> io::Result<()> {
            self.0 -= 1;
            if self.0 == 0 { Err(io::Error::other("disk full")) } else { Ok(()) }
        }
        fn finish(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn batch() -> RecordBatch {
        RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![1, 2])) as _)]).unwrap()
    }

    /// The writing thread's error comes back: from a later write or from `finish`, never lost.
    #[test]
    fn a_failed_write_on_the_thread_is_returned() {
        for (fail_at, writes) in [(1, 1), (1, 20), (3, 20), (20, 20)] {
            let mut out = OnThread::new(Failing(fail_at)).unwrap();
            let mut first = None;
            for _ in 0..writes {
                if let Err(e) = out.write(&batch()) {
                    first = Some(e);
                    break;
                }
            }
            let e = first.or_else(|| out.finish().err());
            assert_eq!(e.map(|e| e.to_string()).as_deref(), Some("disk full"), "failing at {fail_at} of {writes}");
        }
        // A writer that does not fail finishes cleanly.
        let mut out = OnThread::new(Failing(usize::MAX)).unwrap();
        out.write(&batch()).unwrap();
        out.finish().unwrap();
    }
}

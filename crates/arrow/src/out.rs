//! Where a table's record batches go: a Parquet, Arrow IPC or CSV file written as they come,
//! or memory (the Python package), maybe on a thread of its own ([`OnThread`]).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::columns::decode;
use crate::delta::DeltaChunk;
use crate::dict::{self, DictChunk};
use crate::plain::FloatChunk;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;

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
    /// Writes one batch of a table builder, its text columns maybe dictionary-coded
    /// ([`crate::columns::coded`]): by default as [`Out::write`] of its table's schema
    /// ([`decode`]); Parquet takes the codes as they are.
    fn write_coded(&mut self, batch: &RecordBatch) -> io::Result<()> {
        self.write(&decode(batch)?)
    }
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
    Split(Box<Split>),
    Arrow(arrow_ipc::writer::FileWriter<File>),
    Csv(arrow_csv::Writer<File>),
    Done,
}

/// Text columns whose values come from a handful: `dir` (`a2b`, `b2a`), `flags` (letters),
/// `verdict`, `class` (`segments`), `kind` (`rtt`). Parquet keeps no statistics of them.
const NO_STATISTICS: [&str; 5] = ["dir", "flags", "verdict", "class", "kind"];

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
                    if f.data_type() == &arrow_schema::DataType::Utf8 && NO_STATISTICS.contains(&f.name().as_str()) {
                        let col = parquet::schema::types::ColumnPath::from(f.name().as_str());
                        props = props.set_column_statistics_enabled(col, EnabledStatistics::None);
                    }
                }
                let props = props.build();
                let w = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| err(&e))?;
                Writer::Split(Box::new(Split::new(w, schema).map_err(|e| err(&e))?))
            }
            Format::Arrow => Writer::Arrow(arrow_ipc::writer::FileWriter::try_new(file, schema).map_err(|e| err(&e))?),
            Format::Csv => {
                let mut w = arrow_csv::WriterBuilder::new().with_header(true).build(file);
                // The header now, not with the first row: a table without rows (the events of
                // a clean trace) is a file of its column names, which pandas and DuckDB read,
                // not an empty file, which they refuse.
                w.write(&RecordBatch::new_empty(schema.clone())).map_err(|e| err(&e))?;
                Writer::Csv(w)
            }
        };
        Ok(FileOut { path: path.to_path_buf(), w })
    }

    fn err(&self, e: impl std::fmt::Display) -> io::Error {
        io::Error::other(format!("{}: {e}", self.path.display()))
    }
}

impl Out for FileOut {
    fn write_coded(&mut self, batch: &RecordBatch) -> io::Result<()> {
        match &self.w {
            Writer::Split(_) => self.write(batch),
            _ => self.write(&decode(batch)?),
        }
    }

    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        let r = match &mut self.w {
            Writer::Split(w) => w.write(batch),
            Writer::Arrow(w) => w.write(batch).map_err(|e| e.to_string()),
            Writer::Csv(w) => w.write(batch).map_err(|e| e.to_string()),
            Writer::Done => Err("written after its end".into()),
        };
        r.map_err(|e| self.err(e))
    }

    fn finish(&mut self) -> io::Result<()> {
        let r = match std::mem::replace(&mut self.w, Writer::Done) {
            Writer::Split(w) => w.close(),
            Writer::Arrow(mut w) => w.finish().map_err(|e| e.to_string()),
            Writer::Csv(w) => w.into_inner().sync_all().map_err(|e| e.to_string()),
            Writer::Done => Ok(()),
        };
        r.map_err(|e| self.err(e))
    }
}

/// A Parquet file whose columns are encoded on two threads: each batch's columns are taken one
/// at a time, the costliest kinds first (integers, then the rest, the coded text last), by this
/// thread and a helper until none is left (parquet's `ArrowColumnWriter` API: a column's writer
/// is independent of the others'), and the row group is put together in column order when it
/// is full. Encoding a `segments` file's pages is the longest thread of the export; shared out
/// this way its two halves end within a column of each other
/// (docs/performance.md#exports-and-python). The text columns of few values
/// ([`crate::columns::FEW_VALUES`]) are written from their codes ([`DictChunk`]), the
/// integers and floating point numbers from their values ([`crate::chunk::Chunk`]).
struct Split {
    file: SerializedFileWriter<File>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// Rows per row group (the writer properties' maximum).
    group_rows: usize,
    /// Row groups written.
    groups: usize,
    /// The row group being encoded: its rows and its columns' writers (in column order; a
    /// lock each, taken by whichever thread encodes that column of a batch).
    group: Option<(usize, Arc<Vec<Mutex<Column>>>)>,
    /// The columns in the order they are taken: integers first, then the rest, then the
    /// coded text.
    order: Arc<[usize]>,
    /// Which columns are text of few values, written from their codes.
    coded: Vec<bool>,
    /// The thread sharing the columns of each batch, started with the first.
    helper: Option<Helper>,
}

/// A thread that runs the jobs it is handed one at a time, answering each with its result: the
/// helper of a [`Split`], made once for the file. (A thread started for each batch, as before,
/// cost ~15 system calls a batch, a fresh stack and allocator cache each time.)
struct Helper {
    jobs: Option<mpsc::Sender<Job>>,
    done: mpsc::Receiver<Result<(), String>>,
    thread: Option<JoinHandle<()>>,
}

type Job = Box<dyn FnOnce() -> Result<(), String> + Send>;

impl Helper {
    fn new() -> Result<Helper, String> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (tx, done) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("tcpscope-encode".into())
            .spawn(move || {
                for job in rx {
                    // The job's captures are dropped when it returns, before its answer.
                    if tx.send(job()).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(Helper { jobs: Some(jobs), done, thread: Some(thread) })
    }

    fn start(&mut self, job: Job) -> Result<(), String> {
        match self.jobs.as_ref().map(|j| j.send(job)) {
            Some(Ok(())) => Ok(()),
            _ => self.died(),
        }
    }

    /// The result of the job started last.
    fn wait(&mut self) -> Result<(), String> {
        match self.done.recv() {
            Ok(r) => r,
            Err(_) => self.died(),
        }
    }

    /// The thread ended without an answer: it panicked, a bug in tcpscope; let it surface as one.
    fn died(&mut self) -> Result<(), String> {
        if let Some(t) = self.thread.take() {
            t.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
        Err("the encoding thread ended".into())
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(t) = self.thread.take() {
            // Its panic was reported by `wait`, or the file is being dropped on an error.
            let _ = t.join();
        }
    }
}

/// One column chunk being written.
enum Column {
    Arrow(Box<ArrowColumnWriter>),
    Dict(Box<DictChunk>),
    Delta(Box<DeltaChunk>),
    Float(Box<FloatChunk>),
}

impl Column {
    /// The chunk of the numbers of a column of `data_type` written from their values, where
    /// its settings are those [`crate::chunk::Chunk::new`] takes.
    fn numbers(
        data_type: &arrow_schema::DataType,
        descr: parquet::schema::types::ColumnDescPtr,
        props: &WriterProperties,
    ) -> Option<Column> {
        match data_type {
            arrow_schema::DataType::Int64 => DeltaChunk::new(descr, props).map(|c| Column::Delta(Box::new(c))),
            arrow_schema::DataType::Float64 => FloatChunk::new(descr, props).map(|c| Column::Float(Box::new(c))),
            _ => None,
        }
    }
}

impl Split {
    fn new(w: ArrowWriter<File>, schema: &SchemaRef) -> Result<Split, String> {
        let (file, factory) = w.into_serialized_writer().map_err(|e| e.to_string())?;
        let group_rows = file.properties().max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let coded: Vec<bool> = schema
            .fields()
            .iter()
            .map(|f| dict::takes(f.data_type()) && crate::columns::FEW_VALUES.contains(&f.name().as_str()))
            .collect();
        let mut order: Vec<usize> = (0..schema.fields().len()).collect();
        order.sort_by_key(|&i| match schema.field(i).data_type() {
            _ if coded[i] => 2,
            arrow_schema::DataType::Int64 => 0,
            _ => 1,
        });
        let order = order.into();
        Ok(Split {
            file,
            factory,
            schema: schema.clone(),
            group_rows,
            groups: 0,
            group: None,
            order,
            coded,
            helper: None,
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), String> {
        let mut batch = batch.clone();
        while batch.num_rows() > 0 {
            let (rows, writers) = match &mut self.group {
                Some(g) => g,
                None => {
                    let w = self.factory.create_column_writers(self.groups).map_err(|e| e.to_string())?;
                    let mut cols = Vec::with_capacity(w.len());
                    for (i, w) in w.into_iter().enumerate() {
                        let descr = self.file.schema_descr().column(i);
                        let props = self.file.properties();
                        cols.push(Mutex::new(if self.coded[i] {
                            Column::Dict(Box::new(DictChunk::new(descr, props)?))
                        } else if let Some(c) = Column::numbers(self.schema.field(i).data_type(), descr, props) {
                            c
                        } else {
                            Column::Arrow(Box::new(w))
                        }));
                    }
                    self.group.insert((0, Arc::new(cols)))
                }
            };
            let n = batch.num_rows().min(self.group_rows - *rows);
            let part = batch.slice(0, n);
            batch = batch.slice(n, batch.num_rows() - n);
            let next = Arc::new(AtomicUsize::new(0));
            let helper = match &mut self.helper {
                Some(h) => h,
                None => self.helper.insert(Helper::new()?),
            };
            let (schema, order, cols) = (self.schema.clone(), self.order.clone(), writers.clone());
            let theirs = part.clone();
            let shared = next.clone();
            helper.start(Box::new(move || encode(&schema, &order, &shared, &cols, &theirs)))?;
            let mine = encode(&self.schema, &self.order, &next, writers, &part);
            let theirs = helper.wait();
            mine.and(theirs)?;
            *rows += n;
            if *rows >= self.group_rows {
                self.end_group()?;
            }
        }
        Ok(())
    }

    /// Puts the row group together: its columns' chunks, in column order.
    fn end_group(&mut self) -> Result<(), String> {
        let Some((_, writers)) = self.group.take() else { return Ok(()) };
        // The helper let go of its share when it answered for the last batch.
        let writers = Arc::try_unwrap(writers).map_err(|_| "a row group's columns still shared".to_string())?;
        let mut rg = self.file.next_row_group().map_err(|e| e.to_string())?;
        for w in writers {
            let (bytes, close) = match w.into_inner().map_err(|_| "an encoding thread panicked".to_string())? {
                Column::Arrow(w) => {
                    w.close().and_then(|c| c.append_to_row_group(&mut rg)).map_err(|e| e.to_string())?;
                    continue;
                }
                Column::Dict(d) => d.close()?,
                Column::Delta(d) => d.close()?,
                Column::Float(d) => d.close()?,
            };
            rg.append_column(&bytes, close).map_err(|e| e.to_string())?;
        }
        rg.close().map_err(|e| e.to_string())?;
        self.groups += 1;
        Ok(())
    }

    fn close(mut self: Box<Self>) -> Result<(), String> {
        self.end_group()?;
        self.file.close().map(drop).map_err(|e| e.to_string())
    }
}

/// Takes the next column of `part` not yet taken (`next`, shared with the other thread) and
/// encodes it, until none is left.
fn encode(
    schema: &SchemaRef,
    order: &[usize],
    next: &AtomicUsize,
    writers: &[Mutex<Column>],
    part: &RecordBatch,
) -> Result<(), String> {
    while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
        let mut w = writers[i].lock().map_err(|_| "an encoding thread panicked".to_string())?;
        match &mut *w {
            Column::Dict(d) => d.write(part.column(i).as_ref())?,
            Column::Delta(d) => d.write(part.column(i).as_ref())?,
            Column::Float(d) => d.write(part.column(i).as_ref())?,
            Column::Arrow(w) => {
                let leaves = compute_leaves(schema.field(i), part.column(i)).map_err(|e| e.to_string())?;
                for leaf in leaves {
                    w.write(&leaf).map_err(|e| e.to_string())?;
                }
            }
        }
    }
    Ok(())
}

/// A destination written on a thread of its own: batches are handed to it through a bounded
/// channel ([`OnThread::QUEUE`] batches), so that encoding and compressing a file's pages (half
/// of a `segments` export's instructions) overlaps the analysis instead of following it.
pub struct OnThread {
    /// Batches, and whether each may be coded ([`Out::write_coded`]).
    tx: Option<mpsc::SyncSender<(RecordBatch, bool)>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl OnThread {
    /// Batches waiting for the writer at most: memory stays bounded when it is the slower.
    pub const QUEUE: usize = 2;

    /// Starts a thread writing into `out`; it finishes `out` when the batches end.
    pub fn new<O: Out + 'static>(mut out: O) -> io::Result<OnThread> {
        let (tx, rx) = mpsc::sync_channel::<(RecordBatch, bool)>(OnThread::QUEUE);
        let thread = std::thread::Builder::new().name("tcpscope-write".into()).spawn(move || {
            for (batch, coded) in rx {
                if coded { out.write_coded(&batch)? } else { out.write(&batch)? }
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

impl OnThread {
    fn send(&mut self, batch: &RecordBatch, coded: bool) -> io::Result<()> {
        match &self.tx {
            Some(tx) if tx.send((batch.clone(), coded)).is_ok() => Ok(()),
            // The writer stopped: on an error, which is the answer.
            _ => {
                self.stop()?;
                Err(io::Error::other("written after its end"))
            }
        }
    }
}

impl Out for OnThread {
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        self.send(batch, false)
    }

    fn write_coded(&mut self, batch: &RecordBatch) -> io::Result<()> {
        self.send(batch, true)
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

/// What the tests of other modules write with.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// Writes `batches` of `schema` to `path` as [`Split`] does with `props`; how many of its
    /// columns were written from their values (a [`DeltaChunk`] or a [`FloatChunk`]).
    pub(crate) fn split_file(
        path: &Path,
        schema: &SchemaRef,
        props: WriterProperties,
        batches: &[RecordBatch],
    ) -> usize {
        let w = ArrowWriter::try_new(File::create(path).unwrap(), schema.clone(), Some(props)).unwrap();
        let mut out = Box::new(Split::new(w, schema).unwrap());
        let used = (0..schema.fields().len())
            .filter(|&i| {
                Column::numbers(schema.field(i).data_type(), out.file.schema_descr().column(i), out.file.properties())
                    .is_some()
            })
            .count();
        for b in batches {
            out.write(b).unwrap();
        }
        out.close().unwrap();
        used
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, StringArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
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

    /// Each column's values as text, batches after batches.
    fn values(batches: &[RecordBatch]) -> Vec<Vec<String>> {
        let n = batches.first().map_or(0, |b| b.num_columns());
        (0..n)
            .map(|c| {
                let mut v = Vec::new();
                for b in batches {
                    let a = b.column(c);
                    for i in 0..a.len() {
                        v.push(if a.is_null(i) {
                            "null".into()
                        } else if let Some(a) = a.as_any().downcast_ref::<Int64Array>() {
                            a.value(i).to_string()
                        } else if let Some(a) = a.as_any().downcast_ref::<Float64Array>() {
                            a.value(i).to_string()
                        } else {
                            a.as_any().downcast_ref::<StringArray>().unwrap().value(i).to_string()
                        });
                    }
                }
                v
            })
            .collect()
    }

    /// Columns encoded on two threads, row groups cut where the properties say (within a
    /// batch too): the file reads back as the batches written, in order, column by column.
    /// A CSV file has its header whether rows came or not, once.
    #[test]
    fn a_csv_file_has_its_header_with_or_without_rows() {
        let schema: SchemaRef = Arc::new(arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("a", arrow_schema::DataType::Int64, false),
            arrow_schema::Field::new("b", arrow_schema::DataType::Utf8, true),
        ]));
        let path = std::env::temp_dir().join(format!("tcpscope-arrow-header-{}.csv", std::process::id()));
        let mut f = FileOut::create(&path, Format::Csv, &schema).unwrap();
        f.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n");
        let mut f = FileOut::create(&path, Format::Csv, &schema).unwrap();
        let rows = |v: i64| {
            let cols: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(vec![v])), Arc::new(StringArray::from(vec!["x"]))];
            RecordBatch::try_new(schema.clone(), cols).unwrap()
        };
        f.write(&rows(1)).unwrap();
        f.write(&rows(2)).unwrap();
        f.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a,b\n1,x\n2,x\n");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn columns_encoded_on_two_threads_read_back_in_order() {
        let batch = |i: i64| {
            RecordBatch::try_from_iter([
                ("a", Arc::new(Int64Array::from(vec![i, i + 1])) as ArrayRef),
                ("b", Arc::new(StringArray::from(vec![format!("x{i}"), "y".into()])) as _),
                ("c", Arc::new(Float64Array::from(vec![Some(i as f64 / 2.0), None])) as _),
                ("d", Arc::new(StringArray::from(vec!["z", "w"])) as _),
                ("e", Arc::new(Int64Array::from(vec![-i, 7])) as _),
            ])
            .unwrap()
        };
        let batches: Vec<RecordBatch> = (0..5).map(|i| batch(i * 10)).collect();
        let path = std::env::temp_dir().join(format!("tcpscope-arrow-split-{}.parquet", std::process::id()));
        let props = WriterProperties::builder().set_max_row_group_row_count(Some(3)).build();
        let schema = batches[0].schema();
        let w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), Some(props)).unwrap();
        let mut out = Box::new(Split::new(w, &schema).unwrap());
        for b in &batches {
            out.write(b).unwrap();
        }
        out.close().unwrap();
        let r = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let groups: Vec<i64> = r.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(r.schema(), &schema);
        let back: Vec<RecordBatch> = r.build().unwrap().collect::<Result<_, _>>().unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(groups, [3, 3, 3, 1]);
        assert_eq!(values(&back), values(&batches));
    }

    /// Text of few values written from its codes (crate::dict) reads back as parquet's own
    /// writer writes it: across data pages and row groups (cut within batches), with nulls, a
    /// row group where a nullable column has only nulls, vocabularies that change from batch to
    /// batch (another builder's codes; a value not seen before in the file), plain text among
    /// coded batches; the same statistics (long values truncated as parquet truncates them),
    /// column index and encodings.
    #[test]
    fn coded_text_reads_back_as_parquets_own() {
        use arrow_array::types::Int32Type;
        use arrow_array::{DictionaryArray, Int32Array};
        use arrow_schema::{DataType, Field, Schema};
        use parquet::arrow::arrow_reader::ArrowReaderOptions;
        use parquet::file::metadata::PageIndexPolicy;

        // Longer than the statistics' 64 bytes, with characters of several bytes.
        let long = format!("/captures/{}/anneau-é€.pcap", "très-longue-".repeat(6));
        let text = |nullable| (DataType::Utf8, nullable);
        let cols =
            [("input", text(false)), ("dir", text(false)), ("n", (DataType::Int64, false)), ("class", text(true))];
        let plain = Arc::new(Schema::new(
            cols.iter().map(|(n, (t, null))| Field::new(*n, t.clone(), *null)).collect::<Vec<_>>(),
        ));
        let coded_ty = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let coded = Arc::new(Schema::new(
            cols.iter()
                .map(|(n, (t, null))| {
                    Field::new(*n, if *t == DataType::Utf8 { coded_ty.clone() } else { t.clone() }, *null)
                })
                .collect::<Vec<_>>(),
        ));
        let dict = |words: &[&str], keys: Vec<Option<i32>>| -> ArrayRef {
            let values = Arc::new(StringArray::from(words.to_vec()));
            Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), values).unwrap())
        };
        let all = |k: i32, n: usize| vec![Some(k); n];
        let ints = |from: i64, n: i64| Arc::new(Int64Array::from((from..from + n).collect::<Vec<_>>())) as ArrayRef;
        let l = long.as_str();
        let batches = vec![
            RecordBatch::try_new(
                coded.clone(),
                vec![
                    dict(&[l], all(0, 5)),
                    dict(&["a2b", "b2a"], [0, 1, 0, 0, 1].map(Some).to_vec()),
                    ints(0, 5),
                    dict(&["rto"], vec![None, Some(0), None, None, None]),
                ],
            )
            .unwrap(),
            // Another builder's vocabularies: other codes for the same values, unused values,
            // and a class column of nulls only (its vocabulary empty but for a placeholder).
            RecordBatch::try_new(
                coded.clone(),
                vec![
                    dict(&["x", l], all(1, 4)),
                    dict(&["b2a", "a2b"], [0, 0, 1, 0].map(Some).to_vec()),
                    ints(5, 4),
                    dict(&[""], vec![None; 4]),
                ],
            )
            .unwrap(),
            // Plain text among coded batches.
            RecordBatch::try_new(
                plain.clone(),
                vec![
                    Arc::new(StringArray::from(vec![l, "zz", l])),
                    Arc::new(StringArray::from(vec!["b2a", "b2a", "a2b"])),
                    ints(9, 3),
                    Arc::new(StringArray::from(vec![Some("rto"), None, Some("probe")])),
                ],
            )
            .unwrap(),
            // A value not seen before in the file, and one seen.
            RecordBatch::try_new(
                coded.clone(),
                vec![
                    dict(&["other"], all(0, 6)),
                    dict(&["a2b"], all(0, 6)),
                    ints(12, 6),
                    dict(&["fast_retransmit", "rto"], vec![Some(0), None, Some(1), Some(0), None, None]),
                ],
            )
            .unwrap(),
            // One value in every row of each text column, the nullable one too (no null).
            RecordBatch::try_new(
                coded.clone(),
                vec![dict(&["other"], all(0, 5)), dict(&["a2b"], all(0, 5)), ints(18, 5), dict(&["rto"], all(0, 5))],
            )
            .unwrap(),
        ];
        let plain_batches: Vec<RecordBatch> = batches.iter().map(|b| decode(b).unwrap()).collect();
        // Pages of 2 rows (parquet's writer looking after each row), row groups of 4.
        let props = || {
            WriterProperties::builder()
                .set_max_row_group_row_count(Some(4))
                .set_data_page_row_count_limit(2)
                .set_write_batch_size(1)
                .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap()))
                .build()
        };
        let dir = std::env::temp_dir();
        let (ours, theirs) = (
            dir.join(format!("tcpscope-arrow-coded-{}.parquet", std::process::id())),
            dir.join(format!("tcpscope-arrow-plain-{}.parquet", std::process::id())),
        );
        let w = ArrowWriter::try_new(File::create(&ours).unwrap(), plain.clone(), Some(props())).unwrap();
        let mut out = Box::new(Split::new(w, &plain).unwrap());
        for b in &batches {
            out.write(b).unwrap();
        }
        out.close().unwrap();
        let mut w = ArrowWriter::try_new(File::create(&theirs).unwrap(), plain.clone(), Some(props())).unwrap();
        for b in &plain_batches {
            w.write(b).unwrap();
        }
        w.close().unwrap();

        let read = |path: &Path| {
            let opts = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
            let r = ParquetRecordBatchReaderBuilder::try_new_with_options(File::open(path).unwrap(), opts).unwrap();
            let meta = r.metadata().clone();
            let schema = r.schema().clone();
            let back: Vec<RecordBatch> = r.build().unwrap().collect::<Result<_, _>>().unwrap();
            std::fs::remove_file(path).unwrap();
            (schema, meta, arrow_select::concat::concat_batches(&plain, &back).unwrap())
        };
        let (our_schema, our_meta, our_rows) = read(&ours);
        let (their_schema, their_meta, their_rows) = read(&theirs);
        let want = arrow_select::concat::concat_batches(&plain, &plain_batches).unwrap();
        assert_eq!(our_schema, plain);
        assert_eq!(our_schema, their_schema);
        assert_eq!(our_rows, want);
        assert_eq!(their_rows, want);
        assert_eq!(our_meta.num_row_groups(), 6);
        for (g, (a, b)) in our_meta.row_groups().iter().zip(their_meta.row_groups()).enumerate() {
            assert_eq!(a.num_rows(), b.num_rows());
            for (c, (x, y)) in a.columns().iter().zip(b.columns()).enumerate() {
                let at = format!("row group {g}, column {}", plain.field(c).name());
                assert_eq!(x.column_type(), y.column_type(), "{at}");
                assert_eq!(x.num_values(), y.num_values(), "{at}");
                assert_eq!(x.dictionary_page_offset().is_some(), y.dictionary_page_offset().is_some(), "{at}");
                assert_eq!(x.encodings_mask(), y.encodings_mask(), "{at}");
                let (s, t) = (x.statistics().unwrap(), y.statistics().unwrap());
                assert_eq!(s.min_bytes_opt(), t.min_bytes_opt(), "{at}");
                assert_eq!(s.max_bytes_opt(), t.max_bytes_opt(), "{at}");
                assert_eq!(s.null_count_opt(), t.null_count_opt(), "{at}");
                assert_eq!((s.min_is_exact(), s.max_is_exact()), (t.min_is_exact(), t.max_is_exact()), "{at}");
            }
        }
        // The long value's statistics were cut; the page index is parquet's, page for page.
        let input = our_meta.row_group(0).column(0).statistics().unwrap();
        assert!(input.min_bytes_opt().unwrap().len() <= 64 && !input.max_is_exact());
        // Page for page where parquet's writer cut its pages where this one does (every 2 rows;
        // parquet cuts a column of nulls differently): the same column index.
        let mut same = 0;
        for g in 0..our_meta.num_row_groups() {
            let (a, b) = (our_meta.page_index_for_row_group(g), their_meta.page_index_for_row_group(g));
            for c in 0..plain.fields().len() {
                let rows = |p: Option<&Vec<parquet::file::page_index::offset_index::PageLocation>>| {
                    p.unwrap().iter().map(|p| p.first_row_index).collect::<Vec<_>>()
                };
                let ours = rows(a.page_locations(c));
                assert!(ours.iter().enumerate().all(|(i, &r)| r == 2 * i as i64), "row group {g}, column {c}: pages");
                if ours == rows(b.page_locations(c)) {
                    assert_eq!(a.column_index(c), b.column_index(c), "row group {g}, column {c}: column index");
                    same += 1;
                } else {
                    assert!(a.column_index(c).is_some(), "row group {g}, column {c}: column index");
                }
            }
        }
        assert!(same >= 18, "{same} of 20 column chunks paged as parquet pages them");
    }

    /// A table builder's batches, decoded, are of the table's own schema (metadata included)
    /// and hold the values given.
    #[test]
    fn a_builders_batches_decode_to_the_tables_schema() {
        use crate::columns::{TableBuilder, coded, columns, schema};
        use tcpscope_core::export::rows::{ConnRef, RttRow};
        use tcpscope_core::table::{Name, Shared, Table};

        let mut cols = columns(ConnRef::FIELDS);
        cols.extend(columns(RttRow::FIELDS));
        let mut t = TableBuilder::new(cols.clone());
        assert_eq!(t.coded_schema(), &coded(&cols));
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        for (i, kind) in ["karn", "timestamp", "karn"].into_iter().enumerate() {
            t.put(&ConnRef { input: Shared(if i == 2 { &b } else { &a }), conn: i + 1 });
            let rtt = RttRow { dir: Name("a2b"), frame: 3, sent_frame: 1, ts_ns: 9, rtt_ms: 1.5, kind: Name(kind) };
            t.put(&rtt);
            t.end_row().unwrap();
        }
        let batch = t.finish().unwrap();
        assert!(matches!(batch.schema().field(0).data_type(), arrow_schema::DataType::Dictionary(..)));
        let plain = decode(&batch).unwrap();
        assert_eq!(plain.schema(), schema(&cols));
        let input = plain.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(input.iter().collect::<Vec<_>>(), [Some("a"), Some("a"), Some("b")]);
        let kind = plain.column(plain.num_columns() - 1).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(kind.iter().collect::<Vec<_>>(), [Some("karn"), Some("timestamp"), Some("karn")]);
        let conn = plain.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(conn.values().to_vec(), [1, 2, 3]);
    }
}

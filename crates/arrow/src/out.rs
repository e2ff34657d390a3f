//! Where a table's record batches go: a Parquet, Arrow IPC or CSV file written as they come,
//! or memory (the Python package).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// A file format of `tcpscope export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Apache Parquet, zstd-compressed (level 1).
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

/// A file being written; errors name it.
pub struct FileOut {
    path: PathBuf,
    w: Writer,
}

impl FileOut {
    /// Creates `path` for batches of `schema` in `format`.
    pub fn create(path: &Path, format: Format, schema: &SchemaRef) -> io::Result<FileOut> {
        let err = |e: &dyn std::fmt::Display| io::Error::other(format!("{}: {e}", path.display()));
        let file = File::create(path).map_err(|e| err(&e))?;
        let w = match format {
            Format::Parquet => {
                let mut props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).map_err(|e| err(&e))?));
                // Dictionary encoding pays for text (a handful of names, flags, verdicts), not
                // for numbers: most columns are times, frames, sequence numbers, all distinct,
                // whose dictionary Parquet builds, hashing every value, then drops.
                for f in schema.fields() {
                    if f.data_type() != &arrow_schema::DataType::Utf8 {
                        props = props.set_column_dictionary_enabled(f.name().as_str().into(), false);
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

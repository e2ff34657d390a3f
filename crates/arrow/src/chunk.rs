//! Parquet column chunks of numbers written from the column's values as they are, the way
//! parquet's writer (60.1) writes them, for the numeric columns whose values its writer costs
//! most on: integers as differences ([`crate::delta`]) and floating point numbers as they are
//! ([`crate::plain`]). What is common to both is here ([`Chunk`]), with what the coded text of
//! `dict.rs` shares with them (a page compressed, [`compress`]; a chunk ended,
//! [`finish_chunk`]); what a kind of value brings (its encoding, its smallest and largest, how
//! parquet orders them) is a [`Kind`].
//!
//! A chunk is cut into the same pages as parquet's writer cuts it, and made from parquet's own
//! parts where they are not the cost: definition levels by its `LevelEncoder` (fed the same
//! runs as its writer feeds it), pages compressed by its codec (through the kept buffer of
//! [`compress`]), headers written by its `SerializedPageWriter`, the chunk's metadata,
//! statistics and page index handed with the pages to `SerializedRowGroupWriter::append_column`.
//! The file is the one parquet's writer writes, byte for byte.
//!
//! Only the settings tcpscope writes with are taken ([`Chunk::new`] says which); a column
//! written otherwise goes to parquet's writer.

use arrow_array::cast::AsArray;
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{Array, PrimitiveArray};
use arrow_buffer::NullBuffer;
use bytes::Bytes;
use parquet::basic::{BoundaryOrder, Compression, Encoding, EncodingMask, PageType, Type};
use parquet::column::page::{CompressedPage, Page, PageWriteSpec, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::compression::{Codec, CodecOptionsBuilder, create_codec};
use parquet::encodings::levels::LevelEncoder;
use parquet::file::metadata::{
    ColumnChunkMetaData, ColumnChunkMetaDataBuilder, ColumnIndexBuilder, LevelHistogram, OffsetIndexBuilder,
    PageEncodingStats,
};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

/// A kind of values written by a [`Chunk`]: how a page's values are encoded, and what
/// parquet's writer keeps of them as statistics, in its order.
pub(crate) trait Kind {
    /// The column's Arrow type.
    type Arrow: ArrowPrimitiveType;
    /// The Parquet physical type and the data pages' encoding.
    const PHYSICAL: Type;
    const ENCODING: Encoding;
    /// Whether parquet's writer counts the NaNs (floating point): then the chunk's statistics
    /// and each page of its column index have a count (0 for a page of nulls only).
    const NANS: bool;

    /// `values` as a page's values, appended to `out`.
    fn encode(values: &[Native<Self>], out: &mut Vec<u8>);
    /// The smallest and largest of a page's `values` as parquet's writer takes them, and how
    /// many are NaN (`None`: no values).
    fn min_max(values: &[Native<Self>]) -> Option<(Native<Self>, Native<Self>, u64)>;
    /// Whether `a` is greater than `b` in parquet's order (its `compare_greater`).
    fn greater(a: Native<Self>, b: Native<Self>) -> bool;
    /// Whether `v` is NaN: a NaN bound gives way to any other value.
    fn is_nan(v: Native<Self>) -> bool;
    /// `v` as the column index has it (little-endian).
    fn bytes(v: Native<Self>) -> Vec<u8>;
    /// The chunk's statistics of this type.
    fn statistics(s: ValueStatistics<Native<Self>>) -> Statistics;
}

/// The values of a [`Kind`].
pub(crate) type Native<K> = <<K as Kind>::Arrow as ArrowPrimitiveType>::Native;

/// The smallest and largest value of a page and how many are NaN.
type MinMax<T> = (T, T, u64);

/// A finished data page (here and in `dict.rs`) and what the chunk's metadata needs of it: its
/// rows, its nulls and its statistics `M` (`None`: only nulls, or no statistics kept).
pub(crate) struct DataPage<M> {
    page: CompressedPage,
    rows: usize,
    nulls: usize,
    min_max: Option<M>,
}

impl<M> DataPage<M> {
    /// A data page v1 of `rows` rows, `nulls` of them null: its bytes `data` (the definition
    /// levels, then the values in `encoding`), compressed from `uncompressed` bytes.
    pub(crate) fn new(
        data: Bytes,
        uncompressed: usize,
        encoding: Encoding,
        (rows, nulls): (usize, usize),
        min_max: Option<M>,
    ) -> DataPage<M> {
        let page = Page::DataPage {
            buf: data,
            num_values: rows as u32,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        DataPage { page: CompressedPage::new(page, uncompressed), rows, nulls, min_max }
    }
}

/// A column chunk's pages as they are written, and what its metadata takes of them.
#[derive(Default)]
pub(crate) struct Written {
    compressed: i64,
    total: i64,
    values: i64,
    data_offset: Option<i64>,
    pub(crate) rows: usize,
    pub(crate) nulls: usize,
    pub(crate) offsets: OffsetIndexBuilder,
}

impl Written {
    /// Counts a page written before the data pages (a dictionary page).
    pub(crate) fn first(spec: PageWriteSpec) -> Written {
        Written { compressed: spec.compressed_size as i64, total: spec.uncompressed_size as i64, ..Written::default() }
    }

    /// Writes the data page `p` with `w`, counted; with the definition levels' histogram
    /// (nulls, values) in `histogram`'s page index, as parquet's size statistics. Its rows,
    /// nulls and statistics.
    pub(crate) fn write<M>(
        &mut self,
        w: &mut SerializedPageWriter<impl std::io::Write + Send>,
        p: DataPage<M>,
        histogram: Option<&mut ColumnIndexBuilder>,
    ) -> Result<(usize, usize, Option<M>), String> {
        let spec = w.write_page(p.page).map_err(|e| e.to_string())?;
        self.data_offset.get_or_insert(spec.offset as i64);
        self.compressed += spec.compressed_size as i64;
        self.total += spec.uncompressed_size as i64;
        self.values += spec.num_values as i64;
        self.offsets.append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
        self.offsets.append_row_count(p.rows as i64);
        self.nulls += p.nulls;
        self.rows += p.rows;
        if let Some(index) = histogram {
            let h = LevelHistogram::from(vec![p.nulls as i64, (p.rows - p.nulls) as i64]);
            index.append_histograms(&None, &Some(h));
        }
        Ok((p.rows, p.nulls, p.min_max))
    }

    /// The chunk's sizes, values and first data page (0: none) in its metadata.
    pub(crate) fn sizes(&self, meta: ColumnChunkMetaDataBuilder) -> ColumnChunkMetaDataBuilder {
        meta.set_total_compressed_size(self.compressed)
            .set_total_uncompressed_size(self.total)
            .set_num_values(self.values)
            .set_data_page_offset(self.data_offset.unwrap_or(0))
    }
}

/// A page's bytes as they are written: compressed by `codec` (through `scratch`, kept for the
/// next page) or as they are. The page holds exactly its bytes: a buffer made for the page
/// and handed to the codec was grown by it to the codec's bound (a copy of the whole room, in
/// jemalloc's `realloc`) and then shrunk again (~3 M instructions of the writer on the
/// 200,000-packet cut).
pub(crate) fn compress(codec: &mut Option<Box<dyn Codec>>, buf: &[u8], scratch: &mut Vec<u8>) -> Result<Bytes, String> {
    match codec {
        Some(c) => {
            scratch.clear();
            c.compress(buf, scratch).map_err(|e| e.to_string())?;
            Ok(Bytes::copy_from_slice(scratch))
        }
        None => Ok(Bytes::copy_from_slice(buf)),
    }
}

/// The end of a column chunk written by hand (a [`Chunk`] or `dict.rs`'s), as parquet's writer ends
/// one: the definition levels' histogram (`histogram`: a nullable column with statistics), the
/// page index with its boundary order (`index`, when written: the index, whether the pages'
/// minimums and maximums ascend, descend), and what `append_column` takes.
pub(crate) fn finish_chunk(
    mut meta: ColumnChunkMetaDataBuilder,
    bytes: Bytes,
    (rows, nulls): (usize, usize),
    histogram: bool,
    index: Option<(ColumnIndexBuilder, bool, bool)>,
    offsets: Option<OffsetIndexBuilder>,
) -> Result<(Bytes, ColumnCloseResult), String> {
    let err = |e: parquet::errors::ParquetError| e.to_string();
    if histogram {
        let h = LevelHistogram::from(vec![nulls as i64, (rows - nulls) as i64]);
        meta = meta.set_definition_level_histogram(Some(h));
    }
    let column_index = match index {
        Some((mut index, ascending, descending)) => {
            index.set_boundary_order(match (ascending, descending) {
                (true, _) => BoundaryOrder::ASCENDING,
                (false, true) => BoundaryOrder::DESCENDING,
                (false, false) => BoundaryOrder::UNORDERED,
            });
            Some(index.build().map_err(err)?)
        }
        None => None,
    };
    let close = ColumnCloseResult {
        bytes_written: bytes.len() as u64,
        rows_written: rows as u64,
        metadata: meta.build().map_err(err)?,
        bloom_filter: None,
        column_index,
        offset_index: offsets.map(OffsetIndexBuilder::build),
    };
    Ok((bytes, close))
}

/// One column chunk (a row group's values of one column) of values of kind `K`.
pub(crate) struct Chunk<K: Kind> {
    descr: ColumnDescPtr,
    nullable: bool,
    compression: Compression,
    codec: Option<Box<dyn Codec>>,
    stats: EnabledStatistics,
    offset_index: bool,
    /// Rows per data page (parquet's data page row count limit) and per mini-batch (its write
    /// batch size): parquet's writer looks whether a page is full after each mini-batch.
    page_rows: usize,
    batch_rows: usize,
    /// The page being made: its definition levels, its values (nulls left out), rows, nulls.
    levels: LevelEncoder,
    values: Vec<Native<K>>,
    rows: usize,
    nulls: usize,
    pages: Vec<DataPage<MinMax<Native<K>>>>,
    /// Scratch: a page's encoded bytes, and compressed.
    buf: Vec<u8>,
    zbuf: Vec<u8>,
}

impl<K: Kind> Chunk<K> {
    /// An empty chunk of the leaf column `descr`, with the settings `props` gives it; `None`
    /// where these are not the settings this module writes as parquet's writer would (then
    /// parquet's writer writes the column): values of `K`'s physical type, not repeated,
    /// written in data pages v1 in `K`'s encoding without a dictionary, no bloom filter, no
    /// statistics in page headers, no content-defined chunking, and pages that the row count
    /// limit cuts, never the byte size limit.
    pub(crate) fn new(descr: ColumnDescPtr, props: &WriterProperties) -> Option<Chunk<K>> {
        let path = descr.path();
        let page_rows = props.column_data_page_row_count_limit(path).max(1);
        let batch_rows = props.write_batch_size().max(1);
        // A page holds fewer than 2 × the row limit + a batch values (the limit is looked at
        // after each mini-batch, of a batch or of the row limit), each ≤ 8 bytes and a little
        // more with the blocks' headers of differences (≤ 14 bytes a block of 256): far below
        // parquet's 1 MB by default. Parquet's writer cuts a page on its size too, after a
        // mini-batch (or within it, for values of 8 bytes a mini-batch of which could
        // overshoot): not reproduced here, so left to it wherever it could happen.
        let most = (2 * page_rows + batch_rows) as u64 * 9 + 64;
        let fits = most < props.column_data_page_size_limit(path) as u64;
        // Data pages v1 are PLAIN unless told otherwise (parquet's `fallback_encoding`).
        let taken = descr.physical_type() == K::PHYSICAL
            && descr.max_rep_level() == 0
            && descr.max_def_level() <= 1
            && props.writer_version() == WriterVersion::PARQUET_1_0
            && props.encoding(path).unwrap_or(Encoding::PLAIN) == K::ENCODING
            && !props.dictionary_enabled(path)
            && props.bloom_filter_properties(path).is_none()
            && !props.write_page_header_statistics(path)
            && props.content_defined_chunking().is_none()
            && fits;
        if !taken {
            return None;
        }
        let compression = props.compression(path);
        let codec = create_codec(compression, &CodecOptionsBuilder::default().build()).ok()?;
        let nullable = descr.max_def_level() > 0;
        Some(Chunk {
            nullable,
            compression,
            codec,
            stats: props.statistics_enabled(path),
            offset_index: !props.offset_index_disabled(),
            page_rows,
            batch_rows,
            levels: LevelEncoder::v1_streaming(descr.max_def_level()),
            values: Vec::new(),
            rows: 0,
            nulls: 0,
            pages: Vec::new(),
            buf: Vec::new(),
            zbuf: Vec::new(),
            descr,
        })
    }

    /// Appends the rows of `array` (of `K`'s Arrow type).
    pub(crate) fn write(&mut self, array: &dyn Array) -> Result<(), String> {
        let a: &PrimitiveArray<K::Arrow> = array
            .as_primitive_opt::<K::Arrow>()
            .ok_or_else(|| format!("a column of {} where {} was expected", array.data_type(), K::Arrow::DATA_TYPE))?;
        let n = a.len();
        let nulls = a.nulls().filter(|v| v.null_count() > 0);
        if nulls.is_some() && !self.nullable {
            return Err(format!("a null in {}, a column without nulls", self.descr.path()));
        }
        // Parquet's writer takes a batch in mini-batches of its write batch size, or of its
        // page row limit when every row has a value or none has (its levels then one run),
        // and ends the page after a mini-batch that filled it.
        let step = match nulls {
            Some(v) if v.null_count() < n => self.batch_rows,
            _ if self.nullable => self.page_rows,
            _ => self.batch_rows,
        };
        let values = a.values();
        let mut at = 0;
        while at < n {
            let end = n.min(at + step);
            match nulls {
                None => {
                    if self.nullable {
                        self.levels.put_n_with_observer(1, end - at, |_, _| {});
                    }
                    self.values.extend_from_slice(&values[at..end]);
                }
                Some(v) => self.put_spaced(v, &values[..], at, end),
            }
            self.rows += end - at;
            at = end;
            if self.rows >= self.page_rows {
                self.end_page()?;
            }
        }
        Ok(())
    }

    /// Rows `from..to` of a column with nulls: the levels a run at a time, as parquet's writer
    /// gives them to its level encoder, and the values of the rows that have one.
    fn put_spaced(&mut self, valid: &NullBuffer, values: &[Native<K>], from: usize, to: usize) {
        let mut at = from;
        for (start, end) in valid.inner().slice(from, to - from).set_slices() {
            let (start, end) = (from + start, from + end);
            if start > at {
                self.levels.put_n_with_observer(0, start - at, |_, _| {});
                self.nulls += start - at;
            }
            self.levels.put_n_with_observer(1, end - start, |_, _| {});
            self.values.extend_from_slice(&values[start..end]);
            at = end;
        }
        if to > at {
            self.levels.put_n_with_observer(0, to - at, |_, _| {});
            self.nulls += to - at;
        }
    }

    /// Ends the data page being made, as parquet's writer lays out a v1 page: the definition
    /// levels (nullable columns: their length in 4 bytes, then RLE/bit-packed at 1 bit), then
    /// the values ([`Kind::encode`]); all of it compressed.
    fn end_page(&mut self) -> Result<(), String> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        if self.nullable {
            self.levels.flush_to(|l| buf.extend_from_slice(l));
        }
        K::encode(&self.values, &mut buf);
        let min_max = match self.stats {
            EnabledStatistics::None => None,
            _ => K::min_max(&self.values),
        };
        let uncompressed = buf.len();
        // The page is kept until the row group ends: its bytes only, not the room made for
        // them (as parquet's writer does; a row group's pages held the room of their
        // uncompressed size, +35 MB of peak RSS on the bulk trace).
        let data = compress(&mut self.codec, &buf, &mut self.zbuf)?;
        self.buf = buf;
        self.pages.push(DataPage::new(data, uncompressed, K::ENCODING, (self.rows, self.nulls), min_max));
        self.values.clear();
        self.rows = 0;
        self.nulls = 0;
        Ok(())
    }

    /// The chunk's bytes (its pages, from offset 0) and what `append_column` needs of them.
    pub(crate) fn close(mut self) -> Result<(Bytes, ColumnCloseResult), String> {
        let err = |e: parquet::errors::ParquetError| e.to_string();
        self.end_page()?;
        let mut sink = TrackedWrite::new(Vec::new());
        let mut w = SerializedPageWriter::new(&mut sink);
        let mut written = Written::default();
        let mut index = ColumnIndexBuilder::new(self.descr.physical_type());
        if self.stats != EnabledStatistics::Page {
            index.to_invalid();
        }
        let (mut ascending, mut descending) = (true, true);
        let mut last: Option<(Native<K>, Native<K>)> = None;
        let (mut min, mut max) = (None, None);
        let mut nans: Option<u64> = None;
        let n_pages = self.pages.len();
        let page_nans = |n: u64| K::NANS.then_some(n as i64);
        let histogram = self.nullable && self.stats != EnabledStatistics::None;
        for p in std::mem::take(&mut self.pages) {
            let (rows, nulls, min_max) = written.write(&mut w, p, histogram.then_some(&mut index))?;
            if let Some((a, b, n)) = min_max {
                update::<K>(&mut min, a, |cur, v| K::greater(cur, v));
                update::<K>(&mut max, b, |cur, v| K::greater(v, cur));
                if K::NANS {
                    *nans.get_or_insert(0) += n;
                }
            }
            if nulls == rows {
                index.append(true, Vec::new(), Vec::new(), nulls as i64, page_nans(0));
            } else if let Some((a, b, n)) = min_max {
                if let Some((la, lb)) = last {
                    ascending &= !(K::greater(la, a) || K::greater(lb, b));
                    descending &= !(K::greater(a, la) || K::greater(b, lb));
                }
                last = Some((a, b));
                index.append(false, K::bytes(a), K::bytes(b), nulls as i64, page_nans(n));
            } else {
                index.to_invalid();
            }
        }
        w.close().map_err(err)?;
        let bytes = Bytes::from(sink.into_inner().map_err(err)?);
        let encodings = [Encoding::RLE, K::ENCODING];
        let meta = ColumnChunkMetaData::builder(self.descr.clone())
            .set_compression(self.compression)
            .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
            .set_page_encoding_stats(if n_pages == 0 {
                Vec::new()
            } else {
                vec![PageEncodingStats { page_type: PageType::DATA_PAGE, encoding: K::ENCODING, count: n_pages as i32 }]
            });
        let mut meta = written.sizes(meta);
        if self.stats != EnabledStatistics::None {
            // The deprecated `min`/`max` too where the order is signed (integers; floating
            // point numbers are in IEEE 754 total order).
            let stats = ValueStatistics::new(min, max, None, Some(written.nulls as u64), false)
                .with_nan_count(nans)
                .with_backwards_compatible_min_max(self.descr.sort_order().is_signed());
            meta = meta.set_statistics(K::statistics(stats));
        }
        let stats = self.stats != EnabledStatistics::None;
        let index = (stats && index.valid()).then_some((index, ascending, descending));
        let sizes = (written.rows, written.nulls);
        finish_chunk(meta, bytes, sizes, stats && self.nullable, index, self.offset_index.then_some(written.offsets))
    }
}

/// Takes `v` into the chunk's bound `cur` as parquet's writer does (`update_min`,
/// `update_max`): a NaN never replaces a number, a number always replaces a NaN, and otherwise
/// `v` replaces `cur` where `replaces(cur, v)`.
fn update<K: Kind>(cur: &mut Option<Native<K>>, v: Native<K>, replaces: impl Fn(Native<K>, Native<K>) -> bool) {
    match cur {
        None => *cur = Some(v),
        Some(c) => match (K::is_nan(*c), K::is_nan(v)) {
            (false, true) => {}
            (true, false) => *c = v,
            _ if replaces(*c, v) => *c = v,
            _ => {}
        },
    }
}

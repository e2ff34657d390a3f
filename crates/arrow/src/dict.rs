//! Parquet column chunks of text whose values come from a handful, written from their codes.
//!
//! The text columns of the per-packet tables (`input`, `file`, `dir`, `flags`, `verdict`,
//! `class`, `kind`) reach the Parquet writer dictionary-coded ([`crate::columns`]): each row a
//! code into a vocabulary of a few values. Parquet's own writer (60.1) has no fast path for
//! them: its dictionary encoder hashes and compares every row's bytes to find the value's index
//! again, dictionary array or not (~670 instructions a `segments` row for the six columns,
//! docs/performance.md#exports-and-python). Its value encoders are not public (the
//! `ColumnValueEncoder` trait cannot be named outside the crate), so this module writes such a
//! column chunk itself, the way parquet's writer does, from parquet's own parts: the dictionary
//! page (PLAIN values) and data pages v1 (definition levels, then the bit width and the indexes),
//! both RLE/bit-packed by parquet's `RleEncoder`, compressed by parquet's codec, headers written
//! by its `SerializedPageWriter`; the chunk's metadata, statistics (truncated as parquet
//! truncates them) and page index go with it to `SerializedRowGroupWriter::append_column`. The
//! file reads back as if parquet's writer had written it: same physical and logical types, the
//! same encodings, the same Arrow schema.
//!
//! What is left per row is a comparison with the row before: a batch's dictionary (a few
//! values) is mapped once to the chunk's, a run of rows of one code through that map once, and
//! the page's runs go to parquet's RLE encoder whole (a trace's `input` and `file` are one run
//! a page; directions, verdicts and flag letters come in runs of a few to hundreds).

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, StringArray};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, EncodingMask, PageType};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::compression::{Codec, CodecOptionsBuilder, create_codec};
use parquet::data_type::ByteArray;
use parquet::encodings::rle::RleEncoder;
use parquet::file::metadata::{ColumnChunkMetaData, ColumnIndexBuilder, PageEncodingStats};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::chunk::{DataPage, Written, compress, finish_chunk};

/// Whether a column of this Arrow type can go to a [`DictChunk`]: text, plain or coded.
pub(crate) fn takes(ty: &DataType) -> bool {
    match ty {
        DataType::Utf8 => true,
        DataType::Dictionary(k, v) => **k == DataType::Int32 && **v == DataType::Utf8,
        _ => false,
    }
}

/// One column chunk (a row group's values of one column) of dictionary-encoded text.
pub(crate) struct DictChunk {
    descr: ColumnDescPtr,
    nullable: bool,
    compression: Compression,
    codec: Option<Box<dyn Codec>>,
    /// Minimum and maximum kept (chunk statistics, and the column index when `Page`).
    stats: EnabledStatistics,
    stats_len: Option<usize>,
    index_len: Option<usize>,
    offset_index: bool,
    /// Rows per data page (parquet's data page row count limit).
    page_rows: usize,
    /// The chunk's dictionary, in the order values first came, and each value's index.
    values: Vec<Box<[u8]>>,
    lookup: HashMap<Box<[u8]>, u32>,
    /// The page being made: its definition levels (nullable columns: 1 a value, 0 a null)
    /// and its values' dictionary indexes, as runs of one index (index, rows): a column of a
    /// handful of values comes in runs (directions, verdicts, flag letters), which the RLE
    /// encoder then takes whole ([`put_run`]).
    levels: Vec<u64>,
    runs: Vec<(u64, usize)>,
    rows: usize,
    nulls: usize,
    /// The finished data pages, each with the dictionary indexes of its smallest and largest
    /// value.
    pages: Vec<DataPage<(u32, u32)>>,
    /// Scratch: the dictionary indexes of the current batch's dictionary (`u32::MAX`: not yet
    /// in the chunk's), and which indexes a page uses (for its minimum and maximum).
    remap: Vec<u32>,
    seen: Vec<bool>,
    /// Scratch: a page compressed ([`compress`]).
    zbuf: Vec<u8>,
}

impl DictChunk {
    /// An empty chunk of the leaf column `descr`, with the settings `props` gives it.
    pub(crate) fn new(descr: ColumnDescPtr, props: &WriterProperties) -> Result<DictChunk, String> {
        let path = descr.path();
        let compression = props.compression(path);
        let codec = create_codec(compression, &CodecOptionsBuilder::default().build()).map_err(|e| e.to_string())?;
        if props.writer_version() != WriterVersion::PARQUET_1_0 {
            // Data pages v2 lay out and compress their levels differently: not written here.
            return Err("dictionary-coded text is written in data pages v1 only".into());
        }
        Ok(DictChunk {
            nullable: descr.max_def_level() > 0,
            compression,
            codec,
            stats: props.statistics_enabled(path),
            stats_len: props.statistics_truncate_length(),
            index_len: props.column_index_truncate_length(),
            offset_index: !props.offset_index_disabled(),
            page_rows: props.column_data_page_row_count_limit(path).max(1),
            descr,
            values: Vec::new(),
            lookup: HashMap::new(),
            levels: Vec::new(),
            runs: Vec::new(),
            rows: 0,
            nulls: 0,
            pages: Vec::new(),
            remap: Vec::new(),
            seen: Vec::new(),
            zbuf: Vec::new(),
        })
    }

    /// The index of `v` in the chunk's dictionary, added if new.
    fn intern(values: &mut Vec<Box<[u8]>>, lookup: &mut HashMap<Box<[u8]>, u32>, v: &[u8]) -> u32 {
        if let Some(&i) = lookup.get(v) {
            return i;
        }
        let i = values.len() as u32;
        values.push(v.into());
        lookup.insert(v.into(), i);
        i
    }

    /// Appends the rows of `array`: `Utf8`, or dictionary-coded (`Int32` codes into `Utf8`
    /// values).
    pub(crate) fn write(&mut self, array: &dyn Array) -> Result<(), String> {
        if let Some(d) = array.as_dictionary_opt::<Int32Type>() {
            return self.write_coded(d);
        }
        // Plain text (a batch not coded by a table builder): each row's value looked up.
        let s = array
            .as_string_opt::<i32>()
            .ok_or_else(|| format!("a column of {} where text was expected", array.data_type()))?;
        let nulls = s.nulls().filter(|n| n.null_count() > 0);
        if nulls.is_some() && !self.nullable {
            return Err(format!("a null in {}, a column without nulls", self.descr.path()));
        }
        self.push_rows(s.len(), nulls, |me, r| {
            Ok(DictChunk::intern(&mut me.values, &mut me.lookup, s.value(r).as_bytes()).into())
        })
    }

    /// The chunk's dictionary index of code `k` of a batch whose values are `words`, through
    /// `remap` (`u32::MAX`: not met yet in this batch). Arrow checked the codes of the rows
    /// that have a value when the array was made; one out of range is a bug, an error here.
    #[inline(always)]
    fn index(
        remap: &mut [u32],
        values: &mut Vec<Box<[u8]>>,
        lookup: &mut HashMap<Box<[u8]>, u32>,
        words: &StringArray,
        k: i32,
    ) -> Result<u64, String> {
        match remap.get(k as usize) {
            Some(&r) if r != u32::MAX => Ok(u64::from(r)),
            Some(_) => {
                let r = DictChunk::intern(values, lookup, words.value(k as usize).as_bytes());
                remap[k as usize] = r;
                Ok(u64::from(r))
            }
            None => Err("a dictionary code out of range".into()),
        }
    }

    /// Appends the rows of a dictionary-coded array, in one pass: each row's code (each run's,
    /// when no row is null) mapped to the chunk's dictionary index through a table made as the
    /// batch's values are first met (in row order, so the chunk's dictionary is the one
    /// parquet's writer makes: only the values the rows use; a builder's vocabulary holds every
    /// value it was given), straight into the page being made. (Checking the codes, then
    /// mapping the batch's dictionary, then the rows into a scratch vector and from it into
    /// pages, cost three passes more.)
    fn write_coded(&mut self, d: &arrow_array::DictionaryArray<Int32Type>) -> Result<(), String> {
        let words: &StringArray = d.values().as_string_opt::<i32>().ok_or("a dictionary of other than text")?;
        let keys = d.keys();
        let codes = keys.values();
        let nulls = keys.nulls().filter(|n| n.null_count() > 0);
        if nulls.is_some() && !self.nullable {
            return Err(format!("a null in {}, a column without nulls", self.descr.path()));
        }
        self.remap.clear();
        self.remap.resize(words.len(), u32::MAX);
        if nulls.is_none() {
            return self.write_codes(words, codes);
        }
        // Inlined into each row's loop (left to itself, the compiler sometimes made it a call a
        // row: +27 M instructions on 200,000 `segments` rows).
        self.push_rows(
            codes.len(),
            nulls,
            #[inline(always)]
            |me, r| DictChunk::index(&mut me.remap, &mut me.values, &mut me.lookup, words, codes[r]),
        )
    }

    /// [`DictChunk::write_coded`] for rows that all have a value: run by run of one code, its
    /// index looked up once. (Each row's code mapped and its index pushed, then put into the
    /// RLE encoder one by one, cost 95 M instructions more of the writer's 881 M on the bulk
    /// trace.)
    fn write_codes(&mut self, words: &StringArray, codes: &[i32]) -> Result<(), String> {
        let mut i = 0;
        while i < codes.len() {
            let end = i + (self.page_rows - self.rows).min(codes.len() - i);
            if self.nullable {
                self.levels.resize(self.levels.len() + (end - i), 1);
            }
            self.rows += end - i;
            while i < end {
                let k = codes[i];
                let run = codes[i + 1..end].iter().take_while(|&&c| c == k).count() + 1;
                let x = DictChunk::index(&mut self.remap, &mut self.values, &mut self.lookup, words, k)?;
                self.push_run(x, run);
                i += run;
            }
            if self.rows >= self.page_rows {
                self.end_page()?;
            }
        }
        Ok(())
    }

    /// Appends `n` rows of dictionary index `x` to the page's runs.
    #[inline(always)]
    fn push_run(&mut self, x: u64, n: usize) {
        match self.runs.last_mut() {
            Some((last, m)) if *last == x => *m += n,
            _ => self.runs.push((x, n)),
        }
    }

    /// Appends `n` rows to the pages, ending a page at `page_rows`: the definition levels
    /// (`valid`: which rows have a value, none when all do) and each row with a value's
    /// dictionary index, `index(self, row)`.
    #[inline(always)]
    fn push_rows(
        &mut self,
        n: usize,
        valid: Option<&NullBuffer>,
        mut index: impl FnMut(&mut Self, usize) -> Result<u64, String>,
    ) -> Result<(), String> {
        let mut i = 0;
        while i < n {
            let take = (self.page_rows - self.rows).min(n - i);
            match valid {
                Some(valid) => {
                    for r in i..i + take {
                        if valid.is_valid(r) {
                            self.levels.push(1);
                            let x = index(self, r)?;
                            self.push_run(x, 1);
                        } else {
                            self.levels.push(0);
                            self.nulls += 1;
                        }
                    }
                }
                None => {
                    if self.nullable {
                        self.levels.resize(self.levels.len() + take, 1);
                    }
                    for r in i..i + take {
                        let x = index(self, r)?;
                        self.push_run(x, 1);
                    }
                }
            }
            self.rows += take;
            i += take;
            if self.rows >= self.page_rows {
                self.end_page()?;
            }
        }
        Ok(())
    }

    /// Ends the data page being made, as parquet's writer lays out a v1 page: the definition
    /// levels (nullable columns: their length in 4 bytes, then RLE/bit-packed at 1 bit), then the
    /// indexes' bit width in a byte and the indexes RLE/bit-packed; all of it compressed.
    fn end_page(&mut self) -> Result<(), String> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(64 + self.rows / 2);
        if self.nullable {
            let mut levels = RleEncoder::new_from_buf(1, vec![0; 4]);
            levels.put_batch(&self.levels);
            buf = levels.consume();
            let len = (buf.len() - 4) as u32;
            buf[..4].copy_from_slice(&len.to_le_bytes());
        }
        let width = parquet::util::bit_util::num_required_bits(self.values.len().saturating_sub(1) as u64);
        buf.push(width);
        let mut enc = RleEncoder::new_from_buf(width, buf);
        for &(x, n) in &self.runs {
            put_run(&mut enc, x, n);
        }
        let buf = enc.consume();
        let min_max = if self.stats == EnabledStatistics::None { None } else { self.page_min_max() };
        let uncompressed = buf.len();
        let buf = compress(&mut self.codec, &buf, &mut self.zbuf)?;
        let sizes = (self.rows, self.nulls);
        self.pages.push(DataPage::new(buf, uncompressed, Encoding::RLE_DICTIONARY, sizes, min_max));
        self.levels.clear();
        self.runs.clear();
        self.rows = 0;
        self.nulls = 0;
        Ok(())
    }

    /// The dictionary indexes of the smallest and largest value of the page being made
    /// (bytewise, as Parquet orders UTF-8): one look at each distinct index.
    fn page_min_max(&mut self) -> Option<(u32, u32)> {
        self.seen.clear();
        self.seen.resize(self.values.len(), false);
        for &(i, _) in &self.runs {
            self.seen[i as usize] = true;
        }
        let mut used = self.seen.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| i as u32);
        let first = used.next()?;
        let v = &self.values;
        Some(used.fold((first, first), |(lo, hi), i| {
            (if v[i as usize] < v[lo as usize] { i } else { lo }, if v[i as usize] > v[hi as usize] { i } else { hi })
        }))
    }

    /// The chunk's bytes (its pages, from offset 0) and what `append_column` needs of them.
    pub(crate) fn close(mut self) -> Result<(Bytes, ColumnCloseResult), String> {
        let err = |e: parquet::errors::ParquetError| e.to_string();
        self.end_page()?;
        // The dictionary page: each value's length in 4 bytes, then its bytes (PLAIN).
        let mut dict = Vec::with_capacity(self.values.iter().map(|v| v.len() + 4).sum());
        for v in &self.values {
            dict.extend_from_slice(&(v.len() as u32).to_le_bytes());
            dict.extend_from_slice(v);
        }
        let uncompressed = dict.len();
        let dict = compress(&mut self.codec, &dict, &mut self.zbuf)?;
        let dict_page = Page::DictionaryPage {
            buf: dict,
            num_values: self.values.len() as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let mut sink = TrackedWrite::new(Vec::new());
        let mut w = SerializedPageWriter::new(&mut sink);
        let spec = w.write_page(CompressedPage::new(dict_page, uncompressed)).map_err(err)?;
        let mut written = Written::first(spec);
        let mut index = ColumnIndexBuilder::new(self.descr.physical_type());
        let (mut ascending, mut descending) = (true, true);
        let mut last: Option<(u32, u32)> = None;
        let (mut lo, mut hi): (Option<u32>, Option<u32>) = (None, None);
        let n_pages = self.pages.len();
        for p in std::mem::take(&mut self.pages) {
            let (rows, nulls, min_max) = written.write(&mut w, p, self.nullable.then_some(&mut index))?;
            let v = &self.values;
            match min_max {
                Some((a, b)) => {
                    if let Some((la, lb)) = last {
                        ascending &= v[la as usize] <= v[a as usize] && v[lb as usize] <= v[b as usize];
                        descending &= v[la as usize] >= v[a as usize] && v[lb as usize] >= v[b as usize];
                    }
                    last = Some((a, b));
                    lo = Some(lo.map_or(a, |l| if v[a as usize] < v[l as usize] { a } else { l }));
                    hi = Some(hi.map_or(b, |h| if v[b as usize] > v[h as usize] { b } else { h }));
                    let (min, _) = truncate_min(v[a as usize].as_ref(), self.index_len);
                    let (max, _) = truncate_max(v[b as usize].as_ref(), self.index_len);
                    index.append(false, min, max, nulls as i64, None);
                }
                None if nulls == rows => index.append(true, Vec::new(), Vec::new(), nulls as i64, None),
                None => index.to_invalid(),
            }
        }
        w.close().map_err(err)?;
        let bytes = Bytes::from(sink.into_inner().map_err(err)?);
        let encodings = [Encoding::PLAIN, Encoding::RLE, Encoding::RLE_DICTIONARY];
        let meta = ColumnChunkMetaData::builder(self.descr.clone())
            .set_compression(self.compression)
            .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
            .set_page_encoding_stats(vec![
                PageEncodingStats { page_type: PageType::DICTIONARY_PAGE, encoding: Encoding::PLAIN, count: 1 },
                PageEncodingStats {
                    page_type: PageType::DATA_PAGE,
                    encoding: Encoding::RLE_DICTIONARY,
                    count: n_pages as i32,
                },
            ])
            .set_dictionary_page_offset(Some(0));
        let mut meta = written.sizes(meta);
        if self.stats != EnabledStatistics::None {
            let v = &self.values;
            let stats = match (lo, hi) {
                (Some(lo), Some(hi)) => {
                    let (min, min_cut) = truncate_min(v[lo as usize].as_ref(), self.stats_len);
                    let (max, max_cut) = truncate_max(v[hi as usize].as_ref(), self.stats_len);
                    ValueStatistics::new(
                        Some(ByteArray::from(min)),
                        Some(ByteArray::from(max)),
                        None,
                        Some(written.nulls as u64),
                        false,
                    )
                    .with_min_is_exact(!min_cut)
                    .with_max_is_exact(!max_cut)
                }
                _ => ValueStatistics::new(None, None, None, Some(written.nulls as u64), false),
            };
            meta = meta.set_statistics(Statistics::ByteArray(stats));
        }
        let stats = self.stats != EnabledStatistics::None;
        let index = (stats && index.valid()).then_some((index, ascending, descending));
        let sizes = (written.rows, written.nulls);
        finish_chunk(meta, bytes, sizes, stats && self.nullable, index, self.offset_index.then_some(written.offsets))
    }
}

/// Puts `n` values `x` into `enc`, as `n` calls of `put(x)` would: one at a time until the
/// encoder is counting a run of `x` (after at most 8), then the rest at once.
fn put_run(enc: &mut RleEncoder, x: u64, n: usize) {
    let mut left = n;
    while left > 0 && !enc.is_accumulating_rle(x) {
        enc.put(x);
        left -= 1;
    }
    if left > 0 {
        enc.extend_run(left);
    }
}

/// A minimum cut to at most `len` bytes at a character boundary, as parquet truncates it
/// (and whether it was cut).
fn truncate_min(v: &[u8], len: Option<usize>) -> (Vec<u8>, bool) {
    let cut = len.filter(|&l| v.len() > l).and_then(|l| match std::str::from_utf8(v) {
        Ok(s) => (1..=l).rfind(|&x| s.is_char_boundary(x)).map(|x| v[..x].to_vec()),
        Err(_) => Some(v[..l].to_vec()),
    });
    match cut {
        Some(c) => (c, true),
        None => (v.to_vec(), false),
    }
}

/// A maximum cut to at most `len` bytes and its last character incremented, so that it is
/// still an upper bound, as parquet truncates it (and whether it was cut).
fn truncate_max(v: &[u8], len: Option<usize>) -> (Vec<u8>, bool) {
    let cut = len.filter(|&l| v.len() > l).and_then(|l| match std::str::from_utf8(v) {
        Ok(s) => {
            let split = (l.saturating_sub(3)..=l).rfind(|&x| s.is_char_boundary(x))?;
            let s = s.get(..split)?;
            s.char_indices().rev().find_map(|(i, c)| {
                let next = char::from_u32(c as u32 + 1).filter(|n| n.len_utf8() == c.len_utf8())?;
                let mut out = s.as_bytes()[..i + c.len_utf8()].to_vec();
                next.encode_utf8(&mut out[i..]);
                Some(out)
            })
        }
        Err(_) => {
            let mut out = v[..l].to_vec();
            for b in out.iter_mut().rev() {
                let (n, overflow) = b.overflowing_add(1);
                *b = n;
                if !overflow {
                    return Some(out);
                }
            }
            None
        }
    });
    match cut {
        Some(c) => (c, true),
        None => (v.to_vec(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs put by [`put_run`] encode to the bytes parquet's encoder makes of the same values
    /// put as one slice (how the pages were written before): runs short and long, across
    /// its groups of 8 and its bit-packed runs' limit, at several bit widths.
    #[test]
    fn runs_encode_as_the_values_one_by_one() {
        // A small generator of its own (no dependency): xorshift.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for width in [0u8, 1, 2, 3, 5, 8] {
            let most = if width == 0 { 1 } else { 1u64 << width.min(4) };
            for case in 0..200 {
                // Runs of lengths from 1 to ~40 (some past 1,000), values of a few.
                let mut runs: Vec<(u64, usize)> = Vec::new();
                for _ in 0..(next() % 60) {
                    let len = match next() % 10 {
                        0 => 1 + (next() % 2000) as usize,
                        1..=4 => 1,
                        _ => 1 + (next() % 40) as usize,
                    };
                    let v = next() % most;
                    match runs.last_mut() {
                        Some((last, n)) if *last == v => *n += len,
                        _ => runs.push((v, len)),
                    }
                }
                let values: Vec<u64> = runs.iter().flat_map(|&(v, n)| std::iter::repeat_n(v, n)).collect();
                let mut theirs = RleEncoder::new_from_buf(width, vec![width]);
                theirs.put_batch(&values);
                let mut ours = RleEncoder::new_from_buf(width, vec![width]);
                for &(v, n) in &runs {
                    put_run(&mut ours, v, n);
                }
                assert_eq!(ours.consume(), theirs.consume(), "width {width}, case {case}, runs {runs:?}");
            }
        }
    }
}

//! Parquet column chunks of integers as differences (`DELTA_BINARY_PACKED`), written from the
//! column's values as they are: the [`Kind`] of [`Chunk`] for `Int64` columns ([`DeltaChunk`]).
//!
//! The nine integer columns of `segments` cost parquet's writer (60.1) ~870 instructions a row
//! (docs/performance.md#exports-and-python): its Arrow path gathers each mini-batch's values
//! into a new vector by index, takes their minimum and maximum, and feeds them to its
//! `DeltaBitPackEncoder` one value at a time. [`Chunk`] writes such a column chunk the way
//! parquet's writer does, cut into the same pages, from parquet's own parts where they are not
//! the cost; the values of a page are encoded at once by [`encode`] (see there why not by
//! parquet's encoder), byte for byte as parquet's encoder encodes them, and their minimum and
//! maximum taken four at a time where the CPU can ([`min_max`]): the file is the one parquet's
//! writer writes. The floating point columns are written the same way, as they are
//! ([`crate::plain`]).

use arrow_array::types::Int64Type;
use parquet::basic::{Encoding, Type};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::util::bit_util::BitWriter;

use crate::chunk::{Chunk, Kind};

/// Integers as differences.
pub(crate) struct Delta;

/// A column chunk of 64-bit integers as differences.
pub(crate) type DeltaChunk = Chunk<Delta>;

impl Kind for Delta {
    type Arrow = Int64Type;
    const PHYSICAL: Type = Type::INT64;
    const ENCODING: Encoding = Encoding::DELTA_BINARY_PACKED;
    const NANS: bool = false;

    fn encode(values: &[i64], out: &mut Vec<u8>) {
        encode(values, out)
    }
    fn min_max(values: &[i64]) -> Option<(i64, i64, u64)> {
        min_max(values).map(|(lo, hi)| (lo, hi, 0))
    }
    fn greater(a: i64, b: i64) -> bool {
        a > b
    }
    fn is_nan(_: i64) -> bool {
        false
    }
    fn bytes(v: i64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }
    fn statistics(s: ValueStatistics<i64>) -> Statistics {
        Statistics::Int64(s)
    }
}

/// The smallest and largest of `values` (`None`: none).
fn min_max(values: &[i64]) -> Option<(i64, i64)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, just checked.
        return unsafe { min_max_avx2(values) };
    }
    min_max_of(values)
}

/// [`min_max`] for a CPU with AVX2, whose 64-bit compares let the compiler take four values
/// at a time: the baseline x86-64 (SSE2) has none, so each value there is a compare and a
/// move for each bound (~14 instructions a value with the loop, a seventh of the writer's).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn min_max_avx2(values: &[i64]) -> Option<(i64, i64)> {
    min_max_of(values)
}

#[inline(always)]
fn min_max_of(values: &[i64]) -> Option<(i64, i64)> {
    let first = *values.first()?;
    Some(values.iter().fold((first, first), |(lo, hi), &v| (lo.min(v), hi.max(v))))
}

/// Values per block of differences and mini-blocks per block, as parquet's encoder lays out
/// `INT64` values (`DeltaBitPackEncoder::new`).
const BLOCK: usize = 256;
const MINI_BLOCKS: usize = 4;
const MINI: usize = BLOCK / MINI_BLOCKS;

/// `values` as a `DELTA_BINARY_PACKED` page's values, appended to `out`, byte for byte as
/// parquet's `DeltaBitPackEncoder<Int64Type>` encodes them: a header (block size, mini-blocks
/// per block, the number of values, the first value), then for each block of 256 differences
/// (wrapping, as the format says) its smallest as a zigzag VLQ, the bit widths of its four
/// mini-blocks of 64, and each mini-block's differences less the smallest, bit-packed at its
/// width (the last padded with zeros, the mini-blocks after it of width 0 and no bytes).
///
/// Not parquet's encoder, which is public (`experimental`) and was used here first: fed a
/// page's values as a slice it cost ~50 instructions a value (88 M of the 724 M instructions
/// of a `segments` export of the 200,000-packet cut, docs/performance.md#exports-and-python),
/// its differences taken one value at a time through a trait's conversions, each mini-block's
/// minimum and maximum found with bounds checks; here the differences, their minimum and
/// the widths are loops over a block the compiler vectorizes. The packing is parquet's
/// (`BitWriter::put_batch`), which costs little.
pub(crate) fn encode(values: &[i64], out: &mut Vec<u8>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, just checked.
        return unsafe { encode_avx2(values, out) };
    }
    encode_with(values, out)
}

/// [`encode`] for a CPU with AVX2: the differences' minimum four at a time (see
/// [`min_max_avx2`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn encode_avx2(values: &[i64], out: &mut Vec<u8>) {
    encode_with(values, out)
}

#[inline(always)]
fn encode_with(values: &[i64], out: &mut Vec<u8>) {
    let mut w = BitWriter::new_from_buf(std::mem::take(out));
    w.put_vlq_int(BLOCK as u64);
    w.put_vlq_int(MINI_BLOCKS as u64);
    w.put_vlq_int(values.len() as u64);
    w.put_zigzag_vlq_int(values.first().copied().unwrap_or(0));
    let mut deltas = [0i64; BLOCK];
    let mut packed = [0u64; MINI];
    // Each block: the differences of values[start..=start + n].
    let mut start = 0;
    while start + 1 < values.len() {
        let n = BLOCK.min(values.len() - 1 - start);
        let (prev, next) = (&values[start..start + n], &values[start + 1..start + 1 + n]);
        for ((d, &a), &b) in deltas[..n].iter_mut().zip(prev).zip(next) {
            *d = b.wrapping_sub(a);
        }
        let min = deltas[..n].iter().copied().fold(i64::MAX, i64::min);
        w.put_zigzag_vlq_int(min);
        let widths = w.skip(MINI_BLOCKS);
        for m in 0..MINI_BLOCKS {
            let lo = m * MINI;
            if lo >= n {
                // Mini-blocks without values: width 0, no bytes (the bytes skipped are 0).
                break;
            }
            let hi = n.min(lo + MINI);
            let mut all = 0u64;
            for (p, &d) in packed.iter_mut().zip(&deltas[lo..hi]) {
                *p = d.wrapping_sub(min) as u64;
                all |= *p;
            }
            packed[hi - lo..].fill(0);
            let width = (64 - all.leading_zeros()) as usize;
            w.write_at(widths + m, width as u8);
            w.put_batch(&packed, width);
        }
        start += n;
    }
    *out = w.consume();
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::out::tests_support::split_file;
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::SchemaRef;
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder, WriterVersion};
    use std::fs::File;
    use std::path::Path;

    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// A small generator of random numbers of its own (no dependency): xorshift from `x`.
    pub(crate) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// The differences between two Parquet files, page by page (headers and decompressed
    /// bytes), then column chunk by column chunk (their metadata, offsets left out), then the
    /// page indexes: empty when they hold the same pages and metadata.
    pub(crate) fn differences(a: &Path, b: &Path) -> Vec<String> {
        use parquet::file::serialized_reader::ReadOptionsBuilder;
        let open = |p: &Path| {
            let opts = ReadOptionsBuilder::new().with_page_index().build();
            SerializedFileReader::new_with_options(File::open(p).unwrap(), opts).unwrap()
        };
        let (ra, rb) = (open(a), open(b));
        let (ma, mb) = (ra.metadata(), rb.metadata());
        let mut out = Vec::new();
        if ma.num_row_groups() != mb.num_row_groups() {
            return vec![format!("{} row groups, {}", ma.num_row_groups(), mb.num_row_groups())];
        }
        for g in 0..ma.num_row_groups() {
            let (ga, gb) = (ra.get_row_group(g).unwrap(), rb.get_row_group(g).unwrap());
            for c in 0..ga.num_columns() {
                let name = ga.metadata().column(c).column_path().string();
                let at = format!("row group {g}, column {name}");
                let pages = |r: &dyn parquet::file::reader::RowGroupReader| {
                    r.get_column_page_reader(c).unwrap().map(|p| p.unwrap()).collect::<Vec<_>>()
                };
                let (pa, pb) = (pages(ga.as_ref()), pages(gb.as_ref()));
                if pa.len() != pb.len() {
                    out.push(format!("{at}: {} pages, {}", pa.len(), pb.len()));
                }
                for (i, (x, y)) in pa.iter().zip(&pb).enumerate() {
                    let head = |p: &parquet::column::page::Page| {
                        (p.page_type(), p.num_values(), p.encoding(), p.buffer().len())
                    };
                    if head(x) != head(y) {
                        out.push(format!("{at}, page {i}: {:?}, {:?}", head(x), head(y)));
                    } else if x.buffer() != y.buffer() {
                        out.push(format!("{at}, page {i}: other bytes"));
                    }
                }
                let (ca, cb) = (ma.row_group(g).column(c), mb.row_group(g).column(c));
                let strip = |m: &parquet::file::metadata::ColumnChunkMetaData| {
                    m.clone()
                        .into_builder()
                        .set_data_page_offset(0)
                        .set_dictionary_page_offset(None)
                        .set_index_page_offset(None)
                        .set_column_index_offset(None)
                        .set_column_index_length(None)
                        .set_offset_index_offset(None)
                        .set_offset_index_length(None)
                        .build()
                        .unwrap()
                };
                // Compared as text: NaN statistics are not equal to themselves (the bytes of the
                // files, compared too, tell one NaN from another).
                if format!("{:?}", strip(ca)) != format!("{:?}", strip(cb)) {
                    out.push(format!("{at}: metadata\n{:?}\n{:?}", strip(ca), strip(cb)));
                }
                let (ia, ib) = (ma.page_index_for_row_group(g), mb.page_index_for_row_group(g));
                if format!("{:?}", ia.column_index(c)) != format!("{:?}", ib.column_index(c)) {
                    out.push(format!("{at}: column index\n{:?}\n{:?}", ia.column_index(c), ib.column_index(c)));
                }
                let rows = |o: Option<&Vec<parquet::file::page_index::offset_index::PageLocation>>| {
                    o.map(|o| o.iter().map(|p| p.first_row_index).collect::<Vec<_>>())
                };
                if rows(ia.page_locations(c)) != rows(ib.page_locations(c)) {
                    out.push(format!("{at}: offset index"));
                }
            }
        }
        out
    }

    /// Pages of differences byte for byte as parquet's own encoder makes them: no value, one,
    /// blocks and mini-blocks full and not, runs of one value (width 0), negative
    /// differences, and the extremes of `i64`, whose differences overflow and wrap.
    #[test]
    fn pages_of_differences_are_parquets() {
        use parquet::data_type::Int64Type;
        use parquet::encodings::encoding::{DeltaBitPackEncoder, Encoder};
        let theirs = |v: &[i64]| {
            let mut e = DeltaBitPackEncoder::<Int64Type>::new();
            e.put(v).unwrap();
            e.flush_buffer().unwrap().to_vec()
        };
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut cases: Vec<Vec<i64>> = vec![
            vec![],
            vec![7],
            vec![i64::MIN],
            vec![1, 2],
            vec![5; 300],
            vec![i64::MAX, i64::MIN, i64::MAX, 0, -1, i64::MIN, 1],
            (0..1000).map(|i| if i % 2 == 0 { i64::MIN } else { i64::MAX }).collect(),
            (0..700).rev().map(|i| i * 1_000_003).collect(),
        ];
        for n in [2, 63, 64, 65, 128, 255, 256, 257, 258, 320, 511, 512, 513, 1025, 20_000] {
            cases.push((0..n).map(|_| next() as i64).collect());
            cases.push((0..n).map(|_| (next() % 1500) as i64 - 700).collect());
            let mut t = 1_700_000_000_000_000_000i64;
            cases.push(
                (0..n)
                    .map(|_| {
                        t += (next() % 5_000) as i64;
                        t
                    })
                    .collect(),
            );
        }
        for v in &cases {
            let mut ours = vec![0xAB];
            encode(v, &mut ours);
            assert_eq!(ours[0], 0xAB, "appended after what was there");
            assert!(ours[1..] == theirs(v)[..], "{} values from {:?}", v.len(), v.first());
            // The baseline build of the loops, which a CPU without AVX2 runs, the same.
            let mut base = vec![0xAB];
            encode_with(v, &mut base);
            assert!(base == ours, "{} values from {:?}, baseline", v.len(), v.first());
            assert_eq!(min_max(v), min_max_of(v));
        }
    }

    /// Columns of integers written from their values ([`DeltaChunk`]) make the file parquet's
    /// own writer makes, page for page and byte for byte, with the same metadata, statistics
    /// and page index: across data pages (cut by the row limit after mini-batches of the write
    /// batch size or of the row limit) and row groups (cut within batches), with nulls, batches
    /// of nulls only and without nulls in a nullable column, a row group of nulls only,
    /// statistics per page, per chunk and none, and the extremes of `i64`.
    #[test]
    fn integer_columns_are_written_as_parquets_writer_writes_them() {
        use arrow_array::ArrayRef;
        use arrow_schema::{DataType, Field, Schema};
        use parquet::schema::types::ColumnPath;
        use std::sync::Arc;

        let schema = Arc::new(Schema::new(vec![
            Field::new("frame", DataType::Int64, false),
            Field::new("ack", DataType::Int64, true),
            Field::new("odd", DataType::Int64, true),
            Field::new("rtt", DataType::Float64, true),
        ]));
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        // Batches of several sizes; `ack` with nulls now and then, none, or only nulls;
        // `odd` of wild values.
        let mut batches = Vec::new();
        let mut frame = 0i64;
        for (i, &n) in [700usize, 1, 2500, 64, 3000, 0, 1024, 999, 5000, 3].iter().enumerate() {
            let frames: Vec<i64> = (0..n as i64).map(|k| frame + k).collect();
            frame += n as i64;
            let ack: Vec<Option<i64>> = (0..n)
                .map(|k| match i % 3 {
                    0 => (!next().is_multiple_of(4)).then_some(k as i64 * 1448 - 5000),
                    1 => Some(k as i64),
                    _ => None,
                })
                .collect();
            let odd: Vec<Option<i64>> = (0..n)
                .map(|k| match next() % 7 {
                    0 => None,
                    1 => Some(i64::MIN),
                    2 => Some(i64::MAX),
                    _ => Some(next() as i64 >> (k % 64)),
                })
                .collect();
            let rtt: Vec<Option<f64>> = (0..n).map(|k| (k % 5 == 0).then_some(k as f64 / 3.0)).collect();
            let cols: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(frames)),
                Arc::new(Int64Array::from(ack)),
                Arc::new(Int64Array::from(odd)),
                Arc::new(arrow_array::Float64Array::from(rtt)),
            ];
            batches.push(RecordBatch::try_new(schema.clone(), cols).unwrap());
        }
        let settings: Vec<(usize, usize, usize, EnabledStatistics)> = vec![
            // (row group rows, page row limit, write batch size, statistics)
            (usize::MAX, 20_000, 1024, EnabledStatistics::Page),
            (4000, 1000, 300, EnabledStatistics::Page),
            (2048, 700, 1024, EnabledStatistics::Chunk),
            (1500, 256, 64, EnabledStatistics::None),
            (5000, 3, 2, EnabledStatistics::Page),
        ];
        let columns = |mut props: WriterPropertiesBuilder| {
            for c in ["frame", "ack", "odd"] {
                props = props
                    .set_column_dictionary_enabled(ColumnPath::from(c), false)
                    .set_column_encoding(ColumnPath::from(c), Encoding::DELTA_BINARY_PACKED);
            }
            props.set_column_dictionary_enabled(ColumnPath::from("rtt"), false)
        };
        // The integer columns and `rtt` written from their values.
        written_as_parquet_writes("delta", &schema, &batches, &settings, columns, 4);
    }

    /// Writes `batches` of `schema` with [`Split`](crate::out) and with parquet's `ArrowWriter`
    /// with each of `settings` (row group rows, page row limit, write batch size, statistics;
    /// zstd; the columns' settings from `columns`), and asserts that `used` columns were
    /// written from their values and that the files are the same, byte for byte.
    pub(crate) fn written_as_parquet_writes(
        name: &str,
        schema: &SchemaRef,
        batches: &[RecordBatch],
        settings: &[(usize, usize, usize, EnabledStatistics)],
        columns: impl Fn(WriterPropertiesBuilder) -> WriterPropertiesBuilder,
        used: usize,
    ) {
        for (g, &(group, page, batch, stats)) in settings.iter().enumerate() {
            let props = WriterProperties::builder()
                .set_max_row_group_row_count(Some(group.min(1 << 20)))
                .set_data_page_row_count_limit(page)
                .set_write_batch_size(batch)
                .set_statistics_enabled(stats)
                .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap()));
            let props = columns(props).build();
            let dir = std::env::temp_dir();
            let id = format!("{}-{g}", std::process::id());
            let (ours, theirs) = (
                dir.join(format!("tcpscope-{name}-ours-{id}.parquet")),
                dir.join(format!("tcpscope-{name}-theirs-{id}.parquet")),
            );
            let n = split_file(&ours, schema, props.clone(), batches);
            assert_eq!(n, used, "settings {g}: the columns written from their values");
            let mut w = ArrowWriter::try_new(File::create(&theirs).unwrap(), schema.clone(), Some(props)).unwrap();
            for b in batches {
                w.write(b).unwrap();
            }
            w.close().unwrap();
            let d = differences(&ours, &theirs);
            let (a, b) = (std::fs::read(&ours).unwrap(), std::fs::read(&theirs).unwrap());
            std::fs::remove_file(&ours).unwrap();
            std::fs::remove_file(&theirs).unwrap();
            assert!(d.is_empty(), "settings {g}: {} differences:\n{}", d.len(), d[..d.len().min(8)].join("\n"));
            assert!(a == b, "settings {g}: the same pages and metadata, other bytes");
        }
    }

    /// Settings whose pages this module does not cut as parquet's writer would (a page byte
    /// limit that could be reached, another encoding) leave the column to parquet's writer.
    #[test]
    fn other_settings_are_left_to_parquet() {
        use parquet::schema::types::ColumnPath;
        use std::sync::Arc;
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "n",
            arrow_schema::DataType::Int64,
            true,
        )]));
        let descr = parquet::arrow::ArrowSchemaConverter::new().convert(&schema).unwrap().column(0);
        let col = || ColumnPath::from("n");
        let delta = || {
            WriterProperties::builder()
                .set_column_dictionary_enabled(col(), false)
                .set_column_encoding(col(), Encoding::DELTA_BINARY_PACKED)
        };
        assert!(DeltaChunk::new(descr.clone(), &delta().build()).is_some());
        assert!(DeltaChunk::new(descr.clone(), &delta().set_data_page_size_limit(100_000).build()).is_none());
        assert!(
            DeltaChunk::new(descr.clone(), &delta().set_writer_version(WriterVersion::PARQUET_2_0).build()).is_none()
        );
        assert!(
            DeltaChunk::new(descr.clone(), &delta().set_column_bloom_filter_enabled(col(), true).build()).is_none()
        );
        assert!(DeltaChunk::new(descr.clone(), &WriterProperties::builder().build()).is_none());
        let plain = WriterProperties::builder().set_column_dictionary_enabled(col(), false).build();
        assert!(DeltaChunk::new(descr, &plain).is_none());
    }

    /// Two Parquet files named by `PQ_A` and `PQ_B` compared page by page (by hand:
    /// `PQ_A=… PQ_B=… cargo test -p tcpscope-arrow -- --ignored same_pages`).
    #[test]
    #[ignore]
    fn same_pages() {
        let (a, b) = (std::env::var("PQ_A").unwrap(), std::env::var("PQ_B").unwrap());
        let d = differences(Path::new(&a), Path::new(&b));
        assert!(
            d.is_empty(),
            "{} differences:\n{}",
            d.len(),
            d.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

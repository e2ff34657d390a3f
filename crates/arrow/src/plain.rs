//! Parquet column chunks of floating point numbers as they are (`PLAIN`), written from the
//! column's values: the [`Kind`] of [`Chunk`] for `Float64` columns ([`FloatChunk`]).
//!
//! The `Float64` columns of `segments` (`rtt_ms`, `rtt_ts_ms`) cost parquet's writer (60.1)
//! ~85 instructions a row (docs/performance.md#exports-and-python): its Arrow path gathers each
//! mini-batch's values into a new vector by index before taking their minimum and maximum and
//! copying them into the page. Here a page's values are copied once, and its statistics taken
//! as parquet's writer takes them ([`min_max`]): in IEEE 754 total order (-0.0 below +0.0),
//! NaNs left out of the minimum and maximum but counted, a page of NaNs only bounded by its
//! smallest and largest NaN.

use arrow_array::types::Float64Type;
use arrow_buffer::ToByteSlice;
use parquet::basic::{Encoding, Type};
use parquet::file::statistics::{Statistics, ValueStatistics};

use crate::chunk::{Chunk, Kind};

/// Floating point numbers as they are.
pub(crate) struct Plain;

/// A column chunk of 64-bit floating point numbers as they are.
pub(crate) type FloatChunk = Chunk<Plain>;

impl Kind for Plain {
    type Arrow = Float64Type;
    const PHYSICAL: Type = Type::DOUBLE;
    const ENCODING: Encoding = Encoding::PLAIN;
    const NANS: bool = true;

    /// The values' bytes, little-endian (Arrow's buffers are).
    fn encode(values: &[f64], out: &mut Vec<u8>) {
        out.extend_from_slice(values.to_byte_slice());
    }
    fn min_max(values: &[f64]) -> Option<(f64, f64, u64)> {
        min_max(values)
    }
    fn greater(a: f64, b: f64) -> bool {
        a.total_cmp(&b).is_gt()
    }
    fn is_nan(v: f64) -> bool {
        v.is_nan()
    }
    fn bytes(v: f64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }
    fn statistics(s: ValueStatistics<f64>) -> Statistics {
        Statistics::Double(s)
    }
}

/// `v`'s bits as an integer in the order of `f64::total_cmp` (negative numbers' magnitude
/// bits flipped); its own inverse.
#[inline(always)]
fn key(bits: i64) -> i64 {
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

/// The smallest and largest of `values` and how many are NaN, as parquet's writer takes a
/// page's (its `min_max_f64`, then its `fallback_min_max` for a page of NaNs only, the pages'
/// mini-batches merged by `update_min`/`update_max`): in total order, without the NaNs unless
/// there are only NaNs. `None`: no values.
pub(crate) fn min_max(values: &[f64]) -> Option<(f64, f64, u64)> {
    if values.is_empty() {
        return None;
    }
    // Eight lanes, a NaN replaced by each bound's identity, without a branch (as parquet's
    // kernel): vectorized by the compiler.
    const LANES: usize = 8;
    let (mut mins, mut maxs, mut nans) = ([i64::MAX; LANES], [i64::MIN; LANES], [0u64; LANES]);
    let mut take = |i: usize, v: f64| {
        let (k, nan) = (key(v.to_bits() as i64), v.is_nan());
        mins[i] = mins[i].min(if nan { i64::MAX } else { k });
        maxs[i] = maxs[i].max(if nan { i64::MIN } else { k });
        nans[i] += nan as u64;
    };
    let (chunks, rest) = values.as_chunks::<LANES>();
    for c in chunks {
        for (i, &v) in c.iter().enumerate() {
            take(i, v);
        }
    }
    for (i, &v) in rest.iter().enumerate() {
        take(i, v);
    }
    let nans: u64 = nans.iter().sum();
    let (lo, hi) = if nans as usize == values.len() {
        // NaNs only: the smallest and largest of them.
        let keys = values.iter().map(|v| key(v.to_bits() as i64));
        keys.fold((i64::MAX, i64::MIN), |(lo, hi), k| (lo.min(k), hi.max(k)))
    } else {
        (mins.into_iter().min().unwrap_or(i64::MAX), maxs.into_iter().max().unwrap_or(i64::MIN))
    };
    let float = |k: i64| f64::from_bits(key(k) as u64);
    Some((float(lo), float(hi), nans))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::tests::{written_as_parquet_writes, xorshift};
    use arrow_array::{ArrayRef, Float64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
    use parquet::schema::types::ColumnPath;
    use std::sync::Arc;

    /// A page's statistics in total order: NaNs (of either sign, any payload) counted and left
    /// out, -0.0 below +0.0, the infinities at the ends; NaNs only bounded by their own.
    #[test]
    fn page_statistics_in_total_order() {
        let nan = f64::NAN;
        let neg_nan = f64::from_bits(0xfff8_0000_0000_0000);
        let low_nan = f64::from_bits(0x7ff0_0000_0000_0001);
        type Stats = Option<(f64, f64, u64)>;
        let bits = |m: Stats| m.map(|(a, b, n)| (a.to_bits(), b.to_bits(), n));
        let cases: Vec<(Vec<f64>, Stats)> = vec![
            (vec![], None),
            (vec![0.0, -0.0], Some((-0.0, 0.0, 0))),
            (vec![-0.0; 9], Some((-0.0, -0.0, 0))),
            (vec![0.0; 17], Some((0.0, 0.0, 0))),
            (vec![nan, 1.0, neg_nan, -1.0, f64::INFINITY], Some((-1.0, f64::INFINITY, 2))),
            (vec![f64::NEG_INFINITY, nan, 3.0], Some((f64::NEG_INFINITY, 3.0, 1))),
            (vec![nan; 11], Some((nan, nan, 11))),
            (vec![nan, neg_nan, low_nan], Some((neg_nan, nan, 3))),
            (vec![low_nan, nan], Some((low_nan, nan, 2))),
        ];
        for (v, want) in cases {
            assert_eq!(bits(min_max(&v)), bits(want), "{v:?}");
        }
    }

    /// Columns of floating point numbers written from their values ([`FloatChunk`]) make the
    /// file parquet's own writer makes, byte for byte: across pages and row groups, with nulls,
    /// NaNs of both signs and several payloads, ±0.0, ±infinity, pages and row groups of
    /// nulls only and of NaNs only, values ascending and descending across pages, statistics
    /// per page, per chunk and none.
    #[test]
    fn float_columns_are_written_as_parquets_writer_writes_them() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("wild", DataType::Float64, true),
            Field::new("runs", DataType::Float64, true),
            Field::new("up", DataType::Float64, true),
            Field::new("down", DataType::Float64, false),
        ]));
        let mut next = xorshift(0x6a09_e667_f3bc_c909);
        let specials = [
            f64::NAN,
            f64::from_bits(0xfff8_0000_0000_0000),
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xffff_ffff_ffff_ffff),
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
        ];
        let mut batches = Vec::new();
        let (mut up, mut down) = (-1000.0f64, 1e9f64);
        for (i, &n) in [700usize, 1, 2500, 64, 3000, 0, 1024, 999, 5000, 3, 4096, 1500].iter().enumerate() {
            let wild: Vec<Option<f64>> = (0..n)
                .map(|_| match next() % 8 {
                    0 | 1 => None,
                    2 => Some(specials[(next() % specials.len() as u64) as usize]),
                    3 => Some(f64::from_bits(next())),
                    _ => Some((next() % 100_000) as f64 / 7.0 - 5000.0),
                })
                .collect();
            // Each batch one kind: nulls only, NaNs only, zeros of both signs, or numbers.
            let runs: Vec<Option<f64>> = (0..n)
                .map(|k| match i % 5 {
                    0 => None,
                    1 => Some(if k.is_multiple_of(2) { f64::NAN } else { f64::from_bits(0xfff8_0000_0000_0001) }),
                    2 => (!k.is_multiple_of(3)).then_some(if next().is_multiple_of(2) { 0.0 } else { -0.0 }),
                    3 => (!k.is_multiple_of(7)).then_some((next() % 1000) as f64 * 0.25),
                    _ => Some(if next().is_multiple_of(50) { f64::NAN } else { k as f64 }),
                })
                .collect();
            let ups: Vec<Option<f64>> = (0..n)
                .map(|_| {
                    up += (next() % 1000) as f64 / 1000.0;
                    match next() % 10 {
                        0 => None,
                        1 => Some(f64::NAN),
                        _ => Some(up),
                    }
                })
                .collect();
            let downs: Vec<f64> = (0..n)
                .map(|_| {
                    down -= (next() % 1000) as f64;
                    if next().is_multiple_of(97) { f64::NAN } else { down }
                })
                .collect();
            let cols: Vec<ArrayRef> = vec![
                Arc::new(Float64Array::from(wild)),
                Arc::new(Float64Array::from(runs)),
                Arc::new(Float64Array::from(ups)),
                Arc::new(Float64Array::from(downs)),
            ];
            batches.push(RecordBatch::try_new(schema.clone(), cols).unwrap());
        }
        let settings: Vec<(usize, usize, usize, EnabledStatistics)> = vec![
            // (row group rows, page row limit, write batch size, statistics)
            (usize::MAX, 20_000, 1024, EnabledStatistics::Page),
            (4000, 1000, 300, EnabledStatistics::Page),
            (700, 256, 1024, EnabledStatistics::Page),
            (2048, 700, 1024, EnabledStatistics::Chunk),
            (1500, 256, 64, EnabledStatistics::None),
            (5000, 3, 2, EnabledStatistics::Page),
        ];
        let columns = |mut props: WriterPropertiesBuilder| {
            for f in schema.fields() {
                props = props.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), false);
            }
            props
        };
        written_as_parquet_writes("float", &schema, &batches, &settings, columns, 4);
    }

    /// A float column written otherwise (with a dictionary, another encoding) is left to
    /// parquet's writer.
    #[test]
    fn other_settings_are_left_to_parquet() {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, true)]));
        let descr = parquet::arrow::ArrowSchemaConverter::new().convert(&schema).unwrap().column(0);
        let col = || ColumnPath::from("x");
        let plain = || WriterProperties::builder().set_column_dictionary_enabled(col(), false);
        assert!(FloatChunk::new(descr.clone(), &plain().build()).is_some());
        assert!(FloatChunk::new(descr.clone(), &WriterProperties::builder().build()).is_none());
        let split = plain().set_column_encoding(col(), parquet::basic::Encoding::BYTE_STREAM_SPLIT).build();
        assert!(FloatChunk::new(descr.clone(), &split).is_none());
        assert!(FloatChunk::new(descr, &plain().set_data_page_size_limit(100_000).build()).is_none());
    }
}

//! tcpscope's results as Arrow record batches: the tables `connections`, `events`, `segments`
//! and `rtt`, their schema made from core's field lists ([`tcpscope_core::table`]), written as
//! Parquet, Arrow IPC or CSV files as rows come, or kept in memory (the Python package).
//! Schema and meanings: `docs/json.md#arrow-and-parquet`.
//!
//! A crate of its own: arrow and parquet take minutes to compile, and only the export front
//! ends need them.

mod chunk;
pub mod columns;
mod delta;
mod dict;
pub mod out;
mod plain;
pub mod series;
pub mod tables;

pub use out::{Codec, Collect, FileOut, Format, OnThread, Out};
pub use tables::{BATCH_ROWS, Dest, Report, TableName, export};

//! tcpscope's engine.
//!
//! One streaming pass over a trace (see `DESIGN.md`):
//!
//! ```text
//! capture ─► decode ─► flow ─► analysis ─► events + per-connection state ─► stats / export
//! ```
//!
//! - [`capture`] reads pcap and pcapng files (plain, gzip, zstd) into timestamped records.
//! - [`decode`] turns a record into a TCP [`decode::Segment`].
//! - [`flow`] finds the connection and direction of a segment.
//! - [`analysis`] runs the per-direction sender/receiver state machines and emits
//!   [`analysis::Event`]s to a sink.
//! - [`stats`] folds events into per-connection, per-direction statistics.
//! - [`series`] folds segments and events into plot series; [`plot`] turns them into drawing
//!   primitives and renders them as SVG or xplot.
//! - [`screen`] classifies out-of-sequence segments, finds what limited each connection and
//!   says what is wrong with it.
//! - [`quality`] says what the capture got wrong (frames twice, time backwards, offload).
//! - [`pass`] drives all of this over one file, or several merged in time order.
//! - [`export`] writes the results as JSON and CSV.
//! - [`correlate`] pairs the captures of the same connections taken at several points.
#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod analysis;
pub mod capture;
pub mod conn;
pub mod correlate;
pub mod decode;
pub mod event;
pub mod export;
pub mod flow;
mod hint;
pub mod pass;
pub mod plot;
pub mod quality;
pub mod screen;
pub mod seq;
pub mod series;
pub mod sink;
pub mod stats;
pub mod summary;
pub mod table;
#[doc(hidden)]
pub mod testutil;
pub mod vantage;

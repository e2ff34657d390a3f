//! Series: drawing-independent data for plots, folded from the analysis' segments and events.
//!
//! A series sink implements [`crate::analysis::Sink`] and keeps only what one plot needs, in
//! plot units (times relative to the connection's first packet, sequence numbers as the
//! analysis' offsets: the first payload byte is 0). It never sees packets. The
//! [`crate::plot`] module turns a series into drawing primitives.
//!
//! - [`rtt::RttSink`] collects the RTT samples of one connection and direction.
//! - [`tsg::TsgSink`] collects the time-sequence series of one connection and direction
//!   ([`tsg::Tsg`]): data segments, the ack and window lines from the returning packets, SACK
//!   blocks and notable flags.
//!
//! ```
//! use tcpscope_core::analysis::{Dir, Settings};
//! use tcpscope_core::capture::CaptureReader;
//! use tcpscope_core::pass::Analyzer;
//! use tcpscope_core::series::tsg::TsgSink;
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap");
//! let mut reader = CaptureReader::open(path.as_ref()).unwrap();
//! let mut an = Analyzer::new(Settings::default(), TsgSink::new(0, Dir::AtoB));
//! while let Ok(Some(rec)) = reader.next_record() {
//!     an.record(&rec);
//! }
//! let tsg = an.sink.finish().expect("connection 1 exists");
//! assert_eq!(tsg.segments.iter().filter(|s| s.len > 0).count(), 737);
//! ```

pub mod rtt;
pub mod tsg;

/// Runs the analysis over a file with `sink` and returns the sink, with the error that ended
/// reading early, if any (the sink holds everything read before it).
pub fn run_file<S: crate::analysis::Sink>(
    path: &std::path::Path,
    settings: crate::analysis::Settings,
    sink: S,
) -> Result<(S, Option<crate::capture::CaptureError>), crate::capture::CaptureError> {
    let mut reader = crate::capture::CaptureReader::open(path)?;
    let mut an = crate::pass::Analyzer::new(settings, sink);
    let mut sum = crate::pass::FileSummary::default();
    let err = crate::pass::read_segments(&mut reader, &mut sum, &|_| {}, |seg, frame, ts_ns| {
        an.segment(seg, frame, ts_ns);
        true
    });
    Ok((an.sink, err))
}

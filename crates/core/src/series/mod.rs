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
//! - [`tput::TputSink`] the data packets of one direction, with their throughput and goodput
//!   (instantaneous rates and moving averages).
//! - [`flight::FlightSink`] bytes in flight, the peer's advertised window and a per-round
//!   estimate of the congestion window.
//! - [`ssize::SsizeSink`] the size of every data segment.
//! - [`burst::BurstSink`] the sender's burstiness (the thesis, ch. 4): every data packet's
//!   instantaneous rate, with the distribution of bytes over rates and its integral.
//! - [`dupack::DupackSink`] duplicate ACKs and retransmissions of one direction's data.
//!
//! Every series struct is plain data (`Vec`s of `Copy` points) with the connection, the
//! direction, the endpoints and the time of the last packet. [`from_file`]`::<SomeSink>` runs one
//! pass over a capture for one series; to fill several series in one pass, combine sinks in a tuple
//! (`(TputSink, (RttSink, FlightSink))` is a [`crate::analysis::Sink`]).
//!
//! ```
//! use tcpscope_core::analysis::{Dir, Settings};
//! use tcpscope_core::series::{self, tsg::TsgSink};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap");
//! let (tsg, summary) = series::from_file::<TsgSink>(path.as_ref(), 0, Dir::AtoB, Settings::default()).unwrap();
//! assert!(summary.error.is_none());
//! let tsg = tsg.expect("connection 1 exists");
//! assert_eq!(tsg.segments.iter().filter(|s| s.len > 0).count(), 737);
//! ```
//!
//! `reserve(own, other)` on the bigger sinks (tsg, tput, flight) makes room for a connection's
//! packets up front when the caller knows their number (the viewer does, from its statistics
//! pass): on its pass over a five-million-packet connection, 40 % of the time was the kernel
//! zeroing fresh pages for vectors that grew by doubling (each growth touches a new buffer and
//! copies the old one into it). Room reserved and never written is not memory used: the pages of
//! a large allocation are backed only once written.

pub mod ack;
pub mod burst;
pub mod dupack;
pub mod flight;
pub mod ladder;
pub mod mipmap;
pub mod rtt;
pub mod ssize;
pub mod states;
pub mod tput;
pub mod tsg;

use crate::analysis::{ConnIdx, Dir, SegmentInfo, Sink};
use crate::flow::ConnInfo;

/// What every series sink tracks: which connection and direction, its endpoints, and the clock
/// (time 0 is the connection's first packet, either direction).
#[derive(Clone, Debug)]
pub(crate) struct Base {
    pub conn: ConnIdx,
    pub dir: Dir,
    pub info: Option<ConnInfo>,
    t0: Option<u64>,
    pub last_ns: u64,
}

impl Base {
    pub fn new(conn: ConnIdx, dir: Dir) -> Self {
        Base { conn, dir, info: None, t0: None, last_ns: 0 }
    }
    pub fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        if conn == self.conn {
            self.info = Some(*info);
        }
    }
    /// Time since the connection's first packet. Events come before their packet's
    /// [`SegmentInfo`], so the first call (event or segment) may set time 0.
    pub fn rel(&mut self, ts_ns: u64) -> u64 {
        ts_ns.saturating_sub(*self.t0.get_or_insert(ts_ns))
    }
    /// A segment of this connection (either direction): returns its relative time.
    pub fn segment(&mut self, s: &SegmentInfo) -> u64 {
        let t = self.rel(s.at.ts_ns);
        self.last_ns = self.last_ns.max(t);
        t
    }
}

/// What a plot's limits are resolved against: when connection `conn`'s first and last packets
/// were seen, the sequence base (the wire number of offset 0) of each direction, and the payload
/// bytes each direction sent (which one carries the data). A sink to run beside a series sink,
/// so that one pass gives both.
pub struct Origin {
    conn: ConnIdx,
    /// Time of the connection's first packet (either direction), ns since the epoch.
    pub t0: Option<u64>,
    /// Time of its latest packet (either direction), ns since the epoch: the last, unless time
    /// goes back (never before `t0`).
    pub t_last: Option<u64>,
    /// The wire sequence number of offset 0 in each direction (by [`Dir`] index), once a
    /// segment of it was seen.
    pub bases: [Option<crate::seq::SeqNum>; 2],
    /// Payload bytes sent in each direction (by [`Dir`] index), retransmissions included.
    pub payload_bytes: [u64; 2],
}

impl Origin {
    /// For connection `conn` (0-based).
    pub fn new(conn: ConnIdx) -> Self {
        Origin { conn, t0: None, t_last: None, bases: [None; 2], payload_bytes: [0; 2] }
    }

    /// The wire sequence number of offset 0 in `dir`.
    pub fn base(&self, dir: Dir) -> Option<crate::seq::SeqNum> {
        self.bases[dir as usize]
    }

    /// The direction that sent the most payload bytes (a→b on a tie): the one a plot shows
    /// unless told otherwise. On a download that is b→a, not the request.
    pub fn busier(&self) -> Dir {
        if self.payload_bytes[Dir::BtoA as usize] > self.payload_bytes[Dir::AtoB as usize] {
            Dir::BtoA
        } else {
            Dir::AtoB
        }
    }
}

impl Sink for Origin {
    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn != self.conn {
            return;
        }
        self.t0.get_or_insert(s.at.ts_ns);
        self.t_last = Some(self.t_last.map_or(s.at.ts_ns, |t| t.max(s.at.ts_ns)));
        let d = s.at.dir as usize;
        self.payload_bytes[d] += u64::from(s.len);
        self.bases[d].get_or_insert(s.seq_base());
    }
}

/// Feeds hand-built packets (frames numbered from 1) to `sink`.
#[cfg(test)]
pub(crate) fn run_pkts<S: Sink>(pkts: &[crate::testutil::Pkt], settings: crate::analysis::Settings, sink: S) -> S {
    let mut an = crate::pass::Analyzer::new(settings, sink);
    for (i, p) in pkts.iter().enumerate() {
        let (data, orig) = p.ipv4();
        an.record(&crate::capture::Record {
            ts_ns: p.ts_ns,
            data: &data,
            orig_len: orig,
            link_type: 101,
            frame: i as u64 + 1,
            offset: 0,
        });
    }
    an.sink
}

/// A sink that collects the series of one connection and direction.
pub trait OneConnection: Sink + Sized {
    /// The series it yields.
    type Series;
    /// A sink for connection `conn` (0-based), direction `dir`.
    fn for_conn(conn: ConnIdx, dir: Dir) -> Self;
    /// The series, `None` if the connection never appeared.
    fn into_series(self) -> Option<Self::Series>;
}

macro_rules! one_connection {
    ($sink:ty, $series:ty) => {
        impl OneConnection for $sink {
            type Series = $series;
            fn for_conn(conn: ConnIdx, dir: Dir) -> Self {
                <$sink>::new(conn, dir)
            }
            fn into_series(self) -> Option<$series> {
                self.finish()
            }
        }
    };
}
one_connection!(ack::AckSink, ack::AckSeries);
one_connection!(burst::BurstSink, burst::BurstSeries);
one_connection!(dupack::DupackSink, dupack::DupackSeries);
one_connection!(flight::FlightSink, flight::FlightSeries);
one_connection!(rtt::RttSink, rtt::RttSeries);
one_connection!(ssize::SsizeSink, ssize::SsizeSeries);
one_connection!(tput::TputSink, tput::TputSeries);
one_connection!(tsg::TsgSink, tsg::Tsg);

/// Runs one pass over the capture (or ring directory) at `path` and returns the series `S`
/// collects for connection `conn` (0-based), direction `dir` (`None` if there is no such
/// connection), with the file's summary (its error, if reading ended early).
pub fn from_file<S: OneConnection + Send>(
    path: &std::path::Path,
    conn: ConnIdx,
    dir: Dir,
    settings: crate::analysis::Settings,
) -> Result<(Option<S::Series>, crate::pass::FileSummary), String> {
    let (sink, summary) = run_file(path, settings, S::for_conn(conn, dir))?;
    Ok((sink.into_series(), summary))
}

/// Runs the analysis over a file (or a ring directory, as one trace) with `sink` and returns the
/// sink with a summary of what was read (its error, if reading ended early: the sink holds
/// everything read before it). An input that cannot be opened at all is an error.
pub fn run_file<S: Sink + Send>(
    path: &std::path::Path,
    settings: crate::analysis::Settings,
    sink: S,
) -> Result<(S, crate::pass::FileSummary), String> {
    let query = crate::pass::Query::new(vec![path.to_path_buf()]).settings(settings);
    let (sink, files, trace) = query.run_one(sink, &|_, _| {}).map_err(|e| e.to_string())?;
    if let Some(e) = trace.error {
        return Err(e);
    }
    let summary = crate::pass::FileSummary::sum(path, &files);
    if summary.unopened() && !path.is_dir() {
        return Err(summary.error.unwrap_or_default());
    }
    Ok((sink, summary))
}

/// Endpoints for series built by hand in tests.
#[cfg(test)]
pub(crate) fn test_info() -> ConnInfo {
    use crate::flow::Endpoint;
    let ep = |last: u8, port: u16| Endpoint { addr: std::net::IpAddr::from([10, 0, 0, last]), port };
    ConnInfo { a: ep(1, 40000), b: ep(2, 80), file: 0, reuse: None }
}

impl OneConnection for states::StatesSink {
    type Series = states::States;
    /// Both endpoints' states: the direction is not used.
    fn for_conn(conn: ConnIdx, _dir: Dir) -> Self {
        states::StatesSink::new(conn)
    }
    fn into_series(self) -> Option<states::States> {
        self.finish()
    }
}

impl OneConnection for ladder::LadderSink {
    type Series = ladder::Ladder;
    /// Both directions: the direction is not used.
    fn for_conn(conn: ConnIdx, _dir: Dir) -> Self {
        ladder::LadderSink::new(conn)
    }
    fn into_series(self) -> Option<ladder::Ladder> {
        self.finish()
    }
}

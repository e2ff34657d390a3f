//! The RTT series of one connection and direction: every RTT sample of that direction's data,
//! Karn-valid and timestamp-echo ones kept apart (definitions: `docs/statistics.md`).

use crate::analysis::{At, ConnIdx, Dir, Event, RttKind, SegmentInfo, Sink};
use crate::flow::ConnInfo;

/// One sample, placed at the time of the acknowledging packet.
#[derive(Clone, Copy, Debug)]
pub struct RttPoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// Round-trip time, ns.
    pub rtt_ns: u64,
    /// Karn or timestamp echo.
    pub kind: RttKind,
    /// Frame of the acknowledging packet.
    pub frame: u64,
}

/// The samples of one connection and direction.
#[derive(Clone, Debug)]
pub struct RttSeries {
    /// Connection index (id − 1).
    pub conn: ConnIdx,
    /// Direction whose data was timed.
    pub dir: Dir,
    /// Endpoints.
    pub info: ConnInfo,
    /// Time of the connection's last packet, since its first, ns.
    pub last_ns: u64,
    /// Samples in trace order.
    pub points: Vec<RttPoint>,
}

/// Collects the [`RttSeries`] of connection `conn`, direction `dir`.
pub struct RttSink {
    conn: ConnIdx,
    dir: Dir,
    info: Option<ConnInfo>,
    first_ns: Option<u64>,
    last_ns: u64,
    points: Vec<RttPoint>,
}

impl RttSink {
    /// A sink for one connection and direction.
    pub fn new(conn: ConnIdx, dir: Dir) -> Self {
        RttSink { conn, dir, info: None, first_ns: None, last_ns: 0, points: Vec::new() }
    }

    /// The series, `None` if the connection never appeared.
    pub fn finish(self) -> Option<RttSeries> {
        let info = self.info?;
        Some(RttSeries { conn: self.conn, dir: self.dir, info, last_ns: self.last_ns, points: self.points })
    }
}

impl Sink for RttSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        if conn == self.conn {
            self.info = Some(*info);
        }
    }

    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn == self.conn {
            let first = *self.first_ns.get_or_insert(s.at.ts_ns);
            self.last_ns = s.at.ts_ns.saturating_sub(first);
        }
    }

    fn event(&mut self, at: &At, ev: &Event) {
        if at.conn != self.conn || at.dir != self.dir {
            return;
        }
        if let Event::RttSample { rtt_ns, kind, .. } = *ev {
            // Events come before their packet's SegmentInfo: the first packet cannot carry a
            // sample, so the connection's start is known here.
            let t_ns = self.first_ns.map_or(0, |f| at.ts_ns.saturating_sub(f));
            self.points.push(RttPoint { t_ns, rtt_ns, kind, frame: at.frame });
        }
    }
}

//! Segment size over time: the payload of every data packet of one direction, with its kind
//! (new, retransmission, out-of-order, probe) and the MSS the peer announced.

use crate::analysis::{At, ConnIdx, Dir, Event, SegmentInfo, Sink};
use crate::flow::ConnInfo;
use crate::series::tsg::SegKind;

/// One data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizePoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number.
    pub frame: u64,
    /// Payload bytes.
    pub len: u32,
    /// Classification, as on the time-sequence plot.
    pub kind: SegKind,
}

/// The segment sizes of one connection and direction.
#[derive(Clone, Debug)]
pub struct SsizeSeries {
    /// Connection index (id − 1).
    pub conn: ConnIdx,
    /// Direction whose data is shown.
    pub dir: Dir,
    /// Endpoints.
    pub info: ConnInfo,
    /// Time of the connection's last packet, since its first, ns.
    pub last_ns: u64,
    /// The MSS option of the *receiving* side's SYN: the largest segment this direction may send.
    pub peer_mss: Option<u16>,
    /// Data packets in trace order.
    pub points: Vec<SizePoint>,
}

/// Collects the [`SsizeSeries`] of connection `conn`, direction `dir`.
pub struct SsizeSink {
    base: super::Base,
    pending: Vec<(At, Event)>,
    peer_mss: Option<u16>,
    points: Vec<SizePoint>,
}

impl SsizeSink {
    /// A sink for one connection and direction.
    pub fn new(conn: ConnIdx, dir: Dir) -> Self {
        SsizeSink { base: super::Base::new(conn, dir), pending: Vec::new(), peer_mss: None, points: Vec::new() }
    }

    /// The series, `None` if the connection never appeared.
    pub fn finish(self) -> Option<SsizeSeries> {
        let b = self.base;
        Some(SsizeSeries {
            conn: b.conn,
            dir: b.dir,
            info: b.info?,
            last_ns: b.last_ns,
            peer_mss: self.peer_mss,
            points: self.points,
        })
    }
}

impl Sink for SsizeSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.base.connection(conn, info);
    }
    fn event(&mut self, at: &At, ev: &Event) {
        if at.conn == self.base.conn {
            self.base.rel(at.ts_ns);
            self.pending.push((*at, *ev));
        }
    }
    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn != self.base.conn {
            return;
        }
        let t_ns = self.base.segment(s);
        if s.at.dir == self.base.dir {
            if s.len > 0 {
                let (kind, _) = super::tsg::classify(&self.pending, s.at.dir);
                self.points.push(SizePoint { t_ns, frame: s.at.frame, len: s.len, kind });
            }
        } else if s.flags.syn() && s.mss.is_some() {
            self.peer_mss = s.mss;
        }
        self.pending.clear();
    }
}

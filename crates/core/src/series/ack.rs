//! The ACK-delay series of one connection and direction: every acknowledgment of that
//! direction's data whose delay was measured (the receiver's delay, the capture point's
//! half-loop taken off: `docs/statistics.md`, *Acknowledgment strategy*), with its class.

use crate::analysis::{At, ConnIdx, Dir, Event, SegmentInfo, Sink};
use crate::event::AckKind;
use crate::flow::ConnInfo;

/// One acknowledgment, placed at the time of the acknowledging packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckPoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// The receiver's delay, ns.
    pub delay_ns: u64,
    /// Its class.
    pub kind: AckKind,
    /// Frame of the acknowledging packet.
    pub frame: u64,
}

/// The ACK delays of one connection and direction.
#[derive(Clone, Debug)]
pub struct AckSeries {
    /// Connection index (id − 1).
    pub conn: ConnIdx,
    /// Direction whose data was acknowledged.
    pub dir: Dir,
    /// Endpoints.
    pub info: ConnInfo,
    /// Time of the connection's last packet, since its first, ns.
    pub last_ns: u64,
    /// The half-loop taken off every delay (ns), once measured.
    pub loop_ns: Option<u64>,
    /// Acknowledgments in trace order.
    pub points: Vec<AckPoint>,
}

/// Collects the [`AckSeries`] of connection `conn`, direction `dir`.
pub struct AckSink {
    base: super::Base,
    loop_ns: Option<u64>,
    points: Vec<AckPoint>,
}

impl AckSink {
    /// A sink for one connection and direction (the data's).
    pub fn new(conn: ConnIdx, dir: Dir) -> Self {
        AckSink { base: super::Base::new(conn, dir), loop_ns: None, points: Vec::new() }
    }

    /// The series, `None` if the connection never appeared.
    pub fn finish(self) -> Option<AckSeries> {
        let b = self.base;
        Some(AckSeries {
            conn: b.conn,
            dir: b.dir,
            info: b.info?,
            last_ns: b.last_ns,
            loop_ns: self.loop_ns,
            points: self.points,
        })
    }
}

impl Sink for AckSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.base.connection(conn, info);
    }
    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn == self.base.conn {
            self.base.segment(s);
        }
    }
    fn event(&mut self, at: &At, ev: &Event) {
        // The event's direction is the data's; its time and frame are the ACK's.
        if let Event::AckAdvance { ack, .. } = ev
            && at.conn == self.base.conn
            && at.dir == self.base.dir
        {
            let t_ns = self.base.rel(at.ts_ns);
            if let Some(l) = ack.half_loop() {
                self.loop_ns = Some(l);
            }
            if let Some(delay_ns) = ack.delay() {
                self.points.push(AckPoint { t_ns, delay_ns, kind: ack.kind, frame: at.frame });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{flag::*, scripted};

    /// A request answered after 40 ms by a pure ACK, then one answered at once: a delayed and
    /// a quick point, each at its ACK's time, with the half-loop (the quickest) taken off.
    #[test]
    fn a_delayed_and_a_quick_ack() {
        let pkts = [
            scripted(true, 0.0, SYN, 0, 0, 0, 65535, vec![]),
            scripted(false, 0.1, SYN | ACK, 0, 0, 0, 65535, vec![]),
            scripted(true, 0.2, ACK, 0, 0, 0, 65535, vec![]),
            scripted(true, 10.0, ACK | PSH, 0, 0, 100, 65535, vec![]),
            scripted(false, 50.1, ACK, 0, 100, 0, 65535, vec![]),
            scripted(true, 60.0, ACK | PSH, 100, 0, 100, 65535, vec![]),
            scripted(false, 60.1, ACK, 0, 200, 0, 65535, vec![]),
        ];
        let s = crate::series::run_pkts(&pkts, Default::default(), AckSink::new(0, Dir::AtoB)).finish().unwrap();
        let got: Vec<(u64, AckKind)> = s.points.iter().map(|p| ((p.delay_ns + 500) / 1000, p.kind)).collect();
        // Times in ms: the SYN's answer took 0.1 ms, the half-loop.
        assert_eq!(got, [(40_000, AckKind::Delayed), (0, AckKind::Quick)]);
        assert!(s.loop_ns.unwrap().abs_diff(100_000) <= 1, "{:?}", s.loop_ns);
    }
}

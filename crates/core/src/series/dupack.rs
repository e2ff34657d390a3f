//! Duplicate ACKs and retransmissions on one time axis (seed 004, figure 9): the duplicate ACKs
//! the *receiver* of one direction's data sent, and the retransmissions of that data.
//!
//! Duplicate ACKs follow Wireshark's rule, as `dup_acks` in the statistics (`docs/statistics.md`):
//! an ACK that repeats the previous ack with no data, no window change, no SYN/FIN/RST. A
//! retransmission is a packet carrying sequence bytes already seen (tcptrace's rule,
//! `rexmit_segs`).

use crate::analysis::{At, ConnIdx, Dir, Event, SegmentInfo, Sink};
use crate::flow::ConnInfo;

/// One duplicate ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DupAckPoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number.
    pub frame: u64,
    /// The repeated ack, in the data's sequence space.
    pub ack_off: i64,
    /// Which duplicate of that ack (1 = first, 3 = the "triple").
    pub n: u32,
}

/// One retransmitted packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RexmitPoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number.
    pub frame: u64,
    /// Offset of its first sequence number.
    pub seq_off: i64,
    /// Retransmitted payload bytes.
    pub bytes: u32,
}

/// Duplicate ACKs against one direction's data, and that data's retransmissions.
#[derive(Clone, Debug)]
pub struct DupackSeries {
    /// Connection index (id − 1).
    pub conn: ConnIdx,
    /// Direction of the data (the duplicate ACKs come from the other one).
    pub dir: Dir,
    /// Endpoints.
    pub info: ConnInfo,
    /// Time of the connection's last packet, since its first, ns.
    pub last_ns: u64,
    /// Duplicate ACKs, in trace order.
    pub dupacks: Vec<DupAckPoint>,
    /// Retransmissions, in trace order.
    pub rexmits: Vec<RexmitPoint>,
}

impl DupackSeries {
    /// Counts per interval of `interval_ns` from time 0: `(duplicate ACKs, retransmissions)` of
    /// each interval, up to the last packet.
    pub fn per_interval(&self, interval_ns: u64) -> Vec<(u32, u32)> {
        let w = interval_ns.max(1);
        let mut v = vec![(0u32, 0u32); (self.last_ns / w) as usize + 1];
        for d in &self.dupacks {
            v[(d.t_ns / w) as usize].0 += 1;
        }
        for r in &self.rexmits {
            v[(r.t_ns / w) as usize].1 += 1;
        }
        v
    }
}

/// Collects the [`DupackSeries`] of connection `conn`, data direction `dir`.
pub struct DupackSink {
    base: super::Base,
    dupacks: Vec<DupAckPoint>,
    rexmits: Vec<RexmitPoint>,
}

impl DupackSink {
    /// A sink for one connection and data direction.
    pub fn new(conn: ConnIdx, dir: Dir) -> Self {
        DupackSink { base: super::Base::new(conn, dir), dupacks: Vec::new(), rexmits: Vec::new() }
    }

    /// The series, `None` if the connection never appeared.
    pub fn finish(self) -> Option<DupackSeries> {
        let b = self.base;
        Some(DupackSeries {
            conn: b.conn,
            dir: b.dir,
            info: b.info?,
            last_ns: b.last_ns,
            dupacks: self.dupacks,
            rexmits: self.rexmits,
        })
    }
}

impl Sink for DupackSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.base.connection(conn, info);
    }
    fn event(&mut self, at: &At, ev: &Event) {
        if at.conn != self.base.conn {
            return;
        }
        let t_ns = self.base.rel(at.ts_ns);
        self.base.last_ns = self.base.last_ns.max(t_ns);
        match *ev {
            // A duplicate ACK's direction is the ACK's: against our data it comes from the peer.
            Event::DupAck { n, ack_off } if at.dir != self.base.dir => {
                self.dupacks.push(DupAckPoint { t_ns, frame: at.frame, ack_off: ack_off.0, n })
            }
            Event::Retransmission { seq_off, bytes, .. } if at.dir == self.base.dir => {
                self.rexmits.push(RexmitPoint { t_ns, frame: at.frame, seq_off: seq_off.0, bytes })
            }
            _ => {}
        }
    }
    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn == self.base.conn {
            self.base.segment(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Settings;

    /// The recorded loss scenario: the series holds exactly the duplicate ACKs and
    /// retransmissions the statistics count.
    #[test]
    fn loss_trace_counts_match_the_statistics() {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap"));
        let (s, err) = crate::series::from_file::<DupackSink>(path, 0, Dir::AtoB, Settings::default()).unwrap();
        assert!(err.error.is_none());
        let s = s.unwrap();
        let stats = crate::pass::Query::new(vec![path.into()]).stats(&|_, _| {}).unwrap();
        let d = &stats.conns[0].dirs();
        assert_eq!(s.rexmits.len() as u64, d[0].rexmit_packets);
        assert_eq!(s.dupacks.len() as u64, d[1].rare().dup_acks);
        assert!(!s.rexmits.is_empty() && !s.dupacks.is_empty());
        let per: (u32, u32) = s.per_interval(10_000_000).iter().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        assert_eq!((per.0 as usize, per.1 as usize), (s.dupacks.len(), s.rexmits.len()));
    }
}

//! Throughput and goodput of one direction over time.
//!
//! Throughput counts every payload byte sent (retransmissions included), goodput only bytes
//! not sent before ([`SegmentInfo::new_bytes`], tcptrace's "unique bytes"). Both are in bits per
//! second.
//!
//! - [`TputSeries::instantaneous`]: per data packet, its bits over the time since the previous
//!   data packet of the direction (tcptrace's yellow dots). A gap below 1 µs (the resolution of
//!   most captures) counts as 1 µs, so back-to-back packets get a large but finite rate.
//! - [`TputSeries::moving_average`]: bits sent in the last `window` seconds divided by the
//!   window, evaluated at every change (each packet entering and leaving the window), so idle
//!   periods fall to zero exactly when the last packet leaves the window.

use crate::analysis::{At, ConnIdx, Dir, Event, SegmentInfo, Sink};
use crate::flow::ConnInfo;

/// Shortest gap between packets used for a rate, ns.
pub const MIN_GAP_NS: u64 = 1_000;

/// One data packet (payload > 0) of the direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataPoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number.
    pub frame: u64,
    /// Payload bytes.
    pub bytes: u32,
    /// Payload bytes not sent before (goodput).
    pub new_bytes: u32,
    /// Whether it carried sequence bytes seen before ([`SegmentInfo::is_rexmit`]). A
    /// zero-window probe's byte is neither new nor retransmitted.
    pub rexmit: bool,
}

/// A rate at a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatePoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// Bits per second.
    pub bps: f64,
    /// Frame of the packet the value belongs to (for a moving average: the packet that entered
    /// or left the window).
    pub frame: u64,
}

/// The data packets of one connection and direction.
#[derive(Clone, Debug)]
pub struct TputSeries {
    /// Connection index (id − 1).
    pub conn: ConnIdx,
    /// Direction whose data is counted.
    pub dir: Dir,
    /// Endpoints.
    pub info: ConnInfo,
    /// Time of the connection's last packet, since its first, ns.
    pub last_ns: u64,
    /// Data packets in trace order.
    pub points: Vec<DataPoint>,
    /// The lowest RTT sample of the direction's data (either kind), ns: what the plot's
    /// default moving-average window is chosen from (`None`: no sample).
    pub rtt_min_ns: Option<u64>,
}

/// Which bytes a rate counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bytes {
    /// All payload bytes (throughput).
    All,
    /// Bytes not sent before (goodput).
    New,
}

impl Bytes {
    fn of(self, p: &DataPoint) -> u64 {
        match self {
            Bytes::All => p.bytes as u64,
            Bytes::New => p.new_bytes as u64,
        }
    }
}

impl TputSeries {
    /// Per data packet after the first: its bits over the time since the previous data packet
    /// (at least [`MIN_GAP_NS`]).
    pub fn instantaneous(&self, which: Bytes) -> Vec<RatePoint> {
        self.points
            .windows(2)
            .map(|w| {
                let gap = w[1].t_ns.saturating_sub(w[0].t_ns).max(MIN_GAP_NS);
                RatePoint { t_ns: w[1].t_ns, bps: which.of(&w[1]) as f64 * 8.0 * 1e9 / gap as f64, frame: w[1].frame }
            })
            .collect()
    }

    /// Bits sent in `(t − window, t]` divided by the window, at every time the value changes:
    /// when a packet is sent and when it leaves the window. A step function; the value holds
    /// until the next point. `window_ns` 0 is treated as 1 ns.
    pub fn moving_average(&self, which: Bytes, window_ns: u64) -> Vec<RatePoint> {
        let w = window_ns.max(1);
        let pts = &self.points;
        let mut out = Vec::with_capacity(pts.len() * 2);
        let (mut enter, mut leave) = (0usize, 0usize);
        let mut sum: u64 = 0;
        while enter < pts.len() || leave < enter {
            // Next change: a packet entering at its time, or one leaving at its time + window.
            let t_in = pts.get(enter).map(|p| p.t_ns);
            let t_out = (leave < enter).then(|| pts[leave].t_ns + w);
            let (t, frame) = match (t_in, t_out) {
                (Some(a), Some(b)) if b <= a => (b, pts[leave].frame),
                (Some(a), _) => (a, pts[enter].frame),
                (None, Some(b)) => (b, pts[leave].frame),
                (None, None) => break,
            };
            while leave < enter && pts[leave].t_ns + w <= t {
                sum -= which.of(&pts[leave]);
                leave += 1;
            }
            while enter < pts.len() && pts[enter].t_ns == t {
                sum += which.of(&pts[enter]);
                enter += 1;
            }
            let bps = sum as f64 * 8.0 * 1e9 / w as f64;
            match out.last_mut() {
                Some(RatePoint { t_ns, bps: b, frame: f }) if *t_ns == t => (*b, *f) = (bps, frame),
                _ => out.push(RatePoint { t_ns: t, bps, frame }),
            }
        }
        out
    }

    /// Average over the data: bits of all data packets over the time from the first data packet
    /// to the last (`None` with fewer than two data packets or no time between them).
    pub fn average_bps(&self, which: Bytes) -> Option<f64> {
        let (first, last) = (self.points.first()?, self.points.last()?);
        let span = last.t_ns.checked_sub(first.t_ns).filter(|&d| d > 0)?;
        let bits: u64 = self.points.iter().map(|p| which.of(p)).sum::<u64>() * 8;
        Some(bits as f64 * 1e9 / span as f64)
    }
}

/// Collects the [`TputSeries`] of connection `conn`, direction `dir`.
pub struct TputSink {
    base: super::Base,
    points: Vec<DataPoint>,
    rtt_min_ns: Option<u64>,
}

impl TputSink {
    /// A sink for one connection and direction.
    pub fn new(conn: ConnIdx, dir: Dir) -> Self {
        TputSink { base: super::Base::new(conn, dir), points: Vec::new(), rtt_min_ns: None }
    }

    /// Room for `own` packets of its direction and `other` of the returning one (module doc).
    pub fn reserve(mut self, own: usize, _other: usize) -> Self {
        self.points.reserve(own);
        self
    }

    /// The series, `None` if the connection never appeared.
    pub fn finish(self) -> Option<TputSeries> {
        let b = self.base;
        Some(TputSeries {
            conn: b.conn,
            dir: b.dir,
            info: b.info?,
            last_ns: b.last_ns,
            points: self.points,
            rtt_min_ns: self.rtt_min_ns,
        })
    }
}

impl Sink for TputSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.base.connection(conn, info);
    }
    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn != self.base.conn {
            return;
        }
        let t_ns = self.base.segment(s);
        if s.at.dir == self.base.dir && s.len > 0 {
            self.points.push(DataPoint {
                t_ns,
                frame: s.at.frame,
                bytes: s.len,
                new_bytes: s.new_bytes,
                rexmit: s.is_rexmit,
            });
        }
    }
    fn event(&mut self, at: &At, ev: &Event) {
        if at.conn == self.base.conn {
            self.base.rel(at.ts_ns);
            // RTT samples carry the direction of the data they time.
            if let Event::RttSample { rtt_ns, .. } = ev
                && at.dir == self.base.dir
            {
                self.rtt_min_ns = Some(self.rtt_min_ns.map_or(*rtt_ns, |m| m.min(*rtt_ns)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(pts: &[(u64, u32, u32)]) -> TputSeries {
        let info = crate::series::test_info();
        TputSeries {
            conn: 0,
            dir: Dir::AtoB,
            info,
            last_ns: pts.last().map_or(0, |p| p.0),
            rtt_min_ns: None,
            points: pts
                .iter()
                .enumerate()
                .map(|(i, &(t_ns, bytes, new_bytes))| DataPoint {
                    t_ns,
                    frame: i as u64 + 1,
                    bytes,
                    new_bytes,
                    rexmit: new_bytes < bytes,
                })
                .collect(),
        }
    }

    #[test]
    fn instantaneous_rate_is_bits_over_the_gap_to_the_previous_data_packet() {
        let s = series(&[(0, 1000, 1000), (1_000_000, 1000, 1000), (1_000_000, 500, 0)]);
        let r = s.instantaneous(Bytes::All);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].bps, 8000.0 / 1e-3);
        // Same timestamp: the gap counts as 1 µs.
        assert_eq!(r[1].bps, 4000.0 / 1e-6);
        assert_eq!(s.instantaneous(Bytes::New)[1].bps, 0.0);
    }

    #[test]
    fn moving_average_enters_and_leaves_the_window() {
        // 1000 bytes at 0 s and 0.5 s, window 1 s: 8 kbit/s, then 16, then 8 at 1 s, 0 at 1.5 s.
        let s = series(&[(0, 1000, 1000), (500_000_000, 1000, 500)]);
        let r: Vec<(u64, f64)> = s.moving_average(Bytes::All, 1_000_000_000).iter().map(|p| (p.t_ns, p.bps)).collect();
        assert_eq!(r, vec![(0, 8000.0), (500_000_000, 16000.0), (1_000_000_000, 8000.0), (1_500_000_000, 0.0)]);
        let g: Vec<f64> = s.moving_average(Bytes::New, 1_000_000_000).iter().map(|p| p.bps).collect();
        assert_eq!(g, vec![8000.0, 12000.0, 4000.0, 0.0]);
        assert_eq!(s.average_bps(Bytes::All), Some(2000.0 * 8.0 / 0.5));
    }
}

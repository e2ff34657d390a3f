//! The sender's burstiness (the thesis, ch. 4.1).
//!
//! "Let the *instantaneous rate of a packet* be the number of bytes carried in the packet divided
//! by the amount of time since the previous packet was sent. Let the instantaneous rate of a
//! transmitted data byte be the instantaneous rate of the packet containing it." The series holds
//! every data packet of one direction with that rate (in bits per second, as the throughput
//! plot), from the previous *data* packet of the same direction; retransmissions count, as in the
//! thesis ("the total number of bytes transmitted, including retransmissions").
//!
//! The first data packet has no previous one and no rate: it is left out of the distribution
//! and counted in [`BurstSeries::unrated_bytes`]. A gap below 1 µs counts as 1 µs
//! ([`super::tput::MIN_GAP_NS`]).
//!
//! [`BurstSeries::histogram`] is the distribution of bytes over the rates on logarithmic bins
//! (figures 4.1 and 4.2); [`BurstSeries::cdf`] its integral, total bytes sent at or below each
//! rate (figures 4.3 and 4.4); [`BurstSeries::average_bps`] the connection's average throughput,
//! the mark against which "bursty" rates are read.

use crate::analysis::{At, ConnIdx, Dir, Event, SegmentInfo, Sink};
use crate::flow::ConnInfo;

use super::tput::{Bytes, MIN_GAP_NS, TputSeries, TputSink};

/// One data packet with its instantaneous rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BurstPoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number.
    pub frame: u64,
    /// Payload bytes.
    pub bytes: u32,
    /// Time since the previous data packet, ns (before the 1 µs floor).
    pub gap_ns: u64,
    /// Instantaneous rate, bits per second.
    pub rate_bps: f64,
}

/// One bin of the histogram: bytes sent at a rate in `[lo_bps, hi_bps)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bin {
    /// Lower edge, bits/s.
    pub lo_bps: f64,
    /// Upper edge, bits/s.
    pub hi_bps: f64,
    /// Payload bytes of the packets with a rate in the bin.
    pub bytes: u64,
}

/// The burstiness of one connection and direction.
#[derive(Clone, Debug)]
pub struct BurstSeries {
    /// Connection index (id − 1).
    pub conn: ConnIdx,
    /// Direction of the data.
    pub dir: Dir,
    /// Endpoints.
    pub info: ConnInfo,
    /// Time of the connection's last packet, since its first, ns.
    pub last_ns: u64,
    /// Every data packet after the first, in trace order.
    pub points: Vec<BurstPoint>,
    /// Bytes of the first data packet (no rate).
    pub unrated_bytes: u64,
    /// Average throughput of the direction: all payload bits from its first data packet to its
    /// last over that time (`None` with fewer than two data packets).
    pub average_bps: Option<f64>,
}

impl BurstSeries {
    /// From the data packets of a throughput series.
    pub fn from_tput(t: &TputSeries) -> BurstSeries {
        let points = t
            .points
            .windows(2)
            .map(|w| {
                let gap_ns = w[1].t_ns.saturating_sub(w[0].t_ns);
                let rate_bps = w[1].bytes as f64 * 8.0 * 1e9 / gap_ns.max(MIN_GAP_NS) as f64;
                BurstPoint { t_ns: w[1].t_ns, frame: w[1].frame, bytes: w[1].bytes, gap_ns, rate_bps }
            })
            .collect();
        BurstSeries {
            conn: t.conn,
            dir: t.dir,
            info: t.info,
            last_ns: t.last_ns,
            points,
            unrated_bytes: t.points.first().map_or(0, |p| p.bytes as u64),
            average_bps: t.average_bps(Bytes::All),
        }
    }

    /// Bytes over rates in logarithmic bins, `per_decade` bins per factor of ten (at least 1),
    /// from the decade of the lowest rate to that of the highest; empty without rates.
    pub fn histogram(&self, per_decade: u32) -> Vec<Bin> {
        let k = per_decade.max(1) as f64;
        let Some((lo, hi)) = self.rate_range() else { return Vec::new() };
        let first = (lo.log10() * k).floor() as i64;
        let last = (hi.log10() * k).floor() as i64;
        let mut bins: Vec<Bin> = (first..=last)
            .map(|i| Bin { lo_bps: 10f64.powf(i as f64 / k), hi_bps: 10f64.powf((i + 1) as f64 / k), bytes: 0 })
            .collect();
        for p in &self.points {
            let i = ((p.rate_bps.log10() * k).floor() as i64 - first).clamp(0, bins.len() as i64 - 1) as usize;
            bins[i].bytes += p.bytes as u64;
        }
        bins
    }

    /// The integral of the distribution: `(rate, bytes sent at or below that rate)` at every
    /// distinct rate, rates ascending; the last value is the sum of [`Self::points`]' bytes.
    pub fn cdf(&self) -> Vec<(f64, u64)> {
        let mut r: Vec<(f64, u32)> = self.points.iter().map(|p| (p.rate_bps, p.bytes)).collect();
        r.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out: Vec<(f64, u64)> = Vec::with_capacity(r.len());
        let mut sum = 0u64;
        for (rate, bytes) in r {
            sum += bytes as u64;
            match out.last_mut() {
                Some(last) if last.0 == rate => last.1 = sum,
                _ => out.push((rate, sum)),
            }
        }
        out
    }

    /// Lowest and highest rate, `None` without rates.
    pub fn rate_range(&self) -> Option<(f64, f64)> {
        let mut it = self.points.iter().map(|p| p.rate_bps).filter(|r| *r > 0.0);
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), r| (lo.min(r), hi.max(r))))
    }
}

/// Collects the [`BurstSeries`] of connection `conn`, direction `dir`.
pub struct BurstSink(TputSink);

impl BurstSink {
    /// A sink for one connection and direction.
    pub fn new(conn: ConnIdx, dir: Dir) -> Self {
        BurstSink(TputSink::new(conn, dir))
    }
    /// The series, `None` if the connection never appeared.
    pub fn finish(self) -> Option<BurstSeries> {
        self.0.finish().map(|t| BurstSeries::from_tput(&t))
    }
}

impl Sink for BurstSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.0.connection(conn, info);
    }
    fn segment(&mut self, s: &SegmentInfo) {
        self.0.segment(s);
    }
    fn event(&mut self, at: &At, ev: &Event) {
        self.0.event(at, ev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::tput::DataPoint;

    #[test]
    fn rates_histogram_and_integral_follow_the_thesis_definition() {
        // 1000 B at 0, then 1000 B 1 ms later (8 Mbit/s), 500 B 1 ms later (4 Mbit/s),
        // 1000 B at the same time (floored to 1 µs: 8 Gbit/s).
        let pts = [(0, 1000), (1_000_000, 1000), (2_000_000, 500), (2_000_000, 1000)];
        let t = TputSeries {
            conn: 0,
            dir: Dir::AtoB,
            info: crate::series::test_info(),
            last_ns: 2_000_000,
            rtt_min_ns: None,
            points: pts
                .iter()
                .enumerate()
                .map(|(i, &(t_ns, b))| DataPoint { t_ns, frame: i as u64 + 1, bytes: b, new_bytes: b, rexmit: false })
                .collect(),
        };
        let b = BurstSeries::from_tput(&t);
        let rates: Vec<f64> = b.points.iter().map(|p| p.rate_bps).collect();
        assert_eq!(rates, vec![8e6, 4e6, 8e9]);
        assert_eq!(b.unrated_bytes, 1000);
        assert_eq!(b.cdf(), vec![(4e6, 500), (8e6, 1500), (8e9, 2500)]);
        let h = b.histogram(1);
        // Decades 10^6 .. 10^9: 1500 B in [1e6, 1e7), 1000 B in [1e9, 1e10).
        assert_eq!(h.iter().map(|b| b.bytes).collect::<Vec<_>>(), vec![1500, 0, 0, 1000]);
        assert_eq!(b.average_bps, Some(3500.0 * 8.0 / 2e-3));
    }
}

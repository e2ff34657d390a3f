//! Bytes in flight, the receiver's advertised window and an estimate of the sender's congestion
//! window, for one direction's data.
//!
//! - [`FlightSeries::flight`]: after every data packet, the bytes sent and not yet acknowledged
//!   nor SACKed, as the analysis computes it ([`SegmentInfo::in_flight`]; `docs/statistics.md`).
//! - [`FlightSeries::rwnd`]: the window every returning packet advertised, in bytes (scaled when
//!   the scale is known: [`FlightSeries::rwnd_scaled`]).
//! - [`FlightSeries::cwnd`]: the congestion-window estimate, one value per round trip.
//!
//! **How the congestion window is estimated.** A trace does not contain cwnd; what it shows is
//! how much the sender kept in flight. The data is cut into rounds as a sender counts them (as
//! BBR counts round trips): a round ends when an ACK covers the highest byte that had been sent
//! when the round began; the next round begins there. The estimate of a round is the largest
//! flight seen in it: a sender never has more than cwnd in flight, and a sender that is limited
//! by cwnd fills it once per round. A round is *shown* only when
//!
//! 1. it is complete (an ACK covered it), and
//! 2. the receiver's window did not limit it: every flight in it stayed at least one MSS below
//!    the last advertised window (otherwise the flight measures the receiver's window, not cwnd).
//!
//! It remains a lower bound when the application did not give the sender enough data (an
//! application-limited round), and it is only as good as the capture point: a trace taken near
//! the receiver sees the flight after the bottleneck, and misses lost packets.

use crate::analysis::{At, ConnIdx, Dir, Event, SegmentInfo, Sink};
use crate::flow::ConnInfo;

/// A value at a time (bytes in flight, or an advertised window).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BytesPoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number of the packet it comes from.
    pub frame: u64,
    /// Bytes.
    pub bytes: u64,
}

/// The congestion-window estimate of one round trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CwndRound {
    /// Time the round began (its first data packet, or the ACK that ended the previous one), ns.
    pub start_ns: u64,
    /// Time of the ACK that ended it, ns.
    pub end_ns: u64,
    /// Frame of that ACK.
    pub frame: u64,
    /// Largest flight in the round, bytes.
    pub bytes: u64,
    /// Data packets sent in the round.
    pub packets: u32,
}

/// Flight, advertised window and congestion-window estimate of one connection and direction.
#[derive(Clone, Debug)]
pub struct FlightSeries {
    /// Connection index (id − 1).
    pub conn: ConnIdx,
    /// Direction of the data.
    pub dir: Dir,
    /// Endpoints.
    pub info: ConnInfo,
    /// Time of the connection's last packet, since its first, ns.
    pub last_ns: u64,
    /// Bytes in flight after each data packet (once the peer has acknowledged something).
    pub flight: Vec<BytesPoint>,
    /// Window advertised by each returning packet with ACK.
    pub rwnd: Vec<BytesPoint>,
    /// Whether the receiver's window scale was known (windows in bytes) — `false`: the raw
    /// field, too small by an unknown factor if the connection scaled.
    pub rwnd_scaled: bool,
    /// Estimated congestion window per round trip, only for the rounds where it can be told
    /// (see the module documentation).
    pub cwnd: Vec<CwndRound>,
    /// Rounds not shown because the receiver's window limited them.
    pub rwnd_limited_rounds: u32,
}

struct Round {
    end: i64,
    start_ns: u64,
    max: u64,
    packets: u32,
    limited: bool,
}

/// Collects the [`FlightSeries`] of connection `conn`, direction `dir`.
pub struct FlightSink {
    base: super::Base,
    flight: Vec<BytesPoint>,
    rwnd: Vec<BytesPoint>,
    rwnd_scaled: bool,
    cwnd: Vec<CwndRound>,
    limited_rounds: u32,
    snd_max: Option<i64>,
    last_rwnd: Option<u64>,
    mss: u64,
    round: Option<Round>,
}

impl FlightSink {
    /// A sink for one connection and direction.
    pub fn new(conn: ConnIdx, dir: Dir) -> Self {
        FlightSink {
            base: super::Base::new(conn, dir),
            flight: Vec::new(),
            rwnd: Vec::new(),
            rwnd_scaled: false,
            cwnd: Vec::new(),
            limited_rounds: 0,
            snd_max: None,
            last_rwnd: None,
            mss: 0,
            round: None,
        }
    }

    /// Room for `own` packets of its direction and `other` of the returning one (module doc).
    pub fn reserve(mut self, own: usize, other: usize) -> Self {
        self.flight.reserve(own);
        self.rwnd.reserve(other);
        self
    }

    /// The series, `None` if the connection never appeared.
    pub fn finish(self) -> Option<FlightSeries> {
        let b = self.base;
        Some(FlightSeries {
            conn: b.conn,
            dir: b.dir,
            info: b.info?,
            last_ns: b.last_ns,
            flight: self.flight,
            rwnd: self.rwnd,
            rwnd_scaled: self.rwnd_scaled,
            cwnd: self.cwnd,
            rwnd_limited_rounds: self.limited_rounds,
        })
    }

    fn data(&mut self, s: &SegmentInfo, t_ns: u64) {
        let end = s.seq_off.0 + s.flags.syn() as i64 + s.len as i64;
        self.snd_max = Some(self.snd_max.map_or(end, |m| m.max(end)));
        self.mss = self.mss.max(s.len as u64);
        let Some(v) = s.in_flight else { return };
        self.flight.push(BytesPoint { t_ns, frame: s.at.frame, bytes: v });
        let r = self.round.get_or_insert(Round { end, start_ns: t_ns, max: 0, packets: 0, limited: false });
        r.max = r.max.max(v);
        r.packets += 1;
        if self.last_rwnd.is_some_and(|w| v + self.mss > w) {
            r.limited = true;
        }
    }

    fn ack(&mut self, s: &SegmentInfo, t_ns: u64) {
        let Some(ack) = s.ack_off.map(|a| a.0) else { return };
        self.rwnd.push(BytesPoint { t_ns, frame: s.at.frame, bytes: s.win_bytes });
        self.rwnd_scaled |= s.wscale.is_some();
        self.last_rwnd = Some(s.win_bytes);
        if self.round.as_ref().is_some_and(|r| ack >= r.end) {
            let Some(r) = self.round.take() else { return };
            if r.limited {
                self.limited_rounds += 1;
            } else {
                self.cwnd.push(CwndRound {
                    start_ns: r.start_ns,
                    end_ns: t_ns,
                    frame: s.at.frame,
                    bytes: r.max,
                    packets: r.packets,
                });
            }
            // The next round ends with what has been sent by now; with nothing outstanding it
            // begins at the next data packet.
            if let Some(m) = self.snd_max.filter(|&m| m > ack) {
                self.round = Some(Round { end: m, start_ns: t_ns, max: 0, packets: 0, limited: false });
            }
        }
    }
}

impl Sink for FlightSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.base.connection(conn, info);
    }
    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn != self.base.conn {
            return;
        }
        let t_ns = self.base.segment(s);
        if s.at.dir == self.base.dir {
            if s.len > 0 {
                self.data(s, t_ns);
            }
        } else {
            self.ack(s, t_ns);
        }
    }
    fn event(&mut self, at: &At, _ev: &Event) {
        if at.conn == self.base.conn {
            self.base.rel(at.ts_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Settings;
    use crate::testutil::{Pkt, flag::*};

    fn pkt(from_a: bool, ms: u64, flags: u8, seq: u32, ack: u32, len: u16, win: u16) -> Pkt {
        let (src, dst, sport, dport) =
            if from_a { ([10, 0, 0, 1], [10, 0, 0, 2], 40000, 80) } else { ([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000) };
        Pkt {
            ts_ns: 1_000_000_000 + ms * 1_000_000,
            src,
            dst,
            sport,
            dport,
            seq,
            ack,
            flags,
            win,
            len,
            opts: vec![],
            snap: None,
        }
    }

    /// Slow start by hand: 1 segment, then 2, then 4, each round acked 10 ms later. With a large
    /// window the estimate is 1, 2, 4 segments; with a window of 3 segments the third round is
    /// receiver-limited and not shown.
    fn slow_start(win: u16) -> FlightSeries {
        let mss = 1000u32;
        let mut p = vec![
            pkt(true, 0, SYN, 0, 0, 0, win),
            pkt(false, 10, SYN | ACK, 5000, 1, 0, win),
            pkt(true, 20, ACK, 1, 5001, 0, win),
        ];
        let mut seq = 1u32;
        let mut t = 20;
        for n in [1u32, 2, 4] {
            for _ in 0..n {
                p.push(pkt(true, t, ACK, seq, 5001, mss as u16, win));
                seq += mss;
            }
            t += 10;
            p.push(pkt(false, t, ACK, 5001, seq, 0, win));
        }
        let s = crate::series::run_pkts(&p, Settings::default(), FlightSink::new(0, Dir::AtoB));
        s.finish().unwrap()
    }

    #[test]
    fn cwnd_estimate_is_the_largest_flight_per_round_unless_the_window_limits_it() {
        let s = slow_start(60000);
        assert_eq!(
            s.cwnd.iter().map(|r| (r.bytes, r.packets)).collect::<Vec<_>>(),
            vec![(1000, 1), (2000, 2), (4000, 4)]
        );
        assert_eq!(s.flight.len(), 7);
        assert_eq!(s.rwnd_limited_rounds, 0);
        let s = slow_start(3000);
        assert_eq!(s.cwnd.iter().map(|r| r.bytes).collect::<Vec<_>>(), vec![1000, 2000]);
        assert_eq!(s.rwnd_limited_rounds, 1);
    }
}

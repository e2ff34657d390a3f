//! The per-packet and per-sample records of the columnar exports (`tcpscope export`, the
//! Python package; docs/json.md#arrow-and-parquet): one row per TCP segment with the
//! analysis' verdict on it ([`SegmentRow`]), one per RTT sample ([`RttRow`]). Each row starts
//! with its connection's name across runs ([`ConnRef`]). Plain data: the Arrow writer lives in
//! the `tcpscope-arrow` crate and takes its columns from these field lists.

use std::sync::Arc;

use serde::Serialize;

use crate::event::{Event, RttKind, SegmentInfo};
use crate::export::packet::FlagLetters;
use crate::table::{Name, Shared, record};

record! {
    /// Which connection a row is about: its trace and its index there ([`crate::conn::ConnId`]),
    /// the columns every exported table but `connections` (which has them already) begins with.
    #[derive(Clone, Copy, Debug, Serialize)]
    pub struct ConnRef<'a> = "conn_ref", ConnRefColumns {
        /// The trace: the input as given, or the inputs joined by ` + ` with `--merge`.
        pub input: Shared<'a>, "", "the trace, as `input` in `stats --json`";
        /// 1-based index among the connections of `input`.
        pub conn: usize, "", "1-based index among the connections of `input`, as `conn` in `stats --json`";
    }
}

record! {
    /// One TCP segment as the analysis judged it (`segments`).
    #[derive(Clone, Debug, Serialize)]
    pub struct SegmentRow<'a> = "segments", SegmentColumns {
        /// The capture file holding it.
        pub file: Shared<'a>, "", "the capture file holding the packet";
        /// 1-based frame number in that file.
        pub frame: u64, "", "1-based frame number within that file (tshark's `frame.number`)";
        /// Capture time, ns since the epoch.
        pub ts_ns: u64, "ns since the epoch", "capture time";
        /// `a2b` or `b2a`.
        pub dir: Name, "", "`a2b` or `b2a`";
        /// Flag letters as `print` writes them.
        pub flags: FlagLetters, "", "flag letters, as `print` writes them";
        /// Relative sequence number of its first sequence byte (the SYN's is -1).
        pub seq: i64, "", "relative sequence number of its first sequence byte (a SYN's is -1)";
        /// Payload length.
        pub len: u32, "bytes", "payload length from the IP header";
        /// Relative acknowledgment number in the peer's sequence space, when ACK is set.
        pub ack: Option<i64>, "", "relative acknowledgment number (the peer's sequence space); null when the ACK flag is off";
        /// Advertised window, scaled when the scale is known.
        pub win_bytes: u64, "bytes", "advertised window, scaled when the scale is known";
        /// Bytes in flight in its direction after it.
        pub in_flight_bytes: Option<u64>, "bytes", "bytes in flight in its direction after it (SACK-aware); null before the peer acknowledged anything, and on segments without data";
        /// SACK blocks carried.
        pub sack_blocks: u8, "", "SACK blocks carried";
        /// What the analysis made of it (see [`Verdict`]).
        pub verdict: Name, "", "`new` (sequence bytes not seen before), `retransmission`, `out_of_order` (a hole fill), `probe` (zero-window probe), `keep_alive`, `no_data` (no sequence byte: a pure ACK, a bare RST)";
        /// Why it was out of sequence (an [`crate::event::OosClass`] name).
        pub class: Option<Name>, "", "why a retransmission, hole fill or probe was sent (`rto`, `fast_retransmit`, … as `screen`'s events; [screening.md](screening.md))";
        /// Karn RTT sample this packet's ACK gave the peer's data.
        pub rtt_ms: Option<f64>, "ms", "RTT sample (Karn's rule) this ACK gave the peer's data";
        /// Timestamp-echo RTT sample this packet gave.
        pub rtt_ts_ms: Option<f64>, "ms", "RTT sample from a timestamp echo this packet gave";
    }
}

/// What the analysis made of one segment, from the events raised before it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Verdict {
    kind: Option<&'static str>,
    class: Option<&'static str>,
    rtt_ms: Option<f64>,
    rtt_ts_ms: Option<f64>,
}

impl Verdict {
    /// Takes note of an event of the packet about to be given.
    pub fn event(&mut self, ev: &Event) {
        match *ev {
            Event::Retransmission { class, .. } => {
                self.kind = Some("retransmission");
                self.class = class.map(|c| c.name());
            }
            // A packet both retransmitted and filling a hole is a retransmission (its class
            // is given there).
            Event::OutOfOrder { class, .. } if self.kind.is_none() => {
                self.kind = Some("out_of_order");
                self.class = class.map(|c| c.name());
            }
            Event::ZeroWindowProbe { .. } => self.kind = Some("probe"),
            Event::KeepAlive => self.kind = Some("keep_alive"),
            Event::RttSample { rtt_ns, kind, .. } => {
                let ms = Some(rtt_ns as f64 / 1e6);
                match kind {
                    RttKind::Karn => self.rtt_ms = ms,
                    RttKind::Timestamp => self.rtt_ts_ms = ms,
                }
            }
            _ => {}
        }
    }

    /// The row of `s` (the packet the events were about), and a fresh verdict for the next.
    /// Inlined into the sink that pushes the row onto its columns: the row's fields go
    /// straight there rather than through a struct in memory.
    #[inline]
    pub fn row<'a>(&mut self, s: &SegmentInfo, file: &'a Arc<str>) -> SegmentRow<'a> {
        let v = std::mem::take(self);
        SegmentRow {
            file: Shared(file),
            frame: s.at.frame,
            ts_ns: s.at.ts_ns,
            dir: Name(s.at.dir.name()),
            flags: super::packet::flag_letters(s.flags),
            seq: s.seq_off.0,
            len: s.len,
            ack: s.ack_off.map(|o| o.0),
            win_bytes: s.win_bytes,
            in_flight_bytes: s.in_flight,
            sack_blocks: s.sack_blocks,
            verdict: Name(v.kind.unwrap_or_else(|| unclassified(s.len, s.flags))),
            class: v.class.map(Name),
            rtt_ms: v.rtt_ms,
            rtt_ts_ms: v.rtt_ts_ms,
        }
    }
}

/// The verdict of a segment no event classified: `new` when it occupies sequence space
/// (payload, SYN or FIN), else `no_data` (a pure ACK, a bare RST). The time-sequence plot's
/// table says it in the same words (`plot::data`).
#[inline]
pub fn unclassified(len: u32, flags: crate::decode::Flags) -> &'static str {
    if len > 0 || flags.syn() || flags.fin() { "new" } else { "no_data" }
}

record! {
    /// One RTT sample (`rtt`).
    #[derive(Clone, Copy, Debug, Serialize)]
    pub struct RttRow = "rtt", RttColumns {
        /// Direction of the data measured.
        pub dir: Name, "", "direction of the data measured";
        /// Frame of the acknowledging packet.
        pub frame: u64, "", "frame of the acknowledging packet (in its file)";
        /// Frame of the segment (or TSval) measured from.
        pub sent_frame: u64, "", "frame of the segment, or of the TSval, measured from";
        /// Time of the acknowledging packet.
        pub ts_ns: u64, "ns since the epoch", "time of the acknowledging packet";
        /// The sample.
        pub rtt_ms: f64, "ms", "the sample";
        /// `karn` or `timestamp`.
        pub kind: Name, "", "`karn` (a segment and the ACK ending on it, Karn's rule) or `timestamp` (a TSval and its first echo)";
    }
}

impl RttRow {
    /// The row of an [`Event::RttSample`] raised at `at`; `None` for any other event.
    pub fn of(at: &crate::event::At, ev: &Event) -> Option<RttRow> {
        let Event::RttSample { rtt_ns, kind, sent_frame } = *ev else { return None };
        Some(RttRow {
            dir: Name(at.dir.name()),
            frame: at.frame,
            sent_frame,
            ts_ns: at.ts_ns,
            rtt_ms: rtt_ns as f64 / 1e6,
            kind: Name(match kind {
                RttKind::Karn => "karn",
                RttKind::Timestamp => "timestamp",
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Table, names};

    fn keys<T: Serialize>(v: &T) -> Vec<String> {
        serde_json::to_value(v).unwrap().as_object().unwrap().keys().cloned().collect()
    }

    /// Rows of a real trace: their JSON keys are their tables' fields, in order, and the
    /// verdicts agree with the statistics.
    #[test]
    fn rows_keys_are_fields_and_verdicts_agree_with_stats() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap");
        let (segs, rtts) = crate::testutil::packet_rows(path.as_ref(), "f");
        let an = crate::pass::Query::new(vec![path.into()]).stats(&|_, _| {}).unwrap();
        assert_eq!(keys(&segs[0]), names(SegmentRow::FIELDS));
        assert_eq!(keys(&rtts[0]), names(RttRow::FIELDS));
        assert_eq!(keys(&ConnRef { input: Shared(&"x".into()), conn: 1 }), names(ConnRef::FIELDS));
        let d = &an.conns[0].dir(0);
        let count = |v: &str| segs.iter().filter(|r| r.dir == "a2b" && r.verdict == v).count() as u64;
        assert_eq!(count("retransmission"), d.rexmit_packets);
        assert!(d.rexmit_packets > 0);
        let karn = rtts.iter().filter(|r| r.dir == "a2b" && r.kind == "karn").count() as u64;
        assert_eq!(karn, d.rtt.n);
        let on_rows = segs.iter().filter(|r| r.dir == "b2a" && r.rtt_ms.is_some()).count() as u64;
        assert_eq!(on_rows, d.rtt.n, "each Karn sample of a's data is on one of b's ACKs");
        assert!(segs.iter().filter(|r| r.verdict == "retransmission").all(|r| r.class.is_some()));
    }
}

//! The ladder (timing chart) of one connection: every segment, both directions, with what its
//! arrow is labelled with, and the states of both endpoints ([`super::states`]) to write beside
//! their time lines. [`crate::plot::ladder`] draws it.

use super::states::{States, StatesSink};
use crate::analysis::{ConnIdx, Dir, SegmentInfo, Sink};
use crate::decode::Flags;
use crate::flow::ConnInfo;

/// One segment, as the ladder labels it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LadderSeg {
    /// When the capture saw it, s since the connection's first packet.
    pub t: f64,
    /// Its direction (a→b is an arrow from a's line to b's).
    pub dir: Dir,
    /// Its frame.
    pub frame: u64,
    /// Flags.
    pub flags: Flags,
    /// The wire sequence number.
    pub seq: u32,
    /// Offset of its first sequence number (first payload byte 0, the SYN -1).
    pub seq_off: i64,
    /// Acknowledged offset in the peer's space, when ACK is set.
    pub ack_off: Option<i64>,
    /// Advertised window, bytes (scaled when the scale is known).
    pub win: u64,
    /// Payload length.
    pub len: u32,
    /// MSS option.
    pub mss: Option<u16>,
    /// Window scale option.
    pub wscale: Option<u8>,
    /// SACK-permitted option.
    pub sack_permitted: bool,
    /// Number of SACK blocks.
    pub sack_blocks: u8,
    /// It carried timestamps.
    pub timestamps: bool,
    /// It resent sequence space already seen.
    pub rexmit: bool,
}

impl LadderSeg {
    /// The arrow's label: flags, sequence range, ack, window, length and options, e.g.
    /// `SYN seq 2382364545 win 65535 <mss 1460, ws 7, sackOK, TS>` or `ACK 1:1449 ack 1 win 502`.
    pub fn label(&self) -> String {
        let mut s = super::states::flag_names(self.flags);
        if self.flags.syn() {
            // A SYN's number is the ISN: offsets start after it.
            s += &format!(" seq {}", self.seq);
        } else if self.len > 0 {
            s += &format!(" {}:{}", self.seq_off, self.seq_off + self.len as i64);
        } else {
            s += &format!(" seq {}", self.seq_off);
        }
        if let Some(a) = self.ack_off {
            s += &format!(" ack {a}");
        }
        s += &format!(" win {}", self.win);
        if self.len > 0 {
            s += &format!(" len {}", self.len);
        }
        let mut opts = Vec::new();
        if let Some(m) = self.mss {
            opts.push(format!("mss {m}"));
        }
        if let Some(w) = self.wscale {
            opts.push(format!("ws {w}"));
        }
        if self.sack_permitted {
            opts.push("sackOK".into());
        }
        if self.sack_blocks > 0 {
            opts.push(format!("sack {}", self.sack_blocks));
        }
        if self.timestamps {
            opts.push("TS".into());
        }
        if !opts.is_empty() {
            s += &format!(" <{}>", opts.join(", "));
        }
        if self.rexmit {
            s += " (rexmit)";
        }
        s
    }
}

/// The ladder of one connection.
#[derive(Clone, Debug)]
pub struct Ladder {
    /// Connection index (0-based).
    pub conn: ConnIdx,
    /// Endpoints.
    pub info: ConnInfo,
    /// Every segment, in capture order.
    pub segs: Vec<LadderSeg>,
    /// Both endpoints' states, and their distances from the capture point.
    pub states: States,
    /// Time of the last packet, s since the first.
    pub last_s: f64,
}

/// Collects the ladder of one connection (every segment: meant for a connection or a time
/// window of a few thousand packets, as a ladder is read).
#[derive(Clone, Debug)]
pub struct LadderSink {
    states: StatesSink,
    conn: ConnIdx,
    t0: Option<u64>,
    segs: Vec<LadderSeg>,
}

impl LadderSink {
    /// For connection `conn` (0-based).
    pub fn new(conn: ConnIdx) -> Self {
        LadderSink { states: StatesSink::new(conn), conn, t0: None, segs: Vec::new() }
    }

    /// With room for `n` segments (the connection's packets, when known).
    pub fn reserve(mut self, n: usize) -> Self {
        self.segs.reserve_exact(n);
        self
    }

    /// The ladder, `None` if the connection never appeared.
    pub fn finish(self) -> Option<Ladder> {
        let states = self.states.finish()?;
        let last_s = self.segs.last().map_or(0.0, |s| s.t);
        Some(Ladder { conn: self.conn, info: states.info, segs: self.segs, states, last_s })
    }
}

impl Sink for LadderSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.states.connection(conn, info);
    }

    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn != self.conn {
            return;
        }
        self.states.segment(s);
        let t0 = *self.t0.get_or_insert(s.at.ts_ns);
        self.segs.push(LadderSeg {
            t: s.at.ts_ns.saturating_sub(t0) as f64 / 1e9,
            dir: s.at.dir,
            frame: s.at.frame,
            flags: s.flags,
            seq: s.seq.0,
            seq_off: s.seq_off.0,
            ack_off: s.ack_off.map(|a| a.0),
            win: s.win_bytes,
            len: s.len,
            mss: s.mss,
            wscale: s.wscale_opt,
            sack_permitted: s.sack_permitted,
            sack_blocks: s.sack_blocks,
            timestamps: s.tsval.is_some(),
            rexmit: s.is_rexmit,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Settings;
    use crate::series::run_pkts;
    use crate::testutil::{flag::*, opt, scripted};

    #[test]
    fn labels_say_flags_numbers_window_length_and_options() {
        let mut syn_opts = opt::mss(1460);
        syn_opts.extend(opt::wscale(7));
        syn_opts.extend(opt::sack_perm());
        let p = [
            scripted(true, 0.0, SYN, 0, 0, 0, 64240, syn_opts),
            scripted(false, 1.0, SYN | ACK, 0, 0, 0, 65160, opt::mss(1460)),
            scripted(true, 2.0, PSH | ACK, 0, 0, 10, 502, vec![]),
        ];
        let l = run_pkts(&p, Settings::default(), LadderSink::new(0)).finish().unwrap();
        let labels: Vec<String> = l.segs.iter().map(|s| s.label()).collect();
        assert_eq!(labels[0], "SYN seq 1000 win 64240 <mss 1460, ws 7, sackOK>");
        assert_eq!(labels[1], "SYN,ACK seq 5000 ack 0 win 65160 <mss 1460>");
        // The peer sent no window scale: neither side scales (RFC 7323 §2.2).
        assert_eq!(labels[2], "PSH,ACK 0:10 ack 0 win 502 len 10");
        assert_eq!(l.segs[1].dir, Dir::BtoA);
        assert!((l.last_s - 0.002).abs() < 1e-12);
    }
}

//! The time-sequence series of one direction of one connection (the thesis, ch. 2.4; tcptrace's
//! `tsg`).
//!
//! What it holds, all folded from [`SegmentInfo`] and [`Event`]:
//!
//! - [`Tsg::segments`]: every packet sent in the plotted direction, with its relative time,
//!   sequence offset, payload length, flags and [`SegKind`] (new, retransmission, out-of-order,
//!   zero-window probe).
//! - [`Tsg::acks`]: every packet of the *returning* direction that carries an ACK: the ack
//!   offset (in the plotted direction's sequence space) and the window's right edge
//!   (ack + window in bytes), with whether the ack advanced, repeated (did not advance: the
//!   thesis' down tick, tcptrace's `dtick`) and whether the window edge repeated (up tick).
//! - [`Tsg::sacks`]: the SACK and D-SACK blocks the returning packets carried.
//! - [`Tsg::notes`]: flags that are not the usual ones (SYN, FIN, RST, URG, ECE, CWR), zero
//!   windows and triple duplicate ACKs.
//!
//! Times are ns relative to the connection's first packet (either direction); sequence numbers
//! are the analysis' offsets ([`crate::seq::SeqOff`]`.0`): the first payload byte is 0, the SYN -1.

use crate::analysis::{At, ConnIdx, Dir, Event, SegmentInfo, Sink};
use crate::decode::Flags;
use crate::flow::ConnInfo;

/// What a data segment was, in order of precedence when several apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    /// Sequence space not seen before in this direction.
    New,
    /// Carried sequence bytes seen before ([`Event::Retransmission`], tcptrace `R`).
    Retransmission,
    /// Filled a hole below the highest byte seen ([`Event::OutOfOrder`], tcptrace `O`).
    OutOfOrder,
    /// Sent while the peer's window was zero ([`Event::ZeroWindowProbe`], tcptrace `P`).
    ZeroWindowProbe,
}

impl SegKind {
    /// Short name, used as the SVG class and in the legend.
    pub fn name(self) -> &'static str {
        match self {
            SegKind::New => "new",
            SegKind::Retransmission => "rexmit",
            SegKind::OutOfOrder => "ooo",
            SegKind::ZeroWindowProbe => "probe",
        }
    }
}

/// One packet of the plotted direction.
#[derive(Clone, Copy, Debug)]
pub struct DataSeg {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number.
    pub frame: u64,
    /// Offset of the first sequence number it occupies (the SYN's is -1).
    pub seq_off: i64,
    /// Payload bytes (from the IP header).
    pub len: u32,
    /// Classification.
    pub kind: SegKind,
    /// TCP flags.
    pub flags: Flags,
    /// A keep-alive ([`Event::KeepAlive`]).
    pub keepalive: bool,
}

impl DataSeg {
    /// Offset of the first payload byte (after the SYN, if any).
    pub fn payload_start(&self) -> i64 {
        self.seq_off + self.flags.syn() as i64
    }
    /// Offset after the last payload byte.
    pub fn payload_end(&self) -> i64 {
        self.payload_start() + self.len as i64
    }
    /// Offset after the last sequence number it occupies (FIN included).
    pub fn end(&self) -> i64 {
        self.payload_end() + self.flags.fin() as i64
    }
}

/// One returning packet that carried an ACK: a point of the ack line and of the window line.
#[derive(Clone, Copy, Debug)]
pub struct AckPoint {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number.
    pub frame: u64,
    /// Acknowledged offset in the plotted direction's sequence space.
    pub ack_off: i64,
    /// Advertised window in bytes (scaled when the scale is known).
    pub win_bytes: u64,
    /// Whether the ack is above every earlier ack (the ack line steps up). The first ACK of the
    /// connection starts the line and is neither advancing nor repeating.
    pub advances: bool,
    /// Whether the ack does not advance (equal to, or below, the highest earlier ack): the
    /// thesis' down tick on the ack line, tcptrace's `dtick`. Not only Wireshark-style
    /// duplicate ACKs: a window update or a data packet that repeats the ack counts too.
    pub repeats: bool,
    /// Whether the window's right edge equals the previous point's: an up tick on the window
    /// line.
    pub edge_repeats: bool,
    /// TCP flags of the returning packet.
    pub flags: Flags,
}

impl AckPoint {
    /// Right edge of the window: ack + window.
    pub fn edge(&self) -> i64 {
        self.ack_off.saturating_add(self.win_bytes.min(i64::MAX as u64) as i64)
    }
}

/// A SACK (or D-SACK) block carried by a returning packet.
#[derive(Clone, Copy, Debug)]
pub struct SackBlock {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number.
    pub frame: u64,
    /// Left edge.
    pub from: i64,
    /// Right edge (exclusive).
    pub to: i64,
    /// A D-SACK (RFC 2883): bytes received twice.
    pub dsack: bool,
}

/// What a note says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteKind {
    /// A SYN of the plotted direction (`rexmit`: sent before).
    Syn {
        /// Retransmitted SYN.
        rexmit: bool,
    },
    /// A FIN of the plotted direction.
    Fin {
        /// Retransmitted FIN.
        rexmit: bool,
    },
    /// A RST sent in the plotted direction (tcptrace `RST_OUT`).
    RstOut,
    /// A RST from the returning direction (tcptrace `RST_IN`), at the ack line.
    RstIn,
    /// URG set on a packet of the plotted direction.
    Urg,
    /// ECE set (on the returning direction: the receiver echoes congestion).
    Ece,
    /// CWR set on a packet of the plotted direction (the sender reduced its window).
    Cwr,
    /// The returning packet advertised a zero window (tcptrace `Z`).
    ZeroWindow,
    /// The third duplicate ACK of an ack (Wireshark's rule; tcptrace `3`).
    TripleDupAck,
}

impl NoteKind {
    /// The text drawn on the plot.
    pub fn label(self) -> &'static str {
        match self {
            NoteKind::Syn { rexmit: false } => "SYN",
            NoteKind::Syn { rexmit: true } => "R SYN",
            NoteKind::Fin { rexmit: false } => "FIN",
            NoteKind::Fin { rexmit: true } => "R FIN",
            NoteKind::RstOut => "RST_OUT",
            NoteKind::RstIn => "RST_IN",
            NoteKind::Urg => "U",
            NoteKind::Ece => "ECE",
            NoteKind::Cwr => "CWR",
            NoteKind::ZeroWindow => "Z",
            NoteKind::TripleDupAck => "3",
        }
    }
}

/// A text annotation at a point of the plot.
#[derive(Clone, Copy, Debug)]
pub struct Note {
    /// Time since the connection's first packet, ns.
    pub t_ns: u64,
    /// 1-based frame number.
    pub frame: u64,
    /// Where on the sequence axis.
    pub y: i64,
    /// What it says.
    pub kind: NoteKind,
}

/// The time-sequence series of one direction of a connection.
#[derive(Clone, Debug)]
pub struct Tsg {
    /// The connection (0-based; its id is `conn + 1`).
    pub conn: ConnIdx,
    /// The plotted direction (its data; the acks come from the other direction).
    pub dir: Dir,
    /// The connection's endpoints.
    pub info: ConnInfo,
    /// Time of the connection's first packet, ns since the epoch: time 0 of the plot.
    pub t0_ns: u64,
    /// Time of its last packet, relative to `t0_ns`.
    pub last_ns: u64,
    /// Packets of the plotted direction, in trace order.
    pub segments: Vec<DataSeg>,
    /// ACK-carrying packets of the returning direction, in trace order.
    pub acks: Vec<AckPoint>,
    /// SACK blocks from the returning direction.
    pub sacks: Vec<SackBlock>,
    /// Annotations.
    pub notes: Vec<Note>,
    /// Whether `segments` are in time order (capture clocks can step back): then a plot finds
    /// the visible ones by binary search.
    pub segments_time_ordered: bool,
}

/// Collects the [`Tsg`] of connection `conn`, direction `dir`, from one analysis pass.
pub struct TsgSink {
    conn: ConnIdx,
    tsg: Option<Tsg>,
    /// Events of the packet being processed (they arrive before its [`SegmentInfo`]).
    pending: Vec<(At, Event)>,
    /// Room to reserve when the connection appears: its direction's packets, the other's.
    room: (usize, usize),
    /// Highest ack seen from the returning direction.
    max_ack: Option<i64>,
    dir: Dir,
    /// Whether the connection's first packet was seen (it sets time 0).
    started: bool,
}

impl TsgSink {
    /// A sink for connection index `conn` (0-based), direction `dir`.
    pub fn new(conn: ConnIdx, dir: Dir) -> Self {
        TsgSink { conn, tsg: None, pending: Vec::new(), room: (0, 0), max_ack: None, dir, started: false }
    }

    /// Room for `own` packets of its direction and `other` of the returning one (module doc).
    pub fn reserve(mut self, own: usize, other: usize) -> Self {
        self.room = (own, other);
        self
    }

    /// The series, `None` if the connection never appeared.
    pub fn finish(self) -> Option<Tsg> {
        self.tsg
    }

    fn data(tsg: &mut Tsg, s: &SegmentInfo, t_ns: u64, events: &[(At, Event)]) {
        let (kind, keepalive) = classify(events, s.at.dir);
        let seg =
            DataSeg { t_ns, frame: s.at.frame, seq_off: s.seq_off.0, len: s.len, kind, flags: s.flags, keepalive };
        if tsg.segments.last().is_some_and(|p| p.t_ns > t_ns) {
            tsg.segments_time_ordered = false;
        }
        let note = |y: i64, kind: NoteKind| Note { t_ns, frame: s.at.frame, y, kind };
        let f = s.flags;
        if f.syn() {
            tsg.notes.push(note(seg.seq_off, NoteKind::Syn { rexmit: s.is_rexmit }));
        }
        if f.fin() {
            tsg.notes.push(note(seg.end(), NoteKind::Fin { rexmit: s.is_rexmit }));
        }
        if f.rst() {
            tsg.notes.push(note(seg.seq_off, NoteKind::RstOut));
        }
        if f.has(Flags::URG) {
            tsg.notes.push(note(seg.end(), NoteKind::Urg));
        }
        if f.has(Flags::ECE) && !f.syn() {
            tsg.notes.push(note(seg.seq_off, NoteKind::Ece));
        }
        if f.has(Flags::CWR) && !f.syn() {
            tsg.notes.push(note(seg.seq_off, NoteKind::Cwr));
        }
        tsg.segments.push(seg);
    }

    fn returning(&mut self, s: &SegmentInfo, t_ns: u64) {
        let Some(tsg) = self.tsg.as_mut() else { return };
        let frame = s.at.frame;
        let note = |y: i64, kind: NoteKind| Note { t_ns, frame, y, kind };
        for (at, ev) in &self.pending {
            if at.dir != s.at.dir {
                continue;
            }
            match *ev {
                Event::Sack { from, to } => {
                    tsg.sacks.push(SackBlock { t_ns, frame, from: from.0, to: to.0, dsack: false })
                }
                Event::Dsack { from, to } => {
                    tsg.sacks.push(SackBlock { t_ns, frame, from: from.0, to: to.0, dsack: true })
                }
                Event::DupAck { n: 3, ack_off } => tsg.notes.push(note(ack_off.0, NoteKind::TripleDupAck)),
                _ => {}
            }
        }
        let f = s.flags;
        let Some(ack_off) = s.ack_off.map(|a| a.0) else {
            if f.rst() {
                tsg.notes.push(note(self.max_ack.unwrap_or(0), NoteKind::RstIn));
            }
            return;
        };
        let prev = tsg.acks.last().copied();
        let advances = self.max_ack.is_some_and(|m| ack_off > m);
        let repeats = self.max_ack.is_some_and(|m| ack_off <= m);
        self.max_ack = Some(self.max_ack.map_or(ack_off, |m| m.max(ack_off)));
        let mut p =
            AckPoint { t_ns, frame, ack_off, win_bytes: s.win_bytes, advances, repeats, edge_repeats: false, flags: f };
        p.edge_repeats = prev.is_some_and(|q| q.edge() == p.edge());
        if f.rst() {
            tsg.notes.push(note(ack_off, NoteKind::RstIn));
        }
        if f.has(Flags::ECE) && !f.syn() {
            tsg.notes.push(note(ack_off, NoteKind::Ece));
        }
        if s.win_bytes == 0 && !f.syn() && !f.rst() {
            tsg.notes.push(note(p.edge(), NoteKind::ZeroWindow));
        }
        tsg.acks.push(p);
    }
}

/// The kind of a packet of direction `dir` from the events that came before its
/// [`SegmentInfo`], and whether it is a keep-alive.
pub(crate) fn classify(events: &[(At, Event)], dir: Dir) -> (SegKind, bool) {
    let mut kind = SegKind::New;
    let mut keepalive = false;
    for (at, ev) in events {
        if at.dir != dir {
            continue;
        }
        let k = match ev {
            Event::ZeroWindowProbe { .. } => SegKind::ZeroWindowProbe,
            Event::Retransmission { .. } => SegKind::Retransmission,
            Event::OutOfOrder { .. } => SegKind::OutOfOrder,
            Event::KeepAlive => {
                keepalive = true;
                continue;
            }
            _ => continue,
        };
        // Precedence: probe > retransmission > out-of-order > new.
        let rank = |k: SegKind| match k {
            SegKind::New => 0,
            SegKind::OutOfOrder => 1,
            SegKind::Retransmission => 2,
            SegKind::ZeroWindowProbe => 3,
        };
        if rank(k) > rank(kind) {
            kind = k;
        }
    }
    (kind, keepalive)
}

impl Sink for TsgSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        if conn == self.conn {
            self.tsg = Some(Tsg {
                conn,
                dir: self.dir,
                info: *info,
                t0_ns: 0,
                last_ns: 0,
                segments: Vec::with_capacity(self.room.0),
                acks: Vec::with_capacity(self.room.1),
                sacks: Vec::new(),
                notes: Vec::new(),
                segments_time_ordered: true,
            });
        }
    }

    fn event(&mut self, at: &At, ev: &Event) {
        if at.conn == self.conn {
            self.pending.push((*at, *ev));
        }
    }

    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn != self.conn {
            return;
        }
        let Some(tsg) = self.tsg.as_mut() else { return };
        if !self.started {
            self.started = true;
            tsg.t0_ns = s.at.ts_ns;
        }
        let t_ns = s.at.ts_ns.saturating_sub(tsg.t0_ns);
        tsg.last_ns = tsg.last_ns.max(t_ns);
        if s.at.dir == self.dir {
            Self::data(tsg, s, t_ns, &self.pending);
        } else {
            self.returning(s, t_ns);
        }
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Settings;

    /// The recorded zero-window scenario: the truth file counts 119 zero-window ACKs and 61
    /// probes (kernel TcpExtTCPWinProbe 61); the series must carry one note per zero window and
    /// one probe segment per probe, as the statistics count them.
    #[test]
    fn zerowin_trace_has_one_probe_segment_and_one_z_per_zero_window() {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/zerowin-snd.pcap"));
        let (tsg, err) = crate::series::from_file::<TsgSink>(path, 0, Dir::AtoB, Settings::default()).unwrap();
        assert!(err.error.is_none());
        let tsg = tsg.unwrap();
        let probes = tsg.segments.iter().filter(|s| s.kind == SegKind::ZeroWindowProbe).count();
        let zwin = tsg.notes.iter().filter(|n| n.kind == NoteKind::ZeroWindow).count();
        assert_eq!((probes, zwin), (61, 119));
        let stats = crate::pass::Query::new(vec![path.into()]).stats(&|_, _| {}).unwrap();
        let d = &stats.conns[0].dirs();
        assert_eq!(d[0].rare().zero_window_probes as usize, probes);
        assert_eq!(d[1].rare().zero_window_adverts as usize, zwin);
        // Every returning ACK is a point; each after the first either advances or repeats.
        assert!(tsg.acks.iter().skip(1).all(|p| p.advances != p.repeats));
        assert!(!tsg.acks[0].advances && !tsg.acks[0].repeats);
    }
}

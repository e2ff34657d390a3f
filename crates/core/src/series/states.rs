//! The TCP state of each endpoint of one connection (RFC 9293 §3.3.2, figure 5), inferred from
//! the segments seen at the capture point, with the segment that caused every transition.
//!
//! A capture shows segments where it was taken, not what each endpoint did when: an endpoint
//! changes state when it *sends* a segment (a SYN, a FIN, a RST) or when it *receives* one, and
//! a segment is received after the capture saw it if the capture is on the way, before it if the
//! capture is behind the receiver... From one vantage point the inference works this way:
//!
//! - **Each endpoint's own time line.** A segment captured at `t` left its sender at about
//!   `t − d(sender)` and reached its receiver at about `t + d(receiver)`, where `d(X)` is half of
//!   the smallest *half-loop* measured on X's side of the capture point (a segment of the other
//!   side captured, and X's first acknowledgment of it captured: the time the segment and its
//!   answer spent between the capture point and X; tcptrace's and Tstat's half-loops). A side
//!   whose half-loop cannot be measured gets `d = 0` (the capture is taken as next to it). Each
//!   endpoint's sends and receives are put in order on its own line by these times.
//! - **Acknowledgments order what times cannot.** An endpoint acknowledges a SYN or FIN only
//!   after it received it, and a FIN is processed only in sequence, so: the receipt of the
//!   peer's SYN or FIN goes before the endpoint's first segment that acknowledges it, and after
//!   its last segment that does not (whatever the times say). This is what tells a simultaneous
//!   close (each FIN sent before the other arrived: neither FIN acknowledges the other) from a
//!   passive one, and a simultaneous open from a normal one, from any vantage point.
//! - **What is assumed.** The state before the first segment is not seen: the sender of a first
//!   SYN was CLOSED; its peer was LISTEN if it answers with a SYN-ACK (or nothing), CLOSED if it
//!   answers with a RST or a SYN of its own. A connection whose first segment is not a SYN was
//!   seen mid-stream: both ends start in "ESTABLISHED (assumed)" ([`Initial::assumed`]); one
//!   whose first segment is a SYN-ACK starts in SYN_RCVD / SYN_SENT (assumed). TIME_WAIT ends
//!   after 2·MSL without a segment, so it is the last state the capture can show.
//! - **Where it stays uncertain.** A RST is taken as accepted (its sequence number is not checked
//!   against the receiver's window, which the capture cannot see exactly, and a RST lost after
//!   the capture point is not seen lost); a segment lost between the capture point and its
//!   receiver is taken as received (a retransmission then changes nothing, as in the state
//!   machine); the times of the transitions are estimates, their order is not (within the rules
//!   above). `docs/plots.md` says the same for users.

use crate::analysis::{ConnIdx, Dir, SegmentInfo, Sink};
use crate::decode::Flags;
use crate::flow::ConnInfo;

/// An RFC 9293 connection state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TcpState {
    /// No connection.
    Closed,
    /// Waiting for a SYN (passive open).
    Listen,
    /// SYN sent, waiting for the peer's SYN.
    SynSent,
    /// SYN received (and the own SYN sent), waiting for its acknowledgment.
    SynRcvd,
    /// Open both ways.
    Established,
    /// Own FIN sent, not yet acknowledged.
    FinWait1,
    /// Own FIN acknowledged, peer's FIN not yet received.
    FinWait2,
    /// Both FINs sent, own not yet acknowledged (simultaneous close).
    Closing,
    /// Both FINs done; waiting 2·MSL.
    TimeWait,
    /// Peer's FIN received; own not yet sent.
    CloseWait,
    /// Own FIN sent after the peer's: waiting for its acknowledgment.
    LastAck,
}

impl TcpState {
    /// Every state, in the order of RFC 9293's figure 5 (the diagram's layout).
    pub const ALL: [TcpState; 11] = [
        TcpState::Closed,
        TcpState::Listen,
        TcpState::SynSent,
        TcpState::SynRcvd,
        TcpState::Established,
        TcpState::FinWait1,
        TcpState::FinWait2,
        TcpState::Closing,
        TcpState::TimeWait,
        TcpState::CloseWait,
        TcpState::LastAck,
    ];

    /// The name as RFC 9293 writes it (with `_` for `-`), e.g. `FIN_WAIT_1`.
    pub fn name(self) -> &'static str {
        match self {
            TcpState::Closed => "CLOSED",
            TcpState::Listen => "LISTEN",
            TcpState::SynSent => "SYN_SENT",
            TcpState::SynRcvd => "SYN_RCVD",
            TcpState::Established => "ESTABLISHED",
            TcpState::FinWait1 => "FIN_WAIT_1",
            TcpState::FinWait2 => "FIN_WAIT_2",
            TcpState::Closing => "CLOSING",
            TcpState::TimeWait => "TIME_WAIT",
            TcpState::CloseWait => "CLOSE_WAIT",
            TcpState::LastAck => "LAST_ACK",
        }
    }
}

/// An endpoint of the connection: `a` (the first SYN's sender, else the first packet's) or `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Endpoint a.
    A,
    /// Endpoint b.
    B,
}

impl Side {
    /// `a` or `b`, as the JSON names endpoints.
    pub fn name(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }
    /// The endpoint that sends in `dir`.
    pub fn sender(dir: Dir) -> Side {
        match dir {
            Dir::AtoB => Side::A,
            Dir::BtoA => Side::B,
        }
    }
    /// Index (a 0, b 1).
    pub fn idx(self) -> usize {
        self as usize
    }
    /// The other endpoint.
    pub fn peer(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// The state an endpoint is taken to be in before its first transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Initial {
    /// The state.
    pub state: TcpState,
    /// Always true in practice: the state before the first segment is never seen, only
    /// inferred (see the module documentation).
    pub assumed: bool,
}

/// One transition of one endpoint, and the segment that caused it.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    /// The endpoint that changed state.
    pub side: Side,
    /// State before.
    pub from: TcpState,
    /// State after.
    pub to: TcpState,
    /// Whether the endpoint sent the causing segment (else it received it).
    pub sent: bool,
    /// Frame of the causing segment.
    pub frame: u64,
    /// When the capture saw the causing segment, s since the connection's first packet.
    pub seen_s: f64,
    /// When the endpoint changed state, estimated: the capture time moved by the endpoint's
    /// distance from the capture point (earlier for a segment it sent, later for one it
    /// received), s since the connection's first packet.
    pub at_s: f64,
    /// The causing segment's flags, e.g. `SYN,ACK`.
    pub flags: String,
    /// The RFC 9293 event, in words (e.g. `active open`, `simultaneous close`).
    pub why: &'static str,
}

/// The states of both endpoints of one connection.
#[derive(Clone, Debug)]
pub struct States {
    /// Connection index (0-based).
    pub conn: ConnIdx,
    /// Endpoints.
    pub info: ConnInfo,
    /// Time of the connection's first packet, ns since the epoch (time 0 of the `_s` times).
    pub t0_ns: u64,
    /// Each endpoint's state before its first transition (by [`Side::idx`]).
    pub initial: [Initial; 2],
    /// Every transition, both endpoints, ordered by [`Transition::at_s`] (each endpoint's own
    /// transitions are in the order it went through them).
    pub transitions: Vec<Transition>,
    /// Each endpoint's distance from the capture point (half its smallest half-loop), s;
    /// `None` when not measurable (taken as 0).
    pub transit_s: [Option<f64>; 2],
}

impl States {
    /// The state each endpoint ended in (by [`Side::idx`]).
    pub fn last(&self) -> [TcpState; 2] {
        let mut s = [self.initial[0].state, self.initial[1].state];
        for t in &self.transitions {
            s[t.side.idx()] = t.to;
        }
        s
    }

    /// The states `side` went through, in order (the initial one first).
    pub fn path(&self, side: Side) -> Vec<TcpState> {
        let mut p = vec![self.initial[side.idx()].state];
        p.extend(self.transitions.iter().filter(|t| t.side == side).map(|t| t.to));
        p
    }
}

/// A segment kept for the state machine (times relative to the connection's first packet).
#[derive(Clone, Copy, Debug)]
struct Seg {
    t_ns: u64,
    side: Side,
    frame: u64,
    flags: Flags,
    seq: u32,
    ack: u32,
    len: u32,
}

impl Seg {
    /// The sequence number after its SYN, payload and FIN.
    fn end(&self) -> u32 {
        self.seq.wrapping_add(self.len + self.flags.syn() as u32 + self.flags.fin() as u32)
    }
    /// Whether it acknowledges sequence number `end` (everything before it).
    fn acks(&self, end: u32) -> bool {
        self.flags.ack() && seq_ge(self.ack, end)
    }
}

/// `a ≥ b` in sequence space (RFC 9293 §3.4, modulo 2^32).
fn seq_ge(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

/// The smallest half-loop on each side of the capture point: for a segment that occupies
/// sequence space (first transmission), the time until the other side's first ACK covering it.
#[derive(Clone, Debug, Default)]
pub(crate) struct HalfLoops {
    /// Per sender side: (end, capture time) of segments awaiting their ACK, oldest first.
    pending: [std::collections::VecDeque<(u32, u64)>; 2],
    /// Highest end sent per side (a segment ending at or below it is a retransmission).
    high: [Option<u32>; 2],
    /// Smallest half-loop measured on each side (the side that answered), ns.
    pub min_ns: [Option<u64>; 2],
}

/// Most segments remembered per side awaiting their ACK: enough for the handshake and the
/// first window of data, which is where the smallest half-loops are (bounded memory).
const HALF_LOOP_PENDING: usize = 256;

impl HalfLoops {
    pub(crate) fn segment(&mut self, side: Side, t_ns: u64, flags: Flags, seq: u32, ack: u32, len: u32) {
        let (me, peer) = (side.idx(), side.peer().idx());
        if flags.ack() && !flags.rst() {
            // Answers on my side: the peer's segments this ACK covers.
            while let Some(&(end, t)) = self.pending[peer].front() {
                if !seq_ge(ack, end) {
                    break;
                }
                self.pending[peer].pop_front();
                let d = t_ns.saturating_sub(t);
                self.min_ns[me] = Some(self.min_ns[me].map_or(d, |m| m.min(d)));
            }
        }
        let end = seq.wrapping_add(len + flags.syn() as u32 + flags.fin() as u32);
        if end == seq || flags.rst() {
            return;
        }
        match self.high[me] {
            Some(h) if !seq_ge(seq, h) => {
                // A retransmission (Karn): its ACK is ambiguous, and so is every later one.
                self.pending[me].retain(|&(e, _)| !seq_ge(e, seq.wrapping_add(1)));
                if seq_ge(end, h) {
                    self.high[me] = Some(end);
                }
            }
            _ => {
                self.high[me] = Some(end);
                if self.pending[me].len() < HALF_LOOP_PENDING {
                    self.pending[me].push_back((end, t_ns));
                }
            }
        }
    }

    /// Each side's distance from the capture point, ns (half its smallest half-loop).
    pub(crate) fn transit_ns(&self) -> [Option<u64>; 2] {
        [self.min_ns[0].map(|m| m / 2), self.min_ns[1].map(|m| m / 2)]
    }
}

/// Flags as the ladder and the state list write them: `SYN,ACK`, `FIN,PSH,ACK`, `.` for none.
pub fn flag_names(f: Flags) -> String {
    const NAMES: [(u16, &str); 9] = [
        (Flags::SYN, "SYN"),
        (Flags::FIN, "FIN"),
        (Flags::RST, "RST"),
        (Flags::PSH, "PSH"),
        (Flags::ACK, "ACK"),
        (Flags::URG, "URG"),
        (Flags::ECE, "ECE"),
        (Flags::CWR, "CWR"),
        (Flags::AE, "AE"),
    ];
    let v: Vec<&str> = NAMES.iter().filter(|(m, _)| f.has(*m)).map(|&(_, n)| n).collect();
    if v.is_empty() { ".".into() } else { v.join(",") }
}

/// Collects what the state machine needs of one connection: its SYN, FIN and RST segments, the
/// first segment of each side, the first segment acknowledging each SYN and FIN, and the
/// half-loops. Bounded by the connection's control segments, not its length.
#[derive(Clone, Debug)]
pub struct StatesSink {
    conn: ConnIdx,
    info: Option<ConnInfo>,
    t0: Option<u64>,
    kept: Vec<Seg>,
    /// Per side: ends of its SYNs and FINs not yet acknowledged by the other side.
    unacked_ctl: [Vec<u32>; 2],
    seen: [bool; 2],
    loops: HalfLoops,
}

impl StatesSink {
    /// For connection `conn` (0-based).
    pub fn new(conn: ConnIdx) -> Self {
        StatesSink {
            conn,
            info: None,
            t0: None,
            kept: Vec::new(),
            unacked_ctl: Default::default(),
            seen: [false; 2],
            loops: HalfLoops::default(),
        }
    }

    /// The states, `None` if the connection never appeared.
    pub fn finish(self) -> Option<States> {
        let info = self.info?;
        let transit = self.loops.transit_ns();
        let (initial, transitions) = infer(&self.kept, transit);
        Some(States {
            conn: self.conn,
            info,
            t0_ns: self.t0.unwrap_or(0),
            initial,
            transitions,
            transit_s: [transit[0].map(|n| n as f64 / 1e9), transit[1].map(|n| n as f64 / 1e9)],
        })
    }
}

impl Sink for StatesSink {
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        if conn == self.conn {
            self.info = Some(*info);
        }
    }

    fn segment(&mut self, s: &SegmentInfo) {
        if s.at.conn != self.conn {
            return;
        }
        let t0 = *self.t0.get_or_insert(s.at.ts_ns);
        let side = Side::sender(s.at.dir);
        let seg = Seg {
            t_ns: s.at.ts_ns.saturating_sub(t0),
            side,
            frame: s.at.frame,
            flags: s.flags,
            seq: s.seq.0,
            ack: s.ack.0,
            len: s.len,
        };
        self.loops.segment(side, seg.t_ns, s.flags, seg.seq, seg.ack, seg.len);
        let ctl = s.flags.syn() || s.flags.fin() || s.flags.rst();
        let peer = side.peer().idx();
        let acks_ctl = self.unacked_ctl[peer].iter().any(|&e| seg.acks(e));
        if acks_ctl {
            self.unacked_ctl[peer].retain(|&e| !seg.acks(e));
        }
        if (s.flags.syn() || s.flags.fin()) && !s.flags.rst() {
            let end = seg.end();
            if !self.unacked_ctl[side.idx()].contains(&end) {
                self.unacked_ctl[side.idx()].push(end);
            }
        }
        if ctl || acks_ctl || !self.seen[side.idx()] {
            self.seen[side.idx()] = true;
            self.kept.push(seg);
        }
    }
}

/// What happens at one endpoint: it sends or receives kept segment `i`.
#[derive(Clone, Copy, Debug)]
struct Local {
    /// Its time on the endpoint's line, ns (estimated).
    t: f64,
    send: bool,
    i: usize,
}

/// Each endpoint's initial state and the transitions of both, ordered by estimated time.
fn infer(kept: &[Seg], transit: [Option<u64>; 2]) -> ([Initial; 2], Vec<Transition>) {
    let mut initial = [Initial { state: TcpState::Established, assumed: true }; 2];
    let Some(first) = kept.first() else { return (initial, Vec::new()) };
    let first_of = |side: Side| kept.iter().find(|s| s.side == side);
    if first.flags.syn() && !first.flags.ack() {
        initial[first.side.idx()] = Initial { state: TcpState::Closed, assumed: true };
        let other = first.side.peer();
        let answers_closed = first_of(other).is_some_and(|s| s.flags.rst() || (s.flags.syn() && !s.flags.ack()));
        let state = if answers_closed { TcpState::Closed } else { TcpState::Listen };
        initial[other.idx()] = Initial { state, assumed: true };
    } else if first.flags.syn() && first.flags.ack() {
        initial[first.side.idx()] = Initial { state: TcpState::SynRcvd, assumed: true };
        initial[first.side.peer().idx()] = Initial { state: TcpState::SynSent, assumed: true };
    }
    // Each side's own SYN and FIN ends (the first of each).
    let mut syn_end = [None; 2];
    let mut fin_end = [None; 2];
    for s in kept {
        if s.flags.syn() && !s.flags.rst() {
            syn_end[s.side.idx()].get_or_insert(s.end());
        }
        if s.flags.fin() && !s.flags.rst() {
            fin_end[s.side.idx()].get_or_insert(s.end());
        }
    }
    let d = [transit[0].unwrap_or(0) as f64, transit[1].unwrap_or(0) as f64];
    let mut out = Vec::new();
    for side in [Side::A, Side::B] {
        let me = side.idx();
        let mut local: Vec<Local> = Vec::new();
        for (i, s) in kept.iter().enumerate() {
            let t = s.t_ns as f64;
            if s.side == side {
                local.push(Local { t: t - d[me], send: true, i });
            } else {
                local.push(Local { t: t + d[me], send: false, i });
            }
        }
        // The acknowledgment rule: the receipt of a peer's SYN or FIN lies after this side's
        // last segment not acknowledging it and before its first one that does.
        let sends: Vec<(f64, &Seg)> = local.iter().filter(|l| l.send).map(|l| (l.t, &kept[l.i])).collect();
        // Only the first segment carrying each SYN or FIN: a copy (a SYN-ACK after a SYN in a
        // simultaneous open, a retransmission) may arrive after the acknowledgment.
        let mut placed: Vec<u32> = Vec::new();
        for l in local.iter_mut().filter(|l| !l.send) {
            let s = &kept[l.i];
            if !(s.flags.syn() || s.flags.fin()) || s.flags.rst() || placed.contains(&s.end()) {
                continue;
            }
            let end = s.end();
            placed.push(end);
            let hi = sends.iter().find(|(_, x)| x.acks(end)).map(|(t, _)| *t);
            // A segment shows it had not received C if it acknowledges less, or is a SYN
            // without ACK (an endpoint that received a SYN answers with a SYN-ACK).
            let unaware = |x: &Seg| (x.flags.ack() && !x.acks(end)) || (x.flags.syn() && !x.flags.ack());
            let lo =
                sends.iter().rev().filter(|(t, x)| unaware(x) && hi.is_none_or(|h| *t < h)).map(|(t, _)| *t).next();
            // Half a nanosecond either side of the bound: after it, or before it, whatever
            // the estimated times say (ties keep capture order).
            if let Some(hi) = hi
                && l.t > hi
            {
                l.t = hi - 0.5;
            }
            if let Some(lo) = lo
                && l.t < lo
                && hi.is_none_or(|hi| lo + 0.5 < hi)
            {
                l.t = lo + 0.5;
            }
        }
        // Stable: equal times keep capture order.
        local.sort_by(|x, y| x.t.total_cmp(&y.t).then(x.i.cmp(&y.i)));
        let mut state = initial[me].state;
        let mut passive = state == TcpState::Listen;
        for l in local {
            let s = &kept[l.i];
            let next = if l.send { on_send(state, s) } else { on_recv(state, s, syn_end[me], fin_end[me], passive) };
            if let Some((to, why)) = next
                && to != state
            {
                if to == TcpState::SynRcvd && state == TcpState::Listen {
                    passive = true;
                }
                out.push(Transition {
                    side,
                    from: state,
                    to,
                    sent: l.send,
                    frame: s.frame,
                    seen_s: s.t_ns as f64 / 1e9,
                    at_s: (l.t / 1e9).max(0.0),
                    flags: flag_names(s.flags),
                    why,
                });
                state = to;
            }
        }
    }
    out.sort_by(|x, y| x.at_s.total_cmp(&y.at_s).then(x.frame.cmp(&y.frame)));
    (initial, out)
}

/// The transition an endpoint in `state` takes when it sends `s` (RFC 9293 figure 5).
fn on_send(state: TcpState, s: &Seg) -> Option<(TcpState, &'static str)> {
    use TcpState::*;
    let f = s.flags;
    if f.rst() {
        return (state != Closed && state != Listen).then_some((Closed, "sent RST: abort"));
    }
    if f.syn() && !f.ack() {
        return matches!(state, Closed | Listen).then_some((SynSent, "active open"));
    }
    if f.syn() && f.ack() {
        return matches!(state, Listen | SynSent).then_some((SynRcvd, "sent SYN,ACK"));
    }
    if f.fin() {
        return match state {
            Established | SynRcvd => Some((FinWait1, "close: sent FIN")),
            CloseWait => Some((LastAck, "passive close: sent FIN")),
            _ => None,
        };
    }
    None
}

/// The transition an endpoint in `state` (its SYN ending at `syn_end`, its FIN at `fin_end`)
/// takes when it receives `s`; `passive`: it came to SYN_RCVD from LISTEN.
fn on_recv(
    state: TcpState,
    s: &Seg,
    syn_end: Option<u32>,
    fin_end: Option<u32>,
    passive: bool,
) -> Option<(TcpState, &'static str)> {
    use TcpState::*;
    let f = s.flags;
    let acked = |end: Option<u32>| end.is_some_and(|e| s.acks(e));
    if f.rst() {
        return match state {
            Closed | Listen => None,
            // RFC 9293 §3.10.7.3: in SYN_SENT only a RST acknowledging the SYN counts.
            SynSent => (acked(syn_end) || syn_end.is_none()).then_some((Closed, "received RST: refused")),
            SynRcvd if passive => Some((Listen, "received RST: back to LISTEN")),
            TimeWait => Some((Closed, "received RST in TIME_WAIT")),
            _ => Some((Closed, "received RST: reset")),
        };
    }
    if f.syn() && !f.ack() {
        return match state {
            Listen => Some((SynRcvd, "passive open: received SYN")),
            SynSent => Some((SynRcvd, "simultaneous open: received SYN")),
            _ => None,
        };
    }
    if f.syn() && f.ack() {
        return match state {
            SynSent | SynRcvd if acked(syn_end) || syn_end.is_none() => Some((Established, "received SYN,ACK")),
            SynSent => Some((SynRcvd, "simultaneous open: received SYN")),
            _ => None,
        };
    }
    let fin_acked = acked(fin_end);
    match (state, f.fin()) {
        (SynRcvd, false) if acked(syn_end) || syn_end.is_none() => Some((Established, "received ACK of SYN")),
        (SynRcvd, true) => Some((CloseWait, "received FIN")),
        (Established, true) => Some((CloseWait, "received FIN")),
        (FinWait1, true) if fin_acked => Some((TimeWait, "received FIN,ACK of its FIN")),
        (FinWait1, true) => Some((Closing, "simultaneous close: received FIN")),
        (FinWait1, false) if fin_acked => Some((FinWait2, "received ACK of FIN")),
        (FinWait2, true) => Some((TimeWait, "received FIN")),
        (Closing, _) if fin_acked => Some((TimeWait, "received ACK of FIN")),
        (LastAck, _) if fin_acked => Some((Closed, "received ACK of FIN")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Settings;
    use crate::series::run_pkts;
    use crate::testutil::{flag::*, scripted};
    use TcpState::*;

    fn states(pkts: &[crate::testutil::Pkt]) -> States {
        run_pkts(pkts, Settings::default(), StatesSink::new(0)).finish().unwrap()
    }

    fn paths(s: &States) -> (Vec<TcpState>, Vec<TcpState>) {
        (s.path(Side::A), s.path(Side::B))
    }

    /// The handshake: a 10 ms from b (the capture is next to a).
    fn open() -> Vec<crate::testutil::Pkt> {
        vec![
            scripted(true, 0.0, SYN, 0, 0, 0, 1000, vec![]),
            scripted(false, 20.0, SYN | ACK, 0, 0, 0, 1000, vec![]),
            scripted(true, 20.1, ACK, 0, 0, 0, 1000, vec![]),
        ]
    }

    #[test]
    fn active_close_by_a_and_passive_close_by_b() {
        let mut p = open();
        p.push(scripted(true, 30.0, PSH | ACK, 0, 0, 10, 1000, vec![]));
        p.push(scripted(false, 50.0, ACK, 0, 10, 0, 1000, vec![]));
        p.push(scripted(true, 60.0, FIN | ACK, 10, 0, 0, 1000, vec![]));
        p.push(scripted(false, 80.0, ACK, 0, 11, 0, 1000, vec![]));
        p.push(scripted(false, 90.0, FIN | ACK, 0, 11, 0, 1000, vec![]));
        p.push(scripted(true, 90.1, ACK, 11, 1, 0, 1000, vec![]));
        let s = states(&p);
        let (a, b) = paths(&s);
        assert_eq!(a, [Closed, SynSent, Established, FinWait1, FinWait2, TimeWait]);
        assert_eq!(b, [Listen, SynRcvd, Established, CloseWait, LastAck, Closed]);
        assert!(s.initial.iter().all(|i| i.assumed));
        // The capture is next to a: a's half-loop is 0.1 ms, b's 20 ms.
        let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 1e-9);
        assert!(near(s.transit_s[0], 0.00005) && near(s.transit_s[1], 0.01), "{:?}", s.transit_s);
        // b received the SYN 10 ms after the capture saw it; a sent it when the capture saw it.
        let b_open = s.transitions.iter().find(|t| t.side == Side::B && t.to == SynRcvd).unwrap();
        assert_eq!((b_open.frame, b_open.sent), (1, false));
        assert!((b_open.at_s - 0.010).abs() < 1e-9, "{}", b_open.at_s);
        let fin = s.transitions.iter().find(|t| t.to == FinWait1).unwrap();
        assert_eq!((fin.side, fin.frame, fin.flags.as_str(), fin.sent), (Side::A, 6, "FIN,ACK", true));
    }

    #[test]
    fn simultaneous_close_neither_fin_acknowledges_the_other() {
        let mut p = open();
        p.push(scripted(true, 30.0, FIN | ACK, 0, 0, 0, 1000, vec![]));
        // b's FIN, sent (10 ms before the capture saw it) before a's arrived: it does not
        // acknowledge a's FIN.
        p.push(scripted(false, 41.0, FIN | ACK, 0, 0, 0, 1000, vec![]));
        p.push(scripted(true, 41.1, ACK, 1, 1, 0, 1000, vec![]));
        p.push(scripted(false, 60.0, ACK, 1, 1, 0, 1000, vec![]));
        let s = states(&p);
        let (a, b) = paths(&s);
        assert_eq!(a, [Closed, SynSent, Established, FinWait1, Closing, TimeWait]);
        assert_eq!(b, [Listen, SynRcvd, Established, FinWait1, Closing, TimeWait]);
    }

    #[test]
    fn simultaneous_open() {
        let p = vec![
            scripted(true, 0.0, SYN, 0, 0, 0, 1000, vec![]),
            scripted(false, 0.5, SYN, 0, 0, 0, 1000, vec![]),
            scripted(true, 1.0, SYN | ACK, 0, 0, 0, 1000, vec![]),
            scripted(false, 1.2, SYN | ACK, 0, 0, 0, 1000, vec![]),
        ];
        let s = states(&p);
        let (a, b) = paths(&s);
        assert_eq!(a, [Closed, SynSent, SynRcvd, Established]);
        assert_eq!(b, [Closed, SynSent, SynRcvd, Established]);
    }

    #[test]
    fn rst_in_each_state() {
        // Refused: b answers the SYN with a RST.
        let s = states(&[
            scripted(true, 0.0, SYN, 0, 0, 0, 1000, vec![]),
            scripted(false, 1.0, RST | ACK, 0, 0, 0, 0, vec![]),
        ]);
        assert_eq!(paths(&s), (vec![Closed, SynSent, Closed], vec![Closed]));
        // Reset while established, by b (sent 10 ms before the capture saw it, after the ACK of
        // its SYN-ACK reached it).
        let mut p = open();
        p.push(scripted(false, 50.0, RST | ACK, 0, 0, 0, 0, vec![]));
        let (a, b) = paths(&states(&p));
        assert_eq!(a, [Closed, SynSent, Established, Closed]);
        assert_eq!(b, [Listen, SynRcvd, Established, Closed]);
        // Reset in FIN_WAIT_2 (a) / CLOSE_WAIT (b).
        let mut p = open();
        p.push(scripted(true, 30.0, FIN | ACK, 0, 0, 0, 1000, vec![]));
        p.push(scripted(false, 50.0, ACK, 0, 1, 0, 1000, vec![]));
        p.push(scripted(false, 60.0, RST | ACK, 0, 1, 0, 0, vec![]));
        let (a, b) = paths(&states(&p));
        assert_eq!(a, [Closed, SynSent, Established, FinWait1, FinWait2, Closed]);
        assert_eq!(b, [Listen, SynRcvd, Established, CloseWait, Closed]);
        // A RST answering the SYN-ACK sends b back to LISTEN.
        let s = states(&[
            scripted(true, 0.0, SYN, 0, 0, 0, 1000, vec![]),
            scripted(false, 1.0, SYN | ACK, 0, 0, 0, 1000, vec![]),
            scripted(true, 1.1, RST, 0, 0, 0, 0, vec![]),
        ]);
        assert_eq!(paths(&s), (vec![Closed, SynSent, Established, Closed], vec![Listen, SynRcvd, Listen]));
    }

    #[test]
    fn half_close_data_after_fin_changes_no_state() {
        let mut p = open();
        p.push(scripted(true, 30.0, FIN | ACK, 0, 0, 0, 1000, vec![]));
        p.push(scripted(false, 50.0, ACK, 0, 1, 0, 1000, vec![]));
        for k in 0..3 {
            p.push(scripted(false, 60.0 + k as f64, PSH | ACK, k * 100, 1, 100, 1000, vec![]));
            p.push(scripted(true, 60.5 + k as f64, ACK, 1, (k + 1) * 100, 0, 1000, vec![]));
        }
        p.push(scripted(false, 70.0, FIN | ACK, 300, 1, 0, 1000, vec![]));
        p.push(scripted(true, 70.1, ACK, 1, 301, 0, 1000, vec![]));
        let (a, b) = paths(&states(&p));
        assert_eq!(a, [Closed, SynSent, Established, FinWait1, FinWait2, TimeWait]);
        assert_eq!(b, [Listen, SynRcvd, Established, CloseWait, LastAck, Closed]);
    }

    #[test]
    fn mid_stream_starts_established_assumed() {
        let p = vec![
            scripted(true, 0.0, ACK, 100, 0, 10, 1000, vec![]),
            scripted(false, 10.0, FIN | ACK, 0, 110, 0, 1000, vec![]),
            scripted(true, 10.1, FIN | ACK, 110, 1, 0, 1000, vec![]),
            scripted(false, 20.0, ACK, 1, 111, 0, 1000, vec![]),
        ];
        let s = states(&p);
        assert_eq!(s.initial, [Initial { state: Established, assumed: true }; 2]);
        let (a, b) = paths(&s);
        assert_eq!(a, [Established, CloseWait, LastAck, Closed]);
        // b's FIN was acknowledged by a's FIN: FIN_WAIT_1 straight to TIME_WAIT.
        assert_eq!(b, [Established, FinWait1, TimeWait]);
    }
}

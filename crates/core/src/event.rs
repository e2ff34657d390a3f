//! What the analysis tells its consumers.
//!
//! Every segment produces one [`SegmentInfo`] (what it was, classified); notable facts produce an
//! [`Event`]. Both carry their evidence: connection, direction, frame number and time. Consumers
//! ([`crate::stats`], the series, screening) implement [`crate::sink::Sink`] and never see
//! packets.
//! The definitions are in `docs/statistics.md`; each variant names the tcptrace / Wireshark
//! counterpart.

pub use crate::conn::{ConnIdx, Dir};
use crate::decode::Flags;
use crate::seq::{SeqNum, SeqOff};

/// Where an event happened: the evidence every event carries.
#[derive(Clone, Copy, Debug)]
pub struct At {
    /// The connection.
    pub conn: ConnIdx,
    /// Direction of the packet that triggered the event.
    pub dir: Dir,
    /// The file holding that packet, by the index [`crate::sink::Sink::file`] names it by: the
    /// connection's own file ([`crate::flow::ConnInfo::file`]) is only where its first packet
    /// was, and a connection crossing the files of a ring has later packets in later files.
    /// (`u32`, not `usize`: it fits in the padding after `dir`, so `At` stays 32 bytes.)
    pub file: u32,
    /// 1-based frame number of that packet within its file.
    pub frame: u64,
    /// Its capture time, ns since the epoch.
    pub ts_ns: u64,
}

/// One TCP segment as the analysis classified it.
#[derive(Clone, Copy, Debug)]
pub struct SegmentInfo {
    /// Connection, direction, frame, time.
    pub at: At,
    /// TCP flags.
    pub flags: Flags,
    /// Offset of the first sequence number it occupies (the SYN's own offset is -1).
    pub seq_off: SeqOff,
    /// The sequence number as on the wire.
    pub seq: SeqNum,
    /// The acknowledgment number field as on the wire (meaningful when ACK is set).
    pub ack: SeqNum,
    /// Payload length from the IP header.
    pub len: u32,
    /// Payload bytes not seen before in this direction.
    pub new_bytes: u32,
    /// Payload bytes seen before in this direction (the tcptrace rule).
    pub rexmit_bytes: u32,
    /// Whether any sequence byte (payload, SYN or FIN) was seen before: a retransmission.
    pub is_rexmit: bool,
    /// Payload bytes missing from the capture (snaplen).
    pub truncated_bytes: u32,
    /// The acknowledged offset in the peer's sequence space, if ACK is set.
    pub ack_off: Option<SeqOff>,
    /// Advertised window in bytes: scaled when the scale is known, raw otherwise.
    pub win_bytes: u64,
    /// The shift applied to get `win_bytes`, `None` when unknown (handshake not captured).
    pub wscale: Option<u8>,
    /// Bytes in flight in this direction after this segment (SACK-aware), for data segments
    /// once the peer has acknowledged something.
    pub in_flight: Option<u64>,
    /// Number of SACK blocks carried.
    pub sack_blocks: u8,
    /// Its TSval, when it carried timestamps.
    pub tsval: Option<u32>,
    /// IPv4 identification (0 for IPv6, which has none in the fixed header).
    pub ip_id: u16,
    /// TTL or hop limit.
    pub ttl: u8,
    /// Options seen on it (for MSS / window scale / SACK-permitted reporting).
    pub mss: Option<u16>,
    /// Window scale option as sent (unclamped).
    pub wscale_opt: Option<u8>,
    /// SACK-permitted option present.
    pub sack_permitted: bool,
    /// IP and TCP header bytes (options and IPv6 extension headers included): the segment's
    /// size on the wire is this plus `len`.
    pub hdr_len: u16,
}

impl SegmentInfo {
    /// The window field as on the wire, not scaled: `win_bytes` is it shifted by `wscale`.
    pub fn win_raw(&self) -> u16 {
        (self.win_bytes >> self.wscale.unwrap_or(0)) as u16
    }

    /// The wire sequence number of its direction's offset 0 (offset = wire − base, modulo
    /// 2^32): the ISN + 1 when the SYN was seen, else the first segment's sequence number. The
    /// same for every segment of a direction.
    pub fn seq_base(&self) -> SeqNum {
        SeqNum(self.seq.0.wrapping_sub(self.seq_off.0 as u32))
    }

    /// Whether it carried a TCP timestamps option.
    pub fn has_timestamps(&self) -> bool {
        self.tsval.is_some()
    }
}

/// What an ACK that newly acknowledged the peer's payload did: the receiver's ACK strategy
/// (`docs/statistics.md`, *Acknowledgment strategy*), given with [`Event::AckAdvance`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFacts {
    /// Its class.
    pub kind: AckKind,
    /// The acknowledging segment carried payload, a SYN or a FIN (the ACK rode on it).
    pub carried: bool,
    /// It is the second quick ACK in a row: a quick-ACK episode starts.
    pub episode: bool,
    /// The receiver's delay from the arrival of the oldest data it newly acknowledges to the
    /// ACK, the capture point's half-loop (`loop_ns`) taken off; `u64::MAX` when not measurable
    /// (the ACK covers a retransmission, data sent out of order, or bytes never captured).
    pub delay_ns: u64,
    /// The half-loop taken off: the smallest data-to-ACK time seen so far for this data
    /// (`u64::MAX` before any).
    pub loop_ns: u64,
}

impl AckFacts {
    /// The delay, when measured.
    pub fn delay(&self) -> Option<u64> {
        (self.delay_ns != u64::MAX).then_some(self.delay_ns)
    }

    /// The half-loop, once measured.
    pub fn half_loop(&self) -> Option<u64> {
        (self.loop_ns != u64::MAX).then_some(self.loop_ns)
    }
}

/// The class of an acknowledgment, by what it acknowledged and how long it waited ("full": the
/// sender's largest segment, at most the receiver's MSS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckKind {
    /// Up to one full segment, pure, sent at once (delay under
    /// [`crate::analysis::DELAYED_MIN_NS`]).
    Quick,
    /// Up to one full segment, pure, held by the delayed-ACK timer.
    Delayed,
    /// Up to one full segment, pure, delay not measurable.
    Untimed,
    /// Up to one full segment, riding on data, a SYN or a FIN.
    Piggybacked,
    /// More than one and at most two full segments: the every-second-segment rule.
    Pair,
    /// More than two full segments: a stretch ACK.
    Stretch,
}

impl AckKind {
    /// Name as in plots' legends.
    pub fn name(self) -> &'static str {
        match self {
            AckKind::Quick => "quick",
            AckKind::Delayed => "delayed",
            AckKind::Untimed => "untimed",
            AckKind::Piggybacked => "piggybacked",
            AckKind::Pair => "pair",
            AckKind::Stretch => "stretch",
        }
    }
}

/// How an RTT sample was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RttKind {
    /// A data segment (or SYN/FIN) matched with the ACK whose number is exactly its end, the
    /// segment never retransmitted and no earlier segment covered by the same ACK sent after it
    /// (Karn's rule, RFC 6298 §3; tcptrace's "RTT samples").
    Karn,
    /// A TSval first seen in this direction matched with the first TSecr echoing it
    /// (RFC 7323 §4; as pping does).
    Timestamp,
}

/// The class of an out-of-sequence segment (a retransmission, a hole fill or a window probe):
/// why it was sent, as far as the capture shows (rules in `docs/screening.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OosClass {
    /// Resent after the retransmission timer expired.
    Rto,
    /// Resent on loss evidence from the receiver (duplicate ACKs or SACK).
    FastRetransmit,
    /// Linux's tail-loss probe (RFC 8985 §7): the last segment resent after about two RTTs
    /// without any loss evidence.
    TailLossProbe,
    /// Delivered late by the network: a hole filled too soon after it opened to be a
    /// retransmission.
    Reordering,
    /// A copy the network made: same sequence, IP ID and TSval as an earlier packet.
    NetworkDuplicate,
    /// Resent although the receiver already had it (acknowledged, or reported by a D-SACK).
    Spurious,
    /// A zero-window probe.
    FlowControl,
    /// A SYN or SYN-ACK sent again: the handshake's own timer (RFC 6298 §5.7: the first
    /// timeout is 1 s), or a SYN-ACK answering a repeated SYN.
    SynTimeout,
    /// None of the rules fit.
    Unknown,
}

impl OosClass {
    /// Every class, in the order of the JSON's counts.
    pub const ALL: [OosClass; 9] = [
        OosClass::Rto,
        OosClass::FastRetransmit,
        OosClass::Reordering,
        OosClass::NetworkDuplicate,
        OosClass::Spurious,
        OosClass::FlowControl,
        OosClass::Unknown,
        OosClass::TailLossProbe,
        OosClass::SynTimeout,
    ];

    /// Name as in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            OosClass::Rto => "rto",
            OosClass::FastRetransmit => "fast_retransmit",
            OosClass::TailLossProbe => "tail_loss_probe",
            OosClass::Reordering => "reordering",
            OosClass::NetworkDuplicate => "network_duplicate",
            OosClass::Spurious => "spurious",
            OosClass::FlowControl => "flow_control",
            OosClass::SynTimeout => "syn_timeout",
            OosClass::Unknown => "unknown",
        }
    }

    /// Whether it repairs a real loss of data (starts loss recovery).
    pub fn is_loss(self) -> bool {
        matches!(self, OosClass::Rto | OosClass::FastRetransmit | OosClass::TailLossProbe)
    }

    /// Whether it resends bytes the sender believed lost: every class but reordering, network
    /// duplicates and window probes.
    pub fn is_retransmission(self) -> bool {
        !matches!(self, OosClass::Reordering | OosClass::NetworkDuplicate | OosClass::FlowControl)
    }

    /// Whether the sender waited for its retransmission timer (or the probe timer) before
    /// sending it. A handshake resend is timer-driven too, but a SYN-ACK sent again usually
    /// answers a repeated SYN: screening counts the SYN's wait only.
    pub fn is_timeout(self) -> bool {
        matches!(self, OosClass::Rto | OosClass::TailLossProbe)
    }
}

/// Why an out-of-sequence segment is in its class: the rule that decided it and what the rule
/// read, at the moment the segment was sent (times in ns). The analysis gives it to
/// [`crate::sink::Sink::evidence`] right after the event it explains.
#[derive(Clone, Debug, PartialEq)]
pub struct Evidence {
    /// The class.
    pub class: OosClass,
    /// Offset of the segment's first sequence number (a window probe: the peer's cumulative
    /// ACK).
    pub seq_off: SeqOff,
    /// Which rule decided it, in words.
    pub rule: &'static str,
    /// Frame of the previous copy of these bytes, when remembered.
    pub prev_frame: Option<u64>,
    /// Time since the previous copy was sent (retransmission) or since the segment before the
    /// hole (hole fill): Tstat's "RT".
    pub since_prev_ns: Option<f64>,
    /// Hole fill: time since the segment after the hole (Tstat's "ΔT").
    pub since_hole_ns: Option<f64>,
    /// Duplicate ACKs of the current cumulative ACK.
    pub dup_acks: u32,
    /// A SACK block above it had been received.
    pub sack_above: bool,
    /// RTT estimate: the sum of the two half-loops' means.
    pub rtt_ns: Option<f64>,
    /// Minimum RTT estimate.
    pub rtt_min_ns: Option<f64>,
    /// RTO estimate.
    pub rto_ns: f64,
    /// Where the RTT estimate came from: "both halves", "one half" or "none".
    pub rtt_source: &'static str,
}

/// A notable fact about a connection.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A packet carried sequence bytes already seen in its direction (tcptrace `R`;
    /// Wireshark's retransmission family). `bytes` counts payload bytes only.
    Retransmission {
        /// Offset of its first sequence number.
        seq_off: SeqOff,
        /// Retransmitted payload bytes.
        bytes: u32,
        /// When the first repeated range was last sent before, and in which frame, while it is
        /// still unacknowledged and remembered (`None` once acknowledged).
        prev_sent: Option<(u64, u64)>,
        /// Every sequence byte it carries was already acknowledged, cumulatively or by SACK:
        /// the receiver had it, so the retransmission was not needed.
        acked: bool,
        /// Why it was sent (the evidence follows the event, see [`Evidence`]); `None` when the
        /// pass does not classify ([`crate::sink::Sink::CLASSIFY`]).
        class: Option<OosClass>,
    },
    /// A packet filled a hole below the highest sequence number seen (tcptrace `O`).
    OutOfOrder {
        /// Offset of its first sequence number.
        seq_off: SeqOff,
        /// Why it came late (a packet that is also a retransmission is classified there, and
        /// this is that class; the evidence follows the event, see [`Evidence`]); `None` when
        /// the pass does not classify.
        class: Option<OosClass>,
    },
    /// A packet started above the highest byte seen: the bytes in between were not (yet)
    /// captured (Wireshark "previous segment not captured").
    Hole {
        /// First missing offset.
        from: SeqOff,
        /// Offset after the last missing byte.
        to: SeqOff,
    },
    /// The peer acknowledged bytes the capture never saw (Wireshark "ACKed unseen segment").
    AckedUnseen {
        /// Bytes newly acknowledged without having been seen.
        bytes: u64,
    },
    /// The peer's cumulative ACK advanced over this direction's payload (the event's direction
    /// is the data's; its frame is the ACK).
    AckAdvance {
        /// Payload bytes newly acknowledged (SYN and FIN excluded).
        bytes: u64,
        /// What the ACK was, as the receiver's ACK strategy.
        ack: AckFacts,
    },
    /// A pure ACK that acknowledged nothing new, moved no window, carried no SACK block and
    /// answered nothing: the peer had sent nothing since this side's previous segment (the
    /// event's direction is the ACK's).
    UselessAck,
    /// A duplicate ACK (Wireshark's rule, see docs); `n` counts the duplicates of this ack.
    DupAck {
        /// 1 for the first duplicate, 3 for the third ("triple").
        n: u32,
        /// Acknowledged offset (peer's sequence space).
        ack_off: SeqOff,
    },
    /// A D-SACK (RFC 2883): the first SACK block reports bytes received twice.
    Dsack {
        /// Start of the duplicate range (peer's sequence space).
        from: SeqOff,
        /// End of it.
        to: SeqOff,
    },
    /// A D-SACK showed that a retransmission was not needed: the receiver got those bytes twice.
    /// The event's direction is the data's, its frame the D-SACK; the retransmission is
    /// [`OosClass::Spurious`] from now on.
    Unneeded {
        /// Offset of the retransmission's first sequence number.
        seq_off: SeqOff,
        /// Its frame.
        resent_frame: u64,
        /// The class it had.
        was: OosClass,
    },
    /// A SACK block (RFC 2018) other than a D-SACK, as the packet reported it, in the peer's
    /// sequence space; the event's direction and frame are the acknowledging packet's. One event
    /// per block, in the order carried. Used by plots (tcptrace draws these as purple bars).
    Sack {
        /// Left edge (first SACKed offset).
        from: SeqOff,
        /// Right edge (offset after the last SACKed byte).
        to: SeqOff,
    },
    /// A window advertisement of zero (not on SYN or RST).
    ZeroWindow,
    /// A segment sent while the peer's window was zero: payload, or the 0-byte probe Linux
    /// sends at snd_una - 1 (tcptrace `zwnd probe`, Wireshark `zero_window_probe`).
    ZeroWindowProbe {
        /// Payload bytes.
        len: u32,
    },
    /// A keep-alive: 0 or 1 byte at snd_max - 1 while the window is open.
    KeepAlive,
    /// The right window edge (ack + window) moved left: the receiver took back offered window.
    WindowShrink {
        /// Bytes the edge moved left.
        by: u64,
    },
    /// An RTT sample; the event's direction is the direction of the data (the sender), its frame
    /// the acknowledging packet.
    RttSample {
        /// Round-trip time in ns.
        rtt_ns: u64,
        /// How it was obtained.
        kind: RttKind,
        /// Frame of the segment (or TSval) it was measured from.
        sent_frame: u64,
    },
    /// An ACK ended exactly on a segment that had been retransmitted: ambiguous, no sample
    /// (Karn's rule; tcptrace "ambiguous acks").
    KarnDiscard,
    /// An ACK ended exactly on a segment but an earlier segment it covers was sent later
    /// (a retransmission): no sample (tcptrace "post-loss acks").
    PostLossAck,
    /// A segment whose checksum fails (not checksum offload), with checksum verification on:
    /// counted in its connection and direction, and not analysed (docs/statistics.md §
    /// Checksums).
    ChecksumError,
    /// A segment whose checksums were verified and analysed (`--checksums`): right, or
    /// failing as checksum offload on the capturing host leaves them (`offloaded`).
    ChecksumVerified {
        /// The TCP checksum holds what offload leaves, not the right sum.
        offloaded: bool,
    },
    /// The window scale of a connection seen without its handshake, inferred with certainty
    /// from its behaviour (`analysis/wscale.rs`, docs/statistics.md) and applied from this
    /// packet on. The event's direction is the window advertiser's.
    WscaleInferred {
        /// The shift.
        shift: u8,
    },
    /// Analysis state hit a fixed capacity; numbers after this point may be approximate.
    AnalysisPartial {
        /// Which structure.
        what: &'static str,
    },
}

impl Event {
    /// Every event's name, as [`Event::name`] gives it: the stable vocabulary of `--json`, the
    /// viewer's API and its page.
    pub const NAMES: &'static [&'static str] = &[
        "retransmission",
        "out_of_order",
        "hole",
        "acked_unseen",
        "ack_advance",
        "useless_ack",
        "dup_ack",
        "dsack",
        "unneeded",
        "sack",
        "zero_window",
        "zero_window_probe",
        "keep_alive",
        "window_shrink",
        "rtt_sample",
        "karn_discard",
        "post_loss_ack",
        "analysis_partial",
        "wscale_inferred",
    ];

    /// The event's stable name.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Retransmission { .. } => "retransmission",
            Event::OutOfOrder { .. } => "out_of_order",
            Event::Hole { .. } => "hole",
            Event::AckedUnseen { .. } => "acked_unseen",
            Event::AckAdvance { .. } => "ack_advance",
            Event::UselessAck => "useless_ack",
            Event::DupAck { .. } => "dup_ack",
            Event::Dsack { .. } => "dsack",
            Event::Unneeded { .. } => "unneeded",
            Event::Sack { .. } => "sack",
            Event::ZeroWindow => "zero_window",
            Event::ZeroWindowProbe { .. } => "zero_window_probe",
            Event::KeepAlive => "keep_alive",
            Event::WindowShrink { .. } => "window_shrink",
            Event::RttSample { .. } => "rtt_sample",
            Event::KarnDiscard => "karn_discard",
            Event::PostLossAck => "post_loss_ack",
            Event::ChecksumError => "checksum_error",
            Event::ChecksumVerified { .. } => "checksum_verified",
            Event::AnalysisPartial { .. } => "analysis_partial",
            Event::WscaleInferred { .. } => "wscale_inferred",
        }
    }

    /// Whether the event is raised by an acknowledgment about the peer's data and carries the
    /// acknowledging packet's direction in [`At::dir`]: duplicate ACKs, SACK and D-SACK blocks,
    /// useless ACKs, zero windows, window shrinks and inferred window scales. Every other event carries the direction of the data it
    /// is about (for the ACK-driven ones, the analysis reverses the ACK's direction: acked
    /// unseen bytes, ACK advances, RTT samples, Karn discards, post-loss ACKs).
    pub fn carries_ack_dir(&self) -> bool {
        matches!(
            self,
            Event::DupAck { .. }
                | Event::UselessAck
                | Event::Dsack { .. }
                | Event::Sack { .. }
                | Event::ZeroWindow
                | Event::WindowShrink { .. }
                | Event::WscaleInferred { .. }
        )
    }

    /// The direction whose data the event is about, for an event emitted with `at` (the
    /// time-sequence plot to show it on).
    pub fn data_dir(&self, at: Dir) -> Dir {
        if self.carries_ack_dir() { at.rev() } else { at }
    }

    /// Its values in words (sequence offsets relative to the data's base).
    pub fn describe(&self) -> String {
        match *self {
            Event::Retransmission { seq_off, bytes, prev_sent, acked, class } => {
                let prev = prev_sent.map_or(String::new(), |(_, frame)| format!(", sent before in frame {frame}"));
                let acked = if acked { ", already acknowledged" } else { "" };
                format!("seq {seq_off}, {bytes} bytes{prev}{acked}{}", class_text(class))
            }
            Event::OutOfOrder { seq_off, class } => format!("seq {seq_off}{}", class_text(class)),
            Event::Hole { from, to } => format!("{from}..{to} not captured"),
            Event::AckedUnseen { bytes } => format!("{bytes} bytes"),
            Event::AckAdvance { bytes, .. } => format!("{bytes} bytes"),
            Event::UselessAck => String::new(),
            Event::DupAck { n, ack_off } => format!("#{n} of ack {ack_off}"),
            Event::Dsack { from, to } => format!("{from}..{to}"),
            Event::Sack { from, to } => format!("{from}..{to}"),
            Event::ZeroWindow => String::new(),
            Event::ZeroWindowProbe { len } => format!("{len} bytes"),
            Event::Unneeded { seq_off, resent_frame, was } => {
                format!("seq {seq_off} resent in frame {resent_frame} ({}) was not needed", was.name())
            }
            Event::KeepAlive => String::new(),
            Event::WindowShrink { by } => format!("by {by} bytes"),
            Event::RttSample { rtt_ns, kind, sent_frame } => {
                let k = match kind {
                    RttKind::Karn => "karn",
                    RttKind::Timestamp => "timestamp",
                };
                format!("{:.3} ms ({k}, sent in frame {sent_frame})", rtt_ns as f64 / 1e6)
            }
            Event::KarnDiscard => String::new(),
            Event::PostLossAck => String::new(),
            Event::ChecksumError => String::new(),
            Event::ChecksumVerified { offloaded } => if offloaded { "offloaded" } else { "" }.to_string(),
            Event::AnalysisPartial { what } => what.to_string(),
            Event::WscaleInferred { shift } => format!("shift {shift}"),
        }
    }
}

/// A class as `describe` appends it.
fn class_text(class: Option<OosClass>) -> String {
    class.map_or(String::new(), |c| format!("; {}", c.name()))
}

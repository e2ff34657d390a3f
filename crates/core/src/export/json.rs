//! The `--json` output of `conns` and `stats`.
//!
//! # Format
//! ```text
//! { "files": [FileSummary...], "connections": [Connection...] }
//! ```
//! `Connection`: `id`, `file`, `a` and `b` (`{"addr","port"}`), `state`, `handshake`, `reuse`,
//! `first_time`, `last_time` (seconds since the epoch, float), `duration_s`, `max_idle_s`,
//! `a2b` and `b2a` (a [`DirJson`] each). Field meanings: `docs/json.md` and
//! `docs/statistics.md`. The schema only ever gains fields.

use serde::Serialize;

use crate::flow::{Endpoint, SplitReason};
use crate::pass::Analysis;
use crate::stats::{ConnStats, DirStats, Mean, Summary};
use crate::table::{Field, Kind, KindOf, Table, names};

/// An endpoint.
#[derive(Serialize)]
pub struct EndpointJson {
    /// IP address as text.
    pub addr: String,
    /// Port.
    pub port: u16,
}

impl Table for EndpointJson {
    const NAME: &'static str = "endpoint";
    const FIELDS: &'static [Field] =
        &[Field::new("addr", Kind::Text, "", "IP address"), Field::new("port", Kind::Int, "", "TCP port")];
}

impl From<Endpoint> for EndpointJson {
    fn from(e: Endpoint) -> Self {
        let mut addr = Vec::with_capacity(15);
        push_ip(&mut addr, e.addr);
        EndpointJson { addr: String::from_utf8(addr).unwrap_or_default(), port: e.port }
    }
}

/// Appends `a` as `Display` writes it; an IPv4 address without the formatting machinery
/// (`Display` was ~2,800 instructions a connection when printing 200,000 of them).
pub fn push_ip(buf: &mut Vec<u8>, a: std::net::IpAddr) {
    match a {
        std::net::IpAddr::V4(a) => push_ipv4(buf, a),
        std::net::IpAddr::V6(a) => {
            use std::io::Write;
            let _ = write!(buf, "{a}");
        }
    }
}

/// Appends the dotted quad of `a`, as `Display` writes it.
fn push_ipv4(buf: &mut Vec<u8>, a: std::net::Ipv4Addr) {
    // Put together on the stack and appended once: a push per digit cost twice as much.
    let (mut text, mut n) = ([0u8; 15], 0);
    for (i, o) in a.octets().into_iter().enumerate() {
        if i > 0 {
            text[n] = b'.';
            n += 1;
        }
        if o >= 100 {
            text[n] = b'0' + o / 100;
            n += 1;
        }
        if o >= 10 {
            text[n] = b'0' + o / 10 % 10;
            n += 1;
        }
        text[n] = b'0' + o % 10;
        n += 1;
    }
    buf.extend_from_slice(&text[..n]);
}

/// A value of one field, for printers that lay fields out themselves (the text table).
#[derive(Clone, Copy, Debug)]
pub enum Cell {
    /// An integer.
    Int(u64),
    /// A float.
    Float(f64),
    /// A flag.
    Bool(bool),
    /// Not measurable.
    Null,
}

impl Cell {
    /// Gives the value to the next column of `c` (a table's row: the `connections` table of
    /// `export`).
    #[inline]
    pub fn put<C: crate::table::Columns + ?Sized>(self, c: &mut C) {
        match self {
            Cell::Int(v) => c.uint(v),
            Cell::Float(v) => c.float(v),
            Cell::Bool(v) => c.bool(v),
            Cell::Null => c.null(),
        }
    }
}

impl From<u64> for Cell {
    fn from(v: u64) -> Cell {
        Cell::Int(v)
    }
}
impl From<f64> for Cell {
    fn from(v: f64) -> Cell {
        Cell::Float(v)
    }
}
impl From<bool> for Cell {
    fn from(v: bool) -> Cell {
        Cell::Bool(v)
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Cell {
        v.map_or(Cell::Null, Into::into)
    }
}
impl From<u16> for Cell {
    fn from(v: u16) -> Cell {
        Cell::Int(v as u64)
    }
}
impl From<u32> for Cell {
    fn from(v: u32) -> Cell {
        Cell::Int(v as u64)
    }
}
impl From<u8> for Cell {
    fn from(v: u8) -> Cell {
        Cell::Int(v as u64)
    }
}

/// Declares [`DirJson`] once: the serialized struct, its fields as a [`Table`] (type, unit,
/// meaning) and the same fields as [`Cell`]s, in order.
macro_rules! dir_json {
    ($($name:ident: $ty:ty, $unit:literal, $doc:literal;)*) => {
        /// One direction's statistics. Units are in the names; `null` means "not measurable".
        /// Field order is the order of the JSON, the CSV columns and the `stats` table; each
        /// field's meaning is in [`DirJson::FIELDS`].
        #[derive(Serialize)]
        #[allow(missing_docs)]
        pub struct DirJson {
            $(pub $name: $ty,)*
        }

        /// Number of fields of a [`DirJson`].
        pub const DIR_FIELDS: usize = [$(stringify!($name),)*].len();

        impl Table for DirJson {
            const NAME: &'static str = "directions";
            const FIELDS: &'static [Field] = &[$(Field {
                name: stringify!($name),
                kind: <$ty as KindOf>::KIND,
                nullable: <$ty as KindOf>::NULLABLE,
                unit: $unit,
                doc: $doc,
            },)*];
        }

        impl DirJson {
            /// The field names, in order.
            pub const NAMES: [&'static str; DIR_FIELDS] = [$(stringify!($name),)*];

            /// Every field's value, in the order of [`DirJson::NAMES`] (an array: printing
            /// 200,000 connections allocated a list per direction).
            pub fn cells(&self) -> [Cell; DIR_FIELDS] {
                [$(Cell::from(self.$name),)*]
            }
        }
    };
}

dir_json! {
    packets: u64, "", "segments sent in this direction";
    data_packets: u64, "", "segments carrying payload";
    pure_acks: u64, "", "ACK set, no payload, no SYN, FIN or RST";
    payload_bytes: u64, "bytes", "sum of payload lengths, retransmissions included (from the IP header: bytes cut by the snaplen count)";
    unique_bytes: u64, "bytes", "payload never seen before in this direction";
    rexmit_packets: u64, "", "segments carrying a sequence byte (payload, SYN or FIN) already seen, except zero-window probes and keep-alives";
    rexmit_bytes: u64, "bytes", "payload bytes already seen (SYN and FIN not counted)";
    out_of_order_packets: u64, "", "segments filling a hole below the highest byte seen and ending below it";
    dup_acks: u64, "", "duplicate ACKs sent (RFC 5681's definition)";
    triple_dup_acks: u64, "", "third duplicate ACKs of one value";
    syn: u64, "", "segments with SYN";
    fin: u64, "", "segments with FIN";
    rst: u64, "", "segments with RST";
    mss: Option<u16>, "bytes", "MSS option of this side's SYN";
    window_scale: Option<u8>, "shift", "shift applied to this side's windows; null: unknown (no handshake)";
    window_scale_option: Option<u8>, "shift", "window scale option as sent in the SYN (unclamped)";
    window_scale_inferred: Option<u8>, "shift", "no handshake: the shift the connection's behaviour singles out, applied to this side's windows from then on (statistics.md); null: not inferred";
    window_scale_inferable: Option<bool>, "", "true: no handshake, and the behaviour singled out `window_scale_inferred`; false: no handshake, no --wscale, and the behaviour could not single a shift out (windows unscaled); null: the handshake (or --wscale) gave the scale";
    sack_permitted: bool, "", "SACK-permitted option in this side's SYN";
    timestamps: bool, "", "some segment carried the timestamps option";
    sack_packets: u64, "", "segments carrying SACK blocks";
    sack_blocks: u64, "", "SACK blocks sent";
    dsacks: u64, "", "D-SACK blocks sent (RFC 2883)";
    zero_window_adverts: u64, "", "segments advertising a zero window";
    zero_window_probes: u64, "", "zero-window probes sent";
    zero_window_probe_bytes: u64, "bytes", "payload of zero-window probes";
    keepalives: u64, "", "keep-alives sent";
    window_shrinks: u64, "", "advertisements moving the right window edge left";
    window_min_bytes: Option<u64>, "bytes", "smallest advertised window over segments with ACK or SYN (scaled when the scale is known; SYN windows never)";
    window_avg_bytes: Option<f64>, "bytes", "mean advertised window, per segment";
    window_max_bytes: Option<u64>, "bytes", "largest advertised window";
    rtt_samples: u64, "", "RTT samples of this direction's data (Karn's rule)";
    rtt_min_ms: Option<f64>, "ms", "smallest RTT sample";
    rtt_avg_ms: Option<f64>, "ms", "mean RTT sample";
    rtt_max_ms: Option<f64>, "ms", "largest RTT sample";
    rtt_stdev_ms: Option<f64>, "ms", "standard deviation of the RTT samples";
    rtt_ts_samples: u64, "", "RTT samples from timestamp echoes (RFC 7323)";
    rtt_ts_min_ms: Option<f64>, "ms", "smallest timestamp-echo sample";
    rtt_ts_avg_ms: Option<f64>, "ms", "mean timestamp-echo sample";
    rtt_ts_max_ms: Option<f64>, "ms", "largest timestamp-echo sample";
    rtt_ts_stdev_ms: Option<f64>, "ms", "standard deviation of the timestamp-echo samples";
    karn_discards: u64, "", "ACKs of a retransmitted segment: no sample (Karn)";
    post_loss_acks: u64, "", "ACKs covering a later retransmission: no sample";
    max_in_flight_bytes: u64, "bytes", "most bytes in flight (SACK-aware)";
    throughput_bps: Option<f64>, "bit/s", "`unique_bytes` × 8 / `data_time_s`: the rate new data was sent";
    goodput_bps: Option<f64>, "bit/s", "`acked_bytes` × 8 / (last ACK advancing over this data − first data segment): the rate delivery was confirmed";
    acked_bytes: u64, "bytes", "advance of the peer's cumulative ACK over payload (SYN and FIN excluded)";
    holes: u64, "", "times a segment started above the highest byte seen (the bytes between not captured, yet)";
    acked_unseen_bytes: u64, "bytes", "bytes acknowledged but never captured";
    truncated_packets: u64, "", "segments cut by the snaplen";
    truncated_bytes: u64, "bytes", "payload bytes cut by the snaplen";
    checksum_errors: Option<u64>, "", "segments whose IPv4 header or TCP checksum failed, not as checksum offload leaves it: not analysed (`--checksums`); null when no segment of this direction was verified";
    checksum_offloaded: Option<u64>, "", "segments whose checksums failed as checksum offload on the capturing host leaves them (TCP: the pseudo-header sum, with or without the length, or 0; IPv4 header: 0): analysed; null when no segment of this direction was verified";
    first_time: Option<f64>, "s since the epoch", "first segment of this direction (the earliest, when time goes back)";
    last_time: Option<f64>, "s since the epoch", "last segment of this direction (the latest, when time goes back)";
    data_time_s: f64, "s", "first to last data segment";
    max_idle_s: f64, "s", "longest gap between a segment of this direction and the latest before it";
    analysis_partial: bool, "", "a fixed-capacity structure overflowed, a frame number passed 2^40, or TSvals awaiting their echo were 2^32 frames apart: numbers after it may be approximate (`docs/statistics.md`)";
    isn: Option<u32>, "", "initial sequence number: this side's SYN's sequence number as on the wire; null when its SYN was not seen";
    seq_base: Option<u32>, "", "the wire sequence number that relative offsets (plots, events, `--seq-from`) count from: `isn` + 1 after a SYN, else this direction's first sequence number; null without a segment";
    acking_segments: u64, "", "segments of this side that newly acknowledged the peer's payload (pure or carrying data): its ACK strategy as a receiver, [statistics.md](statistics.md#acknowledgment-strategy)";
    acks_per_data_segment: Option<f64>, "", "`acking_segments` / the peer's `data_packets`; null when the peer sent no data";
    piggybacked_acks: u64, "", "acking segments that rode on payload, a SYN or a FIN";
    quick_acks: u64, "", "pure ACKs of at most one full segment sent at once (delay under 5 ms)";
    delayed_acks: u64, "", "pure ACKs of at most one full segment held by the delayed-ACK timer (delay of 5 ms or more)";
    quick_ack_episodes: u64, "", "runs of two or more quick ACKs in a row";
    stretch_acks: u64, "", "ACKs newly acknowledging more than two full segments";
    useless_acks: u64, "", "pure ACKs acknowledging nothing new, moving no window, carrying no SACK block and answering nothing the peer sent";
    ack_delay_samples: u64, "", "quick and delayed ACKs whose delay was measured";
    ack_delay_min_ms: Option<f64>, "ms", "smallest delay from the oldest data an ACK newly acknowledges to the ACK, the capture point's half-loop (`ack_halfloop_ms`) taken off";
    ack_delay_avg_ms: Option<f64>, "ms", "mean of those delays";
    ack_delay_max_ms: Option<f64>, "ms", "largest of those delays";
    delayed_ack_timer_ms: Option<f64>, "ms", "the delayed-ACK timer: the mode of the delayed ACKs' delays (mean of the fullest of 8-per-octave bins); null below 2 delayed ACKs";
    ack_halfloop_ms: Option<f64>, "ms", "smallest time from the peer's data to this side's ACK of it, at the capture point: near 0 at a capture beside this side (delays exact), about the RTT at one beside the peer (delays estimated)";
    ack_bytes: u64, "bytes", "bytes on the wire (IP and TCP headers) of this side's pure ACKs";
    ack_overhead: Option<f64>, "", "`ack_bytes` / payload bytes this side newly acknowledged; null when it acknowledged none";
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}
fn ms(ns: f64) -> f64 {
    ns / 1e6
}
fn ms_of(s: &Summary) -> [Option<f64>; 4] {
    let [min, avg, max] = ms_of_mean(s);
    [min, avg, max, s.stdev().map(ms)]
}
fn ms_of_mean(s: &Mean) -> [Option<f64>; 3] {
    let some = s.n > 0;
    [some.then(|| ms(s.min as f64)), s.mean().map(ms), some.then(|| ms(s.max as f64))]
}

impl From<&DirStats> for DirJson {
    fn from(d: &DirStats) -> Self {
        let [rtt_min_ms, rtt_avg_ms, rtt_max_ms, rtt_stdev_ms] = ms_of(&d.rtt);
        let [rtt_ts_min_ms, rtt_ts_avg_ms, rtt_ts_max_ms, rtt_ts_stdev_ms] = ms_of(&d.rtt_ts);
        let k = &d.acks;
        let [ack_delay_min_ms, ack_delay_avg_ms, ack_delay_max_ms] = ms_of_mean(&k.delay);
        let any = d.packets > 0;
        let r = d.rare();
        DirJson {
            packets: d.packets,
            data_packets: d.data_packets,
            pure_acks: d.pure_acks,
            payload_bytes: d.payload_bytes,
            unique_bytes: d.unique_bytes,
            rexmit_packets: d.rexmit_packets,
            rexmit_bytes: d.rexmit_bytes,
            out_of_order_packets: r.out_of_order_packets,
            dup_acks: r.dup_acks,
            triple_dup_acks: r.triple_dup_acks,
            syn: d.syn,
            fin: d.fin,
            rst: d.rst,
            mss: d.mss,
            window_scale: d.wscale,
            window_scale_option: d.wscale_opt,
            window_scale_inferred: r.wscale_inferred,
            window_scale_inferable: match (r.wscale_inferred, d.wscale) {
                (Some(_), _) => Some(true),
                (None, None) => Some(false),
                (None, Some(_)) => None,
            },
            sack_permitted: d.sack_permitted,
            timestamps: d.timestamp_packets > 0,
            sack_packets: r.sack_packets,
            sack_blocks: r.sack_blocks,
            dsacks: r.dsacks,
            zero_window_adverts: r.zero_window_adverts,
            zero_window_probes: r.zero_window_probes,
            zero_window_probe_bytes: r.zero_window_probe_bytes,
            keepalives: r.keepalives,
            window_shrinks: r.window_shrinks,
            window_min_bytes: (d.window.n > 0).then_some(d.window.min),
            window_avg_bytes: d.window.mean(),
            window_max_bytes: (d.window.n > 0).then_some(d.window.max),
            rtt_samples: d.rtt.n,
            rtt_min_ms,
            rtt_avg_ms,
            rtt_max_ms,
            rtt_stdev_ms,
            rtt_ts_samples: d.rtt_ts.n,
            rtt_ts_min_ms,
            rtt_ts_avg_ms,
            rtt_ts_max_ms,
            rtt_ts_stdev_ms,
            karn_discards: r.karn_discards,
            post_loss_acks: r.post_loss_acks,
            max_in_flight_bytes: d.max_in_flight,
            throughput_bps: d.throughput_bps(),
            goodput_bps: d.goodput_bps(),
            acked_bytes: d.acked_bytes,
            holes: r.holes,
            acked_unseen_bytes: r.acked_unseen_bytes,
            truncated_packets: d.truncated_packets,
            truncated_bytes: d.truncated_bytes,
            checksum_errors: r.checksum_errors,
            checksum_offloaded: r.checksum_offloaded,
            first_time: any.then(|| secs(d.first_ts_ns)),
            last_time: any.then(|| secs(d.last_ts_ns)),
            data_time_s: secs(d.data_time_ns()),
            max_idle_s: secs(d.max_idle_ns),
            analysis_partial: r.partial,
            isn: d.isn.map(|n| n.0),
            seq_base: d.seq_base.map(|n| n.0),
            acking_segments: k.acking,
            acks_per_data_segment: None,
            piggybacked_acks: k.piggybacked,
            quick_acks: k.quick,
            delayed_acks: k.delayed,
            quick_ack_episodes: k.quick_episodes,
            stretch_acks: k.stretch,
            useless_acks: k.useless,
            ack_delay_samples: k.delay.n,
            ack_delay_min_ms,
            ack_delay_avg_ms,
            ack_delay_max_ms,
            delayed_ack_timer_ms: k.timer_ns().map(ms),
            ack_halfloop_ms: k.loop_ns().map(|l| ms(l as f64)),
            ack_bytes: k.wire_bytes,
            ack_overhead: (k.payload_bytes > 0).then(|| k.wire_bytes as f64 / k.payload_bytes as f64),
        }
    }
}

impl DirJson {
    /// Direction `i` (0 `a2b`, 1 `b2a`) of `c`, with the fields that read the other direction
    /// (`acks_per_data_segment`); `From<&DirStats>` leaves those null.
    pub fn of(c: &ConnStats, i: usize) -> DirJson {
        let mut d = DirJson::from(&c.dir(i));
        let peer = c.data_packets(1 - i);
        d.acks_per_data_segment = (peer > 0).then(|| d.acking_segments as f64 / peer as f64);
        d
    }
}

/// One connection: its fields are [`ConnJson::FIELDS`]. `D` is what each direction shows:
/// every statistic ([`DirJson`], `stats`), or its size ([`DirBrief`], `conns`).
#[derive(Serialize)]
#[allow(missing_docs)]
pub struct ConnJson<D = DirJson> {
    pub id: usize,
    pub file: String,
    pub input: String,
    pub conn: usize,
    pub a: EndpointJson,
    pub b: EndpointJson,
    pub state: &'static str,
    pub handshake: bool,
    pub reuse: Option<&'static str>,
    pub first_time: f64,
    pub last_time: f64,
    pub duration_s: f64,
    /// Always there in `stats`; left out of `conns`' brief rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_idle_s: Option<f64>,
    pub a2b: D,
    pub b2a: D,
}

/// A direction as `conns` shows it: its size, the first fields of a [`DirJson`] by name.
#[derive(Serialize)]
#[allow(missing_docs)]
pub struct DirBrief {
    pub packets: u64,
    pub data_packets: u64,
    pub payload_bytes: u64,
    pub unique_bytes: u64,
}

impl DirBrief {
    /// Its fields' names, in order: each is the [`DirJson`] field of that name (a test holds
    /// them to the serialized keys and to `DirJson`'s list).
    pub const NAMES: [&'static str; 4] = ["packets", "data_packets", "payload_bytes", "unique_bytes"];

    /// Every field's value, in the order of [`DirBrief::NAMES`].
    pub fn cells(&self) -> [Cell; 4] {
        [self.packets, self.data_packets, self.payload_bytes, self.unique_bytes].map(Cell::Int)
    }
}

impl From<&DirJson> for DirBrief {
    fn from(d: &DirJson) -> Self {
        DirBrief {
            packets: d.packets,
            data_packets: d.data_packets,
            payload_bytes: d.payload_bytes,
            unique_bytes: d.unique_bytes,
        }
    }
}

impl ConnJson {
    /// The row `conns` prints: the identity and each direction's size.
    pub fn brief(self) -> ConnJson<DirBrief> {
        ConnJson {
            id: self.id,
            file: self.file,
            input: self.input,
            conn: self.conn,
            a: self.a,
            b: self.b,
            state: self.state,
            handshake: self.handshake,
            reuse: self.reuse,
            first_time: self.first_time,
            last_time: self.last_time,
            duration_s: self.duration_s,
            max_idle_s: None,
            a2b: (&self.a2b).into(),
            b2a: (&self.b2a).into(),
        }
    }
}

impl Table for ConnJson {
    const NAME: &'static str = "connections";
    const FIELDS: &'static [Field] = &[
        Field::new(
            "id",
            Kind::Int,
            "",
            "1-based, in order of first appearance, continuing across files; `-c ID` selects",
        ),
        Field::new("file", Kind::Text, "", "the file the connection was seen in"),
        Field::new(
            "input",
            Kind::Text,
            "",
            "its trace: the input as given (a file, a ring directory), or with `--merge` the inputs joined by ` + `",
        ),
        Field::new(
            "conn",
            Kind::Int,
            "",
            "1-based index among the connections of `input`: (`input`, `conn`) names the connection whatever else is read in the same run, so tables of several runs join on it",
        ),
        Field::new(
            "a",
            Kind::Object,
            "",
            "endpoint a (`{\"addr\": string, \"port\": integer}`): it sent the SYN, or the first packet seen",
        ),
        Field::new("b", Kind::Object, "", "endpoint b, as `a`"),
        Field::new("state", Kind::Text, "", "`complete`, `reset`, `open`, `no_handshake`, `one_direction`"),
        Field::new("handshake", Kind::Bool, "", "a SYN from a was seen"),
        Field::nullable(
            "reuse",
            Kind::Text,
            "",
            "`new_isn` or `idle_gap`: why this is a new connection on a 4-tuple whose earlier connection had not expired ([statistics.md](statistics.md#connections))",
        ),
        Field::new("first_time", Kind::Float, "s since the epoch", "first packet (the earliest, when time goes back)"),
        Field::new("last_time", Kind::Float, "s since the epoch", "last packet (the latest, when time goes back)"),
        Field::new("duration_s", Kind::Float, "s", "first to last packet"),
        Field::new("max_idle_s", Kind::Float, "s", "longest gap between a packet and the latest before it"),
        Field::new(
            "a2b",
            Kind::Object,
            "",
            "statistics of a's data and b's acknowledgments of it (a direction object, below)",
        ),
        Field::new("b2a", Kind::Object, "", "the same for b's data"),
    ];
}

/// The CSV columns of `stats --csv`: the connection table's fields flattened as the JSON is
/// (`a` as `a_addr`, `a_port`; each direction's fields as `a2b_NAME`, `b2a_NAME`).
pub fn stats_csv_columns() -> Vec<String> {
    csv_columns(&names(DirJson::FIELDS), true)
}

/// The CSV columns of `conns --csv`: its brief JSON rows flattened the same way (no
/// `max_idle_s`; each direction's [`DirBrief::NAMES`]).
pub fn conns_csv_columns() -> Vec<String> {
    csv_columns(&DirBrief::NAMES, false)
}

/// [`ConnJson::FIELDS`] flattened, with `dir` as each direction's fields.
fn csv_columns(dir: &[&str], max_idle: bool) -> Vec<String> {
    let mut cols = Vec::new();
    for f in ConnJson::FIELDS {
        match f.name {
            "a" | "b" => cols.extend(["addr", "port"].map(|k| format!("{}_{k}", f.name))),
            "a2b" | "b2a" => cols.extend(dir.iter().map(|d| format!("{}_{d}", f.name))),
            "max_idle_s" if !max_idle => {}
            name => cols.push(name.to_string()),
        }
    }
    cols
}

impl ConnJson {
    /// Builds the JSON view; `id` is the connection's id in the run, `file` its file's path,
    /// `input` its trace's name.
    pub fn new(c: &ConnStats, id: usize, file: String, input: String) -> Self {
        let [first_time, last_time, duration_s, max_idle_s] = conn_times(c);
        ConnJson {
            id,
            file,
            input,
            conn: c.idx() + 1,
            a: c.info().a.into(),
            b: c.info().b.into(),
            state: c.state().name(),
            handshake: c.handshake(),
            reuse: c.info().reuse.map(reuse_name),
            first_time,
            last_time,
            duration_s,
            max_idle_s: Some(max_idle_s),
            a2b: DirJson::of(c, 0),
            b2a: DirJson::of(c, 1),
        }
    }
}

/// A connection's `first_time`, `last_time`, `duration_s` and `max_idle_s`, for printers that
/// do without the whole view (the text table).
pub fn conn_times(c: &ConnStats) -> [f64; 4] {
    let (first, last) = (c.first_ts_ns(), c.last_ts_ns());
    [secs(first), secs(last), secs(last.saturating_sub(first)), secs(c.max_idle_ns)]
}

/// The `reuse` value of a connection split from an earlier one.
pub fn reuse_name(r: SplitReason) -> &'static str {
    match r {
        SplitReason::NewIsn => "new_isn",
        SplitReason::IdleGap => "idle_gap",
    }
}

/// The whole document, serialized lazily: connections are converted one at a time while
/// writing, so printing 200,000 connections needs no second copy of them.
pub struct Document<'a, F: Fn(usize) -> bool> {
    /// The analysis.
    pub an: &'a Analysis,
    /// Which connection ids (1-based) to include.
    pub selected: F,
}

impl<F: Fn(usize) -> bool> Document<'_, F> {
    /// The selected connections as JSON views, in id order.
    pub fn connections(&self) -> impl Iterator<Item = ConnJson> + '_ {
        (1..=self.an.conns.len()).filter(|&id| (self.selected)(id)).map(|id| self.connection(id))
    }

    /// The JSON view of connection `id` (1-based, at most the number of connections).
    pub fn connection(&self, id: usize) -> ConnJson {
        let c = &self.an.conns[id - 1];
        let file = self.an.files.get(c.info().file).map(|f| f.path.display().to_string()).unwrap_or_default();
        ConnJson::new(c, id, file, self.an.inputs.get(c.trace()).cloned().unwrap_or_default())
    }
}

impl<F: Fn(usize) -> bool> Serialize for Document<'_, F> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Document", 2)?;
        st.serialize_field("files", &self.an.files)?;
        st.serialize_field("connections", &LazySeq::new(self.connections()))?;
        st.end()
    }
}

/// A sequence serialized from an iterator as it goes, so that a document of many connections is
/// never held whole (serde has no lazy sequence of its own). It can be serialized once.
pub struct LazySeq<I>(std::cell::RefCell<Option<I>>);

impl<I> LazySeq<I> {
    /// The sequence of what `it` yields.
    pub fn new(it: I) -> Self {
        LazySeq(std::cell::RefCell::new(Some(it)))
    }
}

impl<I: Iterator<Item = T>, T: Serialize> Serialize for LazySeq<I> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let it =
            self.0.borrow_mut().take().ok_or_else(|| serde::ser::Error::custom("a lazy sequence serialized twice"))?;
        s.collect_seq(it)
    }
}

/// The document for the connections whose id (1-based) passes `selected`.
pub fn document<F: Fn(usize) -> bool>(an: &Analysis, selected: F) -> Document<'_, F> {
    Document { an, selected }
}

/// The fields of `files[]` ([`crate::pass::FileSummary`]).
pub struct FilesTable;

impl Table for FilesTable {
    const NAME: &'static str = "files";
    const FIELDS: &'static [Field] = &[
        Field::new("path", Kind::Text, "", "the file as given (`-` for standard input)"),
        Field::nullable("format", Kind::Text, "", "`pcap` or `pcapng`; null when the file is not a capture"),
        Field::nullable("compression", Kind::Text, "", "`none`, `gzip` or `zstd`, from the magic number"),
        Field::new("packets", Kind::Int, "", "records read"),
        Field::new("captured_bytes", Kind::Int, "bytes", "captured bytes of those records"),
        Field::new("tcp_packets", Kind::Int, "", "records decoded as TCP segments"),
        Field::new(
            "skipped",
            Kind::Counts,
            "",
            "records without a TCP segment, by reason (`not_ip`, `not_tcp`, `ip_fragment`, `truncated_header`, `malformed`, `unknown_link_type`)",
        ),
        Field::new(
            "unknown_link_types",
            Kind::Counts,
            "",
            "records of link types tcpscope does not decode, by LINKTYPE value",
        ),
        Field::new("anomalies", Kind::Counts, "", "decoded segments with an anomaly, by kind"),
        Field::new(
            "other_tcp_options",
            Kind::Counts,
            "",
            "segments carrying other TCP options, by kind (30 MPTCP, 34 TFO, …; kinds ≥ 63 as 63)",
        ),
        Field::new(
            "bad_timestamps",
            Kind::Int,
            "",
            "records with a damaged timestamp (a fraction out of range, or a time more than 10 s outside the span of its neighbours'), each given the time of the record before it ([capture.md](capture.md#damaged-captures))",
        ),
        Field::new("first_ts_ns", Kind::Int, "ns since the epoch", "first record"),
        Field::new("last_ts_ns", Kind::Int, "ns since the epoch", "last record"),
        Field::nullable("error", Kind::Text, "", "why reading stopped early"),
        Field::nullable("error_offset", Kind::Int, "bytes", "where: the byte offset (in the decompressed stream)"),
        Field::new(
            "damaged",
            Kind::List,
            "",
            "stretches skipped because their bytes cannot be records, in file order: `start` and `end` (byte offsets in the decompressed stream: the first byte skipped, where reading resumed or the file's end; equal when damage in a gzip or zstd stream cost no decompressed byte, as bytes after the last member do), `reason` (what was wrong with the record or block at `start`), `records_after` (records read after it, up to the next damage or the end), and `file` (only in a ring directory's summary, summed over its files: the file the stretch is in); reading goes on after each ([capture.md](capture.md#damaged-captures))",
        ),
    ];
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use super::*;
    use crate::table::names;

    /// The JSON keys of a value, in order.
    fn keys<T: Serialize>(v: &T) -> Vec<String> {
        let v = serde_json::to_value(v).unwrap();
        v.as_object().unwrap().keys().cloned().collect()
    }

    /// Each record's JSON keys are its table's fields, in order (the tests build serde_json
    /// with `preserve_order`, as the CLI does).
    #[test]
    fn json_keys_are_the_tables_fields() {
        let same = |got: Vec<String>, want: Vec<&str>| assert_eq!(got, want);
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap");
        let an = crate::pass::Query::new(vec![path.into()]).stats(&|_, _| {}).unwrap();
        let c = document(&an, |_| true).connection(1);
        same(keys(&c.a2b), names(DirJson::FIELDS));
        same(keys(&c), names(ConnJson::FIELDS));
        same(keys(&an.files[0]), names(FilesTable::FIELDS));
        // conns' brief rows: the same fields but max_idle_s, and a prefix of each direction's.
        let brief = document(&an, |_| true).connection(1).brief();
        let mut want = names(ConnJson::FIELDS);
        want.retain(|&n| n != "max_idle_s");
        same(keys(&brief), want);
        same(keys(&brief.a2b), DirBrief::NAMES.to_vec());
        assert!(DirBrief::NAMES.iter().all(|n| DirJson::NAMES.contains(n)));
        assert_eq!(DirJson::NAMES.to_vec(), names(DirJson::FIELDS));
    }

    #[test]
    fn push_ip_is_display() {
        let text = |a: IpAddr| {
            let mut s = Vec::new();
            super::push_ip(&mut s, a);
            String::from_utf8(s).unwrap()
        };
        for o in 0..=255u8 {
            for a in [[o, 0, 0, 0], [1, o, 9, 10], [255, 99, o, 100], [10, 0, 0, o], [o, o, o, o]] {
                let a = IpAddr::V4(Ipv4Addr::from(a));
                assert_eq!(text(a), a.to_string());
            }
        }
        for a in [Ipv6Addr::LOCALHOST, "2001:db8::1:0:0:1".parse().unwrap(), "::ffff:10.0.0.1".parse().unwrap()] {
            assert_eq!(text(IpAddr::V6(a)), a.to_string());
        }
    }
}

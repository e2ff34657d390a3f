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
use crate::stats::{ConnStats, DirStats, Summary};

/// An endpoint.
#[derive(Serialize)]
pub struct EndpointJson {
    /// IP address as text.
    pub addr: String,
    /// Port.
    pub port: u16,
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
impl From<u8> for Cell {
    fn from(v: u8) -> Cell {
        Cell::Int(v as u64)
    }
}

/// Declares [`DirJson`] once: the serialized struct and the same fields as [`Cell`]s, in order.
macro_rules! dir_json {
    ($($name:ident: $ty:ty,)*) => {
        /// One direction's statistics. Units are in the names; `null` means "not measurable".
        /// Field order is the order of the JSON, the CSV columns and the `stats` table.
        #[derive(Serialize)]
        #[allow(missing_docs)]
        pub struct DirJson {
            $(pub $name: $ty,)*
        }

        /// Number of fields of a [`DirJson`].
        pub const DIR_FIELDS: usize = [$(stringify!($name),)*].len();

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
    packets: u64,
    data_packets: u64,
    pure_acks: u64,
    payload_bytes: u64,
    unique_bytes: u64,
    rexmit_packets: u64,
    rexmit_bytes: u64,
    out_of_order_packets: u64,
    dup_acks: u64,
    triple_dup_acks: u64,
    syn: u64,
    fin: u64,
    rst: u64,
    mss: Option<u16>,
    window_scale: Option<u8>,
    window_scale_option: Option<u8>,
    sack_permitted: bool,
    timestamps: bool,
    sack_packets: u64,
    sack_blocks: u64,
    dsacks: u64,
    zero_window_adverts: u64,
    zero_window_probes: u64,
    zero_window_probe_bytes: u64,
    keepalives: u64,
    window_shrinks: u64,
    window_min_bytes: Option<u64>,
    window_avg_bytes: Option<f64>,
    window_max_bytes: Option<u64>,
    rtt_samples: u64,
    rtt_min_ms: Option<f64>,
    rtt_avg_ms: Option<f64>,
    rtt_max_ms: Option<f64>,
    rtt_stdev_ms: Option<f64>,
    rtt_ts_samples: u64,
    rtt_ts_min_ms: Option<f64>,
    rtt_ts_avg_ms: Option<f64>,
    rtt_ts_max_ms: Option<f64>,
    rtt_ts_stdev_ms: Option<f64>,
    karn_discards: u64,
    post_loss_acks: u64,
    max_in_flight_bytes: u64,
    throughput_bps: Option<f64>,
    goodput_bps: Option<f64>,
    acked_bytes: u64,
    holes: u64,
    acked_unseen_bytes: u64,
    truncated_packets: u64,
    truncated_bytes: u64,
    first_time: Option<f64>,
    last_time: Option<f64>,
    data_time_s: f64,
    max_idle_s: f64,
    analysis_partial: bool,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}
fn ms(ns: f64) -> f64 {
    ns / 1e6
}
fn ms_of(s: &Summary) -> [Option<f64>; 4] {
    let some = s.n > 0;
    [some.then(|| ms(s.min as f64)), s.mean().map(ms), some.then(|| ms(s.max as f64)), s.stdev().map(ms)]
}

impl From<&DirStats> for DirJson {
    fn from(d: &DirStats) -> Self {
        let [rtt_min_ms, rtt_avg_ms, rtt_max_ms, rtt_stdev_ms] = ms_of(&d.rtt);
        let [rtt_ts_min_ms, rtt_ts_avg_ms, rtt_ts_max_ms, rtt_ts_stdev_ms] = ms_of(&d.rtt_ts);
        let any = d.packets > 0;
        DirJson {
            packets: d.packets,
            data_packets: d.data_packets,
            pure_acks: d.pure_acks,
            payload_bytes: d.payload_bytes,
            unique_bytes: d.unique_bytes,
            rexmit_packets: d.rexmit_packets,
            rexmit_bytes: d.rexmit_bytes,
            out_of_order_packets: d.out_of_order_packets,
            dup_acks: d.dup_acks,
            triple_dup_acks: d.triple_dup_acks,
            syn: d.syn,
            fin: d.fin,
            rst: d.rst,
            mss: d.mss,
            window_scale: d.wscale,
            window_scale_option: d.wscale_opt,
            sack_permitted: d.sack_permitted,
            timestamps: d.timestamp_packets > 0,
            sack_packets: d.sack_packets,
            sack_blocks: d.sack_blocks,
            dsacks: d.dsacks,
            zero_window_adverts: d.zero_window_adverts,
            zero_window_probes: d.zero_window_probes,
            zero_window_probe_bytes: d.zero_window_probe_bytes,
            keepalives: d.keepalives,
            window_shrinks: d.window_shrinks,
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
            karn_discards: d.karn_discards,
            post_loss_acks: d.post_loss_acks,
            max_in_flight_bytes: d.max_in_flight,
            throughput_bps: d.throughput_bps(),
            goodput_bps: d.goodput_bps(),
            acked_bytes: d.acked_bytes,
            holes: d.holes,
            acked_unseen_bytes: d.acked_unseen_bytes,
            truncated_packets: d.truncated_packets,
            truncated_bytes: d.truncated_bytes,
            first_time: any.then(|| secs(d.first_ts_ns)),
            last_time: any.then(|| secs(d.last_ts_ns)),
            data_time_s: secs(d.data_time_ns()),
            max_idle_s: secs(d.max_idle_ns),
            analysis_partial: d.partial,
        }
    }
}

/// One connection.
#[derive(Serialize)]
#[allow(missing_docs)]
pub struct ConnJson {
    pub id: usize,
    pub file: String,
    pub a: EndpointJson,
    pub b: EndpointJson,
    pub state: &'static str,
    pub handshake: bool,
    pub reuse: Option<&'static str>,
    pub first_time: f64,
    pub last_time: f64,
    pub duration_s: f64,
    pub max_idle_s: f64,
    pub a2b: DirJson,
    pub b2a: DirJson,
}

impl ConnJson {
    /// Builds the JSON view; `id` is the connection's global id, `file` its file's path.
    pub fn new(c: &ConnStats, id: usize, file: String) -> Self {
        let [first_time, last_time, duration_s, max_idle_s] = conn_times(c);
        ConnJson {
            id,
            file,
            a: c.info.a.into(),
            b: c.info.b.into(),
            state: c.state().name(),
            handshake: c.handshake(),
            reuse: c.info.reuse.map(reuse_name),
            first_time,
            last_time,
            duration_s,
            max_idle_s,
            a2b: (&c.dir[0]).into(),
            b2a: (&c.dir[1]).into(),
        }
    }
}

/// A connection's `first_time`, `last_time`, `duration_s` and `max_idle_s`, for printers that
/// do without the whole view (the text table).
pub fn conn_times(c: &ConnStats) -> [f64; 4] {
    [secs(c.first_ts_ns()), secs(c.last_ts_ns()), secs(c.last_ts_ns() - c.first_ts_ns()), secs(c.max_idle_ns)]
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
        let file = self.an.files.get(c.info.file).map(|f| f.path.display().to_string()).unwrap_or_default();
        ConnJson::new(c, id, file)
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

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

//! The fields of one socket sample, defined once.
//!
//! [`FIELDS`] is the single table of everything a sample carries: the kernel's raw values
//! (`struct tcp_info` by byte offset, the `inet_diag_msg` header, `INET_DIAG_MEMINFO`, BBR's
//! `tcp_bbr_info`), the Web100 / RFC 4898 names derived from them, and tcpscope's own derived
//! values. Each entry has its name, unit, meaning and source. From this table come the JSON and
//! CSV output ([`Sample::json`], [`csv_header`], [`Sample::csv_row`]), the recording's columns
//! (raw fields only, by name: `tsm.rs`), and the mapping table in `docs/monitor.md`
//! ([`doc_table`]; a test fails when the two differ).
//!
//! Raw counters (`counter: true`) also appear as `<name>_delta`: the increase since the previous
//! sample of the same connection (absent for the first sample, or when the kernel's value went
//! backwards, which it does only when a socket is reused).
//!
//! A value the kernel did not report is `None` — JSON `null`, an empty CSV cell — never zero:
//! `tcp_info` grows with kernel versions, and a field beyond the attribute's length is absent.

use std::fmt::Write as _;

/// Where a raw value comes from.
#[derive(Clone, Copy, Debug)]
pub enum Src {
    /// `struct tcp_info` at byte `off`, `size` bytes little-endian (host order; 1, 2, 4 or 8).
    Info { off: u16, size: u8 },
    /// A bit field of `struct tcp_info`: `width` bits from bit `shift` of byte `off`.
    Bits { off: u16, shift: u8, width: u8 },
    /// A field of the `inet_diag_msg` header.
    Diag(DiagField),
    /// `struct inet_diag_meminfo` (`INET_DIAG_MEMINFO`), u32 number `0..4`.
    Mem(u8),
    /// `struct tcp_bbr_info` (`INET_DIAG_BBRINFO`), u32 number `0..5`.
    Bbr(u8),
}

/// The `inet_diag_msg` header fields we keep.
#[derive(Clone, Copy, Debug)]
pub enum DiagField {
    /// `idiag_state`.
    State,
    /// `idiag_rqueue`.
    RQueue,
    /// `idiag_wqueue`.
    WQueue,
}

/// How a field is obtained.
#[derive(Clone, Copy)]
pub enum Kind {
    /// Read from the kernel's reply; `counter` fields only grow and also get a `_delta` column.
    Raw { src: Src, counter: bool },
    /// Computed from this sample, the previous and the first of the same connection.
    Derived(fn(&Ctx) -> Option<Val>),
}

/// One field of a sample.
#[derive(Clone, Copy)]
pub struct Field {
    /// Column name in JSON and CSV.
    pub name: &'static str,
    /// Unit of the value as written.
    pub unit: &'static str,
    /// Where it comes from: the kernel's name, or the formula.
    pub source: &'static str,
    /// The Web100 / RFC 4898 variable with the same meaning, if any.
    pub web100: &'static str,
    /// What it means.
    pub doc: &'static str,
    pub kind: Kind,
}

/// A value of a field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    U(u64),
    I(i64),
    F(f64),
}

impl Val {
    pub fn as_f64(self) -> f64 {
        match self {
            Val::U(v) => v as f64,
            Val::I(v) => v as f64,
            Val::F(v) => v,
        }
    }

    fn json(self) -> serde_json::Value {
        match self {
            Val::U(v) => v.into(),
            Val::I(v) => v.into(),
            Val::F(v) => serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, serde_json::Value::Number),
        }
    }

    fn write(self, out: &mut String) {
        // Writing to a String cannot fail.
        let _ = match self {
            Val::U(v) => write!(out, "{v}"),
            Val::I(v) => write!(out, "{v}"),
            Val::F(v) => write!(out, "{v}"),
        };
    }
}

/// One sample of one socket: the raw values, indexed like [`FIELDS`] (derived slots stay absent).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Wall-clock time of the dump that produced the sample, ns since the Unix epoch.
    pub t_ns: u64,
    /// The connection's id in this recording (order of first sight, from 1).
    pub conn: u32,
    pub raw: Raw,
}

/// Number of fields in [`FIELDS`].
pub const N_FIELDS: usize = 98;

const _: () = assert!(N_FIELDS <= 128, "a sample's presence mask is a u128");

/// The raw values of a sample, indexed like [`FIELDS`]: dense values and a mask of the present
/// ones, 800 bytes in place (a `Vec<Option<u64>>` was 1.6 KB on the heap), and the mask tells
/// the recording's encoder which columns a row has without looking at each value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Raw {
    /// Absent slots are 0 (so that the derived equality is the equality of the values).
    vals: [u64; N_FIELDS],
    mask: u128,
}

impl Default for Raw {
    fn default() -> Raw {
        Raw { vals: [0; N_FIELDS], mask: 0 }
    }
}

impl std::fmt::Debug for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries((0..N_FIELDS).filter_map(|i| Some((FIELDS[i].name, self.get(i)?)))).finish()
    }
}

impl Raw {
    /// Field `i`, if present.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        (self.mask >> i & 1 != 0).then(|| self.vals[i])
    }

    /// Sets field `i` (`None`: absent).
    #[inline]
    pub fn set(&mut self, i: usize, v: Option<u64>) {
        match v {
            Some(v) => {
                self.vals[i] = v;
                self.mask |= 1 << i;
            }
            None => {
                self.vals[i] = 0;
                self.mask &= !(1 << i);
            }
        }
    }

    /// Bit `i` set: field `i` is present.
    #[inline]
    pub fn mask(&self) -> u128 {
        self.mask
    }

    /// Every value, absent ones 0.
    #[inline]
    pub fn values(&self) -> &[u64; N_FIELDS] {
        &self.vals
    }
}

/// What a derived field sees.
pub struct Ctx<'a> {
    pub cur: &'a Sample,
    /// The previous sample of the same connection.
    pub prev: Option<&'a Sample>,
    /// The first sample of the same connection.
    pub first: &'a Sample,
}

impl Ctx<'_> {
    fn get(&self, name: &str) -> Option<u64> {
        self.cur.raw.get(index(name))
    }

    fn delta_of(&self, s: Option<&Sample>, name: &str) -> Option<u64> {
        let i = index(name);
        self.cur.raw.get(i)?.checked_sub(s?.raw.get(i)?)
    }

    /// Seconds since `s`, if positive.
    fn secs_since(&self, s: Option<&Sample>) -> Option<f64> {
        let dt = self.cur.t_ns.checked_sub(s?.t_ns)?;
        (dt > 0).then(|| dt as f64 / 1e9)
    }
}

impl Sample {
    /// A sample with every field absent.
    pub fn empty(t_ns: u64, conn: u32) -> Sample {
        Sample { t_ns, conn, raw: Raw::default() }
    }

    /// The raw field `name` (panics on a name that is not a raw field: a bug in the caller).
    pub fn get(&self, name: &str) -> Option<u64> {
        self.raw.get(index(name))
    }

    /// Value of field number `i` given the connection's previous and first samples.
    pub fn value(&self, i: usize, prev: Option<&Sample>, first: &Sample) -> Option<Val> {
        match FIELDS[i].kind {
            Kind::Raw { .. } => self.raw.get(i).map(Val::U),
            Kind::Derived(f) => f(&Ctx { cur: self, prev, first }),
        }
    }

    /// The `_delta` of raw counter `i` since `prev`.
    pub fn delta(&self, i: usize, prev: Option<&Sample>) -> Option<u64> {
        self.raw.get(i)?.checked_sub(prev?.raw.get(i)?)
    }

    /// The sample as one JSON object: `t` (seconds since the epoch), `conn`, then every column.
    pub fn json(&self, prev: Option<&Sample>, first: &Sample) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("t".into(), Val::F(self.t_ns as f64 / 1e9).json());
        m.insert("conn".into(), self.conn.into());
        for (i, f) in FIELDS.iter().enumerate() {
            m.insert(f.name.into(), self.value(i, prev, first).map_or(serde_json::Value::Null, Val::json));
            if let Kind::Raw { counter: true, .. } = f.kind {
                m.insert(format!("{}_delta", f.name), self.delta(i, prev).into());
            }
        }
        serde_json::Value::Object(m)
    }

    /// The sample as one CSV row in the order of [`csv_header`] (no newline).
    pub fn csv_row(&self, prev: Option<&Sample>, first: &Sample) -> String {
        let mut out = String::new();
        let _ = write!(out, "{}.{:09},{}", self.t_ns / 1_000_000_000, self.t_ns % 1_000_000_000, self.conn);
        for (i, f) in FIELDS.iter().enumerate() {
            out.push(',');
            if let Some(v) = self.value(i, prev, first) {
                v.write(&mut out);
            }
            if let Kind::Raw { counter: true, .. } = f.kind {
                out.push(',');
                if let Some(d) = self.delta(i, prev) {
                    let _ = write!(out, "{d}");
                }
            }
        }
        out
    }
}

/// The CSV header: `t,conn,` then every column, each counter followed by its `_delta`.
pub fn csv_header() -> String {
    let mut out = String::from("t,conn");
    for f in FIELDS {
        out.push(',');
        out.push_str(f.name);
        if let Kind::Raw { counter: true, .. } = f.kind {
            let _ = write!(out, ",{}_delta", f.name);
        }
    }
    out
}

/// Index of field `name` in [`FIELDS`]; panics on an unknown name (names are compile-time
/// constants of this crate, so that is a bug caught by the tests).
pub fn index(name: &str) -> usize {
    match FIELDS.iter().position(|f| f.name == name) {
        Some(i) => i,
        None => panic!("no sample field named {name}"),
    }
}

/// The markdown table of every field, as it appears in `docs/monitor.md`.
pub fn doc_table() -> String {
    let mut out = String::from("| field | unit | source | Web100 / RFC 4898 | meaning |\n|---|---|---|---|---|\n");
    for f in FIELDS {
        let delta = if let Kind::Raw { counter: true, .. } = f.kind { " (+ `_delta`)" } else { "" };
        let web = if f.web100.is_empty() { String::new() } else { format!("`{}`", f.web100) };
        let _ = writeln!(out, "| `{}`{delta} | {} | {} | {web} | {} |", f.name, f.unit, f.source, f.doc);
    }
    out
}

/// `snd_ssthresh` when the kernel has not set it yet (`TCP_INFINITE_SSTHRESH`).
pub const INFINITE_SSTHRESH: u64 = 0x7fff_ffff;

const fn info(off: u16, size: u8, counter: bool) -> Kind {
    Kind::Raw { src: Src::Info { off, size }, counter }
}

const fn gauge(off: u16, size: u8) -> Kind {
    info(off, size, false)
}

const fn counter(off: u16, size: u8) -> Kind {
    info(off, size, true)
}

const fn raw(src: Src) -> Kind {
    Kind::Raw { src, counter: false }
}

macro_rules! f {
    ($name:literal, $unit:literal, $source:literal, $web:literal, $kind:expr, $doc:literal) => {
        Field { name: $name, unit: $unit, source: $source, web100: $web, kind: $kind, doc: $doc }
    };
}

fn ms_of(c: &Ctx, name: &str) -> Option<Val> {
    c.get(name).map(|us| Val::F(us as f64 / 1000.0))
}

fn bytes_of_segments(c: &Ctx, name: &str) -> Option<Val> {
    let segs = c.get(name)?;
    if segs >= INFINITE_SSTHRESH {
        return None;
    }
    Some(Val::U(segs * c.get("snd_mss")?))
}

fn cwnd_limited_us(c: &Ctx) -> Option<u64> {
    Some(c.get("busy_time")?.saturating_sub(c.get("rwnd_limited")? + c.get("sndbuf_limited")?))
}

/// Shares of the time from `s` to now: (network/cwnd, receiver window, sender), each 0..1.
pub fn limit_shares(c: &Ctx, s: Option<&Sample>) -> Option<(f64, f64, f64)> {
    let dt_us = c.secs_since(s)? * 1e6;
    let busy = c.delta_of(s, "busy_time")? as f64;
    let rwnd = c.delta_of(s, "rwnd_limited")? as f64;
    let sndbuf = c.delta_of(s, "sndbuf_limited")? as f64;
    // The chronos are jiffy-quantised, so over a short interval they can exceed the wall time a
    // little; clamp so that the three shares sum to 1.
    let busy = busy.min(dt_us);
    let rwnd = rwnd.min(busy);
    let sndbuf = sndbuf.min(busy - rwnd);
    let net = busy - rwnd - sndbuf;
    let snd = (dt_us - busy) + sndbuf;
    Some((net / dt_us, rwnd / dt_us, snd / dt_us))
}

/// Every field of a sample, in output order.
pub static FIELDS: &[Field; N_FIELDS] = &[
    // The inet_diag_msg header.
    f!(
        "state",
        "enum",
        "`idiag_state`",
        "`tcpEStatsConnectState`",
        raw(Src::Diag(DiagField::State)),
        "TCP state: 1 ESTABLISHED, 2 SYN_SENT, 3 SYN_RECV, 4 FIN_WAIT1, 5 FIN_WAIT2, 6 TIME_WAIT, 7 CLOSE, 8 CLOSE_WAIT, 9 LAST_ACK, 10 LISTEN, 11 CLOSING"
    ),
    f!(
        "rqueue",
        "bytes",
        "`idiag_rqueue`",
        "",
        raw(Src::Diag(DiagField::RQueue)),
        "received bytes not yet read by the application (`ss` Recv-Q)"
    ),
    f!(
        "wqueue",
        "bytes",
        "`idiag_wqueue`",
        "",
        raw(Src::Diag(DiagField::WQueue)),
        "bytes written by the application and not yet acknowledged (`ss` Send-Q)"
    ),
    // struct tcp_info (include/uapi/linux/tcp.h), in its order.
    f!(
        "ca_state",
        "enum",
        "`tcpi_ca_state`",
        "",
        gauge(1, 1),
        "congestion-avoidance state: 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss"
    ),
    f!(
        "retransmits",
        "count",
        "`tcpi_retransmits`",
        "",
        gauge(2, 1),
        "consecutive retransmission timeouts of the head segment (`icsk_retransmits`), reset on progress"
    ),
    f!("probes", "count", "`tcpi_probes`", "", gauge(3, 1), "zero-window or keepalive probes sent without answer"),
    f!("backoff", "count", "`tcpi_backoff`", "", gauge(4, 1), "exponential back-off of the RTO (`icsk_backoff`)"),
    f!(
        "options",
        "bits",
        "`tcpi_options`",
        "",
        gauge(5, 1),
        "negotiated options: 1 timestamps, 2 SACK, 4 window scale, 8 ECN, 16 ECN seen, 32 SYN data"
    ),
    f!(
        "snd_wscale",
        "shift",
        "`tcpi_snd_wscale`",
        "`tcpEStatsStackSndWinScaleRcvd`",
        raw(Src::Bits { off: 6, shift: 0, width: 4 }),
        "window scale the peer announced (applied to its windows)"
    ),
    f!(
        "rcv_wscale",
        "shift",
        "`tcpi_rcv_wscale`",
        "`tcpEStatsStackSndWinScaleSent`",
        raw(Src::Bits { off: 6, shift: 4, width: 4 }),
        "window scale we announced"
    ),
    f!(
        "delivery_rate_app_limited",
        "flag",
        "`tcpi_delivery_rate_app_limited`",
        "",
        raw(Src::Bits { off: 7, shift: 0, width: 1 }),
        "1 when the last delivery-rate sample was taken while the application did not fill the window (bit present since 4.9; older kernels report 0)"
    ),
    f!(
        "fastopen_client_fail",
        "enum",
        "`tcpi_fastopen_client_fail`",
        "",
        raw(Src::Bits { off: 7, shift: 1, width: 2 }),
        "why TCP Fast Open failed on a client socket (0 unspecified, 1 no cookie sent, 2 SYN data not acked, 3 SYN-ACK without cookie)"
    ),
    f!("rto", "µs", "`tcpi_rto`", "", gauge(8, 4), "retransmission timeout (jiffy-quantised)"),
    f!("ato", "µs", "`tcpi_ato`", "", gauge(12, 4), "delayed-ACK timeout"),
    f!("snd_mss", "bytes", "`tcpi_snd_mss`", "`tcpEStatsStackCurMSS`", gauge(16, 4), "current sending MSS"),
    f!("rcv_mss", "bytes", "`tcpi_rcv_mss`", "", gauge(20, 4), "estimate of the peer's MSS"),
    f!(
        "unacked",
        "segments",
        "`tcpi_unacked`",
        "",
        gauge(24, 4),
        "segments sent and not yet acknowledged (`packets_out`)"
    ),
    f!(
        "sacked",
        "segments",
        "`tcpi_sacked`",
        "",
        gauge(28, 4),
        "segments SACKed by the peer (listening socket: accept backlog)"
    ),
    f!("lost", "segments", "`tcpi_lost`", "", gauge(32, 4), "segments considered lost"),
    f!("retrans", "segments", "`tcpi_retrans`", "", gauge(36, 4), "retransmitted segments not yet acknowledged"),
    f!("fackets", "segments", "`tcpi_fackets`", "", gauge(40, 4), "always 0 since Linux 4.15 (FACK removed)"),
    f!("last_data_sent", "ms", "`tcpi_last_data_sent`", "", gauge(44, 4), "time since data was last sent"),
    f!("last_ack_sent", "ms", "`tcpi_last_ack_sent`", "", gauge(48, 4), "not implemented by Linux (always 0)"),
    f!("last_data_recv", "ms", "`tcpi_last_data_recv`", "", gauge(52, 4), "time since data was last received"),
    f!("last_ack_recv", "ms", "`tcpi_last_ack_recv`", "", gauge(56, 4), "time since an ACK was last received"),
    f!("pmtu", "bytes", "`tcpi_pmtu`", "", gauge(60, 4), "path MTU"),
    f!("rcv_ssthresh", "bytes", "`tcpi_rcv_ssthresh`", "", gauge(64, 4), "current window clamp of the receive side"),
    f!("rtt", "µs", "`tcpi_rtt`", "", gauge(68, 4), "smoothed RTT (`srtt`)"),
    f!("rttvar", "µs", "`tcpi_rttvar`", "", gauge(72, 4), "RTT mean deviation (`mdev`)"),
    f!(
        "snd_ssthresh",
        "segments",
        "`tcpi_snd_ssthresh`",
        "",
        gauge(76, 4),
        "slow-start threshold (2147483647 = not yet set)"
    ),
    f!("snd_cwnd", "segments", "`tcpi_snd_cwnd`", "", gauge(80, 4), "congestion window"),
    f!("advmss", "bytes", "`tcpi_advmss`", "", gauge(84, 4), "MSS we advertise"),
    f!("reordering", "segments", "`tcpi_reordering`", "", gauge(88, 4), "reordering degree the sender assumes"),
    f!("rcv_rtt", "µs", "`tcpi_rcv_rtt`", "", gauge(92, 4), "receiver-side RTT estimate"),
    f!("rcv_space", "bytes", "`tcpi_rcv_space`", "", gauge(96, 4), "receive-buffer auto-tuning space"),
    f!(
        "total_retrans",
        "segments",
        "`tcpi_total_retrans`",
        "`tcpEStatsPerfSegsRetrans`",
        counter(100, 4),
        "segments retransmitted over the connection's life"
    ),
    f!("pacing_rate", "bytes/s", "`tcpi_pacing_rate`", "", gauge(104, 8), "current pacing rate (Linux 3.15)"),
    f!("max_pacing_rate", "bytes/s", "`tcpi_max_pacing_rate`", "", gauge(112, 8), "SO_MAX_PACING_RATE (Linux 3.15)"),
    f!(
        "bytes_acked",
        "bytes",
        "`tcpi_bytes_acked`",
        "`tcpEStatsAppThruOctetsAcked`",
        counter(120, 8),
        "bytes acknowledged by the peer, the SYN counting as one (Linux 4.1)"
    ),
    f!(
        "bytes_received",
        "bytes",
        "`tcpi_bytes_received`",
        "`tcpEStatsAppThruOctetsReceived`",
        counter(128, 8),
        "bytes received in order (Linux 4.1)"
    ),
    f!(
        "segs_out",
        "segments",
        "`tcpi_segs_out`",
        "`tcpEStatsPerfSegsOut`",
        counter(136, 4),
        "segments sent, retransmissions and pure ACKs included (Linux 4.2)"
    ),
    f!(
        "segs_in",
        "segments",
        "`tcpi_segs_in`",
        "`tcpEStatsPerfSegsIn`",
        counter(140, 4),
        "segments received (Linux 4.2)"
    ),
    f!(
        "notsent_bytes",
        "bytes",
        "`tcpi_notsent_bytes`",
        "",
        gauge(144, 4),
        "bytes in the send queue not yet sent (Linux 4.6)"
    ),
    f!(
        "min_rtt",
        "µs",
        "`tcpi_min_rtt`",
        "`tcpEStatsStackMinRTT`",
        gauge(148, 4),
        "minimum RTT seen in a recent window (Linux 4.6)"
    ),
    f!(
        "data_segs_in",
        "segments",
        "`tcpi_data_segs_in`",
        "`tcpEStatsPerfDataSegsIn`",
        counter(152, 4),
        "segments received carrying data (Linux 4.6)"
    ),
    f!(
        "data_segs_out",
        "segments",
        "`tcpi_data_segs_out`",
        "`tcpEStatsPerfDataSegsOut`",
        counter(156, 4),
        "segments sent carrying data, retransmissions included (Linux 4.6)"
    ),
    f!(
        "delivery_rate",
        "bytes/s",
        "`tcpi_delivery_rate`",
        "",
        gauge(160, 8),
        "most recent delivery-rate sample (Linux 4.9)"
    ),
    f!(
        "busy_time",
        "µs",
        "`tcpi_busy_time`",
        "",
        counter(168, 8),
        "time with data outstanding or queued: the sum of the busy, rwnd-limited and sndbuf-limited chronos, jiffy-quantised (Linux 4.10)"
    ),
    f!(
        "rwnd_limited",
        "µs",
        "`tcpi_rwnd_limited`",
        "`tcpEStatsPerfSndLimTimeRwin` (µs here)",
        counter(176, 8),
        "time the sender was stopped by the receiver's window (Linux 4.10)"
    ),
    f!(
        "sndbuf_limited",
        "µs",
        "`tcpi_sndbuf_limited`",
        "",
        counter(184, 8),
        "time the sender was stopped by a full send buffer that could not grow (Linux 4.10)"
    ),
    f!(
        "delivered",
        "segments",
        "`tcpi_delivered`",
        "",
        counter(192, 4),
        "segments delivered to the peer, retransmissions counted once (Linux 4.18)"
    ),
    f!(
        "delivered_ce",
        "segments",
        "`tcpi_delivered_ce`",
        "",
        counter(196, 4),
        "delivered segments the peer echoed as CE-marked (Linux 4.18)"
    ),
    f!(
        "bytes_sent",
        "bytes",
        "`tcpi_bytes_sent`",
        "`tcpEStatsPerfDataOctetsOut`",
        counter(200, 8),
        "payload bytes sent, retransmissions included (Linux 4.19)"
    ),
    f!(
        "bytes_retrans",
        "bytes",
        "`tcpi_bytes_retrans`",
        "`tcpEStatsPerfOctetsRetrans`",
        counter(208, 8),
        "payload bytes retransmitted (Linux 4.19)"
    ),
    f!(
        "dsack_dups",
        "segments",
        "`tcpi_dsack_dups`",
        "`tcpEStatsStackDSACKDups`",
        counter(216, 4),
        "segments the peer reported as received twice (D-SACK) (Linux 4.19)"
    ),
    f!("reord_seen", "count", "`tcpi_reord_seen`", "", counter(220, 4), "reordering events seen (Linux 4.19)"),
    f!(
        "rcv_ooopack",
        "segments",
        "`tcpi_rcv_ooopack`",
        "",
        counter(224, 4),
        "out-of-order segments received (Linux 5.4)"
    ),
    f!(
        "snd_wnd",
        "bytes",
        "`tcpi_snd_wnd`",
        "`tcpEStatsStackCurRwinRcvd`",
        gauge(228, 4),
        "the peer's receive window, scaled (Linux 5.4)"
    ),
    f!(
        "rcv_wnd",
        "bytes",
        "`tcpi_rcv_wnd`",
        "`tcpEStatsStackCurRwinSent`",
        gauge(232, 4),
        "our receive window as last announced, scaled (Linux 6.2)"
    ),
    f!(
        "rehash",
        "count",
        "`tcpi_rehash`",
        "",
        counter(236, 4),
        "PLB or timeout-triggered flow-label rehashes (Linux 6.2)"
    ),
    f!(
        "total_rto",
        "count",
        "`tcpi_total_rto`",
        "`tcpEStatsPerfTimeouts`",
        counter(240, 2),
        "retransmission timeouts over the connection's life (Linux 6.7)"
    ),
    f!(
        "total_rto_recoveries",
        "count",
        "`tcpi_total_rto_recoveries`",
        "",
        counter(242, 2),
        "RTO recovery episodes (Linux 6.7)"
    ),
    f!(
        "total_rto_time",
        "ms",
        "`tcpi_total_rto_time`",
        "",
        counter(244, 4),
        "time spent in RTO recoveries (Linux 6.7)"
    ),
    f!(
        "received_ce",
        "segments",
        "`tcpi_received_ce`",
        "",
        counter(248, 4),
        "CE-marked segments received (Linux 6.18, with Accurate ECN)"
    ),
    f!(
        "delivered_e1_bytes",
        "bytes",
        "`tcpi_delivered_e1_bytes`",
        "",
        counter(252, 4),
        "bytes delivered with ECT(1), as the peer's AccECN feedback tells (Linux 6.18; 32 bits, wraps)"
    ),
    f!(
        "delivered_e0_bytes",
        "bytes",
        "`tcpi_delivered_e0_bytes`",
        "",
        counter(256, 4),
        "bytes delivered with ECT(0) (Linux 6.18; wraps)"
    ),
    f!(
        "delivered_ce_bytes",
        "bytes",
        "`tcpi_delivered_ce_bytes`",
        "",
        counter(260, 4),
        "bytes delivered CE-marked (Linux 6.18; wraps)"
    ),
    f!(
        "received_e1_bytes",
        "bytes",
        "`tcpi_received_e1_bytes`",
        "",
        counter(264, 4),
        "bytes received with ECT(1) (Linux 6.18; wraps)"
    ),
    f!(
        "received_e0_bytes",
        "bytes",
        "`tcpi_received_e0_bytes`",
        "",
        counter(268, 4),
        "bytes received with ECT(0) (Linux 6.18; wraps)"
    ),
    f!(
        "received_ce_bytes",
        "bytes",
        "`tcpi_received_ce_bytes`",
        "",
        counter(272, 4),
        "bytes received CE-marked (Linux 6.18; wraps)"
    ),
    f!(
        "ecn_mode",
        "enum",
        "`tcpi_ecn_mode`",
        "",
        raw(Src::Bits { off: 276, shift: 0, width: 2 }),
        "ECN mode: 0 disabled, 1 RFC 3168 ECN, 2 Accurate ECN, 3 pending (Linux 6.18)"
    ),
    f!(
        "accecn_opt_seen",
        "enum",
        "`tcpi_accecn_opt_seen`",
        "",
        raw(Src::Bits { off: 276, shift: 2, width: 2 }),
        "AccECN option seen: 0 no, 1 empty, 2 with counters, 3 failed (Linux 6.18)"
    ),
    f!(
        "accecn_fail_mode",
        "bits",
        "`tcpi_accecn_fail_mode`",
        "",
        raw(Src::Bits { off: 276, shift: 4, width: 4 }),
        "AccECN failures: 1 ACE send, 2 ACE receive, 4 option send, 8 option receive (Linux 6.18)"
    ),
    // INET_DIAG_MEMINFO.
    f!("rmem", "bytes", "`idiag_rmem` (`sk_rmem_alloc`)", "", raw(Src::Mem(0)), "memory of the receive queue"),
    f!("wmem", "bytes", "`idiag_wmem` (`sk_wmem_queued`)", "", raw(Src::Mem(1)), "memory of the send queue"),
    f!("fmem", "bytes", "`idiag_fmem` (`sk_forward_alloc`)", "", raw(Src::Mem(2)), "memory reserved and not yet used"),
    f!(
        "tmem",
        "bytes",
        "`idiag_tmem` (`sk_wmem_alloc`)",
        "",
        raw(Src::Mem(3)),
        "memory of packets handed to the qdisc and driver and not yet freed"
    ),
    // INET_DIAG_BBRINFO (only when the socket's congestion control is BBR).
    f!(
        "bbr_bw",
        "bytes/s",
        "`bbr_bw_hi << 32 | bbr_bw_lo`",
        "",
        raw(Src::Bbr(0)),
        "BBR's bottleneck bandwidth estimate"
    ),
    f!("bbr_min_rtt", "µs", "`bbr_min_rtt`", "", raw(Src::Bbr(2)), "BBR's min RTT estimate"),
    f!("bbr_pacing_gain", "1/256", "`bbr_pacing_gain`", "", raw(Src::Bbr(3)), "BBR's pacing gain ×256"),
    f!("bbr_cwnd_gain", "1/256", "`bbr_cwnd_gain`", "", raw(Src::Bbr(4)), "BBR's cwnd gain ×256"),
    // Web100 / RFC 4898 names, in the units of RFC 4898.
    f!(
        "CurCwnd",
        "bytes",
        "`snd_cwnd × snd_mss`",
        "`tcpEStatsStackCurCwnd`",
        Kind::Derived(|c| bytes_of_segments(c, "snd_cwnd")),
        "congestion window in bytes"
    ),
    f!(
        "CurSsthresh",
        "bytes",
        "`snd_ssthresh × snd_mss`",
        "`tcpEStatsStackCurSsthresh`",
        Kind::Derived(|c| bytes_of_segments(c, "snd_ssthresh")),
        "slow-start threshold in bytes (absent while not set)"
    ),
    f!(
        "SmoothedRTT",
        "ms",
        "`rtt / 1000`",
        "`tcpEStatsPathSmoothedRTT`",
        Kind::Derived(|c| ms_of(c, "rtt")),
        "smoothed RTT"
    ),
    f!(
        "RTTVar",
        "ms",
        "`rttvar / 1000`",
        "`tcpEStatsPathRTTVar`",
        Kind::Derived(|c| ms_of(c, "rttvar")),
        "RTT variation"
    ),
    f!(
        "CurRTO",
        "ms",
        "`rto / 1000`",
        "`tcpEStatsPathCurRTO`",
        Kind::Derived(|c| ms_of(c, "rto")),
        "retransmission timeout"
    ),
    f!(
        "MinRTT",
        "ms",
        "`min_rtt / 1000`",
        "`tcpEStatsPathMinRTT`",
        Kind::Derived(|c| ms_of(c, "min_rtt")),
        "minimum RTT"
    ),
    f!(
        "PktsRetrans",
        "segments",
        "`total_retrans`",
        "`tcpEStatsPerfSegsRetrans` (Web100 PktsRetrans)",
        Kind::Derived(|c| c.get("total_retrans").map(Val::U)),
        "segments retransmitted"
    ),
    f!(
        "DataBytesOut",
        "bytes",
        "`bytes_sent`",
        "`tcpEStatsPerfDataOctetsOut` (Web100 DataBytesOut)",
        Kind::Derived(|c| c.get("bytes_sent").map(Val::U)),
        "payload bytes sent, retransmissions included"
    ),
    f!(
        "SndLimTimeRwin",
        "ms",
        "`rwnd_limited / 1000`",
        "`tcpEStatsPerfSndLimTimeRwin`",
        Kind::Derived(|c| ms_of(c, "rwnd_limited")),
        "time limited by the receiver's window"
    ),
    f!(
        "SndLimTimeCwnd",
        "ms",
        "`(busy_time − rwnd_limited − sndbuf_limited) / 1000`",
        "`tcpEStatsPerfSndLimTimeCwnd`",
        Kind::Derived(|c| cwnd_limited_us(c).map(|us| Val::F(us as f64 / 1000.0))),
        "time limited by the congestion window or pacing, i.e. by the network"
    ),
    f!(
        "SndLimTimeSnd",
        "ms",
        "`sndbuf_limited + (elapsed − Δbusy_time)` since the connection's first sample, / 1000",
        "`tcpEStatsPerfSndLimTimeSnd`",
        Kind::Derived(|c| {
            let idle_us =
                (c.secs_since(Some(c.first))? * 1e6 - c.delta_of(Some(c.first), "busy_time")? as f64).max(0.0);
            Some(Val::F((c.get("sndbuf_limited")? as f64 + idle_us) / 1000.0))
        }),
        "time limited by the sender: its send buffer, or nothing to send (idle time counted from the first sample, since tcp_info has no start time)"
    ),
    // tcpscope's derived values (seed 002 §4).
    f!(
        "ave_bw",
        "bit/s",
        "`Δbytes_sent × 8 / Δt` since the connection's first sample",
        "WAD `AveBW`",
        Kind::Derived(|c| Some(Val::F(
            c.delta_of(Some(c.first), "bytes_sent")? as f64 * 8.0 / c.secs_since(Some(c.first))?
        ))),
        "average sending rate since the connection was first seen"
    ),
    f!(
        "int_bw",
        "bit/s",
        "`Δbytes_sent × 8 / Δt` since the previous sample",
        "WAD `LastIntervalBW`",
        Kind::Derived(|c| Some(Val::F(c.delta_of(c.prev, "bytes_sent")? as f64 * 8.0 / c.secs_since(c.prev)?))),
        "sending rate over the last interval, retransmissions included"
    ),
    f!(
        "int_goodput",
        "bit/s",
        "`Δbytes_acked × 8 / Δt` since the previous sample",
        "",
        Kind::Derived(|c| Some(Val::F(c.delta_of(c.prev, "bytes_acked")? as f64 * 8.0 / c.secs_since(c.prev)?))),
        "rate of newly acknowledged bytes over the last interval"
    ),
    f!(
        "lim_network",
        "share 0–1",
        "`(Δbusy_time − Δrwnd_limited − Δsndbuf_limited) / Δt`",
        "`ΔSndLimTimeCwnd / Δt`",
        Kind::Derived(|c| limit_shares(c, c.prev).map(|s| Val::F(s.0))),
        "share of the last interval the sender was network/congestion-limited (see triage)"
    ),
    f!(
        "lim_receiver",
        "share 0–1",
        "`Δrwnd_limited / Δt`",
        "`ΔSndLimTimeRwin / Δt`",
        Kind::Derived(|c| limit_shares(c, c.prev).map(|s| Val::F(s.1))),
        "share of the last interval the sender was receiver window-limited"
    ),
    f!(
        "lim_sender",
        "share 0–1",
        "`(Δt − Δbusy_time + Δsndbuf_limited) / Δt`",
        "`ΔSndLimTimeSnd / Δt`",
        Kind::Derived(|c| limit_shares(c, c.prev).map(|s| Val::F(s.2))),
        "share of the last interval the sender was limited by itself: nothing to send, or a full send buffer"
    ),
];

/// Length of `struct tcp_info` this crate knows (Linux 6.18: up to the AccECN bit fields).
pub const TCP_INFO_KNOWN_LEN: usize = 280;

/// Fills the `tcp_info` fields of `raw` from an `INET_DIAG_INFO` attribute of `info.len()` bytes.
///
/// A field that does not fit entirely in the attribute is left absent: the kernel that sent it
/// predates the field. Bytes beyond [`TCP_INFO_KNOWN_LEN`] (a newer kernel) are ignored.
pub fn decode_tcp_info(info: &[u8], raw: &mut Raw) {
    let l = &*LAYOUT;
    for &(i, off, size) in &l.info {
        // Sizes 1, 2, 4 and 8 each read as a fixed-size integer (not a copy of `size` bytes).
        let v = match size {
            1 => info.get(off).map(|&b| u64::from(b)),
            2 => info.get(off..off + 2).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]]))),
            4 => info.get(off..off + 4).map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
            _ => info.get(off..off + 8).and_then(|b| Some(u64::from_le_bytes(b.try_into().ok()?))),
        };
        raw.set(i, v);
    }
    for &(i, off, shift, width) in &l.bits {
        raw.set(i, info.get(off).map(|b| u64::from((b >> shift) & ((1u8 << width) - 1))));
    }
}

/// Where the raw fields come from, as flat lists built once from [`FIELDS`]: decoding a reply
/// is a pass over these, not a `match` over every field of the table.
pub(crate) struct Layout {
    /// `tcp_info` fields: index, byte offset, size.
    info: Vec<(usize, usize, usize)>,
    /// `tcp_info` bit fields: index, byte offset, shift, width.
    bits: Vec<(usize, usize, u8, u8)>,
    /// The `inet_diag_msg` header's fields: index and which.
    pub(crate) diag: Vec<(usize, DiagField)>,
    /// `INET_DIAG_MEMINFO`: index and u32 number.
    pub(crate) mem: Vec<(usize, usize)>,
    /// `INET_DIAG_BBRINFO`: index and u32 number.
    pub(crate) bbr: Vec<(usize, usize)>,
}

pub(crate) static LAYOUT: std::sync::LazyLock<Layout> = std::sync::LazyLock::new(|| {
    let mut l = Layout { info: Vec::new(), bits: Vec::new(), diag: Vec::new(), mem: Vec::new(), bbr: Vec::new() };
    for (i, f) in FIELDS.iter().enumerate() {
        let Kind::Raw { src, .. } = f.kind else { continue };
        match src {
            Src::Info { off, size } => l.info.push((i, off.into(), size.into())),
            Src::Bits { off, shift, width } => l.bits.push((i, off.into(), shift, width)),
            Src::Diag(d) => l.diag.push((i, d)),
            Src::Mem(k) => l.mem.push((i, k.into())),
            Src::Bbr(k) => l.bbr.push((i, k.into())),
        }
    }
    l
});

/// The little-endian (host order on the machines we run on) integer of `size` bytes at `off`,
/// or `None` if `buf` ends before it.
pub fn read_le(buf: &[u8], off: usize, size: usize) -> Option<u64> {
    let b = buf.get(off..off.checked_add(size)?)?;
    let mut v = [0u8; 8];
    v[..size].copy_from_slice(b);
    Some(u64::from_le_bytes(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_tcp_info_fields_tile_the_struct() {
        let mut names: Vec<_> = FIELDS.iter().map(|f| f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FIELDS.len());
        // Byte fields from 8 on must cover [8, 276) without gap or overlap; the last word is the
        // AccECN bit fields.
        let mut spans: Vec<(u16, u8)> = FIELDS
            .iter()
            .filter_map(|f| match f.kind {
                Kind::Raw { src: Src::Info { off, size }, .. } if off >= 8 => Some((off, size)),
                _ => None,
            })
            .collect();
        spans.sort();
        let mut at = 8;
        for (off, size) in spans {
            assert_eq!(off, at, "gap or overlap at {off}");
            assert_eq!(off % u16::from(size), 0, "misaligned field at {off}");
            at = off + u16::from(size);
        }
        assert_eq!(at, 276);
        assert_eq!(TCP_INFO_KNOWN_LEN, 280);
    }
}

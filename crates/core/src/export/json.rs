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
use crate::pass::{Analysis, FileSummary};
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
        EndpointJson { addr: e.addr.to_string(), port: e.port }
    }
}

/// One direction's statistics. Units are in the names; `null` means "not measurable".
#[derive(Serialize)]
#[allow(missing_docs)]
pub struct DirJson {
    pub packets: u64,
    pub data_packets: u64,
    pub pure_acks: u64,
    pub payload_bytes: u64,
    pub unique_bytes: u64,
    pub rexmit_packets: u64,
    pub rexmit_bytes: u64,
    pub out_of_order_packets: u64,
    pub dup_acks: u64,
    pub triple_dup_acks: u64,
    pub syn: u64,
    pub fin: u64,
    pub rst: u64,
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub window_scale_option: Option<u8>,
    pub sack_permitted: bool,
    pub timestamps: bool,
    pub sack_packets: u64,
    pub sack_blocks: u64,
    pub dsacks: u64,
    pub zero_window_adverts: u64,
    pub zero_window_probes: u64,
    pub zero_window_probe_bytes: u64,
    pub keepalives: u64,
    pub window_shrinks: u64,
    pub window_min_bytes: Option<u64>,
    pub window_avg_bytes: Option<f64>,
    pub window_max_bytes: Option<u64>,
    pub rtt_samples: u64,
    pub rtt_min_ms: Option<f64>,
    pub rtt_avg_ms: Option<f64>,
    pub rtt_max_ms: Option<f64>,
    pub rtt_stdev_ms: Option<f64>,
    pub rtt_ts_samples: u64,
    pub rtt_ts_min_ms: Option<f64>,
    pub rtt_ts_avg_ms: Option<f64>,
    pub rtt_ts_max_ms: Option<f64>,
    pub rtt_ts_stdev_ms: Option<f64>,
    pub karn_discards: u64,
    pub post_loss_acks: u64,
    pub max_in_flight_bytes: u64,
    pub throughput_bps: Option<f64>,
    pub goodput_bps: Option<f64>,
    pub acked_bytes: u64,
    pub holes: u64,
    pub acked_unseen_bytes: u64,
    pub truncated_packets: u64,
    pub truncated_bytes: u64,
    pub first_time: Option<f64>,
    pub last_time: Option<f64>,
    pub data_time_s: f64,
    pub max_idle_s: f64,
    pub analysis_partial: bool,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}
fn ms(ns: f64) -> f64 {
    ns / 1e6
}
fn ms_of(s: &Summary) -> [Option<f64>; 4] {
    let some = s.n > 0;
    [
        some.then(|| ms(s.min as f64)),
        s.mean().map(ms),
        some.then(|| ms(s.max as f64)),
        s.stdev().map(ms),
    ]
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
        ConnJson {
            id,
            file,
            a: c.info.a.into(),
            b: c.info.b.into(),
            state: c.state().name(),
            handshake: c.handshake(),
            reuse: c.info.reuse.map(|r| match r {
                SplitReason::NewIsn => "new_isn",
                SplitReason::IdleGap => "idle_gap",
            }),
            first_time: secs(c.first_ts_ns()),
            last_time: secs(c.last_ts_ns()),
            duration_s: secs(c.last_ts_ns() - c.first_ts_ns()),
            max_idle_s: secs(c.max_idle_ns),
            a2b: (&c.dir[0]).into(),
            b2a: (&c.dir[1]).into(),
        }
    }
}

/// The whole document.
#[derive(Serialize)]
pub struct Document<'a> {
    /// Per input file.
    pub files: &'a [FileSummary],
    /// Connections.
    pub connections: Vec<ConnJson>,
}

/// Builds the document for connections `ids` (global, 1-based) of an analysis whose first
/// connection has global id `first_id`.
pub fn document<'a>(an: &'a Analysis, selected: impl Fn(usize) -> bool) -> Document<'a> {
    let connections = an
        .conns
        .iter()
        .enumerate()
        .filter(|(i, _)| selected(i + 1))
        .map(|(i, c)| {
            let file = an.files.get(c.info.file).map(|f| f.path.display().to_string()).unwrap_or_default();
            ConnJson::new(c, i + 1, file)
        })
        .collect();
    Document { files: &an.files, connections }
}

//! A monitor recording (`tcpscope view run.tsm [trace.pcap]`, docs/monitor.md) as the viewer
//! serves it: its monitored connections (`api/monitor`) and, per connection, its timeline for a
//! view (`api/timeline`): tcp_info series, the send-limit triage per interval, host CPU and the
//! application events with their lifelines, on one time axis, seconds since the connection's
//! first sample. The recording is read once, by the monitor crate's reader
//! ([`tcpscope_monitor::tsm::read`]); each connection's series are built and indexed when it is
//! first asked for, and every answer is bounded by the view's pixel columns, as the packet
//! plots' are ([`crate::api::reduce`]).

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use tcpscope_monitor::fields::{Sample, index};
use tcpscope_monitor::triage::{self, ConnSummary};
use tcpscope_monitor::tsm::{self, Recording};

use crate::api::{MAX_COLUMNS, Viewport, reduce};
use crate::data::{Line, Traces};

/// Most application events listed in one answer (the rest are counted in `events_more`).
pub const MAX_EVENTS: usize = 5000;

/// The tcp_info series of a connection: API name, the field, and a scale to the API's unit.
const SERIES: &[(&str, &str, f64)] = &[
    ("cwnd_bytes", "CurCwnd", 1.0),
    ("ssthresh_bytes", "CurSsthresh", 1.0),
    ("rtt_ms", "SmoothedRTT", 1.0),
    ("delivery_bps", "delivery_rate", 8.0),
    ("int_bw_bps", "int_bw", 1.0),
];

/// A recording loaded for the viewer.
pub struct Monitor {
    /// What was read.
    pub rec: Recording,
    /// Each connection's summary and diagnosis (`tcpscope stats run.tsm`), in the recording's order.
    pub sums: Vec<ConnSummary>,
    series: Mutex<HashMap<u32, Arc<OnceLock<Arc<ConnSeries>>>>>,
    /// The event names in lane order ([`lanes`]).
    lanes: Vec<String>,
    /// The events' indices in time order (a view's are found by binary search).
    by_time: Vec<usize>,
    /// Host CPU (user + system, % of all cores) and the `--pid` process's (% of one core) between
    /// successive CPU samples, at the later one (ns since the epoch).
    cpu: [Vec<(u64, f64)>; 2],
}

/// The event names in the order of the stages they are (NetLogger's lifeline layout, first stage
/// first): by the mean place of the name's events among the events of their guid in time order,
/// so that a guid's lifeline runs through the lanes one way; names never seen with a guid come
/// after, in order of first appearance.
pub fn lanes(events: &[tsm::Event]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut by_guid: HashMap<&str, Vec<(u64, usize)>> = HashMap::new();
    for e in events {
        let k = match names.iter().position(|n| *n == e.name) {
            Some(k) => k,
            None => {
                names.push(e.name.clone());
                names.len() - 1
            }
        };
        if let Some((_, g)) = e.fields.iter().find(|(k, _)| k == "guid") {
            by_guid.entry(g).or_default().push((e.t_ns, k));
        }
    }
    // Per name: the sum of its places and their count.
    let mut place = vec![(0.0f64, 0usize); names.len()];
    for evs in by_guid.values_mut() {
        evs.sort_by_key(|e| e.0);
        for (i, &(_, k)) in evs.iter().enumerate() {
            place[k].0 += i as f64;
            place[k].1 += 1;
        }
    }
    let key = |k: usize| match place[k] {
        (_, 0) => (1, f64::MAX, k),
        (sum, n) => (0, sum / n as f64, k),
    };
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (key(a), key(b));
        x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)).then(x.2.cmp(&y.2))
    });
    order.into_iter().map(|k| names[k].clone()).collect()
}

/// One connection's series, indexed for zooming (times: ns since its first sample).
struct ConnSeries {
    /// The first sample's time, ns since the epoch.
    t0_ns: u64,
    last_ns: u64,
    lines: Vec<(&'static str, Line)>,
    /// Per interval: its start and end (ns since t0) and the network, receiver and sender shares.
    limits: Vec<(u64, u64, [f64; 3])>,
    /// Host and process CPU in the connection's life, as [`Monitor::cpu`].
    cpu: [Line; 2],
}

impl Monitor {
    /// Reads the recording at `path` (an error names the file and, for a damaged one, the offset).
    pub fn load(path: &Path) -> io::Result<Monitor> {
        // The reader names the file and offset of damage; other errors (no such file) get the name here.
        let rec = tsm::read(path).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => e,
            k => io::Error::new(k, format!("{}: {e}", path.display())),
        })?;
        let sums = triage::summarize_all(&rec);
        let lanes = lanes(&rec.events);
        let mut by_time: Vec<usize> = (0..rec.events.len()).collect();
        by_time.sort_by_key(|&i| rec.events[i].t_ns);
        let mut cpu = [Vec::new(), Vec::new()];
        for p in rec.cpu.windows(2) {
            let Some(sh) = tcpscope_monitor::events::cpu_shares(&p[0], &p[1]) else { continue };
            if !sh.cores.is_empty() {
                let busy: f64 = sh.cores.iter().map(|c| c[0] + c[1]).sum::<f64>() / sh.cores.len() as f64;
                cpu[0].push((p[1].t_ns, busy * 100.0));
            }
            if let Some(x) = sh.proc {
                cpu[1].push((p[1].t_ns, x * 100.0));
            }
        }
        Ok(Monitor { rec, sums, series: Mutex::default(), lanes, by_time, cpu })
    }

    /// The file's name as the page shows it.
    pub fn name(&self) -> String {
        self.rec.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// `api/monitor`: the recording and its monitored connections; with `traces`, the capture's
    /// connection of the same 4-tuple for each (`capture`: its id, `capture_offset_s`: the
    /// capture connection's first packet in the timeline's seconds).
    pub fn conns_json(&self, traces: Option<&Traces>) -> Value {
        let rows: Vec<Value> = self
            .sums
            .iter()
            .map(|s| {
                let mut row = json!({
                    "id": s.id,
                    "src": s.src, "sport": s.sport, "dst": s.dst, "dport": s.dport,
                    "cong": s.cong,
                    "first_ns": s.first_ns,
                    "duration_s": s.duration_s,
                    "samples": s.samples,
                    "ave_bw": s.ave_bw,
                    "diagnosis": s.diagnosis,
                    "limits": s.limits.as_ref().map(|l| json!({"network": l.network, "receiver": l.receiver, "sender": l.sender})),
                });
                if let Some(t) = traces {
                    let (id, offset, dir) = match capture_of(t, s) {
                        Some((id, off, dir)) => (json!(id), json!(off), json!(dir)),
                        None => (Value::Null, Value::Null, Value::Null),
                    };
                    row["capture"] = id;
                    row["capture_offset_s"] = offset;
                    row["capture_dir"] = dir;
                }
                row
            })
            .collect();
        let header = self.rec.header.as_ref();
        json!({
            "recording": self.name(),
            "host": header.map(|h| h.host.clone()),
            "interval_s": header.map(|h| h.interval_ns as f64 / 1e9),
            "tail": self.rec.tail,
            "captures": traces.map(crate::api::traces_json),
            "conns": rows,
        })
    }

    fn series(&self, id: u32) -> Result<Arc<ConnSeries>, String> {
        if !self.sums.iter().any(|s| s.id == id) {
            return Err(format!("{}: no connection {id}", self.rec.path.display()));
        }
        let cell = self.series.lock().map_err(|_| "poisoned".to_string())?.entry(id).or_default().clone();
        Ok(cell.get_or_init(|| Arc::new(ConnSeries::new(&self.rec, id, &self.cpu))).clone())
    }

    /// `api/timeline`: connection `id`'s timeline over the view (`t0`, `t1`: seconds since its
    /// first sample; `w` pixel columns): each series reduced to the columns, the triage per
    /// interval (per column when intervals outnumber columns), CPU and the events in view.
    pub fn timeline_json(&self, id: u32, v: &Viewport) -> Result<Value, String> {
        let cs = self.series(id)?;
        let t0 = v.t0.unwrap_or(0.0);
        let t1 = v.t1.unwrap_or(cs.last_ns as f64 / 1e9).max(t0);
        let w = v.w.clamp(1, MAX_COLUMNS);
        let mut series = serde_json::Map::new();
        for (name, line) in &cs.lines {
            series.insert((*name).into(), reduce(line, t0, t1, w).to_json());
        }
        let sum = self.sums.iter().find(|s| s.id == id).ok_or_else(|| format!("no connection {id}"))?;
        // Events and CPU in the view, on the connection's clock.
        let rel = |t: u64| (t as f64 - cs.t0_ns as f64) / 1e9;
        let ev = &self.rec.events;
        let i0 = self.by_time.partition_point(|&i| rel(ev[i].t_ns) < t0);
        let i1 = self.by_time.partition_point(|&i| rel(ev[i].t_ns) <= t1).max(i0);
        let in_view = &self.by_time[i0..i1];
        let names = &self.lanes;
        let events: Vec<Value> = in_view
            .iter()
            .take(MAX_EVENTS)
            .map(|&i| {
                let e = &ev[i];
                let guid = e.fields.iter().find(|(k, _)| k == "guid").map(|(_, v)| v.clone());
                let fields: serde_json::Map<String, Value> =
                    e.fields.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
                json!({
                    "t": rel(e.t_ns),
                    "lane": names.iter().position(|n| *n == e.name),
                    "name": e.name,
                    "guid": guid,
                    "fields": fields,
                })
            })
            .collect();
        Ok(json!({
            "conn": id,
            "title": format!("connection {id}: {}:{} → {}:{} (tcp_info, {})", sum.src, sum.sport, sum.dst, sum.dport, self.name()),
            "t": [t0, t1],
            "last": cs.last_ns as f64 / 1e9,
            "start_ns": cs.t0_ns,
            "series": series,
            "limits": limits_json(&cs.limits, t0, t1, w),
            "cpu": json!({
                "host_pct": reduce(&cs.cpu[0], t0, t1, w).to_json(),
                "proc_pct": reduce(&cs.cpu[1], t0, t1, w).to_json(),
            }),
            "lanes": names,
            "events": events,
            "events_more": in_view.len().saturating_sub(MAX_EVENTS),
        }))
    }
}

impl ConnSeries {
    fn new(rec: &Recording, id: u32, cpu: &[Vec<(u64, f64)>; 2]) -> ConnSeries {
        let samples = rec.samples_of(id);
        let (t0_ns, last_ns) = triage::span(&samples).map_or((0, 0), |(t0, t1)| (t0, t1 - t0));
        let first = samples.first().copied();
        // Wall-clock times: a clock stepped back puts a sample before the first, at 0.
        let at = |s: &Sample| s.t_ns.saturating_sub(t0_ns);
        let mut lines = Vec::new();
        for &(name, field, scale) in SERIES {
            let i = index(field);
            let mut prev: Option<&Sample> = None;
            let mut pts = Vec::new();
            for s in &samples {
                if let Some(v) = first.and_then(|f| s.value(i, prev, f)) {
                    pts.push((at(s), v.as_f64() * scale));
                }
                prev = Some(s);
            }
            lines.push((name, Line::new(pts)));
        }
        // Bytes in flight as the kernel counts them: unacked segments × snd_mss.
        let flight = samples.iter().filter_map(|s| Some((at(s), (s.get("unacked")? * s.get("snd_mss")?) as f64)));
        lines.push(("flight_bytes", Line::new(flight.collect())));
        // Retransmitted segments per sample interval.
        let ri = index("total_retrans");
        let retrans = samples.windows(2).filter_map(|w| Some((at(w[1]), w[1].delta(ri, Some(w[0]))? as f64)));
        lines.push(("retrans", Line::new(retrans.collect())));
        let limits = triage::intervals(&samples)
            .into_iter()
            .zip(samples.windows(2))
            .filter_map(|((_, sh), w)| {
                let sh = sh?;
                Some((at(w[0]), at(w[1]), [sh.network, sh.receiver, sh.sender]))
            })
            .collect();
        let cpu = cpu
            .clone()
            .map(|pts| Line::new(pts.into_iter().filter_map(|(t, v)| Some((t.checked_sub(t0_ns)?, v))).collect()));
        ConnSeries { t0_ns, last_ns, lines, limits, cpu }
    }
}

/// The triage over `[t0, t1]`: each interval `{t0, t1, network, receiver, sender}` when they are
/// at most `w`, else one per pixel column, the intervals in it averaged by their length.
fn limits_json(iv: &[(u64, u64, [f64; 3])], t0: f64, t1: f64, w: u32) -> Value {
    let s = |ns: u64| ns as f64 / 1e9;
    let i0 = iv.partition_point(|x| s(x.1) < t0);
    let i1 = iv.partition_point(|x| s(x.0) <= t1);
    let vis = &iv[i0..i1.max(i0)];
    let row =
        |a: f64, b: f64, v: [f64; 3]| json!({"t0": a, "t1": b, "network": v[0], "receiver": v[1], "sender": v[2]});
    if vis.len() <= w as usize {
        return Value::Array(vis.iter().map(|x| row(s(x.0), s(x.1), x.2)).collect());
    }
    let cols = w as usize;
    let span = (t1 - t0).max(f64::MIN_POSITIVE);
    let mut acc = vec![([0.0; 3], 0.0); cols];
    for x in vis {
        let (a, b) = (s(x.0), s(x.1));
        let k = ((((a + b) / 2.0 - t0) / span * cols as f64).floor().max(0.0) as usize).min(cols - 1);
        let d = b - a;
        for j in 0..3 {
            acc[k].0[j] += x.2[j] * d;
        }
        acc[k].1 += d;
    }
    let col = |k: usize| t0 + k as f64 * span / cols as f64;
    Value::Array(
        acc.iter()
            .enumerate()
            .filter(|(_, (_, d))| *d > 0.0)
            .map(|(k, (v, d))| row(col(k), col(k + 1), [v[0] / d, v[1] / d, v[2] / d]))
            .collect(),
    )
}

/// The capture's connection with the same 4-tuple as monitored connection `s` (either way
/// round): its id, where its first packet falls on the timeline (s since `s`'s first sample),
/// and the direction in which the monitored socket sends (`a2b` when it is the capture's `a`).
fn capture_of(t: &Traces, s: &ConnSummary) -> Option<(usize, f64, &'static str)> {
    let (src, dst) = (s.src.parse::<std::net::IpAddr>().ok()?, s.dst.parse::<std::net::IpAddr>().ok()?);
    t.an.conns.iter().enumerate().find_map(|(i, c)| {
        let (a, b) = (&c.info().a, &c.info().b);
        let fwd = a.addr == src && a.port == s.sport && b.addr == dst && b.port == s.dport;
        let rev = b.addr == src && b.port == s.sport && a.addr == dst && a.port == s.dport;
        let dir = if fwd { "a2b" } else { "b2a" };
        (fwd || rev).then(|| (i + 1, (c.first_ts_ns() as f64 - s.first_ns as f64) / 1e9, dir))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that asks for each block before it is written: its `read.start` is the first stage,
    /// whichever action was logged first overall; an event without a guid comes last.
    #[test]
    fn lanes_follow_the_stages_of_a_guid() {
        let ev = |t: u64, name: &str, guid: Option<&str>| tsm::Event {
            t_ns: t,
            name: name.into(),
            fields: guid.map(|g| vec![("guid".to_string(), g.to_string())]).unwrap_or_default(),
        };
        let mut events = vec![ev(0, "disk.stall", None)];
        for k in 0..4u64 {
            let (g, t) = (k.to_string(), 100 * k + 10);
            events.push(ev(t, "read.start", Some(&g)));
            events.push(ev(t + 1, "write.start", Some(&g)));
            events.push(ev(t + 2, "write.end", Some(&g)));
            events.push(ev(t + 3 + k % 2, "read.end", Some(&g)));
        }
        assert_eq!(lanes(&events), ["read.start", "write.start", "write.end", "read.end", "disk.stall"]);
        assert!(lanes(&[]).is_empty());
    }

    /// The wall clock stepped back while recording: the connection's span runs from its first
    /// sample to its latest, and a sample before the first sits at 0 (this overflowed).
    #[test]
    fn a_clock_stepped_back_keeps_the_span() {
        let mut rec = Recording::default();
        for (k, t_ms) in [1000u64, 1100, 1200, 300, 400].into_iter().enumerate() {
            let mut s = Sample::empty(t_ms * 1_000_000, 1);
            s.raw.set(index("bytes_sent"), Some(k as u64 * 10_000));
            s.raw.set(index("rtt"), Some(1000));
            rec.samples.push(s);
        }
        let c = ConnSeries::new(&rec, 1, &[Vec::new(), Vec::new()]);
        assert_eq!((c.t0_ns, c.last_ns), (1_000_000_000, 200_000_000));
        for (name, line) in &c.lines {
            assert!(line.pts.iter().all(|p| p.0 <= c.last_ns), "{name}: {:?}", line.pts);
        }
    }
}

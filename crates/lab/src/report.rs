//! `tcpscope lab report DIR`: every run's sender capture analysed by tcpscope's own engine
//! (`tcpscope_core::pass::Query::stats`, the pass `tcpscope stats` runs), summarised per sweep
//! point.
//!
//! Per run (`runs.csv`, `report.json` → `runs`): throughput — the bytes the receiver
//! acknowledged over the time from the first data segment to the last ACK advance (the
//! analysis' goodput, `docs/statistics.md`) — data segments and retransmitted segments sent,
//! their ratio (the loss the sender saw), mean and minimum RTT, the MSS, the Mathis et al.
//! model's throughput `MSS / (RTT · √(2p/3))` from that loss and RTT, and the router's ground
//! truth (queue drops, random-loss drops) beside them.
//!
//! Per point (`points.csv`, `report.json` → `points`): mean, sample standard deviation and
//! the half-width of the 95 % confidence interval (Student's t with n − 1 degrees of freedom)
//! of each run figure. `report.html` draws them against the swept parameter.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use tcpscope_core::conn::Dir;
use tcpscope_core::pass::Query;
use tcpscope_core::plot::Figure;

use crate::experiment::{Experiment, TrafficKind, XAxis};
use crate::run::{RunInfo, RunResult};

/// One run, analysed.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    /// The point's directory name.
    pub point_dir: String,
    /// The point's index.
    pub point: usize,
    /// Trial (1-based).
    pub trial: u32,
    /// Swept keys and values.
    pub params: serde_json::Map<String, Value>,
    /// `ok` or `failed`.
    pub status: String,
    /// The run's error, or why it could not be analysed.
    pub error: Option<String>,
    /// Throughput (bits/s): acknowledged bytes over first data to last ACK advance.
    pub throughput_bps: Option<f64>,
    /// ttcp -r's figure (bits/s): bytes received over its real seconds.
    pub ttcp_bps: Option<f64>,
    /// Data segments the sender sent (retransmissions included).
    pub data_packets: Option<u64>,
    /// Retransmitted segments.
    pub rexmit_packets: Option<u64>,
    /// `rexmit_packets / data_packets`.
    pub rexmit_rate: Option<f64>,
    /// Mean RTT (ms) of the sender's data.
    pub rtt_ms: Option<f64>,
    /// Smallest RTT (ms).
    pub rtt_min_ms: Option<f64>,
    /// Pure ACKs the receiver sent per data segment it received (seed 003's cost of
    /// acknowledgments).
    pub acks_per_segment: Option<f64>,
    /// Payload bytes per full segment: the receiver's MSS option, less 12 with timestamps.
    pub mss: Option<u64>,
    /// Mathis et al.: MSS / (RTT · √(2p/3)) in bits/s, with p = `rexmit_rate`, RTT = `rtt_ms`.
    pub mathis_bps: Option<f64>,
    /// Padhye, Firoiu, Towsley, Kurose (1998), with timeouts: see [`padhye`]; bits/s.
    pub padhye_bps: Option<f64>,
    /// Configured bottleneck rate (bits/s).
    pub rate_bps: Option<u64>,
    /// Configured loss probability, sender → receiver.
    pub loss: f64,
    /// Drops of the bottleneck queue (router).
    pub queue_drops: Option<u64>,
    /// Drops of the random-loss rule (router), sender → receiver.
    pub loss_drops: Option<u64>,
    /// Configured one-way delay (µs).
    pub delay_us: Option<u64>,
    /// The delay forwarder's mean error, sender → router (µs held beyond the delay).
    pub delay_error_us: Option<f64>,
    /// Per sender, with several senders or short connections.
    pub senders: Vec<SenderRow>,
    /// Jain's fairness index of the senders' throughputs (bulk traffic, several senders).
    pub jain: Option<f64>,
    /// Completion times of the short connections, all senders together.
    pub fct: Option<Fct>,
    /// Every short connection's completion time (s), for the distribution figure.
    #[serde(skip)]
    pub completions: Vec<f64>,
    /// Per sender, the connection of its capture to draw: (sender, 0-based connection index,
    /// direction of its data): the one that carried the most, the longest-lived among equals.
    #[serde(skip)]
    pub main_conns: Vec<(u32, usize, Dir)>,
    /// The time-sequence plots drawn for this run, relative to the report's directory.
    pub time_sequence: Vec<String>,
}

/// One sender of a run.
#[derive(Debug, Clone, Serialize)]
pub struct SenderRow {
    /// 1-based (address 10.9.1.I).
    pub sender: u32,
    /// Its congestion control.
    pub cc: String,
    /// Its throughput (bits/s): its bytes acknowledged over the time from its first data
    /// segment to its last ACK advance, by the analysis of the capture.
    pub throughput_bps: Option<f64>,
    /// Its ttcp -r figure (bits/s), bulk traffic.
    pub ttcp_bps: Option<f64>,
    /// Its data segments.
    pub data_packets: Option<u64>,
    /// Its retransmitted segments.
    pub rexmit_packets: Option<u64>,
    /// Its mean RTT (ms).
    pub rtt_ms: Option<f64>,
    /// Its smallest RTT (ms).
    pub rtt_min_ms: Option<f64>,
    /// Its path's configured one-way delay (µs): `path.delay` plus its `topology.delay`.
    pub delay_us: u64,
    /// Its connections the capture holds.
    pub connections_seen: u64,
    /// Its short connections' completion times.
    pub fct: Option<Fct>,
}

/// Mean, standard deviation and 95 % CI half-width of one figure over a point's runs.
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct Stat {
    /// Runs with the figure.
    pub n: usize,
    /// Mean.
    pub mean: Option<f64>,
    /// Sample standard deviation (n − 1); `None` below 2 runs.
    pub sd: Option<f64>,
    /// Half-width of the 95 % confidence interval of the mean (Student's t); `None` below 2.
    pub ci95: Option<f64>,
}

impl Stat {
    /// The statistics of the samples.
    pub fn of(xs: &[f64]) -> Stat {
        let n = xs.len();
        if n == 0 {
            return Stat::default();
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Stat { n, mean: Some(mean), sd: None, ci95: None };
        }
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        Stat { n, mean: Some(mean), sd: Some(sd), ci95: Some(t95(n - 1) * sd / (n as f64).sqrt()) }
    }
}

/// Student's t, two-sided 95 %, for `df` degrees of freedom (tables; 1.96 beyond 30).
pub fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    if df == 0 { f64::NAN } else { T.get(df - 1).copied().unwrap_or(1.96) }
}

/// One sweep point, summarised.
#[derive(Debug, Clone, Serialize)]
pub struct PointRow {
    /// The point's index.
    pub point: usize,
    /// Its directory.
    pub point_dir: String,
    /// Swept keys and values.
    pub params: serde_json::Map<String, Value>,
    /// Runs that finished.
    pub runs_ok: usize,
    /// Runs that failed.
    pub runs_failed: usize,
    /// Throughput (bits/s).
    pub throughput_bps: Stat,
    /// ttcp -r's throughput (bits/s).
    pub ttcp_bps: Stat,
    /// Retransmitted / data segments.
    pub rexmit_rate: Stat,
    /// Mean RTT (ms).
    pub rtt_ms: Stat,
    /// Pure ACKs per data segment.
    pub acks_per_segment: Stat,
    /// Mathis model (bits/s).
    pub mathis_bps: Stat,
    /// Padhye model (bits/s).
    pub padhye_bps: Stat,
    /// Router queue drops.
    pub queue_drops: Stat,
    /// Router random-loss drops.
    pub loss_drops: Stat,
    /// Jain's fairness index of the senders' throughputs.
    pub jain: Stat,
    /// Mean completion time of the short connections (s), per run.
    pub fct_mean_s: Stat,
    /// Median completion time (s), per run.
    pub fct_p50_s: Stat,
    /// 99th percentile of the completion times (s), per run.
    pub fct_p99_s: Stat,
    /// Per sender (index 0 is sender 1): its throughput (bits/s; ttcp's without a capture).
    pub sender_bps: Vec<Stat>,
    /// Per sender: its congestion control.
    pub sender_cc: Vec<String>,
    /// Per sender: its mean RTT (ms), from the capture.
    pub sender_rtt_ms: Vec<Stat>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The experiment's name.
    pub experiment: String,
    /// Its description.
    pub description: String,
    /// The swept keys.
    pub keys: Vec<String>,
    /// The key on the figures' horizontal axis.
    pub x: Option<String>,
    /// Per point.
    pub points: Vec<PointRow>,
    /// Per run.
    pub runs: Vec<RunRow>,
}

/// Reads every run under `dir`, analyses the captures, writes `report.json`, `points.csv`,
/// `runs.csv` and `report.html` into `dir`. Returns the report.
pub fn report(dir: &Path) -> Result<Report, String> {
    let mut runs: Vec<RunRow> = Vec::new();
    let mut base: Option<Experiment> = None;
    for point_dir in sorted_dirs(dir)? {
        for trial_dir in sorted_dirs(&point_dir)? {
            let Ok(text) = std::fs::read_to_string(trial_dir.join("run.json")) else { continue };
            let info: RunInfo =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", trial_dir.join("run.json").display()))?;
            // No result.json: the run never finished; one that does not parse is an error.
            let (result, unreadable) = match std::fs::read_to_string(trial_dir.join("result.json")) {
                Err(_) => (None, None),
                Ok(t) => match serde_json::from_str::<RunResult>(&t) {
                    Ok(r) => (Some(r), None),
                    Err(e) => (None, Some(format!("{}: {e}", trial_dir.join("result.json").display()))),
                },
            };
            if base.is_none() {
                base = Some(info.settings.clone());
            }
            let pd = point_dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let mut row = analyse_run(&trial_dir, pd, &info, result.as_ref());
            if let Some(e) = unreadable {
                row.error = Some(e);
            }
            runs.push(row);
        }
    }
    let Some(base) = base else {
        return Err(format!("{}: no runs here (run.json files of `tcpscope lab run`)", dir.display()));
    };
    // The time-sequence plots of the chosen runs, by the plot code `tcpscope plot` runs.
    let points_n = runs.iter().map(|r| r.point + 1).max().unwrap_or(0);
    let chosen: Vec<(usize, u32)> = match &base.report.time_sequence {
        Some(list) => list.iter().filter_map(|r| crate::experiment::run_ref(r)).collect(),
        None if points_n <= 12 => (0..points_n).map(|p| (p, 1)).collect(),
        None => Vec::new(),
    };
    for row in runs.iter_mut().filter(|r| chosen.contains(&(r.point, r.trial)) && r.error.is_none()) {
        let run_dir = dir.join(&row.point_dir).join(format!("t{}", row.trial));
        let n = row.main_conns.len();
        for &(sender, conn, d) in &row.main_conns.clone() {
            let name = if n == 1 { "tsg.svg".to_string() } else { format!("tsg-s{sender}.svg") };
            let title = format!(
                "{}/t{}: {}time sequence of connection {} ({})",
                row.point_dir,
                row.trial,
                if n > 1 { format!("sender {sender}, ") } else { String::new() },
                conn + 1,
                if d == Dir::AtoB { "a2b" } else { "b2a" }
            );
            match time_sequence(&run_dir.join("snd.pcap"), conn, d, &title) {
                Ok(fig) => {
                    let svg = tcpscope_core::plot::svg::render(&fig, TSG_SIZE.0, TSG_SIZE.1);
                    let path = run_dir.join(&name);
                    std::fs::write(&path, svg).map_err(|e| format!("{}: {e}", path.display()))?;
                    row.time_sequence.push(format!("{}/t{}/{name}", row.point_dir, row.trial));
                }
                Err(e) => row.error = Some(format!("time-sequence plot: {e}")),
            }
        }
    }
    let keys: Vec<String> = runs.first().map(|r| r.params.keys().cloned().collect()).unwrap_or_default();
    let x = base.report.x.clone().or_else(|| keys.first().cloned());
    let mut by_point: BTreeMap<usize, Vec<&RunRow>> = BTreeMap::new();
    for r in &runs {
        by_point.entry(r.point).or_default().push(r);
    }
    let points = by_point
        .into_values()
        .map(|rs| {
            let ok: Vec<&&RunRow> = rs.iter().filter(|r| r.status == "ok" && r.error.is_none()).collect();
            let st = |f: &dyn Fn(&RunRow) -> Option<f64>| Stat::of(&ok.iter().filter_map(|r| f(r)).collect::<Vec<_>>());
            PointRow {
                point: rs[0].point,
                point_dir: rs[0].point_dir.clone(),
                params: rs[0].params.clone(),
                runs_ok: ok.len(),
                runs_failed: rs.len() - ok.len(),
                throughput_bps: st(&|r| r.throughput_bps),
                ttcp_bps: st(&|r| r.ttcp_bps),
                rexmit_rate: st(&|r| r.rexmit_rate),
                rtt_ms: st(&|r| r.rtt_ms),
                acks_per_segment: st(&|r| r.acks_per_segment),
                mathis_bps: st(&|r| r.mathis_bps),
                padhye_bps: st(&|r| r.padhye_bps),
                queue_drops: st(&|r| r.queue_drops.map(|v| v as f64)),
                loss_drops: st(&|r| r.loss_drops.map(|v| v as f64)),
                jain: st(&|r| r.jain),
                fct_mean_s: st(&|r| r.fct.map(|f| f.mean_s)),
                fct_p50_s: st(&|r| r.fct.map(|f| f.p50_s)),
                fct_p99_s: st(&|r| r.fct.map(|f| f.p99_s)),
                sender_bps: (0..ok.iter().map(|r| r.senders.len()).max().unwrap_or(0))
                    .map(|i| st(&|r| r.senders.get(i).and_then(|s| s.throughput_bps.or(s.ttcp_bps))))
                    .collect(),
                sender_cc: ok
                    .iter()
                    .max_by_key(|r| r.senders.len())
                    .map(|r| r.senders.iter().map(|s| s.cc.clone()).collect())
                    .unwrap_or_default(),
                sender_rtt_ms: (0..ok.iter().map(|r| r.senders.len()).max().unwrap_or(0))
                    .map(|i| st(&|r| r.senders.get(i).and_then(|s| s.rtt_ms)))
                    .collect(),
            }
        })
        .collect();
    let rep = Report { experiment: base.name.clone(), description: base.description.clone(), keys, x, points, runs };
    let w = |name: &str, text: String| {
        std::fs::write(dir.join(name), text).map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    w("report.json", serde_json::to_string_pretty(&rep).map_err(|e| e.to_string())? + "\n")?;
    w("points.csv", points_csv(&rep))?;
    w("runs.csv", runs_csv(&rep))?;
    if rep.runs.iter().any(|x| !x.senders.is_empty()) {
        w("senders.csv", senders_csv(&rep))?;
    }
    w("report.html", html(&rep, dir, base.report.x_axis))?;
    Ok(rep)
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    // t2 before t10.
    v.sort_by_key(|p| {
        let n = p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let digits: String = n.chars().skip(1).take_while(|c| c.is_ascii_digit()).collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), n)
    });
    Ok(v)
}

/// One run's figures: the analysis of its sender capture, and the router's counters.
fn analyse_run(dir: &Path, point_dir: String, info: &RunInfo, result: Option<&RunResult>) -> RunRow {
    let mut row = RunRow {
        point_dir,
        point: info.point,
        trial: info.trial,
        params: info.params.clone(),
        status: result.map(|r| r.status.clone()).unwrap_or_else(|| "unfinished".into()),
        error: result.and_then(|r| r.error.clone()),
        throughput_bps: None,
        ttcp_bps: None,
        data_packets: None,
        rexmit_packets: None,
        rexmit_rate: None,
        rtt_ms: None,
        rtt_min_ms: None,
        acks_per_segment: None,
        mss: None,
        mathis_bps: None,
        padhye_bps: None,
        rate_bps: info.settings.path.rate.map(|r| r.0),
        loss: info.settings.path.loss,
        queue_drops: None,
        loss_drops: None,
        delay_us: info.settings.path.delay.map(|d| d.0),
        delay_error_us: None,
        senders: Vec::new(),
        jain: None,
        fct: None,
        completions: Vec::new(),
        main_conns: Vec::new(),
        time_sequence: Vec::new(),
    };
    let Some(res) = result.filter(|r| r.status == "ok") else { return row };
    let done = |f: &&crate::flows::Flow| f.error.is_none();
    row.completions = res.flows.iter().filter(done).filter_map(|f| f.completion_s).collect();
    row.fct = Fct::of(&row.completions);
    for s in &res.senders {
        let own: Vec<f64> =
            res.flows.iter().filter(done).filter(|f| f.sender == s.sender).filter_map(|f| f.completion_s).collect();
        let ttcp_bps = s.receive.as_ref().and_then(|rx| {
            let (b, t) = (rx["bytes"].as_f64()?, rx["real_s"].as_f64()?);
            (t > 0.0).then(|| b * 8.0 / t)
        });
        row.senders.push(SenderRow {
            sender: s.sender,
            cc: s.cc.clone(),
            throughput_bps: None,
            ttcp_bps,
            data_packets: None,
            rexmit_packets: None,
            rtt_ms: None,
            rtt_min_ms: None,
            delay_us: info.settings.sender_delay_us(s.sender),
            connections_seen: 0,
            fct: Fct::of(&own),
        });
    }
    if let Some(rx) = &res.receiver {
        let (b, t) = (rx["bytes"].as_f64().unwrap_or(0.0), rx["real_s"].as_f64().unwrap_or(0.0));
        row.ttcp_bps = (t > 0.0).then(|| b * 8.0 / t);
    }
    row.delay_error_us = res.delay_forwarder.as_ref().map(|f| f[0].mean_error_us);
    if let Some(r) = &res.router {
        row.queue_drops = Some(r.queue_drops);
        row.loss_drops = Some(r.loss_drops);
    }
    let cap = dir.join("snd.pcap");
    if !info.settings.capture {
        // Nothing to analyse: ttcp's and the router's figures only.
        if row.senders.len() > 1 && info.settings.traffic.kind == TrafficKind::Bulk {
            row.jain = jain(&row.senders.iter().map(|s| s.ttcp_bps).collect::<Option<Vec<f64>>>());
        }
        return row;
    }
    let an = match Query::new(vec![cap.clone()]).threads(1).stats(&|_, _| {}) {
        Ok(an) => an,
        Err(e) => {
            row.error = Some(format!("{}: {e}", cap.display()));
            return row;
        }
    };
    if let Some(e) = an.files.first().and_then(|f| f.error.as_ref()) {
        row.error = Some(format!("{}: {e}", cap.display()));
    }
    // The data the senders sent: every direction whose source is a sender (10.9.1.I), by
    // sender. With one bulk sender this is its one connection.
    let mut per: BTreeMap<u32, Agg> = BTreeMap::new();
    let mut main: BTreeMap<u32, ((u64, u64), usize, Dir)> = BTreeMap::new();
    for c in &an.conns {
        for d in 0..2 {
            let src = if d == 0 { &c.info().a } else { &c.info().b };
            let Some(i) = sender_of(&src.addr) else { continue };
            let s = &c.dir(d);
            if s.data_packets == 0 {
                continue;
            }
            per.entry(i).or_default().add(s, &c.dir(1 - d));
            let key = (s.acked_bytes, s.last_ack_advance_ts_ns.saturating_sub(s.first_data_ts_ns));
            let dir = if d == 0 { Dir::AtoB } else { Dir::BtoA };
            if main.get(&i).is_none_or(|m| key > m.0) {
                main.insert(i, (key, c.idx(), dir));
            }
        }
    }
    row.main_conns = main.into_iter().map(|(i, (_, c, d))| (i, c, d)).collect();
    if per.is_empty() {
        row.error.get_or_insert_with(|| format!("{}: no data segments", cap.display()));
        return row;
    }
    let mut all = Agg::default();
    for a in per.values() {
        all.merge(a);
    }
    row.throughput_bps = all.goodput_bps();
    row.data_packets = Some(all.data_packets);
    row.rexmit_packets = Some(all.rexmit_packets);
    row.rexmit_rate = (all.data_packets > 0).then(|| all.rexmit_packets as f64 / all.data_packets as f64);
    row.rtt_ms = all.rtt_ms();
    row.rtt_min_ms = all.rtt_min_ns.map(|ns| ns as f64 / 1e6);
    row.acks_per_segment = (all.data_packets > 0).then(|| all.pure_acks as f64 / all.data_packets as f64);
    row.mss = all.mss;
    // The models are for long transfers: per sender, summed over the senders.
    let short = info.settings.traffic.kind == TrafficKind::Short;
    let model = |f: fn(f64, f64, f64) -> f64| -> Option<f64> {
        if short {
            return None;
        }
        per.values()
            .map(|a| match (a.mss, a.rtt_ms(), a.rexmit_rate()) {
                (Some(mss), Some(rtt), Some(p)) if p > 0.0 && rtt > 0.0 => Some(f(mss as f64, rtt / 1e3, p)),
                _ => None,
            })
            .sum()
    };
    row.mathis_bps = model(mathis);
    row.padhye_bps = model(padhye);
    for s in &mut row.senders {
        if let Some(a) = per.get(&s.sender) {
            s.throughput_bps = a.goodput_bps();
            s.data_packets = Some(a.data_packets);
            s.rexmit_packets = Some(a.rexmit_packets);
            s.rtt_ms = a.rtt_ms();
            s.rtt_min_ms = a.rtt_min_ns.map(|ns| ns as f64 / 1e6);
            s.connections_seen = a.conns;
        }
    }
    if row.senders.len() > 1 && !short {
        row.jain = jain(&row.senders.iter().map(|s| s.throughput_bps.or(s.ttcp_bps)).collect::<Option<Vec<f64>>>());
    }
    row
}

/// The sender a source address belongs to: 10.9.1.I is sender I.
fn sender_of(a: &std::net::IpAddr) -> Option<u32> {
    match a {
        std::net::IpAddr::V4(v) => {
            let o = v.octets();
            (o[..3] == [10, 9, 1] && (1..=32).contains(&o[3])).then_some(u32::from(o[3]))
        }
        _ => None,
    }
}

/// Sums of the data directions of one sender (or of all).
#[derive(Default, Clone)]
struct Agg {
    conns: u64,
    acked_bytes: u64,
    first_data_ns: Option<u64>,
    last_ack_ns: u64,
    data_packets: u64,
    rexmit_packets: u64,
    rtt_n: u64,
    rtt_sum_ns: f64,
    rtt_min_ns: Option<u64>,
    pure_acks: u64,
    mss: Option<u64>,
}

impl Agg {
    fn add(&mut self, s: &tcpscope_core::stats::DirStats, back: &tcpscope_core::stats::DirStats) {
        let one = Agg {
            conns: 1,
            acked_bytes: s.acked_bytes,
            first_data_ns: Some(s.first_data_ts_ns),
            last_ack_ns: s.last_ack_advance_ts_ns,
            data_packets: s.data_packets,
            rexmit_packets: s.rexmit_packets,
            rtt_n: s.rtt.n,
            rtt_sum_ns: s.rtt.mean().unwrap_or(0.0) * s.rtt.n as f64,
            rtt_min_ns: (s.rtt.n > 0).then_some(s.rtt.min),
            pure_acks: back.pure_acks,
            mss: back.mss.map(|m| u64::from(m) - if s.timestamp_packets > 0 { 12 } else { 0 }),
        };
        self.merge(&one);
    }
    fn merge(&mut self, o: &Agg) {
        self.conns += o.conns;
        self.acked_bytes += o.acked_bytes;
        self.first_data_ns = match (self.first_data_ns, o.first_data_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_ack_ns = self.last_ack_ns.max(o.last_ack_ns);
        self.data_packets += o.data_packets;
        self.rexmit_packets += o.rexmit_packets;
        self.rtt_n += o.rtt_n;
        self.rtt_sum_ns += o.rtt_sum_ns;
        self.rtt_min_ns = match (self.rtt_min_ns, o.rtt_min_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.pure_acks += o.pure_acks;
        self.mss = self.mss.or(o.mss);
    }
    /// Acknowledged bytes over the time from the first data segment to the last ACK advance
    /// (for one connection: the analysis' goodput).
    fn goodput_bps(&self) -> Option<f64> {
        let first = self.first_data_ns?;
        let t = self.last_ack_ns.saturating_sub(first);
        (self.data_packets > 0 && t > 0 && self.last_ack_ns > 0).then(|| self.acked_bytes as f64 * 8e9 / t as f64)
    }
    fn rtt_ms(&self) -> Option<f64> {
        (self.rtt_n > 0).then(|| self.rtt_sum_ns / self.rtt_n as f64 / 1e6)
    }
    fn rexmit_rate(&self) -> Option<f64> {
        (self.data_packets > 0).then(|| self.rexmit_packets as f64 / self.data_packets as f64)
    }
}

/// Jain's fairness index of the throughputs: (Σx)² / (n·Σx²); 1 when all are equal, 1/n when
/// one takes everything.
pub fn jain(xs: &Option<Vec<f64>>) -> Option<f64> {
    let xs = xs.as_ref()?;
    let (s, s2) = (xs.iter().sum::<f64>(), xs.iter().map(|x| x * x).sum::<f64>());
    (!xs.is_empty() && s2 > 0.0).then(|| s * s / (xs.len() as f64 * s2))
}

/// Completion times of short connections: count, mean, smallest, percentiles (nearest rank),
/// largest; seconds.
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq)]
pub struct Fct {
    /// Connections.
    pub n: usize,
    /// Mean.
    pub mean_s: f64,
    /// Smallest.
    pub min_s: f64,
    /// Median.
    pub p50_s: f64,
    /// 90th percentile.
    pub p90_s: f64,
    /// 99th percentile.
    pub p99_s: f64,
    /// Largest.
    pub max_s: f64,
}

impl Fct {
    /// The summary of the samples; `None` without any.
    pub fn of(xs: &[f64]) -> Option<Fct> {
        if xs.is_empty() {
            return None;
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        Some(Fct {
            n: v.len(),
            mean_s: v.iter().sum::<f64>() / v.len() as f64,
            min_s: v[0],
            p50_s: percentile(&v, 50.0),
            p90_s: percentile(&v, 90.0),
            p99_s: percentile(&v, 99.0),
            max_s: v[v.len() - 1],
        })
    }
}

/// The nearest-rank percentile of sorted samples: the smallest sample with at least q % of the
/// samples at or below it.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// The size (pixels) of the report's time-sequence plots.
const TSG_SIZE: (u32, u32) = (900, 460);

/// The time-sequence figure of connection `conn` (0-based), direction `dir`, of a capture: the
/// series and the figure `tcpscope plot -k tsg` draws (`tcpscope_core::series::tsg`,
/// `tcpscope_core::plot::tsg`), with the segments aggregated per pixel column of the report's
/// plot size.
pub fn time_sequence(pcap: &Path, conn: usize, dir: Dir, title: &str) -> Result<Figure, String> {
    use tcpscope_core::series::{self, tsg::TsgSink};
    let (s, summary) = series::from_file::<TsgSink>(pcap, conn, dir, tcpscope_core::analysis::Settings::default())
        .map_err(|e| format!("{}: {e}", pcap.display()))?;
    if let Some(e) = summary.error {
        return Err(format!("{}: {e}", pcap.display()));
    }
    let s = s.ok_or_else(|| format!("{}: no connection {}", pcap.display(), conn + 1))?;
    let view = tcpscope_core::plot::tsg::TsgView {
        from_s: None,
        to_s: None,
        seq_from: None,
        seq_to: None,
        columns: Some(tcpscope_core::plot::svg::columns(TSG_SIZE.0)),
        title: Some(title.to_string()),
    };
    Ok(tcpscope_core::plot::tsg::tsg(&s, &view))
}

/// Mathis, Semke, Mahdavi and Ott (1997): throughput ≈ MSS / (RTT · √(2p/3)), in bits/s for
/// MSS in bytes and RTT in seconds.
pub fn mathis(mss_bytes: f64, rtt_s: f64, p: f64) -> f64 {
    mss_bytes * 8.0 / (rtt_s * (2.0 * p / 3.0).sqrt())
}

/// Padhye, Firoiu, Towsley and Kurose (1998), eq. 31 without the receiver-window cap:
/// MSS / (RTT·√(2bp/3) + T0·min(1, 3·√(3bp/8))·p·(1 + 32p²)) in bits/s, with b = 2 segments
/// per ACK (delayed ACKs) and T0 = max(200 ms, RTT + 200 ms), Linux's smallest RTO over the RTT.
pub fn padhye(mss_bytes: f64, rtt_s: f64, p: f64) -> f64 {
    let b = 2.0;
    let t0 = (rtt_s + 0.2).max(0.2);
    let denom = rtt_s * (2.0 * b * p / 3.0).sqrt()
        + t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    mss_bytes * 8.0 / denom
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x}")).unwrap_or_default()
}

fn params_text(p: &serde_json::Map<String, Value>) -> String {
    p.iter().map(|(k, v)| format!("{k}={}", value_label(v))).collect::<Vec<_>>().join(" ")
}

fn points_csv(r: &Report) -> String {
    let mut s = String::from("point");
    for k in &r.keys {
        s += &format!(",{}", csv_field(k));
    }
    let figs = [
        "throughput_bps",
        "ttcp_bps",
        "rexmit_rate",
        "rtt_ms",
        "acks_per_segment",
        "mathis_bps",
        "padhye_bps",
        "queue_drops",
        "loss_drops",
        "jain",
        "fct_mean_s",
        "fct_p50_s",
        "fct_p99_s",
    ];
    s += ",runs_ok,runs_failed";
    for f in figs {
        s += &format!(",{f}_mean,{f}_sd,{f}_ci95");
    }
    s.push('\n');
    for p in &r.points {
        s += &p.point.to_string();
        for k in &r.keys {
            s += &format!(",{}", csv_field(&p.params.get(k).map(value_plain).unwrap_or_default()));
        }
        s += &format!(",{},{}", p.runs_ok, p.runs_failed);
        for st in [
            p.throughput_bps,
            p.ttcp_bps,
            p.rexmit_rate,
            p.rtt_ms,
            p.acks_per_segment,
            p.mathis_bps,
            p.padhye_bps,
            p.queue_drops,
            p.loss_drops,
            p.jain,
            p.fct_mean_s,
            p.fct_p50_s,
            p.fct_p99_s,
        ] {
            s += &format!(",{},{},{}", num(st.mean), num(st.sd), num(st.ci95));
        }
        s.push('\n');
    }
    s
}

fn value_plain(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())
}

/// A swept value as the figures label it: a list (`topology.cc`, `topology.delay`) as its items
/// joined by `+`, as in the point directories' names (`5ms+40ms`).
fn value_label(v: &Value) -> String {
    match v.as_array() {
        Some(a) => a.iter().map(value_plain).collect::<Vec<_>>().join("+"),
        None => value_plain(v),
    }
}

fn runs_csv(r: &Report) -> String {
    let mut s = String::from("point,trial");
    for k in &r.keys {
        s += &format!(",{}", csv_field(k));
    }
    s += ",status,throughput_bps,ttcp_bps,data_packets,rexmit_packets,rexmit_rate,rtt_ms,rtt_min_ms,acks_per_segment,mss,mathis_bps,padhye_bps,rate_bps,loss,queue_drops,loss_drops,delay_us,delay_error_us,jain,fct_n,fct_mean_s,fct_p50_s,fct_p90_s,fct_p99_s,fct_max_s,error\n";
    for x in &r.runs {
        s += &format!("{},{}", x.point, x.trial);
        for k in &r.keys {
            s += &format!(",{}", csv_field(&x.params.get(k).map(value_plain).unwrap_or_default()));
        }
        let u = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
        s += &format!(
            ",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            x.status,
            num(x.throughput_bps),
            num(x.ttcp_bps),
            u(x.data_packets),
            u(x.rexmit_packets),
            num(x.rexmit_rate),
            num(x.rtt_ms),
            num(x.rtt_min_ms),
            num(x.acks_per_segment),
            u(x.mss),
            num(x.mathis_bps),
            num(x.padhye_bps),
            u(x.rate_bps),
            x.loss,
            u(x.queue_drops),
            u(x.loss_drops),
            u(x.delay_us),
            num(x.delay_error_us),
            num(x.jain),
            fct_cells(x.fct),
            csv_field(x.error.as_deref().unwrap_or(""))
        );
    }
    s
}

/// `n,mean,p50,p90,p99,max` of completion times, or empty cells.
fn fct_cells(f: Option<Fct>) -> String {
    match f {
        Some(f) => format!("{},{},{},{},{},{}", f.n, f.mean_s, f.p50_s, f.p90_s, f.p99_s, f.max_s),
        None => ",,,,,".into(),
    }
}

/// `senders.csv`: one line per sender of every run (several senders or short connections).
fn senders_csv(r: &Report) -> String {
    let mut s = String::from("point,trial");
    for k in &r.keys {
        s += &format!(",{}", csv_field(k));
    }
    s += ",sender,cc,throughput_bps,ttcp_bps,data_packets,rexmit_packets,rtt_ms,rtt_min_ms,delay_us,connections_seen,fct_n,fct_mean_s,fct_p50_s,fct_p90_s,fct_p99_s,fct_max_s\n";
    for x in &r.runs {
        for d in &x.senders {
            s += &format!("{},{}", x.point, x.trial);
            for k in &r.keys {
                s += &format!(",{}", csv_field(&x.params.get(k).map(value_plain).unwrap_or_default()));
            }
            let u = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
            s += &format!(
                ",{},{},{},{},{},{},{},{},{},{},{}\n",
                d.sender,
                csv_field(&d.cc),
                num(d.throughput_bps),
                num(d.ttcp_bps),
                u(d.data_packets),
                u(d.rexmit_packets),
                num(d.rtt_ms),
                num(d.rtt_min_ms),
                d.delay_us,
                d.connections_seen,
                fct_cells(d.fct)
            );
        }
    }
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A point of a figure: x as text, x as a number (NaN when categorical), y, y's CI half-width.
type XyPoint = (String, f64, f64, f64);

/// A series of a figure: a label and its points.
struct Series {
    label: String,
    pts: Vec<XyPoint>,
    dashed: bool,
    /// A marker per point (false for time series).
    dots: bool,
}

const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];

/// An SVG line chart with 95 % CI error bars; categorical x when the values are not numbers.
fn chart(title: &str, xlabel: &str, ylabel: &str, series: &[Series], axis: XAxis) -> String {
    let (w, h, ml, mr, mt, mb) = (760.0, 380.0, 70.0, 200.0, 30.0, 50.0);
    let all: Vec<&(String, f64, f64, f64)> = series.iter().flat_map(|s| &s.pts).collect();
    if all.is_empty() {
        return format!("<p>{}: no data.</p>", esc(title));
    }
    let all_numeric = all.iter().all(|p| p.1.is_finite());
    let mut cats: Vec<(String, f64)> = Vec::new();
    for p in &all {
        if !cats.iter().any(|c| c.0 == p.0) {
            cats.push((p.0.clone(), p.1));
        }
    }
    if all_numeric {
        cats.sort_by(|a, b| a.1.total_cmp(&b.1));
    }
    let log_x = axis == XAxis::Log && all_numeric && all.iter().all(|p| p.1 > 0.0);
    let numeric = all_numeric && (axis == XAxis::Linear || log_x);
    let xv = |p: &(String, f64, f64, f64)| -> f64 {
        if numeric {
            if log_x { p.1.log10() } else { p.1 }
        } else {
            cats.iter().position(|c| c.0 == p.0).unwrap_or(0) as f64
        }
    };
    let (mut x0, mut x1) = all.iter().map(|p| xv(p)).fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    if x1 <= x0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let pad = (x1 - x0) * 0.05;
    let (x0, x1) = (x0 - pad, x1 + pad);
    // The means set the scale; a wide interval (two trials: t = 12.7) is cut at the top.
    let y1 = all.iter().map(|p| p.2).fold(0.0f64, f64::max).max(1e-12) * 1.25;
    let px = |x: f64| ml + (x - x0) / (x1 - x0) * (w - ml - mr);
    let py = |y: f64| (h - mb - y / y1 * (h - mt - mb)).max(mt);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\
         <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/><text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
        (w - mr + ml) / 2.0,
        esc(title)
    );
    let _ = write!(
        s,
        "<line x1=\"{ml}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000\"/><line x1=\"{ml}\" y1=\"{mt}\" x2=\"{ml}\" y2=\"{}\" stroke=\"#000\"/>",
        h - mb,
        w - mr,
        h - mb,
        h - mb
    );
    for i in 0..=5 {
        let y = y1 * i as f64 / 5.0;
        let (xr, yy, xt, yt, label) = (w - mr, py(y), ml - 6.0, py(y) + 4.0, short(y));
        let _ = write!(
            s,
            "<line x1=\"{ml}\" x2=\"{xr}\" y1=\"{yy}\" y2=\"{yy}\" stroke=\"#ddd\"/><text x=\"{xt}\" y=\"{yt}\" text-anchor=\"end\">{label}</text>"
        );
    }
    let mut ticks: Vec<(String, f64)> = Vec::new();
    for p in &all {
        if !ticks.iter().any(|t| t.0 == p.0) {
            ticks.push((p.0.clone(), xv(p)));
        }
    }
    if numeric && !log_x && ticks.len() > 12 {
        // A time axis: six even ticks instead of a label per sample.
        let (a, b) = (x0 + pad, x1 - pad);
        let label = |x: f64| if b - a >= 1.0 { format!("{x:.1}") } else { short(x) };
        ticks = (0..=5).map(|i| a + (b - a) * i as f64 / 5.0).map(|x| (label(x), x)).collect();
    } else if ticks.len() > 15 {
        let k = ticks.len().div_ceil(15);
        ticks = ticks.into_iter().step_by(k).collect();
    }
    for (label, x) in &ticks {
        let _ =
            write!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", px(*x), h - mb + 16.0, esc(label));
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text><text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        (w - mr + ml) / 2.0,
        h - 10.0,
        esc(xlabel),
        if log_x { " (log scale)" } else { "" },
        (h - mb + mt) / 2.0,
        esc(ylabel)
    );
    for (i, se) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let mut pts: Vec<(f64, f64, f64)> = se.pts.iter().map(|p| (xv(p), p.2, p.3)).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let d: Vec<String> = pts.iter().map(|(x, y, _)| format!("{:.1},{:.1}", px(*x), py(*y))).collect();
        let dash = if se.dashed { " stroke-dasharray=\"5,4\"" } else { "" };
        let _ =
            write!(s, "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"{dash} points=\"{}\"/>", d.join(" "));
        for (x, y, ci) in pts.iter().filter(|_| se.dots) {
            let (cx, cy) = (px(*x), py(*y));
            if *ci > 0.0 {
                let _ = write!(
                    s,
                    "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{c}\"/>",
                    py(y + ci),
                    py((y - ci).max(0.0))
                );
            }
            let fill = if se.dashed { "#fff" } else { c };
            let _ = write!(s, "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"3.5\" fill=\"{fill}\" stroke=\"{c}\"/>");
        }
        let ly = mt + 14.0 + 18.0 * i as f64;
        let _ = write!(
            s,
            "<line x1=\"{}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{c}\" stroke-width=\"2\"{dash}/><text x=\"{}\" y=\"{}\">{}</text>",
            w - mr + 10.0,
            w - mr + 34.0,
            w - mr + 40.0,
            ly + 4.0,
            esc(&se.label)
        );
    }
    s + "</svg>"
}

fn short(y: f64) -> String {
    if y == 0.0 {
        "0".into()
    } else if y.abs() >= 100.0 {
        format!("{y:.0}")
    } else if y.abs() >= 1.0 {
        format!("{y:.1}")
    } else {
        // Two significant digits, so that ticks of small ratios stay apart.
        let digits = (-y.abs().log10()).ceil().max(0.0) as usize + 1;
        format!("{y:.digits$}")
    }
}

/// Series of one figure: one per combination of the other swept keys, x = the x key.
fn series_of(r: &Report, fig: &dyn Fn(&PointRow) -> Stat, label: &str, dashed: bool) -> Vec<Series> {
    let Some(xk) = &r.x else {
        // No sweep: one point.
        return vec![Series {
            label: label.into(),
            pts: r
                .points
                .iter()
                .filter_map(|p| fig(p).mean.map(|m| ("all".to_string(), f64::NAN, m, fig(p).ci95.unwrap_or(0.0))))
                .collect(),
            dashed,
            dots: true,
        }];
    };
    let mut groups: Vec<(String, Vec<XyPoint>)> = Vec::new();
    for p in &r.points {
        let Some(st) = Some(fig(p)).filter(|s| s.mean.is_some()) else { continue };
        let xvalue = p.params.get(xk).cloned().unwrap_or(Value::Null);
        let rest: Vec<String> =
            p.params.iter().filter(|(k, _)| *k != xk).map(|(k, v)| format!("{}={}", last(k), value_label(v))).collect();
        let name = if rest.is_empty() { label.to_string() } else { format!("{label} {}", rest.join(" ")) };
        let pt =
            (value_label(&xvalue), xvalue.as_f64().unwrap_or(f64::NAN), st.mean.unwrap_or(0.0), st.ci95.unwrap_or(0.0));
        match groups.iter_mut().find(|g| g.0 == name) {
            Some(g) => g.1.push(pt),
            None => groups.push((name, vec![pt])),
        }
    }
    groups.into_iter().map(|(label, pts)| Series { label, pts, dashed, dots: true }).collect()
}

fn last(k: &str) -> &str {
    k.rsplit('.').next().unwrap_or(k)
}

/// The bottleneck queue over time of each point's first finished run (seed 004's queue
/// occupancy figure), at most 500 samples each.
fn queue_series(r: &Report, dir: &Path) -> Vec<Series> {
    let mut out = Vec::new();
    for p in &r.points {
        let Some(run) = r.runs.iter().find(|x| x.point == p.point && x.status == "ok") else { continue };
        let samples = crate::queue::read(&dir.join(&run.point_dir).join(format!("t{}", run.trial)).join("queue.csv"));
        if samples.is_empty() {
            continue;
        }
        let step = samples.len().div_ceil(500);
        let pts =
            samples.iter().step_by(step).map(|s| (format!("{:.1}", s.t_s), s.t_s, s.qlen_pkts as f64, 0.0)).collect();
        let label = if p.params.is_empty() {
            "queue".to_string()
        } else {
            p.params.iter().map(|(k, v)| format!("{}={}", last(k), value_label(v))).collect::<Vec<_>>().join(" ")
        };
        out.push(Series { label, pts, dashed: false, dots: false });
    }
    out
}

/// Several senders: each one's throughput and Jain's index against the x key; short
/// connections: their completion times against it, and their distribution per point.
fn senders_html(r: &Report, axis: XAxis) -> String {
    let xl = r.x.clone().unwrap_or_else(|| "run".into());
    let mut out = String::new();
    let n = r.points.iter().map(|p| p.sender_bps.len()).max().unwrap_or(0);
    if n > 1 {
        let mut per = Vec::new();
        for i in 0..n {
            // The sender's cc in the label when every point gives it the same.
            let ccs: Vec<&String> = r.points.iter().filter_map(|p| p.sender_cc.get(i)).collect();
            let label = match ccs.first() {
                Some(c) if ccs.iter().all(|d| d == c) => format!("sender {} ({c})", i + 1),
                _ => format!("sender {}", i + 1),
            };
            let f = move |p: &PointRow| {
                let s = p.sender_bps.get(i).copied().unwrap_or_default();
                Stat { n: s.n, mean: s.mean.map(|v| v / 1e6), sd: s.sd.map(|v| v / 1e6), ci95: s.ci95.map(|v| v / 1e6) }
            };
            per.extend(series_of(r, &f, &label, false));
        }
        out += &chart("Throughput per sender", &xl, "Mbit/s", &per, axis);
        out += &chart(
            "Jain's fairness index of the senders",
            &xl,
            "index",
            &series_of(r, &|p| p.jain, "Jain", false),
            axis,
        );
    }
    if r.points.iter().any(|p| p.fct_mean_s.mean.is_some()) {
        let ms = |f: fn(&PointRow) -> Stat| {
            move |p: &PointRow| {
                let s = f(p);
                Stat { n: s.n, mean: s.mean.map(|v| v * 1e3), sd: s.sd.map(|v| v * 1e3), ci95: s.ci95.map(|v| v * 1e3) }
            }
        };
        let mut fct = series_of(r, &ms(|p| p.fct_mean_s), "mean", false);
        fct.extend(series_of(r, &ms(|p| p.fct_p50_s), "median", false));
        fct.extend(series_of(r, &ms(|p| p.fct_p99_s), "99th percentile", true));
        out += &chart("Completion time of the short connections", &xl, "ms", &fct, axis);
        // The distribution: every connection of every run of the point.
        let mut cdf = Vec::new();
        for p in &r.points {
            let mut xs: Vec<f64> =
                r.runs.iter().filter(|x| x.point == p.point).flat_map(|x| x.completions.iter().copied()).collect();
            if xs.is_empty() {
                continue;
            }
            xs.sort_by(f64::total_cmp);
            let k = xs.len() as f64;
            let step = xs.len().div_ceil(500);
            let pts = xs
                .iter()
                .enumerate()
                .step_by(step)
                .chain(std::iter::once((xs.len() - 1, &xs[xs.len() - 1])))
                .map(|(j, x)| (format!("{:.1}", x * 1e3), x * 1e3, (j + 1) as f64 / k, 0.0))
                .collect();
            let label = if p.params.is_empty() { "all".to_string() } else { params_short(&p.params) };
            cdf.push(Series { label, pts, dashed: false, dots: false });
        }
        out += &chart(
            "Completion times: the fraction of connections done within x",
            "completion time, ms",
            "fraction",
            &cdf,
            XAxis::Linear,
        );
    }
    out
}

fn params_short(p: &serde_json::Map<String, Value>) -> String {
    p.iter().map(|(k, v)| format!("{}={}", last(k), value_label(v))).collect::<Vec<_>>().join(" ")
}

/// The congestion window over time of each point's first finished run (seed 004's cwnd per
/// cc): the kernel's `snd_cwnd` (segments) of each sender's connection in its tcp_info
/// recording (read by the monitor's reader, `tcpscope_monitor::tsm`), at most 500 samples each.
/// The connection drawn is the one with the most samples (the transfer; with short
/// connections, the longest-lived).
fn cwnd_series(r: &Report, dir: &Path) -> Vec<Series> {
    let mut out = Vec::new();
    for p in &r.points {
        let Some(run) = r.runs.iter().find(|x| x.point == p.point && x.status == "ok") else { continue };
        let run_dir = dir.join(&run.point_dir).join(format!("t{}", run.trial));
        let n = run.senders.len().max(1) as u32;
        for i in 1..=n {
            let Ok(rec) = tcpscope_monitor::tsm::read(&run_dir.join(crate::run::tcpinfo_file(i, n))) else { continue };
            let Some(conn) =
                rec.conns.iter().map(|c| c.id).max_by_key(|&id| rec.samples.iter().filter(|s| s.conn == id).count())
            else {
                continue;
            };
            let samples: Vec<(f64, f64)> = {
                let mine = rec.samples_of(conn);
                let t0 = mine.first().map_or(0, |s| s.t_ns);
                mine.iter().filter_map(|s| Some(((s.t_ns - t0) as f64 / 1e9, s.get("snd_cwnd")? as f64))).collect()
            };
            if samples.is_empty() {
                continue;
            }
            let step = samples.len().div_ceil(500);
            let pts = samples.iter().step_by(step).map(|&(t, c)| (format!("{t:.1}"), t, c, 0.0)).collect();
            let mut label = if p.params.is_empty() { String::new() } else { params_short(&p.params) };
            if n > 1 {
                let cc = run.senders.get(i as usize - 1).map(|s| s.cc.as_str()).unwrap_or("");
                label = format!("{label} s{i} {cc}").trim().to_string();
            }
            if label.is_empty() {
                label = "cwnd".into();
            }
            out.push(Series { label, pts, dashed: false, dots: false });
        }
    }
    out
}

fn html(r: &Report, dir: &Path, log_x: XAxis) -> String {
    let xl = r.x.clone().unwrap_or_else(|| "run".into());
    let mbps = |f: fn(&PointRow) -> Stat| {
        move |p: &PointRow| {
            let s = f(p);
            Stat { n: s.n, mean: s.mean.map(|v| v / 1e6), sd: s.sd.map(|v| v / 1e6), ci95: s.ci95.map(|v| v / 1e6) }
        }
    };
    let mut tput = series_of(r, &mbps(|p| p.throughput_bps), "measured", false);
    let has_mathis = r.points.iter().any(|p| p.mathis_bps.mean.is_some());
    if has_mathis {
        tput.extend(series_of(r, &mbps(|p| p.mathis_bps), "Mathis", true));
        tput.extend(series_of(r, &mbps(|p| p.padhye_bps), "Padhye", true));
    }
    let mut out = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>lab: {0}</title><style>\
         body{{font-family:sans-serif;margin:2em;max-width:1100px}} table{{border-collapse:collapse;font-size:13px}}\
         td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}} th{{background:#f4f4f4}} .l{{text-align:left}}\
         </style></head><body><h1>lab: {0}</h1><p>{1}</p>\
         <p>Each point: mean of its runs; bars: 95 % confidence interval of the mean (Student's t). Throughput is the \
         analysis' goodput of the sender's capture (bytes acknowledged over first data to last ACK advance). \
         Mathis: MSS / (RTT · √(2p/3)) with p = retransmitted / data segments and RTT the mean the analysis measured \
         (hollow markers, dashed).</p>",
        esc(&r.experiment),
        esc(&r.description)
    );
    out += &chart("Throughput", &xl, "Mbit/s", &tput, log_x);
    out += &senders_html(r, log_x);
    out += &chart(
        "Retransmitted / data segments",
        &xl,
        "ratio",
        &series_of(r, &|p| p.rexmit_rate, "measured", false),
        log_x,
    );
    out += &chart("Mean RTT", &xl, "ms", &series_of(r, &|p| p.rtt_ms, "measured", false), log_x);
    out +=
        &chart("Bottleneck queue (trial 1 of each point)", "seconds", "packets", &queue_series(r, dir), XAxis::Linear);
    out += &chart(
        "Congestion window (trial 1 of each point; tcp_info every 10 ms)",
        "seconds",
        "segments",
        &cwnd_series(r, dir),
        XAxis::Linear,
    );
    let tsgs: Vec<&String> = r.runs.iter().flat_map(|x| &x.time_sequence).collect();
    if !tsgs.is_empty() {
        out += "<h2>Time-sequence plots</h2><p>As <code>tcpscope plot -k tsg</code> draws them (the sender's capture): \
                data segments, the ACK line below them and the receive window above; retransmissions red.</p>";
        for t in tsgs {
            let _ = write!(out, "<p><img src=\"{0}\" alt=\"{0}\" width=\"{1}\"></p>", esc(t), TSG_SIZE.0);
        }
    }
    out += "<h2>Points</h2><table><tr><th class=\"l\">point</th><th class=\"l\">parameters</th><th>runs ok/failed</th>\
            <th>throughput Mbit/s (mean ± sd, ±CI95)</th><th>ttcp -r Mbit/s</th><th>retransmitted/data</th><th>RTT ms</th>\
            <th>Mathis Mbit/s</th><th>Padhye Mbit/s</th><th>queue drops</th><th>loss drops</th></tr>";
    let ms = |s: Stat, k: f64| match s.mean {
        None => "–".to_string(),
        Some(m) => {
            let mut t = short(m / k);
            if let Some(sd) = s.sd {
                t += &format!(" ± {}", short(sd / k));
            }
            if let Some(ci) = s.ci95 {
                t += &format!(" (±{})", short(ci / k));
            }
            t
        }
    };
    for p in &r.points {
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.point_dir),
            esc(&params_text(&p.params)),
            p.runs_ok,
            p.runs_failed,
            ms(p.throughput_bps, 1e6),
            ms(p.ttcp_bps, 1e6),
            ms(p.rexmit_rate, 1.0),
            ms(p.rtt_ms, 1.0),
            ms(p.mathis_bps, 1e6),
            ms(p.padhye_bps, 1e6),
            ms(p.queue_drops, 1.0),
            ms(p.loss_drops, 1.0)
        );
    }
    out += "</table>";
    let nsend = r.points.iter().map(|p| p.sender_bps.len()).max().unwrap_or(0);
    let short = r.points.iter().any(|p| p.fct_mean_s.mean.is_some());
    if nsend > 1 || short {
        out += "<h2>Senders and connections</h2><table><tr><th class=\"l\">point</th><th class=\"l\">parameters</th>";
        for i in 1..=nsend {
            let _ = write!(out, "<th>sender {i} Mbit/s</th>");
        }
        if nsend > 1 {
            out += "<th>Jain's index</th>";
        }
        if short {
            out += "<th>completion ms: mean</th><th>median</th><th>99th percentile</th>";
        }
        out += "</tr>";
        for p in &r.points {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td>",
                esc(&p.point_dir),
                esc(&params_text(&p.params))
            );
            for i in 0..nsend {
                let cc = p.sender_cc.get(i).map(|c| format!(" ({})", esc(c))).unwrap_or_default();
                let rtt =
                    p.sender_rtt_ms.get(i).and_then(|s| s.mean).map(|m| format!(", RTT {m:.1} ms")).unwrap_or_default();
                let _ = write!(out, "<td>{}{cc}{rtt}</td>", ms(p.sender_bps.get(i).copied().unwrap_or_default(), 1e6));
            }
            if nsend > 1 {
                let _ = write!(out, "<td>{}</td>", ms(p.jain, 1.0));
            }
            if short {
                for st in [p.fct_mean_s, p.fct_p50_s, p.fct_p99_s] {
                    let _ = write!(out, "<td>{}</td>", ms(st, 1e-3));
                }
            }
            out += "</tr>";
        }
        out += "</table>";
    }
    let failed: Vec<&RunRow> = r.runs.iter().filter(|x| x.error.is_some()).collect();
    if !failed.is_empty() {
        out += "<h2>Failed runs</h2><ul>";
        for f in failed {
            let _ =
                write!(out, "<li>{}/t{}: {}</li>", esc(&f.point_dir), f.trial, esc(f.error.as_deref().unwrap_or("")));
        }
        out += "</ul>";
    }
    out + "<p>Files: report.json, points.csv, runs.csv; each run's directory holds run.json, result.json, snd.pcap, rcv.pcap.</p></body></html>\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_values_label_as_their_items() {
        assert_eq!(value_label(&serde_json::json!(["5ms", "40ms"])), "5ms+40ms");
        assert_eq!(value_label(&serde_json::json!("cubic")), "cubic");
        assert_eq!(value_label(&serde_json::json!(0.01)), "0.01");
        // The CSV cells keep the JSON of a list.
        assert_eq!(value_plain(&serde_json::json!(["reno", "cubic"])), r#"["reno","cubic"]"#);
    }

    #[test]
    fn stat_by_hand() {
        // 1, 2, 3: mean 2, sd 1, CI = t(2) · 1/√3 = 4.303 / 1.732 = 2.484.
        let s = Stat::of(&[1.0, 2.0, 3.0]);
        assert_eq!(s.mean, Some(2.0));
        assert!((s.sd.unwrap() - 1.0).abs() < 1e-12);
        assert!((s.ci95.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(Stat::of(&[5.0]).sd, None);
    }

    #[test]
    fn padhye_by_hand() {
        // MSS 1000 B, RTT 0.1 s, p = 0.01, b = 2: RTT·√(2bp/3) = 0.1·√(0.04/3) = 0.011547;
        // T0 = 0.3 s, 3·√(3bp/8) = 3·√0.0075 = 0.259808, so 0.3·0.259808·0.01·1.0032 =
        // 0.000781918; total 0.0123289 s per segment: 8000 / 0.0123289 = 648,881 bit/s.
        let got = padhye(1000.0, 0.1, 0.01);
        assert!((got - 648_881.0).abs() < 2.0, "{got}");
        // Small p: the timeout term vanishes and Padhye tends to Mathis with b = 2 (÷ √2).
        let (pa, ma) = (padhye(1448.0, 0.05, 1e-6), mathis(1448.0, 0.05, 1e-6));
        assert!((pa / ma - 1.0 / 2f64.sqrt()).abs() < 0.01, "{pa} vs {ma}");
    }

    #[test]
    fn jain_and_percentiles_by_hand() {
        // Equal shares: 1; one takes all of n = 4: 1/4; (1, 3): 16 / (2 · 10) = 0.8.
        assert_eq!(jain(&Some(vec![5.0, 5.0, 5.0])), Some(1.0));
        assert_eq!(jain(&Some(vec![0.0, 7.0, 0.0, 0.0])), Some(0.25));
        assert!((jain(&Some(vec![1.0, 3.0])).unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(jain(&None), None);
        assert_eq!(jain(&Some(vec![0.0, 0.0])), None);
        // Nearest rank over 1..=10: p50 = 5, p90 = 9, p99 = 10.
        let f = Fct::of(&[3.0, 1.0, 2.0, 10.0, 4.0, 5.0, 6.0, 7.0, 9.0, 8.0]).unwrap();
        assert_eq!((f.n, f.min_s, f.p50_s, f.p90_s, f.p99_s, f.max_s), (10, 1.0, 5.0, 9.0, 10.0, 10.0));
        assert!((f.mean_s - 5.5).abs() < 1e-12);
        assert_eq!(Fct::of(&[]), None);
        assert_eq!(Fct::of(&[0.25]).map(|f| f.p99_s), Some(0.25));
    }

    #[test]
    fn senders_come_from_their_addresses() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        assert_eq!(sender_of(&ip("10.9.1.1")), Some(1));
        assert_eq!(sender_of(&ip("10.9.1.12")), Some(12));
        assert_eq!(sender_of(&ip("10.9.1.254")), None);
        assert_eq!(sender_of(&ip("10.9.2.1")), None);
    }

    #[test]
    fn mathis_by_hand() {
        // MSS 1448 B, RTT 100 ms, p = 1/150: √(2p/3) = √(1/225) = 1/15, so
        // 1448 · 8 / (0.1 / 15) = 1,737,600 bit/s.
        assert!((mathis(1448.0, 0.1, 1.0 / 150.0) - 1_737_600.0).abs() < 1e-6);
    }
}

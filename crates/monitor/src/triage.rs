//! What limited each sender: the triage of seed 002 §5 (Web100's SndLimTime* variables), from
//! the kernel's chronos, per interval and over the whole observed life of a connection.
//!
//! Rules (each share is a fraction of the wall-clock time between two samples, `Δt`):
//! - **network** (Web100 `SndLimTimeCwnd`): `Δbusy_time − Δrwnd_limited − Δsndbuf_limited`, the
//!   kernel's `TCP_CHRONO_BUSY`: data outstanding and the sender stopped by the congestion window
//!   or pacing;
//! - **receiver** (`SndLimTimeRwin`): `Δrwnd_limited`, stopped by the peer's receive window;
//! - **sender** (`SndLimTimeSnd`): `Δsndbuf_limited` (stopped by a full send buffer) plus
//!   `Δt − Δbusy_time` (nothing outstanding and nothing queued: the application had nothing to
//!   send). The two parts are also reported apart (`send_buffer`, `idle`).
//!
//! The chronos are jiffy-quantised (1–4 ms) and are cut to `Δt`, so the three shares sum to 1.
//! A connection that sent nothing while observed (`Δbusy_time = 0` and no byte acknowledged)
//! is a receiver; it gets no triage, and its diagnosis says so.

use serde::Serialize;

use crate::fields::{Ctx, Sample, index, limit_shares};
use crate::tsm::{ConnEnd, ConnStart, Recording};

/// Shares of time by what limited the sender, each 0..1, summing to 1.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Shares {
    pub network: f64,
    pub receiver: f64,
    pub sender: f64,
    /// The part of `sender` with a full send buffer.
    pub send_buffer: f64,
    /// The part of `sender` with nothing to send.
    pub idle: f64,
}

/// The summary of one connection of a recording.
#[derive(Clone, Debug, Serialize)]
pub struct ConnSummary {
    pub id: u32,
    pub src: String,
    pub sport: u16,
    pub dst: String,
    pub dport: u16,
    pub cong: Option<String>,
    pub first_ns: u64,
    pub last_ns: u64,
    /// The connection disappeared while the recorder ran.
    pub ended: bool,
    pub samples: usize,
    /// Seconds from the first to the last sample.
    pub duration_s: f64,
    pub bytes_sent: Option<u64>,
    pub bytes_acked: Option<u64>,
    pub bytes_received: Option<u64>,
    pub retrans_segments: Option<u64>,
    /// Web100 AveBW over the observed life, bit/s.
    pub ave_bw: Option<f64>,
    /// Largest interval bandwidth (Web100 IntBW), bit/s.
    pub max_int_bw: Option<f64>,
    pub min_rtt_ms: Option<f64>,
    pub max_cwnd_bytes: Option<u64>,
    /// Web100 MaxRwinRcvd: the largest peer window seen, bytes.
    pub max_rwin_rcvd: Option<u64>,
    /// Share of samples whose delivery-rate sample was app-limited.
    pub app_limited_samples: Option<f64>,
    /// Overall triage, `None` for a connection that sent nothing.
    pub limits: Option<Shares>,
    pub diagnosis: String,
}

fn shares(c: &Ctx, from: &Sample) -> Option<Shares> {
    let (network, receiver, sender) = limit_shares(c, Some(from))?;
    let dt_us = c.cur.t_ns.saturating_sub(from.t_ns) as f64 / 1e3;
    let sndbuf = (c.cur.get("sndbuf_limited")?.saturating_sub(from.get("sndbuf_limited")?) as f64 / dt_us).min(sender);
    Some(Shares { network, receiver, sender, send_buffer: sndbuf, idle: sender - sndbuf })
}

/// Per-interval triage of a connection's samples (one per sample after the first).
pub fn intervals(samples: &[&Sample]) -> Vec<(u64, Option<Shares>)> {
    samples
        .windows(2)
        .map(|w| (w[1].t_ns, shares(&Ctx { cur: w[1], prev: Some(w[0]), first: samples[0] }, w[0])))
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// The one-line diagnosis, in the words of `screen`.
pub fn diagnose(s: Option<&Shares>, sent: bool) -> String {
    if !sent {
        return "sent no data while monitored (a receiver: the triage applies to its peer)".into();
    }
    let Some(s) = s else {
        return "no triage: this kernel's tcp_info has no busy_time, rwnd_limited, sndbuf_limited (Linux < 4.10)"
            .into();
    };
    let mut parts: Vec<(f64, String)> = vec![
        (s.network, format!("network/congestion-limited {} of the time", pct(s.network))),
        (s.receiver, format!("receiver window-limited {} of the time", pct(s.receiver))),
    ];
    if s.send_buffer >= s.idle {
        parts.push((s.sender, format!("send buffer-limited {} of the time", pct(s.sender))));
    } else {
        parts.push((s.sender, format!("application-limited {} of the time", pct(s.sender))));
    }
    parts.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = format!("mostly {}", parts[0].1);
    for (x, p) in &parts[1..] {
        if *x >= 0.05 {
            out.push_str("; ");
            out.push_str(p);
        }
    }
    out
}

/// Whether a sample carries the kernel's `tcp_info`. A socket closed in FIN_WAIT2 becomes a
/// timewait mini-socket that inet_diag still lists, with its state but without `tcp_info`: a
/// connection's last samples may hold no counters at all.
fn has_info(s: &Sample) -> bool {
    s.get("rtt").is_some()
}

/// The growth of counter `name` over `samples`: its last known value less its first.
pub fn growth(samples: &[&Sample], name: &str) -> Option<u64> {
    let first = samples.iter().find_map(|s| s.get(name))?;
    samples.iter().rev().find_map(|s| s.get(name))?.checked_sub(first)
}

/// A connection's span: its first sample's time and its latest's (ns since the epoch), `None`
/// without samples. The latest, not the last: samples carry the wall clock, which may have been
/// stepped back while recording (docs/monitor.md); the plots, the viewer and the summary all
/// take their span from here.
pub fn span(samples: &[&Sample]) -> Option<(u64, u64)> {
    let first = samples.first()?.t_ns;
    Some((first, samples.iter().map(|s| s.t_ns).fold(first, u64::max)))
}

/// Summarises connection `c` from its samples (time order).
pub fn summarize(c: &ConnStart, end: Option<&ConnEnd>, samples: &[&Sample]) -> ConnSummary {
    let (first, last) = (samples.first().copied(), samples.last().copied());
    let mut s = ConnSummary {
        id: c.id,
        src: c.src.clone(),
        sport: c.sport,
        dst: c.dst.clone(),
        dport: c.dport,
        cong: c.cong.clone(),
        first_ns: span(samples).map_or(c.t_ns, |s| s.0),
        last_ns: span(samples).map_or(c.t_ns, |s| s.1),
        ended: end.is_some_and(|e| !e.recorder_stopped),
        samples: samples.len(),
        duration_s: 0.0,
        bytes_sent: None,
        bytes_acked: None,
        bytes_received: None,
        retrans_segments: None,
        ave_bw: None,
        max_int_bw: None,
        min_rtt_ms: None,
        max_cwnd_bytes: None,
        max_rwin_rcvd: None,
        app_limited_samples: None,
        limits: None,
        diagnosis: String::new(),
    };
    let (Some(first), Some(last)) = (first, last) else {
        s.diagnosis = "no samples".into();
        return s;
    };
    s.duration_s = (s.last_ns - s.first_ns) as f64 / 1e9;
    // The counters and the triage from the samples with `tcp_info` (has_info).
    let info: Vec<&Sample> = samples.iter().copied().filter(|x| has_info(x)).collect();
    let (first, last) = (info.first().copied().unwrap_or(first), info.last().copied().unwrap_or(last));
    s.bytes_sent = growth(samples, "bytes_sent");
    s.bytes_acked = growth(samples, "bytes_acked");
    s.bytes_received = growth(samples, "bytes_received");
    s.retrans_segments = growth(samples, "total_retrans");
    let ctx = Ctx { cur: last, prev: None, first };
    let ave = index("ave_bw");
    s.ave_bw = last.value(ave, None, first).map(|v| v.as_f64());
    let ib = index("int_bw");
    s.max_int_bw =
        info.windows(2).filter_map(|w| w[1].value(ib, Some(w[0]), first)).map(|v| v.as_f64()).reduce(f64::max);
    s.min_rtt_ms = samples.iter().filter_map(|x| x.get("min_rtt")).min().map(|us| us as f64 / 1000.0);
    let cw = index("CurCwnd");
    s.max_cwnd_bytes = samples.iter().filter_map(|x| x.value(cw, None, first)).map(|v| v.as_f64() as u64).max();
    s.max_rwin_rcvd = samples.iter().filter_map(|x| x.get("snd_wnd")).max();
    let app: Vec<u64> = samples.iter().filter_map(|x| x.get("delivery_rate_app_limited")).collect();
    s.app_limited_samples = (!app.is_empty()).then(|| app.iter().sum::<u64>() as f64 / app.len() as f64);
    s.limits = shares(&ctx, first);
    let sent = growth(samples, "busy_time").is_some_and(|b| b > 0) || s.bytes_acked.is_some_and(|b| b > 0);
    if !sent {
        s.limits = None;
    }
    s.diagnosis = diagnose(s.limits.as_ref(), sent);
    s
}

/// Summaries of every connection of a recording, by id.
pub fn summarize_all(rec: &Recording) -> Vec<ConnSummary> {
    // Ids come from the file: a map, not a vector indexed by them.
    let mut by: std::collections::HashMap<u32, Vec<&Sample>> = std::collections::HashMap::new();
    for s in &rec.samples {
        by.entry(s.conn).or_default().push(s);
    }
    let ends: std::collections::HashMap<u32, &ConnEnd> = rec.ends.iter().map(|e| (e.id, e)).collect();
    rec.conns
        .iter()
        .map(|c| summarize(c, ends.get(&c.id).copied(), by.get(&c.id).map_or(&[][..], |v| &v[..])))
        .collect()
}

// Keep the field table's names used here checked at test time.
#[cfg(test)]
mod tests {
    use super::*;

    fn s(t_ms: u64, busy_ms: u64, rwnd_ms: u64, sndbuf_ms: u64, acked: u64) -> Sample {
        let mut x = Sample::empty(t_ms * 1_000_000, 0);
        x.raw.set(index("busy_time"), Some(busy_ms * 1000));
        x.raw.set(index("rwnd_limited"), Some(rwnd_ms * 1000));
        x.raw.set(index("sndbuf_limited"), Some(sndbuf_ms * 1000));
        x.raw.set(index("bytes_acked"), Some(acked));
        x
    }

    #[test]
    fn shares_follow_the_chronos() {
        let a = s(0, 0, 0, 0, 0);
        let b = s(1000, 800, 500, 100, 10);
        let c = Ctx { cur: &b, prev: Some(&a), first: &a };
        let sh = shares(&c, &a).unwrap();
        assert!((sh.network - 0.2).abs() < 1e-9);
        assert!((sh.receiver - 0.5).abs() < 1e-9);
        assert!((sh.sender - 0.3).abs() < 1e-9);
        assert!((sh.send_buffer - 0.1).abs() < 1e-9 && (sh.idle - 0.2).abs() < 1e-9);
        assert_eq!(
            diagnose(Some(&sh), true),
            "mostly receiver window-limited 50% of the time; application-limited 30% of the time; network/congestion-limited 20% of the time"
        );
        // Quantised chronos beyond the wall time are cut.
        let d = s(1000, 1004, 0, 0, 10);
        let sh = shares(&Ctx { cur: &d, prev: None, first: &a }, &a).unwrap();
        assert_eq!(sh.network, 1.0);
        assert_eq!(sh.sender, 0.0);
        assert!(diagnose(None, false).contains("sent no data"));
        assert!(diagnose(None, true).contains("Linux < 4.10"));
        assert!(crate::fields::FIELDS.iter().any(|f| f.name == "busy_time"));
    }

    /// A sender that closed first: its last sample is the FIN_WAIT2 mini-socket, listed
    /// without `tcp_info`. Its counters and triage come from the samples that had it.
    #[test]
    fn a_last_sample_without_tcp_info_is_not_the_counters_end() {
        let with_rtt = |mut x: Sample, sent: u64| {
            x.raw.set(index("rtt"), Some(100));
            x.raw.set(index("bytes_sent"), Some(sent));
            x
        };
        let (a, b) = (with_rtt(s(0, 0, 0, 0, 0), 0), with_rtt(s(1000, 800, 0, 0, 5000), 6000));
        let fin_wait2 = Sample::empty(1_020_000_000, 0);
        let c = ConnStart { cookie: 1, ..ConnStart::sample(0) };
        let sum = summarize(&c, None, &[&a, &b, &fin_wait2]);
        assert_eq!((sum.bytes_sent, sum.bytes_acked), (Some(6000), Some(5000)));
        assert!(sum.limits.is_some(), "{}", sum.diagnosis);
        assert!(sum.diagnosis.starts_with("mostly network"), "{}", sum.diagnosis);
        assert!((sum.duration_s - 1.02).abs() < 1e-9);
        assert_eq!(growth(&[&a, &fin_wait2], "bytes_sent"), Some(0));
        assert_eq!(growth(&[&fin_wait2], "bytes_sent"), None);
    }
}

//! Application events and host CPU, on the recording's clock.
//!
//! **Events** arrive as datagrams on a local socket (`unix:PATH` or `udp:127.0.0.1:PORT`), one
//! or more lines each, in either of two forms:
//! - NetLogger Best-Practices (seed 002; anchors §9): `ts=2007-06-12T14:32:15.145455Z
//!   event=transfer.start guid=42 level=INFO k=v ...`, values optionally in double quotes;
//!   `event=` is required, `ts=` optional (absent: the time the datagram arrived);
//! - a JSON object with `event` (or `name`) and optionally `ts` (the same ISO-8601 form, or a
//!   number of seconds since the epoch); other members become the event's fields.
//!
//! `.start`/`.end` pairs sharing a `guid` are kept as written; the lifeline view joins them.
//!
//! **CPU** comes from `/proc/stat` (per core: user, nice, system, idle, iowait, irq, softirq, in
//! USER_HZ ticks) and `/proc/PID/stat` (utime, stime) for `--pid`.

use std::io;
use std::net::UdpSocket;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tsm::Event;

/// Where events are received.
#[derive(Debug)]
pub enum Listener {
    Unix(UnixDatagram, PathBuf),
    Udp(UdpSocket),
}

impl Listener {
    /// Binds `unix:PATH` (a stale socket file at PATH is replaced) or `udp:ADDR:PORT`.
    pub fn bind(spec: &str) -> io::Result<Listener> {
        let bad =
            || io::Error::new(io::ErrorKind::InvalidInput, format!("`{spec}`: expected unix:PATH or udp:ADDR:PORT"));
        let l = if let Some(p) = spec.strip_prefix("unix:") {
            let _ = std::fs::remove_file(p);
            let s = UnixDatagram::bind(p).map_err(|e| io::Error::new(e.kind(), format!("{p}: {e}")))?;
            Listener::Unix(s, PathBuf::from(p))
        } else if let Some(a) = spec.strip_prefix("udp:") {
            Listener::Udp(UdpSocket::bind(a).map_err(|e| io::Error::new(e.kind(), format!("{a}: {e}")))?)
        } else {
            return Err(bad());
        };
        match &l {
            Listener::Unix(s, _) => s.set_nonblocking(true)?,
            Listener::Udp(s) => s.set_nonblocking(true)?,
        }
        Ok(l)
    }

    /// Every event waiting, stamped `now_ns` when they carry no time; lines that are not
    /// events are returned as errors (text, for a warning) and skipped.
    pub fn drain(&self, now_ns: u64) -> (Vec<Event>, Vec<String>) {
        let mut buf = vec![0u8; 65536];
        let (mut out, mut errs) = (Vec::new(), Vec::new());
        loop {
            let n = match self {
                Listener::Unix(s, _) => s.recv(&mut buf),
                Listener::Udp(s) => s.recv(&mut buf),
            };
            let Ok(n) = n else { break };
            for line in String::from_utf8_lossy(&buf[..n]).lines().filter(|l| !l.trim().is_empty()) {
                match parse_line(line, now_ns) {
                    Ok(e) => out.push(e),
                    Err(e) => errs.push(e),
                }
            }
        }
        (out, errs)
    }
}

/// Events received by a [`Receiver`] thread and not yet taken.
pub type Inbox = Arc<Mutex<(Vec<Event>, Vec<String>)>>;

/// A thread that receives events as they arrive (so that a burst does not fill the socket's
/// queue between two dumps: a unix datagram socket queues only `net.unix.max_dgram_qlen`
/// datagrams), stamping those without `ts=` with their arrival time.
pub struct Receiver {
    pub inbox: Inbox,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Receiver {
    pub fn start(l: Listener) -> io::Result<Receiver> {
        match &l {
            Listener::Unix(s, _) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(Duration::from_millis(100)))?;
            }
            Listener::Udp(s) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(Duration::from_millis(100)))?;
            }
        }
        let inbox: Inbox = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (i, st) = (Arc::clone(&inbox), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !st.load(Ordering::Relaxed) {
                let n = match &l {
                    Listener::Unix(s, _) => s.recv(&mut buf),
                    Listener::Udp(s) => s.recv(&mut buf),
                };
                // A timeout (nothing arrived) or an error: look at the stop flag again.
                let Ok(n) = n else { continue };
                let now = crate::record::now_ns();
                let Ok(mut inbox) = i.lock() else { return };
                for line in String::from_utf8_lossy(&buf[..n]).lines().filter(|l| !l.trim().is_empty()) {
                    match parse_line(line, now) {
                        Ok(e) => inbox.0.push(e),
                        Err(e) => inbox.1.push(e),
                    }
                }
            }
        });
        Ok(Receiver { inbox, stop, thread: Some(thread) })
    }

    /// The events and errors received since the last call.
    pub fn take(&self) -> (Vec<Event>, Vec<String>) {
        match self.inbox.lock() {
            Ok(mut g) => (std::mem::take(&mut g.0), std::mem::take(&mut g.1)),
            Err(_) => (Vec::new(), vec!["the event receiver thread failed".into()]),
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Sends one event line to a listener (`tcpscope event`).
pub fn send(spec: &str, line: &str) -> io::Result<()> {
    EventLog::connect(spec)?.send_line(line)
}

/// The small library an application logs its events with: NetLogger Best-Practices lines,
/// stamped now, sent as datagrams to a recorder's `--events` socket. A send waits only while the
/// recorder's queue is full (its receiver thread empties it as events arrive); with no recorder
/// listening a send fails (unix) or is dropped (udp), and the application goes on.
///
/// ```no_run
/// let log = tcpscope_monitor::events::EventLog::connect("unix:/tmp/tcpscope.sock")?;
/// log.start("block.write", "42", &[("bytes", "524288")])?;
/// log.end("block.write", "42", 0, &[])?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct EventLog {
    to: Dest,
}

enum Dest {
    Unix(UnixDatagram, PathBuf),
    Udp(UdpSocket, String),
}

impl EventLog {
    /// A logger sending to `unix:PATH` or `udp:ADDR:PORT`.
    pub fn connect(spec: &str) -> io::Result<EventLog> {
        let to = if let Some(p) = spec.strip_prefix("unix:") {
            Dest::Unix(UnixDatagram::unbound()?, PathBuf::from(p))
        } else if let Some(a) = spec.strip_prefix("udp:") {
            Dest::Udp(UdpSocket::bind("127.0.0.1:0")?, a.to_string())
        } else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{spec}`: expected unix:PATH or udp:ADDR:PORT"),
            ));
        };
        Ok(EventLog { to })
    }

    /// Sends a line as it is.
    pub fn send_line(&self, line: &str) -> io::Result<()> {
        match &self.to {
            Dest::Unix(s, p) => {
                s.send_to(line.as_bytes(), p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
            }
            Dest::Udp(s, a) => {
                s.send_to(line.as_bytes(), a.as_str())?;
            }
        }
        Ok(())
    }

    /// Sends `ts=NOW event=NAME k=v ...` (values with spaces or quotes are quoted).
    pub fn write(&self, name: &str, fields: &[(&str, &str)]) -> io::Result<()> {
        self.send_line(&bp_line(crate::record::now_ns(), name, fields)?)
    }

    /// `NAME.start` with `guid=GUID`.
    pub fn start(&self, name: &str, guid: &str, fields: &[(&str, &str)]) -> io::Result<()> {
        let mut f = vec![("guid", guid)];
        f.extend_from_slice(fields);
        self.write(&format!("{name}.start"), &f)
    }

    /// `NAME.end` with `guid=GUID` and `status=STATUS` (negative: failure, NetLogger's rule).
    pub fn end(&self, name: &str, guid: &str, status: i32, fields: &[(&str, &str)]) -> io::Result<()> {
        let status = status.to_string();
        let mut f = vec![("guid", guid), ("status", status.as_str())];
        f.extend_from_slice(fields);
        self.write(&format!("{name}.end"), &f)
    }
}

/// One NetLogger Best-Practices line; an error for a key that is empty or has `=` or spaces.
pub fn bp_line(t_ns: u64, name: &str, fields: &[(&str, &str)]) -> io::Result<String> {
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(bad(format!("`{name}` is not an event name")));
    }
    let mut line = format!("ts={} event={name}", format_ts(t_ns));
    for (k, v) in fields {
        if k.is_empty() || k.contains(|c: char| c.is_whitespace() || c == '=' || c == '"') {
            return Err(bad(format!("`{k}` is not a field name")));
        }
        if v.is_empty() || v.contains(char::is_whitespace) || v.contains('"') {
            line.push_str(&format!(" {k}=\"{}\"", v.replace('"', "'")));
        } else {
            line.push_str(&format!(" {k}={v}"));
        }
    }
    Ok(line)
}

/// Parses one event line (NetLogger BP or JSON).
pub fn parse_line(line: &str, now_ns: u64) -> Result<Event, String> {
    let line = line.trim();
    let mut fields: Vec<(String, String)> = Vec::new();
    if line.starts_with('{') {
        let v: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).map_err(|e| format!("JSON event `{line}`: {e}"))?;
        for (k, v) in v {
            let s = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            fields.push((if k == "name" { "event".into() } else { k }, s));
        }
    } else {
        let mut rest = line;
        while !rest.is_empty() {
            let (k, after) = rest.split_once('=').ok_or_else(|| format!("`{rest}` is not key=value in `{line}`"))?;
            let (v, next) = if let Some(q) = after.strip_prefix('"') {
                let end = q.find('"').ok_or_else(|| format!("unclosed quote in `{line}`"))?;
                (&q[..end], &q[end + 1..])
            } else {
                after.split_once(' ').unwrap_or((after, ""))
            };
            fields.push((k.trim().to_string(), v.to_string()));
            rest = next.trim_start();
        }
    }
    let name = match fields.iter().position(|(k, _)| k == "event") {
        Some(i) => fields.remove(i).1,
        None => return Err(format!("no event= in `{line}`")),
    };
    let t_ns = match fields.iter().position(|(k, _)| k == "ts") {
        Some(i) => {
            let ts = fields.remove(i).1;
            parse_ts(&ts).ok_or_else(|| format!("ts=`{ts}` is neither ISO-8601 UTC nor epoch seconds"))?
        }
        None => now_ns,
    };
    Ok(Event { t_ns, name, fields })
}

/// `2007-06-12T14:32:15.145455Z` (UTC, any number of fraction digits) or epoch seconds.
pub fn parse_ts(s: &str) -> Option<u64> {
    if let Ok(secs) = s.parse::<f64>() {
        return (secs >= 0.0).then_some((secs * 1e9) as u64);
    }
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let d: Vec<i64> = date.split('-').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let t: Vec<i64> = hms.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if d.len() != 3
        || t.len() != 3
        || !(1..=12).contains(&d[1])
        || !(1..=31).contains(&d[2])
        || t[0] > 23
        || t[1] > 59
        || t[2] > 60
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if d[1] <= 2 { (d[0] - 1, d[1] + 9) } else { (d[0], d[1] - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let secs = days * 86400 + t[0] * 3600 + t[1] * 60 + t[2];
    let mut ns = 0u64;
    if !frac.is_empty() {
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let f = &frac[..frac.len().min(9)];
        ns = f.parse::<u64>().ok()? * 10u64.pow(9 - f.len() as u32);
    }
    u64::try_from(secs).ok().map(|s| s * 1_000_000_000 + ns)
}

/// `ns` since the epoch as NetLogger's `ts=` (ISO-8601 UTC, µs): `2007-06-12T14:32:15.145455Z`.
pub fn format_ts(ns: u64) -> String {
    let secs = (ns / 1_000_000_000) as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Civil date from days (Howard Hinnant's algorithm).
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ns % 1_000_000_000 / 1000
    )
}

/// Shares of CPU time between two samples.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CpuShares {
    /// Per core: user, system, iowait, softirq (each 0..1 of that core's time).
    pub cores: Vec<[f64; 4]>,
    /// The monitored process, in cores (1.0 = one core busy).
    pub proc: Option<f64>,
}

/// CPU shares from `a` to `b` (`None` if the core count changed or no time passed).
pub fn cpu_shares(a: &CpuSample, b: &CpuSample) -> Option<CpuShares> {
    if a.cores.len() != b.cores.len() || a.cores.is_empty() {
        return None;
    }
    let mut cores = Vec::with_capacity(a.cores.len());
    let mut ticks_per_core = 0.0;
    for (x, y) in a.cores.iter().zip(&b.cores) {
        let d: Vec<f64> = (0..5).map(|i| y[i].saturating_sub(x[i]) as f64).collect();
        let total: f64 = d.iter().sum();
        ticks_per_core += total;
        cores.push(if total > 0.0 { [d[0] / total, d[1] / total, d[2] / total, d[3] / total] } else { [0.0; 4] });
    }
    ticks_per_core /= a.cores.len() as f64;
    if ticks_per_core <= 0.0 {
        return None;
    }
    let proc = match (a.proc, b.proc) {
        (Some(p), Some(q)) => Some((q[0] + q[1]).saturating_sub(p[0] + p[1]) as f64 / ticks_per_core),
        _ => None,
    };
    Some(CpuShares { cores, proc })
}

/// CPU counters at one instant, in USER_HZ ticks.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CpuSample {
    pub t_ns: u64,
    /// Per core: user (+ nice), system, iowait, softirq (+ irq), idle.
    pub cores: Vec<[u64; 5]>,
    /// The monitored process: utime, stime.
    pub proc: Option<[u64; 2]>,
}

/// Reads `/proc/stat` (and `/proc/PID/stat`).
pub fn cpu_sample(t_ns: u64, pid: Option<u32>) -> io::Result<CpuSample> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let mut cores = Vec::new();
    for l in stat.lines().filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)) {
        let v: Vec<u64> = l.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0)).collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq
        cores.push([g(0) + g(1), g(2), g(4), g(5) + g(6), g(3)]);
    }
    let proc = match pid {
        Some(p) => {
            let s = std::fs::read_to_string(format!("/proc/{p}/stat"))?;
            // The command name is in parentheses and may hold spaces: fields count after ')'.
            let after = s.rsplit_once(')').map(|x| x.1).unwrap_or("");
            let f: Vec<&str> = after.split_whitespace().collect();
            // After ')' the fields start at number 3 (state); utime is 14, stime 15.
            let get = |n: usize| f.get(n - 3).and_then(|x| x.parse().ok()).unwrap_or(0);
            Some([get(14), get(15)])
        }
        None => None,
    };
    Ok(CpuSample { t_ns, cores, proc })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netlogger_and_json_lines() {
        let e =
            parse_line(r#"ts=2007-06-12T14:32:15.145455Z event=transfer.start guid=42 level=INFO msg="two words""#, 1)
                .unwrap();
        assert_eq!(e.name, "transfer.start");
        assert_eq!(e.t_ns, 1_181_658_735_145_455_000);
        assert_eq!(
            e.fields,
            vec![("guid".into(), "42".into()), ("level".into(), "INFO".into()), ("msg".into(), "two words".into())]
        );
        let e = parse_line(r#"{"event":"read.end","guid":"a","bytes":512,"ts":1.5}"#, 1).unwrap();
        assert_eq!((e.name.as_str(), e.t_ns), ("read.end", 1_500_000_000));
        assert!(e.fields.contains(&("bytes".into(), "512".into())));
        assert_eq!(parse_line("event=x", 7).unwrap().t_ns, 7);
        assert!(parse_line("guid=1", 0).is_err());
        assert!(parse_line("event=x ts=yesterday", 0).is_err());
        assert!(parse_line("{bad json", 0).is_err());
        assert_eq!(parse_ts("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_ts("2000-03-01T00:00:00Z"), Some(951_868_800_000_000_000));
    }

    #[test]
    fn the_library_writes_lines_the_listener_reads() {
        let p = std::env::temp_dir().join(format!("tsm-evlib-{}.sock", std::process::id()));
        let spec = format!("unix:{}", p.display());
        let l = Listener::bind(&spec).unwrap();
        let log = EventLog::connect(&spec).unwrap();
        log.start("block.write", "42", &[("path", "/data/a b")]).unwrap();
        log.end("block.write", "42", -1, &[]).unwrap();
        assert!(log.write("bad name", &[]).is_err());
        assert!(log.write("x", &[("k=v", "1")]).is_err());
        let (ev, errs) = l.drain(0);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(ev[0].name, "block.write.start");
        assert_eq!(ev[0].fields, vec![("guid".into(), "42".into()), ("path".into(), "/data/a b".into())]);
        assert_eq!(ev[1].fields[1], ("status".into(), "-1".into()));
        assert!(ev[0].t_ns > 1_700_000_000_000_000_000 && ev[1].t_ns >= ev[0].t_ns);
    }

    #[test]
    fn a_burst_is_not_lost() {
        let p = std::env::temp_dir().join(format!("tsm-burst-{}.sock", std::process::id()));
        let spec = format!("unix:{}", p.display());
        let r = Receiver::start(Listener::bind(&spec).unwrap()).unwrap();
        let log = EventLog::connect(&spec).unwrap();
        for k in 0..500 {
            log.write("burst", &[("k", &k.to_string())]).unwrap();
        }
        let t = std::time::Instant::now();
        let mut got = Vec::new();
        while got.len() < 500 && t.elapsed() < Duration::from_secs(5) {
            got.extend(r.take().0);
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(got.len(), 500);
        assert!(got.iter().enumerate().all(|(k, e)| e.fields[0].1 == k.to_string()), "in order");
    }

    #[test]
    fn unix_datagrams_arrive() {
        let p = std::env::temp_dir().join(format!("tsm-ev-{}.sock", std::process::id()));
        let spec = format!("unix:{}", p.display());
        let l = Listener::bind(&spec).unwrap();
        send(&spec, "event=a.start guid=1\nevent=a.end guid=1 status=0").unwrap();
        send(&spec, "not an event").unwrap();
        let (ev, errs) = l.drain(5);
        assert_eq!(ev.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["a.start", "a.end"]);
        assert_eq!(errs.len(), 1);
        drop(l);
        assert!(!p.exists());
    }

    #[test]
    fn timestamps_round_trip() {
        for ns in [0, 951_868_800_000_000_000, 1_181_658_735_145_455_000, 1_795_000_000_123_456_000] {
            assert_eq!(parse_ts(&format_ts(ns)), Some(ns), "{}", format_ts(ns));
        }
        assert_eq!(format_ts(1_181_658_735_145_455_000), "2007-06-12T14:32:15.145455Z");
    }

    #[test]
    fn shares_of_cpu() {
        let a = CpuSample { t_ns: 0, cores: vec![[0, 0, 0, 0, 0], [10, 0, 0, 0, 0]], proc: Some([0, 0]) };
        let b = CpuSample { t_ns: 1, cores: vec![[50, 20, 10, 10, 10], [110, 0, 0, 0, 0]], proc: Some([30, 20]) };
        let s = cpu_shares(&a, &b).unwrap();
        assert_eq!(s.cores[0], [0.5, 0.2, 0.1, 0.1]);
        assert_eq!(s.cores[1], [1.0, 0.0, 0.0, 0.0]);
        assert_eq!(s.proc, Some(0.5));
    }

    #[test]
    fn reads_proc_stat() {
        let c = cpu_sample(1, Some(std::process::id())).unwrap();
        assert!(!c.cores.is_empty());
        assert!(c.proc.is_some());
    }
}

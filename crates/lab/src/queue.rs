//! The router's bottleneck queue over time: its length sampled every 10 ms during a run.
//!
//! One long-lived `tc -s -j -batch -` in the router's namespace is asked `qdisc show dev rtr1`
//! every [`INTERVAL`]; the answer's queue (the leaf qdisc, handle `10:`) gives its length in
//! packets and bytes and its drops so far. (A `tc` process per sample would cost a fork and
//! exec each time on a machine that is also the experiment.) The samples go to the run's
//! `queue.csv`: `t_s,qlen_pkts,backlog_bytes,drops`, t from the start of sampling.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Time between samples.
pub const INTERVAL: Duration = Duration::from_millis(10);

/// A running sampler; [`Sampler::stop`] ends it and writes the file.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<usize, String>>>,
}

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Seconds since sampling started.
    pub t_s: f64,
    /// Packets in the queue.
    pub qlen_pkts: u64,
    /// Bytes in the queue.
    pub backlog_bytes: u64,
    /// Drops so far.
    pub drops: u64,
}

/// The leaf queue's numbers in one answer of `tc -s -j qdisc show`.
pub fn parse(line: &str) -> Option<(u64, u64, u64)> {
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    let q = v.as_array()?.iter().find(|q| q["handle"] == "10:")?;
    Some((q["qlen"].as_u64()?, q["backlog"].as_u64()?, q["drops"].as_u64()?))
}

impl Sampler {
    /// Starts sampling `dev` in namespace `ns` into `out` (CSV).
    pub fn start(ns: &str, dev: &str, out: PathBuf) -> Result<Sampler, String> {
        let mut child: Child = Command::new("ip")
            .args(["netns", "exec", ns, "tc", "-s", "-j", "-batch", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("queue sampler: tc: {e}"))?;
        let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("queue sampler: no pipes".into());
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let cmd = format!("qdisc show dev {dev}\n");
        let thread = std::thread::spawn(move || {
            let mut reader = BufReader::new(output);
            let mut samples = Vec::new();
            let t0 = Instant::now();
            let mut next = t0;
            let mut line = String::new();
            while !flag.load(Ordering::Relaxed) {
                if input.write_all(cmd.as_bytes()).and_then(|_| input.flush()).is_err() {
                    break;
                }
                // One answer per command: a JSON array on one line (blank lines skipped).
                loop {
                    line.clear();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line.trim().is_empty() => continue,
                        Ok(_) => break,
                    }
                }
                if let Some((q, b, d)) = parse(&line) {
                    samples.push(Sample { t_s: t0.elapsed().as_secs_f64(), qlen_pkts: q, backlog_bytes: b, drops: d });
                }
                next += INTERVAL;
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            drop(input);
            let _ = child.kill();
            let _ = child.wait();
            let mut text = String::from("t_s,qlen_pkts,backlog_bytes,drops\n");
            for s in &samples {
                text += &format!("{:.4},{},{},{}\n", s.t_s, s.qlen_pkts, s.backlog_bytes, s.drops);
            }
            std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
            Ok(samples.len())
        });
        Ok(Sampler { stop, thread: Some(thread) })
    }

    /// Stops sampling, writes the file; returns the number of samples.
    pub fn stop(mut self) -> Result<usize, String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| "queue sampler panicked".to_string())?,
            None => Ok(0),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads a run's `queue.csv`.
pub fn read(path: &std::path::Path) -> Vec<Sample> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some(Sample {
                t_s: f.first()?.parse().ok()?,
                qlen_pkts: f.get(1)?.parse().ok()?,
                backlog_bytes: f.get(2)?.parse().ok()?,
                drops: f.get(3)?.parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_tcs_answer() {
        // As `tc -s -j qdisc show dev rtr1` prints it (htb root, pfifo leaf).
        let line = r#"[{"kind":"htb","handle":"1:","root":true,"backlog":0,"qlen":0,"drops":9},{"kind":"pfifo","handle":"10:","parent":"1:1","options":{"limit":20},"bytes":0,"packets":0,"drops":7,"overlimits":0,"requeues":0,"backlog":3028,"qlen":2}]"#;
        assert_eq!(super::parse(line), Some((2, 3028, 7)));
        assert_eq!(super::parse("[]"), None);
    }
}

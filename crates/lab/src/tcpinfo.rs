//! The kernel's tcp_info of the test's socket, sampled during a ttcp run or a lab run: the
//! monitor's recorder (`tcpscope_monitor::record`, the one `tcpscope monitor -w` runs) on a
//! thread, writing a `.tsm` recording that `tcpscope stats` and `tcpscope plot -k timeline`
//! read (docs/monitor.md). This module only starts and stops it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tcpscope_monitor::record::{self, Options};

/// Sampling interval.
pub const INTERVAL: Duration = Duration::from_millis(10);

/// A running recorder.
pub struct Recorder {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<u64, String>>>,
}

impl Recorder {
    /// Records the sockets `filter` matches (the monitor's filter language, e.g. `dport 5001`)
    /// into `path`; in namespace `ns` when given (the netlink socket is made there).
    pub fn start(filter: &str, path: &Path, ns: Option<&str>) -> Result<Recorder, String> {
        let opts = Options {
            filter: filter.to_string(),
            interval: INTERVAL,
            pid: None,
            duration: None,
            events: None,
            cpu_every: None,
            to: None,
            to_grace: Duration::ZERO,
            cpu_budget: None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let path: PathBuf = path.to_path_buf();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let body = move || {
            let mut first = Some(ready_tx);
            record::run(&opts, Some(&path), None, &flag, |_| {
                if let Some(t) = first.take() {
                    let _ = t.send(());
                }
            })
            .map(|r| r.samples)
            .map_err(|e| format!("tcp_info recorder: {e}"))
        };
        let thread = match ns {
            Some(n) => {
                let h = crate::netns::spawn_in(n, body);
                std::thread::spawn(move || {
                    h.join().map_err(|_| "tcp_info recorder panicked".to_string())?.and_then(|r| r)
                })
            }
            None => std::thread::spawn(body),
        };
        let mut rec = Recorder { stop, thread: Some(thread) };
        // Started once its first dump is done (or it failed).
        if ready_rx.recv_timeout(Duration::from_secs(5)).is_err() {
            return Err(rec.finish().err().unwrap_or_else(|| "tcp_info recorder did not start".into()));
        }
        Ok(rec)
    }

    /// Stops and returns the number of samples recorded.
    pub fn stop(mut self) -> Result<u64, String> {
        self.finish()
    }

    fn finish(&mut self) -> Result<u64, String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| "tcp_info recorder panicked".to_string())?,
            None => Ok(0),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

//! Following connections across dumps by socket cookie, and the sampling loop.

use std::collections::HashSet;

use rustc_hash::FxHashMap;
use std::io;
use std::time::{Duration, Instant};

use crate::diag::{SockInfo, show_addr};
use crate::fields::Sample;
use crate::source::Source;
use crate::tsm::{ConnEnd, ConnStart};

/// What one dump changed.
#[derive(Debug, Default)]
pub struct Step {
    pub started: Vec<ConnStart>,
    pub samples: Vec<Sample>,
    pub ended: Vec<ConnEnd>,
}

struct Live {
    id: u32,
    last_ns: u64,
    /// The number of the last dump that saw it ([`Tracker::dumps`]).
    seen: u64,
}

/// Assigns connection ids by cookie (1, 2, … in order of first sight, as `conns` numbers a
/// capture's) and notices starts and ends.
pub struct Tracker {
    live: FxHashMap<u64, Live>,
    next_id: u32,
    /// Dumps folded in (a connection not seen by the latest one has ended).
    dumps: u64,
}

impl Default for Tracker {
    fn default() -> Tracker {
        Tracker { live: FxHashMap::default(), next_id: 1, dumps: 0 }
    }
}

impl Tracker {
    /// Folds one dump (taken at `t_ns`) in: new cookies start connections, cookies missing from
    /// this dump end theirs.
    /// `out` is cleared first (its vectors are reused), `socks` emptied.
    pub fn step(&mut self, t_ns: u64, socks: &mut Vec<SockInfo>, out: &mut Step) {
        self.begin(out);
        for s in socks.drain(..) {
            self.add(t_ns, s, out);
        }
        self.end(t_ns, out);
    }

    /// Starts folding a dump in: clears `out` (its vectors are reused).
    pub fn begin(&mut self, out: &mut Step) {
        out.started.clear();
        out.samples.clear();
        out.ended.clear();
        self.dumps += 1;
    }

    /// One socket of the dump begun, taken at `t_ns`.
    pub fn add(&mut self, t_ns: u64, s: SockInfo, out: &mut Step) {
        let dump = self.dumps;
        {
            let live = self.live.entry(s.cookie).or_insert_with(|| {
                let id = self.next_id;
                self.next_id += 1;
                out.started.push(ConnStart {
                    id,
                    cookie: s.cookie,
                    family: if s.family == 2 { "ipv4".into() } else { "ipv6".into() },
                    src: show_addr(s.ends.src).to_string(),
                    sport: s.ends.sport,
                    dst: show_addr(s.ends.dst).to_string(),
                    dport: s.ends.dport,
                    cong: s.cong.as_deref().map(str::to_string),
                    inode: s.inode,
                    uid: s.uid,
                    t_ns,
                    info_len: s.info_len,
                });
                Live { id, last_ns: t_ns, seen: dump }
            });
            live.last_ns = t_ns;
            live.seen = dump;
            out.samples.push(Sample { t_ns, conn: live.id, raw: s.raw });
        }
    }

    /// Ends the dump begun: the connections it did not see have ended.
    pub fn end(&mut self, t_ns: u64, out: &mut Step) {
        let dump = self.dumps;
        self.live.retain(|_, l| {
            if l.seen != dump {
                out.ended.push(ConnEnd { id: l.id, last_ns: l.last_ns, gone_ns: t_ns, recorder_stopped: false });
            }
            l.seen == dump
        });
        out.ended.sort_by_key(|e| e.id);
    }

    /// Ends every live connection (the recorder stops): `gone_ns` is the stop time.
    pub fn finish(&mut self, t_ns: u64) -> Vec<ConnEnd> {
        let mut v: Vec<ConnEnd> = self
            .live
            .drain()
            .map(|(_, l)| ConnEnd { id: l.id, last_ns: l.last_ns, gone_ns: t_ns, recorder_stopped: true })
            .collect();
        v.sort_by_key(|e| e.id);
        v
    }
}

/// CPU time of the calling thread in ns (`/proc/thread-self/schedstat`, user and system, the
/// kernel's work for our netlink dumps included), or `None` where the kernel does not say.
pub fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

/// The socket inodes of process `pid` (its `/proc/PID/fd` links `socket:[INODE]`).
pub fn pid_sockets(pid: u32) -> io::Result<HashSet<u32>> {
    let mut out = HashSet::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let Ok(e) = e else { continue };
        // An fd closed between readdir and readlink is simply gone.
        let Ok(link) = std::fs::read_link(e.path()) else { continue };
        if let Some(Ok(ino)) =
            link.to_str().and_then(|l| l.strip_prefix("socket:[")).and_then(|l| l.strip_suffix(']')).map(str::parse)
        {
            out.insert(ino);
        }
    }
    Ok(out)
}

/// Sampling at a fixed interval: dumps, keeps the sockets of `pid` if given, and hands each
/// step to `sink` until it returns `false` or `until` passes.
pub struct Sampler {
    /// The BPF iterator or netlink.
    pub source: Source,
    pub tracker: Tracker,
    pub interval: Duration,
    pub pid: Option<u32>,
    /// Dumps that took longer than the interval (the next one then starts at once, and the
    /// schedule skips the missed ticks rather than bursting to catch up).
    pub overruns: u64,
    pub dumps: u64,
    /// Share of one core the sampling may take (the dumps, the kernel's work for them included,
    /// and what the sink does with them): when a dump costs more CPU than this allows at
    /// `interval`, the next one waits longer. `None`: every `interval` whatever it costs.
    pub cpu_budget: Option<f64>,
    /// Dumps put off by the budget.
    pub stretched: u64,
    /// The budget's account: CPU ns spent beyond what the budget allowed so far, and when and
    /// at what CPU time of this thread it was last settled.
    debt_ns: f64,
    settled: Option<(Instant, u64)>,
    /// The step of the latest dump, kept from dump to dump: at 10,000 sockets it is
    /// megabytes, which allocated anew each time were page faults each time.
    step: Step,
}

impl Sampler {
    pub fn new(source: impl Into<Source>, interval: Duration, pid: Option<u32>) -> Sampler {
        Sampler {
            source: source.into(),
            tracker: Tracker::default(),
            interval,
            pid,
            overruns: 0,
            dumps: 0,
            cpu_budget: None,
            stretched: 0,
            debt_ns: 0.0,
            settled: None,
            step: Step::default(),
        }
    }

    /// One dump and its step.
    pub fn once(&mut self) -> io::Result<&Step> {
        if self.cpu_budget.is_some() && self.settled.is_none() {
            self.settled = thread_cpu_ns().map(|c| (Instant::now(), c));
        }
        let inodes = match self.pid {
            Some(p) => Some(pid_sockets(p).map_err(|e| io::Error::new(e.kind(), format!("/proc/{p}/fd: {e}")))?),
            None => None,
        };
        // Each socket goes to the tracker as the dump reads it (no list of the dump's sockets:
        // each move of a socket's 800 bytes of values was a measurable copy at 10,000 sockets).
        let t_ns = crate::record::now_ns();
        let (tracker, step) = (&mut self.tracker, &mut self.step);
        tracker.begin(step);
        self.source.dump(|s| {
            if inodes.as_ref().is_none_or(|set| set.contains(&s.inode)) {
                tracker.add(t_ns, s, step);
            }
        })?;
        self.dumps += 1;
        self.tracker.end(t_ns, &mut self.step);
        Ok(&self.step)
    }

    /// The step of the latest dump.
    pub fn last_step(&self) -> &Step {
        &self.step
    }

    /// Runs until `sink` returns `Ok(false)`, `stop` is set, or `until` passes.
    pub fn run(
        &mut self,
        until: Option<Instant>,
        stop: &std::sync::atomic::AtomicBool,
        mut sink: impl FnMut(&Step) -> io::Result<bool>,
    ) -> io::Result<()> {
        let mut next = Instant::now();
        loop {
            if stop.load(std::sync::atomic::Ordering::Relaxed) || until.is_some_and(|u| Instant::now() >= u) {
                return Ok(());
            }
            let step = self.once()?;
            if !sink(step)? {
                return Ok(());
            }
            let wait = self.interval;
            next += wait;
            if let (Some(budget), Some((t0, c0)), Some(c1)) = (self.cpu_budget, self.settled, thread_cpu_ns()) {
                // A leaky bucket: this thread's CPU since the last settlement (the dump, the
                // kernel's work for it and the sink's; sleep costs nothing) is added to the
                // debt, the wall time since then at `budget` is paid off, and the next dump
                // waits until the rest is paid. No credit is kept: an idle spell does not buy a
                // burst later.
                let now = Instant::now();
                let budget = budget.max(1e-6);
                self.debt_ns =
                    (self.debt_ns + c1.saturating_sub(c0) as f64 - (now - t0).as_nanos() as f64 * budget).max(0.0);
                self.settled = Some((now, c1));
                let paid = now + Duration::from_secs_f64(self.debt_ns / budget / 1e9);
                if paid > next {
                    next = paid;
                    self.stretched += 1;
                }
            }
            let now = Instant::now();
            if next > now {
                // In slices: a budget can space dumps seconds apart, and a stop must not wait.
                while let Some(left) = next.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return Ok(());
                    }
                    let left = until.map_or(left, |u| left.min(u.saturating_duration_since(Instant::now())));
                    if left.is_zero() {
                        return Ok(());
                    }
                    std::thread::sleep(left.min(Duration::from_millis(100)));
                }
            } else {
                self.overruns += 1;
                let missed = (now - next).as_nanos() / wait.as_nanos().max(1);
                next += wait * (missed as u32);
            }
        }
    }
}

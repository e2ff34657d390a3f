//! Network namespaces and processes that exist only as long as a run: removed by their own
//! names and PIDs when the guard is dropped (also when the run fails or is interrupted).
//!
//! Names are `tsl<PID>-<N>-<role>`: the lab's process id, so that two labs never make the same
//! name. While a namespace exists its lab holds a lock on `/run/tcpscope-lab/NAME.lock` (an
//! exclusive `flock`, which the kernel releases when the process ends, however it ends), so
//! that namespaces left by a lab that was killed outright (SIGKILL: no destructor runs) are
//! told from those of a lab still running, and removed by the next one ([`remove_stale`]).
//!
//! The lock, not the PID in the name, says whether a lab still runs: a PID says nothing to a
//! lab in another PID namespace (it sees no `/proc/PID` for a process that runs), and a prefix
//! that ends in a digit makes the PID ambiguous (`tso21` + `345` read as `tso2` + `1345`): a
//! lab starting beside another could take the other's namespaces for stale ones and delete
//! them under its running transfer.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs a command and returns its standard output; an error names the command and quotes its
/// standard error.
pub fn cmd(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("`{}`: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "`{}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a command inside a namespace (`ip netns exec NS ...`).
pub fn in_ns(ns: &str, args: &[&str]) -> Result<String, String> {
    let mut v = vec!["ip", "netns", "exec", ns];
    v.extend_from_slice(args);
    cmd(&v)
}

/// The lab's own namespace prefix (`tsl<PID>-...`).
pub const PREFIX: &str = "tsl";

/// Where the namespaces' locks are.
const LOCK_DIR: &str = "/run/tcpscope-lab";

/// The lock file of namespace `name`.
fn lock_path(name: &str) -> std::path::PathBuf {
    Path::new(LOCK_DIR).join(format!("{name}.lock"))
}

/// Takes the lock of namespace `name` (without waiting): `Ok(None)` when another process holds
/// it.
fn lock(name: &str) -> Result<Option<nix::fcntl::Flock<std::fs::File>>, String> {
    let path = lock_path(name);
    std::fs::create_dir_all(LOCK_DIR).map_err(|e| format!("{LOCK_DIR}: {e}"))?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(l) => Ok(Some(l)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(format!("{}: {e}", path.display())),
    }
}

/// A set of namespaces that are deleted together when dropped.
pub struct Namespaces {
    names: Vec<String>,
    /// Each namespace's lock, held while it exists.
    locks: Vec<nix::fcntl::Flock<std::fs::File>>,
}

impl Namespaces {
    /// Makes namespaces `tsl<PID>-<N>-<role>` for each role, with loopback up; N counts the
    /// sets this process made, so that two at once never collide.
    pub fn new(roles: &[&str]) -> Result<Namespaces, String> {
        Namespaces::with_prefix(PREFIX, roles)
    }

    /// The same with another prefix than `tsl`: `PREFIX<PID>-<N>-<role>`.
    pub fn with_prefix(prefix: &str, roles: &[&str]) -> Result<Namespaces, String> {
        static SETS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        // A process in another PID namespace can have the same PID (and count the same N): a
        // set whose names another process holds, or that exist, is skipped for the next N.
        for _ in 0..1000 {
            let run = SETS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let names: Vec<String> =
                roles.iter().map(|r| format!("{prefix}{}-{run}-{r}", std::process::id())).collect();
            let mut locks = Vec::new();
            for n in &names {
                // Locked before it exists: a namespace of a running lab is never seen unlocked.
                match lock(n)? {
                    Some(l) if !Path::new("/var/run/netns").join(n).exists() => locks.push(l),
                    _ => break,
                }
            }
            if locks.len() < names.len() {
                continue;
            }
            let mut ns = Namespaces { names: Vec::new(), locks };
            for name in names {
                cmd(&["ip", "netns", "add", &name])?;
                ns.names.push(name.clone());
                cmd(&["ip", "-n", &name, "link", "set", "lo", "up"])?;
            }
            return Ok(ns);
        }
        Err(format!("no free namespace names {prefix}{}-N-...: 1000 sets held by other processes", std::process::id()))
    }

    /// The namespace of a role.
    pub fn name(&self, role: &str) -> &str {
        let suffix = format!("-{role}");
        self.names.iter().find(|n| n.ends_with(&suffix)).map(String::as_str).unwrap_or("")
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in self.names.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", n]).stderr(Stdio::null()).status();
        }
        // Each lock file removed while still held, then released.
        for n in &self.names {
            let _ = std::fs::remove_file(lock_path(n));
        }
        self.locks.clear();
    }
}

/// Deletes namespaces that an earlier lab made and left behind because it was killed: named
/// `PREFIX<PID>-...`, whose lock no process holds. (A namespace without a lock file was made
/// by a lab from before the locks: stale when no process PID runs.)
pub fn remove_stale(prefix: &str) -> Vec<String> {
    let Ok(list) = cmd(&["ip", "netns", "list"]) else { return Vec::new() };
    let mut removed = Vec::new();
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix(prefix) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        let stale = if lock_path(name).exists() {
            // Held: its lab runs (in this process or another, in any PID namespace).
            matches!(lock(name), Ok(Some(_)))
        } else {
            pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
        };
        if stale && cmd(&["ip", "netns", "del", name]).is_ok() {
            let _ = std::fs::remove_file(lock_path(name));
            removed.push(name.to_string());
        }
    }
    removed
}

/// A child process that is stopped (SIGTERM, then SIGKILL after 3 s) by its PID when dropped,
/// with its standard error collected.
pub struct Proc {
    child: Option<Child>,
    what: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    /// Starts `args` with standard error collected line by line.
    pub fn spawn(what: &str, args: &[&str]) -> Result<Proc, String> {
        let mut child = Command::new(args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{what}: `{}`: {e}", args.join(" ")))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        if let Some(err) = child.stderr.take() {
            let l = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(mut v) = l.lock() {
                        v.push(line);
                    }
                }
            });
        }
        Ok(Proc { child: Some(child), what: what.to_string(), log })
    }

    /// The standard error lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.log.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Waits until a line of standard error contains `needle`; fails if the process exits or
    /// `timeout` passes first.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> Result<(), String> {
        let t = Instant::now();
        loop {
            if self.lines().iter().any(|l| l.contains(needle)) {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(st)) = c.try_wait()
            {
                std::thread::sleep(Duration::from_millis(50));
                return Err(format!("{} exited ({st}) before it was ready: {}", self.what, self.lines().join(" / ")));
            }
            if t.elapsed() > timeout {
                return Err(format!("{} not ready after {timeout:?}: {}", self.what, self.lines().join(" / ")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the process (SIGTERM, SIGKILL after 3 s) and returns its standard error.
    pub fn stop(mut self) -> Vec<String> {
        self.terminate();
        // Let the reader thread take the last lines.
        std::thread::sleep(Duration::from_millis(50));
        self.lines()
    }

    fn terminate(&mut self) {
        let Some(mut c) = self.child.take() else { return };
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        let pid = nix::unistd::Pid::from_raw(c.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// Runs `f` on a new thread that joined namespace `ns` (sockets it makes live there).
pub fn spawn_in<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<Result<T, String>> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let fd = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        nix::sched::setns(fd, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| format!("setns {path}: {e}"))?;
        Ok(f())
    })
}

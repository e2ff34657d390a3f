//! A network namespace made by a test and removed when the value drops (also on panic).

use std::process::{Child, Command, Stdio};

/// A network namespace that exists for the life of the value.
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// A fresh namespace with loopback up, or `None` (with a message) when this machine cannot.
    pub fn new(tag: &str) -> Option<Netns> {
        Netns::with_prefix("tsc", tag)
    }

    /// As [`Netns::new`], the name starting with `prefix` (each engineer's tests have their
    /// own, so that no one removes another's namespaces).
    pub fn with_prefix(prefix: &str, tag: &str) -> Option<Netns> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipping: this test needs root (it makes a network namespace)");
            return None;
        }
        let name = format!("{prefix}-{}-{tag}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).stderr(Stdio::null()).status();
        match Command::new("ip").args(["netns", "add", &name]).status() {
            Ok(s) if s.success() => {}
            other => {
                eprintln!("skipping: `ip netns add` is unavailable here ({other:?})");
                return None;
            }
        }
        let ns = Netns { name };
        let up =
            Command::new("ip").args(["netns", "exec", &ns.name, "ip", "link", "set", "lo", "up"]).status().unwrap();
        assert!(up.success(), "bring lo up in {}", ns.name);
        Some(ns)
    }

    /// `tcpscope ARGS` inside the namespace, stderr piped.
    pub fn tcpscope(&self, args: &[&str]) -> Child {
        Command::new("ip")
            .args(["netns", "exec", &self.name, env!("CARGO_BIN_EXE_tcpscope")])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Runs `f` on a thread that joined the namespace: sockets it creates live there.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let fd = std::fs::File::open(&path).unwrap();
            nix::sched::setns(fd, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
        .join()
        .unwrap()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

impl Netns {
    /// Runs `cmd` inside the namespace and asserts it succeeded.
    pub fn exec(&self, cmd: &[&str]) {
        let st = Command::new("ip").args(["netns", "exec", &self.name]).args(cmd).status().unwrap();
        assert!(st.success(), "{cmd:?} in {} failed", self.name);
    }
}

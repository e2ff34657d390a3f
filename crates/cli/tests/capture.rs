//! `tcpscope capture` on real traffic, in network namespaces these tests create (issue 6).
//!
//! Each test makes its own namespace (`tsc-<pid>-<tag>`, so parallel tests and parallel runs
//! never collide), brings its loopback up, runs `tcpscope capture -i lo` inside it, makes a TCP
//! connection inside it from a thread that joined the namespace (setns), and deletes the
//! namespace when done, whatever happens. Without root or `ip netns` the tests say so and pass
//! without running (CI runs them as root).
//!
//! Oracles: the bytes the test itself sent; an independent sequential read of every file;
//! tcpdump reading the files, when installed; the capture's own log of the files it opened.
#![cfg(feature = "capture")]

mod util;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tcpscope_core::capture::{CaptureReader, Cursor, Index, TraceSet};
use util::netns::Netns;

/// A running capture whose stderr lines are collected.
struct Capture {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl Capture {
    fn start(ns: &Netns, dir: &Path, extra: &[&str]) -> Capture {
        let mut args = vec!["capture", "-i", "lo", "-f", "tcp", "-w", dir.to_str().unwrap()];
        // The machine's free disk space must not decide what a test keeps: by default a disk
        // under 10 % free keeps nothing but the file being written.
        if !extra.contains(&"--keep") {
            args.extend_from_slice(&["--min-free", "0"]);
        }
        args.extend_from_slice(extra);
        let mut child = ns.tcpscope(&args);
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let l = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                l.lock().unwrap().push(line);
            }
        });
        let mut c = Capture { child, log };
        // Ready once libpcap is open and the filter set (it logs "capturing on").
        let t = Instant::now();
        while !c.lines().iter().any(|l| l.contains("capturing on")) {
            if let Ok(Some(st)) = c.child.try_wait() {
                std::thread::sleep(Duration::from_millis(50));
                panic!("capture exited early ({st}): {:?}", c.lines());
            }
            assert!(t.elapsed() < Duration::from_secs(10), "capture did not start: {:?}", c.lines());
            std::thread::sleep(Duration::from_millis(20));
        }
        c
    }

    fn lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// SIGTERM, then the exit status (within 5 s) and the log.
    fn stop(mut self) -> (std::process::ExitStatus, Vec<String>) {
        // No pause first: the capture writes what the kernel received before the signal.
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                // The reader thread finishes at EOF of stderr.
                std::thread::sleep(Duration::from_millis(50));
                return (st, self.lines());
            }
            if t.elapsed() > Duration::from_secs(5) {
                let _ = self.child.kill();
                panic!("capture did not stop within 5 s of SIGTERM: {:?}", self.lines());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One TCP connection inside the namespace: `rounds` request/response exchanges of `chunk`
/// bytes each way (so that no two writes merge into one segment, and every exchange is at
/// least two packets), then both sides close. Returns the payload bytes sent both ways.
fn transfer(ns: &Netns, rounds: usize, chunk: usize) -> u64 {
    ns.run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let mut buf = vec![0u8; chunk];
            let mut n = 0u64;
            while s.read_exact(&mut buf).is_ok() {
                s.write_all(&buf).unwrap();
                n += 2 * chunk as u64;
            }
            n
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_nodelay(true).unwrap();
        let mut buf = vec![0x5au8; chunk];
        for _ in 0..rounds {
            c.write_all(&buf).unwrap();
            c.read_exact(&mut buf).unwrap();
        }
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).unwrap();
        drop(c);
        let moved = server.join().unwrap();
        assert_eq!(moved, (2 * rounds * chunk) as u64);
        moved
    })
}

/// The ring's capture files, in name (= time) order.
fn ring_files(dir: &Path) -> Vec<PathBuf> {
    util::capture_files(dir)
}

/// Every record of a file by a plain sequential read: (ts_ns, frame, offset). Fails on any
/// read error: files closed by the capture are complete.
fn scan(path: &Path) -> Vec<(u64, u64, u64)> {
    let mut r = CaptureReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record().unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
        v.push((rec.ts_ns, rec.frame, rec.offset));
    }
    v
}

/// Checks each file's index against an independent read of the file (and against tcpdump's
/// count when tcpdump is installed).
fn check_indexes(files: &[PathBuf]) {
    // Not util::have: `tcpdump -v` would start capturing.
    let tcpdump = Command::new("tcpdump")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    for f in files {
        let size = std::fs::metadata(f).unwrap().len();
        let idx = Index::load(f, size).unwrap().unwrap_or_else(|| panic!("{} has no index", f.display()));
        let recs = scan(f);
        assert_eq!(idx.packets, recs.len() as u64, "{}", f.display());
        assert_eq!(idx.first_ts_ns, recs[0].0);
        assert_eq!(idx.last_ts_ns, recs.iter().map(|r| r.0).max().unwrap());
        assert_eq!(idx.blocks.len(), recs.len().div_ceil(idx.every_pkts as usize), "{}", f.display());
        for &(ts, frame, off) in &idx.blocks {
            assert_eq!(recs[frame as usize - 1], (ts, frame, off), "{} block entry", f.display());
        }
        if tcpdump {
            let out = Command::new("tcpdump").args(["-n", "-r"]).arg(f).stderr(Stdio::null()).output().unwrap();
            assert!(out.status.success(), "tcpdump reads {}", f.display());
            assert_eq!(
                out.stdout.iter().filter(|&&b| b == b'\n').count() as u64,
                idx.packets,
                "tcpdump's count of {}",
                f.display()
            );
        }
    }
}

#[test]
fn capture_rotates_indexes_every_file_and_stops_cleanly_on_sigterm() {
    let Some(ns) = Netns::new("rot") else { return };
    let dir = util::tempdir("capture-rot");
    let cap = Capture::start(&ns, &dir, &["--file-size", "64KiB", "--index-every", "100"]);
    let sent = transfer(&ns, 3000, 100);
    let (status, log) = cap.stop();
    assert!(status.success(), "exit {status}: {log:?}");
    assert!(log.iter().any(|l| l.contains("stopped:") && l.contains("dropped")), "{log:?}");
    let files = ring_files(&dir);
    assert!(files.len() >= 3, "rotation: {} files: {log:?}", files.len());
    // Every file but the last reached the size limit, and overshot it by at most one record
    // (16-byte header + a 128-byte snaplen); the last was closed by the signal and is complete.
    for f in &files[..files.len() - 1] {
        let size = std::fs::metadata(f).unwrap().len();
        assert!((65536..65536 + 144).contains(&size), "{}: {size} bytes", f.display());
    }
    check_indexes(&files);
    // Nothing lost or doubled: the payload bytes in the ring are the bytes the test sent.
    let doc = util::json(&["conns", dir.to_str().unwrap()]);
    let conns = doc["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1, "{doc}");
    assert_eq!(conns[0]["state"], "complete");
    assert_eq!(
        conns[0]["a2b"]["unique_bytes"].as_u64().unwrap() + conns[0]["b2a"]["unique_bytes"].as_u64().unwrap(),
        sent
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn ring_deletes_the_oldest_files_and_keeps_the_newest_within_its_budget() {
    let Some(ns) = Netns::new("keep") else { return };
    let dir = util::tempdir("capture-keep");
    // A file of someone else's in the ring directory must survive.
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
    let keep = 64 * 1024;
    let cap = Capture::start(&ns, &dir, &["--file-size", "16KiB", "--keep", "64KiB"]);
    let sent = transfer(&ns, 3000, 100);
    let (status, log) = cap.stop();
    assert!(status.success(), "exit {status}: {log:?}");
    let opened: Vec<String> = log.iter().filter_map(|l| l.split_once("opened ").map(|(_, p)| p.to_string())).collect();
    let deleted: Vec<String> = log
        .iter()
        .filter_map(|l| l.split_once("deleted ").map(|(_, p)| p.trim_end_matches(" (oldest, over budget)").to_string()))
        .collect();
    let files: Vec<String> = ring_files(&dir).iter().map(|p| p.display().to_string()).collect();
    assert!(deleted.len() >= 3, "deletions: {log:?}");
    // What is left is the newest files, all of them; what went is the oldest, in order.
    assert_eq!(files, opened[opened.len() - files.len()..], "{log:?}");
    assert_eq!(deleted, opened[..deleted.len()]);
    let total: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "notes.txt")
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(total <= keep, "ring takes {total} bytes, budget {keep}");
    assert!(dir.join("notes.txt").exists());
    check_indexes(&ring_files(&dir));
    // The newest data is there: the connection's end (FIN both ways) and its last bytes; its
    // start (the SYN) was in the deleted files.
    let doc = util::json(&["conns", dir.to_str().unwrap()]);
    let c = &doc["connections"][0];
    assert_eq!(c["handshake"], false, "{doc}");
    let out = util::run(&["print", dir.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let fins = lines.iter().filter(|l| l["flags"].as_str().unwrap().contains('F')).count();
    assert_eq!(fins, 2, "both FINs kept");
    // The sender's FIN comes right after its last data byte: that last segment is kept.
    let data: Vec<&serde_json::Value> = lines.iter().filter(|l| l["len"].as_u64().unwrap() > 0).collect();
    let sender = &data.last().expect("data segments kept")["sport"];
    let data_end = data
        .iter()
        .filter(|l| &l["sport"] == sender)
        .map(|l| (l["seq"].as_u64().unwrap() + l["len"].as_u64().unwrap()) % (1 << 32))
        .max()
        .unwrap();
    let fin = lines
        .iter()
        .find(|l| &l["sport"] == sender && l["flags"].as_str().unwrap().contains('F'))
        .expect("sender's FIN");
    assert_eq!(fin["seq"].as_u64().unwrap(), data_end, "last data byte kept");
    assert!(sent > 0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn seek_next_and_prev_cross_file_boundaries_of_a_captured_ring() {
    let Some(ns) = Netns::new("seek") else { return };
    let dir = util::tempdir("capture-seek");
    let cap = Capture::start(&ns, &dir, &["--file-size", "32KiB", "--format", "pcapng", "--index-every", "50"]);
    transfer(&ns, 1500, 100);
    let (status, log) = cap.stop();
    assert!(status.success(), "exit {status}: {log:?}");
    let files = ring_files(&dir);
    assert!(files.len() >= 3, "{log:?}");
    // The oracle: every packet by a plain read of the files in name order.
    let all: Vec<(PathBuf, u64, u64)> =
        files.iter().flat_map(|f| scan(f).into_iter().map(move |(ts, frame, _)| (f.clone(), frame, ts))).collect();
    for with_index in [true, false] {
        if !with_index {
            // Without the sidecars the set builds what it needs.
            for f in &files {
                std::fs::remove_file(Index::sidecar(f)).unwrap();
            }
        }
        let mut c = Cursor::new(TraceSet::open(std::slice::from_ref(&dir)).unwrap());
        let at = |r: Option<(usize, tcpscope_core::capture::Record<'_>)>, set_files: &[PathBuf]| {
            r.map(|(f, rec)| (set_files[f].clone(), rec.frame, rec.ts_ns))
        };
        let set_files: Vec<PathBuf> = c.set().files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(set_files, files);
        for i in 1..all.len() {
            if all[i].0 == all[i - 1].0 {
                continue;
            }
            // First packet at or after the first time of the next file: the first of the
            // packets with that time, which may still be in the previous file.
            let t = all[i].2;
            let k = all.iter().position(|p| p.2 >= t).unwrap();
            let r = c.seek(t).unwrap();
            assert_eq!(at(r, &set_files), Some(all[k].clone()), "seek across boundary {i} (index {with_index})");
            // Step to the boundary, then across it both ways.
            for _ in k..i {
                c.next().unwrap();
            }
            let r = c.prev().unwrap();
            assert_eq!(at(r, &set_files), Some(all[i - 1].clone()), "prev across boundary {i}");
            let r = c.next().unwrap();
            assert_eq!(at(r, &set_files), Some(all[i].clone()), "next across boundary {i}");
            let r = c.next().unwrap();
            assert_eq!(at(r, &set_files), all.get(i + 1).cloned());
        }
        // A sample of times between packets.
        for j in (0..all.len() - 1).step_by(97) {
            let t = all[j].2 + 1;
            let want = all.iter().find(|p| p.2 >= t).cloned();
            let r = c.seek(t).unwrap();
            assert_eq!(at(r, &set_files), want, "seek {t}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn capture_without_privilege_says_what_it_needs() {
    if !nix::unistd::geteuid().is_root() {
        // Already unprivileged: the real message is the one to check.
        let out = util::run(&["capture", "-i", "lo", "-w", util::tempdir("capture-noperm").to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(77), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("CAP_NET_RAW"));
        return;
    }
    // As root, drop to nobody without capabilities (setpriv, util-linux).
    let dir = std::env::temp_dir().join(format!("tcpscope-noperm-{}", std::process::id()));
    let out = match Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"])
        .arg(env!("CARGO_BIN_EXE_tcpscope"))
        .args(["capture", "-i", "lo", "-w"])
        .arg(&dir)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skipping: setpriv unavailable ({e})");
            return;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("setpriv:") || stderr.contains("Permission denied") && !stderr.contains("tcpscope") {
        eprintln!("skipping: cannot run the binary as nobody here: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(77), "{stderr}");
    assert!(stderr.contains("needs root or the CAP_NET_RAW capability"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_file_left_by_a_killed_capture_is_indexed_when_the_capture_restarts() {
    let Some(ns) = Netns::new("kill") else { return };
    let dir = util::tempdir("capture-kill");
    let mut cap = Capture::start(&ns, &dir, &["--file-size", "1MiB"]);
    transfer(&ns, 500, 100);
    // The capture hands what it wrote to the kernel once a second.
    std::thread::sleep(Duration::from_millis(1500));
    cap.child.kill().unwrap();
    cap.child.wait().unwrap();
    let files = ring_files(&dir);
    assert_eq!(files.len(), 1);
    let f = &files[0];
    assert!(!Index::sidecar(f).exists(), "killed: no index written");
    // What a reader finds in it, up to a record cut by the kill if any.
    let mut r = CaptureReader::open(f).unwrap();
    let mut n = 0u64;
    loop {
        match r.next_record() {
            Ok(Some(_)) => n += 1,
            Ok(None) | Err(tcpscope_core::capture::CaptureError::Truncated { .. }) => break,
            Err(e) => panic!("{}: {e}", f.display()),
        }
    }
    assert!(n > 1000, "flushed within a second: {n} packets on disk");
    let again = Capture::start(&ns, &dir, &[]);
    let (status, log) = again.stop();
    assert!(status.success());
    let name = f.display().to_string();
    assert!(log.iter().any(|l| l.contains(&format!("indexed {name} left by an earlier run ({n} packets)"))), "{log:?}");
    let size = std::fs::metadata(f).unwrap().len();
    let idx = Index::load(f, size).unwrap().expect("index written at restart");
    assert_eq!(idx.packets, n);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn rotate_every_closes_an_idle_file_on_time() {
    let Some(ns) = Netns::new("time") else { return };
    let dir = util::tempdir("capture-time");
    let cap = Capture::start(&ns, &dir, &["--rotate-every", "300ms"]);
    transfer(&ns, 50, 100);
    // No traffic now: the file must still be closed and indexed about 300 ms after it opened.
    let t = Instant::now();
    while !cap.lines().iter().any(|l| l.contains("closed ")) {
        assert!(t.elapsed() < Duration::from_secs(3), "not closed on time: {:?}", cap.lines());
        std::thread::sleep(Duration::from_millis(20));
    }
    let files = ring_files(&dir);
    assert_eq!(files.len(), 1);
    check_indexes(&files);
    let (status, log) = cap.stop();
    assert!(status.success());
    // Idle: no new, empty file was started.
    assert_eq!(log.iter().filter(|l| l.contains("opened ")).count(), 1, "{log:?}");
    let _ = std::fs::remove_dir_all(dir);
}

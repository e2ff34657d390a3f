//! A small harness: run the real `tcpscope` binary, find the shared traces, write temp files.

#![allow(dead_code)]

pub mod netns;
pub mod record;
pub mod thesis;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn tcpscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tcpscope"))
}

/// Runs tcpscope with `args`, returns the output.
pub fn run(args: &[&str]) -> Output {
    tcpscope().args(args).stdin(Stdio::null()).output().expect("run tcpscope")
}

/// Runs `tcpscope <args> --json` and parses stdout.
pub fn json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    let out = run(&a);
    assert!(out.status.success(), "tcpscope {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

/// `../shared/traces/public` beside the repository, if present.
pub fn public_traces() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/public");
    p.is_dir().then_some(p)
}

/// Every capture file in the public trace folder (empty if absent).
pub fn public_files() -> Vec<PathBuf> {
    let Some(dir) = public_traces() else {
        eprintln!("skipping: ../shared/traces/public is absent");
        return vec![];
    };
    capture_files(&dir)
}

/// The .pcap and .pcapng files of a directory, in name order.
pub fn capture_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap" || e == "pcapng"))
        .collect();
    v.sort();
    v
}

/// The repository's own recorded traces.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// A fresh temporary directory for one test, removed with everything in it when the value is
/// dropped (a test run left ~60 directories in the temporary directory before).
pub fn tempdir(name: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("tcpscope-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

/// File `file` in a fresh temporary directory `dir` ([`tempdir`]), removed with it when dropped.
pub fn tempfile(dir: &str, file: &str) -> TempPath {
    let dir = tempdir(dir);
    TempPath { path: dir.join(file), _dir: dir }
}

/// A path in a [`TempDir`] it keeps; used as the path.
#[derive(Debug)]
pub struct TempPath {
    path: PathBuf,
    _dir: TempDir,
}

impl std::ops::Deref for TempPath {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl AsRef<Path> for TempPath {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// A directory [`tempdir`] made; used as its path.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl TempDir {
    /// Its path, the directory left for the caller to remove.
    pub fn keep(self) -> PathBuf {
        let me = std::mem::ManuallyDrop::new(self);
        me.0.clone()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether an external tool is installed. In CI (`CI` set) a missing oracle is a failure, not a
/// skip: `make test` installs them, so their absence means the oracle tests did not run.
pub fn have(tool: &str) -> bool {
    // `tcpdump -v` alone starts capturing (and never ends): it is asked its version.
    let flag = if tool == "tcpdump" { "--version" } else { "-v" };
    let found =
        Command::new(tool).arg(flag).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    assert!(found || std::env::var_os("CI").is_none(), "{tool} is missing in CI: `make test` should have installed it");
    found
}

/// Sum of a direction field over all connections and both directions.
pub fn total(doc: &serde_json::Value, field: &str) -> u64 {
    doc["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["a2b"][field].as_u64().unwrap_or(0) + c["b2a"][field].as_u64().unwrap_or(0))
        .sum()
}

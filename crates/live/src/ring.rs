//! The ring directory: which files belong to it, what to call the next one, and which to delete.
//!
//! Only files whose names this module gives (`tcpscope-YYYYMMDDTHHMMSS.fffffffffZ.pcap` or
//! `.pcapng`, in UTC, so that name order is time order) and their index sidecars are ever
//! deleted: pointing `-w` at a directory holding other files never loses them.

use std::io;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use tcpscope_core::capture::{Format, Index};

const PREFIX: &str = "tcpscope-";

/// The file name for a ring file whose first packet is at `ts_ns`.
pub fn file_name(ts_ns: u64, format: Format) -> String {
    let ext = match format {
        Format::Pcap => "pcap",
        Format::Pcapng => "pcapng",
    };
    let stamp = Timestamp::from_nanosecond(ts_ns as i128)
        .map(|t| t.strftime("%Y%m%dT%H%M%S").to_string())
        .unwrap_or_else(|_| format!("{}", ts_ns / 1_000_000_000));
    format!("{PREFIX}{stamp}.{:09}Z.{ext}", ts_ns % 1_000_000_000)
}

/// Whether `name` is a ring file name (not a sidecar).
pub fn is_ring_file(name: &str) -> bool {
    name.starts_with(PREFIX) && (name.ends_with(".pcap") || name.ends_with(".pcapng"))
}

/// A ring file on disk.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The capture file.
    pub path: PathBuf,
    /// Its size plus its sidecar's.
    pub bytes: u64,
}

/// The ring's files, oldest first.
pub fn list(dir: &Path) -> io::Result<Vec<Entry>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !is_ring_file(&name) {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        let side = std::fs::metadata(Index::sidecar(&e.path())).map(|m| m.len()).unwrap_or(0);
        v.push(Entry { path: e.path(), bytes: meta.len() + side });
    }
    v.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(v)
}

/// Deletes a ring file and its sidecar.
pub fn delete(path: &Path) -> io::Result<()> {
    std::fs::remove_file(path)?;
    match std::fs::remove_file(Index::sidecar(path)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Free space of the file system holding `dir`, in percent of its size (as `df` counts space
/// available to unprivileged users).
pub fn free_percent(dir: &Path) -> io::Result<f64> {
    let st = nix::sys::statvfs::statvfs(dir).map_err(io::Error::from)?;
    let total = st.blocks() as f64;
    if total == 0.0 {
        return Ok(100.0);
    }
    Ok(st.blocks_available() as f64 * 100.0 / total)
}

/// The budget of a ring.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Largest total size of the ring's files and indexes, including the file being written.
    pub keep_bytes: Option<u64>,
    /// Smallest free space of the file system, in percent.
    pub min_free_pct: Option<f64>,
}

/// Deletes the oldest closed files until the ring is within budget (`current` is the file
/// being written, never deleted, with its size so far). Returns the files deleted, oldest
/// first, and whether the budget could not be met even so.
pub fn enforce(dir: &Path, budget: Budget, current: Option<(&Path, u64)>) -> io::Result<(Vec<PathBuf>, bool)> {
    let mut files = list(dir)?;
    let cur_path = current.map(|(p, _)| p.to_path_buf());
    files.retain(|e| Some(&e.path) != cur_path.as_ref());
    let mut total: u64 = files.iter().map(|e| e.bytes).sum::<u64>() + current.map_or(0, |(_, b)| b);
    let mut deleted = Vec::new();
    let mut oldest = files.into_iter();
    let over = |total: u64| -> io::Result<bool> {
        let by_size = budget.keep_bytes.is_some_and(|k| total > k);
        let by_free = match budget.min_free_pct {
            Some(p) => free_percent(dir)? < p,
            None => false,
        };
        Ok(by_size || by_free)
    };
    while over(total)? {
        let Some(e) = oldest.next() else { return Ok((deleted, true)) };
        delete(&e.path)?;
        total -= e.bytes;
        deleted.push(e.path);
    }
    Ok((deleted, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_in_time_order_and_are_recognised() {
        let a = file_name(1_795_302_498_123_456_789, Format::Pcap);
        // `date -u -d @1795302498` says Sat Nov 21 23:08:18 UTC 2026.
        assert_eq!(a, "tcpscope-20261121T230818.123456789Z.pcap");
        let b = file_name(1_795_302_499_000_000_000, Format::Pcapng);
        assert!(a < b);
        assert!(is_ring_file(&a) && is_ring_file(&b));
        assert!(!is_ring_file(&format!("{a}.idx.json")));
        assert!(!is_ring_file("important.pcap"));
    }

    #[test]
    fn enforce_deletes_the_oldest_first_and_never_the_current_file() {
        let dir = std::env::temp_dir().join(format!("tcpscope-ring-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let names: Vec<String> =
            (0..5).map(|i| file_name(1_795_302_498_000_000_000 + i * 1_000_000_000, Format::Pcap)).collect();
        for n in &names {
            std::fs::write(dir.join(n), vec![0u8; 1000]).unwrap();
            std::fs::write(Index::sidecar(&dir.join(n)), vec![0u8; 100]).unwrap();
        }
        std::fs::write(dir.join("keep-me.pcap"), vec![0u8; 5000]).unwrap();
        let current = dir.join(&names[4]);
        // 5 × 1100 bytes; a budget of 2500 keeps the current file and the newest closed one.
        let budget = Budget { keep_bytes: Some(2500), min_free_pct: None };
        let (deleted, short) = enforce(&dir, budget, Some((&current, 1100))).unwrap();
        assert!(!short);
        let want: Vec<PathBuf> = names[..3].iter().map(|n| dir.join(n)).collect();
        assert_eq!(deleted, want);
        let left: Vec<PathBuf> = list(&dir).unwrap().into_iter().map(|e| e.path).collect();
        assert_eq!(left, vec![dir.join(&names[3]), current.clone()]);
        assert!(dir.join("keep-me.pcap").exists(), "files not of the ring are never deleted");
        assert!(!Index::sidecar(&dir.join(&names[0])).exists(), "sidecars go with their files");
        // A budget the current file alone exceeds: everything else goes, and it says so.
        let (deleted, short) =
            enforce(&dir, Budget { keep_bytes: Some(10), min_free_pct: None }, Some((&current, 1100))).unwrap();
        assert_eq!(deleted, vec![dir.join(&names[3])]);
        assert!(short);
        assert!(current.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

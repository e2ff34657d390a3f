//! Reliable collection (seed 002's fail-over): a recorder ships its recording to a collector over
//! TCP; nothing is lost or duplicated across restarts of either.
//!
//! The recorder's own `.tsm` file is the spill: every frame is written there first, and the
//! shipper sends the file's complete frames, in order. The sequence number of a frame is its
//! byte offset in the recorder's file (the file is only ever appended to; a restarted recorder
//! appends a new session to it), so the collector's copy is always a byte-identical prefix of the
//! recorder's file:
//!
//! ```text
//! recorder → collector   "TSMSHIP1 <stream id, 16 hex digits>\n"
//! collector → recorder   "<offset>\n"      bytes of that stream it has stored (its file's length)
//! recorder → collector   the file's bytes from <offset>, whole frames only, as they are written
//! ```
//!
//! The collector checks each frame's CRC and appends it to `DIR/<stream>.tsm` only when it is
//! whole, so its file ends on a frame boundary and its length is the offset to resume from; after
//! a crash it first cuts a torn tail. A frame the collector received but did not store before
//! dying is sent again on reconnection; one it stored is never sent again. Hence exactly once.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::tsm::{MAGIC, valid_len};

const HELLO: &str = "TSMSHIP1";

/// `tcp://HOST:PORT` or `HOST:PORT` as a socket address string.
pub fn parse_endpoint(s: &str) -> io::Result<String> {
    let a = s.strip_prefix("tcp://").unwrap_or(s);
    a.to_socket_addrs()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("`{s}`: {e} (expected tcp://HOST:PORT)")))?;
    Ok(a.to_string())
}

/// State of a shipper, shared with the recorder.
#[derive(Default)]
pub struct ShipState {
    /// Bytes of the file the collector has confirmed (its offset at the last handshake) or
    /// been sent since.
    pub sent: std::sync::atomic::AtomicU64,
    pub connected: AtomicBool,
    /// Reconnections made.
    pub connects: std::sync::atomic::AtomicU64,
}

/// Ships `path` (stream `stream`) to `to` until `done` is set and everything written was sent,
/// or `done` is set and `grace` passed without reaching the collector. Runs on its own thread.
pub fn ship(path: PathBuf, stream: String, to: String, done: Arc<AtomicBool>, grace: Duration, state: Arc<ShipState>) {
    let mut done_at: Option<Instant> = None;
    loop {
        if done.load(Ordering::Relaxed) {
            let t = *done_at.get_or_insert_with(Instant::now);
            if t.elapsed() > grace {
                return;
            }
        }
        match session(&path, &stream, &to, &done, &state) {
            Ok(true) => return,
            Ok(false) | Err(_) => {
                state.connected.store(false, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// One connection: handshake, then send frames as they appear. `Ok(true)`: all sent and done.
fn session(path: &Path, stream: &str, to: &str, done: &AtomicBool, state: &ShipState) -> io::Result<bool> {
    let addr = to.to_socket_addrs()?.next().ok_or_else(|| io::Error::other("no address"))?;
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    conn.set_nodelay(true)?;
    conn.write_all(format!("{HELLO} {stream}\n").as_bytes())?;
    let mut line = String::new();
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    BufReader::new(conn.try_clone()?).read_line(&mut line)?;
    let mut pos: u64 = line.trim().parse().map_err(|_| io::Error::other(format!("bad offset `{}`", line.trim())))?;
    state.connects.fetch_add(1, Ordering::Relaxed);
    state.connected.store(true, Ordering::Relaxed);
    state.sent.store(pos, Ordering::Relaxed);
    let mut file = File::open(path)?;
    let mut buf = Vec::new();
    loop {
        // Whether the recorder had finished before this look at the file: then once everything
        // is sent, nothing more will come.
        let finished = done.load(Ordering::Relaxed);
        let len = file.metadata()?.len();
        let end = whole_frames_end(&mut file, pos, len)?;
        if end > pos {
            buf.resize((end - pos) as usize, 0);
            file.seek(SeekFrom::Start(pos))?;
            file.read_exact(&mut buf)?;
            conn.write_all(&buf)?;
            pos = end;
            state.sent.store(pos, Ordering::Relaxed);
        } else if finished {
            conn.shutdown(std::net::Shutdown::Write)?;
            // Wait for the collector to store and close, so that "sent" means "stored".
            let mut sink = [0u8; 16];
            let _ = conn.read(&mut sink);
            return Ok(true);
        } else {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The end of the last whole frame in `[pos, len)` (`pos` itself at 0 means the magic first).
fn whole_frames_end(file: &mut File, mut pos: u64, len: u64) -> io::Result<u64> {
    if pos == 0 {
        if len < MAGIC.len() as u64 {
            return Ok(0);
        }
        pos = MAGIC.len() as u64;
    }
    let mut h = [0u8; 4];
    while pos + 9 <= len {
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut h)?;
        let next = pos + 9 + u64::from(u32::from_le_bytes(h));
        if next > len {
            break;
        }
        pos = next;
    }
    Ok(pos)
}

/// A collector: accepts shippers on `listen` and stores each stream in `dir/<stream>.tsm`,
/// until `stop` is set. Connections are served on threads of their own.
pub fn collect(
    listen: &str,
    dir: &Path,
    stop: &AtomicBool,
    log: impl Fn(String) + Send + Sync + 'static,
) -> io::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    let l = TcpListener::bind(listen).map_err(|e| io::Error::new(e.kind(), format!("{listen}: {e}")))?;
    l.set_nonblocking(true)?;
    let log = Arc::new(log);
    let locks: Arc<Mutex<HashMap<String, Arc<Mutex<()>>>>> = Arc::default();
    log(format!("collecting on {} into {}", l.local_addr()?, dir.display()));
    while !stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok((c, peer)) => {
                let (dir, log, locks) = (dir.to_path_buf(), Arc::clone(&log), Arc::clone(&locks));
                std::thread::spawn(move || {
                    if let Err(e) = serve(c, &dir, &locks) {
                        log(format!("{peer}: {e}"));
                    }
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn serve(c: TcpStream, dir: &Path, locks: &Mutex<HashMap<String, Arc<Mutex<()>>>>) -> io::Result<()> {
    c.set_nonblocking(false)?;
    c.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut r = BufReader::new(c.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let stream = line
        .trim()
        .strip_prefix(HELLO)
        .map(str::trim)
        .filter(|s| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| io::Error::other(format!("bad hello `{}`", line.trim())))?
        .to_ascii_lowercase();
    let lock =
        Arc::clone(locks.lock().map_err(|_| io::Error::other("lock poisoned"))?.entry(stream.clone()).or_default());
    let _held = lock.lock().map_err(|_| io::Error::other("lock poisoned"))?;
    let path = dir.join(format!("{stream}.tsm"));
    // Resume at the end of the last whole frame; a torn tail (a crash mid-write) is cut.
    let have = if path.exists() { valid_len(&path)? } else { 0 };
    let mut out = OpenOptions::new().create(true).write(true).truncate(false).open(&path)?;
    out.set_len(have)?;
    out.seek(SeekFrom::End(0))?;
    (&c).write_all(format!("{have}\n").as_bytes())?;
    if have == 0 {
        let mut m = [0u8; 8];
        r.read_exact(&mut m)?;
        if m != MAGIC {
            return Err(io::Error::other("stream does not start with the recording magic"));
        }
        out.write_all(&m)?;
    }
    let mut frame = Vec::new();
    loop {
        let mut h = [0u8; 5];
        match r.read_exact(&mut h) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        frame.clear();
        frame.extend_from_slice(&h);
        frame.resize(5 + len + 4, 0);
        r.read_exact(&mut frame[5..])?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&frame[4..5 + len]);
        if crc.finalize().to_le_bytes() != frame[5 + len..] {
            return Err(io::Error::other("frame fails its CRC"));
        }
        out.write_all(&frame)?;
    }
    out.sync_data()?;
    Ok(())
}

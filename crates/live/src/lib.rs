//! tcpscope's live side: `tcpscope capture`, continuous capture into a ring of files (thesis,
//! appendix A: a collector that runs all the time, keeps the newest traffic and deletes the
//! oldest files when the disk fills).
//!
//! - Packets come from libpcap (the `pcap` crate), with a BPF filter and a snapshot length.
//! - [`writer::RingFile`] writes pcap or pcapng and builds the file's index as it goes; a file
//!   is closed at `--file-size` or `--rotate-every`, and its index written beside it.
//! - [`ring`] names files by their first packet's time and deletes the oldest closed files
//!   while the ring is over `--keep` or the disk has less than `--min-free`.
//! - SIGINT and SIGTERM (signal-hook) stop the loop between packets; the current file is then
//!   closed and indexed.
//!
//! Memory stays flat over weeks: one packet buffer, one write buffer, and the index of the
//! current file (one entry per 1024 packets).
//!
//! Reading the ring is the core library's job (`tcpscope_core::capture::TraceSet`), which does
//! not link libpcap.
#![deny(missing_docs)]

pub mod ring;
pub mod writer;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use std::os::fd::AsFd;

use bytesize::ByteSize;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use tcpscope_core::capture::index::CaptureCounters;
use tcpscope_core::capture::{Format, Index};

use ring::Budget;
use writer::RingFile;

/// Output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum FormatArg {
    /// Classic pcap (µs timestamps).
    Pcap,
    /// pcapng (one interface, µs timestamps).
    Pcapng,
}

/// Flags of `tcpscope capture`.
#[derive(clap::Args, Debug, Clone)]
pub struct CaptureArgs {
    /// Interface to capture on (e.g. eth0; `any` for all).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interface: String,
    /// BPF filter, as tcpdump takes it (e.g. 'tcp port 443').
    #[arg(short = 'f', long = "filter", value_name = "BPF")]
    pub filter: Option<String>,
    /// Directory of the ring (created if missing).
    #[arg(short = 'w', long = "dir", value_name = "DIR")]
    pub dir: PathBuf,
    /// Close a file and start the next once it reaches this size (e.g. 64MiB, 500KB).
    #[arg(long, value_name = "SIZE", default_value = "64MiB")]
    pub file_size: ByteSize,
    /// Also close a file once it is this old (e.g. 10m, 1h).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub rotate_every: Option<u64>,
    /// Delete the oldest files while the ring's files take more than this (e.g. 20GiB).
    #[arg(long, value_name = "SIZE")]
    pub keep: Option<ByteSize>,
    /// Delete the oldest files while the file system has less than this percentage free
    /// (default 10 when --keep is not given).
    #[arg(long, value_name = "PCT")]
    pub min_free: Option<f64>,
    /// Bytes kept of each packet: enough for the IP and TCP headers with options.
    #[arg(short = 's', long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u32).range(64..=262144))]
    pub snaplen: u32,
    /// File format.
    #[arg(long, value_enum, default_value = "pcap")]
    pub format: FormatArg,
    /// Do not put the interface into promiscuous mode.
    #[arg(short = 'p', long)]
    pub no_promisc: bool,
    /// Kernel capture buffer (larger means fewer drops in bursts).
    #[arg(long, value_name = "SIZE", default_value = "32MiB")]
    pub buffer: ByteSize,
    /// Packets per index block.
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub index_every: u64,
}

fn parse_duration(s: &str) -> Result<u64, String> {
    tcpscope_core::capture::time::parse_duration(s).map_err(|e| e.to_string())
}

/// Why the capture stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// Not allowed to capture.
    #[error(
        "capturing on {iface} needs root or the CAP_NET_RAW capability (for example \
         `setcap cap_net_raw,cap_net_admin=eip /usr/local/bin/tcpscope`, or \
         AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN in the systemd unit; see docs/capture.md). \
         libpcap said: {detail}"
    )]
    Permission {
        /// The interface.
        iface: String,
        /// libpcap's message.
        detail: String,
    },
    /// libpcap refused the interface, the filter or a setting.
    #[error("{what}: {detail}")]
    Pcap {
        /// What was being done.
        what: String,
        /// libpcap's message.
        detail: String,
    },
    /// Bad flag values.
    #[error("{0}")]
    Usage(String),
    /// A file or directory operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

impl LiveError {
    /// The process exit status for this error (77 is sysexits' EX_NOPERM).
    pub fn exit_code(&self) -> u8 {
        match self {
            LiveError::Permission { .. } => 77,
            LiveError::Usage(_) => 2,
            _ => 1,
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> LiveError + '_ {
    move |source| LiveError::Io { path: path.to_path_buf(), source }
}

/// Checked settings.
struct Config {
    dir: PathBuf,
    file_size: u64,
    rotate_every: Option<Duration>,
    budget: Budget,
    format: Format,
}

fn config(a: &CaptureArgs) -> Result<Config, LiveError> {
    let file_size = a.file_size.as_u64();
    if file_size < 4096 {
        return Err(LiveError::Usage(format!("--file-size {} is too small (at least 4KiB)", a.file_size)));
    }
    if let Some(k) = a.keep
        && k.as_u64() < 2 * file_size
    {
        return Err(LiveError::Usage(format!(
            "--keep {k} must be at least twice --file-size {} (the file being written plus one closed file)",
            a.file_size
        )));
    }
    if let Some(p) = a.min_free
        && !(0.0..100.0).contains(&p)
    {
        return Err(LiveError::Usage(format!("--min-free {p} must be a percentage in [0, 100)")));
    }
    if a.rotate_every == Some(0) {
        return Err(LiveError::Usage("--rotate-every must be longer than 0".into()));
    }
    let min_free_pct = a.min_free.or(if a.keep.is_none() { Some(10.0) } else { None });
    Ok(Config {
        dir: a.dir.clone(),
        file_size,
        rotate_every: a.rotate_every.map(Duration::from_nanos),
        budget: Budget { keep_bytes: a.keep.map(|k| k.as_u64()), min_free_pct },
        format: match a.format {
            FormatArg::Pcap => Format::Pcap,
            FormatArg::Pcapng => Format::Pcapng,
        },
    })
}

fn pcap_err(iface: &str, what: &str, e: pcap::Error) -> LiveError {
    let detail = e.to_string();
    let lower = detail.to_lowercase();
    if lower.contains("permission") || lower.contains("operation not permitted") {
        LiveError::Permission { iface: iface.to_string(), detail }
    } else {
        LiveError::Pcap { what: what.to_string(), detail }
    }
}

/// libpcap's counters, widened (they are 32-bit and wrap).
#[derive(Clone, Copy, Default)]
struct Counters {
    received: u64,
    dropped: u64,
    if_dropped: u64,
    last: (u32, u32, u32),
}

impl Counters {
    fn update(&mut self, s: pcap::Stat) {
        let (r, d, i) = self.last;
        self.received += s.received.wrapping_sub(r) as u64;
        self.dropped += s.dropped.wrapping_sub(d) as u64;
        self.if_dropped += s.if_dropped.wrapping_sub(i) as u64;
        self.last = (s.received, s.dropped, s.if_dropped);
    }

    fn since(&self, start: &Counters) -> CaptureCounters {
        CaptureCounters {
            received: self.received - start.received,
            dropped: self.dropped - start.dropped,
            if_dropped: self.if_dropped - start.if_dropped,
        }
    }
}

/// Logs one line on stderr (the journal, when run as a service).
macro_rules! log {
    ($($t:tt)*) => { eprintln!("tcpscope capture: {}", format_args!($($t)*)) };
}

fn remove_empty(path: &Path) {
    match ring::delete(path) {
        Ok(()) => log!("deleted {}: left by an earlier run without a packet", path.display()),
        Err(e) => log!("{}: {e}", path.display()),
    }
}

/// Indexes ring files left without an index (a previous run killed without notice).
fn index_leftovers(dir: &Path) {
    let Ok(files) = ring::list(dir) else { return };
    for e in files {
        let size = std::fs::metadata(&e.path).map(|m| m.len()).unwrap_or(0);
        if matches!(Index::load(&e.path, size), Ok(Some(_))) {
            continue;
        }
        match Index::build(
            &e.path,
            tcpscope_core::capture::index::EVERY_PKTS,
            tcpscope_core::capture::index::EVERY_BYTES,
        ) {
            // Killed before its first packet reached the disk: nothing to keep.
            Ok((idx, _)) if idx.packets == 0 => remove_empty(&e.path),
            Err(tcpscope_core::capture::CaptureError::Truncated { offset: 0, .. }) => remove_empty(&e.path),
            Ok((idx, _)) => match idx.save(&e.path) {
                Ok(()) => log!("indexed {} left by an earlier run ({} packets)", e.path.display(), idx.packets),
                Err(err) => log!("{}: cannot write index: {err}", e.path.display()),
            },
            Err(err) => log!("{}: cannot index: {err}", e.path.display()),
        }
    }
}

/// Captures until SIGINT or SIGTERM (or an error).
pub fn run(args: &CaptureArgs) -> Result<(), LiveError> {
    let cfg = config(args)?;
    std::fs::create_dir_all(&cfg.dir).map_err(io_err(&cfg.dir))?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(io_err(Path::new("signal handler")))?;
    }
    let iface = args.interface.as_str();
    let cap = pcap::Capture::from_device(iface)
        .map_err(|e| pcap_err(iface, &format!("interface {iface}"), e))?
        .snaplen(args.snaplen as i32)
        .promisc(!args.no_promisc)
        .buffer_size(args.buffer.as_u64().min(i32::MAX as u64) as i32)
        // Wake up at least every 100 ms without traffic, to see signals and rotate by time.
        .timeout(100)
        .open()
        .map_err(|e| pcap_err(iface, &format!("opening interface {iface}"), e))?;
    // Non-blocking, with our own poll: on Linux a blocking read may never return without
    // traffic (TPACKET_V3) and is restarted after a signal, so the stop flag would go unseen.
    let mut cap = cap.setnonblock().map_err(|e| pcap_err(iface, &format!("setting {iface} non-blocking"), e))?;
    if let Some(f) = &args.filter {
        cap.filter(f, true).map_err(|e| pcap_err(iface, &format!("filter {f:?}"), e))?;
    }
    let link_type = cap.get_datalink().0;
    index_leftovers(&cfg.dir);
    log!(
        "capturing on {iface} (link type {link_type}, snaplen {}) into {}, files of {}",
        args.snaplen,
        cfg.dir.display(),
        args.file_size
    );
    // Below the free-space floor from the start, the ring can keep nothing but the file being
    // written: say so now rather than let the user find an empty ring.
    if let Some(floor) = cfg.budget.min_free_pct
        && let Ok(free) = ring::free_percent(&cfg.dir)
        && free < floor
    {
        log!(
            "warning: {} has {free:.1} % free, under --min-free {floor}: each file will be deleted when the \
             next one opens (give --keep SIZE, or a lower --min-free)",
            cfg.dir.display()
        );
    }

    let mut counters = Counters::default();
    let mut file_start = Counters::default();
    let mut current: Option<RingFile> = None;
    let mut opened_at = Instant::now();
    let mut last_check = Instant::now();
    let mut reported_drops = 0u64;
    let mut total_pkts = 0u64;
    let mut files_closed = 0u64;
    let mut short_warned = false;

    let close = |f: RingFile, counters: &Counters, file_start: &Counters| -> Result<(), LiveError> {
        let path = f.path.clone();
        let c = counters.since(file_start);
        let idx = f.close(Some(c)).map_err(io_err(&path))?;
        log!(
            "closed {} ({} packets; kernel drops while it was written: {})",
            path.display(),
            idx.packets,
            c.dropped + c.if_dropped
        );
        Ok(())
    };

    // After a stop signal, the packets the kernel had already received are still written: with
    // TPACKET_V3 a partly filled block reaches us only when the kernel retires it, after the
    // 100 ms read timeout, so reading goes on until DRAIN has passed and nothing is buffered, or
    // a packet from after the signal shows the backlog is read.
    const DRAIN: Duration = Duration::from_millis(150);
    let mut stopping: Option<(Instant, u64)> = None;
    let result = loop {
        if stopping.is_none() && stop.load(Ordering::Relaxed) {
            let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            stopping = Some((Instant::now(), wall.as_nanos() as u64));
        }
        let drained = stopping.is_some_and(|(at, _)| at.elapsed() >= DRAIN);
        let mut packet_written = false;
        let mut opened_new = false;
        match cap.next_packet() {
            Ok(p) => {
                let ts_ns = p.header.ts.tv_sec as u64 * 1_000_000_000 + p.header.ts.tv_usec as u64 * 1000;
                if drained && stopping.is_some_and(|(_, at_ns)| ts_ns > at_ns) {
                    break Ok(());
                }
                if current.is_none() {
                    let path = cfg.dir.join(ring::file_name(ts_ns, cfg.format));
                    let f = RingFile::create(&path, cfg.format, link_type, args.snaplen, args.index_every, ts_ns)
                        .map_err(io_err(&path))?;
                    log!("opened {}", path.display());
                    opened_new = true;
                    opened_at = Instant::now();
                    current = Some(f);
                }
                // Just created above if it was missing.
                let f = current.as_mut().expect("current file");
                if let Err(e) = f.write(ts_ns, p.data, p.header.len) {
                    break Err(LiveError::Io { path: f.path.clone(), source: e });
                }
                total_pkts += 1;
                packet_written = true;
            }
            Err(pcap::Error::TimeoutExpired) => {
                if drained {
                    break Ok(());
                }
                // Nothing buffered: wait for the next block of packets, a signal, or 100 ms.
                let mut fds = [PollFd::new(cap.as_fd(), PollFlags::POLLIN)];
                let _ = poll(&mut fds, PollTimeout::from(100u8));
            }
            Err(pcap::Error::NoMorePackets) => break Ok(()),
            Err(e) => break Err(pcap_err(iface, &format!("reading from {iface}"), e)),
        }
        if opened_new {
            // Counters at the file's first packet: its index gets what changed while it was written.
            if let Ok(s) = cap.stats() {
                counters.update(s);
            }
            file_start = counters;
        }
        let due_size = current.as_ref().is_some_and(|f| f.bytes >= cfg.file_size);
        let due_time = current.is_some() && cfg.rotate_every.is_some_and(|d| opened_at.elapsed() >= d);
        if due_size || due_time {
            if let Ok(s) = cap.stats() {
                counters.update(s);
            }
            if let Some(f) = current.take()
                && let Err(e) = close(f, &counters, &file_start)
            {
                break Err(e);
            }
            files_closed += 1;
        }
        // Budget and drops: after each rotation, and once a second.
        if due_size
            || due_time
            || (!packet_written || total_pkts.is_multiple_of(256)) && last_check.elapsed() >= Duration::from_secs(1)
        {
            last_check = Instant::now();
            if let Ok(s) = cap.stats() {
                counters.update(s);
            }
            if let Some(f) = current.as_mut()
                && let Err(e) = f.flush()
            {
                break Err(LiveError::Io { path: f.path.clone(), source: e });
            }
            let dropped = counters.dropped + counters.if_dropped;
            if dropped > reported_drops {
                log!(
                    "{} packets dropped by the kernel or interface so far ({} since last report)",
                    dropped,
                    dropped - reported_drops
                );
                reported_drops = dropped;
            }
            let cur = current.as_ref().map(|f| (f.path.as_path(), f.bytes));
            match ring::enforce(&cfg.dir, cfg.budget, cur) {
                Ok((deleted, short)) => {
                    for d in deleted {
                        log!("deleted {} (oldest, over budget)", d.display());
                    }
                    if short && !short_warned {
                        log!("over budget with nothing left to delete but the file being written");
                    }
                    short_warned = short;
                }
                Err(e) => log!("{}: cannot apply the budget: {e}", cfg.dir.display()),
            }
        }
    };
    // Stop: close and index the current file whatever happened.
    if let Ok(s) = cap.stats() {
        counters.update(s);
    }
    if let Some(f) = current.take() {
        close(f, &counters, &file_start)?;
        files_closed += 1;
    }
    // The last index added a few bytes: leave the ring within its budget.
    if let Ok((deleted, _)) = ring::enforce(&cfg.dir, cfg.budget, None) {
        for d in deleted {
            log!("deleted {} (oldest, over budget)", d.display());
        }
    }
    log!(
        "stopped: {total_pkts} packets in {files_closed} files; libpcap received {}, dropped {} (buffer full) and {} (interface)",
        counters.received,
        counters.dropped,
        counters.if_dropped
    );
    result
}

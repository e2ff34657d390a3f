//! `tcpscope ttcp`: a TCP throughput test compatible with the classic `ttcp` (Muuss and
//! Slattery 1984, the SGI 1989–1991 revision that most copies descend from).
//!
//! Compatibility, learned from the public C source and written anew here:
//!
//! - **Flags**: `-t`/`-r`, `-l LEN` (buffer length, default 8192), `-n NUM` (buffers to send,
//!   default 2048), `-p PORT` (default 5001), `-b BUF` (SO_SNDBUF on `-t`, SO_RCVBUF on `-r`),
//!   `-D` (TCP_NODELAY), `-s` (source a pattern / sink the data; without it `-t` sends standard
//!   input and `-r` writes what it receives to standard output), `-v`, `-A`/`-O` (accepted and
//!   printed; they place ttcp's buffer in memory and change nothing on the wire), `-f` (rate
//!   unit: k K m M g G). `-u` (UDP) is not supported and is refused with a message.
//! - **Bytes on the wire**: with `-s` every buffer of `-l` bytes holds ttcp's pattern, the
//!   printable ASCII characters from `' '` (0x20) to `'~'` (0x7e) over and over, restarting at
//!   `' '` at the start of each buffer ([`pattern`]); one `write` per buffer.
//! - **Output**: ttcp's lines, in its formats (`ttcp-t: buflen=8192, nbuf=2048, align=16384/0,
//!   port=5001  tcp  -> host`, `... bytes in S real seconds = X KB/sec +++`, `... I/O calls,
//!   msec/call = ..., calls/sec = ...`, and the `user sys real` resource line). They go to
//!   standard output, except when standard output carries the received data (`-r` without
//!   `-s`): then to standard error, as the BSD ports of ttcp do.
//!
//! Additions: `--json` (one JSON object, [`Report`]), `--cc NAME` (TCP_CONGESTION), `--time
//! SECONDS` (`-t` sends for that long instead of `-n` buffers), `--quickack` (`-r` acknowledges
//! every segment at once), `--capture FILE` (libpcap, as `tcpscope capture` opens it: the
//! test's packets on all interfaces, headers only), `--tcp-info FILE` (the kernel's tcp_info of
//! the test's socket every 10 ms, by the monitor's recorder, [`crate::tcpinfo`]).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};

/// Flags of `tcpscope ttcp`, as ttcp spells them (`-l8192` and `-l 8192` both work).
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Classic usage: `tcpscope ttcp -r -s` on the receiver, then \
`tcpscope ttcp -t -s HOST` on the transmitter. -u (UDP) is not supported.")]
pub struct TtcpArgs {
    /// Transmit (connect to HOST and send).
    #[arg(short = 't', conflicts_with = "receive", required_unless_present = "receive")]
    pub transmit: bool,
    /// Receive (listen on -p PORT, accept one connection, read until it closes).
    #[arg(short = 'r')]
    pub receive: bool,
    /// Length of the buffers read from or written to the network.
    #[arg(short = 'l', value_name = "LEN", default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..))]
    pub buflen: u32,
    /// Number of buffers written to the network (-t -s).
    #[arg(short = 'n', value_name = "NUM", default_value_t = 2048)]
    pub nbuf: u64,
    /// Port to send to or listen at.
    #[arg(short = 'p', value_name = "PORT", default_value_t = 5001)]
    pub port: u16,
    /// Socket buffer size: SO_SNDBUF on -t, SO_RCVBUF on -r.
    #[arg(short = 'b', value_name = "BUF", value_parser = clap::value_parser!(u32).range(1..))]
    pub sockbufsize: Option<u32>,
    /// Don't buffer TCP writes (sets TCP_NODELAY: Nagle's algorithm off).
    #[arg(short = 'D')]
    pub nodelay: bool,
    /// -t: source a pattern to the network; -r: sink (discard) the data. Without -s, -t sends
    /// standard input and -r writes to standard output.
    #[arg(short = 's')]
    pub sink: bool,
    /// Verbose: the CPU-seconds line too.
    #[arg(short = 'v')]
    pub verbose: bool,
    /// UDP: not supported (refused with a message).
    #[arg(short = 'u')]
    pub udp: bool,
    /// Align the start of buffers to this modulus (printed; no effect on the wire).
    #[arg(short = 'A', value_name = "ALIGN", default_value_t = 16384)]
    pub align: u32,
    /// Start buffers at this offset from the modulus (printed; no effect on the wire).
    #[arg(short = 'O', value_name = "OFFSET", default_value_t = 0)]
    pub offset: u32,
    /// Rate unit: k, K = kilo{bit,byte}; m, M = mega; g, G = giga (powers of 1024, as ttcp).
    #[arg(short = 'f', value_name = "X", default_value = "K", value_parser = parse_format)]
    pub format: char,
    /// Print one JSON object (the fields of ttcp's lines, with units) instead of ttcp's lines.
    #[arg(long)]
    pub json: bool,
    /// Congestion control algorithm of the socket (TCP_CONGESTION), e.g. reno, cubic, bbr.
    #[arg(long, value_name = "NAME")]
    pub cc: Option<String>,
    /// -t: send for this many seconds instead of -n buffers.
    #[arg(long, value_name = "SECONDS")]
    pub time: Option<f64>,
    /// -r: acknowledge every segment at once (TCP_QUICKACK after each read) instead of
    /// delaying ACKs.
    #[arg(long)]
    pub quickack: bool,
    /// Capture the test's packets (headers, 128 bytes) into a pcap file, with libpcap on all
    /// interfaces (needs root or CAP_NET_RAW).
    #[arg(long, value_name = "FILE")]
    pub capture: Option<std::path::PathBuf>,
    /// Sample the kernel's tcp_info of the test's socket every 10 ms into a recording, as
    /// `tcpscope monitor -w` does (read it with `tcpscope stats FILE`; docs/monitor.md).
    #[arg(long, value_name = "FILE")]
    pub tcp_info: Option<std::path::PathBuf>,
    /// Host to send to (-t).
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
}

fn parse_format(s: &str) -> Result<char, String> {
    match s {
        "k" | "K" | "m" | "M" | "g" | "G" => Ok(s.chars().next().unwrap_or('K')),
        _ => Err(format!("unknown rate unit `{s}` (k, K, m, M, g or G)")),
    }
}

/// Where the data comes from (`-t`) or goes (`-r`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Data {
    /// `-s`: ttcp's pattern is sent; received data is discarded.
    Pattern,
    /// Standard input is sent; received data goes to standard output.
    Stdio,
}

/// What one ttcp end does; [`TtcpArgs`] checked, or built by the lab.
#[derive(Debug, Clone)]
pub struct Config {
    /// Transmitter (`-t`) or receiver (`-r`).
    pub transmit: bool,
    /// `-l`.
    pub buflen: usize,
    /// `-n`.
    pub nbuf: u64,
    /// `-p`.
    pub port: u16,
    /// `-b`.
    pub sockbufsize: Option<u32>,
    /// `-D`.
    pub nodelay: bool,
    /// `-s` or not.
    pub data: Data,
    /// `-A`, `-O` (printed only).
    pub align: (u32, u32),
    /// `--cc`.
    pub cc: Option<String>,
    /// `--time`: sending stops after this long (transmitter).
    pub time: Option<Duration>,
    /// No single read or write blocks longer than this (the lab's guard against a dead path);
    /// ttcp itself has none.
    pub io_timeout: Option<Duration>,
    /// Host to connect to (transmitter).
    pub host: Option<String>,
    /// Receiver: TCP_QUICKACK after every read (no delayed ACKs).
    pub quickack: bool,
    /// Address to listen on (receiver); ttcp listens on all.
    pub bind: std::net::IpAddr,
}

impl Config {
    /// Checks the flags.
    pub fn from_args(a: &TtcpArgs) -> Result<Config, String> {
        if a.udp {
            return Err("-u (UDP) is not supported by tcpscope ttcp; only TCP".into());
        }
        if a.transmit && a.host.is_none() {
            return Err("-t needs the HOST to send to".into());
        }
        if a.receive && a.host.is_some() {
            return Err("-r takes no HOST".into());
        }
        let time = match a.time {
            None => None,
            Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
            Some(t) => return Err(format!("--time must be a positive number of seconds, not {t}")),
        };
        if time.is_some() && !a.transmit {
            return Err("--time applies to -t (the receiver reads until the transmitter closes)".into());
        }
        if a.quickack && a.transmit {
            return Err("--quickack applies to -r (the receiver's acknowledgments)".into());
        }
        Ok(Config {
            transmit: a.transmit,
            buflen: a.buflen as usize,
            nbuf: a.nbuf,
            port: a.port,
            sockbufsize: a.sockbufsize,
            nodelay: a.nodelay,
            data: if a.sink { Data::Pattern } else { Data::Stdio },
            align: (a.align, a.offset),
            cc: a.cc.clone(),
            time,
            io_timeout: None,
            host: a.host.clone(),
            quickack: a.quickack,
            bind: std::net::Ipv4Addr::UNSPECIFIED.into(),
        })
    }

    fn tag(&self) -> &'static str {
        if self.transmit { "ttcp-t" } else { "ttcp-r" }
    }
}

/// Fills `buf` with ttcp's source pattern: the printable ASCII characters 0x20..=0x7e in
/// order, repeating. (ttcp's `pattern()` steps a `char` past every value whose low 7 bits are
/// not printable, so after `'~'` it comes back to `' '`.)
pub fn pattern(buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = b' ' + (i % 95) as u8;
    }
}

/// CPU and other resource use over the timed part, from getrusage(2) of the thread.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Usage {
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Largest resident set (KiB, of the process).
    pub maxrss_kib: i64,
    /// Major page faults.
    pub majflt: i64,
    /// Minor page faults.
    pub minflt: i64,
    /// Voluntary context switches.
    pub nvcsw: i64,
    /// Involuntary context switches.
    pub nivcsw: i64,
}

/// What a ttcp run did: the numbers of ttcp's lines, and what the socket was set to.
/// `--json` prints it; the lab keeps it in each run's `ttcp-t.json` / `ttcp-r.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `"transmit"` or `"receive"`.
    pub role: &'static str,
    /// `-l`.
    pub buflen: usize,
    /// `-n`.
    pub nbuf: u64,
    /// `-p`.
    pub port: u16,
    /// `-b` as asked (`null`: kernel default).
    pub sockbufsize: Option<u32>,
    /// SO_SNDBUF (`-t`) or SO_RCVBUF (`-r`) as the kernel set it (Linux doubles the request).
    pub sockbuf_actual: usize,
    /// `-D`.
    pub nodelay: bool,
    /// Data source or sink.
    pub data: Data,
    /// Congestion control of the socket (TCP_CONGESTION as read back).
    pub cc: String,
    /// The peer (`ip:port`).
    pub peer: String,
    /// Bytes written to (`-t`) or read from (`-r`) the network.
    pub bytes: u64,
    /// Seconds from connect/accept to the end of the transfer (ttcp's "real seconds").
    pub real_s: f64,
    /// read/write system calls on the socket.
    pub calls: u64,
    /// Resource use.
    pub usage: Usage,
    /// Wall-clock time of the start of the transfer, ns since the Unix epoch.
    pub start_unix_ns: u128,
}

impl Report {
    /// A run's report: `role`, the configuration, the socket as set up (buffer, cc, peer, as
    /// [`settings`] reads them), what was moved (bytes, calls) and the timer's reading.
    fn of(
        role: &'static str,
        cfg: &Config,
        (sockbuf_actual, cc, peer): (usize, String, String),
        (bytes, calls): (u64, u64),
        (real_s, usage, start_unix_ns): (f64, Usage, u128),
    ) -> Report {
        Report {
            role,
            buflen: cfg.buflen,
            nbuf: cfg.nbuf,
            port: cfg.port,
            sockbufsize: cfg.sockbufsize,
            sockbuf_actual,
            nodelay: cfg.nodelay,
            data: cfg.data,
            cc,
            peer,
            bytes,
            real_s,
            calls,
            usage,
            start_unix_ns,
        }
    }

    /// Bytes per second over the real seconds (ttcp floors the time at 1 ms).
    pub fn bytes_per_s(&self) -> f64 {
        self.bytes as f64 / self.real_s.max(0.001)
    }
}

/// Errors of a ttcp run: what failed, like ttcp's `ttcp-t: connect: Connection refused`.
#[derive(Debug)]
pub struct Error {
    /// The step (`socket`, `connect`, `accept`, `IO`, ...).
    pub step: &'static str,
    /// The cause.
    pub err: io::Error,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.step, self.err)
    }
}

impl std::error::Error for Error {}

fn at(step: &'static str) -> impl FnOnce(io::Error) -> Error {
    move |err| Error { step, err }
}

/// Progress messages (ttcp's `mes()`: `ttcp-t: socket`, `ttcp-r: accept from ...`).
pub type Messages<'a> = &'a mut dyn FnMut(&str);

fn new_socket(cfg: &Config, addr: &SocketAddr, mes: Messages<'_>) -> Result<Socket, Error> {
    let s = Socket::new(Domain::for_address(*addr), Type::STREAM, Some(Protocol::TCP)).map_err(at("socket"))?;
    mes(&format!("{}: socket", cfg.tag()));
    if let Some(b) = cfg.sockbufsize {
        if cfg.transmit {
            s.set_send_buffer_size(b as usize).map_err(at("setsockopt: sndbuf"))?;
            mes(&format!("{}: sndbuf", cfg.tag()));
        } else {
            s.set_recv_buffer_size(b as usize).map_err(at("setsockopt: rcvbuf"))?;
            mes(&format!("{}: rcvbuf", cfg.tag()));
        }
    }
    if let Some(cc) = &cfg.cc {
        s.set_tcp_congestion(cc.as_bytes()).map_err(|e| Error {
            step: "setsockopt: congestion",
            err: io::Error::new(e.kind(), format!("{cc}: {e} (available: {})", available_cc())),
        })?;
    }
    if cfg.nodelay {
        s.set_tcp_nodelay(true).map_err(at("setsockopt: nodelay"))?;
        mes(&format!("{}: nodelay", cfg.tag()));
    }
    s.set_read_timeout(cfg.io_timeout).map_err(at("setsockopt: rcvtimeo"))?;
    s.set_write_timeout(cfg.io_timeout).map_err(at("setsockopt: sndtimeo"))?;
    Ok(s)
}

/// The kernel's default congestion control (`net.ipv4.tcp_congestion_control`).
pub fn default_cc() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The congestion control algorithms this kernel offers.
pub fn available_cc() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

fn settings(cfg: &Config, s: &Socket, peer: SocketAddr) -> (usize, String, String) {
    let buf = if cfg.transmit { s.send_buffer_size() } else { s.recv_buffer_size() };
    let cc = s.tcp_congestion().map(|v| String::from_utf8_lossy(&v).trim_end_matches('\0').to_string());
    (buf.unwrap_or(0), cc.unwrap_or_default(), peer.to_string())
}

/// A receiver listening on its port: bound first, so that a transmitter started afterwards
/// finds it (the lab starts both ends in one process).
pub struct Receiver {
    cfg: Config,
    listener: TcpListener,
}

impl Receiver {
    /// Binds and listens (`-r`).
    pub fn bind(cfg: Config, mes: Messages<'_>) -> Result<Receiver, Error> {
        let addr = SocketAddr::new(cfg.bind, cfg.port);
        let s = new_socket(&cfg, &addr, mes)?;
        s.set_reuse_address(true).map_err(at("setsockopt: reuseaddr"))?;
        s.bind(&addr.into()).map_err(at("bind"))?;
        s.listen(1).map_err(at("listen"))?;
        Ok(Receiver { cfg, listener: s.into() })
    }

    /// The port listened on (useful with port 0).
    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(self.cfg.port)
    }

    /// Accepts one connection and reads it to the end: discarded (`-s`) or written to `out`.
    pub fn run(self, out: &mut dyn Write, mes: Messages<'_>) -> Result<Report, Error> {
        let cfg = self.cfg;
        if let Some(t) = cfg.io_timeout {
            // accept(2) honours SO_RCVTIMEO of the listening socket.
            socket2::SockRef::from(&self.listener).set_read_timeout(Some(t)).map_err(at("setsockopt"))?;
        }
        let (stream, peer) = self.listener.accept().map_err(at("accept"))?;
        mes(&format!("ttcp-r: accept from {}", peer.ip()));
        let sock = socket2::SockRef::from(&stream);
        let (buf_actual, cc, peer) = settings(&cfg, &sock, peer);
        let mut buf = vec![0u8; cfg.buflen];
        let timer = Timer::start();
        let (mut bytes, mut calls) = (0u64, 0u64);
        let quick = socket2::SockRef::from(&stream);
        let res = loop {
            calls += 1;
            // Linux leaves quick-ACK mode on its own; set again before every read.
            if cfg.quickack {
                let _ = quick.set_tcp_quickack(true);
            }
            match (&stream).read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    bytes += n as u64;
                    if cfg.data == Data::Stdio
                        && let Err(e) = out.write_all(&buf[..n])
                    {
                        break Err(e);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        let _ = out.flush();
        let (real_s, usage, start_unix_ns) = timer.stop();
        res.map_err(at("IO"))?;
        Ok(Report::of("receive", &cfg, (buf_actual, cc, peer), (bytes, calls), (real_s, usage, start_unix_ns)))
    }
}

/// Connects to the host and sends: `-n` buffers of the pattern (`-s`), `--time` seconds of
/// it, or standard input (`input`) until its end. One `write` per buffer, as ttcp; like ttcp,
/// the clock stops when the last write returns (the data may still be in the socket buffer).
pub fn transmit(cfg: &Config, input: &mut dyn Read, mes: Messages<'_>) -> Result<Report, Error> {
    let host = cfg.host.as_deref().unwrap_or("");
    let addr = (host, cfg.port)
        .to_socket_addrs()
        .map_err(|e| Error { step: "bad hostname", err: e })?
        .next()
        .ok_or_else(|| Error { step: "bad hostname", err: io::Error::other(host.to_string()) })?;
    let s = new_socket(cfg, &addr, mes)?;
    s.connect(&addr.into()).map_err(at("connect"))?;
    mes("ttcp-t: connect");
    let (buf_actual, cc, peer) = settings(cfg, &s, addr);
    let mut stream: TcpStream = s.into();
    let mut buf = vec![0u8; cfg.buflen];
    let timer = Timer::start();
    let (mut bytes, mut calls) = (0u64, 0u64);
    let res: io::Result<()> = match cfg.data {
        Data::Pattern => {
            pattern(&mut buf);
            let mut sent = 0u64;
            loop {
                let more = match cfg.time {
                    Some(t) => timer.t0.elapsed() < t,
                    None => sent < cfg.nbuf,
                };
                if !more {
                    break Ok(());
                }
                match write_counted(&mut stream, &buf, &mut calls) {
                    Ok(()) => {
                        bytes += buf.len() as u64;
                        sent += 1;
                    }
                    Err(e) => break Err(e),
                }
            }
        }
        Data::Stdio => loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(e),
            };
            if let Err(e) = write_counted(&mut stream, &buf[..n], &mut calls) {
                break Err(e);
            }
            bytes += n as u64;
        },
    };
    let (real_s, usage, start_unix_ns) = timer.stop();
    res.map_err(at("IO"))?;
    // Half-close and wait for the receiver's close, so that the caller knows the data arrived
    // (ttcp just exits and lets the kernel deliver the rest).
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut sink = [0u8; 64];
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
    Ok(Report::of("transmit", cfg, (buf_actual, cc, peer), (bytes, calls), (real_s, usage, start_unix_ns)))
}

/// Writes all of `b`, counting each write(2); a short write is continued (ttcp stops there).
fn write_counted(s: &mut TcpStream, mut b: &[u8], calls: &mut u64) -> io::Result<()> {
    while !b.is_empty() {
        *calls += 1;
        match s.write(b) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => b = &b[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

struct Timer {
    t0: Instant,
    ru0: Option<nix::sys::resource::Usage>,
    wall0: std::time::SystemTime,
}

/// getrusage(2) of the calling thread (`None` only if the kernel refused, which it does not for
/// RUSAGE_THREAD on Linux).
fn rusage() -> Option<nix::sys::resource::Usage> {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_THREAD).ok()
}

impl Timer {
    fn start() -> Timer {
        Timer { t0: Instant::now(), ru0: rusage(), wall0: std::time::SystemTime::now() }
    }
    fn stop(&self) -> (f64, Usage, u128) {
        let real = self.t0.elapsed().as_secs_f64();
        let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        let u = match (&self.ru0, rusage()) {
            (Some(r0), Some(r1)) => Usage {
                user_s: tv(r1.user_time()) - tv(r0.user_time()),
                sys_s: tv(r1.system_time()) - tv(r0.system_time()),
                maxrss_kib: r1.max_rss(),
                majflt: r1.major_page_faults() - r0.major_page_faults(),
                minflt: r1.minor_page_faults() - r0.minor_page_faults(),
                nvcsw: r1.voluntary_context_switches() - r0.voluntary_context_switches(),
                nivcsw: r1.involuntary_context_switches() - r0.involuntary_context_switches(),
            },
            _ => Usage::default(),
        };
        let start = self.wall0.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        (real, u, start)
    }
}

/// ttcp's rate text for `-f`: `"%.2f KB"` etc. (K, M, G powers of 1024; lower case: bits).
pub fn outfmt(bytes_per_s: f64, fmt: char) -> String {
    let k = 1024.0;
    match fmt {
        'k' => format!("{:.2} Kbit", bytes_per_s * 8.0 / k),
        'm' => format!("{:.2} Mbit", bytes_per_s * 8.0 / k / k),
        'g' => format!("{:.2} Gbit", bytes_per_s * 8.0 / k / k / k),
        'M' => format!("{:.2} MB", bytes_per_s / k / k),
        'G' => format!("{:.2} GB", bytes_per_s / k / k / k),
        _ => format!("{:.2} KB", bytes_per_s / k),
    }
}

/// ttcp's first line: `ttcp-t: buflen=8192, nbuf=2048, align=16384/0, port=5001  tcp  -> host`.
pub fn header_line(cfg: &Config) -> String {
    let mut s = format!(
        "{}: buflen={}, nbuf={}, align={}/{}, port={}",
        cfg.tag(),
        cfg.buflen,
        cfg.nbuf,
        cfg.align.0,
        cfg.align.1,
        cfg.port
    );
    if let Some(b) = cfg.sockbufsize {
        s += &format!(", sockbufsize={b}");
    }
    if cfg.transmit {
        s += &format!("  tcp  -> {}", cfg.host.as_deref().unwrap_or(""));
    } else {
        s += "  tcp";
    }
    s
}

/// ttcp's closing lines for a report, in its formats (`%.0f bytes in %.2f real seconds = %s/sec
/// +++`, `%d I/O calls, msec/call = %.2f, calls/sec = %.2f`, the resource line; with `-v` the
/// CPU-seconds line; ttcp's `-v` also prints its buffer's address, which means nothing here and
/// is left out).
pub fn result_lines(r: &Report, fmt: char, verbose: bool) -> Vec<String> {
    let tag = if r.role == "transmit" { "ttcp-t" } else { "ttcp-r" };
    // ttcp floors both times at 1 ms.
    let realt = if r.real_s <= 0.0 { 0.001 } else { r.real_s };
    let cput = (r.usage.user_s + r.usage.sys_s).max(0.001);
    let mut v = vec![format!(
        "{tag}: {} bytes in {:.2} real seconds = {}/sec +++",
        r.bytes,
        realt,
        outfmt(r.bytes as f64 / realt, fmt)
    )];
    if verbose {
        v.push(format!(
            "{tag}: {} bytes in {:.2} CPU seconds = {}/cpu sec",
            r.bytes,
            cput,
            outfmt(r.bytes as f64 / cput, fmt)
        ));
    }
    let calls = r.calls.max(1) as f64;
    v.push(format!(
        "{tag}: {} I/O calls, msec/call = {:.2}, calls/sec = {:.2}",
        r.calls,
        1024.0 * realt / calls,
        r.calls as f64 / realt
    ));
    v.push(format!("{tag}: {}", usage_line(&r.usage, r.real_s)));
    v
}

/// ttcp's resource line, `%Uuser %Ssys %Ereal %P %Xi+%Dd %Mmaxrss %F+%Rpf %Ccsw`: user and system
/// seconds with tenths, real time as m:ss, CPU percent, shared/unshared memory (always 0 on
/// Linux), maxrss/2 as ttcp prints it, page faults, context switches.
pub fn usage_line(u: &Usage, real_s: f64) -> String {
    let tenths = |s: f64| {
        let d = (s.max(0.0) * 10.0).floor() as u64;
        format!("{}.{}", d / 10, d % 10)
    };
    let cs_real = (real_s.max(0.0) * 100.0).floor() as i64; // centiseconds, as ttcp's `ms`
    let cs_cpu = ((u.user_s + u.sys_s).max(0.0) * 100.0).floor() as i64;
    let pct = cs_cpu * 100 / if cs_real == 0 { 1 } else { cs_real };
    format!(
        "{}user {}sys {}real {}% 0i+0d {}maxrss {}+{}pf {}+{}csw",
        tenths(u.user_s),
        tenths(u.sys_s),
        psecs(cs_real / 100),
        pct,
        u.maxrss_kib / 2,
        u.majflt,
        u.minflt,
        u.nvcsw,
        u.nivcsw
    )
}

/// ttcp's `psecs`: `m:ss`, or `h:mm:ss` from an hour.
fn psecs(l: i64) -> String {
    let h = l / 3600;
    let mut s = if h > 0 { format!("{h}:{:02}", (l % 3600) / 60) } else { format!("{}", l / 60) };
    s += &format!(":{:02}", l % 60);
    s
}

/// `tcpscope ttcp`: runs one end as the flags say and prints ttcp's lines (or `--json`).
/// Returns the exit status ttcp would (0 done, 1 failed).
pub fn main(args: &TtcpArgs) -> io::Result<std::process::ExitCode> {
    let cfg = match Config::from_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tcpscope ttcp: {e}");
            return Ok(std::process::ExitCode::from(1));
        }
    };
    // The received data owns standard output when -r runs without -s.
    let data_on_stdout = !cfg.transmit && cfg.data == Data::Stdio;
    let mut lines: Box<dyn Write> = if data_on_stdout { Box::new(io::stderr()) } else { Box::new(io::stdout()) };
    if !args.json {
        writeln!(lines, "{}", header_line(&cfg))?;
    }
    let mut mes = |m: &str| eprintln!("{m}");
    let capture = match &args.capture {
        None => None,
        Some(path) => match capture::Capture::start(path, cfg.port) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("{}: capture: {e}", cfg.tag());
                return Ok(std::process::ExitCode::from(1));
            }
        },
    };
    let recorder = match &args.tcp_info {
        None => None,
        Some(path) => {
            // The transmitter's socket has the port as its remote end, the receiver's as its own.
            let filter = if cfg.transmit { format!("dport {}", cfg.port) } else { format!("sport {}", cfg.port) };
            match crate::tcpinfo::Recorder::start(&filter, path, None) {
                Ok(r) => Some((r, path.clone())),
                Err(e) => {
                    eprintln!("{}: {e}", cfg.tag());
                    return Ok(std::process::ExitCode::from(1));
                }
            }
        }
    };
    let res = if cfg.transmit {
        transmit(&cfg, &mut io::stdin().lock(), &mut mes)
    } else {
        Receiver::bind(cfg.clone(), &mut mes).and_then(|r| r.run(&mut io::stdout().lock(), &mut mes))
    };
    if let Some((r, path)) = recorder {
        match r.stop() {
            Ok(n) => eprintln!("{}: tcp_info: {n} samples into {}", cfg.tag(), path.display()),
            Err(e) => eprintln!("{}: {e}", cfg.tag()),
        }
    }
    if let Some(c) = capture {
        match c.stop() {
            Ok(text) => eprintln!("{}: capture: {text}", cfg.tag()),
            Err(e) => eprintln!("{}: capture: {e}", cfg.tag()),
        }
    }
    match res {
        Ok(r) => {
            if args.json {
                writeln!(lines, "{}", serde_json::to_string(&r).map_err(io::Error::other)?)?;
            } else {
                for l in result_lines(&r, args.format, args.verbose) {
                    writeln!(lines, "{l}")?;
                }
            }
            lines.flush()?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{}: {e}", cfg.tag());
            Ok(std::process::ExitCode::from(1))
        }
    }
}

/// `--capture FILE`: the test's packets (TCP on its port) on all interfaces, with libpcap as
/// `tcpscope capture` opens it (snaplen 128, immediate mode, polled so that the end is seen).
#[cfg(feature = "capture")]
mod capture {
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A running capture thread.
    pub struct Capture {
        stop: Arc<AtomicBool>,
        thread: std::thread::JoinHandle<Result<String, String>>,
    }

    impl Capture {
        /// Opens the capture and starts writing `path`; returns once libpcap is capturing.
        pub fn start(path: &Path, port: u16) -> Result<Capture, String> {
            let cap = pcap::Capture::from_device("any")
                .map_err(|e| format!("device any: {e}"))?
                .snaplen(128)
                .immediate_mode(true)
                .timeout(100)
                .open()
                .map_err(|e| format!("opening device any: {e} (needs root or CAP_NET_RAW)"))?;
            // Non-blocking, polled: on Linux a blocking read may never return without traffic
            // (TPACKET_V3), and the end of the test would go unseen.
            let mut cap = cap.setnonblock().map_err(|e| format!("non-blocking: {e}"))?;
            cap.filter(&format!("tcp port {port}"), true).map_err(|e| format!("filter: {e}"))?;
            let mut save = cap.savefile(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let stop = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&stop);
            let file = path.display().to_string();
            let thread = std::thread::spawn(move || {
                let mut n = 0u64;
                // After the stop flag, read what is still buffered until nothing is.
                let mut draining = false;
                loop {
                    match cap.next_packet() {
                        Ok(p) => {
                            save.write(&p);
                            n += 1;
                        }
                        // Nothing waiting.
                        Err(pcap::Error::TimeoutExpired) if draining => break,
                        Err(pcap::Error::TimeoutExpired) => std::thread::sleep(std::time::Duration::from_millis(5)),
                        Err(e) => return Err(format!("reading: {e}")),
                    }
                    if !draining && flag.load(Ordering::Relaxed) {
                        draining = true;
                    }
                }
                save.flush().map_err(|e| format!("{file}: {e}"))?;
                let st = cap.stats().map_err(|e| format!("stats: {e}"))?;
                Ok(format!("{n} packets into {file} ({} dropped by the kernel)", st.dropped + st.if_dropped))
            });
            Ok(Capture { stop, thread })
        }

        /// Stops after the packets still buffered; a summary line.
        pub fn stop(self) -> Result<String, String> {
            // The last ACKs and FIN reach the capture.
            std::thread::sleep(std::time::Duration::from_millis(200));
            self.stop.store(true, Ordering::Relaxed);
            self.thread.join().map_err(|_| "capture thread panicked".to_string())?
        }
    }
}

/// Without libpcap (the binary built without its `capture` feature), `--capture` says so.
#[cfg(not(feature = "capture"))]
mod capture {
    /// Never started.
    pub struct Capture;

    impl Capture {
        /// Always an error: no libpcap in this build.
        pub fn start(_path: &std::path::Path, _port: u16) -> Result<Capture, String> {
            Err("this tcpscope was built without libpcap (the `capture` feature)".into())
        }
        /// Unreachable in practice.
        pub fn stop(self) -> Result<String, String> {
            Ok(String::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ttcp's `pattern()` transcribed step by step (a signed char that skips every value whose
    /// low 7 bits are not printable): the oracle for [`pattern`].
    fn c_pattern(n: usize) -> Vec<u8> {
        let isprint = |c: u8| (0x20..=0x7e).contains(&c);
        let mut c: i8 = 0;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            while !isprint((c as u8) & 0x7f) {
                c = c.wrapping_add(1);
            }
            out.push((c as u8) & 0x7f);
            c = c.wrapping_add(1);
        }
        out
    }

    #[test]
    fn pattern_is_ttcps() {
        for n in [1, 94, 95, 96, 190, 1000, 8192] {
            let mut b = vec![0u8; n];
            pattern(&mut b);
            assert_eq!(b, c_pattern(n), "length {n}");
        }
    }

    #[test]
    fn psecs_as_ttcp() {
        // ttcp's psecs(l): "%d" minutes then ":%d%d" seconds; from an hour "h:mm:ss".
        assert_eq!(psecs(0), "0:00");
        assert_eq!(psecs(75), "1:15");
        assert_eq!(psecs(3600 + 62), "1:01:02");
    }

    #[test]
    fn lines_in_ttcps_formats() {
        let r = Report {
            role: "transmit",
            buflen: 8192,
            nbuf: 2048,
            port: 5001,
            sockbufsize: None,
            sockbuf_actual: 0,
            nodelay: false,
            data: Data::Pattern,
            cc: "cubic".into(),
            peer: String::new(),
            bytes: 16_777_216,
            real_s: 2.0,
            calls: 2048,
            usage: Usage { user_s: 0.25, sys_s: 1.0, maxrss_kib: 2000, ..Default::default() },
            start_unix_ns: 0,
        };
        let l = result_lines(&r, 'K', false);
        // 16777216 B / 2 s / 1024 = 8192 KB/s; 1024 * 2 / 2048 = 1 ms/call; 1024 calls/s.
        assert_eq!(l[0], "ttcp-t: 16777216 bytes in 2.00 real seconds = 8192.00 KB/sec +++");
        assert_eq!(l[1], "ttcp-t: 2048 I/O calls, msec/call = 1.00, calls/sec = 1024.00");
        // 125 cs of CPU over 200 cs real = 62 %.
        assert_eq!(l[2], "ttcp-t: 0.2user 1.0sys 0:02real 62% 0i+0d 1000maxrss 0+0pf 0+0csw");
        assert_eq!(outfmt(1024.0 * 1024.0 / 8.0, 'm'), "1.00 Mbit");
    }
}

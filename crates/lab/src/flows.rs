//! Short connections (`traffic.kind = "short"`): each sender opens `traffic.connections`
//! connections to the receiver, each carrying `traffic.bytes` of ttcp's pattern, one after the
//! other or at Poisson arrivals (`traffic.arrival_rate` per second), and the lab measures each
//! connection's **completion time**: from the sender's `connect()` call to the moment the
//! receiver's application has read the last byte. Both ends run in this process (on threads
//! that joined the sender's and the receiver's namespace), so the two instants are read from
//! one monotonic clock.
//!
//! The least a connection can take over a path of round-trip time RTT and bottleneck rate R is
//! 1.5 RTT + 8·bytes/R: the SYN and SYN-ACK (one RTT), then the data's one-way trip, and the
//! bytes serialised at the bottleneck (headers and slow start only add to it).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, Socket, Type};

/// One short connection as the lab saw it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Flow {
    /// The sender (1-based).
    pub sender: u32,
    /// The connection's number at that sender (1-based, in order of start).
    pub index: u32,
    /// The sender's address and port.
    pub local: String,
    /// Seconds from the run's start (the first sender's start) to `connect()`.
    pub start_s: f64,
    /// Seconds `connect()` took (the handshake as the sender saw it).
    pub connect_s: Option<f64>,
    /// Seconds from `connect()` to the receiver's read of the last byte: the completion time.
    pub completion_s: Option<f64>,
    /// Bytes the receiver read.
    pub bytes: u64,
    /// What went wrong, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The sockets' settings.
#[derive(Debug, Clone)]
pub struct SockCfg {
    /// TCP_CONGESTION.
    pub cc: Option<String>,
    /// SO_SNDBUF (sender) or SO_RCVBUF (receiver).
    pub buf: Option<u32>,
    /// TCP_NODELAY on the sender.
    pub nodelay: bool,
    /// TCP_QUICKACK before every read on the receiver.
    pub quickack: bool,
    /// Bytes per write/read.
    pub length: usize,
    /// No read, write, connect or accept blocks longer.
    pub io_timeout: Duration,
}

fn socket(cfg: &SockCfg, addr: &SocketAddr, send: bool) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(*addr), Type::STREAM, Some(Protocol::TCP))?;
    if let Some(b) = cfg.buf {
        if send {
            s.set_send_buffer_size(b as usize)?;
        } else {
            s.set_recv_buffer_size(b as usize)?;
        }
    }
    if let Some(cc) = &cfg.cc {
        s.set_tcp_congestion(cc.as_bytes()).map_err(|e| io::Error::new(e.kind(), format!("congestion {cc}: {e}")))?;
    }
    if send && cfg.nodelay {
        s.set_tcp_nodelay(true)?;
    }
    s.set_read_timeout(Some(cfg.io_timeout))?;
    s.set_write_timeout(Some(cfg.io_timeout))?;
    Ok(s)
}

/// When the receiver read each connection's last byte, and how many bytes, by the sender's
/// address.
type Arrivals = Arc<Mutex<HashMap<SocketAddr, (Instant, u64)>>>;

/// The receiving side: accepts connections on one port and reads each to its end on a thread
/// of its own.
pub struct Server {
    listener: TcpListener,
    cfg: SockCfg,
    arrivals: Arrivals,
}

impl Server {
    /// Binds and listens on `port` (all addresses) in the calling thread's namespace.
    pub fn bind(port: u16, cfg: SockCfg) -> io::Result<Server> {
        let addr = SocketAddr::from(([0, 0, 0, 0], port));
        let s = socket(&cfg, &addr, false)?;
        s.set_reuse_address(true)?;
        s.bind(&addr.into())?;
        s.listen(1024)?;
        Ok(Server { listener: s.into(), cfg, arrivals: Arc::new(Mutex::new(HashMap::new())) })
    }

    /// Accepts `expected` connections (or until `deadline`), reads each to its end, and returns
    /// when the last one is read: the instant of each connection's last byte and its bytes.
    pub fn run(self, expected: usize, deadline: Instant) -> io::Result<HashMap<SocketAddr, (Instant, u64)>> {
        let mut threads = Vec::new();
        for _ in 0..expected {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            socket2::SockRef::from(&self.listener).set_read_timeout(Some(left))?;
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => break,
                Err(e) => return Err(e),
            };
            let (cfg, arrivals) = (self.cfg.clone(), Arc::clone(&self.arrivals));
            threads.push(std::thread::spawn(move || read_to_end(stream, peer, &cfg, &arrivals)));
        }
        for t in threads {
            let _ = t.join();
        }
        let map = std::mem::take(&mut *self.arrivals.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(map)
    }
}

fn read_to_end(mut stream: TcpStream, peer: SocketAddr, cfg: &SockCfg, arrivals: &Arrivals) {
    let _ = stream.set_read_timeout(Some(cfg.io_timeout));
    let mut buf = vec![0u8; cfg.length.max(1)];
    let (mut bytes, mut last) = (0u64, Instant::now());
    loop {
        if cfg.quickack {
            let _ = socket2::SockRef::from(&stream).set_tcp_quickack(true);
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                bytes += n as u64;
                last = Instant::now();
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if let Ok(mut m) = arrivals.lock() {
        m.insert(peer, (last, bytes));
    }
    // Dropping the stream closes it: the sender's wait for our FIN ends.
}

/// What one sender does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The sender (1-based).
    pub sender: u32,
    /// The receiver's address and this sender's port.
    pub to: SocketAddr,
    /// Connections to open.
    pub connections: u32,
    /// Bytes per connection.
    pub bytes: u64,
    /// Poisson arrivals at this rate (per second); `None`: one after the other.
    pub arrival_rate: Option<f64>,
    /// Seed of the arrival times.
    pub seed: u64,
}

/// A connection as the sender saw it: when it called `connect()`, how long that took, its
/// address, and its error.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The connection's number (1-based).
    pub index: u32,
    /// When `connect()` was called.
    pub start: Instant,
    /// The handshake's duration.
    pub connect: Option<Duration>,
    /// The sender's address, once connected.
    pub local: Option<SocketAddr>,
    /// The failure.
    pub error: Option<String>,
}

/// Opens the plan's connections from the calling thread's namespace; each writes its bytes,
/// half-closes and waits for the receiver's close. Returns every connection, in order.
pub fn send(plan: &Plan, cfg: &SockCfg) -> Vec<Sent> {
    let t0 = Instant::now();
    match plan.arrival_rate {
        None => (1..=plan.connections).map(|i| one(plan, cfg, i)).collect(),
        Some(rate) => {
            // Exponential gaps: -ln(U)/rate, U uniform in (0, 1].
            let mut rng = SplitMix(plan.seed);
            let mut at = Duration::ZERO;
            let mut threads = Vec::new();
            for i in 1..=plan.connections {
                if i > 1 {
                    let u = 1.0 - rng.unit();
                    at += Duration::from_secs_f64(-u.ln() / rate);
                }
                if let Some(wait) = (t0 + at).checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let (plan, cfg) = (plan.clone(), cfg.clone());
                // A thread made by a thread that joined a namespace is in that namespace.
                threads.push(std::thread::spawn(move || one(&plan, &cfg, i)));
            }
            threads
                .into_iter()
                .enumerate()
                .map(|(k, t)| {
                    t.join().unwrap_or_else(|_| Sent {
                        index: k as u32 + 1,
                        start: t0,
                        connect: None,
                        local: None,
                        error: Some("the connection's thread panicked".into()),
                    })
                })
                .collect()
        }
    }
}

fn one(plan: &Plan, cfg: &SockCfg, index: u32) -> Sent {
    let start = Instant::now();
    let mut sent = Sent { index, start, connect: None, local: None, error: None };
    let res = (|| -> io::Result<()> {
        let s = socket(cfg, &plan.to, true)?;
        s.connect_timeout(&plan.to.into(), cfg.io_timeout)?;
        sent.connect = Some(start.elapsed());
        sent.local = s.local_addr()?.as_socket();
        let mut stream: TcpStream = s.into();
        let mut buf = vec![0u8; cfg.length.max(1)];
        crate::ttcp::pattern(&mut buf);
        let mut left = plan.bytes;
        while left > 0 {
            let n = left.min(buf.len() as u64) as usize;
            stream.write_all(&buf[..n])?;
            left -= n as u64;
        }
        stream.shutdown(Shutdown::Write)?;
        let mut sink = [0u8; 64];
        while stream.read(&mut sink)? > 0 {}
        Ok(())
    })();
    if let Err(e) = res {
        sent.error = Some(e.to_string());
    }
    sent
}

/// Joins what the senders saw with what the receiver read: one [`Flow`] per connection,
/// in order of sender and index. `t0` is the run's start.
pub fn flows(
    sent: &[(u32, Vec<Sent>)],
    arrivals: &HashMap<SocketAddr, (Instant, u64)>,
    bytes: u64,
    t0: Instant,
) -> Vec<Flow> {
    let mut out = Vec::new();
    for (sender, conns) in sent {
        for c in conns {
            let arrived = c.local.and_then(|a| arrivals.get(&a));
            let mut error = c.error.clone();
            if error.is_none() {
                match arrived {
                    None => error = Some("the receiver never saw this connection".into()),
                    Some((_, b)) if *b != bytes => error = Some(format!("the receiver read {b} of {bytes} bytes")),
                    _ => {}
                }
            }
            out.push(Flow {
                sender: *sender,
                index: c.index,
                local: c.local.map(|a| a.to_string()).unwrap_or_default(),
                start_s: c.start.saturating_duration_since(t0).as_secs_f64(),
                connect_s: c.connect.map(|d| d.as_secs_f64()),
                completion_s: arrived
                    .filter(|_| error.is_none())
                    .map(|(t, _)| t.saturating_duration_since(c.start).as_secs_f64()),
                bytes: arrived.map_or(0, |a| a.1),
                error,
            });
        }
    }
    out
}

/// splitmix64: a small, good-enough generator for arrival times (reproducible from the seed).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SockCfg {
        SockCfg {
            cc: None,
            buf: None,
            nodelay: false,
            quickack: false,
            length: 8192,
            io_timeout: Duration::from_secs(10),
        }
    }

    /// On loopback: every connection arrives whole, each completion time is at least the
    /// handshake the sender measured, and Poisson arrivals spread the starts out.
    #[test]
    fn short_connections_on_loopback() {
        let server = Server::bind(0, cfg()).unwrap();
        let port = server.listener.local_addr().unwrap().port();
        let t0 = Instant::now();
        let rx = std::thread::spawn(move || server.run(12, Instant::now() + Duration::from_secs(20)).unwrap());
        let to = SocketAddr::from(([127, 0, 0, 1], port));
        let seq = Plan { sender: 1, to, connections: 4, bytes: 100_000, arrival_rate: None, seed: 1 };
        let poisson = Plan { sender: 2, connections: 8, arrival_rate: Some(200.0), seed: 7, ..seq.clone() };
        let a = send(&seq, &cfg());
        let b = send(&poisson, &cfg());
        let arrivals = rx.join().unwrap();
        let fl = flows(&[(1, a), (2, b.clone())], &arrivals, 100_000, t0);
        assert_eq!(fl.len(), 12);
        for f in &fl {
            assert_eq!(f.error, None, "{f:?}");
            assert_eq!(f.bytes, 100_000);
            assert!(f.completion_s.unwrap() >= f.connect_s.unwrap(), "{f:?}");
        }
        // Sequential: each starts after the one before has completed.
        for w in fl[..4].windows(2) {
            assert!(w[1].start_s >= w[0].start_s + w[0].completion_s.unwrap());
        }
        // 8 arrivals at 200/s: the last starts some 35 ms after the first (7 gaps of 5 ms on
        // average); P(sum of 7 exponential gaps < 5 ms) is below 1e-6.
        let span = b[7].start.duration_since(b[0].start).as_secs_f64();
        assert!(span > 0.005, "{span}");
    }

    #[test]
    fn a_refused_connection_is_an_error_not_a_flow() {
        // Nobody listens on this port.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = l.local_addr().unwrap();
        drop(l);
        let p = Plan { sender: 1, to, connections: 2, bytes: 10, arrival_rate: None, seed: 0 };
        let s = send(&p, &cfg());
        let fl = flows(&[(1, s)], &HashMap::new(), 10, Instant::now());
        assert!(fl.iter().all(|f| f.error.is_some() && f.completion_s.is_none()), "{fl:?}");
    }
}

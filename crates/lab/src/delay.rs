//! The delay forwarder: a user-space "wire" that delays every frame by a fixed time, for kernels
//! without netem.
//!
//! It sits between the sender and the router in a namespace of its own, with two veth ends and
//! no address: every Ethernet frame that arrives on one end leaves by the other `delay` later
//! (ARP included, so the hosts on either side see one link). Each direction is one thread with
//! two AF_PACKET sockets: frames are read in batches (`recvmmsg`) with the kernel's time of
//! arrival (SO_TIMESTAMPNS), given their release time (arrival + delay), kept in a heap ordered
//! by release time (then arrival), and sent when due; the thread sleeps in `ppoll` until shortly
//! before the next release and polls from there, at real-time priority, on a CPU of its own
//! (the last), while the receiving ends of its links process what it sends on the other CPUs
//! (RPS, set by the run): without that a send into a veth also ran the router's forwarding of
//! the frame, 13 µs a frame. To reorder, a frame is chosen with a given probability and released
//! `gap` later than the delay, so the frames behind it overtake it (netem's "reorder" with a gap
//! in time); which frames is drawn from a seed the run gives, so a run repeats its choices.
//! Per host (by IPv4 address), a frame may be held longer than the delay: several senders
//! with round-trip times of their own.
//!
//! Like mahimahi's `mm-link` log it writes, per direction, a line per frame: `T + SIZE` when it
//! arrived and `T - SIZE DELAY` when it left (µs since the run's start), and `T d SIZE` when the
//! queue (bounded, [`MAX_QUEUE`] frames) was full; [`Stats`] sums the delays' error.
//!
//! This module holds the crate's only `unsafe` code: the AF_PACKET system calls (libc), each
//! block with its `SAFETY:` comment.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, BufWriter, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Frames held at most per direction; more are dropped (and logged).
pub const MAX_QUEUE: usize = 100_000;

/// What one direction of the forwarder did (fields added later read as 0 from older runs).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Stats {
    /// Frames forwarded.
    pub frames: u64,
    /// Bytes forwarded.
    pub bytes: u64,
    /// Frames dropped because the queue was full.
    pub drops: u64,
    /// Frames the kernel dropped before the forwarder read them: its socket's receive buffer
    /// was full (`PACKET_STATISTICS`), the forwarder not running for that long (another lab's
    /// forwarder on the same CPU at the same real-time priority, say).
    pub socket_drops: u64,
    /// Frames the kernel refused to send (no room in the socket's send buffer or the device's
    /// queue): lost.
    pub send_drops: u64,
    /// Most frames held at once.
    pub max_queue: usize,
    /// Mean of (time held − configured delay), µs: the time held runs from the frame's arrival
    /// to the moment the forwarder hands it to the kernel (the `send` call).
    pub mean_error_us: f64,
    /// Largest (time held − configured delay), µs.
    pub max_error_us: f64,
    /// Frames held more than 100 µs longer than the delay (reordered frames measured against
    /// their longer hold).
    pub late_100us: u64,
    /// Percentiles of the lateness (time held − its delay, as `mean_error_us`), µs, by 1 µs
    /// steps up to 10 ms (later counts as 10 ms): the median, 90th, 99th and 99.9th.
    pub late_p50_us: f64,
    /// The 90th percentile.
    pub late_p90_us: f64,
    /// The 99th percentile.
    pub late_p99_us: f64,
    /// The 99.9th percentile.
    pub late_p999_us: f64,
    /// Mean duration of the `send` calls, µs. A send into a veth also runs, in the same call,
    /// the receiving side's processing of the frame when that runs on the forwarder's CPU.
    pub send_mean_us: f64,
    /// Mean lateness measured when the `send` call returned (the hand-off plus the call), µs.
    pub done_mean_error_us: f64,
    /// Frames more than 100 µs late by that measure.
    pub done_late_100us: u64,
    /// Frames read per `recvmmsg` call, on average.
    pub frames_per_read: f64,
    /// Frames held back to be reordered.
    pub reordered: u64,
    /// Frames that left after a frame of the same host (see [`Effect::hosts`]) that arrived
    /// after them: the reordering on the wire.
    pub overtaken: u64,
    /// The seed of the choice of frames held back ([`Coin`]): the same seed and the same
    /// arrivals hold back the same frames.
    pub seed: u64,
}

/// What one direction does to frames.
#[derive(Debug, Clone)]
pub struct Effect {
    /// Hold every frame this long.
    pub delay: Duration,
    /// Probability of holding a frame `gap` longer.
    pub reorder: f64,
    /// The extra hold of a reordered frame.
    pub gap: Duration,
    /// Per host, a delay added to `delay` for its IPv4 frames: a frame whose address (its
    /// source or its destination, by `by`) is one of these is held that much longer (several
    /// senders with different round-trip times). Other frames (ARP, other hosts) take `delay`.
    pub hosts: Vec<(Ipv4Addr, Duration)>,
    /// Which address of a frame names its host in `hosts`.
    pub by: Addr,
    /// Seed of the choice of frames to reorder ([`Coin`]).
    pub seed: u64,
}

/// Which address of an IPv4 frame [`Effect::hosts`] looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addr {
    /// The source: frames from the host (its data, towards the receiver).
    Source,
    /// The destination: frames to the host (its ACKs, on the way back).
    Destination,
}

impl Effect {
    /// The host class of a frame (1-based index into `hosts`, 0 for none) and its delay.
    fn classify(&self, frame: &[u8]) -> (usize, Duration) {
        if self.hosts.is_empty() || frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
            return (0, self.delay);
        }
        let at = if self.by == Addr::Source { 26 } else { 30 };
        let ip = Ipv4Addr::new(frame[at], frame[at + 1], frame[at + 2], frame[at + 3]);
        match self.hosts.iter().position(|(h, _)| *h == ip) {
            Some(i) => (i + 1, self.delay + self.hosts[i].1),
            None => (0, self.delay),
        }
    }
}

/// The choice of frames to hold back: one draw per frame that arrives (in order), a frame held
/// back when the draw is below the probability. splitmix64 from a seed the run derives from the
/// sweep point and trial, so a run repeats its choices (hand-written, a dozen lines, as the
/// lab's arrival times in `flows`: the workspace has no random-number crate).
#[derive(Debug, Clone)]
pub struct Coin(u64);

impl Coin {
    /// A generator from its seed.
    pub fn new(seed: u64) -> Coin {
        Coin(seed)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// An AF_PACKET socket bound to `ifname` for protocol `proto` (network byte order; 0 receives
/// nothing, for a socket that only sends), with `flags` (`SOCK_NONBLOCK`) on its type.
pub fn packet_socket(ifname: &str, proto: u16, flags: i32) -> io::Result<OwnedFd> {
    let name = std::ffi::CString::new(ifname).map_err(io::Error::other)?;
    // SAFETY: plain system calls with valid arguments; the fd is owned right after.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | flags, i32::from(proto)) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface {ifname}")));
    }
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value to fill in.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: `sll` is a valid sockaddr_ll and the length is its size.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// An AF_PACKET socket bound to one interface (all protocols, outgoing copies ignored).
struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    fn bind(ifname: &str) -> io::Result<PacketSocket> {
        let fd = packet_socket(ifname, (libc::ETH_P_ALL as u16).to_be(), libc::SOCK_NONBLOCK)?;
        let one: i32 = 1;
        // PACKET_IGNORE_OUTGOING (Linux 4.20): the frames this forwarder sends on an interface are
        // not read back from it.
        // SAFETY: the option value is an int that outlives the call.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                23,
                &one as *const i32 as *const libc::c_void,
                std::mem::size_of::<i32>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // The kernel's time of arrival of each frame (SO_TIMESTAMPNS, CLOCK_REALTIME), so that a
        // frame's delay runs from when it arrived, not from when the forwarder read it.
        // SAFETY: as above.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                &one as *const i32 as *const libc::c_void,
                std::mem::size_of::<i32>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // A receive buffer of 16 MiB (about 7,000 frames of 1514 bytes; SO_RCVBUFFORCE, past
        // `net.core.rmem_max`, as root), not the default 208 KiB (about 90): when the
        // forwarder does not run for a while the frames wait in it instead of being dropped.
        let size: i32 = 16 << 20;
        // SAFETY: as above.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                &size as *const i32 as *const libc::c_void,
                std::mem::size_of::<i32>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PacketSocket { fd })
    }

    /// Frames the kernel dropped for want of room in the receive buffer since the last call
    /// (`PACKET_STATISTICS`, which the call resets).
    fn drops(&self) -> io::Result<u64> {
        let mut st = libc::tpacket_stats { tp_packets: 0, tp_drops: 0 };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `st` is a tpacket_stats that outlives the call; `len` is its size.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u64::from(st.tp_drops))
    }

    /// Sends a frame out of the bound interface: `Ok(false)` when the kernel had no room for it
    /// (a full send buffer or device queue: the frame is lost, and counted by the caller).
    fn send(&self, frame: &[u8]) -> io::Result<bool> {
        // SAFETY: `frame` is valid for reads of its length.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr() as *const libc::c_void, frame.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS) {
                return Ok(false);
            }
            return Err(e);
        }
        Ok(true)
    }
}

/// Sleeps until `fd` is readable or `timeout` passes (ppoll: ns resolution).
fn wait_readable(fd: i32, timeout: Duration) {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as i64 };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    unsafe {
        libc::ppoll(&mut pfd, 1, &ts, std::ptr::null());
    }
}

/// The CPU the forwarder's threads run on: the last one, when there are at least two (the
/// others take the receive processing of the frames it sends, by RPS: [`rps_mask`]).
pub fn forwarder_cpu() -> Option<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n >= 2).then(|| n - 1)
}

/// The RPS mask (hex, as `/sys/class/net/DEV/queues/rx-0/rps_cpus` takes it) of every CPU but
/// the forwarder's: the receiving ends of the forwarder's links process what it sends there,
/// not in its `send` call.
pub fn rps_mask() -> Option<String> {
    let cpu = forwarder_cpu()?;
    let mask: u128 = ((1u128 << cpu) - 1) & !(1u128 << cpu);
    Some(format!("{mask:x}"))
}

/// A running forwarder: both directions' threads; stopped and joined when dropped or by
/// [`Forwarder::stop`].
pub struct Forwarder {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<Result<Result<Stats, String>, String>>>,
}

impl Forwarder {
    /// Starts forwarding between interfaces `a` and `b` of namespace `ns`, with one effect per
    /// direction (a → b, b → a); per-direction logs (mahimahi-like lines, see the module).
    pub fn start(ns: &str, a: &str, b: &str, effects: [Effect; 2], logs: [PathBuf; 2]) -> Result<Forwarder, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let t0 = Instant::now();
        let mut threads = Vec::new();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        for (i, (from, to)) in [(a, b), (b, a)].into_iter().enumerate() {
            let (from, to, stop, log, ready) =
                (from.to_string(), to.to_string(), Arc::clone(&stop), logs[i].clone(), ready_tx.clone());
            let effect = effects[i].clone();
            let h = crate::netns::spawn_in(ns, move || {
                let socks = PacketSocket::bind(&from).and_then(|r| Ok((r, PacketSocket::bind(&to)?)));
                let (rx, tx) = match socks {
                    Ok(s) => {
                        let _ = ready.send(Ok(()));
                        s
                    }
                    Err(e) => {
                        let msg = format!("delay forwarder {from} -> {to}: {e}");
                        let _ = ready.send(Err(msg.clone()));
                        return Err(msg);
                    }
                };
                forward(&rx, &tx, effect, t0, &stop, &log).map_err(|e| format!("delay forwarder {from} -> {to}: {e}"))
            });
            threads.push(h);
        }
        let fw = Forwarder { stop, threads };
        for _ in 0..2 {
            match ready_rx.recv_timeout(Duration::from_secs(5)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err("delay forwarder did not start".into()),
            }
        }
        Ok(fw)
    }

    /// Stops both directions and returns their statistics (a2b, b2a).
    pub fn stop(mut self) -> Result<[Stats; 2], String> {
        self.stop.store(true, Ordering::Relaxed);
        let mut out = Vec::new();
        for h in self.threads.drain(..) {
            out.push(h.join().map_err(|_| "delay forwarder panicked".to_string())?.and_then(|r| r)?);
        }
        let b = out.pop().unwrap_or_default();
        let a = out.pop().unwrap_or_default();
        Ok([a, b])
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

/// A frame held: (release time, arrival order, arrival time, host class, frame); the heap's
/// top (the smallest) is the next due, and frames due at once leave in arrival order.
type Held = (Instant, u64, Instant, usize, Vec<u8>);

/// Lateness counts by whole µs, 0 to [`Histogram::TOP`] (earlier counts as 0, later as the top):
/// percentiles of a run's frames in fixed memory.
struct Histogram {
    counts: Vec<u64>,
    n: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; Histogram::TOP + 1], n: 0 }
    }
}

impl Histogram {
    const TOP: usize = 10_000;

    fn add(&mut self, us: f64) {
        let i = if us > 0.0 { (us as usize).min(Self::TOP) } else { 0 };
        self.counts[i] += 1;
        self.n += 1;
    }

    /// The smallest whole µs at or below which a share `q` of the counts lie (nearest rank).
    fn quantile(&self, q: f64) -> f64 {
        let rank = ((q * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (us, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return us as f64;
            }
        }
        0.0
    }
}

/// Frames read per `recvmmsg` call at most.
const BATCH: usize = 32;

/// How long before a frame's release the thread stops sleeping and polls instead: a wake-up
/// from `ppoll` is late by tens of µs on a loaded machine, a poll loop by the length of one pass.
const SPIN: Duration = Duration::from_micros(60);

/// Reads up to [`BATCH`] frames with one `recvmmsg` call into `bufs`, their lengths into
/// `lens` and the kernel's arrival times into `arrived`; returns how many (0 when none is
/// waiting).
fn recv_batch(fd: i32, bufs: &mut [Vec<u8>], lens: &mut [usize], arrived: &mut [Instant]) -> io::Result<usize> {
    let n = bufs.len().min(lens.len()).min(arrived.len());
    // Room for one SCM_TIMESTAMPNS control message per frame (u64s: aligned for cmsghdr).
    const CTL: usize = 8;
    let mut ctl = vec![0u64; CTL * n];
    let mut iov: Vec<libc::iovec> = bufs[..n]
        .iter_mut()
        .map(|b| libc::iovec { iov_base: b.as_mut_ptr() as *mut libc::c_void, iov_len: b.len() })
        .collect();
    // SAFETY: mmsghdr is plain data; all-zero is a valid value to fill in.
    let mut msgs: Vec<libc::mmsghdr> = (0..n).map(|_| unsafe { std::mem::zeroed() }).collect();
    for (i, (m, v)) in msgs.iter_mut().zip(iov.iter_mut()).enumerate() {
        m.msg_hdr.msg_iov = v as *mut libc::iovec;
        m.msg_hdr.msg_iovlen = 1;
        m.msg_hdr.msg_control = ctl[i * CTL..].as_mut_ptr() as *mut libc::c_void;
        m.msg_hdr.msg_controllen = CTL * 8;
    }
    // SAFETY: `msgs` holds `n` headers, each pointing at one iovec of a buffer that lives and is
    // not otherwise borrowed for the duration of the call.
    let r = unsafe { libc::recvmmsg(fd, msgs.as_mut_ptr(), n as u32, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::WouldBlock { Ok(0) } else { Err(e) };
    }
    // The kernel's stamps are CLOCK_REALTIME: placed on the monotonic clock by the distance of
    // each from the realtime clock now.
    let (now, wall) = (Instant::now(), std::time::SystemTime::now());
    let wall_ns = wall.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
    for ((l, m), at) in lens.iter_mut().zip(&msgs).zip(arrived.iter_mut()).take(r as usize) {
        *l = m.msg_len as usize;
        *at = now;
        // SAFETY: the header's control buffer was filled by the kernel up to msg_controllen;
        // CMSG_FIRSTHDR/CMSG_NXTHDR stay inside it and CMSG_DATA of an SCM_TIMESTAMPNS message
        // holds a timespec (read unaligned).
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&m.msg_hdr);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    let ago = wall_ns - (ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128);
                    // A stamp in the future (the clock stepped) or absurdly old is not used.
                    if (0..1_000_000_000).contains(&ago) {
                        *at = now - Duration::from_nanos(ago as u64);
                    }
                }
                c = libc::CMSG_NXTHDR(&m.msg_hdr, c);
            }
        }
    }
    Ok(r as usize)
}

/// One direction: read from `rx`, hold each frame for the effect's time, send it on `tx`.
///
/// Each pass sends what is due first, then reads what has arrived (one `recvmmsg` of up to
/// [`BATCH`] frames), so that a burst of arrivals does not hold back frames already due; it
/// sleeps in `ppoll` until [`SPIN`] before the next release and polls from there.
fn forward(
    rx: &PacketSocket,
    tx: &PacketSocket,
    effect: Effect,
    t0: Instant,
    stop: &AtomicBool,
    log: &std::path::Path,
) -> io::Result<Stats> {
    // SAFETY: prctl(PR_SET_TIMERSLACK) on the calling thread, with an integer argument.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
    // On a CPU of its own (the last one; the run steers the receiving side of the forwarder's
    // links to the others, see `forwarder_cpu`), so that a send does not also run the router's
    // forwarding of the frame.
    if let Some(cpu) = forwarder_cpu() {
        // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity(0) is the
        // calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
    // Real-time priority (best effort: as root it is granted), so that other load on the
    // machine does not add its scheduling delays to the emulated one.
    let param = libc::sched_param { sched_priority: 50 };
    // SAFETY: the calling thread's own handle and a valid sched_param.
    let realtime = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) } == 0;
    let mut out = BufWriter::with_capacity(1 << 16, std::fs::File::create(log)?);
    writeln!(
        out,
        "# tcpscope lab delay forwarder: one-way delay {} us, reorder {} with gap {} us (seed {}){}{}",
        effect.delay.as_micros(),
        effect.reorder,
        effect.gap.as_micros(),
        effect.seed,
        effect
            .hosts
            .iter()
            .map(|(h, d)| format!(
                ", +{} us for {} {h}",
                d.as_micros(),
                if effect.by == Addr::Source { "from" } else { "to" }
            ))
            .collect::<String>(),
        if realtime { ", SCHED_FIFO 50" } else { ", normal priority (SCHED_FIFO refused)" }
    )?;
    writeln!(
        out,
        "# T + SIZE: arrived; T r SIZE: arrived, held back to be reordered; T - SIZE HELD: left after HELD us; \
         T d SIZE: dropped (queue full)"
    )?;
    let mut queue: BinaryHeap<Reverse<Held>> = BinaryHeap::new();
    let mut st = Stats::default();
    let (mut err_sum, mut done_err_sum, mut send_sum) = (0.0f64, 0.0f64, 0.0f64);
    let (mut reads, mut read_frames) = (0u64, 0u64);
    let mut bufs: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; 65536 + 64]).collect();
    let mut lens = [0usize; BATCH];
    let mut stamps = [t0; BATCH];
    // Frames' buffers, reused.
    let mut free: Vec<Vec<u8>> = Vec::new();
    // The arrival order of the last frame sent, per host class (overtaking is counted within
    // a host: with per-host delays frames of different hosts pass each other by design).
    let mut seq = 0u64;
    let mut last_sent = vec![0u64; effect.hosts.len() + 1];
    let mut late_hist = Histogram::default();
    let mut coin = Coin::new(effect.seed);
    st.seed = effect.seed;
    let us = |t: Instant| t.duration_since(t0).as_micros();
    while !stop.load(Ordering::Relaxed) {
        // Send what is due.
        while queue.peek().is_some_and(|Reverse((t, ..))| *t <= Instant::now()) {
            let Some(Reverse((release, n, arrived, class, frame))) = queue.pop() else { break };
            let handed = Instant::now();
            if !tx.send(&frame)? {
                st.send_drops += 1;
            }
            let left = Instant::now();
            if n < last_sent[class] {
                st.overtaken += 1;
            }
            last_sent[class] = last_sent[class].max(n);
            let held = handed.duration_since(arrived);
            let err = handed.duration_since(release).as_secs_f64() * 1e6;
            let done_err = left.duration_since(release).as_secs_f64() * 1e6;
            err_sum += err;
            done_err_sum += done_err;
            send_sum += left.duration_since(handed).as_secs_f64() * 1e6;
            st.max_error_us = st.max_error_us.max(err);
            late_hist.add(err);
            st.late_100us += u64::from(err > 100.0);
            st.done_late_100us += u64::from(done_err > 100.0);
            st.frames += 1;
            st.bytes += frame.len() as u64;
            writeln!(out, "{} - {} {}", us(handed), frame.len(), held.as_micros())?;
            free.push(frame);
        }
        // Take what has arrived.
        let got = recv_batch(rx.fd.as_raw_fd(), &mut bufs, &mut lens, &mut stamps)?;
        if got > 0 {
            reads += 1;
            read_frames += got as u64;
        }
        for ((b, &n), &now) in bufs.iter().zip(&lens).zip(&stamps).take(got) {
            if queue.len() >= MAX_QUEUE {
                st.drops += 1;
                writeln!(out, "{} d {n}", us(now))?;
                continue;
            }
            let held_back = effect.reorder > 0.0 && coin.unit() < effect.reorder;
            let (class, delay) = effect.classify(&b[..n]);
            let release = now + delay + if held_back { effect.gap } else { Duration::ZERO };
            if held_back {
                st.reordered += 1;
                writeln!(out, "{} r {n}", us(now))?;
            } else {
                writeln!(out, "{} + {n}", us(now))?;
            }
            seq += 1;
            let mut frame = free.pop().unwrap_or_default();
            frame.clear();
            frame.extend_from_slice(&b[..n]);
            queue.push(Reverse((release, seq, now, class, frame)));
            st.max_queue = st.max_queue.max(queue.len());
        }
        if got == BATCH {
            // More may be waiting: read again after sending what fell due meanwhile.
            continue;
        }
        // Sleep until shortly before the next release, the next frame, or 50 ms (to see
        // `stop`); near the release, poll.
        let wait = match queue.peek() {
            Some(Reverse((t, ..))) => t.saturating_duration_since(Instant::now()),
            None => Duration::from_millis(50),
        };
        if wait > SPIN {
            wait_readable(rx.fd.as_raw_fd(), wait - SPIN);
        } else {
            // Polling: let the other direction's thread (same CPU, same real-time priority,
            // which does not preempt) have its turn.
            std::thread::yield_now();
        }
    }
    out.flush()?;
    if st.frames > 0 {
        let n = st.frames as f64;
        (st.mean_error_us, st.done_mean_error_us, st.send_mean_us) = (err_sum / n, done_err_sum / n, send_sum / n);
        [st.late_p50_us, st.late_p90_us, st.late_p99_us, st.late_p999_us] =
            [0.5, 0.9, 0.99, 0.999].map(|q| late_hist.quantile(q));
    }
    st.frames_per_read = if reads > 0 { read_frames as f64 / reads as f64 } else { 0.0 };
    st.socket_drops = rx.drops()?;
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coin_draws_are_binomial_over_seeds() {
        // The seeds runs use (point << 40 | trial) for 10 points × 40 trials; 5,000 frames at
        // 3 % each: the number held back is binomial, z-scores of mean 0 and variance 1.
        let (n, p) = (5000u32, 0.03);
        let (mean, sd) = (f64::from(n) * p, (f64::from(n) * p * (1.0 - p)).sqrt());
        let zs: Vec<f64> = (0u64..10)
            .flat_map(|pt| (1u64..=40).map(move |t| pt << 40 | t))
            .map(|seed| {
                let mut c = Coin::new(seed);
                let k = (0..n).filter(|_| c.unit() < p).count() as f64;
                (k - mean) / sd
            })
            .collect();
        let m = zs.iter().sum::<f64>() / zs.len() as f64;
        let var = zs.iter().map(|z| (z - m) * (z - m)).sum::<f64>() / (zs.len() - 1) as f64;
        // 400 samples: the mean's sd is 0.05, the variance's about 0.07.
        assert!(m.abs() < 0.2, "mean z {m}");
        assert!((0.75..1.25).contains(&var), "variance of z {var}");
        assert!(zs.iter().all(|z| z.abs() < 4.5), "{zs:?}");
        // Uniform: the draws fill [0, 1) evenly (ten bins, chi-square, 9 degrees of freedom,
        // below its 0.999 quantile 27.9).
        let mut c = Coin::new(7);
        let mut bins = [0u32; 10];
        for _ in 0..100_000 {
            bins[(c.unit() * 10.0) as usize] += 1;
        }
        let chi2: f64 = bins.iter().map(|&b| (f64::from(b) - 10_000.0).powi(2) / 10_000.0).sum();
        assert!(chi2 < 27.9, "{bins:?}");
        // The same seed, the same draws.
        let (mut a, mut b) = (Coin::new(42), Coin::new(42));
        assert!((0..100).all(|_| a.unit() == b.unit()));
    }

    #[test]
    fn lateness_percentiles_by_nearest_rank() {
        let mut h = Histogram::default();
        for us in 1..=1000 {
            h.add(f64::from(us) + 0.5);
        }
        assert_eq!([0.5, 0.9, 0.99, 0.999].map(|q| h.quantile(q)), [500.0, 900.0, 990.0, 999.0]);
        // Early frames count as 0, very late ones as the top.
        h.add(-3.0);
        h.add(1e9);
        assert_eq!((h.counts[0], h.counts[Histogram::TOP]), (1, 1));
        assert_eq!(Histogram::default().quantile(0.5), 0.0);
    }

    #[test]
    fn hosts_by_address() {
        let e = Effect {
            delay: Duration::from_millis(1),
            reorder: 0.0,
            gap: Duration::ZERO,
            hosts: vec![(Ipv4Addr::new(10, 9, 1, 2), Duration::from_millis(8))],
            by: Addr::Source,
            seed: 0,
        };
        // An IPv4 frame from 10.9.1.2 to 10.9.2.1, and the reply.
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[26..30].copy_from_slice(&[10, 9, 1, 2]);
        f[30..34].copy_from_slice(&[10, 9, 2, 1]);
        assert_eq!(e.classify(&f), (1, Duration::from_millis(9)));
        let back = Effect { by: Addr::Destination, ..e.clone() };
        assert_eq!(back.classify(&f), (0, Duration::from_millis(1)));
        f[30..34].copy_from_slice(&[10, 9, 1, 2]);
        assert_eq!(back.classify(&f), (1, Duration::from_millis(9)));
        // ARP and short frames: the path's delay.
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(e.classify(&f), (0, Duration::from_millis(1)));
        assert_eq!(e.classify(&f[..20]), (0, Duration::from_millis(1)));
    }
}

//! Records real Linux TCP at several vantage points with the lab (`tcpscope_lab::run`): sender
//! — delay forwarder — router — receiver in network namespaces named `c21c<PID>-...` (only those
//! are ever removed), tcpdump at the sender (`snd.pcap`), at the router's link from the sender
//! (`rtr.pcap`, before its loss rule) and at the receiver (`rcv.pcap`). The ground truth is
//! the router's record of each packet its loss rules dropped (nflog, `drops.pcap`, in
//! `result.json` as `router.drops`), the forwarder's per-frame log (`delay-a2b.log`: how long
//! it held each frame) and tcpdump's own counts.
//!
//! The drop record is exact: each drop is one of the connection's packets, seen upstream of
//! the router and not downstream ([`Recording::connection_drops`], [`drops_located`]).

use std::path::{Path, PathBuf};

/// The namespace prefix of these recordings.
pub const PREFIX: &str = "c21c";

/// A packet's identity in a capture or in the router's drop record: the direction (`a2b` from
/// the sender 10.9.1.1, `b2a` to it), sequence and acknowledgment numbers (0 without the ACK
/// flag), payload length, flag letters and IP ID.
pub type Ident = (&'static str, u32, u32, u32, String, u16);

/// The sender's address.
pub const SENDER: &str = "10.9.1.1";

/// (from, to, packets) of a direction's losses in `correlate --json` (or a `--with` proof).
pub fn losses(d: &serde_json::Value) -> Vec<(u64, u64, u64)> {
    d["losses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["from"].as_u64().unwrap(), l["to"].as_u64().unwrap(), l["packets"].as_u64().unwrap()))
        .collect()
}

/// A finished recording.
pub struct Recording {
    /// The run's directory (`snd.pcap`, `rtr.pcap`, `rcv.pcap`, `delay-a2b.log`, `result.json`).
    pub dir: PathBuf,
    /// `result.json`.
    pub result: serde_json::Value,
}

impl Recording {
    /// A file of the run.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The router's drop counters: (sender → receiver, receiver → sender), loss rule and queue.
    pub fn router_drops(&self) -> (u64, u64) {
        let r = &self.result["router"];
        let n = |k: &str| r[k].as_u64().unwrap_or(0);
        (n("loss_drops") + n("queue_drops"), n("reverse_loss_drops") + n("reverse_queue_drops"))
    }

    /// The router's record of each packet its loss rules dropped (`router.drops` in
    /// `result.json`: direction, time, addresses and ports, seq, ack, length, flags, IP ID).
    pub fn drops(&self) -> Vec<tcpscope_lab::drops::Dropped> {
        serde_json::from_value(self.result["router"]["drops"].clone()).expect("router.drops in result.json")
    }

    /// Every packet the router dropped, by direction: the identities of its drop record
    /// (`router.drops`), which holds each packet its loss rules dropped — as many each way as
    /// their counters, or the run failed. Its queues drop nothing on these paths (no rate:
    /// checked here), so the record is every drop.
    ///
    /// Each is a packet of the recorded connection, to or from the receiver's port (checked).
    /// The only other TCP through the router is the lab's warm-up (a connection attempt to
    /// port 9 and its reset, before the captures), which the loss rules spare. They once did
    /// not (nft merged the rule's two port tests into one that spared only packets with both
    /// ports 9): the router then counted a drop of the warm-up's SYN or reset, in no capture,
    /// in about one recording in 25 — the "phantom" drop that the tests allowed for before
    /// the drop record showed what it was.
    pub fn connection_drops(&self) -> (Vec<Ident>, Vec<Ident>) {
        let r = &self.result["router"];
        assert_eq!((r["queue_drops"].as_u64(), r["reverse_queue_drops"].as_u64()), (Some(0), Some(0)), "queue drops");
        let drops = self.drops();
        let (mut a2b, mut b2a) = (Vec::new(), Vec::new());
        let port = self.result["sender"]["port"].as_u64().unwrap();
        for d in drops {
            let ours = u64::from(d.dport) == port && d.src == SENDER || u64::from(d.sport) == port && d.dst == SENDER;
            assert!(ours, "a drop of another packet than the connection's (port {port}): {d:?}");
            let dir = if d.src == SENDER { "a2b" } else { "b2a" };
            assert_eq!(d.dir, dir, "{d:?}");
            let id = (dir, d.seq, d.ack, d.len, d.flags, d.ip_id);
            if dir == "a2b" { a2b.push(id) } else { b2a.push(id) }
        }
        (a2b, b2a)
    }

    /// Packets the path's links dropped on a stretch (`sender-router`, `router-receiver`,
    /// `receiver-router`, `router-sender`; `link_drops` in `result.json`): a veth whose other
    /// end's receive backlog was full (per CPU, shared by every namespace: a busy machine or
    /// several recordings at once). Counted, not recorded packet by packet.
    pub fn link_drops(&self, hop: &str) -> u64 {
        let all = self.result["link_drops"].as_array().expect("link_drops in result.json");
        all.iter().filter(|l| l["hop"] == hop).map(|l| l["dropped"].as_u64().unwrap()).sum()
    }

    /// What the run recorded of its own conditions, for a failure's message: tcpdump's
    /// closing counts, the links' drops and the sockets still open when the captures stopped.
    pub fn conditions(&self) -> String {
        let r = &self.result;
        format!("capture {}, link_drops {}, open_at_stop {}", r["capture"], r["link_drops"], r["open_at_stop"])
    }

    /// How long the forwarder held each frame sender → router (µs), in the order they left,
    /// with the frame's size: the `T - SIZE HELD` lines of `delay-a2b.log`.
    pub fn held_a2b(&self) -> Vec<(u32, u64)> {
        let log = std::fs::read_to_string(self.file("delay-a2b.log")).unwrap();
        log.lines()
            .filter(|l| l.contains(" - "))
            .filter_map(|l| {
                let mut w = l.split_whitespace().skip(2);
                Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
            })
            .collect()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if std::env::var_os("KEEP_RECORDING").is_none() {
            // The run's directory is OUT/p00/t1: remove OUT.
            let _ = std::fs::remove_dir_all(self.dir.parent().and_then(Path::parent).unwrap_or(&self.dir));
        }
    }
}

/// One recording at a time per test process.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs one lab experiment (TOML, one point) into `dir` with the router capture on and the
/// `c21` namespace prefix; `None` (with a message) when the machine cannot.
pub fn record(name: &str, experiment: &str) -> Option<Recording> {
    record_as(PREFIX, name, experiment)
}

/// [`record`] with namespaces named `PREFIX<PID>-...` (a test file's own prefix: only those are
/// ever removed).
pub fn record_as(prefix: &str, name: &str, experiment: &str) -> Option<Recording> {
    if let Some(why) = tcpscope_lab::run::cannot_run(false) {
        eprintln!("SKIPPED recording {name}: {why}");
        return None;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut plan = tcpscope_lab::experiment::parse(experiment).unwrap();
    plan.ns_prefix = prefix.into();
    for p in &mut plan.points {
        p.exp.capture_router = true;
    }
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Removed by the `Recording` (unless KEEP_RECORDING is set).
    let dir = super::tempdir(&format!("rec-{name}-{n}")).keep();
    let (done, _, failed) = tcpscope_lab::run::run_plan(&plan, &dir).unwrap();
    let run = dir.join(plan.points[0].dir_name()).join("t1");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap()).unwrap();
    assert_eq!((done, failed), (1, 0), "the recording failed: {}", result["error"]);
    assert!(ours_left_as(prefix).is_empty(), "namespaces left: {:?}", ours_left_as(prefix));
    Some(Recording { dir: run, result })
}

/// This process's namespaces still present.
pub fn ours_left() -> Vec<String> {
    ours_left_as(PREFIX)
}

/// This process's namespaces named with `prefix` still present.
pub fn ours_left_as(prefix: &str) -> Vec<String> {
    let prefix = format!("{prefix}{}-", std::process::id());
    let out = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

/// The identity of each frame of a capture (frame N at index N − 1; `None` for a frame that is
/// not TCP), read with the core's reader and decoder only.
pub fn idents(path: &Path) -> Vec<Option<Ident>> {
    let mut r = tcpscope_core::capture::CaptureReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        v.push(tcpscope_core::decode::decode(rec.link_type, rec.data, rec.orig_len).ok().map(|s| {
            let dir = if s.src.to_string() == SENDER { "a2b" } else { "b2a" };
            let ack = if s.flags.has(tcpscope_core::decode::Flags::ACK) { s.ack.0 } else { 0 };
            let flags = tcpscope_core::export::packet::flag_letters(s.flags).as_str().to_string();
            (dir, s.seq.0, ack, s.payload_len, flags, s.ip_id)
        }));
    }
    v
}

/// Where a direction's lost packets are, as [`drops_located`] found them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Located {
    /// Lost between the router's capture and the receiver's (either way).
    pub router: u64,
    /// Dropped by the router after the receiver's capture's last packet: outside the captures.
    pub outside: u64,
    /// Lost between the sender's capture and the router's (either way): dropped by a link
    /// ([`Recording::link_drops`]).
    pub sender_side: u64,
}

/// Checks the path's drops against `correlate --packets` of `snd.pcap rtr.pcap rcv.pcap`
/// (`rows`). Each drop of the router's record is exactly one row lost between the router and
/// the receiver (a2b: seen at points 1 and 2, not 3; b2a: seen at 3, not at 2 or 1) or, after
/// the receiver's capture's last packet, outside the captures, matched by identity; the other
/// rows lost there are as many as the links on that stretch dropped, and the rows lost between
/// the sender and the router as many as the links there dropped ([`Recording::link_drops`]:
/// counted, not recorded packet by packet); no row is lost anywhere else.
pub fn drops_located(rec: &Recording, rows: &serde_json::Value, how: &str) -> [Located; 2] {
    let (a2b, b2a) = rec.connection_drops();
    let frames: Vec<Vec<Option<Ident>>> =
        ["snd.pcap", "rtr.pcap", "rcv.pcap"].iter().map(|f| idents(&rec.file(f))).collect();
    let mut out = [Located { router: 0, outside: 0, sender_side: 0 }; 2];
    let stretches = [
        ("a2b", a2b, 1, 2, [true, true, false], [true, false, false], "router-receiver", "sender-router"),
        ("b2a", b2a, 2, 1, [false, false, true], [false, true, true], "receiver-router", "router-sender"),
    ];
    for (k, (dir, drops, up, down, at_router, at_sender, router_links, sender_links)) in
        stretches.into_iter().enumerate()
    {
        let mut located = Vec::new();
        for r in rows.as_array().unwrap().iter().filter(|r| r["dir"] == dir) {
            let fate = r["fate"].as_str().unwrap();
            if fate != "lost" && fate != "outside_capture" {
                continue;
            }
            let seen: Vec<bool> = (0..3).map(|p| !r["at_s"][p].is_null()).collect();
            if seen == at_sender && fate == "lost" {
                out[k].sender_side += 1;
                continue;
            }
            assert_eq!(
                seen,
                at_router,
                "{how} {dir}: a row {fate} elsewhere than on the path's stretches: {r}; {}",
                rec.conditions()
            );
            let f = r["frames"][up].as_u64().unwrap() as usize;
            located.push(frames[up][f - 1].clone().unwrap());
            if fate == "lost" { out[k].router += 1 } else { out[k].outside += 1 }
        }
        // Each drop of the record is one of the rows; the rest are the links' drops.
        let mut rest = located.clone();
        for d in &drops {
            let i = rest.iter().position(|x| x == d);
            let i =
                i.unwrap_or_else(|| panic!("{how} {dir}: the router's drop {d:?} is no row lost there: {located:?}"));
            rest.remove(i);
        }
        assert_eq!(
            rest.len() as u64,
            rec.link_drops(router_links),
            "{how} {dir}: rows lost after the router that it did not drop: {rest:?}; {}",
            rec.conditions()
        );
        assert_eq!(
            out[k].sender_side,
            rec.link_drops(sender_links),
            "{how} {dir}: rows lost before the router; {}",
            rec.conditions()
        );
        // The same in the captures alone: each drop upstream of the router's loss rule, not
        // downstream. A resend has another IP ID, but not a SYN-ACK's (always 0): a packet seen
        // k times upstream, dropped d times, is seen k − d times downstream.
        for d in &drops {
            let count = |p: usize| frames[p].iter().filter(|x| x.as_ref() == Some(d)).count() as i64;
            let dropped = drops.iter().filter(|x| *x == d).count() as i64;
            assert_eq!(count(up) - count(down), dropped, "{how} {dir}: captures {} and {}: {d:?}", up + 1, down + 1);
        }
    }
    out
}

/// The TCP packets of a capture: (time ns, source address, payload length, frame length), for
/// checks independent of the code under test (the core's reader and decoder only).
pub fn packets(path: &Path) -> Vec<(u64, std::net::IpAddr, u32, u32)> {
    let mut r = tcpscope_core::capture::CaptureReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if let Ok(s) = tcpscope_core::decode::decode(rec.link_type, rec.data, rec.orig_len) {
            v.push((rec.ts_ns, s.src, s.payload_len, rec.orig_len));
        }
    }
    v
}

/// Writes a copy of capture `src` to `dst` keeping the frames `keep` (by frame number) with
/// their times mapped by `ts` (ns): as a microsecond pcap, or as a pcapng with nanosecond
/// timestamps (`if_tsresol` 9). Written here, not with the core's writer, so that the test's
/// captures do not depend on the code under test (and the core writes no pcapng).
pub fn rewrite(src: &Path, dst: &Path, keep: impl Fn(u64) -> bool, ts: impl Fn(u64) -> u64, pcapng_ns: bool) {
    let mut r = tcpscope_core::capture::CaptureReader::open(src).unwrap();
    let mut out = Vec::new();
    let mut header = false;
    while let Some(rec) = r.next_record().unwrap() {
        if !header {
            header = true;
            if pcapng_ns {
                // Section header (28 bytes), interface description with if_tsresol = 9 (32).
                for w in [0x0A0D_0D0Au32, 28, 0x1A2B_3C4D, 1, u32::MAX, u32::MAX, 28] {
                    out.extend_from_slice(&w.to_le_bytes());
                }
                out.extend_from_slice(&1u32.to_le_bytes());
                out.extend_from_slice(&32u32.to_le_bytes());
                out.extend_from_slice(&(rec.link_type as u16).to_le_bytes());
                out.extend_from_slice(&0u16.to_le_bytes());
                out.extend_from_slice(&65535u32.to_le_bytes());
                out.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
                out.extend_from_slice(&32u32.to_le_bytes());
            } else {
                for w in [0xA1B2_C3D4u32, 0x0004_0002, 0, 0, 65535, rec.link_type] {
                    out.extend_from_slice(&w.to_le_bytes());
                }
            }
        }
        if !keep(rec.frame) {
            continue;
        }
        let t = ts(rec.ts_ns);
        let cap = rec.data.len() as u32;
        if pcapng_ns {
            let pad = (4 - rec.data.len() % 4) % 4;
            let len = 32 + rec.data.len() as u32 + pad as u32;
            for w in [6u32, len, 0, (t >> 32) as u32, t as u32, cap, rec.orig_len] {
                out.extend_from_slice(&w.to_le_bytes());
            }
            out.extend_from_slice(rec.data);
            out.extend(std::iter::repeat_n(0u8, pad));
            out.extend_from_slice(&len.to_le_bytes());
        } else {
            for w in [(t / 1_000_000_000) as u32, (t % 1_000_000_000 / 1000) as u32, cap, rec.orig_len] {
                out.extend_from_slice(&w.to_le_bytes());
            }
            out.extend_from_slice(rec.data);
        }
    }
    std::fs::write(dst, out).unwrap();
}

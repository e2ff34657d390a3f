//! Experiment files (TOML): the path, the hosts, the traffic, a sweep and the trials.
//!
//! Every key is documented on its field below and in `docs/lab.md`. Unknown keys are errors
//! (a typo must not silently fall back to a default). A sweep names keys of the same file by
//! their dotted path (`"path.loss"`, `"hosts.cc"`, `"traffic.length"`) and lists the values
//! to try; several keys give their product. Each point is the base file with the point's
//! values put in, then checked like the base, so every point is validated before any run.
//!
//! ```toml
//! name = "loss-vs-cc"
//! trials = 2
//! [path]
//! rate = "20mbit"
//! queue_packets = 100
//! [traffic]
//! seconds = 4
//! [sweep]
//! "path.loss" = [0.0, 0.01]
//! "hosts.cc" = ["reno", "cubic"]
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// One experiment: the base settings (what every run shares) and the sweep.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Name (also the default output directory, `lab-NAME`).
    pub name: String,
    /// Free text, copied into the report.
    #[serde(default)]
    pub description: String,
    /// Runs per sweep point (default 1).
    #[serde(default = "one")]
    pub trials: u32,
    /// A run that has not finished after this many seconds fails (default 120).
    #[serde(default = "default_timeout")]
    pub timeout: f64,
    /// Capture the sender's and the receiver's link with tcpdump (default true). Without the
    /// captures a run has only ttcp's and the router's figures; for benchmarks of rates the
    /// capture cannot keep up with.
    #[serde(default = "yes")]
    pub capture: bool,
    /// Capture also at the router, on its link from the sender (`rtr0`, before its loss rule
    /// and its bottleneck queue) into `rtr.pcap` (default false): a third vantage point
    /// (`tcpscope correlate snd.pcap rtr.pcap rcv.pcap`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capture_router: bool,
    /// How many senders share the bottleneck, and their congestion controls.
    #[serde(default, skip_serializing_if = "Topology::is_default")]
    pub topology: Topology,
    /// The emulated path between sender and receiver (the router's settings).
    #[serde(default)]
    pub path: PathCfg,
    /// Sender's and receiver's TCP settings.
    #[serde(default)]
    pub hosts: Hosts,
    /// What the sender sends.
    #[serde(default)]
    pub traffic: Traffic,
    /// How the report draws the figures.
    #[serde(default)]
    pub report: ReportCfg,
}

fn one() -> u32 {
    1
}
fn default_timeout() -> f64 {
    120.0
}
fn yes() -> bool {
    true
}
fn default_mtu() -> u32 {
    1500
}
fn default_length() -> u32 {
    8192
}

/// Several senders sharing the bottleneck (default: one).
///
/// With more than one, each sender is a host of its own (a namespace `sndI`, address
/// `10.9.1.I`), all on a switch (a bridge in namespace `sw`) whose uplink is the path's first
/// link; sender I sends to the receiver's port `traffic.port + I - 1`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Number of senders (1–32; default 1).
    #[serde(default = "one")]
    pub senders: u32,
    /// Congestion control per sender, in order (`["reno", "cubic"]`); overrides `hosts.cc`.
    /// Empty: `hosts.cc` for every sender. Otherwise exactly `senders` names.
    #[serde(default)]
    pub cc: Vec<String>,
    /// Seconds between the starts of consecutive senders (sender I starts (I − 1) × stagger
    /// after the first; default 0: all at once).
    #[serde(default)]
    pub stagger: f64,
    /// One-way delay per sender, in order (`["5ms", "40ms"]`), each way, added to
    /// `path.delay` for that sender's packets alone (by the delay forwarder): senders with
    /// different round-trip times. Empty: none. Otherwise exactly `senders` delays.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delay: Vec<Delay>,
}

impl Default for Topology {
    fn default() -> Self {
        Topology { senders: 1, cc: Vec::new(), stagger: 0.0, delay: Vec::new() }
    }
}

impl Topology {
    fn is_default(&self) -> bool {
        *self == Topology::default()
    }
}

impl Experiment {
    /// The congestion control of sender `i` (1-based): `topology.cc[i - 1]`, else `hosts.cc`.
    pub fn sender_cc(&self, i: u32) -> Option<String> {
        self.topology.cc.get(i as usize - 1).cloned().or_else(|| self.hosts.cc.clone())
    }

    /// The one-way delay of sender `i`'s path, µs: `path.delay` plus `topology.delay[i - 1]`.
    pub fn sender_delay_us(&self, i: u32) -> u64 {
        self.path.delay.map_or(0, |d| d.0) + self.topology.delay.get(i as usize - 1).map_or(0, |d| d.0)
    }

    /// Whether the delay forwarder is on the path: a delay (the path's or a sender's) or
    /// reordering.
    pub fn forwarder(&self) -> bool {
        self.path.delay.is_some_and(|d| d.0 > 0)
            || self.topology.delay.iter().any(|d| d.0 > 0)
            || self.path.reorder > 0.0
    }
}

/// The path: what the router does to packets in each direction.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PathCfg {
    /// Bottleneck rate from sender to receiver (the router's egress towards the receiver), as
    /// tc writes rates: `"10mbit"`, `"500kbit"`, `"1gbit"`, or a number of bits per second.
    /// Absent: no rate limit (veth speed).
    #[serde(default)]
    pub rate: Option<Rate>,
    /// Rate from receiver to sender (the ACK path). Absent: no limit.
    #[serde(default)]
    pub reverse_rate: Option<Rate>,
    /// Queue limit of the bottleneck in packets (pfifo). At most one of `queue_packets` and
    /// `queue_bytes`; neither: 1000 packets.
    #[serde(default)]
    pub queue_packets: Option<u32>,
    /// Queue limit of the bottleneck in bytes (bfifo).
    #[serde(default)]
    pub queue_bytes: Option<u32>,
    /// Queue discipline of the bottleneck: `"droptail"` (pfifo/bfifo, the default), or
    /// `"codel"` / `"fq_codel"` where the kernel has them (limit in packets).
    #[serde(default)]
    pub discipline: Discipline,
    /// Probability that the router drops a packet going from sender to receiver (random,
    /// independent; nftables `numgen random`, resolution 1e-6). Default 0.
    #[serde(default)]
    pub loss: f64,
    /// The same for packets from receiver to sender.
    #[serde(default)]
    pub reverse_loss: f64,
    /// MTU of every link (default 1500).
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// One-way delay, each way (RTT += 2 × delay), by the user-space delay forwarder
    /// ([`crate::delay`]): `"10ms"`, `"250us"`, `"0.5s"`, or a number of milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Delay>,
    /// Probability that the forwarder holds a frame going from sender to receiver back by
    /// `reorder_gap` more than the others, so that the frames behind it overtake it (by the delay
    /// forwarder, which it puts on the path even without `delay`). Default 0.
    #[serde(default)]
    pub reorder: f64,
    /// How much longer a reordered frame is held (default 1 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_gap: Option<Delay>,
}

impl Default for PathCfg {
    fn default() -> Self {
        PathCfg {
            rate: None,
            reverse_rate: None,
            queue_packets: None,
            queue_bytes: None,
            discipline: Discipline::Droptail,
            loss: 0.0,
            reverse_loss: 0.0,
            mtu: 1500,
            delay: None,
            reorder: 0.0,
            reorder_gap: None,
        }
    }
}

/// Queue disciplines of the bottleneck.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Discipline {
    /// First in, first out, drop at the tail when full (pfifo or bfifo).
    #[default]
    Droptail,
    /// CoDel (needs the kernel's sch_codel).
    Codel,
    /// FQ-CoDel (needs the kernel's sch_fq_codel).
    FqCodel,
}

/// A rate in bits per second; written like tc (`"10mbit"`) or as a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "toml::Value", into = "u64")]
pub struct Rate(pub u64);

impl From<Rate> for u64 {
    fn from(r: Rate) -> u64 {
        r.0
    }
}

impl TryFrom<toml::Value> for Rate {
    type Error = String;
    fn try_from(v: toml::Value) -> Result<Rate, String> {
        match v {
            toml::Value::Integer(n) if n > 0 => Ok(Rate(n as u64)),
            toml::Value::Float(f) if f >= 1.0 && f.is_finite() => Ok(Rate(f as u64)),
            toml::Value::String(s) => parse_rate(&s).map(Rate),
            other => Err(format!(
                "a rate must be like \"10mbit\" or a positive number of bits/s, not {}",
                value_literal(&other)
            )),
        }
    }
}

/// Parses a tc-style rate: a number with `bit`, `kbit`, `mbit`, `gbit` (case-insensitive;
/// decimal multiples, as tc).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult = match unit.trim() {
        "" | "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        u => return Err(format!("rate \"{s}\": unknown unit `{u}` (bit, kbit, mbit, gbit)")),
    };
    let n: f64 = num.parse().map_err(|_| format!("rate \"{s}\": not a number"))?;
    let bps = n * mult;
    if !(bps >= 1.0 && bps.is_finite()) {
        return Err(format!("rate \"{s}\" must be positive"));
    }
    Ok(bps.round() as u64)
}

/// A one-way delay, in µs; written `"10ms"`, `"250us"`, `"1s"` or as milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "toml::Value", into = "String")]
pub struct Delay(pub u64);

impl From<Delay> for String {
    fn from(d: Delay) -> String {
        format!("{}us", d.0)
    }
}

impl TryFrom<toml::Value> for Delay {
    type Error = String;
    fn try_from(v: toml::Value) -> Result<Delay, String> {
        let ms = |x: f64| {
            if x.is_finite() && (0.0..=10_000.0).contains(&x) {
                Ok(Delay((x * 1000.0).round() as u64))
            } else {
                Err(format!("a delay between 0 and 10 s, not {x} ms"))
            }
        };
        match v {
            toml::Value::Integer(n) => ms(n as f64),
            toml::Value::Float(f) => ms(f),
            toml::Value::String(s) => {
                let t = s.trim();
                let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
                let (num, unit) = t.split_at(split);
                let n: f64 = num.parse().map_err(|_| format!("delay \"{s}\": not a number"))?;
                match unit.trim() {
                    "us" | "µs" => ms(n / 1000.0),
                    "ms" | "" => ms(n),
                    "s" => ms(n * 1000.0),
                    u => Err(format!("delay \"{s}\": unknown unit `{u}` (us, ms, s)")),
                }
            }
            other => Err(format!("a delay must be like \"10ms\", not {}", value_literal(&other))),
        }
    }
}

/// TCP settings of the two hosts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Hosts {
    /// Congestion control of both ends (`"reno"`, `"cubic"`, `"bbr"`; must be in the kernel's
    /// `tcp_available_congestion_control`). Absent: the kernel's default.
    #[serde(default)]
    pub cc: Option<String>,
    /// Ask for ECN (net.ipv4.tcp_ecn = 1 on both hosts; default false).
    #[serde(default)]
    pub ecn: bool,
    /// Nagle's algorithm on the sender (default true; false sets TCP_NODELAY, ttcp's `-D`).
    #[serde(default = "yes")]
    pub nagle: bool,
    /// SO_SNDBUF of the sender in bytes (ttcp `-b` on `-t`). Absent: the kernel's autotuning.
    #[serde(default)]
    pub sndbuf: Option<u32>,
    /// SO_RCVBUF of the receiver in bytes (ttcp `-b` on `-r`). Absent: autotuning.
    #[serde(default)]
    pub rcvbuf: Option<u32>,
    /// The receiver acknowledges every segment at once (TCP_QUICKACK after each read; ttcp
    /// `--quickack`) instead of delaying ACKs (default false).
    #[serde(default)]
    pub quickack: bool,
    /// Leave TSO/GSO/GRO on for the links (default false: off, so that the captures and the
    /// queue see wire-sized packets).
    #[serde(default)]
    pub offload: bool,
    /// Leave TSO/GSO on at the senders' links only (default false): the senders' captures (and
    /// the router's, on its link from them) see super-segments, which the router cuts to the
    /// MTU on its link to the receiver. For `correlate`'s byte-coverage matching.
    #[serde(default)]
    pub sender_tso: bool,
    /// Turn GRO on at the receiver's link only (default false): the receiver's capture sees the
    /// segments it merged. For `correlate`'s byte-coverage matching.
    #[serde(default)]
    pub receiver_gro: bool,
    /// With `receiver_gro`: the most bytes one GRO merge holds at the receiver (`ip link set
    /// rcv0 gro_max_size`), and a merge kept open between receive polls for up to 1 ms
    /// (`gro_flush_timeout`, as a NIC's interrupt coalescing does). Absent: the kernel's
    /// (64 KiB, flushed at each poll). On the lab's veth links the receiver's merges then
    /// begin and end elsewhere than the sender's TSO super-segments: without it, they are
    /// merged back into the super-segments the sender's capture saw. For `correlate`'s
    /// byte-coverage matching of TSO and GRO together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_gro_bytes: Option<u32>,
}

impl Default for Hosts {
    fn default() -> Self {
        Hosts {
            cc: None,
            ecn: false,
            nagle: true,
            sndbuf: None,
            rcvbuf: None,
            quickack: false,
            offload: false,
            sender_tso: false,
            receiver_gro: false,
            receiver_gro_bytes: None,
        }
    }
}

/// What the sender sends: one ttcp transfer (`-s`, the pattern).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// `"bulk"` (one ttcp transfer per sender, the default) or `"short"` (each sender opens
    /// `connections` connections of `bytes` bytes each, one after another or at
    /// `arrival_rate`).
    #[serde(default)]
    pub kind: TrafficKind,
    /// Short connections: connections per sender (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
    /// Short connections: bytes each connection carries (default 100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Short connections: new connections per second per sender, at exponentially distributed
    /// intervals (Poisson arrivals; they may overlap). Absent: one after the other, each
    /// starting when the previous one has finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_rate: Option<f64>,
    /// Bytes per write, ttcp's `-l` (default 8192).
    #[serde(default = "default_length")]
    pub length: u32,
    /// Number of writes, ttcp's `-n`. Exactly one of `count` and `seconds`; neither: ttcp's
    /// default, 2048.
    #[serde(default)]
    pub count: Option<u64>,
    /// Send for this many seconds (bulk transfer; `ttcp --time`).
    #[serde(default)]
    pub seconds: Option<f64>,
    /// TCP port of the receiver (default 5001).
    #[serde(default = "default_port")]
    pub port: u16,
}

fn default_port() -> u16 {
    5001
}

impl Default for Traffic {
    fn default() -> Self {
        Traffic {
            kind: TrafficKind::Bulk,
            connections: None,
            bytes: None,
            arrival_rate: None,
            length: 8192,
            count: None,
            seconds: None,
            port: 5001,
        }
    }
}

impl Traffic {
    /// Short connections per sender.
    pub fn short_connections(&self) -> u32 {
        self.connections.unwrap_or(10)
    }
    /// Bytes per short connection.
    pub fn short_bytes(&self) -> u64 {
        self.bytes.unwrap_or(100_000)
    }
}

/// What the senders send.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum TrafficKind {
    /// One long transfer per sender (ttcp `-t -s`).
    #[default]
    Bulk,
    /// Many short connections per sender, each carrying `traffic.bytes`.
    Short,
}

/// How `lab report` draws the figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ReportCfg {
    /// The swept key on the horizontal axis (default: the first sweep key in sorted order).
    #[serde(default)]
    pub x: Option<String>,
    /// The horizontal axis: `"points"` (the swept values evenly spaced, in order; the default),
    /// `"linear"` or `"log"` (positions by value).
    #[serde(default)]
    pub x_axis: XAxis,
    /// Runs whose time-sequence plots the report draws: `"p03"` (its first trial) or
    /// `"p03/t2"`. Absent: the first trial of every point, up to 12 points; `[]`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_sequence: Option<Vec<String>>,
}

/// A run named in `report.time_sequence`: `"p03"` or `"p03/t2"` → (3, 2).
pub fn run_ref(s: &str) -> Option<(usize, u32)> {
    let (p, t) = match s.split_once('/') {
        Some((p, t)) => (p, t.strip_prefix('t')?.parse().ok()?),
        None => (s, 1),
    };
    let digits = p.strip_prefix('p')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || t == 0 {
        return None;
    }
    Some((digits.parse().ok()?, t))
}

/// How the report's figures place the swept values.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum XAxis {
    /// Evenly spaced, in order (sweeps are usually chosen values: 0, 0.001, 0.01, 0.05).
    #[default]
    Points,
    /// By value.
    Linear,
    /// By the logarithm of the value (values must be positive; else as `points`).
    Log,
}

/// A checked experiment file: its base and every sweep point.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The base settings (the file without `[sweep]`).
    pub base: Experiment,
    /// The sweep's keys, sorted.
    pub keys: Vec<String>,
    /// Every point of the sweep (one point, with no values, without a sweep).
    pub points: Vec<Point>,
    /// The start of the run's namespace names ([`crate::netns::Namespaces::with_prefix`];
    /// default `tsl`): a test that runs the lab beside other users of the machine's namespaces
    /// gives its own, and only namespaces with it are ever removed.
    pub ns_prefix: String,
}

/// One sweep point: the values of the swept keys and the settings they give.
#[derive(Debug, Clone)]
pub struct Point {
    /// 0-based index in the sweep.
    pub index: usize,
    /// The swept keys' values, in the plan's key order.
    pub values: Vec<(String, toml::Value)>,
    /// The settings of this point.
    pub exp: Experiment,
}

impl Point {
    /// The directory name of the point: `p03-loss=0.01,cc=bbr` (keys by their last part).
    pub fn dir_name(&self) -> String {
        let mut s = format!("p{:02}", self.index);
        for (i, (k, v)) in self.values.iter().enumerate() {
            s.push(if i == 0 { '-' } else { ',' });
            let short = k.rsplit('.').next().unwrap_or(k);
            s += &format!("{short}={}", value_text(v));
        }
        s.chars().map(|c| if c.is_ascii_alphanumeric() || "._=,-+".contains(c) { c } else { '_' }).collect()
    }
}

/// A TOML value as plain text (strings without quotes).
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        // A list (topology.cc): its items joined by `+`, `reno+cubic`.
        toml::Value::Array(a) => a.iter().map(value_text).collect::<Vec<_>>().join("+"),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// A TOML value as it is written in the file (strings quoted).
fn value_literal(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("{s:?}"),
        other => value_text(other),
    }
}

/// An experiment file that could not be used: the file, and where and why.
#[derive(Debug)]
pub struct FileError {
    /// The file.
    pub file: String,
    /// What is wrong (with the key, and the line when known).
    pub msg: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.msg)
    }
}

impl std::error::Error for FileError {}

/// A swept key's values: a list, or a range `{ from, to, step }` (both ends included).
#[derive(Deserialize)]
#[serde(untagged)]
enum SweepValues {
    List(Vec<toml::Value>),
    Range { from: f64, to: f64, step: f64 },
}

/// Reads and checks an experiment file.
pub fn load(path: &Path) -> Result<Plan, FileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| FileError { file: file.clone(), msg: e.to_string() })?;
    parse(&text).map_err(|msg| FileError { file, msg })
}

/// Parses and checks the text of an experiment file.
pub fn parse(text: &str) -> Result<Plan, String> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
    let sweep_val = table.remove("sweep");
    // The base, checked; `locate` finds the line of a key that the message names.
    let base: Experiment =
        Experiment::deserialize(toml::Value::Table(table.clone())).map_err(|e| locate(text, &e.to_string()))?;
    check(&base)?;
    let sweep: BTreeMap<String, SweepValues> = match sweep_val {
        None => BTreeMap::new(),
        Some(v) => BTreeMap::<String, SweepValues>::deserialize(v).map_err(|e| {
            format!("[sweep]: {} (each key takes a list, or {{ from, to, step }})", e.to_string().trim_end())
        })?,
    };
    let mut keys = Vec::new();
    let mut lists = Vec::new();
    for (k, vals) in sweep {
        let list = match vals {
            SweepValues::List(l) => l,
            SweepValues::Range { from, to, step } => {
                range(from, to, step).map_err(|e| format!("sweep key `{k}`: {e}"))?
            }
        };
        if list.is_empty() {
            return Err(format!("sweep key `{k}`: empty list"));
        }
        if k.split('.').next() == Some("sweep") || k == "name" || k == "trials" {
            return Err(format!("sweep key `{k}`: cannot be swept"));
        }
        keys.push(k);
        lists.push(list);
    }
    if let Some(x) = &base.report.x
        && !keys.contains(x)
    {
        return Err(format!("report.x = \"{x}\" is not a sweep key ({})", keys.join(", ")));
    }
    // The product of the lists, the last key varying fastest.
    let total: usize = lists.iter().map(|l| l.len()).product();
    for r in base.report.time_sequence.iter().flatten() {
        match run_ref(r) {
            Some((p, t)) if p < total && t <= base.trials => {}
            Some(_) => {
                return Err(format!(
                    "report.time_sequence: \"{r}\" is not a run of this experiment ({total} points, {} trials)",
                    base.trials
                ));
            }
            None => return Err(format!("report.time_sequence: \"{r}\" is not like \"p03\" or \"p03/t2\"")),
        }
    }
    if total > 10_000 {
        return Err(format!("the sweep has {total} points; more than 10000 is surely a mistake"));
    }
    let mut points = Vec::with_capacity(total);
    for index in 0..total {
        let mut rem = index;
        let mut values = vec![toml::Value::Boolean(false); keys.len()];
        for i in (0..keys.len()).rev() {
            values[i] = lists[i][rem % lists[i].len()].clone();
            rem /= lists[i].len();
        }
        let mut t = table.clone();
        let values: Vec<(String, toml::Value)> = keys.iter().cloned().zip(values).collect();
        let label = values.iter().map(|(k, v)| format!("{k} = {}", value_literal(v))).collect::<Vec<_>>().join(", ");
        for (k, v) in &values {
            set(&mut t, k, v.clone()).map_err(|e| format!("sweep key `{k}`: {e}"))?;
        }
        let exp = Experiment::deserialize(toml::Value::Table(t))
            .map_err(|e| format!("sweep point {label}: {}", e.to_string().trim_end()))?;
        check(&exp).map_err(|e| format!("sweep point {label}: {e}"))?;
        points.push(Point { index, values, exp });
    }
    Ok(Plan { base, keys, points, ns_prefix: crate::netns::PREFIX.to_string() })
}

/// toml's message for a value deserialized from a table has no line; find the key's line in
/// the text when the message names a key.
fn locate(text: &str, msg: &str) -> String {
    let msg = msg.trim_end();
    let key = msg.split('`').nth(1).filter(|_| msg.contains("unknown field") || msg.contains("missing field"));
    if let Some(k) = key
        && let Some(n) = text.lines().position(|l| l.trim_start().starts_with(k))
    {
        return format!("line {}: {msg}", n + 1);
    }
    msg.to_string()
}

fn range(from: f64, to: f64, step: f64) -> Result<Vec<toml::Value>, String> {
    if !(step > 0.0 && from.is_finite() && to.is_finite() && to >= from) {
        return Err(format!("range from {from} to {to} step {step}: need step > 0 and to >= from"));
    }
    let n = ((to - from) / step + 1e-9).floor() as usize + 1;
    let ints = [from, to, step].iter().all(|x| x.fract() == 0.0);
    Ok((0..n)
        .map(|i| {
            let x = from + step * i as f64;
            if ints { toml::Value::Integer(x as i64) } else { toml::Value::Float(x) }
        })
        .collect())
}

/// Puts `v` at the dotted key, making tables on the way.
fn set(t: &mut toml::Table, key: &str, v: toml::Value) -> Result<(), String> {
    let mut parts = key.split('.').peekable();
    let mut cur = t;
    while let Some(p) = parts.next() {
        if parts.peek().is_none() {
            cur.insert(p.to_string(), v);
            return Ok(());
        }
        let next = cur.entry(p.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = next.as_table_mut().ok_or_else(|| format!("`{p}` is not a table"))?;
    }
    Err("empty key".into())
}

/// Checks what types alone cannot.
pub fn check(e: &Experiment) -> Result<(), String> {
    if (e.path.delay.is_some() || e.path.reorder > 0.0 || !e.topology.delay.is_empty()) && e.hosts.offload {
        return Err("path.delay, path.reorder or topology.delay with hosts.offload = true: the delay \
                    forwarder moves wire-sized frames; leave offloads off"
            .into());
    }
    if (e.path.delay.is_some() || e.path.reorder > 0.0 || !e.topology.delay.is_empty()) && e.hosts.sender_tso {
        return Err("path.delay, path.reorder or topology.delay with hosts.sender_tso = true: the delay \
                    forwarder moves wire-sized frames; leave offloads off"
            .into());
    }
    if e.hosts.receiver_gro_bytes.is_some() && !e.hosts.receiver_gro {
        return Err("hosts.receiver_gro_bytes without hosts.receiver_gro = true".into());
    }
    if !(0.0..1.0).contains(&e.path.reorder) {
        return Err(format!("path.reorder = {}: a probability in [0, 1)", e.path.reorder));
    }
    if e.trials == 0 {
        return Err("trials must be at least 1".into());
    }
    if !(e.timeout.is_finite() && e.timeout > 0.0) {
        return Err(format!("timeout must be a positive number of seconds, not {}", e.timeout));
    }
    for (k, p) in [("path.loss", e.path.loss), ("path.reverse_loss", e.path.reverse_loss)] {
        if !(0.0..1.0).contains(&p) {
            return Err(format!("{k} = {p}: a probability in [0, 1)"));
        }
    }
    if e.path.queue_packets.is_some() && e.path.queue_bytes.is_some() {
        return Err("path.queue_packets and path.queue_bytes: give one of them".into());
    }
    if e.path.queue_packets == Some(0) || e.path.queue_bytes == Some(0) {
        return Err("path.queue_packets / queue_bytes must be positive".into());
    }
    if e.path.queue_bytes.is_some() && e.path.discipline != Discipline::Droptail {
        return Err("path.queue_bytes: only droptail (bfifo) takes a limit in bytes; use queue_packets".into());
    }
    if !(576..=65535).contains(&e.path.mtu) {
        return Err(format!("path.mtu = {}: between 576 and 65535", e.path.mtu));
    }
    if e.traffic.port == 0 {
        return Err("traffic.port must not be 0".into());
    }
    if e.traffic.length == 0 {
        return Err("traffic.length must be positive".into());
    }
    if e.traffic.count.is_some() && e.traffic.seconds.is_some() {
        return Err("traffic.count and traffic.seconds: give one of them".into());
    }
    if let Some(s) = e.traffic.seconds
        && !(s.is_finite() && s > 0.0 && s < e.timeout)
    {
        return Err(format!("traffic.seconds = {s}: positive, and less than timeout ({})", e.timeout));
    }
    let t = &e.topology;
    if !(1..=32).contains(&t.senders) {
        return Err(format!("topology.senders = {}: between 1 and 32", t.senders));
    }
    if !t.cc.is_empty() && t.cc.len() != t.senders as usize {
        return Err(format!(
            "topology.cc names {} algorithms for {} senders: one per sender, or none",
            t.cc.len(),
            t.senders
        ));
    }
    if !t.delay.is_empty() && t.delay.len() != t.senders as usize {
        return Err(format!(
            "topology.delay gives {} delays for {} senders: one per sender, or none",
            t.delay.len(),
            t.senders
        ));
    }
    if !(t.stagger.is_finite() && t.stagger >= 0.0 && t.stagger * f64::from(t.senders - 1) < e.timeout) {
        return Err(format!("topology.stagger = {}: non-negative, and every sender starts before timeout", t.stagger));
    }
    if u32::from(e.traffic.port) + t.senders - 1 > 65535 {
        return Err("traffic.port + topology.senders - 1 must be a port number".into());
    }
    let tr = &e.traffic;
    match tr.kind {
        TrafficKind::Bulk => {
            if tr.connections.is_some() || tr.bytes.is_some() || tr.arrival_rate.is_some() {
                return Err("traffic.connections, bytes and arrival_rate are for kind = \"short\"".into());
            }
        }
        TrafficKind::Short => {
            if tr.count.is_some() || tr.seconds.is_some() {
                return Err("traffic.count and traffic.seconds are for kind = \"bulk\"; short connections \
                            take connections and bytes"
                    .into());
            }
            if tr.short_connections() == 0 || tr.short_connections() > 100_000 {
                return Err(format!("traffic.connections = {}: between 1 and 100000", tr.short_connections()));
            }
            if tr.short_bytes() == 0 {
                return Err("traffic.bytes must be positive".into());
            }
            if let Some(r) = tr.arrival_rate
                && !(r.is_finite() && r > 0.0)
            {
                return Err(format!("traffic.arrival_rate = {r}: a positive number of connections per second"));
            }
        }
    }
    let avail = crate::ttcp::available_cc();
    for (key, cc) in e.hosts.cc.iter().map(|c| ("hosts.cc", c)).chain(t.cc.iter().map(|c| ("topology.cc", c))) {
        if avail != "unknown" && !avail.split_whitespace().any(|a| a == cc) {
            return Err(format!("{key} = \"{cc}\": not in this kernel's tcp_available_congestion_control ({avail})"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "name = \"t\"\n[path]\nrate = \"10mbit\"\nqueue_packets = 20\n[traffic]\nseconds = 2\n";

    #[test]
    fn rates_as_tc_writes_them() {
        assert_eq!(parse_rate("10mbit"), Ok(10_000_000));
        assert_eq!(parse_rate("1.5Gbit"), Ok(1_500_000_000));
        assert_eq!(parse_rate("800kbit"), Ok(800_000));
        assert_eq!(parse_rate("64000"), Ok(64_000));
        assert!(parse_rate("10mbps").unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn sweep_is_the_product_last_key_fastest() {
        let text = format!("{BASE}[sweep]\n\"path.loss\" = [0.0, 0.01]\n\"hosts.cc\" = [\"reno\", \"cubic\"]\n");
        let plan = parse(&text).unwrap();
        assert_eq!(plan.keys, ["hosts.cc", "path.loss"]);
        let got: Vec<(Option<String>, f64)> =
            plan.points.iter().map(|p| (p.exp.hosts.cc.clone(), p.exp.path.loss)).collect();
        let r = |s: &str| Some(s.to_string());
        assert_eq!(got, [(r("reno"), 0.0), (r("reno"), 0.01), (r("cubic"), 0.0), (r("cubic"), 0.01)]);
        assert_eq!(plan.points[1].dir_name(), "p01-cc=reno,loss=0.01");
        // Every other key as in the base.
        assert!(plan.points.iter().all(|p| p.exp.path.rate == Some(Rate(10_000_000))));
    }

    #[test]
    fn ranges_include_both_ends() {
        let plan =
            parse(&format!("{BASE}[sweep]\n\"path.queue_packets\" = {{ from = 10, to = 50, step = 20 }}\n")).unwrap();
        let q: Vec<Option<u32>> = plan.points.iter().map(|p| p.exp.path.queue_packets).collect();
        assert_eq!(q, [Some(10), Some(30), Some(50)]);
    }

    #[test]
    fn bad_input_names_the_key() {
        let e = parse("name = \"t\"\n[path]\nlos = 0.1\n").unwrap_err();
        assert!(e.contains("los") && e.contains("line 3"), "{e}");
        let e = parse(&format!("{BASE}[sweep]\n\"path.los\" = [0.1]\n")).unwrap_err();
        assert!(e.contains("los"), "{e}");
        let e = parse(&format!("{BASE}[sweep]\n\"path.loss\" = [0.1, 1.5]\n")).unwrap_err();
        assert!(e.contains("path.loss = 1.5"), "{e}");
        let e = parse(&format!("{BASE}[sweep]\n\"path.loss\" = [\"x\"]\n")).unwrap_err();
        assert!(e.contains("sweep point path.loss = \"x\""), "{e}");
        let e = parse("name = \"t\"\n[path]\nrate = \"10mbps\"\n").unwrap_err();
        assert!(e.contains("unknown unit"), "{e}");
        let e = parse("name = \"t\"\n[traffic]\ncount = 5\nseconds = 2\n").unwrap_err();
        assert!(e.contains("traffic.count and traffic.seconds"), "{e}");
        let e = parse("name = \"t\"\n[path\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn senders_and_short_connections() {
        let text = format!(
            "{BASE}[topology]\nsenders = 2\nstagger = 0.5\n[sweep]\n\"topology.cc\" = [[\"reno\", \"cubic\"], [\"cubic\", \"cubic\"]]\n"
        );
        let plan = parse(&text).unwrap();
        assert_eq!(plan.points[0].dir_name(), "p00-cc=reno+cubic");
        let e = &plan.points[0].exp;
        assert_eq!((e.topology.senders, e.topology.stagger), (2, 0.5));
        assert_eq!((e.sender_cc(1), e.sender_cc(2)), (Some("reno".into()), Some("cubic".into())));
        // Without topology.cc every sender takes hosts.cc.
        let p = parse("name = \"t\"\n[topology]\nsenders = 3\n[hosts]\ncc = \"reno\"\n").unwrap();
        assert_eq!(p.base.sender_cc(3), Some("reno".into()));
        let e = parse("name = \"t\"\n[topology]\nsenders = 3\ncc = [\"reno\"]\n").unwrap_err();
        assert!(e.contains("topology.cc names 1 algorithms for 3 senders"), "{e}");
        let e = parse("name = \"t\"\n[topology]\nsenders = 0\n").unwrap_err();
        assert!(e.contains("topology.senders = 0"), "{e}");
        let e = parse("name = \"t\"\n[topology]\ncc = [\"nosuchcc\"]\n").unwrap_err();
        assert!(e.contains("topology.cc = \"nosuchcc\""), "{e}");
        let short = "name = \"t\"\n[traffic]\nkind = \"short\"\nconnections = 5\nbytes = 20000\narrival_rate = 4\n";
        let p = parse(short).unwrap();
        assert_eq!(p.base.traffic.kind, TrafficKind::Short);
        assert_eq!((p.base.traffic.short_connections(), p.base.traffic.short_bytes()), (5, 20000));
        assert_eq!(p.base.traffic.arrival_rate, Some(4.0));
        let e = parse(&format!("{short}seconds = 3\n")).unwrap_err();
        assert!(e.contains("for kind = \"bulk\""), "{e}");
        let e = parse("name = \"t\"\n[traffic]\nbytes = 5\n").unwrap_err();
        assert!(e.contains("for kind = \"short\""), "{e}");
        let e = parse("name = \"t\"\n[traffic]\nkind = \"short\"\narrival_rate = 0\n").unwrap_err();
        assert!(e.contains("arrival_rate = 0"), "{e}");
        let e = parse("name = \"t\"\n[traffic]\nkind = \"long\"\n").unwrap_err();
        assert!(e.contains("long"), "{e}");
    }

    #[test]
    fn per_sender_delays() {
        let text = "name = \"t\"\n[topology]\nsenders = 2\n[path]\ndelay = \"1ms\"\n[sweep]\n\"topology.delay\" = \
                    [[\"2ms\", \"10ms\"], [\"2ms\", 2]]\n";
        let plan = parse(text).unwrap();
        assert_eq!(plan.points[0].dir_name(), "p00-delay=2ms+10ms");
        let e = &plan.points[0].exp;
        assert!(e.forwarder());
        // path.delay plus the sender's own.
        assert_eq!((e.sender_delay_us(1), e.sender_delay_us(2)), (3_000, 11_000));
        assert_eq!(plan.points[1].exp.sender_delay_us(2), 3_000);
        // A sender's delay alone puts the forwarder on the path.
        let p = parse("name = \"t\"\n[topology]\nsenders = 2\ndelay = [0, \"250us\"]\n").unwrap();
        assert!(p.base.forwarder());
        assert_eq!((p.base.sender_delay_us(1), p.base.sender_delay_us(2)), (0, 250));
        assert!(!parse("name = \"t\"\n[topology]\nsenders = 2\n").unwrap().base.forwarder());
        let e = parse("name = \"t\"\n[topology]\nsenders = 3\ndelay = [\"1ms\"]\n").unwrap_err();
        assert!(e.contains("topology.delay gives 1 delays for 3 senders"), "{e}");
        let e = parse("name = \"t\"\n[topology]\nsenders = 2\ndelay = [\"1ms\", \"1h\"]\n").unwrap_err();
        assert!(e.contains("topology") && e.contains("unknown unit"), "{e}");
        let e = parse("name = \"t\"\n[topology]\ndelay = [1]\n[hosts]\noffload = true\n").unwrap_err();
        assert!(e.contains("topology.delay with hosts.offload"), "{e}");
    }

    #[test]
    fn time_sequence_names_runs() {
        assert_eq!(run_ref("p03"), Some((3, 1)));
        assert_eq!(run_ref("p12/t2"), Some((12, 2)));
        assert_eq!(run_ref("p1/t0"), None);
        assert_eq!(run_ref("q1"), None);
        assert_eq!(run_ref("p/t1"), None);
        let ok = format!(
            "{BASE}trials = 2\n[report]\ntime_sequence = [\"p00/t2\", \"p01\"]\n[sweep]\n\"path.loss\" = [0.0, 0.01]\n"
        );
        // `trials` must come before the tables.
        let ok = ok.replacen("trials = 2\n", "", 1).replacen("name = \"t\"\n", "name = \"t\"\ntrials = 2\n", 1);
        assert!(parse(&ok).is_ok(), "{:?}", parse(&ok).err());
        let e = parse(&ok.replace("p01\"", "p02\"")).unwrap_err();
        assert!(e.contains("\"p02\" is not a run"), "{e}");
        let e = parse(&ok.replace("p00/t2", "p00/t3")).unwrap_err();
        assert!(e.contains("\"p00/t3\" is not a run"), "{e}");
        let e = parse(&ok.replace("p01\"", "first\"")).unwrap_err();
        assert!(e.contains("not like"), "{e}");
    }

    /// Every example experiment of the repository is a valid file.
    #[test]
    fn the_examples_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab");
        let mut n = 0;
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "toml") {
                load(&f).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 8, "{n} examples in {}", dir.display());
    }

    #[test]
    fn delays_and_refusals() {
        let d = |t: &str| parse(&format!("name = \"t\"\n[path]\ndelay = {t}\n")).map(|p| p.base.path.delay);
        assert_eq!(d("\"10ms\""), Ok(Some(Delay(10_000))));
        assert_eq!(d("\"250us\""), Ok(Some(Delay(250))));
        assert_eq!(d("2.5"), Ok(Some(Delay(2_500))));
        assert!(d("\"10 parsecs\"").unwrap_err().contains("unknown unit"));
        let e = parse("name = \"t\"\n[path]\nreorder = 1.5\n").unwrap_err();
        assert!(e.contains("path.reorder = 1.5"), "{e}");
        let e = parse("name = \"t\"\n[path]\ndelay = \"1ms\"\n[hosts]\noffload = true\n").unwrap_err();
        assert!(e.contains("offload"), "{e}");
        let e = parse("name = \"t\"\n[path]\ndelay = \"1ms\"\n[hosts]\nsender_tso = true\n").unwrap_err();
        assert!(e.contains("hosts.sender_tso"), "{e}");
        let p = parse("name = \"t\"\n[path]\ndelay = \"1ms\"\n[hosts]\nreceiver_gro = true\n").unwrap();
        assert!(p.base.hosts.receiver_gro && !p.base.hosts.sender_tso);
        let e = parse("name = \"t\"\n[hosts]\nreceiver_gro_bytes = 20000\n").unwrap_err();
        assert!(e.contains("hosts.receiver_gro_bytes"), "{e}");
        let p = parse("name = \"t\"\n[hosts]\nsender_tso = true\nreceiver_gro = true\nreceiver_gro_bytes = 20000\n")
            .unwrap();
        assert_eq!(p.base.hosts.receiver_gro_bytes, Some(20000));
    }
}

//! Command-line flags.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use tcpscope_core::capture::{TimeSpec, Window};

/// TCP trace analysis: what happened on every connection of a packet capture.
#[derive(Parser, Debug)]
#[command(name = "tcpscope", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses the command line; `-r FILE` joins the TRACEs (first), so that the commands see
    /// one list.
    pub fn parse_args() -> Cli {
        let mut cli = Cli::parse();
        match &mut cli.command {
            Command::Conns(c)
            | Command::Print(PrintArgs { common: c })
            | Command::Stats(StatsArgs { common: c, .. })
            | Command::States(c) => c.take_read(),
            Command::Screen(s) => s.common.take_read(),
            Command::Export(e) => e.common.take_read(),
            Command::View(v) => v.common.take_read(),
            Command::Report(r) => r.common.take_read(),
            Command::Plot(p) => p.trace = p.read.take().or(p.trace_arg.take()).unwrap_or_default(),
            _ => {}
        }
        cli
    }
}

impl CommonArgs {
    fn take_read(&mut self) {
        self.traces.splice(0..0, self.read.drain(..));
    }
}

impl ViewCommon {
    fn take_read(&mut self) {
        self.traces.splice(0..0, self.read.drain(..));
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List connections, one line each: endpoints, packets and bytes each way, duration, state.
    Conns(CommonArgs),
    /// Full per-connection, per-direction statistics (both directions side by side).
    Stats(StatsArgs),
    /// How good the capture is, per file and per connection: packets it missed, frames recorded
    /// twice, time going backwards, snaplen cuts, offloaded segments, where the capture point
    /// sits (docs/quality.md).
    Quality(CommonArgs),
    /// Rank connections by trouble and say why: out-of-sequence classes, what limited each
    /// connection, burstiness, a verdict (boring connections hidden; see docs/screening.md).
    Screen(ScreenArgs),
    /// The TCP state each endpoint of a connection went through (RFC 9293, inferred from the
    /// capture), with the segment that caused every transition: `states TRACE -c ID`.
    States(CommonArgs),
    /// Draw a plot of one connection (or several on one scale) as SVG, PNG or xplot (.xpl).
    Plot(PlotArgs),
    /// Write the analysis as tables (Parquet, Arrow IPC or CSV files) for notebooks and
    /// databases: connections, events, segments, rtt (docs/json.md#arrow-and-parquet).
    Export(crate::export::ExportArgs),
    /// Open the interactive viewer in the browser (a local web server; docs/viewer.md).
    ///
    /// The server serves only the TRACEs named. A monitor recording (`.tsm`) given first shows
    /// its timeline, with the captures' time-sequence plots of its connections under it.
    View(ViewArgs),
    /// Write one self-contained HTML report: the connection table and plots of the most
    /// troubled connections (opens offline).
    Report(ReportArgs),
    /// Write the records of a damaged capture that can be recovered to a clean pcap file, so
    /// that other tools read it too (docs/capture.md, "Damaged captures").
    Repair(crate::repair::RepairArgs),
    /// One line per packet of a time window (thesis fig. 2.2): time, addresses, ports, seq, ack,
    /// window, length, flags, connection id.
    Print(PrintArgs),
    /// Capture continuously into a ring of files in a directory (libpcap; needs root or
    /// CAP_NET_RAW); see docs/capture.md.
    #[cfg(feature = "capture")]
    Capture(tcpscope_live::CaptureArgs),
    /// Sample the kernel's TCP state (tcp_info) of chosen sockets at a fixed interval and
    /// record it; `stats run.tsm` reads a recording (docs/monitor.md).
    Monitor(crate::monitor::MonitorArgs),
    /// Send one application event to a running `monitor --events` (NetLogger format).
    Event(crate::monitor::EventArgs),
    /// A ttcp-compatible TCP throughput test: `-r -s` on one side, `-t -s HOST` on the other
    /// (classic ttcp's flags and output; see docs/lab.md).
    Ttcp(tcpscope_lab::TtcpArgs),
    /// Experiments over emulated paths in network namespaces: `lab run EXPERIMENT.toml`, then
    /// `lab report DIR` (needs root; see docs/lab.md).
    Lab(tcpscope_lab::LabArgs),
    /// Pair the captures of the same connections taken at two or more points (sender, router,
    /// receiver): where packets were lost, one-way delays, spurious retransmissions
    /// (docs/correlate.md).
    Correlate(crate::correlate::CorrelateArgs),
}

/// Input and output options shared by the commands.
#[derive(Args, Debug)]
pub struct CommonArgs {
    /// Capture files (pcap, pcapng; plain, .gz or .zst) or directories of them (a capture
    /// ring, read as one trace in time order); `-` reads standard input.
    #[arg(required_unless_present = "read", value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// A TRACE given as tcpdump and tshark take it (repeatable).
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub read: Vec<PathBuf>,
    /// Treat all files as one trace in time order (pieces of one capture) instead of analysing
    /// each on its own.
    #[arg(long)]
    pub merge: bool,
    /// Print JSON (schema: docs/json.md).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV with a header row.
    #[arg(long)]
    pub csv: bool,
    /// Window scale to assume for connections whose handshake was not captured (0-14);
    /// without it their scale is reported as unknown and windows are shown unscaled.
    #[arg(long, value_name = "SHIFT", value_parser = clap::value_parser!(u8).range(0..=14))]
    pub wscale: Option<u8>,
    /// Seconds of silence after which a packet that does not continue the old sequence space
    /// starts a new connection on the same 4-tuple.
    #[arg(long, value_name = "SECONDS", default_value_t = 240.0)]
    pub idle_split: f64,
    /// Verify IPv4 header and TCP checksums: a damaged segment is counted per direction
    /// (`checksum_errors`) and not analysed; checksum offload is told apart
    /// (`checksum_offloaded`). Off by default: it reads every payload byte.
    #[arg(long)]
    pub checksums: bool,
    /// Never show a progress bar, nor list the damaged stretches of a capture on stderr
    /// (errors are still said; `--json` keeps the damage in its file summaries).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Only these connection ids (repeatable or comma-separated).
    #[arg(short = 'c', long = "conn", value_name = "ID", value_delimiter = ',')]
    pub conn: Vec<usize>,
    #[command(flatten)]
    pub window: WindowArgs,
    #[command(flatten)]
    pub zone: ZoneArgs,
}

/// The time zone of the times a command shows and reads (docs/cli.md#times-shown).
#[derive(Args, Debug, Clone, Copy)]
pub struct ZoneArgs {
    /// Show and read clock times in the local time zone (TZ, else the system's) instead of
    /// UTC. JSON and CSV keep seconds since the epoch.
    #[arg(long)]
    pub local: bool,
}

impl ZoneArgs {
    /// UTC, or the local zone with `--local`.
    pub fn get(&self) -> jiff::tz::TimeZone {
        if self.local { tcpscope_core::capture::time::local_zone() } else { jiff::tz::TimeZone::UTC }
    }
}

/// The time window of a command: `--from`, `--for`, `--to`.
#[derive(Args, Debug)]
pub struct WindowArgs {
    /// Start of the time window: a clock time on the trace's date (12:06:00), a date and time
    /// (2026-11-22T12:06:00, optionally Z or +01:00), @EPOCH_SECONDS, or an offset from the
    /// trace's first packet (+30s). A TRACE may be a directory (a capture ring). With a window,
    /// connection ids number the connections seen in the window (docs/capture.md).
    #[arg(long, value_name = "TIME")]
    pub from: Option<TimeSpec>,
    /// Length of the time window: seconds (30, 2.5) or 500ms, 5m, 1h30m.
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    pub for_ns: Option<u64>,
    /// End of the time window (same forms as --from); with --for, the earlier end counts.
    #[arg(long, value_name = "TIME")]
    pub to: Option<TimeSpec>,
}

impl WindowArgs {
    /// The time window given (possibly unbounded).
    pub fn get(&self) -> Window {
        Window { from: self.from, length_ns: self.for_ns, to: self.to }
    }
}

fn parse_duration(s: &str) -> Result<u64, String> {
    tcpscope_core::capture::time::parse_duration(s).map_err(|e| e.to_string())
}

#[derive(Args, Debug)]
pub struct PrintArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Another capture of the same connections, taken at another point of the path
    /// (repeatable): what it proves — losses located, retransmissions necessary or spurious,
    /// capture loss — is added, with its source (docs/screening.md, "Several captures").
    #[arg(long = "with", value_name = "CAPTURE")]
    pub with: Vec<PathBuf>,
}

/// Plot kind.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum KindArg {
    /// Time-sequence plot.
    Tsg,
    /// RTT samples over time.
    Rtt,
    /// Throughput and goodput over time (instantaneous and moving average).
    Tput,
    /// Bytes in flight, advertised window, congestion-window estimate.
    Flight,
    /// Segment size over time.
    Ssize,
    /// The receiver's ACK delay over time, and its histogram (statistics.md, acknowledgment
    /// strategy).
    Ack,
    /// Burstiness: bytes over the instantaneous rate they were sent at (thesis ch. 4).
    Burst,
    /// Burstiness integrated: bytes sent at or below each rate.
    BurstCdf,
    /// Duplicate ACKs and retransmissions over time.
    Dupack,
    /// Ladder diagram (timing chart): both endpoints' time lines, one arrow per segment,
    /// the TCP states beside the lines.
    Ladder,
    /// State diagram: the TCP states each endpoint went through, coloured by endpoint.
    States,
    /// Recordings (`monitor -w`) only: CurCwnd, ssthresh, in flight, peer window.
    Cwnd,
    /// Recordings only: interval bandwidth, goodput, delivery rate.
    Bw,
    /// Recordings only: the send-limit triage per interval, stacked.
    Limits,
    /// Recordings only: CPU, application events (lifelines), triage, retransmits, RTT, rate,
    /// cwnd on one time axis.
    Timeline,
}

/// Direction of a connection, as in the JSON.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum DirArg {
    /// Data from endpoint a (the SYN's sender) to b, acks from b.
    A2b,
    /// Data from b to a, acks from a.
    B2a,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Capture file (pcap, pcapng; plain, .gz or .zst), or a directory (a capture ring, read
    /// whole as one trace in time order).
    #[arg(value_name = "TRACE", required_unless_present = "read")]
    trace_arg: Option<PathBuf>,
    /// The TRACE given as tcpdump and tshark take it.
    #[arg(short = 'r', long = "read", value_name = "FILE", conflicts_with = "trace_arg")]
    read: Option<PathBuf>,
    /// The trace: TRACE or `-r FILE` (set by [`Cli::parse_args`]).
    #[arg(skip)]
    pub trace: PathBuf,
    /// Connection id (as `tcpscope conns` shows it).
    #[arg(short = 'c', long = "conn", value_name = "ID")]
    pub conn: usize,
    /// Direction whose data is plotted (the acks come from the other one). Default: the one
    /// that sent the most payload bytes (b2a on a download), named in the title.
    #[arg(long, value_enum)]
    pub dir: Option<DirArg>,
    /// What to plot (docs/plots.md): `tsg` time-sequence (thesis ch. 2), `rtt`, `tput`,
    /// `flight`, `ssize`, `burst`, `burst-cdf` (thesis ch. 4), `dupack`, `ack` (the receiver's
    /// ACK delay and its histogram), `ladder` (timing chart), `states` (state diagram).
    #[arg(short = 'k', long, value_enum, default_value = "tsg")]
    pub kind: KindArg,
    /// Output file; `.xpl` writes xplot, `.png` a PNG image, anything else SVG.
    /// Default `KIND-ID-DIR.svg`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Start time: seconds since the connection's first packet (`1.5`, `+1.5`), or an absolute
    /// time as `conns --from` takes it (`12:06:05.2`, `2026-11-22T12:06:05Z`, `@EPOCH`).
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub from: Option<String>,
    /// End time (same forms as --from).
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub to: Option<String>,
    /// Lowest relative sequence number shown (first payload byte = 0).
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub seq_from: Option<i64>,
    /// Highest relative sequence number shown.
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub seq_to: Option<i64>,
    /// --seq-from/--seq-to are absolute sequence numbers, as on the wire (tshark's
    /// `tcp.seq_raw`), instead of relative ones.
    #[arg(long)]
    pub abs_seq: bool,
    /// SVG width in pixels.
    #[arg(long, value_name = "PX", default_value_t = 1200, value_parser = clap::value_parser!(u32).range(200..=20000))]
    pub width: u32,
    /// SVG height in pixels.
    #[arg(long, value_name = "PX", default_value_t = 750, value_parser = clap::value_parser!(u32).range(150..=20000))]
    pub height: u32,
    /// Plot title (default: connection, direction and endpoints).
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Window scale to assume when the handshake was not captured (0-14).
    #[arg(long, value_name = "SHIFT", value_parser = clap::value_parser!(u8).range(0..=14))]
    pub wscale: Option<u8>,
    /// tput: moving-average window; dupack: counting interval (seconds).
    #[arg(long, value_name = "SECONDS")]
    pub window: Option<f64>,
    /// Another connection to draw on the same scale, `TRACE:ID` or `TRACE:ID:DIR`
    /// (repeatable); the plots go side by side into one image unless --separate.
    #[arg(long = "with", value_name = "TRACE:ID[:DIR]")]
    pub with: Vec<String>,
    /// xplot (`-o FILE.xpl`): aggregate segments at 4× the pixel columns of --width, as the
    /// SVG does at 1× (smaller files). Without it every segment is written, as tcptrace does.
    #[arg(long)]
    pub xpl_aggregate: bool,
    /// With --with: one file per connection (FILE-1.svg, FILE-2.svg, ...) instead of one image.
    #[arg(long, requires = "with")]
    pub separate: bool,
    /// Write the series the plot is drawn from into DIR instead of drawing it: one table per
    /// part, `KIND-PART.FORMAT` (docs/json.md, "The series behind the plots"). Every point in
    /// --from/--to (all of the connection without them); --seq-from/--seq-to and the size
    /// apply to drawings only.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "with", "xpl_aggregate"])]
    pub data: Option<PathBuf>,
    /// With --data: parquet, arrow (Arrow IPC file) or csv.
    #[arg(long, value_name = "FORMAT", default_value = "parquet", requires = "data",
          value_parser = crate::export::parse_format)]
    pub data_format: tcpscope_arrow::Format,
    #[command(flatten)]
    pub zone: ZoneArgs,
    /// Do not list the damaged stretches of a capture on stderr (errors are still said).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct ScreenArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Rules file (TOML): what counts as boring, the classifier's constants (docs/screening.md).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Only the N most troubled connections.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Show boring connections too.
    #[arg(long)]
    pub all: bool,
    /// Text output: list every classified segment with its evidence.
    #[arg(long)]
    pub events: bool,
    /// Another capture of the same connections, taken at another point of the path
    /// (repeatable): retransmissions it proves spurious or necessary get that class, losses
    /// are located, and each verdict says where it comes from (docs/screening.md, "Several
    /// captures").
    #[arg(long = "with", value_name = "CAPTURE")]
    pub with: Vec<PathBuf>,
}

/// Analysis options of `view` and `report`.
#[derive(Args, Debug)]
pub struct ViewCommon {
    /// Capture files (pcap, pcapng; plain, .gz or .zst), or ring directories (each read whole as
    /// one trace).
    #[arg(required_unless_present = "read", value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// A TRACE given as tcpdump and tshark take it (repeatable).
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub read: Vec<PathBuf>,
    /// Window scale to assume for connections whose handshake was not captured (0-14).
    #[arg(long, value_name = "SHIFT", value_parser = clap::value_parser!(u8).range(0..=14))]
    pub wscale: Option<u8>,
    /// Seconds of silence after which a packet that does not continue the old sequence space
    /// starts a new connection on the same 4-tuple.
    #[arg(long, value_name = "SECONDS", default_value_t = 240.0)]
    pub idle_split: f64,
    /// Verify IPv4 header and TCP checksums: a damaged segment is counted per direction
    /// (`checksum_errors`) and not analysed; checksum offload is told apart
    /// (`checksum_offloaded`). Off by default: it reads every payload byte.
    #[arg(long)]
    pub checksums: bool,
    /// Do not list the damaged stretches of a capture on stderr (errors are still said).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub window: WindowArgs,
    #[command(flatten)]
    pub zone: ZoneArgs,
}

#[derive(Args, Debug)]
pub struct ViewArgs {
    #[command(flatten)]
    pub common: ViewCommon,
    /// Port to listen on (default: a free one, chosen by the system).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    pub port: u16,
    /// Address to listen on. Anything but loopback puts a random token in the URL, which every
    /// request must carry.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Do not open the browser; only print the URL.
    #[arg(long)]
    pub no_open: bool,
    /// The traces are captures of the same connections at several points (as for `tcpscope
    /// correlate`; the first one's clock is the reference): a connection also shows its
    /// packets' lifelines across the points and their one-way delays.
    #[arg(long)]
    pub correlate: bool,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub common: ViewCommon,
    /// Output file.
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
    /// How many of the most troubled connections get interactive plots.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub plots: usize,
    /// How many rows the connection table lists: the most troubled first (as `screen` ranks
    /// them), and the plotted ones whatever their rank.
    #[arg(long, value_name = "N", default_value_t = tcpscope_view::report::REPORT_ROWS)]
    pub rows: usize,
}

//! Command-line flags.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// TCP trace analysis: what happened on every connection of a packet capture.
#[derive(Parser, Debug)]
#[command(name = "tcpscope", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List connections, one line each: endpoints, packets and bytes each way, duration, state.
    Conns(CommonArgs),
    /// Full per-connection, per-direction statistics (both directions side by side).
    Stats(StatsArgs),
}

/// Input and output options shared by the commands.
#[derive(Args, Debug)]
pub struct CommonArgs {
    /// Capture files (pcap, pcapng; plain, .gz or .zst); `-` reads standard input.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
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
    /// Never show a progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Only these connection ids (repeatable or comma-separated).
    #[arg(short = 'c', long = "conn", value_name = "ID", value_delimiter = ',')]
    pub conn: Vec<usize>,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

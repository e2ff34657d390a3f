//! The `tcpscope` command: one subcommand per job, thin over `tcpscope-core`.
//!
//! `main` parses flags, runs the pass, prints, and decides the exit status in one place: 0 when
//! the command did its job, 1 when its input could not be read or held nothing to analyse
//! ([`run::input_error`]), 2 for a usage error — a bad flag, or one the input cannot satisfy
//! (docs/cli.md#exit-status).

mod args;
mod correlate;
mod export;
mod lab;
mod monitor;
mod output;
mod plot;
mod print;
mod quality;
mod repair;
mod run;
mod screen;
mod states;
mod view;

use std::io::{self, Write};
use std::process::ExitCode;

// glibc's malloc was ~15% of the CPU time on 200,000 short connections (per-connection state,
// its outstanding-data queues, the text blocks). jemalloc is as fast there as mimalloc was and
// holds less: peak RSS of `stats` on 200,000 concurrent connections 345 MB, not 387 MB; of a
// Parquet export of the bulk trace 54 MB, not 140 MB (docs/performance.md, *concurrent*).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = args::Cli::parse_args();
    match run::run(cli) {
        Ok(status) => status,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "tcpscope: {e}");
            run::exit_status(&e)
        }
    }
}

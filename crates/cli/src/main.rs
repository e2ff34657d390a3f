//! The `tcpscope` command: one subcommand per job, thin over `tcpscope-core`.
//!
//! `main` parses flags, runs the pass, prints, and decides the exit status in one place.

mod args;
mod lab;
mod monitor;
mod output;
mod plot;
mod print;
mod repair;
mod run;
mod screen;
mod view;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

// glibc's malloc was ~15% of the CPU time on 200,000 short connections (per-connection state,
// its outstanding-data queues, the text blocks); mimalloc cut `stats` there by ~20% wall.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match run::run(cli) {
        Ok(status) => status,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "tcpscope: {e}");
            ExitCode::from(2)
        }
    }
}

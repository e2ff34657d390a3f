//! tcpscope's lab: a ttcp-compatible traffic generator ([`ttcp`]) and repeatable experiments
//! over paths emulated in network namespaces ([`experiment`], [`run`], [`report`]).
//!
//! - [`ttcp`] is `tcpscope ttcp`: classic ttcp's flags, pattern and output lines.
//! - [`experiment`] reads an experiment file (TOML) and expands its sweep into run points.
//! - [`netns`] makes and always removes the namespaces and processes of a run.
//! - [`run`] is `tcpscope lab run`: each point × trial in its own directory, resumable; one
//!   sender or several on a switch, bulk transfers or short connections ([`flows`]), the delay
//!   and reordering by the user-space forwarder ([`delay`]).
//! - [`report`] is `tcpscope lab report`: the project's own analysis of every run's capture,
//!   summarised per point (mean ± sd, 95 % CI), per sender (Jain's index) and per short
//!   connection (completion times), as JSON, CSV and an HTML page with figures.
//!
//! The format of experiment files, what is measured and the figures: `docs/lab.md`.

pub mod delay;
pub mod drops;
pub mod experiment;
pub mod flows;
pub mod netns;
pub mod queue;
pub mod report;
pub mod run;
pub mod tcpinfo;
pub mod ttcp;

use std::path::PathBuf;
use std::process::ExitCode;

pub use ttcp::TtcpArgs;

/// `tcpscope lab ...`.
#[derive(clap::Args, Debug, Clone)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

/// The lab's subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum LabCommand {
    /// Run an experiment file: every sweep point × trial in network namespaces made for it
    /// (needs root, iproute2, nftables, tcpdump, ethtool). Finished runs are skipped when run
    /// again into the same directory.
    Run {
        /// The experiment file (TOML; docs/lab.md lists every key).
        #[arg(value_name = "EXPERIMENT.toml")]
        experiment: PathBuf,
        /// Output directory (default `lab-NAME` for the experiment's name).
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: Option<PathBuf>,
        /// Only check the file and list the runs.
        #[arg(long)]
        dry_run: bool,
    },
    /// Analyse every run of a directory and write report.html, report.json, points.csv, runs.csv
    /// into it.
    Report {
        /// A directory `lab run` wrote.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// Runs a lab subcommand; errors go to stderr with what they concern.
pub fn main(args: &LabArgs) -> ExitCode {
    match &args.command {
        LabCommand::Run { experiment, output, dry_run } => {
            let plan = match experiment::load(experiment) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("tcpscope lab: {e}");
                    return ExitCode::from(2);
                }
            };
            let out = output.clone().unwrap_or_else(|| run::default_out(&plan));
            if *dry_run {
                for p in &plan.points {
                    for t in 1..=p.exp.trials {
                        println!("{}", out.join(p.dir_name()).join(format!("t{t}")).display());
                    }
                }
                return ExitCode::SUCCESS;
            }
            match run::run_plan(&plan, &out) {
                Ok((done, skipped, failed)) => {
                    eprintln!(
                        "tcpscope lab: {done} runs done, {skipped} skipped (done before), {failed} failed; \
                         `tcpscope lab report {}` summarises them",
                        out.display()
                    );
                    if failed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS }
                }
                Err(e) => {
                    eprintln!("tcpscope lab: {e}");
                    ExitCode::from(2)
                }
            }
        }
        LabCommand::Report { dir } => match report::report(dir) {
            Ok(r) => {
                let failed = r.runs.iter().filter(|x| x.error.is_some() || x.status == "failed").count();
                let unfinished = r.runs.iter().filter(|x| x.status == "unfinished").count();
                eprintln!(
                    "tcpscope lab: {} points, {} runs ({failed} failed, {unfinished} unfinished); wrote {}",
                    r.points.len(),
                    r.runs.len(),
                    dir.join("report.html").display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tcpscope lab: {e}");
                ExitCode::from(2)
            }
        },
    }
}

//! `tcpscope repair IN OUT`: the records of a damaged capture that can be recovered, written as
//! a clean pcap file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use tcpscope_core::capture::{CaptureReader, Format, PcapWriter};

/// Arguments of `repair`.
#[derive(Args, Debug)]
pub struct RepairArgs {
    /// The damaged capture (pcap or pcapng; plain, .gz or .zst).
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// The pcap file to write (nanosecond timestamps, little-endian), whatever IN's format.
    #[arg(value_name = "OUT")]
    pub output: PathBuf,
}

fn open(path: &Path) -> io::Result<CaptureReader> {
    CaptureReader::open(path).map_err(|e| io::Error::other(format!("{}: {e}", path.display())))
}

/// Reads IN twice: once for the link type and the snaplen to write (the pcap file's, or a
/// pcapng file's largest captured length, so that a packet cut by the capture reads as cut),
/// then to write every record read. Damage skipped and a cut-off end are said on stderr as the
/// other commands say them. pcap holds one link type: records of others are left out, and
/// counted. Exit 0 when a record was written, 1 when none was.
pub fn repair(args: &RepairArgs) -> io::Result<ExitCode> {
    if args.input.as_os_str() == "-" {
        return Err(io::Error::other("repair reads IN twice: give a file, not standard input"));
    }
    let (mut link_type, mut max_caplen) = (None, 0u32);
    let mut first = open(&args.input)?;
    while let Ok(Some(rec)) = first.next_record() {
        link_type.get_or_insert(rec.link_type);
        max_caplen = max_caplen.max(rec.data.len() as u32);
    }
    let mut err = io::stderr().lock();
    let Some(link_type) = link_type else {
        writeln!(err, "tcpscope: {}: no record could be read", args.input.display())?;
        return Ok(ExitCode::from(1));
    };
    let mut reader = open(&args.input)?;
    let format = reader.format();
    let snaplen = reader.snaplen().unwrap_or(max_caplen);
    let out = File::create(&args.output).map_err(|e| io::Error::other(format!("{}: {e}", args.output.display())))?;
    let mut w = PcapWriter::new(BufWriter::with_capacity(1 << 16, out), link_type, snaplen)?;
    let mut other_link = 0u64;
    let end = loop {
        match reader.next_record() {
            Ok(Some(rec)) if rec.link_type == link_type => w.write(&rec)?,
            Ok(Some(_)) => other_link += 1,
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    let written = w.records;
    w.finish()?;
    let input = args.input.display();
    let damage = reader.damage();
    for d in &damage {
        writeln!(err, "tcpscope: {input}: {}", d.describe())?;
    }
    if reader.bad_timestamps > 0 {
        let n = reader.bad_timestamps;
        writeln!(
            err,
            "tcpscope: {input}: {n} records with a damaged timestamp written with the time of the record before"
        )?;
    }
    if let Some(e) = end {
        writeln!(err, "tcpscope: {input}: {e}")?;
    }
    if other_link > 0 {
        writeln!(err, "tcpscope: {input}: {other_link} records of other link types than {link_type} left out")?;
    }
    let skipped: u64 = damage.iter().map(|d| d.end - d.start).sum();
    let from = match format {
        Format::Pcap => "pcap",
        Format::Pcapng => "pcapng",
    };
    writeln!(
        err,
        "tcpscope: wrote {written} records of {input} ({from}) to {} as pcap (nanosecond, link type {link_type}, snaplen {snaplen}); {} damaged stretches, {skipped} bytes, skipped",
        args.output.display(),
        damage.len()
    )?;
    Ok(if written > 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

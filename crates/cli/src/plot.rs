//! `tcpscope plot`: check the flags, run the pass with the series sink, render, write.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use tcpscope_core::analysis::{Dir, Settings};
use tcpscope_core::plot::{self, rtt::RttView, tsg::TsgView};
use tcpscope_core::series::{rtt, tsg};

use crate::args::{DirArg, KindArg, PlotArgs};

pub fn plot(args: &PlotArgs) -> io::Result<ExitCode> {
    if args.conn == 0 {
        return Err(io::Error::other("connection ids start at 1 (see `tcpscope conns`)"));
    }
    for v in [args.from, args.to].into_iter().flatten() {
        if !v.is_finite() {
            return Err(io::Error::other("--from/--to must be numbers of seconds"));
        }
    }
    if let (Some(a), Some(b)) = (args.from, args.to)
        && b <= a
    {
        return Err(io::Error::other("--to must be after --from"));
    }
    if let (Some(a), Some(b)) = (args.seq_from, args.seq_to)
        && b <= a
    {
        return Err(io::Error::other("--seq-to must be above --seq-from"));
    }
    let dir = match args.dir {
        DirArg::A2b => Dir::AtoB,
        DirArg::B2a => Dir::BtoA,
    };
    let kind = match args.kind {
        KindArg::Tsg => "tsg",
        KindArg::Rtt => "rtt",
    };
    let out = args.output.clone().unwrap_or_else(|| PathBuf::from(format!("{kind}-{}-{}.svg", args.conn, dir.name())));
    let xpl = out.extension().is_some_and(|e| e.eq_ignore_ascii_case("xpl"));

    let settings = Settings { assume_wscale: args.wscale, ..Settings::default() };
    let fig = match args.kind {
        KindArg::Tsg => {
            let (series, err) = tsg::from_file(&args.trace, args.conn - 1, dir, settings).map_err(|e| file_error(args, e))?;
            report(args, err)?;
            let series = series.ok_or_else(|| no_conn(args))?;
            let view = TsgView {
                from_s: args.from,
                to_s: args.to,
                seq_from: args.seq_from,
                seq_to: args.seq_to,
                columns: (!xpl).then(|| plot::svg::columns(args.width)),
                title: args.title.clone(),
            };
            plot::tsg::tsg(&series, &view)
        }
        KindArg::Rtt => {
            let (series, err) = rtt::from_file(&args.trace, args.conn - 1, dir, settings).map_err(|e| file_error(args, e))?;
            report(args, err)?;
            let series = series.ok_or_else(|| no_conn(args))?;
            let view = RttView { from_s: args.from, to_s: args.to, title: args.title.clone() };
            plot::rtt::rtt(&series, &view)
        }
    };
    let text = if xpl { plot::xplot::render(&fig) } else { plot::svg::render(&fig, args.width, args.height) };
    std::fs::write(&out, text).map_err(|e| io::Error::other(format!("{}: {e}", out.display())))?;
    writeln!(io::stderr(), "tcpscope: wrote {}", out.display())?;
    Ok(ExitCode::SUCCESS)
}

fn file_error(args: &PlotArgs, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{}: {e}", args.trace.display()))
}

fn no_conn(args: &PlotArgs) -> io::Error {
    io::Error::other(format!("{}: no connection {}", args.trace.display(), args.conn))
}

/// A read error after some packets: said on stderr, the plot of what was read stands.
fn report(args: &PlotArgs, err: Option<impl std::fmt::Display>) -> io::Result<()> {
    if let Some(e) = err {
        writeln!(io::stderr(), "tcpscope: {}: {e}", args.trace.display())?;
    }
    Ok(())
}

//! `tcpscope plot`: check the flags, run the pass with the series sink, render, write.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use tcpscope_core::analysis::{Dir, Settings};
use tcpscope_core::plot::{self, tsg::TsgView};
use tcpscope_core::series::tsg;

use crate::args::{DirArg, PlotArgs};

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
    let out = args.output.clone().unwrap_or_else(|| PathBuf::from(format!("tsg-{}-{}.svg", args.conn, dir.name())));
    let xpl = out.extension().is_some_and(|e| e.eq_ignore_ascii_case("xpl"));

    let settings = Settings { assume_wscale: args.wscale, ..Settings::default() };
    let (series, err) = tsg::from_file(&args.trace, args.conn - 1, dir, settings)
        .map_err(|e| io::Error::other(format!("{}: {e}", args.trace.display())))?;
    if let Some(e) = err {
        writeln!(io::stderr(), "tcpscope: {}: {e}", args.trace.display())?;
    }
    let Some(series) = series else {
        return Err(io::Error::other(format!("{}: no connection {}", args.trace.display(), args.conn)));
    };
    let view = TsgView {
        from_s: args.from,
        to_s: args.to,
        seq_from: args.seq_from,
        seq_to: args.seq_to,
        columns: (!xpl).then(|| plot::svg::columns(args.width)),
        title: args.title.clone(),
    };
    let fig = plot::tsg::tsg(&series, &view);
    let text = if xpl { plot::xplot::render(&fig) } else { plot::svg::render(&fig, args.width, args.height) };
    std::fs::write(&out, text).map_err(|e| io::Error::other(format!("{}: {e}", out.display())))?;
    writeln!(io::stderr(), "tcpscope: wrote {}", out.display())?;
    Ok(ExitCode::SUCCESS)
}

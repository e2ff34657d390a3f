//! `tcpscope plot`: check the flags, have core build each connection's figure
//! ([`Request`]: the pass with the series sink of the kind, the limits), render (SVG, PNG
//! through resvg, or xplot), write. Several connections (`--with`) are drawn on one scale.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tcpscope_core::analysis::Dir;
use tcpscope_core::plot::make::{Kind, PlotError, Request};
use tcpscope_core::plot::{self, Figure};

use crate::args::{DirArg, KindArg, PlotArgs};

/// With --xpl-aggregate, xplot files are aggregated at this many times the SVG's pixel columns:
/// bounded, and still zoomable fourfold before the aggregation shows.
const XPL_COLUMNS_FACTOR: u32 = 4;

/// One connection to draw.
struct Target {
    trace: PathBuf,
    conn: usize,
    /// The direction asked for; `None`: the one that carries the most data.
    dir: Option<Dir>,
}

fn dir_of(d: DirArg) -> Dir {
    match d {
        DirArg::A2b => Dir::AtoB,
        DirArg::B2a => Dir::BtoA,
    }
}

/// Parses `TRACE:ID[:DIR]`, splitting at the last colons so that a path may contain colons.
fn parse_with(s: &str, default_dir: Option<Dir>) -> io::Result<Target> {
    let bad = || io::Error::other(format!("--with {s}: expected TRACE:ID or TRACE:ID:DIR (DIR a2b or b2a)"));
    let (rest, last) = s.rsplit_once(':').ok_or_else(bad)?;
    let (trace, id, dir) = match last {
        "a2b" | "b2a" => {
            let (trace, id) = rest.rsplit_once(':').ok_or_else(bad)?;
            (trace, id, Some(if last == "a2b" { Dir::AtoB } else { Dir::BtoA }))
        }
        id => (rest, id, default_dir),
    };
    let conn: usize = id.parse().map_err(|_| bad())?;
    if trace.is_empty() || conn == 0 {
        return Err(bad());
    }
    Ok(Target { trace: PathBuf::from(trace), conn, dir })
}

fn kind_name(k: KindArg) -> &'static str {
    match k {
        KindArg::Cwnd => "cwnd",
        KindArg::Bw => "bw",
        KindArg::Limits => "limits",
        KindArg::Timeline => "timeline",
        k => kind_of(k).map_or("", Kind::name),
    }
}

/// The kind of a plot of a trace; the monitor's kinds are not.
fn kind_of(k: KindArg) -> io::Result<Kind> {
    Ok(match k {
        KindArg::Tsg => Kind::Tsg,
        KindArg::Rtt => Kind::Rtt,
        KindArg::Tput => Kind::Tput,
        KindArg::Flight => Kind::Flight,
        KindArg::Ssize => Kind::Ssize,
        KindArg::Ack => Kind::Ack,
        KindArg::Burst => Kind::Burst,
        KindArg::BurstCdf => Kind::BurstCdf,
        KindArg::Dupack => Kind::Dupack,
        KindArg::Ladder => Kind::Ladder,
        KindArg::States => Kind::States,
        KindArg::Cwnd | KindArg::Bw | KindArg::Limits | KindArg::Timeline => {
            return Err(io::Error::other("-k cwnd, bw, limits and timeline plot recordings of `tcpscope monitor`"));
        }
    })
}

pub fn plot(args: &PlotArgs) -> io::Result<ExitCode> {
    if tcpscope_monitor::tsm::is_recording(&args.trace) {
        if args.data.is_some() {
            return Err(io::Error::other("--data writes the series of a capture's plots, not of a recording's"));
        }
        return crate::monitor::plot(args);
    }
    let dir = args.dir.map(dir_of);
    let mut targets = vec![Target { trace: args.trace.clone(), conn: args.conn, dir }];
    // The flags, checked before any trace is read.
    let req = request(args, &targets[0])?;
    req.check().map_err(error)?;
    for note in req.unused() {
        writeln!(io::stderr(), "tcpscope: note: {note}")?;
    }
    if let Some(dir) = &args.data {
        return data(args, &targets[0], dir);
    }
    for w in &args.with {
        targets.push(parse_with(w, dir)?);
    }
    let ext_of = |p: &Path| p.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let xpl = args.output.as_deref().is_some_and(|p| ext_of(p) == "xpl");
    // xplot is for zooming in: every segment, as tcptrace writes them, unless asked.
    let columns = match (xpl, args.xpl_aggregate) {
        (true, false) => None,
        (true, true) => Some(plot::svg::columns(args.width) * XPL_COLUMNS_FACTOR),
        (false, _) => Some(plot::svg::columns(args.width)),
    };
    let mut figs = Vec::with_capacity(targets.len());
    let mut first_dir = Dir::AtoB;
    for (i, t) in targets.iter().enumerate() {
        let (fig, d) = figure(args, t, columns)?;
        if i == 0 {
            first_dir = d;
        }
        figs.push(fig);
    }
    let kind = kind_name(args.kind);
    let both_ways = matches!(args.kind, KindArg::Ladder | KindArg::States);
    let out = args.output.clone().unwrap_or_else(|| {
        if both_ways {
            PathBuf::from(format!("{kind}-{}.svg", args.conn))
        } else {
            PathBuf::from(format!("{kind}-{}-{}.svg", args.conn, first_dir.name()))
        }
    });
    let ext = ext_of(&out);
    if figs.len() > 1 {
        plot::share_scale(&mut figs);
        if args.title.is_none() {
            // Compared connections often share endpoints (two recordings): name the trace.
            for (fig, t) in figs.iter_mut().zip(&targets) {
                let name = t
                    .trace
                    .file_name()
                    .map_or_else(|| t.trace.display().to_string(), |n| n.to_string_lossy().into_owned());
                fig.title = format!("{name}: {}", fig.title);
            }
        }
    }
    if figs.len() > 1 && (args.separate || xpl) {
        // xplot has one plot per file: compared plots are always separate files.
        let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        for (i, fig) in figs.iter().enumerate() {
            let name = if ext.is_empty() { format!("{stem}-{}", i + 1) } else { format!("{stem}-{}.{ext}", i + 1) };
            write(&out.with_file_name(name), std::slice::from_ref(fig), args, &ext)?;
        }
    } else {
        write(&out, &figs, args, &ext)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn write(path: &Path, figs: &[Figure], args: &PlotArgs, ext: &str) -> io::Result<()> {
    let bytes = match ext {
        "xpl" => plot::xplot::render(&figs[0]).into_bytes(),
        "png" => png(&plot::svg::render_row(figs, args.width, args.height))?,
        _ => plot::svg::render_row(figs, args.width, args.height).into_bytes(),
    };
    std::fs::write(path, bytes)
        .map_err(|e| io::Error::other(format!("{}: cannot write the plot: {e}", path.display())))?;
    writeln!(io::stderr(), "tcpscope: wrote {}", path.display())
}

/// Rasterises our SVG (core's [`plot::make::png`]), saying on stderr when there was no font.
pub(crate) fn png(svg: &str) -> io::Result<Vec<u8>> {
    let png = plot::make::png(svg).map_err(io::Error::other)?;
    if png.no_fonts {
        writeln!(io::stderr(), "tcpscope: no fonts found on this system: the PNG has no text")?;
    }
    Ok(png.bytes)
}

/// The request of one connection's plot the flags make.
fn request(args: &PlotArgs, t: &Target) -> io::Result<Request> {
    Ok(Request {
        trace: t.trace.clone(),
        conn: t.conn,
        dir: t.dir,
        kind: kind_of(args.kind)?,
        from: args.from.clone(),
        to: args.to.clone(),
        seq_from: args.seq_from,
        seq_to: args.seq_to,
        abs_seq: args.abs_seq,
        width: args.width,
        height: args.height,
        title: args.title.clone(),
        wscale: args.wscale,
        window_s: args.window,
        zone: args.zone.get(),
    })
}

/// The CLI's error of a plot's: a usage error exits 2, an input error 1.
fn error(e: PlotError) -> io::Error {
    match e {
        PlotError::Usage(m) => io::Error::other(m),
        PlotError::Input(m) => crate::run::input_error(m),
        PlotError::Io(e) => e,
    }
}

/// `--data DIR`: the series of one connection's plot as tables, a file each.
fn data(args: &PlotArgs, t: &Target, dir: &Path) -> io::Result<ExitCode> {
    let (parts, _) = request(args, t)?.tables(&mut said(args)).map_err(error)?;
    let files = tcpscope_arrow::series::write(&parts, dir, kind_name(args.kind), args.data_format, Default::default())?;
    for (f, p) in files.iter().zip(&parts) {
        let n = p.len();
        writeln!(io::stderr(), "tcpscope: wrote {} ({n} row{})", f.display(), if n == 1 { "" } else { "s" })?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Says the files' damage on stderr, as each is read.
fn said(args: &PlotArgs) -> impl FnMut(&tcpscope_core::pass::FileSummary) -> io::Result<()> {
    move |f| {
        crate::run::say_files(std::slice::from_ref(f), args.quiet)?;
        crate::quality::warn(std::slice::from_ref(f), &[], args.quiet)
    }
}

/// Runs the pass for one connection and builds its figure (core's [`Request`]), saying the
/// files' damage on stderr. Returns the direction drawn.
fn figure(args: &PlotArgs, t: &Target, columns: Option<u32>) -> io::Result<(Figure, Dir)> {
    request(args, t)?.figure_in(columns, &mut said(args)).map_err(error)
}

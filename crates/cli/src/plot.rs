//! `tcpscope plot`: check the flags, run the pass with the series sink of the kind, build the
//! figure, render (SVG, PNG through resvg, or xplot), write. Several connections (`--with`) are
//! drawn on one scale.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tcpscope_core::analysis::{Dir, Settings};
use tcpscope_core::plot::{self, Figure, View, rtt::RttView, tsg::TsgView};
use tcpscope_core::seq::{SeqNum, offset_from};
use tcpscope_core::series::{self, OneConnection, Origin, burst, dupack, flight, rtt, ssize, tput, tsg};

use crate::args::{DirArg, KindArg, PlotArgs};

/// xplot files are aggregated at this many times the SVG's pixel columns: bounded, and still
/// zoomable fourfold before the aggregation shows.
const XPL_COLUMNS_FACTOR: u32 = 4;

/// One connection to draw.
struct Target {
    trace: PathBuf,
    conn: usize,
    dir: Dir,
}

fn dir_of(d: DirArg) -> Dir {
    match d {
        DirArg::A2b => Dir::AtoB,
        DirArg::B2a => Dir::BtoA,
    }
}

/// Parses `TRACE:ID[:DIR]`, splitting at the last colons so that a path may contain colons.
fn parse_with(s: &str, default_dir: Dir) -> io::Result<Target> {
    let bad = || io::Error::other(format!("--with {s}: expected TRACE:ID or TRACE:ID:DIR (DIR a2b or b2a)"));
    let (rest, last) = s.rsplit_once(':').ok_or_else(bad)?;
    let (trace, id, dir) = match last {
        "a2b" | "b2a" => {
            let (trace, id) = rest.rsplit_once(':').ok_or_else(bad)?;
            (trace, id, if last == "a2b" { Dir::AtoB } else { Dir::BtoA })
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
        KindArg::Tsg => "tsg",
        KindArg::Rtt => "rtt",
        KindArg::Tput => "tput",
        KindArg::Flight => "flight",
        KindArg::Ssize => "ssize",
        KindArg::Burst => "burst",
        KindArg::BurstCdf => "burst-cdf",
        KindArg::Dupack => "dupack",
        KindArg::Cwnd => "cwnd",
        KindArg::Bw => "bw",
        KindArg::Limits => "limits",
        KindArg::Timeline => "timeline",
    }
}

pub fn plot(args: &PlotArgs) -> io::Result<ExitCode> {
    if tcpscope_monitor::tsm::is_recording(&args.trace) {
        return crate::monitor::plot(args);
    }
    if args.conn == 0 {
        return Err(io::Error::other("connection ids start at 1 (see `tcpscope conns`)"));
    }
    if args.window.is_some_and(|v| !v.is_finite()) {
        return Err(io::Error::other("--window must be a number of seconds"));
    }
    if args.window.is_some_and(|w| w <= 0.0) {
        return Err(io::Error::other("--window must be above 0"));
    }
    if let (Some(a), Some(b)) = (args.seq_from, args.seq_to)
        && b <= a
    {
        return Err(io::Error::other("--seq-to must be above --seq-from"));
    }
    let dir = dir_of(args.dir);
    let kind = kind_name(args.kind);
    let out = args.output.clone().unwrap_or_else(|| PathBuf::from(format!("{kind}-{}-{}.svg", args.conn, dir.name())));
    let ext = out.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let xpl = ext == "xpl";
    let mut targets = vec![Target { trace: args.trace.clone(), conn: args.conn, dir }];
    for w in &args.with {
        targets.push(parse_with(w, dir)?);
    }
    let columns = plot::svg::columns(args.width) * if xpl { XPL_COLUMNS_FACTOR } else { 1 };
    let mut figs = Vec::with_capacity(targets.len());
    for t in &targets {
        figs.push(figure(args, t, columns)?);
    }
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
    std::fs::write(path, bytes).map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
    writeln!(io::stderr(), "tcpscope: wrote {}", path.display())
}

/// Rasterises our SVG with resvg (text with the system's sans-serif font).
fn png(svg: &str) -> io::Result<Vec<u8>> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    // fontdb's default sans-serif is Arial, rarely installed on Linux: use what is there.
    let have = |name: &str| db.faces().any(|f| f.families.iter().any(|(n, _)| n == name));
    if let Some(name) =
        ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica", "Noto Sans"].into_iter().find(|n| have(n))
    {
        db.set_sans_serif_family(name);
    } else if db.is_empty() {
        writeln!(io::stderr(), "tcpscope: no fonts found on this system: the PNG has no text")?;
    }
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| io::Error::other(format!("rendering PNG: {e}")))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| io::Error::other("rendering PNG: empty image"))?;
    resvg::render(&tree, tiny_skia::Transform::identity(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| io::Error::other(format!("encoding PNG: {e}")))
}

/// The --from/--to limits of one connection's plot, in seconds since its first packet (at
/// `t0`, ns since the epoch). A bare number already is; an absolute time is resolved against
/// the connection's first packet.
fn time_limits(args: &PlotArgs, t0: u64) -> io::Result<(Option<f64>, Option<f64>)> {
    use tcpscope_core::capture::time::{TimeSpec, local_zone};
    let limit = |flag: &str, v: &Option<String>| -> io::Result<Option<f64>> {
        let Some(v) = v else { return Ok(None) };
        if let Ok(secs) = v.trim().parse::<f64>() {
            return if secs.is_finite() {
                Ok(Some(secs))
            } else {
                Err(io::Error::other(format!("{flag} {v:?}: not a time")))
            };
        }
        let spec: TimeSpec = v.parse().map_err(|e| io::Error::other(format!("{flag}: {e}")))?;
        if let TimeSpec::Offset(ns) = spec {
            return Ok(Some(ns as f64 / 1e9));
        }
        let at = spec.resolve(t0, &local_zone()).map_err(|e| io::Error::other(format!("{flag}: {e}")))?;
        Ok(Some((at as f64 - t0 as f64) / 1e9))
    };
    let (from, to) = (limit("--from", &args.from)?, limit("--to", &args.to)?);
    if let (Some(a), Some(b)) = (from, to)
        && b <= a
    {
        return Err(io::Error::other("--to must be after --from"));
    }
    Ok((from, to))
}

/// The --seq-from/--seq-to limits as relative offsets. Absolute ones (`--abs-seq`) are turned
/// into offsets by the direction's sequence base ([`offset_from`]).
fn seq_limits(args: &PlotArgs, t: &Target, base: Option<SeqNum>) -> io::Result<(Option<i64>, Option<i64>)> {
    if !args.abs_seq || (args.seq_from.is_none() && args.seq_to.is_none()) {
        return Ok((args.seq_from, args.seq_to));
    }
    let base = base.ok_or_else(|| {
        io::Error::other(format!("{}: connection {} has no {} segment", t.trace.display(), t.conn, t.dir.name()))
    })?;
    let rel = |abs: i64| -> io::Result<i64> {
        let abs = u32::try_from(abs)
            .map_err(|_| io::Error::other(format!("--abs-seq: {abs} is not a 32-bit sequence number")))?;
        Ok(offset_from(base, SeqNum(abs)).0)
    };
    Ok((args.seq_from.map(rel).transpose()?, args.seq_to.map(rel).transpose()?))
}

/// Runs the pass for one connection and builds its figure: one read of the trace, for the
/// series and for what the limits are resolved against.
fn figure(args: &PlotArgs, t: &Target, columns: u32) -> io::Result<Figure> {
    let settings = Settings { assume_wscale: args.wscale, ..Settings::default() };
    let no_conn = || io::Error::other(format!("{}: no connection {}", t.trace.display(), t.conn));
    let (path, c, d) = (t.trace.as_path(), t.conn - 1, t.dir);
    let origin: Option<Origin>;
    macro_rules! series {
        ($m:ty) => {{
            let sinks = (<$m as OneConnection>::for_conn(c, d), Origin::new(c, d));
            let ((s, o), summary) = series::run_file(path, settings, sinks)
                .map_err(|e| io::Error::other(format!("{}: {e}", t.trace.display())))?;
            if let Some(e) = summary.error {
                writeln!(io::stderr(), "tcpscope: {}: {e}", t.trace.display())?;
            }
            origin = Some(o);
            s.into_series().ok_or_else(no_conn)?
        }};
    }
    let figure = |args: &PlotArgs, origin: &Option<Origin>| -> io::Result<(View, Option<f64>, Option<f64>)> {
        let t0 = origin.as_ref().and_then(|o| o.t0).ok_or_else(no_conn)?;
        let (from_s, to_s) = time_limits(args, t0)?;
        let view = View { from_s, to_s, title: args.title.clone(), columns: Some(columns), window_s: args.window };
        Ok((view, from_s, to_s))
    };
    Ok(match args.kind {
        KindArg::Tsg => {
            let s = series!(tsg::TsgSink);
            let (_, from_s, to_s) = figure(args, &origin)?;
            let (seq_from, seq_to) = seq_limits(args, t, origin.and_then(|o| o.base))?;
            let v = TsgView { from_s, to_s, seq_from, seq_to, columns: Some(columns), title: args.title.clone() };
            plot::tsg::tsg(&s, &v)
        }
        KindArg::Rtt => {
            let s = series!(rtt::RttSink);
            let (_, from_s, to_s) = figure(args, &origin)?;
            plot::rtt::rtt(&s, &RttView { from_s, to_s, title: args.title.clone(), columns: Some(columns) })
        }
        KindArg::Tput => {
            let s = series!(tput::TputSink);
            plot::tput::tput(&s, &figure(args, &origin)?.0)
        }
        KindArg::Flight => {
            let s = series!(flight::FlightSink);
            plot::flight::flight(&s, &figure(args, &origin)?.0)
        }
        KindArg::Ssize => {
            let s = series!(ssize::SsizeSink);
            plot::ssize::ssize(&s, &figure(args, &origin)?.0)
        }
        KindArg::Burst => {
            let s = series!(burst::BurstSink);
            plot::burst::burst(&s, &figure(args, &origin)?.0)
        }
        KindArg::BurstCdf => {
            let s = series!(burst::BurstSink);
            plot::burst::burst_cdf(&s, &figure(args, &origin)?.0)
        }
        KindArg::Dupack => {
            let s = series!(dupack::DupackSink);
            plot::dupack::dupack(&s, &figure(args, &origin)?.0)
        }
        KindArg::Cwnd | KindArg::Bw | KindArg::Limits | KindArg::Timeline => {
            return Err(io::Error::other("-k cwnd, bw, limits and timeline plot recordings of `tcpscope monitor`"));
        }
    })
}

//! `tcpscope plot`: check the flags, run the pass with the series sink of the kind, build the
//! figure, render (SVG, PNG through resvg, or xplot), write. Several connections (`--with`) are
//! drawn on one scale.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tcpscope_core::analysis::{Dir, Settings};
use tcpscope_core::plot::{self, Figure, View, ladder::LadderView, rtt::RttView, tsg::TsgView};
use tcpscope_core::seq::{SeqNum, offset_from};
use tcpscope_core::series::{
    self, OneConnection, Origin, ack, burst, dupack, flight, ladder, rtt, ssize, states, tput, tsg,
};

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
        KindArg::Tsg => "tsg",
        KindArg::Rtt => "rtt",
        KindArg::Tput => "tput",
        KindArg::Flight => "flight",
        KindArg::Ssize => "ssize",
        KindArg::Ack => "ack",
        KindArg::Burst => "burst",
        KindArg::BurstCdf => "burst-cdf",
        KindArg::Dupack => "dupack",
        KindArg::Ladder => "ladder",
        KindArg::States => "states",
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
    let dir = args.dir.map(dir_of);
    let mut targets = vec![Target { trace: args.trace.clone(), conn: args.conn, dir }];
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

/// Rasterises our SVG with resvg (text with the system's sans-serif font).
pub(crate) fn png(svg: &str) -> io::Result<Vec<u8>> {
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
    use tcpscope_core::capture::time::TimeSpec;
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
        let at = spec.resolve(t0, &args.zone.get()).map_err(|e| io::Error::other(format!("{flag}: {e}")))?;
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
fn seq_limits(args: &PlotArgs, t: &Target, dir: Dir, base: Option<SeqNum>) -> io::Result<(Option<i64>, Option<i64>)> {
    if !args.abs_seq || (args.seq_from.is_none() && args.seq_to.is_none()) {
        return Ok((args.seq_from, args.seq_to));
    }
    let base = base.ok_or_else(|| {
        io::Error::other(format!("{}: connection {} has no {} segment", t.trace.display(), t.conn, dir.name()))
    })?;
    let rel = |abs: i64| -> io::Result<i64> {
        let abs = u32::try_from(abs)
            .map_err(|_| io::Error::other(format!("--abs-seq: {abs} is not a 32-bit sequence number")))?;
        Ok(offset_from(base, SeqNum(abs)).0)
    };
    Ok((args.seq_from.map(rel).transpose()?, args.seq_to.map(rel).transpose()?))
}

/// Runs the pass for one connection and returns the series and what the limits are resolved
/// against, in the direction asked for or, when none was, the one that carries the most data
/// (both directions' series are collected in the one pass, and the other dropped).
fn series_of<M: OneConnection + Send>(args: &PlotArgs, t: &Target) -> io::Result<(M::Series, Origin, Dir)> {
    let settings = Settings { assume_wscale: args.wscale, ..Settings::default() };
    let c = t.conn - 1;
    let input = |e: String| crate::run::input_error(crate::run::on_path(&t.trace, &e));
    let (one, other, origin, summary) = match t.dir {
        Some(d) => {
            let ((s, o), summary) =
                series::run_file(&t.trace, settings, (M::for_conn(c, d), Origin::new(c))).map_err(input)?;
            (Some((s, d)), None, o, summary)
        }
        None => {
            let sinks = (M::for_conn(c, Dir::AtoB), (M::for_conn(c, Dir::BtoA), Origin::new(c)));
            let ((a2b, (b2a, o)), summary) = series::run_file(&t.trace, settings, sinks).map_err(input)?;
            (Some((a2b, Dir::AtoB)), Some((b2a, Dir::BtoA)), o, summary)
        }
    };
    crate::run::say_files(std::slice::from_ref(&summary), args.quiet)?;
    crate::quality::warn(std::slice::from_ref(&summary), &[], args.quiet)?;
    let dir = t.dir.unwrap_or_else(|| origin.busier());
    let sink = [one, other].into_iter().flatten().find(|(_, d)| *d == dir).map(|(s, _)| s);
    let no_conn = || io::Error::other(format!("{}: no connection {}", t.trace.display(), t.conn));
    let series = sink.and_then(M::into_series).ok_or_else(no_conn)?;
    Ok((series, origin, dir))
}

/// Runs the pass for one connection and builds its figure: one read of the trace, for the
/// series and for what the limits are resolved against. Returns the direction drawn.
fn figure(args: &PlotArgs, t: &Target, columns: Option<u32>) -> io::Result<(Figure, Dir)> {
    // The time limits, checked against the connection's span: a window without any of its
    // packets is the same error as `stats --from` past the end (docs/cli.md#time-windows).
    let limits = |origin: &Origin| -> io::Result<(Option<f64>, Option<f64>)> {
        let (Some(t0), Some(t1)) = (origin.t0, origin.t_last) else {
            return Err(io::Error::other(format!("{}: no connection {}", t.trace.display(), t.conn)));
        };
        let (from_s, to_s) = time_limits(args, t0)?;
        let span_s = (t1 - t0) as f64 / 1e9;
        if from_s.is_some_and(|f| f > span_s) || to_s.is_some_and(|t| t < 0.0) {
            let show = |v: Option<f64>, none: &str| v.map_or(none.to_string(), |v| format!("{v} s"));
            return Err(crate::run::input_error(format!(
                "{}: connection {} has no packets from {} to {} (it runs from 0 s to {span_s:.6} s)",
                t.trace.display(),
                t.conn,
                show(from_s, "its start"),
                show(to_s, "its end"),
            )));
        }
        Ok((from_s, to_s))
    };
    let view = |from_s, to_s| View { from_s, to_s, title: args.title.clone(), columns, window_s: args.window };
    let (mut fig, dir) = match args.kind {
        KindArg::Tsg => {
            let (s, origin, dir) = series_of::<tsg::TsgSink>(args, t)?;
            let (from_s, to_s) = limits(&origin)?;
            let (seq_from, seq_to) = seq_limits(args, t, dir, origin.base(dir))?;
            let v = TsgView { from_s, to_s, seq_from, seq_to, columns, title: args.title.clone() };
            (plot::tsg::tsg(&s, &v), dir)
        }
        KindArg::Rtt => {
            let (s, origin, dir) = series_of::<rtt::RttSink>(args, t)?;
            let (from_s, to_s) = limits(&origin)?;
            (plot::rtt::rtt(&s, &RttView { from_s, to_s, title: args.title.clone(), columns }), dir)
        }
        KindArg::Tput => {
            let (s, origin, dir) = series_of::<tput::TputSink>(args, t)?;
            let (from_s, to_s) = limits(&origin)?;
            (plot::tput::tput(&s, &view(from_s, to_s)), dir)
        }
        KindArg::Flight => {
            let (s, origin, dir) = series_of::<flight::FlightSink>(args, t)?;
            let (from_s, to_s) = limits(&origin)?;
            (plot::flight::flight(&s, &view(from_s, to_s)), dir)
        }
        KindArg::Ssize => {
            let (s, origin, dir) = series_of::<ssize::SsizeSink>(args, t)?;
            let (from_s, to_s) = limits(&origin)?;
            (plot::ssize::ssize(&s, &view(from_s, to_s)), dir)
        }
        KindArg::Ack => {
            let (s, origin, dir) = series_of::<ack::AckSink>(args, t)?;
            let (from_s, to_s) = limits(&origin)?;
            (plot::ack::ack(&s, &view(from_s, to_s)), dir)
        }
        KindArg::Burst => {
            let (s, origin, dir) = series_of::<burst::BurstSink>(args, t)?;
            let (from_s, to_s) = limits(&origin)?;
            (plot::burst::burst(&s, &view(from_s, to_s)), dir)
        }
        KindArg::BurstCdf => {
            let (s, origin, dir) = series_of::<burst::BurstSink>(args, t)?;
            let (from_s, to_s) = limits(&origin)?;
            (plot::burst::burst_cdf(&s, &view(from_s, to_s)), dir)
        }
        KindArg::Dupack => {
            let (s, origin, dir) = series_of::<dupack::DupackSink>(args, t)?;
            let (from_s, to_s) = limits(&origin)?;
            (plot::dupack::dupack(&s, &view(from_s, to_s)), dir)
        }
        KindArg::Ladder | KindArg::States => {
            // Both directions: the sink ignores the direction.
            let t1 = Target { dir: Some(Dir::AtoB), trace: t.trace.clone(), conn: t.conn };
            let area = plot::svg::area(args.width, args.height);
            if matches!(args.kind, KindArg::Ladder) {
                let (l, origin, _) = series_of::<ladder::LadderSink>(args, &t1)?;
                let (from_s, to_s) = limits(&origin)?;
                let v = LadderView { from_s, to_s, title: args.title.clone(), area_px: area };
                return Ok((plot::ladder::ladder(&l, &v), Dir::AtoB));
            }
            let (s, _, _) = series_of::<states::StatesSink>(args, &t1)?;
            return Ok((plot::ladder::states(&s, args.title.clone(), area), Dir::AtoB));
        }
        KindArg::Cwnd | KindArg::Bw | KindArg::Limits | KindArg::Timeline => {
            return Err(io::Error::other("-k cwnd, bw, limits and timeline plot recordings of `tcpscope monitor`"));
        }
    };
    if t.dir.is_none() && args.title.is_none() {
        // Say that the direction was chosen, and by what.
        fig.title.push_str(" · the direction with the most data");
    }
    Ok((fig, dir))
}

//! `tcpscope correlate A B [C ...]`: the same connections seen at several points
//! (docs/correlate.md); the engine is `tcpscope_core::correlate`.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;
use tcpscope_core::correlate::{self, CorrDir, CorrEvent, CorrPacket, Correlation, Error, PointRow, Settings};
use tcpscope_core::export::json::LazySeq;
use tcpscope_core::plot;

use crate::output::{flatten, to_value, write_csv};
use crate::run::input_error;

/// `tcpscope correlate`.
#[derive(Args, Debug, Clone)]
pub struct CorrelateArgs {
    /// Two or more captures of the same connections, each taken at one point (pcap, pcapng;
    /// plain, .gz or .zst); the first capture's clock is the reference.
    #[arg(required = true, num_args = 2.., value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Print JSON (docs/json.md#correlate).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV, one row per connection and direction.
    #[arg(long)]
    pub csv: bool,
    /// Text output: list every notable packet (losses, capture losses, duplicates, reorderings,
    /// CE marks, changes, retransmissions) with its evidence.
    #[arg(long)]
    pub events: bool,
    /// One row per packet instead (with --json or --csv): its time at each point, one-way
    /// delay, queueing, fate.
    #[arg(long)]
    pub packets: bool,
    /// The clock offset of a capture instead of the estimate: `N=MS`, capture N's clock minus
    /// the first capture's in milliseconds (repeatable).
    #[arg(long, value_name = "N=MS", value_parser = parse_offset)]
    pub offset: Vec<(usize, f64)>,
    /// Seconds a packet waits for its sightings at the other points (the captures' clocks
    /// must differ by less).
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub window: f64,
    /// Draw a plot of one connection and direction into FILE (.svg, or .png) instead of the table:
    /// `--kind lifeline` (each packet at every point, joined) or `owd` (one-way delay).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// What `--plot` draws.
    #[arg(long, value_enum, default_value_t = PlotKind::Lifeline, requires = "plot")]
    pub kind: PlotKind,
    /// The connection `--plot` draws (its id).
    #[arg(short = 'c', long = "conn", value_name = "ID", default_value_t = 1)]
    pub conn: usize,
    /// The direction `--plot` draws.
    #[arg(long, value_name = "DIR", default_value = "a2b", value_parser = ["a2b", "b2a"])]
    pub dir: String,
    /// `--plot lifeline`: only packets that left their first point from this time on (s since
    /// the first packet).
    #[arg(long, value_name = "SECONDS", requires = "plot")]
    pub from: Option<f64>,
    /// `--plot lifeline`: until this time.
    #[arg(long, value_name = "SECONDS", requires = "plot")]
    pub to: Option<f64>,
    /// Plot width in pixels.
    #[arg(long, default_value_t = 1000)]
    pub width: u32,
    /// Plot height in pixels.
    #[arg(long, default_value_t = 600)]
    pub height: u32,
}

/// The plots of `correlate --plot`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotKind {
    /// Time-sequence: each packet drawn at every point that saw it, joined; losses where they
    /// vanished.
    Lifeline,
    /// One-way delay of each packet, first to last point.
    Owd,
}

fn parse_offset(s: &str) -> Result<(usize, f64), String> {
    let (n, ms) = s.split_once('=').ok_or("expected N=MS, e.g. 2=1.5")?;
    let n: usize = n.trim().parse().map_err(|_| format!("`{n}` is not a capture number"))?;
    let ms: f64 = ms.trim().parse().map_err(|_| format!("`{ms}` is not a number of milliseconds"))?;
    if n < 2 || !ms.is_finite() {
        return Err("N is 2 or more (the first capture is the reference), MS a finite number".into());
    }
    Ok((n, ms))
}

/// `correlate --packets --json`.
#[derive(Serialize)]
struct PacketsDoc<I> {
    packets: I,
}

/// `correlate --json` (docs/json.md#correlate).
#[derive(Serialize)]
struct Doc<'a> {
    points: Vec<PointRow>,
    directions: &'a [CorrDir],
    events: &'a [CorrEvent],
}

pub fn correlate(args: &CorrelateArgs) -> io::Result<ExitCode> {
    if !(args.window.is_finite() && args.window > 0.0) {
        return Err(io::Error::other("--window must be a positive number of seconds"));
    }
    let mut offsets_ns = vec![None; args.traces.len()];
    for &(n, ms) in &args.offset {
        let slot = offsets_ns
            .get_mut(n - 1)
            .ok_or_else(|| io::Error::other(format!("--offset {n}=…: there are {} captures", args.traces.len())))?;
        *slot = Some((ms * 1e6).round() as i64);
    }
    // Only the per-packet outputs keep every packet (docs/correlate.md, "Memory").
    let keep_packets = args.packets || args.plot.is_some();
    let settings = Settings { window_ns: (args.window * 1e9) as i64, offsets_ns, keep_packets, judge_thread: None };
    let c = match correlate::correlate(&args.traces, &settings) {
        Ok(c) => c,
        Err(Error::File(e)) => return Err(input_error(e.to_string())),
        Err(e) => return Err(io::Error::other(e.to_string())),
    };
    if c.lifelines == 0 {
        return Err(input_error("no TCP packets in these captures"));
    }
    if let Some(file) = &args.plot {
        if args.conn == 0 || args.conn > c.conns.len() {
            return Err(io::Error::other(format!("-c {}: there are {} connections", args.conn, c.conns.len())));
        }
        let dir = u8::from(args.dir == "b2a");
        let fig = match args.kind {
            PlotKind::Lifeline => plot::lifeline::lifelines(&c, args.conn - 1, dir, (args.from, args.to)),
            PlotKind::Owd => {
                plot::lifeline::one_way_delay(&c, args.conn - 1, dir, Some(plot::svg::columns(args.width)))
            }
        };
        let svg = plot::svg::render(&fig, args.width, args.height);
        let bytes =
            if file.extension().is_some_and(|e| e == "png") { crate::plot::png(&svg)? } else { svg.into_bytes() };
        std::fs::write(file, bytes)
            .map_err(|e| io::Error::other(format!("{}: cannot write the plot: {e}", file.display())))?;
        writeln!(io::stderr(), "tcpscope: wrote {}", file.display())?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.packets && args.json {
        let doc = PacketsDoc { packets: LazySeq::new(c.packet_rows()) };
        serde_json::to_writer_pretty(&mut out, &doc).map_err(io::Error::other)?;
        writeln!(out)?;
    } else if args.packets {
        // CSV (text too: a packet table is for machines): the per-point lists as columns
        // NAME_1 ... NAME_N.
        let rows: Vec<CorrPacket> = c.packet_rows().collect();
        write_csv(&mut out, &rows, |r| {
            let mut flat = Vec::new();
            for (k, v) in to_value(r)?.as_object().into_iter().flatten() {
                match v {
                    serde_json::Value::Array(a) => {
                        flat.extend(a.iter().enumerate().map(|(i, x)| (format!("{k}_{}", i + 1), x.clone())))
                    }
                    v => flat.push((k.clone(), v.clone())),
                }
            }
            Ok(flat)
        })?;
    } else if args.json {
        let doc = Doc { points: c.point_rows(), directions: &c.dirs, events: &c.events };
        serde_json::to_writer_pretty(&mut out, &doc).map_err(io::Error::other)?;
        writeln!(out)?;
    } else if args.csv {
        write_csv(&mut out, &c.dirs, |r| {
            let mut flat = Vec::new();
            flatten("", &to_value(r)?, &mut flat);
            Ok(flat)
        })?;
    } else {
        text(&mut out, &c, args.events)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

fn text<W: Write>(out: &mut W, c: &Correlation, events: bool) -> io::Result<()> {
    let n = c.conns.len();
    writeln!(
        out,
        "{} captures, {n} connection{}; times on capture 1's clock",
        c.points.len(),
        if n == 1 { "" } else { "s" }
    )?;
    writeln!(
        out,
        "{:>5}  {:<28} {:>8}  {:<9} {:>12} {:>10} {:>12}  missed",
        "point", "file", "packets", "clock", "offset ms", "± ms", "skew ppm"
    )?;
    for p in c.point_rows() {
        let file = std::path::Path::new(&p.file).file_name().map_or(p.file.clone(), |f| f.to_string_lossy().into());
        let skew = if p.clock == "estimated" {
            format!("{:.1}±{:.1}{}", p.skew_ppm, p.skew_uncertainty_ppm, if p.skew_applied { "" } else { "*" })
        } else {
            "-".into()
        };
        writeln!(
            out,
            "{:>5}  {:<28} {:>8}  {:<9} {:>12.3} {:>10.3} {:>12}  {}",
            p.point, file, p.packets, p.clock, p.offset_ms, p.offset_uncertainty_ms, skew, p.capture_loss
        )?;
    }
    if c.clocks.iter().any(|k| k.source == correlate::ClockSource::Estimated && !k.skew_applied) {
        writeln!(out, "(* skew not applied: within twice its uncertainty)")?;
    }
    for conn in 0..n {
        let dirs = &c.dirs[conn * 2..conn * 2 + 2];
        writeln!(out)?;
        writeln!(
            out,
            "conn {}  {} <-> {}{}",
            conn + 1,
            c.conns[conn].a,
            c.conns[conn].b,
            if dirs[0].translated {
                "  (addresses differ between points: NAT; matched by sequence numbers)"
            } else {
                ""
            }
        )?;
        for d in dirs {
            if d.packets == 0 && d.delivered == 0 {
                continue;
            }
            let losses: Vec<String> = d.losses.iter().map(|l| format!("{}→{}: {}", l.from, l.to, l.packets)).collect();
            writeln!(
                out,
                "  {} path {}: {} packets, {} delivered, {} lost on path{}, loss rate {}",
                d.dir,
                d.path,
                d.packets,
                d.delivered,
                d.lost_on_path,
                if losses.is_empty() { String::new() } else { format!(" ({})", losses.join(", ")) },
                d.loss_rate.map_or("-".into(), |r| format!("{:.2} %", r * 100.0)),
            )?;
            writeln!(
                out,
                "      capture loss {}, outside the captures {}, duplicated {}, reordered {}, CE-marked {}, window changed {}, MSS changed {}, DSCP changed {}, TTL hops {}",
                d.capture_loss,
                d.outside_capture,
                d.duplicated,
                d.reordered,
                d.ce_marked,
                d.window_changed,
                d.mss_changed,
                d.dscp_changed,
                d.ttl_hops.map_or("-".into(), |h| h.to_string())
            )?;
            if d.split_pieces + d.merged_pieces > 0 {
                writeln!(
                    out,
                    "      matched by byte coverage: {} pieces of segments cut on the path (TSO/GSO), {} merged (GRO)",
                    d.split_pieces, d.merged_pieces
                )?;
            }
            let w = &d.one_way_delay_ms;
            writeln!(
                out,
                "      one-way delay ms min {} median {} max {}; queueing median {} max {}",
                opt(w.min, 3),
                opt(w.median, 3),
                opt(w.max, 3),
                opt(d.queueing_ms.median, 3),
                opt(d.queueing_ms.max, 3)
            )?;
            if d.negative_delay {
                writeln!(
                    out,
                    "      NEGATIVE one-way delay: a packet arrived before it left; the clocks' correction is wrong by at least {} ms",
                    opt(w.min.map(|m| -m), 3)
                )?;
            }
            writeln!(
                out,
                "      retransmissions {}: {} necessary, {} spurious",
                d.retransmissions, d.necessary_retransmissions, d.spurious_retransmissions
            )?;
            if let Some(rtt) = d.rtt_ms {
                let pc = |x: Option<f64>| opt(x.map(|x| x * 100.0), 1);
                writeln!(
                    out,
                    "      RTT {rtt:.3} ms ({} samples): path {} %, queueing {} %, receiver {} %",
                    d.rtt_samples,
                    pc(d.rtt_path_share),
                    pc(d.rtt_queueing_share),
                    pc(d.rtt_receiver_share)
                )?;
            }
        }
        if events {
            for e in c.events.iter().filter(|e| e.conn == conn + 1) {
                writeln!(
                    out,
                    "    {:<24} {} point {} frame {} t={:.6}s seq {} len {}: {}",
                    e.kind, e.dir, e.point, e.frame, e.time_s, e.seq, e.len, e.detail
                )?;
            }
        }
    }
    Ok(())
}

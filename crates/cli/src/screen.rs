//! `tcpscope screen`: the connections ranked by trouble, with the reasons.

use std::io::{self, Write};
use std::process::ExitCode;

use serde::Serialize;
use tcpscope_core::export::json::LazySeq;
use tcpscope_core::flow::ConnInfo;
use tcpscope_core::pass::Analysis;
use tcpscope_core::screen::{self, ConnScreen, Rules, ScreenRow, ScreenSink};

use crate::args::ScreenArgs;
use crate::output::{check_ids, flatten, to_value, write_csv};
use crate::run::{analyse_query, proof, query, settings, status};

pub fn screen(args: &ScreenArgs) -> io::Result<ExitCode> {
    let rules = match &args.rules {
        Some(p) => Rules::load(p).map_err(io::Error::other)?,
        None => Rules::default(),
    };
    // The screen results carry each connection's endpoints: no statistics pass needed. The
    // analysis classifies by the rules' constants.
    let query = query(&args.common)?.settings(rules.settings(settings(&args.common)?)).vantage(args.with.clone());
    let proof = proof(&query)?;
    let run = analyse_query(query, &args.common, || ScreenSink::new(rules.clone()).with_proof(proof.clone()))?;
    let files = run.files;
    crate::quality::warn(&files, &[], args.common.quiet)?;
    let mut screens = Vec::new();
    for sink in run.traces.into_iter().map(|t| t.sink) {
        // Moved, not copied, when there is one part: the results are the bulk of the memory.
        let s = sink.finish();
        if screens.is_empty() {
            screens = s;
        } else {
            screens.extend(s);
        }
    }
    let an = Analysis { files, ..Analysis::default() };
    if an.nothing_read() {
        // Why was said on stderr; no empty table on stdout.
        return Ok(status(&an));
    }
    check_ids(screens.len(), &args.common)?;
    let status = status(&an);

    // Most troubled first (screen::rank). Boring ones hidden unless asked for (or named).
    let named = !args.common.conn.is_empty();
    let mut rows: Vec<(usize, &ConnInfo, &ConnScreen)> = screen::rank(&screens)
        .into_iter()
        .map(|i| (i + 1, &screens[i].info, &screens[i]))
        .filter(|(id, _, _)| !named || args.common.conn.contains(id))
        .collect();
    let total = rows.len();
    if !args.all && !named {
        rows.retain(|(_, _, s)| !s.boring);
    }
    let hidden = total - rows.len();
    if let Some(n) = args.top {
        rows.truncate(n);
    }

    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let c = &args.common;
    if c.json {
        // Each row is made and written in turn: the whole list as JSON values took ~5 GB for
        // 200,000 connections.
        let doc = ScreenDoc {
            connections: LazySeq::new(rows.iter().map(|(id, _, s)| ScreenRow::new(*id, s, true))),
            connections_total: total,
            boring_hidden: hidden,
        };
        serde_json::to_writer_pretty(&mut out, &doc).map_err(io::Error::other)?;
        writeln!(out)?;
    } else if c.csv {
        write_csv(&mut out, &rows, |r| {
            let mut flat = Vec::new();
            flatten("", &to_value(&ScreenRow::new(r.0, r.2, false))?, &mut flat);
            Ok(flat)
        })?;
    } else {
        if let Some(p) = &proof {
            writeln!(out, "{}; a verdict they prove says so", p.captures_text())?;
        }
        text(&mut out, &rows, total, hidden, args.events)?;
    }
    out.flush()?;
    Ok(status)
}

/// `screen --json` (docs/json.md#screen).
#[derive(Serialize)]
struct ScreenDoc<R> {
    connections: R,
    connections_total: usize,
    boring_hidden: usize,
}

fn text<W: Write>(
    out: &mut W,
    rows: &[(usize, &ConnInfo, &ConnScreen)],
    total: usize,
    hidden: usize,
    events: bool,
) -> io::Result<()> {
    writeln!(
        out,
        "{total} connection{}, {hidden} boring hidden (--all shows them)",
        if total == 1 { "" } else { "s" }
    )?;
    let idw = rows.iter().map(|r| r.0.to_string().len()).max().unwrap_or(2).max(2);
    let epw = rows.iter().map(|r| r.1.a.to_string().len() + r.1.b.to_string().len() + 4).max().unwrap_or(10);
    writeln!(out, "{:>idw$}  {:>8}  {:<epw$}  {:>9}  verdict", "id", "severity", "connection", "duration")?;
    for (id, c, s) in rows {
        let ends = format!("{} -> {}", c.a, c.b);
        writeln!(out, "{id:>idw$}  {:>8.3}  {ends:<epw$}  {:>8.2}s  {}", s.severity, s.duration_s, s.verdict)?;
        if events {
            for e in &s.events {
                let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
                writeln!(
                    out,
                    "{:idw$}    {:<17} {} frame {} t={:.6}s seq {} len {}: {} (since previous {} ms, dup ACKs {}, SACK above {}, RTT {} / min {} / RTO {:.0} ms{})",
                    "",
                    e.class.name(),
                    e.dir,
                    e.frame,
                    e.time_s,
                    e.seq,
                    e.len,
                    e.rule,
                    ms(e.since_prev_ms.or(e.since_hole_ms)),
                    e.dup_acks,
                    if e.sack_above { "yes" } else { "no" },
                    ms(e.rtt_ms),
                    ms(e.rtt_min_ms),
                    e.rto_ms,
                    e.dsack_frame.map_or(String::new(), |f| format!(", D-SACK frame {f}")),
                )?;
                if s.vantage.is_some() {
                    match &e.proved {
                        Some(p) => writeln!(
                            out,
                            "{:idw$}      proved by captures {}: {} (inferred {})",
                            "",
                            p.source,
                            p.detail,
                            p.inferred.name()
                        )?,
                        None => writeln!(out, "{:idw$}      inferred from capture 1 alone", "")?,
                    }
                }
            }
        }
    }
    Ok(())
}

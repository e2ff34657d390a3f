//! `tcpscope report`: the viewer's page with the data inline, one HTML file that works offline.
//!
//! The file carries the connection list (its [`REPORT_ROWS`] most troubled rows unless told
//! otherwise) and, for the most troubled connections, each
//! direction's time-sequence figure and panels computed for [`REPORT_COLUMNS`] pixel columns
//! over the whole connection (packed as `api/tsg?fmt=bin` and `api/panels?fmt=bin` answer, in
//! base64: the page reads one format), its events, and the packet-listing row of every frame a
//! mark stands for (the hover shows it, as in the live viewer). The page zooms into that data in
//! the browser: a connection with fewer segments than columns is there in full detail, a bigger
//! one down to one mark per column (the live viewer has no such limit).

use std::io;
use std::path::Path;

use serde_json::{Map, Value, json};
use tcpscope_core::analysis::Dir;
use tcpscope_core::screen;

use crate::api::{self, Viewport};
use crate::data::Traces;
use crate::pack;

/// Pixel columns the report's figures are computed for.
pub const REPORT_COLUMNS: u32 = 4000;

/// Rows of the connection list a report carries by default: each is ~2.6 kB of statistics, and
/// a report is mailed (200,000 connections made a 526 MB file that no browser opens well).
pub const REPORT_ROWS: usize = 2000;

/// Every connection's id (1-based) as `tcpscope screen` ranks them ([`screen::rank`]), with
/// whether it is boring.
fn ranked(t: &Traces) -> Vec<(bool, usize)> {
    screen::rank(&t.screens).into_iter().map(|i| (t.screens[i].boring, i + 1)).collect()
}

/// Ids (1-based) of the `n` most troubled connections as `tcpscope screen` ranks them: not
/// boring, most severe first, ties by id. When every connection is boring, the most severe one
/// is plotted so the report shows one plot.
pub fn most_troubled(t: &Traces, n: usize) -> Vec<usize> {
    let ids = ranked(t);
    let troubled: Vec<usize> = ids.iter().filter(|x| !x.0).take(n).map(|x| x.1).collect();
    if troubled.is_empty() { ids.iter().take(n.min(1)).map(|x| x.1).collect() } else { troubled }
}

/// The ids (in order) of the rows a report lists: the `rows` most troubled (as [`most_troubled`]
/// ranks them, boring ones after the rest) and the plotted ones.
fn listed(t: &Traces, rows: usize, plotted: &[usize]) -> Vec<usize> {
    let mut ids: Vec<usize> = ranked(t).into_iter().take(rows).map(|x| x.1).chain(plotted.iter().copied()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The data the report page reads (`window.TCPSCOPE_REPORT`): plots of `ids`, and the list's
/// `rows` most troubled rows (and the plotted ones).
pub fn report_data(t: &Traces, ids: &[usize], rows: usize) -> Result<Value, String> {
    t.prefetch(ids)?;
    let mut details = Map::new();
    for &id in ids {
        let d = t.detail(id)?;
        let mut dirs = Map::new();
        let mut frames = Vec::new();
        for dir in [Dir::AtoB, Dir::BtoA] {
            let v = Viewport { w: REPORT_COLUMNS, ..Default::default() };
            let f = api::tsg_figure(&d, dir, &v);
            frames.extend(f.marks.iter().filter_map(|m| m.frame));
            let tsg = pack::base64(&pack::figure(&d, dir, &f));
            dirs.insert(
                dir.name().into(),
                json!({ "tsg": tsg, "panels": pack::base64(&pack::panels(&api::panels(&d, dir, &v))) }),
            );
        }
        // Bounded by the marks (at most a few per column), not by the connection's packets.
        frames.sort_unstable();
        frames.dedup();
        let packets: Map<String, Value> = frames.iter().map(|&f| (f.to_string(), api::packet_json(&d, f))).collect();
        details.insert(id.to_string(), json!({ "dirs": dirs, "events": api::events_json(&d), "packets": packets }));
    }
    let listed = listed(t, rows, ids);
    // Each row's place in screen::rank: the page sorts a report's rows by severity in that
    // order, rather than by a copy of the rule.
    let mut rank = vec![0usize; t.screens.len()];
    for (place, i) in screen::rank(&t.screens).into_iter().enumerate() {
        rank[i] = place;
    }
    let list: Vec<Value> = listed
        .iter()
        .map(|&id| {
            let mut row = serde_json::to_value(api::conn_row(t, id - 1)).unwrap_or_default();
            row["rank"] = json!(rank.get(id - 1));
            row
        })
        .collect();
    let mut conns = json!({ "traces": api::traces_json(t), "conns": list });
    conns["report"] = json!({
        "columns": REPORT_COLUMNS,
        "plotted": ids,
        "rule": "screen: not boring, most severe first",
        "total": t.an.conns.len(),
        "listed": listed.len(),
    });
    conns["keys"] = json!(crate::list::keys());
    conns["ascending_keys"] = json!(crate::list::ascending_keys());
    conns["details"] = Value::Object(details);
    Ok(conns)
}

/// The page with `data` inline. `</` is escaped in the JSON so no string in the data (a file
/// name, say) can close the script element.
pub fn render(data: &Value) -> String {
    let json = serde_json::to_string(data).unwrap_or_default().replace("</", "<\\/");
    let script = format!("<script>window.TCPSCOPE_REPORT={json};</script>");
    match crate::PAGE.find("<head>") {
        Some(i) => format!("{}{script}{}", &crate::PAGE[..i + 6], &crate::PAGE[i + 6..]),
        None => format!("{script}{}", crate::PAGE),
    }
}

/// Writes the report of the `n` most troubled connections, listing the `rows` most troubled,
/// to `out`; returns the plotted ids and the number of rows listed.
pub fn write(t: &Traces, n: usize, rows: usize, out: &Path) -> io::Result<(Vec<usize>, usize)> {
    let ids = most_troubled(t, n);
    let data = report_data(t, &ids, rows).map_err(io::Error::other)?;
    let listed = data["report"]["listed"].as_u64().unwrap_or(0) as usize;
    std::fs::write(out, render(&data)).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", out.display())))?;
    Ok((ids, listed))
}

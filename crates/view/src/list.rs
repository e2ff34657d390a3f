//! The connection list as the page shows it — filtered, sorted and cut to the rows in sight —
//! computed here, not in the browser. Every row of a trace of 200,000 connections was a 526 MB
//! answer: 17 s before the page listed one, 5 GB of server memory to build it, 770 MB of the
//! page's. A page of rows is a few hundred kB whatever the trace, and a new sort or filter costs
//! the server tens of milliseconds.
//!
//! The rules are the ones the page applied before (and still applies to a report's rows,
//! `web/src/api.ts`): rows whose boring rules hold are left out unless asked for; the filter
//! matches, case-insensitively, anywhere in "id endpoints state verdict file"; `desc=1` (the
//! default) puts the largest number or the last text first (the page asks numbers largest
//! first, text A–Z); rows without a value for the key (`null`) come last either way; ties go by
//! id.

use std::cmp::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;
use serde_json::Value;
use tcpscope_core::export::json::{Cell, DirJson, EndpointJson, conn_times};
use tcpscope_core::screen;
use tcpscope_core::stats::DirStats;

use crate::api::{self, ConnRow};
use crate::data::Traces;

/// Most rows one answer holds.
pub const MAX_ROWS: usize = 1000;

/// Keys sorted as text (A–Z first); every other key is a number.
pub const TEXT_KEYS: [&str; 4] = ["endpoints", "state", "verdict", "file"];

/// Top-level numeric keys, after `id`.
const CONN_KEYS: [&str; 6] = ["trace", "first_time", "last_time", "duration_s", "max_idle_s", "severity"];

/// Counters summed over both directions, as `both.NAME`: the list's rexmit and zwin columns
/// show the sum, and sort by it (they sorted by one direction: issue 17).
pub const BOTH_KEYS: [&str; 3] = ["both.payload_bytes", "both.rexmit_packets", "both.zero_window_adverts"];

/// What the page asks of the list.
#[derive(Clone, Debug, PartialEq)]
pub struct ListQuery {
    /// Sort key: one of [`keys`].
    pub sort: String,
    /// Descending.
    pub desc: bool,
    /// Filter text (empty: every row).
    pub filter: String,
    /// Whether rows the boring rules hold for are listed.
    pub boring: bool,
    /// First row wanted (0-based, in the filtered and sorted list).
    pub from: usize,
    /// Rows wanted (at most [`MAX_ROWS`]).
    pub n: usize,
}

/// One answer of `api/conns` with list parameters.
#[derive(Serialize)]
pub struct ListPage {
    /// The traces, as in the whole list's answer.
    pub traces: Vec<Value>,
    /// Connections in the traces.
    pub total: usize,
    /// Connections the filter (and the boring rule) let through.
    pub matched: usize,
    /// Index of the first row of `conns` among those.
    pub from: usize,
    /// The sort keys there are, in the order a menu lists them.
    pub keys: Vec<String>,
    /// The keys a first click sorts ascending (`id` and the text keys): every other key sorts
    /// largest, i.e. worst, first.
    pub ascending_keys: Vec<String>,
    /// The rows `from..from + n` of the list.
    pub conns: Vec<ConnRow>,
}

/// The keys a first click sorts ascending: `id` and the text keys.
pub fn ascending_keys() -> Vec<String> {
    ["id"].iter().chain(&TEXT_KEYS).map(|s| s.to_string()).collect()
}

/// The sort keys, in the order a menu lists them: `id`, the text keys, then the numbers (each
/// direction's statistics as `a2b.NAME`, `b2a.NAME`; flags are not sort keys).
pub fn keys() -> Vec<String> {
    let cells = DirJson::from(&DirStats::default()).cells();
    let dir: Vec<&str> =
        DirJson::NAMES.iter().zip(cells).filter(|(_, c)| !matches!(c, Cell::Bool(_))).map(|(n, _)| *n).collect();
    let mut k: Vec<String> =
        ["id"].iter().chain(&TEXT_KEYS).chain(&CONN_KEYS).chain(&BOTH_KEYS).map(|s| s.to_string()).collect();
    for d in ["a2b", "b2a"] {
        k.extend(dir.iter().map(|n| format!("{d}.{n}")));
    }
    k
}

/// A sort key's value for every connection, by id − 1.
enum Column {
    Num(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
}

fn endpoints(t: &Traces, i: usize) -> String {
    let c = &t.an.conns[i].info();
    let (a, b) = (EndpointJson::from(c.a), EndpointJson::from(c.b));
    format!("{}:{} → {}:{}", a.addr, a.port, b.addr, b.port)
}

fn file(t: &Traces, i: usize) -> String {
    t.an.files.get(t.an.conns[i].info().file).map(|f| f.path.display().to_string()).unwrap_or_default()
}

fn column(t: &Traces, key: &str) -> Result<Column, String> {
    let n = t.an.conns.len();
    let conns = &t.an.conns;
    let text = |f: &dyn Fn(usize) -> Option<String>| Column::Text((0..n).map(f).collect());
    let num = |f: &dyn Fn(usize) -> Option<f64>| Column::Num((0..n).map(f).collect());
    Ok(match key {
        "endpoints" => text(&|i| Some(endpoints(t, i))),
        "state" => text(&|i| Some(conns[i].state().name().to_string())),
        "verdict" => text(&|i| t.screens.get(i).map(|s| s.verdict.clone())),
        "file" => text(&|i| Some(file(t, i))),
        "id" => num(&|i| Some((i + 1) as f64)),
        "trace" => num(&|i| Some(conns[i].info().file as f64)),
        "severity" => num(&|i| t.screens.get(i).map(|s| s.severity)),
        _ => {
            if let Some(k) = CONN_KEYS.iter().position(|&k| k == key) {
                // first_time, last_time, duration_s, max_idle_s: conn_times' order.
                return Ok(num(&|i| Some(conn_times(&conns[i])[k - 1])));
            }
            let bad = || format!("bad sort: {key:?} (one of the keys the list answers with)");
            if BOTH_KEYS.contains(&key) {
                let k = DirJson::NAMES.iter().position(|&x| Some(x) == key.strip_prefix("both.")).ok_or_else(bad)?;
                let int = |d: &DirStats| match DirJson::from(d).cells()[k] {
                    Cell::Int(v) => Some(v as f64),
                    _ => None,
                };
                return Ok(num(&|i| Some(int(&conns[i].dir(0))? + int(&conns[i].dir(1))?)));
            }
            let (d, name) = key.split_once('.').ok_or_else(bad)?;
            let d = ["a2b", "b2a"].iter().position(|&x| x == d).ok_or_else(bad)?;
            let k = DirJson::NAMES.iter().position(|&x| x == name).ok_or_else(bad)?;
            if matches!(DirJson::from(&DirStats::default()).cells()[k], Cell::Bool(_)) {
                return Err(bad());
            }
            num(&|i| match DirJson::of(&conns[i], d).cells()[k] {
                Cell::Int(v) => Some(v as f64),
                Cell::Float(v) => Some(v),
                Cell::Bool(_) | Cell::Null => None,
            })
        }
    })
}

/// `null` last in either order; `a`, `b` otherwise compared as `desc` says.
fn cmp_values<T: PartialOrd>(a: Option<&T>, b: Option<&T>, desc: bool) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, _) => Ordering::Greater,
        (_, None) => Ordering::Less,
        (Some(a), Some(b)) => {
            let o = a.partial_cmp(b).unwrap_or(Ordering::Equal);
            if desc { o.reverse() } else { o }
        }
    }
}

/// Every connection (id − 1), sorted by `key`, ties by id. By severity, descending is the order
/// `tcpscope screen` ranks them in ([`screen::rank`]: boring ones after the others), ascending
/// its reverse.
fn sorted(t: &Traces, key: &str, desc: bool) -> Result<Vec<u32>, String> {
    if key == "severity" && t.screens.len() == t.an.conns.len() {
        let mut ix: Vec<u32> = screen::rank(&t.screens).into_iter().map(|i| i as u32).collect();
        if !desc {
            ix.reverse();
        }
        return Ok(ix);
    }
    let col = column(t, key)?;
    let mut ix: Vec<u32> = (0..t.an.conns.len() as u32).collect();
    match &col {
        Column::Num(v) => {
            ix.sort_by(|&x, &y| cmp_values(v[x as usize].as_ref(), v[y as usize].as_ref(), desc).then(x.cmp(&y)))
        }
        Column::Text(v) => {
            ix.sort_by(|&x, &y| cmp_values(v[x as usize].as_ref(), v[y as usize].as_ref(), desc).then(x.cmp(&y)))
        }
    }
    Ok(ix)
}

fn poisoned<T>(_: T) -> String {
    "connection list cache poisoned".to_string()
}

/// A sort's key, whether descending, and the connections (id − 1) in its order.
type Sorted = (String, bool, Arc<Vec<u32>>);

/// The list's state on the server: what the filter searches, and the last orders computed (the
/// page asks for one screenful after another of the same list while it is scrolled).
#[derive(Default)]
pub struct List {
    /// Per connection, "id endpoints state verdict file" in lower case.
    haystack: OnceLock<Vec<String>>,
    /// The last sort.
    order: Mutex<Option<Sorted>>,
    /// The last filtered list: its query (`from`, `n` zeroed) and rows.
    rows: Mutex<Option<(ListQuery, Arc<Vec<u32>>)>>,
}

impl List {
    fn haystack(&self, t: &Traces) -> &[String] {
        self.haystack.get_or_init(|| {
            (0..t.an.conns.len())
                .map(|i| {
                    let verdict = t.screens.get(i).map_or("", |s| s.verdict.as_str());
                    format!("{} {} {} {verdict} {}", i + 1, endpoints(t, i), t.an.conns[i].state().name(), file(t, i))
                        .to_lowercase()
                })
                .collect()
        })
    }

    fn order(&self, t: &Traces, key: &str, desc: bool) -> Result<Arc<Vec<u32>>, String> {
        if let Some((k, d, o)) = self.order.lock().map_err(poisoned)?.as_ref()
            && (k.as_str(), *d) == (key, desc)
        {
            return Ok(o.clone());
        }
        let o = Arc::new(sorted(t, key, desc)?);
        *self.order.lock().map_err(poisoned)? = Some((key.to_string(), desc, o.clone()));
        Ok(o)
    }

    /// The connections (id − 1) the query lists, in its order.
    fn rows(&self, t: &Traces, q: &ListQuery) -> Result<Arc<Vec<u32>>, String> {
        let whole = ListQuery { from: 0, n: 0, ..q.clone() };
        if let Some((k, r)) = self.rows.lock().map_err(poisoned)?.as_ref()
            && *k == whole
        {
            return Ok(r.clone());
        }
        let order = self.order(t, &q.sort, q.desc)?;
        let f = q.filter.to_lowercase();
        let hay = if f.is_empty() { &[][..] } else { self.haystack(t) };
        let keep = |i: usize| {
            (q.boring || !t.screens.get(i).is_some_and(|s| s.boring)) && (f.is_empty() || hay[i].contains(&f))
        };
        let rows = Arc::new(order.iter().copied().filter(|&i| keep(i as usize)).collect::<Vec<u32>>());
        *self.rows.lock().map_err(poisoned)? = Some((whole, rows.clone()));
        Ok(rows)
    }

    /// The answer to `q`: rows `q.from..q.from + q.n` of the filtered, sorted list.
    pub fn page(&self, t: &Traces, q: &ListQuery) -> Result<ListPage, String> {
        let rows = self.rows(t, q)?;
        let from = q.from.min(rows.len());
        let to = from.saturating_add(q.n.min(MAX_ROWS)).min(rows.len());
        Ok(ListPage {
            traces: api::traces_json(t),
            total: t.an.conns.len(),
            matched: rows.len(),
            from,
            keys: keys(),
            ascending_keys: ascending_keys(),
            conns: rows[from..to].iter().map(|&i| api::conn_row(t, i as usize)).collect(),
        })
    }
}

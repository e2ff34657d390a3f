//! The native module of the `tcpscope` Python package (`tcpscope._native`): the engine's
//! passes run with the GIL released, their tables handed to pyarrow through the Arrow C data
//! interface (no copy). The Python side (`python/tcpscope/__init__.py`) turns the warnings
//! into `warnings.warn` and documents the API; docs/python.md.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_pyarrow::{PyArrowType, Table};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use tcpscope_arrow::columns::schema;
use tcpscope_arrow::{Collect, Dest, OnThread, Out, Report, TableName};
use tcpscope_core::analysis::{Dir, Settings};
use tcpscope_core::capture::{TimeSpec, Window};
use tcpscope_core::pass::{FileSummary, Query};
use tcpscope_core::plot::make::{Kind, PlotError, Request, png};
use tcpscope_core::screen::{Rules, ScreenRow, ScreenSink, rank};

create_exception!(
    _native,
    TcpscopeError,
    PyException,
    "A trace could not be read (the message names the file and byte offset)."
);

/// The options of a pass, the CLI's flags of the same names: the keyword arguments of `read`
/// and `screen` (and of `tcpscope.dask.analyze`, which hands them to `read`). Their one
/// definition, defaults included: the Python side passes on what the caller gave
/// (`tcpscope.Options` documents them).
struct Options {
    /// All paths as one trace in time order (`--merge`).
    merge: bool,
    /// The time window, as `--from`, `--for`, `--to` take it.
    start: Option<String>,
    duration: Option<String>,
    end: Option<String>,
    /// Window scale to assume when the handshake was not captured (`--wscale`).
    wscale: Option<u8>,
    /// Seconds of silence that split a 4-tuple into two connections (`--idle-split`).
    idle_split: f64,
    /// Verify IPv4 header and TCP checksums (`--checksums`).
    checksums: bool,
    /// Only these connection ids, run-wide (`-c`); empty: every one.
    conns: Vec<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            merge: false,
            start: None,
            duration: None,
            end: None,
            wscale: None,
            idle_split: 240.0,
            checksums: false,
            conns: Vec::new(),
        }
    }
}

impl Options {
    /// The options of a call's keyword arguments, the others at their defaults; an unknown
    /// one is a `TypeError`, as for any Python function. (By hand: pyo3's `FromPyObject`
    /// derive takes no struct whose fields all have defaults.)
    fn of(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
        let mut o = Options::default();
        for (key, v) in kwargs.into_iter().flat_map(|kw| kw.iter()) {
            let key: String = key.extract()?;
            let bad = |e: PyErr| PyTypeError::new_err(format!("{key}: {e}"));
            match key.as_str() {
                "merge" => o.merge = v.extract().map_err(bad)?,
                "start" => o.start = v.extract().map_err(bad)?,
                "duration" => o.duration = v.extract().map_err(bad)?,
                "end" => o.end = v.extract().map_err(bad)?,
                "wscale" => o.wscale = v.extract().map_err(bad)?,
                "idle_split" => o.idle_split = v.extract().map_err(bad)?,
                "checksums" => o.checksums = v.extract().map_err(bad)?,
                "conns" => o.conns = v.extract().map_err(bad)?,
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "unexpected option '{key}' (options: merge, start, duration, end, wscale, idle_split, checksums, conns)"
                    )));
                }
            }
        }
        Ok(o)
    }

    /// The query of `paths` these options ask for; with `shard`, only that shard's
    /// connections.
    fn query(self, paths: Vec<PathBuf>, shard: Option<(usize, usize)>) -> PyResult<Query> {
        if paths.is_empty() {
            return Err(PyValueError::new_err("no trace given"));
        }
        if shard.is_some() && !self.conns.is_empty() {
            // A shard numbers only its own connections (docs/scale.md).
            return Err(PyValueError::new_err("conns and shard: connection ids are the whole run's, not a shard's"));
        }
        if self.idle_split.is_nan() || self.idle_split <= 0.0 {
            return Err(PyValueError::new_err("idle_split must be a positive number of seconds"));
        }
        if self.wscale.is_some_and(|w| w > 14) {
            return Err(PyValueError::new_err("wscale must be 0 to 14"));
        }
        let spec = |s: Option<String>, what: &str| -> PyResult<Option<TimeSpec>> {
            s.map(|s| s.parse().map_err(|e| PyValueError::new_err(format!("{what} {s:?}: {e}")))).transpose()
        };
        let length_ns = self
            .duration
            .map(|d| {
                tcpscope_core::capture::time::parse_duration(&d)
                    .map_err(|e| PyValueError::new_err(format!("duration {d:?}: {e}")))
            })
            .transpose()?;
        let window = Window { from: spec(self.start, "start")?, length_ns, to: spec(self.end, "end")? };
        let settings = Settings {
            idle_split_ns: (self.idle_split * 1e9) as u64,
            assume_wscale: self.wscale,
            checksums: self.checksums,
            ..Settings::default()
        };
        let mut q = Query::new(paths).merge(self.merge).window(window).settings(Rules::default().settings(settings));
        if let Some((k, n)) = shard {
            if n == 0 || k >= n {
                return Err(PyValueError::new_err("shard must be (k, n) with 0 <= k < n"));
            }
            q = q.shard(k, n);
        }
        Ok(q)
    }
}

/// Every id of the `conns` option is one of the run's `n` connections.
fn check_ids(ids: &[usize], n: usize) -> PyResult<()> {
    match ids.iter().find(|&&id| id == 0 || id > n) {
        Some(id) => Err(PyValueError::new_err(format!("conns: no connection {id} (the input has {n})"))),
        None => Ok(()),
    }
}

/// `file: message`, unless the message names the file already, with the byte offset where
/// reading stopped unless the message says it.
fn on_path(f: &FileSummary, msg: &str) -> String {
    let p = f.path.display().to_string();
    let mut m = if msg.starts_with(&format!("{p}: ")) { msg.to_string() } else { format!("{p}: {msg}") };
    if let Some(off) = f.error_offset.filter(|_| !msg.contains("byte offset")) {
        m += &format!(" (at byte offset {off})");
    }
    m
}

/// What the pass read, as the CLI says it: an exception when a trace could not be read at
/// all, else the warnings (damaged stretches, a file's error after some records, an empty
/// window) for `warnings.warn`.
fn outcome(traces: &[tcpscope_core::pass::Trace<()>], files: &[FileSummary]) -> PyResult<Vec<String>> {
    let mut warnings = Vec::new();
    for t in traces {
        if let Some(e) = &t.error {
            return Err(if t.window_error {
                PyValueError::new_err(e.clone())
            } else {
                TcpscopeError::new_err(e.clone())
            });
        }
        warnings.extend(t.warnings.iter().chain(&t.empty).cloned());
    }
    if !files.is_empty() && files.iter().all(|f| f.packets == 0 && f.error.is_some()) {
        let msgs: Vec<String> = files.iter().map(|f| on_path(f, f.error.as_deref().unwrap_or(""))).collect();
        return Err(TcpscopeError::new_err(msgs.join("; ")));
    }
    for f in files {
        for d in &f.damaged {
            warnings.push(format!("{}: {}", d.file.as_ref().unwrap_or(&f.path).display(), d.describe()));
        }
        if let Some(e) = &f.error {
            warnings.push(on_path(f, e));
        }
    }
    Ok(warnings)
}

/// The tables named, as pyarrow Tables, and the warnings.
#[pyfunction]
#[pyo3(signature = (paths, tables, shard=None, **options))]
#[allow(clippy::type_complexity)]
fn read(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    tables: Vec<String>,
    shard: Option<(usize, usize)>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Vec<(String, PyArrowType<Table>)>, Vec<String>)> {
    let o = Options::of(options)?;
    let ids = o.conns.clone();
    let q = o.query(paths, shard)?;
    let mut names = Vec::new();
    for t in &tables {
        let n = TableName::parse(t).ok_or_else(|| {
            let all: Vec<&str> = TableName::ALL.iter().map(|t| t.name()).collect();
            PyValueError::new_err(format!("unknown table {t:?} ({})", all.join(", ")))
        })?;
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let outs: Vec<(TableName, Arc<Mutex<Collect>>)> =
        names.iter().map(|&t| (t, Arc::new(Mutex::new(Collect::default())))).collect();
    // Each table collected on a thread of its own, as the CLI writes each file: turning a
    // batch's coded text columns back into text is then off the thread that makes the rows.
    let threads: Vec<(TableName, Arc<Mutex<OnThread>>)> = outs
        .iter()
        .map(|(t, c)| Ok((*t, Arc::new(Mutex::new(OnThread::new(Shared(c.clone()))?)))))
        .collect::<std::io::Result<_>>()
        .map_err(|e| TcpscopeError::new_err(e.to_string()))?;
    let dests: Vec<(TableName, Dest)> = threads.iter().map(|(t, c)| (*t, c.clone() as Dest)).collect();
    let report: std::io::Result<Report> = py.detach(|| {
        let report = tcpscope_arrow::export(&q, &Rules::default(), &dests, &ids, &|_, _| {});
        // The collecting threads end with their last batch; the pass's error comes first.
        let collected = threads
            .iter()
            .try_for_each(|(_, t)| t.lock().map_err(|_| std::io::Error::other("a pass panicked"))?.finish());
        let report = report?;
        collected.map(|()| report)
    });
    let report = report.map_err(|e| TcpscopeError::new_err(e.to_string()))?;
    let warnings = outcome(&report.traces, &report.files)?;
    check_ids(&ids, report.connections)?;
    let mut out = Vec::new();
    for (t, c) in outs {
        let batches = std::mem::take(&mut c.lock().map_err(|_| PyException::new_err("a pass panicked"))?.0);
        let table = Table::try_new(batches, schema(&t.columns())).map_err(|e| PyException::new_err(e.to_string()))?;
        out.push((t.name().to_string(), PyArrowType(table)));
    }
    Ok((out, warnings))
}

/// A [`Collect`] shared with the thread that fills it ([`OnThread`] owns its destination).
struct Shared(Arc<Mutex<Collect>>);

impl Out for Shared {
    fn write(&mut self, batch: &RecordBatch) -> std::io::Result<()> {
        self.0.lock().map_err(|_| std::io::Error::other("a pass panicked"))?.write(batch)
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `screen --json`'s connections (every one, boring too, most troubled first), as JSON text,
/// and the warnings.
#[pyfunction]
#[pyo3(signature = (paths, **options))]
fn screen(py: Python<'_>, paths: Vec<PathBuf>, options: Option<&Bound<'_, PyDict>>) -> PyResult<(String, Vec<String>)> {
    let o = Options::of(options)?;
    let ids = o.conns.clone();
    let q = o.query(paths, None)?;
    let rules = Rules::default();
    let run = py
        .detach(|| q.run(|| ScreenSink::new(rules.clone()), &|_, _| {}))
        .map_err(|e| TcpscopeError::new_err(e.to_string()))?;
    let files = run.files;
    let mut traces = Vec::new();
    let mut screens = Vec::new();
    for t in run.traces {
        let (sink, t) = t.split();
        screens.extend(sink.finish());
        traces.push(t);
    }
    let warnings = outcome(&traces, &files)?;
    check_ids(&ids, screens.len())?;
    let rows: Vec<ScreenRow<'_>> = rank(&screens)
        .into_iter()
        .filter(|i| ids.is_empty() || ids.contains(&(i + 1)))
        .map(|i| ScreenRow::new(i + 1, &screens[i], true))
        .collect();
    let text = serde_json::to_string(&rows).map_err(|e| PyException::new_err(e.to_string()))?;
    Ok((text, warnings))
}

/// One connection's plot (core's [`Request`], as `tcpscope plot` makes it): the image's bytes
/// (`format` `svg` or `png`) and the warnings.
#[pyfunction]
#[pyo3(signature = (path, conn, kind, dir=None, start=None, end=None, seq_from=None, seq_to=None, abs_seq=false, width=1200, height=750, title=None, wscale=None, window=None, format="svg"))]
#[allow(clippy::too_many_arguments)]
fn plot(
    py: Python<'_>,
    path: PathBuf,
    conn: usize,
    kind: &str,
    dir: Option<&str>,
    start: Option<String>,
    end: Option<String>,
    seq_from: Option<i64>,
    seq_to: Option<i64>,
    abs_seq: bool,
    width: u32,
    height: u32,
    title: Option<String>,
    wscale: Option<u8>,
    window: Option<f64>,
    format: &str,
) -> PyResult<(Py<PyBytes>, Vec<String>)> {
    let kind = kind_of(kind)?;
    let dir = dir_of(dir)?;
    if !matches!(format, "svg" | "png") {
        return Err(PyValueError::new_err(format!("format {format:?}: svg or png")));
    }
    let req = Request {
        dir,
        from: start,
        to: end,
        seq_from,
        seq_to,
        abs_seq,
        width,
        height,
        title,
        wscale,
        window_s: window,
        ..Request::new(path, conn, kind)
    };
    let req_notes = req.unused();
    let (mut files, mut no_fonts) = (Vec::new(), false);
    let made = py.detach(|| {
        let (svg, _) = req.svg(&mut |f| {
            files.push(f.clone());
            Ok(())
        })?;
        if format == "svg" {
            return Ok(svg.into_bytes());
        }
        let png = png(&svg).map_err(PlotError::Usage)?;
        no_fonts = png.no_fonts;
        Ok(png.bytes)
    });
    let bytes = made.map_err(plot_error)?;
    let mut warnings = outcome(&[], &files)?;
    warnings.extend(req_notes);
    if no_fonts {
        warnings.push("no fonts found on this system: the PNG has no text".to_string());
    }
    Ok((PyBytes::new(py, &bytes).unbind(), warnings))
}

/// The series one connection's plot is drawn from (core's [`Request::tables`], as `tcpscope
/// plot --data` writes them): each part's name and table, the direction, and the warnings.
#[pyfunction]
#[pyo3(signature = (path, conn, kind, dir=None, start=None, end=None, wscale=None, window=None))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn series(
    py: Python<'_>,
    path: PathBuf,
    conn: usize,
    kind: &str,
    dir: Option<&str>,
    start: Option<String>,
    end: Option<String>,
    wscale: Option<u8>,
    window: Option<f64>,
) -> PyResult<(Vec<(String, PyArrowType<Table>)>, String, Vec<String>)> {
    let req = Request {
        dir: dir_of(dir)?,
        from: start,
        to: end,
        wscale,
        window_s: window,
        ..Request::new(path, conn, kind_of(kind)?)
    };
    let notes = req.unused();
    let mut files = Vec::new();
    let made = py.detach(|| {
        req.tables(&mut |f| {
            files.push(f.clone());
            Ok(())
        })
    });
    let (parts, dir) = made.map_err(plot_error)?;
    let mut out = Vec::with_capacity(parts.len());
    for p in &parts {
        let err = |e: &dyn std::fmt::Display| PyException::new_err(e.to_string());
        let (batches, schema) = tcpscope_arrow::series::batch(p).map_err(|e| err(&e))?;
        let table = Table::try_new(batches, schema).map_err(|e| err(&e))?;
        out.push((p.name.to_string(), PyArrowType(table)));
    }
    let mut warnings = outcome(&[], &files)?;
    warnings.extend(notes);
    Ok((out, dir.name().to_string(), warnings))
}

/// The plot kind named `kind`.
fn kind_of(kind: &str) -> PyResult<Kind> {
    Kind::parse(kind).ok_or_else(|| {
        let all: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        PyValueError::new_err(format!("unknown plot kind {kind:?} ({})", all.join(", ")))
    })
}

/// The direction named `dir` (`None`: the plot chooses).
fn dir_of(dir: Option<&str>) -> PyResult<Option<Dir>> {
    match dir {
        None => Ok(None),
        Some("a2b") => Ok(Some(Dir::AtoB)),
        Some("b2a") => Ok(Some(Dir::BtoA)),
        Some(d) => Err(PyValueError::new_err(format!("dir {d:?}: a2b or b2a"))),
    }
}

/// A plot's error as Python's: a bad request a `ValueError`, an unreadable trace a
/// [`TcpscopeError`].
fn plot_error(e: PlotError) -> PyErr {
    match e {
        PlotError::Usage(m) => PyValueError::new_err(m),
        PlotError::Input(m) => TcpscopeError::new_err(m),
        PlotError::Io(e) => PyException::new_err(e.to_string()),
    }
}

/// The columns of each table, in order (the stable schema).
#[pyfunction]
fn columns(table: &str) -> PyResult<Vec<String>> {
    let t = TableName::parse(table).ok_or_else(|| PyValueError::new_err(format!("unknown table {table:?}")))?;
    Ok(t.columns().iter().map(|c| c.name.to_string()).collect())
}

/// A table's Arrow schema (an empty table's, for a Dask DataFrame's `meta`).
#[pyfunction]
fn table_schema(table: &str) -> PyResult<PyArrowType<arrow_schema::Schema>> {
    let t = TableName::parse(table).ok_or_else(|| PyValueError::new_err(format!("unknown table {table:?}")))?;
    Ok(PyArrowType(schema(&t.columns()).as_ref().clone()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(screen, m)?)?;
    m.add_function(wrap_pyfunction!(series, m)?)?;
    m.add_function(wrap_pyfunction!(plot, m)?)?;
    m.add_function(wrap_pyfunction!(columns, m)?)?;
    m.add_function(wrap_pyfunction!(table_schema, m)?)?;
    m.add("TcpscopeError", m.py().get_type::<TcpscopeError>())?;
    m.add("TABLES", TableName::ALL.iter().map(|t| t.name()).collect::<Vec<_>>())?;
    m.add("PLOT_KINDS", Kind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>())?;
    Ok(())
}

//! The exported tables, their columns, and the pass that fills them
//! (docs/json.md#arrow-and-parquet).

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tcpscope_core::analysis::{At, ConnIdx, Event, SegmentInfo, Sink};
use tcpscope_core::event::Evidence;
use tcpscope_core::export::json::{ConnJson, DirJson, EndpointJson};
use tcpscope_core::export::rows::{ConnRef, RttColumns, RttRow, SegmentColumns, SegmentRow, Verdict};
use tcpscope_core::flow::ConnInfo;
use tcpscope_core::pass::{FileSummary, Query, Trace};
use tcpscope_core::screen::{MAX_EVIDENCE, OosEvent, Rules, ScreenSink};
use tcpscope_core::stats::StatsSink;
use tcpscope_core::table::{Col, Columns, Field, Kind, Record, RecordColumns, Row, Shared, Table, Texts};

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;

use crate::columns::{Column, Lent, TableBuilder, array, coded, columns, prefixed};
use crate::out::Out;

/// Rows of a streamed table written as one record batch (and one Parquet row group's page
/// run): large enough that per-batch costs vanish, small enough that a batch of segments
/// (~90 bytes a row in the builders) stays a few MB, and that the writer's work left when the
/// rows end (up to three batches) is short: 16,384 rows took a `segments` export of the bulk
/// trace from 0.256 s to 0.243 s and 126 MB to ~100 MB peak RSS against 65,536
/// (docs/performance.md#exports-and-python). A record's columns have room for as many.
pub const BATCH_ROWS: usize = tcpscope_core::table::BATCH_ROWS;

/// A table of the export.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TableName {
    /// One row per connection and direction: every field of `stats`.
    Connections,
    /// One row per classified out-of-sequence segment, as `screen --events`.
    Events,
    /// One row per TCP segment, with the analysis' verdict on it.
    Segments,
    /// One row per RTT sample.
    Rtt,
}

impl TableName {
    /// Every table, in the order written.
    pub const ALL: [TableName; 4] = [TableName::Connections, TableName::Events, TableName::Segments, TableName::Rtt];

    /// Its name (file name stem, `--tables` value).
    pub fn name(self) -> &'static str {
        match self {
            TableName::Connections => "connections",
            TableName::Events => "events",
            TableName::Segments => "segments",
            TableName::Rtt => "rtt",
        }
    }

    /// The table named `s`.
    pub fn parse(s: &str) -> Option<TableName> {
        TableName::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Its columns, from the field lists of the records it is made of.
    pub fn columns(self) -> Vec<Column> {
        let with_ref = |file: bool, fields: &[Field]| {
            let mut c = columns(ConnRef::FIELDS);
            if file {
                c.push(Column { name: FILE.name, field: FILE });
            }
            c.extend(columns(fields));
            c
        };
        match self {
            TableName::Connections => connection_columns(),
            TableName::Events => with_ref(true, OosEvent::FIELDS),
            // `file` is a field of the segment's row already.
            TableName::Segments => with_ref(false, SegmentRow::FIELDS),
            TableName::Rtt => with_ref(true, RttRow::FIELDS),
        }
    }
}

/// The `dir` column of `connections`: which direction a row's statistics are of.
const DIR: Field = Field::new("dir", Kind::Text, "", "`a2b` or `b2a`: the direction this row's statistics are of");

/// The `file` column of `events` and `rtt` (after `input` and `conn`, where `segments` has its
/// own): the file whose frame `frame` is, as a ring numbers frames from 1 in each file.
const FILE: Field = Field::new(
    "file",
    Kind::Text,
    "",
    "the capture file holding the packet of `frame` (a ring's files each number their frames from 1)",
);

/// `connections`: [`ConnJson::FIELDS`] with the endpoints flattened (`a_addr`, `a_port`, …),
/// then [`DIR`], then [`DirJson::FIELDS`] in place of `a2b` and `b2a`; a direction's field
/// named as a connection's (`first_time`, `last_time`, `max_idle_s`) is prefixed `dir_`.
fn connection_columns() -> Vec<Column> {
    let mut cols = Vec::new();
    for f in ConnJson::FIELDS {
        match f.name {
            "a" | "b" => cols.extend(EndpointJson::FIELDS.iter().map(|&e| prefixed(&format!("{}_", f.name), e))),
            "a2b" | "b2a" => {}
            _ => cols.push(Column { name: f.name, field: *f }),
        }
    }
    let conn: Vec<&str> = ConnJson::FIELDS.iter().map(|f| f.name).collect();
    cols.push(Column { name: DIR.name, field: DIR });
    for &f in DirJson::FIELDS {
        cols.push(prefixed(if conn.contains(&f.name) { "dir_" } else { "" }, f));
    }
    cols
}

/// A table's destination, shared by the passes that write it.
pub type Dest = Arc<Mutex<dyn Out>>;

fn write(dest: &Dest, t: &mut TableBuilder) -> io::Result<()> {
    let batch = t.finish()?;
    dest.lock().map_err(|_| io::Error::other("a writer panicked"))?.write_coded(&batch)
}

/// A streamed table of per-packet records (`segments`, `rtt`): each row's values stored in
/// their columns at the row's index ([`Record::push`]: typed, no column looked up), written as
/// a batch of the table's coded schema every [`BATCH_ROWS`] rows.
struct Stream<C: RecordColumns> {
    /// The columns of the connection each row is about.
    conn: <ConnRef<'static> as Record>::Columns,
    /// The `file` column after them, in a table that has one (`rtt`).
    file: Option<Texts>,
    /// The record's columns.
    rows: C,
    n: usize,
    /// The schema of the batches ([`coded`]).
    schema: SchemaRef,
    /// Each column's buffers lent to the batches written.
    lent: Vec<Lent>,
    dest: Dest,
}

impl<C: RecordColumns> Stream<C> {
    /// The stream of table `t`, which has a [`FILE`] column after its connection's if `file`
    /// (as [`TableName::columns`] makes it).
    fn new(t: TableName, file: bool, dest: Dest) -> Stream<C> {
        let cols = t.columns();
        let file = file.then(Texts::default);
        let lent = cols.iter().map(|_| Lent::default()).collect();
        Stream { conn: Default::default(), file, rows: C::default(), n: 0, schema: coded(&cols), lent, dest }
    }

    /// Appends a row: its connection (connection `conn` of trace `input`), its `file` if the
    /// table has a column for it, the record.
    #[inline]
    fn row<R: Record<Columns = C>>(
        &mut self,
        input: &Arc<str>,
        conn: usize,
        file: &Arc<str>,
        row: &R,
    ) -> io::Result<()> {
        let at = Row::new(self.n).expect("a batch is written when full");
        ConnRef { input: Shared(input), conn }.push(&mut self.conn, at);
        if let Some(col) = &mut self.file {
            col.push_shared(at, file);
        }
        row.push(&mut self.rows, at);
        self.n += 1;
        if self.n >= BATCH_ROWS {
            self.write()?;
        }
        Ok(())
    }

    /// Writes the rows so far as a batch; the columns start again.
    fn write(&mut self) -> io::Result<()> {
        let mut cols = self.conn.columns();
        cols.extend(self.file.as_mut().map(Col::as_mut));
        cols.extend(self.rows.columns());
        let arrays: Vec<ArrayRef> = cols
            .into_iter()
            .zip(self.schema.fields())
            .zip(&mut self.lent)
            .map(|((c, f), lent)| array(c, self.n, f.data_type(), lent))
            .collect::<Result<_, _>>()?;
        self.n = 0;
        let batch = RecordBatch::try_new(self.schema.clone(), arrays).map_err(io::Error::other)?;
        self.dest.lock().map_err(|_| io::Error::other("a writer panicked"))?.write_coded(&batch)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.n > 0 { self.write() } else { Ok(()) }
    }
}

/// The sink of the per-packet tables (`segments`, `rtt`) of one trace.
struct RowSink {
    input: Arc<str>,
    /// Each file's name, by index.
    names: Vec<Arc<str>>,
    /// The name of a file not announced (none: every packet's file is).
    unnamed: Arc<str>,
    verdict: Verdict,
    segments: Option<Stream<SegmentColumns<'static>>>,
    rtt: Option<Stream<RttColumns>>,
    failed: Option<io::Error>,
    /// The connections asked for ([`Only`]), and how many the traces before this one had.
    only: Option<Arc<Only>>,
    first: usize,
    /// Connections seen so far in this trace.
    seen: usize,
}

impl RowSink {
    fn result(&mut self, r: io::Result<()>) {
        if let Err(e) = r {
            self.failed.get_or_insert(e);
        }
    }

    /// Whether the rows of this trace's connection `conn` (1-based) are wanted.
    #[inline]
    fn wanted(&self, conn: usize) -> bool {
        wanted(&self.only, self.first, conn)
    }
}

/// Whether the rows of a trace's connection `conn` (1-based) are wanted, the traces before it
/// having had `first` connections.
#[inline]
fn wanted(only: &Option<Arc<Only>>, first: usize, conn: usize) -> bool {
    only.as_deref().is_none_or(|o| o.has(first + conn))
}

/// The run-wide connection ids whose rows are exported (`export -c`, Python's `conns`), as
/// `stats -c` takes them: the `id` of `connections`, counting on across traces.
#[derive(Debug)]
struct Only(Vec<bool>);

impl Only {
    fn new(ids: &[usize]) -> Option<Arc<Only>> {
        let top = ids.iter().copied().max()?;
        let mut v = vec![false; top + 1];
        ids.iter().for_each(|&i| v[i] = true);
        Some(Arc::new(Only(v)))
    }
    fn has(&self, id: usize) -> bool {
        self.0.get(id).copied().unwrap_or(false)
    }
}

impl Sink for RowSink {
    fn file(&mut self, file: usize, path: &Path) {
        self.names.resize(self.names.len().max(file + 1), self.unnamed.clone());
        self.names[file] = path.display().to_string().into();
    }
    fn connection(&mut self, conn: ConnIdx, _: &ConnInfo) {
        self.seen = self.seen.max(conn + 1);
    }
    fn event(&mut self, at: &At, ev: &Event) {
        self.verdict.event(ev);
        if !self.wanted(at.conn + 1) {
            return;
        }
        if let (Some(rtt), Some(row)) = (&mut self.rtt, RttRow::of(at, ev)) {
            let file = self.names.get(at.file as usize).unwrap_or(&self.unnamed);
            let r = rtt.row(&self.input, at.conn + 1, file, &row);
            self.result(r);
        }
    }
    fn segment(&mut self, s: &SegmentInfo) {
        if !self.wanted(s.at.conn + 1) {
            self.verdict = Verdict::default();
            return;
        }
        let Some(seg) = &mut self.segments else { return };
        // The packet's own file, as `print` names it (not its connection's first file).
        let file = self.names.get(s.at.file as usize).unwrap_or(&self.unnamed);
        let row = self.verdict.row(s, file);
        let r = seg.row(&self.input, s.at.conn + 1, &self.unnamed, &row);
        self.result(r);
    }
    fn after_packet(&mut self) -> io::Result<bool> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }
    fn own_thread(&self) -> bool {
        self.segments.is_some()
    }
    const CLASSIFY: bool = true;
}

/// The file of each event the screen sink keeps (its [`OosEvent`]s have the frame, not the
/// file): a segment after its evidence is one event, in the same order, the first
/// [`MAX_EVIDENCE`] of each connection kept as there.
#[derive(Default)]
struct EventFiles {
    names: Vec<String>,
    /// Per connection, the file index of each kept event.
    files: Vec<Vec<u32>>,
    /// The packet being given had evidence: it is an event.
    pending: bool,
}

impl EventFiles {
    /// The file of connection `conn`'s `i`-th event.
    fn name(&self, conn: usize, i: usize) -> &str {
        let f = self.files.get(conn).and_then(|f| f.get(i));
        f.and_then(|&f| self.names.get(f as usize)).map_or("", |n| n.as_str())
    }
}

impl Sink for EventFiles {
    fn file(&mut self, file: usize, path: &Path) {
        self.names.resize(self.names.len().max(file + 1), String::new());
        self.names[file] = path.display().to_string();
    }
    fn evidence(&mut self, _: &At, _: &Evidence) {
        self.pending = true;
    }
    fn segment(&mut self, s: &SegmentInfo) {
        if !std::mem::take(&mut self.pending) {
            return;
        }
        let conn = s.at.conn;
        if self.files.len() <= conn {
            self.files.resize_with(conn + 1, Vec::new);
        }
        if self.files[conn].len() < MAX_EVIDENCE {
            self.files[conn].push(s.at.file);
        }
    }
    const JOINS: bool = true;
    fn join(parts: Vec<Self>, order: &[u8]) -> Self {
        let names = parts.first().map(|p| p.names.clone()).unwrap_or_default();
        // A shard's list ends at its last connection with an event: the rest have none.
        let files = parts.into_iter().enumerate().map(|(k, mut p)| {
            p.files.resize_with(order.iter().filter(|&&s| s as usize == k).count(), Vec::new);
            p.files
        });
        EventFiles { names, files: tcpscope_core::sink::in_order(files, order), pending: false }
    }
}

/// A sink or nothing: the parts of the export pass that the tables asked for.
struct Maybe<S>(Option<S>);

impl<S: Sink> Sink for Maybe<S> {
    fn file(&mut self, file: usize, path: &Path) {
        if let Some(s) = &mut self.0 {
            s.file(file, path)
        }
    }
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        if let Some(s) = &mut self.0 {
            s.connection(conn, info)
        }
    }
    #[inline]
    fn segment(&mut self, seg: &SegmentInfo) {
        if let Some(s) = &mut self.0 {
            s.segment(seg)
        }
    }
    #[inline]
    fn event(&mut self, at: &At, ev: &Event) {
        if let Some(s) = &mut self.0 {
            s.event(at, ev)
        }
    }
    fn evidence(&mut self, at: &At, why: &tcpscope_core::event::Evidence) {
        if let Some(s) = &mut self.0 {
            s.evidence(at, why)
        }
    }
    #[inline]
    fn after_packet(&mut self) -> io::Result<bool> {
        match &mut self.0 {
            Some(s) => s.after_packet(),
            None => Ok(false),
        }
    }
    fn own_thread(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.own_thread())
    }
    const CLASSIFY: bool = S::CLASSIFY;
    const JOINS: bool = S::JOINS;
    fn join(parts: Vec<Self>, order: &[u8]) -> Self {
        // The shards are made alike: all something or all nothing.
        let parts: Option<Vec<S>> = parts.into_iter().map(|p| p.0).collect();
        Maybe(parts.map(|p| S::join(p, order)))
    }
}

/// What the pass read: the files' summaries and each trace's record (its errors, warnings,
/// empty window), as [`Query::run`] gives them.
#[derive(Debug, Default)]
pub struct Report {
    /// Every file read, in trace order.
    pub files: Vec<FileSummary>,
    /// Each trace's record.
    pub traces: Vec<Trace<()>>,
    /// Connections in the run (whether exported or not).
    pub connections: usize,
}

/// Runs `query` once per trace, writing the tables `dests` names (each table at most once)
/// into their destinations as rows come; the caller finishes the destinations. `rules` are the
/// screening rules of the `events` table (the query's settings should classify by them:
/// [`Rules::settings`], as `screen` does). Only the rows of connections `ids` are written
/// (run-wide ids, as `stats -c` takes them: the `id` of `connections`) unless it is empty.
/// An id the run does not have selects nothing (the caller checks them against
/// [`Report::connections`]). Errors reading a file are in its summary (what was read before
/// stands); the error returned is a failed write.
pub fn export(
    query: &Query,
    rules: &Rules,
    dests: &[(TableName, Dest)],
    ids: &[usize],
    progress: &(dyn Fn(u64, u64) + Sync),
) -> io::Result<Report> {
    let only = Only::new(ids);
    let dest = |t: TableName| dests.iter().find(|(n, _)| *n == t).map(|(_, d)| d.clone());
    let mut conns = dest(TableName::Connections).map(|d| (TableBuilder::new(TableName::Connections.columns()), d));
    let mut events = dest(TableName::Events).map(|d| (TableBuilder::new(TableName::Events.columns()), d));
    let mut report = Report::default();
    let per_packet = PER_PACKET.iter().any(|t| dest(*t).is_some());
    for (input, q) in query.per_trace() {
        let first = report.connections;
        let wanted = |c: usize| wanted(&only, first, c);
        // Without a per-packet table the pass is the one `stats` or `screen` runs: a file is
        // split over the analysing threads by 4-tuple, and the out-of-sequence segments are
        // classified only for `events` (`connections` does not read their classes).
        let (stats, screen, n, files, trace) = if per_packet {
            let rows = RowSink {
                input: input.as_str().into(),
                names: Vec::new(),
                unnamed: "".into(),
                verdict: Verdict::default(),
                segments: dest(TableName::Segments).map(|d| Stream::new(TableName::Segments, false, d)),
                rtt: dest(TableName::Rtt).map(|d| Stream::new(TableName::Rtt, true, d)),
                failed: None,
                only: only.clone(),
                first,
                seen: 0,
            };
            let stats = Maybe(conns.is_some().then(StatsSink::default));
            let screen = Maybe(events.is_some().then(|| (ScreenSink::new(rules.clone()), EventFiles::default())));
            let ((mut rows, (stats, screen)), files, trace) = q.run_one((rows, (stats, screen)), progress)?;
            if let Some(s) = &mut rows.segments {
                s.flush()?;
            }
            if let Some(s) = &mut rows.rtt {
                s.flush()?;
            }
            (stats.0, screen.0.map(|(s, names)| (s.into_events(), names)), rows.seen, files, trace)
        } else if events.is_none() {
            let run = q.run(StatsSink::default, progress)?;
            let (stats, trace) = run.traces.into_iter().next().expect("one trace").split();
            let n = stats.conns.len();
            (Some(stats), None, n, run.files, trace)
        } else {
            let make = || {
                let stats = Maybe(conns.is_some().then(StatsSink::default));
                (stats, (ScreenSink::new(rules.clone()), EventFiles::default()))
            };
            let run = q.run(make, progress)?;
            let ((stats, (screen, names)), trace) = run.traces.into_iter().next().expect("one trace").split();
            let events = screen.into_events();
            let n = events.len();
            (stats.0, Some((events, names)), n, run.files, trace)
        };
        if let (Some((t, d)), Some(stats)) = (&mut conns, &stats) {
            connection_rows(t, d, stats, &files, first, &input, wanted)?;
        }
        if let (Some((t, d)), Some((per_conn, names))) = (&mut events, screen) {
            let input: Arc<str> = input.as_str().into();
            for (idx, evs) in per_conn.iter().enumerate().filter(|(idx, _)| wanted(idx + 1)) {
                for (i, e) in evs.iter().enumerate() {
                    t.put(&ConnRef { input: Shared(&input), conn: idx + 1 });
                    t.text(names.name(idx, i));
                    t.append(e, &[])?;
                    t.end_row()?;
                }
                if t.rows() >= BATCH_ROWS {
                    write(d, t)?;
                }
            }
        }
        report.connections += n;
        report.files.extend(files);
        report.traces.push(trace);
    }
    for (t, d) in [&mut conns, &mut events].into_iter().flatten() {
        if t.rows() > 0 {
            write(d, t)?;
        }
    }
    Ok(report)
}

/// The per-packet tables.
const PER_PACKET: [TableName; 2] = [TableName::Segments, TableName::Rtt];

/// Appends the `connections` rows of a trace's statistics (two a connection, one a direction)
/// whose ids (1-based in the trace) are `wanted`, writing a batch each [`BATCH_ROWS`]. `first`:
/// the connections of the traces before.
fn connection_rows(
    t: &mut TableBuilder,
    d: &Dest,
    stats: &StatsSink,
    files: &[FileSummary],
    first: usize,
    input: &str,
    wanted: impl Fn(usize) -> bool,
) -> io::Result<()> {
    for c in stats.conns.iter().filter(|c| wanted(c.idx() + 1)) {
        let file = files.get(c.info().file).map(|f| f.path.display().to_string()).unwrap_or_default();
        let j = ConnJson::new(c, first + c.idx() + 1, file, input.to_string());
        for (dir, d) in [("a2b", &j.a2b), ("b2a", &j.b2a)] {
            t.append(&j, &["a2b", "b2a"])?;
            t.append(dir, &[])?;
            // The direction's ~90 values typed, as the text table takes them, not through
            // serde (a call and a field-name test each).
            d.cells().into_iter().for_each(|c| c.put(t));
            t.end_row()?;
        }
        if t.rows() >= BATCH_ROWS {
            write(d, t)?;
        }
    }
    Ok(())
}

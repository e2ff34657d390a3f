//! What the viewer keeps in memory: the statistics of every connection of the traces named on
//! the command line (one pass at start), and, for each connection the user opened, its series
//! from one more pass over its file (kept, so every zoom is answered from memory).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tcpscope_core::analysis::{At, ConnIdx, Dir, Event, SegmentInfo, Settings, Sink};
use tcpscope_core::capture::Window;
use tcpscope_core::flow::{ConnInfo, FlowKey};
use tcpscope_core::pass::{self, Analysis, Query};
use tcpscope_core::plot::tsg::TsgIndex;
use tcpscope_core::screen::{ConnScreen, Rules, ScreenSink};
use tcpscope_core::series::flight::{FlightSeries, FlightSink};
use tcpscope_core::series::ladder::{Ladder, LadderSink};
use tcpscope_core::series::mipmap::{Mipmap, Summary};
use tcpscope_core::series::rtt::{RttSeries, RttSink};
use tcpscope_core::series::tput::{TputSeries, TputSink};
use tcpscope_core::series::tsg::{Tsg, TsgSink};
use tcpscope_core::stats::StatsSink;

/// An event of the connection, with the frame that triggered it.
#[derive(Clone, Copy, Debug)]
pub struct EventAt {
    /// 1-based frame number.
    pub frame: u64,
    /// Capture time, ns since the epoch (made relative when shown).
    pub ts_ns: u64,
    /// Direction the event belongs to.
    pub dir: Dir,
    /// The event.
    pub ev: Event,
}

/// Everything the viewer draws for one connection.
pub struct Detail {
    /// The connection's id (1-based, across the files).
    pub id: usize,
    /// Time-sequence series, a→b and b→a.
    pub tsg: [Tsg; 2],
    /// Their summaries at every time scale, so a zoomed-out figure costs O(columns · log n).
    pub tsg_index: [TsgIndex; 2],
    /// RTT samples of each direction's data.
    pub rtt: [RttSeries; 2],
    /// Every packet, in trace order, as the ladder labels it (`series::ladder`: the packet
    /// listing and the ladder view read it), and both endpoints' states.
    pub ladder: Ladder,
    /// Bytes in flight in its direction after each packet of `ladder.segs`, as the analysis
    /// computed them.
    pub in_flight: Vec<Option<u64>>,
    /// Every event, in trace order.
    pub events: Vec<EventAt>,
    /// The read error that ended the pass early, if any.
    pub error: Option<String>,
    /// The panels' series per direction, as `(t_ns, value)` in time order, built once so that
    /// a zoom only searches them.
    pub lines: [Lines; 2],
}

/// Min and max of a run of values.
#[derive(Clone, Copy, Debug, PartialEq)]
struct MinMax(f64, f64);

impl Summary for MinMax {
    fn merge(&self, l: &Self) -> Self {
        MinMax(self.0.min(l.0), self.1.max(l.1))
    }
}

/// A panel series: points `(t_ns, value)` sorted by time, and the min and max of its blocks at
/// every scale, so that the min/max of any index range costs O(log n) block lookups (a
/// zoomed-out column of 5M points: ~100 steps, not 5M).
#[derive(Default)]
pub struct Line {
    /// The points, by time.
    pub pts: Vec<(u64, f64)>,
    blocks: Mipmap<MinMax>,
}

impl Line {
    /// A line from points in any order.
    pub fn new(mut pts: Vec<(u64, f64)>) -> Line {
        // Trace order is normally time order; a capture with stepping clocks is sorted here.
        if !pts.is_sorted_by_key(|p| p.0) {
            pts.sort_by_key(|p| p.0);
        }
        let blocks = Mipmap::new(pts.len(), |k| MinMax(pts[k].1, pts[k].1));
        Line { pts, blocks }
    }

    /// Min and max of the values of `pts[i..j]` (`i < j`).
    pub fn min_max(&self, i: usize, j: usize) -> (f64, f64) {
        let m = self.blocks.fold(i, j, |k| MinMax(self.pts[k].1, self.pts[k].1)).unwrap_or(MinMax(f64::MAX, f64::MIN));
        (m.0, m.1)
    }
}

/// The series of the panels under one direction's time-sequence plot, from the core series
/// (`series::rtt`, `series::tput`, `series::flight`), indexed for zooming.
#[derive(Default)]
pub struct Lines {
    /// RTT samples (Karn and timestamp), ms.
    pub rtt_ms: Line,
    /// Karn samples only, ms.
    pub rtt_karn_ms: Line,
    /// Bytes in flight after each data packet.
    pub flight_bytes: Line,
    /// The window the other side advertised, bytes.
    pub window_bytes: Line,
    /// The congestion-window estimate, one point at the end of each round it can be told.
    pub cwnd_bytes: Line,
    /// Whether the window scale was known (else windows are the raw field).
    pub window_scaled: bool,
    /// Payload bytes sent, cumulated: `(t_ns, all bytes, new bytes)` up to and including each
    /// data packet, by time, so the bytes of any time range are one subtraction.
    pub sent: Vec<(u64, (u64, u64))>,
}

impl Lines {
    fn new(rtt: &RttSeries, tput: &TputSeries, flight: &FlightSeries) -> Lines {
        use tcpscope_core::analysis::RttKind;
        let ms = |p: &tcpscope_core::series::rtt::RttPoint| (p.t_ns, p.rtt_ns as f64 / 1e6);
        let bytes = |v: &[tcpscope_core::series::flight::BytesPoint]| {
            Line::new(v.iter().map(|p| (p.t_ns, p.bytes as f64)).collect())
        };
        let mut pts: Vec<_> = tput.points.iter().map(|p| (p.t_ns, (p.bytes as u64, p.new_bytes as u64))).collect();
        if !pts.is_sorted_by_key(|p| p.0) {
            pts.sort_by_key(|p| p.0);
        }
        let (mut all, mut new) = (0, 0);
        for p in &mut pts {
            all += p.1.0;
            new += p.1.1;
            p.1 = (all, new);
        }
        Lines {
            rtt_ms: Line::new(rtt.points.iter().map(ms).collect()),
            rtt_karn_ms: Line::new(rtt.points.iter().filter(|p| p.kind == RttKind::Karn).map(ms).collect()),
            flight_bytes: bytes(&flight.flight),
            window_bytes: bytes(&flight.rwnd),
            cwnd_bytes: Line::new(flight.cwnd.iter().map(|r| (r.end_ns, r.bytes as f64)).collect()),
            window_scaled: flight.rwnd_scaled,
            sent: pts,
        }
    }
}

impl Detail {
    /// Time 0 of the plots, ns since the epoch.
    pub fn t0_ns(&self) -> u64 {
        self.tsg[0].t0_ns
    }
    /// Time of the connection's last packet, relative.
    pub fn last_ns(&self) -> u64 {
        self.tsg[0].last_ns.max(self.tsg[1].last_ns)
    }
}

/// Forwards the analysis to the series sinks and keeps the packets and events of one
/// connection.
struct DetailSink {
    conn: ConnIdx,
    tsg: [TsgSink; 2],
    rtt: [RttSink; 2],
    tput: [TputSink; 2],
    flight: [FlightSink; 2],
    ladder: LadderSink,
    in_flight: Vec<Option<u64>>,
    events: Vec<EventAt>,
}

impl Sink for DetailSink {
    /// The events list says each retransmission's class.
    const CLASSIFY: bool = true;
    fn connection(&mut self, conn: ConnIdx, info: &ConnInfo) {
        self.ladder.connection(conn, info);
        self.tsg.iter_mut().for_each(|s| s.connection(conn, info));
        self.rtt.iter_mut().for_each(|s| s.connection(conn, info));
        self.tput.iter_mut().for_each(|s| s.connection(conn, info));
        self.flight.iter_mut().for_each(|s| s.connection(conn, info));
    }
    fn segment(&mut self, s: &SegmentInfo) {
        self.tsg.iter_mut().for_each(|k| k.segment(s));
        self.rtt.iter_mut().for_each(|k| k.segment(s));
        self.tput.iter_mut().for_each(|k| k.segment(s));
        self.flight.iter_mut().for_each(|k| k.segment(s));
        if s.at.conn != self.conn {
            return;
        }
        self.ladder.segment(s);
        self.in_flight.push(s.in_flight);
    }
    fn event(&mut self, at: &At, ev: &Event) {
        self.tsg.iter_mut().for_each(|k| k.event(at, ev));
        self.rtt.iter_mut().for_each(|k| k.event(at, ev));
        self.tput.iter_mut().for_each(|k| k.event(at, ev));
        self.flight.iter_mut().for_each(|k| k.event(at, ev));
        if at.conn == self.conn {
            self.events.push(EventAt { frame: at.frame, ts_ns: at.ts_ns, dir: at.dir, ev: *ev });
        }
    }
}

/// A connection's detail, computed once by whichever request asks first.
type DetailCell = Arc<OnceLock<Result<Arc<Detail>, String>>>;

/// The traces named on the command line, their connections, and the details computed so far.
pub struct Traces {
    /// The files, in command-line order (the API names them by index, never by path).
    pub paths: Vec<PathBuf>,
    /// Analysis settings (window scale assumption, idle split).
    pub settings: Settings,
    /// Statistics of every connection, ids in order of the files then of first appearance.
    pub an: Analysis,
    /// Screening of every connection (`tcpscope screen` with the default rules), by id − 1.
    pub screens: Vec<ConnScreen>,
    /// Global index of each file's first connection.
    base: Vec<usize>,
    /// What was read of each file: the details pass reads the same.
    parts: Vec<Part>,
    details: Mutex<HashMap<usize, DetailCell>>,
    /// A TRACE's time window could not be placed on it (it ends before it starts): the
    /// command line's fault, not the input's (`tcpscope view` exits 2 for it, docs/cli.md).
    pub bad_window: bool,
    /// The traces' correlation, when they are captures of the same connections at several
    /// points (`view --correlate`; [`Traces::correlate`]).
    pub corr: Option<crate::correlated::Correlated>,
}

/// What the viewer reads of a TRACE: a file whole, or a trace set — a ring directory, or any
/// trace when a time window was given — from `from` to `to` (ns, `[from, to)`).
#[derive(Clone, Copy, Debug)]
enum Part {
    File,
    Set { from: u64, to: u64 },
}

/// One pass with `sink` over what the viewer reads of `path`: all of it, or `[from, to)` of it
/// as a trace set (`span`). Returns the sink, one summary for the trace (a set's files summed,
/// their first error named by its file; an empty window is an error saying where the trace
/// is), the window read when it was read as a set, and whether the error is the window's (it
/// could not be placed: a usage error).
fn pass_over<S: Sink + Send>(query: Query, path: &Path, sink: S) -> (S, pass::FileSummary, Option<(u64, u64)>, bool) {
    let (sink, files, trace) = match query.run_one(sink, &|_, _| {}) {
        Ok(done) => done,
        // The viewer's sinks do not fail.
        Err(e) => unreachable!("a viewer sink failed: {e}"),
    };
    let mut sum = pass::FileSummary::sum(path, &files);
    let bad_window = trace.error.is_some() && trace.window_error;
    if let Some(e) = trace.error.or(trace.empty) {
        sum = pass::FileSummary::default();
        (sum.path, sum.error) = (path.to_path_buf(), Some(e));
    }
    (sink, sum, trace.window, bad_window)
}

impl Traces {
    /// Analyses each file whole (one pass each) and keeps the connection statistics and screening.
    pub fn load(paths: Vec<PathBuf>, settings: Settings) -> Traces {
        Traces::load_window(paths, settings, &Window::default(), &jiff::tz::TimeZone::UTC)
    }

    /// As [`Traces::load`], reading only the time window of each trace (`view --from/--for/--to`,
    /// placed on each trace as `conns` places it); connection ids number the connections seen in
    /// the window; its clock times are in `tz`, as its messages' are. A trace whose window cannot
    /// be read has no connections and its error in `an.files`.
    pub fn load_window(paths: Vec<PathBuf>, settings: Settings, window: &Window, tz: &jiff::tz::TimeZone) -> Traces {
        let mut an = Analysis::default();
        let mut screens = Vec::new();
        let mut base = Vec::with_capacity(paths.len());
        let mut parts = Vec::with_capacity(paths.len());
        // A trace alone is read by one thread and analysed by another.
        let threads = if paths.len() == 1 { 2 } else { 1 };
        let rules = Rules::default();
        let mut bad_window = false;
        for p in &paths {
            let sinks = (StatsSink::default(), ScreenSink::new(rules.clone()));
            let query =
                Query::new(vec![p.clone()]).settings(settings).window(*window).threads(threads).time_zone(tz.clone());
            let ((mut stats, screen), file, span, bad) = pass_over(query, p, sinks);
            bad_window |= bad;
            let part = match span {
                Some((from, to)) => Part::Set { from, to },
                None => Part::File,
            };
            let i = parts.len();
            let mut screen = screen.finish();
            // One entry per TRACE, a ring included: the details pass reads the same part again.
            for c in &mut stats.conns {
                c.info_mut().file = i;
                c.set_trace(i);
            }
            for s in &mut screen {
                s.info.file = i;
            }
            base.push(an.conns.len());
            parts.push(part);
            an.files.push(file);
            an.inputs.push(p.display().to_string());
            an.conns.extend(stats.conns);
            screens.extend(screen);
        }
        Traces {
            paths,
            settings,
            an,
            screens,
            base,
            parts,
            details: Mutex::new(HashMap::new()),
            bad_window,
            corr: None,
        }
    }

    /// Correlates the traces as captures of the same connections at several points, the first
    /// capture's clock the reference (`view --correlate`): the lifeline and one-way-delay
    /// plots of `api/lifeline` and `api/owd`.
    pub fn correlate(&mut self, settings: &tcpscope_core::correlate::Settings) -> Result<(), String> {
        self.corr = Some(crate::correlated::Correlated::new(self, settings)?);
        Ok(())
    }

    /// The detail of connection `id` (1-based), from memory or from one pass over its file.
    /// Concurrent requests for the same connection wait for one pass.
    pub fn detail(&self, id: usize) -> Result<Arc<Detail>, String> {
        let (file, local) = self.local(id)?;
        self.cell(id)?
            .get_or_init(|| {
                let packets = self.packets(id);
                let tcp = self.an.files.get(file).map_or(0, |f| f.tcp_packets);
                let (sink, err) = match self.parts[file] {
                    // A connection among many: only its packets analysed.
                    Part::File if 2 * (packets[0] + packets[1]) as u64 <= tcp => self.read_alone(file, id, packets)?,
                    _ => self.read(file, DetailSink::new(local, packets))?,
                };
                sink.finish(id, &self.paths[file], err).map(Arc::new)
            })
            .clone()
    }

    /// Connection `id`'s detail from a pass over its file (a plain one) that analyses only the
    /// packets of its 4-tuple (`pass::analyze_only`: the same answer as the full pass): a short
    /// connection of a trace of 200,000 took a full analysis of every connection, ~2 s a click,
    /// where reading and decoding the file takes a fraction. Its index among the connections
    /// analysed is the number of earlier connections of the file on the same 4-tuple.
    fn read_alone(&self, file: usize, id: usize, packets: [usize; 2]) -> Result<(DetailSink, Option<String>), String> {
        let key = |c: &ConnInfo| FlowKey::between(c.a, c.b);
        let own = key(self.an.conns[id - 1].info());
        let earlier = self.an.conns[self.base[file]..id - 1].iter().filter(|c| key(c.info()) == own).count();
        let path = &self.paths[file];
        let query = Query::new(vec![path.clone()]).settings(self.settings).only(own);
        let (sink, sum, _, _) = pass_over(query, path, DetailSink::new(earlier, packets));
        if sum.unopened() {
            return Err(format!("{}: {}", path.display(), sum.error.unwrap_or_default()));
        }
        Ok((sink, sum.error))
    }

    /// Computes the details of `ids` not in memory yet with one pass over each file for all of
    /// its connections (the report plots several connections of one trace), so that
    /// [`Traces::detail`] finds them.
    pub fn prefetch(&self, ids: &[usize]) -> Result<(), String> {
        let mut todo: Vec<(usize, usize, ConnIdx)> = Vec::new();
        for &id in ids {
            let (file, local) = self.local(id)?;
            if self.cell(id)?.get().is_none() && !todo.iter().any(|t| t.0 == id) {
                todo.push((id, file, local));
            }
        }
        for file in 0..self.paths.len() {
            let these: Vec<&(usize, usize, ConnIdx)> = todo.iter().filter(|t| t.1 == file).collect();
            if these.is_empty() {
                continue;
            }
            let (sinks, err) =
                self.read(file, these.iter().map(|t| DetailSink::new(t.2, self.packets(t.0))).collect::<Vec<_>>())?;
            for (sink, t) in sinks.into_iter().zip(these) {
                // Computed meanwhile by a request: that one is kept.
                let _ = self.cell(t.0)?.set(sink.finish(t.0, &self.paths[file], err.clone()).map(Arc::new));
            }
        }
        Ok(())
    }

    /// Connection `id`'s (1-based) file, and its index within the file.
    fn local(&self, id: usize) -> Result<(usize, ConnIdx), String> {
        let c = self.an.conns.get(id.wrapping_sub(1)).ok_or_else(|| format!("no connection {id}"))?;
        Ok((c.info().file, id - 1 - self.base[c.info().file]))
    }

    /// Connection `id`'s packets a→b and b→a, as the statistics pass counted them: what its
    /// detail's series reserve room for.
    fn packets(&self, id: usize) -> [usize; 2] {
        self.an.conns.get(id.wrapping_sub(1)).map_or([0, 0], |c| [0, 1].map(|i| c.packets(i) as usize))
    }

    fn cell(&self, id: usize) -> Result<DetailCell, String> {
        let mut m = self.details.lock().map_err(|_| "detail cache poisoned".to_string())?;
        Ok(m.entry(id).or_default().clone())
    }

    /// One pass over what the viewer reads of `file` into `sink`; the error that ended it early.
    /// A ring is opened again: it changes while the viewer runs.
    fn read<S: Sink + Send>(&self, file: usize, sink: S) -> Result<(S, Option<String>), String> {
        let path = &self.paths[file];
        let failed = |e| format!("{}: {e}", path.display());
        Ok(match self.parts[file] {
            Part::File => {
                let (sink, sum) = tcpscope_core::series::run_file(path, self.settings, sink).map_err(failed)?;
                (sink, sum.error)
            }
            Part::Set { from, to } => {
                let query = Query::new(vec![path.clone()]).settings(self.settings).span(from, to);
                let (sink, sum, _, _) = pass_over(query, path, sink);
                (sink, sum.error)
            }
        })
    }
}

impl DetailSink {
    /// For connection `conn` of its file, with room for its `packets` a→b and b→a (`series/mod.rs`
    /// says why).
    fn new(conn: ConnIdx, packets: [usize; 2]) -> DetailSink {
        let [ab, ba] = packets;
        DetailSink {
            conn,
            tsg: [TsgSink::new(conn, Dir::AtoB).reserve(ab, ba), TsgSink::new(conn, Dir::BtoA).reserve(ba, ab)],
            rtt: [RttSink::new(conn, Dir::AtoB), RttSink::new(conn, Dir::BtoA)],
            tput: [TputSink::new(conn, Dir::AtoB).reserve(ab, ba), TputSink::new(conn, Dir::BtoA).reserve(ba, ab)],
            flight: [
                FlightSink::new(conn, Dir::AtoB).reserve(ab, ba),
                FlightSink::new(conn, Dir::BtoA).reserve(ba, ab),
            ],
            ladder: LadderSink::new(conn).reserve(ab + ba),
            in_flight: Vec::with_capacity(ab + ba),
            events: Vec::new(),
        }
    }

    /// The detail of connection `id`, read from `path` (`err`: what ended the pass early).
    fn finish(self, id: usize, path: &Path, err: Option<String>) -> Result<Detail, String> {
        let [ta, tb] = self.tsg;
        let [ra, rb] = self.rtt;
        let [pa, pb] = self.tput;
        let [fa, fb] = self.flight;
        let missing = || format!("connection {id} not found on a second pass over {}", path.display());
        let tsg = [ta.finish().ok_or_else(missing)?, tb.finish().ok_or_else(missing)?];
        let rtt = [ra.finish().ok_or_else(missing)?, rb.finish().ok_or_else(missing)?];
        let tput = [pa.finish().ok_or_else(missing)?, pb.finish().ok_or_else(missing)?];
        let flight = [fa.finish().ok_or_else(missing)?, fb.finish().ok_or_else(missing)?];
        let lines = [Dir::AtoB, Dir::BtoA].map(|d| Lines::new(&rtt[d.idx()], &tput[d.idx()], &flight[d.idx()]));
        let tsg_index = [TsgIndex::new(&tsg[0]), TsgIndex::new(&tsg[1])];
        let ladder = self.ladder.finish().ok_or_else(missing)?;
        Ok(Detail {
            id,
            tsg,
            tsg_index,
            rtt,
            ladder,
            in_flight: self.in_flight,
            events: self.events,
            error: err,
            lines,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api;

    /// Every answer the viewer gives from a detail, comparably.
    fn answers(d: &Detail) -> Vec<serde_json::Value> {
        let v = api::Viewport { w: 400, ..Default::default() };
        let mut out = vec![api::events_json(d), serde_json::json!(d.ladder.segs.len())];
        for dir in [Dir::AtoB, Dir::BtoA] {
            out.push(serde_json::to_value(api::figure_out(d, dir, &api::tsg_figure(d, dir, &v))).unwrap());
            out.push(api::panels_json(d, dir, &v));
        }
        out
    }

    /// pcap records of `files` (Ethernet, µs), their times shifted to start together, merged in
    /// time order: connections interleaved, some on the same 4-tuple.
    fn interleaved(files: &[&str]) -> Vec<u8> {
        let mut recs: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut head = Vec::new();
        for f in files {
            let b = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(f)).unwrap();
            head = b[..24].to_vec();
            let (mut i, mut t0) = (24, None);
            while i + 16 <= b.len() {
                let len = u32::from_le_bytes(b[i + 8..i + 12].try_into().unwrap()) as usize;
                let us = u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as u64 * 1_000_000
                    + u32::from_le_bytes(b[i + 4..i + 8].try_into().unwrap()) as u64;
                let t = us - *t0.get_or_insert(us);
                let mut r = b[i..i + 16 + len].to_vec();
                let at = 1_700_000_000_000_000 + t;
                r[..4].copy_from_slice(&((at / 1_000_000) as u32).to_le_bytes());
                r[4..8].copy_from_slice(&((at % 1_000_000) as u32).to_le_bytes());
                recs.push((at, r));
                i += 16 + len;
            }
        }
        recs.sort_by_key(|r| r.0);
        // And, in the middle, a packet of another 4-tuple two hours ahead of the rest (time then
        // goes back): the sweep it makes due drops the connections open then, in either pass.
        let mid = recs.len() / 2;
        let mut ahead = recs[mid].clone();
        let at = ahead.0 + 7_200_000_000;
        ahead.1[..4].copy_from_slice(&((at / 1_000_000) as u32).to_le_bytes());
        ahead.1[16 + 34..16 + 36].copy_from_slice(&9u16.to_be_bytes());
        recs.insert(mid, ahead);
        [head, recs.into_iter().flat_map(|r| r.1).collect()].concat()
    }

    /// The pass that analyses only a connection's 4-tuple gives every answer the full pass does,
    /// for every connection: of interleaved recorded traces (three of them on one 4-tuple), and
    /// of the public traces when `../shared` is there.
    #[test]
    fn a_connection_read_alone_is_the_one_read_with_all_the_others() {
        let made = std::env::temp_dir().join(format!("tcpscope-interleaved-{}.pcap", std::process::id()));
        std::fs::write(
            &made,
            interleaved(&[
                "loss-snd.pcap",
                "zerowin-snd.pcap",
                "clean-rcv.pcap",
                "bursty-snd.pcap",
                "reorder-rcv.pcap",
            ]),
        )
        .unwrap();
        let mut paths = vec![made.clone()];
        let public = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/public");
        match std::fs::read_dir(&public) {
            Ok(entries) => paths.extend(
                entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e != "md" && e != "tsv")),
            ),
            Err(_) => eprintln!("skipping the public traces: ../shared/traces/public is absent"),
        }
        let mut compared = 0;
        for path in &paths {
            let t = Traces::load(vec![path.clone()], Settings::default());
            if !matches!(t.parts[0], Part::File) {
                continue;
            }
            for id in 1..=t.an.conns.len().min(60) {
                let packets = t.packets(id);
                let (file, local) = t.local(id).unwrap();
                let full = t.read(file, DetailSink::new(local, packets)).unwrap();
                let alone = t.read_alone(file, id, packets).unwrap();
                let full = full.0.finish(id, path, full.1).unwrap();
                let alone = alone.0.finish(id, path, alone.1).unwrap();
                assert_eq!(answers(&alone), answers(&full), "{} connection {id}", path.display());
                compared += 1;
            }
        }
        std::fs::remove_file(&made).unwrap();
        eprintln!("{compared} connections compared");
        assert!(compared >= 5, "{compared} connections compared");
    }
}

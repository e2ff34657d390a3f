//! Passes on one thread: a file read in order (all of it, or only one 4-tuple's packets), and a
//! trace set (files merged in time order, all of them or a time window).

use std::io;
use std::path::Path;

use super::count::{
    FileSummary, PROGRESS_EVERY, count_and_decode, open, read_segments, record_error, verify_checksums,
};
use super::engine::{Analyzer, SweepClock};
use crate::analysis::Settings;
use crate::capture::{SetReader, TraceSet};
use crate::flow::FlowKey;
use crate::sink::Sink;

/// Which segments a pass analyses when not all: one 4-tuple's, or one shard's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keep {
    pub only: Option<FlowKey>,
    /// `(k, n)`: the 4-tuples of shard `k` of `n`.
    pub shard: Option<(usize, usize)>,
}

impl Keep {
    fn keeps(&self, seg: &crate::decode::Segment<'_>) -> bool {
        self.only.is_none_or(|key| FlowKey::of(seg).0 == key)
            && self.shard.is_none_or(|(k, n)| FlowKey::shard(seg, n) == k)
    }
}

/// One pass over a file on this thread. With `only`, just the segments of that 4-tuple (or
/// shard) are analysed, sweeping where a pass analysing all of them would (every segment's time goes
/// through the [`SweepClock`], as in a shard): a connection of that 4-tuple is analysed as in
/// the full pass, and its index counts only the connections of the 4-tuple. Returns the file's
/// summary, the sink and the error the sink stopped the pass with, if any.
pub(crate) fn one_thread<S: Sink>(
    path: &Path,
    file: usize,
    settings: Settings,
    only: Option<Keep>,
    progress: &(dyn Fn(u64, u64) + Sync),
    mut sink: S,
) -> (FileSummary, S, Option<io::Error>) {
    let (mut summary, reader) = open(path);
    let Some(mut reader) = reader else { return (summary, sink, None) };
    sink.file(file, path);
    let mut an = Analyzer::new(settings, sink);
    an.set_file(file);
    let mut clock = SweepClock::default();
    read_segments(&mut reader, &mut summary, progress, settings.checksums, |seg, frame, ts_ns| {
        let due = clock.tick(ts_ns);
        if only.is_some_and(|k| !k.keeps(seg)) {
            return true;
        }
        an.segment_after_sweep(due, seg, frame, ts_ns);
        an.go_on()
    });
    let failed = an.take_failure();
    (summary.finish(), an.sink, failed)
}

/// Analyses the packets of a trace set with `from <= ts_ns < to` as one trace in time order
/// (see [`crate::capture::set`]). Each file read has a summary with the counts of its packets
/// *in the window*, in the order the files were first read from; files outside the window are
/// not read and not listed (unreadable ones are, with their error). Frame numbers are those
/// within each packet's file, so they can be checked with tshark on that file. Connections
/// name their file by its place in the returned summaries plus `file_base` (the number of
/// files listed before this set's, when several sets are reported together). With `keep`,
/// only those segments are analysed, sweeping where a pass of all of them would.
#[allow(clippy::too_many_arguments)]
pub(crate) fn set<S: Sink>(
    set: &TraceSet,
    (from, to): (u64, u64),
    file_base: usize,
    settings: Settings,
    keep: Option<Keep>,
    progress: &(dyn Fn(u64, u64) + Sync),
    mut sink: S,
) -> (Vec<FileSummary>, S, Option<io::Error>) {
    // Summaries in the order files are first touched; `place[f]` is file f's position.
    let mut summaries: Vec<FileSummary> = Vec::new();
    let mut place: Vec<Option<usize>> = vec![None; set.files.len()];
    let mut summary = |summaries: &mut Vec<FileSummary>, sink: &mut S, f: usize| -> usize {
        *place[f].get_or_insert_with(|| {
            let path = &set.files[f].path;
            summaries.push(FileSummary { path: path.clone(), ..Default::default() });
            sink.file(file_base + summaries.len() - 1, path);
            summaries.len() - 1
        })
    };
    for (f, file) in set.files.iter().enumerate() {
        if let Some(e) = &file.error {
            let p = summary(&mut summaries, &mut sink, f);
            summaries[p].error = Some(e.clone());
        }
    }
    let mut reader = SetReader::new(set, from, to);
    let mut an = Analyzer::new(settings, sink);
    let mut clock = SweepClock::default();
    let mut n = 0u64;
    let mut bytes = 0u64;
    while let Some(item) = reader.next() {
        match item {
            Ok((f, rec)) => {
                let p = summary(&mut summaries, &mut an.sink, f);
                if let Some(mut seg) = count_and_decode(&mut summaries[p], &rec) {
                    if settings.checksums {
                        verify_checksums(&mut summaries[p], &rec, &mut seg);
                    }
                    match keep {
                        None => {
                            an.set_file(file_base + p);
                            an.segment(&seg, rec.frame, rec.ts_ns);
                        }
                        Some(k) => {
                            let due = clock.tick(rec.ts_ns);
                            if k.keeps(&seg) {
                                an.set_file(file_base + p);
                                an.segment_after_sweep(due, &seg, rec.frame, rec.ts_ns);
                            }
                        }
                    }
                    if !an.go_on() {
                        break;
                    }
                }
                n += 1;
                bytes += rec.data.len() as u64 + 16;
                if n.is_multiple_of(PROGRESS_EVERY) {
                    progress(bytes, n);
                }
            }
            Err((f, e)) => {
                let p = summary(&mut summaries, &mut an.sink, f);
                record_error(&mut summaries[p], &e)
            }
        }
    }
    progress(bytes, n);
    for &(f, format, compression) in &reader.opened {
        if let Some(p) = place[f] {
            summaries[p].format = Some(format);
            summaries[p].compression = Some(compression);
            summaries[p].bad_timestamps = reader.bad_timestamps[f];
            summaries[p].damaged = std::mem::take(&mut reader.damage[f]);
        }
    }
    let failed = an.take_failure();
    (summaries.into_iter().map(FileSummary::finish).collect(), an.sink, failed)
}

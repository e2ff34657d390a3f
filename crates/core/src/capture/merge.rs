//! Several files read as one trace in time order: a capture split into pieces (a ring of
//! files, `tcpdump -C`/`-G` output) or captures taken at several points.

use std::collections::VecDeque;

use super::{CaptureError, CaptureReader, Record};

/// A packet copied out of its file so that the heads of all files can be compared.
struct Head {
    ts_ns: u64,
    data: Vec<u8>,
    orig_len: u32,
    link_type: u32,
    offset: u64,
}

/// K-way merge of capture readers by timestamp. Ties keep the order of the files as given.
pub struct MergedReader {
    readers: Vec<CaptureReader>,
    heads: Vec<Option<Head>>,
    primed: bool,
    frame: u64,
    /// The record handed out last; its buffer is reused.
    current: Option<Head>,
    /// Errors not yet reported, with the index of their file.
    pending: VecDeque<(usize, CaptureError)>,
}

impl MergedReader {
    /// Merges the given readers (in the order of the command line).
    pub fn new(readers: Vec<CaptureReader>) -> Self {
        let n = readers.len();
        MergedReader {
            readers,
            heads: (0..n).map(|_| None).collect(),
            primed: false,
            frame: 0,
            current: None,
            pending: VecDeque::new(),
        }
    }

    /// The readers, e.g. to ask for their positions and counters.
    pub fn readers(&self) -> &[CaptureReader] {
        &self.readers
    }

    /// Reads file `i`'s next packet into its head slot; an error finishes that file.
    fn refill(&mut self, i: usize, mut data: Vec<u8>) {
        self.heads[i] = match self.readers[i].next_record() {
            Ok(Some(rec)) => {
                data.clear();
                data.extend_from_slice(rec.data);
                Some(Head {
                    ts_ns: rec.ts_ns,
                    data,
                    orig_len: rec.orig_len,
                    link_type: rec.link_type,
                    offset: rec.offset,
                })
            }
            Ok(None) => None,
            Err(e) => {
                self.pending.push_back((i, e));
                None
            }
        };
    }

    /// The next packet of the merged trace with the index of its file; frame numbers count the
    /// merged trace. An error belongs to file `i`, which is then finished; call again to go on
    /// with the other files.
    pub fn next_record(&mut self) -> Option<Result<(usize, Record<'_>), (usize, CaptureError)>> {
        if !self.primed {
            self.primed = true;
            for i in 0..self.readers.len() {
                self.refill(i, Vec::new());
            }
        }
        if let Some(e) = self.pending.pop_front() {
            return Some(Err(e));
        }
        let i = (0..self.heads.len())
            .filter(|&i| self.heads[i].is_some())
            .min_by_key(|&i| self.heads[i].as_ref().map(|h| h.ts_ns))?;
        let head = self.heads[i].take();
        let spare = self.current.take().map(|h| h.data).unwrap_or_default();
        self.refill(i, spare);
        self.current = head;
        self.frame += 1;
        let h = self.current.as_ref()?;
        let rec = Record {
            ts_ns: h.ts_ns,
            data: &h.data,
            orig_len: h.orig_len,
            link_type: h.link_type,
            frame: self.frame,
            offset: h.offset,
        };
        Some(Ok((i, rec)))
    }
}

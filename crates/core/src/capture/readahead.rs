//! Decompression on a thread of its own.
//!
//! Inflating a gzip capture costs about twice what reading and decoding its packets does, and it
//! ran on the reading thread: the stages were one after the other. [`ReadAhead`] runs the
//! decompressor on a thread that fills chunks ahead of the reader. Hand-written: it is a channel
//! of chunks and a copy out of each; an OS pipe (`std::io::pipe`) would add a copy through the
//! kernel.

use std::io::{self, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Bytes the thread reads before handing them on.
const CHUNK: usize = 1 << 18;
/// Chunks filled ahead of the reader (and spare chunks kept for reuse).
const AHEAD: usize = 4;

/// A reader whose bytes come from `inner`, read on another thread. Errors come in order, after
/// the bytes read before them; the thread stops at the end, at an error, or when this is
/// dropped.
pub(super) struct ReadAhead {
    chunks: Receiver<io::Result<Vec<u8>>>,
    spare: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    at: usize,
    done: bool,
}

impl ReadAhead {
    pub(super) fn new(mut inner: Box<dyn Read + Send>) -> io::Result<ReadAhead> {
        let (tx, chunks) = sync_channel::<io::Result<Vec<u8>>>(AHEAD);
        let (spare, spares) = sync_channel::<Vec<u8>>(AHEAD);
        std::thread::Builder::new().name("decompress".into()).spawn(move || {
            loop {
                let mut buf = spares.try_recv().unwrap_or_default();
                buf.resize(CHUNK, 0);
                let mut n = 0;
                let end = loop {
                    match inner.read(&mut buf[n..]) {
                        Ok(0) => break None,
                        Ok(k) => {
                            n += k;
                            if n == CHUNK {
                                break Some(Ok(()));
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => break Some(Err(e)),
                    }
                };
                buf.truncate(n);
                // The receiver gone (the reader dropped) ends the thread too.
                if n > 0 && tx.send(Ok(buf)).is_err() {
                    return;
                }
                match end {
                    Some(Ok(())) => {}
                    // The end: an empty chunk.
                    None => return drop(tx.send(Ok(Vec::new()))),
                    Some(Err(e)) => return drop(tx.send(Err(e))),
                }
            }
        })?;
        Ok(ReadAhead { chunks, spare, cur: Vec::new(), at: 0, done: false })
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.chunks.recv() {
                Ok(Ok(c)) if c.is_empty() => self.done = true,
                Ok(Ok(c)) => {
                    let used = std::mem::replace(&mut self.cur, c);
                    let _ = self.spare.try_send(used);
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Err(io::Error::other("the decompressing thread stopped"));
                }
            }
        }
        let n = out.len().min(self.cur.len() - self.at);
        out[..n].copy_from_slice(&self.cur[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes a few at a time, then an error.
    struct Flaky(io::Cursor<Vec<u8>>);

    impl Read for Flaky {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(7);
            match self.0.read(&mut buf[..n])? {
                0 => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "cut off")),
                k => Ok(k),
            }
        }
    }

    #[test]
    fn bytes_then_the_error_in_order() {
        let bytes: Vec<u8> = (0..3 * CHUNK + 123).map(|i| (i * 7 % 251) as u8).collect();
        let mut r = ReadAhead::new(Box::new(Flaky(io::Cursor::new(bytes.clone())))).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1000];
        let err = loop {
            match r.read(&mut buf) {
                Ok(0) => panic!("an end instead of the error"),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => break e,
            }
        };
        assert_eq!(got, bytes);
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(r.read(&mut buf).unwrap(), 0, "finished after the error");
    }

    #[test]
    fn all_bytes_then_the_end() {
        let bytes: Vec<u8> = (0..CHUNK + 5).map(|i| i as u8).collect();
        let mut r = ReadAhead::new(Box::new(io::Cursor::new(bytes.clone()))).unwrap();
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert_eq!(got, bytes);
        // Dropped before the end: the thread stops (its send fails) instead of blocking.
        let big: Vec<u8> = vec![1; 10 * CHUNK];
        let mut r = ReadAhead::new(Box::new(io::Cursor::new(big))).unwrap();
        r.read_exact(&mut [0; 10]).unwrap();
        drop(r);
    }
}

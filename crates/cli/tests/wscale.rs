//! Window scale inference for connections seen mid-stream (issue 22 part 4; docs/statistics.md
//! "Window scale of a connection seen mid-stream"): every public and recorded trace, cut to
//! start mid-stream by dropping its SYNs, infers the shift its handshake shows, or says it cannot
//! know; and the thesis' own trace (figures 2.2 and 2.3).

mod util;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tcpscope_core::capture::{CaptureReader, PcapWriter};
use util::{capture_files, data_dir, json, public_files, tempdir};

/// `path` without its SYN segments, written to `dir`; `None` when it cannot be rewritten as one
/// pcap (several link types, or unreadable).
fn cut(path: &Path, dir: &Path) -> Option<PathBuf> {
    let mut r = CaptureReader::open(path).ok()?;
    let out = dir.join(format!("cut-{}.pcap", path.file_stem()?.to_string_lossy()));
    let mut w: Option<PcapWriter<std::io::BufWriter<std::fs::File>>> = None;
    while let Ok(Some(rec)) = r.next_record() {
        let syn = tcpscope_core::decode::decode(rec.link_type, rec.data, rec.orig_len).is_ok_and(|s| s.flags.syn());
        if syn {
            continue;
        }
        if w.is_none() {
            let f = std::io::BufWriter::new(std::fs::File::create(&out).ok()?);
            w = Some(PcapWriter::new(f, rec.link_type, 262_144).ok()?);
        }
        let wr = w.as_mut()?;
        if wr.link_type() != rec.link_type {
            return None;
        }
        wr.write(&rec).ok()?;
    }
    w?.finish().ok()?;
    Some(out)
}

/// Per 4-tuple (as "a|b"), its direction statistics; 4-tuples seen more than once (port reuse)
/// are left out.
fn by_tuple(doc: &serde_json::Value) -> HashMap<String, serde_json::Value> {
    let mut m: HashMap<String, serde_json::Value> = HashMap::new();
    let mut twice = Vec::new();
    for c in doc["connections"].as_array().unwrap() {
        let ep = |e: &serde_json::Value| format!("{}:{}", e["addr"].as_str().unwrap(), e["port"]);
        let (a, b) = (ep(&c["a"]), ep(&c["b"]));
        // Keyed by endpoint: the cut trace may name the other side `a`.
        for (side, dir) in [(format!("{a}>{b}"), "a2b"), (format!("{b}>{a}"), "b2a")] {
            if m.insert(side.clone(), c[dir].clone()).is_some() {
                twice.push(side);
            }
        }
    }
    for t in twice {
        m.remove(&t);
    }
    m
}

#[test]
fn traces_cut_mid_stream_infer_the_scale_their_handshake_shows_or_say_they_cannot_know() {
    let d = tempdir("wscale-cut");
    let mut files = public_files();
    files.extend(capture_files(&data_dir()));
    let (mut certain, mut unknown, mut checked) = (0, 0, 0);
    for f in &files {
        let full = json(&["stats", "-q", f.to_str().unwrap()]);
        let Some(c) = cut(f, &d) else { continue };
        let part = json(&["stats", "-q", c.to_str().unwrap()]);
        let (full, part) = (by_tuple(&full), by_tuple(&part));
        for (tuple, p) in &part {
            let Some(truth) = full.get(tuple).and_then(|x| x["window_scale"].as_u64()) else { continue };
            // Only directions that had their handshake in the full trace.
            if full[tuple]["window_scale_option"].is_null() && full[tuple]["syn"].as_u64() == Some(0) {
                continue;
            }
            checked += 1;
            match (p["window_scale_inferred"].as_u64(), p["window_scale_inferable"].as_bool()) {
                (Some(s), Some(true)) => {
                    assert_eq!(s, truth, "{}: {tuple}: inferred {s}, the handshake says {truth}", f.display());
                    certain += 1;
                }
                (None, Some(false)) => unknown += 1,
                other => panic!("{}: {tuple}: no handshake in the cut trace, yet {other:?}", f.display()),
            }
        }
        let _ = std::fs::remove_file(&c);
    }
    eprintln!("{checked} directions cut mid-stream: {certain} inferred (all right), {unknown} cannot be known");
    // The recorded bulk transfers (tests/data) fill their windows or keep their edges still:
    // some are inferred.
    if checked > 0 {
        assert!(certain > 0);
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn thesis_trace_has_shift_0_and_its_receiver_takes_back_offered_window() {
    let d = tempdir("wscale-thesis");
    let Some(f) = util::thesis::fig22(&d) else { return };
    let f = f.to_str().unwrap();
    let doc = json(&["stats", "-q", f]);
    let c = &doc["connections"][0];
    // a = 18.26.0.115 (the dump), b = 18.26.0.92 (the tape drive, the receiver).
    let b = &c["b2a"];
    assert_eq!(c["a"]["addr"], "18.26.0.115");
    assert_eq!((b["window_scale_inferred"].as_u64(), b["window_scale_inferable"].as_bool()), (Some(0), Some(true)));
    let given = json(&["stats", "-q", "--wscale", "0", f]);
    let shrinks = |doc: &serde_json::Value| doc["connections"][0]["b2a"]["window_shrinks"].as_u64().unwrap();
    eprintln!("thesis trace: {} shrinks inferred, {} with --wscale 0", shrinks(&doc), shrinks(&given));
    // The thesis' example (12:06:17.370 → .378, the edge 60415 bytes back) is among them: the
    // scale is certain from 12:06:17.370 on.
    assert_eq!(shrinks(&given), 3);
    assert_eq!(shrinks(&doc), shrinks(&given));
    let _ = std::fs::remove_dir_all(&d);
}

//! `tcpscope correlate` (issue 21) against recorded ground truth: a connection recorded at the
//! sender, the router and the receiver in network namespaces (`util::record`), with the
//! router's record of each drop and the delay forwarder's per-frame log as the truth.

mod util;

use util::record::{self, Recording};

/// Sender → (forwarder, 5 ms each way) → router (2 % random loss each way) → receiver;
/// 1.5 MB in one bulk transfer.
const LOSSY: &str = r#"
name = "c21-lossy"
timeout = 30
[path]
delay = "5ms"
loss = 0.02
reverse_loss = 0.02
[hosts]
cc = "cubic"
[traffic]
length = 16384
count = 96
"#;

fn lossy() -> Option<Recording> {
    record::record("lossy", LOSSY)
}

/// The recording itself: each capture complete (tcpdump dropped nothing, or the run would have
/// failed), the forwarder lost nothing, and the packets missing downstream of the router are
/// exactly those of its drop record, by identity (sequence and acknowledgment numbers, length,
/// flags, IP ID), each way, and as many more as the links counted (none on a quiet machine).
#[test]
fn recording_has_its_ground_truth() {
    let Some(rec) = lossy() else { return };
    let (fwd, rev) = rec.router_drops();
    assert!(fwd > 0, "no drops to locate");
    let (a2b, b2a) = rec.connection_drops();
    assert_eq!((a2b.len() as u64, b2a.len() as u64), (fwd, rev), "the drop record against the counters");
    let snd = record::idents(&rec.file("snd.pcap"));
    let rtr = record::idents(&rec.file("rtr.pcap"));
    let rcv = record::idents(&rec.file("rcv.pcap"));
    let of = |v: &[Option<record::Ident>], d: &str| -> Vec<record::Ident> {
        let mut x: Vec<record::Ident> = v.iter().flatten().filter(|p| p.0 == d).cloned().collect();
        x.sort();
        x
    };
    // Upstream less downstream, as multisets: `a` holds every packet of `b` (nothing appears
    // downstream that did not pass upstream), the rest are `drops` and `links` more (the
    // packets the links dropped, counted only).
    let missing = |a: Vec<record::Ident>, b: Vec<record::Ident>, drops: &[record::Ident], links: u64, what: &str| {
        let mut rest = a.clone();
        for p in &b {
            let i = rest.iter().position(|x| x == p).unwrap_or_else(|| panic!("{what}: {p:?} downstream only"));
            rest.remove(i);
        }
        for d in drops {
            let i = rest.iter().position(|x| x == d).unwrap_or_else(|| panic!("{what}: the drop {d:?} arrived"));
            rest.remove(i);
        }
        assert_eq!(rest.len() as u64, links, "{what}: missing downstream, not dropped by the router: {rest:?}");
    };
    // Between the sender and the router only the links drop (the forwarder keeps every frame
    // it reads; a full receive backlog of a veth does not).
    missing(of(&snd, "a2b"), of(&rtr, "a2b"), &[], rec.link_drops("sender-router"), "sender → router");
    missing(of(&rtr, "a2b"), of(&rcv, "a2b"), &a2b, rec.link_drops("router-receiver"), "router → receiver");
    missing(of(&rcv, "b2a"), of(&rtr, "b2a"), &b2a, rec.link_drops("receiver-router"), "receiver → router");
    missing(of(&rtr, "b2a"), of(&snd, "b2a"), &[], rec.link_drops("router-sender"), "router → sender");
    let held = rec.held_a2b();
    assert!(held.len() >= of(&snd, "a2b").len(), "forwarder log: {} frames", held.len());
    assert!(held.iter().all(|&(_, us)| us >= 5000));
}

fn correlate(args: &[&std::path::Path], extra: &[&str]) -> serde_json::Value {
    let mut a: Vec<&str> = vec!["correlate"];
    a.extend(args.iter().map(|p| p.to_str().unwrap()));
    a.extend_from_slice(extra);
    util::json(&a)
}

fn dir<'a>(doc: &'a serde_json::Value, d: &str) -> &'a serde_json::Value {
    doc["directions"].as_array().unwrap().iter().find(|x| x["dir"] == d).unwrap()
}

/// The path's drops located, each way, packet by packet (`record::drops_located` on `rows`,
/// the `--packets` rows): the router's between its capture (point 2) and the receiver's (point
/// 3), exactly its drop record, with any the links dropped there or between the sender and the
/// router (counted by the links; none on a quiet machine); at most one said as outside the
/// captures (a drop after the receiver's capture's last packet); no capture loss, no copies.
fn drops_located(rec: &Recording, doc: &serde_json::Value, rows: &serde_json::Value, how: &str) {
    let located = record::drops_located(rec, rows, how);
    for ((name, sender_side, router), l) in [("a2b", (1, 2), (2, 3)), ("b2a", (2, 1), (3, 2))].into_iter().zip(located)
    {
        let d = dir(doc, name);
        let lost = l.router + l.sender_side;
        assert_eq!(
            (d["lost_on_path"].as_u64(), d["outside_capture"].as_u64()),
            (Some(lost), Some(l.outside)),
            "{how} {name}: {d}"
        );
        assert!(l.outside <= 1, "{how} {name}: {d}");
        let mut want: Vec<(u64, u64, u64)> = [(sender_side, l.sender_side), (router, l.router)]
            .into_iter()
            .filter(|x| x.1 > 0)
            .map(|((a, b), n)| (a, b, n))
            .collect();
        let mut got = losses(doc, name);
        want.sort();
        got.sort();
        assert_eq!(got, want, "{how} {name}");
        assert_eq!((d["capture_loss"].as_u64(), d["duplicated"].as_u64()), (Some(0), Some(0)), "{how}: {d}");
    }
}

fn losses(doc: &serde_json::Value, d: &str) -> Vec<(u64, u64, u64)> {
    record::losses(dir(doc, d))
}

/// Sender, router and receiver captures of one recording: every router drop located between
/// the router and the receiver; one-way delays to the router within 100 µs of how long the
/// forwarder held each frame; a pcapng with ns timestamps beside the µs pcaps; frames removed
/// from a capture said as capture loss, not network loss. (An offset and a skew added to a
/// capture: [`an_offset_and_a_skew_added_to_a_capture_are_recovered`].)
#[test]
fn three_points_against_the_router_and_the_forwarder() {
    let Some(rec) = lossy() else { return };
    let (snd, rtr, rcv) = (rec.file("snd.pcap"), rec.file("rtr.pcap"), rec.file("rcv.pcap"));
    let doc = correlate(&[&snd, &rtr, &rcv], &[]);
    assert_eq!(doc["directions"].as_array().unwrap().len(), 2, "one connection");
    let (a2b, b2a) = (dir(&doc, "a2b"), dir(&doc, "b2a"));
    assert_eq!((a2b["path"].as_str(), b2a["path"].as_str()), (Some("1-2-3"), Some("3-2-1")));
    // Every drop located: after the router's capture, before the receiver's, packet by packet
    // as its drop record says. A drop after the receiver's capture's last packet (the
    // connection's last ACK) cannot be told from the end of that capture: it is said as outside
    // the captures, never as another loss.
    let pk = correlate(&[&snd, &rtr, &rcv], &["--packets"]);
    drops_located(&rec, &doc, &pk["packets"], "");
    // Each drop that took sequence space reached the receiver later: its bytes (and SYN/FIN)
    // inside a delivered packet. Counting packets instead failed now and then: a lost pure ACK
    // is never resent, and Linux may resend two lost segments as one (the last data segment and
    // the FIN).
    let rows = pk["packets"].as_array().unwrap();
    let span = |r: &serde_json::Value| {
        let (seq, len) = (r["seq"].as_u64().unwrap(), r["len"].as_u64().unwrap());
        let f = r["flags"].as_str().unwrap();
        (seq, seq + len + u64::from(f.contains('S')) + u64::from(f.contains('F')))
    };
    let a2b_rows: Vec<_> = rows.iter().filter(|r| r["dir"] == "a2b").collect();
    for lost in a2b_rows.iter().filter(|r| r["fate"] == "lost").map(|r| span(r)).filter(|(a, b)| b > a) {
        assert!(
            a2b_rows
                .iter()
                .filter(|r| r["fate"] == "delivered")
                .map(|r| span(r))
                .any(|(a, b)| a <= lost.0 && b >= lost.1),
            "lost {lost:?} never delivered: {a2b}"
        );
    }
    let n = |k: &str| a2b[k].as_u64().unwrap();
    assert_eq!(n("necessary_retransmissions") + n("spurious_retransmissions"), n("retransmissions"));

    // One-way delay sender → router against the forwarder's log: frames leave it in the order
    // they reach the router's capture (no reordering). The log also has frames the capture's
    // `tcp` filter left out (ARP, IPv6 neighbour discovery, the lab's warm-up SYN before the
    // capture): aligned from the end, each router frame takes the latest earlier log line of
    // its size.
    let mut at_rtr: Vec<(u64, f64)> = rows
        .iter()
        .filter(|r| r["dir"] == "a2b" && !r["at_s"][0].is_null() && !r["at_s"][1].is_null())
        .map(|r| {
            let owd = r["at_s"][1].as_f64().unwrap() - r["at_s"][0].as_f64().unwrap();
            (r["frames"][1].as_u64().unwrap(), owd * 1e6)
        })
        .collect();
    at_rtr.sort_by_key(|x| x.0);
    let rtr_frames = record::packets(&rtr);
    let held = rec.held_a2b();
    let mut j = held.len();
    let mut worst = 0.0f64;
    let mut errs = Vec::new();
    for (frame, owd_us) in at_rtr.iter().rev() {
        let size = rtr_frames[*frame as usize - 1].3;
        j = held[..j].iter().rposition(|h| h.0 == size).unwrap_or_else(|| panic!("frame {frame} not in the log"));
        let err = owd_us - held[j].1 as f64;
        worst = worst.max(err.abs());
        errs.push(err);
    }
    // The log's hold ends when the forwarder hands the frame to the kernel; the kernel's
    // delivery to the router after it is not in the log, and on a loaded machine it sometimes
    // takes longer than 100 µs (measured: 0-100 frames of 1100 in a run while other builds
    // ran). That lateness only ever adds: a frame measured *earlier* than its hold, or a median
    // off, would be the clock estimate's error. So: no frame more than 100 µs below its hold,
    // the median within 100 µs (measured 11-29 µs).
    let within = errs.iter().filter(|e| e.abs() <= 100.0).count();
    errs.sort_by(f64::total_cmp);
    assert!(errs[0] >= -100.0, "a frame {} µs earlier than the forwarder released it", -errs[0]);
    assert!(errs[errs.len() / 2].abs() <= 100.0, "median difference {} µs", errs[errs.len() / 2]);
    eprintln!(
        "one-way delay vs forwarder log: {} frames, difference median {:.1} µs, 99th percentile {:.1} µs, \
         largest {worst:.1} µs, smallest {:.1} µs; {within} within 100 µs",
        at_rtr.len(),
        errs[errs.len() / 2],
        errs[errs.len() * 99 / 100],
        errs[0]
    );

    let dir_ = util::tempdir("c21-shifted");

    // The router's capture as pcapng with ns timestamps, beside the µs pcaps: the same answer.
    let ng = dir_.join("rtr.pcapng");
    record::rewrite(&rtr, &ng, |_| true, |t| t, true);
    let d_ng = correlate(&[&snd, &ng, &rcv], &[]);
    assert_eq!(losses(&d_ng, "a2b"), losses(&doc, "a2b"));
    assert_eq!(losses(&d_ng, "b2a"), losses(&doc, "b2a"));
    assert_eq!(dir(&d_ng, "a2b")["one_way_delay_ms"], a2b["one_way_delay_ms"]);

    // Frames the captures missed: 5 delivered data frames removed from the router's capture and
    // 4 from the sender's. Said as capture loss of those points; the network losses unchanged.
    let delivered: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["dir"] == "a2b" && r["fate"] == "delivered" && r["len"].as_u64() > Some(0)).collect();
    let pick = |k: usize, n: usize| -> Vec<u64> {
        delivered.iter().skip(37).step_by(97).take(n).map(|r| r["frames"][k].as_u64().unwrap()).collect()
    };
    let (gone_rtr, gone_snd) = (pick(1, 5), pick(0, 4));
    let (rtr_cut, snd_cut) = (dir_.join("rtr-cut.pcap"), dir_.join("snd-cut.pcap"));
    record::rewrite(&rtr, &rtr_cut, |f| !gone_rtr.contains(&f), |t| t, false);
    let cut = correlate(&[&snd, &rtr_cut, &rcv], &[]);
    assert_eq!(cut["points"][1]["capture_loss"].as_u64(), Some(5), "{}", cut["points"]);
    assert_eq!(losses(&cut, "a2b"), losses(&doc, "a2b"));
    assert_eq!(dir(&cut, "a2b")["capture_loss"].as_u64(), Some(5));
    record::rewrite(&snd, &snd_cut, |f| !gone_snd.contains(&f), |t| t, false);
    let cut = correlate(&[&snd_cut, &rtr, &rcv], &[]);
    assert_eq!(cut["points"][0]["capture_loss"].as_u64(), Some(4), "{}", cut["points"]);
    assert_eq!(losses(&cut, "a2b"), losses(&doc, "a2b"));
    let _ = std::fs::remove_dir_all(&dir_);
}

/// [`LOSSY`]'s path, the transfer lasting 5 s instead of 1.5 MB.
fn long() -> String {
    let e = LOSSY.replace("\"c21-lossy\"", "\"c21-long\"").replace("count = 96", "seconds = 5");
    assert!(e.contains("c21-long") && e.contains("seconds = 5"), "{e}");
    e
}

/// An offset (300 ms) and a skew (+200 ppm) added to the receiver's capture of a 5 s transfer:
/// recovered, the skew within three times its uncertainty and 5 ppm, the offset within 0.1
/// ms, the losses and the smallest delays as without them (within what the skew's error
/// moves them); a given offset replaces the
/// estimate. A skew shows only as far as the floor of the delays is straight, and on a loaded
/// machine it wanders by tens of µs (the forwarder's timer waking late): over [`LOSSY`]'s
/// 1.5 MB, which takes 0.12 to 1.9 s with its random losses, 200 ppm is 24 to 380 µs, and in
/// one recording in five the estimate was rightly too uncertain to apply (207 ± 125 ppm, and
/// 133 ± 397 ppm over a 0.12 s transfer). Over 5 s it is 1 ms: 12 recordings in a row under
/// a load average of 5.4–8.2 gave 198.7–200.8 ppm, ± 0.4–3.4.
#[test]
fn an_offset_and_a_skew_added_to_a_capture_are_recovered() {
    let Some(rec) = record::record("long", &long()) else { return };
    let (snd, rcv) = (rec.file("snd.pcap"), rec.file("rcv.pcap"));
    let times = record::packets(&snd);
    let span_s = (times[times.len() - 1].0 - times[0].0) as f64 * 1e-9;
    assert!(span_s > 4.0, "the transfer lasted {span_s} s");
    let dir_ = util::tempdir("c21-skewed");
    // An offset (300 ms) and a skew (+200 ppm) added to the receiver's clock: recovered.
    let first = record::packets(&rcv)[0].0;
    let (off, skew) = (300e6, 200e-6);
    let shifted = dir_.join("rcv-shifted.pcap");
    record::rewrite(&rcv, &shifted, |_| true, |t| t + (off + skew * (t - first) as f64) as u64, false);
    let base = correlate(&[&snd, &rcv], &[]);
    let sh = correlate(&[&snd, &shifted], &[]);
    let (p0, p) = (&base["points"][1], &sh["points"][1]);
    assert_eq!(p["skew_applied"], true, "{p}");
    let skew_ppm = p["skew_ppm"].as_f64().unwrap();
    assert!((skew_ppm - 200.0).abs() <= 3.0 * p["skew_uncertainty_ppm"].as_f64().unwrap() + 5.0, "{p}");
    eprintln!(
        "skew over {span_s:.2} s: {skew_ppm} ± {} ppm, {} samples",
        p["skew_uncertainty_ppm"], p["clock_samples"]
    );
    // The true offset at the estimate's time, against what the same clocks gave unshifted.
    let at_ns = p["offset_at_s"].as_f64().unwrap() * 1e9 - off;
    let want_ms = (off + skew * (at_ns - first as f64)) / 1e6 + p0["offset_ms"].as_f64().unwrap();
    let got_ms = p["offset_ms"].as_f64().unwrap();
    assert!((got_ms - want_ms).abs() < 0.1, "offset {got_ms} ms, want {want_ms} ms");
    // The smallest delays as without them, within 0.1 ms and what the skew's error (allowed
    // above) moves a delay over the transfer: 24.7 ppm over 6.1 s is 0.15 ms (one CI run).
    let drift_ms = (skew_ppm - 200.0).abs() * 1e-6 * span_s * 1e3;
    for d in ["a2b", "b2a"] {
        assert_eq!(losses(&sh, d).iter().map(|l| l.2).sum::<u64>(), dir(&base, d)["lost_on_path"].as_u64().unwrap());
        let (m0, m1) =
            (dir(&base, d)["one_way_delay_ms"]["min"].as_f64(), dir(&sh, d)["one_way_delay_ms"]["min"].as_f64());
        assert!((m0.unwrap() - m1.unwrap()).abs() < 0.1 + drift_ms, "{d}: {m0:?} vs {m1:?}, skew drift {drift_ms} ms");
    }
    // A given offset replaces the estimate.
    let given = correlate(&[&snd, &shifted], &["--offset", "2=300"]);
    assert_eq!(given["points"][1]["clock"], "given");
    assert_eq!(given["points"][1]["offset_ms"].as_f64(), Some(300.0));

    let _ = std::fs::remove_dir_all(&dir_);
}

/// Sender → router (2 % random loss each way) → receiver, 4 MB in 64 KiB writes, with TSO/GSO
/// left on at the sender's link: the sender's capture and the router's (on its link from the
/// sender) see super-segments, which the router cuts to the MTU towards the receiver. No delay
/// forwarder (it moves wire-sized frames).
const SPLIT: &str = r#"
name = "tso21-split"
timeout = 30
[path]
loss = 0.02
reverse_loss = 0.02
[hosts]
cc = "cubic"
sender_tso = true
[traffic]
length = 65536
count = 64
"#;

/// Sender → forwarder (5 ms each way) → router (2 % random loss each way) → receiver, 1.5 MB,
/// with GRO on at the receiver's link: its capture sees the segments it merged.
const MERGED: &str = r#"
name = "tso21-merged"
timeout = 30
[path]
delay = "5ms"
loss = 0.02
reverse_loss = 0.02
[hosts]
cc = "cubic"
receiver_gro = true
[traffic]
length = 16384
count = 96
"#;

/// Sender → router (1 Gbit/s, 2 % random loss each way) → receiver, 12 MB in 64 KiB writes,
/// with TSO/GSO on at the sender's link and GRO on at the receiver's: the sender's and the
/// router's captures see super-segments (the router drops them whole and cuts them to the MTU
/// towards the receiver), the receiver's capture its own merges of the wire segments, at most
/// 10000 bytes each and kept open between polls, so that their boundaries differ from the
/// super-segments' (without that, veth merges the wire segments back into the same
/// super-segments; 4 MB recordings with 10000 had 9 to 43 merges straddling a
/// super-segment, or none now and then). No delay forwarder (it moves wire-sized frames).
const BOTH: &str = r#"
name = "tso21-both"
timeout = 30
[path]
rate = "1gbit"
loss = 0.02
reverse_loss = 0.02
[hosts]
cc = "cubic"
sender_tso = true
receiver_gro = true
receiver_gro_bytes = 10000
[traffic]
length = 65536
count = 192
"#;

/// How late (ns) the receiver's capture is made in [`matches_every_byte`]: less than the
/// window (2 s), more than a TSO recording lasts.
const LATE: u64 = 1_200_000_000;

/// The namespace prefix of the byte-coverage recordings (only those are ever removed).
const TSO21: &str = "tso21";

/// What a byte-coverage recording must show, whichever side saw the larger segments: the
/// drops located where the router's drop record says (one per segment it dropped, as it saw
/// them), nothing said as capture loss or
/// copies, every data frame of each capture on a lifeline that reached the others or was lost
/// at the router, every frame of the captures on a row (a piece counted once, the whole at
/// its pieces' rows), and the same counts with the receiver's capture [`LATE`].
fn matches_every_byte(rec: &Recording, how: &str) -> serde_json::Value {
    let (snd, rtr, rcv) = (rec.file("snd.pcap"), rec.file("rtr.pcap"), rec.file("rcv.pcap"));
    let sender: std::net::IpAddr = "10.9.1.1".parse().unwrap();
    let frames: Vec<Vec<(u64, std::net::IpAddr, u32, u32)>> =
        [&snd, &rtr, &rcv].iter().map(|p| record::packets(p)).collect();
    // Ground truth of the offloads, from the captures alone: segments longer than the MSS
    // (1448 bytes) at the point that saw them whole, none elsewhere (with both offloads,
    // everywhere).
    let large = |k: usize| frames[k].iter().filter(|p| p.1 == sender && p.2 > 1448).count();
    let (whole_at, pieces_at): (&[usize], &[usize]) = match how {
        "split" => (&[0, 1], &[2]),
        "merged" => (&[2], &[0, 1]),
        _ => (&[0, 1, 2], &[]),
    };
    assert!(
        whole_at.iter().all(|&k| large(k) > 10),
        "{how}: too few large segments: {:?}",
        (0..3).map(large).collect::<Vec<_>>()
    );
    assert!(pieces_at.iter().all(|&k| large(k) == 0), "{how}: {:?}", (0..3).map(large).collect::<Vec<_>>());
    let doc = correlate(&[&snd, &rtr, &rcv], &[]);
    let (a2b, b2a) = (dir(&doc, "a2b"), dir(&doc, "b2a"));
    assert_eq!((a2b["path"].as_str(), b2a["path"].as_str()), (Some("1-2-3"), Some("3-2-1")));
    let pk = correlate(&[&snd, &rtr, &rcv], &["--packets"]);
    drops_located(rec, &doc, &pk["packets"], how);
    let count = |k: &str| a2b[k].as_u64().unwrap();
    let pieces = match how {
        "split" => count("split_pieces"),
        "merged" => count("merged_pieces"),
        _ => count("split_pieces") + count("merged_pieces"),
    };
    assert!(pieces > 20, "{how}: {a2b}");
    let rows: Vec<&serde_json::Value> =
        pk["packets"].as_array().unwrap().iter().filter(|r| r["dir"] == "a2b").collect();
    let of_how = |r: &&&serde_json::Value| !r["coverage"].is_null() && (how == "overlap" || r["coverage"] == how);
    assert_eq!(rows.iter().filter(of_how).count() as u64, pieces);
    assert!(rows.iter().all(|r| r["coverage"].is_null() || of_how(&r)), "{how}");
    // Every data frame of each capture is on some row, and every row's frames are real ones.
    for (k, f) in frames.iter().enumerate() {
        let want: std::collections::BTreeSet<u64> =
            (1..=f.len() as u64).filter(|&i| f[i as usize - 1].1 == sender && f[i as usize - 1].2 > 0).collect();
        let got: std::collections::BTreeSet<u64> =
            rows.iter().filter(|r| r["len"].as_u64() > Some(0)).filter_map(|r| r["frames"][k].as_u64()).collect();
        assert_eq!(got, want, "{how}: capture {}", k + 1);
    }
    // Every data row reached the receiver, or was lost at the router: none seen at one side only.
    for r in rows.iter().filter(|r| r["len"].as_u64() > Some(0)) {
        let seen: Vec<bool> = (0..3).map(|k| !r["at_s"][k].is_null()).collect();
        assert!(
            seen == [true, true, true] || (seen == [true, true, false] && r["fate"] != "delivered"),
            "{how}: {r}; {}",
            rec.conditions()
        );
    }
    // The receiver's capture with its clock LATE behind: its packets enter the window after
    // those of the other two for the same moments (all of a TSO recording's, about 600 of a
    // GRO recording's), as a router's queue holding them would put them — wholes and pieces
    // hundreds of packets apart. The same counts, a packet judged before the late capture's
    // first match included (delivered only on the whole path: docs/correlate.md, Clocks).
    let late = rec.file("rcv-late.pcap");
    record::rewrite(&rcv, &late, |_| true, |t| t + LATE, false);
    let shifted = correlate(&[&snd, &rtr, &late], &[]);
    for d in ["a2b", "b2a"] {
        let (x, y) = (dir(&shifted, d), dir(&doc, d));
        for k in [
            "packets",
            "delivered",
            "outside_capture",
            "lost_on_path",
            "capture_loss",
            "split_pieces",
            "merged_pieces",
            "duplicated",
        ] {
            assert_eq!(x[k], y[k], "{how} {d} {k}: the receiver's capture {LATE} ns late");
        }
    }
    doc
}

/// TSO at the sender: its captures' super-segments matched to the receiver's MTU-sized pieces
/// by byte coverage (module doc of `correlate`, "Coverage").
#[test]
fn tso_at_the_sender_is_matched_by_coverage() {
    let Some(rec) = record::record_as(TSO21, "split", SPLIT) else { return };
    let doc = matches_every_byte(&rec, "split");
    eprintln!("TSO recording: {}", dir(&doc, "a2b"));
}

/// GRO at the receiver: its merged segments matched to the sender's and the router's frames.
#[test]
fn gro_at_the_receiver_is_matched_by_coverage() {
    let Some(rec) = record::record_as(TSO21, "merged", MERGED) else { return };
    let doc = matches_every_byte(&rec, "merged");
    eprintln!("GRO recording: {}", dir(&doc, "a2b"));
}

/// The sender's data segments of a capture as byte ranges (from the first one's sequence
/// number), with the core's reader and decoder only.
fn ranges(path: &std::path::Path) -> Vec<(i64, i64)> {
    let sender: std::net::IpAddr = "10.9.1.1".parse().unwrap();
    let mut r = tcpscope_core::capture::CaptureReader::open(path).unwrap();
    let (mut v, mut isn) = (Vec::new(), None);
    while let Some(rec) = r.next_record().unwrap() {
        if let Ok(s) = tcpscope_core::decode::decode(rec.link_type, rec.data, rec.orig_len)
            && s.src == sender
            && s.payload_len > 0
        {
            let at = i64::from(s.seq.0.wrapping_sub(*isn.get_or_insert(s.seq.0)) as i32);
            v.push((at, at + i64::from(s.payload_len)));
        }
    }
    v
}

/// TSO at the sender and GRO at the receiver together: the super-segments of the sender's and
/// the router's captures matched to the receiver's merges, whose boundaries differ, by
/// overlapping byte ranges (module doc of `correlate`, "Coverage").
#[test]
fn tso_and_gro_together_are_matched_by_overlap() {
    // Both offloads, from the captures alone: merges at the receiver that overlap a
    // super-segment of the sender's without either holding the other. Whether the kernel
    // merged across a super-segment's end varies from run to run (4 MB: none in 4 of 12
    // recordings under a load average of 8): a recording without is made again, at most twice.
    let straddles = |rec: &Recording| {
        let (snd, rcv) = (ranges(&rec.file("snd.pcap")), ranges(&rec.file("rcv.pcap")));
        let cross = |m: &(i64, i64), s: &(i64, i64)| {
            m.0 < s.1 && s.0 < m.1 && !(m.0 <= s.0 && s.1 <= m.1) && !(s.0 <= m.0 && m.1 <= s.1)
        };
        rcv.iter().filter(|m| snd.iter().any(|s| cross(m, s))).count()
    };
    let mut tries = 0;
    let (rec, straddling) = loop {
        tries += 1;
        let Some(rec) = record::record_as(TSO21, "both", BOTH) else { return };
        let n = straddles(&rec);
        if n > 0 || tries == 3 {
            break (rec, n);
        }
        eprintln!("recording {tries}: no merge straddles a super-segment; recording again");
    };
    assert!(straddling > 0, "{tries} recordings: no merge at the receiver straddles a super-segment");
    let doc = matches_every_byte(&rec, "overlap");
    eprintln!("TSO and GRO recording: {straddling} straddling merges; {}", dir(&doc, "a2b"));
}

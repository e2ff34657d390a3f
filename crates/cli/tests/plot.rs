//! `tcpscope plot`: the time-sequence plot as SVG and xplot, checked structurally (counts of
//! marks by kind), never by pixels. Expected numbers come from a script (the arithmetic is in the
//! comments), from an independent reading of the pcap in this file, and are compared with
//! `tcpscope stats --json`.

mod util;

use std::collections::BTreeMap;
use std::path::Path;

use tcpscope_core::testutil::{Pkt, flag::*, opt, pcap};
use util::*;

// ---------------------------------------------------------------------------------------------
// Reading the outputs.

/// Counts of SVG mark groups by class (`<g class="...">` inside the marks group).
fn svg_marks(svg: &str) -> BTreeMap<String, usize> {
    let marks = &svg[svg.find(r#"<g class="marks""#).expect("marks group")..];
    let mut n = BTreeMap::new();
    for part in marks.split(r#"<g class=""#).skip(2) {
        let class = &part[..part.find('"').unwrap()];
        *n.entry(class.to_string()).or_default() += 1;
    }
    n
}

/// The `<g>` elements of one class, as text.
fn svg_groups<'a>(svg: &'a str, class: &str) -> Vec<&'a str> {
    let pat = format!(r#"<g class="{class}""#);
    svg.match_indices(&pat).map(|(i, _)| &svg[i..i + svg[i..].find("</g>").unwrap()]).collect()
}

/// Packets the marks of a class stand for: their `data-count`, or 1 for a mark without one.
fn counted(svg: &str, class: &str) -> usize {
    svg_groups(svg, class)
        .iter()
        .map(|g| match g.find(r#"data-count=""#) {
            Some(i) => g[i + 12..i + 12 + g[i + 12..].find('"').unwrap()].parse::<usize>().unwrap(),
            None => 1,
        })
        .sum()
}

fn count(m: &BTreeMap<String, usize>, class: &str) -> usize {
    m.get(class).copied().unwrap_or(0)
}

/// One xplot command: name, numbers, colour in effect, text (for text commands).
#[derive(Debug)]
struct Cmd {
    name: String,
    v: Vec<f64>,
    color: String,
    text: Option<String>,
}

/// Parses an .xpl file by the grammar in the reference notes (§1.7): a coordinate line, then
/// comments, bare colours, point commands (2 numbers), `line`/`dline` (4), text commands (2
/// numbers, text on the next line), `title`/`xlabel`/`ylabel` (text on the next line), `go`.
/// Panics on anything else.
fn parse_xpl(s: &str) -> (Vec<Cmd>, BTreeMap<&'static str, String>) {
    const TYPES: [&str; 5] = ["unsigned", "signed", "timeval", "double", "dtime"];
    const COLORS: [&str; 10] =
        ["white", "green", "red", "blue", "yellow", "purple", "orange", "magenta", "pink", "gray20"];
    const POINT: [&str; 18] = [
        "x",
        ".",
        "dot",
        "+",
        "plus",
        "box",
        "diamond",
        "utick",
        "dtick",
        "ltick",
        "rtick",
        "htick",
        "vtick",
        "uarrow",
        "darrow",
        "larrow",
        "rarrow",
        "invisible",
    ];
    const TEXT: [&str; 5] = ["ctext", "atext", "btext", "ltext", "rtext"];
    let mut lines = s.lines();
    let head: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert!(head.len() == 2 && TYPES.contains(&head[0]) && TYPES.contains(&head[1]), "bad coordinate line {head:?}");
    let mut cmds = Vec::new();
    let mut labels = BTreeMap::new();
    let mut color = "white".to_string();
    let mut ended = false;
    while let Some(line) = lines.next() {
        assert!(!ended, "text after go: {line}");
        assert!(line.len() <= 1000);
        let tok: Vec<&str> = line.split_whitespace().collect();
        let Some(&first) = tok.first() else { continue };
        let num = |t: &[&str]| {
            t.iter().map(|x| x.parse::<f64>().unwrap_or_else(|_| panic!("not a number in {line}"))).collect::<Vec<_>>()
        };
        if first.starts_with(';') {
            continue;
        } else if tok.len() == 1 && COLORS.contains(&first) {
            color = first.to_string();
        } else if let Some(k) = ["title", "xlabel", "ylabel"].into_iter().find(|k| *k == first) {
            assert_eq!(tok.len(), 1);
            labels.insert(k, lines.next().unwrap().to_string());
        } else if first == "go" {
            ended = true;
        } else if POINT.contains(&first) || TEXT.contains(&first) || first == "line" || first == "dline" {
            let arity = if first == "line" || first == "dline" { 4 } else { 2 };
            assert!(
                tok.len() == arity + 1 || (tok.len() == arity + 2 && COLORS.contains(&tok[arity + 1])),
                "bad command {line}"
            );
            let text = TEXT.contains(&first).then(|| lines.next().unwrap().to_string());
            cmds.push(Cmd { name: first.to_string(), v: num(&tok[1..=arity]), color: color.clone(), text });
        } else {
            panic!("not in the xplot grammar: {line}");
        }
    }
    assert!(ended, "no go");
    (cmds, labels)
}

/// Counts by meaning in a parsed .xpl: payload segments = vertical lines in a data colour
/// (new white, retransmission red, out-of-order pink, probe orange); ack steps = vertical green
/// lines; ack repeats = dticks; window-edge repeats = uticks.
#[derive(Debug, Default, PartialEq)]
struct XplCounts {
    segs: usize,
    rexmit: usize,
    probe: usize,
    ack_steps: usize,
    dticks: usize,
    uticks: usize,
    sacks: usize,
}

fn xpl_counts(cmds: &[Cmd]) -> XplCounts {
    let mut c = XplCounts::default();
    for k in cmds {
        let vertical_up = k.name == "line" && k.v[0] == k.v[2] && k.v[3] > k.v[1];
        let vertical = k.name == "line" && k.v[0] == k.v[2] && k.v[3] != k.v[1];
        match (k.name.as_str(), k.color.as_str()) {
            ("line", "white" | "red" | "pink" | "orange") if vertical_up => {
                c.segs += 1;
                c.rexmit += (k.color == "red") as usize;
                c.probe += (k.color == "orange") as usize;
            }
            ("line", "green") if vertical => c.ack_steps += 1,
            ("line", "purple") if vertical => c.sacks += 1,
            ("dtick", _) => c.dticks += 1,
            ("utick", _) => c.uticks += 1,
            _ => {}
        }
    }
    c
}

fn plot(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "tcpscope {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let i = args.iter().position(|a| *a == "-o").expect("-o");
    std::fs::read_to_string(args[i + 1]).unwrap()
}

// ---------------------------------------------------------------------------------------------
// A scripted conversation.

const ISN_A: u32 = 1000;
const ISN_B: u32 = 5000;

/// Packets from `a` (10.2.2.1:40000) and `b` (10.2.2.2:80); sequence numbers relative (first
/// payload byte 0), acks relative to the peer's; no window scaling. `sack` blocks are relative
/// to a's data.
#[allow(clippy::too_many_arguments)]
fn pkt(ms: u64, from_a: bool, flags: u8, seq: u32, ack: u32, len: u16, win: u16, opts: Vec<u8>) -> Pkt {
    let (a, b) = ([10, 2, 2, 1], [10, 2, 2, 2]);
    let (isn, peer) = if from_a { (ISN_A, ISN_B) } else { (ISN_B, ISN_A) };
    Pkt {
        ts_ns: 1_700_000_000_000_000_000 + ms * 1_000_000,
        src: if from_a { a } else { b },
        dst: if from_a { b } else { a },
        sport: if from_a { 40000 } else { 80 },
        dport: if from_a { 80 } else { 40000 },
        seq: if flags & SYN != 0 { isn } else { isn + 1 + seq },
        ack: if flags & ACK != 0 { peer + 1 + ack } else { 0 },
        flags,
        win,
        len,
        opts,
        snap: None,
    }
}

fn sack(blocks: &[(u32, u32)]) -> Vec<u8> {
    opt::sack(&blocks.iter().map(|&(l, r)| (ISN_A + 1 + l, ISN_A + 1 + r)).collect::<Vec<_>>())
}

/// The script, frame by frame (a sends data; b's ack / window edge = ack + win in brackets):
///
/// ```text
///  1   0 ms a SYN                          zero-length (X), SYN
///  2  10 ms b SYN+ACK ack 0 win 4000        first ack point [0 / 4000]
///  3  20 ms a ACK, no payload               zero-length (X)
///  4  21 ms a 0..1000 PSH                   new
///  5  22 ms a 1000..2000                    new (lost before b)
///  6  23 ms a 2000..3000                    new
///  7  24 ms a 3000..4000                    new
///  8  31 ms b ack 1000 win 4000             step up      [1000 / 5000] edge step
///  9  33 ms b ack 1000 win 4000 SACK 2000-3000   repeat  [1000 / 5000] edge repeat
/// 10  34 ms b ack 1000 win 4000 SACK 2000-4000   repeat  [1000 / 5000] edge repeat
/// 11  40 ms a 1000..2000                    retransmission
/// 12  50 ms b ack 4000 win 1000             step up      [4000 / 5000] edge repeat
/// 13  60 ms a 4000..5000                    new
/// 14  70 ms b ack 5000 win 0                step up, Z   [5000 / 5000] edge repeat
/// 15 300 ms a 5000..5001                    zero-window probe
/// 16 310 ms b ack 5000 win 0                repeat, Z    [5000 / 5000] edge repeat
/// 17 400 ms b ack 5000 win 4000             repeat       [5000 / 9000] edge step
/// 18 410 ms a 5000..6000                    new (a probe's bytes stay out of the bookkeeping)
/// 19 420 ms a FIN at 6000                   zero-length (X), FIN
/// 20 430 ms b FIN+ACK ack 6001 win 4000     step up      [6001 / 10001] edge step
/// 21 440 ms a ACK                           zero-length (X)
/// ```
///
/// a2b: 8 payload segments (6 new, 1 retransmission, 1 probe), 4 zero-length (1, 3, 19, 21); 9 returning ACKs:
/// 1 start + 4 steps + 4 repeats; window: 3 steps, 5 repeats; 2 SACK blocks; 2 zero windows;
/// Wireshark-rule dup ACKs: frames 9 and 10 only (16 has window 0, 17 a new window).
fn script() -> Vec<u8> {
    let syn_opts = [opt::mss(1460), opt::sack_perm()].concat();
    let pk = vec![
        pkt(0, true, SYN, 0, 0, 0, 8000, syn_opts.clone()),
        pkt(10, false, SYN | ACK, 0, 0, 0, 4000, syn_opts),
        pkt(20, true, ACK, 0, 0, 0, 8000, vec![]),
        pkt(21, true, PSH | ACK, 0, 0, 1000, 8000, vec![]),
        pkt(22, true, ACK, 1000, 0, 1000, 8000, vec![]),
        pkt(23, true, ACK, 2000, 0, 1000, 8000, vec![]),
        pkt(24, true, ACK, 3000, 0, 1000, 8000, vec![]),
        pkt(31, false, ACK, 0, 1000, 0, 4000, vec![]),
        pkt(33, false, ACK, 0, 1000, 0, 4000, sack(&[(2000, 3000)])),
        pkt(34, false, ACK, 0, 1000, 0, 4000, sack(&[(2000, 4000)])),
        pkt(40, true, ACK, 1000, 0, 1000, 8000, vec![]),
        pkt(50, false, ACK, 0, 4000, 0, 1000, vec![]),
        pkt(60, true, ACK, 4000, 0, 1000, 8000, vec![]),
        pkt(70, false, ACK, 0, 5000, 0, 0, vec![]),
        pkt(300, true, ACK, 5000, 0, 1, 8000, vec![]),
        pkt(310, false, ACK, 0, 5000, 0, 0, vec![]),
        pkt(400, false, ACK, 0, 5000, 0, 4000, vec![]),
        pkt(410, true, ACK, 5000, 0, 1000, 8000, vec![]),
        pkt(420, true, FIN | ACK, 6000, 0, 0, 8000, vec![]),
        pkt(430, false, FIN | ACK, 0, 6001, 0, 4000, vec![]),
        pkt(440, true, ACK, 6001, 1, 0, 8000, vec![]),
    ];
    pcap(&pk, false, false)
}

fn scripted_file(name: &str) -> (util::TempDir, String) {
    let d = tempdir(name);
    let f = d.join("s.pcap");
    std::fs::write(&f, script()).unwrap();
    let f = f.to_str().unwrap().to_string();
    (d, f)
}

#[test]
fn scripted_svg_has_one_mark_per_segment_ack_repeat_and_sack() {
    let (d, f) = scripted_file("plot-svg");
    let out = d.join("t.svg");
    let svg = plot(&["plot", &f, "-c", "1", "-o", out.to_str().unwrap()]);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let m = svg_marks(&svg);
    assert_eq!(count(&m, "seg new"), 6, "{m:?}");
    assert_eq!(count(&m, "seg rexmit"), 1);
    assert_eq!(count(&m, "seg probe"), 1);
    assert_eq!(count(&m, "seg new zero"), 4);
    assert_eq!(count(&m, "ack step"), 4);
    assert_eq!(count(&m, "ack dup"), 4);
    assert_eq!(count(&m, "win step"), 3);
    assert_eq!(count(&m, "win dup"), 5);
    assert_eq!(count(&m, "sack"), 2);
    assert_eq!(count(&m, "note zwin"), 2);
    assert_eq!(count(&m, "note syn"), 1);
    assert_eq!(count(&m, "note fin"), 1);
    // The thesis' drawing: a segment with payload is one line and two arrowheads; a
    // zero-length one only the two arrowheads (an X); the retransmission is labelled R.
    // Frame 4 has PSH: tcptrace tops it with a diamond instead of the up arrowhead.
    for g in svg_groups(&svg, "seg new") {
        let psh = g.contains(r#"data-frame="4""#) as usize;
        let shape = (
            g.matches("<line").count(),
            g.matches(r#"class="arrow""#).count(),
            g.matches(r#"class="diamond""#).count(),
        );
        assert_eq!(shape, (1, 2 - psh, psh), "{g}");
    }
    for g in svg_groups(&svg, "seg new zero") {
        assert_eq!((g.matches("<line").count(), g.matches(r#"class="arrow""#).count()), (0, 2), "{g}");
    }
    let r = svg_groups(&svg, "seg rexmit");
    assert!(r[0].contains(r#"data-frame="11""#) && r[0].contains(">R</text>"), "{r:?}");
    // Legend entries for what is present.
    for t in ["retransmission (R)", "ack line", "window line", "SACK block", "zero-window probe"] {
        assert!(svg.contains(t), "legend lacks {t}");
    }
    // The same counts as the statistics.
    let doc = json(&["stats", &f]);
    let (a2b, b2a) = (&doc["connections"][0]["a2b"], &doc["connections"][0]["b2a"]);
    assert_eq!(a2b["data_packets"], 8);
    assert_eq!(a2b["rexmit_packets"], 1);
    assert_eq!(a2b["zero_window_probes"], 1);
    assert_eq!(b2a["zero_window_adverts"], 2);
    assert_eq!(b2a["sack_packets"], 2);
    // Wireshark's dup ACKs (frames 9, 10) are a subset of the repeats the plot ticks.
    assert_eq!(b2a["dup_acks"], 2);
}

#[test]
fn scripted_xpl_parses_and_has_the_same_counts() {
    let (d, f) = scripted_file("plot-xpl");
    let out = d.join("t.xpl");
    let text = plot(&["plot", &f, "-c", "1", "-o", out.to_str().unwrap()]);
    assert!(text.starts_with("double double\n"));
    let (cmds, labels) = parse_xpl(&text);
    assert!(labels["title"].contains("10.2.2.1:40000"));
    assert!(labels.contains_key("xlabel") && labels.contains_key("ylabel"));
    let c = xpl_counts(&cmds);
    assert_eq!(c, XplCounts { segs: 8, rexmit: 1, probe: 1, ack_steps: 4, dticks: 4, uticks: 5, sacks: 2 });
    // Coordinates: the retransmission at 40 ms from 1000 to 2000; the first ack step at 31 ms
    // from 0 to 1000; the zero-length packet at 20 ms is a darrow and an uarrow at 0 (an X).
    assert!(cmds.iter().any(|k| k.name == "line" && k.color == "red" && k.v == [0.04, 1000.0, 0.04, 2000.0]));
    assert!(cmds.iter().any(|k| k.name == "line" && k.color == "green" && k.v == [0.031, 0.0, 0.031, 1000.0]));
    for w in ["darrow", "uarrow"] {
        assert!(cmds.iter().any(|k| k.name == w && k.v == [0.02, 0.0]), "{w}");
    }
    // SACK 2000-4000 at 34 ms with horizontal ticks at both edges.
    assert!(cmds.iter().any(|k| k.name == "line" && k.color == "purple" && k.v == [0.034, 2000.0, 0.034, 4000.0]));
    assert_eq!(cmds.iter().filter(|k| k.name == "htick").count(), 4);
    // Notes: zero windows at the window edge (5000), the SYN at -1.
    assert_eq!(cmds.iter().filter(|k| k.text.as_deref() == Some("Z")).count(), 2);
    assert!(cmds.iter().any(|k| k.text.as_deref() == Some("SYN") && k.v == [0.0, -1.0]));
}

#[test]
fn scripted_from_to_clips() {
    let (d, f) = scripted_file("plot-clip");
    let out = d.join("t.xpl");
    // 30-100 ms: segments 11 (40 ms) and 13 (60 ms); ack steps 8, 12, 14; repeats 9, 10.
    let text = plot(&["plot", &f, "-c", "1", "--from", "0.030", "--to", "0.100", "-o", out.to_str().unwrap()]);
    let (cmds, _) = parse_xpl(&text);
    let c = xpl_counts(&cmds);
    assert_eq!((c.segs, c.rexmit, c.ack_steps, c.dticks, c.sacks), (2, 1, 3, 2, 2));
    assert!(
        cmds.iter().all(|k| k.v.chunks(2).all(|p| (0.030..=0.100).contains(&p[0]))),
        "a point outside the time range"
    );
    // b2a: b sends no payload; a's ACKs are its returning packets.
    let out = d.join("b.svg");
    let svg = plot(&["plot", &f, "-c", "1", "--dir", "b2a", "-o", out.to_str().unwrap()]);
    let m = svg_marks(&svg);
    assert_eq!(m.keys().filter(|k| k.starts_with("seg") && !k.ends_with("zero")).count(), 0, "{m:?}");
}

#[test]
fn plot_default_name_and_errors() {
    let (d, f) = scripted_file("plot-name");
    let out = util::tcpscope().current_dir(&d).args(["plot", &f, "-c", "1", "--dir", "b2a"]).output().unwrap();
    assert!(out.status.success());
    assert!(d.join("tsg-1-b2a.svg").is_file());
    let out = run(&["plot", &f, "-c", "7", "-o", d.join("x.svg").to_str().unwrap()]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no connection 7"));
    let out = run(&["plot", &f, "-c", "1", "--from", "2", "--to", "1", "-o", d.join("x.svg").to_str().unwrap()]);
    assert!(!out.status.success());
}

// ---------------------------------------------------------------------------------------------
// The recorded loss trace, read independently.

/// What an independent reading of `loss-snd.pcap` (Ethernet, IPv4) says about the a2b plot:
/// data packets, retransmissions (start below the highest byte sent so far: the truth file's
/// definition), and for b's ACKs the steps (ack above every earlier one) and repeats (not above).
#[derive(Debug, Default)]
struct Truth {
    data: usize,
    rexmit: usize,
    ack_steps: usize,
    ack_repeats: usize,
}

/// Packets of the trace: (time s since the first packet, from a, seq, ack, flags, payload).
fn read_pcap(path: &Path) -> Vec<(f64, bool, u32, u32, u8, u32)> {
    let b = std::fs::read(path).unwrap();
    let u32le = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let u32be = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
    assert_eq!(u32le(0), 0xa1b2_c3d4, "µs little-endian pcap");
    assert_eq!(u32le(20), 1, "Ethernet");
    let (mut i, mut v, mut t0) = (24, Vec::new(), None);
    while i + 16 <= b.len() {
        let t = u32le(i) as f64 + u32le(i + 4) as f64 * 1e-6;
        let incl = u32le(i + 8) as usize;
        let p = i + 16;
        i = p + incl;
        assert_eq!(&b[p + 12..p + 14], &[8, 0], "IPv4");
        let ip = p + 14;
        let ihl = (b[ip] & 15) as usize * 4;
        let total = u16::from_be_bytes([b[ip + 2], b[ip + 3]]) as usize;
        let tcp = ip + ihl;
        let doff = (b[tcp + 12] >> 4) as usize * 4;
        let sport = u16::from_be_bytes([b[tcp], b[tcp + 1]]);
        let t0 = *t0.get_or_insert(t);
        v.push((t - t0, sport == 40001, u32be(tcp + 4), u32be(tcp + 8), b[tcp + 13], (total - ihl - doff) as u32));
    }
    v
}

fn loss_truth(from: f64, to: f64) -> Truth {
    let pk = read_pcap(&data_dir().join("loss-snd.pcap"));
    let isn = pk.iter().find(|p| p.1 && p.4 & SYN != 0).unwrap().2;
    let mut t = Truth::default();
    let mut max_end: Option<u32> = None;
    let mut max_ack: Option<u32> = None;
    let inside = |x: f64| x >= from && x <= to;
    for &(x, from_a, seq, ack, flags, len) in &pk {
        if from_a && len > 0 {
            let start = seq.wrapping_sub(isn + 1);
            let rex = max_end.is_some_and(|m| start < m);
            max_end = Some(max_end.map_or(start + len, |m| m.max(start + len)));
            if inside(x) {
                t.data += 1;
                t.rexmit += rex as usize;
            }
        } else if !from_a && flags & ACK != 0 {
            // Relative to the first payload byte (the SYN-ACK acknowledges the SYN: 0).
            let a = ack.wrapping_sub(isn + 1);
            if let Some(m) = max_ack
                && inside(x)
            {
                if a > m { t.ack_steps += 1 } else { t.ack_repeats += 1 }
            }
            max_ack = Some(max_ack.map_or(a, |m| m.max(a)));
        }
    }
    t
}

#[test]
fn loss_trace_svg_and_xpl_count_what_the_pcap_and_stats_say() {
    let f = data_dir().join("loss-snd.pcap");
    let f = f.to_str().unwrap();
    let d = tempdir("plot-loss");
    let truth = loss_truth(f64::MIN, f64::MAX);
    // The truth file's numbers for this recording.
    assert_eq!((truth.data, truth.rexmit), (737, 12));
    let doc = json(&["stats", f]);
    let c = &doc["connections"][0];
    assert_eq!(c["a2b"]["data_packets"].as_u64(), Some(truth.data as u64));
    assert_eq!(c["a2b"]["rexmit_packets"].as_u64(), Some(truth.rexmit as u64));
    // Every b2a packet carries an ACK: one starts the line, the rest step or repeat.
    assert_eq!(c["b2a"]["packets"].as_u64(), Some((1 + truth.ack_steps + truth.ack_repeats) as u64));

    let svg_path = d.join("l.svg");
    let svg = plot(&["plot", f, "-c", "1", "--width", "1600", "-o", svg_path.to_str().unwrap()]);
    let m = svg_marks(&svg);
    assert_eq!(count(&m, "seg agg"), 0, "1600 px hold 737 segments without aggregating");
    assert_eq!(count(&m, "seg new") + count(&m, "seg rexmit") + count(&m, "seg ooo"), truth.data, "{m:?}");
    assert_eq!(count(&m, "seg rexmit"), truth.rexmit);
    assert_eq!(count(&m, "ack step"), truth.ack_steps);
    assert_eq!(count(&m, "ack dup"), truth.ack_repeats);
    // Wireshark-rule duplicate ACKs (window unchanged) are among the repeats.
    assert!(c["b2a"]["dup_acks"].as_u64().unwrap() <= truth.ack_repeats as u64);
    assert_eq!(
        count(&m, "sack"),
        c["b2a"]["sack_blocks"].as_u64().unwrap() as usize - c["b2a"]["dsacks"].as_u64().unwrap() as usize
    );

    let xpl_path = d.join("l.xpl");
    let (cmds, _) = parse_xpl(&plot(&["plot", f, "-c", "1", "-o", xpl_path.to_str().unwrap()]));
    let x = xpl_counts(&cmds);
    assert_eq!(
        (x.segs, x.rexmit, x.ack_steps, x.dticks),
        (truth.data, truth.rexmit, truth.ack_steps, truth.ack_repeats)
    );
    assert_eq!(x.uticks, count(&m, "win dup"));
    assert_eq!(x.sacks, count(&m, "sack"));

    // --from/--to clip, against the same independent reading.
    let t = loss_truth(0.5, 1.0);
    let clip = d.join("c.xpl");
    let (cmds, _) =
        parse_xpl(&plot(&["plot", f, "-c", "1", "--from", "0.5", "--to", "1.0", "-o", clip.to_str().unwrap()]));
    let x = xpl_counts(&cmds);
    assert!(t.data > 100 && t.data < truth.data);
    assert_eq!((x.segs, x.rexmit, x.ack_steps, x.dticks), (t.data, t.rexmit, t.ack_steps, t.ack_repeats));
}

#[test]
fn narrow_svg_aggregates_new_segments_but_keeps_every_retransmission() {
    let f = data_dir().join("loss-snd.pcap");
    let d = tempdir("plot-agg");
    let out = d.join("n.svg");
    let svg = plot(&["plot", f.to_str().unwrap(), "-c", "1", "--width", "300", "-o", out.to_str().unwrap()]);
    let m = svg_marks(&svg);
    let truth = loss_truth(f64::MIN, f64::MAX);
    assert_eq!(count(&m, "seg rexmit"), truth.rexmit);
    assert_eq!(count(&m, "seg new"), 0);
    // 300 px wide minus the margins: at most one aggregate per pixel column, and their counts
    // add up to every packet of the direction that is not a retransmission: the new data
    // packets plus the zero-length ones (SYN, pure ACKs), which are folded in with them.
    let aggs = svg_groups(&svg, "seg agg");
    assert!(!aggs.is_empty() && aggs.len() <= 300);
    let n = counted(&svg, "seg agg");
    let doc = json(&["stats", f.to_str().unwrap()]);
    let a2b = &doc["connections"][0]["a2b"];
    let zero_len = a2b["packets"].as_u64().unwrap() - a2b["data_packets"].as_u64().unwrap();
    assert_eq!(n, truth.data - truth.rexmit + zero_len as usize);
    assert!(svg.contains("new segments, too many to draw one by one: each of the"));
}

#[test]
fn very_narrow_svg_draws_returning_packets_per_column_and_loses_none() {
    // 200 px wide: ~130 columns for 590 returning packets (more than 4 per column), so the ack
    // and window lines become one step per column; their counts add up to every returning
    // packet (the first one included: its column starts the lines), and no retransmission or
    // D-SACK is merged.
    let f = data_dir().join("loss-snd.pcap");
    let d = tempdir("plot-agg-acks");
    let out = d.join("a.svg");
    let svg = plot(&["plot", f.to_str().unwrap(), "-c", "1", "--width", "200", "-o", out.to_str().unwrap()]);
    let m = svg_marks(&svg);
    let truth = loss_truth(f64::MIN, f64::MAX);
    assert_eq!(count(&m, "ack step"), 0);
    assert_eq!(count(&m, "ack dup"), 0);
    let cols = svg_groups(&svg, "ack step agg").len();
    assert!(cols > 0 && cols <= 200, "{cols}");
    assert_eq!(counted(&svg, "ack step agg"), truth.ack_steps + truth.ack_repeats + 1);
    assert_eq!(counted(&svg, "ack dup agg"), truth.ack_repeats);
    assert_eq!(count(&m, "seg rexmit"), truth.rexmit);
    assert!(svg.contains("SACK blocks, too many to draw one by one: each pixel column shows their range"));
}

#[test]
fn rtt_plot_has_one_mark_per_sample_of_each_kind() {
    // Every Karn and timestamp sample of a's data in loss-snd.pcap, as `stats` counts them, in
    // the SVG and in the .xpl; the samples lie on the recorded 2 × 10 ms path (truth file).
    let f = data_dir().join("loss-snd.pcap");
    let f = f.to_str().unwrap();
    let d = tempdir("plot-rtt");
    let doc = json(&["stats", f]);
    let a2b = &doc["connections"][0]["a2b"];
    let (karn, ts) = (a2b["rtt_samples"].as_u64().unwrap() as usize, a2b["rtt_ts_samples"].as_u64().unwrap() as usize);
    assert!(karn > 100 && ts > 10);
    let svg = plot(&["plot", f, "-c", "1", "--kind", "rtt", "-o", d.join("r.svg").to_str().unwrap()]);
    let m = svg_marks(&svg);
    assert_eq!((count(&m, "rtt karn"), count(&m, "rtt ts")), (karn, ts));
    let xpl = plot(&["plot", f, "-c", "1", "-k", "rtt", "-o", d.join("r.xpl").to_str().unwrap()]);
    let diamonds: Vec<f64> = xpl
        .lines()
        .filter(|l| l.starts_with("diamond "))
        .map(|l| l.split(' ').nth(2).unwrap().parse().unwrap())
        .collect();
    assert_eq!(diamonds.len(), karn);
    assert_eq!(xpl.lines().filter(|l| l.starts_with("box ")).count(), ts);
    let min = diamonds.iter().cloned().fold(f64::MAX, f64::min);
    assert!((19.0..25.0).contains(&min), "fastest Karn sample {min} ms on a 20 ms path");
    // Clipping keeps only the samples in the window.
    let clipped = plot(&[
        "plot",
        f,
        "-c",
        "1",
        "-k",
        "rtt",
        "--from",
        "0.5",
        "--to",
        "1.0",
        "-o",
        d.join("c.xpl").to_str().unwrap(),
    ]);
    let xs: Vec<f64> = clipped
        .lines()
        .filter(|l| l.starts_with("diamond "))
        .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(!xs.is_empty() && xs.len() < karn && xs.iter().all(|x| (0.5..=1.0).contains(x)));
}

// ---------------------------------------------------------------------------------------------
// The other kinds, comparing, PNG, and bounded output.

/// The `data-frame` of every mark of one class.
fn groups_with_frame(svg: &str, class: &str) -> Vec<u64> {
    svg_groups(svg, class)
        .iter()
        .filter_map(|g| {
            g.find(r#"data-frame=""#).map(|i| g[i + 12..i + 12 + g[i + 12..].find('"').unwrap()].parse().unwrap())
        })
        .collect()
}

#[test]
fn scripted_tput_ssize_dupack_and_burst_count_every_data_packet() {
    let (d, f) = scripted_file("plot-kinds");
    let svg =
        |kind: &str| plot(&["plot", &f, "-c", "1", "-k", kind, "-o", d.join(format!("{kind}.svg")).to_str().unwrap()]);
    // 8 payload packets (frames 4 5 6 7 11 13 15 18): 7 have a previous data packet, so 7 rates;
    // frame 11 carried retransmitted bytes.
    let t = svg("tput");
    let m = svg_marks(&t);
    assert_eq!(count(&m, "tput inst") + count(&m, "tput inst over") + count(&m, "tput rexmit"), 7, "{m:?}");
    assert_eq!(groups_with_frame(&t, "tput rexmit"), vec![11]);
    assert_eq!((count(&m, "tput avg"), count(&m, "goodput avg")), (1, 1));
    // Segment size: one mark per payload packet, retransmission and probe apart, the MSS line.
    let s = svg("ssize");
    let m = svg_marks(&s);
    assert_eq!(count(&m, "ssize new"), 6, "{m:?}");
    assert_eq!(groups_with_frame(&s, "ssize rexmit"), vec![11]);
    assert_eq!(groups_with_frame(&s, "ssize probe"), vec![15]);
    assert_eq!(count(&m, "mss"), 1);
    assert!(s.contains("MSS announced by the receiver (1460)"));
    // Dup ACKs (Wireshark's rule: frames 9 and 10) and the one retransmission, each counted once.
    let k = svg("dupack");
    assert_eq!((counted(&k, "dupack bin"), counted(&k, "rexmit bin")), (2, 1));
    // Burstiness: the bytes with a rate are all payload bytes but the first packet's:
    // 7 × 1000 + 1 (probe) − 1000.
    let b = svg("burst");
    let bins: usize = counted(&b, "burst bin");
    assert_eq!(bins, 6001);
    assert_eq!(count(&svg_marks(&b), "avg"), 1);
    let c = svg("burst-cdf");
    assert_eq!(count(&svg_marks(&c), "burst cdf"), 1);
    assert!(c.contains("6001 bytes with a rate") && c.contains("first packet's 1000 bytes"), "remark");
}

#[test]
fn every_kind_writes_xplot_in_the_grammar() {
    let (d, f) = scripted_file("plot-kinds-xpl");
    for kind in ["tsg", "rtt", "tput", "flight", "ssize", "burst", "burst-cdf", "dupack"] {
        let text = plot(&["plot", &f, "-c", "1", "-k", kind, "-o", d.join(format!("{kind}.xpl")).to_str().unwrap()]);
        let (cmds, labels) = parse_xpl(&text);
        assert!(!cmds.is_empty() && labels.contains_key("title"), "{kind}");
    }
}

/// The recorded loss scenario: dup ACKs and retransmissions as `stats` counts them; flight has
/// one point per data packet with a flight value and a cwnd estimate per complete round.
#[test]
fn loss_trace_dupack_and_flight_agree_with_stats() {
    let f = data_dir().join("loss-snd.pcap");
    let f = f.to_str().unwrap();
    let d = tempdir("plot-loss-kinds");
    let st = json(&["stats", f, "-c", "1"]);
    let c = &st["connections"][0];
    let (a2b, b2a) = (&c["a2b"], &c["b2a"]);
    let k = plot(&["plot", f, "-c", "1", "-k", "dupack", "-o", d.join("k.svg").to_str().unwrap()]);
    assert_eq!(counted(&k, "dupack bin") as u64, b2a["dup_acks"].as_u64().unwrap());
    assert_eq!(counted(&k, "rexmit bin") as u64, a2b["rexmit_packets"].as_u64().unwrap());
    let fl = plot(&["plot", f, "-c", "1", "-k", "flight", "-o", d.join("f.svg").to_str().unwrap()]);
    let m = svg_marks(&fl);
    assert_eq!((count(&m, "flight"), count(&m, "rwnd")), (1, 1), "{m:?}");
    let rounds = count(&m, "cwnd round");
    assert!(rounds > 10, "{m:?}");
    assert!(fl.contains(&format!("cwnd estimated for {rounds} round trips")));
    // Rounds are about one RTT (20 ms path, truth file): in the .xpl (data coordinates) the
    // rounds are the blue lines, as many as in the SVG, with a median length of 10-100 ms.
    let (cmds, _) = parse_xpl(&plot(&["plot", f, "-c", "1", "-k", "flight", "-o", d.join("f.xpl").to_str().unwrap()]));
    let mut lens: Vec<f64> =
        cmds.iter().filter(|c| c.name == "line" && c.color == "blue").map(|c| c.v[2] - c.v[0]).collect();
    assert_eq!(lens.len(), rounds);
    lens.sort_by(f64::total_cmp);
    let median = lens[lens.len() / 2];
    assert!((0.01..0.1).contains(&median), "median round {median} s");
}

#[test]
fn with_draws_connections_on_one_scale_side_by_side_or_separately() {
    let d = tempdir("plot-with");
    let loss = data_dir().join("loss-snd.pcap");
    let clean = data_dir().join("clean-snd.pcap");
    let out = d.join("cmp.svg");
    let with = format!("{}:1", clean.display());
    let svg = plot(&[
        "plot",
        loss.to_str().unwrap(),
        "-c",
        "1",
        "--with",
        &with,
        "--width",
        "600",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(svg.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" width="1200""#), "{}", &svg[..120]);
    let panels: Vec<&str> = svg.split(r#"<svg class="panel""#).skip(1).collect();
    assert_eq!(panels.len(), 2);
    // One scale: both panels carry the same tick labels.
    let labels =
        |p: &str| -> String { p[p.find(r#"<g class="labels""#).unwrap()..].split("</g>").next().unwrap().to_string() };
    let strip = |s: String| {
        s.split("<text")
            .filter(|t| !t.contains("remark"))
            .map(|t| t.split('>').nth(1).unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(labels(panels[0])), strip(labels(panels[1])));
    // Each panel draws its own connection's segments.
    assert!(panels[0].contains(r#"class="seg"#) && panels[1].contains(r#"class="seg"#));
    // Separate files, and a bad --with.
    let sep = d.join("sep.svg");
    let o = run(&[
        "plot",
        loss.to_str().unwrap(),
        "-c",
        "1",
        "-k",
        "tput",
        "--with",
        &with,
        "--separate",
        "-o",
        sep.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (a, b) =
        (std::fs::read_to_string(d.join("sep-1.svg")).unwrap(), std::fs::read_to_string(d.join("sep-2.svg")).unwrap());
    let yl = |s: &str| s[s.find("rate (").unwrap()..].split(')').next().unwrap().to_string();
    assert_eq!(yl(&a), yl(&b));
    let o = run(&["plot", loss.to_str().unwrap(), "-c", "1", "--with", "nocolon", "-o", sep.to_str().unwrap()]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("TRACE:ID"));
}

#[test]
fn png_output_is_a_png_of_the_requested_size() {
    let (d, f) = scripted_file("plot-png");
    let out = d.join("t.png");
    let o = run(&["plot", &f, "-c", "1", "--width", "640", "--height", "400", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&out).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // IHDR: width and height, big-endian, at bytes 16..24.
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!((be(&png[16..20]), be(&png[20..24])), (640, 400));
}

/// A bulk transfer by script: `n` data segments of 1448 bytes 10 µs apart, an ACK every second
/// segment; every 2000th segment is followed by three duplicate ACKs and its retransmission.
/// Returns the pcap and the number of retransmissions.
fn bulk(n: u32) -> (Vec<u8>, usize) {
    let (a, b) = ([10, 3, 3, 1], [10, 3, 3, 2]);
    let p = |us: u64, from_a: bool, flags: u8, seq: u32, ack: u32, len: u16| Pkt {
        ts_ns: 1_700_000_000_000_000_000 + us * 1000,
        src: if from_a { a } else { b },
        dst: if from_a { b } else { a },
        sport: if from_a { 40000 } else { 80 },
        dport: if from_a { 80 } else { 40000 },
        seq,
        ack,
        flags,
        win: 65535,
        len,
        opts: vec![],
        snap: None,
    };
    let (ia, ib) = (1000u32, 5000u32);
    let mut v =
        vec![p(0, true, SYN, ia, 0, 0), p(100, false, SYN | ACK, ib, ia + 1, 0), p(200, true, ACK, ia + 1, ib + 1, 0)];
    let mut rex = 0;
    let mut us = 300;
    for i in 0..n {
        let seq = ia + 1 + i * 1448;
        v.push(p(us, true, ACK, seq, ib + 1, 1448));
        us += 10;
        if i % 2000 == 1000 {
            let ack = seq;
            for _ in 0..3 {
                v.push(p(us, false, ACK, ib + 1, ack, 0));
                us += 2;
            }
            v.push(p(us, true, ACK, seq, ib + 1, 1448));
            rex += 1;
            us += 10;
        } else if i % 2 == 1 {
            v.push(p(us, false, ACK, ib + 1, seq + 1448, 0));
        }
    }
    (pcap(&v, false, false), rex)
}

/// Output size does not grow with the trace: 150 000 packets give files about as large as
/// 15 000, and every retransmission is still its own mark.
#[test]
fn large_connection_gives_bounded_files_and_keeps_every_retransmission() {
    let d = tempdir("plot-bulk");
    let mut sizes = Vec::new();
    for n in [10_000u32, 100_000] {
        let (bytes, rex) = bulk(n);
        let f = d.join(format!("b{n}.pcap"));
        std::fs::write(&f, bytes).unwrap();
        let f = f.to_str().unwrap();
        let mut row = Vec::new();
        for kind in ["tsg", "rtt", "tput", "flight", "ssize", "burst", "burst-cdf", "dupack"] {
            for ext in ["svg", "xpl"] {
                let out = d.join(format!("{kind}-{n}.{ext}"));
                // xplot writes every segment unless asked to aggregate: the bound is that one's.
                let agg = if ext == "xpl" { "--xpl-aggregate" } else { "-q" };
                let text = plot(&["plot", f, "-c", "1", "-k", kind, agg, "-o", out.to_str().unwrap()]);
                row.push((kind, ext, text.len()));
                if ext == "svg" {
                    let m = svg_marks(&text);
                    match kind {
                        "tsg" => assert_eq!(count(&m, "seg rexmit"), rex, "{m:?}"),
                        "ssize" => assert_eq!(count(&m, "ssize rexmit"), rex),
                        "tput" => assert_eq!(count(&m, "tput rexmit"), rex),
                        "dupack" => {
                            assert_eq!((counted(&text, "dupack bin"), counted(&text, "rexmit bin")), (3 * rex, rex))
                        }
                        _ => {}
                    }
                }
            }
        }
        sizes.push(row);
    }
    for (small, big) in sizes[0].iter().zip(&sizes[1]) {
        // Ten times the packets: the file may grow with the retransmissions it must keep
        // (ten times as many) or up to its per-column bound, not with the segments: drawn one
        // by one, 100 000 segments take more than 6 MB.
        let bound = if big.1 == "svg" { 800_000 } else { 2_000_000 };
        assert!(
            big.2 <= (2 * small.2 + 200 * 50).max(bound),
            "{} {}: {} bytes for 10× the packets vs {}",
            big.0,
            big.1,
            big.2,
            small.2
        );
    }
    // 170 MB of traces and plots: not left in /tmp by every run (the disk is shared).
    let _ = std::fs::remove_dir_all(&d);
}

/// A million packets: every kind renders in about two seconds (release build:
/// `cargo test --release -p tcpscope --test plot -- --ignored`), to a bounded file.
#[test]
#[ignore = "timing; run in release"]
fn million_packets_render_in_about_two_seconds() {
    let d = tempdir("plot-million");
    let (bytes, rex) = bulk(670_000);
    let f = d.join("m.pcap");
    std::fs::write(&f, bytes).unwrap();
    let f = f.to_str().unwrap();
    for kind in ["tsg", "rtt", "tput", "flight", "ssize", "burst", "burst-cdf", "dupack"] {
        for ext in ["svg", "xpl", "png"] {
            let out = d.join(format!("{kind}.{ext}"));
            let t = std::time::Instant::now();
            let agg = if ext == "xpl" { "--xpl-aggregate" } else { "-q" };
            let o = run(&["plot", f, "-c", "1", "-k", kind, agg, "-o", out.to_str().unwrap()]);
            let secs = t.elapsed().as_secs_f64();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let size = std::fs::metadata(&out).unwrap().len();
            eprintln!("{kind:>9} {ext}: {secs:.2} s, {size} bytes");
            assert!(secs < 3.0, "{kind} {ext}: {secs:.2} s");
            assert!(size < 3_000_000, "{kind} {ext}: {size} bytes");
        }
    }
    let svg = std::fs::read_to_string(d.join("tsg.svg")).unwrap();
    assert_eq!(count(&svg_marks(&svg), "seg rexmit"), rex);
}

/// Public traces (skipped when `../shared` is absent): tcptrace's D-SACK bulk transfer and two
/// connections of its Solaris discard trace. Every kind renders; retransmissions and duplicate
/// ACKs are drawn exactly as many times as `stats` counts them.
#[test]
#[cfg_attr(no_public_traces, ignore = "../shared/traces/public is absent")]
fn public_traces_render_every_kind_with_every_event() {
    let Some(dir) = public_traces() else {
        eprintln!("skipping: ../shared/traces/public is absent");
        return;
    };
    let d = tempdir("plot-public");
    let mut events = 0;
    for (file, id) in
        [("tcptrace__dsack.pcap", 1), ("tcptrace__discard_solaris.pcap", 3), ("tcptrace__discard_solaris.pcap", 4)]
    {
        let f = dir.join(file);
        if !f.exists() {
            eprintln!("skipping {file}: absent");
            continue;
        }
        let f = f.to_str().unwrap();
        let ids = id.to_string();
        let st = json(&["stats", f, "-c", &ids]);
        let c = &st["connections"][0];
        let rex = c["a2b"]["rexmit_packets"].as_u64().unwrap() as usize;
        let dups = c["b2a"]["dup_acks"].as_u64().unwrap() as usize;
        events += rex + dups;
        for kind in ["tsg", "rtt", "tput", "flight", "ssize", "burst", "burst-cdf", "dupack"] {
            let out = d.join(format!("{kind}-{id}.svg"));
            let svg = plot(&["plot", f, "-c", &ids, "-k", kind, "-o", out.to_str().unwrap()]);
            let m = svg_marks(&svg);
            assert!(!m.is_empty(), "{file} {kind}: no marks");
            match kind {
                "tsg" => assert_eq!(count(&m, "seg rexmit") + count(&m, "seg rexmit zero"), rex, "{file} {kind}"),
                "dupack" => {
                    assert_eq!((counted(&svg, "dupack bin"), counted(&svg, "rexmit bin")), (dups, rex), "{file}")
                }
                _ => {}
            }
        }
    }
    // These traces have retransmissions and duplicate ACKs: the counts above were not all 0 = 0.
    assert!(events > 100, "{events}");
}

/// `--from/--to` take seconds since the connection's first packet or absolute times (the forms
/// `conns --from` takes); both draw the same plot.
#[test]
fn absolute_and_relative_times_give_the_same_plot() {
    let trace = data_dir().join("loss-snd.pcap");
    let t = trace.to_str().unwrap();
    let first = json(&["stats", t])["connections"][0]["first_time"].as_f64().unwrap();
    let dir = tempdir("plot-abs-time");
    let draw = |from: &str, to: &str, name: &str| {
        let out = dir.join(name);
        let o = run(&["plot", t, "-c", "1", "--from", from, "--to", to, "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{from} {to}: {}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(out).unwrap()
    };
    let rel = draw("0.5", "0.9", "rel.xpl");
    assert_eq!(draw(&format!("@{:.6}", first + 0.5), &format!("@{:.6}", first + 0.9), "abs.xpl"), rel);
    assert_eq!(draw("+0.5", "+900ms", "off.xpl"), rel);
    let iso = |s: f64| {
        let ns = ((first + s) * 1e6).round() as i64 * 1000;
        jiff::Timestamp::from_nanosecond(ns as i128).unwrap().to_string()
    };
    assert_eq!(draw(&iso(0.5), &iso(0.9), "iso.xpl"), rel);
    assert_ne!(draw("0.4", "0.9", "other.xpl"), rel, "a different window draws something else");
    let o = run(&["plot", t, "-c", "1", "--from", "0.9", "--to", "0.5"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("--to must be after --from"));
}

/// `--abs-seq` reads --seq-from/--seq-to as wire sequence numbers (as `print` shows them).
#[test]
fn absolute_sequence_limits_match_relative_ones() {
    let trace = data_dir().join("loss-snd.pcap");
    let t = trace.to_str().unwrap();
    let out = run(&["print", t, "--json"]);
    let syn: serde_json::Value = serde_json::from_slice(out.stdout.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(syn["flags"], "S");
    let base = syn["seq"].as_u64().unwrap() + 1; // the first payload byte
    let dir = tempdir("plot-abs-seq");
    let draw = |args: &[&str], name: &str| {
        let path = dir.join(name);
        let mut a = vec!["plot", t, "-c", "1", "-o", path.to_str().unwrap()];
        a.extend_from_slice(args);
        let o = run(&a);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(path).unwrap()
    };
    let rel = draw(&["--seq-from", "25000", "--seq-to", "60000"], "rel.xpl");
    let (lo, hi) = ((base + 25000) % (1 << 32), (base + 60000) % (1 << 32));
    assert_eq!(draw(&["--abs-seq", "--seq-from", &lo.to_string(), "--seq-to", &hi.to_string()], "abs.xpl"), rel);
    assert_ne!(draw(&["--seq-from", &lo.to_string(), "--seq-to", &hi.to_string()], "wrong.xpl"), rel);
}

//! Issue 17, "Pictures": what a new user saw wrong in the SVG plots of the project's own trace
//! (`tests/data/loss-snd.pcap`, a 1 MiB transfer over a 20 ms path), held against `stats`.

mod util;

use util::*;

fn loss() -> String {
    data_dir().join("loss-snd.pcap").to_str().unwrap().to_string()
}

/// Runs `tcpscope plot` with `args` into `name` under a fresh directory; returns the SVG.
fn plot(name: &str, args: &[&str]) -> String {
    let d = tempdir(&format!("i17p-{name}"));
    let out = d.join(format!("{name}.svg"));
    let mut a = vec!["plot"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", out.to_str().unwrap()]);
    let o = run(&a);
    assert!(o.status.success(), "{a:?}: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

/// The value of attribute `name` in the tag text `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let pat = format!(" {name}=\"");
    let i = tag.find(&pat)? + pat.len();
    Some(&tag[i..i + tag[i..].find('"')?])
}

/// Every `<text ...>content</text>` of `svg`: (tag, content).
fn texts(svg: &str) -> Vec<(&str, &str)> {
    svg.match_indices("<text")
        .map(|(i, _)| {
            let tag_end = i + svg[i..].find('>').unwrap();
            let end = tag_end + svg[tag_end..].find("</text>").unwrap();
            (&svg[i..tag_end], &svg[tag_end + 1..end])
        })
        .collect()
}

/// The y axis' tick labels (right-aligned at the left margin), as numbers.
fn y_ticks(svg: &str) -> Vec<f64> {
    let labels = &svg[svg.find(r#"<g class="labels""#).unwrap()..];
    texts(labels)
        .iter()
        .filter(|(t, _)| attr(t, "text-anchor") == Some("end"))
        .filter_map(|(_, v)| v.parse().ok())
        .collect()
}

fn stats_a2b() -> serde_json::Value {
    json(&["stats", &loss()])["connections"][0]["a2b"].clone()
}

#[test]
fn i17_tsg_scales_to_the_data_and_marks_the_window_line_leaving_the_top() {
    let svg = plot("tsg", &[&loss(), "-c", "1"]);
    // The data: 1048576 unique bytes (stats), the last one at offset 1048575, the FIN one
    // above. The advertised window reaches about 2.5 MB above the ack: before, it set the top
    // and the data filled the lower 40 %.
    let unique = stats_a2b()["unique_bytes"].as_u64().unwrap() as f64;
    let top = y_ticks(&svg).into_iter().fold(f64::MIN, f64::max);
    assert!(top >= 0.9 * unique && top <= 1.1 * unique, "highest y tick {top} for {unique} bytes of data");
    // The window line leaves the top: an arrow and "window ↑", its legend entry, a remark.
    let above = svg.find(r#"<g class="win above""#).expect("a win above mark");
    assert!(svg[above..].contains("window ↑"));
    assert!(svg.contains("window line above the top"), "legend");
    assert!(svg.contains("the window line leaves the top from"), "remark");
    // The window line is still drawn (clipped at the top edge).
    assert!(svg.contains(r#"<g class="win step""#));
    // Zoomed in on data under the window: no mark claims the window leaves the top unless it does.
    let low = plot("tsg-seq", &[&loss(), "-c", "1", "--seq-from", "0", "--seq-to", "5000000"]);
    assert!(!low.contains("win above"));
}

#[test]
fn i17_labels_at_the_edges_stay_inside_the_plot_area() {
    // The SYN at time 0 sits on the left edge, the FIN and the last retransmission on the right
    // one. The plot area is x 84 .. width − 24 (plot::svg's margins); a 10 px sans-serif
    // character is at most 6 px wide.
    for width in [1200u32, 600] {
        let w = width.to_string();
        let svg = plot(&format!("edges-{width}"), &[&loss(), "-c", "1", "--width", &w]);
        let marks = &svg[svg.find(r#"<g class="marks""#).unwrap()..svg.find(r#"<g class="legend""#).unwrap()];
        let (left, right) = (84.0, width as f64 - 24.0);
        let mut seen_syn = false;
        for (tag, content) in texts(marks) {
            let x: f64 = attr(tag, "x").unwrap().parse().unwrap();
            let wide = 6.0 * content.chars().count() as f64;
            let (lo, hi) = match attr(tag, "text-anchor").unwrap() {
                "start" => (x, x + wide),
                "end" => (x - wide, x),
                _ => (x - wide / 2.0, x + wide / 2.0),
            };
            assert!(lo >= left && hi <= right, "{width}: {content:?} spans {lo:.1}..{hi:.1}, the area {left}..{right}");
            seen_syn |= content == "SYN";
        }
        assert!(seen_syn, "the SYN is labelled");
    }
}

#[test]
fn i17_the_aggregation_footnote_says_what_a_column_is() {
    // 300 px: far fewer columns than segments.
    let svg = plot("agg", &[&loss(), "-c", "1", "--width", "300"]);
    let remark = texts(&svg).into_iter().find(|(t, _)| attr(t, "class") == Some("remark")).unwrap().1.to_string();
    let (n, rest) = remark.split_once(' ').unwrap();
    assert!(n.parse::<u64>().unwrap() > 192, "{remark}");
    // 300 px less the margins (84 + 24): 192 columns.
    assert!(rest.starts_with("new segments, too many to draw one by one: each of the 192 pixel columns"), "{remark}");
    assert!(remark.contains("pixel columns shows the range its segments cover"), "{remark}");
    assert!(!remark.contains("drawn per pixel column"), "{remark}");
}

#[test]
fn i17_tput_window_comes_from_the_duration_and_rtt_and_every_rate_is_on_scale() {
    let a2b = stats_a2b();
    // The lowest RTT of a's data, either kind (stats), and the connection's duration.
    let rtt_ms = a2b["rtt_min_ms"].as_f64().unwrap().min(a2b["rtt_ts_min_ms"].as_f64().unwrap());
    let duration_s = json(&["stats", &loss()])["connections"][0]["duration_s"].as_f64().unwrap();
    // A whole number of RTTs, at least 2 and at least 1/50 of the duration: 2 × 20.1 ms here.
    let n = (duration_s / 50.0 / (rtt_ms / 1e3)).ceil().max(2.0);
    let want = format!("{:.3}", n * rtt_ms);
    let want = want.trim_end_matches('0').trim_end_matches('.');
    let svg = plot("tput", &[&loss(), "-c", "1", "-k", "tput"]);
    assert!(svg.contains(&format!("throughput, {want} ms moving average")), "window {want} ms:\n{svg:.0}");
    assert!(svg.contains("chosen from the duration"), "remark");
    // Every one of the 736 instantaneous rates (737 data packets) on the plot, none off scale.
    let rates = a2b["data_packets"].as_u64().unwrap() as usize - 1;
    let marks = &svg[svg.find(r#"<g class="marks""#).unwrap()..];
    let dots = marks.matches(r#"<g class="tput inst""#).count() + marks.matches(r#"<g class="tput rexmit""#).count();
    assert_eq!(dots, rates);
    assert!(!marks.contains("tput inst over"));
    assert!(svg.contains("rate (bit/s, log scale)"));
    // --window is taken as given, without the remark.
    let given = plot("tput-1s", &[&loss(), "-c", "1", "-k", "tput", "--window", "1"]);
    assert!(given.contains("throughput, 1 s moving average") && !given.contains("chosen from the duration"));
}

#[test]
fn i17_legends_show_the_marks_as_drawn() {
    // ssize and rtt draw hollow diamonds (and boxes): the legend showed filled ones.
    for (kind, marks) in [("ssize", "ssize rexmit"), ("rtt", "rtt karn")] {
        let svg = plot(kind, &[&loss(), "-c", "1", "-k", kind]);
        let g = &svg[svg.find(&format!(r#"<g class="{marks}""#)).expect(marks)..];
        let g = &g[..g.find("</g>").unwrap()];
        assert!(g.contains("<path") && !g.contains("fill=\""), "{kind}: the mark is an outline: {g}");
        let legend = &svg[svg.find(r#"<g class="legend""#).unwrap()..];
        assert!(legend.contains("◇") && !legend.contains("◆") && !legend.contains("■"), "{kind}: {legend}");
    }
}

//! Issue 17, "The first hour of a new user": the exit statuses (docs/cli.md#exit-status), the
//! error messages, the empty-window rule, `-r FILE` and the help texts, as a new user meets them.

mod util;

use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};

use util::*;

fn loss() -> String {
    data_dir().join("loss-snd.pcap").to_str().unwrap().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every command that reads traces, with what it needs besides the trace.
fn commands(out: &std::path::Path) -> Vec<Vec<String>> {
    let o = |name: &str| out.join(name).to_str().unwrap().to_string();
    vec![
        vec!["conns".into()],
        vec!["stats".into()],
        vec!["screen".into()],
        vec!["print".into()],
        vec!["plot".into(), "-c".into(), "1".into(), "-o".into(), o("p.svg")],
        vec!["report".into(), "-o".into(), o("r.html")],
        vec!["view".into(), "--no-open".into()],
    ]
}

fn run_with(cmd: &[String], trace: &str, extra: &[&str]) -> Output {
    let mut args: Vec<&str> = cmd.iter().map(String::as_str).collect();
    args.push(trace);
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn i17_a_missing_file_exits_1_from_every_command_with_nothing_on_stdout() {
    let d = tempdir("i17-missing");
    for cmd in commands(&d) {
        let out = run_with(&cmd, "/nonexistent/x.pcap", &[]);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {e}");
        assert!(e.contains("/nonexistent/x.pcap"), "{cmd:?} does not name the file: {e}");
        // No empty table header (conns, screen, print did print one).
        assert!(out.stdout.is_empty(), "{cmd:?} printed {:?}", String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn i17_a_file_that_is_not_a_capture_exits_1_everywhere() {
    let d = tempdir("i17-notcap");
    let f = d.join("notes.txt");
    std::fs::write(&f, b"not a capture\n").unwrap();
    for cmd in commands(&d) {
        let out = run_with(&cmd, f.to_str().unwrap(), &[]);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{cmd:?} printed {:?}", String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn i17_usage_errors_exit_2_from_every_command() {
    let d = tempdir("i17-usage");
    let t = loss();
    for cmd in commands(&d) {
        let out = run_with(&cmd, &t, &["--no-such-flag"]);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", stderr(&out));
    }
    // A window that ends before it starts: a usage error, wherever a window is taken.
    for cmd in commands(&d) {
        let extra: &[&str] =
            if cmd[0] == "plot" { &["--from", "1", "--to", "0.5"] } else { &["--from", "+1s", "--to", "+0.5s"] };
        let out = run_with(&cmd, &t, extra);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{cmd:?}");
    }
    // A connection the input does not have: a usage error, wherever -c is taken.
    for cmd in [&["conns"][..], &["stats"], &["screen"], &["print"], &["plot", "-o", "/dev/null"]] {
        let mut args = cmd.to_vec();
        args.extend_from_slice(&[&t, "-c", "9"]);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("no connection 9"), "{cmd:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{cmd:?}");
    }
}

#[test]
fn i17_an_empty_time_window_is_one_error_everywhere() {
    // The trace lasts 1.72 s: a window from 100 s on has no packet, in every command.
    let d = tempdir("i17-window");
    let t = loss();
    for cmd in commands(&d) {
        let extra: &[&str] = if cmd[0] == "plot" { &["--from", "100"] } else { &["--from", "+100s"] };
        let out = run_with(&cmd, &t, extra);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {e}");
        assert!(e.contains("no packets from"), "{cmd:?}: {e}");
        assert!(out.stdout.is_empty(), "{cmd:?} printed {:?}", String::from_utf8_lossy(&out.stdout));
    }
    // The issue's case: plot --from 5 --to 6 past the connection's end wrote an empty plot.
    let svg = d.join("late.svg");
    let out = run(&["plot", &t, "-c", "1", "--from", "5", "--to", "6", "-o", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("connection 1 has no packets from 5 s to 6 s"), "{}", stderr(&out));
    assert!(!svg.exists(), "no empty plot is written");
    // A window that overlaps the connection still draws.
    let out = run(&["plot", &t, "-c", "1", "--from", "1.5", "--to", "6", "-o", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn i17_an_empty_directory_is_named_once() {
    let d = tempdir("i17-emptydir");
    let empty = d.join("emptydir");
    std::fs::create_dir_all(&empty).unwrap();
    let e = empty.to_str().unwrap();
    for cmd in commands(&d) {
        let out = run_with(&cmd, e, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
        let line = err.lines().find(|l| l.contains("no capture files")).unwrap_or_else(|| panic!("{cmd:?}: {err}"));
        assert_eq!(line.matches(e).count(), 1, "{cmd:?}: the path is said once: {line}");
    }
}

#[test]
fn i17_report_names_the_output_it_cannot_write_before_reading() {
    let out = run(&["report", &loss(), "-o", "/nonexistent/dir/r.html"]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("/nonexistent/dir/r.html") && e.contains("no directory /nonexistent/dir"), "{e}");
    // A directory that exists but cannot be written (a file in place of the directory).
    let d = tempdir("i17-report-out");
    let blocker = d.join("file");
    std::fs::write(&blocker, b"").unwrap();
    let out = run(&["report", &loss(), "-o", blocker.join("r.html").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(blocker.join("r.html").to_str().unwrap()), "{}", stderr(&out));
}

#[test]
fn i17_report_counts_in_words() {
    let d = tempdir("i17-report-one");
    let r = d.join("r.html");
    let out = run(&["report", &loss(), "-o", r.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(": 1 connection, plots of 1"), "{text}");
}

#[test]
fn i17_view_on_a_busy_port_names_the_port_and_suggests_port() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let out = run(&["view", &loss(), "--no-open", "--port", &port]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains(&format!("127.0.0.1:{port}")) && e.contains("in use") && e.contains("--port"), "{e}");
}

#[test]
fn i17_a_browser_that_does_not_open_is_said_in_words() {
    // A PATH whose only launcher is an xdg-open that fails with status 3 (its "tool not found").
    let d = tempdir("i17-browser");
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let launcher = bin.join("xdg-open");
    std::fs::write(&launcher, "#!/bin/sh\nexit 3\n").unwrap();
    std::fs::set_permissions(&launcher, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut child = tcpscope()
        .args(["view", &loss()])
        .env("PATH", &bin)
        .env_remove("BROWSER")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.find_map(|l| l.ok().filter(|l| l.contains("browser"))).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("could not open a browser: xdg-open exited with status 3"), "{line}");
    assert!(!line.contains("ExitStatus"), "{line}");
}

#[test]
fn i17_r_file_reads_like_the_positional_trace() {
    let t = loss();
    for cmd in [&["conns"][..], &["stats", "--json"], &["screen", "--all"], &["print", "--json"]] {
        let positional = run(&[cmd, &[t.as_str()]].concat());
        let dash_r = run(&[cmd, &["-r", t.as_str()]].concat());
        assert!(positional.status.success() && dash_r.status.success(), "{cmd:?}: {}", stderr(&dash_r));
        assert!(!positional.stdout.is_empty());
        assert_eq!(positional.stdout, dash_r.stdout, "{cmd:?}");
    }
    let d = tempdir("i17-r");
    let (a, b) = (d.join("a.svg"), d.join("b.svg"));
    assert!(run(&["plot", &t, "-c", "1", "-o", a.to_str().unwrap()]).status.success());
    assert!(run(&["plot", "-r", &t, "-c", "1", "-o", b.to_str().unwrap()]).status.success());
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // -r and a positional trace in plot (one trace) is a usage error; no trace at all too.
    assert_eq!(run(&["plot", "-r", &t, &t, "-c", "1"]).status.code(), Some(2));
    assert_eq!(run(&["conns"]).status.code(), Some(2));
    // `ttcp -r` keeps its meaning (receive): it is not a trace there.
    let help = String::from_utf8_lossy(&run(&["ttcp", "--help"]).stdout).into_owned();
    assert!(help.contains("-r"), "{help}");
}

#[test]
fn i17_help_texts_fit_and_say_the_right_thing() {
    let mut subs = vec![vec![]];
    for c in ["conns", "stats", "screen", "plot", "view", "report", "print", "monitor", "lab", "ttcp"] {
        subs.push(vec![c]);
    }
    for sub in subs {
        for flag in ["-h", "--help"] {
            let out = run(&[&sub[..], &[flag]].concat());
            assert!(out.status.success(), "{sub:?} {flag}");
            let text = String::from_utf8_lossy(&out.stdout);
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(widest <= 100, "{sub:?} {flag}: a line of {widest} characters");
        }
    }
    let report = String::from_utf8_lossy(&run(&["report", "--help"]).stdout).into_owned();
    assert!(!report.contains("served"), "report serves nothing: {report}");
    let view = String::from_utf8_lossy(&run(&["view", "--help"]).stdout).into_owned();
    assert!(!view.contains("[default: 0]"), "{view}");
    assert!(view.contains("serves only the TRACEs"), "{view}");
}

#[test]
fn i17_stats_shows_dates_and_clock_times_utc_or_local_and_json_keeps_epoch() {
    let t = loss();
    // The trace's first packet is at 1795306570.849758 s since the epoch (its JSON); as a date:
    // `date -u -d @1795306570.849758` says 2026-11-22 00:16:10.849758, and TZ=Asia/Tokyo
    // (UTC+9, no daylight saving) 09:16:10.
    let doc = json(&["stats", &t]);
    assert!((doc["connections"][0]["first_time"].as_f64().unwrap() - 1795306570.849758).abs() < 1e-6);
    let out = tcpscope().env("TZ", "Asia/Tokyo").args(["stats", &t]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("first packet 2026-11-22 00:16:10.849758 UTC  last packet 00:16:12.573489"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("  first_time") && l.contains("00:16:10.849758")), "{text}");
    assert!(!text.contains("1795306570"), "no epoch seconds in the text: {text}");
    let out = tcpscope().env("TZ", "Asia/Tokyo").args(["stats", "--local", &t]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("first packet 2026-11-22 09:16:10.849758 JST  last packet 09:16:12.573489"), "{text}");
    // JSON and CSV keep epoch seconds, --local or not.
    let out = tcpscope().env("TZ", "Asia/Tokyo").args(["stats", "--local", "--json", &t]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((doc["connections"][0]["first_time"].as_f64().unwrap() - 1795306570.849758).abs() < 1e-6);
}

/// One rule for times of day (docs/cli.md#times-shown): every command shows and reads them in
/// UTC, or in the local zone with `--local`; print included (it used to show local times
/// always, and read `--from 00:16:11` in the local zone).
#[test]
fn i17_every_command_shows_and_reads_times_in_utc_or_local_with_local() {
    let t = loss();
    let tokyo = |args: &[&str]| {
        let out = tcpscope().env("TZ", "Asia/Tokyo").args(args).output().unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // The first packet: 00:16:10.849758 UTC, 09:16:10.849758 in Tokyo.
    let (text, _) = tokyo(&["print", &t, "--for", "0.001"]);
    assert!(text.lines().nth(1).is_some_and(|l| l.starts_with("00:16:10.849758\t")), "{text}");
    let (text, _) = tokyo(&["print", "--local", &t, "--for", "0.001"]);
    assert!(text.lines().nth(1).is_some_and(|l| l.starts_with("09:16:10.849758\t")), "{text}");
    // A clock time in --from is read in the zone shown: the same packets either way.
    let (utc, _) = tokyo(&["print", &t, "--from", "00:16:11", "--for", "0.1"]);
    let (local, _) = tokyo(&["print", "--local", &t, "--from", "09:16:11", "--for", "0.1"]);
    assert!(utc.lines().count() > 2, "{utc}");
    let cols = |s: &str| s.lines().skip(1).map(|l| l.split_once('\t').unwrap().1.to_string()).collect::<Vec<_>>();
    assert_eq!(cols(&utc), cols(&local));
    assert!(utc.lines().nth(1).unwrap().starts_with("00:16:11."), "{utc}");
    // Every command takes --local, and its window messages say times in its zone.
    for cmd in ["conns", "stats", "screen", "print"] {
        let (_, err) = tokyo(&[cmd, &t, "--from", "+100s"]);
        assert!(err.contains("its first packet is at 00:16:10.849758"), "{cmd}: {err}");
        let (_, err) = tokyo(&[cmd, "--local", &t, "--from", "+100s"]);
        assert!(err.contains("its first packet is at 09:16:10.849758"), "{cmd} --local: {err}");
    }
    let dir = std::env::temp_dir().join(format!("tcpscope-i17-zone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("p.svg");
    let svg = svg.to_str().unwrap();
    // plot's absolute --from: 00:16:11 UTC is 0.150242 s into the connection, as 09:16:11 local.
    for args in [
        &["plot", &t, "-c", "1", "--from", "00:16:11", "-o", svg][..],
        &["plot", "--local", &t, "-c", "1", "--from", "09:16:11", "-o", svg],
    ] {
        let out = tcpscope().env("TZ", "Asia/Tokyo").args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = tcpscope()
        .env("TZ", "Asia/Tokyo")
        .args(["plot", &t, "-c", "1", "--from", "09:16:11", "-o", svg])
        .output()
        .unwrap();
    assert!(!out.status.success(), "09:16:11 UTC is hours after the connection");
    let html = dir.join("r.html");
    let out = tcpscope()
        .env("TZ", "Asia/Tokyo")
        .args(["report", "--local", &t, "--from", "09:16:11", "-o", html.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn i17_a_payload_cut_by_the_snaplen_is_said_to_be_normal() {
    // loss-snd.pcap was recorded with a 128-byte snaplen (tests/data/README.md): its 737 data
    // segments are all cut.
    let out = run(&["stats", &loss()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("737 segments with the payload cut by the snaplen (normal for header-only captures)"),
        "{text}"
    );
    assert!(!text.contains("truncated_payload"), "{text}");
}

/// A download as a new user meets it: a sends a 100-byte request, b answers with 4 segments of
/// 1000 bytes. b→a carries the data.
fn download() -> Vec<u8> {
    use tcpscope_core::testutil::{Pkt, flag::*, opt, pcap};
    let (a, b) = ([10, 2, 0, 1], [10, 2, 0, 2]);
    let p = |ms: u64, from_a: bool, flags: u8, seq: u32, ack: u32, len: u16, opts: Vec<u8>| Pkt {
        ts_ns: 1_700_000_000_000_000_000 + ms * 1_000_000,
        src: if from_a { a } else { b },
        dst: if from_a { b } else { a },
        sport: if from_a { 40000 } else { 80 },
        dport: if from_a { 80 } else { 40000 },
        seq,
        ack,
        flags,
        win: 1000,
        len,
        opts,
        snap: None,
    };
    let mut pk = vec![
        p(0, true, SYN, 100, 0, 0, opt::mss(1460)),
        p(10, false, SYN | ACK, 500, 101, 0, opt::mss(1460)),
        p(20, true, ACK, 101, 501, 0, vec![]),
        p(21, true, ACK | PSH, 101, 501, 100, vec![]),
    ];
    for i in 0..4u32 {
        pk.push(p(31 + u64::from(i), false, ACK, 501 + i * 1000, 201, 1000, vec![]));
    }
    pk.push(p(45, true, ACK, 201, 4501, 0, vec![]));
    pcap(&pk, false, false)
}

#[test]
fn i17_plot_shows_the_direction_with_the_most_data_by_default() {
    let d = tempdir("i17-dir");
    let f = d.join("download.pcap");
    std::fs::write(&f, download()).unwrap();
    let f = f.to_str().unwrap();
    // The default output name says the direction chosen.
    let out = tcpscope().current_dir(&d).args(["plot", f, "-c", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let auto = std::fs::read_to_string(d.join("tsg-1-b2a.svg")).expect("tsg-1-b2a.svg written");
    assert!(auto.contains("connection 1 b2a: 10.2.0.2:80 → 10.2.0.1:40000"), "title names b2a");
    assert!(auto.contains("the direction with the most data"), "title says why");
    // Asked for, a direction is drawn as asked and the title does not claim a choice.
    let asked = d.join("asked.svg");
    assert!(run(&["plot", f, "-c", "1", "--dir", "b2a", "-o", asked.to_str().unwrap()]).status.success());
    let asked = std::fs::read_to_string(&asked).unwrap();
    assert!(!asked.contains("the direction with the most data"));
    assert_eq!(auto.replace(" · the direction with the most data", ""), asked, "the same plot as --dir b2a");
    let a2b = d.join("a2b.svg");
    assert!(run(&["plot", f, "-c", "1", "--dir", "a2b", "-o", a2b.to_str().unwrap()]).status.success());
    assert!(std::fs::read_to_string(&a2b).unwrap().contains("connection 1 a2b"));
    // Every kind takes the default; each title names b2a.
    for kind in ["rtt", "tput", "flight", "ssize", "burst", "dupack"] {
        let o = d.join(format!("{kind}.svg"));
        let out = run(&["plot", f, "-c", "1", "-k", kind, "-o", o.to_str().unwrap()]);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let svg = std::fs::read_to_string(&o).unwrap();
        assert!(svg.contains("b2a") && svg.contains("the direction with the most data"), "{kind}");
    }
}

/// `view --correlate` needs two captures (a usage error, 2), and a capture that cannot be read
/// is said once, not again by the correlation (1).
#[test]
fn view_correlate_says_what_it_needs_once() {
    let out = run(&["view", "--correlate", "--no-open", &loss()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--correlate needs two or more captures"), "{}", stderr(&out));
    let out = run(&["view", "--correlate", "--no-open", &loss(), "/nonexistent/x.pcap"]);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert_eq!(e.matches("/nonexistent/x.pcap").count(), 1, "{e}");
    assert!(e.contains("every capture must be readable"), "{e}");
    assert!(out.stdout.is_empty());
}

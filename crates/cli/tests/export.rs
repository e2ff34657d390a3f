//! `tcpscope export`: a file per table in each format, the CSV header the documented columns,
//! and the exit statuses of docs/cli.md.

mod util;

use util::*;

#[test]
fn writes_one_file_per_table_in_each_format() {
    let trace = data_dir().join("loss-snd.pcap");
    let trace = trace.to_str().unwrap();
    for format in ["parquet", "arrow", "csv"] {
        let dir = tempdir(&format!("export-{format}"));
        let out = run(&["export", trace, "-o", dir.to_str().unwrap(), "--format", format]);
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        for table in ["connections", "events", "segments", "rtt"] {
            let f = dir.join(format!("{table}.{format}"));
            assert!(std::fs::metadata(&f).map(|m| m.len() > 0).unwrap_or(false), "{}", f.display());
        }
        if format == "csv" {
            let text = std::fs::read_to_string(dir.join("connections.csv")).unwrap();
            let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
            assert_eq!(&header[..4], ["id", "file", "input", "conn"]);
            assert!(header.contains(&"dir") && header.contains(&"rexmit_packets"));
            // One row per connection and direction.
            assert_eq!(text.lines().count(), 1 + 2);
            let segs = std::fs::read_to_string(dir.join("segments.csv")).unwrap();
            let stats = json(&["stats", trace]);
            assert_eq!(segs.lines().count() as u64 - 1, total(&stats, "packets"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn exit_statuses() {
    let dir = tempdir("export-status");
    let d = dir.to_str().unwrap();
    let trace = data_dir().join("loss-snd.pcap");
    let code = |args: &[&str]| run(args).status.code();
    assert_eq!(code(&["export", "/nonexistent/x.pcap", "-o", d]), Some(1));
    assert_eq!(code(&["export", trace.to_str().unwrap(), "-o", d, "--tables", "nope"]), Some(2));
    assert_eq!(code(&["export", trace.to_str().unwrap(), "-o", d, "--json"]), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

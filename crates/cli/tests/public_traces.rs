//! Every public trace (`../shared/traces/public`, skipped when absent) is read without failure,
//! its packet count matches the MANIFEST (counted by tshark), and the byte counts are conserved.

mod util;

use util::*;

#[test]
#[cfg_attr(no_public_traces, ignore = "../shared/traces/public is absent")]
fn every_public_trace_is_read_and_conserves_bytes() {
    let Some(dir) = public_traces() else {
        eprintln!("skipping: ../shared/traces/public is absent");
        return;
    };
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut lines = manifest.lines();
    let head: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (file_col, pkts_col) = (col("file"), col("packets"));
    let mut checked = 0;
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        let path = dir.join(f[file_col]);
        if !path.exists() {
            continue;
        }
        let out = run(&["stats", "--json", path.to_str().unwrap()]);
        assert!(out.status.success(), "{}: {}", f[file_col], String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["files"][0]["packets"].as_u64().unwrap().to_string(), f[pkts_col], "{}: packets", f[file_col]);
        for c in doc["connections"].as_array().unwrap() {
            for d in ["a2b", "b2a"] {
                let x = &c[d];
                let n = |k: &str| x[k].as_u64().unwrap();
                assert_eq!(
                    n("unique_bytes") + n("rexmit_bytes") + n("zero_window_probe_bytes"),
                    n("payload_bytes"),
                    "{} conn {} {d}: unique + retransmitted + probe bytes = payload bytes",
                    f[file_col],
                    c["id"]
                );
                assert!(n("data_packets") <= n("packets"));
                assert!(n("rexmit_packets") <= n("packets"));
            }
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} traces checked");
}

//! Damaged captures on the command line (issue 18): every command that reads traces says the
//! damage in the same words (and `-q` quiets it, `--json` keeps it), and `repair` writes records
//! identical to the original's, which tcpscope, tcpdump and tshark read back.

mod util;

use std::path::{Path, PathBuf};

use tcpscope_core::capture::CaptureReader;
use util::{data_dir, have, run, tempdir};

/// (time, captured bytes, original length) of every record of a capture.
type Rec = (u64, Vec<u8>, u32);

fn records(path: &Path) -> (Vec<Rec>, Vec<u64>) {
    let mut r = CaptureReader::open(path).unwrap();
    let (mut recs, mut offsets) = (Vec::new(), Vec::new());
    while let Some(rec) = r.next_record().unwrap() {
        recs.push((rec.ts_ns, rec.data.to_vec(), rec.orig_len));
        offsets.push(rec.offset);
    }
    (recs, offsets)
}

/// A copy of `randloss-snd.pcap` whose 20th record has a captured length no record can have.
fn damaged_copy(dir: &Path) -> PathBuf {
    let src = data_dir().join("randloss-snd.pcap");
    let (_, offsets) = records(&src);
    let mut bytes = std::fs::read(&src).unwrap();
    let at = offsets[19] as usize + 8;
    bytes[at..at + 4].copy_from_slice(&[0xff; 4]);
    let out = dir.join("damaged.pcap");
    std::fs::write(&out, bytes).unwrap();
    out
}

fn stderr_lines(args: &[&str]) -> Vec<String> {
    let out = run(args);
    assert!(out.status.success(), "tcpscope {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).lines().map(str::to_string).collect()
}

#[test]
fn every_command_says_the_damage_alike_and_q_quiets_it() {
    let dir = tempdir("damage-lines");
    let trace = damaged_copy(&dir);
    let t = trace.to_str().unwrap();
    let said = stderr_lines(&["stats", t]);
    let damage: Vec<&String> = said.iter().filter(|l| l.contains(" corrupt (")).collect();
    assert_eq!(damage.len(), 1, "stats: {said:?}");
    assert!(damage[0].starts_with(&format!("tcpscope: {t}: bytes ")), "{}", damage[0]);
    let (svg, html) = (dir.join("p.svg"), dir.join("r.html"));
    let (svg, html) = (svg.to_str().unwrap(), html.to_str().unwrap());
    let commands: [&[&str]; 6] = [
        &["conns", t],
        &["screen", t],
        &["print", t],
        &["plot", t, "-c", "1", "-o", svg],
        &["report", t, "-o", html],
        &["stats", "--csv", t],
    ];
    for args in commands {
        let lines = stderr_lines(args);
        assert!(lines.contains(damage[0]), "{args:?} does not say {:?}: {lines:?}", damage[0]);
        let mut quiet = args.to_vec();
        quiet.push("-q");
        let lines = stderr_lines(&quiet);
        assert!(!lines.iter().any(|l| l.contains(" corrupt (")), "{quiet:?} still says the damage: {lines:?}");
    }
    // --json -q: the damage is in the file summary, not on stderr.
    let out = run(&["stats", t, "--json", "-q"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains(" corrupt ("));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &doc["files"][0]["damaged"];
    assert_eq!(d.as_array().map(Vec::len), Some(1), "{doc}");
    assert!(damage[0].contains(&format!("bytes {}..{} corrupt", d[0]["start"], d[0]["end"])), "{d}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Packets tool `cmd` (tcpdump or tshark, `-r FILE`) reads from a file: its output's lines.
fn read_by(cmd: &str, path: &Path) -> Option<usize> {
    if !have(cmd) {
        eprintln!("skipping the {cmd} check: {cmd} is not installed (make test installs it)");
        return None;
    }
    let out = std::process::Command::new(cmd).arg("-n").arg("-r").arg(path).output().unwrap();
    assert!(out.status.success(), "{cmd} -r {}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).lines().count())
}

#[test]
fn repair_writes_the_original_records_which_other_tools_read() {
    let dir = tempdir("repair");
    let (original, _) = records(&data_dir().join("randloss-snd.pcap"));
    let damaged = damaged_copy(&dir);
    let (read_damaged, _) = records(&damaged);
    let out = dir.join("repaired.pcap");
    let o = run(&["repair", damaged.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(" corrupt ("), "{err}");
    assert!(err.contains(&format!("wrote {} records", read_damaged.len())), "{err}");
    let (repaired, _) = records(&out);
    // What tcpscope read of the damaged file, nothing else, each record byte-identical to one
    // of the original's, in order; only the damaged record and those its damage hid are lost.
    assert_eq!(repaired, read_damaged);
    let mut it = original.iter();
    for r in &repaired {
        assert!(it.any(|o| o == r), "a repaired record is not one of the original's, in order: {r:?}");
    }
    let lost = original.len() - repaired.len();
    assert!((1..=4).contains(&lost), "{lost} records lost of {}", original.len());
    for tool in ["tcpdump", "tshark"] {
        if let Some(n) = read_by(tool, &out) {
            assert_eq!(n, repaired.len(), "{tool} reads a different number of packets");
        }
    }
    // An intact file comes out with the same records.
    let clean = dir.join("clean.pcap");
    let o = run(&["repair", data_dir().join("randloss-snd.pcap").to_str().unwrap(), clean.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(records(&clean).0, original);
    let _ = std::fs::remove_dir_all(&dir);
}

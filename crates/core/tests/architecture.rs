//! The shape of the code, held by a test: front ends (the CLI, the viewer, and any crate beside
//! them) run the engine through `pass::Query`, never an `Analyzer` of their own, so the choice
//! of strategy (threads, shards, merge, windows) is made in one place.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_front_end_runs_an_analyzer() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for c in std::fs::read_dir(&crates).unwrap() {
        let c = c.unwrap().path();
        if c.file_name().is_some_and(|n| n != "core") && c.join("src").is_dir() {
            rust_files(&c.join("src"), &mut files);
        }
    }
    assert!(files.len() > 10, "front-end sources not found under {}", crates.display());
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.contains("Analyzer") && !line.trim_start().starts_with("//") {
                offenders.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "front ends must run the engine through pass::Query:\n{}", offenders.join("\n"));
}

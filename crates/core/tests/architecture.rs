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

/// The core's modules (each file or folder under `src/`), with the modules each one refers to
/// as `crate::NAME` outside its tests.
fn core_modules() -> Vec<(String, std::collections::BTreeSet<String>)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" || name == "testutil" {
            continue;
        }
        let mut files = Vec::new();
        if p.is_dir() {
            rust_files(&p, &mut files);
        } else {
            files.push(p);
        }
        let mut uses = std::collections::BTreeSet::new();
        for f in files.iter().filter(|f| !f.file_stem().unwrap().to_string_lossy().ends_with("tests")) {
            let text = std::fs::read_to_string(f).unwrap();
            // A file's tests come last, after `#[cfg(test)]`.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                let mut rest = line;
                while let Some(i) = rest.find("crate::") {
                    rest = &rest[i + 7..];
                    let m: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if m != name && !m.is_empty() {
                        uses.insert(m);
                    }
                }
            }
        }
        out.push((name, uses));
    }
    out
}

/// The core's modules form layers: no module refers to one that refers back to it, however
/// indirectly (`flow` and `analysis` once imported each other).
#[test]
fn core_modules_have_no_import_cycle() {
    let modules = core_modules();
    assert!(modules.len() > 10);
    let uses = |m: &str| modules.iter().find(|(n, _)| n == m).map(|(_, u)| u.clone()).unwrap_or_default();
    for (name, _) in &modules {
        // Everything `name` reaches: it must not reach itself.
        let (mut seen, mut todo) = (std::collections::BTreeSet::new(), vec![name.clone()]);
        let mut path = std::collections::BTreeMap::new();
        while let Some(m) = todo.pop() {
            for next in uses(&m) {
                if seen.insert(next.clone()) {
                    path.insert(next.clone(), m.clone());
                    todo.push(next);
                }
            }
        }
        if seen.contains(name) {
            let mut cycle = vec![name.clone()];
            let mut at = path[name].clone();
            while &at != name && cycle.len() < 20 {
                cycle.push(at.clone());
                at = path[&at].clone();
            }
            cycle.push(name.clone());
            cycle.reverse();
            panic!("import cycle among core modules: {}", cycle.join(" → "));
        }
    }
}

//! Embeds the built viewer (`web/dist/index.html`, one self-contained file). `make build` builds
//! it first; on a fresh clone with only `cargo build`, this runs the same npm build once, and
//! fails with a message saying what to install when npm is missing.

use std::path::Path;
use std::process::Command;

fn main() {
    // Read when the script runs, not baked in when it is compiled: a target directory shared
    // by two checkouts reuses the compiled script, which must then look in the right one.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let web = Path::new(&manifest).join("../../web");
    let dist = web.join("dist/index.html");
    println!("cargo:rerun-if-changed={}", dist.display());
    if dist.exists() {
        return;
    }
    let run = |args: &[&str]| {
        Command::new("npm")
            .args(args)
            .current_dir(&web)
            .status()
            .map_err(|e| e.to_string())
            .and_then(|s| if s.success() { Ok(()) } else { Err(format!("npm {} failed ({s})", args.join(" "))) })
    };
    // `ci`: exactly the tracked lock file, which it never rewrites (`install` may: a build
    // must leave the clone clean).
    let built = run(&["ci", "--no-audit", "--no-fund"]).and_then(|_| run(&["run", "build"]));
    if let Err(e) = built {
        eprintln!(
            "error: the viewer's assets ({}) are missing and building them failed: {e}.\n\
             Install Node.js and npm, then run `make web` (or `cd web && npm ci && npm run build`).",
            dist.display()
        );
        std::process::exit(1);
    }
}

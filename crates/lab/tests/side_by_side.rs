//! Labs side by side (issue 21): a lab that starts while another runs leaves the other's
//! namespaces alone, and both record every drop of their routers. Needs root, iproute2,
//! nftables, tcpdump (with nflog) and ethtool; without them the test says why and passes
//! without running.

use tcpscope_lab::{experiment, run};

/// A short lossy transfer through the delay forwarder: a few seconds of namespaces.
const EXPERIMENT: &str = r#"
name = "nf21-side"
timeout = 30
[path]
delay = "2ms"
loss = 0.02
reverse_loss = 0.02
[hosts]
cc = "cubic"
[traffic]
length = 16384
count = 64
"#;

fn namespaces(start: &str) -> Vec<String> {
    let out = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(start))
        .map(str::to_string)
        .collect()
}

fn result(dir: &std::path::Path, plan: &experiment::Plan) -> serde_json::Value {
    let f = dir.join(plan.points[0].dir_name()).join("t1").join("result.json");
    serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()
}

/// Lab A records with namespace prefix `nfs21`; once its namespaces exist, lab B starts with
/// prefix `nfs2`, and its sweep of stale namespaces reads A's `nfs21<PID>-…` as `nfs2` followed
/// by PID `1<PID>`, a process that does not run. The namespaces' locks, not that PID, tell it
/// that A runs: A's transfer ends well (before the locks, B deleted A's namespaces under it),
/// and each run's drop record holds as many drops as its router counted.
/// Lab A running `plan` into `dir` on a thread, returned once its namespaces (named `ours`...)
/// exist, while it still runs.
fn running(
    plan: &experiment::Plan,
    dir: &std::path::Path,
    ours: &str,
) -> std::thread::JoinHandle<Result<(usize, usize, usize), String>> {
    let lab = {
        let (plan, dir) = (plan.clone(), dir.to_path_buf());
        std::thread::spawn(move || run::run_plan(&plan, &dir))
    };
    let t = std::time::Instant::now();
    while namespaces(ours).len() < 4 {
        assert!(t.elapsed() < std::time::Duration::from_secs(20), "lab A made no namespaces");
        assert!(!lab.is_finished(), "lab A ended before its namespaces were seen");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    lab
}

#[test]
fn a_lab_starting_beside_another_leaves_its_namespaces_alone() {
    if let Some(why) = run::cannot_run(false) {
        eprintln!("SKIPPED a_lab_starting_beside_another_leaves_its_namespaces_alone: {why}");
        return;
    }
    let tmp = std::env::temp_dir().join(format!("tcpscope-lab-side-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let mut a = experiment::parse(EXPERIMENT).unwrap();
    a.ns_prefix = "nfs21".into();
    let mut b = a.clone();
    b.ns_prefix = "nfs2".into();
    let (dir_a, dir_b) = (tmp.join("a"), tmp.join("b"));
    let ours_a = format!("nfs21{}-", std::process::id());
    let lab_a = running(&a, &dir_a, &ours_a);
    let done_b = run::run_plan(&b, &dir_b).unwrap();
    let done_a = lab_a.join().unwrap().unwrap();
    let (ra, rb) = (result(&dir_a, &a), result(&dir_b, &b));
    assert_eq!(done_a, (1, 0, 0), "lab A: {}", ra["error"]);
    assert_eq!(done_b, (1, 0, 0), "lab B: {}", rb["error"]);
    for r in [&ra, &rb] {
        let router = &r["router"];
        let n = |d: &str| router["drops"].as_array().unwrap().iter().filter(|x| x["dir"] == d).count() as u64;
        assert_eq!(
            (n("a2b"), n("b2a")),
            (router["loss_drops"].as_u64().unwrap(), router["reverse_loss_drops"].as_u64().unwrap())
        );
        assert!(n("a2b") > 0, "no drop recorded: {router}");
    }
    assert!(namespaces(&ours_a).is_empty() && namespaces(&format!("nfs2{}-", std::process::id())).is_empty());
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Set in the copy of this test binary that runs lab B in a PID namespace of its own: the
/// directory to run it into.
const CHILD: &str = "TCPSCOPE_LAB_SIDE_CHILD";

/// Lab A records with namespace prefix `nfp21`; once its namespaces exist, lab B starts with
/// the same prefix in a PID namespace of its own (this test binary again, under `unshare
/// --pid --fork --mount-proc`), as a lab in another sandbox would: A's PID means nothing there
/// (no `/proc/PID`), so its sweep of stale namespaces took A's for a dead lab's and deleted
/// them under its transfer. The namespaces' locks tell it that A runs: both runs end well.
#[test]
fn a_lab_in_another_pid_namespace_leaves_them_alone() {
    let mut a = experiment::parse(EXPERIMENT).unwrap();
    a.ns_prefix = "nfp21".into();
    if let Some(dir) = std::env::var_os(CHILD) {
        // Lab B, in its PID namespace.
        assert_eq!(run::run_plan(&a, std::path::Path::new(&dir)).unwrap(), (1, 0, 0));
        return;
    }
    if let Some(why) = run::cannot_run(false) {
        eprintln!("SKIPPED a_lab_in_another_pid_namespace_leaves_them_alone: {why}");
        return;
    }
    let tmp = std::env::temp_dir().join(format!("tcpscope-lab-pidns-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let (dir_a, dir_b) = (tmp.join("a"), tmp.join("b"));
    let ours_a = format!("nfp21{}-", std::process::id());
    let lab_a = running(&a, &dir_a, &ours_a);
    let b = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "a_lab_in_another_pid_namespace_leaves_them_alone", "--nocapture", "--test-threads", "1"])
        .env(CHILD, &dir_b)
        .output()
        .unwrap();
    let done_a = lab_a.join().unwrap().unwrap();
    let ra = result(&dir_a, &a);
    assert_eq!(done_a, (1, 0, 0), "lab A: {}", ra["error"]);
    assert!(b.status.success(), "lab B: {}", String::from_utf8_lossy(&b.stderr));
    let rb = result(&dir_b, &a);
    assert_eq!((ra["status"].as_str(), rb["status"].as_str()), (Some("ok"), Some("ok")), "{}", rb["error"]);
    assert!(namespaces(&ours_a).is_empty(), "{:?}", namespaces(&ours_a));
    let _ = std::fs::remove_dir_all(&tmp);
}

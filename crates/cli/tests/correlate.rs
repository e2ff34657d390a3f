//! `tcpscope correlate` (issue 21) against recorded ground truth: a connection recorded at the
//! sender, the router and the receiver in network namespaces (`util::record`), with the
//! router's drop counters and the delay forwarder's per-frame log as the truth.

mod util;

use util::record::{self, Recording};

/// Sender → (forwarder, 5 ms each way) → router (2 % random loss each way) → receiver;
/// 1.5 MB in one bulk transfer.
const LOSSY: &str = r#"
name = "c21-lossy"
timeout = 30
[path]
delay = "5ms"
loss = 0.02
reverse_loss = 0.02
[hosts]
cc = "cubic"
[traffic]
length = 16384
count = 96
"#;

fn lossy() -> Option<Recording> {
    record::record("lossy", LOSSY)
}

/// The recording itself: each capture complete (tcpdump dropped nothing, or the run would have
/// failed), the forwarder lost nothing, and the packets missing downstream of the router are
/// exactly the router's drop counters.
#[test]
fn recording_has_its_ground_truth() {
    let Some(rec) = lossy() else { return };
    let (fwd, rev) = rec.router_drops();
    assert!(fwd > 0, "no drops to locate");
    let snd = record::packets(&rec.file("snd.pcap"));
    let rtr = record::packets(&rec.file("rtr.pcap"));
    let rcv = record::packets(&rec.file("rcv.pcap"));
    let sender: std::net::IpAddr = "10.9.1.1".parse().unwrap();
    let count =
        |v: &[(u64, std::net::IpAddr, u32, u16)], a2b: bool| v.iter().filter(|p| (p.1 == sender) == a2b).count();
    assert_eq!(count(&snd, true), count(&rtr, true), "the forwarder lost or added packets");
    assert_eq!(count(&rtr, true) - count(&rcv, true), fwd as usize);
    assert_eq!(count(&rcv, false) - count(&rtr, false), rev as usize);
    assert_eq!(count(&rtr, false), count(&snd, false));
    let held = rec.held_a2b();
    assert!(held.len() >= count(&snd, true), "forwarder log: {} frames", held.len());
    assert!(held.iter().all(|&(_, us)| us >= 5000));
}

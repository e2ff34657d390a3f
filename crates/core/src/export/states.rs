//! `tcpscope states --json` / `--csv`: one row per endpoint and step of the state machine
//! ([`crate::series::states`]); its fields are the `states` table of `docs/json.md`.

use crate::series::states::{Side, States};
use crate::table::record;

record! {
    /// One step of one endpoint: its initial state (step 0) or a transition.
    #[derive(Clone, Debug, serde::Serialize)]
    pub struct StateRow = "states", StateRowColumns {
        /// Connection id.
        pub conn: usize, "", "connection id (as `conns` numbers them)";
        /// `a` or `b`.
        pub side: &'static str, "", "the endpoint: `a` (the first SYN's sender, else the first packet's) or `b`";
        /// 0 for the initial state, then 1, 2, … in the order the endpoint went through them.
        pub step: usize, "", "0 for the state before the first transition, then 1, 2, … in the endpoint's order";
        /// State before (`null` at step 0).
        pub from: Option<&'static str>, "", "state before (RFC 9293 names with `_`: `FIN_WAIT_1`); null at step 0";
        /// State after.
        pub to: &'static str, "", "state after (at step 0: the initial state)";
        /// The state is assumed, not seen (step 0).
        pub assumed: bool, "", "the state is inferred without a segment showing it (the initial state)";
        /// The endpoint sent the causing segment (`false`: received it; `null` at step 0).
        pub sent: Option<bool>, "", "the endpoint sent the causing segment (false: received it)";
        /// The causing segment's flags.
        pub flags: Option<String>, "", "the causing segment's flags, e.g. `FIN,ACK`";
        /// Its frame.
        pub frame: Option<u64>, "", "1-based frame number of the causing segment";
        /// When the capture saw it, s since the epoch.
        pub time: Option<f64>, "s since the epoch", "when the capture saw the causing segment";
        /// The same, s since the connection's first packet.
        pub seen_s: Option<f64>, "s", "the same, since the connection's first packet";
        /// When the endpoint changed state (estimated), s since the connection's first packet.
        pub at_s: Option<f64>, "s", "when the endpoint changed state, estimated: `seen_s` minus its distance for a segment it sent, plus it for one it received (docs/plots.md#tcp-states)";
        /// The RFC 9293 event in words.
        pub why: Option<&'static str>, "", "the RFC 9293 event, e.g. `active open`, `simultaneous close: received FIN`";
        /// The endpoint's estimated distance from the capture point, s.
        pub distance_s: Option<f64>, "s", "the endpoint's distance from the capture point: half its smallest half-loop; null when not measurable (taken as 0)";
    }
}

/// The rows of connection id `conn`: each side's initial state, then its transitions.
pub fn rows(s: &States, conn: usize) -> Vec<StateRow> {
    let mut out = Vec::new();
    for side in [Side::A, Side::B] {
        let init = s.initial[side.idx()];
        let distance_s = s.transit_s[side.idx()];
        out.push(StateRow {
            conn,
            side: side.name(),
            step: 0,
            from: None,
            to: init.state.name(),
            assumed: init.assumed,
            sent: None,
            flags: None,
            frame: None,
            time: None,
            seen_s: None,
            at_s: None,
            why: None,
            distance_s,
        });
        for (k, t) in s.transitions.iter().filter(|t| t.side == side).enumerate() {
            out.push(StateRow {
                conn,
                side: side.name(),
                step: k + 1,
                from: Some(t.from.name()),
                to: t.to.name(),
                assumed: false,
                sent: Some(t.sent),
                flags: Some(t.flags.clone()),
                frame: Some(t.frame),
                time: Some(s.t0_ns as f64 / 1e9 + t.seen_s),
                seen_s: Some(t.seen_s),
                at_s: Some(t.at_s),
                why: Some(t.why),
                distance_s,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Settings;
    use crate::series::run_pkts;
    use crate::series::states::StatesSink;
    use crate::testutil::{flag::*, scripted};

    #[test]
    fn json_keys_are_the_fields() {
        let p =
            [scripted(true, 0.0, SYN, 0, 0, 0, 1000, vec![]), scripted(false, 1.0, SYN | ACK, 0, 0, 0, 1000, vec![])];
        let s = run_pkts(&p, Settings::default(), StatesSink::new(0)).finish().unwrap();
        let rows = rows(&s, 1);
        assert_eq!(rows.len(), 2 + s.transitions.len());
        for r in rows {
            let v = serde_json::to_value(&r).unwrap();
            let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
            assert_eq!(keys, crate::table::names(<StateRow as crate::table::Table>::FIELDS));
        }
    }
}

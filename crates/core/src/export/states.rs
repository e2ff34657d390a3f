//! `tcpscope states --json` / `--csv`: one row per endpoint and step of the state machine
//! ([`crate::series::states`]); its fields are the `states` table of `docs/json.md`.

use crate::series::states::{Side, States};
use crate::table::{Field, Kind, Table};
use Field as F;

/// One step of one endpoint: its initial state (step 0) or a transition.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StateRow {
    /// Connection id.
    pub conn: usize,
    /// `a` or `b`.
    pub side: &'static str,
    /// 0 for the initial state, then 1, 2, … in the order the endpoint went through them.
    pub step: usize,
    /// State before (`null` at step 0).
    pub from: Option<&'static str>,
    /// State after.
    pub to: &'static str,
    /// The state is assumed, not seen (step 0).
    pub assumed: bool,
    /// The endpoint sent the causing segment (`false`: received it; `null` at step 0).
    pub sent: Option<bool>,
    /// The causing segment's flags.
    pub flags: Option<String>,
    /// Its frame.
    pub frame: Option<u64>,
    /// When the capture saw it, s since the epoch.
    pub time: Option<f64>,
    /// The same, s since the connection's first packet.
    pub seen_s: Option<f64>,
    /// When the endpoint changed state (estimated), s since the connection's first packet.
    pub at_s: Option<f64>,
    /// The RFC 9293 event in words.
    pub why: Option<&'static str>,
    /// The endpoint's estimated distance from the capture point, s.
    pub distance_s: Option<f64>,
}

impl Table for StateRow {
    const NAME: &'static str = "states";
    const FIELDS: &'static [Field] = &[
        F::new("conn", Kind::Int, "", "connection id (as `conns` numbers them)"),
        F::new("side", Kind::Text, "", "the endpoint: `a` (the first SYN's sender, else the first packet's) or `b`"),
        F::new(
            "step",
            Kind::Int,
            "",
            "0 for the state before the first transition, then 1, 2, … in the endpoint's order",
        ),
        F::nullable("from", Kind::Text, "", "state before (RFC 9293 names with `_`: `FIN_WAIT_1`); null at step 0"),
        F::new("to", Kind::Text, "", "state after (at step 0: the initial state)"),
        F::new("assumed", Kind::Bool, "", "the state is inferred without a segment showing it (the initial state)"),
        F::nullable("sent", Kind::Bool, "", "the endpoint sent the causing segment (false: received it)"),
        F::nullable("flags", Kind::Text, "", "the causing segment's flags, e.g. `FIN,ACK`"),
        F::nullable("frame", Kind::Int, "", "1-based frame number of the causing segment"),
        F::nullable("time", Kind::Float, "s since the epoch", "when the capture saw the causing segment"),
        F::nullable("seen_s", Kind::Float, "s", "the same, since the connection's first packet"),
        F::nullable(
            "at_s",
            Kind::Float,
            "s",
            "when the endpoint changed state, estimated: `seen_s` minus its distance for a segment it sent, plus it for one it received (docs/plots.md#tcp-states)",
        ),
        F::nullable(
            "why",
            Kind::Text,
            "",
            "the RFC 9293 event, e.g. `active open`, `simultaneous close: received FIN`",
        ),
        F::nullable(
            "distance_s",
            Kind::Float,
            "s",
            "the endpoint's distance from the capture point: half its smallest half-loop; null when not measurable (taken as 0)",
        ),
    ];
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
            assert_eq!(keys, crate::table::names(StateRow::FIELDS));
        }
    }
}

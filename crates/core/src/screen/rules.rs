//! The screening rules: what counts as boring, and the classifier's constants.
//!
//! Defaults follow the thesis (boring = stop-and-wait, never window-limited, no
//! retransmission) and Linux (minimum RTO 200 ms). A TOML file overrides any part; the format
//! is in `docs/screening.md`:
//!
//! ```toml
//! [boring]
//! stop_and_wait = false
//! max = { retransmitted_fraction = 0.01, receiver_window = 0.05 }
//!
//! [classify]
//! rto_min_ms = 300
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

pub use crate::analysis::Classify;
use crate::analysis::Settings;

/// All rules. Every field has a default, so a file need only name what it changes.
#[derive(Clone, Debug, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Rules {
    /// When a connection is boring (hidden by default).
    pub boring: Boring,
    /// Constants of the out-of-sequence classifier.
    pub classify: Classify,
}

/// A connection is boring when every condition holds.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Boring {
    /// The thesis' condition: in each direction, every data segment was sent only after
    /// everything before it was acknowledged.
    pub stop_and_wait: bool,
    /// Upper bounds on metrics (names in [`METRICS`]): boring only if `metric <= value`.
    pub max: BTreeMap<String, f64>,
    /// Lower bounds: boring only if `metric >= value`.
    pub min: BTreeMap<String, f64>,
}

impl Default for Boring {
    fn default() -> Self {
        let max = [("retransmissions", 0.0), ("receiver_window", 0.0), ("zero_windows", 0.0), ("nagle_waits", 0.0)];
        Boring {
            stop_and_wait: true,
            max: max.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
            min: BTreeMap::new(),
        }
    }
}

/// Metric names usable in `[boring] max` / `min`, with what they measure.
pub const METRICS: &[(&str, &str)] = &[
    ("retransmissions", "retransmitted segments, both directions (every class but flow control)"),
    ("retransmitted_fraction", "retransmitted payload bytes / payload bytes, both directions"),
    ("rto", "timeout retransmissions"),
    ("fast_retransmit", "fast retransmissions"),
    ("spurious", "unneeded retransmissions"),
    ("reordering", "segments reordered by the network"),
    ("network_duplicate", "segments duplicated by the network"),
    ("zero_windows", "zero-window advertisements"),
    ("timeout_stalls", "retransmission-timer stalls"),
    ("application", "fraction of the lifetime limited by the application"),
    ("receiver_window", "fraction of the lifetime limited by the receiver's window"),
    ("congestion", "fraction of the lifetime limited by the network / congestion window"),
    ("recovery", "fraction of the lifetime in loss recovery or timeout stalls"),
    ("bursty_fraction", "fraction of bytes sent at more than burst_factor x the average rate"),
    ("severity", "the severity score (0-1)"),
    ("duration_s", "lifetime in seconds"),
    ("bytes", "payload bytes, both directions"),
    ("packets", "packets, both directions"),
    ("nagle_waits", "small segments held by Nagle's algorithm for the peer's delayed ACK, both directions"),
];

impl Rules {
    /// `settings` with these rules' classifier constants: the analysis classifies, so a screen
    /// with its own rules runs on settings made by this.
    pub fn settings(&self, settings: Settings) -> Settings {
        Settings { classify: self.classify, ..settings }
    }

    /// Reads a rules file; unknown keys and metric names are errors.
    pub fn load(path: &Path) -> Result<Rules, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Rules::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses rules from TOML text.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let rules: Rules = toml::from_str(text).map_err(|e| e.to_string())?;
        for name in rules.boring.max.keys().chain(rules.boring.min.keys()) {
            if !METRICS.iter().any(|(m, _)| m == name) {
                let known: Vec<&str> = METRICS.iter().map(|(m, _)| *m).collect();
                return Err(format!("unknown metric `{name}` in [boring] (known: {})", known.join(", ")));
            }
        }
        let c = &rules.classify;
        let finite = [c.rto_min_ms, c.rtt_min_floor_ms, c.burst_factor];
        if finite.iter().any(|v| !v.is_finite() || *v < 0.0) || c.burst_factor <= 1.0 {
            return Err("[classify] values must be non-negative numbers (burst_factor > 1)".into());
        }
        Ok(rules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let r = Rules::parse("").unwrap();
        assert!(r.boring.stop_and_wait);
        assert_eq!(r.classify.rto_min_ms, 200.0);
        let r = Rules::parse("[boring]\nstop_and_wait = false\nmax = { severity = 0.2 }\n[classify]\nrto_min_ms = 300")
            .unwrap();
        assert!(!r.boring.stop_and_wait);
        assert_eq!(r.boring.max.get("severity"), Some(&0.2));
        assert_eq!(r.classify.rto_min_ms, 300.0);
        assert_eq!(r.classify.dupack_threshold, 3);
    }

    #[test]
    fn rejects_unknown_names() {
        assert!(Rules::parse("[boring]\nmax = { nonsense = 1 }").unwrap_err().contains("unknown metric `nonsense`"));
        assert!(Rules::parse("[borring]").is_err());
        assert!(Rules::parse("[classify]\nburst_factor = 0.5").is_err());
    }
}

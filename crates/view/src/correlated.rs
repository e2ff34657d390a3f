//! The traces as captures of the same connections at several points (`tcpscope view
//! --correlate A B ...`, docs/correlate.md): core's correlation of them, each connection of
//! the list tied to the correlated connection it is at its capture's point, and the lifeline
//! and one-way-delay figures of a direction for a viewport (`api/lifeline`, `api/owd`), drawn
//! by the same core code as `tcpscope correlate --plot`.

use std::collections::HashMap;

use tcpscope_core::analysis::Dir;
use tcpscope_core::conn::Endpoint;
use tcpscope_core::correlate::{self, Correlation, PointRow, Settings};
use tcpscope_core::plot::Figure;
use tcpscope_core::plot::lifeline::{LifelineView, lifelines_in, one_way_delay_in};
use tcpscope_core::stats::ConnStats;

use crate::api::{MAX_COLUMNS, Viewport};
use crate::data::Traces;

/// A list connection's correlated connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// Index into [`Correlation::conns`].
    pub conn: usize,
    /// The correlation names the endpoints the other way round (its a is the list's b).
    pub swapped: bool,
}

/// What a lifeline request draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Each packet at every point, joined ([`lifelines_in`]).
    Lifeline,
    /// Each packet's one-way delay, first to last point ([`one_way_delay_in`]).
    Owd,
}

/// The correlation of a viewer's traces.
pub struct Correlated {
    /// Core's correlation of the traces, in command-line order (trace i is point i + 1).
    pub c: Correlation,
    /// Per list connection (id − 1), its correlated connection.
    links: Vec<Option<Link>>,
}

impl Correlated {
    /// Correlates the traces of `t` (each one file read whole) and ties each listed connection
    /// to its correlated connection: the one with the same endpoints at that trace's point.
    /// Connections reusing a 4-tuple are tied in order of appearance, which both sides keep.
    pub fn new(t: &Traces, settings: &Settings) -> Result<Correlated, String> {
        // The figures draw every packet: the correlation keeps them.
        let settings = Settings { keep_packets: true, ..settings.clone() };
        let c = correlate::correlate(&t.paths, &settings).map_err(|e| e.to_string())?;
        // (point, a, b) → the correlated connections seen there with those endpoints, in order.
        let mut at: HashMap<(usize, Endpoint, Endpoint), Vec<Link>> = HashMap::new();
        for (k, conn) in c.conns.iter().enumerate() {
            for (p, ends) in conn.at.iter().enumerate() {
                if let Some((a, b)) = *ends {
                    at.entry((p, a, b)).or_default().push(Link { conn: k, swapped: false });
                    at.entry((p, b, a)).or_default().push(Link { conn: k, swapped: true });
                }
            }
        }
        for v in at.values_mut() {
            v.reverse();
        }
        let links =
            t.an.conns
                .iter()
                .map(|s| at.get_mut(&(s.info().file, s.info().a, s.info().b)).and_then(Vec::pop))
                .collect();
        Ok(Correlated { c, links })
    }

    /// Connection `id`'s (1-based) correlated connection.
    pub fn link(&self, id: usize) -> Option<Link> {
        self.links.get(id.wrapping_sub(1)).copied().flatten()
    }

    /// The captures: their clocks and what they missed (`correlate --json`'s `points`).
    pub fn points(&self) -> Vec<PointRow> {
        self.c.point_rows()
    }

    /// The figure of connection `id`'s direction `dir`, `conn` its statistics, for a viewport
    /// whose time 0 is `t0_ns` on its trace's clock (its first packet there): the plot shares
    /// the time-sequence plot's time axis, and its y counts from the same sequence number (the
    /// direction's `seq_base`).
    pub fn figure(
        &self,
        id: usize,
        dir: Dir,
        kind: Kind,
        conn: &ConnStats,
        t0_ns: u64,
        v: &Viewport,
    ) -> Result<Figure, String> {
        let file = conn.info().file;
        let l = self.link(id).ok_or_else(|| format!("connection {id} was not matched across the captures"))?;
        let d = u8::from(matches!(dir, Dir::BtoA) != l.swapped);
        let view = LifelineView {
            from_s: v.t0,
            to_s: v.t1,
            origin_ns: Some(self.c.to_ref(file, t0_ns as i64)),
            columns: Some(v.w.clamp(1, MAX_COLUMNS)),
            // Hover asks the connection's own trace for a mark's packet.
            frames_of: Some(file),
            seq_base: conn.dir(dir.idx()).seq_base.map(|s| s.0),
            // The list's numbering, not the correlation's.
            label: Some(format!("connection {id} {}", dir.name())),
        };
        Ok(match kind {
            Kind::Lifeline => lifelines_in(&self.c, l.conn, d, &view),
            Kind::Owd => one_way_delay_in(&self.c, l.conn, d, &view),
        })
    }
}

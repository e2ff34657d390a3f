//! `monitor --top`: a terminal view refreshing in place, one row per live connection: endpoints,
//! congestion control, CurCwnd, SmoothedRTT, the last interval's sending rate, retransmitted
//! segments, and what limited the sender over the last interval (the triage's largest share).

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::layout::Constraint;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Row as TRow, Table};

use crate::fields::{Sample, index};
use crate::filter::Filter;
use crate::record::Options;
use crate::track::{Sampler, Step};
use crate::tsm::ConnStart;

/// One line of the view.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub id: u32,
    pub local: String,
    pub remote: String,
    pub cong: String,
    pub cwnd_bytes: Option<u64>,
    pub srtt_ms: Option<f64>,
    /// IntBW over the last interval, bit/s.
    pub rate: Option<f64>,
    pub retrans: Option<u64>,
    /// `network`, `receiver`, `sender`, or `idle` (nothing outstanding the whole interval).
    pub limit: &'static str,
}

/// The view's state: the live connections and their last two samples.
#[derive(Default)]
pub struct Top {
    conns: HashMap<u32, ConnStart>,
    last: HashMap<u32, (Option<Sample>, Sample, Sample)>,
}

impl Top {
    /// Folds one step in.
    pub fn update(&mut self, step: &Step) {
        for c in &step.started {
            self.conns.insert(c.id, c.clone());
        }
        for s in &step.samples {
            match self.last.get_mut(&s.conn) {
                Some((prev, cur, _)) => {
                    *prev = Some(std::mem::replace(cur, s.clone()));
                }
                None => {
                    self.last.insert(s.conn, (None, s.clone(), s.clone()));
                }
            }
        }
        for e in &step.ended {
            self.conns.remove(&e.id);
            self.last.remove(&e.id);
        }
    }

    /// The rows, fastest sender first.
    pub fn rows(&self) -> Vec<Row> {
        let v = |s: &Sample, prev: Option<&Sample>, first: &Sample, name: &str| s.value(index(name), prev, first);
        let mut rows: Vec<Row> = self
            .last
            .iter()
            .filter_map(|(id, (prev, cur, first))| {
                let c = self.conns.get(id)?;
                let prev = prev.as_ref();
                let shares = [
                    v(cur, prev, first, "lim_network").map(|x| x.as_f64()),
                    v(cur, prev, first, "lim_receiver").map(|x| x.as_f64()),
                    v(cur, prev, first, "lim_sender").map(|x| x.as_f64()),
                ];
                let busy = cur.delta(index("busy_time"), prev).unwrap_or(0);
                let limit = match shares {
                    [Some(n), Some(r), Some(s)] if busy > 0 => {
                        if n >= r && n >= s {
                            "network"
                        } else if r >= s {
                            "receiver"
                        } else {
                            "sender"
                        }
                    }
                    [Some(_), ..] => "idle",
                    _ => "",
                };
                Some(Row {
                    id: *id,
                    local: format!("{}:{}", c.src, c.sport),
                    remote: format!("{}:{}", c.dst, c.dport),
                    cong: c.cong.clone().unwrap_or_default(),
                    cwnd_bytes: v(cur, prev, first, "CurCwnd").map(|x| x.as_f64() as u64),
                    srtt_ms: v(cur, prev, first, "SmoothedRTT").map(|x| x.as_f64()),
                    rate: v(cur, prev, first, "int_bw").map(|x| x.as_f64()),
                    retrans: cur.get("total_retrans"),
                    limit,
                })
            })
            .collect();
        rows.sort_by(|a, b| b.rate.unwrap_or(0.0).total_cmp(&a.rate.unwrap_or(0.0)).then(a.id.cmp(&b.id)));
        rows
    }
}

fn rate(b: Option<f64>) -> String {
    match b {
        None => String::new(),
        Some(b) if b >= 1e9 => format!("{:.2} Gbit/s", b / 1e9),
        Some(b) if b >= 1e6 => format!("{:.1} Mbit/s", b / 1e6),
        Some(b) if b >= 1e3 => format!("{:.1} kbit/s", b / 1e3),
        Some(b) => format!("{b:.0} bit/s"),
    }
}

/// Draws the rows into `frame` under `title`.
pub fn render(frame: &mut Frame, rows: &[Row], title: &str) {
    let header = TRow::new(["id", "local", "remote", "cc", "cwnd", "srtt ms", "rate", "retrans", "limited by"])
        .style(Style::default().add_modifier(Modifier::BOLD));
    let body = rows.iter().map(|r| {
        TRow::new([
            r.id.to_string(),
            r.local.clone(),
            r.remote.clone(),
            r.cong.clone(),
            r.cwnd_bytes.map_or(String::new(), |c| c.to_string()),
            r.srtt_ms.map_or(String::new(), |x| format!("{x:.2}")),
            rate(r.rate),
            r.retrans.map_or(String::new(), |x| x.to_string()),
            r.limit.to_string(),
        ])
    });
    let widths = [
        Constraint::Length(5),
        Constraint::Length(22),
        Constraint::Length(22),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(13),
        Constraint::Length(8),
        Constraint::Length(10),
    ];
    let table = Table::new(body, widths).header(header).block(Block::bordered().title(title.to_string()));
    frame.render_widget(table, frame.area());
}

/// Runs the view until `q`, Esc, Ctrl-C, `stop`, or the duration ends. The screen refreshes at
/// most every 250 ms whatever the sampling interval.
pub fn run(opts: &Options, sampler: crate::source::SamplerKind, stop: &AtomicBool) -> io::Result<()> {
    let filter = Filter::parse(&opts.filter).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let (source, _) = crate::source::Source::open(filter, sampler)?;
    let mut sampler = Sampler::new(source, opts.interval, opts.pid);
    let mut top = Top::default();
    let mut terminal = ratatui::init();
    let started = Instant::now();
    let mut drawn = Instant::now() - Duration::from_secs(1);
    let result = (|| -> io::Result<()> {
        loop {
            if stop.load(Ordering::Relaxed) || opts.duration.is_some_and(|d| started.elapsed() >= d) {
                return Ok(());
            }
            let t = Instant::now();
            let step = sampler.once()?;
            top.update(step);
            if drawn.elapsed() >= Duration::from_millis(250) {
                let rows = top.rows();
                let title = format!(
                    " tcpscope monitor --top: {} connections, every {} ms ({} sampler); filter `{}`; q quits ",
                    rows.len(),
                    opts.interval.as_millis(),
                    sampler.source.name(),
                    opts.filter
                );
                terminal.draw(|f| render(f, &rows, &title))?;
                drawn = Instant::now();
            }
            let wait = opts.interval.saturating_sub(t.elapsed());
            if event::poll(wait)?
                && let Event::Key(k) = event::read()?
                && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                    || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)))
            {
                return Ok(());
            }
        }
    })();
    ratatui::restore();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tsm::ConnEnd;
    use ratatui::backend::TestBackend;

    fn sample(t_ms: u64, conn: u32, sent: u64, busy_ms: u64, rwnd_ms: u64) -> Sample {
        let mut s = Sample::empty(t_ms * 1_000_000, conn);
        for (n, v) in [
            ("bytes_sent", sent),
            ("busy_time", busy_ms * 1000),
            ("rwnd_limited", rwnd_ms * 1000),
            ("sndbuf_limited", 0),
            ("snd_cwnd", 10),
            ("snd_mss", 1448),
            ("rtt", 1500),
            ("total_retrans", 2),
        ] {
            s.raw.set(index(n), Some(v));
        }
        s
    }

    fn start(id: u32) -> ConnStart {
        ConnStart {
            sport: 1000 + id as u16,
            dport: 5201,
            cong: Some("cubic".into()),
            info_len: 280,
            ..ConnStart::sample(id)
        }
    }

    #[test]
    fn rows_show_rate_and_limit_and_render() {
        let mut top = Top::default();
        top.update(&Step {
            started: vec![start(1), start(2)],
            samples: vec![sample(0, 1, 0, 0, 0), sample(0, 2, 0, 0, 0)],
            ended: vec![],
        });
        // Over 100 ms: 1 sends 125,000 bytes (10 Mbit/s) stopped by the receiver 80 ms; 2 sends
        // nothing and has nothing outstanding.
        top.update(&Step {
            started: vec![],
            samples: vec![sample(100, 1, 125_000, 100, 80), sample(100, 2, 0, 0, 0)],
            ended: vec![],
        });
        let rows = top.rows();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].id, rows[0].limit), (1, "receiver"));
        assert_eq!(rows[0].rate, Some(10e6));
        assert_eq!(rows[0].cwnd_bytes, Some(14480));
        assert_eq!(rows[1].limit, "idle");
        let mut term = ratatui::Terminal::new(TestBackend::new(120, 6)).unwrap();
        term.draw(|f| render(f, &rows, "t")).unwrap();
        let text: String = term.backend().buffer().content().iter().map(|c| c.symbol()).collect();
        assert!(text.contains("10.0 Mbit/s") && text.contains("receiver") && text.contains("14480"), "{text}");
        top.update(&Step {
            started: vec![],
            samples: vec![],
            ended: vec![ConnEnd { id: 1, last_ns: 0, gone_ns: 0, recorder_stopped: false }],
        });
        assert_eq!(top.rows().len(), 1);
    }
}

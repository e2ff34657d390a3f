//! Prints every analysis event of a trace, one per line: a debugging aid and an example of a
//! custom [`Sink`]. Usage: `cargo run --example events -- TRACE [CONN_ID]`.

use tcpscope_core::analysis::{At, Event, Settings, Sink};
use tcpscope_core::capture::CaptureReader;
use tcpscope_core::pass::Analyzer;

struct Print(Option<usize>);

impl Sink for Print {
    fn event(&mut self, at: &At, ev: &Event) {
        if self.0.is_none_or(|id| id == at.conn + 1) {
            println!(
                "conn {} {} frame {} t {:.6} {:?}",
                at.conn + 1,
                at.dir.name(),
                at.frame,
                at.ts_ns as f64 / 1e9,
                ev
            );
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: events TRACE [CONN_ID]");
    let conn = args.next().map(|s| s.parse().expect("connection id"));
    let mut reader = CaptureReader::open(path.as_ref()).expect("open");
    let mut an = Analyzer::new(Settings::default(), Print(conn));
    while let Ok(Some(rec)) = reader.next_record() {
        an.record(&rec);
    }
}

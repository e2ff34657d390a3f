//! `docs/json.md`'s field tables are generated from the tables' field lists
//! (`tcpscope_core::table`): this test fails when the doc and the code differ, and rewrites the
//! doc with `TCPSCOPE_BLESS=1`. It also checks that `print --json`'s keys are its fields.

use std::path::Path;

use tcpscope_core::correlate::{CorrDir, CorrEvent, CorrPacket, DelaySummary, PointRow};
use tcpscope_core::export::json::{ConnJson, DirJson, FilesTable};
use tcpscope_core::export::packet::PacketLine;
use tcpscope_core::export::rows::{ConnRef, RttRow, SegmentRow};
use tcpscope_core::export::states::StateRow;
use tcpscope_core::quality::{ConnRow, FileRow};
use tcpscope_core::screen::{EventSource, OosEvent, ScreenRow, VantageRow};
use tcpscope_core::table::{Field, Table, markdown};
use tcpscope_core::vantage::{VantageConn, VantageDir};

/// Each generated section: its marker name and its fields.
fn sections() -> Vec<(&'static str, &'static [Field])> {
    vec![
        (FilesTable::NAME, FilesTable::FIELDS),
        (ConnJson::NAME, ConnJson::FIELDS),
        (DirJson::NAME, DirJson::FIELDS),
        (PacketLine::NAME, PacketLine::FIELDS),
        (ScreenRow::NAME, ScreenRow::FIELDS),
        (VantageRow::NAME, VantageRow::FIELDS),
        (EventSource::NAME, EventSource::FIELDS),
        (VantageDir::NAME, VantageDir::FIELDS),
        (VantageConn::NAME, VantageConn::FIELDS),
        (PointRow::NAME, PointRow::FIELDS),
        (CorrDir::NAME, CorrDir::FIELDS),
        (DelaySummary::NAME, DelaySummary::FIELDS),
        (CorrEvent::NAME, CorrEvent::FIELDS),
        (CorrPacket::NAME, CorrPacket::FIELDS),
        (ConnRef::NAME, ConnRef::FIELDS),
        (OosEvent::NAME, OosEvent::FIELDS),
        (SegmentRow::NAME, SegmentRow::FIELDS),
        (RttRow::NAME, RttRow::FIELDS),
        (StateRow::NAME, StateRow::FIELDS),
        (FileRow::NAME, FileRow::FIELDS),
        (ConnRow::NAME, ConnRow::FIELDS),
    ]
    .into_iter()
    .chain(tcpscope_core::plot::data::ALL.iter().copied())
    .collect()
}

/// `text` with the section between `<!-- fields: NAME -->` and `<!-- /fields -->` replaced.
fn with_section(text: &str, name: &str, table: &str) -> Result<String, String> {
    let open = format!("<!-- fields: {name} -->\n");
    let start = text.find(&open).ok_or_else(|| format!("docs/json.md has no {open:?}"))? + open.len();
    let end = start + text[start..].find("<!-- /fields -->").ok_or_else(|| format!("{name}: no closing marker"))?;
    Ok(format!("{}{table}{}", &text[..start], &text[end..]))
}

#[test]
fn json_md_lists_every_field_as_the_code_defines_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/json.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut want = text.clone();
    for (name, fields) in sections() {
        want = with_section(&want, name, &markdown(fields)).unwrap();
    }
    if want != text {
        if std::env::var_os("TCPSCOPE_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        } else {
            let diff: Vec<String> = want
                .lines()
                .zip(text.lines())
                .filter(|(w, t)| w != t)
                .take(5)
                .map(|(w, t)| format!("  doc:  {t}\n  code: {w}"))
                .collect();
            panic!(
                "docs/json.md differs from the field lists (TCPSCOPE_BLESS=1 cargo test -p tcpscope-core --test docs \
                 rewrites it):\n{}",
                diff.join("\n")
            );
        }
    }
}

//! docs/monitor.md's field table is the one generated from the code (`fields::doc_table`).
//! `TCPSCOPE_BLESS=1` rewrites the doc's copy instead of failing.

use std::path::Path;

use tcpscope_monitor::fields::doc_table;

const BEGIN: &str = "<!-- fields:begin -->\n";
const END: &str = "<!-- fields:end -->";

#[test]
fn the_doc_lists_every_field_as_the_code_defines_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/monitor.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (a, rest) = doc.split_once(BEGIN).expect("begin marker");
    let (table, b) = rest.split_once(END).expect("end marker");
    let want = doc_table();
    if table != want {
        if std::env::var_os("TCPSCOPE_BLESS").is_some() {
            std::fs::write(&path, format!("{a}{BEGIN}{want}{END}{b}")).unwrap();
            return;
        }
        panic!("docs/monitor.md's field table differs from fields.rs; run with TCPSCOPE_BLESS=1 to rewrite it");
    }
}

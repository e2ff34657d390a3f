//! The compact form of the `api/tsg` and `api/panels` answers (`fmt=bin`), which the page reads
//! straight into typed arrays: a zoomed-out figure is thousands of marks, and as JSON (a number
//! per coordinate, an array per primitive) the browser spent more time parsing it than the
//! server spent computing it.
//!
//! Layout (docs/viewer.md): `b"TSC1"`, the header's length (u32, little-endian), the header
//! (JSON), zero padding to a multiple of 8 bytes, then the arrays, each starting at a multiple
//! of 8 bytes from the start of the data block. The header's `arrays` maps each array's name to
//! `[type, byte offset in the data block, element count]`, type one of `u8`, `u32`, `f32`,
//! `f64`; values are little-endian.
//!
//! Coordinates are `f32` offsets from an origin given in the header as `f64` (`ox`, `oy` for a
//! figure, `ot` for the panels): offsets within the view keep their precision at every zoom
//! level (a 40 s connection zoomed to a microsecond still resolves nanoseconds), where absolute
//! `f32` times would not.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use tcpscope_core::analysis::Dir;
use tcpscope_core::plot::{Anchor, Figure, Shape, Way};

use crate::api::Reduced;
use crate::data::Detail;

/// Magic bytes at the start of a packed answer.
pub const MAGIC: &[u8; 4] = b"TSC1";

/// Builds one packed answer: a JSON header and typed arrays.
pub struct Packer {
    header: Map<String, Value>,
    arrays: Map<String, Value>,
    data: Vec<u8>,
}

impl Packer {
    /// A packer whose header starts as `header`.
    pub fn new(header: Map<String, Value>) -> Packer {
        Packer { header, arrays: Map::new(), data: Vec::new() }
    }

    fn start(&mut self, name: &str, ty: &str, len: usize) {
        // Typed arrays need their offset aligned to their element size; 8 fits every type.
        self.data.resize(self.data.len().next_multiple_of(8), 0);
        self.arrays.insert(name.to_string(), json!([ty, self.data.len(), len]));
    }

    /// Adds an array of bytes.
    pub fn u8s(&mut self, name: &str, v: &[u8]) {
        self.start(name, "u8", v.len());
        self.data.extend_from_slice(v);
    }

    /// Adds an array of `u32`.
    pub fn u32s(&mut self, name: &str, v: &[u32]) {
        self.start(name, "u32", v.len());
        self.data.extend(v.iter().flat_map(|x| x.to_le_bytes()));
    }

    /// Adds an array of `f32`.
    pub fn f32s(&mut self, name: &str, v: &[f32]) {
        self.start(name, "f32", v.len());
        self.data.extend(v.iter().flat_map(|x| x.to_le_bytes()));
    }

    /// Adds an array of `f64`.
    pub fn f64s(&mut self, name: &str, v: &[f64]) {
        self.start(name, "f64", v.len());
        self.data.extend(v.iter().flat_map(|x| x.to_le_bytes()));
    }

    /// The answer's bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.header.insert("arrays".into(), Value::Object(self.arrays));
        let h = serde_json::to_vec(&self.header).unwrap_or_default();
        let start = (8 + h.len()).next_multiple_of(8);
        let mut out = Vec::with_capacity(start + self.data.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(h.len() as u32).to_le_bytes());
        out.extend_from_slice(&h);
        out.resize(start, 0);
        out.extend_from_slice(&self.data);
        out
    }
}

/// Primitive kinds as the page numbers them (`prim_op`).
pub mod op {
    /// `l`: line x1 y1 x2 y2.
    pub const LINE: u8 = 0;
    /// `a`: arrowhead x y, `prim_extra` its [`way`](super::way_code).
    pub const ARROW: u8 = 1;
    /// `t`: tick x y, `prim_extra` its way.
    pub const TICK: u8 = 2;
    /// `d`: diamond x y.
    pub const DIAMOND: u8 = 3;
    /// `b`: box x y.
    pub const BOX: u8 = 4;
    /// `o`: dot x y.
    pub const DOT: u8 = 5;
    /// `p`: polyline x y x y ...
    pub const POLYLINE: u8 = 6;
    /// `r`: filled rectangle x1 y1 x2 y2.
    pub const RECT: u8 = 7;
    /// `x`: text x y, then the index of its string in the header's `texts` (an integer, exact
    /// in f32); `prim_extra` its [`anchor`](super::anchor_code).
    pub const TEXT: u8 = 8;
}

/// `prim_extra` of an arrowhead or tick: 0 up, 1 down, 2 horizontal.
pub fn way_code(w: Way) -> u8 {
    match w {
        Way::Up => 0,
        Way::Down => 1,
        Way::Horizontal => 2,
    }
}

/// `prim_extra` of a text: 0 above, 1 below, 2 left, 3 right, 4 centre.
pub fn anchor_code(a: Anchor) -> u8 {
    match a {
        Anchor::Above => 0,
        Anchor::Below => 1,
        Anchor::Left => 2,
        Anchor::Right => 3,
        Anchor::Center => 4,
    }
}

/// Index of `s` in `table`, adding it when new (tables of classes and colours have a dozen
/// entries: a linear search is the fastest).
fn intern(table: &mut Vec<&'static str>, s: &'static str) -> u8 {
    match table.iter().position(|t| *t == s) {
        Some(i) => i as u8,
        None => {
            table.push(s);
            (table.len() - 1) as u8
        }
    }
}

/// The packed `api/tsg` answer: the JSON answer's fields but `marks` in the header, plus
/// `ox`, `oy` (origin of the coordinates), `classes`, `colors` and `texts` (the tables the
/// arrays index), and the arrays
///
/// - per mark: `mark_class` (u8, index in `classes`), `mark_frame` (f64, NaN for none),
///   `mark_count` (u32), `mark_prim` (u32, marks + 1 entries: mark i's primitives are
///   `mark_prim[i]..mark_prim[i+1]`);
/// - per primitive: `prim_op` (u8, [`op`]), `prim_color` (u8, index in `colors`), `prim_extra`
///   (u8: way or anchor), `prim_xy` (u32, primitives + 1 entries, into `xy`);
/// - `xy` (f32): the coordinates, x − ox and y − oy alternately.
pub fn figure(d: &Detail, dir: Dir, f: &Figure) -> Vec<u8> {
    let mut head =
        match serde_json::to_value(crate::api::figure_out(d, dir, &Figure { marks: Vec::new(), ..header_only(f) })) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
    head.remove("marks");
    let (ox, oy) = (f.x.min, f.y.min);
    let (mut classes, mut colors) = (Vec::new(), Vec::new());
    let mut texts: Vec<String> = Vec::new();
    let mut text_ix: HashMap<&str, u32> = HashMap::new();
    let n = f.marks.len();
    let (mut m_class, mut m_frame, mut m_count, mut m_prim) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n + 1));
    let np: usize = f.marks.iter().map(|m| m.prims.len()).sum();
    let (mut p_op, mut p_color, mut p_extra, mut p_xy) =
        (Vec::with_capacity(np), Vec::with_capacity(np), Vec::with_capacity(np), Vec::with_capacity(np + 1));
    let mut xy: Vec<f32> = Vec::with_capacity(np * 3);
    let px = |x: f64| (x - ox) as f32;
    let py = |y: f64| (y - oy) as f32;
    m_prim.push(0u32);
    p_xy.push(0u32);
    for m in &f.marks {
        m_class.push(intern(&mut classes, m.class));
        m_frame.push(m.frame.map_or(f64::NAN, |x| x as f64));
        m_count.push(m.count);
        for p in &m.prims {
            p_color.push(intern(&mut colors, p.color.svg()));
            let (o, extra) = match &p.shape {
                Shape::Line { x1, y1, x2, y2 } => {
                    xy.extend([px(*x1), py(*y1), px(*x2), py(*y2)]);
                    (op::LINE, 0)
                }
                Shape::Arrow { x, y, way } => {
                    xy.extend([px(*x), py(*y)]);
                    (op::ARROW, way_code(*way))
                }
                Shape::Tick { x, y, way } => {
                    xy.extend([px(*x), py(*y)]);
                    (op::TICK, way_code(*way))
                }
                Shape::Diamond { x, y } => {
                    xy.extend([px(*x), py(*y)]);
                    (op::DIAMOND, 0)
                }
                Shape::Box { x, y } => {
                    xy.extend([px(*x), py(*y)]);
                    (op::BOX, 0)
                }
                Shape::Dot { x, y } => {
                    xy.extend([px(*x), py(*y)]);
                    (op::DOT, 0)
                }
                Shape::Polyline { pts } => {
                    xy.extend(pts.iter().flat_map(|(x, y)| [px(*x), py(*y)]));
                    (op::POLYLINE, 0)
                }
                Shape::Rect { x1, y1, x2, y2 } => {
                    xy.extend([px(*x1), py(*y1), px(*x2), py(*y2)]);
                    (op::RECT, 0)
                }
                Shape::Text { x, y, anchor, text } => {
                    let i = *text_ix.entry(text.as_str()).or_insert_with(|| {
                        texts.push(text.clone());
                        (texts.len() - 1) as u32
                    });
                    xy.extend([px(*x), py(*y), i as f32]);
                    (op::TEXT, anchor_code(*anchor))
                }
            };
            p_op.push(o);
            p_extra.push(extra);
            p_xy.push(xy.len() as u32);
        }
        m_prim.push(p_op.len() as u32);
    }
    head.insert("ox".into(), json!(ox));
    head.insert("oy".into(), json!(oy));
    head.insert("classes".into(), json!(classes));
    head.insert("colors".into(), json!(colors));
    head.insert("texts".into(), json!(texts));
    let mut p = Packer::new(head);
    p.u8s("mark_class", &m_class);
    p.f64s("mark_frame", &m_frame);
    p.u32s("mark_count", &m_count);
    p.u32s("mark_prim", &m_prim);
    p.u8s("prim_op", &p_op);
    p.u8s("prim_color", &p_color);
    p.u8s("prim_extra", &p_extra);
    p.u32s("prim_xy", &p_xy);
    p.f32s("xy", &xy);
    p.finish()
}

/// A figure with everything but its marks (the header of the packed answer).
fn header_only(f: &Figure) -> Figure {
    Figure {
        title: f.title.clone(),
        x: f.x.clone(),
        y: f.y.clone(),
        marks: Vec::new(),
        legend: f.legend.clone(),
        remarks: f.remarks.clone(),
    }
}

/// The packed `api/panels` answer: the JSON answer's fields but the series in the header, with
/// `ot` (origin of the times) and `series` (each series' name to its `agg` flag), and per series
/// NAME the arrays `NAME.t` (f32, time − ot), `NAME.lo` and `NAME.hi` (f32; `hi` left out when
/// it equals `lo` throughout, as for a series that is not aggregated).
pub fn panels(p: &crate::api::PanelsData) -> Vec<u8> {
    let mut head = Map::new();
    head.insert("t".into(), json!([p.t0, p.t1]));
    head.insert("ot".into(), json!(p.t0));
    head.insert("window_scaled".into(), json!(p.window_scaled));
    let series: Map<String, Value> = p.series.iter().map(|(n, s)| (n.to_string(), json!(s.agg))).collect();
    head.insert("series".into(), Value::Object(series));
    let mut out = Packer::new(head);
    let f32s = |v: &[f64]| v.iter().map(|x| *x as f32).collect::<Vec<f32>>();
    for (name, s) in &p.series {
        let Reduced { t, lo, hi, .. } = s;
        out.f32s(&format!("{name}.t"), &t.iter().map(|x| (x - p.t0) as f32).collect::<Vec<_>>());
        out.f32s(&format!("{name}.lo"), &f32s(lo));
        if hi != lo {
            out.f32s(&format!("{name}.hi"), &f32s(hi));
        }
    }
    out.finish()
}

/// An array of a packed answer: its type, bytes and element count.
pub type Array<'a> = (String, &'a [u8], usize);

/// Reads a packed answer: its header and each array (for the tests; the page has its own
/// reader, `web/src/api.ts`).
pub fn unpack(b: &[u8]) -> Option<(Map<String, Value>, HashMap<String, Array<'_>>)> {
    if b.get(..4)? != MAGIC {
        return None;
    }
    let hl = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?) as usize;
    let Value::Object(head) = serde_json::from_slice(b.get(8..8 + hl)?).ok()? else { return None };
    let data = b.get((8 + hl).next_multiple_of(8)..)?;
    let mut arrays = HashMap::new();
    for (name, a) in head.get("arrays")?.as_object()? {
        let ty = a[0].as_str()?.to_string();
        let (off, len) = (a[1].as_u64()? as usize, a[2].as_u64()? as usize);
        let size = match ty.as_str() {
            "u8" => 1,
            "u32" | "f32" => 4,
            _ => 8,
        };
        arrays.insert(name.clone(), (ty, data.get(off..off + len * size)?, len));
    }
    Some((head, arrays))
}

/// An unpacked array as `f64`s (for the tests).
pub fn values(a: &Array<'_>) -> Vec<f64> {
    let (ty, b, _) = a;
    match ty.as_str() {
        "u8" => b.iter().map(|x| *x as f64).collect(),
        "u32" => b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        "f32" => b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        _ => b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
    }
}

/// Base64 (standard alphabet, padded): the report carries packed answers inline in its page.
pub fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            s.push(if k <= c.len() { A[(n >> (18 - 6 * k) & 63) as usize] as char } else { '=' });
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_rfc_4648() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn arrays_are_aligned_and_read_back() {
        let mut p = Packer::new(Map::new());
        p.u8s("a", &[1, 2, 3]);
        p.f64s("b", &[1.5, f64::NAN]);
        p.u32s("c", &[7]);
        p.f32s("d", &[0.25]);
        let b = p.finish();
        let (h, a) = unpack(&b).unwrap();
        let start = (8 + u32::from_le_bytes(b[4..8].try_into().unwrap()) as usize).next_multiple_of(8);
        for (k, v) in h["arrays"].as_object().unwrap() {
            assert_eq!((start + v[1].as_u64().unwrap() as usize) % 8, 0, "{k}");
        }
        assert_eq!(values(&a["a"]), [1.0, 2.0, 3.0]);
        assert!(values(&a["b"])[0] == 1.5 && values(&a["b"])[1].is_nan());
        assert_eq!(values(&a["c"]), [7.0]);
        assert_eq!(values(&a["d"]), [0.25]);
    }
}

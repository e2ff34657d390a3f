//! One packet per line, for `tcpscope print` (the thesis' `print` utility, figure 2.2).
//!
//! [`PacketLine`] is the JSON form (one object per line, `--json`) and the CSV row; its fields
//! are the `print` schema in `docs/json.md`. [`PacketLine::write_text`] writes the text form:
//! the columns of figure 2.2 (time, source address and port, destination address and port,
//! seq, ack, window, length) plus the flags and the connection id, separated by tabs so that
//! `awk -F'\t'` and `cut` read them.

use std::io::{self, Write};

use crate::analysis::{Dir, SegmentInfo};
use crate::decode::Flags;
use crate::flow::ConnInfo;
use crate::table::{Field, Kind, Table};
use Field as F;

/// One TCP segment as `print` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PacketLine<'a> {
    /// Capture time, ns since the epoch.
    pub ts_ns: u64,
    /// Capture time, seconds since the epoch (as `first_time` in `conns`).
    pub time: f64,
    /// Connection id (as `conns` with the same trace and window numbers them).
    pub conn: usize,
    /// The file holding the packet.
    pub file: &'a str,
    /// 1-based frame number within that file (tshark's `frame.number` on the file).
    pub frame: u64,
    /// Source address.
    pub src: String,
    /// Source port.
    pub sport: u16,
    /// Destination address.
    pub dst: String,
    /// Destination port.
    pub dport: u16,
    /// Sequence number as on the wire.
    pub seq: u32,
    /// Acknowledgment number as on the wire (0 unless ACK is set, whatever the field says).
    pub ack: u32,
    /// Window field as on the wire, not scaled.
    pub win_raw: u16,
    /// TCP payload length from the IP header (counts bytes cut by the snaplen).
    pub len: u32,
    /// Flag letters: S SYN, F FIN, R RST, P PSH, A ACK, U URG, E ECE, C CWR, N AE; `.` for none.
    pub flags: FlagLetters,
}

impl Table for PacketLine<'_> {
    const NAME: &'static str = "packets";
    const FIELDS: &'static [Field] = &[
        F::new("ts_ns", Kind::Int, "ns since the epoch", "capture time"),
        F::new("time", Kind::Float, "s since the epoch", "the same in seconds (as `first_time` in `conns`)"),
        F::new(
            "conn",
            Kind::Int,
            "",
            "connection id: order of first appearance in the window (as `conns` with the same TRACEs and window)",
        ),
        F::new("file", Kind::Text, "", "the capture file holding the packet"),
        F::new("frame", Kind::Int, "", "1-based frame number within that file (tshark's `frame.number`)"),
        F::new("src", Kind::Text, "", "source IP address"),
        F::new("sport", Kind::Int, "", "source TCP port"),
        F::new("dst", Kind::Text, "", "destination IP address"),
        F::new("dport", Kind::Int, "", "destination TCP port"),
        F::new("seq", Kind::Int, "", "sequence number as on the wire"),
        F::new("ack", Kind::Int, "", "acknowledgment number as on the wire; 0 when the ACK flag is off"),
        F::new("win_raw", Kind::Int, "", "window field as on the wire, not scaled"),
        F::new("len", Kind::Int, "bytes", "payload length from the IP header (includes bytes cut by the snaplen)"),
        F::new("flags", Kind::Text, "", "S SYN, F FIN, R RST, P PSH, A ACK, U URG, E ECE, C CWR, N AE; `.` for none"),
    ];
}

/// Flag letters in a fixed order (see [`PacketLine::flags`]): one of the 512 strings of the
/// nine flags, made once (a packet row of `print`, `segments` or `correlate --packets` neither
/// spells its flags out nor allocates a string for them).
pub fn flag_letters(f: Flags) -> FlagLetters {
    static ALL: std::sync::OnceLock<Vec<Box<str>>> = std::sync::OnceLock::new();
    let all = ALL.get_or_init(|| (0..1u16 << FLAG_LETTERS.len()).map(|b| spelled(Flags(b)).into()).collect());
    FlagLetters(&all[usize::from(f.0) & (all.len() - 1)])
}

/// The letters of `f`'s flags, `.` for none.
fn spelled(f: Flags) -> String {
    let s: String = FLAG_LETTERS.iter().filter(|&&(m, _)| f.has(m)).map(|&(_, c)| c).collect();
    if s.is_empty() { ".".into() } else { s }
}

/// A packet's flag letters (at most nine ASCII letters, or `.`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FlagLetters(&'static str);

impl FlagLetters {
    /// The letters.
    pub fn as_str(&self) -> &'static str {
        self.0
    }
}

impl std::ops::Deref for FlagLetters {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for FlagLetters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for FlagLetters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for FlagLetters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl crate::table::KindOf for FlagLetters {
    const KIND: crate::table::Kind = crate::table::Kind::Text;
}

impl crate::table::Put for FlagLetters {
    type Col = crate::table::Texts;
    #[inline]
    fn put<C: crate::table::Columns + ?Sized>(&self, c: &mut C) {
        c.text(self.as_str())
    }
    #[inline(always)]
    fn push(&self, col: &mut crate::table::Texts, at: crate::table::Row) {
        col.push_static(at, self.as_str())
    }
}

/// Each flag's letter, in the order they are written (`print`, and the viewer's packet rows).
pub const FLAG_LETTERS: [(u16, char); 9] = [
    (Flags::SYN, 'S'),
    (Flags::FIN, 'F'),
    (Flags::RST, 'R'),
    (Flags::PSH, 'P'),
    (Flags::ACK, 'A'),
    (Flags::URG, 'U'),
    (Flags::ECE, 'E'),
    (Flags::CWR, 'C'),
    (Flags::AE, 'N'),
];

impl<'a> PacketLine<'a> {
    /// The line of a segment of connection id `conn` (endpoints `info`) read from `file`.
    pub fn new(file: &'a str, info: &ConnInfo, seg: &SegmentInfo, conn: usize) -> Self {
        let (src, dst) = match seg.at.dir {
            Dir::AtoB => (info.a, info.b),
            Dir::BtoA => (info.b, info.a),
        };
        PacketLine {
            ts_ns: seg.at.ts_ns,
            time: seg.at.ts_ns as f64 / 1e9,
            conn,
            file,
            frame: seg.at.frame,
            src: src.addr.to_string(),
            sport: src.port,
            dst: dst.addr.to_string(),
            dport: dst.port,
            seq: seg.seq.0,
            ack: if seg.flags.ack() { seg.ack.0 } else { 0 },
            win_raw: seg.win_raw(),
            len: seg.len,
            flags: flag_letters(seg.flags),
        }
    }

    /// The header of the text form.
    pub const TEXT_HEADER: &'static str = "# time\tsrc\tsport\tdst\tdport\tseq\tack\twin\tlen\tflags\tconn\n";

    /// Writes the text form; `clock` is the time as the reader wants it (e.g. local
    /// `HH:MM:SS.ffffff`). Sequence numbers are zero-padded to 10 digits as in figure 2.2.
    pub fn write_text<W: Write>(&self, out: &mut W, clock: &str) -> io::Result<()> {
        writeln!(
            out,
            "{clock}\t{}\t{}\t{}\t{}\t{:010}\t{:010}\t{}\t{}\t{}\t{}",
            self.src,
            self.sport,
            self.dst,
            self.dport,
            self.seq,
            self.ack,
            self.win_raw,
            self.len,
            self.flags,
            self.conn
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ConnIdx;

    /// The first segment's line, as `print` makes it.
    #[derive(Default)]
    struct First {
        info: Option<ConnInfo>,
        keys: Vec<String>,
    }

    impl crate::sink::Sink for First {
        fn connection(&mut self, _: ConnIdx, info: &ConnInfo) {
            self.info.get_or_insert(*info);
        }
        fn segment(&mut self, s: &SegmentInfo) {
            if self.keys.is_empty()
                && let Some(info) = &self.info
            {
                let v = serde_json::to_value(PacketLine::new("f", info, s, 1)).unwrap();
                self.keys = v.as_object().unwrap().keys().cloned().collect();
            }
        }
    }

    /// Each flag's letter in the fixed order, `.` for none; bits beyond the nine flags ignored.
    #[test]
    fn flag_letters_spell_the_flags() {
        let f = |bits: u16| flag_letters(Flags(bits)).as_str();
        assert_eq!(f(0), ".");
        assert_eq!(f(Flags::ACK | Flags::SYN), "SA");
        assert_eq!(f(Flags::ACK | Flags::PSH | Flags::FIN | 0xf000), "FPA");
        assert_eq!(f(0x1ff), "SFRPAUECN");
        assert_eq!(f(0xfe00), ".");
    }

    #[test]
    fn a_lines_keys_are_its_fields() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/loss-snd.pcap");
        let q = crate::pass::Query::new(vec![path.into()]);
        let (first, _, _) = q.run_one(First::default(), &|_, _| {}).unwrap();
        assert_eq!(first.keys, crate::table::names(PacketLine::FIELDS));
    }
}

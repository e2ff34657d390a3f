//! The table layer: every record type tcpscope gives out (a connection, one direction's
//! statistics, a file's summary, a packet line) names its fields once, each with its type, unit
//! and meaning, next to the code that fills it.
//!
//! The JSON view is the record's `Serialize` form, and tests hold its keys to the field list in
//! order; the CSV header and the text table take their columns from the same list; the field
//! tables of `docs/json.md` are generated from it and a test fails when the doc and the code
//! differ (`TCPSCOPE_BLESS=1 cargo test -p tcpscope-core --test docs` rewrites them). An Arrow
//! schema is the next writer of the same list.

/// The type of a field's values, as JSON has it (`null` allowed where `nullable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A whole number.
    Int,
    /// A number with a fraction.
    Float,
    /// true or false.
    Bool,
    /// Text.
    Text,
    /// An object of its own (documented in its own table).
    Object,
    /// An object of names to counts.
    Counts,
    /// An array of objects.
    List,
}

impl Kind {
    /// As the docs write it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int => "integer",
            Kind::Float => "float",
            Kind::Bool => "bool",
            Kind::Text => "string",
            Kind::Object => "object",
            Kind::Counts => "object name → count",
            Kind::List => "array",
        }
    }
}

/// One field of a record.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// Its name in JSON, and the CSV column's (flattened with its parent's name and `_`).
    pub name: &'static str,
    /// The type of its values.
    pub kind: Kind,
    /// Whether it may be `null` (not measurable, or not known).
    pub nullable: bool,
    /// The unit of its values (`""` for counts and flags: the name says what is counted).
    pub unit: &'static str,
    /// What it means, in one line (definitions in `docs/statistics.md`).
    pub doc: &'static str,
}

impl Field {
    /// A field that always has a value (`const`: the `FIELDS` lists are built at compile time).
    pub const fn new(name: &'static str, kind: Kind, unit: &'static str, doc: &'static str) -> Field {
        Field { name, kind, nullable: false, unit, doc }
    }

    /// A field that may be `null`.
    pub const fn nullable(name: &'static str, kind: Kind, unit: &'static str, doc: &'static str) -> Field {
        Field { name, kind, nullable: true, unit, doc }
    }
}

/// A record type given out as a table.
pub trait Table {
    /// The table's name (`connections`, `directions`, `files`, `packets`).
    const NAME: &'static str;
    /// Its fields, in the order of the JSON keys and the CSV columns.
    const FIELDS: &'static [Field];
}

/// The type of a Rust value as a [`Kind`], for records declared by macro.
pub trait KindOf {
    /// Its kind.
    const KIND: Kind;
    /// Whether it is an `Option`.
    const NULLABLE: bool = false;
}

macro_rules! kind_of {
    ($($t:ty => $k:ident),*) => {
        $(impl KindOf for $t {
            const KIND: Kind = Kind::$k;
        })*
    };
}
kind_of!(u8 => Int, u16 => Int, u32 => Int, u64 => Int, usize => Int, f64 => Float, bool => Bool, String => Text);

impl KindOf for &str {
    const KIND: Kind = Kind::Text;
}

impl<T: KindOf> KindOf for Option<T> {
    const KIND: Kind = T::KIND;
    const NULLABLE: bool = true;
}

/// The Markdown table of `fields` (`docs/json.md`): field, type, unit, meaning.
pub fn markdown(fields: &[Field]) -> String {
    let mut s = String::from("| field | type | unit | meaning |\n|---|---|---|---|\n");
    for f in fields {
        let ty = if f.nullable { format!("{} or null", f.kind.name()) } else { f.kind.name().to_string() };
        s += &format!("| `{}` | {ty} | {} | {} |\n", f.name, f.unit, f.doc);
    }
    s
}

/// The names of `fields`, in order.
pub fn names(fields: &[Field]) -> Vec<&'static str> {
    fields.iter().map(|f| f.name).collect()
}

//! The table layer: every record type tcpscope gives out (a connection, one direction's
//! statistics, a file's summary, a packet line) names its fields once, each with its type, unit
//! and meaning, next to the code that fills it.
//!
//! The JSON view is the record's `Serialize` form, and tests hold its keys to the field list in
//! order; the CSV header and the text table take their columns from the same list; the field
//! tables of `docs/json.md` are generated from it and a test fails when the doc and the code
//! differ (`TCPSCOPE_BLESS=1 cargo test -p tcpscope-core --test docs` rewrites them). An Arrow
//! schema is the next writer of the same list.
//!
//! A record declared with [`record!`] also gives its values column by column, typed
//! ([`Record::put`] into a [`Columns`]: the Arrow column builders), from the same declaration
//! as its struct and its field list: the per-packet rows of the exports are appended to their
//! columns without a serializer's walk.

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
kind_of!(u8 => Int, u16 => Int, u32 => Int, u64 => Int, usize => Int, i64 => Int, f64 => Float, bool => Bool, String => Text);

impl KindOf for &str {
    const KIND: Kind = Kind::Text;
}

impl<T: KindOf> KindOf for Option<T> {
    const KIND: Kind = T::KIND;
    const NULLABLE: bool = true;
}

/// Where a record's values go, one column after the other in the order of its `FIELDS`,
/// each by its kind: the Arrow column builders (`tcpscope-arrow`).
pub trait Columns {
    /// The next column's value: a whole number.
    fn int(&mut self, v: i64);
    /// The next column's value: a whole number that may not fit an `i64` (an error there).
    fn uint(&mut self, v: u64);
    /// The next column's value: a float.
    fn float(&mut self, v: f64);
    /// The next column's value: a flag.
    fn bool(&mut self, v: bool);
    /// The next column's value: text.
    fn text(&mut self, v: &str);
    /// The next column has no value (`null`).
    fn null(&mut self);
}

/// A field's value as it goes into its column ([`Columns`]): one of the kinds a column has.
pub trait Put: KindOf {
    /// Gives the value to the next column of `c`.
    fn put<C: Columns + ?Sized>(&self, c: &mut C);
}

macro_rules! put {
    ($($t:ty => |$v:ident, $c:ident| $e:expr),* $(,)?) => {
        $(impl Put for $t {
            #[inline]
            fn put<C: Columns + ?Sized>(&self, $c: &mut C) {
                let $v = *self;
                $e
            }
        })*
    };
}
put!(
    u8 => |v, c| c.int(v.into()),
    u16 => |v, c| c.int(v.into()),
    u32 => |v, c| c.int(v.into()),
    i64 => |v, c| c.int(v),
    u64 => |v, c| c.uint(v),
    usize => |v, c| c.uint(v as u64),
    f64 => |v, c| c.float(v),
    bool => |v, c| c.bool(v),
    &str => |v, c| c.text(v),
);

impl Put for String {
    #[inline]
    fn put<C: Columns + ?Sized>(&self, c: &mut C) {
        c.text(self)
    }
}

impl<T: Put> Put for Option<T> {
    #[inline]
    fn put<C: Columns + ?Sized>(&self, c: &mut C) {
        match self {
            Some(v) => v.put(c),
            None => c.null(),
        }
    }
}

/// A record whose values go into typed columns ([`Columns`]) in the order of its `FIELDS`:
/// declared with [`record!`], which writes both from one list.
pub trait Record: Table {
    /// Gives each field's value to `c`, in the order of `FIELDS`.
    fn put<C: Columns + ?Sized>(&self, c: &mut C);
}

/// Declares a record once: its struct, its field list ([`Table`]: name, kind and nullability
/// from the field's Rust type, unit, meaning) and its typed appends ([`Record`]), so that the
/// three cannot disagree. Each field is written
/// `/// doc` `pub NAME: TYPE, "unit", "meaning";` (the Rust doc comment is the code's, the
/// meaning the table's).
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident $(<$lt:lifetime>)? = $table:literal {
            $($(#[$fmeta:meta])* pub $field:ident: $ty:ty, $unit:literal, $doc:literal;)*
        }
    ) => {
        $(#[$meta])*
        pub struct $name $(<$lt>)? {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $(<$lt>)? $crate::table::Table for $name $(<$lt>)? {
            const NAME: &'static str = $table;
            const FIELDS: &'static [$crate::table::Field] = &[$($crate::table::Field {
                name: stringify!($field),
                kind: <$ty as $crate::table::KindOf>::KIND,
                nullable: <$ty as $crate::table::KindOf>::NULLABLE,
                unit: $unit,
                doc: $doc,
            },)*];
        }

        impl $(<$lt>)? $crate::table::Record for $name $(<$lt>)? {
            #[inline]
            fn put<C: $crate::table::Columns + ?Sized>(&self, c: &mut C) {
                $($crate::table::Put::put(&self.$field, c);)*
            }
        }
    };
}
pub(crate) use record;

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

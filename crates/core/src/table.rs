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
//! A record declared with [`record!`] also gives its values column by column, typed, from the
//! same declaration as its struct and its field list, without a serializer's walk: onto a
//! column of its own for each field ([`Record::push`] into its [`Record::Columns`]: the
//! per-packet rows of the exports), or to the next column of a row ([`Record::put`] into a
//! [`Columns`]: the Arrow table builder's).

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

/// A field's value as it goes into its column: one of the kinds a column has, given to the next
/// column of a row ([`Columns`]) or stored in its own column at the row's index ([`Put::Col`]).
pub trait Put: KindOf {
    /// The column a record's values of this field are kept in ([`Record::Columns`]).
    type Col: Col;
    /// Gives the value to the next column of `c`.
    fn put<C: Columns + ?Sized>(&self, c: &mut C);
    /// Stores the value as row `at` of its column.
    fn push(&self, col: &mut Self::Col, at: Row);
}

macro_rules! put {
    ($($t:ty => $col:ident |$v:ident, $c:ident| $e:expr, $p:ident),* $(,)?) => {
        $(impl Put for $t {
            type Col = $col;
            #[inline]
            fn put<C: Columns + ?Sized>(&self, $c: &mut C) {
                let $v = *self;
                $e
            }
            #[inline(always)]
            fn push(&self, col: &mut $col, at: Row) {
                col.$p(at, (*self).into())
            }
        })*
    };
}
put!(
    u8 => Ints |v, c| c.int(v.into()), push,
    u16 => Ints |v, c| c.int(v.into()), push,
    u32 => Ints |v, c| c.int(v.into()), push,
    i64 => Ints |v, c| c.int(v), push,
    u64 => Ints |v, c| c.uint(v), uint,
    f64 => Floats |v, c| c.float(v), push,
    bool => Bools |v, c| c.bool(v), push,
    &str => Texts |v, c| c.text(v), push,
);

impl Put for usize {
    type Col = Ints;
    #[inline]
    fn put<C: Columns + ?Sized>(&self, c: &mut C) {
        c.uint(*self as u64)
    }
    #[inline(always)]
    fn push(&self, col: &mut Ints, at: Row) {
        col.uint(at, *self as u64)
    }
}

impl Put for String {
    type Col = Texts;
    #[inline]
    fn put<C: Columns + ?Sized>(&self, c: &mut C) {
        c.text(self)
    }
    #[inline(always)]
    fn push(&self, col: &mut Texts, at: Row) {
        col.push(at, self)
    }
}

impl<T: Put> Put for Option<T> {
    type Col = Nullable<T::Col>;
    #[inline]
    fn put<C: Columns + ?Sized>(&self, c: &mut C) {
        match self {
            Some(v) => v.put(c),
            None => c.null(),
        }
    }
    #[inline(always)]
    fn push(&self, col: &mut Nullable<T::Col>, at: Row) {
        match self {
            Some(v) => {
                v.push(&mut col.col, at);
                col.valid.set(at);
            }
            None => col.null(at),
        }
    }
}

/// Text from a fixed list (a direction, a verdict, a class, an RTT sample's kind): a
/// `&'static str`, which its column ([`Texts::push_static`]) knows again by its address rather
/// than by comparing its bytes (a `segments` row's four such values cost a `memcmp` each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Name(pub &'static str);

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.0
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl KindOf for Name {
    const KIND: Kind = Kind::Text;
}

impl Put for Name {
    type Col = Texts;
    #[inline]
    fn put<C: Columns + ?Sized>(&self, c: &mut C) {
        c.text(self.0)
    }
    #[inline(always)]
    fn push(&self, col: &mut Texts, at: Row) {
        col.push_static(at, self.0)
    }
}

/// Text shared by many rows (a trace's name, a capture file's): an `Arc`, which its column
/// ([`Texts::push_shared`]) knows again by its address while it holds the last one given,
/// rather than by comparing its bytes (a `memcmp` each for a `segments` row's `input` and
/// `file`, ~45 instructions a row).
#[derive(Clone, Copy, Debug)]
pub struct Shared<'a>(pub &'a std::sync::Arc<str>);

impl std::ops::Deref for Shared<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.0
    }
}

impl serde::Serialize for Shared<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl KindOf for Shared<'_> {
    const KIND: Kind = Kind::Text;
}

impl Put for Shared<'_> {
    type Col = Texts;
    #[inline]
    fn put<C: Columns + ?Sized>(&self, c: &mut C) {
        c.text(self.0)
    }
    #[inline(always)]
    fn push(&self, col: &mut Texts, at: Row) {
        col.push_shared(at, self.0)
    }
}

/// Rows a record's columns hold before they are taken ([`Record::Columns`]; the exports' batch
/// of per-packet rows). Each column has room for as many from the start: a row's value is
/// stored at its index, where a vector's push checked its room and kept its length, column by
/// column (~9 instructions a value, a third of the `segments` rows' thread).
pub const BATCH_ROWS: usize = 16 * 1024;

/// A row's index in its record's columns: below [`BATCH_ROWS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row(usize);

impl Row {
    /// Row `i`, if the columns have room for it.
    #[inline(always)]
    pub fn new(i: usize) -> Option<Row> {
        (i < BATCH_ROWS).then_some(Row(i))
    }
}

/// A record's column of one kind ([`Record::Columns`]), its rows stored at their index: plain
/// buffers, a batch's handed to its Arrow arrays (`tcpscope-arrow`, [`Values::swap`]).
pub trait Col: Default + Send {
    /// Row `at` has no value: stores the default (zero) there.
    fn null(&mut self, at: Row);
    /// The column, to be taken out ([`Record::columns`]).
    fn as_mut(&mut self) -> ColMut<'_>;
}

/// A column of any kind ([`Col::as_mut`]), and which of its rows have a value if it may have
/// nulls.
pub enum ColMut<'c> {
    /// Whole numbers.
    Int(&'c mut Ints, Option<&'c mut Validity>),
    /// Floats.
    Float(&'c mut Floats, Option<&'c mut Validity>),
    /// Flags.
    Bool(&'c mut Bools, Option<&'c mut Validity>),
    /// Text, as codes into the values seen.
    Text(&'c mut Texts, Option<&'c mut Validity>),
}

/// A column's values, each row's at its index (a row without one holds the default: zero),
/// with room for [`BATCH_ROWS`] rows.
#[derive(Debug)]
pub struct Values<T>(Box<[T; BATCH_ROWS]>);

impl<T: Copy + Default> Default for Values<T> {
    fn default() -> Self {
        Values(zeroed())
    }
}

/// `N` default values on the heap.
fn zeroed<T: Copy + Default, const N: usize>() -> Box<[T; N]> {
    vec![T::default(); N].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("a vector of N values"))
}

impl<T: Copy + Default> Values<T> {
    /// Stores row `at`'s value.
    #[inline(always)]
    pub fn push(&mut self, at: Row, v: T) {
        self.0[at.0] = v;
    }
    /// Stores the default as row `at`'s value.
    #[inline(always)]
    pub fn null(&mut self, at: Row) {
        self.0[at.0] = T::default();
    }
    /// A copy of the first `rows` values; the column starts again, its rows to be stored over.
    /// For flags, which Arrow packs into bits (a copy either way); numbers and codes are handed
    /// over in their buffer ([`Values::swap`]).
    pub fn take(&mut self, rows: usize) -> Vec<T> {
        self.0[..rows].to_vec()
    }
    /// The first `rows` values in the column's own buffer, as a vector (of capacity
    /// [`BATCH_ROWS`]), not copied; the column starts again in `next`, a buffer it handed out
    /// before and got back (its rows stored over), or a new one. Copying each batch out
    /// ([`Values::take`]) was most of a `segments` export's rows thread's `memcpy`.
    pub fn swap(&mut self, rows: usize, next: Option<Vec<T>>) -> Vec<T> {
        let next = match next {
            Some(mut v) => {
                v.resize(BATCH_ROWS, T::default());
                v.into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("a vector of BATCH_ROWS values"))
            }
            None => zeroed(),
        };
        let mut full = Vec::from(std::mem::replace(&mut self.0, next) as Box<[T]>);
        full.truncate(rows);
        full
    }
}

/// Which rows of a nullable column have a value: a bit each, as Arrow's validity bitmap is
/// (kept as a `Vec<bool>` and packed by arrow, once a batch, it cost ~23 instructions a
/// `segments` row), and how many have not.
#[derive(Debug)]
pub struct Validity {
    words: Box<[u64; BATCH_ROWS / 64]>,
    /// Rows without a value.
    pub nulls: usize,
}

impl Default for Validity {
    fn default() -> Self {
        Validity { words: zeroed(), nulls: 0 }
    }
}

impl Validity {
    /// Row `at` has a value.
    #[inline(always)]
    pub fn set(&mut self, at: Row) {
        self.words[at.0 / 64] |= 1 << (at.0 % 64);
    }
    /// The validity of the first `rows` rows, 64 rows a word (row `i` is bit `i % 64` of word
    /// `i / 64`, bits past `rows` clear), or `None` if every row had a value; the column starts
    /// again.
    pub fn take(&mut self, rows: usize) -> Option<Vec<u64>> {
        // Copied out and cleared in place, as `Values::take` copies: the box is kept.
        let used = &mut self.words[..rows.div_ceil(64)];
        let words = (std::mem::take(&mut self.nulls) > 0).then(|| used.to_vec());
        used.fill(0);
        words
    }
}

/// A column of a nullable field (`Option<T>`): its values, a null's the default, and which
/// rows have one.
#[derive(Debug, Default)]
pub struct Nullable<C> {
    /// The values.
    pub col: C,
    /// Which rows have a value.
    pub valid: Validity,
}

impl<C: Col> Col for Nullable<C> {
    #[inline(always)]
    fn null(&mut self, at: Row) {
        self.col.null(at);
        self.valid.nulls += 1;
    }
    fn as_mut(&mut self) -> ColMut<'_> {
        let v = Some(&mut self.valid);
        match self.col.as_mut() {
            ColMut::Int(c, _) => ColMut::Int(c, v),
            ColMut::Float(c, _) => ColMut::Float(c, v),
            ColMut::Bool(c, _) => ColMut::Bool(c, v),
            ColMut::Text(c, _) => ColMut::Text(c, v),
        }
    }
}

/// Whole numbers, as `i64`; a `u64` past `i64::MAX` is an error ([`Ints::overflow`]).
#[derive(Debug, Default)]
pub struct Ints {
    /// The values.
    pub values: Values<i64>,
    /// The first value given that did not fit an `i64`, if any (a bug: the tables' columns are
    /// `Int64`).
    pub overflow: Option<u64>,
}

impl Ints {
    /// Stores row `at`'s value.
    #[inline(always)]
    pub fn push(&mut self, at: Row, v: i64) {
        self.values.push(at, v)
    }
    /// Stores row `at`'s value, which may not fit an `i64`.
    #[inline(always)]
    pub fn uint(&mut self, at: Row, v: u64) {
        match i64::try_from(v) {
            Ok(v) => self.values.push(at, v),
            Err(_) => self.too_large(at, v),
        }
    }
    #[cold]
    fn too_large(&mut self, at: Row, v: u64) {
        self.overflow.get_or_insert(v);
        self.values.null(at);
    }
}

/// Floats.
pub type Floats = Values<f64>;
/// Flags.
pub type Bools = Values<bool>;

/// The [`Col`] of each kind of column: the values its nulls are stored in (`$values`, reached
/// from the column `$c`) and its [`ColMut`] variant.
macro_rules! col {
    ($($t:ty => $variant:ident, |$c:ident| $values:expr;)*) => {$(
        impl Col for $t {
            #[inline(always)]
            fn null(&mut self, at: Row) {
                let $c = self;
                Values::null(&mut $values, at)
            }
            fn as_mut(&mut self) -> ColMut<'_> {
                ColMut::$variant(self, None)
            }
        }
    )*};
}

col! {
    Ints => Int, |c| c.values;
    Floats => Float, |c| *c;
    Bools => Bool, |c| *c;
    Texts => Text, |c| c.codes;
}

/// A column of text of few values (a trace's name, a direction, flag letters, a verdict):
/// each row a code into the values seen so far ([`Vocab`]), which a row's value is looked up
/// among rather than copied (docs/performance.md#exports-and-python).
#[derive(Debug, Default)]
pub struct Texts {
    /// Each row's code (a null's is 0: any code in range, the validity says it is none).
    pub codes: Values<i32>,
    /// The values the codes are of.
    pub vocab: Vocab,
}

impl Texts {
    /// Stores row `at`'s value.
    #[inline(always)]
    pub fn push(&mut self, at: Row, v: &str) {
        let code = self.vocab.code(v);
        self.codes.push(at, code)
    }
    /// Stores row `at`'s value, shared ([`Vocab::code_shared`]).
    #[inline(always)]
    pub fn push_shared(&mut self, at: Row, v: &std::sync::Arc<str>) {
        let code = self.vocab.code_shared(v);
        self.codes.push(at, code)
    }
    /// Stores row `at`'s value, of a fixed list ([`Vocab::code_static`]).
    #[inline(always)]
    pub fn push_static(&mut self, at: Row, v: &'static str) {
        let code = self.vocab.code_static(v);
        self.codes.push(at, code)
    }
}

/// The values of a text column of few values, each with its code: the order it was first seen
/// (kept across batches: a code means the same value in every batch of the column).
#[derive(Debug, Default)]
pub struct Vocab {
    /// The values, in the order first seen, and their codes past [`Vocab::SCAN`] values.
    words: Vec<Box<str>>,
    lookup: std::collections::HashMap<Box<str>, i32>,
    /// The code of the last value given, plus one (0: none yet; a trace's rows all have the
    /// same `input` and `file`, most packets the same flags as the one before).
    last: usize,
    /// The last value given, if by [`Vocab::code_static`] (its code is `last - 1`).
    last_static: Option<&'static str>,
    /// The last value given, if by [`Vocab::code_shared`] (its code is `last - 1`).
    last_shared: Option<std::sync::Arc<str>>,
}

impl Vocab {
    /// Vocabularies up to this many values are looked through rather than hashed.
    pub const SCAN: usize = 16;

    /// The values seen so far, in code order.
    pub fn words(&self) -> &[Box<str>] {
        &self.words
    }

    /// The code of a value of a fixed list ([`Name`]): the last one given is known again by
    /// its address (the bytes at a `'static` address never change nor are freed), not its
    /// bytes.
    #[inline(always)]
    pub fn code_static(&mut self, v: &'static str) -> i32 {
        if let Some(last) = self.last_static
            && std::ptr::eq(last, v)
        {
            return (self.last - 1) as i32;
        }
        let code = self.code(v);
        self.last_static = Some(v);
        code
    }

    /// The code of a shared value ([`Shared`]): the last one given is known again by its
    /// address (the vocabulary holds it: its bytes are neither freed nor changed meanwhile),
    /// not its bytes.
    #[inline(always)]
    pub fn code_shared(&mut self, v: &std::sync::Arc<str>) -> i32 {
        if let Some(last) = &self.last_shared
            && std::sync::Arc::ptr_eq(last, v)
        {
            return (self.last - 1) as i32;
        }
        self.new_shared(v)
    }
    #[cold]
    fn new_shared(&mut self, v: &std::sync::Arc<str>) -> i32 {
        let code = self.code(v);
        self.last_shared = Some(v.clone());
        code
    }

    /// The code of a value.
    #[inline(always)]
    pub fn code(&mut self, v: &str) -> i32 {
        match self.words.get(self.last.wrapping_sub(1)) {
            Some(w) if w.len() == v.len() && w.as_bytes() == v.as_bytes() => (self.last - 1) as i32,
            _ => self.find(v),
        }
    }
    #[cold]
    fn find(&mut self, v: &str) -> i32 {
        self.last_static = None;
        self.last_shared = None;
        // A vocabulary of a few values (directions, flag letters, verdicts) is looked through
        // in order: ~250 instructions a look-up by hashing (SipHash) against a few comparisons
        // (a segment's `dir` and `flags` change from row to row: ~27,000 look-ups of 200,000
        // rows of the bulk trace's first packets).
        let found = if self.words.len() <= Vocab::SCAN {
            self.words.iter().position(|w| w.len() == v.len() && w.as_bytes() == v.as_bytes()).map(|i| i as i32)
        } else {
            self.lookup.get(v).copied()
        };
        let code = match found {
            Some(c) => c,
            None => {
                let c = self.words.len() as i32;
                self.words.push(v.into());
                self.lookup.insert(v.into(), c);
                c
            }
        };
        self.last = code as usize + 1;
        code
    }
}

/// A record whose values go into typed columns in the order of its `FIELDS`, a row at a time
/// ([`Columns`]) or each onto its own column ([`Record::Columns`]): declared with [`record!`],
/// which writes them from one list.
pub trait Record: Table {
    /// A column for each field, of its kind ([`Put::Col`]).
    type Columns: RecordColumns;
    /// Gives each field's value to `c`, in the order of `FIELDS`.
    fn put<C: Columns + ?Sized>(&self, c: &mut C);
    /// Stores each field's value as row `at` of its column: no look-up of the column nor of
    /// its kind (a `segments` row's values given to the next column each, the column's kind
    /// matched, cost ~480 instructions of the rows' thread's ~1,020 a row).
    fn push(&self, cols: &mut Self::Columns, at: Row);
}

/// A record's columns ([`Record::Columns`]).
pub trait RecordColumns: Default + Send {
    /// Each column, in the order of `FIELDS`.
    fn columns(&mut self) -> Vec<ColMut<'_>>;
}

/// Declares a record once: its struct, its field list ([`Table`]: name, kind and nullability
/// from the field's Rust type, unit, meaning) and its typed appends ([`Record`]), so that the
/// three cannot disagree; and a struct of a column for each field (its name given after the
/// table's), which the rows' values are pushed onto ([`Record::push`]). Each field is written
/// `/// doc` `pub NAME: TYPE, "unit", "meaning";` (the Rust doc comment is the code's, the
/// meaning the table's).
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident $(<$lt:lifetime>)? = $table:literal, $cols:ident {
            $($(#[$fmeta:meta])* pub $field:ident: $ty:ty, $unit:literal, $doc:literal;)*
        }
    ) => {
        $(#[$meta])*
        pub struct $name $(<$lt>)? {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        #[doc = concat!("The columns of [`", stringify!($name), "`]: one of its kind for each field.")]
        #[derive(Debug, Default)]
        pub struct $cols $(<$lt>)? {
            $(
                #[doc = concat!("`", stringify!($field), "`")]
                pub $field: <$ty as $crate::table::Put>::Col,
            )*
            $(_rows: std::marker::PhantomData<&$lt ()>,)?
        }

        impl $(<$lt>)? $crate::table::RecordColumns for $cols $(<$lt>)? {
            fn columns(&mut self) -> Vec<$crate::table::ColMut<'_>> {
                vec![$($crate::table::Col::as_mut(&mut self.$field),)*]
            }
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
            // The columns of rows of any lifetime are one type (a record's columns borrow
            // nothing from it: its text is looked up, not kept).
            type Columns = $crate::table::columns_of!($cols $($lt)?);
            #[inline]
            fn put<C: $crate::table::Columns + ?Sized>(&self, c: &mut C) {
                $($crate::table::Put::put(&self.$field, c);)*
            }
            #[inline]
            fn push(&self, cols: &mut Self::Columns, at: $crate::table::Row) {
                $($crate::table::Put::push(&self.$field, &mut cols.$field, at);)*
            }
        }
    };
}
pub(crate) use record;

/// The columns type of a record ([`record!`]): of `'static` rows if it has a lifetime.
macro_rules! columns_of {
    ($cols:ident) => {
        $cols
    };
    ($cols:ident $lt:lifetime) => {
        $cols<'static>
    };
}
pub(crate) use columns_of;

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

/// A table given out whole (the series behind a plot, `plot::data`), of rows of one
/// [`Record`] type: its name among the others given with it, its fields and its rows, which a
/// writer takes a row at a time into its [`Columns`] without knowing their type; maybe after
/// the columns of one record the same in every row ([`Part::prefixed`]: the connection and
/// direction a plot's series are of). Its rows may be made as they are taken, from the items
/// they are made of ([`Part::map`]): a part holds no second copy of a long series.
pub struct Part {
    /// Its name among the parts given together (`segments`, `acks`): a file's, a key's.
    pub name: &'static str,
    fields: &'static [Field],
    rows: Box<dyn Rows>,
    /// The record before every row's, and its fields.
    prefix: Option<(Box<dyn Rows>, &'static [Field])>,
}

/// The rows of a [`Part`], of a type the part no longer names.
trait Rows: Send {
    fn len(&self) -> usize;
    fn put(&self, i: usize, c: &mut dyn Columns);
}

impl<R: Record + Send> Rows for Vec<R> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn put(&self, i: usize, c: &mut dyn Columns) {
        self[i].put(c)
    }
}

/// Rows made from items as they are taken ([`Part::map`]).
struct Mapped<T, F> {
    items: Vec<T>,
    row: F,
}

impl<T: Send, R: Record, F: Fn(&T) -> R + Send> Rows for Mapped<T, F> {
    fn len(&self) -> usize {
        self.items.len()
    }
    fn put(&self, i: usize, c: &mut dyn Columns) {
        (self.row)(&self.items[i]).put(c)
    }
}

impl Part {
    /// The part `name` of `rows`.
    pub fn new<R: Record + Send + 'static>(name: &'static str, rows: Vec<R>) -> Part {
        Part { name, fields: R::FIELDS, rows: Box::new(rows), prefix: None }
    }
    /// The part `name` whose rows are `row` of each of `items`, made as they are taken.
    pub fn map<T: Send + 'static, R: Record + 'static>(
        name: &'static str,
        items: Vec<T>,
        row: impl Fn(&T) -> R + Send + 'static,
    ) -> Part {
        Part { name, fields: R::FIELDS, rows: Box::new(Mapped { items, row }), prefix: None }
    }
    /// The same part, each row after `prefix`'s columns.
    pub fn prefixed<P: Record + Send + 'static>(self, prefix: P) -> Part {
        Part { prefix: Some((Box::new(vec![prefix]), P::FIELDS)), ..self }
    }
    /// Its columns' fields, in order: the prefix's, then the rows'.
    pub fn fields(&self) -> Vec<Field> {
        self.prefix.iter().flat_map(|(_, f)| f.iter()).chain(self.fields).copied().collect()
    }
    /// How many rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    /// Whether it has no row.
    pub fn is_empty(&self) -> bool {
        self.rows.len() == 0
    }
    /// Gives row `i`'s values to `c`, in the order of [`Part::fields`].
    pub fn put(&self, i: usize, c: &mut dyn Columns) {
        if let Some((p, _)) = &self.prefix {
            p.put(0, c);
        }
        self.rows.put(i, c)
    }
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Part").field("name", &self.name).field("rows", &self.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: usize) -> Row {
        Row::new(i).unwrap()
    }

    /// A value's code is the one it was first given, whether the vocabulary is looked through
    /// (up to `Vocab::SCAN` values) or hashed (past it): values given again after others; a
    /// null's code is 0, and the codes go on across batches.
    #[test]
    fn codes_are_those_first_given_looked_through_or_hashed() {
        let seq: Vec<String> = (0..120).map(|i| format!("w{}", (i * 7) % 23)).collect();
        let mut d = Nullable::<Texts>::default();
        let (mut order, mut want): (Vec<&str>, Vec<i32>) = (Vec::new(), Vec::new());
        for (i, w) in seq.iter().enumerate() {
            Some(w.as_str()).push(&mut d, row(i));
            let c = order.iter().position(|x| x == w).unwrap_or_else(|| {
                order.push(w);
                order.len() - 1
            });
            want.push(c as i32);
        }
        assert!(order.len() > Vocab::SCAN);
        None::<&str>.push(&mut d, row(want.len()));
        want.push(0);
        let n = want.len();
        assert_eq!(d.col.codes.take(n), want);
        let valid = d.valid.take(n).unwrap();
        assert_eq!(valid, [u64::MAX, (1 << (n - 64 - 1)) - 1]);
        assert_eq!(d.col.vocab.words().iter().map(|w| &**w).collect::<Vec<_>>(), order);
        Put::push(&seq[5], &mut d.col, row(0));
        assert_eq!((d.col.codes.take(1), d.valid.take(1)), (vec![want[5]], None));
    }

    /// Shared text is known again by its address, and by its bytes when another `Arc` holds
    /// them; its codes are those of the same values given otherwise.
    #[test]
    fn shared_text_codes_by_address_or_bytes() {
        use std::sync::Arc;
        let (a, a2, b): (Arc<str>, Arc<str>, Arc<str>) = ("a".into(), "a".into(), "b".into());
        let mut d = Texts::default();
        Shared(&a).push(&mut d, row(0));
        Shared(&a).push(&mut d, row(1));
        Shared(&a2).push(&mut d, row(2));
        Shared(&b).push(&mut d, row(3));
        "a".push(&mut d, row(4));
        Shared(&b).push(&mut d, row(5));
        Shared(&a2).push(&mut d, row(6));
        Name("b").push(&mut d, row(7));
        Shared(&a).push(&mut d, row(8));
        assert_eq!(d.codes.take(9), [0, 0, 0, 1, 0, 1, 0, 1, 0]);
    }

    /// A `u64` past `i64::MAX` is noted, not wrapped; nulls are kept apart from values, and
    /// zero where a value of an earlier batch was; a batch's validity is its own.
    #[test]
    fn ints_note_overflow_and_nulls() {
        let mut c = Nullable::<Ints>::default();
        for (i, v) in [1, 2, 3, 4].into_iter().enumerate() {
            Some(v as u64).push(&mut c, row(i));
        }
        None::<u64>.push(&mut c, row(4));
        assert_eq!((c.col.values.take(5), c.valid.take(5)), (vec![1, 2, 3, 4, 0], Some(vec![0b1111])));
        Some(5u64).push(&mut c, row(0));
        None::<u64>.push(&mut c, row(1));
        Some(u64::MAX).push(&mut c, row(2));
        assert_eq!(c.col.overflow, Some(u64::MAX));
        assert_eq!(c.col.values.take(3), [5, 0, 0]);
        assert_eq!(c.valid.take(3), Some(vec![0b101]));
        Some(6u64).push(&mut c, row(0));
        assert_eq!((c.col.values.take(1), c.valid.take(1)), (vec![6], None));
        assert_eq!(Row::new(BATCH_ROWS), None);
    }
}

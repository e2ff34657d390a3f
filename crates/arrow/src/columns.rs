//! Columns from the field lists ([`tcpscope_core::table`]), and rows into them.
//!
//! A table's Arrow schema is made from its records' `FIELDS` (name, kind, nullable, with the
//! unit and meaning as field metadata). The per-packet rows of `segments` and `rtt` are pushed
//! onto their records' own columns ([`tcpscope_core::table::Record::push`], made into arrays by
//! [`array()`]); a row goes into a [`TableBuilder`]'s column builders one of two ways:
//! - a [`Record`] (declared with core's `record!`: the connection each row is about) by
//!   [`TableBuilder::put`]: typed appends written from the same declaration as its `FIELDS`,
//!   no serializer in between (the serde walk cost ~1,800 instructions a `segments` row,
//!   docs/performance.md);
//! - any other record (a connection's statistics, a screen event: one row per connection or
//!   event, not per packet) by [`TableBuilder::append`], a serde serializer that flattens
//!   nested objects in order; core's tests hold each record's serialized keys to its
//!   `FIELDS`, so the values land in the columns the schema names.
//!
//! Either way a value of the wrong kind is an error, not a silent conversion.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use arrow_array::builder::{ArrayBuilder, BooleanBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{ArrayRef, BooleanArray, DictionaryArray, Int32Array, PrimitiveArray, RecordBatch, StringArray};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field as ArrowField, Schema, SchemaRef};
use serde::Serialize;
use serde::ser::{self, Impossible};
use tcpscope_core::table::{ColMut, Columns, Field, Kind, Record, Validity, Values, Vocab};

/// One column: its name in the table and the field it holds.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// The column's name (the field's, maybe with a prefix).
    pub name: &'static str,
    /// The field's definition.
    pub field: Field,
}

/// The columns of `fields`, named as the fields are.
pub fn columns(fields: &[Field]) -> Vec<Column> {
    fields.iter().map(|&field| Column { name: field.name, field }).collect()
}

/// A column named `prefix` + the field's name (names made once per table and kept for the
/// life of the program: a handful of short strings).
pub fn prefixed(prefix: &str, field: Field) -> Column {
    let name: &'static str = if prefix.is_empty() { field.name } else { intern(format!("{prefix}{}", field.name)) };
    Column { name, field }
}

fn intern(s: String) -> &'static str {
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    names.entry(s.clone()).or_insert_with(|| Box::leak(s.into_boxed_str()))
}

/// The Arrow type of a field's values: integers as `Int64` (every count and number fits, and
/// pandas, DuckDB and Spark read it natively), floats as `Float64`, flags as `Boolean`, text as
/// `Utf8`.
pub fn data_type(kind: Kind) -> Option<DataType> {
    match kind {
        Kind::Int => Some(DataType::Int64),
        Kind::Float => Some(DataType::Float64),
        Kind::Bool => Some(DataType::Boolean),
        Kind::Text => Some(DataType::Utf8),
        Kind::Object | Kind::Counts | Kind::List => None,
    }
}

/// The schema of `cols`: each column nullable as its field, with the field's `unit` and
/// `doc` as metadata.
pub fn schema(cols: &[Column]) -> SchemaRef {
    let fields: Vec<ArrowField> = cols
        .iter()
        .map(|c| {
            // Objects are expanded into columns before a schema is made (a bug otherwise,
            // caught by the schema tests).
            let ty = data_type(c.field.kind).unwrap_or(DataType::Utf8);
            let meta =
                HashMap::from([("unit".to_string(), c.field.unit.to_string()), ("doc".into(), c.field.doc.into())]);
            ArrowField::new(c.name, ty, c.field.nullable).with_metadata(meta)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Text columns whose values come from a handful, whatever the table: the trace (`input`),
/// the capture file (`file`), a direction (`dir`), flag letters (`flags`), a segment's
/// `verdict` and `class`, an RTT sample's `kind`. A table builder keeps them as codes into
/// their vocabulary ([`coded`]): a row's value is found among the few seen before instead of
/// copied, and Parquet writes the codes as they are (crate::dict).
pub const FEW_VALUES: [&str; 7] = ["input", "file", "dir", "flags", "verdict", "class", "kind"];

/// Whether column `c` is kept coded (text, named in [`FEW_VALUES`]).
fn is_coded(c: &Column) -> bool {
    c.field.kind == Kind::Text && FEW_VALUES.contains(&c.name)
}

/// The Arrow type of a coded column: `Int32` codes into `Utf8` values.
fn coded_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The schema of the batches a [`TableBuilder`] of `cols` makes: [`schema`], with the columns
/// named in [`FEW_VALUES`] dictionary-coded ([`decode`] gives the table's own schema back).
pub fn coded(cols: &[Column]) -> SchemaRef {
    let plain = schema(cols);
    let fields: Vec<ArrowField> = cols
        .iter()
        .zip(plain.fields())
        .map(|(c, f)| if is_coded(c) { f.as_ref().clone().with_data_type(coded_type()) } else { f.as_ref().clone() })
        .collect();
    Arc::new(Schema::new(fields))
}

/// `batch` with its dictionary-coded text columns as plain text (`Utf8`): a table builder's
/// batch in its table's schema ([`schema`]), the values unchanged.
pub fn decode(batch: &RecordBatch) -> Result<RecordBatch, RowError> {
    if !batch.schema().fields().iter().any(|f| matches!(f.data_type(), DataType::Dictionary(..))) {
        return Ok(batch.clone());
    }
    let err = |e: arrow_schema::ArrowError| RowError(e.to_string());
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut arrays = Vec::with_capacity(batch.num_columns());
    for (f, a) in batch.schema().fields().iter().zip(batch.columns()) {
        match a.as_dictionary_opt::<Int32Type>() {
            Some(d) => {
                arrays.push(arrow_select::take::take(d.values(), d.keys(), None).map_err(err)?);
                fields.push(f.as_ref().clone().with_data_type(d.values().data_type().clone()));
            }
            None => {
                arrays.push(a.clone());
                fields.push(f.as_ref().clone());
            }
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(err)
}

/// The array of the first `rows` rows of a record's column ([`tcpscope_core::table::Col`]),
/// as the coded schema has it: text as a dictionary array of its codes (`Utf8` if `ty` says
/// so); the column starts again, empty. Numbers and codes go into the array in the column's
/// own buffer, which `lent` takes back for the column once the array is gone ([`Lent`]).
pub fn array(col: ColMut<'_>, rows: usize, ty: &DataType, lent: &mut Lent) -> Result<ArrayRef, RowError> {
    Ok(match col {
        ColMut::Int(c, valid) => {
            if let Some(v) = c.overflow.take() {
                return Err(RowError(format!("{v} does not fit a 64-bit signed integer")));
            }
            Arc::new(PrimitiveArray::<Int64Type>::new(lent.take(&mut c.values, rows), nulls(valid, rows)))
        }
        ColMut::Float(c, valid) => Arc::new(PrimitiveArray::<Float64Type>::new(lent.take(c, rows), nulls(valid, rows))),
        ColMut::Bool(c, valid) => Arc::new(BooleanArray::new(BooleanBuffer::from(c.take(rows)), nulls(valid, rows))),
        ColMut::Text(c, valid) => dict(lent.take(&mut c.codes, rows), nulls(valid, rows), &c.vocab, ty)?,
    })
}

/// The buffers one column of a stream of batches lent to their arrays ([`array()`]), each taken
/// back for the column's next rows once the arrays holding it are gone (written and dropped
/// by the writer's thread): a batch's values are not copied out, and the buffers in use stay
/// the same few, already faulted in (a new one each batch was ~500 page faults a batch).
/// Only the last `Lent::KEPT` (8) are kept: an array kept by its reader (Python's `read`) is
/// never given back.
#[derive(Debug, Default)]
pub struct Lent(VecDeque<Buffer>);

impl Lent {
    /// Buffers kept at most: the batches in flight to a writer (its queue, the one being
    /// written) and some room.
    const KEPT: usize = 8;

    /// The first `rows` values of `values`, in its own buffer, lent ([`Values::swap`]: the
    /// column goes on in a buffer given back, if one is).
    fn take<T: ArrowNativeType + Default>(&mut self, values: &mut Values<T>, rows: usize) -> ScalarBuffer<T> {
        let back = self.back();
        ScalarBuffer::new(self.lend(values.swap(rows, back)), 0, rows)
    }

    /// A buffer no array holds any more, if one is.
    fn back<T: ArrowNativeType>(&mut self) -> Option<Vec<T>> {
        for _ in 0..self.0.len() {
            match self.0.pop_front()?.into_vec::<T>() {
                Ok(v) => return Some(v),
                Err(b) => self.0.push_back(b),
            }
        }
        None
    }

    /// `v` as an array's buffer, kept to be taken back.
    fn lend<T: ArrowNativeType>(&mut self, v: Vec<T>) -> Buffer {
        let b = Buffer::from_vec(v);
        if self.0.len() >= Lent::KEPT {
            self.0.pop_front();
        }
        self.0.push_back(b.clone());
        b
    }
}

/// The validity of a nullable column's first `rows` rows: its bits as they are, `None` if
/// every row has a value.
fn nulls(valid: Option<&mut Validity>, rows: usize) -> Option<NullBuffer> {
    let words = valid?.take(rows)?;
    Some(NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(words), 0, rows)))
}

/// The dictionary array of `codes` into `vocab`'s values (their `Utf8` values if `ty` is not a
/// dictionary type).
fn dict(
    codes: ScalarBuffer<i32>,
    nulls: Option<NullBuffer>,
    vocab: &Vocab,
    ty: &DataType,
) -> Result<ArrayRef, RowError> {
    let words = vocab.words();
    // The value array always has one value: a column of nulls only has no words yet.
    let values: StringArray = if words.is_empty() {
        StringArray::from_iter_values([""])
    } else {
        StringArray::from_iter_values(words.iter().map(|w| &**w))
    };
    let keys = Int32Array::new(codes, nulls);
    // SAFETY: every code is below the vocabulary's length: a row's code is that of a value in
    // `words` (`Vocab::code`: found there, or pushed onto it), a null's or a row not stored 0,
    // and `values` has one value at least; the vocabulary only grows. Checking the codes again
    // (`try_new`) is a pass over every row of the batch.
    let coded = unsafe { DictionaryArray::<Int32Type>::new_unchecked(keys, Arc::new(values)) };
    Ok(match ty {
        DataType::Dictionary(..) => Arc::new(coded),
        _ => arrow_select::take::take(coded.values(), coded.keys(), None).map_err(|e| RowError(e.to_string()))?,
    })
}

/// A growing column of plain values (a table builder's): a vector, and which rows have a value
/// once one has not (a validity bitmap kept as the rows come, and a value zeroed for each
/// null, as arrow's builders do, took a seventh of the `segments` rows' thread when they were
/// built here: its floats are mostly null).
#[derive(Debug)]
struct Plain<T> {
    /// The values (a null's is the default).
    values: Vec<T>,
    /// Which rows have a value; `None` while every row has.
    valid: Option<Vec<bool>>,
}

impl<T> Default for Plain<T> {
    fn default() -> Self {
        Plain { values: Vec::new(), valid: None }
    }
}

impl<T: Default> Plain<T> {
    /// Appends a value.
    #[inline(always)]
    fn push(&mut self, v: T) {
        self.values.push(v);
        if let Some(valid) = &mut self.valid {
            valid.push(true);
        }
    }
    /// Appends a null.
    #[inline]
    fn null(&mut self) {
        let (n, room) = (self.values.len(), self.values.capacity());
        self.valid
            .get_or_insert_with(|| {
                let mut v = Vec::with_capacity(room.max(n + 1));
                v.resize(n, true);
                v
            })
            .push(false);
        self.values.push(T::default());
    }
    /// The values and validity so far; the column starts again with room for as many
    /// (growing it by doubling would reallocate and copy it ~15 times a batch).
    fn take(&mut self) -> (Vec<T>, Option<NullBuffer>) {
        let n = self.values.len();
        (std::mem::replace(&mut self.values, Vec::with_capacity(n)), self.valid.take().map(NullBuffer::from))
    }
}

enum Builder {
    Int(Plain<i64>),
    Float(Plain<f64>),
    Bool(BooleanBuilder),
    Text(StringBuilder),
    /// Text of few values: codes into its vocabulary.
    Dict(Plain<i32>, Vocab),
}

impl Builder {
    fn new(c: &Column) -> Builder {
        match c.field.kind {
            Kind::Int => Builder::Int(Plain::default()),
            Kind::Float => Builder::Float(Plain::default()),
            Kind::Bool => Builder::Bool(BooleanBuilder::new()),
            _ if is_coded(c) => Builder::Dict(Plain::default(), Vocab::default()),
            _ => Builder::Text(StringBuilder::new()),
        }
    }
    #[inline(always)]
    fn null(&mut self) {
        match self {
            Builder::Int(b) => b.null(),
            Builder::Float(b) => b.null(),
            Builder::Bool(b) => b.append_null(),
            Builder::Text(b) => b.append_null(),
            Builder::Dict(b, _) => b.null(),
        }
    }
    /// The values so far as an array; the builder starts again with room for as many
    /// (arrow's builders start empty after `finish`, and growing one by doubling reallocates
    /// and copies it ~17 times a batch: a third of the rows' thread, docs/performance.md).
    fn finish(&mut self) -> Result<ArrayRef, RowError> {
        let n = self.len();
        Ok(match self {
            Builder::Int(b) => {
                let (values, valid) = b.take();
                Arc::new(PrimitiveArray::<Int64Type>::new(values.into(), valid))
            }
            Builder::Float(b) => {
                let (values, valid) = b.take();
                Arc::new(PrimitiveArray::<Float64Type>::new(values.into(), valid))
            }
            Builder::Bool(b) => {
                let a = b.finish();
                *b = BooleanBuilder::with_capacity(n);
                Arc::new(a)
            }
            Builder::Text(b) => {
                let bytes = b.values_slice().len();
                let a = b.finish();
                *b = StringBuilder::with_capacity(n, bytes);
                Arc::new(a)
            }
            Builder::Dict(b, vocab) => {
                let (codes, valid) = b.take();
                dict(codes.into(), valid, vocab, &coded_type())?
            }
        })
    }
    fn len(&self) -> usize {
        match self {
            Builder::Int(b) => b.values.len(),
            Builder::Float(b) => b.values.len(),
            Builder::Bool(b) => b.len(),
            Builder::Text(b) => b.len(),
            Builder::Dict(b, _) => b.values.len(),
        }
    }
}

/// A value that does not fit its column: a bug (the tests write every table).
#[derive(Debug)]
pub struct RowError(String);

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RowError {}

impl ser::Error for RowError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        RowError(msg.to_string())
    }
}

impl From<RowError> for std::io::Error {
    fn from(e: RowError) -> Self {
        std::io::Error::other(e)
    }
}

/// Rows of one table being put together, column by column.
pub struct TableBuilder {
    schema: SchemaRef,
    /// The schema of its batches ([`coded`]).
    coded: SchemaRef,
    cols: Vec<Column>,
    builders: Vec<Builder>,
    /// The next column of the row being appended.
    at: usize,
    rows: usize,
    /// The first value of a typed append ([`TableBuilder::put`]) that did not fit its column
    /// in the row being appended.
    error: Option<RowError>,
}

impl TableBuilder {
    /// An empty table of `cols`.
    pub fn new(cols: Vec<Column>) -> TableBuilder {
        let builders = cols.iter().map(Builder::new).collect();
        TableBuilder { schema: schema(&cols), coded: coded(&cols), cols, builders, at: 0, rows: 0, error: None }
    }

    /// The table's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The schema of its batches: the table's, with the text columns of [`FEW_VALUES`]
    /// dictionary-coded.
    pub fn coded_schema(&self) -> &SchemaRef {
        &self.coded
    }

    /// Rows appended since the last [`TableBuilder::finish`].
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Appends `value`'s fields (nested objects flattened in order) to the row being made,
    /// from the next column on, leaving out its top-level fields named in `skip`.
    pub fn append<T: Serialize + ?Sized>(&mut self, value: &T, skip: &[&str]) -> Result<(), RowError> {
        value.serialize(&mut Appender { t: self, skip, depth: 0 })
    }

    /// Appends `record`'s fields to the row being made, from the next column on, each typed
    /// (its kind checked against the column's: an error at [`TableBuilder::end_row`]).
    #[inline]
    pub fn put<R: Record + ?Sized>(&mut self, record: &R) {
        record.put(self)
    }

    /// Ends the row: every column must have had its value, of its kind.
    pub fn end_row(&mut self) -> Result<(), RowError> {
        if let Some(e) = self.error.take() {
            // The row is partly in the columns: the table cannot go on (a bug, as the error says).
            return Err(e);
        }
        if self.at != self.cols.len() {
            return Err(RowError(format!("a row of {} values for {} columns", self.at, self.cols.len())));
        }
        self.at = 0;
        self.rows += 1;
        Ok(())
    }

    /// The rows so far as a record batch of the [coded schema](TableBuilder::coded_schema)
    /// ([`decode`] makes it one of the table's schema); the builder is empty after.
    pub fn finish(&mut self) -> Result<RecordBatch, RowError> {
        let arrays: Vec<ArrayRef> = self.builders.iter_mut().map(Builder::finish).collect::<Result<_, _>>()?;
        self.rows = 0;
        RecordBatch::try_new(self.coded.clone(), arrays).map_err(|e| RowError(e.to_string()))
    }

    fn next(&mut self, what: &str) -> Result<(&mut Builder, &'static str), RowError> {
        let i = self.at;
        let Some(b) = self.builders.get_mut(i) else {
            return Err(RowError(format!("more values than the {} columns ({what})", self.cols.len())));
        };
        self.at += 1;
        Ok((b, self.cols[i].name))
    }

    fn serde_int(&mut self, v: i64) -> Result<(), RowError> {
        match self.next("an integer")? {
            (Builder::Int(b), _) => {
                b.push(v);
                Ok(())
            }
            (_, name) => Err(RowError(format!("column {name}: an integer where the field list says otherwise"))),
        }
    }
}

impl TableBuilder {
    /// The next column's builder for a typed value, or `None` (the error noted) when the row
    /// has no more columns.
    #[inline]
    fn typed(&mut self, what: &str) -> Option<&mut Builder> {
        let i = self.at;
        self.at += 1;
        if i < self.builders.len() {
            return Some(&mut self.builders[i]);
        }
        let n = self.cols.len();
        self.error.get_or_insert_with(|| RowError(format!("more values than the {n} columns ({what})")));
        None
    }

    #[cold]
    fn mistyped(&mut self, what: &str) {
        let name = self.cols[self.at - 1].name;
        self.error.get_or_insert_with(|| wrong(name, what));
    }
}

/// Typed appends ([`TableBuilder::put`]): each value into the next column, whose builder must
/// be of its kind.
impl Columns for TableBuilder {
    #[inline(always)]
    fn int(&mut self, v: i64) {
        match self.typed("an integer") {
            Some(Builder::Int(b)) => b.push(v),
            Some(_) => self.mistyped("an integer"),
            None => {}
        }
    }
    #[inline(always)]
    fn uint(&mut self, v: u64) {
        match i64::try_from(v) {
            Ok(v) => Columns::int(self, v),
            Err(_) => {
                self.at += 1;
                self.error.get_or_insert_with(|| RowError(format!("{v} does not fit a 64-bit signed integer")));
            }
        }
    }
    #[inline(always)]
    fn float(&mut self, v: f64) {
        match self.typed("a float") {
            Some(Builder::Float(b)) => b.push(v),
            Some(_) => self.mistyped("a float"),
            None => {}
        }
    }
    #[inline(always)]
    fn bool(&mut self, v: bool) {
        match self.typed("a flag") {
            Some(Builder::Bool(b)) => b.append_value(v),
            Some(_) => self.mistyped("a flag"),
            None => {}
        }
    }
    #[inline(always)]
    fn text(&mut self, v: &str) {
        match self.typed("text") {
            Some(Builder::Dict(b, vocab)) => b.push(vocab.code(v)),
            Some(Builder::Text(b)) => b.append_value(v),
            Some(_) => self.mistyped("text"),
            None => {}
        }
    }
    #[inline(always)]
    fn null(&mut self) {
        if let Some(b) = self.typed("null") {
            b.null()
        }
    }
}

struct Appender<'a, 'b> {
    t: &'a mut TableBuilder,
    skip: &'b [&'b str],
    depth: usize,
}

fn wrong(name: &str, what: &str) -> RowError {
    RowError(format!("column {name}: {what} where the field list says otherwise"))
}

impl<'a, 'b, 'c> ser::Serializer for &'c mut Appender<'a, 'b> {
    type Ok = ();
    type Error = RowError;
    type SerializeSeq = Impossible<(), RowError>;
    type SerializeTuple = Impossible<(), RowError>;
    type SerializeTupleStruct = Impossible<(), RowError>;
    type SerializeTupleVariant = Impossible<(), RowError>;
    type SerializeMap = Impossible<(), RowError>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), RowError>;

    fn serialize_bool(self, v: bool) -> Result<(), RowError> {
        match self.t.next("a flag")? {
            (Builder::Bool(b), _) => {
                b.append_value(v);
                Ok(())
            }
            (_, name) => Err(wrong(name, "a flag")),
        }
    }
    fn serialize_i8(self, v: i8) -> Result<(), RowError> {
        self.t.serde_int(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), RowError> {
        self.t.serde_int(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), RowError> {
        self.t.serde_int(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), RowError> {
        self.t.serde_int(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), RowError> {
        self.t.serde_int(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), RowError> {
        self.t.serde_int(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), RowError> {
        self.t.serde_int(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), RowError> {
        let v = i64::try_from(v).map_err(|_| RowError(format!("{v} does not fit a 64-bit signed integer")))?;
        self.t.serde_int(v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), RowError> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), RowError> {
        match self.t.next("a float")? {
            (Builder::Float(b), _) => {
                b.push(v);
                Ok(())
            }
            (_, name) => Err(wrong(name, "a float")),
        }
    }
    fn serialize_char(self, v: char) -> Result<(), RowError> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), RowError> {
        match self.t.next("text")? {
            (Builder::Dict(b, vocab), _) => {
                b.push(vocab.code(v));
                Ok(())
            }
            (Builder::Text(b), _) => {
                b.append_value(v);
                Ok(())
            }
            (_, name) => Err(wrong(name, "text")),
        }
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), RowError> {
        Err(RowError("bytes have no column kind".into()))
    }
    fn serialize_none(self) -> Result<(), RowError> {
        self.t.next("null")?.0.null();
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), RowError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), RowError> {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), RowError> {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), RowError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), RowError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), RowError> {
        Err(RowError("an enum with data has no column kind".into()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, RowError> {
        Err(RowError("a list has no column kind".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, RowError> {
        Err(RowError("a tuple has no column kind".into()))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, RowError> {
        Err(RowError("a tuple has no column kind".into()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, RowError> {
        Err(RowError("an enum with data has no column kind".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, RowError> {
        Err(RowError("a map has no column kind".into()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, RowError> {
        self.depth += 1;
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, RowError> {
        Err(RowError("an enum with data has no column kind".into()))
    }
}

impl ser::SerializeStruct for &mut Appender<'_, '_> {
    type Ok = ();
    type Error = RowError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), RowError> {
        if self.depth == 1 && self.skip.contains(&key) {
            return Ok(());
        }
        v.serialize(&mut **self)
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), RowError> {
        // A field left out of the JSON when absent (`max_idle_s` of `conns`' rows) is a null
        // here: every row has every column.
        if self.depth == 1 && self.skip.contains(&key) {
            return Ok(());
        }
        self.t.next("null")?.0.null();
        Ok(())
    }
    fn end(self) -> Result<(), RowError> {
        self.depth -= 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use tcpscope_core::table::{Col, Ints, Row, Texts};

    /// A column's buffer goes to its batch's array without a copy and comes back to the column
    /// once no array holds it, its rows stored over: never while an array still reads it.
    #[test]
    fn a_columns_buffer_comes_back_once_its_array_is_gone() {
        let (mut ints, mut texts, mut lent) = (Ints::default(), Texts::default(), [Lent::default(), Lent::default()]);
        let coded = coded_type();
        let batch = |rows: &[i64], ints: &mut Ints, texts: &mut Texts, lent: &mut [Lent; 2]| {
            for (i, &v) in rows.iter().enumerate() {
                ints.push(Row::new(i).unwrap(), v);
                texts.push(Row::new(i).unwrap(), if v % 2 == 0 { "even" } else { "odd" });
            }
            let [a, b] = lent;
            let n = rows.len();
            (array(ints.as_mut(), n, &DataType::Int64, a).unwrap(), array(texts.as_mut(), n, &coded, b).unwrap())
        };
        let values = |a: &ArrayRef| a.as_primitive::<Int64Type>().values().to_vec();
        let first = batch(&[1, 2, 3, 4], &mut ints, &mut texts, &mut lent);
        let at = first.0.as_primitive::<Int64Type>().values().as_ptr();
        // The first batch is still held: the second gets a buffer of its own.
        let second = batch(&[5, 6], &mut ints, &mut texts, &mut lent);
        assert_ne!(second.0.as_primitive::<Int64Type>().values().as_ptr(), at);
        assert_eq!((values(&first.0), values(&second.0)), (vec![1, 2, 3, 4], vec![5, 6]));
        // Both dropped: the next batch after them is stored in the first's buffer again.
        drop((first, second));
        let third = batch(&[7], &mut ints, &mut texts, &mut lent);
        let fourth = batch(&[8, 9, 10], &mut ints, &mut texts, &mut lent);
        assert_eq!(fourth.0.as_primitive::<Int64Type>().values().as_ptr(), at);
        assert_eq!((values(&third.0), values(&fourth.0)), (vec![7], vec![8, 9, 10]));
        let words = |a: &ArrayRef| {
            let d = a.as_dictionary::<Int32Type>();
            let v = d.values().as_string::<i32>();
            d.keys().iter().map(|k| v.value(k.unwrap() as usize).to_string()).collect::<Vec<_>>()
        };
        assert_eq!(
            (words(&third.1), words(&fourth.1)),
            (vec!["odd".to_string()], vec!["even".into(), "odd".into(), "even".into()])
        );
        assert_eq!(fourth.1.len(), 3);
    }
}

//! Machine-readable output: JSON (schema in `docs/json.md`) and CSV, and the records of the
//! columnar exports (`rows`).

pub mod json;
pub mod packet;
pub mod rows;
pub mod states;

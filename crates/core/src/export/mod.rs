//! Machine-readable output: JSON (schema in `docs/json.md`) and CSV.

pub mod json;
pub mod packet;
pub mod states;

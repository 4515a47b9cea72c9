//! The containers section of the report. The lead wires it into `report/mod.rs` with
//! `pub mod containers;` and a call to [`write_section`]`(dir, &classes)`, which writes the
//! tables and charts into `dir` and returns the files plus a short Markdown summary.

pub use crate::containers::section::{write_section, ContainerSection};

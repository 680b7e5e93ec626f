//! Criterion benchmarks of sessdb against its peers (DSH-style JSONL append, SQLite).
//! Not built yet: this crate holds the place of the benchmarks in the workspace.

#![forbid(unsafe_code)]

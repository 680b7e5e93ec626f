//! DSH JSONL and SQLite export/import for sessdb stores (DESIGN §4). Not built yet: this
//! crate holds the place of the `formats` layer in the workspace.

#![forbid(unsafe_code)]

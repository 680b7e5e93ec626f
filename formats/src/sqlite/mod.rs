//! SQLite export and import (`docs/FORMATS.md`).

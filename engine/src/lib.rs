//! sessdb: an embedded, event-sourced storage engine for LLM-agent sessions.
//!
//! An agent harness appends session events (DSH format v0: user messages, streamed assistant
//! chunks, tool calls and results, turn markers, plugin events). sessdb validates each event
//! with one acceptance function, keeps `data` as the exact JSON bytes received, and maintains
//! the session's *surface* — the ordered seqs that become LLM messages — one event at a time.
//!
//! ```
//! use sessdb::{Config, Draft, LogType, Session, SessionHeader, SurfaceIntent, SurfaceType};
//!
//! # fn main() -> sessdb::Result<()> {
//! let mut s = Session::create(SessionHeader::new("s1", 0), [], Config::default())?;
//! s.append(Draft::log(LogType::TURN_START, br#"{"turn":1}"#))?;
//! let user = br#"{"id":"m1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hi"}]}"#;
//! let seq = s.append(Draft::surface(SurfaceType::UserMessage, user, SurfaceIntent::append()))?;
//! assert_eq!(s.surface(), &[seq]);
//! assert_eq!(s.messages()[0].json, user);
//!
//! // A surface type cannot be appended as a log-only type:
//! assert!(LogType::new("user/message").is_err());
//! // and a dynamic append without a surfaceOp is refused by rule, leaving the session as it was.
//! let err = s.append(Draft::dynamic("user/message", user.as_slice())).unwrap_err();
//! assert!(err.to_string().contains("surface-op-required"));
//! assert_eq!(s.len(), 3);
//! # Ok(())
//! # }
//! ```
//!
//! The durable store keeps many sessions in one checksummed log and repairs itself on open:
//!
//! ```
//! use std::sync::Arc;
//! use sessdb::storage::MemStorage;
//! use sessdb::{Draft, LogType, SessionHeader, Store, StoreOptions};
//!
//! # fn main() -> sessdb::Result<()> {
//! let storage = Arc::new(MemStorage::new()); // `Store::open(dir, options)` for real files
//! let store = Store::open_with(storage.clone(), StoreOptions::default())?;
//! store.create_session(SessionHeader::new("s1", 0), Vec::new())?;
//! store.append("s1", Draft::log(LogType::TURN_START, br#"{"turn":1}"#))?;
//! store.close()?;
//!
//! let reopened = Store::open_with(storage, StoreOptions::default())?;
//! assert_eq!(reopened.session_len("s1")?, 2); // end-seed marker + turn/start
//! assert_eq!(reopened.open_report().records_replayed, 0); // the checkpoint covered it all
//! # Ok(())
//! # }
//! ```
//!
//! Module map: [`json`] (validation and zero-copy navigation of stored JSON), [`event`] (the
//! envelope and its JSONL line), [`model`] (acceptance, surface, messages, seeds, fork,
//! repair), [`storage`] (the I/O seam), [`store`] (the durable store).
//!
//! The semver promise covers what these docs show. Items hidden from them — the `codec`
//! module (every byte on disk, `docs/FORMAT.md`), the checkpoint constants, the storage's
//! replacement writer and write window — are public only for sessdb's own crates, tests and
//! fuzzers, and may change in any release.

#![deny(unsafe_code)]
// allowed only in `storage::mmap`, the module that maps sealed segments
// No silent narrowing: lengths and offsets convert with `try_from` or a documented helper.
#![cfg_attr(
    not(test),
    deny(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap
    )
)]

// Every byte on disk: for sessdb's own crates, tests and fuzzers, outside the semver promise.
#[doc(hidden)]
pub mod codec;
mod corruption;
mod error;
pub mod event;
pub mod json;
mod limits;
pub mod model;
pub mod storage;
pub mod store;
mod width;

pub use corruption::{CorruptionKind, SegmentHeaderError};
pub use error::{Error, ForkErrorCode, Result, Violation};
pub use event::view::EventRef;
pub use event::{Event, LogType, PackHint, SurfaceOp, SurfaceType};
pub use limits::{Clock, Config, Limits, MAX_SAFE_INTEGER};
pub use model::{
    Draft, EventData, ForkSpec, HeaderColumns, Message, Origin, ResumeReport, Session,
    SessionHeader, SessionSet, SessionState, SurfaceIntent, random_uuid,
};
pub use store::{
    CheckpointWrites, CompactionPolicy, Durability, OpenReport, RetentionPolicy, SessionHandle,
    Store, StoreOptions, TryAppend,
};

/// The README's Rust examples, as doctests: the first runs, the others (which write
/// `./my-store`) are compiled.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;

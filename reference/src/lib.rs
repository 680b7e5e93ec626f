//! A naive reference model of DSH v0 session acceptance (`docs/DESIGN.md` §2), written from
//! the rules and independently of the engine: it shares no code with `sessdb`, parses JSON
//! with `serde_json` into trees, keeps every event, and rebuilds the surface on every replace
//! instead of splicing it. It is slow on purpose and simple enough to check by reading.
//!
//! The property tests and the fuzz targets (`replace_validation`, `seed_rejection`) run the
//! engine and this model side by side: they must agree on accept or refuse, on the rule a
//! refusal names, on the surface and on the derived messages.
//!
//! ```
//! use sessdb_reference::{Candidate, Model, Op};
//!
//! let mut model = Model::new();
//! let user = br#"{"id":"u1","role":"user","source":{"kind":"user"},"content":[]}"#;
//! model.accept(&Candidate::surface(0, "user/message", user, Op::Append)).unwrap();
//! let summary = br#"{"id":"s","role":"user","source":{"kind":"compaction"},"content":[]}"#;
//! let replace = Candidate::surface(1, "user/message", summary, Op::Replace { start: 0, end: 0 });
//! // A replacement must cite every seq it shadows.
//! assert_eq!(model.decide(&replace).unwrap_err().rule, "replace-cites-shadowed");
//! model.accept(&replace.with_sources(vec![0])).unwrap();
//! assert_eq!(model.surface(), vec![1]);
//! ```
#![forbid(unsafe_code)]

mod candidate;
mod header;
mod model;
mod rules;
mod shape;
pub mod surface;
mod value;
pub mod vocabulary;

pub use candidate::{Candidate, Op};
pub use header::check_header;
pub use model::Model;
pub use rules::Refusal;

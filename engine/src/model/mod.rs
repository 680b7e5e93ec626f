//! The session model (DESIGN §2): acceptance, surface, messages, seeds, fork and repair, in
//! memory and independent of storage. The durable store keeps a [`SessionState`] per session
//! and runs the same acceptance function (`plan`) before it writes anything.

mod accept;
#[cfg(test)]
mod accept_tests;
mod draft;
mod fork;
mod header;
mod header_canonical;
mod lifecycle;
mod messages;
mod repair;
mod session;
#[cfg(test)]
mod session_tests;
mod set;
mod shape;
mod shared_vec;
mod short_str;
mod state;
mod surface;
mod turns;
mod verdict;

pub(crate) use accept::{EventChecked, EventSource, plan, plan_checked, precheck};
pub use draft::{Draft, EventData, SurfaceIntent};
pub use fork::{ForkSpec, child_header, inherited_len};
pub use header::{HeaderColumns, Origin, SESSION_FORMAT_VERSION, SessionHeader};
pub use lifecycle::{
    ForkPlan, ResumeReport, end_seed_after, plan_fork, random_uuid, resume_events,
};
pub use messages::{Message, derive_message, derive_message_parts};
pub use repair::{NOT_STARTED_TEXT, OUTCOME_UNKNOWN_TEXT, OpenStep, PendingCall, RepairState};
pub use session::Session;
pub use set::SessionSet;
pub(crate) use shared_vec::SharedVec;
pub use short_str::ShortStr;
pub use state::SessionState;
pub use surface::SurfaceManager;
pub use turns::TurnMarks;
pub(crate) use verdict::Verdict;

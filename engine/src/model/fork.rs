//! Fork rules of DSH v0 (`docs/DESIGN.md` §2.8): where a fork may cut its source.

use super::header::{Origin, SessionHeader};
use super::state::SessionState;
use crate::{Error, ForkErrorCode, Result};

/// What a fork asks for: `ForkSpec::default()` (everything inherited, a minted child id) and
/// the `with_*` builder methods, as [`StoreOptions`](crate::StoreOptions) is built (the struct
/// is `#[non_exhaustive]`, so a field added later breaks no caller).
///
/// ```
/// let spec = sessdb::ForkSpec::default().with_boundary(5).with_child_id("child");
/// assert_eq!(spec.boundary, Some(5));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ForkSpec {
    /// The last inherited seq (inclusive); `None` = the source's last event.
    pub boundary: Option<u64>,
    /// The child's id; `None` = mint a random (v4) UUID, as DSH does.
    pub child_id: Option<String>,
    /// The child header's `origin`.
    pub origin: Option<Origin>,
    /// The child header's `delegationDepth`.
    pub delegation_depth: u64,
    /// The child header's `agentPreset`.
    pub agent_preset: Option<String>,
}

impl ForkSpec {
    /// The child inherits the source's events through seq `seq` (inclusive).
    #[must_use]
    pub fn with_boundary(mut self, seq: u64) -> Self {
        self.boundary = Some(seq);
        self
    }

    /// The child's id (else a random v4 UUID is minted).
    #[must_use]
    pub fn with_child_id(mut self, id: impl Into<String>) -> Self {
        self.child_id = Some(id.into());
        self
    }

    /// The child header's `origin`.
    #[must_use]
    pub fn with_origin(mut self, origin: Option<Origin>) -> Self {
        self.origin = origin;
        self
    }

    /// The child header's `delegationDepth`.
    #[must_use]
    pub fn with_delegation_depth(mut self, depth: u64) -> Self {
        self.delegation_depth = depth;
        self
    }

    /// The child header's `agentPreset`.
    #[must_use]
    pub fn with_agent_preset(mut self, preset: impl Into<String>) -> Self {
        self.agent_preset = Some(preset.into());
        self
    }
}

fn refuse<T>(code: ForkErrorCode, detail: String) -> Result<T> {
    Err(Error::Fork { code, detail })
}

/// The number of events a fork of `source` at `boundary` inherits.
///
/// # Errors
/// `INVALID_BOUNDARY` for a boundary past the last seq, `OPEN_TURN` for a boundary inside an
/// open turn (no clipping, no closers in v0).
pub fn inherited_len(source_id: &str, state: &SessionState, boundary: Option<u64>) -> Result<u64> {
    let len = state.next_seq();
    let boundary = match boundary {
        None if len == 0 => return Ok(0),
        None => len - 1,
        Some(b) if b < len => b,
        Some(b) => {
            return refuse(
                ForkErrorCode::InvalidBoundary,
                format!("session {source_id:?} has no seq {b} (it has {len} events)"),
            );
        }
    };
    if state.turns().open_at(boundary) {
        return refuse(
            ForkErrorCode::OpenTurn,
            format!("seq {boundary} of session {source_id:?} lies inside an open turn"),
        );
    }
    Ok(boundary + 1)
}

/// The child's header: the source's `cwd`, `parentSession`, `seedLength` (DSH), plus what the
/// spec sets.
pub fn child_header(
    source: &SessionHeader,
    child_id: String,
    created_at: i64,
    inherited: u64,
    spec: &ForkSpec,
) -> SessionHeader {
    SessionHeader {
        cwd: source.cwd.clone(),
        parent_session: Some(source.id.clone()),
        seed_length: Some(inherited),
        origin: spec.origin,
        delegation_depth: spec.delegation_depth,
        agent_preset: spec.agent_preset.clone(),
        ..SessionHeader::new(child_id, created_at)
    }
}

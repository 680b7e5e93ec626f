//! Event type names: the surface types, the typed log-only names, and the DSH v0 vocabulary.

use std::borrow::Cow;

use crate::{Error, Result};

/// The types whose events become LLM messages (DESIGN §2: DSH's three plus the two legacy
/// types of the design notes, whose `data` has the user-message shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SurfaceType {
    /// `user/message`
    UserMessage,
    /// `assistant/message`
    AssistantMessage,
    /// `tool/result`
    ToolResult,
    /// `context/message` (legacy)
    ContextMessage,
    /// `steering/message` (legacy)
    SteeringMessage,
}

impl SurfaceType {
    /// All surface types.
    pub const ALL: [SurfaceType; 5] = [
        Self::UserMessage,
        Self::AssistantMessage,
        Self::ToolResult,
        Self::ContextMessage,
        Self::SteeringMessage,
    ];

    /// The type string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserMessage => "user/message",
            Self::AssistantMessage => "assistant/message",
            Self::ToolResult => "tool/result",
            Self::ContextMessage => "context/message",
            Self::SteeringMessage => "steering/message",
        }
    }

    /// The surface type named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        // A match (compared by length first), not a scan: called for every event read.
        Some(match name {
            "user/message" => Self::UserMessage,
            "assistant/message" => Self::AssistantMessage,
            "tool/result" => Self::ToolResult,
            "context/message" => Self::ContextMessage,
            "steering/message" => Self::SteeringMessage,
            _ => return None,
        })
    }

    /// Whether the message is `data.message` (assistant, tool) rather than `data` itself.
    pub(crate) fn message_is_nested(self) -> bool {
        matches!(self, Self::AssistantMessage | Self::ToolResult)
    }
}

/// A log-only event type: any non-empty type string that is not a surface type. Holding one
/// proves at compile time that an append through it needs no surface intent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LogType(Cow<'static, str>);

/// Declares a constant for each log-only type and [`LogType::ALL`] from one list.
macro_rules! log_types {
    ($($name:ident => $text:literal,)*) => {
        impl LogType {
            $(
                #[doc = concat!("`", $text, "`")]
                pub const $name: LogType = LogType(Cow::Borrowed($text));
            )*

            /// Every log-only type of the DSH v0 vocabulary (45: the 48 known types less the
            /// three surface types).
            pub const ALL: [LogType; 45] = [$(LogType::$name),*];
        }
    };
}

log_types! {
    TURN_START => "turn/start",
    TURN_END => "turn/end",
    STEP_START => "step/start",
    STEP_END => "step/end",
    ASSISTANT_CHUNK => "assistant/chunk",
    TOOL_CALL => "tool/call",
    TODO_WRITE => "todo/write",
    REQUEST_HEADER => "request/header",
    REQUEST_CONTEXT => "request/context",
    END_SEED => "session/end-seed",
    AGENT_INBOX_SPLICED => "agent/inbox/spliced",
    AGENT_PRESET_SELECTED => "agent-preset/selected",
    APPROVAL_ASKED => "approval/asked",
    APPROVAL_DECIDED => "approval/decided",
    APPROVAL_POLICY => "approval/policy",
    COMMAND_RUN => "command/run",
    COMMAND_DONE => "command/done",
    COMPACTION_START => "compaction/start",
    COMPACTION_SUMMARY => "compaction/summary",
    COMPACTION_PRUNE => "compaction/prune",
    COMPACTION_END => "compaction/end",
    FEEDBACK_RECORD => "feedback/record",
    GOAL_CHANGE => "goal/change",
    HOOK_INVOKED => "hook/invoked",
    HOOK_RESULT => "hook/result",
    LLM_RETRY => "llm/retry",
    LLM_RETRY_STARTED => "llm/retry-started",
    PERMISSION_PRESET => "permission/preset",
    PLAN_MODE => "plan/mode",
    SANDBOX_MODE => "sandbox/mode",
    SCHEDULE_CHANGE => "schedule/change",
    SESSION_TITLE => "session/title",
    SESSION_TITLE_LLM_REQUEST => "session/title-llm-request",
    SUBAGENT_DESCRIPTOR => "subagent/descriptor",
    TEAM_MEMBER => "team/member",
    TEAM_MESSAGE_QUEUED => "team/message/queued",
    TEAM_MESSAGE_DELIVERED => "team/message/delivered",
    TEAM_TASK => "team/task",
    TOOL_CODE_DISPATCH_START => "tool/code-dispatch-start",
    TOOL_CODE_DISPATCH => "tool/code-dispatch",
    TOOL_WORKFLOW_RUN_START => "tool-workflow/run-start",
    TOOL_WORKFLOW_RUN_END => "tool-workflow/run-end",
    TOOL_WORKFLOW_AGENT_START => "tool-workflow/agent-start",
    TOOL_WORKFLOW_AGENT_END => "tool-workflow/agent-end",
    WEB_DEEPSEEK_SEARCH_LLM_REQUEST => "web/deepseek-search-llm-request",
}

impl LogType {
    /// A log-only type from any string.
    ///
    /// # Errors
    /// [`Error::InvalidType`] for the empty string or a surface type name.
    pub fn new(name: impl Into<Cow<'static, str>>) -> Result<Self> {
        let name = name.into();
        if name.is_empty() {
            return Err(Error::InvalidType {
                type_name: String::new(),
                problem: "an event type may not be empty",
            });
        }
        if SurfaceType::from_name(&name).is_some() {
            return Err(Error::InvalidType {
                type_name: name.into_owned(),
                problem: "a surface type needs a surface intent: use Draft::surface",
            });
        }
        Ok(Self(name))
    }

    /// The name, borrowed when it is a `'static` one (every constant).
    pub(crate) fn name(&self) -> Cow<'static, str> {
        self.0.clone()
    }

    /// The type string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Type names used inside the engine.
pub(crate) mod names {
    pub const TURN_START: &str = "turn/start";
    pub const TURN_END: &str = "turn/end";
    pub const STEP_START: &str = "step/start";
    pub const STEP_END: &str = "step/end";
    pub const ASSISTANT_CHUNK: &str = "assistant/chunk";
    pub const TOOL_CALL: &str = "tool/call";
    pub const END_SEED: &str = "session/end-seed";
    pub const REQUEST_HEADER: &str = "request/header";
    pub const REQUEST_HEADER_DELTA: &str = "request/header-delta";
}

/// DSH v0's `KNOWN_SESSION_EVENT_TYPES` (48 names).
pub(crate) const DSH_V0_TYPES: [&str; 48] = [
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "user/message",
    "assistant/chunk",
    "assistant/message",
    "tool/call",
    "tool/result",
    "todo/write",
    "request/header",
    "request/context",
    "session/end-seed",
    "agent/inbox/spliced",
    "agent-preset/selected",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    "command/run",
    "command/done",
    "compaction/start",
    "compaction/summary",
    "compaction/prune",
    "compaction/end",
    "feedback/record",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "llm/retry",
    "llm/retry-started",
    "permission/preset",
    "plan/mode",
    "sandbox/mode",
    "schedule/change",
    "session/title",
    "session/title-llm-request",
    "subagent/descriptor",
    "team/member",
    "team/message/queued",
    "team/message/delivered",
    "team/task",
    "tool/code-dispatch-start",
    "tool/code-dispatch",
    "tool-workflow/run-start",
    "tool-workflow/run-end",
    "tool-workflow/agent-start",
    "tool-workflow/agent-end",
    "web/deepseek-search-llm-request",
];

/// Whether `name` is in the DSH v0 vocabulary or is one of the two legacy surface types.
/// Readers of DSH files require `ignorable: true` on any other type (DESIGN §4).
pub fn is_known_type(name: &str) -> bool {
    DSH_V0_TYPES.contains(&name) || SurfaceType::from_name(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dsh_log_type_has_a_constant() {
        let consts: Vec<&str> = LogType::ALL.iter().map(LogType::as_str).collect();
        let expected: Vec<&str> = DSH_V0_TYPES
            .iter()
            .copied()
            .filter(|t| SurfaceType::from_name(t).is_none())
            .collect();
        assert_eq!(consts, expected);
        for t in &LogType::ALL {
            assert_eq!(LogType::new(t.as_str().to_owned()).ok().as_ref(), Some(t));
        }
    }

    #[test]
    fn from_name_is_the_inverse_of_as_str() {
        for t in SurfaceType::ALL {
            assert_eq!(SurfaceType::from_name(t.as_str()), Some(t));
        }
        assert_eq!(SurfaceType::from_name("user/messages"), None);
        assert_eq!(SurfaceType::from_name(""), None);
    }

    #[test]
    fn log_type_refuses_surface_and_empty_names() {
        for t in SurfaceType::ALL {
            assert!(matches!(
                LogType::new(t.as_str()),
                Err(Error::InvalidType { .. })
            ));
        }
        assert!(matches!(LogType::new(""), Err(Error::InvalidType { .. })));
        assert_eq!(LogType::new("plugin/x").unwrap().as_str(), "plugin/x");
    }

    #[test]
    fn vocabulary_has_no_duplicates() {
        let mut v = DSH_V0_TYPES.to_vec();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), 48);
        assert!(is_known_type("context/message"));
        assert!(!is_known_type("plugin/x"));
    }
}

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

impl LogType {
    /// `turn/start`
    pub const TURN_START: LogType = LogType(Cow::Borrowed("turn/start"));
    /// `turn/end`
    pub const TURN_END: LogType = LogType(Cow::Borrowed("turn/end"));
    /// `step/start`
    pub const STEP_START: LogType = LogType(Cow::Borrowed("step/start"));
    /// `step/end`
    pub const STEP_END: LogType = LogType(Cow::Borrowed("step/end"));
    /// `assistant/chunk`
    pub const ASSISTANT_CHUNK: LogType = LogType(Cow::Borrowed("assistant/chunk"));
    /// `tool/call`
    pub const TOOL_CALL: LogType = LogType(Cow::Borrowed("tool/call"));
    /// `todo/write`
    pub const TODO_WRITE: LogType = LogType(Cow::Borrowed("todo/write"));
    /// `request/header`
    pub const REQUEST_HEADER: LogType = LogType(Cow::Borrowed("request/header"));
    /// `request/context`
    pub const REQUEST_CONTEXT: LogType = LogType(Cow::Borrowed("request/context"));
    /// `session/end-seed`
    pub const END_SEED: LogType = LogType(Cow::Borrowed("session/end-seed"));
    /// `agent/inbox/spliced`
    pub const AGENT_INBOX_SPLICED: LogType = LogType(Cow::Borrowed("agent/inbox/spliced"));
    /// `agent-preset/selected`
    pub const AGENT_PRESET_SELECTED: LogType = LogType(Cow::Borrowed("agent-preset/selected"));
    /// `approval/asked`
    pub const APPROVAL_ASKED: LogType = LogType(Cow::Borrowed("approval/asked"));
    /// `approval/decided`
    pub const APPROVAL_DECIDED: LogType = LogType(Cow::Borrowed("approval/decided"));
    /// `approval/policy`
    pub const APPROVAL_POLICY: LogType = LogType(Cow::Borrowed("approval/policy"));
    /// `command/run`
    pub const COMMAND_RUN: LogType = LogType(Cow::Borrowed("command/run"));
    /// `command/done`
    pub const COMMAND_DONE: LogType = LogType(Cow::Borrowed("command/done"));
    /// `compaction/start`
    pub const COMPACTION_START: LogType = LogType(Cow::Borrowed("compaction/start"));
    /// `compaction/summary`
    pub const COMPACTION_SUMMARY: LogType = LogType(Cow::Borrowed("compaction/summary"));
    /// `compaction/prune`
    pub const COMPACTION_PRUNE: LogType = LogType(Cow::Borrowed("compaction/prune"));
    /// `compaction/end`
    pub const COMPACTION_END: LogType = LogType(Cow::Borrowed("compaction/end"));
    /// `feedback/record`
    pub const FEEDBACK_RECORD: LogType = LogType(Cow::Borrowed("feedback/record"));
    /// `goal/change`
    pub const GOAL_CHANGE: LogType = LogType(Cow::Borrowed("goal/change"));
    /// `hook/invoked`
    pub const HOOK_INVOKED: LogType = LogType(Cow::Borrowed("hook/invoked"));
    /// `hook/result`
    pub const HOOK_RESULT: LogType = LogType(Cow::Borrowed("hook/result"));
    /// `llm/retry`
    pub const LLM_RETRY: LogType = LogType(Cow::Borrowed("llm/retry"));
    /// `llm/retry-started`
    pub const LLM_RETRY_STARTED: LogType = LogType(Cow::Borrowed("llm/retry-started"));
    /// `permission/preset`
    pub const PERMISSION_PRESET: LogType = LogType(Cow::Borrowed("permission/preset"));
    /// `plan/mode`
    pub const PLAN_MODE: LogType = LogType(Cow::Borrowed("plan/mode"));
    /// `sandbox/mode`
    pub const SANDBOX_MODE: LogType = LogType(Cow::Borrowed("sandbox/mode"));
    /// `schedule/change`
    pub const SCHEDULE_CHANGE: LogType = LogType(Cow::Borrowed("schedule/change"));
    /// `session/title`
    pub const SESSION_TITLE: LogType = LogType(Cow::Borrowed("session/title"));
    /// `session/title-llm-request`
    pub const SESSION_TITLE_LLM_REQUEST: LogType =
        LogType(Cow::Borrowed("session/title-llm-request"));
    /// `subagent/descriptor`
    pub const SUBAGENT_DESCRIPTOR: LogType = LogType(Cow::Borrowed("subagent/descriptor"));
    /// `team/member`
    pub const TEAM_MEMBER: LogType = LogType(Cow::Borrowed("team/member"));
    /// `team/message/queued`
    pub const TEAM_MESSAGE_QUEUED: LogType = LogType(Cow::Borrowed("team/message/queued"));
    /// `team/message/delivered`
    pub const TEAM_MESSAGE_DELIVERED: LogType = LogType(Cow::Borrowed("team/message/delivered"));
    /// `team/task`
    pub const TEAM_TASK: LogType = LogType(Cow::Borrowed("team/task"));
    /// `tool/code-dispatch-start`
    pub const TOOL_CODE_DISPATCH_START: LogType =
        LogType(Cow::Borrowed("tool/code-dispatch-start"));
    /// `tool/code-dispatch`
    pub const TOOL_CODE_DISPATCH: LogType = LogType(Cow::Borrowed("tool/code-dispatch"));
    /// `tool-workflow/run-start`
    pub const TOOL_WORKFLOW_RUN_START: LogType = LogType(Cow::Borrowed("tool-workflow/run-start"));
    /// `tool-workflow/run-end`
    pub const TOOL_WORKFLOW_RUN_END: LogType = LogType(Cow::Borrowed("tool-workflow/run-end"));
    /// `tool-workflow/agent-start`
    pub const TOOL_WORKFLOW_AGENT_START: LogType =
        LogType(Cow::Borrowed("tool-workflow/agent-start"));
    /// `tool-workflow/agent-end`
    pub const TOOL_WORKFLOW_AGENT_END: LogType = LogType(Cow::Borrowed("tool-workflow/agent-end"));
    /// `web/deepseek-search-llm-request`
    pub const WEB_DEEPSEEK_SEARCH_LLM_REQUEST: LogType =
        LogType(Cow::Borrowed("web/deepseek-search-llm-request"));

    /// Every log-only type of the DSH v0 vocabulary (45: the 48 known types
    /// less the three surface types).
    pub const ALL: [LogType; 45] = [
        LogType::TURN_START,
        LogType::TURN_END,
        LogType::STEP_START,
        LogType::STEP_END,
        LogType::ASSISTANT_CHUNK,
        LogType::TOOL_CALL,
        LogType::TODO_WRITE,
        LogType::REQUEST_HEADER,
        LogType::REQUEST_CONTEXT,
        LogType::END_SEED,
        LogType::AGENT_INBOX_SPLICED,
        LogType::AGENT_PRESET_SELECTED,
        LogType::APPROVAL_ASKED,
        LogType::APPROVAL_DECIDED,
        LogType::APPROVAL_POLICY,
        LogType::COMMAND_RUN,
        LogType::COMMAND_DONE,
        LogType::COMPACTION_START,
        LogType::COMPACTION_SUMMARY,
        LogType::COMPACTION_PRUNE,
        LogType::COMPACTION_END,
        LogType::FEEDBACK_RECORD,
        LogType::GOAL_CHANGE,
        LogType::HOOK_INVOKED,
        LogType::HOOK_RESULT,
        LogType::LLM_RETRY,
        LogType::LLM_RETRY_STARTED,
        LogType::PERMISSION_PRESET,
        LogType::PLAN_MODE,
        LogType::SANDBOX_MODE,
        LogType::SCHEDULE_CHANGE,
        LogType::SESSION_TITLE,
        LogType::SESSION_TITLE_LLM_REQUEST,
        LogType::SUBAGENT_DESCRIPTOR,
        LogType::TEAM_MEMBER,
        LogType::TEAM_MESSAGE_QUEUED,
        LogType::TEAM_MESSAGE_DELIVERED,
        LogType::TEAM_TASK,
        LogType::TOOL_CODE_DISPATCH_START,
        LogType::TOOL_CODE_DISPATCH,
        LogType::TOOL_WORKFLOW_RUN_START,
        LogType::TOOL_WORKFLOW_RUN_END,
        LogType::TOOL_WORKFLOW_AGENT_START,
        LogType::TOOL_WORKFLOW_AGENT_END,
        LogType::WEB_DEEPSEEK_SEARCH_LLM_REQUEST,
    ];

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
    pub const TOOL_CALL: &str = "tool/call";
    pub const END_SEED: &str = "session/end-seed";
    pub const REQUEST_HEADER: &str = "request/header";
    pub const REQUEST_HEADER_DELTA: &str = "request/header-delta";
}

/// DSH v0's `KNOWN_SESSION_EVENT_TYPES` (48 names).
const DSH_V0_TYPES: [&str; 48] = [
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

//! DSH's v0 event vocabulary (`KNOWN_SESSION_EVENT_TYPES`, reference §2.1 and §3.5), written
//! out from the reference: DSH's loader refuses a session holding any other type on an event
//! not marked `"ignorable":true`.

/// The v0 types, and the two legacy surface types DSH's loader still reads.
const KNOWN: [&str; 50] = [
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
    "context/message",
    "steering/message",
];

/// Whether `ty` is in the vocabulary.
pub fn known(ty: &str) -> bool {
    KNOWN.contains(&ty)
}

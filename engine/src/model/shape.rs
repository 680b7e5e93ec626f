//! Payload shape rules that DSH checks at seed/restore (`docs/DESIGN.md` §2.1, rules 3, 6 and 9) and that
//! sessdb checks on every append as well.

use crate::event::SurfaceType;
use crate::json::{JsonKind, JsonRef, Node};
use crate::{Violation, event::types::names};

/// The message of a surface event: `data` for the user-shaped types, `data.message` for
/// `assistant/message` and `tool/result`.
pub(crate) fn message_of(ty: SurfaceType, data: JsonRef<'_>) -> Option<JsonRef<'_>> {
    if ty.message_is_nested() {
        data.get("message")
    } else {
        Some(data)
    }
}

fn shape(problem: &'static str) -> Violation {
    Violation::MessageShape { problem }
}

fn nonempty(v: Option<Node<'_>>) -> bool {
    v.is_some_and(|v| v.is_nonempty_str())
}

/// Reference §3.2 item 5, for every surface type.
pub(crate) fn check_message(ty: SurfaceType, data: Node<'_>) -> Result<(), Violation> {
    if data.kind() != JsonKind::Object {
        return Err(shape("data must be an object"));
    }
    let msg = if ty.message_is_nested() {
        data.get("message")
    } else {
        Some(data)
    };
    let msg = msg
        .filter(|m| m.kind() == JsonKind::Object)
        .ok_or(shape("data.message must be an object"))?;
    // One pass over the message and one over its source (not a `get` per key).
    let [id, role, source, content] = msg.fields(["id", "role", "source", "content"]);
    if !nonempty(id) {
        return Err(shape("message.id must be a non-empty string"));
    }
    if ty == SurfaceType::AssistantMessage {
        if !role.is_some_and(|r| r.str_eq("assistant")) {
            return Err(shape("message.role must be \"assistant\""));
        }
    } else if !role.is_some_and(|r| r.str_eq("user")) {
        return Err(shape("message.role must be \"user\""));
    }
    let source = source
        .filter(|s| s.kind() == JsonKind::Object)
        .ok_or(shape("message.source must be an object"))?;
    let [kind, provider, model, source_call_id] =
        source.fields(["kind", "provider", "model", "callId"]);
    if !nonempty(kind) {
        return Err(shape("message.source.kind must be a non-empty string"));
    }
    let content = content
        .filter(|c| c.kind() == JsonKind::Array)
        .ok_or(shape("message.content must be an array"))?;
    match ty {
        SurfaceType::AssistantMessage => {
            if !kind.is_some_and(|k| k.str_eq("model")) {
                return Err(shape("assistant message.source.kind must be \"model\""));
            }
            if !nonempty(provider) {
                return Err(shape(
                    "assistant message.source.provider must be a non-empty string",
                ));
            }
            if !nonempty(model) {
                return Err(shape(
                    "assistant message.source.model must be a non-empty string",
                ));
            }
        }
        SurfaceType::ToolResult => {
            if !kind.is_some_and(|k| k.str_eq("tool")) {
                return Err(shape("tool/result message.source.kind must be \"tool\""));
            }
            let call_id = source_call_id
                .and_then(|c| c.as_nonempty_str())
                .ok_or(shape(
                    "tool/result message.source.callId must be a non-empty string",
                ))?;
            let mut blocks = content.elements();
            let block = match (blocks.next(), blocks.next()) {
                (Some(b), None) if b.kind() == JsonKind::Object => b,
                _ => {
                    return Err(shape(
                        "tool/result message.content must be exactly one block",
                    ));
                }
            };
            if !block.get("type").is_some_and(|t| t.str_eq("tool-result")) {
                return Err(shape("tool/result block must have type \"tool-result\""));
            }
            if block.get("content").map(|c| c.kind()) != Some(JsonKind::Array) {
                return Err(shape("tool-result block content must be an array"));
            }
            if !block.get("toolCallId").is_some_and(|t| t.str_eq(&call_id)) {
                return Err(shape(
                    "tool-result block toolCallId must equal message.source.callId",
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// Reference §3.2 item 3: retired vocabulary.
pub(crate) fn check_legacy(event_type: &str, data: Node<'_>) -> Result<(), Violation> {
    if event_type == names::REQUEST_HEADER_DELTA {
        return Err(Violation::LegacyVocabulary {
            what: "type request/header-delta",
        });
    }
    if event_type == "mode/set" {
        return Err(Violation::LegacyVocabulary {
            what: "type mode/set",
        });
    }
    if event_type == names::REQUEST_HEADER
        && data.get("reason").is_some_and(|r| r.str_eq("fallback"))
    {
        return Err(Violation::LegacyVocabulary {
            what: "request/header with reason \"fallback\"",
        });
    }
    Ok(())
}

/// What DSH's loader checks of turn and step markers and tool calls (measured against its
/// decisions, `docs/DESIGN.md` §2.1 rule 6): `data` not `null` on `turn/start`,
/// `turn/end`, `step/start` and `tool/call` (DSH's restore reads their fields; a `null`
/// `step/end` it loads); a `turn/start` `trigger`, when present, an object with a non-empty string `kind`;
/// a `turn/end` with no keys but `turn` and `reason`, a numeric `turn`, a `reason` object
/// with a string `kind`, nothing else beside `kind: "completed"`, and an `error` object or a
/// `message` string beside `kind: "error"`.
pub(crate) fn check_marker(event_type: &str, data: Node<'_>) -> Result<(), Violation> {
    let type_name = match event_type {
        names::TURN_START => names::TURN_START,
        names::TURN_END => names::TURN_END,
        names::STEP_START => names::STEP_START,
        names::TOOL_CALL => names::TOOL_CALL,
        _ => return Ok(()),
    };
    let bad = |problem| Err(Violation::MarkerShape { type_name, problem });
    if data.kind() == JsonKind::Null {
        return bad("data may not be null");
    }
    if data.kind() != JsonKind::Object {
        return Ok(());
    }
    if type_name == names::TURN_START {
        if let Some(trigger) = data.get("trigger")
            && trigger
                .get("kind")
                .filter(|_| trigger.kind() == JsonKind::Object)
                .and_then(|k| k.as_nonempty_str())
                .is_none()
        {
            return bad("trigger must be an object with a non-empty string kind");
        }
        return Ok(());
    }
    if type_name != names::TURN_END {
        return Ok(());
    }
    if data
        .members()
        .any(|(k, _)| !(k.str_eq("turn") || k.str_eq("reason")))
    {
        return bad("data has keys other than turn and reason");
    }
    let [turn, reason] = data.fields(["turn", "reason"]);
    if turn.is_some_and(|t| t.kind() != JsonKind::Number) {
        return bad("turn must be a number");
    }
    // DSH's loader reads a turn number as a safe integer from 1 (its turn/end migration).
    if turn.is_some_and(|t| t.as_safe_integer().is_none_or(|n| n < 1)) {
        return bad("turn must be an integer from 1");
    }
    let Some(reason) = reason.filter(|r| r.kind() == JsonKind::Object) else {
        return bad("reason must be an object");
    };
    let Some(kind) = reason.get("kind").and_then(|k| k.as_str()) else {
        return bad("reason.kind must be a string");
    };
    match kind.as_ref() {
        "completed" if reason.members().count() != 1 => {
            bad("a completed reason has no keys but kind")
        }
        // The current `error` object, or a pre-react-loop ending DSH's loader migrates: a
        // `message` (and `code`), or a provider `failure` with a string message and code.
        "error"
            if !reason
                .get("error")
                .is_some_and(|e| e.kind() == JsonKind::Object)
                && !reason
                    .get("message")
                    .is_some_and(|m| m.kind() == JsonKind::String)
                && !reason.get("failure").is_some_and(|f| {
                    f.kind() == JsonKind::Object
                        && f.get("message")
                            .is_some_and(|m| m.kind() == JsonKind::String)
                        && f.get("code").is_some_and(|c| c.kind() == JsonKind::String)
                }) =>
        {
            bad("an error reason needs an error object, a message or a failure")
        }
        _ => Ok(()),
    }
}

/// Reference §3.2 item 6.
pub(crate) fn check_request_header(data: Node<'_>) -> Result<(), Violation> {
    let bad = |problem| Err(Violation::RequestHeaderShape { problem });
    let Some(header) = data.get("header").filter(|h| h.kind() == JsonKind::Object) else {
        return bad("data.header must be an object");
    };
    let Some(config) = header
        .get("config")
        .filter(|c| c.kind() == JsonKind::Object)
    else {
        return bad("header.config must be an object");
    };
    if !nonempty(config.get("provider")) {
        return bad("header.config.provider must be a non-empty string");
    }
    if !nonempty(config.get("model")) {
        return bad("header.config.model must be a non-empty string");
    }
    if config
        .get("reasoningEffort")
        .is_some_and(|r| r.as_nonempty_str().is_none())
    {
        return bad("header.config.reasoningEffort must be a non-empty string");
    }
    if let Some(defaults) = header.get("adapterDefaults") {
        if defaults.kind() != JsonKind::Object {
            return bad("header.adapterDefaults must be an object");
        }
        for (key, value) in defaults.members() {
            let field = if key.str_eq("reasoningEffort") {
                "reasoningEffort"
            } else if key.str_eq("maxTokens") {
                "maxTokens"
            } else {
                return bad("header.adapterDefaults may hold only reasoningEffort and maxTokens");
            };
            if value.bytes() != b"true" {
                return bad("header.adapterDefaults values must be true");
            }
            if config.get(field).is_none() {
                return bad("header.adapterDefaults names a field that header.config does not set");
            }
        }
    }
    Ok(())
}

/// Whether the derived message of an `assistant/message` is dropped: its content is empty
/// (a max-tokens step that only hosts usage; `docs/DESIGN.md` §2.5).
pub(crate) fn content_is_empty(msg: JsonRef<'_>) -> bool {
    msg.get("content")
        .is_some_and(|c| c.elements().next().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict through the index, checked equal to the verdict by walking.
    fn msg(ty: SurfaceType, s: &str) -> Result<(), Violation> {
        let walked = check_message(ty, Node::plain(JsonRef::new(s.as_bytes())));
        let mut tape = crate::json::Tape::new();
        if tape
            .validate(s.as_bytes(), &crate::Limits::default())
            .is_err()
        {
            return walked;
        }
        let indexed = check_message(ty, tape.root(s.as_bytes()));
        assert_eq!(indexed, walked, "{s}");
        indexed
    }

    const USER: &str = r#"{"id":"u","role":"user","source":{"kind":"user"},"content":[]}"#;
    const ASSISTANT: &str = r#"{"turn":1,"step":1,"message":{"id":"a","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[]}}"#;
    const TOOL: &str = r#"{"turn":1,"step":1,"message":{"id":"t","role":"user","source":{"kind":"tool","callId":"c"},"content":[{"type":"tool-result","toolCallId":"c","content":[]}]}}"#;

    #[test]
    fn valid_shapes_pass() {
        assert_eq!(msg(SurfaceType::UserMessage, USER), Ok(()));
        assert_eq!(msg(SurfaceType::ContextMessage, USER), Ok(()));
        assert_eq!(msg(SurfaceType::SteeringMessage, USER), Ok(()));
        assert_eq!(msg(SurfaceType::AssistantMessage, ASSISTANT), Ok(()));
        assert_eq!(msg(SurfaceType::ToolResult, TOOL), Ok(()));
    }

    #[test]
    fn each_shape_check_names_its_problem() {
        let cases: &[(SurfaceType, String, &str)] = &[
            (
                SurfaceType::UserMessage,
                "[]".into(),
                "data must be an object",
            ),
            (
                SurfaceType::AssistantMessage,
                r#"{"message":1}"#.into(),
                "data.message must be an object",
            ),
            (
                SurfaceType::UserMessage,
                USER.replace(r#""id":"u""#, r#""id":"""#),
                "message.id",
            ),
            (
                SurfaceType::UserMessage,
                USER.replace(r#""role":"user""#, r#""role":"assistant""#),
                "message.role must be \"user\"",
            ),
            (
                SurfaceType::AssistantMessage,
                ASSISTANT.replace(r#""role":"assistant""#, r#""role":"user""#),
                "message.role must be \"assistant\"",
            ),
            (
                SurfaceType::UserMessage,
                USER.replace(r#""source":{"kind":"user"}"#, r#""source":"x""#),
                "message.source must be an object",
            ),
            (
                SurfaceType::UserMessage,
                USER.replace(r#""kind":"user""#, r#""kind":"""#),
                "message.source.kind",
            ),
            (
                SurfaceType::UserMessage,
                USER.replace(r#""content":[]"#, r#""content":{}"#),
                "message.content must be an array",
            ),
            (
                SurfaceType::AssistantMessage,
                ASSISTANT.replace(r#""kind":"model""#, r#""kind":"user""#),
                "must be \"model\"",
            ),
            (
                SurfaceType::AssistantMessage,
                ASSISTANT.replace(r#""provider":"p""#, r#""provider":1"#),
                "provider",
            ),
            (
                SurfaceType::AssistantMessage,
                ASSISTANT.replace(r#","model":"m""#, ""),
                "source.model",
            ),
            (
                SurfaceType::ToolResult,
                TOOL.replace(r#""kind":"tool""#, r#""kind":"user""#),
                "must be \"tool\"",
            ),
            (
                SurfaceType::ToolResult,
                TOOL.replace(r#""callId":"c""#, r#""callId":"""#),
                "callId",
            ),
            (
                SurfaceType::ToolResult,
                TOOL.replace(
                    r#"[{"type":"tool-result","toolCallId":"c","content":[]}]"#,
                    "[]",
                ),
                "exactly one block",
            ),
            (
                SurfaceType::ToolResult,
                TOOL.replace(r#""type":"tool-result""#, r#""type":"text""#),
                "type \"tool-result\"",
            ),
            (
                SurfaceType::ToolResult,
                TOOL.replace(
                    r#""toolCallId":"c","content":[]"#,
                    r#""toolCallId":"c","content":"x""#,
                ),
                "block content must be an array",
            ),
            (
                SurfaceType::ToolResult,
                TOOL.replace(r#""toolCallId":"c""#, r#""toolCallId":"d""#),
                "toolCallId must equal",
            ),
        ];
        for (ty, data, needle) in cases {
            let err = msg(*ty, data).unwrap_err();
            assert!(err.to_string().contains(needle), "{data}: {err}");
        }
    }

    #[test]
    fn request_header_rules() {
        let ok = r#"{"header":{"config":{"provider":"p","model":"m","maxTokens":5},"adapterDefaults":{"maxTokens":true}},"reason":"initial"}"#;
        assert_eq!(
            check_request_header(Node::plain(JsonRef::new(ok.as_bytes()))),
            Ok(())
        );
        for (data, needle) in [
            (r#"{"header":1}"#, "data.header"),
            (r#"{"header":{}}"#, "config must be"),
            (r#"{"header":{"config":{"model":"m"}}}"#, "provider"),
            (r#"{"header":{"config":{"provider":"p"}}}"#, "model"),
            (
                r#"{"header":{"config":{"provider":"p","model":"m","reasoningEffort":""}}}"#,
                "reasoningEffort",
            ),
            (
                r#"{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"x":true}}}"#,
                "only reasoningEffort",
            ),
            (
                r#"{"header":{"config":{"provider":"p","model":"m","maxTokens":1},"adapterDefaults":{"maxTokens":1}}}"#,
                "must be true",
            ),
            (
                r#"{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"maxTokens":true}}}"#,
                "does not set",
            ),
        ] {
            let err = check_request_header(Node::plain(JsonRef::new(data.as_bytes()))).unwrap_err();
            assert!(err.to_string().contains(needle), "{data}: {err}");
        }
        let fallback = Node::plain(JsonRef::new(br#"{"reason":"fallback"}"#));
        assert!(matches!(
            check_legacy("request/header", fallback),
            Err(Violation::LegacyVocabulary { .. })
        ));
        assert!(matches!(
            check_legacy("request/header-delta", fallback),
            Err(Violation::LegacyVocabulary { .. })
        ));
        assert_eq!(check_legacy("turn/start", fallback), Ok(()));
    }
}

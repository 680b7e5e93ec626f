//! Builders of DSH v0 event payloads (`data` JSON), shared by the generator and the tests.

use sessdb::json::write_str;

fn s(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 2);
    write_str(&mut out, text);
    String::from_utf8_lossy(&out).into_owned()
}

/// `turn/start` data.
pub fn turn_start(turn: u64) -> String {
    format!(r#"{{"turn":{turn}}}"#)
}

/// `turn/end` data with reason kind `completed`.
pub fn turn_end(turn: u64) -> String {
    format!(r#"{{"turn":{turn},"reason":{{"kind":"completed"}}}}"#)
}

/// `step/start` or `step/end` data.
pub fn step(turn: u64, step: u64) -> String {
    format!(r#"{{"turn":{turn},"step":{step}}}"#)
}

/// A `user/message` (the data is the message itself); `kind` is the source kind.
pub fn user_message(id: &str, kind: &str, text: &str) -> String {
    format!(
        r#"{{"id":{},"role":"user","source":{{"kind":{}}},"content":[{{"type":"text","text":{}}}]}}"#,
        s(id),
        s(kind),
        s(text)
    )
}

/// A tool call inside an assistant message: `(call id, tool name, arguments JSON text)`.
pub type ToolCallBlock<'a> = (&'a str, &'a str, &'a str);

/// An `assistant/message` with optional text and tool-call blocks.
pub fn assistant_message(
    turn: u64,
    step: u64,
    id: &str,
    text: Option<&str>,
    calls: &[ToolCallBlock<'_>],
) -> String {
    let mut blocks: Vec<String> = text
        .map(|t| format!(r#"{{"type":"text","text":{}}}"#, s(t)))
        .into_iter()
        .collect();
    for (call_id, name, args) in calls {
        blocks.push(format!(
            r#"{{"type":"tool-call","id":{},"name":{},"arguments":{}}}"#,
            s(call_id),
            s(name),
            s(args)
        ));
    }
    format!(
        r#"{{"turn":{turn},"step":{step},"message":{{"id":{},"role":"assistant","source":{{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}},"content":[{}]}},"usage":{{"inputTokens":{},"outputTokens":{}}}}}"#,
        s(id),
        blocks.join(","),
        1000 + turn * 17,
        40 + step * 3
    )
}

/// An `assistant/chunk` text delta.
pub fn text_delta(turn: u64, step: u64, index: u64, text: &str) -> String {
    format!(
        r#"{{"turn":{turn},"step":{step},"chunk":{{"type":"text-delta","index":{index},"text":{}}}}}"#,
        s(text)
    )
}

/// An `assistant/chunk` of another kind, given as the chunk JSON.
pub fn chunk(turn: u64, step: u64, chunk_json: &str) -> String {
    format!(r#"{{"turn":{turn},"step":{step},"chunk":{chunk_json}}}"#)
}

/// A `tool/call`.
pub fn tool_call(turn: u64, step: u64, call_id: &str, name: &str, args: &str) -> String {
    format!(
        r#"{{"turn":{turn},"step":{step},"callId":{},"name":{},"arguments":{}}}"#,
        s(call_id),
        s(name),
        s(args)
    )
}

/// A `tool/result` whose block holds one text part.
pub fn tool_result(turn: u64, step: u64, id: &str, call_id: &str, text: &str) -> String {
    format!(
        r#"{{"turn":{turn},"step":{step},"message":{{"id":{},"role":"user","source":{{"kind":"tool","callId":{cid}}},"content":[{{"type":"tool-result","toolCallId":{cid},"isError":false,"content":[{{"type":"text","text":{}}}]}}]}}}}"#,
        s(id),
        s(text),
        cid = s(call_id)
    )
}

/// A `request/header` with reason `initial`.
pub fn request_header() -> String {
    r#"{"header":{"config":{"provider":"deepseek-official","model":"deepseek-v4-flash"},"system":"You are a careful coding agent.","tools":[{"name":"bash"},{"name":"read_file"}]},"reason":"initial"}"#.to_owned()
}

/// A `request/context`.
pub fn request_context() -> String {
    r#"{"provider":"deepseek-official","model":"deepseek-v4-flash","contextWindow":131072}"#
        .to_owned()
}

/// A `compaction/start` or `compaction/end`, or a `compaction/summary` pricing a shadowed range.
pub fn compaction(kind: &str, start: u64, end: u64, shadowed: &[u64]) -> String {
    let list: Vec<String> = shadowed.iter().map(u64::to_string).collect();
    match kind {
        "summary" => format!(
            r#"{{"shadowedRange":{{"start":{start},"end":{end}}},"shadowedSeqs":[{}],"shadowedTokenCount":{}}}"#,
            list.join(","),
            shadowed.len() * 120
        ),
        _ => "{}".to_owned(),
    }
}

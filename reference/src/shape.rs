//! Payload shapes, from the rules (`docs/DESIGN.md` §2.1): messages of surface events, turn
//! markers and tool calls as DSH's loader reads them, `request/header`, retired vocabulary.

use serde_json::Value;

use crate::value::nonempty_str;

/// Whether `ty` is a surface type (the three live ones and the two legacy ones sessdb keeps).
pub fn is_surface(ty: &str) -> bool {
    matches!(
        ty,
        "user/message"
            | "assistant/message"
            | "tool/result"
            | "context/message"
            | "steering/message"
    )
}

/// Whether the message of a `ty` event is `data.message` (else it is `data` itself).
pub fn nested_message(ty: &str) -> bool {
    matches!(ty, "assistant/message" | "tool/result")
}

/// Reference §3.2 item 5; `Err` says what is wrong.
pub fn message(ty: &str, data: &Value) -> Result<(), &'static str> {
    if !data.is_object() {
        return Err("data is not an object");
    }
    let msg = if nested_message(ty) {
        data.get("message").ok_or("no message")?
    } else {
        data
    };
    if !msg.is_object() {
        return Err("message is not an object");
    }
    nonempty_str(msg, "id").ok_or("no id")?;
    let role = if ty == "assistant/message" {
        "assistant"
    } else {
        "user"
    };
    if msg.get("role").and_then(Value::as_str) != Some(role) {
        return Err("role");
    }
    let source = msg
        .get("source")
        .filter(|s| s.is_object())
        .ok_or("source")?;
    let kind = nonempty_str(source, "kind").ok_or("source kind")?;
    let content = msg
        .get("content")
        .and_then(Value::as_array)
        .ok_or("content")?;
    match ty {
        "assistant/message"
            if kind != "model"
                || nonempty_str(source, "provider").is_none()
                || nonempty_str(source, "model").is_none() =>
        {
            return Err("model source");
        }
        "tool/result" => {
            if kind != "tool" {
                return Err("tool source");
            }
            let call = nonempty_str(source, "callId").ok_or("callId")?;
            let [block] = content.as_slice() else {
                return Err("not one block");
            };
            if block.get("type").and_then(Value::as_str) != Some("tool-result")
                || !block.get("content").is_some_and(Value::is_array)
                || block.get("toolCallId").and_then(Value::as_str) != Some(call)
            {
                return Err("tool-result block");
            }
        }
        _ => {}
    }
    Ok(())
}

/// Retired vocabulary DSH refuses on read.
pub fn legacy(ty: &str, data: &Value) -> bool {
    ty == "request/header-delta"
        || ty == "mode/set"
        || (ty == "request/header"
            && data.get("reason").and_then(Value::as_str) == Some("fallback"))
}

/// What DSH's loader refuses of turn markers, `step/start` and `tool/call`.
pub fn marker(ty: &str, data: &Value) -> Result<(), &'static str> {
    if !matches!(ty, "turn/start" | "turn/end" | "step/start" | "tool/call") {
        return Ok(());
    }
    if data.is_null() {
        return Err("null data");
    }
    let Some(object) = data.as_object() else {
        return Ok(());
    };
    match ty {
        "turn/start" => match object.get("trigger") {
            Some(trigger) if nonempty_str(trigger, "kind").is_none() => Err("trigger"),
            _ => Ok(()),
        },
        "turn/end" => {
            if object.keys().any(|k| k != "turn" && k != "reason") {
                return Err("extra key");
            }
            if object.get("turn").is_some_and(|t| !t.is_number()) {
                return Err("turn");
            }
            // A safe integer from 1, as DSH's loader reads it.
            if object.get("turn").is_some_and(|t| {
                t.as_f64()
                    .is_none_or(|n| n < 1.0 || n.fract() != 0.0 || n > 9_007_199_254_740_991.0)
            }) {
                return Err("turn from 1");
            }
            let reason = object
                .get("reason")
                .and_then(Value::as_object)
                .ok_or("reason")?;
            match reason
                .get("kind")
                .and_then(Value::as_str)
                .ok_or("reason kind")?
            {
                "completed" if reason.len() != 1 => Err("completed with extra keys"),
                // Current, or a pre-react-loop ending DSH's loader migrates (a message, or a
                // provider failure with a string message and code).
                "error"
                    if !reason.get("error").is_some_and(Value::is_object)
                        && !reason.get("message").is_some_and(Value::is_string)
                        && !reason
                            .get("failure")
                            .and_then(Value::as_object)
                            .is_some_and(|f| {
                                f.get("message").is_some_and(Value::is_string)
                                    && f.get("code").is_some_and(Value::is_string)
                            }) =>
                {
                    Err("error without error")
                }
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// Reference §3.2 item 6.
pub fn request_header(data: &Value) -> Result<(), &'static str> {
    let header = data
        .get("header")
        .filter(|h| h.is_object())
        .ok_or("header")?;
    let config = header
        .get("config")
        .filter(|c| c.is_object())
        .ok_or("config")?;
    nonempty_str(config, "provider").ok_or("provider")?;
    nonempty_str(config, "model").ok_or("model")?;
    if config.get("reasoningEffort").is_some() && nonempty_str(config, "reasoningEffort").is_none()
    {
        return Err("reasoningEffort");
    }
    if let Some(defaults) = header.get("adapterDefaults") {
        let defaults = defaults.as_object().ok_or("adapterDefaults")?;
        for (key, value) in defaults {
            if !matches!(key.as_str(), "reasoningEffort" | "maxTokens")
                || value != &Value::Bool(true)
                || config.get(key).is_none()
            {
                return Err("adapterDefaults");
            }
        }
    }
    Ok(())
}

//! DSH's read-time migrations of pre-identity message shapes (reference §1.3), applied by
//! both importers before the acceptance function sees a session, so an old file imports as
//! the events DSH's loader builds from it.
//!
//! DSH migrates in memory and never rewrites the file; sessdb stores the migrated event
//! (there is no other way to give it a message id), so the export writes the current shape,
//! which DSH reads back to the same events. What is migrated:
//!
//! - `steering/message` `{turn, message}` → `user/message` with `data` = `message`;
//! - `steering/message` `{turn, content, source}` and a `user/message` with `content` and
//!   `source` but no `id`, `role` or `message` → `user/message` with the members but `turn`,
//!   then `id: "legacy-message:<session>:<seq>"` and `role: "user"`;
//! - `assistant/message` with `content` and `provenance` but no `message` → the other
//!   members, then `message: {id, role: "assistant", content, source: {…provenance, kind:
//!   "model"}}`;
//! - `tool/result` with `callId`, `content` and `isError` but no `message` → the other
//!   members, then `message: {id, role: "user", content: [{type: "tool-result", toolCallId,
//!   content, isError}], source: {kind: "tool", callId}}`, where a replacement takes the id of
//!   the message it replaces (and has none, so is refused, when that carried no id).
//!
//! Anything else is left exactly as read: the acceptance function decides it. Objects are
//! rebuilt as JavaScript builds them (a repeated key keeps its first place and its last value;
//! integer-like keys first, ascending); every value keeps its exact bytes.
//! Turn markers in old shapes (`turn/start` with a `trigger`, old `turn/end` reasons) are not
//! rewritten: the acceptance function takes them as they are and DSH reads them the same.

use std::borrow::Cow;

use sessdb::json::{JsonKind, JsonRef, write_str};
use sessdb::{Event, SurfaceOp};

/// Whether `e` may have a legacy shape that [`migrate`] rewrites: a cheap test (one pass over
/// the members of `data`) that lets a writer skip the migration for current events.
pub fn may_be_legacy(e: &Event) -> bool {
    migrated("", e, &|_| None).is_some()
}

/// Rewrites every legacy-shaped event of one session (`events[i]` has seq `i`, as both
/// importers read them) into the shape DSH's loader gives it; returns the seqs rewritten.
pub fn migrate(session: &str, events: &mut [Event]) -> Vec<u64> {
    migrate_appended(session, events, |_| None)
}

/// As [`migrate`] for a batch appended to a stored session (`batch[0]` continues it):
/// `stored_id(seq)` gives the message id of a stored event, the only thing of the stored
/// session a migration reads (a legacy replacement takes the id of the message it replaces),
/// so no caller reads the whole session for it.
pub fn migrate_appended(
    session: &str,
    batch: &mut [Event],
    stored_id: impl Fn(u64) -> Option<Vec<u8>>,
) -> Vec<u64> {
    let first = batch.first().map_or(0, Event::seq);
    let mut rewritten = Vec::new();
    for i in 0..batch.len() {
        let found = batch.get(i).and_then(|e| {
            let earlier = |seq: u64| {
                if seq < first {
                    stored_id(seq)
                } else {
                    message_id(batch, seq - first, seq).map(<[u8]>::to_vec)
                }
            };
            migrated(session, e, &earlier)
        });
        if let (Some(e), Some((ty, data))) = (batch.get(i), found) {
            let rebuilt = rebuild(e, ty, data);
            rewritten.push(rebuilt.seq());
            if let Some(slot) = batch.get_mut(i) {
                *slot = rebuilt;
            }
        }
    }
    rewritten
}

/// The event with a new type and `data`, everything else kept.
fn rebuild(e: &Event, ty: &str, data: Vec<u8>) -> Event {
    Event::with_type_name(ty, e.seq(), e.time(), data)
        .with_sources_opt(e.sources().map(Into::into))
        .with_surface_op_opt(e.surface_op())
        .with_ignorable(e.ignorable())
        .with_surface_op_first(e.surface_op_first())
        .with_pack_hint(e.pack_hint())
        .with_frame_start(e.frame_start())
}

/// The migrated type and `data` of `e`, when it has a legacy shape. `earlier(seq)` is the
/// message id of the session's event at `seq` (those before `e` already migrated).
fn migrated(
    session: &str,
    e: &Event,
    earlier: &dyn Fn(u64) -> Option<Vec<u8>>,
) -> Option<(&'static str, Vec<u8>)> {
    // Only these four types have legacy shapes: every other event (a streamed chunk, most of
    // them) is left without reading its `data` (the DSH backend asks this of every append).
    if !matches!(
        e.event_type(),
        "steering/message" | "user/message" | "assistant/message" | "tool/result"
    ) {
        return None;
    }
    let data = e.data_json();
    if data.kind() != JsonKind::Object {
        return None;
    }
    // One pass over `data` decides whether a legacy shape can apply: every other event (all of
    // them in a current file) is left before its members are collected.
    let [
        id,
        role,
        message,
        content,
        source,
        provenance,
        call_id,
        is_error,
    ] = data.fields([
        "id",
        "role",
        "message",
        "content",
        "source",
        "provenance",
        "callId",
        "isError",
    ]);
    let candidate = match e.event_type() {
        "steering/message" => true,
        "user/message" => {
            id.is_none()
                && role.is_none()
                && message.is_none()
                && content.is_some()
                && source.is_some()
        }
        "assistant/message" => message.is_none() && content.is_some() && provenance.is_some(),
        "tool/result" => {
            message.is_none() && call_id.is_some() && content.is_some() && is_error.is_some()
        }
        _ => false,
    };
    if !candidate {
        return None;
    }
    let members = js_members(data);
    let has = |key: &str| members.iter().any(|m| m.name == key);
    let value = |key: &str| members.iter().find(|m| m.name == key).map(|m| m.value);
    let only = |keys: &[&str]| members.len() == keys.len() && keys.iter().all(|k| has(k));
    let turn_ok = value("turn").is_some_and(|t| t.as_safe_integer().is_some());
    let id = || legacy_id(session, e.seq());
    match e.event_type() {
        "steering/message" if turn_ok && only(&["turn", "message"]) => {
            let message = value("message").filter(|m| m.kind() == JsonKind::Object)?;
            Some(("user/message", message.bytes().to_vec()))
        }
        "steering/message" if turn_ok && only(&["turn", "content", "source"]) => {
            let mut out = object_without(&members, &["turn"]);
            push_member(&mut out, "id", &id());
            push_member(&mut out, "role", br#""user""#);
            Some(("user/message", close(out)))
        }
        "user/message"
            if !has("id") && !has("role") && !has("message") && has("content") && has("source") =>
        {
            let mut out = object_without(&members, &[]);
            push_member(&mut out, "id", &id());
            push_member(&mut out, "role", br#""user""#);
            Some(("user/message", close(out)))
        }
        "assistant/message" if !has("message") && has("content") && has("provenance") => {
            Some(("assistant/message", assistant_message(&members, &id())?))
        }
        "tool/result" if !has("message") && has("callId") && has("content") && has("isError") => {
            Some(("tool/result", tool_result(&members, e, earlier, &id())?))
        }
        _ => None,
    }
}

/// The value of member `key`.
fn value_of<'a>(members: &[Member<'a>], key: &str) -> Option<JsonRef<'a>> {
    members.iter().find(|m| m.name == key).map(|m| m.value)
}

/// A legacy `assistant/message` (`content` and `provenance` at the top) in today's shape:
/// `message: { id, role, content, source }`, `source` the provenance with `kind: "model"`.
fn assistant_message(members: &[Member<'_>], id: &[u8]) -> Option<Vec<u8>> {
    let mut source = b"{".to_vec();
    let provenance = value_of(members, "provenance").filter(|p| p.kind() == JsonKind::Object);
    let provenance = provenance.map(js_members).unwrap_or_default();
    let mut kind_written = false;
    for m in &provenance {
        if m.name == "kind" {
            kind_written = true;
            push_raw_member(&mut source, m.key.bytes(), br#""model""#);
        } else {
            push_raw_member(&mut source, m.key.bytes(), m.value.bytes());
        }
    }
    if !kind_written {
        push_member(&mut source, "kind", br#""model""#);
    }
    let mut message = b"{".to_vec();
    push_member(&mut message, "id", id);
    push_member(&mut message, "role", br#""assistant""#);
    push_member(
        &mut message,
        "content",
        value_of(members, "content")?.bytes(),
    );
    push_member(&mut message, "source", &close(source));
    let mut out = object_without(members, &["content", "provenance"]);
    push_member(&mut out, "message", &close(message));
    Some(close(out))
}

/// A legacy `tool/result` (`callId`, `content`, `isError` at the top) in today's shape: a
/// user message holding one `tool-result` block, its id inherited by a replacement.
fn tool_result(
    members: &[Member<'_>],
    e: &Event,
    earlier: &dyn Fn(u64) -> Option<Vec<u8>>,
    id: &[u8],
) -> Option<Vec<u8>> {
    let call_id = value_of(members, "callId")?.bytes();
    let mut block = b"{".to_vec();
    push_member(&mut block, "type", br#""tool-result""#);
    push_member(&mut block, "toolCallId", call_id);
    push_member(&mut block, "content", value_of(members, "content")?.bytes());
    push_member(&mut block, "isError", value_of(members, "isError")?.bytes());
    let mut content = b"[".to_vec();
    content.extend_from_slice(&close(block));
    content.push(b']');
    let mut source = b"{".to_vec();
    push_member(&mut source, "kind", br#""tool""#);
    push_member(&mut source, "callId", call_id);
    let mut message = b"{".to_vec();
    // A replacement inherits the id of the message it replaces; without one the message has
    // no id (`undefined` in DSH), which the shape rule refuses.
    let inherited = match e.surface_op() {
        Some(SurfaceOp::Replace { start, .. }) => Some(earlier(start).filter(|_| start < e.seq())),
        _ => None,
    };
    match inherited {
        None => push_member(&mut message, "id", id),
        Some(Some(id)) => push_member(&mut message, "id", &id),
        Some(None) => {}
    }
    push_member(&mut message, "role", br#""user""#);
    push_member(&mut message, "content", &content);
    push_member(&mut message, "source", &close(source));
    let mut out = object_without(members, &["callId", "content", "isError"]);
    push_member(&mut out, "message", &close(message));
    Some(close(out))
}

/// The id DSH mints for a message persisted before messages had ids, as a JSON string.
fn legacy_id(session: &str, seq: u64) -> Vec<u8> {
    let mut out = Vec::new();
    write_str(&mut out, &format!("legacy-message:{session}:{seq}"));
    out
}

/// The message id (raw JSON string) of the event `events[at]`, if it has seq `seq`.
fn message_id(events: &[Event], at: u64, seq: u64) -> Option<&[u8]> {
    let e = events.get(usize::try_from(at).ok()?)?;
    (e.seq() == seq).then(|| message_id_of(e)).flatten()
}

/// The message id (raw JSON string) of `e`, as DSH's loader records it: a `user/message`'s
/// `data.id`, any other event's `data.message.id`, when a string.
pub fn message_id_of(e: &Event) -> Option<&[u8]> {
    let data = e.data_json();
    let message = if e.event_type() == "user/message" {
        data
    } else {
        data.get("message")?
    };
    let id = message.get("id")?;
    (id.kind() == JsonKind::String).then(|| id.bytes())
}

/// One member of an object as `JSON.parse` keeps it.
struct Member<'a> {
    /// The key as written (its first occurrence).
    key: JsonRef<'a>,
    /// The key decoded.
    name: Cow<'a, str>,
    /// The value (its last occurrence).
    value: JsonRef<'a>,
}

/// The members of `obj` in the order JavaScript enumerates the object `JSON.parse` builds:
/// array-index keys ascending, then the others in order of first appearance; a repeated
/// key's last value wins.
fn js_members(obj: JsonRef<'_>) -> Vec<Member<'_>> {
    let mut out: Vec<Member<'_>> = Vec::new();
    // Where each name sits in `out`: an object of many keys costs no quadratic search.
    let mut place: std::collections::HashMap<Cow<'_, str>, usize> =
        std::collections::HashMap::new();
    for (key, value) in obj.members() {
        let name = key.as_str().unwrap_or_default();
        if let Some(&i) = place.get(&name) {
            if let Some(m) = out.get_mut(i) {
                m.value = value;
            }
        } else {
            place.insert(name.clone(), out.len());
            out.push(Member { key, name, value });
        }
    }
    // Stable: the non-index keys keep their order.
    out.sort_by_key(|m| array_index(&m.name).map_or((1, 0), |i| (0, i)));
    out
}

/// The value of a key JavaScript treats as an array index (a canonical decimal below
/// 2^32 − 1), which it enumerates before every other key.
fn array_index(key: &str) -> Option<u32> {
    let canonical = key == "0" || (!key.starts_with('0') && !key.is_empty());
    let index: u32 = key.parse().ok().filter(|_| canonical)?;
    (index != u32::MAX && key.bytes().all(|b| b.is_ascii_digit())).then_some(index)
}

/// `{` and the members of `members` but those named in `except`, ready for more.
fn object_without(members: &[Member<'_>], except: &[&str]) -> Vec<u8> {
    let mut out = b"{".to_vec();
    for m in members
        .iter()
        .filter(|m| !except.contains(&m.name.as_ref()))
    {
        push_raw_member(&mut out, m.key.bytes(), m.value.bytes());
    }
    out
}

/// Appends `"key":value` to an object being written.
fn push_member(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    let mut quoted = Vec::with_capacity(key.len() + 2);
    write_str(&mut quoted, key);
    push_raw_member(out, &quoted, value);
}

/// Appends a member whose key is already JSON text.
fn push_raw_member(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    if out.len() > 1 {
        out.push(b',');
    }
    out.extend_from_slice(key);
    out.push(b':');
    out.extend_from_slice(value);
}

/// Ends an object begun with `{`.
fn close(mut out: Vec<u8>) -> Vec<u8> {
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(ty: &str, seq: u64, data: &str) -> Event {
        Event::new(ty, seq, 0, data.as_bytes().to_vec()).with_surface_op(SurfaceOp::Append)
    }

    fn migrate_one(events: &mut [Event]) -> Vec<(String, String)> {
        let before = events.to_vec();
        let rewritten = migrate("s", events);
        let changed: Vec<u64> = before
            .iter()
            .zip(events.iter())
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.seq())
            .collect();
        assert_eq!(changed, rewritten);
        events
            .iter()
            .map(|e| {
                (
                    e.event_type().to_owned(),
                    String::from_utf8(e.data().to_vec()).unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn steering_messages_become_user_messages() {
        let got = migrate_one(&mut [
            event(
                "steering/message",
                0,
                r#"{"turn":1,"message":{"id":"m","role":"user","content":[],"source":{"kind":"user"}}}"#,
            ),
            event(
                "steering/message",
                1,
                r#"{"turn":2,"content":[{"type":"text","text":"s"}],"source":{"kind":"user"}}"#,
            ),
        ]);
        assert_eq!(
            got,
            [
                (
                    "user/message".into(),
                    r#"{"id":"m","role":"user","content":[],"source":{"kind":"user"}}"#.into()
                ),
                (
                    "user/message".into(),
                    r#"{"content":[{"type":"text","text":"s"}],"source":{"kind":"user"},"id":"legacy-message:s:1","role":"user"}"#.into()
                ),
            ]
        );
    }

    #[test]
    fn a_steering_message_of_another_shape_is_left_to_the_rules() {
        for data in [
            r#"{"turn":1.5,"content":[],"source":{}}"#,
            r#"{"turn":1,"content":[],"source":{},"x":1}"#,
            r#"{"turn":1,"message":[]}"#,
            r#"{"id":"x","role":"user","content":[],"source":{"kind":"user"}}"#,
        ] {
            let got = migrate_one(&mut [event("steering/message", 0, data)]);
            assert_eq!(got, [("steering/message".into(), data.into())]);
        }
    }

    #[test]
    fn an_assistant_message_with_provenance_gets_a_message() {
        let got = migrate_one(&mut [event(
            "assistant/message",
            7,
            r#"{"turn":1,"step":2,"content":[{"type":"text","text":"x"}],"provenance":{"provider":"p","kind":"old","model":"m"}}"#,
        )]);
        assert_eq!(
            got[0].1,
            r#"{"turn":1,"step":2,"message":{"id":"legacy-message:s:7","role":"assistant","content":[{"type":"text","text":"x"}],"source":{"provider":"p","kind":"model","model":"m"}}}"#
        );
    }

    #[test]
    fn a_legacy_tool_result_replacement_inherits_its_target_id() {
        let mut events = [
            event(
                "tool/result",
                0,
                r#"{"turn":1,"callId":"c","content":[],"isError":false}"#,
            ),
            event(
                "tool/result",
                1,
                r#"{"turn":1,"callId":"c","content":[1],"isError":false}"#,
            )
            .with_surface_op(SurfaceOp::Replace { start: 0, end: 0 }),
            event(
                "tool/result",
                2,
                r#"{"callId":"c","content":[],"isError":true}"#,
            )
            .with_surface_op(SurfaceOp::Replace { start: 9, end: 9 }),
        ];
        let got = migrate_one(&mut events);
        assert_eq!(
            got[0].1,
            r#"{"turn":1,"message":{"id":"legacy-message:s:0","role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[],"isError":false}],"source":{"kind":"tool","callId":"c"}}}"#
        );
        assert!(
            got[1].1.contains(r#""id":"legacy-message:s:0""#),
            "{}",
            got[1].1
        );
        // The target has no message id: the message gets none (the shape rule refuses it).
        assert!(!got[2].1.contains(r#""id""#), "{}", got[2].1);
    }

    /// A batch appended to a stored session migrates as the whole session would, reading of
    /// the stored part only the message id its replacement names.
    #[test]
    fn an_appended_batch_migrates_as_the_whole_session_does() {
        let whole = [
            event(
                "tool/result",
                0,
                r#"{"turn":1,"callId":"c","content":[],"isError":false}"#,
            ),
            event(
                "tool/result",
                1,
                r#"{"turn":1,"callId":"c","content":[1],"isError":false}"#,
            )
            .with_surface_op(SurfaceOp::Replace { start: 0, end: 0 }),
        ];
        let mut all = whole.clone();
        migrate("s", &mut all);
        let stored = all[..1].to_vec();
        let asked = std::cell::RefCell::new(Vec::new());
        let mut batch = whole[1..].to_vec();
        let rewritten = migrate_appended("s", &mut batch, |seq| {
            asked.borrow_mut().push(seq);
            message_id_of(&stored[usize::try_from(seq).unwrap()]).map(<[u8]>::to_vec)
        });
        assert_eq!(rewritten, vec![1]);
        assert_eq!(batch, all[1..].to_vec());
        assert_eq!(
            asked.into_inner(),
            vec![0],
            "only the replaced message is read"
        );
    }

    #[test]
    fn objects_are_rebuilt_as_javascript_builds_them() {
        let got = migrate_one(&mut [event(
            "user/message",
            3,
            r#"{"b":1,"10":2,"content":[],"b":3,"2":4,"source":{}}"#,
        )]);
        assert_eq!(
            got[0].1,
            r#"{"2":4,"10":2,"b":3,"content":[],"source":{},"id":"legacy-message:s:3","role":"user"}"#
        );
        assert_eq!(array_index("01"), None);
        assert_eq!(array_index("4294967295"), None);
        assert_eq!(array_index("4294967294"), Some(4_294_967_294));
        assert_eq!(array_index("+1"), None);
    }

    #[test]
    fn current_shapes_are_untouched() {
        let data = r#"{"id":"u","role":"user","content":[],"source":{"kind":"user"}}"#;
        let got = migrate_one(&mut [event("user/message", 0, data)]);
        assert_eq!(got, [("user/message".into(), data.into())]);
    }
}

//! Event payloads the targets build: valid DSH v0 shapes, and tool results described field by
//! field so a replacement can change exactly one field.

use arbitrary::Arbitrary;

/// A user message (the `data` of `user/message`).
pub fn user(seq: u64, text: &str) -> String {
    format!(
        r#"{{"id":"u{seq}","role":"user","source":{{"kind":"user"}},"content":[{{"type":"text","text":{}}}]}}"#,
        json_str(text)
    )
}

/// The `data` of an `assistant/message` (empty content: a message that derives nothing).
pub fn assistant(seq: u64, empty: bool) -> String {
    let content = if empty {
        String::new()
    } else {
        format!(r#"{{"type":"text","text":"a{seq}"}}"#)
    };
    format!(
        r#"{{"turn":1,"step":1,"message":{{"id":"a{seq}","role":"assistant","source":{{"kind":"model","provider":"p","model":"m"}},"content":[{content}]}}}}"#
    )
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// A tool result, field by field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// `data.turn`.
    pub turn: u64,
    /// `data.step`.
    pub step: u64,
    /// `message.id`.
    pub id: String,
    /// `source.callId` and the block's `toolCallId`.
    pub call: String,
    /// The block's `isError`.
    pub is_error: bool,
    /// The text inside the block's `content`.
    pub text: String,
    /// `data.error`, when present.
    pub error: bool,
    /// `data.meta`, when present.
    pub meta: Option<u8>,
}

/// How a tool-result replacement differs from its target.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum ToolEdit {
    /// Only the block's content (allowed).
    Content,
    /// The same data with keys in another order (allowed: equality ignores order).
    KeyOrder,
    /// `turn` spelled `1.0` instead of `1` (allowed: numbers compare by value).
    NumberSpelling,
    /// A different `turn`.
    Turn,
    /// A different `step`.
    Step,
    /// A different message id.
    Id,
    /// A different call id (source and block alike).
    CallId,
    /// `isError` flipped.
    IsError,
    /// `error` added or removed.
    Error,
    /// `meta` changed.
    Meta,
    /// An extra key in `data`.
    ExtraKey,
    /// Two blocks (a message-shape refusal).
    SecondBlock,
    /// A block whose `toolCallId` differs from the source's `callId` (message shape).
    MismatchedCall,
}

impl Tool {
    /// A fresh tool result for `seq`.
    pub fn new(seq: u64) -> Self {
        Self {
            turn: 1,
            step: 1 + seq % 3,
            id: format!("r{seq}"),
            call: format!("c{seq}"),
            is_error: false,
            text: format!("output {seq}"),
            error: false,
            meta: None,
        }
    }

    /// The replacement of `self` under `edit` at `seq`, and its `data`.
    pub fn edited(&self, edit: ToolEdit, seq: u64) -> (Self, String) {
        let mut t = self.clone();
        let mut order = false;
        let mut spelled = false;
        let mut extra = false;
        let mut blocks = 1;
        let mut block_call = None;
        match edit {
            ToolEdit::Content => t.text = format!("pruned at {seq}"),
            ToolEdit::KeyOrder => order = true,
            ToolEdit::NumberSpelling => spelled = true,
            ToolEdit::Turn => t.turn += 1,
            ToolEdit::Step => t.step += 1,
            ToolEdit::Id => t.id.push('x'),
            ToolEdit::CallId => t.call.push('x'),
            ToolEdit::IsError => t.is_error = !t.is_error,
            ToolEdit::Error => t.error = !t.error,
            ToolEdit::Meta => t.meta = Some(t.meta.map_or(0, |m| m.wrapping_add(1))),
            ToolEdit::ExtraKey => extra = true,
            ToolEdit::SecondBlock => blocks = 2,
            ToolEdit::MismatchedCall => block_call = Some(format!("{}y", t.call)),
        }
        let data = t.render(order, spelled, extra, blocks, block_call.as_deref());
        (t, data)
    }

    /// The `data` of this tool result.
    pub fn data(&self) -> String {
        self.render(false, false, false, 1, None)
    }

    fn render(
        &self,
        reorder: bool,
        spelled: bool,
        extra: bool,
        blocks: usize,
        block_call: Option<&str>,
    ) -> String {
        let call = json_str(&self.call);
        let block = format!(
            r#"{{"type":"tool-result","toolCallId":{},"isError":{},"content":[{{"type":"text","text":{}}}]}}"#,
            block_call.map_or_else(|| call.clone(), json_str),
            self.is_error,
            json_str(&self.text)
        );
        let content = vec![block; blocks].join(",");
        let message = format!(
            r#"{{"id":{},"role":"user","source":{{"kind":"tool","callId":{call}}},"content":[{content}]}}"#,
            json_str(&self.id)
        );
        let turn = if spelled {
            format!("{}.0", self.turn)
        } else {
            self.turn.to_string()
        };
        let mut members = vec![
            format!(r#""turn":{turn}"#),
            format!(r#""step":{}"#, self.step),
            format!(r#""message":{message}"#),
        ];
        if self.error {
            members.push(r#""error":{"name":"Tool","code":"FAILED"}"#.to_owned());
        }
        if let Some(m) = self.meta {
            members.push(format!(r#""meta":{{"m":{m}}}"#));
        }
        if extra {
            members.push(r#""x":1"#.to_owned());
        }
        if reorder {
            members.reverse();
        }
        format!("{{{}}}", members.join(","))
    }
}

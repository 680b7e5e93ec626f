//! `deriveMessages` (`docs/DESIGN.md` §2.5): the LLM messages of a session are its surface, each node
//! projected to a slice of the stored `data` bytes, without parsing into a tree or copying.

use super::shape::{content_is_empty, message_of};
use crate::event::{Event, SurfaceType};

/// One derived message: the message JSON of one surface node, exactly as stored.
///
/// One type for both places messages come from: [`crate::Session::messages`] lends slices of
/// the events it holds (`Message<&[u8]>`, `Copy`), [`crate::Store::messages`] returns owned
/// bytes read from the log (`Message<Vec<u8>>`, the default). [`Message::json`] reads either.
#[derive(Debug, Clone, Copy)]
pub struct Message<J = Vec<u8>> {
    /// The seq of the surface event it comes from.
    pub seq: u64,
    /// The type of that event.
    pub surface_type: SurfaceType,
    /// The message JSON, exactly as stored.
    pub json: J,
}

/// Borrowed and owned messages compare by seq, type and bytes.
impl<A: AsRef<[u8]>, B: AsRef<[u8]>> PartialEq<Message<B>> for Message<A> {
    fn eq(&self, other: &Message<B>) -> bool {
        self.seq == other.seq
            && self.surface_type == other.surface_type
            && self.json.as_ref() == other.json.as_ref()
    }
}

impl<J: AsRef<[u8]>> Eq for Message<J> {}

impl<J: AsRef<[u8]>> Message<J> {
    /// The message JSON, exactly as stored.
    pub fn json(&self) -> &[u8] {
        self.json.as_ref()
    }

    /// The same message owning its bytes.
    pub fn into_owned(self) -> Message {
        Message {
            seq: self.seq,
            surface_type: self.surface_type,
            json: self.json.as_ref().to_vec(),
        }
    }
}

/// The message an accepted surface event contributes, if any: `data` for user-shaped types,
/// `data.message` for `assistant/message` (none when its content is empty) and `tool/result`.
#[inline]
pub fn derive_message(event: &Event) -> Option<Message<&[u8]>> {
    message_from(event.seq(), event.surface_type()?, event.data())
}

/// [`derive_message`] from an event's seq, type and `data` (a borrowed stored event).
#[inline]
pub fn derive_message_parts<'a>(
    seq: u64,
    event_type: &str,
    data: &'a [u8],
) -> Option<Message<&'a [u8]>> {
    message_from(seq, SurfaceType::from_name(event_type)?, data)
}

#[inline]
fn message_from(seq: u64, surface_type: SurfaceType, data: &[u8]) -> Option<Message<&[u8]>> {
    let msg = message_of(surface_type, crate::json::JsonRef::new(data))?;
    if surface_type == SurfaceType::AssistantMessage && content_is_empty(msg) {
        return None;
    }
    Some(Message {
        seq,
        surface_type,
        json: msg.bytes(),
    })
}

//! `deriveMessages` (`docs/DESIGN.md` §2.5): the LLM messages of a session are its surface, each node
//! projected to a slice of the stored `data` bytes, without parsing into a tree or copying.

use super::shape::{content_is_empty, message_of};
use crate::event::{Event, SurfaceType};

/// One derived message: a slice of the event's stored `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// The seq of the surface event it comes from.
    pub seq: u64,
    /// The type of that event.
    pub surface_type: SurfaceType,
    /// The message JSON, exactly as stored.
    pub json: &'a [u8],
}

/// The message an accepted surface event contributes, if any: `data` for user-shaped types,
/// `data.message` for `assistant/message` (none when its content is empty) and `tool/result`.
#[inline]
pub fn derive_message(event: &Event) -> Option<Message<'_>> {
    message_from(event.seq(), event.surface_type()?, event.data())
}

/// [`derive_message`] from an event's seq, type and `data` (a borrowed stored event).
#[inline]
pub fn derive_message_parts<'a>(seq: u64, event_type: &str, data: &'a [u8]) -> Option<Message<'a>> {
    message_from(seq, SurfaceType::from_name(event_type)?, data)
}

#[inline]
fn message_from(seq: u64, surface_type: SurfaceType, data: &[u8]) -> Option<Message<'_>> {
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

//! [`SessionHandle`]: one session of a [`Store`], so an embedder names it once instead of
//! passing its id to every call; and the store's create-if-absent and range forms.

use std::ops::RangeBounds;

use crate::event::Event;
use crate::model::{ForkSpec, SessionHeader};
use crate::store::api::Store;
use crate::store::info::SessionInfo;
use crate::store::subscribe::Subscription;
use crate::{Draft, Error, Result};

/// One session of a store: every method is the [`Store`] method of the same name for this
/// session. Cheap to make and to clone; it borrows the store.
///
/// ```
/// use std::sync::Arc;
/// use sessdb::storage::MemStorage;
/// use sessdb::{Draft, LogType, SessionHeader, Store, StoreOptions};
///
/// # fn main() -> sessdb::Result<()> {
/// let store = Store::open_with(Arc::new(MemStorage::new()), StoreOptions::default())?;
/// // Created the first time, the same session again on a restart.
/// let s = store.session_or_create(SessionHeader::new("s1", 0))?;
/// s.append(Draft::log(LogType::TURN_START, &br#"{"turn":1}"#[..]))?;
/// assert_eq!(s.len()?, 2); // the end-seed marker and the turn start
/// assert_eq!(s.events(1..)?[0].event_type(), "turn/start");
/// assert!(store.contains("s1"));
/// let again = store.session_or_create(SessionHeader::new("s1", 0))?;
/// assert_eq!(again.len()?, 2);
/// # Ok(())
/// # }
/// ```
///
/// A whole turn — streamed chunks, the assistant message citing them, a tool call and its
/// result — then a compaction that replaces the conversation with a summary:
///
/// ```
/// use std::sync::Arc;
/// use sessdb::storage::MemStorage;
/// use sessdb::{Draft, LogType, SessionHeader, Store, StoreOptions, SurfaceIntent, SurfaceType};
///
/// # fn main() -> sessdb::Result<()> {
/// let store = Store::open_with(Arc::new(MemStorage::new()), StoreOptions::default())?;
/// let s = store.session_or_create(SessionHeader::new("s1", 0))?; // seq 0: its end-seed marker
/// let log = |ty: &LogType, data: &str| Draft::log(ty, data.as_bytes().to_vec());
/// let surface = |ty, data: &str, intent| Draft::surface(ty, data.as_bytes().to_vec(), intent);
/// s.append(log(&LogType::TURN_START, r#"{"turn":1}"#))?; // 1
/// let user = s.append(surface(
///     SurfaceType::UserMessage,
///     r#"{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"list the files"}]}"#,
///     SurfaceIntent::append(),
/// ))?; // 2
/// s.append(log(&LogType::STEP_START, r#"{"turn":1,"step":1}"#))?; // 3
/// let chunks = s.append_batch(vec![
///     log(&LogType::ASSISTANT_CHUNK, r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"Listing"}}"#),
///     log(&LogType::ASSISTANT_CHUNK, r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":" them."}}"#),
/// ])?; // 4..6
/// let answer = s.append(surface(
///     SurfaceType::AssistantMessage,
///     r#"{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","source":{"kind":"model","provider":"p","model":"m"},"content":[{"type":"text","text":"Listing them."},{"type":"tool-call","id":"c1","name":"bash","arguments":"{\"command\":\"ls\"}"}]}}"#,
///     SurfaceIntent::append().with_sources(chunks.collect::<Vec<_>>()),
/// ))?; // 6
/// let call = s.append(log(
///     &LogType::TOOL_CALL,
///     r#"{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{\"command\":\"ls\"}"}"#,
/// ))?; // 7
/// let result = s.append(surface(
///     SurfaceType::ToolResult,
///     r#"{"turn":1,"step":1,"message":{"id":"r1","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":false,"content":[{"type":"text","text":"README.md"}]}]}}"#,
///     SurfaceIntent::append().with_sources(vec![call]),
/// ))?; // 8
/// s.append(log(&LogType::STEP_END, r#"{"turn":1,"step":1}"#))?;
/// s.append(log(&LogType::TURN_END, r#"{"turn":1,"reason":{"kind":"completed"}}"#))?;
/// assert_eq!(s.surface()?, vec![user, answer, result]);
///
/// // The compaction: one summary replaces the surface from the first message to the last,
/// // citing every message it shadows.
/// let summary = s.append(surface(
///     SurfaceType::UserMessage,
///     r#"{"id":"sum1","role":"user","source":{"kind":"compaction"},"content":[{"type":"text","text":"Summary: the files were listed."}]}"#,
///     SurfaceIntent::replace(user..=result).with_sources(vec![user, answer, result]),
/// ))?;
/// assert_eq!(s.surface()?, vec![summary]);
/// assert_eq!(s.messages()?.len(), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SessionHandle<'a> {
    store: &'a Store,
    id: String,
}

impl<'a> SessionHandle<'a> {
    /// The handle of session `id` of `store` (which holds it).
    pub(super) fn new(store: &'a Store, id: String) -> Self {
        Self { store, id }
    }
}

impl Store {
    /// Creates a session from a header and seed (as `Session::create`): every seed event is
    /// accepted in order, then `session/end-seed {}` is appended unless the seed ends with
    /// one. One record: all or nothing on recovery. Returns the new session's handle
    /// (`handle.len()` is its length).
    ///
    /// # Errors
    /// `SessionExists`, `InvalidHeader`, `Rejected`, write errors.
    pub fn create_session(
        &self,
        header: SessionHeader,
        seed: Vec<Event>,
    ) -> Result<SessionHandle<'_>> {
        let id = header.id.clone();
        self.inner
            .create(header, seed, crate::store::catalog::write::Seed::EndMarked)?;
        Ok(SessionHandle::new(self, id))
    }

    /// Whether the store holds a live session `id`.
    pub fn contains(&self, id: &str) -> bool {
        // A damaged index entry of the same id hash: not known to be there (`session` says
        // why).
        self.inner.catalog.read().exists(id).unwrap_or(false)
    }

    /// The session `id`.
    ///
    /// # Errors
    /// `SessionNotFound`.
    pub fn session(&self, id: &str) -> Result<SessionHandle<'_>> {
        if !self.inner.catalog.read().exists(id)? {
            return Err(Error::SessionNotFound { id: id.to_owned() });
        }
        Ok(SessionHandle {
            store: self,
            id: id.to_owned(),
        })
    }

    /// The session of `header`: created (as [`Store::create_session`] with no seed) when the
    /// store has no session of that id, or the stored one when its header is this one — so a
    /// harness can call it on every start. A stored session of that id with another header
    /// is `SessionExists`.
    ///
    /// # Errors
    /// `SessionExists` for a different header under the id; as [`Store::create_session`].
    pub fn session_or_create(&self, header: SessionHeader) -> Result<SessionHandle<'_>> {
        let id = header.id.clone();
        match self.header(&id) {
            Ok(stored) if stored == header => {}
            Ok(_) => return Err(Error::SessionExists { id }),
            Err(Error::SessionNotFound { .. }) => {
                match self.create_session(header.clone(), Vec::new()) {
                    Ok(_) => {}
                    // Another writer created it between the look and the create: the same
                    // rule for what it created.
                    Err(Error::SessionExists { .. }) if self.header(&id)? == header => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
        Ok(SessionHandle { store: self, id })
    }
}

impl SessionHandle<'_> {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// As [`Store::append`].
    ///
    /// # Errors
    /// As [`Store::append`].
    pub fn append(&self, draft: Draft) -> Result<u64> {
        self.store.append(&self.id, draft)
    }

    /// As [`Store::append_batch`].
    ///
    /// # Errors
    /// As [`Store::append_batch`].
    pub fn append_batch(&self, drafts: Vec<Draft>) -> Result<std::ops::Range<u64>> {
        self.store.append_batch(&self.id, drafts)
    }

    /// The events of `range` (`..` for all), as [`Store::events`].
    ///
    /// # Errors
    /// As [`Store::events`].
    pub fn events(&self, range: impl RangeBounds<u64>) -> Result<Vec<Event>> {
        self.store.events(&self.id, range)
    }

    /// The last `n` events.
    ///
    /// # Errors
    /// As [`Store::last_events`].
    pub fn last_events(&self, n: u64) -> Result<Vec<Event>> {
        self.store.last_events(&self.id, n)
    }

    /// The number of events.
    ///
    /// # Errors
    /// `SessionNotFound` (deleted since the handle was made).
    pub fn len(&self) -> Result<u64> {
        self.store.session_len(&self.id)
    }

    /// Whether the session has no events (never true of a created one: it has its marker).
    ///
    /// # Errors
    /// As [`SessionHandle::len`].
    pub fn is_empty(&self) -> Result<bool> {
        self.len().map(|n| n == 0)
    }

    /// The header.
    ///
    /// # Errors
    /// As [`SessionHandle::len`].
    pub fn header(&self) -> Result<SessionHeader> {
        self.store.header(&self.id)
    }

    /// The surface's seqs in order.
    ///
    /// # Errors
    /// As [`SessionHandle::len`].
    pub fn surface(&self) -> Result<Vec<u64>> {
        self.store.surface(&self.id)
    }

    /// The derived messages, as [`Store::messages`].
    ///
    /// # Errors
    /// As [`Store::messages`].
    pub fn messages(&self) -> Result<Vec<crate::Message>> {
        self.store.messages(&self.id)
    }

    /// What [`Store::list`] says of this session.
    ///
    /// # Errors
    /// As [`SessionHandle::len`].
    pub fn info(&self) -> Result<SessionInfo> {
        self.store
            .info(&self.id)
            .ok_or_else(|| Error::SessionNotFound {
                id: self.id.clone(),
            })
    }

    /// Forks this session; returns the child's handle.
    ///
    /// # Errors
    /// As [`Store::fork`].
    pub fn fork(&self, spec: ForkSpec) -> Result<SessionHandle<'_>> {
        let child = self.store.fork(&self.id, spec)?;
        Ok(SessionHandle {
            store: self.store,
            id: child,
        })
    }

    /// Follows the session from `from_seq`, as [`Store::subscribe`].
    ///
    /// # Errors
    /// As [`Store::subscribe`].
    pub fn subscribe(&self, from_seq: u64) -> Result<Subscription> {
        self.store.subscribe(&self.id, from_seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;
    use crate::{LogType, StoreOptions};
    use std::sync::Arc;

    fn store() -> Store {
        Store::open_with(Arc::new(MemStorage::new()), StoreOptions::default()).unwrap()
    }

    #[test]
    fn ranges_of_every_kind_read_what_the_half_open_form_reads() {
        let s = store();
        let h = s.session_or_create(SessionHeader::new("s", 0)).unwrap();
        for t in 1..=4u64 {
            let data = format!(r#"{{"turn":{t}}}"#);
            h.append(Draft::log(LogType::TURN_START, data.into_bytes()))
                .unwrap();
            let data = format!(r#"{{"turn":{t},"reason":{{"kind":"completed"}}}}"#);
            h.append(Draft::log(LogType::TURN_END, data.into_bytes()))
                .unwrap();
        }
        let seqs = |v: Result<Vec<Event>>| v.unwrap().iter().map(Event::seq).collect::<Vec<_>>();
        assert_eq!(seqs(h.events(..)), (0..9).collect::<Vec<_>>());
        assert_eq!(seqs(h.events(3..)), (3..9).collect::<Vec<_>>());
        assert_eq!(seqs(h.events(3..=5)), vec![3, 4, 5]);
        assert_eq!(seqs(h.events(..2)), vec![0, 1]);
        assert_eq!(seqs(h.events(7..=100)), vec![7, 8]);
        assert_eq!(seqs(h.events(5..5)), Vec::<u64>::new());
        assert_eq!(seqs(s.events("s", 2..=3)), seqs(s.events("s", 2..4)));
    }

    #[test]
    fn a_handle_is_the_store_for_one_session() {
        let s = store();
        assert!(!s.contains("a"));
        assert!(matches!(s.session("a"), Err(Error::SessionNotFound { .. })));
        let a = s.session_or_create(SessionHeader::new("a", 5)).unwrap();
        assert!(s.contains("a"));
        assert_eq!(a.len().unwrap_or_default(), 1);
        // The same header again: the same session; another header under the id: refused.
        assert_eq!(
            s.session_or_create(SessionHeader::new("a", 5))
                .map(|h| h.id().to_owned())
                .ok(),
            Some("a".to_owned())
        );
        assert!(matches!(
            s.session_or_create(SessionHeader::new("a", 6)),
            Err(Error::SessionExists { .. })
        ));
        let child = a.fork(ForkSpec::default()).unwrap();
        assert_eq!(
            child.header().ok().and_then(|h| h.parent_session),
            Some("a".to_owned())
        );
        // The parent's one event (its end-seed marker) inherited; no second marker after it.
        assert_eq!(child.info().map(|i| i.events).ok(), Some(1));
        s.delete_session("a").unwrap();
        assert!(matches!(a.len(), Err(Error::SessionNotFound { .. })));
    }
}

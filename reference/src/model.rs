//! The model of one session: every accepted event kept as a tree, the surface recomputed
//! from the rules on every accept.

use serde_json::Value;

use crate::candidate::Candidate;
use crate::rules::{History, Refusal, decide};
use crate::shape;
use crate::value::raw_member;

/// One accepted event, as the model keeps it.
#[derive(Debug, Clone)]
struct Kept {
    ty: String,
    data: Value,
    text: String,
}

/// A session as the reference model sees it.
#[derive(Debug, Clone, Default)]
pub struct Model {
    events: Vec<Kept>,
    surface: Vec<u64>,
}

impl Model {
    /// An empty session.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of accepted events (the next seq).
    pub fn len(&self) -> u64 {
        self.events.len() as u64
    }

    /// Whether no event was accepted.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The surface: the seqs that become messages, in order.
    pub fn surface(&self) -> Vec<u64> {
        self.surface.clone()
    }

    /// The type and `data` of the event `seq`.
    pub fn event(&self, seq: u64) -> Option<(&str, &Value)> {
        let kept = self.events.get(usize::try_from(seq).ok()?)?;
        Some((&kept.ty, &kept.data))
    }

    /// The type of the last event.
    pub fn last_type(&self) -> Option<&str> {
        self.events.last().map(|k| k.ty.as_str())
    }

    /// Whether `c` would be accepted; the first rule it breaks if not.
    ///
    /// # Errors
    /// The refusal.
    pub fn decide(&self, c: &Candidate) -> Result<(), Refusal> {
        decide(self, c).map(drop)
    }

    /// Accepts `c` if the rules allow it; a refusal changes nothing.
    ///
    /// # Errors
    /// The refusal.
    pub fn accept(&mut self, c: &Candidate) -> Result<(), Refusal> {
        // `data` as `decide` parsed it (an accepted candidate's `data` parsed, so it is text).
        let accepted = decide(self, c)?;
        self.events.push(Kept {
            ty: c.ty.clone(),
            data: accepted.data,
            text: String::from_utf8_lossy(&c.data).into_owned(),
        });
        self.surface = accepted.surface;
        Ok(())
    }

    /// The seed rule (reference §3.2): every event accepted in order, then a
    /// `session/end-seed {}` unless the seed ends with one. A refused seed leaves no session.
    ///
    /// # Errors
    /// The first refusal, with the index of the event.
    pub fn from_seed(seed: &[Candidate]) -> Result<Self, (usize, Refusal)> {
        let mut model = Self::new();
        for (i, c) in seed.iter().enumerate() {
            model.accept(c).map_err(|r| (i, r))?;
        }
        if model.last_type() != Some("session/end-seed") {
            let marker = Candidate::log(model.len(), "session/end-seed", b"{}");
            model.accept(&marker).map_err(|r| (seed.len(), r))?;
        }
        Ok(model)
    }

    /// Whether a turn is open at `seq` (the last `turn/start` or `turn/end` at or before it
    /// is a `turn/start`): DSH refuses to fork there.
    pub fn turn_open_at(&self, seq: u64) -> bool {
        self.events
            .iter()
            .take(usize::try_from(seq.saturating_add(1)).unwrap_or(usize::MAX))
            .rev()
            .find(|k| k.ty == "turn/start" || k.ty == "turn/end")
            .is_some_and(|k| k.ty == "turn/start")
    }

    /// The derived messages: for each surface node, the exact text of its message (`data`,
    /// or `data.message` for assistant messages and tool results), skipping an assistant
    /// message whose `content` is empty.
    pub fn messages(&self) -> Vec<(u64, String)> {
        self.surface
            .iter()
            .filter_map(|&seq| {
                let kept = self.events.get(usize::try_from(seq).ok()?)?;
                if kept.ty == "assistant/message"
                    && kept.data["message"]["content"]
                        .as_array()
                        .is_some_and(Vec::is_empty)
                {
                    return None;
                }
                let text = if shape::nested_message(&kept.ty) {
                    raw_member(&kept.text, "message")?.to_owned()
                } else {
                    kept.text.clone()
                };
                Some((seq, text))
            })
            .collect()
    }
}

impl History for Model {
    fn len(&self) -> u64 {
        Model::len(self)
    }

    fn surface(&self) -> Vec<u64> {
        Model::surface(self)
    }

    fn event(&self, seq: u64) -> Option<(&str, &Value)> {
        Model::event(self, seq)
    }
}

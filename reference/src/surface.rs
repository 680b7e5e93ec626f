//! The hand-driven surface model of the property tests (`tests/tests/model_props.rs`): the
//! test builds each valid operation and records it here; replaces rebuild the surface instead
//! of splicing it, messages are remembered as the test built them.

use std::collections::HashMap;

/// What the reference model remembers of a surface event.
#[derive(Debug, Clone)]
pub struct Node {
    /// The event type.
    pub ty: &'static str,
    /// The message JSON the engine must derive (None: skipped, an empty assistant message).
    pub message: Option<String>,
    /// For tool results: (id, call id, turn, step).
    pub tool: Option<(String, String, u64, u64)>,
}

/// The reference model of one session's surface.
#[derive(Debug, Default)]
pub struct Reference {
    /// The next seq.
    pub next: u64,
    /// The surface.
    pub surface: Vec<u64>,
    /// What is remembered of each surface event.
    pub nodes: HashMap<u64, Node>,
}

impl Reference {
    /// Surface after a replace, computed by rebuilding rather than splicing.
    pub fn replaced(&self, start: u64, end: u64, seq: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut inside = false;
        for &s in &self.surface {
            if s == start {
                inside = true;
                out.push(seq);
            }
            if !inside {
                out.push(s);
            }
            if s == end {
                inside = false;
            }
        }
        out
    }

    /// The messages the engine must derive: `(seq, message JSON)` per surface node.
    pub fn expected_messages(&self) -> Vec<(u64, String)> {
        self.surface
            .iter()
            .filter_map(|s| {
                self.nodes
                    .get(s)
                    .and_then(|n| n.message.clone())
                    .map(|m| (*s, m))
            })
            .collect()
    }
}

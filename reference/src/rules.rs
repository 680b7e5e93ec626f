//! The acceptance rules in DSH's order (reference §3.2–§3.3): the first rule a candidate
//! breaks names the refusal.

use serde_json::Value;

use crate::candidate::{Candidate, Op};
use crate::shape;
use crate::value::deep_eq;

/// Why the model refuses a candidate: the engine's stable rule name, and a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The rule broken, as `sessdb::Violation::rule` names it.
    pub rule: &'static str,
    /// What was wrong, for failure messages.
    pub detail: String,
}

fn refuse<T>(rule: &'static str, detail: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        rule,
        detail: detail.into(),
    })
}

/// What the rules read of a session: its length, surface, and earlier events.
pub trait History {
    /// The number of accepted events.
    fn len(&self) -> u64;
    /// The surface.
    fn surface(&self) -> Vec<u64>;
    /// The type and `data` of the event `seq`.
    fn event(&self, seq: u64) -> Option<(&str, &Value)>;
}

/// What an accepted candidate leaves: the new surface, and its `data` as parsed.
pub struct Accepted {
    /// The surface after the candidate.
    pub surface: Vec<u64>,
    /// The candidate's `data`.
    pub data: Value,
}

/// Decides `c` against `model`: what it leaves, or the first rule broken.
pub fn decide(model: &dyn History, c: &Candidate) -> Result<Accepted, Refusal> {
    if c.seq != model.len() {
        return refuse("seq-contiguity", format!("expected {}", model.len()));
    }
    if c.ty.is_empty() && !c.ignorable {
        return refuse("type-non-empty", "");
    }
    if c.ty.len() > 64 << 20 {
        return refuse("type-length", "");
    }
    if !c.ignorable && !crate::vocabulary::known(&c.ty) {
        return refuse("unknown-type-needs-ignorable", c.ty.clone());
    }
    let Ok(data) = serde_json::from_slice::<Value>(&c.data) else {
        return refuse("lossless-json", "data does not parse");
    };
    if shape::legacy(&c.ty, &data) {
        return refuse("legacy-vocabulary", c.ty.clone());
    }
    if let Err(e) = shape::marker(&c.ty, &data) {
        return refuse("marker-shape", e);
    }
    // An ignorable `context/message` without surface metadata is a log event to DSH's loader.
    let log_context =
        c.ty == "context/message" && c.ignorable && c.op.is_none() && c.sources.is_none();
    let surface_type = shape::is_surface(&c.ty) && !log_context;
    if surface_type && let Err(e) = shape::message(&c.ty, &data) {
        return refuse("message-shape", e);
    }
    if c.ty == "request/header"
        && let Err(e) = shape::request_header(&data)
    {
        return refuse("request-header-shape", e);
    }
    if !surface_type {
        if c.op.is_some() || c.sources.is_some() {
            return refuse("surface-metadata-only-on-surface-types", c.ty.clone());
        }
        return Ok(Accepted {
            surface: model.surface(),
            data,
        });
    }
    let Some(op) = c.op else {
        return refuse("surface-op-required", c.ty.clone());
    };
    if let Some(sources) = &c.sources {
        check_sources(c, sources)?;
    }
    let surface = model.surface();
    let Op::Replace { start, end } = op else {
        let mut next = surface;
        next.push(c.seq);
        return Ok(Accepted {
            surface: next,
            data,
        });
    };
    let Some(i) = surface.iter().position(|&s| s == start) else {
        return refuse("replace-endpoints-on-surface", format!("start {start}"));
    };
    let Some(j) = surface.iter().position(|&s| s == end) else {
        return refuse("replace-endpoints-on-surface", format!("end {end}"));
    };
    if i > j {
        return refuse("replace-endpoints-ordered", format!("{start} after {end}"));
    }
    let cited = c.sources.clone().unwrap_or_default();
    if let Some(missing) = surface[i..=j].iter().find(|s| !cited.contains(s)) {
        return refuse("replace-cites-shadowed", format!("{missing} not cited"));
    }
    if c.ty == "tool/result" {
        if i != j {
            return refuse("tool-result-replacement", "more than one node");
        }
        let (target_type, target_data) = model.event(start).ok_or(Refusal {
            rule: "replace-endpoints-on-surface",
            detail: "no such event".into(),
        })?;
        if target_type != "tool/result" {
            return refuse("tool-result-replacement", "target is not a tool/result");
        }
        if !equal_but_content(target_data, &data) {
            return refuse("tool-result-replacement", "changes more than content");
        }
    }
    // Rebuilt, not spliced: everything before `start`, the replacement, everything after `end`.
    let mut next: Vec<u64> = surface[..i].to_vec();
    next.push(c.seq);
    next.extend_from_slice(&surface[j + 1..]);
    Ok(Accepted {
        surface: next,
        data,
    })
}

/// Provenance: `[]` only on `assistant/message`, unique, every member before the event.
fn check_sources(c: &Candidate, sources: &[u64]) -> Result<(), Refusal> {
    if sources.is_empty() && c.ty != "assistant/message" {
        return refuse("empty-sources-only-on-assistant", "");
    }
    let mut sorted = sources.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != sources.len() {
        return refuse("sources-unique", format!("{sources:?}"));
    }
    if sources.iter().any(|&s| s >= c.seq) {
        return refuse("sources-earlier", format!("{sources:?}"));
    }
    Ok(())
}

/// The two `data` trees with `message.content[0].content` removed are deeply equal.
fn equal_but_content(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(block) = v
            .get_mut("message")
            .and_then(|m| m.get_mut("content"))
            .and_then(|c| c.get_mut(0))
            .and_then(Value::as_object_mut)
        {
            block.remove("content");
        }
        v
    };
    deep_eq(&strip(old), &strip(new))
}

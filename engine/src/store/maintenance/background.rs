//! The writer's background thread (`docs/DESIGN.md` §3.7): retention on its timer,
//! compaction when the policy wants a segment; its state and timers are `maintenance.rs`'s.

use std::sync::Arc;

use crate::store::compact::{Compaction, Run, Scope};
use crate::store::inner::Inner;
use crate::store::maintenance::Compacted;
use crate::store::maintenance::retention::Retention;
use crate::store::writer::Access;

/// Starts the thread of a writable store that has a policy.
pub(crate) fn start(inner: &Arc<Inner>) {
    let o = &inner.options;
    if (inner.writer.access() == Access::Read) || (o.compaction.is_none() && o.retention.is_none())
    {
        return;
    }
    inner
        .maintenance
        .arm(o.retention.as_ref(), o.compaction.as_ref());
    let worker = Arc::clone(inner);
    let spawned = std::thread::Builder::new()
        .name("sessdb-maintenance".into())
        .spawn(move || run(&worker));
    inner.maintenance.started(spawned);
}

fn run(inner: &Arc<Inner>) {
    let m = &inner.maintenance;
    while let Some(due) = m.next_step() {
        if due.retention
            && let Some(policy) = inner.options.retention
        {
            let done = match (Retention { store: inner }).apply_retention(&policy, false) {
                Ok(r) => Ok(r.deleted.len() as u64),
                Err(e) => Err(e.to_string()),
            };
            m.retention_done(done, policy.check_every);
        }
        if due.compaction
            && let Some(policy) = inner.options.compaction
        {
            match (Compaction { store: inner }).compact(Run::Apply, Scope::Policy(policy)) {
                Ok(out) => m.compaction_done(Ok(Compacted {
                    segments: out.report.segments.len() as u64,
                    reclaimed: out.report.reclaimed_bytes(),
                    dead_left: out.dead_left,
                })),
                Err(crate::Error::Closed) => {}
                Err(e) => m.compaction_done(Err(e.to_string())),
            }
        }
        m.idle();
    }
}

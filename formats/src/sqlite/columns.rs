//! Event fields as the JSON text of SQLite columns, for both schemas' writers.

use sessdb::{Event, SurfaceOp};

/// `[1,2,3]`.
pub(crate) fn sources_json(e: &Event) -> Option<String> {
    e.sources().map(|s| {
        format!(
            "[{}]",
            s.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        )
    })
}

/// `"append"` or `{"op":"replace","start":S,"end":E}`.
pub(crate) fn surface_op_json(e: &Event) -> Option<String> {
    e.surface_op().map(|op| match op {
        SurfaceOp::Append => "\"append\"".to_owned(),
        SurfaceOp::Replace { start, end } => {
            format!("{{\"op\":\"replace\",\"start\":{start},\"end\":{end}}}")
        }
    })
}

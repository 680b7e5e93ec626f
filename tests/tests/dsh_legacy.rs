//! DSH's read-time migrations (reference §1.3): a session written before messages had ids
//! imports as the events DSH's loader builds from it, its messages carry the ids DSH mints,
//! and the export (in the current shapes) imports back to the same events.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb_formats::jsonl::{ExportOptions, import_jsonl};
use sessdb_tests::{dump_store, export_jsonl_files, mem_store};

const HEADER: &str =
    r#"{"type":"session","version":0,"id":"old","createdAt":1,"delegationDepth":0}"#;

/// One line per legacy shape, with a turn around them.
const EVENTS: [&str; 8] = [
    r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"trigger":{"kind":"user"}}}"#,
    r#"{"type":"user/message","seq":1,"time":1,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}},"surfaceOp":"append"}"#,
    r#"{"type":"assistant/message","seq":2,"time":1,"data":{"turn":1,"step":1,"content":[{"type":"text","text":"x"}],"provenance":{"provider":"p","model":"m"}},"sourceEventSeqs":[],"surfaceOp":"append"}"#,
    r#"{"type":"tool/result","seq":3,"time":1,"data":{"turn":1,"callId":"c1","content":[{"type":"text","text":"big"}],"isError":false},"surfaceOp":"append"}"#,
    r#"{"type":"tool/result","seq":4,"time":1,"data":{"turn":1,"callId":"c1","content":[],"isError":false},"sourceEventSeqs":[3],"surfaceOp":{"op":"replace","start":3,"end":3}}"#,
    r#"{"type":"steering/message","seq":5,"time":1,"data":{"turn":1,"content":[{"type":"text","text":"s"}],"source":{"kind":"user"}},"surfaceOp":"append"}"#,
    r#"{"type":"steering/message","seq":6,"time":1,"data":{"turn":1,"message":{"id":"w","role":"user","content":[],"source":{"kind":"user"}}},"surfaceOp":"append"}"#,
    r#"{"type":"turn/end","seq":7,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
];

fn write_session(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("session.jsonl");
    let mut text = format!("{HEADER}\n");
    for line in EVENTS {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn legacy_shapes_import_as_dsh_reads_them_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = mem_store();
    let report = import_jsonl(&store, &write_session(dir.path())).unwrap();
    assert_eq!(report.sessions[0].migrated, [1, 2, 3, 4, 5, 6]);
    assert_eq!(store.surface("old").unwrap(), [1, 2, 4, 5, 6]);
    let types: Vec<String> = store
        .events("old", ..8)
        .unwrap()
        .iter()
        .map(|e| e.event_type().to_owned())
        .collect();
    assert_eq!(types[5], "user/message");
    assert_eq!(types[6], "user/message");
    let messages: Vec<String> = store
        .messages("old")
        .unwrap()
        .into_iter()
        .map(|m| String::from_utf8(m.json).unwrap())
        .collect();
    assert_eq!(
        messages,
        [
            r#"{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"id":"legacy-message:old:1","role":"user"}"#,
            r#"{"id":"legacy-message:old:2","role":"assistant","content":[{"type":"text","text":"x"}],"source":{"provider":"p","model":"m","kind":"model"}}"#,
            // The replacement keeps the id of the result it replaces.
            r#"{"id":"legacy-message:old:3","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[],"isError":false}],"source":{"kind":"tool","callId":"c1"}}"#,
            r#"{"content":[{"type":"text","text":"s"}],"source":{"kind":"user"},"id":"legacy-message:old:5","role":"user"}"#,
            r#"{"id":"w","role":"user","content":[],"source":{"kind":"user"}}"#,
        ]
    );
    // The turn marker's old trigger is kept as written (DSH reads it the same).
    assert!(
        store.events("old", ..1).unwrap()[0]
            .data()
            .starts_with(br#"{"turn":1,"trigger""#)
    );

    // The export writes the current shapes; importing it gives the same events.
    let out = tempfile::tempdir().unwrap();
    let files = export_jsonl_files(&store, out.path(), &ExportOptions::default());
    let text = String::from_utf8(files[0].1.clone()).unwrap();
    assert!(!text.contains("provenance") && !text.contains("steering/message"));
    let again = mem_store();
    import_jsonl(&again, out.path()).unwrap();
    assert_eq!(dump_store(&again), dump_store(&store));
}

#[test]
fn a_legacy_replacement_of_a_message_without_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.jsonl");
    // DSH's id map reads `data.message.id` of every type but `user/message`: the replaced
    // `steering/message` (sessdb's own shape) gives no id, so the migrated replacement has
    // none and fails the shape rule, as it fails in DSH.
    let lines = [
        HEADER,
        r#"{"type":"steering/message","seq":0,"time":1,"data":{"id":"s","role":"user","content":[],"source":{"kind":"user"}},"surfaceOp":"append"}"#,
        r#"{"type":"tool/result","seq":1,"time":1,"data":{"turn":1,"callId":"c","content":[],"isError":false},"sourceEventSeqs":[0],"surfaceOp":{"op":"replace","start":0,"end":0}}"#,
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let store = mem_store();
    let err = import_jsonl(&store, &file).unwrap_err();
    assert!(err.to_string().contains("message.id"), "{err}");
    assert!(store.session_len("old").is_err());
}

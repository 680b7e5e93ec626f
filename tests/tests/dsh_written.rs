//! Sessions DSH itself wrote (`tests/fixtures/dsh-written/`, copied from the conformance data
//! DSH's code made): every one imports, with DSH's event count, DSH's surface and DSH's idea
//! of whether the last turn is open; exported again, every file is DSH's file byte for byte
//! (packed rows broken where DSH's write batches broke them, zstd frames where DSH's were).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::PathBuf;

use sessdb::json::JsonRef;
use sessdb_formats::jsonl::{ExportOptions, export_jsonl, import_jsonl};
use sessdb_tests::mem_store;

fn variants() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/dsh-written");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// `(id, events, last turn open, surface)` as DSH recorded them.
fn expected(variant: &std::path::Path) -> Vec<(String, u64, bool, Vec<u64>)> {
    let bytes = std::fs::read(variant.join("expect.json")).unwrap();
    let json = JsonRef::new(bytes.trim_ascii());
    json.elements()
        .map(|s| {
            (
                s.get("id").unwrap().as_str().unwrap().into_owned(),
                s.get("nEvents").unwrap().as_i64().unwrap().unsigned_abs(),
                s.get("open").unwrap().bytes() == b"true",
                s.get("surface")
                    .unwrap()
                    .elements()
                    .map(|n| n.as_i64().unwrap().unsigned_abs())
                    .collect(),
            )
        })
        .collect()
}

fn check(store: &sessdb::Store, want: &[(String, u64, bool, Vec<u64>)], what: &str) {
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), want.len(), "{what}");
    for (id, events, open, surface) in want {
        let info = listed.iter().find(|i| &i.header.id == id).unwrap();
        assert_eq!(info.events, *events, "{what} {id}: events");
        assert_eq!(info.turn_open, *open, "{what} {id}: open turn");
        assert_eq!(&store.surface(id).unwrap(), surface, "{what} {id}: surface");
    }
}

#[test]
fn every_session_dsh_wrote_imports_as_dsh_loads_it() {
    let variants = variants();
    assert_eq!(variants.len(), 2);
    for variant in &variants {
        let name = variant.file_name().unwrap().to_string_lossy().into_owned();
        let want = expected(variant);
        let store = mem_store();
        let report =
            import_jsonl(&store, &variant.join("root")).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(report.sessions.len(), want.len(), "{name}");
        assert!(report.sessions.iter().all(|s| s.torn.is_none()), "{name}");
        check(&store, &want, &name);
        // Written back: DSH's files, byte for byte.
        let dir = tempfile::tempdir().unwrap();
        let zstd = name.starts_with("zstd");
        let options = ExportOptions {
            zstd,
            ..ExportOptions::default()
        };
        let exported = export_jsonl(&store, dir.path(), &options).unwrap();
        assert_eq!(exported.files.len(), want.len());
        for (_, file) in &exported.files {
            let relative = file.strip_prefix(dir.path()).unwrap();
            let original = std::fs::read(variant.join("root").join(relative)).unwrap();
            assert!(
                std::fs::read(file).unwrap() == original,
                "{name}: {} differs from DSH's file",
                relative.display()
            );
        }
        // And what sessdb wrote reads back the same.
        let again = mem_store();
        import_jsonl(&again, dir.path()).unwrap();
        check(&again, &want, &format!("{name} re-imported"));
    }
}

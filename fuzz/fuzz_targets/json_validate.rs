//! The validator, the member index and the navigator: no panic on any bytes; validating with
//! the index decides as validating without it; validated bytes navigate, and the index reads
//! every member and element as walking reads it; UTF-8 is decided as a whole-input check;
//! every decision and refusal offset is the previous validator's (`validate_reference`); the
//! chunk-form recognizer never accepts what the validator refuses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessdb::Limits;
use sessdb::json::{JsonRef, Node, Tape, validate};

/// `node` (through the index) and `walked` (by walking) agree on every member and element,
/// to a bounded depth.
fn agree(node: Node<'_>, walked: JsonRef<'_>, depth: usize) {
    assert_eq!(node.bytes(), walked.bytes());
    if depth > 8 {
        return;
    }
    for (k, _) in walked.members() {
        let key = k.as_str().unwrap_or_default();
        match (node.get(&key), walked.get(&key)) {
            (Some(a), Some(b)) => agree(a, b, depth + 1),
            (None, None) => {}
            (a, b) => panic!("member {key:?}: index {a:?}, walk {b:?}"),
        }
    }
    let (a, b): (Vec<_>, Vec<_>) = (node.elements().collect(), walked.elements().collect());
    assert_eq!(a.len(), b.len());
    for (a, b) in a.into_iter().zip(b) {
        agree(a, b, depth + 1);
    }
}

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_depth: 64,
        max_data_bytes: 1 << 20,
    };
    let plain = validate(data, &limits);
    if sessdb::json::fuzz_chunk_shortcut(data, &limits) {
        assert!(plain.is_ok(), "the chunk form accepted what the validator refuses: {plain:?}");
    }
    // The validator decides and names refusals exactly as the one it replaced.
    assert_eq!(plain, sessdb::json::validate_reference(data, &limits));
    // UTF-8 is checked by the grammar, inside strings: it decides as a whole-input check.
    match std::str::from_utf8(data) {
        Err(e) if data.len() <= limits.max_data_bytes => {
            let e = e.valid_up_to();
            assert!(matches!(&plain, Err(j) if j.offset == e && j.kind == sessdb::json::JsonErrorKind::InvalidUtf8), "{plain:?}");
        }
        Ok(_) => assert!(!matches!(&plain, Err(j) if j.kind == sessdb::json::JsonErrorKind::InvalidUtf8)),
        Err(_) => {}
    }
    let mut tape = Tape::new();
    assert_eq!(tape.validate(data, &limits), plain);
    if plain.is_ok() {
        let v = JsonRef::new(data);
        assert!(v.deep_eq(&v));
        for (k, x) in v.members() {
            let _ = k.as_str();
            let _ = v.get(&k.as_str().unwrap_or_default());
            let _ = x.as_f64();
        }
        for x in v.elements() {
            let _ = x.kind();
        }
        agree(tape.root(data), v, 0);
    }
});

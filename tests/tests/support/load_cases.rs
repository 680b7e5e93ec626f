//! The load cases of the conformance data DSH's own code made
//! (`tests/fixtures/dsh-load/all-cases.bundle.zst`, DSH's MIT notice beside it): zstd-compressed
//! records, each four length-prefixed (u32 LE) parts — the case name, the session file's
//! name, DSH's decision as JSON (`dshLoads`, `storedEvents`, `storedSurface`), the session
//! file's bytes.

#![allow(dead_code, reason = "each test reads the parts it needs")]

use std::path::PathBuf;

/// One load case.
pub struct Case {
    /// Its name.
    pub name: String,
    /// The session file's name.
    pub file: String,
    /// DSH's decision, as JSON.
    pub expect: Vec<u8>,
    /// The session file.
    pub bytes: Vec<u8>,
}

/// Every case of the bundle.
pub fn cases() -> Vec<Case> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/dsh-load/all-cases.bundle.zst");
    let packed = std::fs::read(path).unwrap();
    let mut decoder = zstd::stream::read::Decoder::new(&packed[..]).unwrap();
    decoder.window_log_max(27).unwrap();
    let mut bundle = Vec::new();
    std::io::Read::read_to_end(&mut decoder, &mut bundle).unwrap();
    fn part(rest: &mut &[u8]) -> Vec<u8> {
        let (len, tail) = rest.split_at(4);
        let len = u32::from_le_bytes(len.try_into().unwrap()) as usize;
        let (bytes, tail) = tail.split_at(len);
        *rest = tail;
        bytes.to_vec()
    }
    let mut rest = &bundle[..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        out.push(Case {
            name: String::from_utf8(part(&mut rest)).unwrap(),
            file: String::from_utf8(part(&mut rest)).unwrap(),
            expect: part(&mut rest),
            bytes: part(&mut rest),
        });
    }
    out
}

//! The validator and the navigator: no panic on any bytes; validated bytes navigate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessdb::Limits;
use sessdb::json::{JsonRef, validate};

fuzz_target!(|data: &[u8]| {
    if validate(
        data,
        &Limits {
            max_depth: 64,
            max_data_bytes: 1 << 20,
        },
    )
    .is_ok()
    {
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
    }
});

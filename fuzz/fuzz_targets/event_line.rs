//! One JSONL line: parsing never panics, and a parsed event prints and parses back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessdb::{Event, Limits};

fuzz_target!(|data: &[u8]| {
    if let Ok(event) = Event::from_jsonl(data, &Limits::default()) {
        let line = event.to_jsonl();
        let back = Event::from_jsonl(&line, &Limits::default()).expect("a printed event parses");
        assert_eq!(back, event);
        assert_eq!(back.to_jsonl(), line);
    }
});

//! One JSONL line: parsing never panics, the shortcut for canonical lines reads every line as
//! the general parse does (the same event, or a refusal by both), and a parsed event prints
//! and parses back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessdb::{Event, Limits};

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    let parsed = Event::from_jsonl(data, &limits);
    match (&parsed, Event::fuzz_from_jsonl_general(data, &limits)) {
        (Ok(a), Ok(b)) => assert_eq!(a, &b),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("the shortcut gave {a:?}, the general parse {b:?}"),
    }
    if let Ok(event) = parsed {
        let line = event.to_jsonl();
        let back = Event::from_jsonl(&line, &limits).expect("a printed event parses");
        assert_eq!(back, event);
        assert_eq!(back.to_jsonl(), line);
    }
});

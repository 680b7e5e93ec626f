//! Seeds and appends: lines become candidate events (seq forced to the next one, so the
//! deeper rules are reached). Nothing panics; a refused event changes nothing; the accepted
//! events replayed as a seed give the same state.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessdb::{Clock, Config, Event, Limits, Session, SessionHeader};

fuzz_target!(|data: &[u8]| {
    let config = Config {
        clock: Clock::fixed(0),
        ..Config::default()
    };
    let Ok(mut session) = Session::restore(SessionHeader::new("f", 0), [], config.clone()) else {
        return;
    };
    for line in data.split(|&b| b == b'\n') {
        let Ok(event) = Event::from_jsonl(line, &Limits::default()) else {
            continue;
        };
        let event = event.with_seq(session.len());
        let before = session.state().clone();
        if session.append_event(event).is_err() {
            assert!(
                session.state() == &before,
                "a refused event changed the state"
            );
        }
    }
    let replay = Session::restore(
        SessionHeader::new("f", 0),
        session.events().cloned(),
        config,
    )
    .expect("accepted events replay");
    assert!(replay.state() == session.state());
    let _ = session.messages();
    let _ = session.clone().resume();
});

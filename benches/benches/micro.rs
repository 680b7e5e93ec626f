//! The parts of an append, each alone (`docs/PERFORMANCE.md`): validating `data` (a streamed
//! chunk, a user message, a 4 KiB tool result), encoding one event with its CRC, a CRC-32 of
//! the same bytes, and the whole in-memory append (validate, plan, apply) of a chunk and of a
//! user message — per event, in nanoseconds.

#![allow(clippy::expect_used, reason = "a benchmark aborts on any failure")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use sessdb::json::validate;
use sessdb::{Config, Draft, Event, Limits, LogType, Session, SessionHeader};
use sessdb_workload::payload as p;

fn samples() -> Vec<(&'static str, String)> {
    vec![
        ("chunk", p::text_delta(3, 2, 0, "the quick brown fox ")),
        (
            "user_message",
            p::user_message("u7", "user", "read the config and then fix the build"),
        ),
        (
            "tool_result_4k",
            p::tool_result(3, 2, "r1", "c1", &"line of output\\n".repeat(256)),
        ),
    ]
}

fn parts(c: &mut Criterion) {
    let limits = Limits::default();
    let mut g = c.benchmark_group("append_parts");
    for (name, data) in samples() {
        let bytes = data.into_bytes();
        g.bench_function(format!("validate_{name}_{}B", bytes.len()), |b| {
            b.iter(|| validate(black_box(&bytes), &limits).expect("valid"));
        });
        let mut tape = sessdb::json::Tape::new();
        g.bench_function(format!("validate_indexed_{name}"), |b| {
            b.iter(|| tape.validate(black_box(&bytes), &limits).expect("valid"));
        });
        let event = Event::new("assistant/chunk", 12_345, 1_767_225_600_000, bytes.clone());
        let mut out = Vec::with_capacity(bytes.len() + 64);
        g.bench_function(format!("encode_event_{name}"), |b| {
            b.iter(|| {
                out.clear();
                sessdb::codec::record::encode_event(black_box(&event), &mut out).expect("encode");
            });
        });
        g.bench_function(format!("crc32_{name}"), |b| {
            b.iter(|| crc32fast::hash(black_box(&bytes)));
        });
    }
    g.finish();
}

fn session_append(c: &mut Criterion) {
    let mut g = c.benchmark_group("session_append");
    let chunk = p::text_delta(1, 1, 0, "the quick brown fox ").into_bytes();
    g.bench_function("chunk", |b| {
        let mut s =
            Session::create(SessionHeader::new("s", 0), [], Config::default()).expect("session");
        b.iter(|| {
            s.append(Draft::log(LogType::ASSISTANT_CHUNK, chunk.clone()))
                .expect("append")
        });
    });
    g.bench_function("user_message", |b| {
        let mut s =
            Session::create(SessionHeader::new("s", 0), [], Config::default()).expect("session");
        let mut n = 0u64;
        b.iter(|| {
            n += 1;
            s.append(sessdb_benches::user_draft(n)).expect("append")
        });
    });
    // Surface events whose `content` is most of their bytes: the shape and repair rules read
    // members around it.
    let text = "line of output\\n".repeat(64);
    let assistant = p::assistant_message(
        1,
        1,
        "a1",
        Some(&text),
        &[("c1", "read_file", r#"{"path":"src/main.rs"}"#)],
    )
    .into_bytes();
    let result = p::tool_result(1, 1, "r1", "c1", &"line of output\\n".repeat(256)).into_bytes();
    for (name, ty, data) in [
        (
            "assistant_message_1k",
            sessdb::SurfaceType::AssistantMessage,
            assistant,
        ),
        ("tool_result_4k", sessdb::SurfaceType::ToolResult, result),
    ] {
        g.bench_function(name, |b| {
            let mut s = Session::create(SessionHeader::new("s", 0), [], Config::default())
                .expect("session");
            b.iter(|| {
                let draft = Draft::surface(ty, data.clone(), sessdb::SurfaceIntent::append());
                let draft = if ty == sessdb::SurfaceType::AssistantMessage {
                    draft.with_sources(Vec::new())
                } else {
                    draft
                };
                s.append(draft).expect("append")
            });
        });
    }
    g.finish();
}

criterion_group!(benches, parts, session_append);
criterion_main!(benches);

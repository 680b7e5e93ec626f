//! Property tests of the session model against the naive reference model
//! (`sessdb_reference::surface`, written independently of the engine): random valid operation sequences (appends, replaces, nested
//! replaces, tool/result prunes) must give the same surface and messages; random invalid
//! candidates must be refused without changing anything.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use proptest::prelude::*;
use sessdb::{
    Clock, Config, Draft, Event, LogType, Session, SessionHeader, SurfaceIntent, SurfaceOp,
    SurfaceType,
};
use sessdb_reference::surface::{Node, Reference};
use sessdb_workload::payload as p;

fn user_msg(seq: u64) -> String {
    p::user_message(&format!("u{seq}"), "user", &format!("text {seq}"))
}

fn assistant_msg(seq: u64, empty: bool) -> String {
    let content = if empty {
        String::new()
    } else {
        format!(r#"{{"type":"text","text":"a{seq}"}}"#)
    };
    format!(
        r#"{{"id":"a{seq}","role":"assistant","source":{{"kind":"model","provider":"p","model":"m"}},"content":[{content}]}}"#
    )
}

fn tool_data(id: &str, call: &str, turn: u64, step: u64, text: &str) -> (String, String) {
    let data = p::tool_result(turn, step, id, call, text);
    let msg_start = data.find("\"message\":").unwrap() + "\"message\":".len();
    let message = data[msg_start..data.len() - 1].to_owned();
    (data, message)
}

fn snapshot(s: &Session) -> (sessdb::SessionState, Vec<Vec<u8>>) {
    (s.state().clone(), s.events().map(Event::to_jsonl).collect())
}

/// Applies one random operation; returns a description for failure messages.
fn step(
    s: &mut Session,
    r: &mut Reference,
    kind: u8,
    a: u16,
    b: u16,
    flag: bool,
) -> Result<(), TestCaseError> {
    let seq = r.next;
    let len = r.surface.len();
    let surface = |ty, data: String, intent| Draft::surface(ty, data.into_bytes(), intent);
    let accepted = |s: &mut Session, d: Draft| {
        s.append(d)
            .map_err(|e| TestCaseError::fail(format!("valid op refused: {e}")))
    };
    match kind % 8 {
        0 => {
            accepted(
                s,
                Draft::log(
                    LogType::new("plugin/note").unwrap(),
                    format!(r#"{{"n":{seq}}}"#).into_bytes(),
                )
                .ignorable(),
            )?;
        }
        1 => {
            accepted(
                s,
                surface(
                    SurfaceType::UserMessage,
                    user_msg(seq),
                    SurfaceIntent::append(),
                ),
            )?;
            r.surface.push(seq);
            r.nodes.insert(
                seq,
                Node {
                    ty: "user/message",
                    message: Some(user_msg(seq)),
                    tool: None,
                },
            );
        }
        2 => {
            let msg = assistant_msg(seq, flag);
            let sources: Vec<u64> = (0..seq).filter(|x| (x + u64::from(a)) % 3 == 0).collect();
            let data = format!(r#"{{"turn":1,"step":1,"message":{msg}}}"#);
            accepted(
                s,
                surface(
                    SurfaceType::AssistantMessage,
                    data,
                    SurfaceIntent::append().with_sources(sources),
                ),
            )?;
            r.surface.push(seq);
            r.nodes.insert(
                seq,
                Node {
                    ty: "assistant/message",
                    message: (!flag).then_some(msg),
                    tool: None,
                },
            );
        }
        3 => {
            let (id, call) = (format!("r{seq}"), format!("c{seq}"));
            let (data, message) = tool_data(&id, &call, 1, u64::from(b % 4), "output");
            accepted(
                s,
                surface(SurfaceType::ToolResult, data, SurfaceIntent::append()),
            )?;
            r.surface.push(seq);
            r.nodes.insert(
                seq,
                Node {
                    ty: "tool/result",
                    message: Some(message),
                    tool: Some((id, call, 1, u64::from(b % 4))),
                },
            );
        }
        4 | 5 if len > 0 => {
            let start_pos = usize::from(a) % len;
            let end_pos = start_pos + usize::from(b) % (len - start_pos);
            let (start, end) = (r.surface[start_pos], r.surface[end_pos]);
            let mut sources: Vec<u64> = r.surface[start_pos..=end_pos].to_vec();
            if flag && seq > 0 {
                sources.push(0); // an extra citation is allowed
                sources.sort_unstable();
                sources.dedup();
            }
            let intent = SurfaceIntent::replace(start..=end).with_sources(sources);
            let node = if kind % 8 == 4 {
                accepted(s, surface(SurfaceType::UserMessage, user_msg(seq), intent))?;
                Node {
                    ty: "user/message",
                    message: Some(user_msg(seq)),
                    tool: None,
                }
            } else {
                let msg = assistant_msg(seq, false);
                accepted(
                    s,
                    surface(
                        SurfaceType::AssistantMessage,
                        format!(r#"{{"turn":2,"step":1,"message":{msg}}}"#),
                        intent,
                    ),
                )?;
                Node {
                    ty: "assistant/message",
                    message: Some(msg),
                    tool: None,
                }
            };
            r.surface = r.replaced(start, end, seq);
            r.nodes.insert(seq, node);
        }
        6 => {
            let tools: Vec<u64> = r
                .surface
                .iter()
                .copied()
                .filter(|x| r.nodes[x].ty == "tool/result")
                .collect();
            let Some(&target) = tools.get(usize::from(a) % tools.len().max(1)) else {
                return Ok(());
            };
            let Some((id, call, turn, st)) = r.nodes[&target].tool.clone() else {
                return Ok(());
            };
            let (data, message) = tool_data(&id, &call, turn, st, &format!("[pruned at {seq}]"));
            accepted(
                s,
                surface(
                    SurfaceType::ToolResult,
                    data,
                    SurfaceIntent::replace(target..=target).with_sources(vec![target]),
                ),
            )?;
            r.surface = r.replaced(target, target, seq);
            r.nodes.insert(
                seq,
                Node {
                    ty: "tool/result",
                    message: Some(message),
                    tool: Some((id, call, turn, st)),
                },
            );
        }
        _ => {
            // An invalid candidate of a random kind: refused, nothing changes.
            let before = snapshot(s);
            let on_surface = r.surface.first().copied();
            let not_on_surface = (0..seq).find(|x| !r.surface.contains(x));
            let bad: Option<Event> = match b % 10 {
                0 => Some(Event::new(
                    "plugin/x",
                    seq + 1 + u64::from(a % 3),
                    0,
                    &b"{}"[..],
                )),
                1 => Some(
                    Event::new("plugin/x", seq, 0, &b"{}"[..]).with_surface_op(SurfaceOp::Append),
                ),
                2 => Some(Event::new(
                    "user/message",
                    seq,
                    0,
                    user_msg(seq).into_bytes(),
                )),
                3 => Some(
                    Event::new("user/message", seq, 0, user_msg(seq).into_bytes())
                        .with_surface_op(SurfaceOp::Append)
                        .with_sources(vec![seq]),
                ),
                4 if seq > 0 => Some(
                    Event::new("user/message", seq, 0, user_msg(seq).into_bytes())
                        .with_surface_op(SurfaceOp::Append)
                        .with_sources(vec![0, 0]),
                ),
                5 => not_on_surface.map(|x| {
                    Event::new("user/message", seq, 0, user_msg(seq).into_bytes())
                        .with_surface_op(SurfaceOp::Replace { start: x, end: x })
                        .with_sources(vec![x])
                }),
                6 if len >= 2 => {
                    let (x, y) = (r.surface[0], r.surface[len - 1]);
                    Some(
                        Event::new("user/message", seq, 0, user_msg(seq).into_bytes())
                            .with_surface_op(SurfaceOp::Replace { start: y, end: x })
                            .with_sources(vec![x.min(y), x.max(y)]),
                    )
                }
                7 => on_surface.map(|x| {
                    Event::new("user/message", seq, 0, user_msg(seq).into_bytes())
                        .with_surface_op(SurfaceOp::Replace { start: x, end: x })
                }),
                8 => Some(
                    Event::new(
                        "user/message",
                        seq,
                        0,
                        &br#"{"id":"","role":"user","source":{"kind":"user"},"content":[]}"#[..],
                    )
                    .with_surface_op(SurfaceOp::Append),
                ),
                _ => Some(Event::new("plugin/x", seq, 0, &b"{\"x\":-0}"[..])),
            };
            if let Some(bad) = bad {
                let what = String::from_utf8_lossy(&bad.to_jsonl()).into_owned();
                prop_assert!(
                    s.append_event(bad).is_err(),
                    "invalid candidate accepted: {}",
                    what
                );
                prop_assert!(
                    snapshot(s) == before,
                    "a refused candidate changed the session: {}",
                    what
                );
            }
            return Ok(());
        }
    }
    r.next += 1;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: sessdb_tests::proptest_cases(256), ..ProptestConfig::default() })]

    #[test]
    fn surface_and_messages_match_the_reference_model(ops in proptest::collection::vec((any::<u8>(), any::<u16>(), any::<u16>(), any::<bool>()), 1..80)) {
        let config = Config { clock: Clock::fixed(7), ..Config::default() };
        let mut s = Session::restore(SessionHeader::new("prop", 0), [], config.clone()).unwrap();
        let mut r = Reference::default();
        for (kind, a, b, flag) in ops {
            step(&mut s, &mut r, kind, a, b, flag)?;
            prop_assert_eq!(s.surface(), r.surface.as_slice());
        }
        let got: Vec<(u64, String)> = s.messages().iter().map(|m| (m.seq, String::from_utf8_lossy(m.json).into_owned())).collect();
        prop_assert_eq!(got, r.expected_messages());
        // Replaying the same events as a seed gives the same state.
        let replayed = Session::restore(SessionHeader::new("prop", 0), s.events().cloned(), config).unwrap();
        prop_assert!(replayed.state() == s.state());
    }
}

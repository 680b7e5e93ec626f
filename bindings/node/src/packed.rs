//! A session's events for one crossing into JavaScript, with the runs of streamed chunks
//! packed: most of a DSH session's events are chunks whose envelope and `data` repeat but for
//! the text, and `JSON.parse` of them all was most of a long session's read. An event goes as
//! its JSON object; a run of chunks in DSH's exact form (below) as one array
//! `[seq0, turn, step, index, chunkType, [time, ...], [text, ...]]`, which `index.js` expands
//! into the same objects `JSON.parse` of each event's line gives — the same keys in the same
//! order, each value copied from the stored bytes as written.

use sessdb_formats::pack::{TextChunk, text_chunk};

/// The chunk whose run an event may join: a text or reasoning chunk whose `data` is exactly in
/// DSH's form (the packer's own rule, `sessdb_formats::pack::text_chunk`).
pub(crate) fn chunk_of(data: &[u8]) -> Option<TextChunk<'_>> {
    text_chunk(data)
}

/// Builds the JSON array of a read: events as objects, chunk runs as arrays.
#[derive(Default)]
pub(crate) struct Packed {
    out: Vec<u8>,
    /// The run being built: its first chunk's parts, the next seq it takes, its times and texts.
    run: Option<Run>,
    any: bool,
}

struct Run {
    seq0: u64,
    next: u64,
    head: Vec<u8>,
    times: Vec<u8>,
    texts: Vec<u8>,
}

impl Packed {
    /// Adds one event: its line (`write_jsonl`'s bytes) unless it is a chunk `chunk` (its
    /// `data` parsed) that may join or start a run.
    pub(crate) fn push(
        &mut self,
        seq: u64,
        time: i64,
        chunk: Option<TextChunk<'_>>,
        line: impl FnOnce(&mut Vec<u8>),
    ) {
        if let Some(c) = chunk {
            let head = head_of(&c);
            if let Some(run) = &mut self.run
                && run.next == seq
                && run.head == head
            {
                run.times.push(b',');
                run.times.extend_from_slice(time.to_string().as_bytes());
                run.texts.push(b',');
                run.texts.extend_from_slice(c.text);
                run.next += 1;
                return;
            }
            self.flush();
            self.run = Some(Run {
                seq0: seq,
                next: seq + 1,
                head,
                times: time.to_string().into_bytes(),
                texts: c.text.to_vec(),
            });
            return;
        }
        self.flush();
        self.sep();
        line(&mut self.out);
    }

    fn sep(&mut self) {
        self.out.push(if self.any { b',' } else { b'[' });
        self.any = true;
    }

    fn flush(&mut self) {
        if let Some(run) = self.run.take() {
            self.sep();
            self.out.push(b'[');
            self.out.extend_from_slice(run.seq0.to_string().as_bytes());
            self.out.push(b',');
            self.out.extend_from_slice(&run.head);
            self.out.extend_from_slice(b",[");
            self.out.extend_from_slice(&run.times);
            self.out.extend_from_slice(b"],[");
            self.out.extend_from_slice(&run.texts);
            self.out.extend_from_slice(b"]]");
        }
    }

    /// The array's bytes.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.flush();
        if !self.any {
            self.out.push(b'[');
        }
        self.out.push(b']');
        self.out
    }
}

/// `turn,step,index,type` of a run, as JSON.
fn head_of(c: &TextChunk<'_>) -> Vec<u8> {
    let mut h = Vec::with_capacity(c.turn.len() + c.step.len() + c.index.len() + 20);
    for part in [c.turn, c.step, c.index] {
        h.extend_from_slice(part);
        h.push(b',');
    }
    h.push(b'"');
    h.extend_from_slice(c.delta_type.as_bytes());
    h.push(b'"');
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_text_and_reasoning_chunks_in_the_exact_form_run() {
        let c = chunk_of(
            br#"{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"a\"b\\"}}"#,
        )
        .unwrap();
        assert_eq!(c.text, br#""a\"b\\""#);
        assert_eq!(head_of(&c), br#"1,2,0,"text-delta""#);
        for other in [
            &br#"{"step":2,"turn":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#[..],
            br#"{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"a"},"x":1}"#,
            br#"{"turn":1.5,"step":2,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            br#"{"turn":1,"step":2,"chunk":{"type":"other-delta","index":0,"text":"a"}}"#,
            br#"{"turn":1,"step":2,"chunk":{"type":"tool-call-delta","index":0,"id":"c","argumentsDelta":"{"}}"#,
        ] {
            assert!(chunk_of(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn runs_pack_and_anything_else_ends_them() {
        let a = br#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#;
        let b = br#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"b"}}"#;
        let c = br#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":1,"text":"c"}}"#;
        let mut p = Packed::default();
        p.push(0, 10, None, |o| o.extend_from_slice(b"{\"e\":0}"));
        p.push(1, 11, chunk_of(a), |_| unreachable!());
        p.push(2, 13, chunk_of(b), |_| unreachable!());
        p.push(3, 14, chunk_of(c), |_| unreachable!());
        p.push(4, 15, None, |o| o.extend_from_slice(b"{\"e\":4}"));
        assert_eq!(
            String::from_utf8(p.finish()).unwrap(),
            r#"[{"e":0},[1,1,1,0,"text-delta",[11,13],["a","b"]],[3,1,1,1,"text-delta",[14],["c"]],{"e":4}]"#
        );
        assert_eq!(Packed::default().finish(), b"[]");
    }
}

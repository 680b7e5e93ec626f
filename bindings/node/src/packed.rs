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

/// Builds the JSON array of a read: events as objects, chunk runs as arrays. Allocates
/// nothing per event: the run's buffers are kept from one run to the next, and a chunk's head
/// is compared with the run's by writing it into a kept scratch buffer.
#[derive(Default)]
pub(crate) struct Packed {
    out: Vec<u8>,
    /// The run being built, if any (its buffers kept between runs).
    run: Run,
    open: bool,
    any: bool,
    /// The head of the chunk being pushed.
    scratch: Vec<u8>,
}

#[derive(Default)]
struct Run {
    seq0: u64,
    next: u64,
    head: Vec<u8>,
    times: Vec<u8>,
    texts: Vec<u8>,
}

impl Packed {
    /// A packer whose output starts with room for `bytes`.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        Self {
            out: Vec::with_capacity(bytes),
            ..Self::default()
        }
    }

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
            self.scratch.clear();
            head_into(&c, &mut self.scratch);
            if self.open && self.run.next == seq && self.run.head == self.scratch {
                self.run.times.push(b',');
                sessdb::json::write_i64(&mut self.run.times, time);
                self.run.texts.push(b',');
                self.run.texts.extend_from_slice(c.text);
                self.run.next += 1;
                return;
            }
            self.flush();
            let run = &mut self.run;
            run.seq0 = seq;
            run.next = seq + 1;
            std::mem::swap(&mut run.head, &mut self.scratch);
            run.times.clear();
            sessdb::json::write_i64(&mut run.times, time);
            run.texts.clear();
            run.texts.extend_from_slice(c.text);
            self.open = true;
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
        if !std::mem::take(&mut self.open) {
            return;
        }
        self.sep();
        let (out, run) = (&mut self.out, &self.run);
        out.push(b'[');
        sessdb::json::write_u64(out, run.seq0);
        out.push(b',');
        out.extend_from_slice(&run.head);
        out.extend_from_slice(b",[");
        out.extend_from_slice(&run.times);
        out.extend_from_slice(b"],[");
        out.extend_from_slice(&run.texts);
        out.extend_from_slice(b"]]");
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

/// Writes `turn,step,index,"type"` of a run, as JSON, into `h`.
fn head_into(c: &TextChunk<'_>, h: &mut Vec<u8>) {
    for part in [c.turn, c.step, c.index] {
        h.extend_from_slice(part);
        h.push(b',');
    }
    h.push(b'"');
    h.extend_from_slice(c.delta_type.as_bytes());
    h.push(b'"');
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
        let mut head = Vec::new();
        head_into(&c, &mut head);
        assert_eq!(head, br#"1,2,0,"text-delta""#);
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

//! The validation shortcut for streamed chunks: a recognizer of the form a chunk's `data`
//! takes when DSH writes it (not to be confused with the JSONL packer's recognizer,
//! `sessdb_formats::pack::text_chunk`, which asks another question — whether a packed row
//! gives the bytes back exactly — and takes other text):
//! `{"turn":T,"step":S,"chunk":{"type":"…","index":I,"text":"…"}}` — keys in that order, no
//! whitespace, integers, strings of printable ASCII and the short escapes. Most events of a
//! session are such chunks, and for them this one forward pass replaces the general
//! validator (`docs/PERFORMANCE.md`).
//!
//! It only ever says yes to bytes [`super::validate`] accepts under the same limits (a
//! proptest and the `json_validate` fuzz target check it); anything else — other keys,
//! non-ASCII text, `\u` escapes, fractions — is for the general validator to decide.

use super::swar::{not_printable_ascii, word_at};
use crate::Limits;

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn lit(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at.checked_add(word.len())?;
        (self.b.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// `-?(0|[1-9][0-9]*)` of at most 15 digits, not `-0`: an integer the validator takes.
    fn int(&mut self) -> Option<()> {
        let neg = self.b.get(self.at) == Some(&b'-');
        if neg {
            self.at += 1;
        }
        let start = self.at;
        while self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = self.b.get(start..self.at)?;
        let ok = match digits {
            [] => false,
            [b'0'] => !neg,
            [b'0', ..] => false,
            d => d.len() <= 15,
        };
        ok.then_some(())
    }

    /// A string of printable ASCII and the escapes `\" \\ \/ \b \f \n \r \t`.
    fn string(&mut self) -> Option<()> {
        self.lit(b"\"")?;
        loop {
            // Eight bytes at a time over plain printable ASCII (most of a delta's text).
            while let Some(word) = word_at(self.b, self.at) {
                let stop = not_printable_ascii(word);
                if stop != 0 {
                    self.at += (stop.trailing_zeros() / 8) as usize;
                    break;
                }
                self.at += 8;
            }
            match *self.b.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => {
                    let esc = *self.b.get(self.at + 1)?;
                    if !matches!(esc, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') {
                        return None;
                    }
                    self.at += 2;
                }
                0x20..=0x7e => self.at += 1,
                _ => return None,
            }
        }
    }

    fn value(&mut self) -> Option<()> {
        if self.b.get(self.at) == Some(&b'"') {
            self.string()
        } else {
            self.int()
        }
    }
}

/// Whether `data` is a chunk in DSH's form (above) that the validator accepts under `limits`.
pub(crate) fn valid_by_chunk_shortcut(data: &[u8], limits: &Limits) -> bool {
    if data.len() > limits.max_data_bytes || limits.max_depth < 2 {
        return false;
    }
    let mut r = Reader { b: data, at: 0 };
    let read = (|| {
        r.lit(b"{\"turn\":")?;
        r.int()?;
        r.lit(b",\"step\":")?;
        r.int()?;
        r.lit(b",\"chunk\":{\"type\":")?;
        r.string()?;
        r.lit(b",\"index\":")?;
        r.int()?;
        // The delta's own members: `"text":…`, `"id":…`, `"argumentsDelta":…`, plain ones.
        while r.lit(b",").is_some() {
            r.string()?;
            r.lit(b":")?;
            r.value()?;
        }
        r.lit(b"}}")
    })();
    read.is_some() && r.at == data.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::validate;
    use proptest::prelude::*;

    #[test]
    fn the_form_dsh_writes_is_recognized_and_nothing_else() {
        let l = Limits::default();
        for yes in [
            r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":" with"}}"#,
            r#"{"turn":12,"step":3,"chunk":{"type":"text-delta","index":2,"text":"a\n\"b\"\\"}}"#,
            r#"{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","argumentsDelta":"{\"p"}}"#,
            r#"{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"text"}}"#,
            r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"the quick brown fox jumps \"over\" the lazy dog\n and again, a longer stretch"}}"#,
        ] {
            assert!(valid_by_chunk_shortcut(yes.as_bytes(), &l), "{yes}");
            assert!(validate(yes.as_bytes(), &l).is_ok(), "{yes}");
        }
        for no in [
            r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"é"}}"#,
            r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"\u0041"}}"#,
            r#"{"turn":-0,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            r#"{"turn":01,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            r#"{"turn":1.5,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            r#"{"turn":1, "step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}} "#,
            r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a	"}}"#,
            r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}"#,
            r#"{"step":1,"turn":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            // A DEL or a non-ASCII byte deep inside a long text (past the first eight).
            "{\"turn\":1,\"step\":1,\"chunk\":{\"type\":\"text-delta\",\"index\":0,\"text\":\"the quick brown \u{7f}fox\"}}",
            r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"the quick brown fox é"}}"#,
        ] {
            assert!(!valid_by_chunk_shortcut(no.as_bytes(), &l), "{no}");
        }
        let shallow = Limits {
            max_depth: 1,
            ..Limits::default()
        };
        let chunk = br#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#;
        assert!(!valid_by_chunk_shortcut(chunk, &shallow));
        let small = Limits {
            max_data_bytes: 10,
            ..Limits::default()
        };
        assert!(!valid_by_chunk_shortcut(chunk, &small));
    }

    fn near_chunks() -> impl Strategy<Value = Vec<u8>> {
        let text = prop::collection::vec(
            prop_oneof![
                Just(b'a'),
                Just(b' '),
                Just(b'"'),
                Just(b'\\'),
                Just(b'n'),
                Just(b'u'),
                Just(0x7f),
                Just(0x1f),
                Just(0xc3),
                Just(b'}'),
            ],
            0..40,
        );
        let int = prop_oneof![
            Just("0".to_owned()),
            Just("-0".to_owned()),
            Just("007".to_owned()),
            Just("-12".to_owned()),
            Just("1e3".to_owned()),
            Just("9999999999999999".to_owned()),
            (0u32..100).prop_map(|n| n.to_string()),
        ];
        (int.clone(), int, text, any::<bool>(), any::<u8>(), any::<prop::sample::Index>()).prop_map(
            |(turn, index, text, extra, flip, at)| {
                let mut d = format!(
                    r#"{{"turn":{turn},"step":1,"chunk":{{"type":"text-delta","index":{index},"text":""#
                )
                .into_bytes();
                d.extend_from_slice(&text);
                d.extend_from_slice(br#""}}"#);
                if extra {
                    // Any one byte changed: the recognizer must still never accept what the
                    // validator refuses.
                    let i = at.index(d.len());
                    d[i] = flip;
                }
                d
            },
        )
    }

    proptest! {
        #[test]
        fn it_never_accepts_what_the_validator_refuses(data in near_chunks(), depth in 0u32..4, size in 0usize..200) {
            let limits = Limits { max_depth: depth, max_data_bytes: size };
            if valid_by_chunk_shortcut(&data, &limits) {
                prop_assert!(validate(&data, &limits).is_ok(), "{}", String::from_utf8_lossy(&data));
            }
            if valid_by_chunk_shortcut(&data, &Limits::default()) {
                prop_assert!(validate(&data, &Limits::default()).is_ok(), "{}", String::from_utf8_lossy(&data));
            }
        }
    }
}

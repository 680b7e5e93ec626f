//! The lossless-JSON validator: one forward pass, no allocation beyond a container stack
//! bounded by the depth limit.
//!
//! Rules (DSH `json.ts`, DESIGN §2): RFC 8259 syntax over UTF-8; every number finite as an
//! IEEE double (so `1e400` is refused) and not negative zero (so `-0`, `-0.0` and `-1e-400`,
//! which parses to `-0`, are refused); nesting depth and total size bounded by [`Limits`].
//! Beyond DSH, sessdb refuses what cannot be stored as one JSONL line: raw line breaks (`\n`,
//! `\r`) outside strings and whitespace around the value. `\u` escapes of lone surrogates are
//! accepted, as `JSON.parse` accepts them (DSH writes them); the bytes are kept as received.

use super::swar::{special_bytes, special_or_high, word_at};
use crate::Limits;

/// Why a byte string is not acceptable JSON, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON at byte {offset}: {kind}")]
pub struct JsonError {
    /// Byte offset of the problem within the validated bytes.
    pub offset: usize,
    /// What is wrong.
    pub kind: JsonErrorKind,
}

/// The kinds of [`JsonError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// The bytes are not UTF-8.
    #[error("not valid UTF-8")]
    InvalidUtf8,
    /// No value at all.
    #[error("empty input")]
    Empty,
    /// The grammar is violated; the text says what was expected.
    #[error("syntax error: {0}")]
    Syntax(&'static str),
    /// A raw `\n` or `\r` between tokens: the value would not fit on one JSONL line.
    #[error("raw line break between tokens (data must fit on one line)")]
    LineBreak,
    /// Whitespace before or after the value.
    #[error("whitespace around the value")]
    SurroundingWhitespace,
    /// A number that is not finite as a double (for example `1e400`).
    #[error("number is not finite as a double")]
    NonFinite,
    /// A number that is negative zero as a double (`-0`, `-0.0`, `-1e-400`).
    #[error("negative zero is not lossless JSON")]
    NegativeZero,
    /// Containers nested deeper than the limit.
    #[error("nesting deeper than {limit}")]
    TooDeep {
        /// The configured depth limit.
        limit: u32,
    },
    /// More bytes than the limit.
    #[error("{size} bytes, over the limit of {limit}")]
    TooLarge {
        /// Size of the input.
        size: usize,
        /// The configured size limit.
        limit: usize,
    },
}

/// Validates `bytes` as exactly one lossless JSON value under `limits`.
///
/// # Errors
/// A [`JsonError`] naming the first problem and its byte offset.
pub fn validate(bytes: &[u8], limits: &Limits) -> Result<(), JsonError> {
    validate_with(bytes, limits, NoRecord)
}

/// What the validator tells a structural index as it reads (`super::tape`): nothing, unless
/// one is built.
pub(super) trait Record {
    /// Whether anything is recorded (a constant: the calls compile away when not).
    const RECORDS: bool;
    /// A member of the object open at `depth` (1 for the top level): its key's span and where
    /// its value starts.
    fn member(&mut self, depth: usize, key: (usize, usize), value_start: usize);
    /// The value of the member being read in the object open at `depth` ends at `end`.
    fn value_end(&mut self, depth: usize, end: usize);
}

/// Records nothing: plain validation.
pub(super) struct NoRecord;

impl Record for NoRecord {
    const RECORDS: bool = false;
    #[inline]
    fn member(&mut self, _: usize, _: (usize, usize), _: usize) {}
    #[inline]
    fn value_end(&mut self, _: usize, _: usize) {}
}

/// [`validate`], telling `rec` the structure as it reads.
pub(super) fn validate_with<R: Record>(
    bytes: &[u8],
    limits: &Limits,
    rec: R,
) -> Result<(), JsonError> {
    let err = |offset, kind| Err(JsonError { offset, kind });
    if bytes.len() > limits.max_data_bytes {
        return err(
            0,
            JsonErrorKind::TooLarge {
                size: bytes.len(),
                limit: limits.max_data_bytes,
            },
        );
    }
    // UTF-8 is checked as the grammar reads: outside strings only ASCII tokens are accepted,
    // and a string checks each run of non-ASCII bytes it crosses (one pass over the bytes
    // instead of two: PERFORMANCE.md, "UTF-8 checked by the grammar"). A refusal is then
    // named as before: invalid UTF-8 anywhere is reported first, at its offset.
    let result = validate_utf8_by_grammar(bytes, limits, rec);
    if result.is_err()
        && let Err(e) = std::str::from_utf8(bytes)
    {
        return err(e.valid_up_to(), JsonErrorKind::InvalidUtf8);
    }
    result
}

fn validate_utf8_by_grammar<R: Record>(
    bytes: &[u8],
    limits: &Limits,
    rec: R,
) -> Result<(), JsonError> {
    let err = |offset, kind| Err(JsonError { offset, kind });
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => return err(0, JsonErrorKind::Empty),
        (Some(&f), Some(&l)) if is_ws(f) || is_ws(l) => {
            let at = if is_ws(f) { 0 } else { bytes.len() - 1 };
            return err(at, JsonErrorKind::SurroundingWhitespace);
        }
        _ => {}
    }
    Validator {
        b: bytes,
        max_depth: limits.max_depth,
        stack: Nesting::default(),
        rec,
    }
    .run()
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

struct Validator<'a, R> {
    b: &'a [u8],
    max_depth: u32,
    /// Open containers, innermost last: `true` for an object.
    stack: Nesting,
    rec: R,
}

/// The open containers as a stack of bits (`true` for an object): inline up to 256 levels,
/// so validating allocates nothing under the default depth limit.
#[derive(Default)]
struct Nesting {
    bits: [u64; 4],
    depth: usize,
    /// Levels past the inline 256 (only under a raised depth limit).
    spill: Vec<bool>,
}

impl Nesting {
    const INLINE: usize = 256;

    fn len(&self) -> usize {
        self.depth
    }

    fn push(&mut self, object: bool) {
        if self.depth < Self::INLINE {
            let (word, bit) = (self.depth / 64, self.depth % 64);
            if let Some(w) = self.bits.get_mut(word) {
                *w = (*w & !(1 << bit)) | (u64::from(object) << bit);
            }
        } else {
            self.spill.push(object);
        }
        self.depth += 1;
    }

    fn pop(&mut self) {
        if self.depth > Self::INLINE {
            self.spill.pop();
        }
        self.depth = self.depth.saturating_sub(1);
    }

    fn last(&self) -> Option<bool> {
        let top = self.depth.checked_sub(1)?;
        if top < Self::INLINE {
            let (word, bit) = (top / 64, top % 64);
            self.bits.get(word).map(|w| w >> bit & 1 == 1)
        } else {
            self.spill.last().copied()
        }
    }
}

/// A refusal at `offset`; out of line, so the accepting path stays small.
#[cold]
#[inline(never)]
fn fail<T>(offset: usize, kind: JsonErrorKind) -> Result<T, JsonError> {
    Err(JsonError { offset, kind })
}

// The position is passed and returned by value (a register), not kept in the validator: held
// in `self` it was stored back to memory after every byte step (PERFORMANCE.md). Each function takes the position it starts at and returns
// the one after what it read; the refusals name the same offsets as before
// (`validate_reference.rs`, compared by the tests and the fuzz target).
impl<R: Record> Validator<'_, R> {
    #[inline(always)]
    fn at(&self, pos: usize) -> Option<u8> {
        self.b.get(pos).copied()
    }

    #[inline(always)]
    fn skip_ws(&self, pos: usize) -> Result<usize, JsonError> {
        // Compact JSON (what agents send) has no whitespace between tokens: one comparison.
        if self.at(pos).is_none_or(|c| c > b' ') {
            return Ok(pos);
        }
        self.skip_ws_slow(pos)
    }

    #[cold]
    fn skip_ws_slow(&self, mut pos: usize) -> Result<usize, JsonError> {
        while let Some(c) = self.at(pos) {
            match c {
                b' ' | b'\t' => pos += 1,
                b'\n' | b'\r' => return fail(pos, JsonErrorKind::LineBreak),
                _ => break,
            }
        }
        Ok(pos)
    }

    fn run(mut self) -> Result<(), JsonError> {
        let mut pos = 0;
        // Iterative so that hostile nesting cannot exhaust the call stack.
        'value: loop {
            pos = self.skip_ws(pos)?;
            match self.at(pos) {
                Some(b'{') => {
                    pos = self.open(pos, true)?;
                    pos = self.skip_ws(pos)?;
                    if self.at(pos) == Some(b'}') {
                        pos += 1;
                        self.stack.pop();
                    } else {
                        pos = self.key(pos)?;
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    pos = self.open(pos, false)?;
                    pos = self.skip_ws(pos)?;
                    if self.at(pos) == Some(b']') {
                        pos += 1;
                        self.stack.pop();
                    } else {
                        continue 'value;
                    }
                }
                Some(b'"') => pos = self.string(pos)?,
                Some(b'-' | b'0'..=b'9') => pos = self.number(pos)?,
                Some(b't') => pos = self.literal(pos, b"true")?,
                Some(b'f') => pos = self.literal(pos, b"false")?,
                Some(b'n') => pos = self.literal(pos, b"null")?,
                _ => return fail(pos, JsonErrorKind::Syntax("expected a value")),
            }
            // After a complete value: close containers until one wants another member.
            loop {
                let end = pos;
                pos = self.skip_ws(pos)?;
                let Some(in_object) = self.stack.last() else {
                    if pos != self.b.len() {
                        return fail(pos, JsonErrorKind::Syntax("trailing characters"));
                    }
                    return Ok(());
                };
                if R::RECORDS && in_object {
                    self.rec.value_end(self.stack.len(), end);
                }
                match (self.at(pos), in_object) {
                    (Some(b','), true) => {
                        pos = self.key(pos + 1)?;
                        continue 'value;
                    }
                    (Some(b','), false) => {
                        pos += 1;
                        continue 'value;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        pos += 1;
                        self.stack.pop();
                    }
                    (_, true) => return fail(pos, JsonErrorKind::Syntax("expected ',' or '}'")),
                    (_, false) => return fail(pos, JsonErrorKind::Syntax("expected ',' or ']'")),
                }
            }
        }
    }

    #[inline(always)]
    fn open(&mut self, pos: usize, object: bool) -> Result<usize, JsonError> {
        if self.stack.len() >= self.max_depth as usize {
            return fail(
                pos,
                JsonErrorKind::TooDeep {
                    limit: self.max_depth,
                },
            );
        }
        self.stack.push(object);
        Ok(pos + 1)
    }

    /// An object key and its colon.
    #[inline(always)]
    fn key(&mut self, pos: usize) -> Result<usize, JsonError> {
        let key_start = self.skip_ws(pos)?;
        if self.at(key_start) != Some(b'"') {
            return fail(key_start, JsonErrorKind::Syntax("expected a string key"));
        }
        let key_end = self.string(key_start)?;
        let mut pos = self.skip_ws(key_end)?;
        if self.at(pos) != Some(b':') {
            return fail(pos, JsonErrorKind::Syntax("expected ':'"));
        }
        pos += 1;
        if R::RECORDS {
            pos = self.skip_ws(pos)?;
            self.rec.member(self.stack.len(), (key_start, key_end), pos);
        }
        Ok(pos)
    }

    fn literal(&self, pos: usize, word: &'static [u8]) -> Result<usize, JsonError> {
        if self.b.get(pos..pos + word.len()) == Some(word) {
            Ok(pos + word.len())
        } else {
            fail(pos, JsonErrorKind::Syntax("invalid literal"))
        }
    }

    /// A string starting at its opening quote; returns the position after its closing one.
    #[inline(always)]
    fn string(&self, pos: usize) -> Result<usize, JsonError> {
        let mut pos = pos + 1; // opening quote
        loop {
            // Eight bytes at a time (SWAR): stop at the first quote, backslash, control
            // character or non-ASCII byte; plain ASCII text is skipped in one pass.
            while let Some(word) = word_at(self.b, pos) {
                let mask = special_or_high(word);
                if mask != 0 {
                    pos += (mask.trailing_zeros() / 8) as usize;
                    break;
                }
                pos += 8;
            }
            match self.at(pos) {
                Some(b'"') => return Ok(pos + 1),
                Some(b'\\') => pos = self.escape(pos + 1)?,
                Some(0x00..=0x1f) => {
                    return fail(pos, JsonErrorKind::Syntax("control character in string"));
                }
                Some(0x80..=0xff) => pos = self.non_ascii(pos)?,
                Some(_) => pos += 1,
                None => return fail(pos, JsonErrorKind::Syntax("unterminated string")),
            }
        }
    }

    /// A run of string bytes from a non-ASCII one to the next quote, backslash or control
    /// character (all ASCII, so never inside a multi-byte character): valid UTF-8 or refused.
    fn non_ascii(&self, start: usize) -> Result<usize, JsonError> {
        let mut end = start;
        while let Some(word) = word_at(self.b, end) {
            let mask = special_bytes(word);
            if mask != 0 {
                end += (mask.trailing_zeros() / 8) as usize;
                break;
            }
            end += 8;
        }
        while self
            .b
            .get(end)
            .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20)
        {
            end += 1;
        }
        match std::str::from_utf8(self.b.get(start..end).unwrap_or_default()) {
            Ok(_) => Ok(end),
            Err(e) => fail(start + e.valid_up_to(), JsonErrorKind::InvalidUtf8),
        }
    }

    /// The escape after a backslash (`pos` is the byte after it).
    fn escape(&self, pos: usize) -> Result<usize, JsonError> {
        match self.at(pos) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(pos + 1),
            // Any four hex digits, lone surrogates included: JSON's grammar allows them,
            // `JSON.parse` accepts them, and DSH writes them (a string cut inside a UTF-16
            // pair). The bytes are stored and exported exactly as received.
            Some(b'u') => self.hex4(pos + 1),
            _ => fail(pos, JsonErrorKind::Syntax("invalid escape")),
        }
    }

    fn hex4(&self, mut pos: usize) -> Result<usize, JsonError> {
        for _ in 0..4 {
            if !self.at(pos).is_some_and(|c| c.is_ascii_hexdigit()) {
                return fail(pos, JsonErrorKind::Syntax("invalid \\u escape"));
            }
            pos += 1;
        }
        Ok(pos)
    }

    #[inline(always)]
    fn digits(&self, mut pos: usize) -> usize {
        while matches!(self.at(pos), Some(b'0'..=b'9')) {
            pos += 1;
        }
        pos
    }

    fn number(&self, start: usize) -> Result<usize, JsonError> {
        let mut pos = start;
        let negative = self.at(pos) == Some(b'-');
        if negative {
            pos += 1;
        }
        let int_start = pos;
        match self.at(pos) {
            Some(b'0') => pos += 1,
            Some(b'1'..=b'9') => pos = self.digits(pos),
            _ => return fail(pos, JsonErrorKind::Syntax("invalid number")),
        }
        let mut all_zero = self.b[int_start..pos].iter().all(|&d| d == b'0');
        if self.at(pos) == Some(b'.') {
            let frac_start = pos + 1;
            pos = self.digits(frac_start);
            if pos == frac_start {
                return fail(pos, JsonErrorKind::Syntax("digit expected after '.'"));
            }
            all_zero &= self.b[frac_start..pos].iter().all(|&d| d == b'0');
        }
        let mut exponent = false;
        if matches!(self.at(pos), Some(b'e' | b'E')) {
            exponent = true;
            pos += 1;
            if matches!(self.at(pos), Some(b'+' | b'-')) {
                pos += 1;
            }
            let exp_start = pos;
            pos = self.digits(pos);
            if pos == exp_start {
                return fail(pos, JsonErrorKind::Syntax("digit expected in exponent"));
            }
        }
        let token = &self.b[start..pos];
        if negative && all_zero {
            return fail(start, JsonErrorKind::NegativeZero);
        }
        // Without an exponent and with at most 300 digits a number is finite and, if
        // non-zero, far above the smallest double: only the rest needs a real parse.
        if exponent || token.len() > 300 {
            let parsed = std::str::from_utf8(token)
                .ok()
                .and_then(|s| s.parse::<f64>().ok());
            match parsed {
                Some(v) if !v.is_finite() => return fail(start, JsonErrorKind::NonFinite),
                Some(v) if v == 0.0 && v.is_sign_negative() => {
                    return fail(start, JsonErrorKind::NegativeZero);
                }
                Some(_) => {}
                None => return fail(pos, JsonErrorKind::Syntax("invalid number")),
            }
        }
        Ok(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(s: &str) -> Result<(), JsonErrorKind> {
        validate(s.as_bytes(), &Limits::default()).map_err(|e| e.kind)
    }

    #[test]
    fn accepts_ordinary_json() {
        for ok in [
            "0",
            "-1",
            "1.5e3",
            "\"a\\u00e9\\ud83d\\ude00\"",
            "[]",
            "{}",
            "{\"a\":[1,2,{\"b\":null}],\"c\":true,\"d\":false}",
            "{ \"a\" : 1 , \"b\":\t2 }",
            "0.0",
            "1e-400",
            "\"\u{7f}\u{e9}\"",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_what_is_not_lossless() {
        use JsonErrorKind::*;
        let cases: &[(&str, JsonErrorKind)] = &[
            ("", Empty),
            ("-0", NegativeZero),
            ("-0.0", NegativeZero),
            ("-0e7", NegativeZero),
            ("-1e-400", NegativeZero),
            ("1e400", NonFinite),
            ("[1,-1E+999]", NonFinite),
            ("{\"a\":\n1}", LineBreak),
            (" 1", SurroundingWhitespace),
            ("1 ", SurroundingWhitespace),
            ("01", Syntax("trailing characters")),
            ("1.", Syntax("digit expected after '.'")),
            ("[1,]", Syntax("expected a value")),
            ("{\"a\" 1}", Syntax("expected ':'")),
            ("{1:1}", Syntax("expected a string key")),
            ("\"a\u{1}\"", Syntax("control character in string")),
            ("\"\\x\"", Syntax("invalid escape")),
            ("tru", Syntax("invalid literal")),
            ("[1 2]", Syntax("expected ',' or ']'")),
            ("{\"a\":1", Syntax("expected ',' or '}'")),
            ("\"abc", Syntax("unterminated string")),
            ("+1", Syntax("expected a value")),
        ];
        for (input, kind) in cases {
            assert_eq!(check(input).err().as_ref(), Some(kind), "{input:?}");
        }
        assert_eq!(
            validate(b"\"\xff\"", &Limits::default()).map_err(|e| e.kind),
            Err(InvalidUtf8)
        );
        // Outside a string, and after a syntax error: still named as invalid UTF-8 first.
        for (bytes, at) in [
            (&b"\xff"[..], 0),
            (b"[1,\xc3]", 3),
            (b"{1:\"\xe9\"}", 4),
            (b"\"\xc3\xa9\xc3\"", 3),
            (b"\"\xed\xa0\x80\"", 1),
        ] {
            assert_eq!(
                validate(bytes, &Limits::default()),
                Err(JsonError {
                    offset: at,
                    kind: InvalidUtf8
                }),
                "{bytes:?}"
            );
        }
        assert_eq!(check("\"caf\u{e9} \u{1f600} \u{4e2d}\u{6587}\\n\""), Ok(()));
    }

    #[test]
    fn enforces_depth_and_size_limits() {
        let limits = Limits {
            max_depth: 3,
            max_data_bytes: 16,
        };
        assert_eq!(validate(b"[[[1]]]", &limits), Ok(()));
        let deep = validate(b"[[[[1]]]]", &limits).map(|_| ()).unwrap_err();
        assert_eq!(deep.kind, JsonErrorKind::TooDeep { limit: 3 });
        assert_eq!(deep.offset, 3);
        let big = validate(&[b'1'; 17], &limits).unwrap_err();
        assert_eq!(
            big.kind,
            JsonErrorKind::TooLarge {
                size: 17,
                limit: 16
            }
        );
    }

    #[test]
    fn hostile_nesting_is_refused_without_recursion() {
        let deep = "[".repeat(100_000);
        assert_eq!(check(&deep), Err(JsonErrorKind::TooDeep { limit: 512 }));
        let ok = format!("{}{}", "[".repeat(512), "]".repeat(512));
        assert_eq!(check(&ok), Ok(()));
    }

    #[test]
    fn nesting_past_the_inline_stack_keeps_each_level_kind() {
        let limits = Limits {
            max_depth: 1000,
            ..Limits::default()
        };
        // Objects and arrays alternate through 600 levels, past the 256 inline bits: each
        // closer must match the kind of its own level.
        let mut open = String::new();
        let mut close = String::new();
        for i in 0..600 {
            if i % 3 == 0 {
                open.push_str("{\"k\":");
                close.insert(0, '}');
            } else {
                open.push('[');
                close.insert(0, ']');
            }
        }
        let ok = format!("{open}1{close}");
        assert_eq!(validate(ok.as_bytes(), &limits), Ok(()));
        // Swap the closer of level 400 (an array) for an object closer.
        let mut bad = ok.clone().into_bytes();
        let at = open.len() + 1 + (600 - 1 - 400);
        assert_eq!(bad[at], b']');
        bad[at] = b'}';
        assert!(validate(&bad, &limits).is_err());
        // And one of the inline levels (level 10, an array).
        let mut bad = ok.into_bytes();
        let at = open.len() + 1 + (600 - 1 - 10);
        assert_eq!(bad[at], b']');
        bad[at] = b'}';
        assert!(validate(&bad, &limits).is_err());
    }

    proptest::proptest! {
        #[test]
        fn generated_json_is_accepted(text in crate::json::strategy::json_value()) {
            proptest::prop_assert_eq!(validate(text.as_bytes(), &Limits::default()), Ok(()));
        }

        /// UTF-8 checked by the grammar (inside strings only) decides and names a refusal
        /// exactly as the whole-input check before it did: invalid UTF-8 anywhere is refused
        /// as `InvalidUtf8` at its first bad byte, and what is accepted is UTF-8.
        #[test]
        fn utf8_is_decided_as_by_a_whole_input_check(
            text in crate::json::strategy::json_value(),
            edits in proptest::collection::vec((proptest::prelude::any::<usize>(), proptest::sample::select(vec![0x80u8, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, b'a', b'"'])), 0..3),
        ) {
            let mut bytes = text.into_bytes();
            for (at, byte) in edits {
                let i = at % bytes.len();
                bytes[i] = byte;
            }
            let got = validate(&bytes, &Limits::default());
            match std::str::from_utf8(&bytes) {
                Err(e) => proptest::prop_assert_eq!(got, Err(JsonError { offset: e.valid_up_to(), kind: JsonErrorKind::InvalidUtf8 })),
                Ok(_) => {
                    let named_utf8 = matches!(got, Err(JsonError { kind: JsonErrorKind::InvalidUtf8, .. }));
                    proptest::prop_assert!(!named_utf8);
                }
            }
        }

        /// The validator decides and names every refusal (kind and offset) as the validator
        /// it replaced, on generated values, on values with bytes changed, and on any bytes.
        #[test]
        fn decides_as_the_reference_validator(
            text in crate::json::strategy::json_value(),
            edits in proptest::collection::vec((proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()), 0..3),
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24),
            depth in 1u32..6,
        ) {
            let mut bytes = text.into_bytes();
            for (at, byte) in edits {
                let i = at % bytes.len();
                bytes[i] = byte;
            }
            for limits in [Limits::default(), Limits { max_depth: depth, max_data_bytes: 64 }] {
                proptest::prop_assert_eq!(
                    validate(&bytes, &limits),
                    super::super::validate_reference(&bytes, &limits)
                );
                proptest::prop_assert_eq!(
                    validate(&noise, &limits),
                    super::super::validate_reference(&noise, &limits)
                );
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let _ = validate(&bytes, &Limits::default());
        }

        #[test]
        fn a_mutated_value_is_refused_or_still_navigable(
            text in crate::json::strategy::json_value(),
            at in proptest::prelude::any::<usize>(),
            byte in proptest::prelude::any::<u8>(),
        ) {
            let mut bytes = text.into_bytes();
            let i = at % bytes.len();
            bytes[i] = byte;
            if validate(&bytes, &Limits::default()).is_ok() {
                let v = crate::json::JsonRef::new(&bytes);
                proptest::prop_assert!(v.deep_eq(&v));
            }
        }
    }
}

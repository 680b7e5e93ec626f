//! Whether a line is JSON as DSH's loader reads it (`JSON.parse` over the line decoded as
//! UTF-8 with replacement): RFC 8259 grammar only — whitespace around tokens, any number
//! spelling the grammar allows (`2.0`, `1e400`), duplicate keys, any `\u` escape, any
//! nesting depth, any bytes inside strings. sessdb's own validator is stricter (lossless
//! storage); the import uses this to tell a line DSH keeps from a torn one.

/// Whether `b` is one JSON value, whitespace allowed around it.
pub(crate) fn parses_as_dsh_json(b: &[u8]) -> bool {
    let mut p = Parser { b, i: 0 };
    p.ws();
    if !p.value() {
        return false;
    }
    p.ws();
    p.i == b.len()
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn lit(&mut self, s: &[u8]) -> bool {
        if self.b.get(self.i..self.i + s.len()) == Some(s) {
            self.i += s.len();
            true
        } else {
            false
        }
    }

    /// One value; containers are walked with an explicit stack (no recursion).
    fn value(&mut self) -> bool {
        // Each entry: `true` for an object, `false` for an array.
        let mut stack: Vec<bool> = Vec::new();
        loop {
            // A value.
            self.ws();
            match self.peek() {
                Some(b'{') => {
                    self.i += 1;
                    self.ws();
                    if self.eat(b'}') {
                        // empty object: a complete value
                    } else {
                        stack.push(true);
                        if !self.key() {
                            return false;
                        }
                        continue;
                    }
                }
                Some(b'[') => {
                    self.i += 1;
                    self.ws();
                    if !self.eat(b']') {
                        stack.push(false);
                        continue;
                    }
                }
                Some(b'"') => {
                    if !self.string() {
                        return false;
                    }
                }
                Some(b't') if self.lit(b"true") => {}
                Some(b'f') if self.lit(b"false") => {}
                Some(b'n') if self.lit(b"null") => {}
                Some(b'-' | b'0'..=b'9') => {
                    if !self.number() {
                        return false;
                    }
                }
                _ => return false,
            }
            // After a complete value: close containers or move to the next member.
            loop {
                let Some(&object) = stack.last() else {
                    return true;
                };
                self.ws();
                if self.eat(b',') {
                    if object && !self.key() {
                        return false;
                    }
                    break;
                }
                if self.eat(if object { b'}' } else { b']' }) {
                    stack.pop();
                    continue;
                }
                return false;
            }
        }
    }

    /// `"key" :` inside an object.
    fn key(&mut self) -> bool {
        self.ws();
        if self.peek() != Some(b'"') || !self.string() {
            return false;
        }
        self.ws();
        self.eat(b':')
    }

    fn string(&mut self) -> bool {
        self.i += 1; // opening quote
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'"' => return true,
                b'\\' => match self.peek() {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                    Some(b'u') => {
                        self.i += 1;
                        let hex = self.b.get(self.i..self.i + 4);
                        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                            return false;
                        }
                        self.i += 4;
                    }
                    _ => return false,
                },
                0x00..=0x1f => return false,
                _ => {}
            }
        }
        false
    }

    fn digits(&mut self) -> bool {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i > start
    }

    fn number(&mut self) -> bool {
        self.eat(b'-');
        if !self.eat(b'0') && !self.digits() {
            return false;
        }
        if self.eat(b'.') && !self.digits() {
            return false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if !self.digits() {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::parses_as_dsh_json as ok;

    #[test]
    fn what_json_parse_accepts_and_sessdb_does_not() {
        for line in [
            &br#"{"seq":2.0}"#[..],
            br#"{"a":1,"a":2}"#,
            br#"{"x":"\ud800"}"#,
            br#" {"x":1e400} "#,
            b"{\"x\":1}\r",
            b"{\"x\":\"\xff\xfe\"}",
            br#"{"a":[],"b":{},"c":[1,-0.5e+3,"s",true,false,null]}"#,
            b"-0",
        ] {
            assert!(ok(line), "{}", String::from_utf8_lossy(line));
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(ok(deep.as_bytes()), "nesting far past 128");
    }

    #[test]
    fn what_json_parse_refuses() {
        for line in [
            &b""[..],
            b"{",
            br#"{"a":1"#,
            br#"{"a":1,}"#,
            br#"[1,]"#,
            br#"{"a" 1}"#,
            br#"{a:1}"#,
            b"01",
            b"1.",
            b"1e",
            b"-",
            br#""\x""#,
            br#""\u12g4""#,
            b"\"tab\there\"",
            br#"{"a":1}{"b":2}"#,
            b"tru",
            b"NaN",
        ] {
            assert!(!ok(line), "{}", String::from_utf8_lossy(line));
        }
    }
}

//! Reading a JSONL file line by line, raw or as concatenated zstd frames, with every line
//! bounded in memory.
//!
//! zstd (`docs/FORMATS.md` §2.4–§2.5): every complete frame must decode and pass its checksum, else
//! the file is corrupt; only a structurally incomplete *final* frame is recoverable, and its
//! partial plaintext yields whatever complete lines it holds (the rest is a torn tail).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// One line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based line number.
    pub number: u64,
    /// The bytes, without the newline (empty when `oversized`).
    pub bytes: Vec<u8>,
    /// Whether a newline ended it (a last line without one is a torn write).
    pub terminated: bool,
    /// The line was longer than the limit; its bytes were skipped.
    pub oversized: bool,
    /// The first line of a zstd frame (DSH writes one frame per write batch).
    pub frame_start: bool,
}

/// The line as DSH reads it: DSH decodes a session file as UTF-8 text, turning every invalid
/// sequence into U+FFFD (the WHATWG decoder's substitution of maximal subparts, which
/// `String::from_utf8_lossy` also follows), so a line with invalid UTF-8 is read with those
/// replacements. A newline is ASCII, so decoding line by line equals decoding the file.
/// Returns whether anything was replaced.
fn decoded_as_dsh(mut line: Line) -> (Line, bool) {
    if std::str::from_utf8(&line.bytes).is_err() {
        line.bytes = String::from_utf8_lossy(&line.bytes)
            .into_owned()
            .into_bytes();
        return (line, true);
    }
    (line, false)
}

/// Splits a byte stream into bounded lines.
#[derive(Debug)]
struct Splitter {
    max_line: usize,
    current: Vec<u8>,
    oversized: bool,
    next_number: u64,
    /// The next line begins a zstd frame.
    frame_start_pending: bool,
}

impl Splitter {
    fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<Line>) {
        while !chunk.is_empty() {
            let nl = chunk.iter().position(|&b| b == b'\n');
            let part = &chunk[..nl.unwrap_or(chunk.len())];
            if !self.oversized {
                if self.current.len() + part.len() > self.max_line {
                    self.oversized = true;
                    self.current = Vec::new();
                } else {
                    self.current.extend_from_slice(part);
                }
            }
            match nl {
                Some(i) => {
                    self.emit(true, out);
                    chunk = &chunk[i + 1..];
                }
                None => break,
            }
        }
    }

    fn emit(&mut self, terminated: bool, out: &mut Vec<Line>) {
        self.next_number += 1;
        out.push(Line {
            number: self.next_number,
            bytes: std::mem::take(&mut self.current),
            terminated,
            oversized: self.oversized,
            frame_start: std::mem::take(&mut self.frame_start_pending),
        });
        self.oversized = false;
    }

    fn finish(&mut self, out: &mut Vec<Line>) {
        if !self.current.is_empty() || self.oversized {
            self.emit(false, out);
        }
    }
}

enum Input {
    Raw(BufReader<Box<dyn Read>>),
    #[cfg(feature = "zstd")]
    Zstd {
        bytes: Vec<u8>,
        pos: usize,
        frame: u64,
    },
}

/// Lines of one session file.
pub struct LineReader {
    path: PathBuf,
    input: Input,
    splitter: Splitter,
    ready: std::collections::VecDeque<Line>,
    done: bool,
    /// Bytes of the file consumed so far (for progress).
    pub bytes_read: u64,
    /// Lines whose invalid UTF-8 was read as U+FFFD (reported to the user).
    pub replaced_lines: Vec<u64>,
}

impl std::fmt::Debug for LineReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineReader")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The first bytes of every zstd frame.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

impl LineReader {
    /// Opens `path`; a file that starts with the zstd frame magic is read as zstd frames,
    /// whatever its name says (as stdin is), any other as raw lines.
    pub fn open(path: &Path, max_line: usize) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        Self::from_reader(Box::new(file), path, max_line)
    }

    /// Reads `input` (named `path` in errors) as [`LineReader::open`] reads a file: raw lines
    /// streamed in 64 KiB reads; zstd frames (by their magic) read whole first, since every
    /// complete frame is checked before its lines count.
    pub fn from_reader(input: Box<dyn Read>, path: &Path, max_line: usize) -> Result<Self> {
        let mut reader = BufReader::with_capacity(1 << 16, input);
        let zstd = std::io::BufRead::fill_buf(&mut reader)
            .map_err(|e| Error::io("read", path, e))?
            .starts_with(&ZSTD_MAGIC);
        #[cfg(not(feature = "zstd"))]
        if zstd {
            return Err(Error::Layout {
                path: path.to_owned(),
                problem: "is zstd-compressed, and this build of sessdb-formats has no zstd \
                          support (its `zstd` feature)"
                    .into(),
            });
        }
        #[cfg(feature = "zstd")]
        let input = if zstd {
            let mut bytes = Vec::new();
            reader
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io("read", path, e))?;
            Input::Zstd {
                bytes,
                pos: 0,
                frame: 0,
            }
        } else {
            Input::Raw(reader)
        };
        #[cfg(not(feature = "zstd"))]
        let input = Input::Raw(reader);
        Ok(Self {
            path: path.to_owned(),
            input,
            splitter: Splitter {
                max_line,
                current: Vec::new(),
                oversized: false,
                next_number: 0,
                frame_start_pending: false,
            },
            ready: std::collections::VecDeque::new(),
            done: false,
            bytes_read: 0,
            replaced_lines: Vec::new(),
        })
    }

    /// The next line, or `None` at the end.
    ///
    /// # Errors
    /// I/O errors; `Corrupt` for a complete zstd frame that does not decode.
    pub fn next_line(&mut self) -> Result<Option<Line>> {
        while self.ready.is_empty() && !self.done {
            self.fill()?;
        }
        let line = self.ready.pop_front().map(decoded_as_dsh);
        if let Some((line, true)) = &line {
            self.replaced_lines.push(line.number);
        }
        Ok(line.map(|(line, _)| line))
    }

    fn fill(&mut self) -> Result<()> {
        let mut out = Vec::new();
        match &mut self.input {
            Input::Raw(reader) => {
                let buf = reader
                    .fill_buf()
                    .map_err(|e| Error::io("read", &self.path, e))?;
                if buf.is_empty() {
                    self.splitter.finish(&mut out);
                    self.done = true;
                } else {
                    let n = buf.len();
                    self.splitter.feed(buf, &mut out);
                    reader.consume(n);
                    self.bytes_read += n as u64;
                }
            }
            #[cfg(feature = "zstd")]
            Input::Zstd { bytes, pos, frame } => {
                let rest = bytes.get(*pos..).unwrap_or_default();
                if rest.is_empty() {
                    self.splitter.finish(&mut out);
                    self.done = true;
                } else {
                    *frame += 1;
                    match zstd::zstd_safe::find_frame_compressed_size(rest) {
                        Ok(size) if size <= rest.len() => {
                            let complete = &rest[..size];
                            // Complete frames end at a line end, so this one starts a line.
                            self.splitter.frame_start_pending = true;
                            decode_frame(complete, &mut self.splitter, &mut out).map_err(
                                |problem| Error::Corrupt {
                                    file: self.path.clone(),
                                    line: Some(self.splitter.next_number + 1),
                                    problem: format!("zstd frame {frame}: {problem}"),
                                },
                            )?;
                            *pos += size;
                            self.bytes_read += size as u64;
                            // A complete frame holds whole records: it ends with a newline.
                            if !self.splitter.current.is_empty() || self.splitter.oversized {
                                return Err(Error::Corrupt {
                                    file: self.path.clone(),
                                    line: Some(self.splitter.next_number + 1),
                                    problem: format!("zstd frame {frame} ends inside a record"),
                                });
                            }
                        }
                        _ => {
                            // The final frame is cut short: keep what decodes.
                            let _ = decode_frame(rest, &mut self.splitter, &mut out);
                            self.bytes_read += rest.len() as u64;
                            *pos = bytes.len();
                        }
                    }
                }
            }
        }
        self.ready.extend(out);
        Ok(())
    }
}

/// Streams one frame's plaintext into the splitter (never holding more than a line).
#[cfg(feature = "zstd")]
fn decode_frame(
    frame: &[u8],
    splitter: &mut Splitter,
    out: &mut Vec<Line>,
) -> std::result::Result<(), String> {
    let mut decoder = zstd::stream::read::Decoder::with_buffer(frame)
        .map_err(|e| e.to_string())?
        .single_frame();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = decoder.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(());
        }
        splitter.feed(&buf[..n], out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_all(path: &Path, max: usize) -> Result<Vec<Line>> {
        let mut r = LineReader::open(path, max)?;
        let mut v = Vec::new();
        while let Some(l) = r.next_line()? {
            v.push(l);
        }
        Ok(v)
    }

    fn frame(text: &str) -> Vec<u8> {
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        e.include_checksum(true).unwrap();
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn invalid_utf8_reads_as_dsh_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        // A lone continuation byte, a cut 3-byte sequence (one U+FFFD for its maximal
        // subpart), an overlong encoding (one per byte), then valid text.
        std::fs::write(&path, b"a\x80b\n\xe6\x97c\n\xc0\xafd\n\xe6\x97\xa5\n").unwrap();
        let lines: Vec<Vec<u8>> = read_all(&path, 1024)
            .unwrap()
            .into_iter()
            .map(|l| l.bytes)
            .collect();
        assert_eq!(
            lines,
            vec![
                "a\u{fffd}b".as_bytes().to_vec(),
                "\u{fffd}c".as_bytes().to_vec(),
                "\u{fffd}\u{fffd}d".as_bytes().to_vec(),
                "日".as_bytes().to_vec(),
            ]
        );
    }

    #[test]
    fn raw_lines_torn_and_oversized() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("session.jsonl");
        std::fs::write(&p, format!("ab\n{}\ncd", "x".repeat(50))).unwrap();
        let lines = read_all(&p, 10).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            (lines[0].bytes.as_slice(), lines[0].terminated),
            (&b"ab"[..], true)
        );
        assert!(lines[1].oversized && lines[1].bytes.is_empty());
        assert_eq!(
            (
                lines[2].bytes.as_slice(),
                lines[2].terminated,
                lines[2].number
            ),
            (&b"cd"[..], false, 3)
        );
    }

    #[test]
    fn zstd_frames_and_a_torn_final_frame() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("session.jsonl.zstd");
        let mut bytes = frame("h\n");
        bytes.extend(frame("a\nb\n"));
        let last = frame("c\nd\n");
        bytes.extend(&last[..last.len() - 6]);
        std::fs::write(&p, &bytes).unwrap();
        let lines = read_all(&p, 100).unwrap();
        let texts: Vec<&[u8]> = lines
            .iter()
            .filter(|l| l.terminated)
            .map(|l| l.bytes.as_slice())
            .collect();
        assert_eq!(&texts[..3], &[&b"h"[..], b"a", b"b"]);

        // A damaged complete frame is corruption, not a torn tail.
        let mut bad = frame("h\n");
        let mut middle = frame("a\nb\n");
        let at = middle.len() - 2;
        middle[at] ^= 0xff; // the checksum
        bad.extend(middle);
        bad.extend(frame("c\n"));
        std::fs::write(&p, &bad).unwrap();
        assert!(matches!(read_all(&p, 100), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn regression_the_encoding_is_told_by_content_not_by_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let text = |p: &Path| -> Vec<Vec<u8>> {
            read_all(p, 100)
                .unwrap()
                .into_iter()
                .map(|l| l.bytes)
                .collect()
        };
        // zstd named .jsonl, raw named .zstd: both read as what they hold.
        let zstd_named_raw = dir.path().join("a.jsonl");
        std::fs::write(&zstd_named_raw, frame("h\nx\n")).unwrap();
        assert_eq!(text(&zstd_named_raw), [b"h".to_vec(), b"x".to_vec()]);
        let raw_named_zstd = dir.path().join("b.jsonl.zstd");
        std::fs::write(&raw_named_zstd, "h\ny\n").unwrap();
        assert_eq!(text(&raw_named_zstd), [b"h".to_vec(), b"y".to_vec()]);
    }

    #[test]
    fn a_zstd_bomb_is_read_in_bounded_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("session.jsonl.zstd");
        let big = "x".repeat(50 << 20); // 50 MiB of one line compresses to a few KiB
        let mut bytes = frame("h\n");
        bytes.extend(frame(&big));
        assert!(bytes.len() < 100_000);
        std::fs::write(&p, &bytes).unwrap();
        let err = read_all(&p, 1 << 20).unwrap_err();
        assert!(err.to_string().contains("ends inside a record"), "{err}");
    }
}

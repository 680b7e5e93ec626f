//! Body layout 5's arrays (`docs/FORMAT.md` §5.4): an entry's surface and turn marks kept in
//! runs of `u64` values in the runs region, as its locations are — or, when short, in the
//! entry itself. An entry names the runs, in any file of its chain, so a delta writes only the
//! values appended to a session since its last entry and names the earlier runs where they
//! are. Why: with the arrays inline (layouts 2
//! to 4) every delta rewrote a changed session's whole surface and turn marks — about a
//! megabyte a checkpoint for one event appended to a session of a million events
//! (`docs/PERFORMANCE.md`, "2026-12-06, arrays").

use super::runs::{RUN_REF_LEN, RunRef};
use crate::codec::reader::{ByteReader, Decoded};

/// Bytes of one value of an array run.
pub const VALUE_LEN: usize = 8;

/// The longest array an entry holds in itself rather than in runs: a short array costs less
/// inline (no run reference, no run checksum) than it could save a delta, and most sessions'
/// arrays are short — a store of many small sessions keeps layout 4's sizes.
pub const INLINE_MAX: u64 = 32;

/// One array as an entry names it: its length and the runs holding its values, in order — no
/// runs when the entry holds the values itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArrayRef {
    /// Values in the array.
    pub len: u64,
    /// The runs holding them (their counts together `len`), or none.
    pub runs: Vec<RunRef>,
}

impl ArrayRef {
    /// Whether its values are in runs (what a delta can name without writing them again).
    pub fn in_runs(&self) -> bool {
        !self.runs.is_empty()
    }
}

/// Where an entry's array is, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArraySource<'a> {
    /// Its values, in the entry (always in layouts 3 and 4).
    Values(&'a [u8]),
    /// In runs.
    Runs(ArrayRef),
}

impl ArraySource<'_> {
    /// What an entry names of it: its length, and its runs if any.
    pub fn held(&self) -> ArrayRef {
        match self {
            Self::Values(v) => ArrayRef {
                len: (v.len() / VALUE_LEN) as u64,
                runs: Vec::new(),
            },
            Self::Runs(a) => a.clone(),
        }
    }
}

/// The arrays of a layout-5 entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryArrays {
    /// The surface's seqs.
    pub surface: ArrayRef,
    /// The turn marks, encoded (`model::TurnMarks`).
    pub turns: ArrayRef,
}

/// An entry's arrays with the surface's replace generation the entry holds: what a delta
/// may name while the session's surface still has that generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldArrays {
    /// The arrays.
    pub arrays: EntryArrays,
    /// The surface's replace generation then.
    pub replace_generation: u64,
}

/// One array to write: runs an earlier file of the chain holds, then values written here
/// (`pieces`, concatenated, are whole `u64`s, little-endian).
#[derive(Debug, Clone, Copy)]
pub struct ArrayOut<'a> {
    /// Runs of earlier files holding the array's first values.
    pub earlier: &'a [RunRef],
    /// The values after them, as bytes.
    pub pieces: &'a [&'a [u8]],
}

/// Both arrays of an entry to write.
#[derive(Debug, Clone, Copy)]
pub struct ArraysOut<'a> {
    /// The surface.
    pub surface: ArrayOut<'a>,
    /// The turn marks.
    pub turns: ArrayOut<'a>,
}

/// The values of `v` as an array run's bytes.
pub fn encode_values(v: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * VALUE_LEN);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// The values of runs' bytes, concatenated (each a whole number of values: checked where the
/// run is placed).
pub fn decode_values(runs: &[&[u8]]) -> Vec<u64> {
    let n = runs.iter().map(|r| r.len() / VALUE_LEN).sum();
    let mut out = Vec::with_capacity(n);
    for r in runs {
        out.extend(r.chunks_exact(VALUE_LEN).map(|b| {
            let mut word = [0u8; VALUE_LEN];
            word.copy_from_slice(b);
            u64::from_le_bytes(word)
        }));
    }
    out
}

/// Writes `a`: its length, its run count, then its runs — or, with none, its values
/// (`values`, concatenated, `a.len` of them).
pub(crate) fn put_array(out: &mut Vec<u8>, a: &ArrayRef, values: &[&[u8]]) -> Decoded<()> {
    out.extend_from_slice(&a.len.to_le_bytes());
    let n = u32::try_from(a.runs.len()).map_err(|_| super::TOO_LARGE)?;
    out.extend_from_slice(&n.to_le_bytes());
    if a.in_runs() {
        for r in &a.runs {
            r.encode(out);
        }
    } else {
        debug_assert_eq!(
            values.iter().map(|v| v.len() as u64).sum::<u64>(),
            a.len * VALUE_LEN as u64,
            "inline values"
        );
        for v in values {
            out.extend_from_slice(v);
        }
    }
    Ok(())
}

/// Reads an array [`put_array`] wrote, checking that its runs hold exactly its length.
pub(crate) fn read_array<'a>(
    c: &mut ByteReader<'a>,
    what: &'static str,
) -> Decoded<ArraySource<'a>> {
    let len = c.u64(what)?;
    let n = c.u32(what)?;
    if n == 0 {
        let n = c.count(len, VALUE_LEN, what)?;
        return Ok(ArraySource::Values(c.take(n * VALUE_LEN, what)?));
    }
    let n = c.count(u64::from(n), RUN_REF_LEN, what)?;
    let mut runs = Vec::with_capacity(n);
    let mut held = 0u64;
    for _ in 0..n {
        let r = RunRef::read(c)?;
        held = held.checked_add(r.count).ok_or(what)?;
        runs.push(r);
    }
    if held != len {
        return Err("an array's runs do not hold its length");
    }
    Ok(ArraySource::Runs(ArrayRef { len, runs }))
}

/// Moves `c` past an array [`put_array`] wrote, returning its length (nothing allocated: a
/// listing reads every entry's row).
pub(crate) fn skip_array(c: &mut ByteReader<'_>, what: &'static str) -> Decoded<u64> {
    let len = c.u64(what)?;
    let n = c.u32(what)?;
    if n == 0 {
        let n = c.count(len, VALUE_LEN, what)?;
        c.take(n * VALUE_LEN, what)?;
    } else {
        let n = c.count(u64::from(n), RUN_REF_LEN, what)?;
        c.take(n * RUN_REF_LEN, what)?;
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(count: u64) -> impl Strategy<Value = RunRef> {
        (any::<u64>(), any::<u64>(), any::<u32>()).prop_map(move |(generation, start, crc)| {
            RunRef {
                generation,
                start,
                count,
                crc,
            }
        })
    }

    /// An array in runs, or its values inline (as bytes).
    fn array() -> impl Strategy<Value = (ArrayRef, Vec<u8>)> {
        prop_oneof![
            prop::collection::vec((0u64..1_000).prop_flat_map(run), 1..5).prop_map(|runs| (
                ArrayRef {
                    len: runs.iter().map(|r| r.count).sum(),
                    runs,
                },
                Vec::new()
            )),
            prop::collection::vec(any::<u64>(), 0..40).prop_map(|v| (
                ArrayRef {
                    len: v.len() as u64,
                    runs: Vec::new(),
                },
                encode_values(&v)
            )),
        ]
    }

    proptest! {
        /// Arrays read back as written, in runs or inline; every shorter prefix is refused; a
        /// length its runs do not hold is refused.
        #[test]
        fn arrays_read_back_and_a_cut_or_a_wrong_length_is_refused(
            (a, values) in array(),
            more in prop::collection::vec(any::<u64>(), 0..50),
        ) {
            let mut out = Vec::new();
            put_array(&mut out, &a, &[&values]).unwrap();
            let mut c = ByteReader::new(&out);
            let read = read_array(&mut c, "a").unwrap();
            prop_assert_eq!(read.held(), a.clone());
            if let ArraySource::Values(v) = read {
                prop_assert_eq!(v, &values[..]);
            }
            prop_assert_eq!(c.pos(), out.len());
            let mut c = ByteReader::new(&out);
            prop_assert_eq!(skip_array(&mut c, "a").unwrap(), a.len);
            prop_assert_eq!(c.pos(), out.len());
            for cut in 0..out.len() {
                prop_assert!(read_array(&mut ByteReader::new(&out[..cut]), "a").is_err());
            }
            if a.in_runs() {
                let mut wrong = out.clone();
                wrong[0] ^= 1;
                prop_assert!(read_array(&mut ByteReader::new(&wrong), "a").is_err());
            }
            let bytes = encode_values(&more);
            let (x, y) = bytes.split_at(bytes.len() / 16 * 8);
            prop_assert_eq!(decode_values(&[x, y]), more);
        }
    }
}

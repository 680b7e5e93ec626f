//! A candidate event as the model sees it: the envelope fields, `data` as bytes.

/// A surface operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `"surfaceOp":"append"`.
    Append,
    /// `"surfaceOp":{"op":"replace","start":…,"end":…}`.
    Replace {
        /// The first shadowed seq.
        start: u64,
        /// The last shadowed seq.
        end: u64,
    },
}

/// One event offered to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its seq.
    pub seq: u64,
    /// Its type.
    pub ty: String,
    /// `data`, as JSON text.
    pub data: Vec<u8>,
    /// `"ignorable":true`.
    pub ignorable: bool,
    /// `surfaceOp`, when present.
    pub op: Option<Op>,
    /// `sourceEventSeqs`, when present.
    pub sources: Option<Vec<u64>>,
}

impl Candidate {
    /// A log-only event.
    pub fn log(seq: u64, ty: &str, data: &[u8]) -> Self {
        Self {
            seq,
            ty: ty.to_owned(),
            data: data.to_vec(),
            ignorable: false,
            op: None,
            sources: None,
        }
    }

    /// A surface event with its operation.
    pub fn surface(seq: u64, ty: &str, data: &[u8], op: Op) -> Self {
        Self {
            op: Some(op),
            ..Self::log(seq, ty, data)
        }
    }

    /// The same event citing `sources`.
    #[must_use]
    pub fn with_sources(mut self, sources: Vec<u64>) -> Self {
        self.sources = Some(sources);
        self
    }

    /// The DSH JSONL line of this event (keys in `Session.append` order, `time` 0).
    pub fn to_jsonl(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(b"{\"type\":");
        out.extend_from_slice(
            serde_json::Value::from(self.ty.as_str())
                .to_string()
                .as_bytes(),
        );
        out.extend_from_slice(format!(",\"seq\":{},\"time\":0,\"data\":", self.seq).as_bytes());
        out.extend_from_slice(&self.data);
        if let Some(sources) = &self.sources {
            let list: Vec<String> = sources.iter().map(u64::to_string).collect();
            out.extend_from_slice(format!(",\"sourceEventSeqs\":[{}]", list.join(",")).as_bytes());
        }
        match self.op {
            Some(Op::Append) => out.extend_from_slice(b",\"surfaceOp\":\"append\""),
            Some(Op::Replace { start, end }) => out.extend_from_slice(
                format!(",\"surfaceOp\":{{\"op\":\"replace\",\"start\":{start},\"end\":{end}}}")
                    .as_bytes(),
            ),
            None => {}
        }
        if self.ignorable {
            out.extend_from_slice(b",\"ignorable\":true");
        }
        out.push(b'}');
        out
    }
}

//! Stacks with values, in the formats profilers open: pprof's gzipped protocol buffer (`go
//! tool pprof`, its web view) and speedscope's JSON. A [`StackProfile`] is plain data (blame
//! builds it); each format is one function here.

use anyhow::Result;
use std::collections::HashMap;
use std::io::Write;

/// Values per call stack, of several kinds (`waste` bytes, `requested` bytes, objects...).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StackProfile {
    /// What it is (speedscope's title).
    pub name: String,
    /// Each kind of value: its name and unit (`bytes`, `count`).
    pub kinds: Vec<(String, String)>,
    /// The kind shown first (an index into `kinds`).
    pub default_kind: usize,
    /// Each stack, outermost frame first, with one value per kind.
    pub stacks: Vec<(Vec<String>, Vec<u64>)>,
}

/// Protocol buffer wire encoding, the few shapes pprof's `profile.proto` needs.
struct Proto(Vec<u8>);

impl Proto {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    /// A varint field (wire type 0).
    fn uint(&mut self, field: u32, v: u64) {
        self.varint(u64::from(field) << 3);
        self.varint(v);
    }

    /// A length-delimited field (wire type 2): bytes, a string, a message, a packed list.
    fn bytes(&mut self, field: u32, data: &[u8]) {
        self.varint((u64::from(field) << 3) | 2);
        self.varint(data.len() as u64);
        self.0.extend_from_slice(data);
    }

    fn packed(&mut self, field: u32, values: impl Iterator<Item = u64>) {
        let mut inner = Proto(Vec::new());
        for v in values {
            inner.varint(v);
        }
        self.bytes(field, &inner.0);
    }
}

/// The string table: index 0 is the empty string, as pprof requires.
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: HashMap<String, u64>,
}

impl Strings {
    fn of(&mut self, s: &str) -> u64 {
        if self.list.is_empty() {
            self.list.push(String::new());
            self.index.insert(String::new(), 0);
        }
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u64;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// The profile as pprof's `profile.proto`, gzipped (what `go tool pprof` reads): one sample
/// type per kind, one function and one location per distinct frame, one sample per stack
/// (its locations innermost first, as pprof orders them).
pub fn pprof(profile: &StackProfile) -> Result<Vec<u8>> {
    let mut strings = Strings::default();
    strings.of("");
    let mut out = Proto(Vec::new());
    for (kind, unit) in &profile.kinds {
        let mut vt = Proto(Vec::new());
        vt.uint(1, strings.of(kind));
        vt.uint(2, strings.of(unit));
        out.bytes(1, &vt.0);
    }
    // Function (and location) ids from 1, one per distinct frame name.
    let mut ids: HashMap<&str, u64> = HashMap::new();
    let mut frames: Vec<&str> = Vec::new();
    for (stack, values) in &profile.stacks {
        let mut locations = Vec::with_capacity(stack.len());
        for frame in stack.iter().rev() {
            let next = frames.len() as u64 + 1;
            let id = *ids.entry(frame.as_str()).or_insert_with(|| {
                frames.push(frame.as_str());
                next
            });
            locations.push(id);
        }
        let mut sample = Proto(Vec::new());
        sample.packed(1, locations.into_iter());
        sample.packed(2, values.iter().copied());
        out.bytes(2, &sample.0);
    }
    for (i, name) in frames.iter().enumerate() {
        let id = i as u64 + 1;
        let mut line = Proto(Vec::new());
        line.uint(1, id);
        let mut location = Proto(Vec::new());
        location.uint(1, id);
        location.bytes(4, &line.0);
        out.bytes(4, &location.0);
        let mut function = Proto(Vec::new());
        function.uint(1, id);
        function.uint(2, strings.of(name));
        function.uint(3, strings.of(name));
        out.bytes(5, &function.0);
    }
    let default = profile
        .kinds
        .get(profile.default_kind)
        .map(|(k, _)| strings.of(k));
    for s in &strings.list {
        out.bytes(6, s.as_bytes());
    }
    if let Some(d) = default {
        out.uint(14, d);
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&out.0)?;
    Ok(gz.finish()?)
}

/// The profile in speedscope's file format (`https://www.speedscope.app/file-format-schema.json`):
/// the frames shared, one sampled profile per kind (the default kind first), each stack a
/// sample weighted by its value (stacks of value 0 left out).
pub fn speedscope(profile: &StackProfile) -> Result<String> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut frames: Vec<serde_json::Value> = Vec::new();
    let stacks: Vec<Vec<usize>> = profile
        .stacks
        .iter()
        .map(|(stack, _)| {
            stack
                .iter()
                .map(|f| {
                    *ids.entry(f.as_str()).or_insert_with(|| {
                        frames.push(serde_json::json!({ "name": f }));
                        frames.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    let mut order: Vec<usize> = (0..profile.kinds.len()).collect();
    order.sort_by_key(|&k| k != profile.default_kind);
    let profiles: Vec<serde_json::Value> = order
        .into_iter()
        .map(|k| {
            let (kind, unit) = &profile.kinds[k];
            let (samples, weights): (Vec<&Vec<usize>>, Vec<u64>) = stacks
                .iter()
                .zip(&profile.stacks)
                .map(|(s, (_, values))| (s, values[k]))
                .filter(|&(_, w)| w > 0)
                .unzip();
            let total: u64 = weights.iter().sum();
            serde_json::json!({
                "type": "sampled",
                "name": format!("{}: {kind}", profile.name),
                "unit": if unit == "bytes" { "bytes" } else { "none" },
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            })
        })
        .collect();
    let doc = serde_json::json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": profile.name,
        "exporter": concat!("fragsim ", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": profiles,
    });
    Ok(serde_json::to_string(&doc)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_protocol_buffers_own() {
        // The protocol buffer documentation's examples: 1 -> 01, 150 -> 96 01, 300 -> ac 02.
        for (v, bytes) in [
            (1u64, vec![1u8]),
            (150, vec![0x96, 0x01]),
            (300, vec![0xac, 0x02]),
        ] {
            let mut p = Proto(Vec::new());
            p.varint(v);
            assert_eq!(p.0, bytes, "{v}");
        }
        // Field 1 = 150 as a varint field: 08 96 01 (the documentation's first message).
        let mut p = Proto(Vec::new());
        p.uint(1, 150);
        assert_eq!(p.0, [0x08, 0x96, 0x01]);
    }
}

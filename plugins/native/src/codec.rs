//! Value encodings: length-prefixed strings, cheap to write and to read back,
//! so a table load costs one key lookup and one copy of its metadata.

use crate::rustberg::catalog::types::{Error, Pointer, Properties};

fn put(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_pairs(out: &mut Vec<u8>, pairs: &Properties) {
    out.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
    for (k, v) in pairs {
        put(out, k);
        put(out, v);
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u32(&mut self) -> Result<u32, Error> {
        if self.0.len() < 4 {
            return Err(corrupt());
        }
        let (n, rest) = self.0.split_at(4);
        self.0 = rest;
        Ok(u32::from_le_bytes(n.try_into().expect("four bytes")))
    }

    fn string(&mut self) -> Result<String, Error> {
        let len = self.u32()? as usize;
        if self.0.len() < len {
            return Err(corrupt());
        }
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        String::from_utf8(s.to_vec()).map_err(|_| corrupt())
    }

    fn pairs(&mut self) -> Result<Properties, Error> {
        let n = self.u32()?;
        (0..n).map(|_| Ok((self.string()?, self.string()?))).collect()
    }
}

fn corrupt() -> Error {
    Error::Internal("a stored value is corrupt".into())
}

/// Encodes namespace properties.
pub fn encode_properties(props: &Properties) -> Vec<u8> {
    let mut out = Vec::new();
    put_pairs(&mut out, props);
    out
}

/// Decodes namespace properties.
pub fn decode_properties(bytes: &[u8]) -> Result<Properties, Error> {
    Reader(bytes).pairs()
}

/// Encodes a table or view pointer (storage credentials are never stored).
pub fn encode_pointer(p: &Pointer) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.metadata_location.len() + p.metadata_json.len() + 16);
    put(&mut out, &p.metadata_location);
    put(&mut out, &p.metadata_json);
    put_pairs(&mut out, &p.config);
    out
}

/// Decodes a table or view pointer.
pub fn decode_pointer(bytes: &[u8]) -> Result<Pointer, Error> {
    let mut r = Reader(bytes);
    Ok(Pointer {
        metadata_location: r.string()?,
        metadata_json: r.string()?,
        config: r.pairs()?,
        storage_credentials: String::new(),
    })
}

//! The key layout of the native catalog inside its kv key space.
//!
//! Every key starts with a kind byte and the depth of the namespace it names or
//! lives in, so the direct children of a namespace form one contiguous, sorted
//! range: listing a page is one range scan whatever the size of the catalog.
//!
//! - namespace `a.b`      → `n` 2 `a` 0 `b`
//! - table `a.b.t`        → `t` 2 `a` 0 `b` 0 `t`
//! - view  `a.b.v`        → `v` 2 `a` 0 `b` 0 `v`
//!
//! Names may not contain the 0 byte, so the encoding is unambiguous.

use crate::rustberg::catalog::types::Error;

/// The kind byte of a namespace key.
pub const NAMESPACE: u8 = b'n';
/// The kind byte of a table key.
pub const TABLE: u8 = b't';
/// The kind byte of a view key.
pub const VIEW: u8 = b'v';

/// Checks that a name can be stored.
pub fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::BadRequest("names must not be empty".into()));
    }
    if name.as_bytes().contains(&0) {
        return Err(Error::BadRequest(format!("name {name:?} contains a NUL byte")));
    }
    Ok(())
}

fn depth_byte(depth: usize) -> Result<u8, Error> {
    u8::try_from(depth)
        .map_err(|_| Error::BadRequest(format!("namespaces may be at most 255 levels deep, not {depth}")))
}

/// `kind depth p1 0 p2 0 … pn`, the shared head of every key.
fn head(kind: u8, depth: usize, parts: &[String]) -> Result<Vec<u8>, Error> {
    let mut key = vec![kind, depth_byte(depth)?];
    for (i, part) in parts.iter().enumerate() {
        check_name(part)?;
        if i > 0 {
            key.push(0);
        }
        key.extend_from_slice(part.as_bytes());
    }
    Ok(key)
}

/// The key of a namespace.
pub fn namespace(ns: &[String]) -> Result<Vec<u8>, Error> {
    if ns.is_empty() {
        return Err(Error::BadRequest("the namespace must have at least one level".into()));
    }
    head(NAMESPACE, ns.len(), ns)
}

/// The prefix shared by the keys of `parent`'s direct child namespaces.
pub fn child_namespaces(parent: &[String]) -> Result<Vec<u8>, Error> {
    let mut key = head(NAMESPACE, parent.len() + 1, parent)?;
    if !parent.is_empty() {
        key.push(0);
    }
    Ok(key)
}

/// The prefix shared by the keys of the tables (or views, by `kind`) in `ns`.
pub fn members(kind: u8, ns: &[String]) -> Result<Vec<u8>, Error> {
    if ns.is_empty() {
        return Err(Error::BadRequest("tables and views live inside a namespace".into()));
    }
    let mut key = head(kind, ns.len(), ns)?;
    key.push(0);
    Ok(key)
}

/// The key of a table or view.
pub fn member(kind: u8, ns: &[String], name: &str) -> Result<Vec<u8>, Error> {
    check_name(name)?;
    let mut key = members(kind, ns)?;
    key.extend_from_slice(name.as_bytes());
    Ok(key)
}

/// The first key after every key that starts with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    end
}

/// Where a listing under `prefix` resumes after the item named `cursor`: the
/// smallest key greater than every key for that name.
pub fn resume_after(prefix: &[u8], cursor: &str) -> Vec<u8> {
    let mut start = prefix.to_vec();
    start.extend_from_slice(cursor.as_bytes());
    start.push(0);
    start
}

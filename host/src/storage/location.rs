//! The one validated location type. Every location the server stores, reads,
//! writes, puts in a credential policy or purges is a [`Location`] first.
//!
//! A location is normalized once: percent-decoded exactly once, one trailing slash
//! dropped, and then refused if any path segment is empty, `.` or `..`, or if it
//! holds a wildcard (`*?[]{}$`), a control character or a `%` left after decoding
//! (double encoding). Because no `%` survives, parsing a stored location again
//! gives the same location: there is no second decoding to disagree with.

use std::fmt;

/// The storage schemes a warehouse can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    File,
    S3,
}

impl Scheme {
    fn prefix(self) -> &'static str {
        match self {
            Scheme::File => "file://",
            Scheme::S3 => "s3://",
        }
    }
}

/// Why a string is not a usable location (each rule says itself).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    #[error("only file:/// and s3:// locations are supported")]
    Scheme,
    #[error("an s3:// location needs a bucket")]
    NoBucket,
    #[error("a file:// location needs an absolute path (file:///…)")]
    NotAbsolute,
    #[error("its percent-encoding does not decode to UTF-8")]
    Encoding,
    #[error("it holds a % after percent-decoding (locations are decoded once)")]
    DoubleEncoded,
    #[error("it holds an empty path segment")]
    EmptySegment,
    #[error("it holds a . or .. path segment")]
    DotSegment,
    #[error("it holds the wildcard character {0:?}")]
    Wildcard(char),
    #[error("it holds a control character")]
    Control,
    #[error("it is not in the warehouse {0}")]
    OutsideWarehouse(String),
    #[error("it is the root of the warehouse {0}")]
    WarehouseRoot(String),
    #[error("it is inside the warehouse {0} of another catalog")]
    OtherWarehouse(String),
    #[error("it is not strictly under {0}")]
    NotUnder(String),
}

/// Characters that widen a pattern in a policy or a listing.
const WILDCARDS: &[char] = &['*', '?', '[', ']', '{', '}', '$'];

/// A normalized, validated location: a scheme, a bucket (empty for `file://`) and
/// path segments, none of them empty, `.`, `..` or holding a wildcard.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    scheme: Scheme,
    bucket: String,
    segments: Vec<String>,
}

impl Location {
    /// Parses and normalizes a location as a client or a metadata file wrote it.
    pub fn parse(raw: &str) -> Result<Location, LocationError> {
        let decoded = percent_encoding::percent_decode_str(raw).decode_utf8().map_err(|_| LocationError::Encoding)?;
        if decoded.contains('%') {
            return Err(LocationError::DoubleEncoded);
        }
        if decoded.chars().any(char::is_control) {
            return Err(LocationError::Control);
        }
        if let Some(c) = decoded.chars().find(|c| WILDCARDS.contains(c)) {
            return Err(LocationError::Wildcard(c));
        }
        let (scheme, rest) = if let Some(rest) = decoded.strip_prefix("s3://") {
            (Scheme::S3, rest)
        } else if let Some(rest) = decoded.strip_prefix("file://") {
            (Scheme::File, rest)
        } else if let Some(rest) = decoded.strip_prefix("file:").filter(|rest| rest.starts_with('/')) {
            // `file:/data/wh` is `file:///data/wh` as Java (Hadoop's Path) writes it.
            (Scheme::File, rest)
        } else {
            return Err(LocationError::Scheme);
        };
        let (bucket, path) = match scheme {
            Scheme::S3 => {
                let (bucket, path) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(LocationError::NoBucket);
                }
                (bucket, path)
            }
            Scheme::File => ("", rest.strip_prefix('/').ok_or(LocationError::NotAbsolute)?),
        };
        let path = path.strip_suffix('/').unwrap_or(path);
        let mut segments = Vec::new();
        if !path.is_empty() {
            for segment in path.split('/') {
                match segment {
                    "" => return Err(LocationError::EmptySegment),
                    "." | ".." => return Err(LocationError::DotSegment),
                    _ => segments.push(segment.to_string()),
                }
            }
        }
        Ok(Location { scheme, bucket: bucket.to_string(), segments })
    }

    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The bucket of an `s3://` location (empty for `file://`).
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The object key prefix of this location inside its bucket (its path without a
    /// leading slash; for `file://` the absolute path without its leading slash).
    pub fn key(&self) -> String {
        self.segments.join("/")
    }

    /// This location with one more path segment. `name` is escaped (see
    /// [`path_segment`]), so any name gives exactly one valid segment.
    pub fn child(&self, name: &str) -> Location {
        let mut child = self.clone();
        child.segments.push(path_segment(name));
        child
    }

    /// Whether this location is `other` or lies beneath it (whole segments only).
    pub fn is_within(&self, other: &Location) -> bool {
        self.scheme == other.scheme
            && self.bucket == other.bucket
            && self.segments.len() >= other.segments.len()
            && self.segments[..other.segments.len()] == other.segments[..]
    }

    /// Whether this location lies beneath `other` and is not `other` itself.
    pub fn is_strictly_within(&self, other: &Location) -> bool {
        self.segments.len() > other.segments.len() && self.is_within(other)
    }

    /// Every location strictly above this one, the shortest first (`s3://bucket`
    /// and `file://` included).
    pub fn ancestors(&self) -> impl Iterator<Item = Location> + '_ {
        (0..self.segments.len()).map(|n| Location {
            scheme: self.scheme,
            bucket: self.bucket.clone(),
            segments: self.segments[..n].to_vec(),
        })
    }

    /// Whether the file `path` (as a metadata file names it) lies under this location.
    /// File paths are compared literally, never decoded: a `%` in an object key is
    /// that character. Empty, `.` and `..` segments never count as inside.
    pub fn contains_path(&self, path: &str) -> bool {
        let Some(rest) = self.strip_from(path).and_then(|r| r.strip_prefix('/')) else {
            return false;
        };
        !rest.is_empty()
            && !rest.chars().any(char::is_control)
            && rest.split('/').all(|segment| !matches!(segment, "" | "." | ".."))
    }

    /// What follows this location in `path`, if `path` starts with it as written,
    /// compared piece by piece: every file a commit writes is checked, and formatting
    /// the location for each check was a string built and dropped.
    fn strip_from<'a>(&self, path: &'a str) -> Option<&'a str> {
        let mut pieces = self.written();
        let scheme = pieces.next()?;
        let path = match self.scheme {
            // A file written as `file:/…` (Java's spelling) is the same file as `file:///…`.
            Scheme::File => path.strip_prefix(scheme).or_else(|| path.strip_prefix("file:")),
            Scheme::S3 => path.strip_prefix(scheme),
        }?;
        pieces.try_fold(path, |rest, piece| rest.strip_prefix(piece))
    }

    /// The pieces of this location as it is written, in order: what `Display` writes
    /// and what [`Self::strip_from`] compares, so the two cannot differ.
    fn written(&self) -> impl Iterator<Item = &str> {
        let root = (self.segments.is_empty() && self.scheme == Scheme::File).then_some("/");
        [self.scheme.prefix(), self.bucket.as_str()]
            .into_iter()
            .chain(self.segments.iter().flat_map(|segment| ["/", segment.as_str()]))
            .chain(root)
    }

    /// This location as a metadata file records it: normalized, with the file scheme
    /// spelled as `asked` spells it. Java (Hadoop's `Path`, `File::toURI`) writes
    /// `file:/tmp/t`, and Iceberg's Java client compares the location it gets back with
    /// the one it asked for; everything else (claims, policies, keys) uses the one form
    /// `Display` writes.
    pub fn recorded_as(&self, asked: Option<&str>) -> String {
        let written = self.to_string();
        let java = asked.is_some_and(|raw| raw.starts_with("file:/") && !raw.starts_with("file://"));
        match (self.scheme, java) {
            (Scheme::File, true) => format!("file:{}", &written["file://".len()..]),
            _ => written,
        }
    }

    /// Fails unless this location is strictly under `parent`.
    pub fn require_strictly_within(&self, parent: &Location) -> Result<(), LocationError> {
        if self.is_strictly_within(parent) {
            Ok(())
        } else {
            Err(LocationError::NotUnder(parent.to_string()))
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.written().try_for_each(|piece| f.write_str(piece))
    }
}

/// Whole S3 buckets whose names match a pattern with one `*`, e.g. `*--table-s3`:
/// the warehouse of a store that gives every table a bucket of its own (S3 Tables).
/// The pattern lives only in configuration; every location matched against it is a
/// validated [`Location`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketPattern {
    before: String,
    after: String,
}

impl BucketPattern {
    /// Parses `s3://<pattern>`: one `*` in the bucket name, nothing after the bucket.
    /// `None` when `raw` holds no `*` (it is a location, not a pattern).
    pub fn parse(raw: &str) -> Option<Result<Self, String>> {
        let bucket = raw.strip_prefix("s3://")?.strip_suffix('/').unwrap_or(raw.strip_prefix("s3://")?);
        if !bucket.contains('*') {
            return None;
        }
        let valid = |part: &str| part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-.".contains(c));
        Some(match bucket.split_once('*') {
            Some((before, after)) if valid(before) && valid(after) && !after.is_empty() => {
                Ok(BucketPattern { before: before.into(), after: after.into() })
            }
            _ => Err(format!(
                "{raw:?}: a bucket pattern is s3://<prefix>*<suffix> with one * and a suffix, naming whole buckets                  (e.g. s3://*--table-s3)"
            )),
        })
    }

    /// Whether `bucket` matches (the `*` stands for at least one character).
    pub fn matches(&self, bucket: &str) -> bool {
        bucket.len() > self.before.len() + self.after.len()
            && bucket.starts_with(&self.before)
            && bucket.ends_with(&self.after)
    }
}

impl fmt::Display for BucketPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}*{}", self.before, self.after)
    }
}

/// What a warehouse, a credential prefix or a scoped FileIO reaches: everything under
/// one location, or whole buckets matching a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    Under(Location),
    Buckets(BucketPattern),
}

impl Reach {
    /// Parses a configured warehouse or prefix: a bucket pattern, else a location.
    pub fn parse(raw: &str) -> Result<Reach, String> {
        match BucketPattern::parse(raw) {
            Some(pattern) => pattern.map(Reach::Buckets),
            None => Location::parse(raw).map(Reach::Under).map_err(|e| format!("{raw:?}: {e}")),
        }
    }

    /// The one location it is, for a reach that is one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            Reach::Under(location) => Some(location),
            Reach::Buckets(_) => None,
        }
    }

    /// Whether `location` lies in it (a whole matching bucket, or anything in one).
    pub fn contains(&self, location: &Location) -> bool {
        match self {
            Reach::Under(root) => location.is_within(root),
            Reach::Buckets(pattern) => location.scheme() == Scheme::S3 && pattern.matches(location.bucket()),
        }
    }

    /// Whether the file `path` (as a metadata file names it) lies in it; see
    /// [`Location::contains_path`].
    pub fn contains_path(&self, path: &str) -> bool {
        match self {
            Reach::Under(root) => root.contains_path(path),
            Reach::Buckets(pattern) => {
                let bucket = path.strip_prefix("s3://").and_then(|rest| rest.split('/').next()).unwrap_or_default();
                pattern.matches(bucket)
                    && Location::parse(&format!("s3://{bucket}")).is_ok_and(|root| root.contains_path(path))
            }
        }
    }
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reach::Under(location) => location.fmt(f),
            Reach::Buckets(pattern) => pattern.fmt(f),
        }
    }
}

/// A namespace, table or view name as one path segment: names made of ASCII
/// letters, digits, `_`, `-` and `.` stay as they are (except `.` and `..`); any
/// other byte becomes `~` and two hex digits. `~` is never kept, so two different
/// names never share a segment.
pub fn path_segment(name: &str) -> String {
    let keep = |b: u8| b.is_ascii_alphanumeric() || b"_-.".contains(&b);
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if keep(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("~{b:02x}"));
        }
    }
    match out.as_str() {
        "" => "~".into(),
        "." => "~2e".into(),
        ".." => "~2e~2e".into(),
        _ => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(raw: &str) -> LocationError {
        Location::parse(raw).unwrap_err()
    }

    #[test]
    fn normalizes_once() {
        let l = Location::parse("s3://b/wh/db/t/").unwrap();
        assert_eq!(l.to_string(), "s3://b/wh/db/t");
        assert_eq!((l.bucket(), l.key().as_str()), ("b", "wh/db/t"));
        assert_eq!(Location::parse("s3://b/wh/a%20b").unwrap().to_string(), "s3://b/wh/a b");
        assert_eq!(Location::parse("file:///data/wh").unwrap().to_string(), "file:///data/wh");
        // Java's spelling of the same location, and of a file under it.
        let java = Location::parse("file:/data/wh").unwrap();
        assert_eq!(java, Location::parse("file:///data/wh").unwrap());
        assert!(java.contains_path("file:/data/wh/metadata/snap-1.avro"));
        assert!(java.contains_path("file:///data/wh/metadata/snap-1.avro"));
        assert!(!java.contains_path("file:/data/wh2/x.avro"));
        assert!(!java.contains_path("file:data/wh/x.avro"));
        assert!(!java.contains_path("file://host/data/wh/x.avro"));
        // Recorded in the spelling the client asked for, normalized all the same.
        assert_eq!(java.recorded_as(Some("file:/data/wh/")), "file:/data/wh");
        assert_eq!(java.recorded_as(Some("file:///data/wh")), "file:///data/wh");
        assert_eq!(java.recorded_as(None), "file:///data/wh");
        assert_eq!(l.recorded_as(Some("file:/x")), "s3://b/wh/db/t");
        // A stored location parses to itself.
        let l = Location::parse("file:///data/wh/a%20b").unwrap();
        assert_eq!(Location::parse(&l.to_string()).unwrap(), l);
    }

    #[test]
    fn refuses_each_rule() {
        assert_eq!(err("s3://b/wh/../x"), LocationError::DotSegment);
        assert_eq!(err("s3://b/wh/%2e%2e/x"), LocationError::DotSegment);
        assert_eq!(err("s3://b/wh/%2E/x"), LocationError::DotSegment);
        assert_eq!(err("s3://b/wh/%252e%252e/x"), LocationError::DoubleEncoded);
        assert_eq!(err("s3://b/wh//x"), LocationError::EmptySegment);
        assert_eq!(err("s3://b/wh/x//"), LocationError::EmptySegment);
        assert_eq!(err("s3://b/wh/*"), LocationError::Wildcard('*'));
        assert_eq!(err("s3://b/wh/%2A"), LocationError::Wildcard('*'));
        for c in ['?', '[', ']', '{', '}', '$'] {
            assert_eq!(err(&format!("s3://b/wh/x{c}")), LocationError::Wildcard(c));
        }
        assert_eq!(err("s3://b/wh/a%0Ab"), LocationError::Control);
        assert_eq!(err("s3:///wh"), LocationError::NoBucket);
        assert_eq!(err("file://relative/x"), LocationError::NotAbsolute);
        assert_eq!(err("gs://b/wh"), LocationError::Scheme);
        assert_eq!(err("s3://b/%ff"), LocationError::Encoding);
    }

    #[test]
    fn relations_use_whole_segments() {
        let wh = Location::parse("s3://b/wh").unwrap();
        let t = Location::parse("s3://b/wh/db/t").unwrap();
        assert!(t.is_strictly_within(&wh) && t.is_within(&t) && !t.is_strictly_within(&t));
        assert!(!Location::parse("s3://b/wh2/t").unwrap().is_within(&wh));
        assert!(!Location::parse("s3://c/wh/t").unwrap().is_within(&wh));
        assert!(!Location::parse("file:///b/wh/t").unwrap().is_within(&wh));
        assert!(t.contains_path("s3://b/wh/db/t/data/k=a%20b/f.parquet"));
        for outside in [
            "s3://b/wh/db/t",
            "s3://b/wh/db/t/",
            "s3://b/wh/db/t2/f",
            "s3://b2/wh/db/t/f",
            "s3://b/wh/d/t/f",
            "s3:/b/wh/db/t/f",
            "file://b/wh/db/t/f",
            "s3://b/wh/db/t/../u/f",
            "s3://b/wh/db/t//f",
        ] {
            assert!(!t.contains_path(outside), "{outside}");
        }
        let dir = Location::parse("file:///srv/wh/t").unwrap();
        assert!(dir.contains_path("file:///srv/wh/t/metadata/00001-x.metadata.json"));
        for outside in ["file:///srv/wh/t", "file:///srv/wh/tt/f", "file://srv/wh/t/f", "file:///srv/w/t/f"] {
            assert!(!dir.contains_path(outside), "{outside}");
        }
        let above: Vec<String> = t.ancestors().map(|a| a.to_string()).collect();
        assert_eq!(above, ["s3://b", "s3://b/wh", "s3://b/wh/db"]);
    }

    /// `contains_path` compares a path with the location's pieces in place; it must
    /// answer exactly as comparing with the location formatted, the file root included.
    #[test]
    fn contains_path_answers_as_the_written_location() {
        let paths = [
            "s3://b/f",
            "s3://b//f",
            "s3://b/wh/t/f",
            "s3://b/wh/t",
            "s3://b/wh/tt/f",
            "s3://b2/f",
            "file:///f",
            "file:////f",
            "file:///srv/wh/t/f",
            "file:///srv/wh/t",
            "file:///srv/wh/tt/f",
            "file://srv/wh/t/f",
        ];
        for location in ["s3://b", "s3://b/wh/t", "file:///", "file:///srv/wh/t"] {
            let location = Location::parse(location).unwrap();
            let written = location.to_string();
            for path in paths {
                let formatted =
                    path.strip_prefix(written.as_str()).and_then(|r| r.strip_prefix('/')).is_some_and(|rest| {
                        !rest.is_empty() && rest.split('/').all(|segment| !matches!(segment, "" | "." | ".."))
                    });
                assert_eq!(location.contains_path(path), formatted, "{location} and {path}");
            }
        }
    }

    #[test]
    fn a_bucket_pattern_reaches_whole_matching_buckets_only() {
        let reach = Reach::parse("s3://*--table-s3").unwrap();
        assert_eq!(reach.to_string(), "s3://*--table-s3");
        let table = Location::parse("s3://0f3a--table-s3").unwrap();
        assert!(reach.contains(&table) && reach.contains(&table.child("metadata")));
        for other in ["s3://lake/0f3a--table-s3", "s3://--table-s3", "s3://0f3a--table-s3x", "file:///0f3a--table-s3"] {
            assert!(!reach.contains(&Location::parse(other).unwrap()), "{other}");
        }
        assert!(reach.contains_path("s3://0f3a--table-s3/metadata/00000-x.metadata.json"));
        for outside in ["s3://0f3a--table-s3", "s3://0f3a--table-s3/../x", "s3://lake/f", "s3://x--table-s3//f"] {
            assert!(!reach.contains_path(outside), "{outside}");
        }
        for bad in ["s3://*", "s3://a*b*--table-s3", "s3://*--table-s3/path", "s3://*--Table"] {
            assert!(Reach::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Reach::parse("s3://lake/wh").unwrap(), Reach::Under(Location::parse("s3://lake/wh").unwrap()));
    }

    #[test]
    fn segments_are_injective_and_valid() {
        let names = ["a b", "a_b", "a~20b", ".", "..", "", "x/y", "*", "é"];
        let segments: std::collections::HashSet<String> = names.iter().map(|n| path_segment(n)).collect();
        assert_eq!(segments.len(), names.len(), "{segments:?}");
        let wh = Location::parse("file:///wh").unwrap();
        for name in names {
            let child = wh.child(name);
            assert_eq!(Location::parse(&child.to_string()).unwrap(), child, "{name:?}");
        }
    }
}

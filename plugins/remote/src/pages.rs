//! Paging over a remote service whose listings come in pages fetched by an opaque
//! token (Glue's `NextToken`, S3 Tables' `continuationToken`, an Iceberg REST
//! catalog's `next-page-token`), for backend components.
//!
//! A cursor is `<offset>:<token>`: "the page this token fetched, from this offset".
//! The last row of a remote page carries the remote's next token (offset 0) instead,
//! so an unfiltered walk costs one remote request per page. A remote page must come
//! back the same for the same token (a fixed page size), so an offset finds its row.

/// Splits a cursor into the remote token that fetched a page and the offset in it.
pub fn parse_cursor(cursor: Option<&str>) -> (Option<String>, usize) {
    match cursor.and_then(|c| c.split_once(':')) {
        Some((offset, token)) => ((!token.is_empty()).then(|| token.to_string()), offset.parse().unwrap_or(0)),
        None => (None, 0),
    }
}

/// Walks the remote's pages from `after`, keeping the rows `keep` names, until `limit`
/// are found or the remote has no more. Each kept row comes with the cursor for the
/// position after it; true when nothing follows. Rows are sorted by name within each
/// remote page (across pages, the remote's order); rows `keep` does not name sort
/// first and are skipped.
pub fn walk<Row, E>(
    after: Option<&str>,
    limit: u32,
    fetch: impl Fn(Option<&str>) -> Result<(Vec<Row>, Option<String>), E>,
    keep: impl Fn(&Row) -> Option<String>,
) -> Result<(Vec<(String, String)>, bool), E> {
    let (mut token, mut offset) = parse_cursor(after);
    let limit = limit.max(1) as usize;
    let mut found = Vec::new();
    loop {
        let (rows, next) = fetch(token.as_deref())?;
        let next = next.filter(|n| !n.is_empty());
        let mut names: Vec<Option<String>> = rows.iter().map(&keep).collect();
        names.sort();
        let total = names.len();
        for (i, kept) in names.into_iter().enumerate().skip(offset) {
            if found.len() == limit {
                return Ok((found, false));
            }
            if let Some(name) = kept {
                let cursor = match i + 1 == total {
                    true => format!("0:{}", next.clone().unwrap_or_default()),
                    false => format!("{}:{}", i + 1, token.clone().unwrap_or_default()),
                };
                found.push((name, cursor));
            }
        }
        match next {
            None => return Ok((found, true)),
            Some(_) if found.len() == limit => return Ok((found, false)),
            Some(next) => (token, offset) = (Some(next), 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three remote pages of two rows; one row of every page is filtered out.
    fn fetch(token: Option<&str>) -> Result<(Vec<&'static str>, Option<String>), ()> {
        Ok(match token {
            None => (vec!["b", "-a"], Some("p2".into())),
            Some("p2") => (vec!["-c", "d"], Some("p3".into())),
            _ => (vec!["f", "-e"], None),
        })
    }

    fn keep(row: &&str) -> Option<String> {
        (!row.starts_with('-')).then(|| row.to_string())
    }

    #[test]
    fn a_walk_resumes_where_its_cursor_says() {
        let mut after: Option<String> = None;
        let mut seen = vec![];
        loop {
            let (rows, done) = walk(after.as_deref(), 1, fetch, keep).unwrap();
            seen.extend(rows.iter().map(|(name, _)| name.clone()));
            if done || rows.is_empty() {
                break;
            }
            after = rows.last().map(|(_, cursor)| cursor.clone());
        }
        assert_eq!(seen, ["b", "d", "f"]);
        let (all, done) = walk(None, 10, fetch, keep).unwrap();
        assert!(done);
        assert_eq!(all.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["b", "d", "f"]);
    }

    #[test]
    fn cursors_parse_back() {
        assert_eq!(parse_cursor(Some("3:tok")), (Some("tok".into()), 3));
        assert_eq!(parse_cursor(Some("0:")), (None, 0));
        assert_eq!(parse_cursor(None), (None, 0));
    }
}

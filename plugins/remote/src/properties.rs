//! A namespace property update applied to a remote's stored properties, for backends
//! whose store keeps a namespace's properties as one record (Glue, the Hive Metastore):
//! read them, apply the update, write them back.

/// Removes `removals` and sets `updates` in `props`; answers the keys removed and the
/// keys asked to be removed that were not there.
pub fn apply(
    props: &mut Vec<(String, String)>,
    removals: Vec<String>,
    updates: &[(String, String)],
) -> (Vec<String>, Vec<String>) {
    let (removed, missing): (Vec<String>, Vec<String>) =
        removals.into_iter().partition(|k| props.iter().any(|(key, _)| key == k));
    props.retain(|(k, _)| !removed.contains(k) && !updates.iter().any(|(u, _)| u == k));
    props.extend(updates.iter().cloned());
    (removed, missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_removes_then_sets() {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        let mut props = vec![pair("a", "1"), pair("b", "2")];
        let (removed, missing) = apply(&mut props, vec!["a".into(), "zz".into()], &[pair("b", "3"), pair("c", "4")]);
        assert_eq!((removed, missing), (vec!["a".to_string()], vec!["zz".to_string()]));
        assert_eq!(props, [pair("b", "3"), pair("c", "4")]);
    }
}

//! The lists the docs keep of things the code defines are checked against the code, both
//! ways: every config key (docs/configuration.md against what the config file accepts),
//! every management route (docs/authorization.md against the router), every feature of
//! the contract and every grant (docs/plugins.md against the WIT and the mount config),
//! and each built-in backend's default grants. A key added without a line, or a line left
//! behind by a key removed, fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rustberg::config::{BuiltinBackend, Config, MountGrant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The words in backticks in `text`, in order.
fn quoted(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// The rows of the first table after the line `heading` (or of the table whose header
/// row `heading` is), as their cells.
fn table_after(doc: &str, heading: &str) -> Vec<Vec<String>> {
    let section = doc.split_once(&format!("\n{heading}\n")).unwrap_or_else(|| panic!("no heading {heading:?}")).1;
    let rows = section.lines().skip_while(|line| !line.starts_with('|')).take_while(|line| line.starts_with('|'));
    let header = usize::from(!heading.starts_with('|'));
    rows.skip(header)
        .filter(|row| !row.chars().all(|c| "|-: ".contains(c)))
        .map(|row| {
            // `\|` is a bar inside a cell.
            let row = row.replace("\\|", "\u{0}");
            row.trim_matches('|').split('|').map(|cell| cell.trim().replace('\u{0}', "|")).collect()
        })
        .collect()
}

/// The names a table's first column gives, each in backticks: "`a`, `b`" is two.
fn first_column(doc: &str, heading: &str) -> BTreeSet<String> {
    table_after(doc, heading).iter().flat_map(|row| quoted(&row[0])).collect()
}

/// The keys the config file accepts at `header` (a table header such as `[server]`, or
/// "" for the top level): serde's own list, from the error an unknown key gets.
fn accepted_keys(header: &str) -> BTreeSet<String> {
    let text = format!("{header}\nnot_a_key_anywhere = 1\n");
    let error = toml::from_str::<Config>(&text).expect_err("an unknown key is refused").to_string();
    let expected =
        error.split_once("expected ").unwrap_or_else(|| panic!("{header}: not an unknown-key error: {error}")).1;
    quoted(expected.lines().next().unwrap()).into_iter().collect()
}

/// Each documented section (`## `[server]``, `### `[auth.oidc]``, …) with the keys its
/// table lists, the section's path written as a TOML header (`<name>` as `x`).
fn documented_sections(doc: &str) -> Vec<(String, BTreeSet<String>)> {
    doc.lines()
        .filter(|line| line.starts_with("## `[") || line.starts_with("### `["))
        .map(|heading| {
            let path = quoted(heading)[0].replace("<name>", "x");
            (path, first_column(doc, heading))
        })
        .collect()
}

#[test]
fn every_config_key_is_documented_and_every_documented_key_exists() {
    let doc = read("docs/configuration.md");
    let sections = documented_sections(&doc);
    assert!(sections.len() >= 10, "found only {} sections", sections.len());
    let name_of = |path: &str| path.trim_matches(['[', ']']).to_string();

    let top: BTreeSet<String> =
        sections.iter().map(|(path, _)| name_of(path).split('.').next().unwrap().to_string()).collect();
    assert_eq!(top, accepted_keys(""), "the top-level sections of docs/configuration.md");

    for (path, listed) in &sections {
        // A section's subsections are documented under their own headings.
        let inner = format!("{}.", name_of(path));
        let subsections = sections.iter().filter_map(|(other, _)| {
            let rest = name_of(other).strip_prefix(&inner)?.to_string();
            (!rest.contains('.')).then_some(rest)
        });
        let documented: BTreeSet<String> = listed.iter().cloned().chain(subsections).collect();
        // `[auth.principals.x]`'s parent `principals` is a map, not a documented table.
        let documented: BTreeSet<String> = documented.into_iter().filter(|k| k != "principals").collect();
        let mut accepted = accepted_keys(path);
        accepted.remove("principals");
        assert_eq!(documented, accepted, "the keys of {path} in docs/configuration.md");
    }
}

#[test]
fn the_default_grants_of_each_built_in_are_the_documented_ones() {
    let doc = read("docs/configuration.md");
    let row = table_after(&doc, "## `[mount.<name>]`")
        .into_iter()
        .find(|row| row[0] == "`grants`")
        .expect("[mount.<name>] documents `grants`");
    // "`native`: `["kv"]`; `rest`, `glue`, `s3tables`: `["http"]`; …; a file: `["kv"]`"
    let mut documented = Vec::new();
    for clause in row[1].split("; ") {
        let (who, grants) = clause.split_once(": ").unwrap_or_else(|| panic!("not `backend: grants`: {clause}"));
        let grants: Vec<String> = serde_json::from_str(&quoted(grants)[0]).unwrap();
        let who = if who == "a file" { vec!["a file".to_string()] } else { quoted(who) };
        documented.extend(who.into_iter().map(|w| (w, grants.clone())));
    }
    let mut actual: Vec<(String, Vec<String>)> = BuiltinBackend::ALL
        .into_iter()
        .map(|b| (b.name().to_string(), b.default_grants().iter().map(|g| g.name().to_string()).collect()))
        .collect();
    actual.push(("a file".into(), rustberg::config::DROP_IN_GRANTS.iter().map(|g| g.name().to_string()).collect()));
    documented.sort();
    actual.sort();
    assert_eq!(documented, actual, "the `grants` defaults in docs/configuration.md");
}

#[test]
fn the_grants_and_the_features_in_the_plugin_guide_are_the_contracts() {
    let doc = read("docs/plugins.md");
    let grants: BTreeSet<String> = MountGrant::ALL.iter().map(|g| g.name().to_string()).collect();
    let documented: BTreeSet<String> = table_after(&doc, "| grant | import | what it reaches |")
        .iter()
        .map(|row| quoted(&row[0])[0].clone())
        .collect();
    assert_eq!(documented, grants, "the grants table of docs/plugins.md");

    // The contract's features are the WIT's `flags features`.
    let wit = read("wit/catalog.wit");
    let flags = wit.split_once("flags features {").expect("wit/catalog.wit has `flags features`").1;
    let flags = flags.split_once('}').unwrap().0;
    let features: BTreeSet<String> = flags
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .map(|line| line.trim_end_matches(',').to_string())
        .collect();
    assert!(features.contains("writes"), "read no features from the WIT: {features:?}");
    let documented = first_column(&doc, "| feature | what the backend does | what the host then serves or does |");
    assert_eq!(documented, features, "the features table of docs/plugins.md");
}

/// `(METHOD, /path)` for every route of the management API, read from its router.
fn management_routes() -> BTreeSet<(String, String)> {
    let source = read("host/src/api/management.rs");
    let mut routes = BTreeSet::new();
    for call in source.split(".route(\"").skip(1) {
        let (path, handlers) = call.split_once('"').unwrap();
        let handlers = handlers.split_once('\n').unwrap().0;
        for method in ["get", "post", "put", "patch", "delete"] {
            if handlers.contains(&format!("{method}(")) {
                routes.insert((method.to_uppercase(), path.to_string()));
            }
        }
    }
    routes
}

#[test]
fn every_management_route_is_documented_and_every_documented_route_is_served() {
    let doc = read("docs/authorization.md");
    let documented: BTreeSet<(String, String)> = table_after(&doc, "| route | who | what |")
        .iter()
        .map(|row| {
            let route = &quoted(&row[0])[0];
            let (method, path) = route.split_once(' ').unwrap();
            // The query, optional parts included, is not part of the route.
            let path = path.split(['?', '[']).next().unwrap();
            (method.to_string(), path.to_string())
        })
        .collect();
    let served = management_routes();
    assert!(served.len() >= 10, "read only {} routes from the router", served.len());
    assert_eq!(documented, served, "the management routes in docs/authorization.md");
}

#[test]
fn every_endpoint_is_documented_with_its_route_and_every_documented_one_is_served() {
    let doc = read("docs/api.md");
    let mut documented = BTreeSet::new();
    for heading in ["## Served today", "## Storage, credentials and scan planning"] {
        for row in table_after(&doc, heading) {
            // `GET` / `HEAD /v1/catalog/…[?query]`: the operations, in the methods' order.
            let mut methods = Vec::new();
            let mut path = None;
            for token in quoted(&row[1]) {
                match token.split_once(' ') {
                    Some((method, route)) => {
                        methods.push(method.to_string());
                        path = Some(route.split(['?', '[']).next().unwrap().to_string());
                        break;
                    }
                    None => methods.push(token),
                }
            }
            let path = path.unwrap_or_else(|| panic!("no route in {row:?}"));
            let path = path.strip_prefix("/v1/catalog").unwrap_or_else(|| panic!("not under /v1/catalog: {path}"));
            let operations: Vec<&str> = row[0].split(" / ").collect();
            assert_eq!(operations.len(), methods.len(), "one method per operation in {row:?}");
            for (operation, method) in operations.into_iter().zip(methods) {
                documented.insert((operation.to_string(), method, path.to_string()));
            }
        }
    }
    let served: BTreeSet<(String, String, String)> = rustberg::endpoints::Endpoint::ALL
        .iter()
        .map(|e| (e.operation().to_string(), e.method().to_string(), e.path().to_string()))
        .collect();
    assert_eq!(documented, served, "the endpoints docs/api.md lists");
}

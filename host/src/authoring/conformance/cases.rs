//! The behaviour every backend owes the host, one case per concern. Each case works
//! in namespaces of its own, so the cases share one store without seeing each other.
//! (Over 400 lines: the suite is a list of independent cases, read whole.)

use std::future::Future;
use std::pin::Pin;

use crate::backends::Backend;
use crate::endpoints::Endpoint;
use crate::sandbox::bindings::{Features, Ident, PageRequest, Pointer, TableCommit};
use crate::sandbox::{BackendError, BackendErrorKind};

pub type Outcome = Result<(), String>;
type CaseFuture<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// What a case runs against: the backend, and the same component over a store or
/// remote that cannot be reached (or why it could not open there).
pub struct Fixture {
    pub backend: Backend,
    pub unreachable: Result<Backend, BackendError>,
}

/// When a case applies.
pub enum Needs {
    Nothing,
    /// A writable backend.
    Writes,
    /// A writable backend that declares what this endpoint needs.
    Endpoint(Endpoint),
    /// A writable backend with namespaces inside namespaces (`plugin test` finds out).
    Nesting,
}

pub struct Case {
    pub name: &'static str,
    pub needs: Needs,
    pub run: for<'a> fn(&'a Fixture) -> CaseFuture<'a>,
}

/// Every case, in the order they run.
pub const CASES: &[Case] = &[
    Case { name: "description", needs: Needs::Nothing, run: |f| Box::pin(description(f)) },
    Case { name: "not found versus unavailable", needs: Needs::Nothing, run: |f| Box::pin(unavailable(f)) },
    Case { name: "namespaces", needs: Needs::Writes, run: |f| Box::pin(namespaces(f)) },
    Case { name: "nested namespaces", needs: Needs::Nesting, run: |f| Box::pin(nested(f)) },
    Case { name: "namespace properties", needs: Needs::Endpoint(PROPERTIES), run: |f| Box::pin(properties(f)) },
    Case { name: "tables", needs: Needs::Writes, run: |f| Box::pin(tables(f)) },
    Case { name: "commit is compare-and-swap", needs: Needs::Writes, run: |f| Box::pin(compare_and_swap(f)) },
    Case { name: "8-way contention loses nothing", needs: Needs::Writes, run: |f| Box::pin(contention(f)) },
    Case { name: "drops", needs: Needs::Writes, run: |f| Box::pin(drops(f)) },
    Case { name: "rename tables", needs: Needs::Endpoint(RENAME_TABLE), run: |f| Box::pin(rename_tables(f)) },
    Case { name: "views", needs: Needs::Endpoint(CREATE_VIEW), run: |f| Box::pin(views(f)) },
    Case { name: "rename views", needs: Needs::Endpoint(RENAME_VIEW), run: |f| Box::pin(rename_views(f)) },
    Case { name: "transactions", needs: Needs::Endpoint(TRANSACTION), run: |f| Box::pin(transactions(f)) },
    Case { name: "paging over 1,000 tables", needs: Needs::Writes, run: |f| Box::pin(paging_tables(f)) },
    Case { name: "paging over 1,000 namespaces", needs: Needs::Writes, run: |f| Box::pin(paging_namespaces(f)) },
];

const PROPERTIES: Endpoint = Endpoint::UpdateNamespaceProperties;
const RENAME_TABLE: Endpoint = Endpoint::RenameTable;
const CREATE_VIEW: Endpoint = Endpoint::CreateView;
const RENAME_VIEW: Endpoint = Endpoint::RenameView;
const TRANSACTION: Endpoint = Endpoint::CommitTransaction;

// --- helpers -----------------------------------------------------------------

fn ns(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

fn ident(namespace: &[&str], name: &str) -> Ident {
    Ident { namespace: ns(namespace), name: name.into() }
}

/// The locations a backend's store assigned to the tables the cases created (a backend
/// exporting `placement`), by name: a case uses each name for one table at a time.
static ASSIGNED: std::sync::Mutex<std::collections::BTreeMap<String, String>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// A table's location: the assigned one, else one of the suite's own.
fn location_of_table(table: &str) -> String {
    let assigned = ASSIGNED.lock().expect("assigned locations").get(table).cloned();
    assigned.unwrap_or_else(|| format!("file:///conformance/{table}"))
}

/// A pointer whose metadata location carries `version`, with valid table metadata (a
/// backend may read it: Glue's mirrors the schema into its columns).
fn pointer(table: &str, version: usize) -> Pointer {
    let location = location_of_table(table);
    let metadata = serde_json::json!({
        "format-version": 2,
        "table-uuid": "00000000-0000-4000-8000-000000000000",
        "location": location,
        "last-sequence-number": version,
        "last-updated-ms": 1_700_000_000_000u64 + version as u64,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": true, "type": "long"}]}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": -1,
        "snapshots": [],
    });
    Pointer {
        metadata_json: metadata.to_string(),
        metadata_location: format!("{location}/metadata/{version:05}.metadata.json"),
        config: vec![],
        storage_credentials: String::new(),
    }
}

fn page(after: Option<String>, limit: u32) -> PageRequest {
    PageRequest { after, limit }
}

/// The value, or a failure naming what was being done.
fn ok<T>(result: Result<T, BackendError>, doing: &str) -> Result<T, String> {
    result.map_err(|e| format!("{doing}: {:?}: {}", e.kind, e.message))
}

/// A failure unless the call failed with `kind`.
fn fails<T: std::fmt::Debug>(result: Result<T, BackendError>, kind: BackendErrorKind, doing: &str) -> Outcome {
    match result {
        Err(e) if e.kind == kind => Ok(()),
        Err(e) => Err(format!("{doing}: expected {kind:?}, got {:?}: {}", e.kind, e.message)),
        Ok(v) => Err(format!("{doing}: expected {kind:?}, got success ({v:?})")),
    }
}

fn check(holds: bool, what: impl FnOnce() -> String) -> Outcome {
    if holds {
        Ok(())
    } else {
        Err(what())
    }
}

async fn create_namespace(b: &Backend, parts: &[&str]) -> Outcome {
    ok(b.create_namespace(ns(parts), vec![]).await, &format!("creating namespace {}", parts.join("."))).map(drop)
}

async fn create_table(b: &Backend, namespace: &[&str], name: &str) -> Outcome {
    let doing = format!("creating table {}.{name}", namespace.join("."));
    ok(create(b, ident(namespace, name)).await, &doing)
}

/// Creates a table as the host does: reserved first where the store assigns its
/// location, then recorded at version 0.
async fn create(b: &Backend, table: Ident) -> Result<(), BackendError> {
    if b.places_tables() {
        let assigned = b.reserve_table(table.clone()).await?;
        ASSIGNED.lock().expect("assigned locations").insert(table.name.clone(), assigned);
    }
    let first = pointer(&table.name, 0);
    b.create_table(table, first).await
}

async fn location_of(b: &Backend, table: Ident) -> Result<String, String> {
    let doing = format!("loading table {}.{}", table.namespace.join("."), table.name);
    Ok(ok(b.load_table(&table, None).await, &doing)?.metadata_location.clone())
}

// --- cases -------------------------------------------------------------------

async fn description(f: &Fixture) -> Outcome {
    // What only a backend over a key space can declare: its answers come from the keys.
    let of_a_key_space =
        Features::ANSWERS_FROM_KEYS | Features::CHECKS_WHAT_IT_READ | Features::ONE_COMMIT_NAMESPACE_CHANGES;
    let keyed = f.backend.features() & of_a_key_space;
    check(keyed == Features::empty() || f.backend.has_key_space(), || {
        format!("the backend declares {keyed:?} but its mount grants it no key space")
    })
}

async fn unavailable(f: &Fixture) -> Outcome {
    let b = match &f.unreachable {
        Ok(b) => b,
        // It cannot open with its remote out of reach: fine, unless it says "absent".
        Err(e) if e.kind == BackendErrorKind::NotFound => {
            return Err(format!("opening with its store or remote out of reach answered not-found: {}", e.message))
        }
        Err(_) => return Ok(()),
    };
    for (doing, result) in [
        ("loading a namespace", b.load_namespace(ns(&["anything"])).await.map(drop)),
        ("loading a table", b.load_table(&ident(&["anything"], "t"), None).await.map(drop)),
        ("listing namespaces", b.list_namespaces(None, page(None, 10)).await.map(drop)),
    ] {
        match result {
            Ok(()) => return Err(format!("{doing} succeeded although its store or remote cannot be reached")),
            Err(e) if e.kind == BackendErrorKind::NotFound => {
                return Err(format!("{doing} with its store or remote out of reach answered not-found: {}", e.message))
            }
            Err(_) => {}
        }
    }
    Ok(())
}

/// Whether `loaded` holds every property of `given`, with its value. A store may add
/// its own (the Hive Metastore gives every database a location), as Iceberg's own
/// catalog tests allow.
fn holds(loaded: &[(String, String)], given: &[(String, String)]) -> bool {
    given.iter().all(|pair| loaded.contains(pair))
}

async fn namespaces(f: &Fixture) -> Outcome {
    let b = &f.backend;
    // Properties only for a backend that keeps them (it lists their update).
    let keeps_properties = PROPERTIES.served_with(b.features(), b.places_tables());
    let props = match keeps_properties {
        true => vec![("owner".to_string(), "conformance".to_string())],
        false => vec![],
    };
    let stored = ok(b.create_namespace(ns(&["c_ns"]), props.clone()).await, "creating c_ns")?;
    check(stored == props, || format!("create returned {stored:?}, not the properties given"))?;
    fails(b.create_namespace(ns(&["c_ns"]), vec![]).await, BackendErrorKind::AlreadyExists, "creating c_ns twice")?;
    let loaded = ok(b.load_namespace(ns(&["c_ns"])).await, "loading c_ns")?;
    check(holds(&loaded, &props), || format!("c_ns loaded as {loaded:?}, without {props:?}"))?;
    fails(b.load_namespace(ns(&["c_missing"])).await, BackendErrorKind::NotFound, "loading a missing namespace")?;
    let top = ok(b.list_namespaces(None, page(None, 1000)).await, "listing the top level")?;
    check(top.items.iter().any(|e| e.namespace == ns(&["c_ns"])), || "c_ns is not listed at the top level".into())
}

async fn nested(f: &Fixture) -> Outcome {
    let b = &f.backend;
    create_namespace(b, &["c_nest"]).await?;
    for child in ["b", "a", "c"] {
        create_namespace(b, &["c_nest", child]).await?;
    }
    create_namespace(b, &["c_nest", "a", "deep"]).await?;
    fails(
        b.create_namespace(ns(&["c_nest", "missing", "x"]), vec![]).await,
        BackendErrorKind::NotFound,
        "creating a namespace whose parent does not exist",
    )?;
    let children = ok(b.list_namespaces(Some(ns(&["c_nest"])), page(None, 100)).await, "listing c_nest")?;
    let names: Vec<Vec<String>> = children.items.into_iter().map(|e| e.namespace).collect();
    let expected = vec![ns(&["c_nest", "a"]), ns(&["c_nest", "b"]), ns(&["c_nest", "c"])];
    check(names == expected, || {
        format!("c_nest's children are {names:?}, not {expected:?} (direct children, sorted)")
    })?;
    fails(
        b.list_namespaces(Some(ns(&["c_nest_missing"])), page(None, 10)).await,
        BackendErrorKind::NotFound,
        "listing the children of a missing namespace",
    )?;
    fails(b.drop_namespace(ns(&["c_nest", "a"])).await, BackendErrorKind::Conflict, "dropping a namespace with a child")
}

async fn properties(f: &Fixture) -> Outcome {
    let b = &f.backend;
    let props = vec![("a".to_string(), "1".to_string()), ("b".to_string(), "2".to_string())];
    ok(b.create_namespace(ns(&["c_props"]), props).await, "creating c_props")?;
    let update = ok(
        b.update_namespace_properties(ns(&["c_props"]), ns(&["a", "gone"]), vec![("c".into(), "3".into())]).await,
        "updating c_props",
    )?;
    check(update.removed == ns(&["a"]) && update.missing == ns(&["gone"]) && update.updated == ns(&["c"]), || {
        format!("the update reported {update:?}")
    })?;
    let mut loaded = ok(b.load_namespace(ns(&["c_props"])).await, "loading c_props")?;
    loaded.sort();
    let expected = vec![("b".to_string(), "2".to_string()), ("c".to_string(), "3".to_string())];
    let gone = !loaded.iter().any(|(k, _)| k == "a");
    check(holds(&loaded, &expected) && gone, || format!("after the update c_props has {loaded:?}, not {expected:?}"))?;
    fails(
        b.update_namespace_properties(ns(&["c_props_missing"]), vec![], vec![]).await,
        BackendErrorKind::NotFound,
        "updating a missing namespace",
    )
}

async fn tables(f: &Fixture) -> Outcome {
    let b = &f.backend;
    create_namespace(b, &["c_tables"]).await?;
    for name in ["t2", "t1"] {
        create_table(b, &["c_tables"], name).await?;
    }
    fails(
        b.create_table(ident(&["c_tables"], "t1"), pointer("t1", 0)).await,
        BackendErrorKind::AlreadyExists,
        "creating t1 twice",
    )?;
    fails(
        b.create_table(ident(&["c_tables_missing"], "t"), pointer("t", 0)).await,
        BackendErrorKind::NotFound,
        "creating a table in a missing namespace",
    )?;
    let loaded = ok(b.load_table(&ident(&["c_tables"], "t1"), None).await, "loading t1")?;
    let expected = pointer("t1", 0);
    check(loaded.metadata_location == expected.metadata_location, || {
        format!("t1 loads at {}", loaded.metadata_location)
    })?;
    check(loaded.metadata_json.is_empty() || loaded.metadata_json == expected.metadata_json, || {
        "t1's metadata JSON came back changed (it may be empty, or what was stored)".into()
    })?;
    fails(
        b.load_table(&ident(&["c_tables"], "nope"), None).await,
        BackendErrorKind::NotFound,
        "loading a missing table",
    )?;
    let listed = ok(b.list_tables(ns(&["c_tables"]), page(None, 100)).await, "listing c_tables")?;
    let names: Vec<String> = listed.items.into_iter().map(|e| e.name).collect();
    check(names == ns(&["t1", "t2"]) && listed.done, || format!("c_tables lists {names:?}, not [t1, t2] and done"))?;
    fails(
        b.list_tables(ns(&["c_tables_missing"]), page(None, 10)).await,
        BackendErrorKind::NotFound,
        "listing a missing namespace",
    )
}

async fn compare_and_swap(f: &Fixture) -> Outcome {
    let b = &f.backend;
    create_namespace(b, &["c_cas"]).await?;
    create_table(b, &["c_cas"], "t").await?;
    let t = || ident(&["c_cas"], "t");
    fails(
        b.commit_table(t(), pointer("t", 7).metadata_location, pointer("t", 8)).await,
        BackendErrorKind::Conflict,
        "committing from a location that is not the current one",
    )?;
    ok(
        b.commit_table(t(), pointer("t", 0).metadata_location, pointer("t", 1)).await,
        "committing from the current location",
    )?;
    let now = location_of(b, t()).await?;
    check(now == pointer("t", 1).metadata_location, || format!("after the commit t is at {now}"))?;
    fails(
        b.commit_table(ident(&["c_cas"], "nope"), String::new(), pointer("nope", 1)).await,
        BackendErrorKind::NotFound,
        "committing to a missing table",
    )
}

async fn contention(f: &Fixture) -> Outcome {
    let b = &f.backend;
    create_namespace(b, &["c_race"]).await?;
    create_table(b, &["c_race"], "t").await?;
    let t = || ident(&["c_race"], "t");
    // Eight commits from the same base: exactly one lands.
    let base = pointer("t", 0).metadata_location;
    let racers = (1..=8).map(|i| b.commit_table(t(), base.clone(), pointer("t", 100 + i)));
    let results = futures::future::join_all(racers).await;
    let landed = results.iter().filter(|r| r.is_ok()).count();
    check(landed == 1, || format!("{landed} of 8 commits from the same base landed; exactly one must"))?;
    if let Some(e) = results.iter().filter_map(|r| r.as_ref().err()).find(|e| e.kind != BackendErrorKind::Conflict) {
        return Err(format!("a commit that lost the race answered {:?}: {}", e.kind, e.message));
    }
    // Eight writers, five commits each, retrying on conflict: every commit lands once.
    let start = location_of(b, t()).await?;
    let ok_or = |e: BackendError| format!("{:?}: {}", e.kind, e.message);
    ok(b.commit_table(t(), start, pointer("t", 0)).await, "resetting t")?;
    let writer = |_: usize| async move {
        let mut landed = 0;
        while landed < 5 {
            let current = location_of(b, t()).await?;
            let n: usize = current.rsplit('/').next().and_then(|f| f[..5].parse().ok()).unwrap_or(0);
            match b.commit_table(t(), current, pointer("t", n + 1)).await {
                Ok(()) => landed += 1,
                Err(e) if e.kind == BackendErrorKind::Conflict => {}
                Err(e) => return Err(ok_or(e)),
            }
        }
        Ok::<(), String>(())
    };
    for result in futures::future::join_all((0..8).map(writer)).await {
        result?;
    }
    let end = location_of(b, t()).await?;
    check(end == pointer("t", 40).metadata_location, || {
        format!("after 40 acknowledged commits t is at {end}: some were lost")
    })
}

async fn drops(f: &Fixture) -> Outcome {
    let b = &f.backend;
    create_namespace(b, &["c_drop"]).await?;
    create_table(b, &["c_drop"], "t").await?;
    fails(
        b.drop_namespace(ns(&["c_drop"])).await,
        BackendErrorKind::Conflict,
        "dropping a namespace that holds a table",
    )?;
    let last = ok(b.drop_table(ident(&["c_drop"], "t")).await, "dropping t")?;
    check(last.metadata_location == pointer("t", 0).metadata_location, || {
        "drop-table did not return t's last pointer".into()
    })?;
    fails(b.load_table(&ident(&["c_drop"], "t"), None).await, BackendErrorKind::NotFound, "loading a dropped table")?;
    fails(b.drop_table(ident(&["c_drop"], "t")).await, BackendErrorKind::NotFound, "dropping t again")?;
    ok(b.drop_namespace(ns(&["c_drop"])).await, "dropping the emptied namespace")?;
    fails(b.load_namespace(ns(&["c_drop"])).await, BackendErrorKind::NotFound, "loading a dropped namespace")?;
    fails(b.drop_namespace(ns(&["c_drop"])).await, BackendErrorKind::NotFound, "dropping a namespace again")
}

async fn rename_tables(f: &Fixture) -> Outcome {
    let b = &f.backend;
    for n in ["c_ren_a", "c_ren_b"] {
        create_namespace(b, &[n]).await?;
    }
    create_table(b, &["c_ren_a"], "t").await?;
    create_table(b, &["c_ren_b"], "taken").await?;
    ok(b.rename_table(ident(&["c_ren_a"], "t"), ident(&["c_ren_b"], "moved")).await, "renaming across namespaces")?;
    fails(b.load_table(&ident(&["c_ren_a"], "t"), None).await, BackendErrorKind::NotFound, "loading the old name")?;
    let at = location_of(b, ident(&["c_ren_b"], "moved")).await?;
    check(at == pointer("t", 0).metadata_location, || format!("the renamed table is at {at}"))?;
    fails(
        b.rename_table(ident(&["c_ren_b"], "moved"), ident(&["c_ren_b"], "taken")).await,
        BackendErrorKind::AlreadyExists,
        "renaming onto an existing table",
    )?;
    fails(
        b.rename_table(ident(&["c_ren_a"], "gone"), ident(&["c_ren_b"], "x")).await,
        BackendErrorKind::NotFound,
        "renaming a missing table",
    )?;
    fails(
        b.rename_table(ident(&["c_ren_b"], "moved"), ident(&["c_ren_missing"], "x")).await,
        BackendErrorKind::NotFound,
        "renaming into a missing namespace",
    )
}

async fn views(f: &Fixture) -> Outcome {
    let b = &f.backend;
    create_namespace(b, &["c_views"]).await?;
    let v = || ident(&["c_views"], "v");
    ok(b.create_view(v(), pointer("v", 0)).await, "creating view v")?;
    fails(
        b.create_table(v(), pointer("v", 0)).await,
        BackendErrorKind::AlreadyExists,
        "creating a table named like a view",
    )?;
    create_table(b, &["c_views"], "t").await?;
    fails(
        b.create_view(ident(&["c_views"], "t"), pointer("t", 0)).await,
        BackendErrorKind::AlreadyExists,
        "creating a view named like a table",
    )?;
    fails(b.load_table(&v(), None).await, BackendErrorKind::NotFound, "loading a view as a table")?;
    fails(
        b.commit_view(v(), pointer("v", 5).metadata_location, pointer("v", 6)).await,
        BackendErrorKind::Conflict,
        "committing a view from a stale location",
    )?;
    ok(b.commit_view(v(), pointer("v", 0).metadata_location, pointer("v", 1)).await, "committing view v")?;
    let loaded = ok(b.load_view(v()).await, "loading view v")?;
    check(loaded.metadata_location == pointer("v", 1).metadata_location, || "view v did not move".into())?;
    let listed = ok(b.list_views(ns(&["c_views"]), page(None, 10)).await, "listing views")?;
    let names: Vec<String> = listed.items.into_iter().map(|e| e.name).collect();
    check(names == ns(&["v"]), || format!("c_views lists views {names:?}, not [v]"))?;
    ok(b.drop_view(v()).await, "dropping view v")?;
    fails(b.load_view(v()).await, BackendErrorKind::NotFound, "loading a dropped view")
}

async fn rename_views(f: &Fixture) -> Outcome {
    let b = &f.backend;
    create_namespace(b, &["c_vren"]).await?;
    ok(b.create_view(ident(&["c_vren"], "v"), pointer("v", 0)).await, "creating view v")?;
    ok(b.rename_view(ident(&["c_vren"], "v"), ident(&["c_vren"], "w")).await, "renaming view v to w")?;
    fails(b.load_view(ident(&["c_vren"], "v")).await, BackendErrorKind::NotFound, "loading the old view name")?;
    ok(b.load_view(ident(&["c_vren"], "w")).await, "loading the renamed view").map(drop)
}

async fn transactions(f: &Fixture) -> Outcome {
    let b = &f.backend;
    create_namespace(b, &["c_tx"]).await?;
    for t in ["a", "b"] {
        create_table(b, &["c_tx"], t).await?;
    }
    let commit = |t: &str, from: usize, to: usize| TableCommit {
        ident: ident(&["c_tx"], t),
        expected_metadata_location: pointer(t, from).metadata_location,
        new: pointer(t, to),
    };
    ok(b.commit_transaction(vec![commit("a", 0, 1), commit("b", 0, 1)]).await, "committing a and b together")?;
    fails(
        b.commit_transaction(vec![commit("a", 1, 2), commit("b", 0, 2)]).await,
        BackendErrorKind::Conflict,
        "a transaction with one stale table",
    )?;
    for t in ["a", "b"] {
        let at = location_of(b, ident(&["c_tx"], t)).await?;
        check(at == pointer(t, 1).metadata_location, || {
            format!("after a failed transaction {t} is at {at}: half of it applied")
        })?;
    }
    Ok(())
}

/// Checks one page of a listing of limit 100, and returns where the next one starts.
fn next_after<T>(
    items: &[T],
    done: bool,
    cursor: impl Fn(&T) -> &String,
    after: Option<String>,
) -> Result<Option<String>, String> {
    check(items.len() <= 100, || format!("a page of limit 100 held {} items", items.len()))?;
    check(!items.is_empty() || done, || "a page held nothing but did not say done".into())?;
    Ok(items.last().map(|i| cursor(i).clone()).or(after))
}

async fn paging_tables(f: &Fixture) -> Outcome {
    let b = &f.backend;
    create_namespace(b, &["c_page"]).await?;
    let names: Vec<String> = (0..1050).map(|i| format!("t{i:04}")).collect();
    for chunk in names.chunks(50) {
        let creates = chunk.iter().map(|n| create(b, ident(&["c_page"], n)));
        for result in futures::future::join_all(creates).await {
            ok(result, "creating a table to page over")?;
        }
    }
    let (mut seen, mut after) = (Vec::new(), None);
    for _ in 0..=names.len() {
        let p = ok(b.list_tables(ns(&["c_page"]), page(after.clone(), 100)).await, "listing a page of tables")?;
        after = next_after(&p.items, p.done, |e| &e.cursor, after)?;
        seen.extend(p.items.into_iter().map(|e| e.name));
        if p.done {
            break;
        }
    }
    check(seen == names, || {
        format!("paging returned {} of the 1,050 tables (in order: {})", seen.len(), seen.is_sorted())
    })
}

async fn paging_namespaces(f: &Fixture) -> Outcome {
    let b = &f.backend;
    let names: Vec<String> = (0..1050).map(|i| format!("c_pns_{i:04}")).collect();
    for chunk in names.chunks(50) {
        let creates = chunk.iter().map(|n| b.create_namespace(vec![n.clone()], vec![]));
        for result in futures::future::join_all(creates).await {
            ok(result, "creating a namespace to page over")?;
        }
    }
    let (mut all, mut after) = (Vec::new(), None);
    for _ in 0..=2 * names.len() {
        let p = ok(b.list_namespaces(None, page(after.clone(), 100)).await, "listing a page of namespaces")?;
        after = next_after(&p.items, p.done, |e| &e.cursor, after)?;
        all.extend(p.items.into_iter().map(|e| e.namespace.join(".")));
        if p.done {
            break;
        }
    }
    check(all.is_sorted(), || "the top level is not listed in order".into())?;
    // The top level holds the other cases' namespaces too: keep ours.
    let ours: Vec<String> = all.into_iter().filter(|n| n.starts_with("c_pns_")).collect();
    check(ours == names, || format!("paging the top level returned {} of the 1,050 namespaces created", ours.len()))
}

//! Two rustberg processes over one Postgres database serve one catalog: a namespace
//! created through one is visible through the other at once, and 16 writers split
//! across both lose and duplicate nothing.

use crate::support;

use std::future::Future;

use serde_json::{json, Value};
use support::{assert_history, components_dir, hash_secret, postgres_database, race_appends, schema, Api, Server};

/// The configuration of every host over database `pg`, with one warehouse folder
/// and the server admin `root` (secret `pw`).
fn shared_config(pg: &str, warehouse: &std::path::Path) -> String {
    format!(
        "[storage]\ncatalog_url = \"{pg}\"\nwarehouse_location = \"file://{}\"\n\
         [auth.principals.root]\ntenant = \"ops\"\nrole = \"admin\"\nserver_admin = true\nsecret_hash = \"{}\"\n",
        warehouse.display(),
        hash_secret("pw")
    )
}

/// Two hosts over a fresh database and one warehouse folder (kept while they run); `None`
/// when no PostgreSQL is reachable.
async fn two_hosts() -> Option<(tempfile::TempDir, Server, Server)> {
    let pg = postgres_database().await?;
    let warehouse = tempfile::tempdir().unwrap();
    let config = shared_config(&pg, warehouse.path());
    let (a, b) = (Server::start(&config), Server::start(&config));
    Some((warehouse, a, b))
}

/// One host over a fresh database (its URL) and a warehouse folder (kept while it
/// runs); `None` when no PostgreSQL is reachable.
async fn one_host() -> Option<(String, tempfile::TempDir, Server)> {
    let pg = postgres_database().await?;
    let warehouse = tempfile::tempdir().unwrap();
    let server = Server::start(&shared_config(&pg, warehouse.path()));
    Some((pg, warehouse, server))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hosts_share_one_catalog() {
    let Some((_warehouse, a, b)) = two_hosts().await else { return };
    let (a, b) = (a.login("root", "pw"), b.login("root", "pw"));

    assert_eq!(a.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(b.get("/namespaces/db").await.0, 200, "visible through the other host at once");
    assert_eq!(b.get("/namespaces").await.1["namespaces"], json!([["db"]]));
    assert_eq!(b.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    assert_eq!(a.head("/namespaces/db/tables/t").await, 204);

    let hosts = [a.clone(), b.clone()];
    let (landed, refused) = race_appends(&hosts, "/namespaces/db/tables/t", 16, 4).await;
    assert!(!landed.is_empty());
    for host in [&a, &b] {
        let (_, table) = host.get("/namespaces/db/tables/t").await;
        assert_history(&table["metadata"], &landed, &refused);
    }
}

/// 16 writers over two hosts commit requirement-free property changes to one table:
/// a writer that loses the compare-and-swap to the other host is re-applied on the new
/// base by the server, so every commit lands and none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commits_without_requirements_all_land_across_hosts() {
    let Some((_warehouse, a, b)) = two_hosts().await else { return };
    let hosts = [a.login("root", "pw"), b.login("root", "pw")];
    assert_eq!(hosts[0].post("/namespaces", json!({"namespace": ["props"]})).await.0, 200);
    assert_eq!(hosts[0].post("/namespaces/props/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let writers = (0..16).map(|w| {
        let host = hosts[w % 2].clone();
        tokio::spawn(async move {
            let mut statuses = vec![];
            for i in 0..5 {
                let update = json!({"updates": [{"action": "set-properties", "updates": {format!("w{w}-{i}"): "x"}}]});
                statuses.push(host.post("/namespaces/props/tables/t", update).await.0);
            }
            statuses
        })
    });
    let statuses: Vec<u16> = futures::future::join_all(writers).await.into_iter().flat_map(Result::unwrap).collect();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let (_, table) = hosts[1].get("/namespaces/props/tables/t").await;
    let properties = table["metadata"]["properties"].as_object().unwrap();
    assert_eq!(properties.keys().filter(|k| k.starts_with('w')).count(), 80, "{properties:?}");
}

/// A commit waits only for commits touching its own keys: while a transaction holds
/// the lock of key `a`, a commit to `b` lands and a commit to `a` waits. A commit that
/// checks a prefix is empty waits for every other commit of its key space.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commits_to_different_keys_do_not_wait_for_each_other() {
    use rustberg::storage::kv::{Check, PgStore, Write};
    use std::time::Duration;
    let Some(pg) = postgres_database().await else { return };
    let store = PgStore::connect(&pg, Duration::from_secs(5)).await.unwrap();
    let space = store.space("locks");
    let put = |key: &str| vec![Write { key: key.as_bytes().to_vec(), value: Some(b"1".to_vec()) }];

    // Another writer in the middle of a commit to `a`.
    let pool = sqlx::PgPool::connect(&pg).await.unwrap();
    let mut holder = pool.begin().await.unwrap();
    let (high, low) = space.key_lock(b"a");
    sqlx::query("SELECT pg_advisory_xact_lock_shared(hashtextextended('locks', 0))")
        .execute(&mut *holder)
        .await
        .unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock($1, $2)").bind(high).bind(low).execute(&mut *holder).await.unwrap();

    let other_key = tokio::time::timeout(Duration::from_secs(5), space.commit(&[], &put("b"))).await;
    assert!(matches!(other_key, Ok(Ok(()))), "a commit to another key does not wait: {other_key:?}");
    let same_key = tokio::time::timeout(Duration::from_millis(500), space.commit(&[], &put("a"))).await;
    assert!(same_key.is_err(), "a commit to the locked key waits");
    let prefix = [Check::PrefixEmpty(b"c/".to_vec())];
    let whole_space = tokio::time::timeout(Duration::from_millis(500), space.commit(&prefix, &put("d"))).await;
    assert!(whole_space.is_err(), "a prefix check waits for every commit of the space");

    holder.commit().await.unwrap();
    space.commit(&[], &put("a")).await.unwrap();
    space.commit(&prefix, &put("d")).await.unwrap();
    let keys: Vec<_> = space.scan(b"", None, 10).await.unwrap().into_iter().map(|e| e.key).collect();
    assert_eq!(keys, [b"a".to_vec(), b"b".to_vec(), b"d".to_vec()]);
}

/// A commit dropped while the database runs it (its request gave up) leaves its
/// connection unused: the next statement neither waits behind the abandoned one on that
/// connection nor reads its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_statement_dropped_halfway_leaves_its_connection_unused() {
    use rustberg::storage::kv::{PgStore, Write};
    use sqlx::Connection;
    use std::time::Duration;
    let Some(pg) = postgres_database().await else { return };
    let store = PgStore::connect(&pg, Duration::from_secs(5)).await.unwrap();
    let space = store.space("s");
    let put = |value: &str| [Write { key: b"k".to_vec(), value: Some(value.as_bytes().to_vec()) }];
    space.commit(&[], &put("first")).await.unwrap();

    // Another session holds the key's lock, so a commit of the key waits in the database.
    let mut holder = sqlx::PgConnection::connect(&pg).await.unwrap();
    let (high, low) = space.key_lock(b"k");
    sqlx::query("SELECT pg_advisory_lock($1, $2)").bind(high).bind(low).execute(&mut holder).await.unwrap();
    let abandoned = tokio::time::timeout(Duration::from_millis(300), space.commit(&[], &put("second"))).await;
    assert!(abandoned.is_err(), "the commit waits for the lock");

    let read = tokio::time::timeout(Duration::from_secs(3), space.get(b"k")).await;
    let entry = read.expect("answered while the abandoned commit still waits").unwrap().unwrap();
    assert_eq!(entry.value, b"first");
    sqlx::query("SELECT pg_advisory_unlock($1, $2)").bind(high).bind(low).execute(&mut holder).await.unwrap();
}

/// A grant or a revocation made through one host decides the next request on the
/// other: the other host applies the change log, and a revoked grant does not linger.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn grants_and_revocations_apply_on_every_host_at_once() {
    use reqwest::Method;
    let Some((_warehouse, a_server, b_server)) = two_hosts().await else { return };
    let a = a_server.login("root", "pw");
    assert_eq!(a.send(Method::POST, "/management/v1/tenants", Some(json!({"name": "other"}))).await.0, 201);
    let eve = json!({"name": "eve", "tenant": "other", "role": "writer"});
    let (status, eve) = a.send(Method::POST, "/management/v1/principals", Some(eve)).await;
    assert_eq!(status, 201, "{eve}");
    let secret = eve["client-secret"].as_str().unwrap();
    let (eve_on_a, eve_on_b) = (a_server.login("eve", secret), b_server.login("eve", secret));
    assert_eq!(a.post("/namespaces", json!({"namespace": ["shared"]})).await.0, 200);
    assert_eq!(eve_on_b.get("/namespaces/shared").await.0, 404, "not granted yet");

    let grant = json!({"namespace": ["shared"], "privilege": "read", "tenant": "other"});
    let (status, grant) = a.send(Method::POST, "/management/v1/grants", Some(grant)).await;
    assert_eq!(status, 201, "{grant}");
    assert_eq!(eve_on_b.get("/namespaces/shared").await.0, 200, "granted through a, read through b");
    let revoke = format!("/management/v1/grants/{}", grant["id"].as_str().unwrap());
    assert_eq!(a.send(Method::DELETE, &revoke, None).await.0, 204);
    assert_eq!(eve_on_b.get("/namespaces/shared").await.0, 404, "revoked through a, gone on b");

    // A dropped root loses its owner everywhere: created again by another tenant, it is theirs.
    assert_eq!(a.delete("/namespaces/shared").await.0, 204);
    assert_eq!(eve_on_b.post("/namespaces", json!({"namespace": ["shared"]})).await.0, 200);
    let (status, held) = eve_on_a.send(Method::GET, "/management/v1/permissions?namespace=shared", None).await;
    assert_eq!((status, &held["privilege"]), (200, &json!("write")), "created through b, owned on a: {held}");
}

/// On a shared store, an intent to create a root namespace that another host may still
/// be carrying out (this host has not seen it waiting for ten minutes) is not settled by
/// a second create of the name, which answers 409; one recorded a day ago was left by a
/// host that stopped, and the next create settles it and proceeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_root_another_host_may_be_creating_is_left_to_it() {
    use rustberg::storage::kv::{PgStore, Write};
    let Some((pg, _warehouse, server)) = one_host().await else { return };
    let a = server.login("root", "pw");
    let host = PgStore::connect(&pg, std::time::Duration::from_secs(5)).await.unwrap().space("rustberg:host");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let intent = |root: &str, at: u64| Write {
        key: format!("intent/own/{root}").into_bytes(),
        value: Some(serde_json::to_vec(&json!({"at": at, "effect": "own", "root": root, "tenant": "ops"})).unwrap()),
    };
    let hour = 3600;
    host.commit(&[], &[intent("busy", now - hour), intent("left", now - 25 * hour)]).await.unwrap();

    let busy = a.post("/namespaces", json!({"namespace": ["busy"]})).await;
    assert_eq!(busy.0, 409, "{}", busy.1);
    assert_eq!(a.post("/namespaces", json!({"namespace": ["left"]})).await.0, 200);
}

/// A host hands out a pooled connection without a ping only if it answered within the
/// last second (that ping was a third of a commit's round trips): one idle for longer
/// is pinged first and replaced if the database dropped it. Here every
/// connection of the host is terminated by the database while idle; the next
/// requests are answered as if nothing had happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connections_the_database_dropped_while_idle_are_replaced() {
    use sqlx::Connection;
    let Some((pg, _warehouse, server)) = one_host().await else { return };
    let a = server.login("root", "pw");
    assert_eq!(a.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(a.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);

    let database = pg.rsplit_once('/').unwrap().1;
    let mut admin = sqlx::PgConnection::connect(&pg).await.unwrap();
    let dropped: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
    )
    .bind(database)
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert!(!dropped.is_empty() && dropped.iter().all(|d| *d), "the host's connections were terminated: {dropped:?}");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;

    let (status, body) = a.get("/namespaces/db/tables/t").await;
    assert_eq!(status, 200, "{body}");
    let commit = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let (status, body) = a.post("/namespaces/db/tables/t", commit).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["metadata"]["properties"]["k"], "v");
    assert_eq!(a.post("/namespaces", json!({"namespace": ["after"]})).await.0, 200);
}

/// A statement on Postgres is one round trip: a pooled connection is not pinged as it
/// is taken back (sqlx's pool pinged every one, doubling every statement's round
/// trips). Counted by a proxy between the host and the database: a load makes two
/// statements (the authorization version, the table's pointer).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_statement_is_one_round_trip() {
    let Some(pg) = postgres_database().await else { return };
    let mut url = url::Url::parse(&pg).unwrap();
    let database = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
    let (proxy, sent) = counting_proxy(database).await;
    url.set_host(Some("127.0.0.1")).unwrap();
    url.set_port(Some(proxy.port())).unwrap();
    let warehouse = tempfile::tempdir().unwrap();
    let server = Server::start(&shared_config(url.as_str(), warehouse.path()));
    let a = server.login("root", "pw");
    assert_eq!(a.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(a.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    // Every connection has prepared its statements (a first use is a round trip more).
    for _ in 0..40 {
        assert_eq!(a.get("/namespaces/db/tables/t").await.0, 200);
    }

    let before = sent.load(std::sync::atomic::Ordering::SeqCst);
    for _ in 0..20 {
        assert_eq!(a.get("/namespaces/db/tables/t").await.0, 200);
    }
    // Two per load (four with a ping on every return), and room for a ping of a
    // connection left idle over a second by a busy machine.
    let sends = sent.load(std::sync::atomic::Ordering::SeqCst) - before;
    assert!(sends < 20 * 3, "{sends} sends to the database for 20 loads of two statements each");
}

/// A TCP proxy to `upstream` on a free local port, counting what clients send: each
/// read from a client is one send, as a client waits for its answer before the next.
async fn counting_proxy(upstream: String) -> (std::net::SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = sent.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
            let (mut from_client, mut to_client) = client.into_split();
            let (mut from_server, mut to_server) = server.into_split();
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0; 64 << 10];
                while let Ok(n @ 1..) = from_client.read(&mut buffer).await {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if to_server.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
            });
            tokio::spawn(async move { tokio::io::copy(&mut from_server, &mut to_client).await });
        }
    });
    (address, sent)
}

/// Two hosts whose root catalog is the flaky test component (a namespace create waits
/// as long as its `test.delay-ms` property says), with a namespace `db`; `None` when no
/// PostgreSQL is reachable. The servers and the warehouse folder are kept while they run.
async fn two_hosts_with_slow_creates() -> Option<(tempfile::TempDir, [Server; 2], Api, Api)> {
    let pg = postgres_database().await?;
    let warehouse = tempfile::tempdir().unwrap();
    let flaky = components_dir().join("flaky.wasm");
    let config = shared_config(&pg, warehouse.path()).replacen(
        "[storage]\n",
        &format!("[storage]\nbackend = \"{}\"\n", flaky.display()),
        1,
    );
    let (host_a, host_b) = (Server::start(&config), Server::start(&config));
    let (a, b) = (host_a.login("root", "pw"), host_b.login("root", "pw"));
    assert_eq!(a.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    Some((warehouse, [host_a, host_b], a, b))
}

/// A create of `db.x` through `host` that waits 1.5 s in the backend, and `meanwhile`,
/// started 0.3 s after it.
async fn slow_create_of_x_and<T>(host: &Api, meanwhile: impl Future<Output = T>) -> ((u16, Value), T) {
    let slow = json!({"namespace": ["db", "x"], "properties": {"test.delay-ms": "1500"}});
    tokio::join!(host.post("/namespaces", slow), async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        meanwhile.await
    })
}

/// A create of table `db.t` at `path` under the warehouse.
fn table_at(warehouse: &std::path::Path, path: &str) -> Value {
    json!({"name": "t", "schema": schema(), "location": format!("file://{}/{path}", warehouse.display())})
}

/// Only a table of `db.x` may be placed at `db.x`'s location or inside it.
async fn x_holds_its_location(host: &Api, warehouse: &std::path::Path) {
    for over in ["db/x", "db/x/t"] {
        let got = host.post("/namespaces/db/tables", table_at(warehouse, over)).await;
        assert!(got.0 == 400 || got.0 == 409, "a table of db at {over} was not refused: {} {}", got.0, got.1);
    }
}

/// Creates of one namespace on two hosts at once share its location's claim (it has
/// the name's id): the one that finds the name taken must not release the claim the
/// other landed with.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn creates_of_one_namespace_on_two_hosts_leave_it_its_location() {
    let Some((warehouse, _servers, a, b)) = two_hosts_with_slow_creates().await else { return };
    let (first, second) = slow_create_of_x_and(&a, b.post("/namespaces", json!({"namespace": ["db", "x"]}))).await;
    assert_eq!((first.0, second.0), (409, 200), "the quicker create lands: {} {}", first.1, second.1);
    x_holds_its_location(&a, warehouse.path()).await;
}

/// A namespace dropped on one host while another host creates it again: the create
/// found the dropped one's claim (same name, same id), which the drop then released,
/// so the create claims its location anew once it has landed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_namespace_recreated_while_another_host_drops_it_keeps_its_location() {
    let Some((warehouse, _servers, a, b)) = two_hosts_with_slow_creates().await else { return };
    assert_eq!(a.post("/namespaces", json!({"namespace": ["db", "x"]})).await.0, 200);
    let (created, dropped) = slow_create_of_x_and(&b, a.delete("/namespaces/db%1Fx")).await;
    assert_eq!((created.0, dropped.0), (200, 204), "{} {}", created.1, dropped.1);
    x_holds_its_location(&a, warehouse.path()).await;
}

/// As above, but a table of `db` takes the dropped namespace's location before the
/// create lands: the create cannot claim it again, so it undoes itself (409) and the
/// table keeps the location.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_namespace_recreated_over_a_location_taken_meanwhile_is_undone() {
    let Some((warehouse, _servers, a, b)) = two_hosts_with_slow_creates().await else { return };
    assert_eq!(a.post("/namespaces", json!({"namespace": ["db", "x"]})).await.0, 200);
    let (created, taken) = slow_create_of_x_and(&b, async {
        assert_eq!(a.delete("/namespaces/db%1Fx").await.0, 204);
        a.post("/namespaces/db/tables", table_at(warehouse.path(), "db/x")).await
    })
    .await;
    assert_eq!(taken.0, 200, "the table takes the released location: {}", taken.1);
    assert_eq!(created.0, 409, "{}", created.1);
    assert_eq!(a.get("/namespaces/db%1Fx").await.0, 404, "the create was undone");
    assert_eq!(a.get("/namespaces/db/tables/t").await.0, 200);
}

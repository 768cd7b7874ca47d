//! Spark SQL end to end: PySpark in local mode with Iceberg's Spark runtime (the Java
//! `RESTCatalog`) against a real Rustberg with a native mount on Postgres, a rest mount
//! of another Rustberg, and a native mount whose warehouse is on S3 (moto) with vending
//! through STS: Spark holds no S3 keys there (`tests/python/test_spark.py`).

use crate::support;

use support::moto::{s3_storage, sts_vending, Moto};
use support::python::run_pytest_in;
use support::{postgres_database, Server};

/// How long vended credentials live in the scenario.
const STS_LIFETIME_S: u64 = 20;

#[tokio::test]
async fn spark_sql_end_to_end() {
    let _turn = support::jvm_turn().await;
    let Some(database) = postgres_database().await else { return };
    let remote = Server::start("");
    let moto = Moto::start("lake").await;
    let mounts = tempfile::tempdir().unwrap();
    let token = remote.admin_token();
    let server = Server::try_start_with_env(
        &format!(
            // Tokens live 20 s: the scenario runs longer, so Spark's client must refresh.
            // So do vended credentials: Spark refreshes them through loadCredentials.
            // Every scan plan outruns a budget of 0: Spark's planned scans poll for theirs.
            // A reader in the admin's tenant whose reads of planned_db.t a policy restricts.
            "[planning]\nbudget_ms = 0\n[auth]\ntoken_lifetime_secs = 20\n{storage}{vending}duration_secs = {STS_LIFETIME_S}\n\
             [auth.principals.analyst]\ntenant = \"default\"\nrole = \"reader\"\nsecret_hash = \"{analyst}\"\n\
             [policy.kind_c]\nnamespace = [\"planned_db\"]\ntable = \"t\"\nprincipal = \"analyst\"\nrow_filter = '{{\"type\": \"eq\", \"term\": \"kind\", \"value\": \"c\"}}'\n\
             [mount.pg]\nbackend = \"native\"\ncatalog_url = \"{database}\"\nwarehouse_location = \"file://{dir}/pg\"\nowner = \"acme\"\n\
             [mount.partner]\nbackend = \"rest\"\ncatalog_url = \"{remote}\"\nowner = \"acme\"\ntoken_env = \"PARTNER_TOKEN\"\n\
             [mount.lake]\nbackend = \"native\"\ncatalog_url = \"redb://{dir}/lake.redb\"\nwarehouse_location = \"s3://lake/warehouse\"\nowner = \"acme\"\n",
            storage = s3_storage(&moto.url, "AKIAIOSFODNN7EXAMPLE", "server-secret"),
            vending = sts_vending("arn:aws:iam::123456789012:role/lake", Some(&moto.url)),
            dir = mounts.path().display(),
            remote = remote.base,
            analyst = support::hash_secret("analyst-secret"),
        ),
        &[("PARTNER_TOKEN", &token)],
    )
    .unwrap_or_else(|out| panic!("{out}"));
    let (venv, jars) = support::spark::spark();
    let warehouse = server.dir.path().join("data/warehouse").display().to_string();
    let started = std::time::Instant::now();
    let env = [
        ("RUSTBERG_URL", server.base.as_str()),
        ("RUSTBERG_CREDENTIAL", server.credential.as_deref().unwrap()),
        ("RUSTBERG_REMOTE_URL", remote.base.as_str()),
        ("RUSTBERG_REMOTE_CREDENTIAL", remote.credential.as_deref().unwrap()),
        ("RUSTBERG_WAREHOUSE", warehouse.as_str()),
        ("SPARK_JARS", jars.as_str()),
        ("RUSTBERG_STS_LIFETIME_S", &STS_LIFETIME_S.to_string()),
        ("RUSTBERG_RESTRICTED_CREDENTIAL", "analyst:analyst-secret"),
    ];
    // Blocking is fine here: the servers are processes of their own.
    run_pytest_in(&venv, "test_spark.py", &env, 900);
    eprintln!("the Spark scenario took {:.0?}", started.elapsed());

    // Spark read past its first credentials' expiry through the refresh route the loads named.
    let metrics = reqwest::get(format!("{}/metrics", server.base)).await.unwrap().text().await.unwrap();
    let refreshes: f64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with("rustberg_http_requests_total{")
                && l.contains("/credentials\"")
                && l.contains("status=\"200\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(refreshes > 0.0, "Spark never asked loadCredentials:\n{metrics}");
    let polls: f64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with("rustberg_http_requests_total{") && l.contains("/plan/{") && l.contains("method=\"GET\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(polls > 0.0, "Spark never polled for a plan:\n{metrics}");

    // What Spark wrote through its vended credentials is in the bucket, under the table.
    let listing = reqwest::get(format!("{}/lake?list-type=2&prefix=warehouse/", moto.url)).await.unwrap();
    let listing = listing.text().await.unwrap();
    for kind in [".parquet", "-m0.avro", ".metadata.json"] {
        assert!(listing.contains(kind), "no {kind} file in s3://lake/warehouse: {listing}");
    }
}

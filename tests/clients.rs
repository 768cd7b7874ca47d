//! Real clients and peers against real servers: the PyIceberg and DuckDB suites (in
//! `tests/python`), lakana-server as a rest-mount peer, and spec-generated requests
//! (schemathesis).
//!
//! The Python packages are installed into virtual environments on first use (the
//! clients' at `RUSTBERG_TEST_VENV`, default `target/test-venv`; each server or tool in
//! its own beside it), so a fresh machine with Python 3 needs no manual step.

use crate::support;

use std::process::Command;

use support::python::{pytest, pytest_with, repo_root, venv, venv_with};
use support::{redb_mount, Server};

#[test]
fn pyiceberg_end_to_end() {
    let server = Server::start("");
    pytest("test_pyiceberg.py", &server);
}

#[test]
fn duckdb_joins_a_mounted_table_with_a_root_table() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&redb_mount("prod", dir.path(), "default"));
    pytest("test_duckdb.py", &server);
}

#[test]
fn a_rest_mounted_table_reads_and_joins() {
    let remote = Server::start("");
    let remote_credential = remote.credential.clone().unwrap();
    let remote_env = [("REMOTE_URL", remote.base.as_str()), ("REMOTE_CREDENTIAL", remote_credential.as_str())];
    // A rest mount makes the whole catalog promise no writes, and clients believe
    // /v1/config: write Rustberg's own table first, then mount the remote.
    let server = Server::start("");
    pytest_with("test_rest_mount.py::test_prepare_both_catalogs", &server, &remote_env);
    let toml = format!(
        "[mount.partner]\nbackend = \"rest\"\ncatalog_url = \"{}\"\nowner = \"default\"\ntoken_env = \"PARTNER_TOKEN\"\n",
        remote.base
    );
    let token = remote.admin_token();
    let server = server.restart_with_env(&toml, &[("PARTNER_TOKEN", &token)]).unwrap_or_else(|out| panic!("{out}"));
    pytest_with("test_rest_mount.py::test_read_and_join_through_a_rest_mount", &server, &remote_env);
}

/// lakana-server, running on a free port with a throwaway database, until dropped.
struct Lakana {
    child: std::process::Child,
    url: String,
    token: String,
    _dir: tempfile::TempDir,
}

impl Drop for Lakana {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Lakana {
    fn start() -> Lakana {
        // Its own venv: a server's pins must not decide the clients' versions.
        let venv = venv().parent().unwrap().join("lakana-venv");
        let venv = venv_with(venv, "requirements-lakana.txt");
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let env = [
            ("LAKANA_DATABASE__URL", format!("sqlite:///{}/lakana.db", dir.path().display())),
            ("LAKANA_BOOTSTRAP_PAT_KEY_ID", "rustbergtest".to_string()),
            ("LAKANA_BOOTSTRAP_PAT_SECRET", "s3cretvalue".to_string()),
            ("LAKANA_PORT", port.to_string()),
        ];
        let server = venv.join("bin/lakana-server");
        let migrated = Command::new(&server).arg("migrate").envs(env.clone()).output().unwrap();
        assert!(migrated.status.success(), "{}", String::from_utf8_lossy(&migrated.stderr));
        let log = std::fs::File::create(dir.path().join("lakana.log")).unwrap();
        let child = Command::new(&server).envs(env).stdout(log.try_clone().unwrap()).stderr(log).spawn().unwrap();
        let lakana = Lakana {
            child,
            url: format!("http://127.0.0.1:{port}"),
            token: "lakana_pat_rustbergtest_s3cretvalue".into(),
            _dir: dir,
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let client = reqwest::Client::new();
            for _ in 0..300 {
                let ready = client.get(format!("{}/v1/config", lakana.url)).bearer_auth(&lakana.token).send().await;
                if ready.is_ok_and(|r| r.status().is_success()) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            let root = format!("file://{}/warehouse", lakana._dir.path().display());
            let created = client
                .post(format!("{}/api/v1/environments", lakana.url))
                .bearer_auth(&lakana.token)
                .json(&serde_json::json!({"name": "dev", "storage": {"scheme": "file", "root": root}}))
                .send()
                .await
                .unwrap();
            assert!(
                created.status().is_success(),
                "creating the lakana environment: {}",
                created.text().await.unwrap()
            );
        });
        lakana
    }
}

#[test]
fn lakana_server_mounted_read_only() {
    let lakana = Lakana::start();
    let env = [("LAKANA_URL", lakana.url.as_str()), ("LAKANA_TOKEN", lakana.token.as_str())];
    let plain = Server::start("");
    pytest_with("test_lakana.py::test_seed_lakana", &plain, &env);
    let toml = format!(
        "[mount.lk]\nbackend = \"rest\"\ncatalog_url = \"{}?warehouse=dev\"\nowner = \"default\"\ntoken_env = \"LK_TOKEN\"\n",
        lakana.url
    );
    let server = plain.restart_with_env(&toml, &[("LK_TOKEN", &lakana.token)]).unwrap_or_else(|out| panic!("{out}"));
    pytest_with("test_lakana.py::test_read_through_rustberg", &server, &env);
}

/// Spec-generated requests (schemathesis) against a seeded server find no 5xx and no
/// crash. Operations not served (they answer 501 by design) and DELETE (which would
/// remove the seed) are left out.
#[test]
fn spec_generated_requests_find_no_server_error() {
    let venv = venv_with(venv().parent().unwrap().join("schemathesis-venv"), "requirements-schemathesis.txt");
    let server = Server::start("[auth]\nanonymous = true\n");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        assert_eq!(server.post("/namespaces", serde_json::json!({"namespace": ["db"]})).await.0, 200);
        let table = serde_json::json!({"name": "t", "schema": support::schema()});
        assert_eq!(server.post("/namespaces/db/tables", table).await.0, 200);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
        let view = serde_json::json!({"name": "v", "schema": support::schema(), "view-version": {
            "version-id": 1, "schema-id": 0, "timestamp-ms": now, "summary": {},
            "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}], "default-namespace": ["db"]}});
        assert_eq!(server.post("/namespaces/db/views", view).await.0, 200);
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("schemathesis.toml"),
        "[parameters]\n\"path.prefix\" = \"catalog\"\n\"path.namespace\" = \"db\"\n\"path.table\" = \"t\"\n\"path.view\" = \"v\"\n",
    )
    .unwrap();
    let spec = repo_root().join("tests/fixtures/rest-catalog-open-api.yaml");
    let output = Command::new("timeout")
        .arg("600")
        .arg(venv.join("bin/schemathesis"))
        .args(["run"])
        .arg(&spec)
        .args(["--url", &server.base, "--checks", "not_a_server_error", "--max-examples", "25", "--workers", "1"])
        // A fixed seed keeps the run repeatable; the generator's own health checks say
        // nothing about the server and would make the test flaky.
        .args(["--seed", "20261129", "--suppress-health-check", "all"])
        .args(["--exclude-method", "DELETE", "--exclude-path-regex", "/functions|/unregister|/sign|/oauth"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    println!("{text}");
    assert!(output.status.success(), "schemathesis found failures:\n{text}");
}

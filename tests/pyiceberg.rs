//! Runs the real-client suites (PyIceberg and DuckDB, in `tests/python`) against a
//! real server.
//!
//! The Python packages are installed into a virtual environment on first use
//! (`RUSTBERG_TEST_VENV`, default `target/test-venv`), so a fresh machine with
//! Python 3 needs no manual step.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::Server;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The venv with the packages of `tests/python/requirements.txt`, created if missing.
fn venv() -> PathBuf {
    let venv = std::env::var_os("RUSTBERG_TEST_VENV").map(PathBuf::from).unwrap_or_else(|| {
        // The binary lives in <target>/<profile>/rustberg.
        Path::new(env!("CARGO_BIN_EXE_rustberg")).parent().unwrap().parent().unwrap().join("test-venv")
    });
    let python = venv.join("bin/python");
    let requirements = repo_root().join("tests/python/requirements.txt");
    let stamp = venv.join("requirements.installed");
    let wanted = std::fs::read_to_string(&requirements).unwrap();
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return venv;
    }
    if !python.exists() {
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 is needed for the client tests");
        assert!(status.success(), "creating the venv at {}", venv.display());
    }
    let status = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
        .arg(&requirements)
        .status()
        .unwrap();
    assert!(status.success(), "installing {}", requirements.display());
    std::fs::write(&stamp, wanted).unwrap();
    venv
}

fn pytest(file: &str, server: &Server) {
    pytest_with(file, server, &[]);
}

fn pytest_with(file: &str, server: &Server, env: &[(&str, &str)]) {
    let venv = venv();
    // A client can hang (DuckDB on a missing data file): bound the whole run.
    let output = Command::new("timeout")
        .arg("300")
        .arg(venv.join("bin/python"))
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", file])
        .current_dir(repo_root().join("tests/python"))
        .env("RUSTBERG_URL", &server.base)
        .env("RUSTBERG_CREDENTIAL", server.credential.as_deref().expect("a minted admin credential"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    println!("{text}");
    assert!(output.status.success(), "pytest {file} failed:\n{text}");
}

#[test]
fn pyiceberg_end_to_end() {
    let server = Server::start("");
    pytest("test_pyiceberg.py", &server);
}

#[test]
fn duckdb_joins_a_mounted_table_with_a_root_table() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&format!(
        "[mount.prod]\nbackend = \"native\"\ncatalog_url = \"redb://{}/prod.redb\"\nowner = \"default\"\n",
        dir.path().display()
    ));
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

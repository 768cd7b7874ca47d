//! Python for the client tests: venvs created on first use, and pytest runs
//! against a running server.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Server;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The client venv, with the packages of `tests/python/requirements.txt`.
pub fn venv() -> PathBuf {
    let venv = std::env::var_os("RUSTBERG_TEST_VENV").map(PathBuf::from).unwrap_or_else(|| {
        // The binary lives in <target>/<profile>/rustberg.
        Path::new(env!("CARGO_BIN_EXE_rustberg")).parent().unwrap().parent().unwrap().join("test-venv")
    });
    venv_with(venv, "requirements.txt")
}

/// A venv holding the packages of `tests/python/<requirements>`, created or updated if
/// they changed.
pub fn venv_with(venv: PathBuf, requirements: &str) -> PathBuf {
    // The tests of one binary run on threads: one installs while the others wait.
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _installing = INSTALLING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let python = venv.join("bin/python");
    let requirements = repo_root().join("tests/python").join(requirements);
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

pub fn pytest(file: &str, server: &Server) {
    pytest_with(file, server, &[]);
}

pub fn pytest_with(file: &str, server: &Server, env: &[(&str, &str)]) {
    let credential = server.credential.as_deref().expect("a minted admin credential");
    let mut all = vec![("RUSTBERG_URL", server.base.as_str()), ("RUSTBERG_CREDENTIAL", credential)];
    all.extend_from_slice(env);
    run_pytest(file, &all);
}

/// Runs one pytest file (or test) with exactly these variables added. The clients
/// get no AWS keys from the machine: storage credentials come from the catalog.
pub fn run_pytest(file: &str, env: &[(&str, &str)]) {
    run_pytest_in(&venv(), file, env, 300);
}

/// Runs one pytest file (or test) with the python of `venv`, as [`run_pytest`], for at
/// most `timeout_secs`.
pub fn run_pytest_in(venv: &Path, file: &str, env: &[(&str, &str)], timeout_secs: u32) {
    // A client can hang (DuckDB on a missing data file): bound the whole run.
    let output = Command::new("timeout")
        .arg(timeout_secs.to_string())
        .arg(venv.join("bin/python"))
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", file])
        .current_dir(repo_root().join("tests/python"))
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    println!("{text}");
    assert!(output.status.success(), "pytest {file} failed:\n{text}");
}

//! The authoring kit end to end: `rustberg plugin check`, `plugin new` and `plugin
//! test` as a backend author runs them, the contract's versioning, and the reference
//! backends in Python and JavaScript built with their real toolchains, passing the
//! conformance suite and serving PyIceberg as mounts.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use support::python::{pytest_with, repo_root};
use support::{components_dir, Server};

/// Runs `rustberg ARGS` and returns its exit code and everything it printed.
fn rustberg(args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_rustberg")).args(args).output().expect("running rustberg");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A build folder that outlives the test run (beside the binary), so toolchains are
/// installed once per machine.
fn build_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_rustberg")).parent().unwrap().join("plugin-kit").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a project's `build.sh`, writing the component to `out`.
fn build(script: &Path, out: &Path, env: &[(&str, &Path)]) {
    let output = Command::new("bash")
        .arg(script)
        .arg(out)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .output()
        .expect("running a build script");
    assert!(
        output.status.success(),
        "{} failed:\n{}{}",
        script.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The Python reference backend, built once per test run (componentize-py, pinned).
fn python_example() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = build_dir("examples").join("python.wasm");
        let venv = build_dir("python-venv");
        build(&repo_root().join("plugins/examples/python/build.sh"), &out, &[("PY_VENV", &venv)]);
        out
    })
}

/// The JavaScript reference backend, built once per test run (jco + componentize-js, pinned).
fn js_example() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = build_dir("examples").join("javascript.wasm");
        build(&repo_root().join("plugins/examples/javascript/build.sh"), &out, &[]);
        out
    })
}

fn kv_mount(name: &str, component: &Path, dir: &Path) -> String {
    format!(
        "[mount.{name}]\nbackend = \"{}\"\ncatalog_url = \"redb://{}/{name}.redb\"\nowner = \"default\"\n",
        component.display(),
        dir.display()
    )
}

/// The contract version this host implements, as the WIT declares it.
fn host_version() -> String {
    let wit = std::fs::read_to_string(repo_root().join("wit/catalog.wit")).unwrap();
    let line = wit.lines().find(|l| l.starts_with("package rustberg:catalog@")).unwrap();
    line.trim_start_matches("package rustberg:catalog@").trim_end_matches(';').to_string()
}

#[test]
fn plugin_check_names_the_contract_imports_and_the_verdict_of_a_mount() {
    let (code, out) = rustberg(&["plugin", "check", "native"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("rustberg:catalog@{} (this host: {}", host_version(), host_version())), "{out}");
    assert!(out.contains("world      kv-backend") && out.contains("rustberg:catalog/kv@"), "{out}");
    assert!(out.contains("rustberg:catalog/backend@"), "lists the exports: {out}");

    // A component importing http, judged by a kv mount: refused, naming the import.
    let dir = tempfile::tempdir().unwrap();
    let greedy = components_dir().join("greedy.wasm");
    let config = dir.path().join("rustberg.toml");
    std::fs::write(&config, kv_mount("lake", &greedy, dir.path())).unwrap();
    let (code, out) = rustberg(&["plugin", "check", path(&greedy), "--config", path(&config), "--mount", "lake"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("REFUSED  rustberg:catalog/http@") && out.contains("add \"http\""), "{out}");
    assert!(out.contains("mount `lake` would refuse it"), "{out}");
}

/// A component built against `rustberg:catalog@0.1.0` (the WIT frozen in
/// plugins/testing/legacy) keeps loading after the contract moved on.
#[tokio::test]
async fn a_component_built_against_the_first_contract_still_serves() {
    assert_ne!(host_version(), "0.1.0", "the contract has moved since 0.1.0");
    let legacy = components_dir().join("legacy.wasm");
    let (code, out) = rustberg(&["plugin", "check", path(&legacy)]);
    assert_eq!(code, 0, "{out}");
    let earlier = format!("rustberg:catalog@0.1.0 (this host: {}; loaded through its earlier series", host_version());
    assert!(out.contains(&earlier) && out.contains("Migrating from 0.1"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    let s =
        Server::start(&format!("{}[mount.old.config]\ncontract = \"0.1.0\"\n", kv_mount("old", &legacy, dir.path())));
    let (status, body) = s.get("/namespaces/old%1Flegacy").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["properties"]["contract"], "0.1.0", "{body}");
}

#[test]
fn the_conformance_suite_passes_the_native_backend_and_fails_a_broken_one() {
    let (code, out) = rustberg(&["plugin", "test", "native"]);
    assert_eq!(code, 0, "{out}");
    for case in [
        "nested namespaces",
        "8-way contention loses nothing",
        "transactions",
        "paging over 1,000 tables",
        "not found versus unavailable",
        "views",
    ] {
        assert!(out.contains(&format!("pass  {case}")), "{case} passes: {out}");
    }
    assert!(out.contains(" 0 failed, 0 skipped"), "{out}");
    assert!(out.contains("commit_table") && out.contains("peak linear memory"), "latency and memory: {out}");

    // Against a configured kv mount: its own store, and a store nobody reaches for the twin.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rustberg.toml");
    std::fs::write(
        &config,
        format!(
            "[mount.prod]\nbackend = \"native\"\ncatalog_url = \"redb://{}/prod.redb\"\nowner = \"acme\"\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let (code, out) = rustberg(&["plugin", "test", "native", "--config", path(&config), "--mount", "prod"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("against mount `prod`") && out.contains(" 0 failed, 0 skipped"), "{out}");

    // A backend that says it writes but refuses every write fails, case by case.
    let misbehave = components_dir().join("misbehave.wasm");
    let (code, out) = rustberg(&["plugin", "test", path(&misbehave)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  tables: creating table c_tables.t2: Unsupported"), "{out}");
    // It answers not-found without looking at its store: an absence it cannot know.
    assert!(out.contains("FAIL  not found versus unavailable: loading a namespace"), "{out}");
    // A read-only backend's write cases are skipped, and listed as skipped.
    let legacy = components_dir().join("legacy.wasm");
    let (_, out) = rustberg(&["plugin", "test", path(&legacy)]);
    assert!(out.contains("skip  views (the backend does not declare what createView needs)"), "{out}");
}

/// `plugin new --lang rust` writes a project that builds as it is and passes the suite;
/// the Python and JavaScript projects carry the reference backends tested below.
#[test]
fn a_new_rust_backend_builds_and_passes_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("acme-catalog");
    let (code, out) = rustberg(&["plugin", "new", path(&project), "--lang", "rust"]);
    assert_eq!(code, 1, "a project name is a name, not a path: {out}");
    let status = Command::new(env!("CARGO_BIN_EXE_rustberg"))
        .args(["plugin", "new", "acme-catalog", "--lang", "rust"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let wit = std::fs::read_to_string(project.join("wit/catalog.wit")).unwrap();
    assert!(wit.contains(&format!("package rustberg:catalog@{};", host_version())));
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    assert!(readme.contains("wit-bindgen` 0.63") && readme.contains("[mount.acme-catalog]"), "{readme}");

    let out = project.join("backend.wasm");
    build(&project.join("build.sh"), &out, &[("CARGO_TARGET_DIR", &build_dir("scaffold-rust-target"))]);
    let (code, report) = rustberg(&["plugin", "test", path(&out)]);
    assert_eq!(code, 0, "{report}");

    for (lang, file, example) in [("python", "app.py", "python/app.py"), ("js", "backend.js", "javascript/backend.js")]
    {
        let name = format!("new-{lang}");
        let status = Command::new(env!("CARGO_BIN_EXE_rustberg"))
            .args(["plugin", "new", &name, "--lang", lang])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let written = std::fs::read_to_string(dir.path().join(&name).join(file)).unwrap();
        let reference = std::fs::read_to_string(repo_root().join("plugins/examples").join(example)).unwrap();
        assert_eq!(written, reference, "{lang}: the project starts from the reference backend");
        assert!(dir.path().join(&name).join("build.sh").exists());
    }
}

fn example_passes_and_serves_pyiceberg(component: &Path, mount: &str) {
    let (code, report) = rustberg(&["plugin", "test", path(component)]);
    assert_eq!(code, 0, "{report}");
    assert!(report.contains(" 0 failed, 0 skipped"), "{report}");

    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&kv_mount(mount, component, dir.path()));
    pytest_with("test_plugin_example.py", &server, &[("RUSTBERG_MOUNT", mount)]);
    loads_take_the_built_in_path(&server, mount);
}

/// The examples declare what the native backend does (`table-location-only`,
/// `answers-from-keys`): the host holds their tables' metadata and keeps their answers
/// while the keys are unchanged, so repeated loads call the component once, and a
/// commit is seen by the next load.
fn loads_take_the_built_in_path(s: &Server, mount: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let loads = || async {
            let text = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
            let labels = [format!("mount=\"{mount}\""), "export=\"load_table\"".to_string()];
            text.lines()
                .filter(|l| l.starts_with("rustberg_backend_call_duration_seconds_count{"))
                .filter(|l| labels.iter().all(|label| l.contains(label.as_str())))
                .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
                .sum::<f64>()
        };
        let ns = format!("{mount}%1Fkept");
        assert_eq!(s.post("/namespaces", serde_json::json!({"namespace": [mount, "kept"]})).await.0, 200);
        let table = serde_json::json!({"name": "t", "schema": support::schema()});
        let (status, created) = s.post(&format!("/namespaces/{ns}/tables"), table).await;
        assert_eq!(status, 200, "{created}");
        let path = format!("/namespaces/{ns}/tables/t");
        let before = loads().await;
        for _ in 0..10 {
            let (status, loaded) = s.get(&path).await;
            assert_eq!(status, 200, "{loaded}");
            assert_eq!(loaded["metadata"]["table-uuid"], created["metadata"]["table-uuid"]);
        }
        assert!(loads().await - before <= 1.0, "10 loads called the component at most once");
        let uuid = created["metadata"]["table-uuid"].clone();
        let change = serde_json::json!({
            "requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
            "updates": [{"action": "set-properties", "updates": {"seen": "yes"}}],
        });
        assert_eq!(s.post(&path, change).await.0, 200);
        assert_eq!(s.get(&path).await.1["metadata"]["properties"]["seen"], "yes", "the commit is seen");
    });
}

#[test]
fn the_python_reference_backend_passes_the_suite_and_serves_pyiceberg() {
    example_passes_and_serves_pyiceberg(python_example(), "py");
}

#[test]
fn the_javascript_reference_backend_passes_the_suite_and_serves_pyiceberg() {
    example_passes_and_serves_pyiceberg(js_example(), "js");
}

/// CPython built the default way (the Python example, without `--stub-wasi`) imports WASI
/// sockets: linked for every component, with no address unless its mount grants `tcp`.
/// `plugin check` says which, and the component mounts and serves (the Python tests).
#[test]
fn a_default_componentize_py_build_loads_with_sockets_that_reach_nothing() {
    let component = python_example();
    let (code, report) = rustberg(&["plugin", "check", path(component)]);
    assert_eq!(code, 0, "{report}");
    assert!(report.contains("ok       wasi:sockets/tcp@"), "{report}");

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rustberg.toml");
    std::fs::write(&config, kv_mount("py", component, dir.path())).unwrap();
    let (code, report) = rustberg(&["plugin", "check", path(component), "--config", path(&config), "--mount", "py"]);
    assert_eq!(code, 0, "{report}");
    let sockets = report.lines().find(|l| l.contains("wasi:sockets/tcp@")).unwrap();
    assert!(sockets.contains("every address refused (the mount grants no tcp)"), "{report}");
    assert!(report.contains("mount `py` would accept it"), "{report}");
}

/// A gate's or a sink's component: what `plugin check` says it is, and `plugin test`
/// asking it what the server would.
#[test]
fn gates_and_sinks_are_checked_and_tested_as_what_they_are() {
    let gate = components_dir().join("example-gate.wasm");
    let (code, out) = rustberg(&["plugin", "check", path(&gate)]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("kind       gate") && out.contains("world      gate (needs no grant)"), "{out}");
    assert!(out.contains("rustberg:catalog/admission-gate@"), "{out}");
    let (code, out) = rustberg(&["plugin", "test", path(&gate)]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("refused: a table needs the property `owner`"), "the example's rule is applied: {out}");
    let (code, out) = rustberg(&["plugin", "test", path(&components_dir().join("unruly-gate.wasm"))]);
    assert_eq!(code, 0, "a gate that allows everything passes: {out}");

    let sink = components_dir().join("example-sink.wasm");
    let (code, out) = rustberg(&["plugin", "check", path(&sink)]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("kind       sink") && out.contains("http-sink (needs the http grant)"), "{out}");
    let (code, out) = rustberg(&["plugin", "test", path(&sink)]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("answered an error, which the server would retry"), "nothing listens here: {out}");

    // A backend is not a gate: a server refuses it as one (tested in gates), and
    // `plugin check` names what it is.
    let (code, out) = rustberg(&["plugin", "check", "native"]);
    assert!(code == 0 && out.contains("kind       backend"), "{out}");
}

/// `plugin new --kind gate|sink` writes projects from the examples: the Rust gate builds
/// as it is and passes its test; JavaScript is refused with the languages that work.
#[test]
fn a_new_rust_gate_builds_and_passes_its_test() {
    let dir = tempfile::tempdir().unwrap();
    let new = |name: &str, kind: &str, lang: &str| {
        Command::new(env!("CARGO_BIN_EXE_rustberg"))
            .args(["plugin", "new", name, "--kind", kind, "--lang", lang])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    assert!(new("acme-gate", "gate", "rust").status.success());
    let project = dir.path().join("acme-gate");
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    assert!(readme.contains("[gates.acme-gate]") && readme.contains("gate.wasm"), "{readme}");
    let out = project.join("gate.wasm");
    build(&project.join("build.sh"), &out, &[("CARGO_TARGET_DIR", &build_dir("scaffold-rust-target"))]);
    let (code, report) = rustberg(&["plugin", "test", path(&out)]);
    assert_eq!(code, 0, "{report}");

    for (kind, example) in [("gate", "python-gate"), ("sink", "python-sink")] {
        let name = format!("py-{kind}");
        assert!(new(&name, kind, "python").status.success());
        let written = std::fs::read_to_string(dir.path().join(&name).join("app.py")).unwrap();
        let reference =
            std::fs::read_to_string(repo_root().join("plugins/examples").join(example).join("app.py")).unwrap();
        assert_eq!(written, reference, "{kind}: the project starts from the Python example");
    }
    let refused = new("js-gate", "gate", "js");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("rust or python"));
}

/// The Python examples, built with componentize-py: the gate applies its rule in a real
/// server (a table without an owner is refused, naming the gate), the sink passes its test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_gate_and_sink_build_and_serve() {
    let venv = build_dir("python-venv");
    let gate = build_dir("examples").join("python-gate.wasm");
    build(&repo_root().join("plugins/examples/python-gate/build.sh"), &gate, &[("PY_VENV", &venv)]);
    let sink = build_dir("examples").join("python-sink.wasm");
    build(&repo_root().join("plugins/examples/python-sink/build.sh"), &sink, &[("PY_VENV", &venv)]);
    let (code, out) = rustberg(&["plugin", "test", path(&gate)]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("refused: a table needs the property `owner`"), "{out}");
    let (code, out) = rustberg(&["plugin", "test", path(&sink)]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("answered an error"), "{out}");

    let s = Server::start(&format!("[gates.py]\nplugin = \"{}\"\n", gate.display()));
    assert_eq!(s.post("/namespaces", serde_json::json!({"namespace": ["ns"]})).await.0, 200);
    let table = serde_json::json!({"name": "t", "schema": support::schema()});
    let refused = s.post("/namespaces/ns/tables", table).await;
    assert_eq!(refused.0, 403, "{}", refused.1);
    let message = refused.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("gate `py`") && message.contains("a table needs the property `owner`"), "{message}");
    let owned = serde_json::json!({"name": "t", "schema": support::schema(), "properties": {"owner": "ana"}});
    assert_eq!(s.post("/namespaces/ns/tables", owned).await.0, 200);
}

//! `rustberg plugin new`: a ready-to-build backend project in Rust, Python or
//! JavaScript, or a gate or sink project in Rust or Python. The sources are the
//! reference components themselves (the native backend, and the examples in
//! `plugins/examples/`), with the WIT of this host beside them.

use std::path::Path;

use anyhow::{bail, Context};

use crate::sandbox::contract::HOST_VERSION;

const WIT: &str = include_str!("../../../wit/catalog.wit");

/// The languages `plugin new` writes a project for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
}

/// The kinds of component `plugin new` writes a project for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Backend,
    Gate,
    Sink,
}

/// A file of a new project: its path, its contents, and whether `{name}`, `{crate}` and
/// `{version}` in it stand for the project's name, its Rust crate name and the
/// contract version (sources are copied as they are).
type File = (&'static str, String, bool);

/// A gate's or a sink's project in `lang`; refused for JavaScript (the examples are in
/// Rust and Python).
fn hook_files(kind: Kind, lang: Lang) -> anyhow::Result<Vec<File>> {
    let readme = include_str!("scaffold_hook_readme.md");
    let (noun, interface, what, test, config) = match kind {
        Kind::Gate => (
            "gate",
            "admission-gate",
            "It is asked about every change before it is made, and allows it or refuses it with a reason.",
            "one change of each kind, each verdict printed",
            "[gates.{name}]\nplugin = \"/path/to/gate.wasm\"\n\n[gates.{name}.config]\nrequired_property = \"owner\"",
        ),
        _ => (
            "sink",
            "event-sink",
            "It is handed the events of committed changes, in batches, in the order they were logged.",
            "a batch of sample events (its http origin answers nothing here)",
            "[events.plugin.{name}]\nplugin = \"/path/to/sink.wasm\"\ngrants = [\"http\"]\nurl    = \"https://receiver.example/events\"",
        ),
    };
    let readme = readme
        .replace("{kind}", noun)
        .replace("{interface}", interface)
        .replace("{what}", what)
        .replace("{test}", test)
        .replace("{config}", config);
    let mut files = match (kind, lang) {
        (Kind::Gate, Lang::Rust) => vec![(
            "src/lib.rs",
            include_str!("../../../plugins/examples/gate/src/lib.rs").replace("\"../../../wit\"", "\"wit\""),
            false,
        )],
        (Kind::Sink, Lang::Rust) => vec![(
            "src/lib.rs",
            include_str!("../../../plugins/examples/sink/src/lib.rs").replace("\"../../../wit\"", "\"wit\""),
            false,
        )],
        (Kind::Gate, Lang::Python) => vec![
            ("app.py", include_str!("../../../plugins/examples/python-gate/app.py").to_string(), false),
            ("build.sh", include_str!("../../../plugins/examples/python-gate/build.sh").to_string(), false),
        ],
        (Kind::Sink, Lang::Python) => vec![
            ("app.py", include_str!("../../../plugins/examples/python-sink/app.py").to_string(), false),
            ("build.sh", include_str!("../../../plugins/examples/python-sink/build.sh").to_string(), false),
        ],
        (_, Lang::Js) => bail!("a {noun} is written in rust or python (the examples are in those two)"),
        (Kind::Backend, _) => unreachable!("a backend's files are `files`"),
    };
    let build = match lang {
        Lang::Rust => {
            files.push(("Cargo.toml", RUST_MANIFEST.to_string(), true));
            files.push(("build.sh", RUST_BUILD.replace("backend.wasm", &format!("{noun}.wasm")), true));
            HOOK_RUST_README
        }
        _ => HOOK_PYTHON_README,
    };
    files.push(("README.md", readme.replace("{build}", build), true));
    files.push(("wit/catalog.wit", WIT.to_string(), false));
    files.push((".gitignore", format!("target/\n.venv/\n__pycache__/\n{noun}.wasm\n"), false));
    Ok(files)
}

const HOOK_RUST_README: &str = "Rust 1.95 or later with the `wasm32-wasip2` target \
(`rustup target add wasm32-wasip2`) and `wit-bindgen` 0.63. `src/lib.rs` is Rustberg's own example.";

const HOOK_PYTHON_README: &str = "Python 3.11 or later; `build.sh` installs `componentize-py` 0.25.1 \
into `.venv`. `app.py` is Rustberg's own example; module top-level code runs at build time and \
must not call host imports. `print` and tracebacks go to the server's log.";

fn files(lang: Lang) -> Vec<File> {
    let readme = include_str!("scaffold_readme.md");
    let mut files = match lang {
        Lang::Rust => vec![
            ("Cargo.toml", RUST_MANIFEST.to_string(), true),
            // The native backend, pointed at the WIT beside it.
            (
                "src/lib.rs",
                include_str!("../../../plugins/native/src/lib.rs").replace("\"../../wit\"", "\"wit\""),
                false,
            ),
            ("src/keys.rs", include_str!("../../../plugins/native/src/keys.rs").to_string(), false),
            ("src/codec.rs", include_str!("../../../plugins/native/src/codec.rs").to_string(), false),
            ("build.sh", RUST_BUILD.to_string(), true),
            ("README.md", readme.replace("{build}", RUST_README), true),
        ],
        Lang::Python => vec![
            ("app.py", include_str!("../../../plugins/examples/python/app.py").to_string(), false),
            ("build.sh", include_str!("../../../plugins/examples/python/build.sh").to_string(), false),
            ("README.md", readme.replace("{build}", PYTHON_README), true),
        ],
        Lang::Js => vec![
            ("backend.js", include_str!("../../../plugins/examples/javascript/backend.js").to_string(), false),
            ("build.sh", include_str!("../../../plugins/examples/javascript/build.sh").to_string(), false),
            ("package.json", include_str!("../../../plugins/examples/javascript/package.json").to_string(), false),
            (
                "package-lock.json",
                include_str!("../../../plugins/examples/javascript/package-lock.json").to_string(),
                false,
            ),
            ("README.md", readme.replace("{build}", JS_README), true),
        ],
    };
    files.push(("wit/catalog.wit", WIT.to_string(), false));
    files.push((".gitignore", "target/\nnode_modules/\n.venv/\n__pycache__/\nbackend.wasm\n".to_string(), false));
    files
}

const RUST_MANIFEST: &str = r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
wit-bindgen = "0.63"

[profile.release]
# Keep the names of functions, so that a trap's backtrace in the host log names them.
strip = "debuginfo"

# A project of its own, even inside another workspace.
[workspace]
"#;

const RUST_BUILD: &str = r#"#!/usr/bin/env bash
# Builds this backend into a component: ./build.sh [OUT.wasm] (default backend.wasm).
# Needs rustup's wasm32-wasip2 target: rustup target add wasm32-wasip2
set -euo pipefail
cd "$(dirname "$0")"
out="$(realpath -m "${1:-backend.wasm}")"
cargo build --release --target wasm32-wasip2
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{crate}.wasm" "$out"
"#;

const RUST_README: &str = "Rust 1.95 or later with the `wasm32-wasip2` target \
(`rustup target add wasm32-wasip2`) and `wit-bindgen` 0.63. `src/` is Rustberg's own native \
backend: namespaces, tables and views in the host's key space.";

const PYTHON_README: &str = "Python 3.11 or later; `build.sh` installs `componentize-py` 0.25.1 \
into `.venv` and builds the default way (CPython's WASI sockets and files are linked, with no \
address and no directory granted). `print` and tracebacks go to the mount's log; \
`wit_world.imports.log` writes leveled lines. The exported class must be called `Backend`; module top-level code \
runs at build time and must not call host imports. Raise \
`componentize_py_types.Err(types.Error_NotFound(\"…\"))` for a WIT error; any other \
exception is reported as `internal` with its text.";

const JS_README: &str = "Node.js 20 or later; `build.sh` installs `@bytecodealliance/jco` \
1.35.0 and `@bytecodealliance/componentize-js` 0.23.0 with `@bytecodealliance/preview2-shim` \
pinned to 0.25.0 (0.26.1 cannot read the build's own files) and builds with \
`-d http fetch-event` (the host refuses `wasi:http`). WIT errors are thrown as `{tag, val}`; \
`kv` errors arrive as a `ComponentError` whose `.payload` holds the variant; `u64` is a \
BigInt and `list<u8>` a Uint8Array.";

/// Writes a new project of `kind` called `name` into the directory `dir` (which must
/// not exist).
pub fn new(name: &str, kind: Kind, lang: Lang, dir: &Path) -> anyhow::Result<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        bail!("a plugin name is letters, digits, '-' and '_', not {name:?}");
    }
    let files = match kind {
        Kind::Backend => files(lang),
        _ => hook_files(kind, lang)?,
    };
    if dir.exists() {
        bail!("{} already exists", dir.display());
    }
    let crate_name = name.replace('-', "_");
    for (path, contents, templated) in files {
        let target = dir.join(path);
        std::fs::create_dir_all(target.parent().expect("a file in the project"))?;
        let contents = match templated {
            true => contents
                .replace("{name}", name)
                .replace("{crate}", &crate_name)
                .replace("{version}", &HOST_VERSION.to_string()),
            false => contents,
        };
        std::fs::write(&target, contents).with_context(|| format!("writing {}", target.display()))?;
        if path.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

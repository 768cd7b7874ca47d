//! `rustberg plugin new`: a ready-to-build backend project in Rust, Python or
//! JavaScript. The sources are the reference backends themselves (the native one,
//! and the examples in `plugins/examples/`), with the WIT of this host beside them.

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

/// A file of a new project: its path, its contents, and whether `{name}`, `{crate}` and
/// `{version}` in it stand for the project's name, its Rust crate name and the
/// contract version (sources are copied as they are).
type File = (&'static str, String, bool);

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

/// Writes a new project called `name` into the directory `dir` (which must not exist).
pub fn new(name: &str, lang: Lang, dir: &Path) -> anyhow::Result<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        bail!("a backend name is letters, digits, '-' and '_', not {name:?}");
    }
    if dir.exists() {
        bail!("{} already exists", dir.display());
    }
    let crate_name = name.replace('-', "_");
    for (path, contents, templated) in files(lang) {
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

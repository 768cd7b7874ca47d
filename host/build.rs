//! Builds the backend components (wasm32-wasip2) so that the built-in ones ship
//! inside the `rustberg` binary and the test components sit beside it.
//!
//! The components are built by a nested `cargo build` into their own target
//! directory (a second build directory lock, so no deadlock with the outer build).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";
/// The workspace profile the components are built with.
const PROFILE: &str = "components";
/// (package, file name in OUT_DIR)
const COMPONENTS: &[(&str, &str)] = &[
    ("rustberg-plugin-native", "native.wasm"),
    ("rustberg-plugin-rest", "rest.wasm"),
    ("rustberg-plugin-glue", "glue.wasm"),
    ("rustberg-plugin-s3tables", "s3tables.wasm"),
    ("rustberg-plugin-hms", "hms.wasm"),
    ("rustberg-plugin-misbehave", "misbehave.wasm"),
    ("rustberg-plugin-greedy", "greedy.wasm"),
    ("rustberg-plugin-flaky", "flaky.wasm"),
    ("rustberg-plugin-legacy", "legacy.wasm"),
    ("rustberg-plugin-rogue-placer", "rogue-placer.wasm"),
    ("rustberg-plugin-unruly-gate", "unruly-gate.wasm"),
    ("rustberg-plugin-example-gate", "example-gate.wasm"),
    ("rustberg-plugin-example-sink", "example-sink.wasm"),
];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().unwrap().to_path_buf();
    for dir in ["wit", "plugins"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    // The lock file pins the components' dependencies; the manifest holds their profile.
    for file in ["Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }

    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out.
    let target_root = out_dir.ancestors().nth(4).unwrap_or(&out_dir).to_path_buf();
    let wasm_target_dir = target_root.join("wasm-plugins");

    ensure_target();
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--profile", PROFILE, "--target", TARGET])
        .arg("--target-dir")
        .arg(&wasm_target_dir);
    for (package, _) in COMPONENTS {
        cmd.args(["-p", package]);
    }
    // Flags meant for the host build must not leak into the guest build.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_LLVM_COV",
        "LLVM_PROFILE_FILE",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("could not run cargo to build the backend components");
    if !status.success() {
        panic!(
            "building the backend components for {TARGET} failed; is the target installed? \
             (`rustup target add {TARGET}`)"
        );
    }

    let built = wasm_target_dir.join(TARGET).join(PROFILE);
    for (package, file) in COMPONENTS {
        let from = built.join(format!("{}.wasm", package.replace('-', "_")));
        copy(&from, &out_dir.join(file));
        // Its SHA-256 beside it: the compiled-component cache's key, so a start need
        // not hash the bytes embedded in the binary.
        let bytes = std::fs::read(&from).unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
        let digest = <sha2::Sha256 as sha2::Digest>::digest(&bytes);
        std::fs::write(out_dir.join(format!("{file}.sha256")), digest)
            .unwrap_or_else(|e| panic!("writing the digest of {file}: {e}"));
    }
    println!("cargo:rustc-env=RUSTBERG_COMPONENTS_DIR={}", out_dir.display());
    pack_relative_relocations();
}

/// Links the server with its relative relocations packed (DT_RELR): unpacked, the
/// dynamic loader reads about 1.2 MB of them at every start, and those pages stay
/// resident (idle RSS, issue 15). glibc reads packed ones from 2.36 on; lld and GNU ld
/// 2.38 or later write them.
fn pack_relative_relocations() {
    let target = |key: &str| env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bin=rustberg=-Wl,-z,pack-relative-relocs");
    }
}

/// Installs the wasm32-wasip2 standard library with rustup when it is missing, so
/// a fresh machine with only the Rust toolchain builds without a manual step.
fn ensure_target() {
    let sysroot = Command::new(env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = sysroot.map(|s| s.join("lib/rustlib").join(TARGET).exists()).unwrap_or(false);
    if !installed {
        let _ = Command::new("rustup").args(["target", "add", TARGET]).status();
    }
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("copying {} to {}: {e}", from.display(), to.display()));
}

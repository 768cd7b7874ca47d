//! The rooms of `host/src` keep the layer order docs/architecture.md declares: a room
//! imports only rooms listed before it. Read from the source, not from the compiler:
//! every `crate::<room>` path outside a file's test module.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The rooms, bottom first, as docs/architecture.md's "Layers" section numbers them.
fn declared_layers() -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let section = doc.split("\n## Layers\n").nth(1).expect("docs/architecture.md has a Layers section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once(". `")?;
            number.chars().all(|c| c.is_ascii_digit()).then(|| rest.split('`').next().unwrap().to_string())
        })
        .collect()
}

/// The code of a source file without its comments and its test module (tests may use
/// any room: they stand outside the layers).
fn code_of(source: &str) -> String {
    let source = source.split("#[cfg(test)]\nmod tests").next().unwrap();
    source.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The rooms a file's code names: `crate::room…`, and each first name in `crate::{…}`.
fn rooms_used(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut used = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // First names at depth one of the group: `crate::{a::X, b::{Y, Z}}` uses a and b.
            let (mut depth, mut expect) = (1, true);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => break,
                    '}' => depth -= 1,
                    ',' if depth == 1 => expect = true,
                    c if expect && (c.is_alphanumeric() || c == '_') => {
                        used.insert(ident(&group[i..]));
                        expect = false;
                    }
                    _ => {}
                }
            }
        } else {
            used.insert(ident(rest));
        }
    }
    used
}

fn source_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Every room import against the order, as `file: room -> room`.
fn upward_imports(src: &Path, layers: &[String]) -> Vec<String> {
    let rank: HashMap<&str, usize> = layers.iter().enumerate().map(|(i, room)| (room.as_str(), i)).collect();
    let mut files = Vec::new();
    source_files(src, &mut files);
    let mut upward = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap().to_string_lossy().into_owned();
        let room = relative.split('/').next().unwrap().trim_end_matches(".rs").to_string();
        let Some(&own) = rank.get(room.as_str()) else { continue };
        for used in rooms_used(&code_of(&std::fs::read_to_string(&file).unwrap())) {
            if rank.get(used.as_str()).is_some_and(|&theirs| theirs > own) {
                upward.push(format!("{relative}: {room} -> {used}"));
            }
        }
    }
    upward.sort();
    upward
}

#[test]
fn every_room_is_placed_and_imports_only_rooms_below_it() {
    let layers = declared_layers();
    let src = repo().join("host/src");
    // Every `pub mod` of lib.rs is a room of the list, and every room of the list is one.
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let rooms: BTreeSet<String> =
        lib.lines().filter_map(|l| l.strip_prefix("pub mod ")).map(|l| l.trim_end_matches(';').to_string()).collect();
    assert_eq!(
        rooms,
        layers.iter().cloned().collect::<BTreeSet<_>>(),
        "docs/architecture.md's layers are lib.rs's rooms"
    );
    let upward = upward_imports(&src, &layers);
    assert!(upward.is_empty(), "imports against the layer order of docs/architecture.md:\n{}", upward.join("\n"));
}

/// The check sees an upward import, in a `use`, in a group and in a path in code, and
/// skips comments and test modules.
#[test]
fn the_layer_check_sees_upward_imports() {
    let dir = std::env::temp_dir().join(format!("rustberg-layers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("low")).unwrap();
    let layers = ["low".to_string(), "mid".to_string(), "high".to_string()];
    let write = |name: &str, code: &str| std::fs::write(dir.join(name), code).unwrap();
    write("low/mod.rs", "use crate::{mid::{A, B}, low::C};\n// crate::high in a comment\n");
    write("low/inner.rs", "fn f() { crate::high::g() }\n#[cfg(test)]\nmod tests { use crate::high::H; }\n");
    write("mid.rs", "use crate::low::C;\n#[cfg(test)]\nmod tests { use crate::high::H; }\n");
    let upward = upward_imports(&dir, &layers);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(upward, ["low/inner.rs: low -> high", "low/mod.rs: low -> mid"]);
}

/// Request state travels by parameter (the caller and its request, an attempt at a
/// change): a task-local is invisible in a function's signature and silently lost by a
/// spawned task.
#[test]
fn no_task_local_carries_request_state() {
    let mut files = Vec::new();
    source_files(&repo().join("host/src"), &mut files);
    let holding: Vec<String> = files
        .iter()
        .filter(|file| std::fs::read_to_string(file).unwrap().contains(concat!("task_local", "!")))
        .map(|file| file.display().to_string())
        .collect();
    assert!(holding.is_empty(), "task-locals in {holding:?}");
}

/// About 400 lines of code (tests aside) at most per source file, unless its opening
/// comment says why ("Over 400 lines: ...", or that it is generated).
#[test]
fn no_source_file_is_long_without_a_stated_reason() {
    const ABOUT: usize = 420;
    let mut files = Vec::new();
    source_files(&repo().join("host/src"), &mut files);
    for plugin in std::fs::read_dir(repo().join("plugins")).unwrap() {
        let dir = plugin.unwrap().path();
        for src in [dir.join("src"), dir.join("host/src")] {
            if src.is_dir() {
                source_files(&src, &mut files);
            }
        }
    }
    assert!(files.len() > 100, "the sources were found: {}", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let code = text.lines().take_while(|line| !line.starts_with("#[cfg(test)]")).count();
            let opening: String = text.lines().take_while(|line| line.starts_with("//")).collect::<Vec<_>>().join("\n");
            let reason = opening.contains("Over 400 lines:") || opening.contains("Generated");
            (code > ABOUT && !reason).then(|| format!("{} ({code} lines)", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "long files without a stated reason: {long:?}");
}

//! Compiled components on disk: one `.cwasm` per (component content, engine), shared
//! by every data directory and process that points at the same folder, kept under a
//! size budget by evicting the entries used longest ago.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use wasmtime::component::Component;
use wasmtime::Engine;

use super::builtin::Wasm;

pub struct ComponentCache {
    engine: Engine,
    dir: PathBuf,
    max_bytes: u64,
    /// Distinguishes this engine's files from another wasmtime's or another configuration's.
    engine_hash: u64,
}

impl ComponentCache {
    pub fn new(engine: &Engine, dir: PathBuf, max_bytes: u64) -> Self {
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Self { engine: engine.clone(), dir, max_bytes, engine_hash: hasher.finish() }
    }

    fn file(&self, digest: &[u8; 32]) -> PathBuf {
        self.dir.join(format!(
            "{}-{:016x}.cwasm",
            base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &digest[..16]),
            self.engine_hash
        ))
    }

    /// The compiled component: from the cache, or compiled now and stored (saying how
    /// long it took, for `label`).
    pub fn component(&self, wasm: &Wasm, label: &str) -> wasmtime::Result<Component> {
        let file = self.file(wasm.digest());
        if file.exists() {
            // SAFETY: only this cache writes `.cwasm` files under names that carry the
            // digest of the source and the engine's compatibility hash; wasmtime checks
            // the header of what it maps.
            if let Ok(component) = unsafe { Component::deserialize_file(&self.engine, &file) } {
                mark_used(&file);
                return Ok(component);
            }
        }
        let started = Instant::now();
        let compiled = self.engine.precompile_component(wasm)?;
        let took = started.elapsed();
        println!(
            "rustberg: {label}: compiled its component ({} KiB) in {:.1} s; cached in {}",
            wasm.len() / 1024,
            took.as_secs_f64(),
            self.dir.display()
        );
        tracing::info!(component = label, ms = took.as_millis() as u64, "compiled a component");
        if let Err(e) = self.store(&file, &compiled) {
            tracing::warn!(dir = %self.dir.display(), "cannot cache a compiled component: {e}");
        }
        // SAFETY: these bytes were produced by `precompile_component` just above.
        unsafe { Component::deserialize(&self.engine, &compiled) }
    }

    fn store(&self, file: &Path, compiled: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        // A name no other writer uses; the rename makes the entry appear whole.
        let tmp = file.with_extension(format!("tmp-{}", uuid::Uuid::new_v4()));
        std::fs::write(&tmp, compiled)?;
        std::fs::rename(&tmp, file)?;
        self.evict(file);
        Ok(())
    }

    /// Removes the entries used longest ago until the cache fits its budget; `keep`
    /// (the entry just written) stays whatever its size.
    fn evict(&self, keep: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|(_, len, _)| len).sum();
        files.sort();
        for (_, len, path) in files {
            if total <= self.max_bytes {
                break;
            }
            if path != keep && std::fs::remove_file(&path).is_ok() {
                tracing::info!(file = %path.display(), "evicted a compiled component from the cache");
                total -= len;
            }
        }
    }
}

/// Records a use, so eviction takes the entries used longest ago.
fn mark_used(file: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(file) {
        let _ = f.set_modified(SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest component there is.
    const EMPTY: &[u8] = b"\0asm\x0d\0\x01\0";

    fn engine() -> Engine {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        Engine::new(&config).unwrap()
    }

    fn cwasm_files(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files
    }

    #[test]
    fn one_compile_serves_every_cache_user_and_the_oldest_entries_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let empty = Wasm::new(EMPTY.to_vec());
        let cache = ComponentCache::new(&engine, dir.path().into(), u64::MAX);
        cache.component(&empty, "test").unwrap();
        let first = cwasm_files(dir.path());
        assert_eq!(first.len(), 1);
        // A second user of the folder (another data directory) finds it.
        let other = ComponentCache::new(&engine, dir.path().into(), u64::MAX);
        assert_eq!(other.file(empty.digest()), first[0]);
        other.component(&empty, "test").unwrap();
        assert_eq!(cwasm_files(dir.path()), first);

        // Stale entries of other components: the oldest is evicted first, the newest stays.
        let size = std::fs::metadata(&first[0]).unwrap().len();
        let old = dir.path().join("old-0.cwasm");
        let recent = dir.path().join("recent-0.cwasm");
        for (path, age) in [(&old, 3600), (&recent, 60)] {
            std::fs::write(path, vec![0; size as usize]).unwrap();
            let f = std::fs::File::options().append(true).open(path).unwrap();
            f.set_modified(SystemTime::now() - std::time::Duration::from_secs(age)).unwrap();
        }
        std::fs::remove_file(&first[0]).unwrap();
        let tight = ComponentCache::new(&engine, dir.path().into(), 2 * size + size / 2);
        tight.component(&empty, "test").unwrap();
        let left = cwasm_files(dir.path());
        assert!(!left.contains(&old), "the entry used longest ago is evicted: {left:?}");
        assert!(left.contains(&recent) && left.contains(&first[0]), "{left:?}");
    }
}

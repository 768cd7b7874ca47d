//! The admin a server without a configured one mints: created at the first start, kept
//! hashed in the host key space, its secret shown once and written to a 0600 file in
//! the data directory, so a restart keeps every client configuration working.
//! `rustberg admin reset-credential` replaces it (and with it every token it had).

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::directory::{hash_secret, Principal, Role};
use crate::storage::kv::{Check, KvStore, Write};

const KEY: &[u8] = b"minted-admin";
const FILE: &str = "admin-credential";

/// What is kept: the principal's id (new at every reset, so old tokens stop working)
/// and the hash of its secret.
#[derive(Serialize, Deserialize)]
struct Stored {
    id: String,
    secret_hash: String,
}

/// The minted admin, and its secret when it was minted just now (to be shown).
pub struct MintedAdmin {
    pub principal: Principal,
    pub new_secret: Option<String>,
    /// The file holding `admin:<secret>`.
    pub file: PathBuf,
}

fn principal(stored: Stored) -> Principal {
    Principal {
        id: stored.id,
        name: "admin".into(),
        tenant: "default".into(),
        role: Role::Admin,
        server_admin: true,
        secret_hash: Some(stored.secret_hash),
        oidc: None,
    }
}

fn mint() -> (String, Stored) {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    let secret = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, bytes);
    let stored = Stored { id: uuid::Uuid::now_v7().simple().to_string(), secret_hash: hash_secret(&secret) };
    (secret, stored)
}

/// Writes `admin:<secret>` to the credential file, readable by its owner only.
fn write_file(data_dir: &Path, secret: &str) -> anyhow::Result<PathBuf> {
    let path = data_dir.join(FILE);
    let _ = std::fs::remove_file(&path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    writeln!(file, "admin:{secret}")?;
    Ok(path)
}

/// The admin minted at the first start, or a new one if this is the first start.
pub async fn load_or_mint(host: &KvStore, data_dir: &Path) -> anyhow::Result<MintedAdmin> {
    let file = data_dir.join(FILE);
    if let Some(entry) = host.get(KEY).await? {
        let stored: Stored = serde_json::from_slice(&entry.value).context("the stored admin credential is corrupt")?;
        return Ok(MintedAdmin { principal: principal(stored), new_secret: None, file });
    }
    let (secret, stored) = mint();
    let value = serde_json::to_vec(&stored)?;
    // Hosts sharing one database may start together: the first stored admin wins.
    let won = host.commit(&[Check::Absent(KEY.to_vec())], &[Write { key: KEY.to_vec(), value: Some(value) }]).await;
    if won.is_err() {
        return Box::pin(load_or_mint(host, data_dir)).await;
    }
    let file = write_file(data_dir, &secret)?;
    Ok(MintedAdmin { principal: principal(stored), new_secret: Some(secret), file })
}

/// Replaces the minted admin's secret and id; returns the new secret.
pub async fn reset(host: &KvStore, data_dir: &Path) -> anyhow::Result<(String, PathBuf)> {
    let (secret, stored) = mint();
    host.commit(&[], &[Write { key: KEY.to_vec(), value: Some(serde_json::to_vec(&stored)?) }]).await?;
    let file = write_file(data_dir, &secret)?;
    Ok((secret, file))
}

//! Grants: stored in the host key space (one key per grant), decided from the
//! in-memory snapshot.

use serde::{Deserialize, Serialize};

use super::{end_of, store_err, Authorizer, Privilege, Resource};
use crate::error::Error;
use crate::storage::kv::{Check, KvStore, Write};

/// Who a grant is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grantee {
    Principal(String),
    Tenant(String),
}

/// A privilege on a resource, given to a principal or a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    pub id: String,
    pub resource: Resource,
    pub privilege: Privilege,
    pub grantee: Grantee,
}

const GRANT: &str = "grant/";

pub(super) fn key(id: &str) -> Vec<u8> {
    format!("{GRANT}{id}").into_bytes()
}

/// The write that stores `grant`.
pub(super) fn write(grant: &Grant) -> Result<Write, Error> {
    let value = serde_json::to_vec(grant).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(Write { key: key(&grant.id), value: Some(value) })
}

/// Reads every stored grant.
pub(super) async fn load(space: &KvStore) -> Result<Vec<Grant>, Error> {
    space
        .scan(GRANT.as_bytes(), Some(&end_of(GRANT)), usize::MAX)
        .await
        .map_err(store_err)?
        .iter()
        .map(|e| {
            serde_json::from_slice(&e.value).map_err(|e| Error::Internal(format!("a stored grant is corrupt: {e}")))
        })
        .collect()
}

impl Authorizer {
    /// Every grant.
    pub async fn all_grants(&self) -> Result<Vec<Grant>, Error> {
        Ok(self.current().await?.grants.values().flatten().cloned().collect())
    }

    /// Looks a grant up by id.
    pub async fn grant(&self, id: &str) -> Result<Option<Grant>, Error> {
        Ok(self.current().await?.grants.values().flatten().find(|g| g.id == id).cloned())
    }

    /// Records a grant.
    pub async fn add_grant(&self, resource: Resource, privilege: Privilege, grantee: Grantee) -> Result<Grant, Error> {
        let grant = Grant { id: uuid::Uuid::now_v7().simple().to_string(), resource, privilege, grantee };
        self.change(vec![write(&grant)?]).await?;
        Ok(grant)
    }

    /// Revokes the grants `doomed` selects, returning them.
    async fn revoke_where(&self, doomed: impl Fn(&Grant) -> bool) -> Result<Vec<Grant>, Error> {
        let gone: Vec<Grant> = self.all_grants().await?.into_iter().filter(|g| doomed(g)).collect();
        if !gone.is_empty() {
            self.change(gone.iter().map(|g| Write { key: key(&g.id), value: None }).collect()).await?;
        }
        Ok(gone)
    }

    /// Revokes a grant; false if there was none.
    pub async fn revoke(&self, id: &str) -> Result<bool, Error> {
        Ok(!self.revoke_where(|g| g.id == id).await?.is_empty())
    }

    /// Removes a principal or tenant and every grant it holds, in one commit:
    /// `removal` is the directory's own check and write for it. False if the check
    /// failed (it was not there).
    pub async fn remove_grantee(&self, grantee: &Grantee, removal: (Check, Vec<Write>)) -> Result<bool, Error> {
        let (check, mut writes) = removal;
        for grant in self.all_grants().await?.iter().filter(|g| &g.grantee == grantee) {
            writes.push(Write { key: key(&grant.id), value: None });
        }
        self.change_if(&[check], writes).await
    }
}

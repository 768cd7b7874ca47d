//! Grants: stored in the host key space (one key per grant), decided from memory.

use serde::{Deserialize, Serialize};

use super::state::grant_key;
use super::{Authorizer, Privilege, Resource};
use crate::error::Error;
use crate::storage::kv::{Check, Durability, Write};

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

/// The write that stores `grant`.
pub(super) fn write(grant: &Grant) -> Result<Write, Error> {
    let value = serde_json::to_vec(grant).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(Write { key: grant_key(&grant.id), value: Some(value) })
}

/// The write that removes `grant`.
pub(super) fn removal(grant: &Grant) -> Write {
    Write { key: grant_key(&grant.id), value: None }
}

impl Authorizer {
    /// Every grant.
    pub async fn all_grants(&self) -> Result<Vec<Grant>, Error> {
        Ok(self.current().await?.state.grants().cloned().collect())
    }

    /// Looks a grant up by id.
    pub async fn grant(&self, id: &str) -> Result<Option<Grant>, Error> {
        Ok(self.current().await?.state.grant(id).cloned())
    }

    /// The grants on resources under the root namespace `root`.
    pub(super) async fn grants_on_root(&self, root: &str) -> Result<Vec<Grant>, Error> {
        Ok(self.current().await?.state.on_root(root).cloned().collect())
    }

    /// Records a grant.
    pub async fn add_grant(&self, resource: Resource, privilege: Privilege, grantee: Grantee) -> Result<Grant, Error> {
        let grant = Grant { id: uuid::Uuid::now_v7().simple().to_string(), resource, privilege, grantee };
        self.change(vec![write(&grant)?]).await?;
        Ok(grant)
    }

    /// Revokes a grant; false if there was none.
    pub async fn revoke(&self, id: &str) -> Result<bool, Error> {
        let Some(grant) = self.grant(id).await? else { return Ok(false) };
        self.change(vec![removal(&grant)]).await?;
        Ok(true)
    }

    /// Removes a principal or tenant and every grant it holds, in one commit:
    /// `gone` is the directory's own check and write for it. False if the check
    /// failed (it was not there). (Reads every grant: removing a grantee is rare.)
    pub async fn remove_grantee(&self, grantee: &Grantee, gone: (Check, Vec<Write>)) -> Result<bool, Error> {
        let (check, mut writes) = gone;
        for grant in self.all_grants().await?.iter().filter(|g| &g.grantee == grantee) {
            writes.push(removal(grant));
        }
        self.change_if(&[check], writes, Durability::Now).await
    }
}

//! loadTable for a caller read policies restrict: the table's metadata with the spec's
//! `read-restrictions`, and nothing that reaches its raw files — no vended credentials,
//! no remote signing, and none of the backend's own `config` (a remote catalog's may
//! carry credentials). Its reads go through server-side planning (`scan`), which plans
//! only the files its row filter may match and hands out a credential per file.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};

use super::etag::{self, IfNoneMatch, Representation, Tag};
use super::forwarded::{self, Request};
use super::members::{Kind, Resolved};
use super::model::{Snapshots, TableResult};
use super::Endpoint;
use crate::authz::Policy;
use crate::error::Error;
use crate::scan::restrictions;
use crate::tables;

/// loadTable for a caller that `policies` (not empty) restrict.
pub async fn load(
    resolved: &Resolved<'_>,
    policies: &[Arc<Policy>],
    snapshots: Snapshots,
    if_none_match: IfNoneMatch,
) -> Result<Response, Error> {
    let Resolved { mount, ident, access } = resolved;
    // The client's access delegation is not passed on: a remote catalog would vend.
    let pointer = match tables::load(mount, ident, None).await {
        Ok(pointer) => pointer,
        Err(e) => {
            let read = Request::new(Endpoint::LoadTable, Default::default()).in_namespace(&ident.namespace);
            return Err(forwarded::exact(mount, read.named(&ident.name), e).await);
        }
    };
    // The restrictions are a function of the policies and the metadata (its schema).
    let fingerprint = restrictions::fingerprint(policies);
    let digest =
        Representation::table(&pointer.metadata_location, snapshots, &[], "").restricted(&fingerprint).digest();
    if let Some(held) = if_none_match.fresh(digest) {
        return Ok(held.not_modified());
    }
    let loaded = tables::servable(mount, pointer).await?;
    let metadata = loaded.held.metadata().map_err(|e| Error::Internal(format!("{}: {e}", mount.label())))?;
    let restricted = restrictions::resolve(policies, metadata.current_schema());
    access.audit_restricted(&resolved.resource(Kind::Table), &restricted.policies);
    let metadata_json = super::tables::metadata_json(mount, &loaded, snapshots)?;
    let read_restrictions = restricted.read_restrictions.to_string();
    let response = TableResult {
        metadata_location: Some(&loaded.pointer.metadata_location),
        metadata_json,
        config: Some(&[]),
        storage_credentials: "",
        remote_signing: false,
        read_restrictions: Some(&read_restrictions),
    };
    Ok(etag::tagged(response.into_response(), Some(Tag::new(digest, None))))
}

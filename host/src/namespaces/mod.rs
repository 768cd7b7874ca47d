//! Namespace semantics on top of a backend: where a new namespace is placed and its
//! location claimed, who owns a new root, what a drop forgets, and what may not change.
//! Where the backend's commit can carry the host's records (`plugins::riders`), a create
//! or a drop is one durable commit with them; otherwise it runs under an intent
//! (`recovery`). `api::namespaces` parses, authorizes, routes and shapes the answers.

mod create;
mod drop;
mod properties;

pub use create::create;
pub use drop::drop;
pub use properties::{load, load_located, update_properties};

use crate::error::Error;
use crate::mounts::Mount;
use crate::storage::location_index::ClaimId;

/// A namespace as the client names it (`ns`) and as its mount's backend does (`local`).
#[derive(Clone, Copy)]
pub struct Routed<'a> {
    pub mount: &'a Mount,
    pub local: &'a [String],
    pub ns: &'a [String],
}

impl Routed<'_> {
    /// The same namespace always claims under the same id, so a create retried after an
    /// unknown outcome finds its own claim.
    fn claim_id(&self) -> ClaimId {
        ClaimId::of_namespace(&self.mount.space, self.local)
    }

    /// Refuses to change a mount root: it is configuration, not a namespace of a backend.
    fn refuse_mount_root(&self, what: &str) -> Result<(), Error> {
        match &self.mount.name {
            Some(name) if self.local.is_empty() => {
                Err(Error::BadRequest(format!("{name} is the root of {}: it cannot {what}", self.mount.label())))
            }
            _ => Ok(()),
        }
    }
}

/// The absence of `ns`, whatever the backend said.
pub fn absent(ns: &[String]) -> impl FnOnce(String) -> Error + '_ {
    move |_| Error::no_such_namespace(ns.join("."))
}

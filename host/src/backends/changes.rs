//! A mount's backend in an attempt at a change: the calls that take the [`Attempt`] by
//! parameter (what the backend read, and a host commit to carry), and the same calls on
//! their own.

use super::calls::{call_export, Backend};
use crate::sandbox::attempt::{Attempt, Ridden, Rider};
use crate::sandbox::bindings::{in_series, Features, Ident, Pointer, TableCommit};
use crate::sandbox::BackendError;
use crate::storage::kv::KvStore;

impl Backend {
    /// A new attempt at a change (a load and the swap it prepares): a backend that
    /// checks what it read is answered a key it reads again from its first read.
    pub fn attempt(&self) -> Attempt {
        match self.does(Features::CHECKS_WHAT_IT_READ) {
            true => Attempt::reusing_reads(),
            false => Attempt::default(),
        }
    }

    /// Whether a namespace's create here can carry a commit of the host's to `space`:
    /// the backend makes it in one commit, to a key space of the same redb file. (Not
    /// on Postgres: there the owners' and grants' changes go through the change log
    /// other hosts read, `authz::changes`, which a rider would pass by.)
    pub fn carries_riders_to(&self, space: &KvStore) -> bool {
        self.does(Features::ONE_COMMIT_NAMESPACE_CHANGES) && self.key_space().is_some_and(|kv| kv.same_file(space))
    }

    /// Creates a namespace, its commit carrying `rider`; how the rider fared too.
    pub async fn create_namespace_carrying(
        &self,
        ns: Vec<String>,
        props: Vec<(String, String)>,
        rider: Rider,
    ) -> (Result<Vec<(String, String)>, BackendError>, Ridden) {
        let mut attempt = Attempt::carrying(rider);
        let created =
            call_export!(self, create_namespace, Some(&mut attempt), call_create_namespace(&ns, &props)).await;
        (created, attempt.ridden())
    }

    /// Drops a namespace, its commit carrying `rider`; how the rider fared too.
    pub async fn drop_namespace_carrying(&self, ns: Vec<String>, rider: Rider) -> (Result<(), BackendError>, Ridden) {
        let mut attempt = Attempt::carrying(rider);
        let dropped = call_export!(self, drop_namespace, Some(&mut attempt), call_drop_namespace(&ns)).await;
        (dropped, attempt.ridden())
    }

    /// Compare-and-swap of a table pointer, on its own.
    pub async fn commit_table(&self, table: Ident, expected: String, new: Pointer) -> Result<(), BackendError> {
        self.commit_table_in(&mut Attempt::default(), table, expected, new).await
    }

    /// Compare-and-swap of several table pointers at once, on its own.
    pub async fn commit_transaction(&self, commits: Vec<TableCommit>) -> Result<(), BackendError> {
        self.commit_transaction_in(&mut Attempt::default(), commits).await
    }

    /// Records a new table, in `attempt` (whose commit may carry the host's).
    pub async fn create_table_in(
        &self,
        attempt: &mut Attempt,
        table: Ident,
        pointer: Pointer,
    ) -> Result<(), BackendError> {
        call_export!(self, create_table, Some(attempt), call_create_table(&table, &pointer)).await
    }

    /// Compare-and-swap of a table pointer, in `attempt`.
    pub async fn commit_table_in(
        &self,
        attempt: &mut Attempt,
        table: Ident,
        expected: String,
        new: Pointer,
    ) -> Result<(), BackendError> {
        call_export!(self, commit_table, Some(attempt), call_commit_table(&table, &expected, &new)).await
    }

    /// Compare-and-swap of several table pointers at once, in `attempt`.
    pub async fn commit_transaction_in(
        &self,
        attempt: &mut Attempt,
        commits: Vec<TableCommit>,
    ) -> Result<(), BackendError> {
        call_export!(self, commit_transaction, Some(attempt), call_commit_transaction(&commits)).await
    }
}

//! Checking a commit's requirements against the current metadata. A failure is worded
//! as Iceberg's own catalogs word it ("Requirement failed: current schema changed:
//! expected id 1 != 0"): clients show it, and Iceberg's compatibility kit matches on it.

use iceberg::spec::TableMetadata;
use iceberg::TableRequirement;

use crate::error::Error;

/// `Ok` when every requirement holds; the first that fails, as a 409.
pub fn check(requirements: &[TableRequirement], current: &TableMetadata) -> Result<(), Error> {
    if skipped_for_the_checker_test() {
        return Ok(());
    }
    requirements.iter().try_for_each(|r| match failure(r, current) {
        Some(why) => Err(Error::CommitFailed(format!("Requirement failed: {why}"))),
        None => Ok(()),
    })
}

/// Why a requirement fails against an existing table's metadata; `None` if it holds.
fn failure(requirement: &TableRequirement, current: &TableMetadata) -> Option<String> {
    let changed = |what: &str, expected: i64, actual: i64| {
        (expected != actual).then(|| format!("{what} changed: expected id {expected} != {actual}"))
    };
    match requirement {
        TableRequirement::NotExist => Some("table already exists".into()),
        TableRequirement::UuidMatch { uuid } => {
            (current.uuid() != *uuid).then(|| format!("UUID does not match: expected {uuid} != {}", current.uuid()))
        }
        TableRequirement::RefSnapshotIdMatch { r#ref, snapshot_id } => {
            let actual = current.snapshot_for_ref(r#ref).map(|s| s.snapshot_id());
            match (snapshot_id, actual) {
                (Some(expected), None) => Some(format!("branch or tag {ref} is missing, expected {expected}")),
                (None, Some(_)) => Some(format!("branch or tag {ref} was created concurrently")),
                (Some(expected), Some(actual)) if *expected != actual => {
                    Some(format!("branch or tag {ref} has changed: expected id {expected} != {actual}"))
                }
                _ => None,
            }
        }
        TableRequirement::LastAssignedFieldIdMatch { last_assigned_field_id } => {
            changed("last assigned field id", (*last_assigned_field_id).into(), current.last_column_id().into())
        }
        TableRequirement::CurrentSchemaIdMatch { current_schema_id } => {
            changed("current schema", (*current_schema_id).into(), current.current_schema_id().into())
        }
        TableRequirement::LastAssignedPartitionIdMatch { last_assigned_partition_id } => changed(
            "last assigned partition id",
            (*last_assigned_partition_id).into(),
            current.last_partition_id().into(),
        ),
        TableRequirement::DefaultSpecIdMatch { default_spec_id } => {
            changed("default partition spec", (*default_spec_id).into(), current.default_partition_spec_id().into())
        }
        TableRequirement::DefaultSortOrderIdMatch { default_sort_order_id } => {
            changed("default sort order", *default_sort_order_id, current.default_sort_order_id())
        }
    }
}

/// A deliberately broken build, for the test that the linearizability checker catches
/// one (tests/faults.rs): with the test-only feature `fault-switches` (which only the
/// tests' build has) and RUSTBERG_FAULT_SKIP_REQUIREMENTS set, no requirement is
/// checked. Without the feature this is `false`, compiled away.
fn skipped_for_the_checker_test() -> bool {
    #[cfg(feature = "fault-switches")]
    {
        static SKIP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *SKIP.get_or_init(|| std::env::var_os("RUSTBERG_FAULT_SKIP_REQUIREMENTS").is_some())
    }
    #[cfg(not(feature = "fault-switches"))]
    false
}

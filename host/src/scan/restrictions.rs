//! What read policies ask of one table: the REST spec's `read-restrictions` for its
//! current schema (column masks and a row filter, by field id), and the same filter by
//! column name, for planning and for the residual every planned task carries.
//!
//! Everything fails closed. A policy column the schema no longer has by the field id
//! saved with the policy (dropped, or dropped and added again) turns the row filter
//! into `false`, and a column of that name is masked all the same; a filter that no
//! longer binds is `false`; a mask whose action does not fit the column's type becomes
//! `replace-with-null`, as does a column two policies mask differently.

use std::collections::BTreeMap;
use std::sync::Arc;

use iceberg::spec::{PrimitiveType, Schema, Type};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::filter;
use crate::authz::{MaskAction, Policy};
use crate::error::Error;

/// The restrictions that apply to one caller's reads of one table.
pub struct Restrictions {
    /// The spec's `ReadRestrictions`, as loadTable sends it.
    pub read_restrictions: Value,
    /// The row filter by column name (`true`: every row).
    pub row_filter: Value,
    /// The field ids of masked columns: no statistics of theirs are handed out.
    pub masked: Vec<i32>,
    /// The policies behind them, by id (the audit log names them).
    pub policies: Vec<String>,
}

/// A digest of the policies: what an answer's entity tag and a plan's token space
/// depend on, besides the table's metadata.
pub fn fingerprint(policies: &[Arc<Policy>]) -> String {
    let mut h = Sha256::new();
    for policy in policies {
        let bytes = serde_json::to_vec(policy.as_ref()).expect("a policy serializes");
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    h.finalize()[..12].iter().map(|b| format!("{b:02x}")).collect()
}

/// A column as a policy names it, in `schema`: found by the field id saved with the
/// policy (or by name for a policy on a namespace), or not.
enum Column {
    Found(i32),
    /// The saved field id is gone: the schema changed under the policy.
    Drifted,
    /// A namespace policy's column this table does not have.
    Absent,
}

fn column(policy: &Policy, name: &str, schema: &Schema) -> Column {
    match policy.field_ids.get(name) {
        Some(id) if schema.field_by_id(*id).is_some() => Column::Found(*id),
        Some(_) => Column::Drifted,
        None => schema.field_by_name(name).map_or(Column::Absent, |f| Column::Found(f.id)),
    }
}

/// The restrictions `policies` (all applying to the caller) put on a table of `schema`.
pub fn resolve(policies: &[Arc<Policy>], schema: &Schema) -> Restrictions {
    let mut filters: Vec<Value> = Vec::new();
    let mut closed = false;
    let mut masks: BTreeMap<i32, MaskAction> = BTreeMap::new();
    for policy in policies {
        if let Some(row_filter) = &policy.row_filter {
            match by_name(row_filter, policy, schema) {
                Some(f) => filters.push(f),
                None => closed = true,
            }
        }
        for mask in &policy.masks {
            let id = match column(policy, &mask.column, schema) {
                Column::Found(id) => id,
                Column::Absent => continue,
                Column::Drifted => {
                    closed = true;
                    // A column added again under the name is masked all the same.
                    match schema.field_by_name(&mask.column) {
                        Some(field) => field.id,
                        None => continue,
                    }
                }
            };
            let action = if fits(&mask.action, schema, id) { mask.action.clone() } else { MaskAction::ReplaceWithNull };
            masks
                .entry(id)
                .and_modify(|held| {
                    if *held != action {
                        *held = MaskAction::ReplaceWithNull;
                    }
                })
                .or_insert(action);
        }
    }
    let row_filter = if closed {
        Value::Bool(false)
    } else {
        filters
            .into_iter()
            .reduce(|left, right| json!({"type": "and", "left": left, "right": right}))
            .unwrap_or(Value::Bool(true))
    };
    let mut read_restrictions = serde_json::Map::new();
    if !masks.is_empty() {
        let projections: Vec<Value> = masks
            .iter()
            .map(|(id, action)| {
                let mut projection = serde_json::to_value(action).expect("an action serializes");
                projection["field-id"] = json!(id);
                projection
            })
            .collect();
        read_restrictions.insert("required-column-projections".into(), Value::Array(projections));
    }
    if row_filter != Value::Bool(true) {
        let by_id = map_terms(&row_filter, &mut |name| {
            schema.field_by_name(name).map(|f| json!({"type": "reference", "field-id": f.id}))
        })
        .unwrap_or(Value::Bool(false));
        read_restrictions.insert("required-row-filter".into(), by_id);
    }
    Restrictions {
        read_restrictions: Value::Object(read_restrictions),
        row_filter,
        masked: masks.into_keys().collect(),
        policies: policies.iter().map(|p| p.id.clone()).collect(),
    }
}

/// A policy's row filter with every column named as `schema` names it now (found by
/// the saved field id), if every column is there and the filter binds to the schema.
fn by_name(row_filter: &Value, policy: &Policy, schema: &Schema) -> Option<Value> {
    let named = map_terms(row_filter, &mut |name| match column(policy, name, schema) {
        Column::Found(id) => schema.name_by_field_id(id).map(|n| Value::String(n.to_string())),
        Column::Drifted | Column::Absent => None,
    })?;
    filter::parse(&named, schema, true).ok().map(|_| named)
}

/// `expr` with each column term replaced by `term(name)`; `None` when a term is not a
/// column name or `term` finds nothing. Policies are written in the spec's form:
/// `and`/`or` (`left`, `right`), `not` (`child`), and predicates on a `term`.
pub fn map_terms(expr: &Value, term: &mut impl FnMut(&str) -> Option<Value>) -> Option<Value> {
    let Value::Object(fields) = expr else {
        return expr.is_boolean().then(|| expr.clone());
    };
    let mut out = fields.clone();
    match fields.get("type").and_then(Value::as_str)? {
        "true" | "false" => {}
        "and" | "or" => {
            out.insert("left".into(), map_terms(fields.get("left")?, term)?);
            out.insert("right".into(), map_terms(fields.get("right")?, term)?);
        }
        "not" => {
            out.insert("child".into(), map_terms(fields.get("child")?, term)?);
        }
        _ => {
            let name = match fields.get("term")? {
                Value::String(name) => name.as_str(),
                Value::Object(r) if r.get("type").and_then(Value::as_str) == Some("reference") => {
                    r.get("name").and_then(Value::as_str)?
                }
                _ => return None,
            };
            out.insert("term".into(), term(name)?);
        }
    }
    Some(Value::Object(out))
}

/// The column names a policy's row filter uses (`None`: it is not in the spec's form).
pub fn columns_of(row_filter: &Value) -> Option<Vec<String>> {
    let mut names = Vec::new();
    map_terms(row_filter, &mut |name| {
        names.push(name.to_string());
        Some(Value::String(name.to_string()))
    })?;
    Some(names)
}

/// Whether `action` gives a value of the type of column `id` (the spec lets a server
/// send an action only for the types it applies to).
pub fn fits(action: &MaskAction, schema: &Schema, id: i32) -> bool {
    let Some(field) = schema.field_by_id(id) else { return false };
    let Type::Primitive(ty) = field.field_type.as_ref() else {
        return matches!(action, MaskAction::ReplaceWithNull);
    };
    match action {
        MaskAction::ReplaceWithNull => true,
        MaskAction::Sha256Global => matches!(ty, PrimitiveType::String | PrimitiveType::Binary),
        MaskAction::ShowFirst4 | MaskAction::ShowLast4 | MaskAction::MaskAlphanum => {
            matches!(ty, PrimitiveType::String)
        }
        MaskAction::TruncateToYear | MaskAction::TruncateToMonth => matches!(
            ty,
            PrimitiveType::Date
                | PrimitiveType::Timestamp
                | PrimitiveType::Timestamptz
                | PrimitiveType::TimestampNs
                | PrimitiveType::TimestamptzNs
        ),
        MaskAction::MaskToFixedValue { value } => filter::literal(value, ty).is_ok(),
    }
}

/// Checks a policy to be saved on a table of `schema` and records the field id of
/// every column it names; a policy on a namespace (`schema` none) is checked for its
/// form only. Every failure says what, as a bad request.
pub fn check(policy: &mut Policy, schema: Option<&Schema>) -> Result<(), Error> {
    let bad = |m: String| Error::BadRequest(format!("policy {:?}: {m}", policy.name));
    if policy.row_filter.is_none() && policy.masks.is_empty() {
        return Err(bad("a policy needs a row-filter or masks".into()));
    }
    let mut columns: Vec<String> = policy.masks.iter().map(|m| m.column.clone()).collect();
    if let Some(row_filter) = &policy.row_filter {
        let named = columns_of(row_filter).ok_or_else(|| {
            bad("the row-filter is not an Iceberg expression in the REST spec's form (and, or, not; predicates on a \"term\" naming a column)".into())
        })?;
        columns.extend(named);
    }
    let Some(schema) = schema else { return Ok(()) };
    for name in &columns {
        let field = schema.field_by_name(name).ok_or_else(|| bad(format!("the table has no column named {name:?}")))?;
        policy.field_ids.insert(name.clone(), field.id);
    }
    if let Some(row_filter) = &policy.row_filter {
        filter::parse(row_filter, schema, true).map_err(|e| bad(e.to_string()))?;
    }
    for mask in &policy.masks {
        if !fits(&mask.action, schema, policy.field_ids[&mask.column]) {
            let action = serde_json::to_value(&mask.action).expect("an action serializes")["action"].clone();
            return Err(bad(format!("{action} does not apply to column {:?} of its type", mask.column)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use iceberg::spec::NestedField;

    use super::*;
    use crate::authz::{ColumnMask, Resource, Subject};

    fn schema(fields: &[(i32, &str, PrimitiveType)]) -> Schema {
        let fields =
            fields.iter().map(|(id, name, ty)| NestedField::optional(*id, *name, Type::Primitive(ty.clone())).into());
        Schema::builder().with_fields(fields.collect::<Vec<_>>()).build().unwrap()
    }

    fn policy(row_filter: Option<Value>, masks: Vec<(&str, MaskAction)>) -> Policy {
        Policy {
            id: "p1".into(),
            name: "eu only".into(),
            resource: Resource::table(&["db".into()], "t"),
            subject: Subject::Tenant("acme".into()),
            row_filter,
            masks: masks.into_iter().map(|(c, action)| ColumnMask { column: c.into(), action }).collect(),
            field_ids: BTreeMap::new(),
        }
    }

    fn base() -> Schema {
        schema(&[
            (1, "id", PrimitiveType::Long),
            (2, "region", PrimitiveType::String),
            (3, "ssn", PrimitiveType::String),
        ])
    }

    #[test]
    fn a_saved_policy_resolves_to_the_spec_shape_by_field_id() {
        let mut p =
            policy(Some(json!({"type": "eq", "term": "region", "value": "eu"})), vec![("ssn", MaskAction::ShowLast4)]);
        check(&mut p, Some(&base())).unwrap();
        assert_eq!(p.field_ids, BTreeMap::from([("region".into(), 2), ("ssn".into(), 3)]));
        let r = resolve(&[Arc::new(p)], &base());
        assert_eq!(
            r.read_restrictions,
            json!({
                "required-column-projections": [{"field-id": 3, "action": "show-last-4"}],
                "required-row-filter": {"type": "eq", "term": {"type": "reference", "field-id": 2}, "value": "eu"}
            })
        );
        assert_eq!(r.row_filter, json!({"type": "eq", "term": "region", "value": "eu"}));
        assert_eq!((r.masked, r.policies), (vec![3], vec!["p1".to_string()]));
    }

    #[test]
    fn policies_naming_what_the_table_lacks_or_misfits_are_refused() {
        for (mut p, says) in [
            (policy(Some(json!({"type": "eq", "term": "nope", "value": 1})), vec![]), "no column named \"nope\""),
            (policy(None, vec![("nope", MaskAction::ReplaceWithNull)]), "no column named \"nope\""),
            (policy(None, vec![("id", MaskAction::ShowFirst4)]), "does not apply"),
            (policy(None, vec![("id", MaskAction::MaskToFixedValue { value: json!("x") })]), "does not apply"),
            (policy(Some(json!({"type": "eq", "term": "id", "value": "x"})), vec![]), "not a long"),
            (policy(Some(json!({"type": "frob", "left": 1})), vec![]), "REST spec's form"),
            (policy(None, vec![]), "needs a row-filter or masks"),
        ] {
            let e = check(&mut p, Some(&base())).unwrap_err().to_string();
            assert!(e.contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn a_dropped_column_fails_closed_and_a_column_added_again_is_masked() {
        let mut p =
            policy(Some(json!({"type": "eq", "term": "region", "value": "eu"})), vec![("ssn", MaskAction::ShowLast4)]);
        check(&mut p, Some(&base())).unwrap();
        let p = Arc::new(p);
        // `region` dropped: the filter cannot be applied, so nothing is read.
        let r = resolve(
            std::slice::from_ref(&p),
            &schema(&[(1, "id", PrimitiveType::Long), (3, "ssn", PrimitiveType::String)]),
        );
        assert_eq!(r.row_filter, json!(false));
        assert_eq!(r.read_restrictions["required-row-filter"], json!(false));
        // `ssn` dropped and added again (a new field id): still masked, and nothing read.
        let again = schema(&[
            (1, "id", PrimitiveType::Long),
            (2, "region", PrimitiveType::String),
            (4, "ssn", PrimitiveType::String),
        ]);
        let r = resolve(&[p], &again);
        assert_eq!(r.row_filter, json!(false));
        assert_eq!(
            r.read_restrictions["required-column-projections"],
            json!([{"field-id": 4, "action": "show-last-4"}])
        );
    }

    #[test]
    fn policies_combine_and_disagreeing_masks_hide_everything() {
        let mut a =
            policy(Some(json!({"type": "eq", "term": "region", "value": "eu"})), vec![("ssn", MaskAction::ShowLast4)]);
        let mut b =
            policy(Some(json!({"type": "gt", "term": "id", "value": 5})), vec![("ssn", MaskAction::Sha256Global)]);
        b.id = "p2".into();
        check(&mut a, Some(&base())).unwrap();
        check(&mut b, Some(&base())).unwrap();
        let r = resolve(&[Arc::new(a), Arc::new(b)], &base());
        assert_eq!(r.row_filter["type"], "and");
        assert_eq!(
            r.read_restrictions["required-column-projections"],
            json!([{"field-id": 3, "action": "replace-with-null"}])
        );
        // A namespace policy skips a table without the column, and names none by id.
        let mut ns = policy(None, vec![("email", MaskAction::ReplaceWithNull)]);
        ns.resource = Resource::Namespace(vec!["db".into()]);
        check(&mut ns, None).unwrap();
        assert_eq!(resolve(&[Arc::new(ns)], &base()).read_restrictions, json!({}));
    }
}

//! The REST spec's filter expressions (`Predicate` in the OpenAPI document) as
//! `iceberg` predicates. Literals take the type of the field they are compared
//! with, as the spec's single-value JSON serialization writes them.

use iceberg::expr::{Predicate, Reference};
use iceberg::spec::{Datum, PrimitiveType, Schema, Type};
use serde_json::Value;

use crate::error::Error;

/// Parses `filter` against `schema`; every failure is a bad request saying what.
pub fn parse(filter: &Value, schema: &Schema, case_sensitive: bool) -> Result<Predicate, Error> {
    Parser { schema, case_sensitive }.predicate(filter)
}

struct Parser<'a> {
    schema: &'a Schema,
    case_sensitive: bool,
}

fn bad(message: impl Into<String>) -> Error {
    Error::BadRequest(format!("invalid filter: {}", message.into()))
}

impl Parser<'_> {
    fn predicate(&self, e: &Value) -> Result<Predicate, Error> {
        let kind = match e {
            Value::Bool(true) => return Ok(Predicate::AlwaysTrue),
            Value::Bool(false) => return Ok(Predicate::AlwaysFalse),
            Value::Object(o) => {
                o.get("type").and_then(Value::as_str).ok_or_else(|| bad("an expression needs a type"))?
            }
            other => return Err(bad(format!("{other} is not an expression"))),
        };
        let field = |name: &str| e.get(name).ok_or_else(|| bad(format!("a {kind:?} expression needs {name:?}")));
        Ok(match kind {
            "true" => Predicate::AlwaysTrue,
            "false" => Predicate::AlwaysFalse,
            "and" => self.predicate(field("left")?)?.and(self.predicate(field("right")?)?),
            "or" => self.predicate(field("left")?)?.or(self.predicate(field("right")?)?),
            "not" => !self.predicate(field("child")?)?,
            "is-null" | "not-null" | "is-nan" | "not-nan" => {
                let (reference, _) =
                    self.reference(e.get("child").or(e.get("term")).ok_or_else(|| bad("missing child"))?)?;
                match kind {
                    "is-null" => reference.is_null(),
                    "not-null" => reference.is_not_null(),
                    "is-nan" => reference.is_nan(),
                    _ => reference.is_not_nan(),
                }
            }
            "in" | "not-in" => {
                let (reference, ty) =
                    self.reference(e.get("child").or(e.get("term")).ok_or_else(|| bad("missing child"))?)?;
                let values = match field("values")? {
                    Value::Array(values) => values.clone(),
                    Value::Object(typed) => typed
                        .get("values")
                        .and_then(Value::as_array)
                        .cloned()
                        .ok_or_else(|| bad("literals need values"))?,
                    other => return Err(bad(format!("{other} is not a list of literals"))),
                };
                let datums = values.iter().map(|v| datum(literal_value(v), &ty)).collect::<Result<Vec<_>, _>>()?;
                if kind == "in" {
                    reference.is_in(datums)
                } else {
                    reference.is_not_in(datums)
                }
            }
            "lt" | "lt-eq" | "gt" | "gt-eq" | "eq" | "not-eq" | "starts-with" | "not-starts-with" => {
                let (left, right) = match (e.get("left"), e.get("right")) {
                    (Some(l), Some(r)) => (l, r),
                    _ => (field("term")?, field("value")?),
                };
                // A reference compared with a literal, in either order.
                let (term, value, flipped) =
                    if is_reference(right) && !is_reference(left) { (right, left, true) } else { (left, right, false) };
                let (reference, ty) = self.reference(term)?;
                let datum = datum(literal_value(value), &ty)?;
                let kind = if flipped { flip(kind) } else { kind };
                match kind {
                    "lt" => reference.less_than(datum),
                    "lt-eq" => reference.less_than_or_equal_to(datum),
                    "gt" => reference.greater_than(datum),
                    "gt-eq" => reference.greater_than_or_equal_to(datum),
                    "eq" => reference.equal_to(datum),
                    "not-eq" => reference.not_equal_to(datum),
                    "starts-with" => reference.starts_with(datum),
                    _ => reference.not_starts_with(datum),
                }
            }
            other => return Err(bad(format!("unknown expression type {other:?}"))),
        })
    }

    /// A field reference (`"name"`, `{"type":"reference","name"}` or by `field-id` or
    /// `id`) and its type.
    fn reference(&self, term: &Value) -> Result<(Reference, PrimitiveType), Error> {
        let field = match term {
            Value::String(name) => self.field_by_name(name)?,
            Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("reference") => {
                if let Some(name) = o.get("name").and_then(Value::as_str) {
                    self.field_by_name(name)?
                } else if let Some(id) = o.get("field-id").or(o.get("id")).and_then(Value::as_i64) {
                    let id = i32::try_from(id).map_err(|_| bad(format!("no field has id {id}")))?;
                    self.schema.field_by_id(id).ok_or_else(|| bad(format!("no field has id {id}")))?
                } else {
                    return Err(bad("a reference needs a name or an id"));
                }
            }
            Value::Object(o) if matches!(o.get("type").and_then(Value::as_str), Some("transform" | "apply")) => {
                return Err(Error::Unsupported("filters on transforms or functions are not supported".into()));
            }
            other => return Err(bad(format!("{other} is not a field reference"))),
        };
        let name = self.schema.name_by_field_id(field.id).unwrap_or(&field.name).to_string();
        match field.field_type.as_ref() {
            Type::Primitive(ty) => Ok((Reference::new(name), ty.clone())),
            _ => Err(bad(format!("{name} is not a primitive column"))),
        }
    }

    fn field_by_name(&self, name: &str) -> Result<&iceberg::spec::NestedFieldRef, Error> {
        let field = if self.case_sensitive {
            self.schema.field_by_name(name)
        } else {
            self.schema.field_by_name_case_insensitive(name)
        };
        field.ok_or_else(|| bad(format!("no column named {name:?}")))
    }
}

fn is_reference(v: &Value) -> bool {
    v.is_string() || v.get("type").and_then(Value::as_str) == Some("reference")
}

/// The same comparison with its operands swapped.
fn flip(kind: &str) -> &str {
    match kind {
        "lt" => "gt",
        "lt-eq" => "gt-eq",
        "gt" => "lt",
        "gt-eq" => "lt-eq",
        other => other,
    }
}

/// A JSON literal (bare or typed) as a value of type `ty`.
pub fn literal(v: &Value, ty: &PrimitiveType) -> Result<Datum, Error> {
    datum(literal_value(v), ty)
}

/// A literal's value: bare, or inside `{"type":"literal","value":…}`.
fn literal_value(v: &Value) -> &Value {
    match v.get("type").and_then(Value::as_str) {
        Some("literal") => v.get("value").unwrap_or(v),
        _ => v,
    }
}

/// A JSON literal as a value of the column's type.
fn datum(v: &Value, ty: &PrimitiveType) -> Result<Datum, Error> {
    let mismatch = || bad(format!("{v} is not a {ty} value"));
    let parsed = |r: iceberg::Result<Datum>| r.map_err(|e| bad(format!("{v} is not a {ty} value: {e}")));
    let datum = match (ty, v) {
        (PrimitiveType::Boolean, Value::Bool(b)) => Datum::bool(*b),
        (PrimitiveType::Int, Value::Number(n)) => {
            Datum::int(n.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(mismatch)?)
        }
        (PrimitiveType::Long, Value::Number(n)) => Datum::long(n.as_i64().ok_or_else(mismatch)?),
        (PrimitiveType::Float, Value::Number(n)) => Datum::float(n.as_f64().ok_or_else(mismatch)? as f32),
        (PrimitiveType::Double, Value::Number(n)) => Datum::double(n.as_f64().ok_or_else(mismatch)?),
        (PrimitiveType::Decimal { .. }, Value::String(s)) => parsed(Datum::decimal_from_str(s))?,
        (PrimitiveType::Decimal { .. }, Value::Number(n)) => parsed(Datum::decimal_from_str(n.to_string()))?,
        (PrimitiveType::Date, Value::String(s)) => parsed(Datum::date_from_str(s))?,
        (PrimitiveType::Date, Value::Number(n)) => {
            Datum::date(n.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(mismatch)?)
        }
        (PrimitiveType::Time, Value::String(s)) => parsed(Datum::time_from_str(s))?,
        (PrimitiveType::Timestamp, Value::String(s)) => parsed(Datum::timestamp_from_str(s))?,
        (PrimitiveType::Timestamp, Value::Number(n)) => Datum::timestamp_micros(n.as_i64().ok_or_else(mismatch)?),
        (PrimitiveType::Timestamptz, Value::String(s)) => parsed(Datum::timestamptz_from_str(s))?,
        (PrimitiveType::Timestamptz, Value::Number(n)) => Datum::timestamptz_micros(n.as_i64().ok_or_else(mismatch)?),
        (PrimitiveType::TimestampNs, Value::Number(n)) => Datum::timestamp_nanos(n.as_i64().ok_or_else(mismatch)?),
        (PrimitiveType::TimestamptzNs, Value::Number(n)) => Datum::timestamptz_nanos(n.as_i64().ok_or_else(mismatch)?),
        (PrimitiveType::String, Value::String(s)) => Datum::string(s),
        (PrimitiveType::Uuid, Value::String(s)) => parsed(Datum::uuid_from_str(s))?,
        _ => return Err(mismatch()),
    };
    // Decimals and the like take the column's exact type (precision, scale).
    datum.to(&Type::Primitive(ty.clone())).map_err(|e| bad(format!("{v} is not a {ty} value: {e}")))
}

#[cfg(test)]
mod tests {
    use iceberg::spec::{NestedField, Schema};
    use serde_json::json;

    use super::*;

    fn schema() -> Schema {
        Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "day", Type::Primitive(PrimitiveType::Date)).into(),
                NestedField::optional(3, "name", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()
            .unwrap()
    }

    #[test]
    fn parses_the_spec_forms() {
        let s = schema();
        let p = parse(
            &json!({"type": "and",
                "left": {"type": "gt-eq", "term": "day", "value": "2024-01-02"},
                "right": {"type": "in", "child": {"type": "reference", "name": "id"}, "values": [1, 2]}}),
            &s,
            true,
        )
        .unwrap();
        let text = p.to_string();
        assert!(text.contains("day") && text.contains("id"), "{text}");
        // Literal on the left: 5 < id is id > 5.
        let flipped =
            parse(&json!({"type": "lt", "left": 5, "right": {"type": "reference", "id": 1}}), &s, true).unwrap();
        assert_eq!(flipped.to_string(), Reference::new("id").greater_than(Datum::long(5)).to_string());
        assert!(matches!(parse(&json!(true), &s, true), Ok(Predicate::AlwaysTrue)));
    }

    #[test]
    fn bad_filters_say_why() {
        let s = schema();
        for (filter, says) in [
            (json!({"type": "eq", "term": "nope", "value": 1}), "no column"),
            (json!({"type": "eq", "term": "id", "value": "x"}), "not a long"),
            (json!({"type": "frob"}), "unknown expression"),
            (json!(3), "not an expression"),
        ] {
            let e = parse(&filter, &s, true).unwrap_err().to_string();
            assert!(e.contains(says), "{filter}: {e}");
        }
        assert!(parse(&json!({"type": "eq", "term": "ID", "value": 1}), &s, false).is_ok());
    }
}

//! The inline session policies STS credentials are scoped by: a table's prefix (read,
//! or read-write for a writer), or one object (a restricted reader's planned file).

use serde_json::json;

use super::location::Location;
use super::vending::DataAccess;

/// The inline session policy: objects under the table's location only, and listing
/// of that prefix only; writes only for a writer. Built from a validated location,
/// which holds no wildcard, so the policy names exactly one prefix.
pub fn session_policy(location: &Location, access: DataAccess) -> serde_json::Value {
    let (bucket, key) = (location.bucket(), location.key());
    // A table with a bucket of its own (S3 Tables) is the whole bucket.
    let (objects, listed) = match key.as_str() {
        "" => (format!("arn:aws:s3:::{bucket}/*"), vec!["*".to_string()]),
        _ => (format!("arn:aws:s3:::{bucket}/{key}/*"), vec![key.clone(), format!("{key}/*")]),
    };
    let mut object_actions = vec!["s3:GetObject", "s3:GetObjectVersion"];
    if access == DataAccess::ReadWrite {
        object_actions.extend([
            "s3:PutObject",
            "s3:DeleteObject",
            "s3:AbortMultipartUpload",
            "s3:ListMultipartUploadParts",
        ]);
    }
    json!({
        "Version": "2012-10-17",
        "Statement": [
            { "Effect": "Allow", "Action": object_actions, "Resource": [objects] },
            {
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": [format!("arn:aws:s3:::{bucket}")],
                "Condition": { "StringLike": { "s3:prefix": listed } }
            },
            { "Effect": "Allow", "Action": ["s3:GetBucketLocation"], "Resource": [format!("arn:aws:s3:::{bucket}")] }
        ]
    })
}

/// The inline session policy for one object: read it, nothing else (no listing).
pub fn object_policy(object: &Location) -> serde_json::Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Action": ["s3:GetObject"],
            "Resource": [format!("arn:aws:s3:::{}/{}", object.bucket(), object.key())]
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_policy_allows_no_writes() {
        let table = Location::parse("s3://b/wh/db/t").unwrap();
        let policy = session_policy(&table, DataAccess::Read).to_string();
        assert!(policy.contains("s3:GetObject") && policy.contains("arn:aws:s3:::b/wh/db/t/*"));
        assert!(!policy.contains("PutObject") && !policy.contains("DeleteObject"));
        let writer = session_policy(&table, DataAccess::ReadWrite).to_string();
        assert!(writer.contains("s3:PutObject") && writer.contains("s3:DeleteObject"));
    }

    #[test]
    fn an_object_policy_reads_that_object_only() {
        let file = Location::parse("s3://b/wh/db/t/data/f1.parquet").unwrap();
        let policy = object_policy(&file);
        assert_eq!(policy["Statement"][0]["Resource"], json!(["arn:aws:s3:::b/wh/db/t/data/f1.parquet"]));
        assert_eq!(policy["Statement"][0]["Action"], json!(["s3:GetObject"]));
        assert_eq!(policy["Statement"].as_array().unwrap().len(), 1, "no listing");
    }

    #[test]
    fn a_table_with_a_bucket_of_its_own_gets_that_bucket_only() {
        let table = Location::parse("s3://0f3a--table-s3").unwrap();
        let policy = session_policy(&table, DataAccess::ReadWrite);
        assert_eq!(policy["Statement"][0]["Resource"], json!(["arn:aws:s3:::0f3a--table-s3/*"]));
        assert_eq!(policy["Statement"][1]["Resource"], json!(["arn:aws:s3:::0f3a--table-s3"]));
    }
}

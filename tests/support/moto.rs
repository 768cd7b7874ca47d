//! A moto server (S3 and STS, in memory) for the storage tests.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::python::{venv, venv_with};

/// The keys moto accepts, for a mount's host-held credentials (`aws_mount`): the host
/// signs with them, the component never sees them.
pub const KEYS: &[(&str, &str)] = &[("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")];

/// The role STS vending assumes in the tests.
pub const VEND_ROLE: &str = "arn:aws:iam::123456789012:role/rustberg-vend";

/// A mount of an AWS service's `backend` (glue, s3tables) at `url`, requests signed for
/// `service` with the host's `KEYS`, and the mount's `config` settings.
pub fn aws_mount(
    name: &str,
    backend: &str,
    url: &str,
    warehouse: &str,
    service: &str,
    config: &[(&str, &str)],
) -> String {
    let settings: String = config.iter().map(|(k, v)| format!("{k} = \"{v}\"\n")).collect();
    format!(
        "[mount.{name}]\nbackend = \"{backend}\"\ncatalog_url = \"{url}\"\nwarehouse_location = \"{warehouse}\"\n\
         owner = \"default\"\n[mount.{name}.config]\n{settings}\
         [mount.{name}.auth]\nkind = \"aws-sigv4\"\nservice = \"{service}\"\nregion = \"us-east-1\"\n"
    )
}

/// `[storage.s3]` at `endpoint` (moto's), the server's own keys `access_key`:`secret`.
pub fn s3_storage(endpoint: &str, access_key: &str, secret: &str) -> String {
    format!(
        "[storage.s3]\nendpoint = \"{endpoint}\"\nregion = \"us-east-1\"\npath_style = true\n\
         access_key_id = \"{access_key}\"\nsecret_access_key = \"{secret}\"\n"
    )
}

/// `[storage.vending]` through STS assuming `role`, at `endpoint` (by default the S3
/// endpoint's).
pub fn sts_vending(role: &str, endpoint: Option<&str>) -> String {
    let endpoint = endpoint.map(|e| format!("sts_endpoint = \"{e}\"\n")).unwrap_or_default();
    format!("[storage.vending]\nmode = \"sts\"\nrole_arn = \"{role}\"\n{endpoint}")
}

/// A moto server on a free port with one bucket, until dropped.
pub struct Moto {
    child: Child,
    pub url: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    pub async fn start(bucket: &str) -> Moto {
        // Its own venv: moto's botocore pin must not decide the clients' versions.
        let venv = venv_with(venv().parent().unwrap().join("moto-venv"), "requirements-moto.txt");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(venv.join("bin/moto_server"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting moto_server");
        let moto = Moto { child, url: format!("http://127.0.0.1:{port}") };
        let client = reqwest::Client::new();
        for _ in 0..300 {
            if client.get(format!("{}/moto-api/", moto.url)).send().await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let created = client.put(format!("{}/{bucket}", moto.url)).send().await.unwrap();
        assert!(created.status().is_success(), "creating bucket {bucket}: {}", created.status());
        moto
    }

    /// Creates an S3 Tables table bucket; its ARN. (moto routes by the service the
    /// credential scope names and checks no signature.)
    pub async fn table_bucket(&self, name: &str) -> String {
        let scope = "Credential=testing/20260101/us-east-1/s3tables/aws4_request, SignedHeaders=host, Signature=0";
        let created = reqwest::Client::new()
            .put(format!("{}/buckets", self.url))
            .header("Authorization", format!("AWS4-HMAC-SHA256 {scope}"))
            .json(&serde_json::json!({ "name": name }))
            .send()
            .await
            .unwrap();
        assert!(created.status().is_success(), "creating table bucket {name}: {}", created.status());
        let body: serde_json::Value = created.json().await.unwrap();
        body["arn"].as_str().unwrap().to_string()
    }

    /// The keys of a new IAM user `user` that may do anything in S3: once moto checks
    /// signatures ([`Moto::check_signatures`]), only requests signed with keys it issued
    /// get through.
    pub async fn s3_user(&self, user: &str) -> (String, String) {
        let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#;
        self.iam(&[("Action", "CreateUser"), ("UserName", user)]).await;
        let put = [("Action", "PutUserPolicy"), ("UserName", user), ("PolicyName", "s3"), ("PolicyDocument", policy)];
        self.iam(&put).await;
        let created = self.iam(&[("Action", "CreateAccessKey"), ("UserName", user)]).await;
        let field = |name: &str| {
            let open = format!("<{name}>");
            created.split(&open).nth(1).and_then(|s| s.split('<').next()).unwrap().to_string()
        };
        (field("AccessKeyId"), field("SecretAccessKey"))
    }

    /// One IAM call (moto routes by the service its credential scope names).
    async fn iam(&self, form: &[(&str, &str)]) -> String {
        let scope = "Credential=testing/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0";
        let mut form = form.to_vec();
        form.push(("Version", "2010-05-08"));
        let answer = reqwest::Client::new()
            .post(format!("{}/", self.url))
            .header("Authorization", format!("AWS4-HMAC-SHA256 {scope}"))
            .form(&form)
            .send()
            .await
            .unwrap();
        let status = answer.status();
        let text = answer.text().await.unwrap();
        assert!(status.is_success(), "IAM {form:?}: {status} {text}");
        text
    }

    /// From now on (`true`) moto checks every request's signature against the keys it
    /// issued, and the policies of their users; or (`false`) no longer does.
    pub async fn check_signatures(&self, on: bool) {
        let count = if on { "0" } else { "inf" };
        let answer = reqwest::Client::new().post(format!("{}/moto-api/reset-auth", self.url)).body(count).send().await;
        assert!(answer.unwrap().status().is_success());
    }

    /// The keys of every object under `prefix` in `bucket`.
    pub async fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let url = format!("{}/{bucket}?list-type=2&prefix={prefix}", self.url);
        let text = reqwest::get(url).await.unwrap().text().await.unwrap();
        text.split("<Key>").skip(1).filter_map(|s| s.split("</Key>").next()).map(str::to_string).collect()
    }
}

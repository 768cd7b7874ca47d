//! PySpark with Iceberg's Spark runtime and AWS bundle (the Java clients), for the tests
//! that run Spark SQL against a real server.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::python::{repo_root, venv_with};

/// The venv holding PySpark (`requirements-spark.txt`) and the jars Spark is given
/// (`spark.jars`, comma-separated), fetched once into the build folder.
pub fn spark() -> (PathBuf, String) {
    let target = Path::new(env!("CARGO_BIN_EXE_rustberg")).parent().unwrap().parent().unwrap().to_path_buf();
    let jars = Command::new("bash")
        .arg(repo_root().join("tests/java/spark-jars.sh"))
        .arg(target.join("spark-jars"))
        .output()
        .expect("fetching the Spark runtime (Maven is needed)");
    assert!(jars.status.success(), "{}", String::from_utf8_lossy(&jars.stderr));
    let jars = String::from_utf8(jars.stdout).unwrap().trim().to_string();
    (venv_with(target.join("spark-venv"), "requirements-spark.txt"), jars)
}

//! Reading a command's `-o json` the way a script does, checked against the published schema:
//! [`document`] parses stdout, requires the `apiVersion` and `kind` asked for, and validates it
//! with Python's `jsonschema` (an implementation nobody here wrote) against
//! docs/schemas/<kind>.json. Every object of the schema is closed for the check (no property it
//! does not name), so a field the code prints and the schema lacks fails too.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

/// The API version every document carries.
pub const API_VERSION: &str = "gitops.kubectl.io/v1alpha1";

/// docs/schemas/ of this checkout.
pub fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/schemas")
}

const VALIDATE: &str = r#"
import json, sys
from jsonschema import Draft202012Validator

def closed(node):
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            closed(value)
    elif isinstance(node, list):
        for value in node:
            closed(value)

schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
closed(schema)
document = json.load(sys.stdin)
errors = sorted(Draft202012Validator(schema).iter_errors(document), key=lambda error: list(error.absolute_path))
for error in errors:
    print("/".join(map(str, error.absolute_path)) or "(root)", ":", error.message)
sys.exit(1 if errors else 0)
"#;

/// `stdout` parsed as one document of `kind`, valid against docs/schemas/<kind>.json.
pub fn document(kind: &str, stdout: &str) -> Value {
    let value: Value = serde_json::from_str(stdout)
        .unwrap_or_else(|error| panic!("-o json printed no JSON document ({error}):\n{stdout}"));
    assert_eq!(value["apiVersion"], API_VERSION, "the document's apiVersion:\n{stdout}");
    assert_eq!(value["kind"], kind, "the document's kind:\n{stdout}");
    validate(kind, &value);
    value
}

/// Validates `value` against docs/schemas/<kind>.json, panicking with every violation.
pub fn validate(kind: &str, value: &Value) {
    let schema = schemas_dir().join(format!("{kind}.json"));
    assert!(schema.is_file(), "no schema {} for kind {kind}", schema.display());
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(VALIDATE)
        .arg(&schema)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (tests/deps.sh installs it with python3-jsonschema)");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin.write_all(value.to_string().as_bytes()).expect("python3 reads the document");
    drop(stdin);
    let output = child.wait_with_output().expect("python3 ends");
    assert!(
        output.status.success(),
        "the {kind} document does not match {}:\n{}{}\n{value:#}",
        schema.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

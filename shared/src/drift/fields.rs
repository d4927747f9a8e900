//! Which fields of a live object differ from what Flux would apply, and who changed them.
//!
//! The two versions are the live object and the server-side dry run of the applied revision's
//! manifest under Flux's field manager, so every field the API server defaults is in both and
//! only what Flux would put back differs. A field is named by its path (`spec.replicas`,
//! `spec.template.spec.containers[name=web].env[name=FOO].value`), and its manager is read from
//! the live object's `managedFields`: whoever owns the path there changed it last.

use serde_json::{Map, Value};

/// One step of a field's path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// A map's key.
    Key(String),
    /// The element of a list of maps whose `name` is this.
    Named(String),
    /// A list's element by position (a list whose elements have no names).
    Index(usize),
}

/// A path of steps, as a user reads it.
fn path_text(steps: &[Step]) -> String {
    let mut text = String::new();
    for step in steps {
        match step {
            Step::Key(key) if text.is_empty() => text.push_str(key),
            Step::Key(key) => {
                text.push('.');
                text.push_str(key);
            }
            Step::Named(name) => text.push_str(&format!("[name={name}]")),
            Step::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

/// A field that differs: its path and the managers that own it on the live object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Changed {
    pub path: String,
    pub managers: Vec<String>,
}

/// The fields of `live` that differ from `applied` (both without what the API server keeps for
/// itself), each with the managers other than `ours` that own it in `live`'s `managedFields`.
pub(super) fn changed(live: &Value, applied: &Value, managed_fields: &Value, ours: &str) -> Vec<Changed> {
    let mut paths = Vec::new();
    walk(live, applied, &mut Vec::new(), &mut paths);
    paths
        .into_iter()
        .map(|steps| {
            let managers = managed_fields
                .as_array()
                .into_iter()
                .flatten()
                .filter(|entry| entry["manager"].as_str().is_some_and(|manager| manager != ours))
                .filter(|entry| owns(&entry["fieldsV1"], &steps))
                .filter_map(|entry| entry["manager"].as_str().map(String::from))
                .collect();
            Changed { path: path_text(&steps), managers }
        })
        .collect()
}

/// The time `manager` last wrote the object, from its `managedFields` entry.
pub(super) fn written_at(managed_fields: &Value, manager: &str) -> Option<String> {
    managed_fields
        .as_array()?
        .iter()
        .filter(|entry| entry["manager"] == manager)
        .filter_map(|entry| entry["time"].as_str())
        .max()
        .map(String::from)
}

/// Collects the paths where `a` and `b` differ: the deepest step that still matches on both.
fn walk(a: &Value, b: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                at.push(Step::Key(key.clone()));
                walk(a.get(key).unwrap_or(&Value::Null), b.get(key).unwrap_or(&Value::Null), at, out);
                at.pop();
            }
        }
        (Value::Array(a), Value::Array(b)) => match (names(a), names(b)) {
            (Some(names_a), Some(names_b)) => {
                let mut all: Vec<&str> = names_a.clone();
                all.extend(names_b.iter().filter(|name| !names_a.contains(name)));
                for name in all {
                    let find =
                        |list: &[Value]| list.iter().find(|item| item["name"] == name).cloned().unwrap_or(Value::Null);
                    at.push(Step::Named(name.to_string()));
                    walk(&find(a), &find(b), at, out);
                    at.pop();
                }
            }
            _ if a.len() == b.len() => {
                for (index, (a, b)) in a.iter().zip(b).enumerate() {
                    at.push(Step::Index(index));
                    walk(a, b, at, out);
                    at.pop();
                }
            }
            _ => out.push(at.clone()),
        },
        _ => out.push(at.clone()),
    }
}

/// The `name` of every element, when every element is a map with one.
fn names(list: &[Value]) -> Option<Vec<&str>> {
    list.iter().map(|item| item.get("name").and_then(Value::as_str)).collect()
}

/// Whether a `fieldsV1` set holds `steps`: `f:KEY` for a key, `k:{"name":"…"}` for a named list
/// element. A path through a positional element cannot be matched and is owned by nobody here.
fn owns(fields: &Value, steps: &[Step]) -> bool {
    let mut node = fields;
    for step in steps {
        let next = match step {
            Step::Key(key) => node.get(format!("f:{key}")),
            Step::Named(name) => {
                node.get(format!("k:{}", Value::Object(Map::from_iter([("name".into(), name.as_str().into())]))))
            }
            Step::Index(_) => None,
        };
        match next {
            Some(next) => node = next,
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_changed_field_is_named_by_its_path_and_the_manager_that_owns_it() {
        let desired = json!({
            "metadata": {"labels": {"tier": "web", "app": "web"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "web", "image": "web:1", "env": [{"name": "FOO", "value": "bar"}, {"name": "KEEP", "value": "1"}]},
                {"name": "sidecar", "image": "side:1"}
            ]}}}
        });
        let mut live = desired.clone();
        live["metadata"]["labels"]["tier"] = json!("api");
        live["spec"]["replicas"] = json!(3);
        live["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!("baz");
        let managed = json!([
            {"manager": "kustomize-controller", "operation": "Apply", "time": "2026-12-06T10:00:00Z",
             "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:template": {}}}},
            {"manager": "kubectl-edit", "operation": "Update", "time": "2026-12-06T10:05:00Z",
             "fieldsV1": {"f:metadata": {"f:labels": {"f:tier": {}}}, "f:spec": {"f:replicas": {},
               "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {"f:env": {"k:{\"name\":\"FOO\"}": {"f:value": {}}}}}}}}}}
        ]);
        let found = changed(&live, &desired, &managed, "kustomize-controller");
        let edited = vec!["kubectl-edit".to_string()];
        assert_eq!(
            found,
            vec![
                Changed { path: "metadata.labels.tier".into(), managers: edited.clone() },
                Changed { path: "spec.replicas".into(), managers: edited.clone() },
                Changed {
                    path: "spec.template.spec.containers[name=web].env[name=FOO].value".into(),
                    managers: edited
                },
            ]
        );
        assert_eq!(written_at(&managed, "kubectl-edit").as_deref(), Some("2026-12-06T10:05:00Z"));
        assert_eq!(written_at(&managed, "nobody"), None);
    }

    #[test]
    fn lists_without_names_differ_by_position_or_whole_and_a_removed_field_has_no_owner() {
        let live = json!({"spec": {"ports": [80, 8080], "args": ["a"], "extra": null}});
        let desired = json!({"spec": {"ports": [80, 9090], "args": ["a", "b"], "gone": "x"}});
        let found = changed(&live, &desired, &Value::Null, "kustomize-controller");
        let paths: Vec<&str> = found.iter().map(|field| field.path.as_str()).collect();
        assert_eq!(paths, ["spec.args", "spec.gone", "spec.ports[1]"]);
        assert!(found.iter().all(|field| field.managers.is_empty()));
        assert!(changed(&desired, &desired, &Value::Null, "x").is_empty());
    }
}

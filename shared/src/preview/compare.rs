//! One object as it is and as it would be: the fields the API server keeps for itself left out,
//! Secrets' values replaced by a mark, a unified diff, and the container images that change.

use base64::Engine;
use serde_json::{Map, Value};

/// The mark a Secret's value is shown as: its key and whether it changes, never its value.
const HIDDEN: &str = "(hidden)";
const HIDDEN_CHANGED: &str = "(hidden, changed)";

/// The object without what the API server writes for itself: managed fields, the resource
/// version, the uid, the generation, the creation time and the status.
pub(crate) fn normalized(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in ["managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink"] {
                metadata.remove(field);
            }
            if metadata.get("annotations").and_then(Value::as_object).is_some_and(Map::is_empty) {
                metadata.remove("annotations");
            }
        }
    }
    object
}

/// A Secret's `data` in both versions, each value replaced by a mark that says whether it
/// changes (`after`) or not: the keys show, the values never do. Other kinds pass unchanged.
pub(super) fn hide_secret_values(before: Option<&mut Value>, after: Option<&mut Value>) {
    let is_secret = |object: &Option<&mut Value>| {
        object.as_ref().is_some_and(|object| object["kind"] == "Secret" && object["apiVersion"] == "v1")
    };
    if !is_secret(&before) && !is_secret(&after) {
        return;
    }
    let data = |object: &Option<&mut Value>| -> Map<String, Value> {
        let mut merged = object.as_ref().and_then(|object| object["data"].as_object().cloned()).unwrap_or_default();
        // A manifest's stringData, before the API server moves it into data.
        if let Some(strings) = object.as_ref().and_then(|object| object["stringData"].as_object()) {
            merged.extend(strings.iter().map(|(key, value)| (key.clone(), value.clone())));
        }
        merged
    };
    let (old, new) = (data(&before), data(&after));
    if let Some(before) = before {
        mark(before, old.keys().map(|key| (key.clone(), HIDDEN)));
    }
    if let Some(after) = after {
        let marks = new.iter().map(|(key, value)| {
            let same = old.get(key).is_some_and(|old| old == value);
            (key.clone(), if same { HIDDEN } else { HIDDEN_CHANGED })
        });
        mark(after, marks.collect::<Vec<_>>().into_iter());
    }
}

fn mark<'a>(secret: &mut Value, marks: impl Iterator<Item = (String, &'a str)>) {
    let Some(map) = secret.as_object_mut() else { return };
    map.remove("stringData");
    let data: Map<String, Value> = marks.map(|(key, mark)| (key, Value::String(mark.to_string()))).collect();
    if data.is_empty() {
        map.remove("data");
    } else {
        map.insert("data".into(), Value::Object(data));
    }
}

/// The object as applying `built` would make it, worked out on this machine when the API server
/// may not be asked (no `patch` right, so no dry run): the live object with the built one's
/// fields laid over it (maps merged key by key, lists of the same length item by item, other
/// lists replaced), and a Secret's `stringData` moved into `data`, base64-encoded, as the API
/// server moves it. Without the API server's defaulting and admission: an approximation.
pub(crate) fn applied_here(live: Option<&Value>, built: &Value) -> Value {
    let mut built = built.clone();
    if built["kind"] == "Secret"
        && let Some(map) = built.as_object_mut()
        && let Some(Value::Object(strings)) = map.remove("stringData")
    {
        let data = map.entry("data").or_insert_with(|| Value::Object(Map::new()));
        if let Some(data) = data.as_object_mut() {
            for (key, value) in strings {
                let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_str().unwrap_or_default());
                data.insert(key, Value::String(encoded));
            }
        }
    }
    match live {
        Some(live) => overlay(live.clone(), built),
        None => built,
    }
}

fn overlay(under: Value, over: Value) -> Value {
    match (under, over) {
        (Value::Object(mut under), Value::Object(over)) => {
            for (key, value) in over {
                let merged = match under.remove(&key) {
                    Some(old) => overlay(old, value),
                    None => value,
                };
                under.insert(key, merged);
            }
            Value::Object(under)
        }
        (Value::Array(under), Value::Array(over)) if under.len() == over.len() => {
            Value::Array(under.into_iter().zip(over).map(|(old, new)| overlay(old, new)).collect())
        }
        (_, over) => over,
    }
}

/// A unified diff of two YAML texts (`before` empty for a new object, `after` for a pruned
/// one), headed by `label`, with three lines of context.
pub(super) fn unified(label: &str, before: &str, after: &str) -> String {
    let diff = similar::TextDiff::from_lines(before, after);
    diff.unified_diff().context_radius(3).header(&format!("live/{label}"), &format!("after/{label}")).to_string()
}

/// Every container image an object names (`containers`, `initContainers`, `ephemeralContainers`,
/// at any depth: a Deployment's template, a CronJob's job template), in order.
pub(super) fn images(object: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect_images(object, &mut found);
    found
}

fn collect_images(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if matches!(key.as_str(), "containers" | "initContainers" | "ephemeralContainers")
                    && let Some(containers) = child.as_array()
                {
                    found.extend(containers.iter().filter_map(|c| c["image"].as_str()).map(String::from));
                }
                collect_images(child, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_images(item, found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_the_api_server_writes_for_itself_is_left_out() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "uid": "1", "resourceVersion": "7", "managedFields": [], "generation": 2,
                         "creationTimestamp": "2026-12-01T00:00:00Z", "labels": {"x": "y"}},
            "data": {"k": "v"}, "status": {}});
        assert_eq!(
            normalized(&live),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn a_secret_shows_its_keys_and_which_change_never_a_value() {
        let mut live = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"same": "c2FtZQ==", "moved": "b2xk", "gone": "eA=="}});
        let mut after = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"same": "c2FtZQ==", "moved": "bmV3", "added": "eQ=="}});
        hide_secret_values(Some(&mut live), Some(&mut after));
        assert_eq!(live["data"], json!({"same": HIDDEN, "moved": HIDDEN, "gone": HIDDEN}));
        assert_eq!(after["data"], json!({"same": HIDDEN, "moved": HIDDEN_CHANGED, "added": HIDDEN_CHANGED}));
        let text = format!("{live}{after}");
        for value in ["c2FtZQ==", "b2xk", "bmV3", "eA==", "eQ=="] {
            assert!(!text.contains(value), "{value} shown: {text}");
        }
        // A manifest's stringData counts as data, and is not shown either.
        let mut built = json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"token": "hunter2"}});
        hide_secret_values(None, Some(&mut built));
        assert_eq!(built, json!({"apiVersion": "v1", "kind": "Secret", "data": {"token": HIDDEN_CHANGED}}));
    }

    #[test]
    fn worked_out_here_the_built_fields_lie_over_the_live_ones() {
        let live = json!({"kind": "Deployment", "metadata": {"name": "web", "uid": "1"}, "spec": {"replicas": 1,
            "template": {"spec": {"containers": [{"name": "web", "image": "web:1.0", "imagePullPolicy": "IfNotPresent"}]}}}});
        let built = json!({"kind": "Deployment", "metadata": {"name": "web"}, "spec": {
            "template": {"spec": {"containers": [{"name": "web", "image": "web:1.1"}]}}}});
        let after = applied_here(Some(&live), &built);
        assert_eq!(
            after["spec"]["template"]["spec"]["containers"][0],
            json!({"name": "web", "image": "web:1.1", "imagePullPolicy": "IfNotPresent"})
        );
        assert_eq!((after["spec"]["replicas"].clone(), after["metadata"]["uid"].clone()), (json!(1), json!("1")));
        // A Secret's stringData, as the API server stores it.
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"token": "same"}});
        let live = json!({"apiVersion": "v1", "kind": "Secret", "data": {"token": "c2FtZQ=="}});
        assert_eq!(applied_here(Some(&live), &secret), live);
    }

    #[test]
    fn images_are_found_in_every_pod_template() {
        let cron = json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "initContainers": [{"image": "busybox:1"}], "containers": [{"image": "app:2"}, {"name": "no-image"}]}}}}}});
        assert_eq!(images(&cron), ["app:2", "busybox:1"]);
    }

    #[test]
    fn the_diff_names_the_object_on_both_sides() {
        let text = unified("ConfigMap/default/a", "data:\n  k: v1\n", "data:\n  k: v2\n");
        assert_eq!(
            text,
            "--- live/ConfigMap/default/a\n+++ after/ConfigMap/default/a\n@@ -1,2 +1,2 @@\n data:\n-  k: v1\n+  k: v2\n"
        );
    }
}

//! A HelmRelease's values as helm-controller composes them (fluxcd/pkg/chartutil's
//! `ChartValuesFromReferences`): each `valuesFrom` key in order, merged over what came before
//! (maps merge key by key, anything else replaces), or set at its `targetPath`; then
//! `spec.values` on top. What Helm then does with them (coalescing with the chart's defaults) is
//! left to Helm.

use serde_json::{Map, Value};

/// One `valuesFrom` entry, read.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Layer {
    /// A YAML document of values, merged.
    Document(Map<String, Value>),
    /// One value set at a dotted path (`targetPath`), as `helm --set` would: typed (`true`,
    /// `false`, `null`, integers) unless `string` (quoted in the ConfigMap or Secret, or
    /// `literal`).
    AtPath { path: String, value: String, string: bool },
}

impl Layer {
    /// A `valuesFrom` entry's data: a document, or its value at `target_path`.
    pub(super) fn read(data: &str, target_path: Option<&str>, literal: bool) -> Result<Layer, String> {
        let Some(path) = target_path.filter(|path| !path.is_empty()) else {
            let document: Value = if data.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                crate::yaml::from_str(data).map_err(|error| format!("its values are not YAML: {error}"))?
            };
            return match document {
                Value::Object(map) => Ok(Layer::Document(map)),
                Value::Null => Ok(Layer::Document(Map::new())),
                _ => Err("its values are not a YAML map".into()),
            };
        };
        let quoted = data.len() >= 2
            && ((data.starts_with('"') && data.ends_with('"')) || (data.starts_with('\'') && data.ends_with('\'')));
        let value = if quoted && !literal { data.trim_matches(['"', '\'']).to_string() } else { data.to_string() };
        // Helm's own parser reads `,`, `[`, `{` and `\` in a value as more syntax (a list, a
        // second assignment); rendering that here could differ from the controller's, so it is
        // said instead of guessed.
        if !literal && value.contains([',', '[', ']', '{', '}', '\\']) {
            return Err(format!(
                "its value for targetPath {path} holds characters Helm's --set syntax reads as structure, which diff does not render; mark the reference literal: true"
            ));
        }
        Ok(Layer::AtPath { path: path.to_string(), value, string: quoted || literal })
    }
}

/// The values the chart renders with: `layers` in order, then `values` (`spec.values`).
pub(super) fn compose(layers: &[Layer], values: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut result = Map::new();
    for layer in layers {
        match layer {
            Layer::Document(document) => result = merge_maps(&result, document),
            Layer::AtPath { path, value, string } => {
                // The controller merges `spec.values` in before it sets a path (and again at the
                // end), so a later document layer cannot undo them: the same order here.
                result = merge_maps(&result, values);
                set_path(&mut result, path, typed(value, *string))?;
            }
        }
    }
    Ok(merge_maps(&result, values))
}

/// `b` over `a`: a map in both is merged key by key, anything else in `b` replaces.
pub(super) fn merge_maps(a: &Map<String, Value>, b: &Map<String, Value>) -> Map<String, Value> {
    let mut out = a.clone();
    for (key, value) in b {
        let merged = match (out.get(key), value) {
            (Some(Value::Object(old)), Value::Object(new)) => Value::Object(merge_maps(old, new)),
            _ => value.clone(),
        };
        out.insert(key.clone(), merged);
    }
    out
}

/// A `--set` value as Helm types it: `true`, `false`, `null`, an integer without a leading zero
/// (or `0`), else the string.
fn typed(value: &str, string: bool) -> Value {
    if string {
        return Value::String(value.to_string());
    }
    match value {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        "0" => Value::from(0),
        _ if !value.starts_with('0') => value.parse::<i64>().map_or_else(|_| Value::String(value.into()), Value::from),
        _ => Value::String(value.to_string()),
    }
}

/// Sets `value` at a dotted path (`a.b.c`, `\.` for a dot inside a key), making maps on the way.
fn set_path(values: &mut Map<String, Value>, path: &str, value: Value) -> Result<(), String> {
    if path.contains(['[', ']']) {
        return Err(format!("targetPath {path} indexes a list, which diff does not render"));
    }
    let mut keys = Vec::new();
    let mut key = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => key.extend(chars.next()),
            '.' => keys.push(std::mem::take(&mut key)),
            _ => key.push(c),
        }
    }
    keys.push(key);
    if keys.iter().any(String::is_empty) {
        return Err(format!("targetPath {path} has an empty key"));
    }
    let (last, parents) = keys.split_last().ok_or_else(|| format!("targetPath {path} is empty"))?;
    let mut map = values;
    for key in parents {
        let entry = map.entry(key.clone()).or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        map = entry.as_object_mut().ok_or_else(|| format!("targetPath {path}: {key} is not a map"))?;
    }
    map.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn documents_merge_in_order_maps_key_by_key_and_spec_values_win() {
        let first = Layer::read("db:\n  type: sqlite\n  size: 1\nreplicas: 1\n", None, false).unwrap();
        let second = Layer::read("db:\n  type: postgresql\ntags: [a]\n", None, false).unwrap();
        let values = map(json!({"replicas": 3, "tags": ["b"]}));
        assert_eq!(
            Value::Object(compose(&[first, second], &values).unwrap()),
            json!({"db": {"type": "postgresql", "size": 1}, "replicas": 3, "tags": ["b"]})
        );
        assert_eq!(Layer::read("", None, false).unwrap(), Layer::Document(Map::new()));
        assert!(Layer::read("- a\n", None, false).unwrap_err().contains("not a YAML map"));
    }

    #[test]
    fn a_target_path_is_set_typed_as_helm_set_types_it() {
        let at = |data: &str, literal: bool| Layer::read(data, Some("auth.admin\\.password"), literal).unwrap();
        for (data, literal, want) in [
            ("s3cr3t", false, json!("s3cr3t")),
            ("true", false, json!(true)),
            ("42", false, json!(42)),
            ("042", false, json!("042")),
            ("\"42\"", false, json!("42")),
            ("a,b", true, json!("a,b")),
        ] {
            let composed = compose(&[at(data, literal)], &Map::new()).unwrap();
            assert_eq!(composed["auth"]["admin.password"], want, "{data}");
        }
        assert!(Layer::read("a,b", Some("x"), false).unwrap_err().contains("literal: true"));
        assert!(compose(&[at("1", false)], &map(json!({"auth": "flat"}))).is_ok());
        let indexed = Layer::read("1", Some("list[0]"), false).unwrap();
        assert!(compose(&[indexed], &Map::new()).unwrap_err().contains("indexes a list"));
    }

    #[test]
    fn spec_values_are_merged_before_a_path_is_set_as_the_controller_does() {
        let values = map(json!({"auth": {"user": "admin"}}));
        let composed = compose(&[Layer::read("hunter2", Some("auth.password"), false).unwrap()], &values).unwrap();
        assert_eq!(Value::Object(composed), json!({"auth": {"user": "admin", "password": "hunter2"}}));
    }
}

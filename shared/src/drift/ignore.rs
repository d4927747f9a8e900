//! The fields Flux is told not to correct: a Kustomization's `spec.ignore` and a HelmRelease's
//! `spec.driftDetection.ignore` rules (JSON pointers, for the objects a selector matches), and
//! the objects a HelmRelease's drift detection leaves out. They are read as the controllers read
//! them (fluxcd/pkg/ssa's jsondiff): a selector's group, version, kind, name and namespace are
//! regular expressions anchored at both ends, its label and annotation selectors label
//! selectors; an empty pointer ignores the whole object. The rules come from the config repo and
//! are checked like any input: a rule that does not parse makes the Kustomization unchecked.

use regex::Regex;
use serde_json::Value;

use crate::label_selector::{self, Requirement};

/// The annotation (or label) that keeps an object out of a HelmRelease's drift detection.
const HELM_DRIFT_DETECTION: &str = "helm.toolkit.fluxcd.io/driftDetection";

/// The compiled ignore rules of one Kustomization or HelmRelease.
#[derive(Debug, Default)]
pub(super) struct IgnoreRules(Vec<Rule>);

#[derive(Debug)]
struct Rule {
    paths: Vec<String>,
    target: Option<Target>,
}

/// Which objects a rule is for; every part that is set must match.
#[derive(Debug, Default)]
struct Target {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: Option<Vec<Requirement>>,
    annotations: Option<Vec<Requirement>>,
}

impl IgnoreRules {
    /// `rules`: a list of `{paths, target}` (absent: none), or why it is not one.
    pub(super) fn parse(rules: &Value) -> Result<IgnoreRules, String> {
        let Some(rules) = rules.as_array() else {
            return if rules.is_null() { Ok(IgnoreRules::default()) } else { Err("ignore is not a list".into()) };
        };
        let mut parsed = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            let at = |why: String| format!("ignore rule {index}: {why}");
            let paths = rule["paths"]
                .as_array()
                .and_then(|paths| paths.iter().map(|path| path.as_str().map(String::from)).collect::<Option<Vec<_>>>())
                .ok_or_else(|| at("paths is not a list of JSON pointers".into()))?;
            if let Some(path) = paths.iter().find(|path| !path.is_empty() && !path.starts_with('/')) {
                return Err(at(format!("{path:?} is not a JSON pointer")));
            }
            let target = match &rule["target"] {
                Value::Null => None,
                target => Some(Target::parse(target).map_err(at)?),
            };
            parsed.push(Rule { paths, target });
        }
        Ok(IgnoreRules(parsed))
    }

    /// The JSON pointers ignored in `document` (as Flux applies it).
    pub(super) fn paths_for(&self, document: &Value) -> Vec<&str> {
        self.0
            .iter()
            .filter(|rule| rule.target.as_ref().is_none_or(|target| target.matches(document)))
            .flat_map(|rule| rule.paths.iter().map(String::as_str))
            .collect()
    }
}

impl Target {
    fn parse(target: &Value) -> Result<Target, String> {
        let pattern = |field: &str| -> Result<Option<Regex>, String> {
            match target[field].as_str().filter(|text| !text.is_empty()) {
                None => Ok(None),
                Some(text) => Regex::new(&format!("^(?:{text})$"))
                    .map(Some)
                    .map_err(|error| format!("target.{field} {text:?} is not a regular expression: {error}")),
            }
        };
        let selector = |field: &str| -> Result<Option<Vec<Requirement>>, String> {
            match target[field].as_str().filter(|text| !text.is_empty()) {
                None => Ok(None),
                Some(text) => label_selector::parse(text)
                    .map(Some)
                    .map_err(|why| format!("target.{field} {text:?} is not a selector: {why}")),
            }
        };
        Ok(Target {
            group: pattern("group")?,
            version: pattern("version")?,
            kind: pattern("kind")?,
            name: pattern("name")?,
            namespace: pattern("namespace")?,
            labels: selector("labelSelector")?,
            annotations: selector("annotationSelector")?,
        })
    }

    fn matches(&self, document: &Value) -> bool {
        let api_version = document["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let text = |pointer: &str| document.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
        let matched = |pattern: &Option<Regex>, value: &str| pattern.as_ref().is_none_or(|regex| regex.is_match(value));
        let selected = |selector: &Option<Vec<Requirement>>, map: &Value| {
            selector.as_ref().is_none_or(|requirements| label_selector::matches(requirements, map))
        };
        matched(&self.group, group)
            && matched(&self.version, version)
            && matched(&self.kind, text("/kind"))
            && matched(&self.name, text("/metadata/name"))
            && matched(&self.namespace, text("/metadata/namespace"))
            && selected(&self.labels, &document["metadata"]["labels"])
            && selected(&self.annotations, &document["metadata"]["annotations"])
    }
}

/// Whether a HelmRelease's drift detection leaves `object` out (its annotation or label says
/// `disabled`).
pub(super) fn helm_excluded(object: &Value) -> bool {
    let metadata = &object["metadata"];
    [&metadata["annotations"], &metadata["labels"]]
        .iter()
        .any(|map| map[HELM_DRIFT_DETECTION].as_str().is_some_and(|value| value.eq_ignore_ascii_case("disabled")))
}

/// `value` without what `pointer` (RFC 6901) names; a pointer to nothing there changes nothing.
pub(super) fn remove(value: &mut Value, pointer: &str) {
    let Some(rest) = pointer.strip_prefix('/') else { return };
    let tokens: Vec<String> = rest.split('/').map(|token| token.replace("~1", "/").replace("~0", "~")).collect();
    let Some((last, parents)) = tokens.split_last() else { return };
    let mut at = value;
    for token in parents {
        let next = match at {
            Value::Object(map) => map.get_mut(token),
            Value::Array(list) => token.parse::<usize>().ok().and_then(|index| list.get_mut(index)),
            _ => None,
        };
        let Some(next) = next else { return };
        at = next;
    }
    match at {
        Value::Object(map) => drop(map.remove(last)),
        Value::Array(list) => {
            if let Some(index) = last.parse::<usize>().ok().filter(|index| *index < list.len()) {
                list.remove(index);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web-1", "namespace": "team", "labels": {"tier": "web"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web", "image": "a"}]}}},
        })
    }

    #[test]
    fn a_rule_applies_to_the_objects_its_target_matches_as_anchored_expressions() {
        let rules = IgnoreRules::parse(&json!([
            {"paths": ["/spec/replicas"], "target": {"kind": "Deployment", "name": "web-.*", "group": "apps"}},
            {"paths": ["/metadata/labels/x"], "target": {"kind": "Deploy"}},
            {"paths": ["/spec/template/spec/containers/0/image"], "target": {"labelSelector": "tier in (web)"}},
            {"paths": ["/data"]},
        ]))
        .unwrap();
        assert_eq!(
            rules.paths_for(&deployment()),
            ["/spec/replicas", "/spec/template/spec/containers/0/image", "/data"]
        );
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-1"}});
        assert_eq!(rules.paths_for(&config_map), ["/data"]);
    }

    #[test]
    fn rules_that_do_not_parse_are_refused_with_where() {
        assert!(IgnoreRules::parse(&Value::Null).unwrap().0.is_empty());
        let bad = |rules: Value| IgnoreRules::parse(&rules).unwrap_err();
        assert!(bad(json!({})).contains("not a list"));
        assert!(bad(json!([{"paths": "x"}])).starts_with("ignore rule 0: paths"));
        assert!(bad(json!([{"paths": ["spec"]}])).contains("\"spec\" is not a JSON pointer"));
        assert!(bad(json!([{"paths": [], "target": {"name": "("}}])).contains("target.name"));
        assert!(bad(json!([{"paths": [], "target": {"labelSelector": "a in b"}}])).contains("target.labelSelector"));
    }

    #[test]
    fn a_pointer_removes_what_it_names_and_nothing_else() {
        let mut object = deployment();
        remove(&mut object, "/spec/template/spec/containers/0/image");
        remove(&mut object, "/spec/replicas");
        remove(&mut object, "/spec/nothing/here");
        remove(&mut object, "/spec/template/spec/containers/7");
        assert_eq!(object["spec"], json!({"template": {"spec": {"containers": [{"name": "web"}]}}}));
        let mut escaped = json!({"metadata": {"annotations": {"a/b": "1", "c~d": "2"}}});
        remove(&mut escaped, "/metadata/annotations/a~1b");
        remove(&mut escaped, "/metadata/annotations/c~0d");
        assert_eq!(escaped["metadata"]["annotations"], json!({}));
    }

    #[test]
    fn helm_drift_detection_is_disabled_per_object_by_its_annotation_or_label() {
        assert!(helm_excluded(&json!({"metadata": {"annotations": {HELM_DRIFT_DETECTION: "disabled"}}})));
        assert!(helm_excluded(&json!({"metadata": {"labels": {HELM_DRIFT_DETECTION: "Disabled"}}})));
        assert!(!helm_excluded(&deployment()));
    }
}

//! Versioned documents: every `-o json|yaml` document names its `apiVersion` and `kind`, as a
//! Kubernetes object does, and a list is `{apiVersion, kind: <Kind>List, items: [...]}` as
//! kubectl's are. A script can check what it reads before it trusts a field, and the JSON Schema
//! of each kind is derived from the very type that prints it (docs/schemas/, `schemas`).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

/// The API group and version of every document; a field's meaning changes only with it.
pub const API_VERSION: &str = "gitops.kubectl.io/v1alpha1";

/// A type printed as a document of its own kind.
pub trait Kind: Serialize + JsonSchema {
    /// `Status`, `App`, …: a list of them is `<KIND>List`.
    const KIND: &'static str;
}

/// What [`super::Printer::structured`] and [`super::render_structured`] accept: a document or
/// a list, never bare data.
pub trait Versioned: Serialize {}

/// One object: its fields after `apiVersion` and `kind`.
#[derive(Serialize)]
pub struct Document<'a, T> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    #[serde(flatten)]
    body: &'a T,
}

impl<T: Kind> Versioned for Document<'_, T> {}

/// `value` as a document of its kind.
pub fn document<T: Kind>(value: &T) -> Document<'_, T> {
    Document { api_version: API_VERSION, kind: T::KIND, body: value }
}

/// A list of objects of one kind.
#[derive(Serialize)]
pub struct List<'a, T> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: String,
    items: &'a [T],
}

impl<T: Kind> Versioned for List<'_, T> {}

/// `items` as a `<Kind>List`.
pub fn list<T: Kind>(items: &[T]) -> List<'_, T> {
    List { api_version: API_VERSION, kind: list_kind::<T>(), items }
}

fn list_kind<T: Kind>() -> String {
    format!("{}List", T::KIND)
}

/// The JSON Schema (draft 2020-12) of `T`'s documents: the type's own, with `apiVersion` and
/// `kind` required and fixed.
///
/// Panics when the type has a field of either name: its document would say `kind` twice.
pub fn schema_of<T: Kind>() -> Value {
    let mut schema = root_schema::<T>();
    for name in ["apiVersion", "kind"] {
        assert!(schema["properties"].get(name).is_none(), "{} has a field {name}: rename it", T::KIND);
    }
    let header = header(T::KIND);
    match schema.as_object_mut() {
        Some(object) if object.get("properties").is_some_and(Value::is_object) => {
            let properties = object["properties"].as_object_mut().expect("checked to be an object");
            for (name, property) in header["properties"].as_object().expect("built as an object") {
                properties.insert(name.clone(), property.clone());
            }
            let required = object.entry("required").or_insert_with(|| json!([]));
            if let Some(required) = required.as_array_mut() {
                required.splice(0..0, [json!("apiVersion"), json!("kind")]);
            }
        }
        // Not a plain object (an enum of shapes): the header applies besides the type's schema.
        _ => {
            let defs = schema.as_object_mut().and_then(|object| object.remove("$defs"));
            let mut body = schema.clone();
            if let Some(object) = body.as_object_mut() {
                object.remove("$schema");
                object.remove("title");
            }
            schema = json!({
                "$schema": DIALECT,
                "title": T::KIND,
                "allOf": [header, body],
            });
            if let Some(defs) = defs {
                schema["$defs"] = defs;
            }
        }
    }
    schema
}

/// The JSON Schema of `T`'s lists.
pub fn list_schema_of<T: Kind>() -> Value {
    let mut item = root_schema::<T>();
    let defs = item.as_object_mut().and_then(|object| object.remove("$defs"));
    if let Some(object) = item.as_object_mut() {
        object.remove("$schema");
    }
    let kind = list_kind::<T>();
    let mut schema = header(&kind);
    schema["$schema"] = json!(DIALECT);
    schema["title"] = json!(kind);
    schema["properties"]["items"] = json!({ "type": "array", "items": item });
    schema["required"] = json!(["apiVersion", "kind", "items"]);
    if let Some(defs) = defs {
        schema["$defs"] = defs;
    }
    schema
}

const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

fn root_schema<T: JsonSchema>() -> Value {
    // For serialisation: a field skipped when empty is optional, as the printed document has it.
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// `apiVersion` and `kind`, fixed.
fn header(kind: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": { "const": API_VERSION },
            "kind": { "const": kind },
        },
        "required": ["apiVersion", "kind"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct Probe {
        app_name: String,
    }

    impl Kind for Probe {
        const KIND: &'static str = "Probe";
    }

    #[test]
    fn documents_and_lists_name_their_version_and_kind() {
        let probe = Probe { app_name: "web".into() };
        assert_eq!(
            serde_json::to_value(document(&probe)).unwrap(),
            json!({"apiVersion": API_VERSION, "kind": "Probe", "appName": "web"})
        );
        assert_eq!(
            serde_json::to_value(list(std::slice::from_ref(&probe))).unwrap(),
            json!({"apiVersion": API_VERSION, "kind": "ProbeList", "items": [{"appName": "web"}]})
        );
    }

    #[test]
    fn schemas_require_the_version_and_the_kind() {
        let schema = schema_of::<Probe>();
        assert_eq!(schema["properties"]["kind"], json!({"const": "Probe"}));
        assert_eq!(schema["required"], json!(["apiVersion", "kind", "appName"]));
        let list = list_schema_of::<Probe>();
        assert_eq!(list["properties"]["kind"], json!({"const": "ProbeList"}));
        assert_eq!(list["properties"]["items"]["items"]["properties"]["appName"]["type"], json!("string"));
    }
}

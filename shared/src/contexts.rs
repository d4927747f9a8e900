//! Several kubeconfig contexts at once: `--context dev,uat` of `status`, `app status` and `app
//! list` (docs/fleet.md). Each context is asked what the command asks one, at most
//! [`CONCURRENCY`] at a time, and the answers are shown in the list's order: a block per context
//! on the screen, an item per context in a `ContextAnswerList` with `-o json|yaml`. A context that
//! fails is its block (or item) saying why; the others are still shown. `fleet status` makes one
//! matrix of the same answers instead.

use std::future::Future;

use futures::StreamExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::Connection;
use crate::error::{Error, ExitCode, Result};
use crate::output::{Kind, Printer};

/// How many contexts are asked at once.
pub const CONCURRENCY: usize = 8;

/// `--context`'s list when it names several contexts (`dev,uat`); `None` when it names one (or
/// is not given), which the command reaches as usual.
pub fn several(global: &GlobalArgs) -> Result<Option<Vec<String>>> {
    let Some(text) = global.context.as_deref().filter(|text| text.contains(',')) else {
        return Ok(None);
    };
    let list = split(text)?;
    if let Some(twice) = list.iter().enumerate().find_map(|(index, name)| list[..index].contains(name).then_some(name))
    {
        return Err(Error::usage(format!("--context names {twice} twice"), "name each context once"));
    }
    refuse_one_connection(global)?;
    Ok(Some(list))
}

/// A `--context` list (`dev, uat`): its names, in its order.
pub fn split(text: &str) -> Result<Vec<String>> {
    let list: Vec<String> = text.split(',').map(str::trim).filter(|name| !name.is_empty()).map(String::from).collect();
    if list.is_empty() {
        return Err(Error::usage(format!("--context {text:?} names no context"), "e.g. --context dev,uat"));
    }
    Ok(list)
}

/// Refuses `--server`, `--token` and `--user` where several clusters are asked: they name one
/// cluster's connection, and each context has its own.
pub fn refuse_one_connection(global: &GlobalArgs) -> Result<()> {
    if global.server.is_some() || global.token.is_some() || global.user.is_some() {
        return Err(Error::usage(
            "--server, --token and --user name one cluster's connection, and several clusters are asked",
            "leave them out: each context's own cluster and user are used",
        ));
    }
    Ok(())
}

/// What a command answered in one context: its output as it prints it for one context (JSON
/// when the user asked for JSON or YAML), and its exit code.
pub struct Answer {
    pub text: String,
    pub code: ExitCode,
}

/// One context's answer in a `ContextAnswerList` (`-o json|yaml` with several contexts).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextAnswer {
    /// The kubeconfig context.
    pub context: String,
    /// The command's exit code in this context (docs/exit-codes.md).
    pub exit_code: i32,
    /// Why there is no result: the command's error in this context (unreachable, refused, not
    /// found).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The command's own document in this context: the kind its `-o json` prints with one
    /// context (`Status`, `AppReport`, `AppList`), with its own schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub result: Option<Value>,
}

impl Kind for ContextAnswer {
    const KIND: &'static str = "ContextAnswer";
}

/// Runs `ask` in each of `contexts` (each a copy of `connection` with that context), at most
/// [`CONCURRENCY`] at once, prints every answer in the list's order, and returns the worst exit
/// code. `ask` gets the format to answer in: JSON for `-o json|yaml` (the answers are then items
/// of one document), else `format`.
pub async fn in_each<F, Fut>(
    contexts: &[String],
    connection: &Connection,
    format: OutputFormat,
    printer: &Printer,
    ask: F,
) -> Result<ExitCode>
where
    F: Fn(Connection, OutputFormat) -> Fut,
    Fut: Future<Output = Result<Answer>>,
{
    let structured = matches!(format, OutputFormat::Json | OutputFormat::Yaml);
    let asked_format = if structured { OutputFormat::Json } else { format };
    let asked = contexts.iter().map(|context| {
        let connection = Connection { context: Some(context.clone()), ..connection.clone() };
        ask(connection, asked_format)
    });
    let answers: Vec<Result<Answer>> = futures::stream::iter(asked).buffered(CONCURRENCY).collect().await;
    let code = answers
        .iter()
        .map(|answer| answer.as_ref().map_or_else(Error::exit_code, |answer| answer.code))
        .max_by_key(|code| code.code())
        .unwrap_or(ExitCode::Ok);
    if structured {
        let items =
            contexts.iter().zip(answers).map(|(context, answer)| item(context, answer)).collect::<Result<Vec<_>>>()?;
        printer.structured(&crate::output::list(&items), format)?;
    } else {
        let blocks: Vec<String> =
            contexts.iter().zip(&answers).map(|(context, answer)| block(context, answer)).collect();
        printer.data(&blocks.join("\n"))?;
    }
    Ok(code)
}

/// One context's item: its document, or its error.
fn item(context: &str, answer: Result<Answer>) -> Result<ContextAnswer> {
    Ok(match answer {
        Ok(answer) => ContextAnswer {
            context: context.to_string(),
            exit_code: answer.code.code(),
            error: None,
            result: Some(serde_json::from_str(&answer.text).map_err(|error| Error::Render(error.to_string()))?),
        },
        Err(error) => ContextAnswer {
            context: context.to_string(),
            exit_code: error.exit_code().code(),
            error: Some(error.to_string()),
            result: None,
        },
    })
}

/// One context's block on the screen: a heading, then its output or its error.
fn block(context: &str, answer: &Result<Answer>) -> String {
    let body = match answer {
        Ok(answer) => answer.text.clone(),
        Err(error) => format!("error: {error}\n"),
    };
    format!("==> context {context} <==\n{body}")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        global: GlobalArgs,
    }

    fn global(args: &[&str]) -> GlobalArgs {
        Cli::try_parse_from([&["kubectl-gitops-status"][..], args].concat()).unwrap().global
    }

    #[test]
    fn a_list_names_several_contexts_and_one_name_stays_one_context() {
        assert_eq!(several(&global(&[])).unwrap(), None);
        assert_eq!(several(&global(&["--context", "dev"])).unwrap(), None);
        assert_eq!(several(&global(&["--context", "dev, uat"])).unwrap(), Some(vec!["dev".into(), "uat".into()]));
        let empty = several(&global(&["--context", ","])).unwrap_err();
        assert!(empty.to_string().contains("names no context"), "{empty}");
        let twice = several(&global(&["--context", "dev,dev"])).unwrap_err();
        assert!(twice.to_string().contains("names dev twice"), "{twice}");
        let server = several(&global(&["--context", "dev,uat", "--server", "https://127.0.0.1:1"])).unwrap_err();
        assert!(server.to_string().contains("several clusters are asked"), "{server}");
    }

    #[tokio::test]
    async fn each_context_answers_in_the_list_order_and_the_worst_code_wins() {
        let contexts = ["dev".to_string(), "gone".to_string(), "uat".to_string()];
        let asked = std::sync::Mutex::new(Vec::new());
        let code = in_each(
            &contexts,
            &Connection::default(),
            OutputFormat::Table,
            &crate::testing::quiet(),
            |connection, format| {
                asked.lock().unwrap().push((connection.context.clone().unwrap(), format));
                async move {
                    match connection.context.as_deref() {
                        Some("gone") => {
                            Err(Error::Unreachable { server: "https://127.0.0.1:1".into(), reason: "refused".into() })
                        }
                        Some("uat") => Ok(Answer { text: "not ready\n".into(), code: ExitCode::No }),
                        _ => Ok(Answer { text: "ready\n".into(), code: ExitCode::Ok }),
                    }
                }
            },
        )
        .await
        .unwrap();
        assert_eq!(code, ExitCode::Cluster);
        assert_eq!(asked.lock().unwrap().len(), 3);
        let dev = block("dev", &Ok(Answer { text: "ready\n".into(), code: ExitCode::Ok }));
        assert_eq!(dev, "==> context dev <==\nready\n");
        let gone = item("gone", Err(Error::usage("no such context", "name one"))).unwrap();
        assert_eq!((gone.exit_code, gone.error.as_deref(), gone.result), (2, Some("no such context"), None));
        let json = item("dev", Ok(Answer { text: "{\"kind\":\"Status\"}".into(), code: ExitCode::No })).unwrap();
        assert_eq!((json.exit_code, json.result), (1, Some(serde_json::json!({"kind": "Status"}))));
    }
}

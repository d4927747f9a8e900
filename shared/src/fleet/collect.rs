//! Asking every cluster of the fleet at once: each context's `status`, read as `status -A` reads
//! it, at most `--concurrency` clusters at a time, each within `--timeout`; a cluster that does
//! not answer in time is a column that says so, not a failed command.

use std::time::Duration;

use futures::StreamExt;

use super::matrix::{Column, Reached};
use crate::cluster::{Cluster, Connection};
use crate::error::{Error, Result};
use crate::output::Printer;
use crate::readers::{Report, Scope};

/// Every context of the kubeconfig, in its order (`--all-contexts`).
pub fn all_contexts(kubeconfig: Option<&std::path::Path>) -> Result<Vec<String>> {
    let config = match kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path),
        None => kube::config::Kubeconfig::read(),
    }
    .map_err(Error::Kubeconfig)?;
    Ok(config.contexts.into_iter().map(|context| context.name).collect())
}

/// What the context of each column answered, in their order.
pub async fn reach_all(
    connection: &Connection,
    columns: Vec<Column>,
    scope: &Scope,
    (timeout, concurrency): (Duration, usize),
    printer: &Printer,
) -> Vec<Reached> {
    let asked = columns.into_iter().enumerate().map(|(index, column)| {
        let connection = Connection { context: Some(column.context.clone()), ..connection.clone() };
        async move {
            let report = reach(&connection, scope, timeout, printer).await;
            (index, Reached { column, report })
        }
    });
    let mut answered: Vec<(usize, Reached)> =
        futures::stream::iter(asked).buffer_unordered(concurrency).collect().await;
    answered.sort_by_key(|(index, _)| *index);
    answered.into_iter().map(|(_, reached)| reached).collect()
}

/// One cluster's report within `timeout`, or why not (the error's own words: no secret is in
/// them).
async fn reach(
    connection: &Connection,
    scope: &Scope,
    timeout: Duration,
    printer: &Printer,
) -> std::result::Result<Report, String> {
    let asked = async {
        let cluster = Cluster::connect(connection, printer).await?;
        crate::readers::collect(&cluster, scope).await
    };
    match tokio::time::timeout(timeout, asked).await {
        Ok(answer) => answer.map_err(|error| error.to_string()),
        Err(_) => Err(format!("no answer within {}", crate::duration::format(timeout))),
    }
}

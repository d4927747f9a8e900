//! Every command that opens pull requests, by the words that record its request: the planner
//! `pr` and the faces run to plan a recorded request again ([`crate::change::recorded::Replanner`]).
//! It names every changing command, so it lives at the edge, above them all, and the binaries
//! hand it down; no command imports another to find it.

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::change::recorded::{Recorded, Replanned, unreadable};
use crate::error::Result;

/// Plans `recorded` again with the planner of the command its words name.
pub fn replan(recorded: Recorded<'_>) -> BoxFuture<'_, Result<Replanned>> {
    async move {
        let Recorded { words, context, base, branch_files, printer } = recorded;
        let rest = words.get(2..).unwrap_or_default();
        match words.first().map(String::as_str) {
            Some("app" | "platform") => crate::app::recorded::replan(words, context, base, branch_files).await,
            Some("tenant") => crate::tenant::replan(words, context, base).await,
            Some("monitoring") if words.get(1).is_some_and(|verb| verb == "install") => {
                crate::monitoring::replan(rest, words, context, &base.files())
            }
            Some("component") if words.get(1).is_some_and(|verb| verb == "upgrade") => {
                crate::component::replan(rest, words, context, &base.files())
            }
            Some("upgrade") => crate::upgrade::replan(&words[1..], words, context, base, printer).await,
            Some("promote") => crate::fleet::promote::replan(words, &context.namespace, &base.files()),
            _ => Err(unreadable(words, "it is not a command kubectl gitops opens pull requests for")),
        }
    }
    .boxed()
}

//! `kubectl gitops status`, `app status` and `app history`: their flags and runs, over the
//! cluster readers ([`crate::readers`]), which list, watch and judge what Flux runs and render it.
//! The `status` binary's own run (`plugins/kubectl-gitops-status`) reads through the readers too.

mod app_command;
mod app_history;
mod in_contexts;

pub use self::app_command::{AppStatusArgs, AppStatusRequest, run_app_status};
pub use self::app_history::{AppHistoryArgs, AppHistoryRequest, run_app_history};
pub use self::in_contexts::{answer, one_context_at_a_time};

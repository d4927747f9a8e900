//! The library behind every kubectl-gitops plugin binary.
//!
//! Each binary parses its own arguments and calls into one module per concern here; see
//! docs/ARCHITECTURE.md for how a command flows from arguments to API calls to output.

pub mod app;
pub mod apply;
#[cfg(test)]
mod architecture;
pub mod artifact;
pub mod change;
pub mod cli;
pub mod cluster;
pub mod completion;
pub mod component;
pub mod config;
pub mod contexts;
pub mod dependencies;
pub mod deploy_key;
pub mod deployments;
pub mod detect;
pub mod diagnostic;
pub mod diff;
pub mod drift;
pub mod duration;
pub mod env;
pub mod error;
pub mod fleet;
pub mod flux;
pub mod flux_cli;
pub mod flux_passthrough;
pub mod git;
pub mod git_error;
pub mod helm_cli;
pub mod http;
pub mod install;
pub mod interrupt;
pub mod label_selector;
pub mod local_server;
pub mod manpage;
pub mod mcp;
pub mod metrics;
pub mod monitoring;
pub mod names;
pub mod oci;
pub mod output;
pub mod plan;
pub mod plugin;
pub mod pr;
pub mod preview;
pub mod provider;
pub mod provider_error;
pub mod provider_kind;
pub mod publish;
pub mod readers;
pub mod record;
pub mod recorded_commands;
pub mod repo;
pub mod repo_access;
pub mod retry;
pub mod runtime;
pub mod schemas;
pub mod secret_value;
pub mod status;
pub mod tenant;
pub mod timeouts;
pub mod ui;
pub mod upgrade;
pub mod version;
pub mod wait;
pub mod yaml;

#[cfg(test)]
mod testing;

pub use error::{Error, ExitCode, Result};

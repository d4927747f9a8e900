//! The end-to-end and CLI tests, one test binary (linking each area as a binary of its own cost
//! more than running them). Each module is one area; `make test`'s summary counts them apart.

mod any_cluster;
mod app;
mod app_provider;
mod artifact;
mod browser;
mod cli;
mod component;
mod credentials;
mod deadlines;
mod dependencies;
mod detect;
mod diff;
mod distribution;
mod drift;
mod flags;
mod fleet;
mod flux;
mod flux_trust;
mod git;
mod gitea;
mod history;
mod install;
mod install_provider;
mod kubectl;
mod monitoring;
mod pr;
mod provider;
mod rollback;
mod schemas;
mod setup;
mod status;
mod tenant;
mod testenv;
mod ui;
mod upgrade;

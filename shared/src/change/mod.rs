//! The change engine: how every changing command (`app`, `platform`, `tenant`, `monitoring
//! install`, `component upgrade`, `upgrade`, `repo create`, the UI) changes the config repo and the
//! cluster. A command describes its change ([`drive::Change`]: the file changes it computed on a
//! clone, the objects to patch, how to word it) and hands it over; the engine
//! 1. resolves the context once ([`context`]): the cluster, its install record, the config repo
//!    and the provider in front of it, read-only;
//! 2. builds one typed [`plan::Plan`] and the delivery the provider allows (push or pull request);
//! 3. prints it for `--dry-run`, or carries out that same plan ([`deliver`]) through the one git
//!    write path ([`crate::publish`], re-planned on a refused push);
//! 4. with `--wait`, waits on watches until Flux applied the commit ([`wait`]).
//!
//! The config repo's layout ([`layout`]), the requests a pull request records ([`recorded`]) and
//! new repositories ([`new_repo`]) live here too: every command above shares them.

pub mod context;
pub mod deliver;
pub mod drive;
pub mod layout;
pub mod new_repo;
pub mod plan;
pub mod recorded;
pub mod settings;
pub mod wait;

pub use self::context::{ConfigRepo, Context, HostedRepo, context};
pub(crate) use self::context::{clone, reviewed, target_clusters};
pub(crate) use self::drive::{Awaits, Change, drive, drive_change};
pub use self::settings::{DeliveryMode, DeliverySettings, RepoSettings, Target};

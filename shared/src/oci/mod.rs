//! Flux OCI artifacts: the `oci://` URL, the tarball Flux builds, the manifest it pushes, safe
//! unpacking, registry credentials and the registry client.

pub mod artifact;
mod challenge;
pub mod credentials;
pub mod extract;
pub mod limits;
pub mod pull;
pub mod reference;
pub mod registry;
pub mod tarball;

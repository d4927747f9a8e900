//! The SSH key Flux pulls the config repo with, and the Secret it lives in.
//!
//! The Secret has the shape `flux create secret git` writes: `identity` (OpenSSH private key),
//! `identity.pub` and `known_hosts`. The private key never leaves this module except into
//! that Secret: [`DeployKey`]'s `Debug` hides it and dry-run output shows it redacted.

use std::collections::BTreeMap;
use std::fmt;

use clap::ValueEnum;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use ssh_key::rand_core::OsRng;
use ssh_key::{Algorithm, EcdsaCurve, HashAlg, LineEnding, PrivateKey};

use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux::bootstrap::SYNC_NAME;

/// `--ssh-key-algorithm` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum KeyAlgorithm {
    /// Ed25519 (the default: short, fast, accepted by GitHub and GitLab).
    #[default]
    Ed25519,
    /// ECDSA on NIST P-384 (what `flux bootstrap` generates).
    EcdsaP384,
    /// RSA 4096 bits, for servers that accept nothing else.
    Rsa,
}

/// A private key plus the host keys Flux must trust.
#[derive(Clone)]
pub struct DeployKey {
    private_openssh: String,
    /// The public key, one OpenSSH line (`ssh-ed25519 AAAA… comment`).
    pub public_openssh: String,
    /// `known_hosts` lines for the git host.
    pub known_hosts: String,
}

impl fmt::Debug for DeployKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeployKey")
            .field("private_openssh", &"<redacted>")
            .field("public_openssh", &self.public_openssh)
            .field("known_hosts", &self.known_hosts)
            .finish()
    }
}

/// The text dry-run output shows instead of secret data.
pub const REDACTED: &str = "<redacted>";

impl DeployKey {
    /// Generates a new key.
    pub fn generate(algorithm: KeyAlgorithm, comment: &str, known_hosts: String) -> Result<DeployKey> {
        let algorithm = match algorithm {
            KeyAlgorithm::Ed25519 => Algorithm::Ed25519,
            KeyAlgorithm::EcdsaP384 => Algorithm::Ecdsa { curve: EcdsaCurve::NistP384 },
            KeyAlgorithm::Rsa => Algorithm::Rsa { hash: Some(HashAlg::Sha512) },
        };
        let mut key = PrivateKey::random(&mut OsRng, algorithm)
            .map_err(|error| Error::Internal(format!("cannot generate an SSH key: {error}")))?;
        key.set_comment(comment);
        DeployKey::from_private(&key, known_hosts)
    }

    /// Loads an existing OpenSSH private key (`--private-key-file`).
    pub fn from_openssh(text: &str, known_hosts: String) -> Result<DeployKey> {
        let key = PrivateKey::from_openssh(text).map_err(|error| {
            Error::usage(
                format!("the private key is not an unencrypted OpenSSH key: {error}"),
                "pass a key made with `ssh-keygen -t ed25519 -N ''` (passphrases are not supported)",
            )
        })?;
        if key.is_encrypted() {
            return Err(Error::usage(
                "the private key is encrypted with a passphrase",
                "Flux cannot use an encrypted key; make one with `ssh-keygen -t ed25519 -N ''`",
            ));
        }
        DeployKey::from_private(&key, known_hosts)
    }

    fn from_private(key: &PrivateKey, known_hosts: String) -> Result<DeployKey> {
        let private_openssh = key
            .to_openssh(LineEnding::LF)
            .map_err(|error| Error::Internal(format!("cannot encode the SSH key: {error}")))?
            .to_string();
        let public_openssh = key
            .public_key()
            .to_openssh()
            .map_err(|error| Error::Internal(format!("cannot encode the SSH public key: {error}")))?;
        Ok(DeployKey { private_openssh, public_openssh, known_hosts })
    }

    /// Reads the key back from the Flux Secret; `None` when the Secret has no usable identity.
    pub fn from_secret(secret: &Secret) -> Option<DeployKey> {
        let field = |name: &str| {
            let data = secret.data.as_ref()?.get(name)?;
            String::from_utf8(data.0.clone()).ok()
        };
        let identity = field("identity")?;
        let known_hosts = field("known_hosts").unwrap_or_default();
        DeployKey::from_openssh(&identity, known_hosts).ok()
    }

    /// The private key, for the git client that pushes with it (`--private-key-file` flows).
    pub fn private_openssh(&self) -> &str {
        &self.private_openssh
    }

    /// The SHA256 fingerprint of the public key, as `ssh-keygen -l` prints it.
    pub fn fingerprint(&self) -> String {
        ssh_key::PublicKey::from_openssh(&self.public_openssh)
            .map(|key| key.fingerprint(HashAlg::Sha256).to_string())
            .unwrap_or_default()
    }

    /// The Secret Flux reads, in `namespace`, named `name`.
    pub fn secret(&self, namespace: &str, name: &str) -> Secret {
        let data = BTreeMap::from([
            ("identity".to_string(), ByteString(self.private_openssh.clone().into_bytes())),
            ("identity.pub".to_string(), ByteString(format!("{}\n", self.public_openssh).into_bytes())),
            ("known_hosts".to_string(), ByteString(self.known_hosts.clone().into_bytes())),
        ]);
        Secret { data: Some(data), ..DeployKey::secret_shell(namespace, name) }
    }

    /// A labelled, empty Opaque Secret, for any kind of Flux git credentials.
    pub fn secret_shell(namespace: &str, name: &str) -> Secret {
        Secret {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                labels: Some(BTreeMap::from([(
                    crate::record::MANAGED_BY_LABEL.to_string(),
                    crate::record::MANAGED_BY_VALUE.to_string(),
                )])),
                ..Default::default()
            },
            type_: Some("Opaque".to_string()),
            ..Default::default()
        }
    }

    /// The Secret as dry-run shows it: public key and known_hosts, private key redacted.
    pub fn redacted_secret_yaml(&self, namespace: &str, name: &str) -> Result<String> {
        let shown = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {crate::record::MANAGED_BY_LABEL: crate::record::MANAGED_BY_VALUE}},
            "type": "Opaque",
            "stringData": {
                "identity": REDACTED,
                "identity.pub": format!("{}\n", self.public_openssh),
                "known_hosts": self.known_hosts,
            }
        });
        crate::yaml::to_documents(&[shown])
    }
}

/// The host keys pinned in the cluster's Flux Secret (`known_hosts`) at install: the ones we
/// trust again for pushing and for re-runs. `None` when there is no Secret or we may not read it.
pub async fn pinned_known_hosts(cluster: &Cluster, namespace: &str) -> Result<Option<String>> {
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), namespace);
    match secrets.get_opt(SYNC_NAME).await {
        Ok(secret) => Ok(secret
            .and_then(|secret| secret.data)
            .and_then(|data| data.get("known_hosts").map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned()))),
        Err(error) if crate::cluster::is_forbidden(&error) => Ok(None),
        Err(error) => Err(cluster.error(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_round_trip_through_the_secret() {
        let key = DeployKey::generate(KeyAlgorithm::Ed25519, "flux@dev", "[127.0.0.1]:2222 ssh-ed25519 AAAA\n".into())
            .unwrap();
        assert!(key.public_openssh.starts_with("ssh-ed25519 "));
        assert!(key.public_openssh.ends_with(" flux@dev"));
        assert!(key.fingerprint().starts_with("SHA256:"));
        let secret = key.secret("flux-system", "flux-system");
        let back = DeployKey::from_secret(&secret).unwrap();
        assert_eq!(back.public_openssh, key.public_openssh);
        assert_eq!(back.known_hosts, key.known_hosts);
    }

    #[test]
    fn the_private_key_never_shows() {
        let key = DeployKey::generate(KeyAlgorithm::Ed25519, "flux", String::new()).unwrap();
        let debug = format!("{key:?}");
        assert!(!debug.contains("PRIVATE KEY"), "{debug}");
        let yaml = key.redacted_secret_yaml("flux-system", "flux-system").unwrap();
        assert!(!yaml.contains("PRIVATE KEY") && yaml.contains("identity: <redacted>"), "{yaml}");
    }

    #[test]
    fn ecdsa_keys_work_too() {
        let key = DeployKey::generate(KeyAlgorithm::EcdsaP384, "flux", String::new()).unwrap();
        assert!(key.public_openssh.starts_with("ecdsa-sha2-nistp384 "), "{}", key.public_openssh);
    }

    #[test]
    fn garbage_is_a_usage_error() {
        let error = DeployKey::from_openssh("not a key", String::new()).unwrap_err();
        assert_eq!(error.exit_code(), crate::error::ExitCode::Usage);
    }
}

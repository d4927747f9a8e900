//! Certificates and keys for the API server, made with the openssl CLI.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use super::process::run;

/// Paths of the generated PKI files.
pub struct Pki {
    /// The CA that signs everything.
    pub ca_cert: PathBuf,
    /// Its key (the controller-manager signs with it).
    pub ca_key: PathBuf,
    /// kube-apiserver's serving certificate and key.
    pub server_cert: PathBuf,
    /// kube-apiserver's serving key.
    pub server_key: PathBuf,
    /// The admin client certificate (group system:masters).
    pub admin_cert: PathBuf,
    /// The admin client key.
    pub admin_key: PathBuf,
    /// The service-account signing key.
    pub service_account_key: PathBuf,
    /// Its public half.
    pub service_account_pub: PathBuf,
}

impl Pki {
    /// Generates everything into `dir`.
    pub fn generate(dir: &Path) -> Result<Pki> {
        std::fs::create_dir_all(dir)?;
        let path = |name: &str| dir.join(name);
        let openssl = |args: &[&str]| run(Command::new("openssl").args(args).current_dir(dir));
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        openssl(
            &[
                &["req", "-x509"][..],
                &ec,
                &["-days", "3650", "-subj", "/CN=testenv-ca", "-keyout", "ca.key", "-out", "ca.crt"],
            ]
            .concat(),
        )?;
        std::fs::write(
            path("server.ext"),
            "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n",
        )?;
        std::fs::write(path("client.ext"), "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n")?;
        for (name, subject, ext) in
            [("server", "/CN=kube-apiserver", "server.ext"), ("admin", "/O=system:masters/CN=admin", "client.ext")]
        {
            let key = format!("{name}.key");
            let csr = format!("{name}.csr");
            let crt = format!("{name}.crt");
            openssl(&[&["req"][..], &ec, &["-subj", subject, "-keyout", &key, "-out", &csr]].concat())?;
            openssl(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "3650",
                "-extfile",
                ext,
                "-out",
                &crt,
            ])?;
        }
        openssl(&["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key"])?;
        openssl(&["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"])?;
        Ok(Pki {
            ca_cert: path("ca.crt"),
            ca_key: path("ca.key"),
            server_cert: path("server.crt"),
            server_key: path("server.key"),
            admin_cert: path("admin.crt"),
            admin_key: path("admin.key"),
            service_account_key: path("sa.key"),
            service_account_pub: path("sa.pub"),
        })
    }
}

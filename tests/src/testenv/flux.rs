//! The environment's Flux: its CRDs and its four controllers run as local processes (with the
//! lockdown flags the cluster's Deployments name), run once installed, rolled out and waited for.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::process::{free_ports, port_open, run, wait_until};
use super::{FLUX_CONTROLLERS, TestEnv};

impl TestEnv {
    /// Installs the Flux CRDs (from the same Go modules as the controllers) and starts the
    /// four Flux controllers as local processes.
    pub fn start_flux(&self) -> Result<()> {
        self.install_flux_crds()?;
        self.start_flux_controllers()
    }

    /// Applies the Flux CRDs from the controllers' Go modules and waits until they are Established.
    pub fn install_flux_crds(&self) -> Result<()> {
        for controller in FLUX_CONTROLLERS {
            let crds = self.cache.join("crds").join(controller);
            self.kubectl_ok(&["apply", "--server-side", "-f", &crds.display().to_string()])?;
        }
        self.kubectl_ok(&["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"])?;
        Ok(())
    }

    /// Starts the four Flux controllers as local processes, each once discovery serves every kind
    /// it watches (a controller that starts earlier exits: "no matches for kind"), and restarted
    /// with a backoff when it exits, as a kubelet restarts a crashed container.
    pub fn start_flux_controllers(&self) -> Result<()> {
        let bin = self.cache.join("bin");
        let events = format!("http://127.0.0.1:{}", self.ports.events);
        let free = free_ports(FLUX_CONTROLLERS.len() * 2 + 1)?;
        std::fs::create_dir_all(self.dir.join("storage"))?;
        for (index, controller) in FLUX_CONTROLLERS.iter().enumerate() {
            self.wait_until_served(controller)?;
            // The Flux controllers read the kubeconfig from KUBECONFIG; they have no flag for it.
            let mut args = vec![
                "--enable-leader-election=false".to_string(),
                "--log-encoding=json".to_string(),
                format!("--metrics-addr=127.0.0.1:{}", free[index * 2]),
                format!("--health-addr=127.0.0.1:{}", free[index * 2 + 1]),
            ];
            match *controller {
                "source-controller" => args.extend([
                    format!("--storage-path={}", self.dir.join("storage").display()),
                    format!("--storage-addr=127.0.0.1:{}", self.ports.storage),
                    format!("--storage-adv-addr=127.0.0.1:{}", self.ports.storage),
                    format!("--events-addr={events}"),
                ]),
                "notification-controller" => args.extend([
                    format!("--events-addr=127.0.0.1:{}", self.ports.events),
                    format!("--receiverAddr=127.0.0.1:{}", free[FLUX_CONTROLLERS.len() * 2]),
                ]),
                // A Kustomization or HelmRelease held back by its dependency is tried again after
                // 5 s instead of the default 30 s (the flag is the controllers' own): the tests
                // wait on dependency chains (platform before apps) again and again.
                _ => args.extend([format!("--events-addr={events}"), "--requeue-dependency=5s".to_string()]),
            }
            let (program, kubeconfig) = (bin.join(controller), self.kubeconfig.clone());
            let name = controller.to_string();
            self.supervisor().spawn_restarting(controller, move || {
                let mut command = Command::new(&program);
                command.args(&args).args(multi_tenancy_args(&kubeconfig, &name));
                command.env("KUBECONFIG", &kubeconfig).env("RUNTIME_NAMESPACE", "flux-system");
                command
            })?;
        }
        let metrics = FLUX_CONTROLLERS.iter().enumerate().map(|(index, controller)| (*controller, free[index * 2]));
        *self.flux_metrics.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = metrics.collect();
        let health_ports: Vec<u16> = (0..FLUX_CONTROLLERS.len()).map(|index| free[index * 2 + 1]).collect();
        wait_until("the Flux controllers' /readyz", Duration::from_secs(120), || {
            self.supervisor().check_alive()?;
            Ok(health_ports.iter().all(|port| {
                Command::new("curl")
                    .args(["-sf", "-o", "/dev/null", &format!("http://127.0.0.1:{port}/readyz")])
                    .status()
                    .is_ok_and(|s| s.success())
            }))
        })
    }

    /// Waits until API discovery serves every kind `controller` watches: the served versions of
    /// its own CRDs and of source-controller's (the sources every other controller reads).
    fn wait_until_served(&self, controller: &str) -> Result<()> {
        let mut wanted = crd_resources(&self.cache.join("crds").join(controller))?;
        if controller != "source-controller" {
            wanted.extend(crd_resources(&self.cache.join("crds/source-controller"))?);
        }
        let mut missing: Vec<String> = Vec::new();
        let waited =
            wait_until(&format!("discovery to serve the kinds {controller} watches"), Duration::from_secs(120), || {
                let mut still = Vec::new();
                let mut by_version: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
                for (group_version, plural) in &wanted {
                    by_version.entry(group_version).or_default().push(plural);
                }
                for (group_version, plurals) in by_version {
                    let output = self.kubectl(&["get", "--raw", &format!("/apis/{group_version}")])?;
                    let served: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
                    let names: Vec<&str> = served["resources"]
                        .as_array()
                        .map(|resources| resources.iter().filter_map(|r| r["name"].as_str()).collect())
                        .unwrap_or_default();
                    still.extend(
                        plurals
                            .into_iter()
                            .filter(|plural| !names.contains(plural))
                            .map(|plural| format!("{group_version}/{plural}")),
                    );
                }
                missing = still;
                Ok(missing.is_empty())
            });
        waited.with_context(|| format!("not served yet: {}", missing.join(", ")))
    }

    /// Plays the kubelet for Flux: once something (for example `kubectl gitops install`) has
    /// applied the Flux CRDs, starts the real Flux controllers as local processes, the way
    /// the Deployments in gotk-components.yaml would start them on a real node.
    ///
    /// The thread holds the environment only while it starts the controllers: a test that ends
    /// before anything installed Flux still stops its environment.
    pub fn run_flux_once_installed(self: &Arc<Self>) {
        let env = Arc::downgrade(self);
        std::thread::spawn(move || {
            let established = wait_until("the Flux CRDs", Duration::from_secs(600), || {
                let env = env.upgrade().context("the environment was stopped")?;
                let output = env.kubectl(&[
                    "get",
                    "crd",
                    "kustomizations.kustomize.toolkit.fluxcd.io",
                    "-o=jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
                ])?;
                Ok(output.stdout == b"True")
            });
            let started = established
                .and_then(|()| env.upgrade().context("the environment was stopped")?.start_flux_controllers());
            if let Err(error) = started
                && env.strong_count() > 0
            {
                eprintln!("testenv: the Flux controllers did not start: {error:#}");
            }
        });
    }

    /// Rolls the Flux controllers `controllers` out again, as a kubelet replaces a Deployment's pod
    /// whose template changed: each process is stopped and started again with the multi-tenancy
    /// flags its Deployment names now ([`multi_tenancy_args`]); returns once each answers again.
    pub fn roll_out_flux_controllers(&self, controllers: &[&str]) -> Result<()> {
        let metrics = self.flux_metrics.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        for controller in controllers {
            let (restarts, pid) = self.restarts(controller).with_context(|| format!("{controller} is not running"))?;
            run(Command::new("kill").args(["-TERM", &pid.to_string()]))?;
            let port = metrics.iter().find(|(name, _)| name == controller).map(|(_, port)| *port);
            wait_until(&format!("{controller} started again"), Duration::from_secs(60), || {
                let restarted = self.restarts(controller).is_some_and(|(now, _)| now > restarts);
                Ok(restarted && port.is_none_or(port_open))
            })?;
        }
        Ok(())
    }
}

/// The `(group/version, plural)` pairs that the CRD files in `dir` serve.
fn crd_resources(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut resources = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("the CRDs in {}", dir.display()))? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        let documents: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(&text).with_context(|| format!("parsing {}", path.display()))?;
        for crd in documents.iter().filter(|document| document["kind"] == "CustomResourceDefinition") {
            let spec = &crd["spec"];
            let (group, plural) =
                (spec["group"].as_str().unwrap_or_default(), spec["names"]["plural"].as_str().unwrap_or_default());
            for version in spec["versions"].as_array().into_iter().flatten().filter(|version| version["served"] == true)
            {
                resources
                    .push((format!("{group}/{}", version["name"].as_str().unwrap_or_default()), plural.to_string()));
            }
        }
    }
    Ok(resources)
}

/// The flags of flux2-multi-tenancy's lockdown (`tenant add --lockdown` patches them into the
/// controllers' Deployments) that `controller`'s Deployment in the cluster names now: the local
/// process runs with them, as its pod would. None before Flux is installed.
fn multi_tenancy_args(kubeconfig: &Path, controller: &str) -> Vec<String> {
    const FLAGS: [&str; 3] = ["--no-cross-namespace-refs", "--no-remote-bases", "--default-service-account"];
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["-n", "flux-system", "get", "deployment", controller])
        .arg("-o=jsonpath={.spec.template.spec.containers[0].args}")
        .output();
    let args: Vec<String> = output
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| serde_json::from_slice(&output.stdout).ok())
        .unwrap_or_default();
    args.into_iter().filter(|arg| FLAGS.iter().any(|flag| arg.starts_with(&format!("{flag}=")))).collect()
}

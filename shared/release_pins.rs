// Included by shared/build.rs, which refuses a release build with an empty pin, and by the unit
// tests of src/dependencies.rs (a build script's own functions cannot be unit-tested in place).

/// The pins a release build would leave empty, each as `[TOOL.checksums_sha256] "KEY"`. Every
/// one is something it executes: each Flux release listed runs without asking (the previous one
/// when the cluster runs it, not only `[flux].version`), and helm on each platform listed. An empty
/// pin checks a download against its own server's checksums alone, which is a development build.
fn empty_release_pins(tables: &[(&str, &std::collections::BTreeMap<String, String>)]) -> Vec<String> {
    tables
        .iter()
        .flat_map(|(tool, table)| {
            table
                .iter()
                .filter(|(_, sha)| sha.trim().is_empty())
                .map(move |(key, _)| format!("[{tool}.checksums_sha256] {key:?}"))
        })
        .collect()
}

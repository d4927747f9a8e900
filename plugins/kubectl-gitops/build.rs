//! The static Linux build (a `*-linux-musl` target, what the release archive ships) packs its
//! relative relocations (`-z pack-relative-relocs`, DT_RELR): a static-pie binary otherwise
//! carries one 24-byte relocation per pointer in its data, 1.03 MB of the 20 MB budget
//! (docs/performance.md). The startup code that applies them is musl's own, linked in (Rust
//! ships musl 1.2.5, which reads DT_RELR since 1.2.4), so the binary still runs on any Linux;
//! a linker too old for the option warns and ignores it. Other targets link as they did: a
//! glibc binary packed this way would need glibc 2.36 where it runs.
//!
//! A release build for Linux (static or not) also leaves out `.eh_frame_hdr` (`--no-eh-frame-hdr`,
//! 0.19 MB), the index an unwinder searches: a release build aborts on panic, so nothing unwinds, and the one reader left is the
//! backtrace of a panic (`RUST_BACKTRACE`), which then stops at its first frame; the panic's
//! message and place are still printed.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PROFILE");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.ends_with("-linux-musl") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    // Release builds only: a debug build unwinds its panics (the tests' backtraces).
    if target.contains("-linux-") && std::env::var("PROFILE").is_ok_and(|profile| profile == "release") {
        println!("cargo:rustc-link-arg-bins=-Wl,--no-eh-frame-hdr");
    }
}

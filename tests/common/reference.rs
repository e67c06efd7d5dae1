//! The built `reference` example, for tests that run it as a process.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `reference` example binary next to this test binary
/// (`<target>/<profile>/deps/<test>` → `<target>/<profile>/examples/reference`),
/// built first (once per test run) so it is current.
pub fn reference_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(build_reference).clone()
}

fn build_reference() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("<target>/<profile>/deps/<test>")
        .to_path_buf();
    let binary = profile_dir
        .join("examples")
        .join(format!("reference{}", std::env::consts::EXE_SUFFIX));
    let target_dir = profile_dir.parent().expect("<target>").to_path_buf();
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "--example", "reference"])
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let built = build.output();
    match built {
        Ok(out) if out.status.success() => {}
        Ok(out) if binary.exists() => eprintln!(
            "warning: `cargo build --example reference` failed; testing the existing binary:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Ok(out) => panic!(
            "`cargo build --example reference` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) if binary.exists() => eprintln!("warning: cannot run cargo ({e}); using {binary:?}"),
        Err(e) => panic!("cannot run cargo to build the reference example: {e}"),
    }
    assert!(binary.exists(), "no reference binary at {binary:?}");
    binary
}

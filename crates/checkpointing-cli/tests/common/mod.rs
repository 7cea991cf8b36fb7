//! Running the built `checkpointing` binary from the integration tests.

use std::process::{Command, Output};

/// The command's output for `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_checkpointing"))
        .args(args)
        .output()
        .expect("run checkpointing")
}

pub fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A one-line error on stderr, nothing on stdout, exit status 2.
pub fn usage_error(args: &[&str], needle: &str) {
    let out = run(args);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
    assert!(err.contains(needle), "{args:?}: {err:?}");
    assert!(out.stdout.is_empty());
}

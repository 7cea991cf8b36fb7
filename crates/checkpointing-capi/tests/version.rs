//! One version: `ckpt_version()` returns the workspace's version, the one
//! `checkpointing --version` prints and the header's `CKPT_VERSION` holds
//! (tests/header.rs generates the header with it).

use std::ffi::CStr;

#[test]
fn ckpt_version_is_the_workspace_version() {
    // SAFETY: ckpt_version returns a static NUL-terminated string.
    let version = unsafe { CStr::from_ptr(checkpointing_capi::ckpt_version()) };
    let version = version.to_str().unwrap();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    assert_eq!(version, checkpointing_test_support::workspace_version());
}

#[test]
fn the_header_defines_the_same_version() {
    let header = include_str!("../include/checkpointing.h");
    let define = format!(
        "#define CKPT_VERSION \"{}\"",
        checkpointing_test_support::workspace_version()
    );
    assert!(
        header.lines().any(|line| line == define),
        "include/checkpointing.h lacks {define:?}: regenerate it with\n    \
         CKPT_BLESS=1 cargo test -p checkpointing-capi --test header"
    );
}

//! The committed C header is the one cbindgen generates from the crate.
//!
//! Regenerate it with `CKPT_BLESS=1 cargo test -p checkpointing-capi --test
//! header`. Besides the crate's API it holds `CKPT_VERSION`, the crate's
//! version from Cargo.toml (cbindgen cannot read `env!`, so the test adds
//! it to the generated text).

use std::path::Path;

#[test]
fn header_is_up_to_date() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    // The version macro, from Cargo.toml: a release that changes the
    // version fails this test until the header is regenerated with it.
    config.after_includes = Some(format!(
        "\n// The version of this header: what ckpt_version() returns when the\n\
         // library linked is of the same release.\n\
         #define CKPT_VERSION \"{}\"",
        env!("CARGO_PKG_VERSION")
    ));
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen failed")
        .write(&mut generated);
    let generated = String::from_utf8(generated).unwrap();
    let path = crate_dir.join("include/checkpointing.h");
    if std::env::var_os("CKPT_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is out of date with the crate's API: regenerate it with\n    \
         CKPT_BLESS=1 cargo test -p checkpointing-capi --test header\nand commit it",
        path.display()
    );
}

//! Helpers shared by the benchmarks: finding the reference Python and
//! running its scripts, timing a call. Each bench uses some of them.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Seconds per call of `f`, repeated for at least `budget` (and 3 calls).
pub fn time_per_call(budget: Duration, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut calls = 0u32;
    while calls < 3 || start.elapsed() < budget {
        f();
        calls += 1;
    }
    start.elapsed().as_secs_f64() / f64::from(calls)
}

/// The Python with `checkpoint_schedules` 1.0.4 (and NumPy):
/// `$CHECKPOINTING_REFERENCE_PYTHON`, else `.venv-reference/bin/python`
/// (made by `scripts/reference-venv.sh`).
pub fn reference_python() -> Option<String> {
    if let Ok(p) = std::env::var("CHECKPOINTING_REFERENCE_PYTHON") {
        return Some(p);
    }
    let local = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv-reference/bin/python");
    Path::new(local).exists().then(|| local.to_owned())
}

/// Runs `benches/python/<script>` with `args` and `stdin`; one JSON value
/// per output line, or `None` if Python or the script is unavailable.
pub fn run_python(script: &str, args: &[String], stdin: &str) -> Option<Vec<serde_json::Value>> {
    use std::io::Write;
    let python = reference_python()?;
    let path = format!("{}/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(python)
        .arg(path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(stdin.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout)
        .ok()?
        .lines()
        .map(|line| serde_json::from_str(line).ok())
        .collect()
}

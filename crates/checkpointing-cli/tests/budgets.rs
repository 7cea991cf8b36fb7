//! Budgets in bytes (`--ram`, `--disk`, `--state-bytes`) in place of
//! snapshot counts, and a closed stdout.

mod common;

use common::{run, stdout, usage_error};
use serde_json::Value;

fn cost(args: &[&str]) -> Value {
    let args: Vec<&str> = ["cost"].iter().chain(args).copied().collect();
    serde_json::from_str(&stdout(&args)).unwrap()
}

#[test]
fn byte_budgets_set_the_snapshot_counts_that_fit() {
    // 10 MB of RAM for 1 MB states: the live state, one step's adjoint data
    // and 8 snapshots.
    let by_bytes = cost(&[
        "revolve",
        "--max-n",
        "100",
        "--ram",
        "10MB",
        "--state-bytes",
        "1MB",
    ]);
    let by_count = cost(&["revolve", "--max-n", "100", "--snapshots-in-ram", "8"]);
    assert_eq!(by_bytes, by_count);
    // Flags before the schedule, binary units, and disk.
    let both = cost(&[
        "--ram",
        "5MiB",
        "--state-bytes",
        "1MiB",
        "multistage",
        "--max-n",
        "100",
        "--disk",
        "20MiB",
    ]);
    assert_eq!(both["parameters"]["snapshots_in_ram"], 3);
    assert_eq!(both["parameters"]["snapshots_on_disk"], 20);
    assert_eq!(both["disk"]["peak"], 20);
    // One level by bytes, the other by count.
    let mixed = cost(&[
        "hrevolve",
        "--max-n",
        "60",
        "--snapshots-in-ram",
        "2",
        "--disk",
        "7kB",
        "--state-bytes",
        "1000",
    ]);
    assert_eq!(mixed["parameters"]["snapshots_on_disk"], 7);
    // Online schedules too.
    let online = cost(&[
        "online-r2",
        "--steps",
        "50",
        "--ram",
        "600",
        "--state-bytes",
        "100",
    ]);
    assert_eq!(online["parameters"]["snapshots"], 4);
}

#[test]
fn the_demo_knows_its_state_size() {
    // 100 cells: 824-byte states; 10 kB of RAM holds 12 - 2 = 10 snapshots.
    let text = stdout(&["demo", "heat", "--ram", "10kB", "revolve", "--max-n", "300"]);
    assert!(text.contains("snapshots_in_ram=10"), "{text}");
    assert!(text.contains("bitwise equal"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let text = stdout(&[
        "demo",
        "heat",
        "--disk-dir",
        dir.path().to_str().unwrap(),
        "--ram",
        "4kB",
        "--disk",
        "5kB",
        "multistage",
        "--max-n",
        "200",
    ]);
    assert!(
        text.contains("snapshots_in_ram=2 snapshots_on_disk=6"),
        "{text}"
    );
    assert!(text.contains("bitwise equal"), "{text}");
}

#[test]
fn bad_budgets_are_one_line_errors() {
    let revolve = ["cost", "revolve", "--max-n", "100"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        revolve.iter().chain(extra).copied().collect()
    };
    usage_error(&with(&["--ram", "10MB"]), "need --state-bytes");
    usage_error(
        &with(&["--ram", "2MB", "--state-bytes", "1MB"]),
        "--ram 2 MB holds no snapshot of 1 MB states (RAM also holds the live state and one step's adjoint data); 3 MB holds one",
    );
    usage_error(
        &with(&[
            "--ram",
            "20MB",
            "--state-bytes",
            "1MB",
            "--snapshots-in-ram",
            "3",
        ]),
        "give either --ram or --snapshots-in-ram, not both",
    );
    usage_error(
        &with(&[
            "--snapshots-in-ram",
            "3",
            "--disk",
            "20MB",
            "--state-bytes",
            "1MB",
        ]),
        "revolve has no disk snapshot count to set from --disk",
    );
    usage_error(
        &[
            "schedule",
            "periodic",
            "--max-n",
            "10",
            "--period",
            "2",
            "--ram",
            "1GB",
            "--state-bytes",
            "1MB",
        ],
        "periodic has no ram snapshot count",
    );
    usage_error(
        &with(&["--ram", "8XB", "--state-bytes", "1MB"]),
        "unknown unit",
    );
    usage_error(
        &with(&["--ram", "8MB", "--state-bytes", "0"]),
        "state bytes must be positive",
    );
    usage_error(&["demo", "heat", "--ram", "1MB"], "name the schedule");
    usage_error(
        &[
            "compare",
            "--max-n",
            "10",
            "--ram",
            "1MB",
            "--snapshots",
            "2",
            "--state-bytes",
            "1kB",
        ],
        "cannot be used with",
    );
}

#[test]
fn compare_takes_bytes() {
    let by_bytes = stdout(&[
        "compare",
        "--max-n",
        "200",
        "--ram",
        "10MB",
        "--disk",
        "10MB",
        "--state-bytes",
        "1MB",
    ]);
    let by_count = stdout(&[
        "compare",
        "--max-n",
        "200",
        "--snapshots",
        "8",
        "--disk-snapshots",
        "10",
    ]);
    assert_eq!(by_bytes, by_count);
}

/// Output into a pipe nobody reads ends the command without a panic.
#[cfg(unix)]
#[test]
fn a_closed_stdout_is_not_a_panic() {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::process::{Command, Stdio};
    for args in [
        &["compare", "--max-n", "200", "--snapshots", "8"][..],
        &[
            "schedule",
            "revolve",
            "--max-n",
            "2000",
            "--snapshots-in-ram",
            "3",
        ],
        &[
            "cost",
            "revolve",
            "--max-n",
            "20",
            "--snapshots-in-ram",
            "3",
        ],
        &["demo", "heat"],
    ] {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just opened and are owned here.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        drop(read);
        let out = Command::new(env!("CARGO_BIN_EXE_checkpointing"))
            .args(args)
            .stdout(Stdio::from(write))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
    // The run() helper still works after the pipes (a sanity check that
    // stdout is unaffected for other tests).
    assert!(run(&["--version"]).status.success());
}

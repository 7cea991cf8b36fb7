//! The `checkpointing` command as DESIGN.md specifies it.

mod common;

use common::{run, stdout, usage_error};

#[test]
fn prints_the_design_example() {
    let text = stdout(&[
        "schedule",
        "revolve",
        "--max-n",
        "4",
        "--snapshots-in-ram",
        "2",
    ]);
    let expected: Vec<String> = checkpointing::Revolve::new(4, 2)
        .unwrap()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    assert_eq!(
        text.lines().next(),
        Some("Forward(0, 2, True, False, StorageType.RAM)")
    );
    assert_eq!(text.lines().last(), Some("EndReverse()"));
}

#[test]
fn prints_json_lines() {
    let text = stdout(&[
        "schedule",
        "multistage",
        "--max-n",
        "30",
        "--snapshots-in-ram",
        "2",
        "--snapshots-on-disk",
        "2",
        "--format",
        "jsonl",
    ]);
    assert!(text.starts_with(r#"{"action":"Forward","n0":0,"#));
    for line in text.lines() {
        checkpointing::Action::from_json(line).unwrap();
    }
}

#[test]
fn online_schedules_are_cut_at_steps() {
    let text = stdout(&["schedule", "single-memory", "--steps", "5"]);
    assert_eq!(
        text,
        "Forward(0, 5, False, True, StorageType.WORK)\nEndForward()\nReverse(5, 0, True)\nEndReverse()\n"
    );
    let text = stdout(&["schedule", "single-disk", "--steps", "3", "--move-data"]);
    assert!(text.contains("Move(2, StorageType.DISK, StorageType.WORK)"));
    assert_eq!(text.lines().count(), 3 + 1 + 6 + 1);
    // OnlineR2: one step per forward action, drops are moves to NONE.
    let text = stdout(&["schedule", "online-r2", "--steps", "5", "--snapshots", "2"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[2], "Move(1, StorageType.RAM, StorageType.NONE)");
    assert_eq!(lines[6], "Forward(4, 5, False, False, StorageType.WORK)");
    assert_eq!(lines[7], "EndForward()");
    assert_eq!(lines.last(), Some(&"EndReverse()"));
    let v: serde_json::Value = serde_json::from_str(&stdout(&[
        "cost",
        "online-r2",
        "--steps",
        "65",
        "--snapshots",
        "10",
    ]))
    .unwrap();
    // binomial_forward_steps(66, 10) - 1.
    assert_eq!(v["forward_steps"], 66 + 2 * 66 - 12 - 1);
    assert_eq!(v["ram"]["peak"], 10);
}

#[test]
fn cost_is_one_json_object() {
    let text = stdout(&["cost", "revolve", "--max-n", "4", "--snapshots-in-ram", "2"]);
    assert_eq!(text.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schedule"], "revolve");
    assert_eq!(v["parameters"]["snapshots_in_ram"], 2);
    assert_eq!(v["forward_steps"], 8);
    assert_eq!(v["recomputed_steps"], 4);
    assert_eq!(v["adjoint_steps"], 4);
    assert_eq!(v["ram"]["peak"], 2);
    assert_eq!(v["ram"]["writes"], 2);
    assert_eq!(v["ram"]["reads"], 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&[
        "cost", "periodic", "--max-n", "10", "--period", "3",
    ]))
    .unwrap();
    assert_eq!(v["forward_steps"], 19);
    assert_eq!(v["peak_work_steps"], 3);
}

#[test]
fn help_has_examples() {
    let text = stdout(&["--help"]);
    assert!(text.contains("Examples:") && text.contains("checkpointing schedule revolve"));
    let text = stdout(&["schedule", "--help"]);
    assert!(text.contains("--snapshots-in-ram") && text.contains("Examples:"));
}

#[test]
fn bad_input_is_a_one_line_error_with_status_2() {
    usage_error(
        &["schedule", "nonesuch", "--max-n", "4"],
        "unrecognized subcommand 'nonesuch'",
    );
    usage_error(
        &["schedule", "revolve", "--max-n", "4", "--bogus", "1"],
        "--bogus",
    );
    usage_error(
        &[
            "schedule",
            "revolve",
            "--max-n",
            "4",
            "--period",
            "2",
            "--snapshots-in-ram",
            "1",
        ],
        "unexpected argument '--period'",
    );
    usage_error(
        &["cost", "revolve", "--max-n", "4"],
        "required arguments were not provided: --snapshots-in-ram",
    );
    usage_error(
        &["cost", "revolve", "--max-n", "0", "--snapshots-in-ram", "1"],
        "max_n must be positive",
    );
    usage_error(
        &["cost", "revolve", "--max-n", "x", "--snapshots-in-ram", "1"],
        "invalid value 'x'",
    );
    usage_error(
        &[
            "cost",
            "multistage",
            "--max-n",
            "9",
            "--snapshots-in-ram",
            "1",
            "--trajectory",
            "best",
        ],
        "trajectory",
    );
    usage_error(
        &[
            "schedule",
            "revolve",
            "--max-n",
            "4",
            "--snapshots-in-ram",
            "2",
            "--format",
            "xml",
        ],
        "xml",
    );
    usage_error(&["frobnicate"], "frobnicate");
    usage_error(
        &[
            "cost",
            "revolve",
            "--max-n",
            "9",
            "--snapshots-in-ram",
            "2",
            "--uf",
            "-1",
        ],
        "cost uf must be a finite number >= 0, got -1",
    );
    usage_error(
        &[
            "cost",
            "periodic-disk-revolve",
            "--max-n",
            "9",
            "--snapshots-in-ram",
            "2",
            "--uf",
            "0",
        ],
        "uf: must be positive",
    );
}

#[test]
fn demo_heat_matches_store_all() {
    let text = stdout(&["demo", "heat"]);
    assert!(
        text.contains("max |difference| = 0e0 (bitwise equal)"),
        "{text}"
    );
    assert!(
        text.contains(
            "forward steps                 3214 run, 2714 recomputed (3713 scheduled, 499 skipped"
        ),
        "{text}"
    );
    for schedule in [
        "multistage --max-n 120 --snapshots-in-ram 3 --snapshots-on-disk 2",
        "periodic --max-n 120 --period 30",
        "single-memory --steps 120",
        "single-disk --steps 120",
        "two-level --steps 120 --period 40 --binomial-snapshots 2",
        "online-r2 --steps 120 --snapshots 3",
        "hrevolve --max-n 120 --snapshots-in-ram 2 --snapshots-on-disk 3",
        "hierarchical-revolve --max-n 120 --level RAM:2:0:0 --level DISK:3:2:2",
        "mixed --max-n 120 --snapshots 3",
    ] {
        let args: Vec<&str> = ["demo", "heat", "--cells", "30"]
            .into_iter()
            .chain(schedule.split(' '))
            .collect();
        let text = stdout(&args);
        assert!(text.contains("(bitwise equal)"), "{schedule}: {text}");
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("snaps");
    let text = stdout(&[
        "demo",
        "heat",
        "--disk-dir",
        disk.to_str().unwrap(),
        "multistage",
        "--max-n",
        "500",
        "--snapshots-in-ram",
        "1",
        "--snapshots-on-disk",
        "4",
    ]);
    assert!(text.contains("(bitwise equal)"), "{text}");
    assert!(disk.is_dir());
}

#[test]
fn demo_bad_input() {
    usage_error(&["demo", "wave"], "invalid value 'wave'");
    let out = run(&["demo", "heat", "none", "--steps", "10"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run the demo"));
    // Sizes at the edge of u64: a one-line error, never a panic (the tests
    // run the debug build, overflow checks on).
    let max = u64::MAX.to_string();
    for (args, needle) in [
        (
            vec![
                "--cells",
                max.as_str(),
                "revolve",
                "--max-n",
                "1",
                "--snapshots-in-ram",
                "1",
            ],
            "do not fit in memory",
        ),
        (
            vec![
                "--cells",
                "3",
                "revolve",
                "--max-n",
                max.as_str(),
                "--snapshots-in-ram",
                "1",
            ],
            "passes 2^64",
        ),
    ] {
        let out = run(&[&["demo", "heat"], &args[..]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(needle) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    let huge_period = [
        "demo", "heat", "periodic", "--max-n", "10", "--period", &max,
    ];
    assert!(run(&huge_period).status.success());
}

#[test]
fn compare_lists_fitting_schedules_by_cost() {
    let text = stdout(&[
        "compare",
        "--max-n",
        "500",
        "--snapshots",
        "5",
        "--disk-snapshots",
        "10",
    ]);
    let rows: Vec<&str> = text
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with("not fitting"))
        .collect();
    assert!(rows.iter().any(|r| r.starts_with("revolve ")), "{text}");
    assert!(rows.iter().any(|r| r.starts_with("mixed ")), "{text}");
    assert!(rows.iter().any(|r| r.starts_with("two-level ")), "{text}");
    // Sorted by modelled cost, every row within the budget.
    let costs: Vec<f64> = rows
        .iter()
        .map(|r| r.split_whitespace().last().unwrap().parse().unwrap())
        .collect();
    assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{text}");
    assert!(
        text.contains("not fitting: single-memory (over budget)"),
        "{text}"
    );
    usage_error(&["compare", "--snapshots", "3"], "--max-n");
}

#[test]
fn plot_writes_an_svg() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("revolve.svg");
    stdout(&[
        "plot",
        "revolve",
        "--max-n",
        "30",
        "--snapshots-in-ram",
        "3",
        "--out",
        small.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&small).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    // One red line per Reverse action (30 one-step reverses) plus the legend's.
    assert_eq!(svg.matches(r##"stroke="#d62728""##).count(), 30 + 1);
    assert!(svg.contains("RAM snapshot written") && svg.contains("restored by move (RAM)"));
    // OnlineR2 drops checkpoints during its forward: one cross each (plus
    // the legend's two), not a restore square.
    let online = dir.path().join("online.svg");
    let out = online.to_str().unwrap();
    stdout(&[
        "plot",
        "online-r2",
        "--steps",
        "20",
        "--snapshots",
        "5",
        "--out",
        out,
    ]);
    let drops = stdout(&["schedule", "online-r2", "--steps", "20", "--snapshots", "5"])
        .matches("StorageType.NONE")
        .count();
    assert!(drops > 0);
    let svg = std::fs::read_to_string(&online).unwrap();
    assert_eq!(svg.matches("<path").count(), drops + 2);
    let big = dir.path().join("big.svg");
    stdout(&[
        "plot",
        "multistage",
        "--max-n",
        "5000",
        "--snapshots-in-ram",
        "4",
        "--out",
        big.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&big).unwrap();
    assert!(svg.contains("20000 actions, summarised"), "{}", &svg[..300]);
    let out = run(&[
        "plot",
        "revolve",
        "--max-n",
        "30",
        "--snapshots-in-ram",
        "3",
        "--out",
        "/nonexistent/dir/x.svg",
    ]);
    assert_eq!(out.status.code(), Some(1));
}

/// Loops too long to replay are answered from the closed form at once,
/// numbers past u64 printed in full; `--replay` replays a small one.
#[test]
fn cost_of_huge_loops_comes_from_the_closed_form() {
    let text = stdout(&[
        "cost",
        "revolve",
        "--max-n",
        "99999999999",
        "--snapshots-in-ram",
        "1",
    ]);
    let value: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(value["source"], "closed form");
    // One snapshot: every step recomputed from the start, n (n + 1) / 2.
    assert!(
        text.contains("\"forward_steps\":4999999999950000000000"),
        "{text}"
    );
    assert_eq!(value["adjoint_steps"], 99_999_999_999u64);
    let text = stdout(&[
        "cost",
        "revolve",
        "--max-n",
        "18446744073709551615",
        "--snapshots-in-ram",
        "2",
    ]);
    assert!(text.contains("\"source\":\"closed form\""), "{text}");
    let text = stdout(&[
        "cost", "periodic", "--max-n", "10", "--period", "3", "--replay",
    ]);
    let value: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(value["actions"], 16, "{text}");
    assert_eq!(value["forward_steps"], 19, "{text}");
    usage_error(
        &[
            "cost",
            "revolve",
            "--max-n",
            "18446744073709551615",
            "--snapshots-in-ram",
            "0",
        ],
        "at least 1 snapshot",
    );
}

/// The demo on RAM and disk levels, every snapshot compressed with `codec`.
fn compressed_demo(codec: &str) -> [&str; 11] {
    [
        "demo",
        "heat",
        "--compress",
        codec,
        "multistage",
        "--max-n",
        "200",
        "--snapshots-in-ram",
        "2",
        "--snapshots-on-disk",
        "3",
    ]
}

#[test]
fn demo_compresses_snapshots() {
    // Lossless: the gradient stays bitwise equal, on RAM and disk levels.
    for codec in ["zstd", "zstd-5", "lz4"] {
        let text = stdout(&compressed_demo(codec));
        assert!(text.contains("(bitwise equal)"), "{codec}: {text}");
        assert!(text.contains("compression                   "), "{text}");
    }
    usage_error(
        &["demo", "heat", "--compress", "gzip"],
        "unknown codec `gzip`",
    );
    usage_error(
        &["demo", "heat", "--compress", "sz3:rate=8"],
        "sz3 takes abs= or rel= bounds",
    );
    usage_error(
        &["demo", "heat", "--compress", "zfp:abs=0"],
        "must be finite and above 0",
    );
    // Lossy: the measured error, read back from the output, is within the
    // bound; without the codec compiled in, a one-line error.
    for (codec, feature, tolerance) in [
        ("zfp:abs=1e-8", cfg!(feature = "zfp"), 1e-8),
        ("sz3:abs=1e-6", cfg!(feature = "sz3"), 1e-6),
    ] {
        let args = compressed_demo(codec);
        if feature {
            let text = stdout(&args);
            let line = text.lines().find(|l| l.starts_with("compression")).unwrap();
            let error: f64 = line
                .split("max error ")
                .nth(1)
                .and_then(|rest| rest.split(' ').next())
                .and_then(|e| e.parse().ok())
                .unwrap_or_else(|| panic!("no measured error in {line}"));
            assert!(error > 0.0 && error <= tolerance, "{line}");
            assert!(line.contains("checked on write"), "{line}");
        } else {
            let out = run(&args);
            assert_eq!(out.status.code(), Some(1));
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("not in this build"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

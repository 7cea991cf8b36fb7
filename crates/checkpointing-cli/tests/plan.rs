//! `checkpointing plan`, and the command lines it prints.

mod common;

use common::{run, stdout, usage_error};

use checkpointing::schedule::CandidateBudget;
use checkpointing::{HeterogeneousChain, ScheduleSpec, StorageLevel};
use serde_json::Value;

/// The spec a `checkpointing schedule ...` line names.
fn parse_command_line(line: &str) -> ScheduleSpec {
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&words[..2], ["checkpointing", "schedule"], "{line}");
    let cli = checkpointing_cli::parse(words).unwrap_or_else(|e| panic!("{line}: {}", e.message()));
    cli.spec().unwrap().clone()
}

#[test]
fn text_output_recommends_a_spec_and_its_command_line() {
    let text = stdout(&[
        "plan",
        "--steps",
        "200",
        "--state-bytes",
        "80MB",
        "--ram",
        "1GiB",
        "--disk",
        "10GB",
        "--disk-bandwidth",
        "2GB/s",
        "--forward-seconds",
        "1",
        "--top",
        "3",
    ]);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .trim()
            .to_string()
    };
    let spec: ScheduleSpec = serde_json::from_str(&field("spec:")).unwrap();
    assert_eq!(parse_command_line(&field("command:")), spec);
    assert!(field("predicted:").ends_with(')'), "{text}");
    assert!(field("peak:").contains("RAM"), "{text}");
    assert!(text.contains("alternatives that fit"), "{text}");
    let rows = text
        .lines()
        .skip_while(|l| !l.starts_with("rank"))
        .skip(1)
        .count();
    assert_eq!(rows, 3, "{text}");
}

#[test]
fn json_output_fits_the_budget_and_parses_back() {
    let ram: u64 = 12 << 20;
    let text = stdout(&[
        "plan",
        "--steps",
        "300",
        "--state-bytes",
        "1MiB",
        "--ram",
        "12MiB",
        "--forward-seconds",
        "1",
        "--format",
        "json",
    ]);
    let report: Value = serde_json::from_str(&text).unwrap();
    let plan = &report["plan"];
    assert_eq!(plan["snapshots"]["ram"], 10);
    let best: ScheduleSpec = serde_json::from_value(plan["best"]["spec"].clone()).unwrap();
    assert_eq!(
        parse_command_line(report["command"].as_str().unwrap()),
        best
    );
    let candidates = std::iter::once(&plan["best"]).chain(plan["alternatives"].as_array().unwrap());
    let mut last = 0.0;
    for c in candidates {
        assert!(c["peak_bytes"]["ram"].as_u64().unwrap() <= ram, "{c}");
        assert_eq!(c["peak_bytes"]["disk"], 0, "{c}");
        let predicted = c["predicted_seconds"].as_f64().unwrap();
        assert!(predicted >= last);
        last = predicted;
    }
    // Adjoint steps default to twice the forward time.
    let cost = &plan["best"]["cost"];
    let expected = cost["forward_steps"].as_f64().unwrap() + 2.0 * 300.0;
    assert_eq!(
        plan["best"]["predicted_seconds"].as_f64().unwrap(),
        expected
    );
}

#[test]
fn unknown_steps_plans_online_schedules() {
    let text = stdout(&[
        "plan",
        "--steps",
        "unknown",
        "--state-bytes",
        "1MB",
        "--ram",
        "20MB",
        "--forward-seconds",
        "1",
        "--format",
        "json",
    ]);
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["plan"]["steps"], 10_000);
    assert_eq!(report["input"]["steps"], Value::Null);
    let name = report["plan"]["best"]["spec"]["schedule"].as_str().unwrap();
    assert!(["online-r2", "single-memory"].contains(&name), "{name}");
}

#[test]
fn every_schedule_kind_round_trips_through_its_command_line() {
    let budget = CandidateBudget {
        max_n: 20,
        snapshots: checkpointing::PerLevel::default()
            .with(StorageLevel::Ram, 3)
            .with(StorageLevel::Disk, 4),
        costs: Default::default(),
    };
    let mut specs = ScheduleSpec::candidates(&budget);
    specs.extend(ScheduleSpec::examples());
    for json in [
        r#"{"schedule":"single-disk","steps":5,"move_data":false}"#,
        r#"{"schedule":"two-level","steps":30,"period":7,"binomial_snapshots":2,"binomial_storage":"DISK","binomial_trajectory":"maximum"}"#,
        r#"{"schedule":"revolve","max_n":9,"snapshots_in_ram":2,"uf":0.3,"ub":7,"wd":0,"rd":1e10}"#,
    ] {
        specs.push(serde_json::from_str(json).unwrap());
    }
    for spec in &specs {
        let line = checkpointing_cli::spec_command_line(spec);
        assert_eq!(&parse_command_line(&line), spec, "{line}");
    }
}

#[test]
fn help_has_examples() {
    let text = stdout(&["plan", "--help"]);
    assert!(
        text.contains("Examples (the times are yours, measured: none is assumed):\n  checkpointing plan --steps"),
        "{text}"
    );
    for needle in [
        "--disk-bandwidth",
        "checkpointing plan --forward-seconds 0.01*9,0.2 --state-bytes 80MB",
        "--state-bytes 80MB*100,160MB*200",
        "--device 16GB --ram 8GB --ram-bandwidth 25GB/s",
        "--device-bandwidth 1TB/s",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

/// The `plan` command's JSON report for `args` (after `plan`), with a step
/// time of 1 s where `args` give none (the command assumes none).
fn json_plan(args: &[&str]) -> Value {
    let mut all = vec!["plan"];
    all.extend(args);
    if !args.contains(&"--forward-seconds") {
        all.extend(["--forward-seconds", "1"]);
    }
    all.extend(["--format", "json"]);
    serde_json::from_str(&stdout(&all)).unwrap()
}

/// The best candidate and the alternatives of a report.
fn candidates(report: &Value) -> Vec<&Value> {
    let plan = &report["plan"];
    std::iter::once(&plan["best"])
        .chain(plan["alternatives"].as_array().unwrap())
        .collect()
}

/// Forward seconds of 50 steps: 0.01, every 10th 0.2.
const COSTLY_TENTH: &str = "0.01*9,0.2,0.01*9,0.2,0.01*9,0.2,0.01*9,0.2,0.01*9,0.2";

#[test]
fn uneven_steps_plan_heterogeneous_revolve_on_the_real_chain() {
    let report = json_plan(&[
        "--forward-seconds",
        COSTLY_TENTH,
        "--state-bytes",
        "80MB",
        "--ram",
        "500MB",
    ]);
    assert_eq!(report["input"]["steps"], 50, "the lists give the steps");
    let best: ScheduleSpec =
        serde_json::from_value(report["plan"]["best"]["spec"].clone()).unwrap();
    assert_eq!(best.name(), "heterogeneous-revolve");
    assert_eq!(
        parse_command_line(report["command"].as_str().unwrap()),
        best
    );
    // The prediction is the chain's cost of the schedule's actions:
    // forward seconds as listed, adjoint twice them.
    let forward: Vec<f64> = (0..50)
        .map(|i| if i % 10 == 9 { 0.2 } else { 0.01 })
        .collect();
    let adjoint = forward.iter().map(|f| 2.0 * f).collect();
    let chain = HeterogeneousChain::new(forward, adjoint, vec![80_000_000; 50]).unwrap();
    let actions = best.drive().unwrap().map(Result::unwrap);
    let account = chain.account(actions);
    let predicted = report["plan"]["best"]["predicted_seconds"]
        .as_f64()
        .unwrap();
    assert_eq!(predicted, account.total());
    let revolve = candidates(&report)
        .into_iter()
        .find(|c| c["spec"]["schedule"] == "revolve")
        .unwrap();
    assert!(predicted < revolve["predicted_seconds"].as_f64().unwrap());
    for c in candidates(&report) {
        assert!(
            c["peak_bytes"]["ram"].as_u64().unwrap() <= 500_000_000,
            "{c}"
        );
    }
}

#[test]
fn uneven_steps_in_text() {
    let text = stdout(&[
        "plan",
        "--steps",
        "50",
        "--forward-seconds",
        COSTLY_TENTH,
        "--state-bytes",
        "80MB*25,160MB*25",
        "--ram",
        "1GB",
    ]);
    assert!(
        text.starts_with(
            "50 steps (forward 0.01 to 0.2 s, adjoint 0.02 to 0.4 s) of 80 MB to 160 MB states"
        ),
        "{text}"
    );
    assert!(text.contains("--format json prints it whole"), "{text}");
}

#[test]
fn uniform_lists_plan_as_scalars() {
    let scalars = json_plan(&[
        "--steps",
        "120",
        "--forward-seconds",
        "0.5",
        "--state-bytes",
        "1MB",
        "--ram",
        "9MB",
        "--disk",
        "30MB",
        "--disk-bandwidth",
        "1GB/s",
    ]);
    let lists = json_plan(&[
        "--forward-seconds",
        "0.5*120",
        "--adjoint-seconds",
        "1*120",
        "--state-bytes",
        "1MB*120",
        "--ram",
        "9MB",
        "--disk",
        "30MB",
        "--disk-bandwidth",
        "1GB/s",
    ]);
    assert_eq!(scalars["plan"], lists["plan"]);
}

#[test]
fn device_budget_plans_device_snapshots() {
    let report = json_plan(&[
        "--steps",
        "300",
        "--state-bytes",
        "1MB",
        "--device",
        "6MB",
        "--device-write-seconds",
        "0.01",
        "--ram",
        "6MB",
        "--disk",
        "20MB",
        "--disk-write-seconds",
        "0.5",
    ]);
    let best = &report["plan"]["best"];
    assert_eq!(best["spec"]["schedule"], "hierarchical-revolve", "{best}");
    assert!(
        best["cost"]["device"]["peak"].as_u64().unwrap() > 0,
        "{best}"
    );
    for c in candidates(&report) {
        for (level, budget) in [
            ("device", 6_000_000),
            ("ram", 6_000_000),
            ("disk", 20_000_000),
        ] {
            assert!(
                c["peak_bytes"][level].as_u64().unwrap() <= budget,
                "{level}: {c}"
            );
        }
    }
    let spec: ScheduleSpec = serde_json::from_value(best["spec"].clone()).unwrap();
    assert_eq!(
        parse_command_line(report["command"].as_str().unwrap()),
        spec
    );
}

#[test]
fn alternatives_are_distinct() {
    let report = json_plan(&[
        "--steps",
        "5000",
        "--state-bytes",
        "80MB",
        "--ram",
        "2GiB",
        "--disk",
        "100GB",
        "--disk-bandwidth",
        "1GB/s",
    ]);
    let mut seen = std::collections::HashSet::new();
    for c in candidates(&report) {
        let key = (
            c["spec"]["schedule"].to_string(),
            format!("{:.8e}", c["predicted_seconds"].as_f64().unwrap()),
            c["peak_bytes"].to_string(),
        );
        assert!(seen.insert(key), "{c}");
    }
}

#[test]
fn a_ram_too_small_for_the_disks_staging_is_planned_off_the_disk() {
    // Nine staged snapshots, the live state and one step's adjoint data do
    // not fit in 10 MB: the schedules that keep off the disk get all of it.
    let text = stdout(&[
        "plan",
        "--steps",
        "100",
        "--state-bytes",
        "1MB",
        "--ram",
        "10MB",
        "--disk",
        "1GB",
        "--disk-write-seconds",
        "1",
        "--disk-background",
        "--forward-seconds",
        "1",
    ]);
    assert!(text.contains("RAM 10 MB (8 snapshots)"), "{text}");
    assert!(text.contains(" 0 disk writes"), "{text}");
}

/// A background disk's measured issue and contention reach the plan: with
/// every state but the last written (199 writes and reads of 0.5 s behind
/// 1 s steps), the I/O is hidden (the 200 forward and 400 adjoint seconds
/// alone) until the computation loses all of it and 0.1 s a save:
/// 199 × (0.1 + 0.5) + 199 × 0.5 more.
#[test]
fn a_background_disks_issue_and_contention_are_priced() {
    let plan = |extra: &[&'static str]| {
        let mut args = vec![
            "--steps",
            "200",
            "--state-bytes",
            "1MB",
            "--ram",
            "12MB",
            "--disk",
            "1GB",
            "--disk-write-seconds",
            "0.5",
            "--disk-background",
        ];
        args.extend(extra);
        json_plan(&args)
    };
    let free = plan(&[]);
    let contended = plan(&["--disk-contention", "1", "--disk-issue-seconds", "0.1"]);
    let disk = &contended["input"]["levels"]["disk"];
    assert_eq!(
        (disk["contention"].as_f64(), disk["issue_seconds"].as_f64()),
        (Some(1.0), Some(0.1))
    );
    let seconds = |report: &Value| {
        report["plan"]["best"]["predicted_seconds"]
            .as_f64()
            .unwrap()
    };
    assert!((seconds(&free) - 600.0).abs() < 1e-6, "{}", seconds(&free));
    let want = 600.0 + 199.0 * (0.1 + 0.5 + 0.5);
    assert!(
        (seconds(&contended) - want).abs() < 1e-6,
        "{}",
        seconds(&contended)
    );
}

#[test]
fn bad_input_is_a_one_line_error() {
    // (the command line, split at spaces; what its one-line error says)
    let cases = [
        ("plan --steps 100 --state-bytes 1MB --ram 8XB --forward-seconds 1", "unknown unit"),
        ("plan --steps 100 --state-bytes 1MB --ram 99999999PiB --forward-seconds 1", "2^64"),
        ("plan --steps 100 --state-bytes 1MB --ram 1.5MB --forward-seconds 1", "smallest RAM budget that fits a schedule (with the same disk) is 3 MB"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --forward-seconds 0", "forward seconds"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk-latency-seconds 1 --forward-seconds 1", "DISK times given without --disk"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk 1GB --disk-write-seconds 1 --disk-latency-seconds 1 --forward-seconds 1", "DISK times: a latency goes with a bandwidth"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk 1GB --disk-bandwidth 1GB/s --disk-latency-seconds=-1 --forward-seconds 1", "DISK times: the latency must be a finite number of seconds"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk-write-seconds 1 --forward-seconds 1", "without --disk"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk-background --forward-seconds 1", "--disk-background given without --disk"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk 1GB --disk-write-seconds 1 --disk-contention 0.5 --forward-seconds 1", "--disk-background"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk 1GB --disk-write-seconds 1 --disk-issue-seconds 0.5 --forward-seconds 1", "--disk-background"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk 1GB --disk-write-seconds 1 --disk-background --disk-contention 35 --forward-seconds 1", "contention must be a fraction from 0 to 1, not 35"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk 1GB --disk-write-seconds 1 --disk-background --disk-issue-seconds=-1 --forward-seconds 1", "issue seconds must be a finite number of seconds"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk 1GB --disk-write-seconds 1 --disk-bandwidth 1GB/s --forward-seconds 1", "cannot be used with"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --disk 1GB --disk-bandwidth 0/s --forward-seconds 1", "positive"),
        ("plan --steps 0 --state-bytes 1MB --ram 1GB --forward-seconds 1", "positive"),
        ("plan --steps lots --state-bytes 1MB --ram 1GB --forward-seconds 1", "unknown"),
        ("plan --steps 10 --ram 1GB --forward-seconds 1", "--state-bytes"),
        ("plan --state-bytes 1MB --ram 10MB --forward-seconds 1", "give --steps"),
        ("plan --state-bytes 1MB --ram 10MB --steps 10 --forward-seconds 1*9", "--forward-seconds lists 9 values for --steps 10"),
        ("plan --state-bytes 1MB --ram 10MB --forward-seconds 1*9 --adjoint-seconds 1*8", "--forward-seconds lists 9 values but --adjoint-seconds lists 8"),
        ("plan --state-bytes 1MB --ram 10MB --steps unknown --forward-seconds 1*9", "known step count"),
        ("plan --state-bytes 1MB --ram 10MB --forward-seconds 1*9,x", "is not a number"),
        ("plan --state-bytes 1MB --ram 10MB --forward-seconds 1*9,-1", "forward seconds of step 9"),
        ("plan --steps 9 --state-bytes 1MB,2XB --ram 10MB --forward-seconds 1", "per-step list"),
        ("plan --steps 9 --state-bytes 8XB --ram 10MB --forward-seconds 1", "unknown unit"),
        ("plan --state-bytes 1MB --ram 10MB --steps 10 --device-write-seconds 1 --forward-seconds 1", "without --device"),
        ("plan --state-bytes 1MB --ram 10MB --steps 10 --device 1GB --device-write-seconds 1 --device-bandwidth 1GB/s --forward-seconds 1", "cannot be used with"),
        // No assumed times: the step's, and the disk's with a disk.
        ("plan --steps 100 --state-bytes 1MB --ram 10MB", "--forward-seconds"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --forward-seconds 1 --disk 1GB", "--disk needs its measured time: --disk-write-seconds"),
        ("plan --steps 100 --state-bytes 1MB --ram 10MB --forward-seconds 1 --disk 1GB --disk-read-seconds 1", "no DISK speed is assumed"),
    ];
    for (line, needle) in cases {
        let args: Vec<&str> = line.split_whitespace().collect();
        usage_error(&args, needle);
    }
}

/// A compression ratio makes each stored snapshot smaller, not the live
/// state: RAM holds (8 GiB − 2 × 80 MB) / 20 MB − 2 = 421 snapshots
/// compressed 4× against 105, and the peak shown is RAM's true peak.
#[test]
fn a_compression_ratio_makes_snapshots_cheaper() {
    let args = |extra: &[&str]| -> Vec<String> {
        [
            "plan",
            "--steps",
            "20000",
            "--state-bytes",
            "80MB",
            "--ram",
            "8GiB",
            "--forward-seconds",
            "1",
        ]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect()
    };
    let plain = stdout(&args(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        plain.starts_with("20000 steps of 80 MB states; RAM 8 GiB (105 snapshots)"),
        "{plain}"
    );
    let compressed = stdout(
        &args(&["--compression-ratio", "4"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(
        compressed.starts_with(
            "20000 steps of 80 MB (snapshots compressed 4×) states; RAM 8 GiB (421 snapshots)"
        ),
        "{compressed}"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(
        &args(&["--compression-ratio", "4", "--format", "json"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    ))
    .unwrap();
    let best = &json["plan"]["best"];
    let ram_peak = best["peak_bytes"]["ram"].as_u64().unwrap();
    // At least the live state and the adjoint data, uncompressed.
    assert!(ram_peak >= 160_000_000, "{best}");
    for bad in ["0.5", "nan", "-1"] {
        let flag = format!("--compression-ratio={bad}");
        let out = run(&args(&[flag.as_str()])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("compression ratio"),
            "{bad}"
        );
    }
}

//! `checkpointing plan`, and the command lines it prints.

mod common;

use common::{stdout, usage_error};

use checkpointing::schedule::CandidateBudget;
use checkpointing::ScheduleSpec;
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
        ram: 3,
        disk: 4,
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
        text.contains("Examples:\n  checkpointing plan --steps"),
        "{text}"
    );
    assert!(text.contains("--disk-bandwidth"), "{text}");
}

#[test]
fn bad_input_is_a_one_line_error() {
    let base = ["plan", "--steps", "100", "--state-bytes", "1MB"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        base.iter().chain(extra).copied().collect()
    };
    usage_error(&with(&["--ram", "8XB"]), "unknown unit");
    usage_error(&with(&["--ram", "99999999PiB"]), "2^64");
    usage_error(
        &with(&["--ram", "1.5MB"]),
        "smallest RAM budget that fits a schedule (with the same disk) is 3 MB",
    );
    usage_error(
        &with(&["--ram", "10MB", "--forward-seconds", "0"]),
        "forward seconds",
    );
    usage_error(
        &with(&["--ram", "10MB", "--disk-write-seconds", "1"]),
        "without --disk",
    );
    usage_error(
        &with(&[
            "--ram",
            "10MB",
            "--disk",
            "1GB",
            "--disk-write-seconds",
            "1",
            "--disk-bandwidth",
            "1GB/s",
        ]),
        "cannot be used with",
    );
    usage_error(
        &with(&["--ram", "10MB", "--disk", "1GB", "--disk-bandwidth", "0/s"]),
        "positive",
    );
    usage_error(
        &[
            "plan",
            "--steps",
            "0",
            "--state-bytes",
            "1MB",
            "--ram",
            "1GB",
        ],
        "positive",
    );
    usage_error(
        &[
            "plan",
            "--steps",
            "lots",
            "--state-bytes",
            "1MB",
            "--ram",
            "1GB",
        ],
        "unknown",
    );
    usage_error(&["plan", "--steps", "10", "--ram", "1GB"], "--state-bytes");
}

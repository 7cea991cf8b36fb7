//! Command-line conventions: values in any case, defaults shown in `--help`
//! as users type them, and one version.

mod common;

use checkpointing::ScheduleSpec;
use clap::CommandFactory;
use common::{stdout, usage_error};

/// The spec a `checkpointing schedule ...` command line names.
fn spec(args: &[&str]) -> ScheduleSpec {
    let line = ["checkpointing", "schedule"].iter().chain(args);
    let cli =
        checkpointing_cli::parse(line).unwrap_or_else(|e| panic!("{args:?}: {}", e.message()));
    cli.spec().unwrap().clone()
}

fn json(text: &str) -> ScheduleSpec {
    serde_json::from_str(text).unwrap()
}

#[test]
fn storage_levels_in_any_case() {
    let disk = json(r#"{"schedule":"mixed","max_n":10,"snapshots":2,"storage":"DISK"}"#);
    for value in [
        "disk",
        "Disk",
        "DISK",
        "StorageType.DISK",
        "storagetype.disk",
    ] {
        let args = [
            "mixed",
            "--max-n",
            "10",
            "--snapshots",
            "2",
            "--storage",
            value,
        ];
        assert_eq!(spec(&args), disk, "--storage {value}");
    }
    let ram = json(
        r#"{"schedule":"two-level","steps":30,"period":10,"binomial_snapshots":2,"binomial_storage":"RAM"}"#,
    );
    for value in ["ram", "Ram", "RAM"] {
        let args = [
            "two-level",
            "--steps",
            "30",
            "--period",
            "10",
            "--binomial-snapshots",
            "2",
            "--binomial-storage",
            value,
        ];
        assert_eq!(spec(&args), ram, "--binomial-storage {value}");
    }
    // hierarchical-revolve's levels, LEVEL:SNAPSHOTS:WRITE:READ.
    let levels = json(
        r#"{"schedule":"hierarchical-revolve","max_n":20,"levels":[
            {"level":"RAM","snapshots":3,"write_cost":0.0,"read_cost":0.0},
            {"level":"DISK","snapshots":5,"write_cost":2.0,"read_cost":2.0}]}"#,
    );
    let args = [
        "hierarchical-revolve",
        "--max-n",
        "20",
        "--level",
        "ram:3:0:0",
        "--level",
        "Disk:5:2:2",
    ];
    assert_eq!(spec(&args), levels);
    // The schedule runs with the level asked for.
    let text = stdout(&[
        "schedule",
        "mixed",
        "--max-n",
        "4",
        "--snapshots",
        "2",
        "--storage",
        "ram",
    ]);
    assert!(
        text.starts_with("Forward(0, 2, True, False, StorageType.RAM)"),
        "{text}"
    );
}

#[test]
fn trajectories_and_formats_in_any_case() {
    let revolve =
        json(r#"{"schedule":"multistage","max_n":10,"snapshots_in_ram":2,"trajectory":"revolve"}"#);
    for value in ["revolve", "Revolve", "REVOLVE"] {
        let args = [
            "multistage",
            "--max-n",
            "10",
            "--snapshots-in-ram",
            "2",
            "--trajectory",
            value,
        ];
        assert_eq!(spec(&args), revolve, "--trajectory {value}");
    }
    let text = stdout(&[
        "schedule",
        "revolve",
        "--max-n",
        "4",
        "--snapshots-in-ram",
        "2",
        "--format",
        "JSONL",
    ]);
    assert!(text.starts_with(r#"{"action":"Forward""#), "{text}");
}

#[test]
fn a_level_a_flag_does_not_take_is_refused_with_the_ones_it_does() {
    usage_error(
        &[
            "schedule",
            "mixed",
            "--max-n",
            "4",
            "--snapshots",
            "2",
            "--storage",
            "WORK",
        ],
        "[possible values: RAM, DISK]",
    );
    usage_error(
        &[
            "schedule",
            "multistage",
            "--max-n",
            "4",
            "--snapshots-in-ram",
            "2",
            "--trajectory",
            "sideways",
        ],
        "[possible values: maximum, revolve]",
    );
}

#[test]
fn help_shows_defaults_and_possible_values_as_typed() {
    let mixed = stdout(&["schedule", "mixed", "--help"]);
    assert!(mixed.contains("[default: DISK]"), "{mixed}");
    assert!(mixed.contains("[possible values: RAM, DISK]"), "{mixed}");
    let two_level = stdout(&["schedule", "two-level", "--help"]);
    assert!(two_level.contains("[default: DISK]"), "{two_level}");
    assert!(two_level.contains("[default: maximum]"), "{two_level}");
    assert!(
        two_level.contains("[possible values: maximum, revolve]"),
        "{two_level}"
    );
    for name in ScheduleSpec::NAMES {
        let help = stdout(&["schedule", name, "--help"]);
        for default in help.split("[default: ").skip(1) {
            let value = &default[..default.find(']').unwrap()];
            assert!(
                !value.contains("StorageType."),
                "{name}: [default: {value}]"
            );
        }
    }
}

/// Every flag of every command that lists its possible values takes them
/// in any case, and every default is typed as users type it: one of the
/// possible values where the flag lists them, never the text form's
/// `StorageType.X`. (Each default is parsed by its flag whenever a command
/// line leaves the flag out, as the other tests do.)
#[test]
fn every_flag_with_values_ignores_case_and_shows_a_typeable_default() {
    fn check(command: &clap::Command, path: &str, checked: &mut usize) {
        for arg in command.get_arguments() {
            let flag = format!("{path} {}", arg.get_id());
            let possible: Vec<String> = arg
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            if !possible.is_empty() {
                assert!(
                    arg.is_ignore_case_set(),
                    "{flag}: {possible:?} in one case only"
                );
            }
            for default in arg.get_default_values() {
                let text = default.to_string_lossy();
                assert!(!text.contains("StorageType."), "{flag}: default {text:?}");
                assert!(
                    possible.is_empty() || possible.iter().any(|p| p == &text),
                    "{flag}: default {text:?} is not among {possible:?}"
                );
                *checked += 1;
            }
        }
        for sub in command.get_subcommands() {
            check(sub, &format!("{path} {}", sub.get_name()), checked);
        }
    }
    let mut command = checkpointing_cli::Cli::command();
    command.build();
    let mut checked = 0;
    check(&command, "checkpointing", &mut checked);
    assert!(checked > 20, "only {checked} defaults found");
}

#[test]
fn version_is_the_workspace_version() {
    let version = checkpointing_test_support::workspace_version();
    assert_eq!(env!("CARGO_PKG_VERSION"), version);
    assert_eq!(stdout(&["--version"]), format!("checkpointing {version}\n"));
}

//! What each schedule declares to the registry agrees with its parameters:
//! every example is valid and replays within its own budgets; the
//! snapshot-count fields exist, are counts, and bound the replay's peaks;
//! the flags give back the same parameters (the CLI's own test parses them).

use checkpointing_schedule::{ScheduleSpec, StorageLevel};

#[test]
fn every_schedule_has_a_valid_example_and_a_name() {
    let examples = ScheduleSpec::examples();
    let names: Vec<&str> = examples.iter().map(ScheduleSpec::name).collect();
    assert_eq!(names, ScheduleSpec::NAMES);
    for spec in &examples {
        let cost = spec
            .cost()
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name()));
        assert_eq!(
            cost.adjoint_steps > 0,
            spec.name() != "none",
            "{}",
            spec.name()
        );
        assert_eq!(spec.command_args()[0], spec.name());
    }
}

#[test]
fn snapshot_fields_are_the_counts_that_bound_each_level() {
    for spec in ScheduleSpec::examples() {
        let fields = ScheduleSpec::snapshot_fields(spec.name()).unwrap();
        let json = serde_json::to_value(&spec).unwrap();
        let cost = spec.cost().unwrap();
        for &(level, field) in fields {
            let count = json[field]
                .as_u64()
                .unwrap_or_else(|| panic!("{}: no count field {field}", spec.name()));
            assert!(level.is_stored(), "{}: {level}", spec.name());
            assert!(
                cost.levels[level].peak <= count,
                "{}: {level} peak {} over {field} = {count}",
                spec.name(),
                cost.levels[level].peak
            );
        }
        // A field given twice, or a level counted twice, would be ambiguous.
        for (i, (level, field)) in fields.iter().enumerate() {
            assert!(fields[..i].iter().all(|(l, f)| l != level && f != field));
        }
    }
    assert_eq!(ScheduleSpec::snapshot_fields("no-such-schedule"), None);
    assert_eq!(
        ScheduleSpec::snapshot_fields("multistage").unwrap(),
        [
            (StorageLevel::Ram, "snapshots_in_ram"),
            (StorageLevel::Disk, "snapshots_on_disk")
        ]
    );
}

//! Schedule throughput against the reference package, measured in the same
//! run: actions per second for `checkpointing` and for `checkpoint_schedules`
//! 1.0.4 iterating the same whole schedules (construction, including the
//! dynamic programs' tables, included), and the ratio; then the time to
//! stream Revolve(10^6, 100) and Revolve(10^8, 100).
//!
//! Run: `bash scripts/reference-venv.sh && cargo bench -p checkpointing-benches --bench schedules`
//! (set `CHECKPOINTING_REFERENCE_PYTHON` to use another interpreter; without
//! one the Python column is skipped).

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use checkpointing::{Action, Multistage, Revolve, Schedule, ScheduleSpec, Trajectory};

/// Iterates the whole schedule, as its concrete type (as an executor
/// generic over the schedule does); returns the number of actions.
fn stream(spec: &ScheduleSpec) -> u64 {
    fn count<S: Schedule>(schedule: S) -> u64 {
        let mut count = 0;
        for action in schedule {
            count += 1;
            if black_box(action) == Action::EndReverse {
                break;
            }
        }
        count
    }
    match *spec {
        ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams {
            max_n,
            snapshots_in_ram,
            ..
        }) => count(Revolve::new(max_n, snapshots_in_ram).expect("valid parameters")),
        ScheduleSpec::Multistage(checkpointing::schedule::MultistageParams {
            max_n,
            snapshots_in_ram,
            snapshots_on_disk,
            trajectory,
        }) => count(
            Multistage::new(max_n, snapshots_in_ram, snapshots_on_disk, trajectory)
                .expect("valid parameters"),
        ),
        _ => count(spec.build().expect("valid parameters")),
    }
}

/// Best time of repeated runs lasting at least `budget` in total.
fn time_ours(spec: &ScheduleSpec, budget: Duration) -> (u64, f64) {
    let (mut best, mut total, mut count) = (f64::INFINITY, Duration::ZERO, 0);
    while total < budget || best.is_infinite() {
        let start = Instant::now();
        count = stream(spec);
        let elapsed = start.elapsed();
        best = best.min(elapsed.as_secs_f64());
        total += elapsed;
    }
    (count, best)
}

/// Times the reference on `specs` (one Python process, best of 3 each).
fn time_reference(specs: &[ScheduleSpec]) -> Option<Vec<(u64, f64)>> {
    let results = common::run_python("iterate_reference.py", &[], &serde_json_list(specs))?;
    results
        .iter()
        .map(|r| Some((r["actions"].as_u64()?, r["seconds"].as_f64()?)))
        .collect()
}

fn serde_json_list(specs: &[ScheduleSpec]) -> String {
    let items: Vec<String> = specs
        .iter()
        .map(|s| match *s {
            ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams { max_n, snapshots_in_ram, .. }) => format!(
                r#"{{"schedule":"revolve","max_n":{max_n},"snapshots_in_ram":{snapshots_in_ram}}}"#
            ),
            ScheduleSpec::Multistage(checkpointing::schedule::MultistageParams { max_n, snapshots_in_ram, snapshots_on_disk, trajectory }) => format!(
                r#"{{"schedule":"multistage","max_n":{max_n},"snapshots_in_ram":{snapshots_in_ram},"snapshots_on_disk":{snapshots_on_disk},"trajectory":"{}"}}"#,
                trajectory.name()
            ),
            ScheduleSpec::HRevolve(checkpointing::schedule::HRevolveParams { max_n, snapshots_in_ram, snapshots_on_disk, .. }) => format!(
                r#"{{"schedule":"hrevolve","max_n":{max_n},"snapshots_in_ram":{snapshots_in_ram},"snapshots_on_disk":{snapshots_on_disk},"repeat":1}}"#
            ),
            ScheduleSpec::DiskRevolve(checkpointing::schedule::DiskRevolveParams { max_n, snapshots_in_ram, .. }) => format!(
                r#"{{"schedule":"disk-revolve","max_n":{max_n},"snapshots_in_ram":{snapshots_in_ram},"repeat":1}}"#
            ),
            ScheduleSpec::PeriodicDiskRevolve(checkpointing::schedule::PeriodicDiskRevolveParams { max_n, snapshots_in_ram, .. }) => format!(
                r#"{{"schedule":"periodic-disk-revolve","max_n":{max_n},"snapshots_in_ram":{snapshots_in_ram}}}"#
            ),
            ScheduleSpec::Mixed(checkpointing::schedule::MixedParams { max_n, snapshots, .. }) => format!(
                r#"{{"schedule":"mixed","max_n":{max_n},"snapshots":{snapshots},"repeat":1}}"#
            ),
            _ => unreachable!("only shared schedules are compared"),
        })
        .collect();
    format!("[{}]", items.join(","))
}

fn revolve(max_n: u64, s: u64) -> ScheduleSpec {
    ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams {
        max_n,
        snapshots_in_ram: s,
        ..Default::default()
    })
}

fn multistage(max_n: u64, ram: u64, disk: u64, trajectory: Trajectory) -> ScheduleSpec {
    ScheduleSpec::Multistage(checkpointing::schedule::MultistageParams {
        max_n,
        snapshots_in_ram: ram,
        snapshots_on_disk: disk,
        trajectory,
    })
}

fn label(spec: &ScheduleSpec) -> String {
    match *spec {
        ScheduleSpec::Revolve(checkpointing::schedule::RevolveParams {
            max_n,
            snapshots_in_ram,
            ..
        }) => format!("Revolve({max_n}, {snapshots_in_ram})"),
        ScheduleSpec::Multistage(checkpointing::schedule::MultistageParams {
            max_n,
            snapshots_in_ram,
            snapshots_on_disk,
            trajectory,
        }) => {
            format!(
                "Multistage({max_n}, {snapshots_in_ram}, {snapshots_on_disk}, {})",
                trajectory.name()
            )
        }
        ScheduleSpec::HRevolve(checkpointing::schedule::HRevolveParams {
            max_n,
            snapshots_in_ram,
            snapshots_on_disk,
            ..
        }) => {
            format!("HRevolve({max_n}, {snapshots_in_ram}, {snapshots_on_disk})")
        }
        ScheduleSpec::DiskRevolve(checkpointing::schedule::DiskRevolveParams {
            max_n,
            snapshots_in_ram,
            ..
        }) => format!("DiskRevolve({max_n}, {snapshots_in_ram})"),
        ScheduleSpec::PeriodicDiskRevolve(checkpointing::schedule::PeriodicDiskRevolveParams {
            max_n,
            snapshots_in_ram,
            ..
        }) => {
            format!("PeriodicDiskRevolve({max_n}, {snapshots_in_ram})")
        }
        ScheduleSpec::Mixed(checkpointing::schedule::MixedParams {
            max_n, snapshots, ..
        }) => format!("Mixed({max_n}, {snapshots})"),
        _ => spec.name().to_owned(),
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let shared = [
        revolve(500, 7),
        revolve(1000, 10),
        revolve(1500, 30),
        multistage(200_000, 20, 0, Trajectory::Maximum),
        multistage(200_000, 0, 30, Trajectory::Revolve),
        multistage(200_000, 5, 10, Trajectory::Maximum),
        ScheduleSpec::HRevolve(checkpointing::schedule::HRevolveParams {
            max_n: 1000,
            snapshots_in_ram: 3,
            snapshots_on_disk: 20,
            costs: Default::default(),
        }),
        ScheduleSpec::DiskRevolve(checkpointing::schedule::DiskRevolveParams {
            max_n: 1000,
            snapshots_in_ram: 4,
            costs: Default::default(),
        }),
        ScheduleSpec::PeriodicDiskRevolve(checkpointing::schedule::PeriodicDiskRevolveParams {
            max_n: 100_000,
            snapshots_in_ram: 4,
            costs: Default::default(),
        }),
        ScheduleSpec::Mixed(checkpointing::schedule::MixedParams {
            max_n: 1000,
            snapshots: 10,
            storage: checkpointing::StorageLevel::Disk,
        }),
    ];
    let reference = time_reference(&shared);
    if reference.is_none() {
        println!("(no reference Python: run scripts/reference-venv.sh for the comparison)");
    }
    println!(
        "{:<36} {:>9} {:>16} {:>16} {:>9}",
        "schedule", "actions", "ours actions/s", "python actions/s", "ratio"
    );
    for (i, spec) in shared.iter().enumerate() {
        let (count, ours) = time_ours(spec, Duration::from_millis(300));
        let ours_rate = count as f64 / ours;
        match reference.as_ref().map(|r| r[i]) {
            Some((py_count, py)) => {
                assert_eq!(py_count, count, "{}: action counts differ", label(spec));
                println!(
                    "{:<36} {:>9} {:>16.3e} {:>16.3e} {:>8.0}x",
                    label(spec),
                    count,
                    ours_rate,
                    py_count as f64 / py,
                    py / ours
                );
            }
            None => println!(
                "{:<36} {:>9} {:>16.3e} {:>16} {:>9}",
                label(spec),
                count,
                ours_rate,
                "-",
                "-"
            ),
        }
    }
    // Cost tables where the Python package needs hours: build time alone.
    let tables = [
        ScheduleSpec::Mixed(checkpointing::schedule::MixedParams {
            max_n: 10_000,
            snapshots: 50,
            storage: checkpointing::StorageLevel::Ram,
        }),
        ScheduleSpec::HRevolve(checkpointing::schedule::HRevolveParams {
            max_n: 10_000,
            snapshots_in_ram: 10,
            snapshots_on_disk: 100,
            costs: Default::default(),
        }),
        ScheduleSpec::HRevolve(checkpointing::schedule::HRevolveParams {
            max_n: 10_000,
            snapshots_in_ram: 10,
            snapshots_on_disk: 100,
            costs: checkpointing::schedule::Costs {
                uf: 0.1,
                ub: 1.0,
                wd: 2.0,
                rd: 2.0,
            },
        }),
    ];
    for spec in &tables {
        let start = Instant::now();
        let schedule = spec.build().expect("valid parameters");
        let secs = start.elapsed().as_secs_f64();
        drop(schedule);
        println!("build {} (costs {}): {secs:.3} s", label(spec), costs(spec));
    }
    for (max_n, s) in [(1_000_000, 100), (100_000_000, 100)] {
        let start = Instant::now();
        let count = stream(&revolve(max_n, s));
        let secs = start.elapsed().as_secs_f64();
        println!(
            "stream Revolve({max_n}, {s}): {count} actions in {secs:.3} s ({:.3e} actions/s)",
            count as f64 / secs
        );
    }
}

/// `uf/ub/wd/rd` of a spec that has costs, `-` otherwise.
fn costs(spec: &ScheduleSpec) -> String {
    match *spec {
        ScheduleSpec::HRevolve(checkpointing::schedule::HRevolveParams {
            costs: checkpointing::schedule::Costs { uf, ub, wd, rd, .. },
            ..
        }) => format!("{uf}/{ub}/{wd}/{rd}"),
        _ => "-".into(),
    }
}

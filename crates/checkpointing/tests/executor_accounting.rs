//! The executor's memory accounting: the measured peak of snapshot bytes
//! equals an independent count of what is held, for random schedules and
//! states whose buffers change capacity across save, restore and step.
//!
//! The state [`Elastic`] reports its footprint from its buffer's capacity,
//! as `Vec` does. Every copy of it (clone, `clone_from` into a recycled
//! buffer, a restore from disk) gets the capacity `len + pad(step)`, while
//! the live state's capacity changes at every forward step to a value that
//! is sometimes larger and sometimes smaller. An accounting that measures a
//! state once when it is added and again, differently, when it is removed
//! drifts or underflows here (overflow checks are on in the test profile).
//! The independent count follows the actions themselves: which steps each
//! level and WORK hold after every action, each held copy weighing
//! `footprint(len + pad(step))`.

use std::collections::BTreeMap;

use checkpointing::{
    Action, Checkpoint, DiskStore, Executor, FnProblem, Footprint, MemoryStore, Schedule,
    ScheduleSpec, SnapshotStore, Step, StorageLevel, Trajectory,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// Spare capacity of every copy of the state at `step`.
fn pad(step: u64) -> usize {
    (step as usize * 7 + 3) % 11
}

/// A state whose `data[0]` is its step and whose capacity depends on how it
/// was made.
#[derive(Debug, Serialize, Deserialize)]
#[serde(from = "Vec<f64>", into = "Vec<f64>")]
struct Elastic {
    data: Vec<f64>,
}

impl Elastic {
    /// Sets the capacity of a copy: `len + pad(step)`, exactly.
    fn normalized(mut data: Vec<f64>) -> Self {
        let capacity = data.len() + pad(data[0] as u64);
        data.reserve_exact(capacity - data.len());
        data.shrink_to(capacity);
        assert_eq!(
            data.capacity(),
            capacity,
            "the allocator honours exact capacities"
        );
        Self { data }
    }

    /// The footprint of any copy of the state at `step` with `len` values.
    fn copy_footprint(len: usize, step: u64) -> usize {
        std::mem::size_of::<Self>() + (len + pad(step)) * std::mem::size_of::<f64>()
    }
}

impl Clone for Elastic {
    fn clone(&self) -> Self {
        Self::normalized(self.data.clone())
    }

    /// Reuses the buffer, then gives it a copy's capacity.
    fn clone_from(&mut self, source: &Self) {
        self.data.clear();
        self.data.extend_from_slice(&source.data);
        let data = std::mem::take(&mut self.data);
        *self = Self::normalized(data);
    }
}

impl From<Vec<f64>> for Elastic {
    fn from(data: Vec<f64>) -> Self {
        Self::normalized(data)
    }
}

impl From<Elastic> for Vec<f64> {
    fn from(state: Elastic) -> Self {
        state.data
    }
}

impl Footprint for Elastic {
    fn footprint(&self) -> usize {
        std::mem::size_of::<Self>() + self.data.capacity() * std::mem::size_of::<f64>()
    }
}

/// `x_{i+1}`: the step counter advances, the values mix, and the live
/// buffer's capacity changes to `len + r` with `r` from a hash of the step
/// (0 to 22: above and below `pad`).
fn forward(i: Step, x: &mut Elastic) {
    x.data[0] += 1.0;
    for k in 1..x.data.len() {
        x.data[k] = 0.5 * x.data[k] + 0.25 * x.data[k - 1];
    }
    let r = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as usize % 23;
    let len = x.data.len();
    if x.data.capacity() < len + r {
        x.data.reserve_exact(len + r - x.data.capacity());
    } else {
        x.data.shrink_to(len + r);
    }
}

/// What one level holds for one step: the forward restart data's step and
/// the adjoint dependencies' steps.
#[derive(Debug, Clone, Default)]
struct Held {
    ics: Option<u64>,
    deps: Vec<u64>,
}

impl Held {
    fn footprint(&self, len: usize) -> u64 {
        let states = self.ics.iter().chain(&self.deps);
        (std::mem::size_of::<Checkpoint<Elastic>>()
            + states
                .map(|&k| Elastic::copy_footprint(len, k))
                .sum::<usize>()) as u64
    }
}

/// The independent count: what each level and WORK hold, action by action.
struct Model {
    len: usize,
    /// Whether DISK snapshots count as memory (a memory store serves DISK).
    disk_in_memory: bool,
    levels: BTreeMap<StorageLevel, BTreeMap<Step, Held>>,
    work: BTreeMap<Step, ()>,
    peak_bytes: u64,
    peak_work: u64,
}

impl Model {
    fn new(len: usize, disk_in_memory: bool) -> Self {
        Self {
            len,
            disk_in_memory,
            levels: BTreeMap::new(),
            work: BTreeMap::new(),
            peak_bytes: 0,
            peak_work: 0,
        }
    }

    /// Stores `new` at `level`, merged with what is already held there for
    /// `n` (as the executor does: new data wins, the other kind is kept).
    fn store(&mut self, level: StorageLevel, n: Step, new: Held) {
        let slot = self.levels.entry(level).or_default().entry(n).or_default();
        slot.ics = new.ics.or(slot.ics);
        if !new.deps.is_empty() {
            slot.deps = new.deps;
        }
    }

    fn take(&mut self, level: StorageLevel, n: Step, remove: bool) -> Held {
        let held = self.levels.get_mut(&level).expect("level held");
        if remove {
            held.remove(&n).expect("checkpoint held")
        } else {
            held[&n].clone()
        }
    }

    fn apply(&mut self, action: Action) {
        match action {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => {
                if write_ics {
                    let ics = Held {
                        ics: Some(n0),
                        deps: Vec::new(),
                    };
                    self.store(storage, n0, ics);
                }
                if write_adj_deps && storage == StorageLevel::Work {
                    self.work.extend((n0..n1).map(|k| (k, ())));
                } else if write_adj_deps {
                    let deps = Held {
                        ics: None,
                        deps: (n0..n1).collect(),
                    };
                    self.store(storage, n0, deps);
                }
            }
            Action::Reverse {
                n1,
                n0,
                clear_adj_deps,
            } => {
                if clear_adj_deps {
                    for k in n0..n1 {
                        self.work.remove(&k);
                    }
                }
            }
            Action::Copy { n, from, to } | Action::Move { n, from, to } => {
                let held = self.take(from, n, matches!(action, Action::Move { .. }));
                match to {
                    StorageLevel::None => {}
                    StorageLevel::Work => self.work.extend(held.deps.iter().map(|&k| (k, ()))),
                    level => self.store(level, n, held),
                }
            }
            Action::EndForward | Action::EndReverse => {}
        }
        let stored: u64 = self
            .levels
            .iter()
            .filter(|(level, _)| **level != StorageLevel::Disk || self.disk_in_memory)
            .flat_map(|(_, held)| held.values())
            .map(|held| held.footprint(self.len))
            .sum();
        let work: u64 = self
            .work
            .keys()
            .map(|&k| Elastic::copy_footprint(self.len, k) as u64)
            .sum();
        self.peak_bytes = self.peak_bytes.max(stored + work);
        self.peak_work = self.peak_work.max(self.work.len() as u64);
    }
}

/// Schedules of every kind with small random parameters.
fn spec() -> impl Strategy<Value = ScheduleSpec> {
    let n = 1..40u64;
    let s = 1..6u64;
    prop_oneof![
        (n.clone()).prop_map(|steps| ScheduleSpec::SingleMemory(
            checkpointing::schedule::SingleMemoryParams { steps }
        )),
        (n.clone(), any::<bool>()).prop_map(|(steps, move_data)| ScheduleSpec::SingleDisk(
            checkpointing::schedule::SingleDiskParams { steps, move_data }
        )),
        (n.clone(), s.clone()).prop_map(|(max_n, snapshots_in_ram)| ScheduleSpec::Revolve(
            checkpointing::schedule::RevolveParams {
                max_n,
                snapshots_in_ram,
                ..Default::default()
            }
        )),
        (n.clone(), s.clone(), 1..4u64).prop_map(|(max_n, ram, disk)| ScheduleSpec::HRevolve(
            checkpointing::schedule::HRevolveParams {
                max_n,
                snapshots_in_ram: ram,
                snapshots_on_disk: disk,
                costs: Default::default()
            }
        )),
        (n.clone(), s.clone()).prop_map(|(max_n, ram)| ScheduleSpec::DiskRevolve(
            checkpointing::schedule::DiskRevolveParams {
                max_n,
                snapshots_in_ram: ram,
                costs: Default::default()
            }
        )),
        (n.clone(), s.clone()).prop_map(|(max_n, ram)| ScheduleSpec::PeriodicDiskRevolve(
            checkpointing::schedule::PeriodicDiskRevolveParams {
                max_n,
                snapshots_in_ram: ram,
                costs: Default::default()
            }
        )),
        (n.clone(), 0..4u64, 0..4u64, any::<bool>()).prop_map(|(max_n, ram, disk, maximum)| {
            ScheduleSpec::Multistage(checkpointing::schedule::MultistageParams {
                max_n,
                snapshots_in_ram: ram,
                snapshots_on_disk: disk,
                trajectory: if maximum {
                    Trajectory::Maximum
                } else {
                    Trajectory::Revolve
                },
            })
        }),
        (n.clone(), s.clone(), any::<bool>()).prop_map(|(max_n, snapshots, ram)| {
            ScheduleSpec::Mixed(checkpointing::schedule::MixedParams {
                max_n,
                snapshots,
                storage: if ram {
                    StorageLevel::Ram
                } else {
                    StorageLevel::Disk
                },
            })
        }),
        (n.clone(), 1..8u64).prop_map(|(max_n, period)| ScheduleSpec::Periodic(
            checkpointing::schedule::PeriodicParams { max_n, period }
        )),
        (n.clone(), 1..8u64, 0..3u64, any::<bool>()).prop_map(
            |(steps, period, binomial_snapshots, ram)| ScheduleSpec::TwoLevel(
                checkpointing::schedule::TwoLevelParams {
                    steps,
                    period,
                    binomial_snapshots,
                    binomial_storage: if ram {
                        StorageLevel::Ram
                    } else {
                        StorageLevel::Disk
                    },
                    binomial_trajectory: Trajectory::Maximum
                }
            )
        ),
        (n, s).prop_map(|(steps, snapshots)| ScheduleSpec::OnlineR2(
            checkpointing::schedule::OnlineR2Params { steps, snapshots }
        )),
    ]
}

/// Runs `spec` with `disk` as the DISK store and compares the executor's
/// peak with the model's.
fn check<D: SnapshotStore<Checkpoint<Elastic>>>(
    spec: &ScheduleSpec,
    len: usize,
    disk: D,
    disk_in_memory: bool,
) -> Result<(), TestCaseError> {
    let Ok(actions) = spec.drive() else {
        return Err(TestCaseError::reject("parameters the schedule refuses"));
    };
    let mut model = Model::new(len, disk_in_memory);
    for action in actions {
        let action = action.map_err(|e| TestCaseError::fail(e.to_string()))?;
        model.apply(action);
        if action == Action::EndReverse {
            break;
        }
    }
    let schedule = spec.build().expect("built above");
    let steps = spec.steps();
    let mut initial = vec![0.0; len];
    initial[0] = 0.0;
    initial
        .iter_mut()
        .skip(1)
        .enumerate()
        .for_each(|(k, v)| *v = k as f64);
    let initial = Elastic::normalized(initial);
    let mut problem = FnProblem::new(forward, |_, x: &Elastic, l: &mut f64| {
        *l += x.data[x.data.len() - 1];
    });
    let mut executor = Executor::new(MemoryStore::new(), disk);
    let outcome = if schedule.max_n().is_some() {
        executor.run(&mut problem, schedule, initial, |_| Ok(0.0))
    } else {
        executor.run_online(
            &mut problem,
            schedule,
            initial,
            |n, _| n == steps,
            |_| Ok(0.0),
        )
    }
    .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(
        outcome.stats.peak_snapshot_bytes,
        model.peak_bytes,
        "{:?}",
        spec
    );
    prop_assert_eq!(
        outcome.stats.peak_work_states,
        model.peak_work,
        "{:?}",
        spec
    );
    // The executor skips exactly the dead steps the replay counts.
    let cost = spec.cost().expect("replayed above");
    prop_assert_eq!(
        outcome.stats.skipped_forward_steps,
        cost.skippable_forward_steps,
        "{:?}",
        spec
    );
    prop_assert_eq!(
        outcome.stats.forward_steps,
        cost.executed_forward_steps(),
        "{:?}",
        spec
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Both levels in memory stores: every snapshot counts.
    #[test]
    fn peak_equals_independent_count_in_memory(spec in spec(), len in 1..48usize) {
        check(&spec, len, MemoryStore::new(), true)?;
    }

    /// DISK on a real disk store: restores come back deserialized, with
    /// their own capacity; disk snapshots are not memory.
    #[test]
    fn peak_equals_independent_count_with_disk(spec in spec(), len in 1..48usize) {
        let disk = DiskStore::temporary().expect("temporary directory");
        check(&spec, len, disk, false)?;
    }
}

/// The case that underflowed: Multistage with 2 RAM and 10 disk snapshots
/// on a large state, restored from a real disk store (the demo's
/// configuration, fewer steps so that a debug build stays quick).
#[test]
fn multistage_on_disk_large_state() {
    let spec = ScheduleSpec::Multistage(checkpointing::schedule::MultistageParams {
        max_n: 200,
        snapshots_in_ram: 2,
        snapshots_on_disk: 10,
        trajectory: Trajectory::Maximum,
    });
    let disk = DiskStore::temporary().expect("temporary directory");
    check(&spec, 20_000, disk, false).expect("peak equals the independent count");
}

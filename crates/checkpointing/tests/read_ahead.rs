//! The executor announces each restore to its store before it makes it
//! ([`SnapshotStore::prefetch`]), within its look-ahead, so that a store
//! reading in the background starts early: for offline schedules from the
//! start, for online schedules once finalized (their reverse sweep). The
//! announcements reach at least `LOOK_AHEAD` actions ahead, further by
//! predicted time where reads made the run wait (`Pace`, whose window
//! its unit tests check), and never beyond [`READ_AHEAD_MOST`] actions.

use std::cell::RefCell;
use std::rc::Rc;

use checkpointing::plan::READ_AHEAD_MOST;
use checkpointing::{
    Action, Checkpoint, Executor, FnProblem, MemoryStore, Schedule, ScheduleSpec, SnapshotStore,
    Step, StorageError, StorageLevel,
};

type Snapshot = Checkpoint<Vec<f64>>;

/// What the DISK store saw, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Announced(Step),
    Read(Step),
}

/// A memory store that records announcements and reads.
struct Watched {
    inner: MemoryStore<Snapshot>,
    events: Rc<RefCell<Vec<Event>>>,
}

impl SnapshotStore<Snapshot> for Watched {
    fn save(&mut self, step: Step, value: Snapshot) -> Result<(), StorageError> {
        self.inner.save(step, value)
    }
    fn load(&mut self, step: Step) -> Result<Snapshot, StorageError> {
        self.events.borrow_mut().push(Event::Read(step));
        self.inner.load(step)
    }
    fn take(&mut self, step: Step) -> Result<Snapshot, StorageError> {
        self.events.borrow_mut().push(Event::Read(step));
        self.inner.take(step)
    }
    fn prefetch(&mut self, step: Step) {
        self.events.borrow_mut().push(Event::Announced(step));
    }
    checkpointing::forward_to_inner_store!(
        inner: remove,
        held_steps,
        contains,
        flush,
        resident_bytes,
        stats
    );
}

/// Runs `spec` with a watched DISK store; returns what it saw.
fn events(spec: &ScheduleSpec) -> Vec<Event> {
    let events = Rc::new(RefCell::new(Vec::new()));
    let disk = Watched {
        inner: MemoryStore::new(),
        events: events.clone(),
    };
    let mut problem = FnProblem::new(
        |_, x: &mut Vec<f64>| x.iter_mut().for_each(|v| *v = v.sin()),
        |_, x: &Vec<f64>, l: &mut Vec<f64>| l.iter_mut().zip(x).for_each(|(l, x)| *l *= x.cos()),
    );
    let mut executor = Executor::new(MemoryStore::new(), disk);
    let schedule = spec.build().unwrap();
    let steps = spec.steps();
    let initial = vec![0.5; 8];
    if schedule.max_n().is_some() {
        executor.run(&mut problem, schedule, initial, |x| Ok(x.clone()))
    } else {
        executor.run_online(
            &mut problem,
            schedule,
            initial,
            |n, _| n == steps,
            |x| Ok(x.clone()),
        )
    }
    .unwrap();
    let seen = events.borrow().clone();
    seen
}

/// The DISK reads of `spec`'s actions, and for each the index of the action
/// that makes it.
fn disk_reads(spec: &ScheduleSpec) -> Vec<(usize, Step)> {
    spec.build_for_steps()
        .unwrap()
        .enumerate()
        .filter_map(|(i, action)| match action {
            Action::Copy { n, from, to } | Action::Move { n, from, to }
                if from == StorageLevel::Disk && to != StorageLevel::None =>
            {
                Some((i, n))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn every_disk_read_is_announced_first_offline_and_online() {
    let specs = [
        // Online: store-all on disk, read back in the reverse sweep.
        ScheduleSpec::SingleDisk(checkpointing::schedule::SingleDiskParams {
            steps: 30,
            move_data: true,
        }),
        ScheduleSpec::SingleDisk(checkpointing::schedule::SingleDiskParams {
            steps: 30,
            move_data: false,
        }),
        // Offline: every state on disk, the first reads of the reverse
        // sweep of snapshots saved within their window (announced once
        // saved).
        ScheduleSpec::Mixed(checkpointing::schedule::MixedParams {
            max_n: 30,
            snapshots: 30,
            storage: StorageLevel::Disk,
        }),
        // Offline.
        ScheduleSpec::DiskRevolve(checkpointing::schedule::DiskRevolveParams {
            max_n: 40,
            snapshots_in_ram: 2,
            costs: Default::default(),
        }),
    ];
    for spec in specs {
        let seen = events(&spec);
        let reads: Vec<Step> = seen
            .iter()
            .filter_map(|e| match *e {
                Event::Read(n) => Some(n),
                _ => None,
            })
            .collect();
        assert_eq!(
            reads,
            disk_reads(&spec)
                .iter()
                .map(|&(_, n)| n)
                .collect::<Vec<_>>(),
            "{spec:?}"
        );
        assert!(!reads.is_empty(), "{spec:?}");
        // Each read was announced, and no earlier than READ_AHEAD_MOST reads
        // before it (a window of actions holds at most that many).
        for (k, event) in seen.iter().enumerate() {
            if let Event::Read(n) = *event {
                let before = &seen[..k];
                let announced = before
                    .iter()
                    .rposition(|e| *e == Event::Announced(n))
                    .unwrap_or_else(|| panic!("{spec:?}: read of {n} not announced"));
                let reads_between = before[announced..]
                    .iter()
                    .filter(|e| matches!(e, Event::Read(_)))
                    .count();
                assert!(reads_between <= READ_AHEAD_MOST, "{spec:?}: step {n}");
            }
        }
    }
}

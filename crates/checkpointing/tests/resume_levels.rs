//! A journal saves every level whose store does not outlive the process:
//! a three-level run (DEVICE, RAM, DISK) killed mid-way resumes, with the
//! DEVICE snapshots it held put back from the journal, to the gradient of
//! an uninterrupted run, bit for bit.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use checkpointing::{
    Checkpoint, DiskStore, Executor, ExecutorError, HierarchicalRevolve, Journal, JournalError,
    LevelSpec, MemoryStore, Problem, ResumableProblem, SnapshotStore, Step, StorageError,
    StorageLevel, UserError,
};

const STEPS: Step = 60;

/// `x_{i+1} = x_i + 0.1 a sin(x_i + shifted x_i)`, accumulating `∂J/∂a`;
/// fails (as a crash would stop the run) at its `fail_at`-th forward step.
struct Swirl {
    a: f64,
    grad_a: f64,
    forward_steps: u64,
    fail_at: Option<u64>,
}

impl Swirl {
    fn new(fail_at: Option<u64>) -> Self {
        Self {
            a: 0.7,
            grad_a: 0.0,
            forward_steps: 0,
            fail_at,
        }
    }
}

fn coupling(x: &[f64], i: usize) -> f64 {
    x[i] + x[(i + 1) % x.len()]
}

impl Problem for Swirl {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;

    fn forward(&mut self, _: Step, x: &mut Vec<f64>) -> Result<(), UserError> {
        self.forward_steps += 1;
        if self.fail_at == Some(self.forward_steps) {
            return Err("simulated crash".into());
        }
        let old = x.clone();
        for (i, xi) in x.iter_mut().enumerate() {
            *xi += 0.1 * self.a * coupling(&old, i).sin();
        }
        Ok(())
    }

    fn adjoint(&mut self, _: Step, x: &Vec<f64>, l: &mut Vec<f64>) -> Result<(), UserError> {
        let n = x.len();
        let mut next = l.clone();
        for i in 0..n {
            let c = coupling(x, i).cos();
            self.grad_a += l[i] * 0.1 * coupling(x, i).sin();
            next[i] += l[i] * 0.1 * self.a * c;
            next[(i + 1) % n] += l[i] * 0.1 * self.a * c;
        }
        *l = next;
        Ok(())
    }
}

impl ResumableProblem for Swirl {
    type Accumulators = f64;
    fn accumulators(&self) -> f64 {
        self.grad_a
    }
    fn restore_accumulators(&mut self, grad_a: f64) {
        self.grad_a = grad_a;
    }
}

fn schedule() -> HierarchicalRevolve {
    let levels = [
        LevelSpec::new(StorageLevel::Device, 2, 0.01, 0.01),
        LevelSpec::new(StorageLevel::Ram, 2, 0.2, 0.2),
        LevelSpec::new(StorageLevel::Disk, 4, 1.0, 1.0),
    ];
    HierarchicalRevolve::new(STEPS, &levels, Default::default()).unwrap()
}

fn initial() -> Vec<f64> {
    vec![0.3, -0.2, 0.9, 0.05]
}

fn terminal(x: &[f64]) -> Result<Vec<f64>, UserError> {
    Ok(x.iter().map(|v| 2.0 * v).collect())
}

fn bits(adjoint: &[f64], grad_a: f64) -> Vec<u64> {
    adjoint
        .iter()
        .chain([&grad_a])
        .map(|v| v.to_bits())
        .collect()
}

/// The gradient of a run without journal or crash.
fn uninterrupted() -> Vec<u64> {
    let mut problem = Swirl::new(None);
    let out = Executor::in_memory()
        .with_device(MemoryStore::new())
        .run(&mut problem, schedule(), initial(), |x| terminal(x))
        .unwrap();
    bits(&out.adjoint, problem.grad_a)
}

fn journal(dir: &std::path::Path) -> Journal {
    Journal::for_schedule(dir, "hrevolve 60 device=2 ram=2 disk=4", "swirl a=0.7")
        .commit_every_actions(1)
}

/// A DEVICE store (in memory, with only the four required methods) that
/// counts the snapshots saved before the run's first step: those a resumed
/// run puts back from its journal.
struct Watched {
    held: BTreeMap<Step, Checkpoint<Vec<f64>>>,
    started: Rc<Cell<bool>>,
    restored: Rc<Cell<usize>>,
}

impl SnapshotStore<Checkpoint<Vec<f64>>> for Watched {
    fn save(&mut self, step: Step, value: Checkpoint<Vec<f64>>) -> Result<(), StorageError> {
        if !self.started.get() {
            self.restored.set(self.restored.get() + 1);
        }
        match self.held.insert(step, value) {
            None => Ok(()),
            Some(_) => Err(StorageError::AlreadyStored { step }),
        }
    }
    fn load(&mut self, step: Step) -> Result<Checkpoint<Vec<f64>>, StorageError> {
        self.held
            .get(&step)
            .cloned()
            .ok_or(StorageError::Missing { step, path: None })
    }
    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        self.held
            .remove(&step)
            .map(drop)
            .ok_or(StorageError::Missing { step, path: None })
    }
    fn held_steps(&self) -> Vec<Step> {
        self.held.keys().copied().collect()
    }
}

/// Crashes a run at its `fail_at`-th forward step in `dir`.
fn crash(dir: &std::path::Path, fail_at: u64) {
    let crashed = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir).unwrap())
        .with_device(MemoryStore::new())
        .run_resumable_with(
            &mut Swirl::new(Some(fail_at)),
            &journal(dir),
            schedule(),
            initial(),
            |x| terminal(x),
        );
    assert!(
        matches!(crashed, Err(ExecutorError::User { .. })),
        "fail_at {fail_at}: {crashed:?}"
    );
}

/// Resumes the run in `dir` to its end; returns its gradient and how many
/// DEVICE snapshots the journal put back.
fn resume(dir: &std::path::Path) -> (Vec<u64>, usize) {
    let started = Rc::new(Cell::new(false));
    let restored = Rc::new(Cell::new(0));
    let device = Watched {
        held: BTreeMap::new(),
        started: started.clone(),
        restored: restored.clone(),
    };
    let mut problem = Swirl::new(None);
    let out = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir).unwrap())
        .with_device(device)
        .with_progress(|_| started.set(true))
        .run_resumable_with(&mut problem, &journal(dir), schedule(), initial(), |x| {
            terminal(x)
        })
        .unwrap();
    assert!(!journal(dir).exists());
    (bits(&out.adjoint, problem.grad_a), restored.get())
}

/// Crash points (forward steps; the whole run does 132), some while the
/// DEVICE store holds snapshots that the journal must keep.
const CRASHES: [u64; 8] = [5, 23, 41, 58, 71, 90, 112, 126];

#[test]
fn a_crashed_three_level_run_resumes_with_its_device_snapshots() {
    let want = uninterrupted();
    let mut resumed_with_device_snapshots = 0;
    for fail_at in CRASHES {
        let dir = tempfile::tempdir().unwrap();
        crash(dir.path(), fail_at);
        let (got, restored) = resume(dir.path());
        assert_eq!(got, want, "fail_at {fail_at}");
        resumed_with_device_snapshots += usize::from(restored > 0);
    }
    // Not a test that cannot fail: several crashes left DEVICE snapshots
    // that only the journal could put back.
    assert!(
        resumed_with_device_snapshots >= 3,
        "{resumed_with_device_snapshots}"
    );
}

#[test]
fn resuming_refuses_a_level_store_that_is_not_empty_or_missing() {
    // A crash after which the journal holds DEVICE snapshots.
    let fail_at = CRASHES
        .into_iter()
        .find(|&fail_at| {
            let dir = tempfile::tempdir().unwrap();
            crash(dir.path(), fail_at);
            resume(dir.path()).1 > 0
        })
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    crash(dir.path(), fail_at);

    let mut busy = MemoryStore::new();
    busy.save(
        0,
        Checkpoint {
            ics: Some(vec![0.0]),
            deps: vec![],
        },
    )
    .unwrap();
    let err = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir.path()).unwrap())
        .with_device(busy)
        .run_resumable_with(
            &mut Swirl::new(None),
            &journal(dir.path()),
            schedule(),
            initial(),
            |x| terminal(x),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            ExecutorError::Journal(JournalError::StoreNotEmpty {
                level: StorageLevel::Device,
                held: 1,
                ..
            })
        ),
        "{err}"
    );

    // The journal holds DEVICE snapshots: a run without a DEVICE store
    // cannot take them back.
    let err = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir.path()).unwrap())
        .run_resumable_with(
            &mut Swirl::new(None),
            &journal(dir.path()),
            schedule(),
            initial(),
            |x| terminal(x),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            ExecutorError::Journal(JournalError::WrongStore {
                level: StorageLevel::Device,
                ..
            })
        ),
        "{err}"
    );

    // A journal made for a named schedule has no spec to build from.
    let err = Executor::new(MemoryStore::new(), DiskStore::in_dir(dir.path()).unwrap())
        .run_resumable(
            &mut Swirl::new(None),
            &journal(dir.path()),
            initial(),
            |x| terminal(x),
        )
        .unwrap_err();
    assert!(
        matches!(err, ExecutorError::Journal(JournalError::NoSpec { .. })),
        "{err}"
    );
}

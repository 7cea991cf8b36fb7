//! Building an executor: one store per stored level, a progress report;
//! and reaching the store of a level.

use super::{Executor, ExecutorError, LevelStore, Progress};
use crate::storage::{Checkpoint, Footprint, MemoryStore, SnapshotStore};
use crate::{PerLevel, StorageLevel};

impl<'p, S: Clone + Footprint + 'p> Executor<'p, S> {
    /// An executor whose RAM and DISK levels both live in unlimited memory
    /// stores.
    pub fn in_memory() -> Self {
        Self::new(MemoryStore::new(), MemoryStore::new())
    }
}

impl<'p, S> Executor<'p, S>
where
    S: Clone + Footprint + 'p,
{
    /// An executor storing RAM snapshots in `ram` and DISK snapshots in
    /// `disk` (and none on DEVICE: see [`with_device`](Self::with_device)).
    pub fn new(
        ram: impl SnapshotStore<Checkpoint<S>> + 'p,
        disk: impl SnapshotStore<Checkpoint<S>> + 'p,
    ) -> Self {
        let mut stores = PerLevel::default();
        stores[StorageLevel::Ram] = Some(Box::new(ram) as LevelStore<'p, S>);
        stores[StorageLevel::Disk] = Some(Box::new(disk) as LevelStore<'p, S>);
        Self {
            stores,
            progress: None,
        }
    }

    /// Serves `level` with `store`, replacing the store it had. Errors
    /// ([`ExecutorError::NotAStoredLevel`]) for WORK and NONE, which hold no
    /// checkpoints.
    ///
    /// ```
    /// use checkpointing::{DiskStore, Executor, ExecutorError, MemoryStore, StorageLevel};
    /// let executor = Executor::<f64>::in_memory()
    ///     .with_store(StorageLevel::Disk, DiskStore::temporary().unwrap())
    ///     .unwrap();
    /// assert!(executor.store(StorageLevel::Disk).is_some());
    /// assert!(matches!(
    ///     executor.with_store(StorageLevel::Work, MemoryStore::new()),
    ///     Err(ExecutorError::NotAStoredLevel(StorageLevel::Work))
    /// ));
    /// ```
    pub fn with_store(
        mut self,
        level: StorageLevel,
        store: impl SnapshotStore<Checkpoint<S>> + 'p,
    ) -> Result<Self, ExecutorError> {
        match self.stores.get_mut(level) {
            Some(slot) => *slot = Some(Box::new(store)),
            None => return Err(ExecutorError::NotAStoredLevel(level)),
        }
        Ok(self)
    }

    /// Adds a store for the DEVICE level (accelerator memory), which
    /// three-level schedules ([`HierarchicalRevolve`](crate::HierarchicalRevolve))
    /// use besides RAM and DISK: [`with_store`](Self::with_store) for
    /// DEVICE. Without one, an action on DEVICE is an
    /// [`ExecutorError::Inconsistent`] error.
    ///
    /// ```
    /// use checkpointing::{Executor, FnProblem, HierarchicalRevolve, LevelSpec, MemoryStore, StorageLevel};
    /// let mut problem = FnProblem::new(|_, x: &mut f64| *x *= 2.0, |_, _: &f64, l: &mut f64| *l *= 2.0);
    /// let mut executor = Executor::in_memory().with_device(MemoryStore::new());
    /// let schedule = HierarchicalRevolve::new(12, &[
    ///     LevelSpec::new(StorageLevel::Device, 1, 0.0, 0.0),
    ///     LevelSpec::new(StorageLevel::Ram, 1, 1.0, 1.0),
    ///     LevelSpec::new(StorageLevel::Disk, 2, 4.0, 4.0),
    /// ], Default::default()).unwrap();
    /// let out = executor.run(&mut problem, schedule, 1.0, |_| Ok(1.0)).unwrap();
    /// assert_eq!(out.adjoint, 4096.0);
    /// assert!(out.stats.levels[StorageLevel::Device].writes > 0);
    /// ```
    pub fn with_device(mut self, store: impl SnapshotStore<Checkpoint<S>> + 'p) -> Self {
        self.stores[StorageLevel::Device] = Some(Box::new(store));
        self
    }

    /// The store of a stored level, `None` for WORK, NONE and a level
    /// without a store.
    pub(super) fn level_store(
        &mut self,
        level: StorageLevel,
    ) -> Option<&mut dyn SnapshotStore<Checkpoint<S>>> {
        match self.stores.get_mut(level)? {
            Some(store) => Some(store.as_mut()),
            None => None,
        }
    }

    /// The store serving `level`, if any (e.g. to read its
    /// [`stats`](SnapshotStore::stats) between runs). To get a store's
    /// concrete type back, lend it (`Executor::new(&mut ram, &mut disk)`)
    /// instead of giving it.
    ///
    /// ```
    /// use checkpointing::{Executor, FnProblem, Revolve, StorageLevel};
    /// let mut problem = FnProblem::new(|_, x: &mut f64| *x += 1.0, |_, _: &f64, _: &mut f64| {});
    /// let mut executor = Executor::in_memory();
    /// executor.run(&mut problem, Revolve::new(8, 2).unwrap(), 0.0, |_| Ok(1.0)).unwrap();
    /// let ram = executor.store(StorageLevel::Ram).unwrap();
    /// assert!(ram.is_empty() && ram.stats().writes > 0);
    /// assert!(executor.store(StorageLevel::Device).is_none());
    /// ```
    pub fn store(&self, level: StorageLevel) -> Option<&dyn SnapshotStore<Checkpoint<S>>> {
        match self.stores.get(level)? {
            Some(store) => Some(store.as_ref()),
            None => None,
        }
    }

    /// Calls `report` after every forward and adjoint step.
    pub fn with_progress(mut self, report: impl FnMut(Progress) + 'p) -> Self {
        self.progress = Some(Box::new(report));
        self
    }
}

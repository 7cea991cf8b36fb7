//! Which snapshot lives under which name on a durable medium (files,
//! datasets), with the deferred removals of journaled runs.

use std::collections::HashMap;
use std::path::PathBuf;

use super::{DurableStore, StorageError, StoreStats};
use crate::action::Step;

/// The bookkeeping of a store that keeps each snapshot under a name on a
/// medium that outlives the process (a file in a directory, a dataset in an
/// HDF5 file): names, sizes, and the removals a journaled run defers (see
/// [`DurableStore`](super::DurableStore)).
///
/// A snapshot of step `n` is named `{stem}{n:020}{ext}`; while the removal
/// of an older snapshot of the same step is pending, a new one is named
/// `{stem}{n:020}.{k}{ext}` with a unique `k`, so that the data a journal
/// still names is never overwritten.
///
/// ```
/// use checkpointing::SnapshotNames;
/// let mut names = SnapshotNames::new("snapshot-", ".ckpt");
/// names.defer_removals();
/// let first = names.new_name(3);
/// names.insert(3, first.clone(), 100);
/// assert_eq!(names.remove(3).unwrap(), None); // deferred: delete nothing yet
/// let second = names.new_name(3);
/// assert_ne!(first, second);
/// assert_eq!(names.parse(&second).map(|(step, _)| step), Some(3));
/// assert_eq!(names.take_pending(), vec![(3, first)]);
/// ```
#[derive(Debug, Clone)]
pub struct SnapshotNames {
    stem: String,
    ext: String,
    /// Name and size in bytes of each snapshot held.
    held: HashMap<Step, (String, u64)>,
    bytes: u64,
    /// Removed snapshots whose data is still on the medium.
    deferred: Option<Vec<(Step, String)>>,
    generation: u64,
}

impl SnapshotNames {
    /// Names `{stem}{step:020}{ext}`.
    pub fn new(stem: impl Into<String>, ext: impl Into<String>) -> Self {
        Self {
            stem: stem.into(),
            ext: ext.into(),
            held: HashMap::new(),
            bytes: 0,
            deferred: None,
            generation: 0,
        }
    }

    /// The name `step`'s snapshot has without a generation.
    pub fn default_name(&self, step: Step) -> String {
        format!("{}{step:020}{}", self.stem, self.ext)
    }

    /// The name of `step`'s snapshot if held, else the one a save would use.
    pub fn name_of(&self, step: Step) -> String {
        match self.held.get(&step) {
            Some((name, _)) => name.clone(),
            None => self.default_name(step),
        }
    }

    /// A name for a new snapshot of `step`, never one whose removal is
    /// pending.
    pub fn new_name(&mut self, step: Step) -> String {
        let name = self.default_name(step);
        match &self.deferred {
            Some(pending) if pending.iter().any(|(_, held)| *held == name) => {
                self.generation += 1;
                format!("{}{step:020}.{}{}", self.stem, self.generation, self.ext)
            }
            _ => name,
        }
    }

    /// The step and generation (0 for none) a name of this scheme stands
    /// for; `None` for other names.
    pub fn parse(&self, name: &str) -> Option<(Step, u64)> {
        let rest = name.strip_prefix(&self.stem)?.strip_suffix(&self.ext)?;
        let (step, generation) = rest.split_once('.').unwrap_or((rest, "0"));
        Some((step.parse().ok()?, generation.parse().ok()?))
    }

    /// Records `step` as held under `name`, `size` bytes.
    pub fn insert(&mut self, step: Step, name: String, size: u64) {
        if let Some((_, old)) = self.held.insert(step, (name, size)) {
            self.bytes -= old;
        }
        self.bytes += size;
    }

    /// Bytes of the snapshot of `step` (0 if it is not held).
    pub fn size_of(&self, step: Step) -> u64 {
        self.held.get(&step).map_or(0, |(_, size)| *size)
    }

    /// Whether `step` is held.
    pub fn contains(&self, step: Step) -> bool {
        self.held.contains_key(&step)
    }

    /// Snapshots held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The steps held, in increasing order.
    pub fn steps(&self) -> Vec<Step> {
        let mut steps: Vec<Step> = self.held.keys().copied().collect();
        steps.sort_unstable();
        steps
    }

    /// Forgets `step`. Returns the name whose data to delete now, or `None`
    /// when removals are deferred (the name is then pending).
    pub fn remove(&mut self, step: Step) -> Result<Option<String>, StorageError> {
        let (name, size) = self
            .held
            .remove(&step)
            .ok_or(StorageError::Missing { step, path: None })?;
        self.bytes -= size;
        Ok(match &mut self.deferred {
            Some(pending) => {
                pending.push((step, name));
                None
            }
            None => Some(name),
        })
    }

    /// From now on, removals are deferred.
    pub fn defer_removals(&mut self) {
        self.deferred.get_or_insert_with(Vec::new);
    }

    /// The snapshots (step and name) whose removal is pending, now to be
    /// deleted.
    pub fn take_pending(&mut self) -> Vec<(Step, String)> {
        self.deferred
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Whether removals are deferred ([`defer_removals`](Self::defer_removals)
    /// was called: a journal records the run).
    pub fn defers_removals(&self) -> bool {
        self.deferred.is_some()
    }

    /// Whether removals are pending.
    pub fn has_pending(&self) -> bool {
        self.deferred.as_ref().is_some_and(|p| !p.is_empty())
    }

    /// Each held step and its name, by increasing step.
    pub fn manifest(&self) -> Vec<(Step, String)> {
        let mut entries: Vec<(Step, String)> = self
            .held
            .iter()
            .map(|(&step, (name, _))| (step, name.clone()))
            .collect();
        entries.sort_unstable();
        entries
    }

    /// Holds exactly `manifest`, given the `(name, size)` of every snapshot
    /// found on the medium; returns the found ones to delete. Errors if an
    /// entry of `manifest` was not found (`missing` makes its error).
    pub fn adopt(
        &mut self,
        found: &[(String, u64)],
        manifest: &[(Step, String)],
        missing: impl Fn(Step, &str) -> StorageError,
    ) -> Result<Vec<(Step, String)>, StorageError> {
        let mut held = HashMap::new();
        for (step, name) in manifest {
            let (_, size) = found
                .iter()
                .find(|(n, _)| n == name)
                .ok_or_else(|| missing(*step, name))?;
            held.insert(*step, (name.clone(), *size));
        }
        let mut delete = Vec::new();
        for (name, _) in found {
            if let Some((step, generation)) = self.parse(name) {
                self.generation = self.generation.max(generation);
                if !manifest.iter().any(|(_, kept)| kept == name) {
                    delete.push((step, name.clone()));
                }
            }
        }
        self.bytes = held.values().map(|(_, size)| size).sum();
        self.held = held;
        Ok(delete)
    }
}

/// A store that keeps each snapshot under a name ([`SnapshotNames`]) on a
/// medium that outlives the process: files in a directory
/// ([`DiskStore`](crate::DiskStore)), datasets in an HDF5 file
/// (`checkpointing_store::Hdf5Store`). Implementing it makes the store a
/// [`DurableStore`]: deferring, completing and adopting removals are
/// written once, in that impl, from the four things a medium differs in.
pub trait NamedStore {
    /// The names of the snapshots it holds and the removals it defers.
    fn names(&mut self) -> &mut SnapshotNames;
    /// Its counters; [`DurableStore::adopt`] records what it then holds.
    fn stats_mut(&mut self) -> &mut StoreStats;
    /// Every snapshot of this store on the medium now, by name and size in
    /// bytes (what [`DurableStore::adopt`] keeps or deletes). A store may
    /// clear debris here, such as a write cut short.
    fn list_named(&mut self) -> Result<Vec<(String, u64)>, StorageError>;
    /// Deletes the data named `name` (a snapshot of `step`) from the medium.
    fn delete_named(&mut self, step: Step, name: &str) -> Result<(), StorageError>;
    /// Where the snapshot named `name` is: the path a
    /// [`StorageError::Missing`] names.
    fn location(&self, name: &str) -> PathBuf;
}

impl<X: NamedStore> DurableStore for X {
    fn defer_removals(&mut self) {
        self.names().defer_removals();
    }

    fn complete_removals(&mut self) -> Result<(), StorageError> {
        for (step, name) in self.names().take_pending() {
            self.delete_named(step, &name)?;
        }
        Ok(())
    }

    fn has_pending_removals(&mut self) -> bool {
        self.names().has_pending()
    }

    fn manifest(&mut self) -> Vec<(Step, String)> {
        self.names().manifest()
    }

    fn adopt(&mut self, manifest: &[(Step, String)]) -> Result<(), StorageError> {
        let found = self.list_named()?;
        let locations: HashMap<&str, PathBuf> = manifest
            .iter()
            .map(|(_, name)| (name.as_str(), self.location(name)))
            .collect();
        let missing = |step, name: &str| StorageError::Missing {
            step,
            path: locations.get(name).cloned(),
        };
        for (step, name) in self.names().adopt(&found, manifest, missing)? {
            self.delete_named(step, &name)?;
        }
        let (held, bytes) = (self.names().len(), self.names().bytes());
        self.stats_mut().record_held(held, bytes);
        Ok(())
    }
}

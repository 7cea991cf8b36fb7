//! Snapshots in RAM.

use std::collections::HashMap;

use super::{Footprint, SnapshotStore, StorageError, StoreStats};
use crate::action::Step;

/// Snapshots kept in memory, with an optional budget on their number and on
/// their bytes (measured with [`Footprint`]).
///
/// ```
/// use checkpointing::{MemoryStore, SnapshotStore, StorageError};
/// let mut store = MemoryStore::new().with_max_snapshots(1);
/// store.save(0, vec![0.0_f64; 4]).unwrap();
/// assert!(matches!(store.save(3, vec![0.0; 4]), Err(StorageError::BudgetExceeded { step: 3, .. })));
/// assert_eq!(store.resident_bytes(), (4 * 8 + std::mem::size_of::<Vec<f64>>()) as u64);
/// ```
#[derive(Debug, Clone)]
pub struct MemoryStore<T> {
    values: HashMap<Step, (T, u64)>,
    max_snapshots: Option<usize>,
    max_bytes: Option<u64>,
    bytes: u64,
    stats: StoreStats,
}

impl<T> Default for MemoryStore<T> {
    fn default() -> Self {
        Self {
            values: HashMap::new(),
            max_snapshots: None,
            max_bytes: None,
            bytes: 0,
            stats: StoreStats::default(),
        }
    }
}

impl<T> MemoryStore<T> {
    /// An unlimited memory store.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` snapshots at once.
    pub fn with_max_snapshots(mut self, n: usize) -> Self {
        self.max_snapshots = Some(n);
        self
    }

    /// At most `bytes` bytes of snapshots at once.
    pub fn with_max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = Some(bytes);
        self
    }

    fn missing(step: Step) -> StorageError {
        StorageError::Missing { step, path: None }
    }
}

impl<T: Clone + Footprint> SnapshotStore<T> for MemoryStore<T> {
    fn save(&mut self, step: Step, value: T) -> Result<(), StorageError> {
        if self.values.contains_key(&step) {
            return Err(StorageError::AlreadyStored { step });
        }
        if let Some(max) = self.max_snapshots.filter(|&m| self.values.len() >= m) {
            return Err(StorageError::BudgetExceeded {
                step,
                what: format!("{max} snapshots already held"),
            });
        }
        let size = value.footprint() as u64;
        if let Some(max) = self.max_bytes.filter(|&m| self.bytes + size > m) {
            return Err(StorageError::BudgetExceeded {
                step,
                what: format!("{} + {size} bytes over {max}", self.bytes),
            });
        }
        self.values.insert(step, (value, size));
        self.bytes += size;
        self.stats.writes += 1;
        self.stats.bytes_written += size;
        self.stats.record_held(self.values.len(), self.bytes);
        Ok(())
    }

    fn load(&mut self, step: Step) -> Result<T, StorageError> {
        let (value, size) = self.values.get(&step).ok_or_else(|| Self::missing(step))?;
        self.stats.reads += 1;
        self.stats.bytes_read += size;
        Ok(value.clone())
    }

    fn load_into(&mut self, step: Step, dest: &mut T) -> Result<(), StorageError> {
        let (value, size) = self.values.get(&step).ok_or_else(|| Self::missing(step))?;
        self.stats.reads += 1;
        self.stats.bytes_read += size;
        dest.clone_from(value);
        Ok(())
    }

    fn take(&mut self, step: Step) -> Result<T, StorageError> {
        let (value, size) = self
            .values
            .remove(&step)
            .ok_or_else(|| Self::missing(step))?;
        self.bytes -= size;
        self.stats.reads += 1;
        self.stats.bytes_read += size;
        Ok(value)
    }

    fn remove(&mut self, step: Step) -> Result<(), StorageError> {
        let (_, size) = self
            .values
            .remove(&step)
            .ok_or_else(|| Self::missing(step))?;
        self.bytes -= size;
        Ok(())
    }

    fn contains(&self, step: Step) -> bool {
        self.values.contains_key(&step)
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    fn held_steps(&self) -> Vec<Step> {
        let mut steps: Vec<Step> = self.values.keys().copied().collect();
        steps.sort_unstable();
        steps
    }

    fn resident_bytes(&self) -> u64 {
        self.bytes
    }

    fn stats(&self) -> StoreStats {
        self.stats
    }
}

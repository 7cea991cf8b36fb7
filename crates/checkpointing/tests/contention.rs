//! The probe measures what a background store's I/O costs the computation
//! beside it (`LevelMeasurement::contention`) and hands it to the planner:
//! a store that does its work only once the caller waits (as a writer
//! thread does on a core the steps keep busy) gives near 1; a store whose
//! work runs on threads of its own while the steps run gives near 0. The
//! steps and the I/O here sleep instead of computing, so that the figures
//! do not depend on how many cores the machine has.

use std::collections::HashMap;
use std::thread::{sleep, JoinHandle};
use std::time::Duration;

use checkpointing::plan::{BackgroundIo, Bytes};
use checkpointing::{
    Checkpoint, Executor, LevelMeasurement, MemoryStore, PlanBudget, Problem, SnapshotStore, Step,
    StorageError, StorageLevel, StoreStats, UserError,
};

type Snap = Checkpoint<Vec<f64>>;

/// How long one write or read of the fake stores takes.
const IO: Duration = Duration::from_millis(10);

/// A step that takes 2 ms without computing.
#[derive(Clone)]
struct Napping;

impl Problem for Napping {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;
    fn forward(&mut self, _: Step, x: &mut Vec<f64>) -> Result<(), UserError> {
        sleep(Duration::from_millis(2));
        x.iter_mut().for_each(|v| *v += 1.0);
        Ok(())
    }
    fn adjoint(&mut self, _: Step, _: &Vec<f64>, _: &mut Vec<f64>) -> Result<(), UserError> {
        Ok(())
    }
}

/// What the two fakes share: the snapshots, in memory.
macro_rules! held_in {
    ($field:ident) => {
        fn remove(&mut self, step: Step) -> Result<(), StorageError> {
            self.$field.remove(step)
        }
        fn held_steps(&self) -> Vec<Step> {
            self.$field.held_steps()
        }
        fn stats(&self) -> StoreStats {
            self.$field.stats()
        }
        fn background_io(&self, _: u64) -> Option<BackgroundIo> {
            Some(BackgroundIo {
                writes_in_flight: 1,
                staged_snapshots: 1,
            })
        }
    };
}

/// A "background" store whose writes happen in `flush` and whose reads
/// happen when taken: its work waits until the caller does.
struct Deferred {
    inner: MemoryStore<Snap>,
    unwritten: u32,
}

impl SnapshotStore<Snap> for Deferred {
    fn save(&mut self, step: Step, value: Snap) -> Result<(), StorageError> {
        self.unwritten += 1;
        self.inner.save(step, value)
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        sleep(IO * std::mem::take(&mut self.unwritten));
        Ok(())
    }
    fn load(&mut self, step: Step) -> Result<Snap, StorageError> {
        sleep(IO);
        self.inner.load(step)
    }
    fn take(&mut self, step: Step) -> Result<Snap, StorageError> {
        sleep(IO);
        self.inner.take(step)
    }
    held_in!(inner);
}

/// A background store whose writes and announced reads run on threads of
/// their own.
struct Threaded {
    inner: MemoryStore<Snap>,
    writes: Vec<JoinHandle<()>>,
    reads: HashMap<Step, JoinHandle<()>>,
}

impl Threaded {
    fn io() -> JoinHandle<()> {
        std::thread::spawn(|| sleep(IO))
    }
}

impl SnapshotStore<Snap> for Threaded {
    fn save(&mut self, step: Step, value: Snap) -> Result<(), StorageError> {
        self.writes.push(Self::io());
        self.inner.save(step, value)
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        self.writes.drain(..).for_each(|w| w.join().unwrap());
        Ok(())
    }
    fn prefetch(&mut self, step: Step) {
        self.reads.entry(step).or_insert_with(Self::io);
    }
    fn load(&mut self, step: Step) -> Result<Snap, StorageError> {
        self.reads
            .remove(&step)
            .unwrap_or_else(Self::io)
            .join()
            .unwrap();
        self.inner.load(step)
    }
    fn take(&mut self, step: Step) -> Result<Snap, StorageError> {
        self.reads
            .remove(&step)
            .unwrap_or_else(Self::io)
            .join()
            .unwrap();
        self.inner.take(step)
    }
    held_in!(inner);
}

/// Measures with `disk` as the DISK store: its measurement and the
/// contention the plan input's disk level carries.
fn measure_disk(disk: impl SnapshotStore<Snap>) -> (LevelMeasurement, f64) {
    let budget = PlanBudget::new(100, Bytes(1 << 20))
        .with_disk(Bytes(1 << 30))
        .with_probe_steps(3);
    let initial = vec![0.5; 100];
    let mut executor = Executor::new(MemoryStore::new(), disk);
    let m = executor
        .measure(&Napping, &budget, &initial, |x| Ok(x.clone()))
        .unwrap();
    let disk = m.levels[StorageLevel::Disk].unwrap();
    let input = m.plan_input(&budget);
    (disk, input.levels[StorageLevel::Disk].unwrap().contention)
}

#[test]
fn io_that_waits_for_the_caller_is_contended_in_full() {
    let (disk, planned) = measure_disk(Deferred {
        inner: MemoryStore::new(),
        unwritten: 0,
    });
    assert!(disk.contention > 0.7, "{disk:?}");
    assert_eq!(planned, disk.contention);
    // The write lane's time excludes the save's own return.
    assert!(disk.lane_write_seconds() >= IO.as_secs_f64(), "{disk:?}");
    assert!(disk.lane_write_seconds() <= disk.write_seconds, "{disk:?}");
}

#[test]
fn io_on_threads_of_its_own_is_hardly_contended() {
    let (disk, planned) = measure_disk(Threaded {
        inner: MemoryStore::new(),
        writes: Vec::new(),
        reads: HashMap::new(),
    });
    assert!(disk.contention < 0.3, "{disk:?}");
    assert_eq!(planned, disk.contention);
}

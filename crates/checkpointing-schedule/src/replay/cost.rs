//! [`Cost`]: what a replayed action stream costs, per level and in total.

use serde::Serialize;

use crate::action::Step;
use crate::levels::PerLevel;
use crate::schedule::Costs;
use crate::StorageLevel;

/// Traffic and occupancy of one storage level (DEVICE, RAM or DISK): a
/// total, one per level in [`Cost::levels`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LevelCost {
    /// Checkpoints written (forward restart data or adjoint dependencies).
    pub writes: u64,
    /// Checkpoints read (copied or moved out).
    pub reads: u64,
    /// Checkpoints deleted without being read (`Move` to NONE).
    pub deletes: u64,
    /// Most checkpoints held at once.
    pub peak: u64,
}

/// What a replayed action stream costs.
///
/// A total, counted by [`Replay`](crate::Replay); the prices it is weighed
/// with are [`Costs`] ([`Cost::weighted`]). The crate's root page has a
/// glossary of the `Cost*` types.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// Number of forward steps of the loop.
    pub max_n: Step,
    /// Actions replayed (up to and including the first `EndReverse`).
    pub actions: u64,
    /// Forward steps advanced in total.
    pub forward_steps: u64,
    /// Forward steps beyond the first `max_n`: recomputation.
    pub recomputed_steps: u64,
    /// Forward steps among `forward_steps` whose output is never read: the
    /// last step of a forward that only produces a reversal's input
    /// ([`ForwardOutput`](crate::action::ForwardOutput)). The executor does
    /// not run them; it runs [`Cost::executed_forward_steps`].
    pub skippable_forward_steps: u64,
    /// Adjoint steps advanced.
    pub adjoint_steps: u64,
    /// Traffic and occupancy of each stored level (DEVICE, RAM, DISK): zero
    /// for a level the schedule does not use. In JSON, one field per level
    /// (`"ram"`, `"disk"`, `"device"`).
    #[serde(flatten)]
    pub levels: PerLevel<LevelCost>,
    /// Most steps whose adjoint dependencies were held in WORK at once.
    pub peak_work_steps: u64,
}

impl Cost {
    /// Whether the replayed schedule stayed within `snapshots` per stored
    /// level, counting the adjoint dependencies held in WORK beyond one step
    /// as RAM ([`Cost::ram_states`]).
    ///
    /// ```
    /// use checkpointing_schedule::{PerLevel, Replay, Revolve, StorageLevel};
    /// let cost = Replay::new(50).run(Revolve::new(50, 3).unwrap()).unwrap();
    /// let ram = |n| PerLevel::from_fn(|level| if level == StorageLevel::Ram { n } else { 0 });
    /// assert!(cost.fits_in(&ram(3)) && !cost.fits_in(&ram(2)));
    /// ```
    pub fn fits_in(&self, snapshots: &PerLevel<u64>) -> bool {
        self.levels.iter().all(|(level, cost)| {
            let held = match level {
                StorageLevel::Ram => self.ram_states(),
                _ => cost.peak,
            };
            held <= snapshots[level]
        })
    }

    /// Whether the replayed schedule stayed within `ram` RAM snapshots and
    /// `disk` disk snapshots, counting the adjoint dependencies held in WORK
    /// beyond one step as RAM. Unlike [`Cost::fits_in`], it ignores DEVICE.
    #[deprecated(note = "use `fits_in(&PerLevel)`, which checks every stored level")]
    pub fn fits(&self, ram: u64, disk: u64) -> bool {
        self.ram_states() <= ram && self.levels[StorageLevel::Disk].peak <= disk
    }

    /// Forward steps an executor that skips the
    /// [`skippable_forward_steps`](Cost::skippable_forward_steps) runs:
    /// what the planner prices and the executor's
    /// `ExecutionStats::forward_steps` counts.
    ///
    /// ```
    /// use checkpointing_schedule::{Replay, Revolve};
    /// // Every state fits: the reversals' forwards are all dead steps, and
    /// // the run advances each step once, as store-all does.
    /// let cost = Replay::new(10).run(Revolve::new(10, 10).unwrap()).unwrap();
    /// assert_eq!(cost.forward_steps, 19);
    /// assert_eq!(cost.executed_forward_steps(), 10);
    /// ```
    pub fn executed_forward_steps(&self) -> u64 {
        self.forward_steps - self.skippable_forward_steps
    }

    /// Steps whose adjoint dependencies were held in WORK beyond the one
    /// step every adjoint needs: states that take memory as RAM snapshots
    /// do.
    ///
    /// ```
    /// use checkpointing_schedule::{Periodic, Replay};
    /// let cost = Replay::new(12).run(Periodic::new(12, 4).unwrap()).unwrap();
    /// assert_eq!(cost.extra_work_steps(), cost.peak_work_steps - 1);
    /// ```
    pub fn extra_work_steps(&self) -> u64 {
        self.peak_work_steps.saturating_sub(1)
    }

    /// States held in RAM at the peak, as [`Cost::fits_in`] counts them: RAM
    /// snapshots plus [`Cost::extra_work_steps`].
    ///
    /// ```
    /// use checkpointing_schedule::{Replay, Revolve};
    /// let cost = Replay::new(50).run(Revolve::new(50, 3).unwrap()).unwrap();
    /// assert_eq!(cost.ram_states(), 3);
    /// ```
    pub fn ram_states(&self) -> u64 {
        self.levels[StorageLevel::Ram]
            .peak
            .saturating_add(self.extra_work_steps())
    }

    /// `uf·forward + ub·adjoint + wd·disk writes + rd·disk reads`: the
    /// H-Revolve cost model (Herrmann & Pallez, ACM TOMS 46(2), 2020), with
    /// RAM traffic free.
    ///
    /// ```
    /// use checkpointing_schedule::schedule::Costs;
    /// use checkpointing_schedule::{Replay, Revolve};
    /// let cost = Replay::new(4).run(Revolve::new(4, 2).unwrap()).unwrap();
    /// assert_eq!(cost.weighted(&Costs::default()), 8.0 + 4.0);
    /// ```
    pub fn weighted(&self, costs: &Costs) -> f64 {
        let disk = &self.levels[StorageLevel::Disk];
        costs.uf * self.forward_steps as f64
            + costs.ub * self.adjoint_steps as f64
            + costs.wd * disk.writes as f64
            + costs.rd * disk.reads as f64
    }

    /// The traffic and occupancy of a stored level (DEVICE, RAM or DISK);
    /// `None` for WORK and NONE.
    ///
    /// ```
    /// use checkpointing_schedule::{Replay, Revolve, StorageLevel};
    /// let cost = Replay::new(10).run(Revolve::new(10, 2).unwrap()).unwrap();
    /// assert_eq!(cost.level(StorageLevel::Ram).unwrap().peak, 2);
    /// assert!(cost.level(StorageLevel::Work).is_none());
    /// ```
    pub fn level(&self, level: StorageLevel) -> Option<&LevelCost> {
        self.levels.get(level)
    }
}

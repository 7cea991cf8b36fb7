//! Step counts of a [`ScheduleSpec`] from closed forms, without replaying
//! its actions: an answer in microseconds at any number of steps where the
//! replay would stream `O(n log n)` actions or more.
//!
//! - Revolve with dyadic costs (Griewank & Walther 2000, eq. (3)): with `s`
//!   snapshots and the least repetition number `r` with `β(s, r) >= n`
//!   (`β(s, r) = C(s + r, s)`), the forward advances
//!   `n + r n − β(s + 1, r − 1)` steps ([`binomial_forward_steps_wide`]).
//!   Other costs make the reference's cost table break ties its own way,
//!   so they have no closed form here.
//! - Multistage: the binomial count with `s = snapshots_in_ram +
//!   snapshots_on_disk` (Stumm & Walther 2009: the two levels together
//!   reverse optimally).
//! - OnlineR2 within its optimal range `n <= (s + 1)(s + 2)/2 − 1`:
//!   `binomial(n + 1, s) − 1` (see [`OnlineR2`](super::OnlineR2)).
//! - Periodic with `k = ceil(n / period)` intervals: `n + (n − last)` with
//!   `last = n − period (k − 1)`.
//! - The store-everything schedules: `n`.
//!
//! Every adjoint is advanced once per step (`n`), none for
//! `NoneCheckpointSchedule`. Tests check each form against the replay.

use serde::Serialize;

use super::binomial::binomial_forward_steps_wide;
use super::revolve::is_dyadic;
use super::{OnlineR2, ScheduleSpec};
use crate::action::Step;

/// The forward and adjoint steps a schedule advances, from a closed form.
///
/// ```
/// use checkpointing_schedule::ScheduleSpec;
/// let spec = ScheduleSpec::Revolve { max_n: u64::MAX, snapshots_in_ram: 40, uf: 1.0, ub: 1.0, wd: 2.0, rd: 2.0 };
/// let steps = spec.closed_form_steps().unwrap();
/// assert!(steps.forward_steps > u64::MAX as u128);
/// assert_eq!(steps.adjoint_steps, u64::MAX);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StepCounts {
    /// Number of steps of the loop.
    pub max_n: Step,
    /// Forward steps advanced in total (may exceed `u64` for huge loops).
    pub forward_steps: u128,
    /// Forward steps beyond the first `max_n`.
    pub recomputed_steps: u128,
    /// Adjoint steps advanced.
    pub adjoint_steps: u64,
}

impl StepCounts {
    fn of(max_n: Step, forward_steps: u128, adjoint_steps: u64) -> Self {
        Self {
            max_n,
            forward_steps,
            recomputed_steps: forward_steps - max_n as u128,
            adjoint_steps,
        }
    }
}

impl ScheduleSpec {
    /// The steps this schedule advances, from its closed form, or `None`
    /// where only the replay ([`ScheduleSpec::cost`]) can tell (H-Revolve,
    /// DiskRevolve, Periodic Disk-Revolve, Mixed, Two-level, Revolve with
    /// non-dyadic costs, OnlineR2 beyond its optimal range) or where the
    /// parameters are invalid. `O(log max_n)` time.
    ///
    /// ```
    /// use checkpointing_schedule::ScheduleSpec;
    /// let spec = ScheduleSpec::Periodic { max_n: 10, period: 4 };
    /// assert_eq!(spec.closed_form_steps().unwrap().forward_steps, spec.cost().unwrap().forward_steps as u128);
    /// ```
    pub fn closed_form_steps(&self) -> Option<StepCounts> {
        let n = self.steps();
        if n == 0 {
            return None;
        }
        let binomial = |n, s| binomial_forward_steps_wide(n, s);
        let forward = match *self {
            Self::None { .. } => return Some(StepCounts::of(n, n as u128, 0)),
            Self::SingleMemory { .. } | Self::SingleDisk { .. } => n as u128,
            Self::Revolve {
                snapshots_in_ram,
                uf,
                ub,
                ..
            } if uf > 0.0 && is_dyadic(uf) && is_dyadic(ub) && snapshots_in_ram > 0 => {
                binomial(n, snapshots_in_ram)?
            }
            Self::Multistage {
                snapshots_in_ram,
                snapshots_on_disk,
                ..
            } => binomial(n, snapshots_in_ram.checked_add(snapshots_on_disk)?)?,
            Self::OnlineR2 { snapshots, .. }
                if snapshots > 0 && n <= OnlineR2::optimal_range(snapshots) =>
            {
                binomial(n.checked_add(1)?, snapshots)? - 1
            }
            Self::Periodic { period, .. } if period > 0 => {
                let intervals = n.div_ceil(period);
                let last = n - period * (intervals - 1);
                n as u128 + (n - last) as u128
            }
            _ => return None,
        };
        Some(StepCounts::of(n, forward, n))
    }
}

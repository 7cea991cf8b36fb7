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
//! `NoneSchedule`. Each schedule's parameters give their form
//! ([`ScheduleParams::closed_form_steps`](super::ScheduleParams::closed_form_steps));
//! tests check each form against the replay.

use serde::Serialize;

use crate::action::Step;

/// The forward and adjoint steps a schedule advances, from a closed form.
///
/// ```
/// use checkpointing_schedule::schedule::RevolveParams;
/// use checkpointing_schedule::ScheduleSpec;
/// let spec = ScheduleSpec::from(RevolveParams { max_n: u64::MAX, snapshots_in_ram: 40, ..Default::default() });
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
    /// `forward_steps` forward steps and `adjoint_steps` adjoint steps for a
    /// loop of `max_n` steps.
    pub(crate) fn of(max_n: Step, forward_steps: u128, adjoint_steps: u64) -> Self {
        Self {
            max_n,
            forward_steps,
            recomputed_steps: forward_steps - max_n as u128,
            adjoint_steps,
        }
    }

    /// `forward_steps` forward steps and one adjoint per step.
    pub(crate) fn reversed(max_n: Step, forward_steps: u128) -> Self {
        Self::of(max_n, forward_steps, max_n)
    }
}

//! [`StepProfile`]: steps that differ, and the exact accounting of a
//! schedule's actions on them.

use std::collections::BTreeSet;

use serde::Serialize;

use super::PlanError;
use crate::action::{Action, DeadSteps, Step, StorageLevel};
use crate::levels::PerLevel;

/// Per-step times and state sizes, for loops whose steps differ (adaptive
/// time steps, a costly step every `k`, stages of different sizes): step
/// `i` (state `i` to `i + 1`) takes `forward_seconds[i]` forward and
/// `adjoint_seconds[i]` in the adjoint, and state `i` (its snapshot)
/// takes `state_bytes[i]` bytes. The three lists have one value per step.
///
/// ```
/// use checkpointing_schedule::plan::StepProfile;
/// let profile = StepProfile::new(vec![1.0, 1.0, 20.0], vec![2.0; 3], vec![100, 100, 300]).unwrap();
/// assert_eq!(profile.steps(), 3);
/// assert_eq!(profile.largest_state(), 300);
/// assert!(!profile.is_uniform());
/// assert!(StepProfile::new(vec![1.0; 3], vec![2.0; 2], vec![100; 3]).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepProfile {
    /// Seconds of each forward step.
    pub forward_seconds: Vec<f64>,
    /// Seconds of each adjoint step.
    pub adjoint_seconds: Vec<f64>,
    /// Bytes of each state (snapshot).
    pub state_bytes: Vec<u64>,
}

impl StepProfile {
    /// A profile from its three lists, checked ([`StepProfile::check`]).
    pub fn new(
        forward_seconds: Vec<f64>,
        adjoint_seconds: Vec<f64>,
        state_bytes: Vec<u64>,
    ) -> Result<Self, PlanError> {
        let profile = Self {
            forward_seconds,
            adjoint_seconds,
            state_bytes,
        };
        profile.check()?;
        Ok(profile)
    }

    /// `steps` equal steps (every list holds one value `steps` times).
    ///
    /// ```
    /// use checkpointing_schedule::plan::StepProfile;
    /// let profile = StepProfile::uniform(4, 1.0, 2.0, 64);
    /// assert!(profile.is_uniform());
    /// assert_eq!(profile.state_bytes, [64; 4]);
    /// ```
    pub fn uniform(steps: usize, forward_seconds: f64, adjoint_seconds: f64, bytes: u64) -> Self {
        Self {
            forward_seconds: vec![forward_seconds; steps],
            adjoint_seconds: vec![adjoint_seconds; steps],
            state_bytes: vec![bytes; steps],
        }
    }

    /// The number of steps (the forward list's length).
    pub fn steps(&self) -> Step {
        self.forward_seconds.len() as Step
    }

    /// The largest state, bytes (0 for no steps).
    pub fn largest_state(&self) -> u64 {
        self.state_bytes.iter().copied().max().unwrap_or(0)
    }

    /// The mean forward step, seconds.
    pub fn mean_forward_seconds(&self) -> f64 {
        mean(&self.forward_seconds)
    }

    /// The mean adjoint step, seconds.
    pub fn mean_adjoint_seconds(&self) -> f64 {
        mean(&self.adjoint_seconds)
    }

    /// Whether every step is the same (then the plan is that of the
    /// scalar input).
    pub fn is_uniform(&self) -> bool {
        fn same<T: PartialEq>(values: &[T]) -> bool {
            values.windows(2).all(|w| w[0] == w[1])
        }
        same(&self.forward_seconds) && same(&self.adjoint_seconds) && same(&self.state_bytes)
    }

    /// Refuses lists of different lengths ([`PlanError::ProfileLength`]),
    /// empty lists ([`PlanError::ZeroSteps`]), times that are negative or
    /// not finite ([`PlanError::InvalidStepSeconds`]), forward steps that
    /// take no time in all ([`PlanError::InvalidSeconds`]) and states of no
    /// bytes in all ([`PlanError::ZeroStateBytes`]).
    pub fn check(&self) -> Result<(), PlanError> {
        let steps = self.steps();
        if steps == 0 {
            return Err(PlanError::ZeroSteps);
        }
        for (name, len) in [
            ("adjoint seconds", self.adjoint_seconds.len()),
            ("state bytes", self.state_bytes.len()),
        ] {
            if len as Step != steps {
                return Err(PlanError::ProfileLength {
                    name,
                    len: len as Step,
                    steps,
                });
            }
        }
        for (name, values) in [
            ("forward seconds", &self.forward_seconds),
            ("adjoint seconds", &self.adjoint_seconds),
        ] {
            if let Some((step, &value)) = values
                .iter()
                .enumerate()
                .find(|(_, v)| !(v.is_finite() && **v >= 0.0))
            {
                return Err(PlanError::InvalidStepSeconds {
                    name,
                    step: step as Step,
                    value,
                });
            }
        }
        let forward = self.mean_forward_seconds();
        if !(forward.is_finite() && forward > 0.0) {
            return Err(PlanError::InvalidSeconds {
                name: "forward seconds",
                value: forward,
            });
        }
        if self.largest_state() == 0 {
            return Err(PlanError::ZeroStateBytes);
        }
        Ok(())
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// What a schedule's actions cost on a [`StepProfile`], counted exactly as
/// [`crate::HeterogeneousChain::account`] counts RAM, for every stored
/// level: the seconds of the forward steps advanced and of the adjoint
/// steps, and per level the most bytes held at once (a checkpoint of step
/// `n`, forward restart data or adjoint dependencies or both, takes
/// `state_bytes[n]`, as the replay counts it as one snapshot).
#[derive(Debug, Clone)]
pub(super) struct Accountant<'a> {
    profile: &'a StepProfile,
    held: PerLevel<BTreeSet<Step>>,
    bytes: PerLevel<u64>,
    /// Most bytes held at once per level.
    pub peak: PerLevel<u64>,
    /// Seconds of the forward steps advanced.
    pub forward: f64,
    /// Seconds of the adjoint steps.
    pub adjoint: f64,
    /// Seconds, within `forward`, of the steps whose output is never read
    /// ([`DeadSteps`]), which a run that skips them does not spend.
    pub dead: f64,
    dead_steps: DeadSteps,
    ended: bool,
}

impl<'a> Accountant<'a> {
    pub(super) fn new(profile: &'a StepProfile) -> Self {
        Self {
            profile,
            held: PerLevel::default(),
            bytes: PerLevel::default(),
            peak: PerLevel::default(),
            forward: 0.0,
            adjoint: 0.0,
            dead: 0.0,
            dead_steps: DeadSteps::default(),
            ended: false,
        }
    }

    fn size(&self, n: Step) -> u64 {
        self.profile
            .state_bytes
            .get(n as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The sum of `costs[a..b]`, clipped to the chain (the order of
    /// [`crate::HeterogeneousChain::account`], so the sums agree bit for
    /// bit).
    pub(super) fn seconds(costs: &[f64], a: Step, b: Step) -> f64 {
        let len = costs.len() as Step;
        let (a, b) = (a.min(len) as usize, b.min(len) as usize);
        costs.get(a..b).map_or(0.0, |c| c.iter().sum())
    }

    fn store(&mut self, level: StorageLevel, n: Step) {
        if !level.is_stored() || !self.held[level].insert(n) {
            return;
        }
        let size = self.size(n);
        let bytes = &mut self.bytes[level];
        *bytes = bytes.saturating_add(size);
        let peak = &mut self.peak[level];
        *peak = (*peak).max(*bytes);
    }

    fn free(&mut self, level: StorageLevel, n: Step) {
        if level.is_stored() && self.held[level].remove(&n) {
            let size = self.size(n);
            self.bytes[level] = self.bytes[level].saturating_sub(size);
        }
    }

    /// Counts one action (nothing after the first `EndReverse`).
    pub(super) fn observe(&mut self, action: &Action) {
        if self.ended {
            return;
        }
        if let Some(Action::Forward { n1, .. }) = self.dead_steps.observe(action) {
            self.dead += Self::seconds(&self.profile.forward_seconds, n1.saturating_sub(1), n1);
        }
        match *action {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => {
                if write_ics || (write_adj_deps && storage != StorageLevel::Work) {
                    self.store(storage, n0);
                }
                self.forward += Self::seconds(&self.profile.forward_seconds, n0, n1);
            }
            Action::Reverse { n1, n0, .. } => {
                self.adjoint += Self::seconds(&self.profile.adjoint_seconds, n0, n1);
            }
            Action::Copy { n, to, .. } => self.store(to, n),
            Action::Move { n, from, to } => {
                self.free(from, n);
                self.store(to, n);
            }
            Action::EndReverse => self.ended = true,
            Action::EndForward => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HeterogeneousChain, Revolve};

    #[test]
    fn agrees_with_the_chain_account() {
        let forward: Vec<f64> = (0..40).map(|i| 0.1 + (i % 7) as f64 * 0.37).collect();
        let adjoint: Vec<f64> = (0..40).map(|i| 0.3 + (i % 5) as f64 * 0.11).collect();
        let bytes: Vec<u64> = (0..40).map(|i| 100 + (i % 3) * 50).collect();
        let profile = StepProfile::new(forward.clone(), adjoint.clone(), bytes.clone()).unwrap();
        let chain = HeterogeneousChain::new(forward, adjoint, bytes).unwrap();
        let expected = chain.account(Revolve::new(40, 4).unwrap());
        let mut accountant = Accountant::new(&profile);
        Revolve::new(40, 4)
            .unwrap()
            .for_each(|a| accountant.observe(&a));
        assert_eq!(accountant.forward, expected.forward);
        assert_eq!(accountant.adjoint, expected.adjoint);
        assert_eq!(accountant.peak[StorageLevel::Ram], expected.peak_bytes);
    }

    #[test]
    fn bad_profiles() {
        let ok = StepProfile::uniform(3, 1.0, 1.0, 8);
        assert_eq!(ok.check(), Ok(()));
        let mut short = ok.clone();
        short.state_bytes.pop();
        assert_eq!(
            short.check(),
            Err(PlanError::ProfileLength {
                name: "state bytes",
                len: 2,
                steps: 3
            })
        );
        let mut negative = ok.clone();
        negative.adjoint_seconds[1] = -1.0;
        assert!(matches!(
            negative.check(),
            Err(PlanError::InvalidStepSeconds { step: 1, .. })
        ));
        let zero = StepProfile::uniform(3, 0.0, 1.0, 8);
        assert!(matches!(
            zero.check(),
            Err(PlanError::InvalidSeconds { .. })
        ));
        assert_eq!(
            StepProfile::uniform(3, 1.0, 1.0, 0).check(),
            Err(PlanError::ZeroStateBytes)
        );
        assert_eq!(
            StepProfile::uniform(0, 1.0, 1.0, 1).check(),
            Err(PlanError::ZeroSteps)
        );
    }
}

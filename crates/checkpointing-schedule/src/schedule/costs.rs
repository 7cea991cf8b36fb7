//! The cost parameters of the schedules that minimise a modelled cost, named
//! so that a forward cost cannot be passed as an adjoint cost: [`StepCosts`]
//! (`uf`, `ub`) and [`Costs`] (those and the disk's `wd`, `rd`). Their
//! defaults, those of `checkpoint_schedules` 1.0.4, are written here once.
//!
//! (`Costs` repeats the two step-cost fields rather than nesting a
//! `StepCosts`: serde cannot reject unknown fields through two levels of
//! `flatten`, and the schedules' JSON keeps the four costs flat.)

use serde::{Deserialize, Serialize};

use super::ScheduleError;

/// The cost of a forward step (`uf`) and of an adjoint step (`ub`), in any
/// unit (seconds, or multiples of a forward step). Default: 1 and 1.
///
/// ```
/// use checkpointing_schedule::schedule::StepCosts;
/// let costs = StepCosts { uf: 1.0, ub: 3.0 };
/// assert_eq!(StepCosts::default(), StepCosts { uf: 1.0, ub: 1.0 });
/// assert!(StepCosts { uf: -1.0, ub: 1.0 }.checked().is_err());
/// assert_eq!(costs.checked().unwrap(), costs);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default)]
pub struct StepCosts {
    /// Cost of a forward step.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = StepCosts::REFERENCE.uf, allow_negative_numbers = true))]
    pub uf: f64,
    /// Cost of an adjoint step.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = StepCosts::REFERENCE.ub, allow_negative_numbers = true))]
    pub ub: f64,
}

impl StepCosts {
    /// The reference package's defaults: `uf = 1`, `ub = 1`.
    pub const REFERENCE: Self = Self { uf: 1.0, ub: 1.0 };

    /// These costs, if each is a finite number `>= 0`
    /// ([`ScheduleError::InvalidCost`] naming the first that is not).
    pub fn checked(self) -> Result<Self, ScheduleError> {
        check_cost("uf", self.uf)?;
        check_cost("ub", self.ub)?;
        Ok(self)
    }
}

impl Default for StepCosts {
    fn default() -> Self {
        Self::REFERENCE
    }
}

/// The costs of the H-Revolve model (Herrmann & Pallez, ACM TOMS 46(2),
/// 2020): a forward step (`uf`) and an adjoint step (`ub`), as in
/// [`StepCosts`], a disk write (`wd`) and a disk read (`rd`); RAM traffic is
/// free. Default: 1, 1, 2, 2. In JSON the four are fields of the schedule
/// (`"uf": 1.0, ...`).
///
/// Prices, given to a schedule; what a replay counts is a
/// [`Cost`](crate::Cost), which [`Cost::weighted`](crate::Cost::weighted)
/// prices with these.
///
/// ```
/// use checkpointing_schedule::schedule::{Costs, StepCosts};
/// let costs = Costs { ub: 2.0, ..Costs::default() };
/// assert_eq!((costs.wd, costs.rd), (2.0, 2.0));
/// assert_eq!(costs.step_costs(), StepCosts { uf: 1.0, ub: 2.0 });
/// assert!(Costs { wd: f64::NAN, ..costs }.checked().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default)]
pub struct Costs {
    /// Cost of a forward step.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = Costs::REFERENCE.uf, allow_negative_numbers = true))]
    pub uf: f64,
    /// Cost of an adjoint step.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = Costs::REFERENCE.ub, allow_negative_numbers = true))]
    pub ub: f64,
    /// Cost of a disk write.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = Costs::REFERENCE.wd, allow_negative_numbers = true))]
    pub wd: f64,
    /// Cost of a disk read.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = Costs::REFERENCE.rd, allow_negative_numbers = true))]
    pub rd: f64,
}

impl Costs {
    /// The reference package's defaults: the step costs of
    /// [`StepCosts::REFERENCE`], `wd = 2`, `rd = 2`.
    pub const REFERENCE: Self = Self {
        uf: StepCosts::REFERENCE.uf,
        ub: StepCosts::REFERENCE.ub,
        wd: 2.0,
        rd: 2.0,
    };

    /// The forward and adjoint step costs.
    pub fn step_costs(&self) -> StepCosts {
        StepCosts {
            uf: self.uf,
            ub: self.ub,
        }
    }

    /// These costs, if each is a finite number `>= 0`
    /// ([`ScheduleError::InvalidCost`] naming the first that is not).
    pub fn checked(self) -> Result<Self, ScheduleError> {
        self.step_costs().checked()?;
        check_cost("wd", self.wd)?;
        check_cost("rd", self.rd)?;
        Ok(self)
    }
}

impl Default for Costs {
    fn default() -> Self {
        Self::REFERENCE
    }
}

/// `value` if it is a finite number `>= 0`, else
/// [`ScheduleError::InvalidCost`] naming the parameter.
pub(crate) fn check_cost(name: &'static str, value: f64) -> Result<f64, ScheduleError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(ScheduleError::InvalidCost { name, value })
    }
}

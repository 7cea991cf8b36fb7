//! [`HeterogeneousRevolveParams`]: the heterogeneous schedule named by its
//! chain and budget, and [`PerStep`], the per-step lists it takes on the
//! command line (`1*9,20`: nine 1s, then 20).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{run_bounds, DriverOverheads, HeterogeneousChain, HeterogeneousRevolve, RunsSchedule};
use crate::action::Step;
use crate::replay::Replay;
use crate::schedule::{CandidateBudget, Schedule, ScheduleError, ScheduleParams};

/// One value per step: a plain list in JSON; on the command line a comma
/// list where `VALUE*COUNT` stands for `COUNT` copies of `VALUE`.
///
/// ```
/// use checkpointing_schedule::schedule::PerStep;
/// let costs: PerStep<f64> = "1*3,20,0.5".parse().unwrap();
/// assert_eq!(costs.0, [1.0, 1.0, 1.0, 20.0, 0.5]);
/// assert_eq!(costs.to_string(), "1*3,20,0.5");
/// assert!("1*0".parse::<PerStep<f64>>().is_err());
/// assert!("".parse::<PerStep<u64>>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PerStep<T>(pub Vec<T>);

/// The most values a [`PerStep`] list may expand to from its text (larger
/// chains are refused by the schedule's tables long before).
const MOST_VALUES: u64 = 1 << 24;

impl<T: FromStr + Clone> FromStr for PerStep<T> {
    type Err = ScheduleError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: String| {
            ScheduleError::InvalidParameter {
            name: "per-step list",
            reason: format!("{reason} in {text:?} (expected e.g. 1,2.5,1*8: VALUE or VALUE*COUNT, comma-separated)"),
        }
        };
        let mut values = Vec::new();
        for item in text.split(',') {
            let (value, count) = match item.split_once('*') {
                Some((value, count)) => (
                    value,
                    count
                        .trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|&c| c > 0)
                        .ok_or_else(|| {
                            invalid(format!("repeat count {count:?} is not a positive integer"))
                        })?,
                ),
                None => (item, 1),
            };
            let value = value
                .trim()
                .parse::<T>()
                .map_err(|_| invalid(format!("{value:?} is not a number")))?;
            if values.len() as u64 + count > MOST_VALUES {
                return Err(invalid(format!("more than {MOST_VALUES} values")));
            }
            values.extend(std::iter::repeat_n(value, count as usize));
        }
        Ok(Self(values))
    }
}

impl<T: fmt::Display + PartialEq> fmt::Display for PerStep<T> {
    /// Runs of equal values as `VALUE*COUNT`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = &self.0[..];
        let mut first = true;
        while let Some(value) = rest.first() {
            let run = rest.iter().take_while(|v| *v == value).count();
            if !first {
                f.write_str(",")?;
            }
            first = false;
            match run {
                1 => write!(f, "{value}")?,
                _ => write!(f, "{value}*{run}")?,
            }
            rest = &rest[run..];
        }
        Ok(())
    }
}

/// Parameters of [`HeterogeneousRevolve`]: a chain of steps with their own
/// forward and adjoint costs and state sizes, and a RAM budget in bytes for
/// the checkpoints. JSON `{"schedule": "heterogeneous-revolve", "forward":
/// [...], "adjoint": [...], "bytes": [...], "budget": 300}`; on the command
/// line `--forward 1*9,20 --adjoint 1*10 --bytes 100*10 --budget 300`
/// (sizes take units: `--budget 8GiB`).
///
/// The optional `tape` (JSON `"tape": [...]`, `--tape 400*10`) gives each
/// step's tape size ([`HeterogeneousChain::with_tape`]): the budget then
/// counts checkpoints and tapes together, and the schedule may keep a
/// step's tape from the forward to its reverse instead of recomputing it.
/// Without it the spec is as before (the key is not written).
///
/// With tapes, the optional `restore_overhead` and `backward_overhead`
/// (JSON keys, `--restore-overhead`, `--backward-overhead`; in the costs'
/// units) price what a driver pays per restore and per backward call
/// ([`HeterogeneousChain::with_overheads`]); absent, zero and not written.
///
/// ```
/// use checkpointing_schedule::schedule::{HeterogeneousRevolveParams, PerStep, ScheduleParams};
/// use checkpointing_schedule::StorageLevel;
/// let mut params = HeterogeneousRevolveParams {
///     forward: "1*9,20,1*9,20".parse().unwrap(),
///     adjoint: PerStep(vec![1.0; 20]),
///     bytes: PerStep(vec![100; 20]),
///     tape: None,
///     budget: 300,
///     runs: None,
///     restore_overhead: None,
///     backward_overhead: None,
/// };
/// let cost = params.replay().run(params.build().unwrap()).unwrap();
/// assert!(cost.levels[StorageLevel::Ram].peak * 100 <= 300);
///
/// // Tapes of 150 bytes and a budget of 1000: some steps taped ahead.
/// params.tape = Some("150*20".parse().unwrap());
/// params.budget = 1000;
/// let chain = params.chain().unwrap();
/// assert!(chain.account(params.build().unwrap()).peak_bytes <= 1000);
/// params.replay().run(params.build().unwrap()).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(deny_unknown_fields)]
pub struct HeterogeneousRevolveParams {
    /// Forward cost of each step, e.g. `1*9,20` (nine steps of 1, one of
    /// 20); the number of values is the number of steps.
    #[cfg_attr(feature = "clap", arg(long, value_name = "COSTS"))]
    pub forward: PerStep<f64>,
    /// Adjoint cost of each step, as --forward.
    #[cfg_attr(feature = "clap", arg(long, value_name = "COSTS"))]
    pub adjoint: PerStep<f64>,
    /// Bytes of each state's checkpoint, as --forward (e.g. `4096*100`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZES"))]
    pub bytes: PerStep<u64>,
    /// Bytes of each step's tape (its adjoint dependencies), as --bytes;
    /// when given, the budget counts tapes and checkpoints together.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZES"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tape: Option<PerStep<u64>>,
    /// Bytes of RAM for checkpoints (and tapes, with --tape), e.g. 300 or
    /// 8GiB.
    #[cfg_attr(feature = "clap", arg(long, value_name = "BYTES", value_parser = parse_budget))]
    pub budget: u64,
    /// Loop steps each step of the chain stands for, e.g. `10*500` (500
    /// runs of 10): the chain is then of runs, each advanced, taped and
    /// reversed whole (the adjoint data of all its steps held at once, as
    /// store-all holds them), so that a loop of thousands of steps is
    /// planned on a chain short enough for the table. `forward`,
    /// `adjoint`, `bytes` and `tape` are then per run: its total times, the
    /// bytes of its first state, the bytes of its steps' adjoint data.
    /// Absent (`None`): one loop step per chain step (the key is not
    /// written). See [`RunsSchedule`](super::RunsSchedule).
    #[cfg_attr(feature = "clap", arg(long, value_name = "STEPS"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<PerStep<Step>>,
    /// What the driver pays per restore of a checkpoint into the live
    /// state, in the costs' units (with --tape only); absent: nothing.
    #[cfg_attr(feature = "clap", arg(long, value_name = "COST"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_overhead: Option<f64>,
    /// What the driver pays per backward call (a run of linked tapes, or
    /// one step), in the costs' units (with --tape only); absent: nothing.
    #[cfg_attr(feature = "clap", arg(long, value_name = "COST"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backward_overhead: Option<f64>,
}

#[cfg(feature = "clap")]
fn parse_budget(text: &str) -> Result<u64, String> {
    text.parse::<crate::plan::Bytes>()
        .map(|b| b.0)
        .map_err(|e| e.to_string())
}

impl HeterogeneousRevolveParams {
    /// The chain the parameters describe, with its tapes when given.
    ///
    /// ```
    /// use checkpointing_schedule::schedule::{HeterogeneousRevolveParams, PerStep, ScheduleParams};
    /// let mut params = HeterogeneousRevolveParams::example();
    /// assert_eq!(params.chain().unwrap().tape(), None);
    /// params.tape = Some(PerStep(vec![400; 20]));
    /// assert_eq!(params.chain().unwrap().tape(), Some(&[400; 20][..]));
    /// ```
    pub fn chain(&self) -> Result<HeterogeneousChain, ScheduleError> {
        let chain = HeterogeneousChain::new(
            self.forward.0.clone(),
            self.adjoint.0.clone(),
            self.bytes.0.clone(),
        )?;
        let chain = match &self.tape {
            Some(tape) => chain.with_tape(tape.0.clone())?,
            None => chain,
        };
        if self.restore_overhead.is_none() && self.backward_overhead.is_none() {
            return Ok(chain);
        }
        let overheads = DriverOverheads::new(
            self.restore_overhead.unwrap_or(0.0),
            self.backward_overhead.unwrap_or(0.0),
        )?;
        chain.with_overheads(overheads)
    }

    /// The most checkpoints the budget can hold at once: the smallest
    /// states, as many as fit.
    fn most_held(&self) -> u64 {
        let mut sizes = self.bytes.0.clone();
        sizes.sort_unstable();
        let mut total = 0u64;
        sizes
            .iter()
            .take_while(|&&size| {
                total = total.saturating_add(size);
                total <= self.budget
            })
            .count() as u64
    }
}

impl ScheduleParams for HeterogeneousRevolveParams {
    fn example() -> Self {
        Self {
            forward: PerStep([vec![1.0; 9], vec![20.0], vec![1.0; 9], vec![20.0]].concat()),
            adjoint: PerStep(vec![1.0; 20]),
            bytes: PerStep(vec![100; 20]),
            tape: None,
            budget: 300,
            runs: None,
            restore_overhead: None,
            backward_overhead: None,
        }
    }

    fn steps(&self) -> Step {
        match &self.runs {
            Some(runs) => runs.0.iter().fold(0, |n: Step, &r| n.saturating_add(r)),
            None => self.forward.0.len() as Step,
        }
    }

    fn build(&self) -> Result<Box<dyn Schedule + Send>, ScheduleError> {
        let chain = HeterogeneousRevolve::new(&self.chain()?, self.budget)?;
        match &self.runs {
            None => Ok(Box::new(chain)),
            Some(runs) => {
                if runs.0.len() != self.forward.0.len() {
                    return Err(ScheduleError::InvalidParameter {
                        name: "runs",
                        reason: format!(
                            "{} runs for a chain of {} steps",
                            runs.0.len(),
                            self.forward.0.len()
                        ),
                    });
                }
                Ok(Box::new(RunsSchedule::new(chain, run_bounds(&runs.0)?)?))
            }
        }
    }

    /// RAM within the most checkpoints the budget can hold, nothing on
    /// disk, everything freed at the end. (The byte budget itself is
    /// checked by [`HeterogeneousChain::account`]; the replay counts
    /// snapshots.)
    fn replay(&self) -> Replay {
        Replay::new(self.steps())
            .ram_budget(self.most_held())
            .disk_budget(0)
            .require_freed(true)
    }

    /// None: a budget in snapshots of equal steps says nothing of the
    /// per-step costs and sizes this schedule is for (on equal steps it
    /// matches Revolve).
    fn candidates(_: &CandidateBudget) -> Vec<Self> {
        Vec::new()
    }

    /// The per-step lists in their compact form (`1*9,20`).
    fn command_args(&self) -> Vec<String> {
        let mut args = vec![
            "--adjoint".into(),
            self.adjoint.to_string(),
            "--budget".into(),
            self.budget.to_string(),
            "--bytes".into(),
            self.bytes.to_string(),
            "--forward".into(),
            self.forward.to_string(),
        ];
        if let Some(runs) = &self.runs {
            args.extend(["--runs".into(), runs.to_string()]);
        }
        if let Some(tape) = &self.tape {
            args.extend(["--tape".into(), tape.to_string()]);
        }
        for (flag, value) in [
            ("--restore-overhead", self.restore_overhead),
            ("--backward-overhead", self.backward_overhead),
        ] {
            if let Some(value) = value {
                args.extend([flag.into(), value.to_string()]);
            }
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_step_text_round_trips() {
        for text in ["1", "1*2", "0.5,1*3,0.5", "20,1*9,20"] {
            let values: PerStep<f64> = text.parse().unwrap();
            assert_eq!(values.to_string(), text);
        }
        let sizes: PerStep<u64> = "4096*3,8".parse().unwrap();
        assert_eq!(sizes.0, [4096, 4096, 4096, 8]);
        for bad in ["", "1,,2", "x", "1*x", "1*-2", "1*16777217"] {
            assert!(bad.parse::<PerStep<f64>>().is_err(), "{bad}");
        }
    }

    #[test]
    fn replay_holds_at_most_the_budget() {
        let params = HeterogeneousRevolveParams::example();
        let chain = params.chain().unwrap();
        let cost = chain.account(params.build().unwrap());
        assert!(cost.peak_bytes <= params.budget);
        params.replay().run(params.build().unwrap()).unwrap();
    }

    #[test]
    fn tape_is_optional_in_json() {
        let params = HeterogeneousRevolveParams::example();
        let json = serde_json::to_string(&params).unwrap();
        assert!(!json.contains("tape"), "{json}");
        let mut taped = params.clone();
        taped.tape = Some(PerStep(vec![150; 20]));
        taped.budget = 1000;
        let json = serde_json::to_string(&taped).unwrap();
        assert!(json.contains("\"tape\":[150,"), "{json}");
        let back: HeterogeneousRevolveParams = serde_json::from_str(&json).unwrap();
        assert_eq!(back, taped);
        assert!(taped
            .command_args()
            .ends_with(&["--tape".into(), "150*20".into()]));
        let chain = taped.chain().unwrap();
        assert!(chain.account(taped.build().unwrap()).peak_bytes <= 1000);
        taped.tape = Some(PerStep(vec![150; 19]));
        assert!(matches!(
            taped.build().err(),
            Some(ScheduleError::InvalidParameter { name: "tape", .. })
        ));
    }

    #[test]
    fn overheads_are_optional_in_json() {
        let mut params = HeterogeneousRevolveParams::example();
        params.tape = Some(PerStep(vec![150; 20]));
        params.budget = 1000;
        params.backward_overhead = Some(2.5);
        let json = serde_json::to_string(&params).unwrap();
        assert!(json.contains("\"backward_overhead\":2.5"), "{json}");
        assert!(!json.contains("restore_overhead"), "{json}");
        let back: HeterogeneousRevolveParams = serde_json::from_str(&json).unwrap();
        assert_eq!(back, params);
        assert!(params
            .command_args()
            .ends_with(&["--backward-overhead".into(), "2.5".into()]));
        let chain = params.chain().unwrap();
        assert_eq!(chain.overheads().backward_call, 2.5);
        let schedule = HeterogeneousRevolve::new(&chain, 1000).unwrap();
        assert_eq!(
            chain.account(schedule.clone()).total(),
            schedule.predicted_cost()
        );
        params.restore_overhead = Some(-1.0);
        assert!(matches!(
            params.build().err(),
            Some(ScheduleError::InvalidCost { .. })
        ));
        params.restore_overhead = Some(1.0);
        params.tape = None;
        assert!(matches!(
            params.build().err(),
            Some(ScheduleError::InvalidParameter {
                name: "overheads",
                ..
            })
        ));
    }

    #[test]
    fn bad_chains_are_errors() {
        let mut params = HeterogeneousRevolveParams::example();
        params.adjoint.0.pop();
        assert!(matches!(
            params.build().err(),
            Some(ScheduleError::InvalidParameter {
                name: "adjoint",
                ..
            })
        ));
        let mut params = HeterogeneousRevolveParams::example();
        params.budget = 99;
        assert!(matches!(
            params.build().err(),
            Some(ScheduleError::BudgetTooSmall { .. })
        ));
    }
}

//! The planner's input from `checkpointing plan`'s flags: the values' parsers,
//! each level's flags, the step count and the [`PlanInput`].

use checkpointing::executor::LOOK_AHEAD;
use checkpointing::{Step, StorageLevel};
use checkpointing_schedule::plan::{self, Bytes, LevelBudget, LevelTimes, PlanInput, StepProfile};
use checkpointing_schedule::schedule::{PerStep, ScheduleError};
use checkpointing_store::{background_lanes, ASYNC_DEFAULT_CAPACITY};

use super::PlanArgs;
use crate::Failure;

/// A step count, or `None` for `unknown` (a newtype: clap would take a
/// bare `Option` for an optional flag).
#[derive(Clone, Copy, Debug)]
pub(super) struct Steps(pub(super) Option<Step>);

pub(super) fn parse_steps(text: &str) -> Result<Steps, String> {
    if text.eq_ignore_ascii_case("unknown") {
        return Ok(Steps(None));
    }
    match text.parse() {
        Ok(0) => Err("the step count must be positive".into()),
        Ok(n) => Ok(Steps(Some(n))),
        Err(_) => Err(format!("{text:?} is not a step count or \"unknown\"")),
    }
}

pub(super) fn parse_bandwidth(text: &str) -> Result<Bytes, String> {
    let bytes = Bytes::parse_per_second(text).map_err(|e| e.to_string())?;
    if bytes.0 == 0 {
        return Err("the bandwidth must be positive".into());
    }
    Ok(bytes)
}

/// One size (its own error messages), or a per-step list of them.
pub(super) fn parse_sizes(text: &str) -> Result<PerStep<Bytes>, String> {
    if !text.contains([',', '*']) {
        return text
            .parse::<Bytes>()
            .map(|b| PerStep(vec![b]))
            .map_err(|e| e.to_string());
    }
    text.parse().map_err(|e: ScheduleError| e.to_string())
}

/// One time, or a per-step list of them.
pub(super) fn parse_seconds(text: &str) -> Result<PerStep<f64>, String> {
    text.parse().map_err(|e: ScheduleError| e.to_string())
}

/// The flags of one storage level: its capacity and [`LevelTimes`], which
/// turns them into a [`LevelBudget`].
struct LevelFlags {
    level: StorageLevel,
    /// The flag prefix, `--disk`.
    flag: &'static str,
    capacity: Option<Bytes>,
    times: LevelTimes,
    /// Whether the level's times must be given (DISK: no disk speed is
    /// assumed); otherwise a level without times is free.
    needs_times: bool,
}

impl LevelFlags {
    /// The level's budget for states of `state` bytes, `None` without a
    /// capacity; an error for times without a capacity.
    fn budget(&self, state: Bytes) -> Result<Option<LevelBudget>, Failure> {
        let Some(capacity) = self.capacity else {
            if self.times.given() {
                return Err(Failure(
                    format!("{} times given without {}", self.level.name(), self.flag),
                    2,
                ));
            }
            return Ok(None);
        };
        if self.needs_times
            && self.times.write_seconds.is_none()
            && self.times.bytes_per_second.is_none()
        {
            return Err(Failure(
                format!(
                    "{flag} needs its measured time: {flag}-write-seconds (and {flag}-read-seconds) \
                     or {flag}-bandwidth; no {} speed is assumed",
                    self.level.name(),
                    flag = self.flag
                ),
                2,
            ));
        }
        self.times
            .budget(self.level, capacity, state)
            .map(Some)
            .map_err(|e| Failure(e.to_string(), 2))
    }
}

impl PlanArgs {
    /// The flags of DEVICE, RAM and DISK.
    fn levels(&self) -> [LevelFlags; 3] {
        [
            LevelFlags {
                level: StorageLevel::Device,
                flag: "--device",
                capacity: self.device,
                times: LevelTimes {
                    write_seconds: self.device_write_seconds,
                    read_seconds: self.device_read_seconds,
                    bytes_per_second: self.device_bandwidth.map(|b| b.0 as f64),
                    latency_seconds: self.device_latency_seconds,
                },
                needs_times: false,
            },
            LevelFlags {
                level: StorageLevel::Ram,
                flag: "--ram",
                capacity: Some(self.ram),
                times: LevelTimes {
                    write_seconds: self.ram_write_seconds,
                    read_seconds: self.ram_read_seconds,
                    bytes_per_second: self.ram_bandwidth.map(|b| b.0 as f64),
                    latency_seconds: self.ram_latency_seconds,
                },
                needs_times: false,
            },
            LevelFlags {
                level: StorageLevel::Disk,
                flag: "--disk",
                capacity: self.disk,
                times: LevelTimes {
                    write_seconds: self.disk_write_seconds,
                    read_seconds: self.disk_read_seconds,
                    bytes_per_second: self.disk_bandwidth.map(|b| b.0 as f64),
                    latency_seconds: self.disk_latency_seconds,
                },
                needs_times: true,
            },
        ]
    }

    /// The step count: `--steps`, or the per-step lists' length (they must
    /// agree); errors name the flags.
    fn steps(&self) -> Result<Option<Step>, Failure> {
        let usage = |message: String| Failure(message, 2);
        let lists: Vec<(&str, usize)> = [
            ("--forward-seconds", self.forward_seconds.0.len()),
            (
                "--adjoint-seconds",
                self.adjoint_seconds.as_ref().map_or(1, |a| a.0.len()),
            ),
            ("--state-bytes", self.state_bytes.0.len()),
        ]
        .into_iter()
        .filter(|&(_, len)| len > 1)
        .collect();
        let listed = lists.first().map(|&(flag, len)| (flag, len as Step));
        if let Some((flag, len)) = listed {
            if let Some(&(other, other_len)) = lists.iter().find(|&&(_, l)| l as Step != len) {
                return Err(usage(format!(
                    "{flag} lists {len} values but {other} lists {other_len}"
                )));
            }
        }
        match (self.steps, listed) {
            (None, None) => Err(usage(
                "give --steps, or per-step lists (e.g. --forward-seconds 0.01*9,0.2)".into(),
            )),
            (None, Some((_, len))) => Ok(Some(len)),
            (Some(Steps(None)), Some((flag, _))) => Err(usage(format!(
                "{flag} gives per-step values, which need a known step count, not --steps unknown"
            ))),
            (Some(Steps(Some(n))), Some((flag, len))) if n != len => {
                Err(usage(format!("{flag} lists {len} values for --steps {n}")))
            }
            (Some(Steps(steps)), _) => Ok(steps),
        }
    }

    /// The planner's input from the flags (with --compression-ratio, level
    /// times from a bandwidth are for the compressed size).
    pub(super) fn input(&self) -> Result<PlanInput, Failure> {
        let steps = self.steps()?;
        let forward = &self.forward_seconds.0;
        let adjoint: Vec<f64> = match &self.adjoint_seconds {
            Some(a) => a.0.clone(),
            None => forward
                .iter()
                .map(|f| plan::ADJOINT_PER_FORWARD * f)
                .collect(),
        };
        let sizes: Vec<u64> = self.state_bytes.0.iter().map(|b| b.0).collect();
        // Level times from a bandwidth take the mean state, as stored
        // (compressed).
        let ratio = self.compression_ratio.unwrap_or(1.0);
        let mean = sizes.iter().map(|&b| b as u128).sum::<u128>() / sizes.len().max(1) as u128;
        let mean_state = Bytes(mean as u64).compressed(ratio);
        let per_step = forward.len() > 1 || adjoint.len() > 1 || sizes.len() > 1;
        let mut input = PlanInput::new(steps, Bytes(sizes[0]), self.ram);
        input.forward_seconds = forward[0];
        input.adjoint_seconds = adjoint[0];
        if let (true, Some(n)) = (per_step, steps) {
            let each = |values: &[f64]| match values {
                [one] => vec![*one; n as usize],
                many => many.to_vec(),
            };
            let bytes = match &sizes[..] {
                [one] => vec![*one; n as usize],
                many => many.to_vec(),
            };
            let profile = StepProfile {
                forward_seconds: each(forward),
                adjoint_seconds: each(&adjoint),
                state_bytes: bytes,
            };
            input = input.with_profile(profile);
        }
        for flags in self.levels() {
            if let Some(mut budget) = flags.budget(mean_state)? {
                if flags.level == StorageLevel::Disk {
                    if let Some(sd) = self.disk_write_sd_seconds {
                        budget = budget.with_write_sd(sd);
                    }
                }
                input = input.with_level(flags.level, budget);
            }
        }
        if self.disk_write_sd_seconds.is_some() && self.disk.is_none() {
            return Err(Failure(
                "--disk-write-sd-seconds given without --disk".into(),
                2,
            ));
        }
        if self.disk_background {
            let Some(disk) = input.levels[StorageLevel::Disk].as_mut() else {
                return Err(Failure("--disk-background given without --disk".into(), 2));
            };
            disk.background = Some(background_lanes(ASYNC_DEFAULT_CAPACITY, None, mean_state.0));
            if let Some(seconds) = self.disk_issue_seconds {
                *disk = disk.with_issue_seconds(seconds);
            }
            if let Some(fraction) = self.disk_contention {
                *disk = disk.with_contention(fraction);
            }
            input = input.with_read_look_ahead(LOOK_AHEAD);
        }
        Ok(input.with_compression_ratio(ratio))
    }
}

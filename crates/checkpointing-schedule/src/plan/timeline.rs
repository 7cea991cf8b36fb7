//! [`Timeline`]: an action stream's time when storage runs beside the
//! computation.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::profile::Accountant;
use super::{BackgroundIo, PlanInput, ReadAnnouncer, READ_AHEAD_MOST, READ_AHEAD_WAIT_FACTOR};
use crate::action::{Action, ForwardOutput, Step, StorageLevel, DEAD_OUTPUT_SCAN};
use crate::levels::PerLevel;

/// An action stream replayed on a compute lane and, for each background
/// level, a write lane and a read lane, as the executor runs it over
/// `AsyncStore`s: the seconds the computation waits for are the prediction.
///
/// The compute clock `t` advances by each forward and adjoint step's
/// seconds (the input's, or its profile's per step; without the steps whose
/// output nothing reads where the input
/// [skips them](PlanInput::with_dead_steps_skipped)). On a blocking level a
/// write or read adds its seconds to `t`. On a background level (with
/// [`BackgroundIo`]):
///
/// * a save costs the computation the level's
///   [`issue_seconds`](super::LevelBudget::issue_seconds) (the copy) and,
///   after its wait for the queue below,
///   [`contention`](super::LevelBudget::contention) `· w` (the write's
///   share of the cores while it runs); a read costs it `contention · r`
///   before it waits for the read's end; then,
///   issued at `t`, starts at `max(t, w_free)` and ends
///   `e = start + w` later (`w_free ← e`); when
///   [`writes_in_flight`](BackgroundIo::writes_in_flight) writes are
///   unfinished, the save first waits for the oldest, `t ← min e`;
/// * a read of step `n` is announced when an action starts within whose
///   window it is, at `t_a`: the window of an action is the
///   [`read_look_ahead`](PlanInput::read_look_ahead) actions after it, and
///   more while their predicted seconds (their steps') stay under
///   [`READ_AHEAD_WAIT_FACTOR`] times the longest the computation has
///   waited so far for a `Copy` or `Move` out of `DISK`, at most
///   [`READ_AHEAD_MOST`] (the executor's rule, on measured step times);
///   the read starts at `max(t_a, r_free, e_n)` (after the save of `n`)
///   and ends `start + r` (`r_free ← end`), unless
///   [`reads_ahead`](BackgroundIo::reads_ahead) announced reads are
///   already started and not taken: it then waits, in the order announced,
///   and starts at the end of the action that takes one (`t_a` is then
///   that time); the action that needs it waits, `t ← max(t, end)`; a
///   read not announced starts when it is needed; a save or a `Move` of a
///   step drops the reads ahead of it;
/// * the run ends when every write has: `t ← max(t, w_free)`.
///
/// With no background level the time is the blocking sum
/// `Σ steps + Σ writes · w + Σ reads · r`.
///
/// ```
/// use checkpointing_schedule::plan::{BackgroundIo, Bytes, LevelBudget, PlanInput, Timeline};
/// use checkpointing_schedule::{Revolve, StorageLevel};
/// let mut input = PlanInput::new(Some(20), Bytes(8), Bytes(16)).with_read_look_ahead(8);
/// input.forward_seconds = 1.0;
/// input.adjoint_seconds = 1.0;
/// let blocking = LevelBudget::new(Bytes(1 << 20), 0.5, 0.5);
/// let with = |disk| input.clone().with_level(StorageLevel::Ram, disk);
/// let schedule = || Revolve::new(20, 3).unwrap();
/// let stalled = Timeline::seconds(&with(blocking), schedule());
/// let lanes = BackgroundIo { writes_in_flight: 4, staged_snapshots: 8 };
/// let hidden = Timeline::seconds(&with(blocking.in_background(lanes)), schedule());
/// assert!(hidden < stalled);
/// ```
#[derive(Debug)]
pub struct Timeline<'a> {
    input: &'a PlanInput,
    /// Actions received and not yet timed (the look-ahead).
    ahead: VecDeque<Action>,
    /// Index of the first action in `ahead`.
    front: u64,
    /// How many actions must follow one before it is timed.
    horizon: usize,
    /// The compute clock.
    t: f64,
    lanes: PerLevel<Lanes>,
    /// The longest the computation waited for a read out of `DISK`.
    longest_wait: f64,
    /// Index of the last action of the current read window, and the
    /// predicted seconds of the actions after the running one up to it.
    window_end: u64,
    window_seconds: f64,
    /// Whether reads are announced ahead ([`Self::announces`]).
    announces: bool,
    /// Index of the last action whose reads were announced.
    announced: u64,
    announcer: ReadAnnouncer,
    /// Each action timed, when [traced](Self::traced).
    trace: Option<Vec<TimedAction>>,
}

/// An action of a stream and when the computation started and finished it
/// on the [`Timeline`]'s clock: `start` is when the action before it ended,
/// `end` includes what the action waited for (its reads, its saves' queue)
/// and its share of its I/O, as [`Timeline`] prices them.
///
/// ```
/// use checkpointing_schedule::plan::{Bytes, PlanInput, Timeline};
/// use checkpointing_schedule::{Action, Revolve};
/// let mut input = PlanInput::new(Some(4), Bytes(8), Bytes(16));
/// input.forward_seconds = 1.0;
/// input.adjoint_seconds = 2.0;
/// let (seconds, trace) = Timeline::traced(&input, Revolve::new(4, 2).unwrap());
/// let last = trace.iter().rev().find(|t| matches!(t.action, Action::Reverse { .. })).unwrap();
/// assert_eq!(last.end, seconds);
/// assert!(trace.windows(2).all(|w| w[0].end == w[1].start));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedAction {
    /// The action.
    pub action: Action,
    /// Seconds from the stream's start to the action's start.
    pub start: f64,
    /// Seconds from the stream's start to the action's end.
    pub end: f64,
}

/// One background level's lanes.
#[derive(Debug, Default)]
struct Lanes {
    write_free: f64,
    read_free: f64,
    /// End times of the writes not known to be finished, oldest first.
    in_flight: VecDeque<f64>,
    /// When the last save of each step held ends.
    saved: FxHashMap<Step, f64>,
    /// End times of the reads announced and started for each step, in
    /// order.
    read_ahead: FxHashMap<Step, VecDeque<f64>>,
    /// Reads announced and not started yet (the reads ahead are full).
    waiting: VecDeque<Step>,
    /// Reads started ahead and not taken (the lengths in `read_ahead`).
    outstanding: u64,
}

impl<'a> Timeline<'a> {
    /// An empty timeline priced by `input`.
    pub fn new(input: &'a PlanInput) -> Self {
        Self {
            input,
            ahead: VecDeque::new(),
            front: 0,
            horizon: Self::buffered(input),
            t: 0.0,
            lanes: PerLevel::default(),
            longest_wait: 0.0,
            window_end: 0,
            window_seconds: 0.0,
            announces: Self::announces(input),
            announced: 0,
            announcer: ReadAnnouncer::default(),
            trace: None,
        }
    }

    /// The seconds of `actions` (up to the first `EndReverse`).
    pub fn seconds<I: IntoIterator<Item = Action>>(input: &PlanInput, actions: I) -> f64 {
        Timeline::replay(Timeline::new(input), actions).0
    }

    /// [`seconds`](Self::seconds), with each action's start and end on the
    /// compute clock, in stream order (what a measured run's events are
    /// compared with).
    pub fn traced<I: IntoIterator<Item = Action>>(
        input: &PlanInput,
        actions: I,
    ) -> (f64, Vec<TimedAction>) {
        let timeline = Timeline {
            trace: Some(Vec::new()),
            ..Timeline::new(input)
        };
        Timeline::replay(timeline, actions)
    }

    /// Feeds `actions` to `timeline` up to the first `EndReverse`; returns
    /// the seconds and the trace, if one was kept.
    fn replay<I: IntoIterator<Item = Action>>(
        mut timeline: Timeline<'_>,
        actions: I,
    ) -> (f64, Vec<TimedAction>) {
        for action in actions {
            let end = action == Action::EndReverse;
            timeline.observe(action);
            if end {
                break;
            }
        }
        timeline.drain();
        let trace = timeline.trace.take().unwrap_or_default();
        (timeline.finish(), trace)
    }

    /// Whether reads are announced ahead to a background level.
    fn announces(input: &PlanInput) -> bool {
        input.read_look_ahead > 0
            && input
                .levels
                .iter()
                .any(|(_, level)| level.is_some_and(|l| l.background.is_some()))
    }

    /// How many actions follow one before it is timed: the dead-output
    /// scan's, and a whole read window's where reads are announced ahead on
    /// a background level.
    fn buffered(input: &PlanInput) -> usize {
        let window = if Self::announces(input) {
            READ_AHEAD_MOST.max(input.read_look_ahead)
        } else {
            input.read_look_ahead
        };
        window.max(DEAD_OUTPUT_SCAN)
    }

    /// The predicted seconds of `action`'s steps (the window's measure).
    fn predicted(&self, action: &Action) -> f64 {
        let profile = self.input.profile.as_ref();
        match *action {
            Action::Forward { n0, n1, .. } => Self::steps(
                self.input.forward_seconds,
                profile.map(|p| p.forward_seconds.as_slice()),
                n0,
                n1,
            ),
            Action::Reverse { n1, n0, .. } => Self::steps(
                self.input.adjoint_seconds,
                profile.map(|p| p.adjoint_seconds.as_slice()),
                n0,
                n1,
            ),
            _ => 0.0,
        }
    }

    /// Moves the read window to the action `index` just started (removed
    /// from `ahead`, which starts at `index + 1`): the action's own seconds
    /// leave it, and it reaches at least `read_look_ahead` actions, then
    /// on while the actions in it are predicted to take less than the
    /// horizon, at most [`READ_AHEAD_MOST`]. The end only moves forward
    /// (the horizon never shrinks), so the window costs `O(1)` per action
    /// on average. Returns the index of its last action.
    fn advance_window(&mut self, index: u64, started: &Action) -> u64 {
        if self.window_end >= index {
            self.window_seconds = (self.window_seconds - self.predicted(started)).max(0.0);
        } else {
            (self.window_end, self.window_seconds) = (index, 0.0);
        }
        let least = self.input.read_look_ahead as u64;
        let most = if least == 0 {
            0
        } else {
            READ_AHEAD_MOST.max(self.input.read_look_ahead) as u64
        };
        let horizon = READ_AHEAD_WAIT_FACTOR * self.longest_wait;
        loop {
            let len = self.window_end - index;
            if len >= most || (len >= least && self.window_seconds >= horizon) {
                break;
            }
            let Some(next) = self.ahead.get(len as usize).copied() else {
                break;
            };
            self.window_seconds += self.predicted(&next);
            self.window_end += 1;
        }
        self.window_end
    }

    /// Receives the next action of the stream.
    pub fn observe(&mut self, action: Action) {
        self.ahead.push_back(action);
        while self.ahead.len() > self.horizon {
            self.time_front();
        }
    }

    /// Times the rest and returns the stream's seconds: when the last
    /// write ends, or the computation, whichever is later.
    pub fn finish(mut self) -> f64 {
        self.drain();
        self.lanes
            .iter()
            .map(|(_, lanes)| lanes.write_free)
            .fold(self.t, f64::max)
    }

    fn background(&self, level: StorageLevel) -> Option<BackgroundIo> {
        self.input.levels.get(level).copied().flatten()?.background
    }

    fn write_seconds(&self, level: StorageLevel) -> f64 {
        self.input
            .levels
            .get(level)
            .copied()
            .flatten()
            .map_or(0.0, |b| b.write_seconds)
    }

    fn read_seconds(&self, level: StorageLevel) -> f64 {
        self.input
            .levels
            .get(level)
            .copied()
            .flatten()
            .map_or(0.0, |b| b.read_seconds)
    }

    /// Seconds of steps `n0..n1` in `uniform` or the profile's `per_step`
    /// (summed as [`Accountant`] sums them).
    fn steps(uniform: f64, per_step: Option<&[f64]>, n0: Step, n1: Step) -> f64 {
        match per_step {
            Some(costs) => Accountant::seconds(costs, n0, n1),
            None => uniform * (n1 - n0) as f64,
        }
    }

    /// Times every action received.
    fn drain(&mut self) {
        while !self.ahead.is_empty() {
            self.time_front();
        }
    }

    /// Times the first action received.
    fn time_front(&mut self) {
        let Some(action) = self.ahead.pop_front() else {
            return;
        };
        let index = self.front;
        self.front += 1;
        let last = self.advance_window(index, &action);
        self.announce(index, last);
        let started = self.t;
        match action {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => {
                if write_ics {
                    self.write(storage, n0);
                }
                let dead = self.input.skips_dead_steps
                    && ForwardOutput::of(&action).is_some_and(|o| o.unused_in(&self.ahead));
                let end = if dead { n1 - 1 } else { n1 };
                let profile = self.input.profile.as_ref();
                self.t += Self::steps(
                    self.input.forward_seconds,
                    profile.map(|p| p.forward_seconds.as_slice()),
                    n0,
                    end,
                );
                if write_adj_deps && storage.is_stored() {
                    self.write(storage, n0);
                }
            }
            Action::Reverse { n1, n0, .. } => {
                let profile = self.input.profile.as_ref();
                self.t += Self::steps(
                    self.input.adjoint_seconds,
                    profile.map(|p| p.adjoint_seconds.as_slice()),
                    n0,
                    n1,
                );
            }
            Action::Copy { n, from, to } | Action::Move { n, from, to } => {
                let is_move = matches!(action, Action::Move { .. });
                if to != StorageLevel::None {
                    self.read(from, n);
                    if from == StorageLevel::Disk {
                        self.longest_wait = self.longest_wait.max(self.t - started);
                    }
                }
                if is_move {
                    if let Some(lanes) = self.lanes.get_mut(from) {
                        lanes.saved.remove(&n);
                        lanes.drop_reads(n);
                    }
                }
                if to.is_stored() {
                    self.write(to, n);
                }
            }
            Action::EndForward | Action::EndReverse => {}
        }
        if let Some(trace) = &mut self.trace {
            trace.push(TimedAction {
                action,
                start: started,
                end: self.t,
            });
        }
    }

    /// Starts the reads of the actions after action `index` up to `last`
    /// (its read window) on each background level, as the executor
    /// announces them when it starts that action.
    fn announce(&mut self, index: u64, last: u64) {
        if !self.announces {
            return;
        }
        // The actions new to the window (none where it did not grow); the
        // reads held back are released all the same.
        let first = self.announced.max(index) + 1;
        let new = (first - index - 1) as usize..(last.max(first - 1) - index) as usize;
        let reads = self.announcer.announce(index, first, self.ahead.range(new));
        self.announced = self.announced.max(last);
        let t = self.t;
        for level in StorageLevel::STORED {
            let Some(io) = self.background(level) else {
                continue;
            };
            let read = self.read_seconds(level);
            let lanes = &mut self.lanes[level];
            // A step not held is not read ahead (the store ignores it); its
            // read starts when it is needed.
            let held = reads
                .iter()
                .filter(|&&(n, from)| from == level && lanes.saved.contains_key(&n));
            lanes.waiting.extend(held.map(|&(n, _)| n));
            lanes.start_reads(t, read, io.reads_ahead());
        }
    }

    fn write(&mut self, level: StorageLevel, n: Step) {
        let seconds = self.write_seconds(level);
        let Some(io) = self.background(level) else {
            self.t += seconds;
            return;
        };
        self.t += self.input.levels[level].map_or(0.0, |b| b.issue_seconds);
        let t = self.t;
        let lanes = &mut self.lanes[level];
        // A new save replaces what was read ahead of the old one.
        lanes.drop_reads(n);
        lanes.in_flight.retain(|&end| end > t);
        let mut t = t;
        if lanes.in_flight.len() as u64 >= io.writes_in_flight.max(1) {
            t = t.max(lanes.in_flight.pop_front().expect("a write in flight"));
        }
        let end = t.max(lanes.write_free) + seconds;
        lanes.write_free = end;
        lanes.in_flight.push_back(end);
        lanes.saved.insert(n, end);
        self.t = t + self.contention(level) * seconds;
    }

    /// The level's [`contention`](super::LevelBudget::contention).
    fn contention(&self, level: StorageLevel) -> f64 {
        self.input.levels[level].map_or(0.0, |b| b.contention)
    }

    fn read(&mut self, level: StorageLevel, n: Step) {
        let seconds = self.read_seconds(level);
        let Some(io) = self.background(level) else {
            self.t += seconds;
            return;
        };
        let t = self.t;
        let slowed = t + self.contention(level) * seconds;
        let lanes = &mut self.lanes[level];
        let ready = match lanes.take_read(n) {
            Some(end) => end,
            None => {
                let saved = lanes.saved.get(&n).copied().unwrap_or(0.0);
                let end = t.max(lanes.read_free).max(saved) + seconds;
                lanes.read_free = end;
                end
            }
        };
        self.t = slowed.max(ready);
        // A read taken leaves room for the next announced one.
        lanes.start_reads(self.t, seconds, io.reads_ahead());
    }
}

impl Lanes {
    /// Starts waiting reads at `t`, in order, while fewer than `most` are
    /// outstanding; a step no longer held is passed over.
    fn start_reads(&mut self, t: f64, seconds: f64, most: u64) {
        while self.outstanding < most {
            let Some(n) = self.waiting.pop_front() else {
                return;
            };
            let Some(&saved) = self.saved.get(&n) else {
                continue;
            };
            let start = t.max(self.read_free).max(saved);
            self.read_free = start + seconds;
            self.read_ahead
                .entry(n)
                .or_default()
                .push_back(start + seconds);
            self.outstanding += 1;
        }
    }

    /// The end of the oldest read ahead of `n`, taken, if any.
    fn take_read(&mut self, n: Step) -> Option<f64> {
        let queue = self.read_ahead.get_mut(&n)?;
        let end = queue.pop_front();
        if queue.is_empty() {
            self.read_ahead.remove(&n);
        }
        self.outstanding -= u64::from(end.is_some());
        end
    }

    /// Drops the reads ahead of `n` (its snapshot replaced or taken).
    fn drop_reads(&mut self, n: Step) {
        if let Some(queue) = self.read_ahead.remove(&n) {
            self.outstanding -= queue.len() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Bytes, LevelBudget};
    use crate::schedule::{HRevolve, Schedule};
    use crate::Replay;

    fn input(disk: LevelBudget) -> PlanInput {
        let mut input =
            PlanInput::new(Some(60), Bytes(8), Bytes(8 * 4)).with_level(StorageLevel::Disk, disk);
        input.forward_seconds = 1.0;
        input.adjoint_seconds = 2.0;
        input
    }

    fn schedule() -> impl Schedule {
        HRevolve::new(60, 2, 8, crate::schedule::Costs::default()).unwrap()
    }

    /// Without a background level the timeline is the blocking sum.
    #[test]
    fn blocking_levels_add_up() {
        let disk = LevelBudget::new(Bytes(1 << 20), 0.25, 0.75);
        for skip in [false, true] {
            let input = input(disk).with_dead_steps_skipped(skip);
            let cost = Replay::new(60).run(schedule()).unwrap();
            let forward = if skip {
                cost.executed_forward_steps()
            } else {
                cost.forward_steps
            };
            let d = &cost.levels[StorageLevel::Disk];
            let want = forward as f64
                + 2.0 * cost.adjoint_steps as f64
                + 0.25 * d.writes as f64
                + 0.75 * d.reads as f64;
            assert!(d.writes > 0 && d.reads > 0);
            let got = Timeline::seconds(&input, schedule());
            assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        }
    }

    /// Background lanes hide I/O behind the steps: never slower than
    /// blocking, never faster than the steps alone, and a write that takes
    /// no time costs nothing.
    #[test]
    fn lanes_hide_what_the_steps_cover() {
        let lanes = BackgroundIo {
            writes_in_flight: 4,
            staged_snapshots: 8,
        };
        for seconds in [0.0, 0.1, 0.5, 1.0, 3.0, 20.0] {
            let disk = LevelBudget::new(Bytes(1 << 20), seconds, seconds);
            let blocking = Timeline::seconds(&input(disk), schedule());
            let background = Timeline::seconds(&input(disk.in_background(lanes)), schedule());
            let free = Timeline::seconds(&input(LevelBudget::free(Bytes(1 << 20))), schedule());
            assert!(
                background <= blocking + 1e-9,
                "{seconds}: {background} > {blocking}"
            );
            assert!(
                background >= free - 1e-9,
                "{seconds}: {background} < {free}"
            );
            if seconds == 0.0 {
                assert_eq!(background, free);
            }
        }
        // Fast writes, read well ahead: close to the steps alone.
        let disk = LevelBudget::new(Bytes(1 << 20), 0.2, 0.2).in_background(lanes);
        let free = Timeline::seconds(&input(LevelBudget::free(Bytes(1 << 20))), schedule());
        let background = Timeline::seconds(&input(disk), schedule());
        assert!(background < free * 1.05, "{background} vs {free}");
    }

    fn forward(n0: Step, write_ics: bool) -> Action {
        Action::Forward {
            n0,
            n1: n0 + 1,
            write_ics,
            write_adj_deps: false,
            storage: if write_ics {
                StorageLevel::Disk
            } else {
                StorageLevel::None
            },
        }
    }

    /// A write queue of one stalls each save behind the last; a deep one
    /// lets the computation run on, and the end waits for the writes.
    #[test]
    fn a_short_queue_stalls_saves() {
        let disk = LevelBudget::new(Bytes(1 << 20), 1.0, 1.0);
        let reverse = Action::Reverse {
            n1: 3,
            n0: 2,
            clear_adj_deps: true,
        };
        let stream = [
            forward(0, true),
            forward(1, true),
            forward(2, true),
            reverse,
        ];
        let with = |writes_in_flight| {
            let lanes = BackgroundIo {
                writes_in_flight,
                staged_snapshots: writes_in_flight,
            };
            let mut input = input(disk.in_background(lanes));
            input.forward_seconds = 0.0;
            Timeline::seconds(&input, stream)
        };
        // Saves at 0, 1, 2 (each waits for the last), then 2 s of adjoint.
        assert_eq!(with(1), 4.0);
        // Saves at 0, 0, 0 ending at 1, 2, 3; the adjoint ends at 2.
        assert_eq!(with(4), 3.0);
        // Each save's copy costs the computation 0.25 s: saves issued at
        // 0.25, 0.5, 0.75 end at 1.25, 2.25, 3.25; the adjoint ends at 2.75.
        let lanes = BackgroundIo {
            writes_in_flight: 4,
            staged_snapshots: 4,
        };
        let mut copying = input(disk.in_background(lanes).with_issue_seconds(0.25));
        copying.forward_seconds = 0.0;
        assert_eq!(Timeline::seconds(&copying, stream), 3.25);
    }

    /// A read announced ahead runs while the steps before it do.
    #[test]
    fn a_read_announced_ahead_is_hidden() {
        let disk = LevelBudget::new(Bytes(1 << 20), 0.5, 3.0);
        let mut stream: Vec<Action> = vec![forward(0, true)];
        stream.extend((1..11).map(|n| forward(n, false)));
        stream.push(Action::Copy {
            n: 0,
            from: StorageLevel::Disk,
            to: StorageLevel::Work,
        });
        let with = |look_ahead| {
            let lanes = BackgroundIo {
                writes_in_flight: 4,
                staged_snapshots: 8,
            };
            let input = input(disk.in_background(lanes)).with_read_look_ahead(look_ahead);
            Timeline::seconds(&input, stream.clone())
        };
        // 11 steps of 1 s; the read is announced as action 3 starts (t = 3)
        // and ends at 6.
        assert_eq!(with(8), 11.0);
        // Not announced: read when needed, 3 s exposed.
        assert_eq!(with(0), 14.0);
        // Blocking: every write and read exposed.
        assert_eq!(Timeline::seconds(&input(disk), stream.clone()), 14.5);
    }

    /// Announced reads beyond the level's reads ahead wait for one to be
    /// taken: four reads of 2 s announced one every 2 s of forward steps
    /// are all done before the first is needed when four may run ahead,
    /// and run one after another, each started as the one before is taken,
    /// when one may.
    #[test]
    fn reads_ahead_wait_for_room() {
        let disk = LevelBudget::new(Bytes(1 << 20), 0.0, 2.0);
        let mut stream: Vec<Action> = (0..4).map(|n| forward(n, true)).collect();
        stream.extend((4..12).map(|n| forward(n, false)));
        let reverse = Action::Reverse {
            n1: 1,
            n0: 0,
            clear_adj_deps: true,
        };
        for n in (0..4).rev() {
            stream.push(Action::Move {
                n,
                from: StorageLevel::Disk,
                to: StorageLevel::Work,
            });
            stream.push(reverse);
        }
        let with = |staged_snapshots| {
            let lanes = BackgroundIo {
                writes_in_flight: 4,
                staged_snapshots,
            };
            let mut input = input(disk.in_background(lanes)).with_read_look_ahead(8);
            input.adjoint_seconds = 1.0;
            Timeline::seconds(&input, stream.clone())
        };
        // Reads announced at 4, 6, 8 and 10 s end by 12 s: 12 s of forward
        // steps and 4 of reversal.
        assert_eq!(with(8), 16.0);
        // One at a time: the read of 3 ends at 6 s; those of 2, 1, 0 start
        // as the one before is taken (12, 14, 16 s) and each reversal waits
        // 1 s for the next.
        assert_eq!(with(4), 19.0);
    }

    /// A read that made the computation wait widens the window of the
    /// reads after it to twice that wait, in predicted seconds (the
    /// executor's rule): with reads of 15 s every 20 single-step reverses
    /// of 1 s, an eight-action window leaves 7 s of each read exposed; the
    /// first read waits those 7 s, the window then covers 14 s of steps and
    /// each later read waits 1 s.
    #[test]
    fn a_wait_widens_the_read_window() {
        let disk = LevelBudget::new(Bytes(1 << 20), 0.0, 15.0);
        let reads = 10;
        let mut stream: Vec<Action> = (0..reads).map(|n| forward(n, true)).collect();
        let reverse = Action::Reverse {
            n1: 1,
            n0: 0,
            clear_adj_deps: true,
        };
        for n in 0..reads {
            stream.extend(std::iter::repeat_n(reverse, 20));
            stream.push(Action::Copy {
                n,
                from: StorageLevel::Disk,
                to: StorageLevel::Work,
            });
        }
        let lanes = BackgroundIo {
            writes_in_flight: 16,
            staged_snapshots: 16,
        };
        let mut input = input(disk.in_background(lanes)).with_read_look_ahead(8);
        input.forward_seconds = 0.0;
        input.adjoint_seconds = 1.0;
        let steps = 20.0 * reads as f64;
        let got = Timeline::seconds(&input, stream.clone());
        assert!((got - (steps + 7.0 + 9.0 * 1.0)).abs() < 1e-9, "{got}");
        // An eight-action window throughout (reads never widened it) would
        // expose 7 s of every read.
        assert!(got < steps + 7.0 * reads as f64);
    }

    /// Per-step times from a profile: a uniform profile is the scalars.
    #[test]
    fn a_uniform_profile_is_the_scalar_times() {
        let lanes = BackgroundIo {
            writes_in_flight: 2,
            staged_snapshots: 3,
        };
        let disk = LevelBudget::new(Bytes(1 << 20), 0.7, 0.4).in_background(lanes);
        let scalar = input(disk);
        let profile = crate::plan::StepProfile::new(vec![1.0; 60], vec![2.0; 60], vec![8; 60]);
        let mut profiled = scalar.clone();
        profiled.profile = Some(profile.unwrap());
        let (a, b) = (
            Timeline::seconds(&scalar, schedule()),
            Timeline::seconds(&profiled, schedule()),
        );
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
}

//! Optimal checkpointing of heterogeneous chains (per-step costs, per-state
//! sizes, a byte budget): [`HeterogeneousRevolve`], after Beaumont,
//! Eyraud-Dubois, Herrmann, Joly and Shilova, "Optimal checkpointing for
//! heterogeneous chains: how to train deep neural networks with limited
//! memory", arXiv:1911.13214. The model, the recurrence, its complexity and
//! its limits are documented on [`HeterogeneousRevolve`] (this module is
//! private, the type is public); `table.rs` holds the tables, `uniform.rs`
//! the table of a uniform chain with tapes and the enum `Solved` over both,
//! `granularity.rs` picks the memory unit, `build.rs` solves the table for
//! a budget, `emit.rs` unfolds it into actions, `params.rs` names the
//! schedule in a spec.

mod build;
mod calls;
mod chain;
mod emit;
mod granularity;
mod params;
mod runs;
mod table;
#[cfg(test)]
mod tests;
mod uniform;

pub use calls::DriverOverheads;
pub use chain::{ChainCost, HeterogeneousChain};
pub use params::{HeterogeneousRevolveParams, PerStep};
pub use runs::{run_bounds, RunsSchedule};

pub use table::ChainModel;
use uniform::Solved;

use super::{impl_schedule_position, Cursor, Pending, Schedule, ScheduleError};
use crate::action::Step;
use crate::StorageLevel;
use emit::Task;

/// The optimal schedule of a [`HeterogeneousChain`] (steps with their own
/// forward and adjoint costs, states with their own sizes: adaptive time
/// steps, stages of different sizes, a model with a costly step every `k`)
/// under a budget in bytes.
///
/// The dynamic programme follows Beaumont, Eyraud-Dubois, Herrmann, Joly and
/// Shilova, "Optimal checkpointing for heterogeneous chains: how to train
/// deep neural networks with limited memory", arXiv:1911.13214 (2019),
/// adapted to the action model of this crate, and extended so that it is
/// optimal over *every* schedule of that model, not only the persistent
/// ones.
///
/// # Model
///
/// A chain of `n` steps; state `i` (`0 <= i < n`, the forward restart data of
/// step `i`) takes `bytes[i]` bytes when stored; step `i` (state `i` to
/// `i + 1`) costs `forward[i]` and its adjoint `adjoint[i]`. One adjoint
/// pass, one level (RAM). The schedule stores restart checkpoints in RAM
/// (`Forward(.., write_ics = true, .., RAM)`), restores them into the live
/// state (`Copy`/`Move` to WORK) and, as Revolve does, tapes only the step
/// that is reversed next: `Forward(k, k + 1, false, true, WORK)` then
/// `Reverse(k + 1, k, true)`. So the programme decides only which states to
/// store, when, and when to free them.
///
/// **Budget**: the sum of `bytes[i]` over the checkpoints held in RAM at any
/// time is at most the budget. This is exactly what [`crate::Replay`] counts
/// as RAM snapshots, weighted by size (state 0 is one of them, as in
/// Revolve, whose `s` snapshots include state 0). Not counted: the live
/// working state (WORK) and the adjoint dependencies of the one step being
/// reversed (WORK, one step at a time), which every schedule needs and no
/// schedule can avoid. [`HeterogeneousChain::account`] does this byte
/// accounting over any action stream. (A chain with tapes counts the tapes
/// too and may keep them: see *Chains with tapes* below.)
///
/// **Cost**: the sum of `forward[i]` over every forward step advanced
/// (recomputations included) plus the sum of `adjoint[i]` (each once).
///
/// # The dynamic programme
///
/// Memory is counted in units of `g` bytes (the granularity): a state of `b`
/// bytes takes `⌈b / g⌉` units, the budget is `M = ⌊budget / g⌋` units. Any
/// set of checkpoints that fits in `M` units fits in `g·M <= budget` bytes,
/// so rounding is conservative: the real byte budget is never exceeded.
/// With `g` the greatest common divisor of the sizes the rounding is exact
/// (the default when that gives at most [`HeterogeneousRevolve::DEFAULT_UNITS`] units); a coarser
/// `g` may give a costlier schedule, never an invalid one.
///
/// Let `F(a, b) = forward[a] + … + forward[b − 1]` and `s_k` the units of
/// state `k`. `Q(i, l, j, m)` (`i <= l < j`) is the least cost to reverse
/// steps `l..j` when the adjoint is at `j`, the checkpoint of `i` is held
/// (its units not counted in the `m` free units) and nothing else is stored
/// in `i..j`, freeing `i` once it is no longer needed. The first forward
/// from `i` either stores nothing before `j − 1`, or stores a first
/// checkpoint `k`:
///
/// ```text
/// Q(i, l, j, m) = min of
///   sweep:  F(i, j) + adjoint[j−1] + [j−1 > l] Q(i, l, j−1, m)
///   shift:  min over i < k <= min(l, j−2), s_k <= m + s_i of
///             F(i, k) + Q(k, l, j, m + s_i − s_k)          (free i, keep k)
///   split:  min over l < l' < j of  R(i, l', j, m) + Q(i, l, l', m)
/// R(i, l', j, m) = min over i < k <= min(l', j−2), s_k <= m of
///             F(i, k) + Q(k, l', j, m − s_k)
/// ```
///
/// A split stores `k`, reverses `l'..j` from it (freeing it when done:
/// `l' > k` frees it *before* the steps `k..l'` are reversed, which a
/// persistent schedule never does), then reverses `l..l'` from `i`. While
/// `k` is held `i` is idle: a restore of `i` would only advance through `k`
/// again. The answer for the chain is `Q(0, 0, n, M − s_0)` (`n >= 2`: state
/// 0 must be stored for any step but the last to be reversed; `n = 1` needs
/// no checkpoint).
///
/// The paper's programme without tapes (its `F_ck` choice; its `F_all`,
/// storing every activation of a step, is here only the taped step just
/// before each reverse; a chain with tapes has the full choice, below) is
/// the persistent restriction `l = i`, without shifts:
///
/// ```text
/// C(i, j, m) = min( F(i, j) + adjoint[j−1] + C(i, j−1, m),
///                   min over i < k < j−1, s_k <= m of F(i, k) + C(k, j, m − s_k) + C(i, k, m) )
/// ```
///
/// Persistent schedules are not always optimal when sizes differ: with
/// forward costs `[3, 5, 1, 4, 1, 5, 4]`, adjoint costs `[1, 4, 1, 4, 1, 2,
/// 4]`, sizes `[4, 2, 4, 6, 6, 1, 4]` and a budget of 8, the best persistent
/// schedule costs 74 and the best schedule 73 (it frees the checkpoint of
/// state 1 before reversing step 1, to make room). The tests check `Q`
/// against an exhaustive search over every schedule of the model.
///
/// # Chains with tapes: the `F_all` choice
///
/// A chain given tapes ([`HeterogeneousChain::with_tape`]: `tape[i]` the
/// bytes of step `i`'s adjoint dependencies, e.g. a layer's activations,
/// usually much more than its state `bytes[i]`) changes the budget and adds
/// a choice.
///
/// **Budget**: everything held counts at its size, the RAM checkpoints
/// *and* every tape held in WORK, the tape of the step being reversed
/// included: a step is taped only if its tape fits in what is free at that
/// moment. Only the live state is not counted.
///
/// **The tape choice** (the paper's `F_all`, keep all the activations of a
/// step until its backward): from the live state `i`, tape step `i`
/// (`Forward(i, i + 1, false, true, WORK)`), the checkpoint of `i` freed
/// (it was restored with a `Move`, or never stored: nothing reruns step `i`
/// once its tape is held), reverse `i + 1..j` in the memory left, then
/// `Reverse(i + 1, i, true)` frees the tape. Several steps' tapes are then
/// held at once, and the budget decides per step whether its tape is kept
/// from the forward or recomputed from a checkpoint.
///
/// With `t_k` the units of step `k`'s tape, `D(i, j, m)` is the least cost
/// to reverse steps `i..j` when the adjoint is at `j`, the state `i` is
/// live or held, and `m` units are free for `i..j`, a checkpoint of `i`
/// included (∞ where no case applies):
///
/// ```text
/// D(i, i+1, m) = forward[i] + adjoint[i]                     if t_i <= m
/// D(i, j, m)   = min of                                       (j >= i + 2)
///   sweep:  F(i, j) + adjoint[j−1] + D(i, j−1, m)             if s_i + t_{j−1} <= m
///   split:  min over i < k < j−1 of
///             F(i, k) + D(k, j, m − s_i) + D(i, k, m)         if s_i <= m
///   tape:   forward[i] + adjoint[i] + D(i+1, j, m − t_i)      if t_i <= m
/// ```
///
/// and the answer is `D(0, n, M)`. This is the paper's recurrence over
/// persistent schedules, `C(s, t, m)` the least of its `F_ck` and `F_all`
/// terms (`sweep` and `split` are the `F_ck` term, `tape` the `F_all`
/// term), written in the action model of this crate. Two differences follow
/// from that model. A tape cannot restart the forward (the paper's `F_all`
/// also keeps the step's output), so the sub-chain after a taped step
/// starts from its own state, whose checkpoint, if the sub-chain needs it,
/// is counted in `D(i+1, j, ·)`; and no recomputation runs through a step
/// whose tape is held. The tests check `D` against a Dijkstra search over
/// every persistent schedule with tape choices under these rules (a
/// checkpoint is freed only when its step is taped from it; no advance
/// crosses a held tape).
///
/// Without tapes, `D` with `t = 0` is `C` with `m` counting `s_i`, but the
/// tape-less table is still `C`, so tape-less schedules are unchanged. The
/// exact model `Q` is not extended: a chain with tapes is solved in
/// [`ChainModel::Persistent`] (by [`HeterogeneousRevolve::new`]; asking
/// [`HeterogeneousRevolve::with_granularity`] for [`ChainModel::Exact`] is an
/// error). Memory units are those of the states and tapes together (their
/// greatest common divisor, coarsened as above; when rounding every tape up
/// takes away what the chain needs, [`HeterogeneousRevolve::new`] halves
/// the unit while the table stays within the limits). The least budget is
/// `P(0, n)`, `P(i, i+1) = tape[i]`, `P(i, j) = min(max(bytes[i] +
/// tape[j−1], P(i, j−1)), min over k of max(bytes[i] + P(k, j), P(i, k)),
/// tape[i] + P(i+1, j))` in bytes, reported by
/// [`ScheduleError::BudgetTooSmall`] (`O(n³)`, computed only then). A
/// budget that holds every tape at once needs no table: every step is taped
/// in the forward and kept, and runs once (`D`'s `tape` choice throughout,
/// the least cost of any schedule).
///
/// # Uniform chains with tapes: `D(l, m)`
///
/// A recurrent loop (an RNN or GRU over thousands of time steps) is a
/// chain whose steps are all alike: the same `forward`, `adjoint`, state
/// size `s` and tape size `t` ([`HeterogeneousChain::is_uniform`]). Then
/// `D(i, j, m)` depends on `i` and `j` only through the length `l = j − i`,
/// and [`HeterogeneousRevolve::new`] (and
/// [`HeterogeneousRevolve::with_granularity`] in
/// [`ChainModel::Persistent`]) solves, with `f = forward`, `a = adjoint`,
/// sizes in units,
///
/// ```text
/// D(1, m) = f + a                                             if t <= m
/// D(l, m) = min of                                            (l >= 2)
///   sweep:  l·f + a + D(l−1, m)                               if s + t <= m
///   split:  min over 0 < k < l−1 of  k·f + D(l−k, m − s) + D(k, m)   if s <= m
///   tape:   f + a + D(l−1, m − t)                             if t <= m
/// ```
///
/// the same recurrence with `k` counted from `i`, so its schedules cost
/// exactly the general table's (the tests check both tables, and the
/// exhaustive search, on random uniform chains). It has `n·(M+1)` cells
/// and takes about `n²·M/2` evaluations: `O(n²·M)` time, `O(n·M)` memory.
/// The least budget `P` likewise depends only on `l` and is `O(n²)`.
///
/// **Granularity**: [`HeterogeneousRevolve::new`] counts a uniform chain
/// in units of the greatest common divisor of `s` and `t` while the budget
/// holds at most `M_max(n)` of them, else in units of `⌈budget /
/// M_max(n)⌉` bytes, with `M_max(n) = UNIFORM_WORK / (n(n+1)/2)` clamped to
/// [`HeterogeneousRevolve::UNIFORM_MIN_UNITS`]`..=`[`HeterogeneousRevolve::UNIFORM_MAX_UNITS`]
/// ([`HeterogeneousRevolve::UNIFORM_WORK`] = 1.2·10⁹ evaluations, about
/// 1 s): `M` at most 598 at `n = 2000`, 22 at `n = 10,000`. Sizes round
/// up and the budget down, so the byte budget is never exceeded; a unit
/// coarser than a state counts each state as a whole unit, which costs
/// some recomputation: with tapes 6× the state and a budget of 2000
/// states at `n = 2000` the default (a unit of 3.3 states, `M = 597`,
/// 0.92 s) costs 7705 where a unit of one state (`M = 2000`, 3.4 s, by
/// [`HeterogeneousRevolve::with_granularity`]) costs 7668, against 6000
/// for no recomputation at all. Where rounding leaves too little for what
/// the chain needs, the unit is halved as for other chains with tapes.
///
/// Measured (release build, one core of a shared 2-core machine, `f = 1`,
/// `a = 2`, tapes 6× the state, `tests/heterogeneous_tape.rs`, test
/// `timings_uniform`): `n = 2000, M = 100`: 0.18 s; `n = 2000, M = 200`:
/// 0.38 s; `n = 2000, M = 1000`: 1.7 s; `n = 10,000, M = 40`: 1.6 s
/// (about 1.2·10⁹ evaluations a second: the inner loop streams two rows
/// into a running minimum, the choices found again only for the cells the
/// schedule visits; it was 8·10⁸ when each cell's choice was kept beside
/// it). A 600-step GRU loop as the PyTorch bridge measures it (tapes 8×
/// the state, the driver's overheads priced, so `D'` too) builds in 49 ms
/// at a budget of 398 states, 216 ms at 1598 and 345 ms at 2398.
/// The limits are [`HeterogeneousRevolve::CELL_LIMIT`] and
/// [`HeterogeneousRevolve::WORK_LIMIT`] on this table's own size: `n =
/// 10,000` up to `M = 98`, `n = 20,000` up to `M = 23`.
///
/// Tape-less uniform chains keep the tables above (uniform
/// [`crate::Revolve`] is already optimal for them, in `O(snapshots)`
/// memory).
///
/// # The driver's overheads: `D'`
///
/// A driver pays besides the steps a fixed price per restore of a
/// checkpoint into the live state (`c`) and per backward call (`b`): the
/// PyTorch bridge calls `torch.autograd.grad` once per run of *linked*
/// tapes (each recorded from the previous one's outputs and reversed
/// right after it) and once per other step
/// ([`HeterogeneousChain::with_overheads`], counted by
/// [`HeterogeneousChain::account`]). Where steps are small these prices
/// dominate, and a schedule of many single-step calls and restores loses
/// to one with runs of tapes. With them, `D` of a chain with tapes splits
/// in two: `D(i, j, m)` as above and `D'(i, j, m)`, the same sub-problem
/// when the live state `i` is the output of a tape just recorded (so a
/// tape from it joins that tape's call):
///
/// ```text
/// D(i, i+1, m)  = forward[i] + adjoint[i] + b,   D'(i, i+1, m) = forward[i] + adjoint[i]
/// S(i, j, m)    = min( F(i, j) + adjoint[j−1] + b + c + D(i, j−1, m)     if s_i + t_{j−1} <= m,
///                      min over i < k < j−1 of
///                        F(i, k) + c + D(k, j, m − s_i) + D(i, k, m)     if s_i <= m )
/// D(i, j, m)    = min(S(i, j, m), forward[i] + adjoint[i] + b + D'(i+1, j, m − t_i))
/// D'(i, j, m)   = min(S(i, j, m), forward[i] + adjoint[i] + D'(i+1, j, m − t_i))
/// ```
///
/// (a sweep's rest and a split's lower part start with a restore of `i`;
/// a sweep's step is a call of its own), and likewise `D(l, m)`, `D'(l, m)`
/// for a uniform chain. `D'` is kept only when `b > 0`, doubling the
/// table's memory (`c` alone needs no second table); with both zero the
/// schedules are those above. The tests check both tables against the
/// Dijkstra search with the prices and a flag for the live state's origin.
/// Outside the model: freeing a split's checkpoint `k` when step `k` is
/// taped from a recomputed state (joining it to the call of the steps
/// below), which could save one call per split.
///
/// # Complexity, and where it stops being practical
///
/// | model | time | memory |
/// | --- | --- | --- |
/// | [`ChainModel::Exact`] (`Q`, `R`) | `O(n⁴·M)`, about `n⁴·M/12` evaluations | `n³·(M+1)/6` cells of 24 bytes |
/// | [`ChainModel::Persistent`] (`C`) | `O(n³·M)`, about `n³·M/6` evaluations | `n²·(M+1)/2` cells of 12 bytes |
/// | [`ChainModel::Persistent`] with tapes (`D`) | `O(n³·M)`, about `n³·M/6` evaluations | `n²·(M+1)/2` cells of 12 bytes |
/// | uniform chain with tapes (`D(l, m)`) | `O(n²·M)`, about `n²·M/2` evaluations | `n·(M+1)` cells of 12 bytes |
///
/// With tapes `M` counts the budget in units of states and tapes (capped
/// at all of them together), so it is usually larger for the same chain;
/// the tape choice adds one `O(M)` row per cell, nothing to the order.
/// Measured with tapes (same conditions, `tests/heterogeneous_tape.rs`,
/// test `timings`): `n = 200, M = 100`: 0.35 s; `n = 400, M = 100`: 2.9 s;
/// `n = 1000, M = 15`: 9 s, as without tapes; the limits are the same.
/// A uniform chain with tapes: `n = 2000, M = 200`: 0.38 s; `n = 10,000,
/// M = 40`: 1.6 s (above).
///
/// Measured (release build, one core of a shared machine, so roughly):
/// exact `n = 50, M = 25`: 40 ms; `n = 100, M = 25`: 1.3 s; `n = 200,
/// M = 5`: 5 s. Persistent `n = 200, M = 25`: 50 ms; `n = 400, M = 100`:
/// 2.9 s; `n = 1000, M = 15`: 9 s. Tables are refused with
/// [`ScheduleError::TooLarge`] beyond [`HeterogeneousRevolve::CELL_LIMIT`]
/// (2²³ cells, at most 200 MB) or [`HeterogeneousRevolve::WORK_LIMIT`]
/// (5·10⁹ evaluations, about 15 s). The exact model stops at `n = 100,
/// M = 47`, `n = 150, M = 13` or `n = 200, M = 5` (its memory binds first),
/// the persistent one at `n = 400, M = 103`, `n = 1000, M = 15` or
/// `n = 2000, M = 2` (memory, then time past `n ≈ 1800`).
/// [`HeterogeneousRevolve::new`] takes the exact model when it needs at most
/// 10⁸ evaluations (about 0.3 s: `n = 50, M = 80`, `n = 70, M = 20`), else
/// the persistent one, whose schedules cost the same on almost every chain
/// (one in 3000 random chains of up to 7 steps differed, by 1 in 74) and
/// exactly Revolve's on uniform ones, with at most
/// [`HeterogeneousRevolve::DEFAULT_UNITS`] units.
///
/// Beyond the persistent limits, [`HeterogeneousRevolve::new`] returns
/// [`ScheduleError::TooLarge`]; it does not plan a schedule itself. What a
/// planner should do then (not implemented here):
///
/// * coarsen the chain: group consecutive steps into at most a few hundred
///   segments (a segment's forward and adjoint costs the sums of its
///   steps', its size the size of its first state, and the memory a
///   segment's own reversal needs reserved), solve the segment chain here
///   and reverse each segment with [`crate::Revolve`] in the memory left; or
/// * coarsen the memory: a coarser granularity
///   ([`HeterogeneousRevolve::with_granularity`]) shrinks `M`, at some cost
///   in recomputation, never in validity; or
/// * fall back to uniform [`crate::Revolve`] with `⌊budget / max(bytes)⌋`
///   snapshots: valid within the byte budget, optimal when the costs and
///   sizes are uniform, and in `O(snapshots)` memory for any `n` (the
///   baseline of the bench `benches/heterogeneous.rs`).
///
/// ```
/// use checkpointing_schedule::{HeterogeneousChain, HeterogeneousRevolve, Replay};
/// let forward: Vec<f64> = (0..30).map(|i| if i % 10 == 9 { 20.0 } else { 1.0 }).collect();
/// let chain = HeterogeneousChain::new(forward, vec![1.0; 30], vec![100; 30]).unwrap();
/// let schedule = HeterogeneousRevolve::new(&chain, 300).unwrap(); // 3 states fit
/// let predicted = schedule.predicted_cost();
/// let cost = chain.account(schedule.clone());
/// assert!(cost.peak_bytes <= 300);
/// assert_eq!(cost.total(), predicted);
/// Replay::new(30).ram_budget(3).require_freed(true).run(schedule).unwrap();
/// ```
///
/// With tapes four times the states, the budget holds checkpoints and
/// tapes together, and some steps keep their tape from the forward:
///
/// ```
/// use checkpointing_schedule::{HeterogeneousChain, HeterogeneousRevolve, Replay};
/// let chain = HeterogeneousChain::uniform(30, 1.0, 2.0, 100)
///     .unwrap()
///     .with_tape(vec![400; 30])
///     .unwrap();
/// let schedule = HeterogeneousRevolve::new(&chain, 3000).unwrap();
/// let cost = chain.account(schedule.clone());
/// assert!(cost.peak_bytes <= 3000);
/// assert_eq!(cost.total(), schedule.predicted_cost());
/// let replay = Replay::new(30).require_freed(true).run(schedule).unwrap();
/// assert!(replay.peak_work_steps > 1); // several tapes held at once
/// ```
#[derive(Debug, Clone)]
pub struct HeterogeneousRevolve {
    cursor: Cursor,
    pending: Pending,
    /// `None` for a single step.
    table: Option<Solved>,
    stack: Vec<Task>,
    forward_ended: bool,
    /// Adjoint steps advanced by the actions queued.
    r: Step,
    done: bool,
    predicted: f64,
    granularity: u64,
    units: u64,
    model: ChainModel,
    /// Every tape fits at once: tape every step in the forward (no table).
    all_tapes: bool,
}

impl HeterogeneousRevolve {
    /// Most memory units [`HeterogeneousRevolve::new`] uses: with a budget over
    /// `DEFAULT_UNITS` times the greatest common divisor of the sizes, the
    /// granularity is coarsened to `⌈budget / Self::DEFAULT_UNITS⌉` bytes.
    pub const DEFAULT_UNITS: u64 = 256;

    /// Evaluations [`HeterogeneousRevolve::new`] aims at for a uniform chain
    /// with tapes (about 1 s in a release build; the uniform table runs
    /// about 1.2·10⁹ evaluations a second): it coarsens the memory unit until
    /// the uniform table `D(l, m)`, about `n(n+1)/2·(M+1)` evaluations, is
    /// within them (`M` about 600 for `n = 2000`, 2400 for `n = 1000`, 22
    /// for `n = 10,000`), but never below [`Self::UNIFORM_MIN_UNITS`] units.
    pub const UNIFORM_WORK: u64 = 1_200_000_000;

    /// Fewest memory units [`HeterogeneousRevolve::new`] coarsens a uniform
    /// chain with tapes to (the work then exceeds
    /// [`Self::UNIFORM_WORK`], up to [`Self::WORK_LIMIT`]: `n ≈ 24,000`).
    pub const UNIFORM_MIN_UNITS: u64 = 16;

    /// Most memory units [`HeterogeneousRevolve::new`] uses for a uniform
    /// chain with tapes, however short (a short chain could afford more,
    /// but more than this resolves the budget finer than any state).
    pub const UNIFORM_MAX_UNITS: u64 = 4096;

    /// Most cells (24 bytes each) a table may have: 2²³, about 200 MB.
    pub const CELL_LIMIT: u64 = table::CELL_LIMIT;

    /// Most candidate evaluations a table may take: 5·10⁹, about 15 s in a
    /// release build.
    pub const WORK_LIMIT: u64 = table::WORK_LIMIT;

    /// The optimal schedule of `chain` with at most `budget` bytes of
    /// checkpoints in RAM. Memory is counted in units of the greatest common
    /// divisor of the sizes (exact) when the budget is at most
    /// [`HeterogeneousRevolve::DEFAULT_UNITS`] of them, else of `⌈budget / Self::DEFAULT_UNITS⌉` bytes
    /// (conservative). The model is [`ChainModel::Exact`] when its table
    /// needs at most 10⁸ evaluations (about 0.3 s), else
    /// [`ChainModel::Persistent`].
    ///
    /// A uniform chain with tapes ([`HeterogeneousChain::is_uniform`]) is
    /// solved in the uniform table `D(l, m)`, `O(n²·M)`, with its own
    /// granularity (see *Uniform chains with tapes* on the type): a
    /// recurrent loop of 2000 steps in about a second.
    ///
    /// ```
    /// use checkpointing_schedule::{HeterogeneousChain, HeterogeneousRevolve};
    /// // 2000 identical steps, tapes 6× the state, a budget of 50 states.
    /// let chain = HeterogeneousChain::uniform(2000, 1.0, 2.0, 1024)
    ///     .unwrap()
    ///     .with_tape(vec![6 * 1024; 2000])
    ///     .unwrap();
    /// let (_, cells, _) = HeterogeneousRevolve::table_size(&chain, 50 * 1024);
    /// assert_eq!(cells, 2000 * 51); // n·(M + 1)
    /// ```
    ///
    /// Errors: [`ScheduleError::BudgetTooSmall`] when `n >= 2` and the budget
    /// cannot hold state 0 (the smallest budget is `bytes[0]`);
    /// [`ScheduleError::TooLarge`] when even the persistent table is over
    /// the limits.
    ///
    /// ```
    /// use checkpointing_schedule::{HeterogeneousChain, HeterogeneousRevolve, ScheduleError};
    /// let chain = HeterogeneousChain::uniform(10, 1.0, 1.0, 64).unwrap();
    /// assert!(HeterogeneousRevolve::new(&chain, 64).is_ok());
    /// assert!(matches!(
    ///     HeterogeneousRevolve::new(&chain, 63).unwrap_err(),
    ///     ScheduleError::BudgetTooSmall { need: 64, got: 63, .. }
    /// ));
    /// ```
    pub fn new(chain: &HeterogeneousChain, budget: u64) -> Result<Self, ScheduleError> {
        if chain.uniform_taped().is_some() {
            let granularity = Self::uniform_granularity(chain, budget);
            return Self::build_finer(chain, budget, granularity);
        }
        let granularity = Self::default_granularity(chain, budget);
        if chain.tape.is_some() {
            return Self::build_finer(chain, budget, granularity);
        }
        let exact = Self::build(
            chain,
            budget,
            granularity,
            ChainModel::Exact,
            table::EXACT_DEFAULT_WORK,
            true,
        );
        match exact {
            Err(ScheduleError::TooLarge { .. }) => Self::build(
                chain,
                budget,
                granularity,
                ChainModel::Persistent,
                table::WORK_LIMIT,
                true,
            ),
            other => other,
        }
    }

    /// The optimal schedule of `chain` in `model` with at most `budget`
    /// bytes of checkpoints, memory counted in units of `granularity` bytes
    /// (sizes rounded up, the budget down).
    ///
    /// Errors: as [`HeterogeneousRevolve::new`], and
    /// [`ScheduleError::InvalidParameter`] for a zero granularity or one so
    /// coarse that state 0 no longer fits while its bytes do.
    ///
    /// ```
    /// use checkpointing_schedule::{HeterogeneousChain, HeterogeneousRevolve, ChainModel};
    /// let chain = HeterogeneousChain::new(vec![1.0; 6], vec![1.0; 6], vec![3, 5, 7, 2, 2, 9]).unwrap();
    /// let exact = HeterogeneousRevolve::with_granularity(&chain, 12, 1, ChainModel::Exact).unwrap();
    /// let coarse = HeterogeneousRevolve::with_granularity(&chain, 12, 4, ChainModel::Exact).unwrap();
    /// assert!(exact.predicted_cost() <= coarse.predicted_cost());
    /// ```
    pub fn with_granularity(
        chain: &HeterogeneousChain,
        budget: u64,
        granularity: u64,
        model: ChainModel,
    ) -> Result<Self, ScheduleError> {
        Self::build(chain, budget, granularity, model, table::WORK_LIMIT, true)
    }

    /// The cost the schedule attains: the forward cost of every step
    /// advanced (recomputations included) plus the adjoint cost of every
    /// step, as [`HeterogeneousChain::account`] counts it.
    pub fn predicted_cost(&self) -> f64 {
        self.predicted
    }

    /// The granularity: bytes per memory unit.
    pub fn granularity(&self) -> u64 {
        self.granularity
    }

    /// The budget in memory units, `M` (capped at the units of all states).
    pub fn units(&self) -> u64 {
        self.units
    }

    /// The family of schedules the table optimised over.
    pub fn model(&self) -> ChainModel {
        self.model
    }
}

super::pending_iterator!(HeterogeneousRevolve, |s| s.done);

impl Schedule for HeterogeneousRevolve {
    impl_schedule_position!();

    fn is_exhausted(&self) -> bool {
        self.done && self.pending.is_empty()
    }

    fn uses_storage(&self, level: StorageLevel) -> bool {
        matches!(level, StorageLevel::Ram | StorageLevel::Work)
    }
}

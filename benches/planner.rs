//! The planner against measurement: for the heat equation and Burgers at
//! 10³ steps, three budgets each (tight RAM, roomier RAM, tight RAM plus
//! disk), and the heat equation at 10⁴ and 10⁵ steps, three budgets each
//! (RAM, and RAM plus disk twice): twelve budgets. Measure the
//! problem and the stores with `Executor::measure`, plan, then run the
//! planner's pick and the alternatives it ranked, timing each gradient.
//! Per budget a table (schedule, predicted s, measured s, error %, time as
//! a ratio to store-all measured in the same run) and a summary: the pick,
//! its time, the fastest measured, pick / fastest (target ≤ 1.10) and the
//! share of predictions within 20% (target: all).
//!
//! A last column gives the run's CPU time (mean over the rounds, 10 ms
//! ticks) over its best wall time: well below 1 means the machine was
//! busy with other work while it ran (the load average is printed too).
//!
//! Runs: the pick, the next 11 by predicted time, and the best-ranked
//! configuration of every other family the planner considered that fits —
//! not all of them (the planner costs up to 300). Store-all (single-memory)
//! is run as the peer even where it does not fit the budget (marked
//! "peer"); the fastest is taken among the schedules that fit. Each time
//! is the best of `PLANNER_BENCH_REPEAT` (default 3) rounds, interleaved
//! so that the machine's noise hits all schedules alike; every gradient is
//! checked bitwise against store-all's.
//!
//! Each budget prints its plan time; the end, a table of plan time,
//! pick / fastest and predictions within 20% per budget.
//!
//! Sizes: `PLANNER_BENCH_HEAT=cells,steps` (default 20000,1000),
//! `PLANNER_BENCH_BURGERS=cells,steps` (default 10000,1000),
//! `PLANNER_BENCH_HEAT_1E4` (default 1000,10000) and
//! `PLANNER_BENCH_HEAT_1E5` (default 100,100000); disk
//! snapshots go to a temporary directory under `$TMPDIR`.
//!
//! Run: `cargo bench -p checkpointing-benches --bench planner`

use std::time::Instant;

use checkpointing::plan::{plan, Bytes, Candidate};
use checkpointing::schedule::SingleMemoryParams;
use checkpointing::{
    DiskStore, Executor, Measurements, MemoryStore, PlanBudget, Problem, ScheduleSpec, Step,
    StorageLevel, UserError,
};
use checkpointing_examples::burgers::Burgers;
use checkpointing_examples::heat::HeatEquation;

/// Schedules run per budget besides the best of each other family (at
/// 10³ and 10⁴ steps).
const TOP: usize = 12;

/// The same at 10⁵ steps.
const TOP_LARGE: usize = 4;

/// Candidates predicted this many times slower than the pick are listed,
/// not run (Revolve with one snapshot: minutes).
const SLOWER: f64 = 10.0;

/// Steps the measurement times (more than the default 5, for a steadier
/// median on a shared machine; 1.6% of the forward steps redone).
const PROBE_STEPS: Step = 16;

/// A problem of the benchmark: how to make it and its terminal condition.
trait Subject: Problem<State = Vec<f64>, Adjoint = Vec<f64>> + Clone {
    fn name() -> &'static str;
    fn make(cells: usize) -> Self;
    fn start(&self) -> Vec<f64>;
    fn terminal(u: &[f64]) -> Vec<f64>;
}

impl Subject for HeatEquation {
    fn name() -> &'static str {
        "heat"
    }
    fn make(cells: usize) -> Self {
        // A cubic reaction, so that the adjoint reads the states.
        HeatEquation::with_reaction(cells, 0.4, 1e-4)
    }
    fn start(&self) -> Vec<f64> {
        // A field of order 1 everywhere: from the example's field (20 at one
        // end, zero elsewhere) the diffusion front and the cubic reaction
        // make subnormal numbers as the run goes on, so a step costs more
        // later (twice as much here) than in the first steps the
        // measurement times.
        let n = self.cells;
        (0..n)
            .map(|i| {
                let x = i as f64 / (n - 1) as f64;
                20.0 * (1.0 - x) + 5.0 * (std::f64::consts::PI * 7.0 * x).sin()
            })
            .collect()
    }
    fn terminal(u: &[f64]) -> Vec<f64> {
        HeatEquation::objective_gradient(u)
    }
}

impl Subject for Burgers {
    fn name() -> &'static str {
        "burgers"
    }
    fn make(cells: usize) -> Self {
        Burgers::new(cells, 1e-4)
    }
    fn start(&self) -> Vec<f64> {
        self.initial_state()
    }
    fn terminal(u: &[f64]) -> Vec<f64> {
        Burgers::objective_gradient(u)
    }
}

/// `NAME=a,b` from the environment, else the defaults.
fn sizes(name: &str, default: (usize, Step)) -> (usize, Step) {
    let Ok(text) = std::env::var(name) else {
        return default;
    };
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    match parts.as_slice() {
        [cells, steps] => (
            cells.parse().expect("cells: a number"),
            steps.parse().expect("steps: a number"),
        ),
        _ => panic!("{name}=cells,steps"),
    }
}

fn repeat() -> usize {
    std::env::var("PLANNER_BENCH_REPEAT")
        .ok()
        .map_or(3, |r| r.parse().expect("PLANNER_BENCH_REPEAT: a number"))
}

/// A budget of the benchmark.
struct Case {
    name: &'static str,
    ram_states: u64,
    disk_states: Option<u64>,
    /// Schedules run besides the best of each other family (fewer at
    /// 10⁵ steps, where each run takes seconds).
    top: usize,
}

/// An executor for `case`: RAM in memory, disk in a fresh temporary
/// directory when the case has a disk budget.
fn executor<'p>(case: &Case) -> Executor<'p, Vec<f64>> {
    match case.disk_states {
        Some(_) => Executor::new(MemoryStore::new(), DiskStore::temporary().unwrap()),
        None => Executor::in_memory(),
    }
}

/// This thread's CPU time (user + system) in seconds, from
/// `/proc/thread-self/stat` (clock ticks, usually 10 ms); `None` where
/// there is no such file.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which is in parentheses).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The machine's load averages, to judge the timings by.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// One gradient under `spec`, timed (the schedule's construction
/// excluded): the gradient, the wall seconds, the forward steps and the
/// CPU seconds.
fn gradient<P: Subject>(
    case: &Case,
    cells: usize,
    spec: &ScheduleSpec,
) -> (Vec<f64>, f64, u64, f64) {
    let mut problem = P::make(cells);
    let start_state = problem.start();
    let mut executor = executor(case);
    let schedule = spec.build().unwrap();
    let terminal = |u: &Vec<f64>| -> Result<Vec<f64>, UserError> { Ok(P::terminal(u)) };
    let cpu = cpu_seconds().unwrap_or(0.0);
    let start = Instant::now();
    let out = if schedule.max_n().is_some() {
        executor.run(&mut problem, schedule, start_state, terminal)
    } else {
        let steps = spec.steps();
        executor.run_online(
            &mut problem,
            schedule,
            start_state,
            |n, _| n == steps,
            terminal,
        )
    }
    .unwrap();
    let wall = start.elapsed().as_secs_f64();
    (
        out.adjoint,
        wall,
        out.stats.forward_steps,
        cpu_seconds().unwrap_or(0.0) - cpu,
    )
}

/// A short label: the name and the parameters that are not the step
/// count or a cost.
fn label(spec: &ScheduleSpec) -> String {
    let value = serde_json::to_value(spec).unwrap();
    let mut text = spec.name().to_string();
    if let Some(map) = value.as_object() {
        for (key, v) in map {
            if [
                "schedule", "max_n", "steps", "uf", "ub", "wd", "rd", "costs",
            ]
            .contains(&key.as_str())
            {
                continue;
            }
            let v = match v {
                serde_json::Value::String(s) => s.to_lowercase(),
                serde_json::Value::Bool(b) => b.to_string(),
                serde_json::Value::Number(n) => n.to_string(),
                // Levels: each level's name and integer fields.
                serde_json::Value::Array(items) => items
                    .iter()
                    .filter_map(|item| item.as_object())
                    .map(|fields| {
                        fields
                            .values()
                            .filter_map(|f| match f {
                                serde_json::Value::String(s) => Some(s.to_lowercase()),
                                serde_json::Value::Number(n) if n.is_u64() => Some(n.to_string()),
                                _ => None,
                            })
                            .collect::<Vec<_>>()
                            .join(":")
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                _ => continue,
            };
            let short: String = key.split('_').filter_map(|w| w.chars().next()).collect();
            text.push_str(&format!(" {short}={v}"));
        }
    }
    text
}

/// The candidates to run: the first `top`, then the best of every other
/// family.
fn chosen(all: &[Candidate], top: usize) -> Vec<&Candidate> {
    let limit = all[0].predicted_seconds * SLOWER;
    let all: Vec<&Candidate> = all
        .iter()
        .filter(|c| c.predicted_seconds <= limit)
        .collect();
    let mut picked: Vec<&Candidate> = all.iter().copied().take(top).collect();
    for &candidate in all.iter().skip(top) {
        if !picked
            .iter()
            .any(|c| c.spec.name() == candidate.spec.name())
        {
            picked.push(candidate);
        }
    }
    picked
}

/// Summary figures of one budget.
struct Summary {
    label: String,
    plan_seconds: f64,
    ratio: f64,
    within: usize,
    rows: usize,
}

fn bench_case<P: Subject>(case: &Case, cells: usize, steps: Step) -> Summary {
    let problem = P::make(cells);
    let start_state = problem.start();
    let state = (std::mem::size_of::<checkpointing::Checkpoint<Vec<f64>>>()
        + checkpointing::Footprint::footprint(&start_state)) as u64;
    let mut budget =
        PlanBudget::new(steps, Bytes(case.ram_states * state)).with_probe_steps(PROBE_STEPS);
    if let Some(disk) = case.disk_states {
        budget = budget.with_disk(Bytes(disk * state));
    }
    let terminal = |u: &Vec<f64>| -> Result<Vec<f64>, UserError> { Ok(P::terminal(u)) };
    let m: Measurements = executor(case)
        .measure(&problem, &budget, &start_state, terminal)
        .unwrap();
    let input = m.plan_input(&budget);
    let planning = Instant::now();
    let plan = plan(&input).unwrap();
    let plan_seconds = planning.elapsed().as_secs_f64();
    let all: Vec<Candidate> = std::iter::once(plan.best.clone())
        .chain(plan.alternatives.iter().cloned())
        .collect();
    let runs = chosen(&all, case.top);
    let store_all: ScheduleSpec = SingleMemoryParams { steps }.into();
    let peer_fits = runs.iter().any(|c| c.spec == store_all);

    println!(
        "\n{} {cells} cells × {steps} steps, {}: RAM {} ({} states){}",
        P::name(),
        case.name,
        budget.ram(),
        case.ram_states,
        case.disk_states
            .map(|d| format!(", disk {} ({d} states)", Bytes(d * state)))
            .unwrap_or_default(),
    );
    let disk = m.levels[StorageLevel::Disk]
        .map(|d| {
            format!(
                ", disk write {:.3} ms read {:.3}/{:.3} ms (copy/move), {} B a snapshot",
                d.write_seconds * 1e3,
                d.copy_read_seconds * 1e3,
                d.move_read_seconds * 1e3,
                d.snapshot_bytes
            )
        })
        .unwrap_or_default();
    let ram = m.levels[StorageLevel::Ram].unwrap();
    println!(
        "  measured in {:.1} ms: forward {:.1} µs, adjoint {:.1} µs, copy {:.1} µs (into a new buffer {:.1} µs) a step; state {} B; RAM write {:.1} µs read {:.1}/{:.1} µs{disk}",
        m.seconds * 1e3,
        m.forward_seconds * 1e6,
        m.adjoint_seconds * 1e6,
        m.copy_seconds * 1e6,
        m.fresh_copy_seconds * 1e6,
        m.state_bytes,
        ram.write_seconds * 1e6,
        ram.copy_read_seconds * 1e6,
        ram.move_read_seconds * 1e6,
    );
    println!(
        "  planner: {} RAM + {} disk snapshots, {} candidates fit ({} not costed), planned in {:.3} s; running {} (top {} and the best of each other family, none predicted over {SLOWER}× the pick){}",
        plan.snapshots[StorageLevel::Ram],
        plan.snapshots[StorageLevel::Disk],
        all.len(),
        plan.not_costed.len(),
        plan_seconds,
        runs.len(),
        case.top,
        if peer_fits { "" } else { " and store-all as the peer" },
    );

    // Interleaved rounds, best time of each.
    let mut specs: Vec<&ScheduleSpec> = runs.iter().map(|c| &c.spec).collect();
    if !peer_fits {
        specs.push(&store_all);
    }
    let mut best = vec![f64::INFINITY; specs.len()];
    let mut forward = vec![0; specs.len()];
    let mut cpu = vec![0.0; specs.len()];
    let reference = gradient::<P>(case, cells, &store_all).0;
    for _ in 0..repeat() {
        for (i, spec) in specs.iter().enumerate() {
            let (g, t, f, c) = gradient::<P>(case, cells, spec);
            assert!(
                g.iter()
                    .zip(&reference)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{} differs from store-all",
                label(spec)
            );
            best[i] = best[i].min(t);
            forward[i] = f;
            cpu[i] += c / repeat() as f64;
        }
    }
    // Store-all is run, as a candidate or as the peer.
    let peer_time = specs
        .iter()
        .zip(&best)
        .find(|(s, _)| ***s == store_all)
        .map(|(_, t)| *t)
        .expect("store-all is run");

    println!(
        "  {:<44} {:>7} {:>11} {:>11} {:>8} {:>9} {:>7}",
        "schedule", "fwd", "predicted s", "measured s", "error", "/ st-all", "cpu/wall"
    );
    let mut within = 0;
    let mut fastest = (f64::INFINITY, String::new());
    for (i, candidate) in runs.iter().enumerate() {
        let error = best[i] / candidate.predicted_seconds - 1.0;
        if error.abs() <= 0.2 {
            within += 1;
        }
        if best[i] < fastest.0 {
            fastest = (best[i], label(&candidate.spec));
        }
        println!(
            "  {:<44} {:>7} {:>11.4} {:>11.4} {:>+7.1}% {:>9.2} {:>7.2}{}",
            label(&candidate.spec),
            forward[i],
            candidate.predicted_seconds,
            best[i],
            error * 100.0,
            best[i] / peer_time,
            cpu[i] / best[i],
            if i == 0 { "  <- pick" } else { "" },
        );
    }
    if !peer_fits {
        println!(
            "  {:<44} {:>7} {:>11} {:>11.4} {:>8} {:>9.2}  (peer, over budget)",
            label(&store_all),
            forward[specs.len() - 1],
            "-",
            peer_time,
            "",
            1.0
        );
    }
    let ratio = best[0] / fastest.0;
    println!(
        "  summary: pick {} {:.4} s; fastest {} {:.4} s; pick/fastest {:.3}; predictions within 20%: {within}/{} ({:.0}%)",
        label(&runs[0].spec),
        best[0],
        fastest.1,
        fastest.0,
        ratio,
        runs.len(),
        100.0 * within as f64 / runs.len() as f64
    );
    Summary {
        label: format!("{} {cells}×{steps} {}", P::name(), case.name),
        plan_seconds,
        ratio,
        within,
        rows: runs.len(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let heat = sizes("PLANNER_BENCH_HEAT", (20_000, 1_000));
    let burgers = sizes("PLANNER_BENCH_BURGERS", (10_000, 1_000));
    let heat_1e4 = sizes("PLANNER_BENCH_HEAT_1E4", (1_000, 10_000));
    let heat_1e5 = sizes("PLANNER_BENCH_HEAT_1E5", (100, 100_000));
    let case = |name, ram_states, disk_states, top| Case {
        name,
        ram_states,
        disk_states,
        top,
    };
    let cases = |steps: Step| {
        [
            case("tight RAM", 8, None, TOP),
            case("roomier RAM", (steps / 10).max(12), None, TOP),
            case("tight RAM + disk", 8, Some(steps / 4), TOP),
        ]
    };
    println!(
        "planner benchmark: predicted against measured gradient time (best of {} rounds); load average {}",
        repeat(),
        load()
    );
    let mut summaries = Vec::new();
    for c in cases(heat.1) {
        summaries.push(bench_case::<HeatEquation>(&c, heat.0, heat.1));
    }
    for c in cases(burgers.1) {
        summaries.push(bench_case::<Burgers>(&c, burgers.0, burgers.1));
    }
    let n4 = heat_1e4.1;
    for c in [
        case("tight RAM", 16, None, TOP),
        case("tight RAM + disk", 16, Some(n4 / 4), TOP),
        case("roomier RAM + disk", 100, Some(n4 / 4), TOP),
    ] {
        summaries.push(bench_case::<HeatEquation>(&c, heat_1e4.0, heat_1e4.1));
    }
    let n5 = heat_1e5.1;
    for c in [
        case("RAM", 400, None, TOP_LARGE),
        case("RAM + disk", 200, Some(n5 / 10), TOP_LARGE),
        case("tight RAM + disk", 50, Some(n5 / 10), TOP_LARGE),
    ] {
        summaries.push(bench_case::<HeatEquation>(&c, heat_1e5.0, heat_1e5.1));
    }
    let picks_ok = summaries.iter().filter(|s| s.ratio <= 1.10).count();
    let (within, rows) = summaries
        .iter()
        .fold((0, 0), |(w, r), s| (w + s.within, r + s.rows));
    println!("\nload average at the end {}", load());
    println!(
        "\n{:<44} {:>9} {:>13} {:>14}",
        "budget", "plan s", "pick/fastest", "within 20%"
    );
    for s in &summaries {
        println!(
            "{:<44} {:>9.3} {:>13.3} {:>9}/{:<4}",
            s.label, s.plan_seconds, s.ratio, s.within, s.rows
        );
    }
    println!(
        "overall: pick within 10% of the fastest in {picks_ok}/{} budgets; predictions within 20%: {within}/{rows} ({:.0}%); longest plan {:.3} s",
        summaries.len(),
        100.0 * within as f64 / rows as f64,
        summaries.iter().map(|s| s.plan_seconds).fold(0.0, f64::max)
    );
}

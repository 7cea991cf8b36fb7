//! A `HeterogeneousRevolve` schedule of a chain with tapes, which keeps
//! several steps' adjoint dependencies in WORK at once (taped in the
//! forward, reversed later) and recomputes others from checkpoints, run end
//! to end by the executor: the gradient equals store-all's.

use checkpointing::{
    Executor, FnProblem, HeterogeneousChain, HeterogeneousRevolve, Replay, SingleMemory,
    StorageLevel,
};

#[test]
fn a_tape_mixing_schedule_gives_the_store_all_gradient() {
    let n = 24;
    let forward: Vec<f64> = (0..n).map(|i| if i % 6 == 5 { 8.0 } else { 1.0 }).collect();
    let chain = HeterogeneousChain::new(forward, vec![2.0; n], vec![100; n])
        .unwrap()
        .with_tape(vec![300; n])
        .unwrap();
    let budget = 1500;
    let schedule = HeterogeneousRevolve::new(&chain, budget).unwrap();
    let replay = Replay::new(n as u64)
        .require_freed(true)
        .run(schedule.clone())
        .unwrap();
    // Several tapes held at once, and some recomputation: a mix.
    assert!(replay.peak_work_steps >= 2, "{}", replay.peak_work_steps);
    assert!(replay.forward_steps > n as u64);
    assert!(chain.account(schedule.clone()).peak_bytes <= budget);

    let mut problem = FnProblem::new(
        |i, x: &mut Vec<f64>| x[0] = x[0] * (1.0 + 1e-3 * i as f64) + x[1].sin(),
        |i, x: &Vec<f64>, l: &mut Vec<f64>| {
            l[1] += l[0] * x[1].cos();
            l[0] *= 1.0 + 1e-3 * i as f64;
        },
    );
    let terminal = |_: &Vec<f64>| Ok(vec![1.0, 0.0]);
    let mut executor = Executor::in_memory();
    let ours = executor
        .run(&mut problem, schedule, vec![0.5, 0.25], terminal)
        .unwrap();
    let all = Executor::in_memory()
        .run_online(
            &mut problem,
            SingleMemory::new(),
            vec![0.5, 0.25],
            |k, _| k == n as u64,
            terminal,
        )
        .unwrap();
    assert_eq!(ours.adjoint, all.adjoint);
    assert_eq!(
        executor.store(StorageLevel::Ram).map(|ram| ram.len()),
        Some(0)
    );
}

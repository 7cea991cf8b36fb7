//! OnlineR2 (Stumm & Walther 2010): valid for every number of steps, and,
//! within its range `n <= (s + 1)(s + 2)/2 - 1`, as cheap as any online
//! schedule can be: checked against the closed form and against an
//! independent search over every checkpoint distribution.

use checkpointing_schedule::schedule;
use checkpointing_schedule::{
    binomial_forward_steps, Action, Drive, OnlineR2, Replay, Schedule, ScheduleError, ScheduleSpec,
    StorageLevel,
};
use proptest::prelude::*;

/// Drives OnlineR2 for `n` steps and replays it within `s` RAM snapshots.
fn forward_steps(n: u64, s: u64) -> u64 {
    let cost = ScheduleSpec::OnlineR2(schedule::OnlineR2Params {
        steps: n,
        snapshots: s,
    })
    .cost()
    .unwrap_or_else(|e| panic!("s = {s}, n = {n}: {e}"));
    assert_eq!(cost.adjoint_steps, n);
    assert!(
        cost.levels[StorageLevel::Ram].peak <= s,
        "s = {s}, n = {n}: {} held",
        cost.levels[StorageLevel::Ram].peak
    );
    assert_eq!(
        (cost.levels[StorageLevel::Disk].writes, cost.peak_work_steps),
        (0, 1)
    );
    cost.forward_steps
}

/// Forward steps to reverse `m` steps from a stored start with `j`
/// snapshots (the start included), not counting the step taped before each
/// adjoint step: the classical recursion over the first checkpoint's
/// position, independent of the binomial closed form.
fn reversal_table(max_m: usize, max_j: usize) -> Vec<Vec<u64>> {
    let mut t = vec![vec![0u64; max_m + 1]; max_j + 1];
    for (m, cost) in t[1].iter_mut().enumerate().skip(1) {
        *cost = (m as u64) * (m as u64 - 1) / 2;
    }
    for j in 2..=max_j {
        for m in 2..=max_m {
            t[j][m] = (1..m)
                .map(|c| c as u64 + t[j - 1][m - c] + t[j][c])
                .min()
                .unwrap();
        }
    }
    t
}

/// The fewest forward steps of any online schedule stopped at `n`: the
/// forward, the taped steps, and the cheapest reversal over every set of at
/// most `s` checkpoints `0 = c_0 < ... < c_k < n` (segment `i` reversed with
/// the `s - i` snapshots then free).
fn best_online(n: usize, s: usize, t: &[Vec<u64>]) -> u64 {
    // rest[i][c]: cheapest reversal of c..n when checkpoint i is at c.
    let mut rest = vec![vec![u64::MAX; n]; s];
    for i in (0..s).rev() {
        for c in 0..n {
            let mut best = t[s - i][n - c];
            if i + 1 < s {
                for next in c + 1..n {
                    best = best.min(t[s - i][next - c] + rest[i + 1][next]);
                }
            }
            rest[i][c] = best;
        }
    }
    2 * n as u64 + rest[0][0]
}

#[test]
fn optimal_within_range_and_equal_to_the_best_distribution() {
    for s in 1..=7u64 {
        let range = OnlineR2::optimal_range(s);
        assert_eq!(range, (s + 1) * (s + 2) / 2 - 1);
        let t = reversal_table(range as usize + 8, s as usize);
        for n in 1..=range + 8 {
            let online = forward_steps(n, s);
            let best = best_online(n as usize, s as usize, &t);
            if n <= range {
                assert_eq!(online, best, "s = {s}, n = {n}");
            } else {
                assert!(online >= best, "s = {s}, n = {n}");
            }
        }
    }
}

#[test]
fn paper_bound_against_offline_revolve() {
    // Reversing n steps online costs what reversing n + 1 offline does (the
    // last step cannot be taped during the forward): one forward step more
    // than Revolve(n, s) while n <= s, two more up to the range's end.
    for s in 1..=40u64 {
        let range = OnlineR2::optimal_range(s);
        let mut ns: Vec<u64> = (1..=range.min(400)).collect();
        ns.extend([range - 1, range].into_iter().filter(|&n| n >= 1));
        for n in ns {
            let online = forward_steps(n, s);
            let offline = binomial_forward_steps(n, s).unwrap();
            assert_eq!(online, binomial_forward_steps(n + 1, s).unwrap() - 1);
            let extra = if n <= s { 1 } else { 2 };
            assert_eq!(online, offline + extra, "s = {s}, n = {n}");
        }
    }
}

#[test]
fn beyond_the_range_the_fallback_stays_close_to_the_bound() {
    // Measured, not proved: the greedy placement's forward steps stay
    // within 12% of binomial_forward_steps(n + 1, s) - 1 (which no online
    // schedule is known to reach there).
    for s in [1u64, 2, 3, 6, 10] {
        let range = OnlineR2::optimal_range(s);
        for n in (range + 1..=range * 8 + 40).step_by(3) {
            let online = forward_steps(n, s) as f64;
            let bound = (binomial_forward_steps(n + 1, s).unwrap() - 1) as f64;
            assert!(
                online >= bound && online <= 1.12 * bound,
                "s = {s}, n = {n}: {online} vs {bound}"
            );
        }
    }
}

#[test]
fn checkpoints_follow_the_left_fill() {
    let mut schedule = OnlineR2::new(4).unwrap();
    let mut seen = Vec::new();
    while schedule.n() < OnlineR2::optimal_range(4) {
        schedule.next().unwrap();
        if seen.last().is_none_or(|(n, _)| *n != schedule.n()) {
            seen.push((schedule.n(), schedule.checkpoints()));
        }
    }
    let at = |n: u64| seen.iter().find(|(m, _)| *m == n).unwrap().1.clone();
    assert_eq!(at(4), [0, 1, 2, 3]);
    assert_eq!(at(5), [0, 2, 3, 4]);
    assert_eq!(at(9), [0, 5, 7, 8]);
    // Full: segments of 5, 4, 3 and 2 steps.
    assert_eq!(at(14), [0, 5, 9, 12]);
}

#[test]
fn drops_are_moves_to_none_and_the_forward_never_tapes() {
    let actions: Vec<Action> = Drive::new(OnlineR2::new(3).unwrap(), 9)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let end = actions
        .iter()
        .position(|a| *a == Action::EndForward)
        .unwrap();
    for action in &actions[..end] {
        match *action {
            Action::Forward {
                n1,
                n0,
                write_adj_deps,
                ..
            } => {
                assert_eq!((n1 - n0, write_adj_deps), (1, false));
            }
            Action::Move { to, .. } => assert_eq!(to, StorageLevel::None),
            ref other => panic!("unexpected {other} in the forward"),
        }
    }
    assert_eq!(actions.last(), Some(&Action::EndReverse));
}

#[test]
fn finalizing_inside_a_step_still_reverses_validly() {
    // A user finalizing right after a drop, before that step's forward.
    for s in 1..=6u64 {
        for n in 1..60u64 {
            let mut schedule = OnlineR2::new(s).unwrap();
            let mut actions = Vec::new();
            loop {
                let action = schedule.next().unwrap();
                actions.push(action);
                if schedule.n() == n
                    && matches!(action, Action::Move { .. } | Action::Forward { .. })
                {
                    break;
                }
            }
            schedule.finalize(n).unwrap();
            actions.extend(schedule.by_ref());
            assert!(schedule.is_exhausted());
            let cost = Replay::new(n)
                .ram_budget(s)
                .require_freed(true)
                .run(actions)
                .unwrap_or_else(|e| panic!("s = {s}, n = {n}: {e}"));
            assert_eq!(cost.adjoint_steps, n);
        }
    }
}

#[test]
fn errors_are_typed() {
    assert!(matches!(
        OnlineR2::new(0),
        Err(ScheduleError::TooFewSnapshots {
            got: 0,
            need: 1,
            ..
        })
    ));
    let mut schedule = OnlineR2::new(2).unwrap();
    assert_eq!(
        schedule.finalize(3),
        Err(ScheduleError::FinalizeAhead { n: 3, forward: 0 })
    );
    while schedule.n() < 3 {
        schedule.next();
    }
    schedule.finalize(3).unwrap();
    // The same n again, with the forward still there: a no-op.
    assert_eq!(schedule.finalize(3), Ok(()));
    assert!(matches!(
        schedule.finalize(4),
        Err(ScheduleError::FinalizeMismatch { n: 4, max_n: 3, .. })
    ));
    // Once the forward has left step 3, even the same n is refused.
    while schedule.n() == 3 {
        schedule.next();
    }
    assert!(matches!(
        schedule.finalize(3),
        Err(ScheduleError::FinalizeMismatch { n: 3, max_n: 3, .. })
    ));
    assert_eq!(OnlineR2::optimal_range(u64::MAX), u64::MAX);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn valid_for_every_number_of_steps(n in 1u64..3000, s in 1u64..60) {
        let online = forward_steps(n, s);
        let bound = binomial_forward_steps(n + 1, s).unwrap() - 1;
        if n <= OnlineR2::optimal_range(s) {
            prop_assert_eq!(online, bound);
        } else {
            prop_assert!(online >= bound);
        }
    }
}

//! Async Disk-Revolve: valid under the replay checker, its actions cost
//! what its recurrence says under the overlap model (timed here from the
//! actions alone), and that is the least over every segmentation of the
//! chain (found here by exhaustive search).

use checkpointing_schedule::schedule::{AsyncDiskRevolve, Costs, DiskRevolve};
use checkpointing_schedule::{Action, Replay, Revolve, StorageLevel};
use proptest::prelude::*;

/// The overlap model timed from an action stream: a non-taped forward step
/// costs `uf`, a reverse step `ub` (a taped step's forward is in it, as
/// Revolve's reference costs count it); a disk write is issued at the
/// start of its `Forward` after the previous write ends (one in flight)
/// and takes `wd` beside the steps; a disk read starts when the read lane
/// was last released (the end of the forward that wrote the last disk
/// checkpoint, or the previous read's use) and the action needing it
/// waits for its `rd`.
fn modelled(actions: impl IntoIterator<Item = Action>, costs: Costs) -> f64 {
    let (mut t, mut write_end, mut read_lane) = (0.0f64, 0.0f64, 0.0f64);
    for action in actions {
        match action {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => {
                let disk_write = write_ics && storage == StorageLevel::Disk;
                if disk_write {
                    t = t.max(write_end);
                    write_end = t + costs.wd;
                }
                if !write_adj_deps {
                    t += (n1 - n0) as f64 * costs.uf;
                }
                if disk_write {
                    read_lane = t;
                }
            }
            Action::Reverse { n1, n0, .. } => t += (n1 - n0) as f64 * costs.ub,
            Action::Copy { from, .. } | Action::Move { from, .. } if from == StorageLevel::Disk => {
                t = t.max(read_lane + costs.rd);
                read_lane = t;
            }
            _ => {}
        }
    }
    t
}

/// Revolve's cost of `l` steps as Disk-Revolve counts them (the reference's
/// `opt_0(l, cm)`): `Revolve(l + 1, cm)` timed by [`modelled`].
fn revolve(l: u64, cm: u64, costs: Costs) -> f64 {
    modelled(Revolve::new(l + 1, cm).unwrap(), costs)
}

/// The model's cost of disk segments `js` (first to last) and a tail, from
/// the definition: the forward through the segments, each write after the
/// first waiting `max(0, wd − j·uf)` for the one `j` steps before it; the
/// tail's reversal; each segment's read hidden behind the reversal before
/// it (`max(R, rd)`); the first segment's reversal.
fn segmented(js: &[u64], tail: u64, cm: u64, c: Costs) -> f64 {
    let r = |l| revolve(l, cm, c);
    let Some((&first, _)) = js.split_first() else {
        return r(tail);
    };
    let forward: f64 = js.iter().map(|&j| j as f64 * c.uf).sum();
    let stalls: f64 = js[..js.len() - 1]
        .iter()
        .map(|&j| (c.wd - j as f64 * c.uf).max(0.0))
        .sum();
    let hidden_reads: f64 = js[1..].iter().map(|&j| r(j - 1).max(c.rd)).sum();
    forward + stalls + r(tail).max(c.rd) + hidden_reads + r(first - 1)
}

/// The least [`segmented`] cost over every split of `l` steps into
/// segments of at least one step and a tail of at least one (or none).
fn exhaustive(l: u64, cm: u64, c: Costs) -> f64 {
    fn go(rest: u64, js: &mut Vec<u64>, cm: u64, c: Costs, best: &mut f64) {
        if !js.is_empty() || rest >= 2 {
            *best = best.min(segmented(js, rest, cm, c));
        }
        for j in 1..rest {
            js.push(j);
            go(rest - j, js, cm, c, best);
            js.pop();
        }
    }
    let mut best = f64::INFINITY;
    go(l, &mut Vec::new(), cm, c, &mut best);
    best.min(revolve(l, cm, c))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn costs() -> impl Strategy<Value = Costs> {
    (
        prop_oneof![Just(1.0), 0.1f64..3.0],
        prop_oneof![Just(1.0), 0.1f64..3.0],
        0.0f64..30.0,
        0.0f64..30.0,
    )
        .prop_map(|(uf, ub, wd, rd)| Costs { uf, ub, wd, rd })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Valid for the replay checker with its RAM budget, one adjoint per
    /// step, and its actions cost its recurrence's value.
    #[test]
    fn valid_and_costs_its_recurrence(max_n in 1u64..400, cm in 1u64..6, c in costs()) {
        let schedule = AsyncDiskRevolve::new(max_n, cm, c).unwrap();
        let value = schedule.modelled_cost();
        let cost = Replay::new(max_n).ram_budget(cm).run(schedule.clone()).unwrap();
        prop_assert_eq!(cost.adjoint_steps, max_n);
        prop_assert!(cost.levels[StorageLevel::Ram].peak <= cm);
        let timed = modelled(schedule, c);
        prop_assert!(close(timed, value), "actions {} against recurrence {}", timed, value);
    }

    /// The recurrence's value is the least over every segmentation.
    #[test]
    fn optimal_over_every_segmentation(max_n in 1u64..13, cm in 1u64..4, c in costs()) {
        let value = AsyncDiskRevolve::new(max_n, cm, c).unwrap().modelled_cost();
        let best = exhaustive(max_n - 1, cm, c);
        prop_assert!(close(value, best), "recurrence {} against exhaustive {}", value, best);
    }

    /// Never worse than Disk-Revolve's blocking-optimal schedule under the
    /// overlap model.
    #[test]
    fn never_worse_than_disk_revolve_when_overlapped(max_n in 2u64..300, cm in 1u64..5, c in costs()) {
        let ours = AsyncDiskRevolve::new(max_n, cm, c).unwrap().modelled_cost();
        let theirs = modelled(DiskRevolve::new(max_n, cm, c).unwrap(), c);
        prop_assert!(ours <= theirs * (1.0 + 1e-9), "ours {} against Disk-Revolve's {}", ours, theirs);
    }
}

/// With a disk write as long as several steps, the overlapped schedule
/// writes a checkpoint every few steps and recomputes far less than
/// Disk-Revolve, which pays each write in full.
#[test]
fn hides_writes_that_disk_revolve_avoids() {
    let c = Costs {
        uf: 1.0,
        ub: 2.0,
        wd: 6.0,
        rd: 6.0,
    };
    let (n, cm) = (1000, 4);
    let replay = || Replay::new(n).ram_budget(cm);
    let ours = replay()
        .run(AsyncDiskRevolve::new(n, cm, c).unwrap())
        .unwrap();
    let blocking = replay().run(DiskRevolve::new(n, cm, c).unwrap()).unwrap();
    assert!(ours.forward_steps < blocking.forward_steps);
    assert!(ours.levels[StorageLevel::Disk].writes > blocking.levels[StorageLevel::Disk].writes);
    let timed_ours = modelled(AsyncDiskRevolve::new(n, cm, c).unwrap(), c);
    let timed_blocking = modelled(DiskRevolve::new(n, cm, c).unwrap(), c);
    assert!(
        timed_ours < 0.9 * timed_blocking,
        "{timed_ours} against {timed_blocking}"
    );
}

/// Bad parameters are typed errors, as Disk-Revolve's.
#[test]
fn bad_parameters_are_errors() {
    assert!(AsyncDiskRevolve::new(0, 2, Costs::REFERENCE).is_err());
    assert!(AsyncDiskRevolve::new(10, 0, Costs::REFERENCE).is_err());
    let nan = Costs {
        wd: f64::NAN,
        ..Costs::REFERENCE
    };
    assert!(AsyncDiskRevolve::new(10, 2, nan).is_err());
}

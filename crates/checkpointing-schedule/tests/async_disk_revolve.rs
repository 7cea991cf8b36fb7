//! Async Disk-Revolve: valid under the replay checker, its actions cost
//! what its recurrence says under the overlap model (timed here from the
//! actions alone), and that is the least over every segmentation of the
//! chain (found here by exhaustive search).

use checkpointing_schedule::schedule::{AsyncDiskRevolve, Costs, DiskRevolve, OverlapCosts};
use checkpointing_schedule::{Action, Replay, Revolve, StorageLevel};
use proptest::prelude::*;

/// The overlap model timed from an action stream: a non-taped forward step
/// costs `uf`, a reverse step `ub` (a taped step's forward is in it, as
/// Revolve's reference costs count it); a disk write is issued at the
/// start of its `Forward` after the previous write ends (one in flight),
/// costs the computation its copy `issue` and then takes `wd` beside the
/// steps, slowing them by `contention · wd`; a disk read starts when the
/// read lane was last released (the end of the forward that wrote the last
/// disk checkpoint, or the previous read's use), slows the steps by
/// `contention · rd`, and the action needing it waits for its `rd`.
fn modelled(actions: impl IntoIterator<Item = Action>, costs: Costs, o: OverlapCosts) -> f64 {
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
                    t = t.max(write_end) + o.issue;
                    write_end = t + costs.wd;
                    t += o.contention * costs.wd;
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
                t = (t + o.contention * costs.rd).max(read_lane + costs.rd);
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
    modelled(
        Revolve::new(l + 1, cm).unwrap(),
        costs,
        OverlapCosts::default(),
    )
}

/// The model's cost of disk segments `js` (first to last) and a tail, from
/// the definition: the forward through the segments, each write paying its
/// copy and contention `issue + κ·wd` and, after the first, waiting
/// `max(0, (1 − κ)·wd − j·uf)` for the one `j` steps before it; the tail's
/// reversal; each segment's read hidden behind the reversal `r` before it
/// (`max(r + κ·rd, rd)`); the first segment's reversal.
fn segmented(js: &[u64], tail: u64, cm: u64, c: Costs, o: OverlapCosts) -> f64 {
    let r = |l| revolve(l, cm, c);
    let hiding = |r: f64| (r + o.contention * c.rd).max(c.rd);
    let Some((&first, _)) = js.split_first() else {
        return r(tail);
    };
    let forward: f64 = js.iter().map(|&j| j as f64 * c.uf).sum();
    let paid = js.len() as f64 * (o.issue + o.contention * c.wd);
    let stalls: f64 = js[..js.len() - 1]
        .iter()
        .map(|&j| ((1.0 - o.contention) * c.wd - j as f64 * c.uf).max(0.0))
        .sum();
    let hidden_reads: f64 = js[1..].iter().map(|&j| hiding(r(j - 1))).sum();
    forward + paid + stalls + hiding(r(tail)) + hidden_reads + r(first - 1)
}

/// The least [`segmented`] cost over every split of `l` steps into
/// segments of at least one step and a tail of at least one (or none).
fn exhaustive(l: u64, cm: u64, c: Costs, o: OverlapCosts) -> f64 {
    fn go(rest: u64, js: &mut Vec<u64>, cm: u64, c: (Costs, OverlapCosts), best: &mut f64) {
        *best = best.min(segmented(js, rest, cm, c.0, c.1));
        for j in 1..rest {
            js.push(j);
            go(rest - j, js, cm, c, best);
            js.pop();
        }
    }
    let mut best = f64::INFINITY;
    go(l, &mut Vec::new(), cm, (c, o), &mut best);
    best
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

fn overlap() -> impl Strategy<Value = OverlapCosts> {
    (
        prop_oneof![Just(0.0), 0.0f64..2.0],
        prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
    )
        .prop_map(|(issue, contention)| OverlapCosts { issue, contention })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Valid for the replay checker with its RAM budget, one adjoint per
    /// step, and its actions cost its recurrence's value.
    #[test]
    fn valid_and_costs_its_recurrence(max_n in 1u64..400, cm in 1u64..6, c in costs(), o in overlap()) {
        let schedule = AsyncDiskRevolve::with_overlap(max_n, cm, c, o).unwrap();
        let value = schedule.modelled_cost();
        let cost = Replay::new(max_n).ram_budget(cm).run(schedule.clone()).unwrap();
        prop_assert_eq!(cost.adjoint_steps, max_n);
        prop_assert!(cost.levels[StorageLevel::Ram].peak <= cm);
        let timed = modelled(schedule, c, o);
        prop_assert!(close(timed, value), "actions {} against recurrence {}", timed, value);
    }

    /// The recurrence's value is the least over every segmentation.
    #[test]
    fn optimal_over_every_segmentation(max_n in 1u64..13, cm in 1u64..4, c in costs(), o in overlap()) {
        let value = AsyncDiskRevolve::with_overlap(max_n, cm, c, o).unwrap().modelled_cost();
        let best = exhaustive(max_n - 1, cm, c, o);
        prop_assert!(close(value, best), "recurrence {} against exhaustive {}", value, best);
    }

    /// Never worse than Disk-Revolve's blocking-optimal schedule under the
    /// overlap model.
    #[test]
    fn never_worse_than_disk_revolve_when_overlapped(max_n in 2u64..300, cm in 1u64..5, c in costs(), o in overlap()) {
        let ours = AsyncDiskRevolve::with_overlap(max_n, cm, c, o).unwrap().modelled_cost();
        let theirs = modelled(DiskRevolve::new(max_n, cm, c).unwrap(), c, o);
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
    let free = OverlapCosts::default();
    let timed_ours = modelled(AsyncDiskRevolve::new(n, cm, c).unwrap(), c, free);
    let timed_blocking = modelled(DiskRevolve::new(n, cm, c).unwrap(), c, free);
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
    for bad in [
        OverlapCosts {
            issue: -1.0,
            contention: 0.0,
        },
        OverlapCosts {
            issue: 0.0,
            contention: 1.5,
        },
        OverlapCosts {
            issue: 0.0,
            contention: f64::NAN,
        },
    ] {
        assert!(AsyncDiskRevolve::with_overlap(10, 2, Costs::REFERENCE, bad).is_err());
    }
}

/// With the steps and the I/O on one core (`contention = 1`), every disk
/// access costs the computation in full, as Disk-Revolve prices it: the
/// schedule writes no more than Disk-Revolve does.
#[test]
fn on_one_core_it_writes_no_more_than_disk_revolve() {
    let c = Costs {
        uf: 1.0,
        ub: 2.0,
        wd: 6.0,
        rd: 6.0,
    };
    let one_core = OverlapCosts {
        issue: 0.0,
        contention: 1.0,
    };
    let (n, cm) = (500, 4);
    let replay = || Replay::new(n).ram_budget(cm);
    let ours = replay()
        .run(AsyncDiskRevolve::with_overlap(n, cm, c, one_core).unwrap())
        .unwrap();
    let blocking = replay().run(DiskRevolve::new(n, cm, c).unwrap()).unwrap();
    assert!(ours.levels[StorageLevel::Disk].writes <= blocking.levels[StorageLevel::Disk].writes);
}

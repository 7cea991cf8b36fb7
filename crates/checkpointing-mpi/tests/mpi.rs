//! The distributed heat gradient (`heat-mpi`) under `mpiexec -n 1, 2, 4`:
//! the gradient with respect to the initial field is bitwise the
//! single-process store-all gradient with the disk level blocking and in
//! the background (the default), `∂J/∂λ` agrees to rounding, each rank's
//! peak snapshot memory is its share (blocking), and a corrupted snapshot on one
//! rank or a rank given another schedule stops every rank with a clear error
//! in bounded time. The launcher is `$CHECKPOINTING_MPIEXEC` or `mpiexec`.

use checkpointing::schedule;
use std::time::{Duration, Instant};

use checkpointing::ScheduleSpec;

mod common;

use common::{line, mpiexec, single_process_gradient, CELLS, STEPS};

fn specs() -> Vec<ScheduleSpec> {
    vec![
        ScheduleSpec::DiskRevolve(schedule::DiskRevolveParams {
            max_n: STEPS,
            snapshots_in_ram: 3,
            costs: Default::default(),
        }),
        ScheduleSpec::Multistage(schedule::MultistageParams {
            max_n: STEPS,
            snapshots_in_ram: 2,
            snapshots_on_disk: 3,
            trajectory: checkpointing::Trajectory::Maximum,
        }),
        ScheduleSpec::Revolve(schedule::RevolveParams {
            max_n: STEPS,
            snapshots_in_ram: 5,
            ..Default::default()
        }),
    ]
}

/// `(rank, bytes, cells)` of each `peak` line.
fn peaks(stdout: &str) -> Vec<(usize, u64, usize)> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("peak "))
        .map(|l| {
            let f: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            (f[0] as usize, f[1], f[2] as usize)
        })
        .collect()
}

#[test]
fn the_gradient_is_the_single_process_one_on_1_2_and_4_ranks() {
    let (want, want_grad_lambda) = single_process_gradient(CELLS, STEPS);
    for spec in specs() {
        let json = serde_json::to_string(&spec).unwrap();
        let mut single_peak = 0;
        for ranks in [1, 2, 4] {
            // The blocking disk: each rank's peak is then its share of the
            // snapshots alone (a background disk's staged copies depend on
            // timing; its gradient is checked below).
            let args = [
                "--cells",
                &CELLS.to_string(),
                "--schedule",
                &json,
                "--blocking-disk",
            ];
            let out = mpiexec(ranks, &args);
            assert!(out.success, "{ranks} ranks, {json}: {}", out.stderr);
            assert_eq!(line(&out.stdout, "ranks "), ranks.to_string());
            assert_eq!(
                line(&out.stdout, "gradient "),
                want,
                "{ranks} ranks, {json}: dJ/dT0 differs from the single-process store-all gradient"
            );
            let grad_lambda: f64 = line(&out.stdout, "grad_lambda ").parse().unwrap();
            let relative = (grad_lambda - want_grad_lambda).abs() / want_grad_lambda.abs();
            assert!(relative < 1e-12, "{ranks} ranks: dJ/dλ off by {relative:e}");
            // Each rank holds its share of the snapshot memory.
            let peaks = peaks(&out.stdout);
            assert_eq!(peaks.len(), ranks);
            if ranks == 1 {
                single_peak = peaks[0].1;
                continue;
            }
            for (rank, bytes, cells) in peaks {
                let share = single_peak as f64 * cells as f64 / CELLS as f64;
                assert!(
                    (bytes as f64) <= 1.05 * share && bytes > 0,
                    "rank {rank} of {ranks}: {bytes} bytes of snapshots, share {share}"
                );
            }
        }
    }
}

#[test]
fn the_background_disk_gives_the_single_process_gradient() {
    // The default disk level, written and read ahead on background lanes.
    let (want, _) = single_process_gradient(CELLS, STEPS);
    for spec in &specs()[..2] {
        let json = serde_json::to_string(spec).unwrap();
        for ranks in [1, 2, 4] {
            let out = mpiexec(ranks, &["--cells", &CELLS.to_string(), "--schedule", &json]);
            assert!(out.success, "{ranks} ranks, {json}: {}", out.stderr);
            assert_eq!(
                line(&out.stdout, "gradient "),
                want,
                "{ranks} ranks, {json}"
            );
        }
    }
}

#[test]
fn a_corrupted_snapshot_on_one_rank_stops_every_rank_with_a_clear_error() {
    let spec = serde_json::to_string(&specs()[0]).unwrap();
    for ranks in [2, 4] {
        let start = Instant::now();
        let out = mpiexec(
            ranks,
            &["--cells", "100", "--schedule", &spec, "--corrupt-rank", "1"],
        );
        assert!(
            !out.success,
            "{ranks} ranks: a corrupted snapshot went unnoticed"
        );
        for rank in 0..ranks {
            assert!(
                out.stderr.contains(&format!("heat-mpi: rank {rank}: ")),
                "rank {rank} of {ranks} reported nothing: {}",
                out.stderr
            );
        }
        assert_eq!(
            out.stderr
                .matches("rank 1 failed: snapshot of step")
                .count(),
            ranks - 1,
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("is corrupted"), "{}", out.stderr);
        assert!(out.stderr.contains("checksum mismatch"), "{}", out.stderr);
        assert!(start.elapsed() < Duration::from_secs(30));
    }
}

#[test]
fn ranks_given_different_schedules_all_refuse_to_start() {
    let spec = serde_json::to_string(&specs()[0]).unwrap();
    let other = serde_json::to_string(&specs()[2]).unwrap();
    let out = mpiexec(
        3,
        &[
            "--cells",
            "100",
            "--schedule",
            &spec,
            "--schedule-on-rank",
            &format!("2={other}"),
        ],
    );
    assert!(!out.success);
    for rank in 0..3 {
        assert!(
            out.stderr.contains(&format!(
                "heat-mpi: rank {rank}: schedule differs between ranks"
            )),
            "rank {rank} did not report the mismatch: {}",
            out.stderr
        );
    }
    assert_eq!(out.stderr.matches("ranks [2] have other values").count(), 3);
}

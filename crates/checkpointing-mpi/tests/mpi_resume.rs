//! MPI runs that resume after a rank dies (`heat-mpi --journal`): one rank
//! aborts mid-forward or mid-adjoint, the launcher ends the job, the job
//! started again with the same arguments resumes from the ranks' journals
//! and gives the uninterrupted gradient bit for bit, on 2 and 4 ranks and
//! on 16 ranks oversubscribed on this machine's cores, leaving no snapshot
//! or journal behind. Ranks whose journals disagree start over (no stale
//! snapshot used); a snapshot file lost while the job was down is a
//! collective error naming the rank and the step.

use std::fs;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use checkpointing::schedule::DiskRevolveParams;
use checkpointing::{ScheduleSpec, Step};

mod common;

use common::{line, mpiexec, single_process_gradient, Output};

/// One job at a time: they share the machine's two cores.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn spec(steps: Step) -> String {
    serde_json::to_string(&ScheduleSpec::DiskRevolve(DiskRevolveParams {
        max_n: steps,
        snapshots_in_ram: 3,
        costs: Default::default(),
    }))
    .unwrap()
}

/// `heat-mpi --journal` on `ranks` ranks in `dir`, with `extra` arguments.
fn job(ranks: usize, cells: usize, steps: Step, dir: &Path, extra: &[&str]) -> Output {
    let cells = cells.to_string();
    let spec = spec(steps);
    let dir = dir.to_str().unwrap();
    let mut args = vec![
        "--cells",
        &cells,
        "--schedule",
        &spec,
        "--disk",
        dir,
        "--journal",
        "--commit-every-actions",
        "5",
    ];
    args.extend_from_slice(extra);
    mpiexec(ranks, &args)
}

/// Names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Kills `rank` at `when` (`forward:N`, `adjoint:N`); checks the job died
/// and left journals.
fn kill(ranks: usize, cells: usize, steps: Step, dir: &Path, rank: usize, when: &str) {
    let die = format!("{rank}:{when}");
    let out = job(ranks, cells, steps, dir, &["--die", &die]);
    assert!(
        !out.success,
        "{ranks} ranks, --die {die}: the job did not die"
    );
    assert!(
        listing(dir).iter().any(|n| n.ends_with("-journal")),
        "{ranks} ranks, --die {die}: no journal left to resume from: {:?}",
        listing(dir)
    );
}

/// Runs the job to its end; checks the gradient and that nothing is left.
fn finish(ranks: usize, cells: usize, steps: Step, dir: &Path, how: &str) {
    let out = job(ranks, cells, steps, dir, &[]);
    assert!(out.success, "{ranks} ranks: {}", out.stderr);
    assert_eq!(out.stdout.lines().next(), Some(how), "{}", out.stdout);
    let (want, grad_lambda) = single_process_gradient(cells, steps);
    assert_eq!(
        line(&out.stdout, "gradient "),
        want,
        "{ranks} ranks, {how}: not the uninterrupted gradient"
    );
    let resumed: f64 = line(&out.stdout, "grad_lambda ").parse().unwrap();
    assert!((resumed - grad_lambda).abs() <= 1e-12 * grad_lambda.abs());
    // Only the directory's lock file, if any, may remain.
    let left: Vec<String> = listing(dir)
        .into_iter()
        .filter(|n| !n.ends_with("lock"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "{ranks} ranks: left behind");
}

#[test]
fn a_killed_rank_resumes_to_the_uninterrupted_gradient_on_2_4_and_16_ranks() {
    let _serial = serial();
    for (ranks, cells, steps, kills) in [
        (2, 1000, 200, vec![(1, "forward:120"), (0, "adjoint:50")]),
        (4, 1000, 200, vec![(3, "forward:90"), (2, "adjoint:150")]),
        // Oversubscribed: 16 ranks on two cores, a shorter run.
        (16, 320, 60, vec![(5, "adjoint:20")]),
    ] {
        for (rank, when) in kills {
            let dir = tempfile::tempdir().unwrap();
            kill(ranks, cells, steps, dir.path(), rank, when);
            finish(ranks, cells, steps, dir.path(), "resumed");
        }
    }
}

#[test]
fn ranks_whose_journals_disagree_start_over() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    kill(2, 1000, 200, dir.path(), 1, "adjoint:50");
    // As if rank 0 had died before its first commit.
    fs::remove_file(dir.path().join("rank00000-journal/checkpointing-journal")).unwrap();
    finish(2, 1000, 200, dir.path(), "started over");
}

#[test]
fn a_snapshot_lost_while_the_job_was_down_is_a_collective_error_naming_rank_and_step() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    kill(4, 1000, 200, dir.path(), 2, "adjoint:50");
    // Rank 1's earliest disk snapshot, which its journal names (it is kept
    // until the adjoint reaches it).
    let lost = listing(dir.path())
        .into_iter()
        .find(|n| n.starts_with("rank00001-snapshot-"))
        .expect("rank 1 holds disk snapshots");
    let step: u64 = lost
        .trim_start_matches("rank00001-snapshot-")
        .trim_end_matches(".ckpt")
        .parse()
        .unwrap();
    fs::remove_file(dir.path().join(&lost)).unwrap();
    let out = job(4, 1000, 200, dir.path(), &[]);
    assert!(!out.success, "a lost snapshot went unnoticed");
    assert!(
        out.stderr.contains(&format!(
            "heat-mpi: rank 1: StorageType.DISK store: no snapshot of step {step}"
        )),
        "{}",
        out.stderr
    );
    for rank in [0, 2, 3] {
        assert!(
            out.stderr.contains(&format!(
                "heat-mpi: rank {rank}: StorageType.DISK store: snapshot of step {step}: rank 1 failed: no snapshot of step {step}"
            )),
            "rank {rank}: {}",
            out.stderr
        );
    }
}

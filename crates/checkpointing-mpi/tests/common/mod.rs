//! What the MPI tests share: the launcher, with a time limit, and the
//! lines `heat-mpi` prints.

#![allow(dead_code)] // each test binary uses a part

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use checkpointing::Step;
use checkpointing_examples::heat::HeatEquation;

pub const BIN: &str = env!("CARGO_BIN_EXE_heat-mpi");
pub const CELLS: usize = 1000;
pub const STEPS: Step = 200;
/// Longer than any of these runs takes, short enough to call a hang a hang.
pub const LIMIT: Duration = Duration::from_secs(90);

pub struct Output {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

pub fn mpiexec(ranks: usize, args: &[&str]) -> Output {
    let launcher = std::env::var("CHECKPOINTING_MPIEXEC").unwrap_or_else(|_| "mpiexec".into());
    let mut child = Command::new(&launcher)
        .args(["-n", &ranks.to_string(), BIN])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start {launcher}: {e} (scripts/install-deps.sh installs MPICH)")
        });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("mpiexec -n {ranks} {args:?} did not finish in {LIMIT:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Output {
        success: status.success(),
        stdout,
        stderr,
    }
}

pub fn line<'a>(stdout: &'a str, key: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key:?} line in {stdout}"))
}

/// The single-process store-all `∂J/∂T₀` of `cells` cells over `steps`
/// steps, as `heat-mpi` prints it (IEEE-754 bits in hex), and `∂J/∂λ`.
pub fn single_process_gradient(cells: usize, steps: Step) -> (String, f64) {
    let mut heat = HeatEquation::with_reaction(cells, 0.45, 1e-4);
    let initial = heat.initial_state();
    let (_, gradient) = heat.gradient_store_all(initial, steps);
    let hex: Vec<String> = gradient
        .iter()
        .map(|x| format!("{:016x}", x.to_bits()))
        .collect();
    (hex.join(","), heat.grad_lambda)
}

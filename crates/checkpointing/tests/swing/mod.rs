//! The test problem shared by the planned-run and verification tests: a
//! nonlinear step with a parameter gradient, its store-all gradient, and
//! the snapshot size the measurement counts.
#![allow(dead_code)] // each test file uses a part

use checkpointing::{Checkpoint, Footprint, Problem, Step, UserError};

/// `x_{i+1} = x_i + h sin(a x_i)` componentwise: nonlinear, so the adjoint
/// needs the forward states, with a parameter gradient `∂J/∂a`
/// accumulated in the problem. With `drift`, each forward step's result
/// also depends on how many forward steps this problem has run: a problem
/// whose gradient depends on the schedule's recomputations.
#[derive(Debug, Clone)]
pub struct Swing {
    pub a: f64,
    pub h: f64,
    pub grad_a: f64,
    pub drift: bool,
    pub forwards: u64,
}

impl Swing {
    pub fn new() -> Self {
        Self {
            a: 1.3,
            h: 0.05,
            grad_a: 0.0,
            drift: false,
            forwards: 0,
        }
    }
}

impl Problem for Swing {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;

    fn forward(&mut self, _: Step, x: &mut Vec<f64>) -> Result<(), UserError> {
        self.forwards += 1;
        let drift = if self.drift {
            1e-6 * self.forwards as f64
        } else {
            0.0
        };
        for v in x.iter_mut() {
            *v += self.h * (self.a * *v).sin() + drift;
        }
        Ok(())
    }

    fn adjoint(&mut self, _: Step, x: &Vec<f64>, l: &mut Vec<f64>) -> Result<(), UserError> {
        for (l, &x) in l.iter_mut().zip(x) {
            let c = (self.a * x).cos();
            self.grad_a += *l * self.h * x * c;
            *l *= 1.0 + self.h * self.a * c;
        }
        Ok(())
    }
}

pub const CELLS: usize = 200;

pub fn initial() -> Vec<f64> {
    (0..CELLS).map(|i| (i as f64 * 0.37).sin() + 1.0).collect()
}

#[allow(clippy::ptr_arg)] // the executor passes &State = &Vec<f64>
pub fn terminal(x: &Vec<f64>) -> Result<Vec<f64>, UserError> {
    Ok(x.iter().map(|v| 2.0 * v).collect())
}

/// Every state kept, then the adjoint: `(∂J/∂x_0, ∂J/∂a)`.
pub fn store_all(steps: Step) -> (Vec<f64>, f64) {
    let mut problem = Swing::new();
    let mut x = initial();
    let mut states = Vec::new();
    for i in 0..steps {
        states.push(x.clone());
        problem.forward(i, &mut x).unwrap();
    }
    let mut l = terminal(&x).unwrap();
    for (i, x) in states.iter().enumerate().rev() {
        problem.adjoint(i as Step, x, &mut l).unwrap();
    }
    (l, problem.grad_a)
}

/// Bytes of one snapshot of the state, as the measurement counts them.
pub fn state_bytes() -> u64 {
    (std::mem::size_of::<Checkpoint<Vec<f64>>>() + initial().footprint()) as u64
}

pub fn bitwise(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Asserts that the model applied to a run's counts is the prediction
/// (to rounding): `what` names the run in the message.
pub fn assert_modelled_is_predicted(modelled: f64, predicted: f64, what: impl std::fmt::Debug) {
    let relative = (modelled / predicted - 1.0).abs();
    assert!(
        relative < 1e-9,
        "{what:?}: modelled {modelled} s, predicted {predicted} s"
    );
}

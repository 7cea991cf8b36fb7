//! The 2D heat equation with a cubic reaction term on an `n × n` grid, the
//! CPU reference of the GPU problem ([`crate::GpuHeat2d`]).
//!
//! Forward (explicit Euler, 5-point Laplacian, zero Dirichlet boundary):
//! `T' = T + α·ΔT − β·T³`. Objective `J = ½ Σ T_N²`. Adjoint of one step,
//! written by hand: `λ = λ' + α·Δλ' − 3β·T²·λ'` (the Laplacian with zero
//! boundary is symmetric, the reaction term is diagonal and needs the
//! step's forward state `T`, so a wrong restored state changes the
//! gradient).

use checkpointing::{Problem, Step, UserError};

/// Parameters of the 2D heat problem.
///
/// ```
/// use checkpointing_cuda::Heat2d;
/// let heat = Heat2d::new(16, 0.2, 0.5);
/// let t0 = heat.initial_state();
/// assert_eq!(t0.len(), 256);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Heat2d {
    /// Cells per side.
    pub n: usize,
    /// Diffusion number `α = κ·dt/dx²` (stable for `α ≤ 1/4`).
    pub alpha: f64,
    /// Reaction coefficient `β`.
    pub beta: f64,
}

impl Heat2d {
    /// A problem on an `n × n` grid.
    pub fn new(n: usize, alpha: f64, beta: f64) -> Self {
        Self { n, alpha, beta }
    }

    /// A smooth initial field: a bump in the middle of the grid, values in
    /// `[0, 1]`.
    pub fn initial_state(&self) -> Vec<f64> {
        let n = self.n;
        let h = 1.0 / (n as f64 + 1.0);
        (0..n * n)
            .map(|k| {
                let (x, y) = (((k % n) + 1) as f64 * h, ((k / n) + 1) as f64 * h);
                (std::f64::consts::PI * x).sin() * (std::f64::consts::PI * y).sin()
            })
            .collect()
    }

    /// `α·Δu − c·u` at cell `k`, with the Laplacian's zero boundary.
    #[inline]
    fn stencil(&self, u: &[f64], k: usize) -> f64 {
        let n = self.n;
        let (i, j) = (k % n, k / n);
        let west = if i > 0 { u[k - 1] } else { 0.0 };
        let east = if i + 1 < n { u[k + 1] } else { 0.0 };
        let south = if j > 0 { u[k - n] } else { 0.0 };
        let north = if j + 1 < n { u[k + n] } else { 0.0 };
        self.alpha * (west + east + south + north - 4.0 * u[k])
    }

    /// One forward step into `out`.
    pub fn step_into(&self, t: &[f64], out: &mut [f64]) {
        for (k, o) in out.iter_mut().enumerate() {
            let tk = t[k];
            *o = tk + self.stencil(t, k) - self.beta * tk * tk * tk;
        }
    }

    /// One adjoint step: `lambda` (after the step) into `out` (before it),
    /// given the step's forward state `t`.
    pub fn adjoint_into(&self, t: &[f64], lambda: &[f64], out: &mut [f64]) {
        for (k, o) in out.iter_mut().enumerate() {
            let lk = lambda[k];
            *o = lk + self.stencil(lambda, k) - 3.0 * self.beta * t[k] * t[k] * lk;
        }
    }

    /// `J = ½ Σ T²`.
    pub fn objective(t: &[f64]) -> f64 {
        0.5 * t.iter().map(|x| x * x).sum::<f64>()
    }

    /// `∂J/∂T = T`.
    pub fn objective_gradient(t: &[f64]) -> Vec<f64> {
        t.to_vec()
    }

    /// `J` and `∂J/∂T0` keeping every state (the reference for
    /// checkpointed runs).
    pub fn gradient_store_all(&self, initial: Vec<f64>, steps: Step) -> (f64, Vec<f64>) {
        let mut states = vec![initial];
        for _ in 0..steps {
            let mut next = vec![0.0; self.n * self.n];
            self.step_into(states.last().expect("initial state"), &mut next);
            states.push(next);
        }
        let last = states.pop().expect("final state");
        let mut lambda = Self::objective_gradient(&last);
        let mut scratch = vec![0.0; lambda.len()];
        for t in states.iter().rev() {
            self.adjoint_into(t, &lambda, &mut scratch);
            std::mem::swap(&mut lambda, &mut scratch);
        }
        (Self::objective(&last), lambda)
    }
}

/// The CPU problem for the executor.
///
/// ```
/// use checkpointing::{Executor, Revolve};
/// use checkpointing_cuda::{Heat2d, Heat2dCpu};
/// let heat = Heat2d::new(8, 0.2, 0.5);
/// let mut problem = Heat2dCpu::new(heat);
/// let out = Executor::in_memory()
///     .run(&mut problem, Revolve::new(20, 3).unwrap(), heat.initial_state(),
///          |t| Ok(Heat2d::objective_gradient(t)))
///     .unwrap();
/// assert_eq!(out.adjoint, heat.gradient_store_all(heat.initial_state(), 20).1);
/// ```
#[derive(Debug, Clone)]
pub struct Heat2dCpu {
    heat: Heat2d,
    scratch: Vec<f64>,
}

impl Heat2dCpu {
    /// The executor's problem for `heat`.
    pub fn new(heat: Heat2d) -> Self {
        Self {
            heat,
            scratch: vec![0.0; heat.n * heat.n],
        }
    }
}

impl Problem for Heat2dCpu {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;

    fn forward(&mut self, _step: Step, state: &mut Vec<f64>) -> Result<(), UserError> {
        self.heat.step_into(state, &mut self.scratch);
        std::mem::swap(state, &mut self.scratch);
        Ok(())
    }

    fn adjoint(
        &mut self,
        _step: Step,
        state: &Vec<f64>,
        lambda: &mut Vec<f64>,
    ) -> Result<(), UserError> {
        self.heat.adjoint_into(state, lambda, &mut self.scratch);
        std::mem::swap(lambda, &mut self.scratch);
        Ok(())
    }
}

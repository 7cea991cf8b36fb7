//! The explicit 1D heat equation of Checkpointing.jl's `heat.jl` example,
//! with a hand-written adjoint.
//!
//! `n` cells, `T[0] = 20` and `T[n-1] = 0` held fixed, initially zero
//! inside; each step
//! `T'[i] = T[i] + λ (T[i-1] - 2 T[i] + T[i+1]) - γ T[i]³` for the interior
//! cells, with `λ = 0.5` (the stability limit) and `γ = 0` in
//! Checkpointing.jl's example. A cubic reaction `γ > 0` makes the adjoint
//! depend on the forward states (with `γ = 0` it does not). The objective
//! is the energy of the final field, `J = Σ T_N[i]²`, and the gradient is
//! `∂J/∂T_0`.

use checkpointing::ResumableProblem;

/// The heat-equation problem: parameters and a scratch buffer.
#[derive(Debug, Clone)]
pub struct HeatEquation {
    /// Number of cells.
    pub cells: usize,
    /// Diffusion number `λ = κ Δt / Δx²` (stable for `λ <= 0.5`).
    pub lambda: f64,
    /// Cubic reaction coefficient `γ`.
    pub reaction: f64,
    /// `∂J/∂λ`, accumulated by the adjoint steps run so far.
    pub grad_lambda: f64,
    scratch: Vec<f64>,
}

impl HeatEquation {
    /// Checkpointing.jl's configuration: `λ = 0.5`, no reaction.
    pub fn new(cells: usize) -> Self {
        Self::with_reaction(cells, 0.5, 0.0)
    }

    /// A configuration with diffusion number `lambda` and reaction `gamma`.
    pub fn with_reaction(cells: usize, lambda: f64, gamma: f64) -> Self {
        assert!(cells >= 3, "the heat equation needs at least 3 cells");
        Self {
            cells,
            lambda,
            reaction: gamma,
            grad_lambda: 0.0,
            scratch: vec![0.0; cells],
        }
    }

    /// The initial field: `T[0] = 20`, zero elsewhere.
    pub fn initial_state(&self) -> Vec<f64> {
        let mut t = vec![0.0; self.cells];
        t[0] = 20.0;
        t
    }

    /// `J = Σ T[i]²`.
    pub fn objective(t: &[f64]) -> f64 {
        t.iter().map(|x| x * x).sum()
    }

    /// `∂J/∂T = 2 T`, the adjoint's terminal condition.
    pub fn objective_gradient(t: &[f64]) -> Vec<f64> {
        t.iter().map(|x| 2.0 * x).collect()
    }

    /// One forward step in place.
    pub fn step(&mut self, t: &mut Vec<f64>) {
        let (l, g, n) = (self.lambda, self.reaction, self.cells);
        let next = &mut self.scratch[..n];
        let t_ = &t[..n];
        next[0] = t_[0];
        next[n - 1] = t_[n - 1];
        for i in 1..n - 1 {
            let (a, b, c) = (t_[i - 1], t_[i], t_[i + 1]);
            next[i] = b + l * (a - 2.0 * b + c) - g * b * b * b;
        }
        std::mem::swap(t, &mut self.scratch);
    }

    /// One adjoint step in place: `mu` holds `λ_{i+1}` on entry and
    /// `(∂T_{i+1}/∂T_i)^T λ_{i+1}` on exit; `t` is `T_i`.
    ///
    /// Cell `j` receives `(1 - 2λ - 3γ T_j²) μ_j` if it is interior (the
    /// boundary cells are held: `μ_j`), plus `λ μ_k` from each interior
    /// neighbour `k`. The parameter adjoint `∂J/∂λ` grows by
    /// `Σ μ_j (T_{j-1} - 2 T_j + T_{j+1})` over the interior cells.
    pub fn adjoint_step(&mut self, t: &[f64], mu: &mut Vec<f64>) {
        let (l, g, n) = (self.lambda, self.reaction, self.cells);
        self.grad_lambda += (1..n - 1)
            .map(|j| mu[j] * (t[j - 1] - 2.0 * t[j] + t[j + 1]))
            .sum::<f64>();
        let out = &mut self.scratch[..n];
        let (t, m) = (&t[..n], &mu[..n]);
        let own = |j: usize| (1.0 - 2.0 * l - 3.0 * g * t[j] * t[j]) * m[j];
        out[0] = m[0] + l * m[1];
        out[n - 1] = m[n - 1] + l * m[n - 2];
        if n == 3 {
            out[1] = own(1);
        } else {
            out[1] = own(1) + l * m[2];
            for j in 2..n - 2 {
                out[j] = own(j) + l * m[j - 1] + l * m[j + 1];
            }
            out[n - 2] = own(n - 2) + l * m[n - 3];
        }
        std::mem::swap(mu, &mut self.scratch);
    }
}

crate::field_problem!(HeatEquation);

/// A run can resume: the journal keeps `∂J/∂λ` accumulated so far.
impl ResumableProblem for HeatEquation {
    type Accumulators = f64;

    fn accumulators(&self) -> f64 {
        self.grad_lambda
    }

    fn restore_accumulators(&mut self, grad_lambda: f64) {
        self.grad_lambda = grad_lambda;
    }
}

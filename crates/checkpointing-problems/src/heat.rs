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
//!
//! With [`substeps`](HeatEquation::with_substeps) `k > 1`, a time step is
//! `k` sub-steps of the scheme above with `λ/k` and `γ/k` (the same time
//! step, integrated more finely), and its adjoint recomputes the `k − 1`
//! intermediate fields from the step's state before running the `k`
//! sub-step adjoints backwards: a step whose compute per stored byte grows
//! with `k`, as a multistage or implicit solver's does.

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
    /// Sub-steps per time step (1: Checkpointing.jl's scheme).
    pub substeps: usize,
    scratch: Vec<f64>,
    /// The intermediate fields of a step, recomputed by its adjoint.
    stages: Vec<Vec<f64>>,
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
            substeps: 1,
            scratch: vec![0.0; cells],
            stages: Vec::new(),
        }
    }

    /// Each time step made of `k` sub-steps (at least 1).
    ///
    /// ```
    /// use checkpointing_problems::heat::HeatEquation;
    /// let mut fine = HeatEquation::with_reaction(50, 0.45, 1e-3).with_substeps(4);
    /// let (_, gradient) = fine.gradient_store_all(fine.initial_state(), 20);
    /// assert!(gradient.iter().all(|g| g.is_finite()));
    /// ```
    pub fn with_substeps(mut self, k: usize) -> Self {
        self.substeps = k.max(1);
        self
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

    /// One forward step in place (its sub-steps).
    pub fn step(&mut self, t: &mut Vec<f64>) {
        let (l, g) = self.substep_coefficients();
        for _ in 0..self.substeps {
            self.substep(t, l, g);
        }
    }

    /// `λ` and `γ` of one sub-step.
    fn substep_coefficients(&self) -> (f64, f64) {
        let k = self.substeps as f64;
        (self.lambda / k, self.reaction / k)
    }

    /// One sub-step in place, with coefficients `l` and `g`.
    fn substep(&mut self, t: &mut Vec<f64>, l: f64, g: f64) {
        let n = self.cells;
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
    ///
    /// With sub-steps, the intermediate fields are recomputed from `t`
    /// and the sub-step adjoints run backwards; `∂J/∂λ` grows by their
    /// sum over `k` (each sub-step uses `λ/k`).
    pub fn adjoint_step(&mut self, t: &[f64], mu: &mut Vec<f64>) {
        let (l, g) = self.substep_coefficients();
        if self.substeps == 1 {
            self.grad_lambda += self.adjoint_substep(t, mu, l, g);
            return;
        }
        let mut stages = std::mem::take(&mut self.stages);
        stages.resize_with(self.substeps, Vec::new);
        stages[0].clear();
        stages[0].extend_from_slice(t);
        for j in 1..self.substeps {
            let (done, rest) = stages.split_at_mut(j);
            rest[0].clone_from(&done[j - 1]);
            self.substep(&mut rest[0], l, g);
        }
        let mut partial = 0.0;
        for stage in stages.iter().rev() {
            partial += self.adjoint_substep(stage, mu, l, g);
        }
        self.grad_lambda += partial / self.substeps as f64;
        self.stages = stages;
    }

    /// One sub-step's adjoint in place, with coefficients `l` and `g`;
    /// returns its `Σ μ_j (T_{j-1} - 2 T_j + T_{j+1})`.
    fn adjoint_substep(&mut self, t: &[f64], mu: &mut Vec<f64>, l: f64, g: f64) -> f64 {
        let n = self.cells;
        let partial = (1..n - 1)
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
        partial
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

#[cfg(test)]
mod tests {
    use super::HeatEquation;

    /// `J` after `steps` steps from `t0` with diffusion number `lambda`.
    fn objective(t0: &[f64], lambda: f64, substeps: usize, steps: u64) -> f64 {
        let mut heat = HeatEquation::with_reaction(t0.len(), lambda, 2e-3).with_substeps(substeps);
        HeatEquation::objective(&heat.run_forward(t0.to_vec(), steps))
    }

    #[test]
    fn the_substepped_adjoint_matches_finite_differences() {
        let (cells, steps, lambda) = (30, 25, 0.4);
        for substeps in [1, 3] {
            let mut heat = HeatEquation::with_reaction(cells, lambda, 2e-3).with_substeps(substeps);
            let t0: Vec<f64> = (0..cells).map(|i| (i as f64 * 0.3).sin() + 1.0).collect();
            let (_, gradient) = heat.gradient_store_all(t0.clone(), steps);
            let h = 1e-6;
            for cell in [1, 7, 15, 28] {
                let (mut up, mut down) = (t0.clone(), t0.clone());
                up[cell] += h;
                down[cell] -= h;
                let fd = (objective(&up, lambda, substeps, steps)
                    - objective(&down, lambda, substeps, steps))
                    / (2.0 * h);
                let error = (fd - gradient[cell]).abs() / gradient[cell].abs().max(1e-12);
                assert!(
                    error < 1e-6,
                    "k={substeps}, cell {cell}: {fd} vs {}",
                    gradient[cell]
                );
            }
            let fd = (objective(&t0, lambda + h, substeps, steps)
                - objective(&t0, lambda - h, substeps, steps))
                / (2.0 * h);
            let error = (fd - heat.grad_lambda).abs() / heat.grad_lambda.abs();
            assert!(
                error < 1e-6,
                "k={substeps}: dJ/dλ {fd} vs {}",
                heat.grad_lambda
            );
        }
    }
}

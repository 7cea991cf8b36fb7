//! The viscous 1D Burgers equation `u_t + (u²/2)_x = ν u_xx` on a periodic
//! grid, with the discrete adjoint of its step: realistic state data
//! (smooth regions and steep fronts) for the storage benchmarks, and a
//! nonlinear [`Problem`](checkpointing::Problem) whose adjoint needs every forward state.
//!
//! Conservative upwind (Godunov) flux for the convection, central second
//! differences for the viscosity, explicit Euler in time; stable for
//! `max|u| Δt/Δx ≤ 1/2` and `ν Δt/Δx² ≤ 1/4`, which [`Burgers::new`] picks.
//!
//! The objective is `J = ½ Σ u_N[i]²`; the adjoint gives `∂J/∂u_0` and,
//! accumulated in the problem, `∂J/∂ν` at the fixed time step.
//!
//! ```
//! use checkpointing::{Executor, Revolve};
//! use checkpointing_examples::burgers::Burgers;
//! let mut burgers = Burgers::new(64, 1e-3);
//! let u0 = burgers.initial_state();
//! let out = Executor::in_memory()
//!     .run(&mut burgers, Revolve::new(100, 4).unwrap(), u0.clone(), |u| Ok(Burgers::objective_gradient(u)))
//!     .unwrap();
//! let mut reference = Burgers::new(64, 1e-3);
//! let (_, gradient) = reference.gradient_store_all(u0, 100);
//! assert_eq!(out.adjoint, gradient);
//! assert_eq!(burgers.grad_viscosity, reference.grad_viscosity);
//! ```

/// A periodic Burgers problem on `cells` cells of `[0, 1)`.
#[derive(Debug, Clone)]
pub struct Burgers {
    /// Viscosity `ν`.
    pub viscosity: f64,
    /// `∂J/∂ν` (at the fixed time step), accumulated by the adjoint steps
    /// run so far.
    pub grad_viscosity: f64,
    dx: f64,
    dt: f64,
    scratch: Vec<f64>,
}

/// Godunov flux of `f(u) = u²/2` between cells of values `a` (left) and `b`
/// (right).
fn flux(a: f64, b: f64) -> f64 {
    if a <= b {
        // Rarefaction: the minimum of f over [a, b].
        if a > 0.0 {
            a * a / 2.0
        } else if b < 0.0 {
            b * b / 2.0
        } else {
            0.0
        }
    } else {
        // Shock: the maximum of f over [b, a].
        (a * a / 2.0).max(b * b / 2.0)
    }
}

/// `(∂F/∂a, ∂F/∂b)` of [`flux`], on the branch [`flux`] takes (where two
/// branches meet, the left state's).
fn flux_derivative(a: f64, b: f64) -> (f64, f64) {
    if a <= b {
        if a > 0.0 {
            (a, 0.0)
        } else if b < 0.0 {
            (0.0, b)
        } else {
            (0.0, 0.0)
        }
    } else if a * a >= b * b {
        (a, 0.0)
    } else {
        (0.0, b)
    }
}

impl Burgers {
    /// A grid of `cells` cells with viscosity `viscosity` and a stable time
    /// step for `|u| <= 1.5`.
    pub fn new(cells: usize, viscosity: f64) -> Self {
        let dx = 1.0 / cells as f64;
        let dt = (0.5 * dx / 1.5).min(0.25 * dx * dx / viscosity);
        Self {
            viscosity,
            grad_viscosity: 0.0,
            dx,
            dt,
            scratch: vec![0.0; cells],
        }
    }

    /// A smooth initial field: `1 + ½ sin 2πx + ¼ sin 6πx`, which steepens
    /// into fronts.
    pub fn initial_state(&self) -> Vec<f64> {
        let n = self.scratch.len();
        (0..n)
            .map(|i| {
                let x = i as f64 / n as f64;
                1.0 + 0.5 * (2.0 * std::f64::consts::PI * x).sin()
                    + 0.25 * (6.0 * std::f64::consts::PI * x).sin()
            })
            .collect()
    }

    /// The number of cells.
    pub fn cells(&self) -> usize {
        self.scratch.len()
    }

    /// `Δt/Δx` (convection) and `ν Δt/Δx²` (viscosity).
    fn ratios(&self) -> (f64, f64) {
        (
            self.dt / self.dx,
            self.viscosity * self.dt / (self.dx * self.dx),
        )
    }

    /// One explicit step in place:
    /// `u'_i = u_i − Δt/Δx (F_{i+½} − F_{i−½}) + ν Δt/Δx² (u_{i−1} − 2u_i + u_{i+1})`
    /// with `F_{i+½} = F(u_i, u_{i+1})` the Godunov flux.
    ///
    /// ```
    /// use checkpointing_examples::burgers::Burgers;
    /// let mut b = Burgers::new(256, 1e-3);
    /// let mut u = b.initial_state();
    /// let mass: f64 = u.iter().sum();
    /// for _ in 0..100 { b.step(&mut u); }
    /// assert!((u.iter().sum::<f64>() - mass).abs() < 1e-9 * mass); // conservative
    /// ```
    pub fn step(&mut self, u: &mut Vec<f64>) {
        let n = u.len();
        let (r, k) = self.ratios();
        for i in 0..n {
            let (l, c, rr) = (u[(i + n - 1) % n], u[i], u[(i + 1) % n]);
            self.scratch[i] = c - r * (flux(c, rr) - flux(l, c)) + k * (l - 2.0 * c + rr);
        }
        std::mem::swap(u, &mut self.scratch);
    }

    /// One adjoint step in place: `mu` holds `λ_{i+1}` on entry and
    /// `(∂u_{i+1}/∂u_i)^T λ_{i+1}` on exit; `u` is `u_i`.
    ///
    /// The transpose of the step, term by term: the identity gives `μ_j`;
    /// the viscosity, a symmetric stencil, gives
    /// `ν Δt/Δx² (μ_{j−1} − 2μ_j + μ_{j+1})`; the flux `F_{i+½}`, which
    /// enters `u'_i` with `−Δt/Δx` and `u'_{i+1}` with `+Δt/Δx`, carries
    /// `w = Δt/Δx (μ_{i+1} − μ_i)` back to its two cells as
    /// `w ∂F/∂u_i` and `w ∂F/∂u_{i+1}`. `∂J/∂ν` grows by
    /// `Σ μ_i Δt/Δx² (u_{i−1} − 2u_i + u_{i+1})`.
    pub fn adjoint_step(&mut self, u: &[f64], mu: &mut Vec<f64>) {
        let n = u.len();
        let (r, k) = self.ratios();
        let diffusion = self.dt / (self.dx * self.dx);
        let out = &mut self.scratch;
        let mut grad_viscosity = 0.0;
        for i in 0..n {
            let (left, right) = ((i + n - 1) % n, (i + 1) % n);
            out[i] = mu[i] + k * (mu[left] - 2.0 * mu[i] + mu[right]);
            grad_viscosity += mu[i] * diffusion * (u[left] - 2.0 * u[i] + u[right]);
        }
        for i in 0..n {
            let right = (i + 1) % n;
            let (da, db) = flux_derivative(u[i], u[right]);
            let w = r * (mu[right] - mu[i]);
            out[i] += w * da;
            out[right] += w * db;
        }
        self.grad_viscosity += grad_viscosity;
        std::mem::swap(mu, &mut self.scratch);
    }

    /// `J = ½ Σ u[i]²`.
    pub fn objective(u: &[f64]) -> f64 {
        u.iter().map(|x| x * x).sum::<f64>() / 2.0
    }

    /// `∂J/∂u = u`, the adjoint's terminal condition.
    pub fn objective_gradient(u: &[f64]) -> Vec<f64> {
        u.to_vec()
    }
}

checkpointing_problems::field_problem!(Burgers);

//! The viscous 1D Burgers equation `u_t + (u²/2)_x = ν u_xx` on a periodic
//! grid, forward only: a source of realistic state data (smooth regions and
//! steep fronts) for the storage benchmarks.
//!
//! Conservative upwind (Godunov) flux for the convection, central second
//! differences for the viscosity, explicit Euler in time; stable for
//! `max|u| Δt/Δx ≤ 1/2` and `ν Δt/Δx² ≤ 1/4`, which [`Burgers::new`] picks.

/// A periodic Burgers problem on `cells` cells of `[0, 1)`.
#[derive(Debug, Clone)]
pub struct Burgers {
    /// Viscosity `ν`.
    pub viscosity: f64,
    dx: f64,
    dt: f64,
    scratch: Vec<f64>,
}

impl Burgers {
    /// A grid of `cells` cells with viscosity `viscosity` and a stable time
    /// step for `|u| <= 1.5`.
    pub fn new(cells: usize, viscosity: f64) -> Self {
        let dx = 1.0 / cells as f64;
        let dt = (0.5 * dx / 1.5).min(0.25 * dx * dx / viscosity);
        Self {
            viscosity,
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

    /// One explicit step in place.
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
        let (r, k) = (
            self.dt / self.dx,
            self.viscosity * self.dt / (self.dx * self.dx),
        );
        // Godunov flux of f(u) = u²/2 between cells a and b.
        let flux = |a: f64, b: f64| {
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
                (a * a / 2.0).max(b * b / 2.0)
            }
        };
        for i in 0..n {
            let (l, c, rr) = (u[(i + n - 1) % n], u[i], u[(i + 1) % n]);
            self.scratch[i] = c - r * (flux(c, rr) - flux(l, c)) + k * (l - 2.0 * c + rr);
        }
        std::mem::swap(u, &mut self.scratch);
    }
}

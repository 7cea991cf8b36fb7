//! The heat equation of `checkpointing-examples`, decomposed over ranks:
//! each rank owns a block of cells and exchanges one halo value with each
//! neighbour inside its forward and adjoint steps.
//!
//! Each cell is updated with the same arithmetic, in the same order, as the
//! single-process version, so the gradient with respect to the initial
//! field is bitwise the same on any number of ranks. The parameter gradient
//! `∂J/∂λ` is a sum over all cells: its per-rank partial sums are added in
//! another order, so it agrees to rounding (about `1e-15` relative).

use mpi::collective::SystemOperation;
use mpi::traits::*;

use checkpointing::{Problem, ResumableProblem, Step, UserError};

use crate::decomposition::{Block1d, Halo1d};

/// One rank's part of the heat equation `T'_j = T_j + λ (T_{j-1} - 2 T_j +
/// T_{j+1}) - γ T_j³` with `T_0 = 20` and `T_{n-1} = 0` held fixed.
pub struct DistributedHeat<'c, C> {
    comm: &'c C,
    block: Block1d,
    halo: Halo1d,
    /// Diffusion number `λ`.
    pub lambda: f64,
    /// Cubic reaction `γ`.
    pub gamma: f64,
    /// This rank's part of `∂J/∂λ`, accumulated by the adjoint steps.
    pub grad_lambda_local: f64,
    scratch: Vec<f64>,
}

impl<'c, C: Communicator> DistributedHeat<'c, C> {
    /// This rank's part of `cells` cells over `comm` (at least one cell per
    /// rank, at least 3 cells).
    pub fn new(comm: &'c C, cells: usize, lambda: f64, gamma: f64) -> Result<Self, String> {
        let ranks = comm.size() as usize;
        if cells < 3 || cells < ranks {
            return Err(format!(
                "{cells} cells cannot be split over {ranks} ranks (at least 3, and one per rank)"
            ));
        }
        let block = Block1d::new(cells, ranks, comm.rank() as usize);
        Ok(Self {
            comm,
            block,
            halo: Halo1d::new(&block),
            lambda,
            gamma,
            grad_lambda_local: 0.0,
            scratch: vec![0.0; block.range().len()],
        })
    }

    /// This rank's block.
    pub fn block(&self) -> &Block1d {
        &self.block
    }

    /// This rank's part of the initial field (20 in cell 0, zero elsewhere).
    pub fn initial_state(&self) -> Vec<f64> {
        self.block
            .range()
            .map(|g| if g == 0 { 20.0 } else { 0.0 })
            .collect()
    }

    /// `∂J/∂T` of `J = Σ T²` on this rank's cells.
    pub fn objective_gradient(t: &[f64]) -> Vec<f64> {
        t.iter().map(|x| 2.0 * x).collect()
    }

    /// `∂J/∂λ`: the ranks' partial sums added (collective).
    pub fn grad_lambda(&self) -> f64 {
        let mut total = 0.0;
        self.comm
            .all_reduce_into(&self.grad_lambda_local, &mut total, SystemOperation::sum());
        total
    }

    fn interior(&self, g: usize) -> bool {
        g > 0 && g + 1 < self.block.cells
    }

    /// One forward step of this rank's cells.
    pub fn step(&mut self, t: &mut Vec<f64>) {
        let (left, right) = self.halo.exchange(self.comm, t);
        let (l, gm, lo) = (self.lambda, self.gamma, self.block.range().start);
        let len = t.len();
        for k in 0..len {
            let g = lo + k;
            let b = t[k];
            self.scratch[k] = if self.interior(g) {
                let a = if k == 0 {
                    left.expect("interior cell has a left neighbour")
                } else {
                    t[k - 1]
                };
                let c = if k + 1 == len {
                    right.expect("interior cell has a right neighbour")
                } else {
                    t[k + 1]
                };
                b + l * (a - 2.0 * b + c) - gm * b * b * b
            } else {
                b
            };
        }
        std::mem::swap(t, &mut self.scratch);
    }

    /// One adjoint step: `mu` holds `λ_{i+1}` on this rank's cells and
    /// becomes `λ_i`; `t` is this rank's part of `T_i`.
    pub fn adjoint_step(&mut self, t: &[f64], mu: &mut Vec<f64>) {
        let (t_left, t_right) = self.halo.exchange(self.comm, t);
        let (m_left, m_right) = self.halo.exchange(self.comm, mu);
        let (l, gm, lo) = (self.lambda, self.gamma, self.block.range().start);
        let len = t.len();
        let at = |v: &[f64], left: Option<f64>, right: Option<f64>, k: isize| -> f64 {
            if k < 0 {
                left.expect("neighbour cell")
            } else if k as usize >= len {
                right.expect("neighbour cell")
            } else {
                v[k as usize]
            }
        };
        let mut partial = 0.0;
        for k in 0..len {
            let g = lo + k;
            let ki = k as isize;
            let m = |d: isize| at(mu, m_left, m_right, ki + d);
            if self.interior(g) {
                let tt = |d: isize| at(t, t_left, t_right, ki + d);
                partial += mu[k] * (tt(-1) - 2.0 * t[k] + tt(1));
                let mut out = (1.0 - 2.0 * l - 3.0 * gm * t[k] * t[k]) * mu[k];
                if self.interior(g - 1) {
                    out += l * m(-1);
                }
                if self.interior(g + 1) {
                    out += l * m(1);
                }
                self.scratch[k] = out;
            } else {
                // A held boundary cell receives from its interior neighbour.
                let d = if g == 0 { 1 } else { -1 };
                self.scratch[k] = mu[k] + l * m(d);
            }
        }
        self.grad_lambda_local += partial;
        std::mem::swap(mu, &mut self.scratch);
    }
}

impl<C: Communicator> Problem for DistributedHeat<'_, C> {
    type State = Vec<f64>;
    type Adjoint = Vec<f64>;

    fn forward(&mut self, _: Step, t: &mut Vec<f64>) -> Result<(), UserError> {
        self.step(t);
        Ok(())
    }

    fn adjoint(&mut self, _: Step, t: &Vec<f64>, mu: &mut Vec<f64>) -> Result<(), UserError> {
        self.adjoint_step(t, mu);
        Ok(())
    }
}

/// Resumable: `∂J/∂λ`'s partial sum on this rank is what the adjoint
/// accumulates, journaled with the rank's snapshots.
impl<C: Communicator> ResumableProblem for DistributedHeat<'_, C> {
    type Accumulators = f64;

    fn accumulators(&self) -> f64 {
        self.grad_lambda_local
    }

    fn restore_accumulators(&mut self, partial: f64) {
        self.grad_lambda_local = partial;
    }
}

//! A 1-D block decomposition and its halo exchange.

use std::ops::Range;

use mpi::request::WaitGuard;
use mpi::traits::*;

/// `n` cells split into contiguous blocks, one per rank, the first
/// `n % ranks` blocks one cell longer.
///
/// ```
/// use checkpointing_mpi::Block1d;
/// let blocks: Vec<_> = (0..3).map(|r| Block1d::new(10, 3, r).range()).collect();
/// assert_eq!(blocks, [0..4, 4..7, 7..10]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block1d {
    /// Total cells.
    pub cells: usize,
    /// Number of ranks.
    pub ranks: usize,
    /// This rank.
    pub rank: usize,
}

impl Block1d {
    /// Rank `rank`'s block of `cells` cells over `ranks` ranks.
    pub fn new(cells: usize, ranks: usize, rank: usize) -> Self {
        Self { cells, ranks, rank }
    }

    /// The global cells of rank `r`.
    pub fn range_of(&self, r: usize) -> Range<usize> {
        let (base, extra) = (self.cells / self.ranks, self.cells % self.ranks);
        let start = r * base + r.min(extra);
        start..start + base + usize::from(r < extra)
    }

    /// This rank's global cells.
    pub fn range(&self) -> Range<usize> {
        self.range_of(self.rank)
    }

    /// The rank to the left, if any.
    pub fn left(&self) -> Option<usize> {
        self.rank.checked_sub(1)
    }

    /// The rank to the right, if any.
    pub fn right(&self) -> Option<usize> {
        (self.rank + 1 < self.ranks).then_some(self.rank + 1)
    }
}

/// Exchanges one boundary value with each neighbour of a [`Block1d`].
#[derive(Debug, Clone, Copy)]
pub struct Halo1d {
    left: Option<i32>,
    right: Option<i32>,
}

impl Halo1d {
    /// The neighbours of `block`.
    pub fn new(block: &Block1d) -> Self {
        Self {
            left: block.left().map(|r| r as i32),
            right: block.right().map(|r| r as i32),
        }
    }

    /// Sends `owned`'s first value to the left neighbour and its last to
    /// the right one; returns the values received from the left and right
    /// (`None` at the domain's ends). Collective between neighbours.
    pub fn exchange<C: Communicator>(&self, comm: &C, owned: &[f64]) -> (Option<f64>, Option<f64>) {
        let (first, last) = (owned[0], owned[owned.len() - 1]);
        let (mut from_left, mut from_right) = (0.0_f64, 0.0_f64);
        mpi::request::scope(|scope| {
            let _guards = (
                self.left.map(|l| {
                    WaitGuard::from(
                        comm.process_at_rank(l)
                            .immediate_receive_into(scope, &mut from_left),
                    )
                }),
                self.right.map(|r| {
                    WaitGuard::from(
                        comm.process_at_rank(r)
                            .immediate_receive_into(scope, &mut from_right),
                    )
                }),
                self.left.map(|l| {
                    WaitGuard::from(comm.process_at_rank(l).immediate_send(scope, &first))
                }),
                self.right
                    .map(|r| WaitGuard::from(comm.process_at_rank(r).immediate_send(scope, &last))),
            );
        });
        (self.left.map(|_| from_left), self.right.map(|_| from_right))
    }
}

//! The H-Revolve program: the operations of the optimal schedule, read off
//! the tables ([`HRevolveProgram`]).

use super::level;
use super::table::HTable;
use crate::action::Step;
use crate::schedule::op_sequence::{Machine, Op, Program, TAPE_ONE, TWO_STEPS_RAM};
use crate::schedule::revolve::{single_step, RevolveFrame};
use crate::StorageLevel;

/// The reference's `hrevolve(l, cvect, wvect, rvect, uf, ub)`, for any
/// number of levels K (the reference uses K = 2). Its operations name the
/// levels by tier ([`TIERS`]: tier 0, the cheapest, is written `Ram`).
#[derive(Debug, Clone)]
pub(crate) struct HRevolveProgram {
    l: Step,
    /// Snapshots per tier, cheapest first.
    pub(super) c: Vec<usize>,
    w: Vec<f64>,
    r: Vec<f64>,
    uf: f64,
    table: HTable,
}

/// An H-Revolve sub-sequence in progress.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HFrame {
    /// A one-snapshot RAM reversal (as in Revolve).
    Revolve(RevolveFrame),
    /// A split at `jmin` on level `k` with `cmem` snapshots: the right part
    /// is running; then read the checkpoint at `shift` and reverse the left.
    Split {
        k: usize,
        jmin: Step,
        cmem: usize,
        shift: Step,
    },
    /// The left part of a split on tier `k > 0` is reversed: its checkpoint
    /// at `shift` is no longer needed.
    Release { k: usize, shift: Step },
}

impl From<RevolveFrame> for HFrame {
    fn from(f: RevolveFrame) -> Self {
        HFrame::Revolve(f)
    }
}

impl HRevolveProgram {
    /// The program for `l + 1` steps with `c[k]` snapshots on tier `k`
    /// (cheapest first) written for `w[k]` and read for `r[k]`.
    /// Forward steps cost `uf` and adjoint steps `ub`, in the table and in
    /// the splits alike.
    pub(crate) fn new(l: Step, c: Vec<usize>, w: Vec<f64>, r: Vec<f64>, uf: f64, ub: f64) -> Self {
        Self::with_table_costs(l, c, w, r, uf, (ub, uf))
    }

    /// The reference's `hrevolve(l, cvect, wvect, rvect, uf, ub)`, quirk
    /// included: it calls `get_hopt_table(lmax, cvect, wvect, rvect, ub, uf)`
    /// with `(uf, ub)`, so its table weighs forward steps by `ub` and adjoint
    /// steps by `uf`, while its splits weigh forward steps by `uf`. The
    /// same schedule for `uf = ub`; [`HRevolve`](super::HRevolve) keeps it for exactness.
    pub(crate) fn reference(
        l: Step,
        c: Vec<usize>,
        w: Vec<f64>,
        r: Vec<f64>,
        uf: f64,
        ub: f64,
    ) -> Self {
        Self::with_table_costs(l, c, w, r, uf, (uf, ub))
    }

    /// The program whose splits weigh forward steps by `uf` and whose table
    /// is built with `(ub, uf)` = `table_costs`.
    fn with_table_costs(
        l: Step,
        c: Vec<usize>,
        w: Vec<f64>,
        r: Vec<f64>,
        uf: f64,
        (table_ub, table_uf): (f64, f64),
    ) -> Self {
        let table = HTable::new(l as usize, &c, &w, &r, table_ub, table_uf);
        Self {
            l,
            c,
            w,
            r,
            uf,
            table,
        }
    }

    /// The modelled cost from the tables: hrevolve starts on the top tier
    /// with all its snapshots, `opt[K-1][l][c[K-1]]`; each recursion picks
    /// the cheaper of writing on its tier or going one tier down.
    pub(crate) fn optimal_cost(&self) -> f64 {
        let top = self.c.len() - 1;
        self.table.opt(top, self.l, self.c[top])
    }

    /// The tier where two steps from tier `k` with `cmem` snapshots store
    /// their first state: that of `hold[k]` (`hold[k - 1]` when `cmem = 0`).
    fn two_step_tier(&self, mut k: usize, cmem: usize) -> usize {
        let mut free = cmem;
        while k > 0 && (free == 0 || self.w[k] + self.r[k] >= self.table.hold[k - 1]) {
            k -= 1;
            free = self.c[k];
        }
        k
    }

    fn recurse(&self, m: &mut Machine<HFrame>, l: Step, k: usize, cmem: usize, s: Step) {
        use Op::*;
        let ram = StorageLevel::Ram;
        if l == 0 {
            m.emit_all(s, &TAPE_ONE);
        } else if l == 1 {
            // `opt[k][1][cmem] = uf + 2·ub + hold`: the first state goes to
            // the tier of `hold` (with the reference's free RAM, to RAM).
            match self.two_step_tier(k, cmem) {
                0 => m.emit_all(s, &TWO_STEPS_RAM),
                tier => {
                    m.emit(Write(level(tier), s));
                    self.aux(m, 1, tier, self.c[tier], s);
                }
            }
        } else if k == 0 {
            m.emit(Write(ram, s));
            self.aux(m, l, 0, cmem, s);
        } else if self.w[k] + self.table.optp(k, l, cmem) < self.table.opt(k - 1, l, self.c[k - 1])
        {
            m.emit(Write(level(k), s));
            self.aux(m, l, k, cmem, s);
        } else {
            self.recurse(m, l, k - 1, self.c[k - 1], s);
        }
    }

    /// The last minimiser over `j in 1..l` of `j·uf + opt[k][l-j][cmem-1] +
    /// r[k] + optp[k][j-1][cmem]`, and the minimum.
    fn split(&self, l: Step, k: usize, cmem: usize) -> (Step, f64) {
        let (mut best, mut arg) = (f64::INFINITY, 1);
        for j in 1..l {
            let v = j as f64 * self.uf
                + self.table.opt(k, l - j, cmem - 1)
                + self.r[k]
                + self.table.optp(k, j - 1, cmem);
            if v <= best {
                best = v;
                arg = j;
            }
        }
        (arg, best)
    }

    fn aux(&self, m: &mut Machine<HFrame>, l: Step, k: usize, cmem: usize, s: Step) {
        use Op::*;
        let ram = StorageLevel::Ram;
        if l == 0 {
            m.emit_all(s, &TAPE_ONE);
        } else if l == 1 && k > 0 && self.table.hold[k - 1] < self.r[k] {
            // `optp[k][1] = uf + 2·ub + min(hold[k - 1], r[k])`: a second
            // copy below is cheaper to write and read than a read from tier
            // `k` (the reference's `w[0] + r[0] < r[k]`: its RAM).
            self.recurse(m, 1, k - 1, self.c[k - 1], s);
        } else if l == 1 {
            m.emit_all(
                s,
                &[
                    Forward(0, 1),
                    WriteForward(2),
                    Forward(1, 2),
                    Backward(2, 1),
                    DiscardForward(2),
                ],
            );
            m.emit(Read(level(k), s));
            m.emit_all(
                s,
                &[
                    WriteForward(1),
                    Forward(0, 1),
                    Backward(1, 0),
                    DiscardForward(1),
                    Discard(ram, 0),
                ],
            );
        } else if k == 0 && cmem == 1 {
            single_step(m, l, l, s);
        } else {
            let (jmin, best) = self.split(l, k, cmem);
            let threshold = if k == 0 {
                self.table.optp(0, l, 1)
            } else {
                self.table.opt(k - 1, l, self.c[k - 1])
            };
            if best < threshold {
                m.emit(Forward(s, s + jmin));
                m.frames.push(HFrame::Split {
                    k,
                    jmin,
                    cmem,
                    shift: s,
                });
                self.recurse(m, l - jmin, k, cmem - 1, s + jmin);
            } else if k == 0 {
                self.aux(m, l, 0, 1, s);
            } else {
                self.recurse(m, l, k - 1, self.c[k - 1], s);
            }
        }
    }
}

impl Program for HRevolveProgram {
    type Frame = HFrame;

    fn start(&self, m: &mut Machine<HFrame>) {
        let top = self.c.len() - 1;
        self.recurse(m, self.l, top, self.c[top], 0);
    }

    fn resume(&self, frame: HFrame, m: &mut Machine<HFrame>) {
        match frame {
            HFrame::Revolve(f) => {
                if let RevolveFrame::Single { l, k, shift } = f {
                    single_step(m, l, k, shift);
                }
            }
            HFrame::Split {
                k,
                jmin,
                cmem,
                shift,
            } => {
                m.emit(Op::Read(level(k), shift));
                if k > 0 {
                    m.frames.push(HFrame::Release { k, shift });
                }
                self.aux(m, jmin - 1, k, cmem, shift);
                // The reference closes a RAM split with a discard unless
                // the left part already ends with one (it does unless empty).
                if k == 0 && jmin == 1 {
                    m.emit(Op::Discard(StorageLevel::Ram, shift));
                }
            }
            HFrame::Release { k, shift } => m.emit(Op::Discard(level(k), shift)),
        }
    }
}

//! Binomial checkpointing arithmetic (Griewank & Walther, "Algorithm 799:
//! revolve", ACM TOMS 26(1), 2000, doi 10.1145/347837.347846).
//!
//! With `s` snapshots, `n` steps can be reversed with repetition number `r`
//! (every step advanced at most `r + 1` times) iff `n <= β(s, r)`, where
//! `β(s, r) = (s + r)! / (s! r!)`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::ScheduleError;

/// `β(s, r) = C(s + r, s)`, or `None` past `u128`: `min(s, r)` factors
/// (`C(m + k, k) = Π_{i=1..k} (m + i)/i` with `k = min(s, r)`, every prefix
/// an integer).
fn beta(s: u64, r: u64) -> Option<u128> {
    let (m, k) = (s.max(r) as u128, s.min(r) as u128);
    let mut b: u128 = 1;
    for i in 1..=k {
        b = b.checked_mul(m + i)? / i;
    }
    Some(b)
}

/// Whether `β(s, r) >= n`, stopping as soon as a prefix of the product
/// reaches `n` (so at most about 128 factors for any `u64` arguments).
fn beta_reaches(s: u64, r: u64, n: u128) -> bool {
    let (m, k) = (s.max(r) as u128, s.min(r) as u128);
    let mut b: u128 = 1;
    for i in 1..=k {
        // An overflow means b (m + i) / i > 2^128 / 2^64 > n.
        b = match b.checked_mul(m + i) {
            Some(product) => product / i,
            None => return true,
        };
        if b >= n {
            return true;
        }
    }
    b >= n
}

/// The least `r` with `β(s, r) >= n`, with `β(s, r - 1)` (for `r >= 1`).
/// Requires `s >= 1` and `n >= 1`. Counts `r` up one by one while it is
/// small (the schedules' hot path), then bisects: `O(log n)` evaluations of
/// [`beta_reaches`] for the few snapshots that make `r` large (`r ≈ n` for
/// one snapshot).
pub(crate) fn repetition(n: u64, s: u64) -> (u64, u128) {
    const LINEAR: u64 = 64;
    let (n, s128) = (n as u128, s as u128);
    let (mut r, mut b_prev, mut b) = (0u64, 0u128, 1u128);
    while b < n {
        if r == LINEAR {
            // β(s, LINEAR) < n: bisect over (LINEAR, n], as β(s, n) > n.
            let (mut lo, mut hi) = (LINEAR, n as u64);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if beta_reaches(s, mid, n) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let b_prev = beta(s, hi - 1).expect("below n, so within u128");
            return (hi, b_prev);
        }
        r += 1;
        b_prev = b;
        // β(s, r) = β(s, r - 1) (s + r) / r, exact. β(s, r - 1) < n, so the
        // product stays far below u128::MAX for any u64 n and s.
        b = b * (s128 + r as u128) / r as u128;
    }
    (r, b_prev)
}

/// The minimal total number of forward steps to reverse `n` steps with `s`
/// snapshots (the initial state included), counting the first sweep and the
/// step advanced before each adjoint step: `n + r n - β(s + 1, r - 1)`
/// (Griewank & Walther 2000, eq. (3)).
///
/// ```
/// // Revolve(4, 2): 4 steps of the first sweep and 4 recomputed.
/// assert_eq!(checkpointing_schedule::binomial_forward_steps(4, 2), Some(8));
/// // One snapshot: every step recomputed from the start.
/// assert_eq!(checkpointing_schedule::binomial_forward_steps(10, 1), Some(10 + 45));
/// ```
///
/// `None` when `n == 0`, `s == 0` (and `n > 1`), or the count overflows
/// `u64`.
pub fn binomial_forward_steps(n: u64, s: u64) -> Option<u64> {
    u64::try_from(binomial_forward_steps_wide(n, s)?).ok()
}

/// [`binomial_forward_steps`] in `u128`, which holds the count for every
/// `u64` number of steps and snapshots but the largest few (`None` there,
/// and for `n == 0` or `s == 0 < n - 1`). `O(1)` time for repetition
/// numbers up to 2, `O(log n)` beyond.
///
/// ```
/// use checkpointing_schedule::schedule::binomial_forward_steps_wide;
/// // 10^11 steps, one snapshot: every step recomputed from the start.
/// let n = 100_000_000_000u64;
/// assert_eq!(binomial_forward_steps_wide(n, 1), Some(n as u128 * (n as u128 + 1) / 2));
/// ```
pub fn binomial_forward_steps_wide(n: u64, s: u64) -> Option<u128> {
    if n == 0 || (s == 0 && n > 1) {
        return None;
    }
    if n == 1 {
        return Some(1);
    }
    // Repetition numbers 1 and 2, the schedules' hot path (online-r2's
    // greedy choice costs every segment every step), without the search:
    // β(s, 1) = s + 1, β(s, 2) = (s + 1)(s + 2)/2, so the count is
    // n + n − β(s + 1, 0) = 2n − 1, or n + 2n − β(s + 1, 1) = 3n − s − 2.
    let (n_wide, s_wide) = (u128::from(n), u128::from(s));
    if n_wide <= s_wide + 1 {
        return Some(2 * n_wide - 1);
    }
    if n_wide <= (s_wide + 1) * (s_wide + 2) / 2 {
        return Some(3 * n_wide - s_wide - 2);
    }
    let (r, _) = repetition(n, s);
    let extra = (r as u128).checked_mul(n as u128)? - beta(s + 1, r - 1)?;
    (n as u128).checked_add(extra)
}

/// The last optimal position of the first checkpoint when `n >= 3` steps are
/// reversed with `s >= 2` snapshots: `min(β(s, r - 1), n - β(s - 1, r - 1))`.
///
/// The set of optimal first checkpoint positions is the interval of
/// Griewank & Walther (2000, Fig. 4); `checkpoint_schedules`' Revolve takes
/// the last minimiser of its cost table, which is this upper end.
pub(crate) fn revolve_last_split(n: u64, s: u64) -> u64 {
    debug_assert!(n >= 3 && s >= 2);
    let (r, b_s) = repetition(n, s);
    // β(s - 1, r - 1) = β(s, r - 1) s / (s + r - 1), exact.
    let b_sm1 = b_s * s as u128 / (s as u128 + r as u128 - 1);
    (b_s.min(n as u128 - b_sm1)) as u64
}

/// Which of the optimal advances [`Multistage`](super::Multistage) takes when
/// several are optimal (Griewank & Walther 2000, Fig. 4).
///
/// ```
/// use checkpointing_schedule::Trajectory;
/// assert_eq!("revolve".parse::<Trajectory>().unwrap(), Trajectory::Revolve);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trajectory {
    /// The largest step compatible with optimality (the reference's default).
    #[default]
    Maximum,
    /// The standard revolve choice (GW2000, equation at the bottom of p. 34).
    Revolve,
}

impl Trajectory {
    /// The reference package's name: `"maximum"` or `"revolve"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Maximum => "maximum",
            Self::Revolve => "revolve",
        }
    }
}

impl fmt::Display for Trajectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Trajectory {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "maximum" => Ok(Self::Maximum),
            "revolve" => Ok(Self::Revolve),
            _ => Err(ScheduleError::InvalidParameter {
                name: "trajectory",
                reason: format!("expected \"maximum\" or \"revolve\", got {s:?}"),
            }),
        }
    }
}

/// The number of steps a binomial schedule advances before storing the next
/// checkpoint when `n` steps remain and `snapshots` are free: `n_advance(n,
/// snapshots, trajectory=...)` of `checkpoint_schedules.multistage` 1.0.4
/// (snapshots above `n - 1` are ignored, as there).
///
/// Errors: [`ScheduleError::ZeroSteps`] for `n = 0`;
/// [`ScheduleError::TooFewSnapshots`] for `snapshots = 0`.
///
/// ```
/// use checkpointing_schedule::schedule::binomial_advance;
/// use checkpointing_schedule::Trajectory;
/// assert_eq!(binomial_advance(10, 1, Trajectory::Maximum), Ok(9));
/// assert_eq!(binomial_advance(10, 9, Trajectory::Maximum), Ok(1));
/// assert_eq!(binomial_advance(10, 3, Trajectory::Revolve), Ok(4));
/// ```
pub fn binomial_advance(
    n: u64,
    snapshots: u64,
    trajectory: Trajectory,
) -> Result<u64, ScheduleError> {
    if n == 0 {
        return Err(ScheduleError::ZeroSteps);
    }
    if snapshots == 0 {
        return Err(ScheduleError::TooFewSnapshots {
            schedule: "n_advance",
            got: 0,
            need: 1,
            context: "to advance",
        });
    }
    Ok(n_advance(n, snapshots, trajectory))
}

/// [`binomial_advance`] for `n >= 1` and `snapshots >= 1`.
pub(crate) fn n_advance(n: u64, snapshots: u64, trajectory: Trajectory) -> u64 {
    debug_assert!(n >= 1 && snapshots >= 1);
    // u64 arithmetic is several times faster than u128; it is exact while no
    // product overflows, which holds for any realistic n and snapshots.
    n_advance_u64(n, snapshots, trajectory)
        .or_else(|| n_advance_u128(n as u128, snapshots as u128, trajectory).map(|a| a as u64))
        .unwrap_or(1)
}

macro_rules! n_advance_body {
    ($name:ident, $int:ty, $mul:ident, $add:ident) => {
        fn $name(n: $int, snapshots: $int, trajectory: Trajectory) -> Option<$int> {
            let s = snapshots.min(n.saturating_sub(1)).max(1);
            if s == 1 {
                return Some(n - 1);
            } else if s == n - 1 {
                return Some(1);
            }
            let mut t: $int = 2;
            let mut b_s_tm2: $int = 1;
            let mut b_s_tm1: $int = s + 1;
            let mut b_s_t: $int = (s + 1).$mul(s + 2)? / 2;
            while b_s_tm1 >= n || n > b_s_t {
                t += 1;
                b_s_tm2 = b_s_tm1;
                b_s_tm1 = b_s_t;
                b_s_t = b_s_t.$mul(s + t)? / t;
            }
            let b_sm1_tm1 = b_s_tm1.$mul(s)? / (s + t - 1);
            let b_sm2_tm1 = b_sm1_tm1.$mul(s - 1)? / (s + t - 2);
            let advance = match trajectory {
                Trajectory::Maximum => {
                    let b_sm1_tm2 = b_s_tm2.$mul(s)? / (s + t - 2);
                    if n <= b_s_tm1.$add(b_sm1_tm2)? {
                        n - b_s_tm1 + b_s_tm2
                    } else if n <= b_s_tm1.$add(b_sm2_tm1)?.$add(b_sm1_tm2)? {
                        b_s_tm2 + b_sm1_tm2
                    } else if n <= b_s_tm1.$add(b_sm1_tm1)?.$add(b_sm2_tm1)? {
                        n - b_sm1_tm1 - b_sm2_tm1
                    } else {
                        b_s_tm1
                    }
                }
                Trajectory::Revolve => {
                    if n <= b_s_tm1.$add(b_sm2_tm1)? {
                        b_s_tm2
                    } else if n < b_s_tm1.$add(b_sm1_tm1)?.$add(b_sm2_tm1)? {
                        n - b_sm1_tm1 - b_sm2_tm1
                    } else {
                        b_s_tm1
                    }
                }
            };
            Some(advance)
        }
    };
}

/// `Option`'s `?` on plain `u128` values: every operation succeeds.
trait Always: Sized {
    fn always_mul(self, rhs: Self) -> Option<Self>;
    fn always_add(self, rhs: Self) -> Option<Self>;
}

impl Always for u128 {
    fn always_mul(self, rhs: Self) -> Option<Self> {
        Some(self * rhs)
    }
    fn always_add(self, rhs: Self) -> Option<Self> {
        Some(self + rhs)
    }
}

n_advance_body!(n_advance_u64, u64, checked_mul, checked_add);
n_advance_body!(n_advance_u128, u128, always_mul, always_add);

#[cfg(test)]
mod tests {
    use super::*;

    /// The cost table of the reference, in integers: minimal extra forward
    /// steps `T(n, s)` with the last minimising split.
    fn table(smax: usize, nmax: usize) -> (Vec<Vec<u64>>, Vec<Vec<u64>>) {
        let mut t = vec![vec![0u64; nmax + 1]; smax + 1];
        let mut last = vec![vec![0u64; nmax + 1]; smax + 1];
        for (n, t1) in t[1].iter_mut().enumerate() {
            *t1 = (n * n.saturating_sub(1) / 2) as u64;
        }
        for s in 2..=smax {
            t[s][2] = 1;
            for n in 3..=nmax {
                let (mut best, mut arg) = (u64::MAX, 0);
                for j in 1..n - 1 {
                    let v = j as u64 + t[s - 1][n - j] + t[s][j];
                    if v <= best {
                        best = v;
                        arg = j as u64;
                    }
                }
                t[s][n] = best;
                last[s][n] = arg;
            }
        }
        (t, last)
    }

    #[test]
    fn closed_forms_match_the_dynamic_program() {
        let (t, last) = table(9, 400);
        for s in 2..=9 {
            for n in 3..=400 {
                assert_eq!(
                    revolve_last_split(n as u64, s as u64),
                    last[s][n],
                    "n={n} s={s}"
                );
                assert_eq!(
                    binomial_forward_steps(n as u64, s as u64),
                    Some(n as u64 + t[s][n])
                );
            }
        }
    }

    #[test]
    fn beta_overflow_is_none() {
        assert_eq!(beta(3, 2), Some(10));
        assert_eq!(beta(1000, 1000), None);
    }
}

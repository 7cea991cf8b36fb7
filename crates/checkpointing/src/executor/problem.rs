//! What the user gives the executor: one step of the loop and its adjoint
//! ([`Problem`], or two closures, [`FnProblem`]).

use std::marker::PhantomData;

use crate::action::Step;

/// An error from user code.
pub type UserError = Box<dyn std::error::Error + Send + Sync>;

/// One step of a time-stepping loop and its adjoint.
///
/// ```
/// use checkpointing::{Problem, Step, UserError};
/// /// x_{i+1} = a x_i; gradient of x_N with respect to x_0 and a.
/// struct Scale { a: f64, grad_a: f64 }
/// impl Problem for Scale {
///     type State = f64;
///     type Adjoint = f64;
///     fn forward(&mut self, _: Step, x: &mut f64) -> Result<(), UserError> {
///         *x *= self.a;
///         Ok(())
///     }
///     fn adjoint(&mut self, _: Step, x: &f64, lambda: &mut f64) -> Result<(), UserError> {
///         self.grad_a += *lambda * x; // parameter adjoint
///         *lambda *= self.a;          // state adjoint
///         Ok(())
///     }
/// }
/// ```
pub trait Problem {
    /// The forward state `x_i`.
    type State: Clone;
    /// The adjoint state `λ_i`.
    type Adjoint;
    /// Advances `state` from step `step` to `step + 1`.
    fn forward(&mut self, step: Step, state: &mut Self::State) -> Result<(), UserError>;
    /// Given `state = x_step`, turns `adjoint = λ_{step+1}` into
    /// `λ_step`, accumulating parameter gradients in `self`.
    fn adjoint(
        &mut self,
        step: Step,
        state: &Self::State,
        adjoint: &mut Self::Adjoint,
    ) -> Result<(), UserError>;
}

/// A [`Problem`] from two closures.
///
/// ```
/// use checkpointing::{Executor, FnProblem, Revolve};
/// // x_{i+1} = x_i^2 / 2: dx_N/dx_0 by the chain rule.
/// let mut problem = FnProblem::new(
///     |_, x: &mut f64| *x = *x * *x / 2.0,
///     |_, x: &f64, l: &mut f64| *l *= *x,
/// );
/// let out = Executor::in_memory()
///     .run(&mut problem, Revolve::new(3, 1).unwrap(), 1.5, |_| Ok(1.0))
///     .unwrap();
/// let (x1, x2) = (1.5_f64 * 1.5 / 2.0, 1.5_f64.powi(4) / 8.0);
/// assert_eq!(out.adjoint, x2 * x1 * 1.5);
/// ```
pub struct FnProblem<S, A, F, B> {
    forward: F,
    adjoint: B,
    _types: PhantomData<fn(S, A)>,
}

impl<S, A, F, B> FnProblem<S, A, F, B>
where
    F: FnMut(Step, &mut S),
    B: FnMut(Step, &S, &mut A),
{
    /// A problem from a forward and an adjoint closure.
    pub fn new(forward: F, adjoint: B) -> Self {
        Self {
            forward,
            adjoint,
            _types: PhantomData,
        }
    }
}

/// A closure problem is cloned with its closures (for
/// [`Executor::run_planned`](crate::Executor::run_planned), which measures
/// on a clone).
impl<S, A, F: Clone, B: Clone> Clone for FnProblem<S, A, F, B> {
    fn clone(&self) -> Self {
        Self {
            forward: self.forward.clone(),
            adjoint: self.adjoint.clone(),
            _types: PhantomData,
        }
    }
}

impl<S: Clone, A, F, B> Problem for FnProblem<S, A, F, B>
where
    F: FnMut(Step, &mut S),
    B: FnMut(Step, &S, &mut A),
{
    type State = S;
    type Adjoint = A;
    fn forward(&mut self, step: Step, state: &mut S) -> Result<(), UserError> {
        (self.forward)(step, state);
        Ok(())
    }
    fn adjoint(&mut self, step: Step, state: &S, adjoint: &mut A) -> Result<(), UserError> {
        (self.adjoint)(step, state, adjoint);
        Ok(())
    }
}

//! # checkpointing-burn
//!
//! Write the forward loop with [burn](https://burn.dev) tensors; get its
//! gradient under any checkpointing schedule, without writing an adjoint.
//!
//! The loop is `x_{i+1} = step(model, x_i, i)` for `i < n`, then
//! `J = loss(model, x_n)`. [`checkpointed_gradient`] drives the
//! [`Executor`] of `checkpointing` through a schedule: forward steps run
//! without recording a graph (the model's parameters detached), snapshots of
//! the state are kept as the schedule says, and each step of the reverse
//! pass re-runs that one step under burn's autodiff from its stored input
//! and back-propagates the adjoint through it — a per-step vector–Jacobian
//! product, as Checkpointing.jl does with Enzyme (Griewank & Walther,
//! "Evaluating Derivatives", 2nd ed., SIAM 2008, ch. 12). The autodiff graph
//! never holds more than one step, and the snapshots never more than the
//! schedule's. It returns `J`, `∂J/∂x_0` and the parameters' gradients
//! ([`GradientsParams`], ready for a burn optimizer).
//!
//! Every piece of state that `step` reads must be in `x` (any
//! [`TensorState`]: a tensor, a tuple of tensors, a vector of them) or be
//! constant: the model, and anything computed from the step index (e.g.
//! noise drawn from an RNG seeded by the step index). A step that draws from
//! a global RNG would draw different values when it is recomputed, and the
//! gradient would be wrong.
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use burn::module::{Module, Param};
//! use burn::tensor::{backend::Backend, Tensor};
//! use checkpointing::Revolve;
//! use checkpointing_burn::checkpointed_gradient;
//!
//! type AD = Autodiff<NdArray<f64>>;
//!
//! #[derive(Module, Debug)]
//! struct Decay<B: Backend> { rate: Param<Tensor<B, 1>> }
//!
//! let device = Default::default();
//! let model = Decay::<AD> { rate: Param::from_tensor(Tensor::from_data([0.1f64], &device)) };
//! let x0 = Tensor::<AD, 1>::from_data([1.0f64, 2.0], &device);
//! // x_{i+1} = x_i - rate * x_i, 50 steps, Revolve with 5 snapshots; J = Σ x_n².
//! let out = checkpointed_gradient(
//!     &model,
//!     x0,
//!     Revolve::new(50, 5).unwrap(),
//!     |m: &Decay<AD>, x: Tensor<AD, 1>, _| x.clone() - x * m.rate.val(),
//!     |_, x: &Tensor<AD, 1>| (x.clone() * x.clone()).sum(),
//! )
//! .unwrap();
//! // dJ/dx0 = 2 x_n (1 - rate)^50 = 2 x0 0.9^100.
//! let g: Vec<f64> = out.state.into_data().to_vec().unwrap();
//! assert!((g[0] - 2.0 * 0.9f64.powi(100)).abs() < 1e-15);
//! ```

#![warn(missing_docs)]

use std::cell::RefCell;

use burn::module::AutodiffModule;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{ElementConversion, Tensor};

use checkpointing::{
    Checkpoint, ExecutionStats, Executor, ExecutorError, Footprint, MemoryStore, Problem, Schedule,
    Step, UserError,
};

/// The tensors of a loop's state, on an autodiff backend.
///
/// Implemented for `Tensor<B, D>`, pairs and triples of states and
/// `Vec`s of them; implement it for a struct by doing the same for each
/// field.
pub trait TensorState<B: AutodiffBackend>: Clone + Send {
    /// The same tensors, cut from any recorded graph.
    fn detach(self) -> Self;
    /// The same tensors, tracked by the next backward pass.
    fn require_grad(self) -> Self;
    /// `Σ_k ⟨self_k, weights_k⟩`, a one-element tensor: the seed of a
    /// vector–Jacobian product.
    fn weighted_sum(&self, weights: &Self) -> Tensor<B, 1>;
    /// The gradient of each tensor in `grads` (zeros where the backward
    /// pass did not reach it), as untracked tensors.
    fn grad(&self, grads: &B::Gradients) -> Self;
    /// Bytes of tensor data held.
    fn bytes(&self) -> usize;
}

impl<B: AutodiffBackend, const D: usize> TensorState<B> for Tensor<B, D> {
    fn detach(self) -> Self {
        Tensor::detach(self)
    }

    fn require_grad(self) -> Self {
        Tensor::require_grad(self)
    }

    fn weighted_sum(&self, weights: &Self) -> Tensor<B, 1> {
        (self.clone() * weights.clone().detach()).sum()
    }

    fn grad(&self, grads: &B::Gradients) -> Self {
        match Tensor::grad(self, grads) {
            Some(g) => Tensor::from_inner(g),
            None => self.zeros_like(),
        }
    }

    fn bytes(&self) -> usize {
        self.shape().num_elements() * std::mem::size_of::<B::FloatElem>()
    }
}

macro_rules! tuple_state {
    ($($t:ident $i:tt),+) => {
        impl<B: AutodiffBackend, $($t: TensorState<B>),+> TensorState<B> for ($($t,)+) {
            fn detach(self) -> Self {
                ($(self.$i.detach(),)+)
            }

            fn require_grad(self) -> Self {
                ($(self.$i.require_grad(),)+)
            }

            fn weighted_sum(&self, weights: &Self) -> Tensor<B, 1> {
                let sums = [$(self.$i.weighted_sum(&weights.$i)),+];
                Tensor::cat(sums.to_vec(), 0).sum()
            }

            fn grad(&self, grads: &B::Gradients) -> Self {
                ($(self.$i.grad(grads),)+)
            }

            fn bytes(&self) -> usize {
                0 $(+ self.$i.bytes())+
            }
        }
    };
}

tuple_state!(S0 0, S1 1);
tuple_state!(S0 0, S1 1, S2 2);

impl<B: AutodiffBackend, S: TensorState<B>> TensorState<B> for Vec<S> {
    fn detach(self) -> Self {
        self.into_iter().map(TensorState::detach).collect()
    }

    fn require_grad(self) -> Self {
        self.into_iter().map(TensorState::require_grad).collect()
    }

    fn weighted_sum(&self, weights: &Self) -> Tensor<B, 1> {
        let sums: Vec<Tensor<B, 1>> = self
            .iter()
            .zip(weights)
            .map(|(s, w)| s.weighted_sum(w))
            .collect();
        Tensor::cat(sums, 0).sum()
    }

    fn grad(&self, grads: &B::Gradients) -> Self {
        self.iter().map(|s| s.grad(grads)).collect()
    }

    fn bytes(&self) -> usize {
        self.iter().map(TensorState::bytes).sum()
    }
}

/// Adapts a [`TensorState`] to [`Footprint`] without an orphan impl.
#[derive(Clone)]
struct Held<B: AutodiffBackend, S: TensorState<B>>(S, std::marker::PhantomData<fn() -> B>);

impl<B: AutodiffBackend, S: TensorState<B>> Footprint for Held<B, S> {
    fn footprint(&self) -> usize {
        self.0.bytes()
    }
}

/// What [`checkpointed_gradient`] returns.
#[derive(Debug)]
pub struct LoopGradient<S> {
    /// `J`.
    pub loss: f64,
    /// `∂J/∂x_0`.
    pub state: S,
    /// `∂J/∂θ` of the model's parameters, for a burn optimizer.
    pub params: GradientsParams,
    /// What the executor did (steps, snapshots, measured snapshot memory).
    pub stats: ExecutionStats,
}

/// The executor's view of the loop: cheap forward steps and per-step VJPs.
struct StepProblem<'m, B: AutodiffBackend, M: AutodiffModule<B>, S, F> {
    /// The model with parameters detached: forward steps record nothing.
    detached: M,
    model: &'m M,
    step: F,
    gradients: GradientsAccumulator<M>,
    _types: std::marker::PhantomData<fn() -> (B, S)>,
}

impl<B, M, S, F> Problem for StepProblem<'_, B, M, S, F>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Clone,
    S: TensorState<B>,
    F: FnMut(&M, S, Step) -> S,
{
    type State = Held<B, S>;
    type Adjoint = S;

    fn forward(&mut self, step: Step, state: &mut Held<B, S>) -> Result<(), UserError> {
        let x = state.0.clone();
        state.0 = (self.step)(&self.detached, x, step).detach();
        Ok(())
    }

    fn adjoint(&mut self, step: Step, state: &Held<B, S>, lambda: &mut S) -> Result<(), UserError> {
        let x = state.0.clone().detach().require_grad();
        let out = (self.step)(self.model, x.clone(), step);
        let grads = out.weighted_sum(lambda).backward();
        *lambda = x.grad(&grads);
        self.gradients
            .accumulate(self.model, GradientsParams::from_grads(grads, self.model));
        Ok(())
    }
}

/// `J = loss(model, x_n)` after `x_{i+1} = step(model, x_i, i)` from
/// `initial`, and its gradients, computed under `schedule` (offline: its
/// `max_n` is `n`). Snapshots are kept in memory; the stats report their
/// measured peak.
///
/// Errors: the schedule's (e.g. an online schedule; use
/// [`checkpointed_gradient_online`]).
pub fn checkpointed_gradient<B, M, S, Sc>(
    model: &M,
    initial: S,
    schedule: Sc,
    step: impl FnMut(&M, S, Step) -> S,
    loss: impl FnOnce(&M, &S) -> Tensor<B, 1>,
) -> Result<LoopGradient<S>, ExecutorError>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Clone,
    S: TensorState<B>,
    Sc: Schedule,
{
    run(
        model,
        initial,
        schedule,
        step,
        None::<fn(Step, &S) -> bool>,
        loss,
    )
}

/// As [`checkpointed_gradient`], for a loop that decides when it ends:
/// after each step `n`, `stop(n, &x_n)` says whether it was the last; the
/// schedule is online (e.g. `OnlineR2`, `TwoLevel`).
pub fn checkpointed_gradient_online<B, M, S, Sc>(
    model: &M,
    initial: S,
    schedule: Sc,
    step: impl FnMut(&M, S, Step) -> S,
    stop: impl FnMut(Step, &S) -> bool,
    loss: impl FnOnce(&M, &S) -> Tensor<B, 1>,
) -> Result<LoopGradient<S>, ExecutorError>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Clone,
    S: TensorState<B>,
    Sc: Schedule,
{
    run(model, initial, schedule, step, Some(stop), loss)
}

fn run<B, M, S, Sc>(
    model: &M,
    initial: S,
    schedule: Sc,
    step: impl FnMut(&M, S, Step) -> S,
    stop: Option<impl FnMut(Step, &S) -> bool>,
    loss: impl FnOnce(&M, &S) -> Tensor<B, 1>,
) -> Result<LoopGradient<S>, ExecutorError>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Clone,
    S: TensorState<B>,
    Sc: Schedule,
{
    let mut problem = StepProblem {
        detached: model.clone().no_grad(),
        model,
        step,
        gradients: GradientsAccumulator::new(),
        _types: std::marker::PhantomData,
    };
    // The terminal condition: J, λ_n = ∂J/∂x_n, and J's own ∂J/∂θ.
    let terminal_result = RefCell::new(None);
    let terminal = |x: &Held<B, S>| -> Result<S, UserError> {
        let x = x.0.clone().detach().require_grad();
        let j = loss(model, &x);
        let value: f64 = j.clone().into_scalar().elem();
        let grads = j.backward();
        let lambda = x.grad(&grads);
        *terminal_result.borrow_mut() = Some((value, GradientsParams::from_grads(grads, model)));
        Ok(lambda)
    };
    let mut executor = Executor::new(
        MemoryStore::<Checkpoint<Held<B, S>>>::new(),
        MemoryStore::new(),
    );
    let initial = Held(initial.detach(), std::marker::PhantomData);
    let outcome = match stop {
        None => executor.run(&mut problem, schedule, initial, terminal)?,
        Some(mut stop) => executor.run_online(
            &mut problem,
            schedule,
            initial,
            move |n, x: &Held<B, S>| stop(n, &x.0),
            terminal,
        )?,
    };
    let (loss, terminal_grads) = terminal_result
        .into_inner()
        .expect("the executor ran the terminal condition");
    problem.gradients.accumulate(model, terminal_grads);
    Ok(LoopGradient {
        loss,
        state: outcome.adjoint,
        params: problem.gradients.grads(),
        stats: outcome.stats,
    })
}

/// The same gradient by burn's autodiff over the whole loop (every step's
/// graph held until the backward pass): the reference the checkpointed
/// gradient is tested against, and the peer of the memory benchmark.
pub fn whole_loop_gradient<B, M, S>(
    model: &M,
    initial: S,
    steps: Step,
    mut step: impl FnMut(&M, S, Step) -> S,
    loss: impl FnOnce(&M, &S) -> Tensor<B, 1>,
) -> LoopGradient<S>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Clone,
    S: TensorState<B>,
{
    let x0 = initial.detach().require_grad();
    let mut x = x0.clone();
    for i in 0..steps {
        x = step(model, x, i);
    }
    let j = loss(model, &x);
    let value: f64 = j.clone().into_scalar().elem();
    let grads = j.backward();
    LoopGradient {
        loss: value,
        state: x0.grad(&grads),
        params: GradientsParams::from_grads(grads, model),
        stats: ExecutionStats::default(),
    }
}

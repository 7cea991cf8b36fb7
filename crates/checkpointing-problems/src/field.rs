//! What every explicit scheme on a `Vec<f64>` field with a hand-written
//! adjoint shares: [`field_problem!`](crate::field_problem) turns a type's
//! `step`, `adjoint_step`, `objective` and `objective_gradient` into its
//! [`Problem`](checkpointing::Problem) implementation, a forward run and a
//! store-all gradient (the reference the checkpointed gradients are checked
//! against).

/// Implements, for a type with the inherent methods `step(&mut self, &mut
/// Vec<f64>)`, `adjoint_step(&mut self, &[f64], &mut Vec<f64>)`,
/// `objective(&[f64]) -> f64` and `objective_gradient(&[f64]) -> Vec<f64>`:
///
/// * `run_forward(&mut self, x0, steps)`: the final field after `steps`
///   steps;
/// * `gradient_store_all(&mut self, x0, steps)`: every state kept, then the
///   adjoint; returns `(J, ∂J/∂x_0)`, parameter gradients accumulating in
///   `self` as `adjoint_step` accumulates them;
/// * [`Problem`](checkpointing::Problem) with `State = Adjoint = Vec<f64>`.
///
/// ```
/// use checkpointing_problems::field_problem;
/// /// x_{i+1} = a x_i, J = Σ x².
/// struct Scale { a: f64, grad_a: f64 }
/// impl Scale {
///     fn step(&mut self, x: &mut Vec<f64>) { x.iter_mut().for_each(|v| *v *= self.a) }
///     fn adjoint_step(&mut self, x: &[f64], mu: &mut Vec<f64>) {
///         self.grad_a += x.iter().zip(mu.iter()).map(|(x, m)| x * m).sum::<f64>();
///         mu.iter_mut().for_each(|m| *m *= self.a);
///     }
///     fn objective(x: &[f64]) -> f64 { x.iter().map(|v| v * v).sum() }
///     fn objective_gradient(x: &[f64]) -> Vec<f64> { x.iter().map(|v| 2.0 * v).collect() }
/// }
/// field_problem!(Scale);
/// let mut scale = Scale { a: 2.0, grad_a: 0.0 };
/// assert_eq!(scale.run_forward(vec![1.0], 3), vec![8.0]);
/// let (j, gradient) = scale.gradient_store_all(vec![1.0], 3);
/// assert_eq!((j, gradient), (64.0, vec![128.0])); // J = 64 x0², dJ/dx0 = 128 x0
/// ```
#[macro_export]
macro_rules! field_problem {
    ($type:ty) => {
        impl $type {
            /// The final field after `steps` steps from `initial`.
            pub fn run_forward(
                &mut self,
                mut x: Vec<f64>,
                steps: ::checkpointing::Step,
            ) -> Vec<f64> {
                for _ in 0..steps {
                    self.step(&mut x);
                }
                x
            }

            /// Store-all reference: every state kept, then the adjoint.
            /// Returns `(J, ∂J/∂x_0)`; parameter gradients accumulate in
            /// `self`.
            pub fn gradient_store_all(
                &mut self,
                initial: Vec<f64>,
                steps: ::checkpointing::Step,
            ) -> (f64, Vec<f64>) {
                let mut states = Vec::with_capacity(steps as usize);
                let mut x = initial;
                for _ in 0..steps {
                    states.push(x.clone());
                    self.step(&mut x);
                }
                let j = Self::objective(&x);
                let mut mu = Self::objective_gradient(&x);
                for state in states.iter().rev() {
                    self.adjoint_step(state, &mut mu);
                }
                (j, mu)
            }
        }

        impl ::checkpointing::Problem for $type {
            type State = Vec<f64>;
            type Adjoint = Vec<f64>;

            fn forward(
                &mut self,
                _step: ::checkpointing::Step,
                state: &mut Vec<f64>,
            ) -> Result<(), ::checkpointing::UserError> {
                self.step(state);
                Ok(())
            }

            fn adjoint(
                &mut self,
                _step: ::checkpointing::Step,
                state: &Vec<f64>,
                mu: &mut Vec<f64>,
            ) -> Result<(), ::checkpointing::UserError> {
                self.adjoint_step(state, mu);
                Ok(())
            }
        }
    };
}

//! A neural ODE trained through a checkpointed loop: the whole user code.
//! `cargo run --release -p checkpointing-burn --example train`

use burn::backend::{Autodiff, NdArray};
use burn::module::{Module, Param};
use burn::optim::{AdamConfig, Optimizer};
use burn::tensor::{backend::Backend, Tensor};
use checkpointing::{Revolve, Step};
use checkpointing_burn::checkpointed_gradient;

type AD = Autodiff<NdArray<f64>>;

#[derive(Module, Debug)]
struct Ode<B: Backend> {
    w: Param<Tensor<B, 2>>,
    b: Param<Tensor<B, 1>>,
}

/// h_{i+1} = h_i + dt tanh(h_i W + b): written once, never differentiated by hand.
fn step<B: Backend>(m: &Ode<B>, h: Tensor<B, 1>, _: Step) -> Tensor<B, 1> {
    let f = h
        .clone()
        .unsqueeze_dim::<2>(0)
        .matmul(m.w.val())
        .squeeze_dim::<1>(0)
        + m.b.val();
    h + f.tanh() * 0.05
}

fn main() {
    let device = Default::default();
    let mut model = Ode::<AD> {
        w: Param::from_tensor(Tensor::from_data(
            [[0.1, -0.3, 0.2], [0.4, 0.1, -0.2], [0.0, 0.2, 0.1]],
            &device,
        )),
        b: Param::from_tensor(Tensor::zeros([3], &device)),
    };
    let h0 = Tensor::<AD, 1>::from_data([0.5, -0.5, 0.1], &device);
    let target = Tensor::<AD, 1>::from_data([1.0, 0.0, -0.5], &device);
    let loss = |_: &Ode<AD>, h: &Tensor<AD, 1>| (h.clone() - target.clone()).powi_scalar(2).sum();
    let mut optimizer = AdamConfig::new().init();
    for epoch in 0..30 {
        // 1000 steps, 8 snapshots: the autodiff graph never spans more than one step.
        let schedule = Revolve::new(1000, 8).expect("valid schedule");
        let out =
            checkpointed_gradient(&model, h0.clone(), schedule, step, loss).expect("gradient");
        if epoch % 5 == 0 {
            println!("epoch {epoch:2}: loss {:.6}", out.loss);
        }
        model = optimizer.step(0.02, model, out.params);
    }
}

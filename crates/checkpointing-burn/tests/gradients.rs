//! Checkpointed gradients through burn's autodiff equal burn's own autodiff
//! over the whole loop (NdArray, f64; relative tolerance 1e-11: the
//! parameter gradient is summed step by step instead of inside one graph,
//! so rounding differs), for every schedule of the library, on the heat
//! equation, a two-tensor nonlinear state with an inner fixed-point
//! iteration and per-step noise, and a small neural ODE trained with SGD.

use burn::backend::{Autodiff, NdArray};
use burn::module::{Module, Param, ParamId};
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use checkpointing::{Schedule, ScheduleSpec, Step, Trajectory};
use checkpointing_burn::{
    checkpointed_gradient, checkpointed_gradient_online, whole_loop_gradient, LoopGradient,
    TensorState,
};

type AD = Autodiff<NdArray<f64>>;
type Inner = NdArray<f64>;

const TOLERANCE: f64 = 1e-11;

fn values<const D: usize>(t: Tensor<AD, D>) -> Vec<f64> {
    t.into_data().to_vec().unwrap()
}

fn param_grad<const D: usize>(grads: &GradientsParams, id: ParamId) -> Vec<f64> {
    grads
        .get::<Inner, D>(id)
        .map(|t| t.into_data().to_vec().unwrap())
        .unwrap_or_default()
}

fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().fold(0.0_f64, |m, x| m.max(x.abs())).max(1e-300);
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= TOLERANCE * scale,
            "{what}[{i}]: {a} vs {b} (scale {scale})"
        );
    }
}

/// Every schedule of the library for `steps` steps.
fn specs(steps: Step) -> Vec<ScheduleSpec> {
    let json = [
        format!(r#"{{"schedule":"revolve","max_n":{steps},"snapshots_in_ram":3}}"#),
        format!(
            r#"{{"schedule":"hrevolve","max_n":{steps},"snapshots_in_ram":2,"snapshots_on_disk":3}}"#
        ),
        format!(r#"{{"schedule":"disk-revolve","max_n":{steps},"snapshots_in_ram":2}}"#),
        format!(r#"{{"schedule":"periodic-disk-revolve","max_n":{steps},"snapshots_in_ram":2}}"#),
        format!(
            r#"{{"schedule":"multistage","max_n":{steps},"snapshots_in_ram":2,"snapshots_on_disk":2}}"#
        ),
        format!(r#"{{"schedule":"mixed","max_n":{steps},"snapshots":4,"storage":"DISK"}}"#),
        format!(r#"{{"schedule":"periodic","max_n":{steps},"period":5}}"#),
        format!(r#"{{"schedule":"single-memory","steps":{steps}}}"#),
        format!(r#"{{"schedule":"single-disk","steps":{steps},"move_data":true}}"#),
        format!(r#"{{"schedule":"none","steps":{steps}}}"#),
        format!(
            r#"{{"schedule":"two-level","steps":{steps},"period":6,"binomial_snapshots":2,"binomial_storage":"RAM","binomial_trajectory":"maximum"}}"#
        ),
        format!(r#"{{"schedule":"online-r2","steps":{steps},"snapshots":4}}"#),
    ];
    let mut specs: Vec<ScheduleSpec> = json.iter().map(|j| serde_json_spec(j)).collect();
    specs.retain(|s| s.name() != "none"); // forward only: no adjoint
    specs
}

fn serde_json_spec(json: &str) -> ScheduleSpec {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

/// The checkpointed gradient under `spec` (online schedules stop at its
/// number of steps).
fn under<M, S>(
    spec: &ScheduleSpec,
    model: &M,
    x0: S,
    step: impl FnMut(&M, S, Step) -> S,
    loss: impl FnOnce(&M, &S) -> Tensor<AD, 1>,
) -> LoopGradient<S>
where
    M: burn::module::AutodiffModule<AD> + Clone,
    S: TensorState<AD>,
{
    let steps = spec.steps();
    let schedule = spec.build().unwrap();
    if schedule.max_n().is_some() {
        checkpointed_gradient(model, x0, schedule, step, loss)
    } else {
        checkpointed_gradient_online(model, x0, schedule, step, move |n, _| n == steps, loss)
    }
    .unwrap_or_else(|e| panic!("{spec:?}: {e}"))
}

// ------------------------------------------------------------- heat equation

#[derive(Module, Debug)]
struct Heat<B: Backend> {
    lambda: Param<Tensor<B, 1>>,
    gamma: f64,
}

fn heat_step<B: Backend>(m: &Heat<B>, t: Tensor<B, 1>, _: Step) -> Tensor<B, 1> {
    let n = t.dims()[0];
    let (left, mid, right) = (
        t.clone().slice(0..n - 2),
        t.clone().slice(1..n - 1),
        t.clone().slice(2..n),
    );
    let lambda = m.lambda.val();
    let interior = mid.clone() + (left - mid.clone() * 2.0 + right) * lambda
        - mid.clone() * mid.clone() * mid * m.gamma;
    Tensor::cat(vec![t.clone().slice(0..1), interior, t.slice(n - 1..n)], 0)
}

fn heat_loss<B: Backend>(_: &Heat<B>, t: &Tensor<B, 1>) -> Tensor<B, 1> {
    (t.clone() * t.clone()).sum()
}

fn heat(cells: usize) -> (Heat<AD>, Tensor<AD, 1>) {
    let device = Default::default();
    let model = Heat {
        lambda: Param::from_tensor(Tensor::from_floats([0.45], &device)),
        gamma: 1e-4,
    };
    let mut t0 = vec![0.0; cells];
    t0[0] = 20.0;
    t0[cells / 2] = 5.0;
    (model, Tensor::from_floats(t0.as_slice(), &device))
}

#[test]
fn heat_equation_every_schedule_matches_whole_loop_autodiff() {
    const STEPS: Step = 40;
    let (model, t0) = heat(30);
    let want = whole_loop_gradient(&model, t0.clone(), STEPS, heat_step, heat_loss);
    let want_lambda = param_grad::<1>(&want.params, model.lambda.id);
    assert!(want_lambda[0].abs() > 0.0);
    for spec in specs(STEPS) {
        let got = under(&spec, &model, t0.clone(), heat_step, heat_loss);
        let what = format!("{spec:?}");
        assert!(
            (got.loss - want.loss).abs() <= TOLERANCE * want.loss.abs(),
            "{what}: loss"
        );
        assert_close(
            &what,
            &values(got.state.clone()),
            &values(want.state.clone()),
        );
        assert_close(
            &what,
            &param_grad::<1>(&got.params, model.lambda.id),
            &want_lambda,
        );
        assert_eq!(got.stats.adjoint_steps, STEPS, "{what}");
    }
}

#[test]
fn the_autodiff_graph_never_spans_more_than_one_step() {
    // Revolve(200, 4): at most 4 snapshots + the live state + WORK data.
    let (model, t0) = heat(1000);
    let out = checkpointed_gradient(
        &model,
        t0,
        checkpointing::Revolve::new(200, 4).unwrap(),
        heat_step,
        heat_loss,
    )
    .unwrap();
    let state_bytes = 1000 * 8;
    assert!(
        out.stats.peak_snapshot_bytes <= 6 * state_bytes as u64,
        "{} bytes of snapshots",
        out.stats.peak_snapshot_bytes
    );
}

// --------------------------------- two tensors, nonlinear, nested, with noise

#[derive(Module, Debug)]
struct Coupled<B: Backend> {
    w: Param<Tensor<B, 2>>,
    damping: Param<Tensor<B, 1>>,
}

/// Per-step noise from a counter-based generator: the same values whenever
/// step `i` is (re)computed — RNG state derived from the step, not carried.
fn noise<B: Backend>(i: Step, len: usize, device: &B::Device) -> Tensor<B, 1> {
    let values: Vec<f64> = (0..len as u64)
        .map(|k| {
            let mut x = (i << 32 | k).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            x ^= x >> 29;
            x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x ^= x >> 32;
            (x as f64 / u64::MAX as f64 - 0.5) * 0.01
        })
        .collect();
    Tensor::from_floats(values.as_slice(), device)
}

/// (u, v) ↦ implicit-midpoint-like update solved by 4 fixed-point
/// iterations: an inner loop inside each step.
fn coupled_step<B: Backend>(
    m: &Coupled<B>,
    (u, v): (Tensor<B, 1>, Tensor<B, 1>),
    i: Step,
) -> (Tensor<B, 1>, Tensor<B, 1>) {
    let dt = 0.05;
    let rhs = |u: Tensor<B, 1>, v: Tensor<B, 1>| {
        let du = v
            .clone()
            .unsqueeze_dim::<2>(0)
            .matmul(m.w.val())
            .squeeze_dim::<1>(0)
            .tanh();
        let dv = (u.clone() * v.clone()).neg() - v * m.damping.val();
        (du, dv)
    };
    let (mut un, mut vn) = (u.clone(), v.clone());
    for _ in 0..4 {
        let (du, dv) = rhs(
            (u.clone() + un.clone()) * 0.5,
            (v.clone() + vn.clone()) * 0.5,
        );
        un = u.clone() + du * dt;
        vn = v.clone() + dv * dt;
    }
    let device = un.device();
    (un + noise::<B>(i, u.dims()[0], &device), vn)
}

fn coupled_loss<B: Backend>(_: &Coupled<B>, (u, v): &(Tensor<B, 1>, Tensor<B, 1>)) -> Tensor<B, 1> {
    (u.clone() * v.clone()).sum() + (v.clone() * v.clone()).sum()
}

#[test]
fn two_tensor_nonlinear_state_with_an_inner_loop_and_noise_matches() {
    const STEPS: Step = 30;
    let device = Default::default();
    let model = Coupled::<AD> {
        w: Param::from_tensor(Tensor::from_floats(
            [[0.3, -0.2, 0.1], [0.5, 0.2, -0.4], [-0.1, 0.3, 0.2]],
            &device,
        )),
        damping: Param::from_tensor(Tensor::from_floats([0.2], &device)),
    };
    let x0 = (
        Tensor::<AD, 1>::from_floats([0.5, -0.3, 0.8], &device),
        Tensor::<AD, 1>::from_floats([1.0, 0.4, -0.6], &device),
    );
    let want = whole_loop_gradient(&model, x0.clone(), STEPS, coupled_step, coupled_loss);
    for spec in specs(STEPS) {
        let got = under(&spec, &model, x0.clone(), coupled_step, coupled_loss);
        let what = format!("{spec:?}");
        assert_close(
            &what,
            &values(got.state.0.clone()),
            &values(want.state.0.clone()),
        );
        assert_close(
            &what,
            &values(got.state.1.clone()),
            &values(want.state.1.clone()),
        );
        assert_close(
            &what,
            &param_grad::<2>(&got.params, model.w.id),
            &param_grad::<2>(&want.params, model.w.id),
        );
        assert_close(
            &what,
            &param_grad::<1>(&got.params, model.damping.id),
            &param_grad::<1>(&want.params, model.damping.id),
        );
    }
}

// ------------------------------------------- a neural ODE trained with SGD

#[derive(Module, Debug)]
struct NeuralOde<B: Backend> {
    w: Param<Tensor<B, 2>>,
    b: Param<Tensor<B, 1>>,
}

fn ode_step<B: Backend>(m: &NeuralOde<B>, h: Tensor<B, 1>, _: Step) -> Tensor<B, 1> {
    let f = (h
        .clone()
        .unsqueeze_dim::<2>(0)
        .matmul(m.w.val())
        .squeeze_dim::<1>(0)
        + m.b.val())
    .tanh();
    h + f * 0.1
}

fn ode_loss<B: Backend>(_: &NeuralOde<B>, h: &Tensor<B, 1>) -> Tensor<B, 1> {
    let target = Tensor::<B, 1>::from_floats([1.0, -0.5, 0.25, 0.0], &h.device());
    let d = h.clone() - target;
    (d.clone() * d).sum()
}

#[test]
fn training_a_neural_ode_follows_the_same_trajectory_and_the_loss_goes_down() {
    const STEPS: Step = 25;
    let device = Default::default();
    let init = || NeuralOde::<AD> {
        w: Param::from_tensor(Tensor::from_floats(
            [
                [0.1, -0.2, 0.0, 0.3],
                [0.2, 0.1, -0.1, 0.0],
                [0.0, 0.3, 0.1, -0.2],
                [-0.1, 0.0, 0.2, 0.1],
            ],
            &device,
        )),
        b: Param::from_tensor(Tensor::from_floats([0.0, 0.1, -0.1, 0.0], &device)),
    };
    let h0 = Tensor::<AD, 1>::from_floats([0.2, 0.1, -0.3, 0.4], &device);
    let train = |checkpointed: bool| -> Vec<f64> {
        let mut model = init();
        let mut optimizer = SgdConfig::new().init::<AD, NeuralOde<AD>>();
        let mut losses = Vec::new();
        for _ in 0..8 {
            let out = if checkpointed {
                checkpointed_gradient(
                    &model,
                    h0.clone(),
                    checkpointing::Revolve::new(STEPS, 3).unwrap(),
                    ode_step,
                    ode_loss,
                )
                .unwrap()
            } else {
                whole_loop_gradient(&model, h0.clone(), STEPS, ode_step, ode_loss)
            };
            losses.push(out.loss);
            model = optimizer.step(0.05, model, out.params);
        }
        losses
    };
    let (ours, reference) = (train(true), train(false));
    assert_close("losses", &ours, &reference);
    assert!(
        ours.windows(2).all(|w| w[1] < w[0]),
        "loss does not go down: {ours:?}"
    );
    assert!(ours[7] < 0.7 * ours[0], "{ours:?}");
}

#[test]
fn multistage_on_ram_only_matches_with_the_revolve_trajectory() {
    let (model, t0) = heat(20);
    let want = whole_loop_gradient(&model, t0.clone(), 17, heat_step, heat_loss);
    let schedule = checkpointing::Multistage::new(17, 2, 0, Trajectory::Revolve).unwrap();
    let got = checkpointed_gradient(&model, t0, schedule, heat_step, heat_loss).unwrap();
    assert_close("multistage", &values(got.state), &values(want.state));
}

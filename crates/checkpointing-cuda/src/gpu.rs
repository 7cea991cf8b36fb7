//! The GPU side: a CUDA context with the 2D heat kernels compiled at run
//! time through NVRTC, device-resident states, and the executor's problem.
//!
//! Everything here opens the CUDA driver at run time (cudarc's dynamic
//! loading): the crate builds without CUDA, and [`Gpu::new`] answers
//! [`GpuError::NoDriver`] on a machine without one.

use std::sync::Arc;

use checkpointing::{Footprint, Problem, Step, UserError};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};

use crate::heat2d::Heat2d;

/// Why the GPU could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No CUDA driver library on this machine.
    #[error("no CUDA driver found (libcuda): this machine has no usable NVIDIA GPU")]
    NoDriver,
    /// A CUDA driver call failed.
    #[error("CUDA driver: {0}")]
    Driver(#[from] DriverError),
    /// NVRTC could not compile the kernels.
    #[error("compiling the CUDA kernels with NVRTC: {0}")]
    Compile(#[from] CompileError),
}

/// The forward and hand-written adjoint kernels of [`Heat2d`], in the same
/// floating-point operation order as the CPU code; compiled without fused
/// multiply-adds, so that they round as the CPU does.
const KERNELS: &str = r#"
__device__ double stencil(const double* u, long k, int i, int j, int n, double alpha) {
    double west = i > 0 ? u[k - 1] : 0.0;
    double east = i + 1 < n ? u[k + 1] : 0.0;
    double south = j > 0 ? u[k - n] : 0.0;
    double north = j + 1 < n ? u[k + n] : 0.0;
    return alpha * (west + east + south + north - 4.0 * u[k]);
}

extern "C" __global__ void heat_step(const double* t, double* out, int n, double alpha, double beta) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    long k = (long)j * n + i;
    double tk = t[k];
    out[k] = tk + stencil(t, k, i, j, n, alpha) - beta * tk * tk * tk;
}

extern "C" __global__ void heat_adjoint(const double* t, const double* lambda, double* out, int n,
                                        double alpha, double beta) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    long k = (long)j * n + i;
    double lk = lambda[k];
    out[k] = lk + stencil(lambda, k, i, j, n, alpha) - 3.0 * beta * t[k] * t[k] * lk;
}
"#;

/// A CUDA context, its compute stream, a second stream for snapshot copies,
/// and the compiled kernels.
#[derive(Debug, Clone)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    compute: Arc<CudaStream>,
    copies: Arc<CudaStream>,
    step: CudaFunction,
    adjoint: CudaFunction,
}

impl Gpu {
    /// Opens GPU `ordinal` and compiles the kernels.
    ///
    /// ```
    /// // Without a GPU this is a typed error, not a panic.
    /// match checkpointing_cuda::Gpu::new(0) {
    ///     Ok(gpu) => assert!(gpu.memory_info().unwrap().1 > 0),
    ///     Err(e) => println!("{e}"),
    /// }
    /// ```
    pub fn new(ordinal: usize) -> Result<Self, GpuError> {
        // SAFETY: only tries to open the library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::NoDriver);
        }
        let ctx = CudaContext::new(ordinal)?;
        let compute = ctx.default_stream();
        let copies = ctx.new_stream()?;
        let options = CompileOptions {
            fmad: Some(false),
            ..Default::default()
        };
        let module = ctx.load_module(compile_ptx_with_opts(KERNELS, options)?)?;
        Ok(Self {
            step: module.load_function("heat_step")?,
            adjoint: module.load_function("heat_adjoint")?,
            ctx,
            compute,
            copies,
        })
    }

    /// The stream the kernels run on.
    pub fn compute_stream(&self) -> &Arc<CudaStream> {
        &self.compute
    }

    /// The stream of host snapshot copies ([`crate::HostStore`]).
    pub fn copy_stream(&self) -> &Arc<CudaStream> {
        &self.copies
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// `(free, total)` bytes of device memory, from the driver.
    pub fn memory_info(&self) -> Result<(usize, usize), GpuError> {
        self.ctx.bind_to_thread()?;
        Ok(cudarc::driver::result::mem_get_info()?)
    }

    /// Copies a host field to the device.
    pub fn upload(&self, values: &[f64]) -> Result<DeviceState, GpuError> {
        Ok(DeviceState(self.compute.clone_htod(values)?))
    }

    /// Copies a device field to the host.
    pub fn download(&self, state: &DeviceState) -> Result<Vec<f64>, GpuError> {
        Ok(self.compute.clone_dtoh(&state.0)?)
    }

    fn launch_config(n: usize) -> LaunchConfig {
        let blocks = n.div_ceil(16) as u32;
        LaunchConfig {
            grid_dim: (blocks, blocks, 1),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        }
    }
}

/// A field in device memory. Cloning copies it device to device on its
/// stream (no host round trip); a failing copy (out of device memory)
/// panics, as `Clone` cannot fail: budget device snapshots with
/// [`crate::device_store`].
#[derive(Debug, Clone)]
pub struct DeviceState(pub CudaSlice<f64>);

impl Footprint for DeviceState {
    fn footprint(&self) -> usize {
        self.0.len() * std::mem::size_of::<f64>()
    }
}

/// [`Heat2d`] on the GPU: the executor's problem, states in device memory.
#[derive(Debug)]
pub struct GpuHeat2d {
    heat: Heat2d,
    gpu: Gpu,
    scratch: DeviceState,
}

impl GpuHeat2d {
    /// The problem on `gpu`.
    pub fn new(gpu: &Gpu, heat: Heat2d) -> Result<Self, GpuError> {
        let scratch = DeviceState(gpu.compute.alloc_zeros::<f64>(heat.n * heat.n)?);
        Ok(Self {
            heat,
            gpu: gpu.clone(),
            scratch,
        })
    }

    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    fn step(&mut self, state: &mut DeviceState) -> Result<(), GpuError> {
        let Heat2d { n, alpha, beta } = self.heat;
        let n32 = n as i32;
        let mut launch = self.gpu.compute.launch_builder(&self.gpu.step);
        launch
            .arg(&state.0)
            .arg(&mut self.scratch.0)
            .arg(&n32)
            .arg(&alpha)
            .arg(&beta);
        // SAFETY: the kernel reads and writes n·n doubles of buffers of
        // that length, with the argument types of its signature.
        unsafe { launch.launch(Gpu::launch_config(n)) }?;
        std::mem::swap(state, &mut self.scratch);
        Ok(())
    }

    fn adjoint_step(
        &mut self,
        state: &DeviceState,
        lambda: &mut DeviceState,
    ) -> Result<(), GpuError> {
        let Heat2d { n, alpha, beta } = self.heat;
        let n32 = n as i32;
        let mut launch = self.gpu.compute.launch_builder(&self.gpu.adjoint);
        launch
            .arg(&state.0)
            .arg(&lambda.0)
            .arg(&mut self.scratch.0)
            .arg(&n32)
            .arg(&alpha)
            .arg(&beta);
        // SAFETY: as in `step`.
        unsafe { launch.launch(Gpu::launch_config(n)) }?;
        std::mem::swap(lambda, &mut self.scratch);
        Ok(())
    }

    /// `∂J/∂T0` keeping every state on the device (the reference where it
    /// fits in device memory).
    pub fn gradient_store_all(
        &mut self,
        initial: &DeviceState,
        steps: Step,
    ) -> Result<DeviceState, GpuError> {
        let mut states = vec![initial.clone()];
        for _ in 0..steps {
            let mut next = states.last().expect("initial state").clone();
            self.step(&mut next)?;
            states.push(next);
        }
        let mut lambda = states.pop().expect("final state");
        for state in states.iter().rev() {
            self.adjoint_step(state, &mut lambda)?;
        }
        Ok(lambda)
    }
}

impl Problem for GpuHeat2d {
    type State = DeviceState;
    type Adjoint = DeviceState;

    fn forward(&mut self, _step: Step, state: &mut DeviceState) -> Result<(), UserError> {
        Ok(self.step(state)?)
    }

    fn adjoint(
        &mut self,
        _step: Step,
        state: &DeviceState,
        lambda: &mut DeviceState,
    ) -> Result<(), UserError> {
        Ok(self.adjoint_step(state, lambda)?)
    }
}

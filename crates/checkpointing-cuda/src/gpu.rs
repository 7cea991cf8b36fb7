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
    /// No NVRTC library (`libnvrtc.so`, or `.so.12`) on the loader's path:
    /// the kernels are compiled at run time and need it.
    #[error("no NVRTC library found (libnvrtc.so or libnvrtc.so.12 on the loader path, e.g. LD_LIBRARY_PATH): the CUDA kernels are compiled at run time")]
    NoNvrtc,
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
        // SAFETY: as above.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(GpuError::NoNvrtc);
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

    /// Waits until the work queued so far on both streams (kernels and
    /// snapshot copies) is done.
    ///
    /// ```
    /// let Ok(gpu) = checkpointing_cuda::Gpu::new(0) else { return }; // needs a GPU
    /// let state = gpu.upload(&[1.0, 2.0]).unwrap();
    /// gpu.synchronize().unwrap(); // the upload is done
    /// # drop(state);
    /// ```
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.compute.synchronize()?;
        self.copies.synchronize()?;
        Ok(())
    }

    /// The device's name, as the driver reports it (`NVIDIA H100 80GB
    /// HBM3`).
    pub fn name(&self) -> Result<String, GpuError> {
        Ok(self.ctx.name()?)
    }

    /// Device memory in use by this process's buffers, and the most in use
    /// at once since the last [`reset_peak_device_bytes`](Self::reset_peak_device_bytes):
    /// `(current, peak)` bytes of the device's default memory pool, which
    /// serves every stream-ordered allocation (`cuMemAllocAsync`, what
    /// cudarc uses where the device supports it). `None` on a device
    /// without memory pools.
    ///
    /// ```
    /// let Ok(gpu) = checkpointing_cuda::Gpu::new(0) else { return }; // needs a GPU
    /// gpu.reset_peak_device_bytes().unwrap();
    /// let state = gpu.upload(&vec![0.0; 1 << 20]).unwrap();
    /// if let Some((current, peak)) = gpu.device_bytes().unwrap() {
    ///     assert!(current >= 8 << 20 && peak >= current);
    /// }
    /// # drop(state);
    /// ```
    pub fn device_bytes(&self) -> Result<Option<(u64, u64)>, GpuError> {
        use cudarc::driver::sys::CUmemPool_attribute as Attr;
        let Some(pool) = self.memory_pool()? else {
            return Ok(None);
        };
        self.synchronize()?;
        let read = |attribute| -> Result<u64, GpuError> {
            let mut value = 0u64;
            // SAFETY: both attributes are 64-bit counters written into `value`.
            unsafe {
                cudarc::driver::sys::cuMemPoolGetAttribute(
                    pool,
                    attribute,
                    (&mut value as *mut u64).cast(),
                )
            }
            .result()?;
            Ok(value)
        };
        Ok(Some((
            read(Attr::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?,
            read(Attr::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?,
        )))
    }

    /// Starts a new peak for [`device_bytes`](Self::device_bytes) at the
    /// memory in use now (after the streams' work so far).
    pub fn reset_peak_device_bytes(&self) -> Result<(), GpuError> {
        let Some(pool) = self.memory_pool()? else {
            return Ok(());
        };
        self.synchronize()?;
        let mut zero = 0u64;
        // SAFETY: the driver resets the high-water mark; the only value
        // it accepts for this attribute is zero.
        unsafe {
            cudarc::driver::sys::cuMemPoolSetAttribute(
                pool,
                cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                (&mut zero as *mut u64).cast(),
            )
        }
        .result()?;
        Ok(())
    }

    /// The device's default memory pool, `None` where it has none.
    fn memory_pool(&self) -> Result<Option<cudarc::driver::sys::CUmemoryPool>, GpuError> {
        use cudarc::driver::sys::CUdevice_attribute as Attr;
        let pools = self
            .ctx
            .attribute(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)?;
        if pools == 0 {
            return Ok(None);
        }
        self.ctx.bind_to_thread()?;
        let mut pool = std::ptr::null_mut();
        // SAFETY: writes the device's default pool handle into `pool`.
        unsafe { cudarc::driver::sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device()) }
            .result()?;
        Ok(Some(pool))
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
///
/// One step of the problem is `substeps` explicit steps of [`Heat2d`]
/// ([`with_substeps`](Self::with_substeps); one by default): a heavier
/// step, as a PDE solver's time step with several stages or sub-cycles,
/// whose kernels can hide a snapshot's copy to the host. Its adjoint
/// recomputes the step's `substeps − 1` inner states (kept in
/// preallocated device buffers) and applies the adjoint kernel to each in
/// reverse, so `N` steps of `k` substeps have the gradient of `N·k` plain
/// steps, bit for bit.
#[derive(Debug)]
pub struct GpuHeat2d {
    heat: Heat2d,
    gpu: Gpu,
    scratch: DeviceState,
    /// The inner states of one step (`substeps − 1` buffers).
    inner: Vec<DeviceState>,
}

impl GpuHeat2d {
    /// The problem on `gpu`, one [`Heat2d`] step per step.
    pub fn new(gpu: &Gpu, heat: Heat2d) -> Result<Self, GpuError> {
        let scratch = DeviceState(gpu.compute.alloc_zeros::<f64>(heat.n * heat.n)?);
        Ok(Self {
            heat,
            gpu: gpu.clone(),
            scratch,
            inner: Vec::new(),
        })
    }

    /// Each step runs `substeps` [`Heat2d`] steps (at least one; the
    /// adjoint holds `substeps − 1` more fields on the device).
    ///
    /// ```
    /// use checkpointing_cuda::{Gpu, GpuHeat2d, Heat2d};
    /// let Ok(gpu) = Gpu::new(0) else { return }; // needs a GPU
    /// let heat = Heat2d::new(32, 0.2, 0.8);
    /// let t0 = gpu.upload(&heat.initial_state()).unwrap();
    /// let mut four = GpuHeat2d::new(&gpu, heat).unwrap().with_substeps(4).unwrap();
    /// let mut one = GpuHeat2d::new(&gpu, heat).unwrap();
    /// let a = gpu.download(&four.gradient_store_all(&t0, 5).unwrap()).unwrap();
    /// let b = gpu.download(&one.gradient_store_all(&t0, 20).unwrap()).unwrap();
    /// assert_eq!(a, b);
    /// ```
    pub fn with_substeps(mut self, substeps: usize) -> Result<Self, GpuError> {
        let cells = self.heat.n * self.heat.n;
        self.inner = (1..substeps.max(1))
            .map(|_| Ok(DeviceState(self.gpu.compute.alloc_zeros::<f64>(cells)?)))
            .collect::<Result<_, GpuError>>()?;
        Ok(self)
    }

    /// [`Heat2d`] steps per step.
    pub fn substeps(&self) -> usize {
        self.inner.len() + 1
    }

    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    fn step(&mut self, state: &mut DeviceState) -> Result<(), GpuError> {
        for _ in 0..self.substeps() {
            launch_step(&self.gpu, self.heat, state, &mut self.scratch)?;
            std::mem::swap(state, &mut self.scratch);
        }
        Ok(())
    }

    fn adjoint_step(
        &mut self,
        state: &DeviceState,
        lambda: &mut DeviceState,
    ) -> Result<(), GpuError> {
        let (gpu, heat) = (&self.gpu, self.heat);
        // The step's inner states, from `state`.
        for k in 0..self.inner.len() {
            let (done, rest) = self.inner.split_at_mut(k);
            launch_step(gpu, heat, done.last().unwrap_or(state), &mut rest[0])?;
        }
        for k in (0..=self.inner.len()).rev() {
            let at = if k == 0 { state } else { &self.inner[k - 1] };
            launch_adjoint(gpu, heat, at, lambda, &mut self.scratch)?;
            std::mem::swap(lambda, &mut self.scratch);
        }
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

/// One [`Heat2d`] step on `gpu`'s compute stream, from `from` into `to`.
fn launch_step(
    gpu: &Gpu,
    heat: Heat2d,
    from: &DeviceState,
    to: &mut DeviceState,
) -> Result<(), GpuError> {
    launch(gpu, &gpu.step, heat, &[from], to)
}

/// The adjoint of one [`Heat2d`] step at `state`, from `lambda` into `to`.
fn launch_adjoint(
    gpu: &Gpu,
    heat: Heat2d,
    state: &DeviceState,
    lambda: &DeviceState,
    to: &mut DeviceState,
) -> Result<(), GpuError> {
    launch(gpu, &gpu.adjoint, heat, &[state, lambda], to)
}

/// Launches `kernel(inputs..., to, n, α, β)` over the grid on `gpu`'s
/// compute stream.
fn launch(
    gpu: &Gpu,
    kernel: &CudaFunction,
    heat: Heat2d,
    inputs: &[&DeviceState],
    to: &mut DeviceState,
) -> Result<(), GpuError> {
    let Heat2d { n, alpha, beta } = heat;
    let n32 = n as i32;
    let mut launch = gpu.compute.launch_builder(kernel);
    for input in inputs {
        launch.arg(&input.0);
    }
    launch.arg(&mut to.0).arg(&n32).arg(&alpha).arg(&beta);
    // SAFETY: both kernels take their input fields, the output field (all
    // n·n doubles, as these buffers are), n, α and β, in this order.
    unsafe { launch.launch(Gpu::launch_config(n)) }?;
    Ok(())
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

//! The bottom of the GPU stack: the device (handles, limits, errors, loss), device arrays and
//! scalars, readback, and the bind-group cache. Nothing here knows kernels or ops.

mod bind_cache;
mod device;
mod pool;
mod readback;
mod scalar;
mod vector;

pub(crate) use bind_cache::{BindKey, Fast as FastHash};
pub(crate) use device::{next_object_id, Device, Lifecycle};
pub use device::{DeviceId, DEFAULT_WAIT_SPIN};
pub use pool::DEFAULT_POOL_BYTES;
pub(crate) use pool::{BatchMark, PooledBuffer};
pub use readback::HostView;
pub(crate) use readback::{stage, PendingRead, Staged};
pub use scalar::{GpuScalar, ScalarArg};
pub(crate) use vector::BindEntry;
pub use vector::{Bind, GpuVec};

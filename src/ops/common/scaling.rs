//! α and β as kernels take them: the `Scaling` params (host values, or where to read device
//! scalars) and the two scalar bindings.

use crate::context::Context;
use crate::element::Scalar;
use crate::gpu::{Bind, ScalarArg};
use crate::kernel::shaders::structs::Scaling;
use crate::{Error, Result};

/// α and β of one recorded op, ready for any kernel that imports `scaling.wgsl`.
#[derive(Clone, Copy)]
pub(crate) struct ScalarBinds<'a, T: Scalar> {
    pub(crate) params: Scaling<T>,
    pub(crate) alpha_dev: Bind<'a, T>,
    pub(crate) beta_dev: Bind<'a, T>,
    alpha: ScalarArg<'a, T>,
    beta: ScalarArg<'a, T>,
}

impl<'a, T: Scalar> ScalarBinds<'a, T> {
    /// Checks device scalars (context, index) and binds them; host values go in the params,
    /// and an unused vector of the context is bound in their place.
    pub(crate) fn new(ctx: &'a Context, alpha: ScalarArg<'a, T>, beta: ScalarArg<'a, T>) -> Result<Self> {
        let unused = ctx.unused::<T>()?;
        let mut params = Scaling::<T>::default();
        let mut bind =
            |arg: ScalarArg<'a, T>, what: &str, bit: u32, value: &mut T, at: &mut u32| -> Result<Bind<'a, T>> {
                match arg {
                    ScalarArg::Host(v) => {
                        *value = v;
                        Ok(unused.bind())
                    }
                    ScalarArg::Device { vector, index } => {
                        ctx.check_owner(what, vector.device_id())?;
                        if index >= vector.len() {
                            return Err(Error::InvalidArgument(format!(
                                "{what}: element {index} of a vector of {}",
                                vector.len()
                            )));
                        }
                        params.source |= bit;
                        *at = index as u32;
                        Ok(vector.bind())
                    }
                }
            };
        let (mut alpha_value, mut beta_value, mut alpha_at, mut beta_at) = (T::default(), T::default(), 0, 0);
        let alpha_dev = bind(alpha, "alpha", 1, &mut alpha_value, &mut alpha_at)?;
        let beta_dev = bind(beta, "beta", 2, &mut beta_value, &mut beta_at)?;
        params.alpha = alpha_value;
        params.beta = beta_value;
        params.alpha_at = alpha_at;
        params.beta_at = beta_at;
        Ok(ScalarBinds { params, alpha_dev, beta_dev, alpha, beta })
    }

    /// α, when it is a host value.
    pub(crate) fn host_alpha(&self) -> Option<T> {
        self.alpha.host()
    }

    /// α := β, β := 0: `y ← β·y` as a scal.
    pub(crate) fn beta_as_alpha(&self) -> Self {
        let params = Scaling::<T> {
            alpha: self.params.beta,
            alpha_at: self.params.beta_at,
            source: (self.params.source >> 1) & 1,
            ..Default::default()
        };
        let beta = ScalarArg::Host(T::default());
        ScalarBinds { params, alpha_dev: self.beta_dev, beta_dev: self.beta_dev, alpha: self.beta, beta }
    }
}

//! How a kernel built on shared/group.wgsl splits a workgroup into groups of lanes.

use crate::context::Context;

/// A subgroup per group when the context uses subgroups (whatever size the adapter picks in
/// its range), else the whole workgroup.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Groups {
    /// Tasks a workgroup owns (its groups take them in turn): the kernels'
    /// `TASKS_PER_WORKGROUP` override.
    pub(crate) tasks_per_workgroup: u32,
    /// The largest group size the kernel can meet.
    pub(crate) max_size: u32,
}

impl Groups {
    pub(crate) fn new(ctx: &Context, workgroup_size: u32) -> Self {
        match ctx.subgroup_size_range() {
            Some((min, max)) => Groups { tasks_per_workgroup: workgroup_size / min, max_size: max },
            None => Groups { tasks_per_workgroup: 1, max_size: workgroup_size },
        }
    }

    /// Workgroups for `tasks` tasks.
    pub(crate) fn workgroups(&self, tasks: u64) -> u64 {
        tasks.div_ceil(self.tasks_per_workgroup as u64)
    }
}

// Linear workgroup index of a dispatch folded into two dimensions by the host
// (Kernel::dispatch): x runs fastest.
fn linear_workgroup(id: vec3<u32>, count: vec3<u32>) -> u32 {
    return id.x + id.y * count.x;
}

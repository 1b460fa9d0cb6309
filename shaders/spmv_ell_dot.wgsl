// ELL SpMV one invocation per row (spmv_ell) that also leaves the partial sums of x·y, one
// per workgroup (shared/spmv_row_dot.wgsl): CG's p·A·p without a pass over p and A·p of
// its own.
#import real
#import spmv_ell_rows
#import spmv_row_dot

@group(0) @binding(6) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

fn row_sum(row: u32) -> Acc {
    return ell_row_sum(row);
}

// CSR SpMV one invocation per row (spmv_csr_thread) that also leaves the partial sums of
// x·y, one per workgroup (shared/spmv_row_dot.wgsl): CG's p·A·p without a pass over p and
// A·p of its own.
#import real
#import spmv_csr_rows
#import csr_row_sum
#import spmv_row_dot

@group(0) @binding(7) var<storage, read_write> partials: array<vec2<Acc>>;

override WG_SIZE: u32 = 256u;

fn row_sum(row: u32) -> Acc {
    return csr_row_sum(row_offsets[row], row_offsets[row + 1u]);
}

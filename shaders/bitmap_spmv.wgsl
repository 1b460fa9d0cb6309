// SpMV on a bitmap, y = alpha * A * x + beta * y: GROUP lanes per row, each lane taking
// whole rank blocks (8 flag words, 256 columns) in turn. A block's first value is at its
// rank-directory position, so lanes need no scan: each walks its block's set bits and the
// values that follow. Lane sums are reduced by shuffles, or through workgroup memory
// without subgroups. Reads 4 bytes per 32 columns of flags (and 4 per 256 of directory)
// instead of CSR's 4-byte column index per entry: fewer bytes once density passes 1/32.
#import entry
#import real
#import lane_group_sum
#import spmv_store

struct Params {
    rows: u32,
    words: u32,
    blocks: u32,
    scaling: Scaling,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> flags: array<u32>;
@group(0) @binding(1) var<storage, read> rank: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<Real>;
@group(0) @binding(3) var<storage, read> x: array<Real>;
@group(0) @binding(4) var<storage, read> alpha_dev: array<Real>;
@group(0) @binding(5) var<storage, read> beta_dev: array<Real>;
@group(0) @binding(6) var<storage, read_write> y: array<Real>;

override WG_SIZE: u32 = 256u;
// Lanes per row: a power of two dividing WG_SIZE; with subgroups, at most the subgroup size.
override GROUP: u32 = 32u;

fn run(workgroup: u32, lane: Lane) {
    let row = workgroup * (WG_SIZE / GROUP) + lane.index / GROUP;
    let member = lane.index % GROUP;
    var sum = Acc(0.0);
    if row < params.rows {
        let base = row * params.words;
        for (var block = member; block < params.blocks; block += GROUP) {
            var p = rank[row * params.blocks + block];
            let end = min(block * 8u + 8u, params.words);
            for (var w = block * 8u; w < end; w++) {
                var bits = flags[base + w];
                while bits != 0u {
                    let col = w * 32u + firstTrailingBit(bits);
                    bits &= bits - 1u;
                    sum = fma(Acc(values[p]), Acc(x[col]), sum);
                    p++;
                }
            }
        }
    }
    sum = lane_group_sum(sum, lane.index);
    if member == 0u && row < params.rows {
        store_y(row, sum);
    }
}

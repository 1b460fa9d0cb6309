// Adds the carries of tiles or intervals into the row sums: sums[row] += (the sum of the
// run of consecutive carries with that row). Carries are ordered by row, so the first
// carry of a run sums it alone, in order: no atomics, a fixed order of additions. A run is
// read CHUNK carries at a time, loads independent of each other, so a row that spans
// thousands of tiles costs a few round trips, not thousands.
#import invocation
#import real
#import carry
#import spmv_sums

struct Params {
    count: u32,
    rows: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> carries: array<Carry>;
@group(0) @binding(1) var<storage, read_write> sums: array<Acc>;

override WG_SIZE: u32 = 256u;

const CHUNK: u32 = 32u;

fn run(t: u32) {
    if t >= params.count {
        return;
    }
    let row = carries[t].row;
    if row >= params.rows || (t > 0u && carries[t - 1u].row == row) {
        return;
    }
    var sum = Acc(0.0);
    var u = t;
    loop {
        var whole_chunk = true;
        for (var k = 0u; k < CHUNK; k++) {
            let c = carries[min(u + k, params.count - 1u)];
            let in_run = u + k < params.count && c.row == row;
            if in_run {
                sum += c.value;
            }
            whole_chunk = whole_chunk && in_run;
        }
        if !whole_chunk {
            break;
        }
        u += CHUNK;
    }
    add_sum(row, sum);
}

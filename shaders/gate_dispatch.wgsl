// Workgroup counts of the gated dispatches of a batch (Batch::gate): slot s gets its
// intended counts while flag[flag_index] is zero, zeros once it is set, so the dispatches
// recorded after a convergence test become no-ops. Runs from slot `first` to the end of the
// chunk: a later gate of the same batch rewrites the slots after its own first.
#import invocation

struct Params {
    flag_index: u32,
    first: u32,
    count: u32,
}

var<immediate> params: Params;
@group(0) @binding(0) var<storage, read> flag: array<u32>;
@group(0) @binding(1) var<storage, read> intended: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> args: array<vec4<u32>>;

override WG_SIZE: u32 = 256u;

fn run(i: u32) {
    let slot = params.first + i;
    if slot >= params.count {
        return;
    }
    args[slot] = select(intended[slot], vec4<u32>(0u), flag[params.flag_index] != 0u);
}

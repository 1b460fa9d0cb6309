// A row of up to 32 columns held by one lane in eight named vec4 blocks (registers: an
// indexed array would spill to memory), columns 4b … 4b+3 in block b.

// Column k of the row (k uniform: one branch).
fn block_column(r0: vec4<Real>, r1: vec4<Real>, r2: vec4<Real>, r3: vec4<Real>, r4: vec4<Real>,
                r5: vec4<Real>, r6: vec4<Real>, r7: vec4<Real>, k: u32) -> Real {
    var block = r0;
    switch k / 4u {
        case 1u: { block = r1; }
        case 2u: { block = r2; }
        case 3u: { block = r3; }
        case 4u: { block = r4; }
        case 5u: { block = r5; }
        case 6u: { block = r6; }
        case 7u: { block = r7; }
        default: {}
    }
    return component(block, k % 4u);
}

// Component c of v by selects. A dynamic index into a vec4 value went through local memory
// on NVIDIA's driver (a store of the vec4 and a load of the component, in its SASS:
// benches/NOTES.md, session 60).
fn component(v: vec4<Real>, c: u32) -> Real {
    return select(select(v.x, v.y, c == 1u), select(v.z, v.w, c == 3u), c >= 2u);
}

// The columns of block b.
fn block_columns(b: u32) -> vec4<u32> {
    return vec4<u32>(4u * b, 4u * b + 1u, 4u * b + 2u, 4u * b + 3u);
}

// Rows of the dense operand a sparse kernel gathers by column index (B of SpMM, B2 of
// SDDMM): row-major, `params.k` columns, in up to four row panels `gather0`..`gather3` of
// `params.gather_panel_rows` rows each (a dense matrix past one storage binding is kept in
// row panels). GATHER_PANELS compiles the panel choice; without it everything is in
// `gather0`. The including shader declares the bindings and the params fields.

fn gathered(j: u32, c: u32) -> Real {
#ifdef GATHER_PANELS
    let p = j / params.gather_panel_rows;
    let i = (j - p * params.gather_panel_rows) * params.k + c;
    switch p {
        case 0u: {
            return gather0[i];
        }
        case 1u: {
            return gather1[i];
        }
        case 2u: {
            return gather2[i];
        }
        default: {
            return gather3[i];
        }
    }
#else
    return gather0[j * params.k + c];
#endif
}

// Columns cols[v] of row j (zero where !valid[v]: those are not loaded).
fn gathered4(j: u32, cols: vec4<u32>, valid: vec4<bool>) -> vec4<Acc> {
    var r = vec4<Acc>(0.0);
    for (var v = 0u; v < 4u; v++) {
        if valid[v] {
            r[v] = Acc(gathered(j, cols[v]));
        }
    }
    return r;
}

// Columns cols[v] of row j of the first panel (`gather0`), for a caller that knows the row
// is there: no choice of panel.
fn gathered4_first_panel(j: u32, cols: vec4<u32>, valid: vec4<bool>) -> vec4<Acc> {
    var r = vec4<Acc>(0.0);
    for (var v = 0u; v < 4u; v++) {
        if valid[v] {
            r[v] = Acc(gather0[j * params.k + cols[v]]);
        }
    }
    return r;
}

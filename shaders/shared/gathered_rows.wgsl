// Rows of the dense operand a sparse kernel gathers by column index (B of SpMM, B2 of
// SDDMM): row-major, `params.k` units a row, in up to four row panels `gather0`..`gather3`
// of `params.gather_panel_rows` rows each (a dense matrix past one storage binding is kept
// in row panels). GATHER_PANELS compiles the panel choice; without it everything is in
// `gather0`. The including shader declares the bindings (arrays of `Unit`: `Real`, or
// `vec4<Real>` where rows are read four columns at a time), `Unit` and the params fields.

// Unit `c` of row j.
fn gathered(j: u32, c: u32) -> Unit {
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

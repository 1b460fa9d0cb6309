// GEMV with the transpose on rows of any length, one element at a time; with SUM the adder
// of partial sums (see shared/gemv_columns_body.wgsl).
#import real

alias Unit = Real;
alias Units = Acc;
const UNIT_LEN: u32 = 1u;

fn unit_get(u: Units, k: u32) -> Acc {
    return u;
}

fn unit_set(u: Units, k: u32, v: Acc) -> Units {
    return v;
}

#import gemv_columns_body
